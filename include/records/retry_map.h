/*
 * retry_map.h - when each backend may take traffic again, recorded in
 * HAProxy for its own 503 (retry_map.c, pure).
 *
 * When no worker can take a request - every server drained by the
 * breaker, or down - HAProxy answers 503 itself, and no agent answer
 * exists for that request. So the agent keeps an HAProxy map, loaded from
 * a file named breaker-retry-at.map (shipped empty), with one entry per
 * backend that has an open breaker:
 *     workers 1764520000     the first of its open breakers lets a probe
 *                            through at that moment (Unix time, seconds)
 * and haproxy.cfg turns it into `Retry-After: <that moment - now>` on its
 * own 503 (a past or missing moment: the fixed BREAKER_RETRY_AFTER).
 * A moment, not a count of seconds, so the entry changes only when a
 * breaker opens or probes, not every second.
 *
 * The map is read at every look (`show map FILE`) and brought to what the
 * breakers say with `add map`, `set map` and `del map`, like the
 * ownership record (owner_map.h): a restarted HAProxy's empty map is
 * filled again within a look, and an entry left by a stopped agent
 * expires by itself (its moment passes).
 */
#ifndef SPOA_RECORDS_RETRY_MAP_H
#define SPOA_RECORDS_RETRY_MAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/breaker-t.h"
#include "records/haproxy_record.h"

#define RETRY_MAP_NAME "breaker-retry-at.map"
/* Longest value: a moment of 18 digits at most, or a negative one. */
#define RETRY_MAP_VALUE_MAX 24

/* The record's table (haproxy_record.h): keys BACKEND, moments within a
 * second of each other the same. */
extern const struct haproxy_record_ops retry_map_ops;
/* No entry (the backend has no open breaker). */
#define RETRY_AT_NONE INT64_C(-1)

/* One entry of the map as HAProxy has it. */
struct retry_map_entry {
	char backend[BREAKER_NAME_MAX + 1];
	int64_t at_s;
	bool duplicate; /* listed more than once: deleted, then written again */
	bool seen;      /* for the caller: matched to a backend */
};

/*
 * Reads a `show map FILE` reply ("0xADDR KEY VALUE" lines) into *out
 * (allocated here, the caller frees it; NULL when empty), sorted by
 * backend name, a name listed twice kept once and marked duplicate. Lines
 * that are not an entry with a valid backend name and a decimal value are
 * skipped and counted in *skipped (may be NULL). Returns how many entries
 * were kept, or -1 when the reply is an error ("Unknown map identifier",
 * ...) or memory runs out.
 */
long retry_map_parse(const char *reply, size_t len, struct retry_map_entry **out,
		     unsigned *skipped);

/* The entry for backend in a parse()d list, or NULL. */
struct retry_map_entry *retry_map_lookup(struct retry_map_entry *list, size_t n,
					 const char *backend);

/* The map's value for a moment, into buf; NULL for RETRY_AT_NONE. */
const char *retry_map_value(char *buf, size_t size, int64_t at_s);

/*
 * The one command that turns the entry `have` into `want` (each a moment
 * or RETRY_AT_NONE) for backend in the map at path: "add map", "set map"
 * or "del map". A moment within a second of the one HAProxy has is left
 * alone: the clocks the agent computes it from are read at different
 * instants, and a rounding must not rewrite the map at every look. False
 * (buf "") when there is nothing to do, a name or the path is not valid,
 * or it does not fit in size bytes.
 */
bool retry_map_cmd(char *buf, size_t size, const char *path, const char *backend, int64_t have,
		   int64_t want);

/* The moment an OPEN breaker lets a probe through, in Unix seconds, from
 * the wall clock and the breaker's whole seconds to wait
 * (breaker_retry_after_s); RETRY_AT_NONE when it does not wait. */
int64_t retry_map_moment(int64_t now_unix_s, int64_t retry_after_s);
#endif /* SPOA_RECORDS_RETRY_MAP_H */
