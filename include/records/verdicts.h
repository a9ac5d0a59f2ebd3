/*
 * verdicts.h - breaker verdicts shared between HAProxy nodes through a
 * stick table that HAProxy's `peers` replicates (verdicts.c, pure).
 *
 * Each node runs its own agent. A node whose breaker opens on its own
 * evidence owns that verdict and writes it into its HAProxy's table:
 *     set table breaker_verdicts key BACKEND/SERVER data.gpt0 STATE
 *         data.gpc0 DEADLINE data.gpc1 NODE
 * STATE 1 open, 2 half-open (the owner probing), 0 closed; DEADLINE the
 * Unix second the owner's cool-down ends (for people reading the table);
 * NODE the owner's node_id. Every node reads the table at each look and:
 *   - holds its own breaker open while another node's verdict is open or
 *     half-open, so a worker opened anywhere is drained everywhere within
 *     a look, and only the owner probes;
 *   - closes a breaker it opened on a verdict alone when the owner writes
 *     closed;
 *   - when two nodes own a verdict on the same server, the lower node_id
 *     keeps it and the other yields (peers replicate the last write, with
 *     no order: both rewriting would never converge).
 * The owner rewrites its verdicts at every look. Peers do not replicate
 * deletes and each node expires entries on its own clock: a verdict not
 * rewritten (its node stopped, the peers link broke) expires after the
 * table's `expire`, and the nodes holding on it fall back to their own
 * breakers (half-open, their own probe) - nothing stays drained because a
 * peer vanished.
 *
 * Keys are BACKEND/SERVER: '/' is in no HAProxy name, and no valid name
 * needs escaping on the Runtime API. A key longer than the table's `len`
 * (128 in the shipped table) would be cut and collide: never written.
 */
#ifndef SPOA_RECORDS_VERDICTS_H
#define SPOA_RECORDS_VERDICTS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/breaker.h"
#include "hapi/runtime_api.h"
#include "records/haproxy_record.h"

#define VERDICT_TABLE_DEFAULT "breaker_verdicts"
#define VERDICT_KEY_MAX 128 /* the shipped table's `len` */

enum verdict_state {
	VERDICT_CLOSED = 0,
	VERDICT_OPEN = 1,
	VERDICT_HALF_OPEN = 2,
};

struct verdict {
	struct runtime_api_str backend, server;
	enum verdict_state state;
	uint64_t deadline_s; /* gpc0 */
	uint32_t node;       /* gpc1: the owner */
};

typedef void (*verdict_fn)(void *ctx, const struct verdict *v);

/*
 * Walks a `show table NAME` reply: fn gets each entry whose key is
 * BACKEND/SERVER (two valid names) and whose gpt0 is a known state. Other
 * lines are skipped and counted in *skipped (may be NULL). False when the
 * reply is an error (`No such table`, ...) rather than a table.
 */
bool verdicts_parse(const char *reply, size_t len, verdict_fn fn, void *ctx, unsigned *skipped);

/* The record's table (haproxy_record.h): keys BACKEND/SERVER of at most
 * VERDICT_KEY_MAX, set at every look, never deleted. */
extern const struct haproxy_record_ops verdict_table_ops;
/* Longest value: three columns of 10 digits at most. */
#define VERDICT_VALUE_MAX 64
/* The entry's data: "data.gpt0 STATE data.gpc0 DEADLINE data.gpc1 NODE". */
const char *verdicts_value(char *buf, size_t size, enum verdict_state state, uint64_t deadline_s,
			   uint32_t node);
/* "set table NAME key B/S data.gpt0 .. data.gpc0 .. data.gpc1 ..". False
 * (buf "") for an invalid name, a key over VERDICT_KEY_MAX, or no room. */
bool verdicts_cmd_set(char *buf, size_t size, const char *table, const char *backend,
		      const char *server, enum verdict_state state, uint64_t deadline_s,
		      uint32_t node);

/* The state a breaker that owns its verdict publishes. */
enum verdict_state verdicts_state_of(const struct breaker *b);

/* What a node does with another node's verdict on one of its servers. */
enum verdict_action {
	VERDICT_IGNORE,  /* ours, or one we outrank, or nothing to undo */
	VERDICT_HOLD,    /* keep (or put) the breaker open: the owner probes */
	VERDICT_RELEASE, /* the owner closed it: let go */
};
enum verdict_action verdicts_decide(const struct verdict *v, const struct breaker *b,
				    uint32_t node, uint64_t now_ms);

#endif /* SPOA_RECORDS_VERDICTS_H */
