/*
 * haproxy_record.h - what HAProxy keeps for the agent, as one type
 * (haproxy_record.c, pure). Four records share one life:
 *     breaker-owned.map     the agent's drains and limits (owner_map.h)
 *     breaker-retry-at.map  when each backend may take traffic again (retry_map.h)
 *     breaker-watched.map   the servers notified every response (watched_map.h)
 *     breaker_verdicts      this node's verdicts, for its peers (verdicts.h)
 * A map is found in `show map` (its path as HAProxy lists it), a table is
 * named by the configuration; each is read at every look (`show map PATH`,
 * `show table NAME`); a read that predates a command to it describes it
 * before that command and is not believed (haproxy_record_predates); what
 * the agent wants is written with `add map`, `set map`, `del map` or `set
 * table`, decided by comparing what HAProxy has with what the agent wants
 * (haproxy_record_change) and built in hapi/cmd.c, where every name
 * is checked; a record HAProxy lacks is said once until it is back.
 *
 * Each record is a small table of its own (struct haproxy_record_ops): its
 * name, how its key is made of names, how long a key may be, and when two
 * values are the same for it. Values are each record's own (their files
 * format and read them).
 */
#ifndef SPOA_RECORDS_HAPROXY_RECORD_H
#define SPOA_RECORDS_HAPROXY_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hapi/runtime_api.h"
#include "records/map_file.h"
#include "util/log.h"

enum haproxy_record_id {
	RECORD_OWNER,
	RECORD_RETRY,
	RECORD_WATCHED,
	RECORD_VERDICTS,
	HAPROXY_RECORDS
};

enum haproxy_record_kind {
	HAPROXY_RECORD_MAP,   /* an HAProxy map, loaded from a file */
	HAPROXY_RECORD_TABLE, /* a stick table: set, never deleted (peers do not replicate deletes) */
};

/* How a key is made of names; none of them may hold '/' or '@'. */
enum haproxy_record_key {
	RECORD_KEY_BACKEND,       /* "workers" */
	RECORD_KEY_SLASH,         /* "workers/w1" */
	RECORD_KEY_SERVER_AT,     /* "w1@workers": what an ACL builds at response time */
};

/* Longest command to a record: the path, a key of two names, a value. */
#define HAPROXY_RECORD_CMD_MAX (MAP_FILE_PATH_MAX + 2 * 128 + 64)

struct haproxy_record_ops {
	const char *name; /* the map's file name; a table's name is the configuration's */
	enum haproxy_record_kind kind;
	enum haproxy_record_key key;
	size_t key_max; /* the longest key HAProxy keeps whole; 0: the names' limit only */
	/* Two values HAProxy need not be told about (both present); NULL:
	 * the same text. */
	bool (*same)(const char *have, const char *want);
	/* What the link says: when the record is missing (NULL: nothing, it
	 * is optional and its absence normal), at which level; when it is
	 * found (NULL: nothing); when it was there and is no more. */
	const char *missing;
	enum log_level missing_level;
	const char *found;
	const char *lost;
};

/* One record in one HAProxy. */
struct haproxy_record {
	/* The map's path as `show map` lists it (how commands must name it),
	 * or the table's name; "" while not found. */
	char where[MAP_FILE_PATH_MAX];
	bool read;         /* the look in flight read it */
	bool known;        /* a look read it: what the agent writes can land */
	bool missing_said; /* its absence was said, not yet its return */
	/* The link's command count after the last command to it: a look
	 * queued before that was done reads it as it was before. */
	uint64_t last_command;
};

/* A read of a look queued when `look_queued_after` commands were done
 * predates the command numbered `command`: it shows HAProxy before it,
 * and would undo what the agent knows. The one staleness test of the
 * link (records and servers alike). */
static inline bool haproxy_record_predates(uint64_t look_queued_after, uint64_t command)
{
	return command > look_queued_after;
}

/* What a look reads of the record is to be believed: it read it, and no
 * command to the record as a whole went out after it was queued. */
bool haproxy_record_readable(const struct haproxy_record *r, uint64_t look_queued_after);

/* What the `show map` reply made of a map record. */
enum haproxy_record_search {
	RECORD_STILL,   /* found where it was, or still absent */
	RECORD_FOUND,   /* found, where it was not before (not known: read it before writing) */
	RECORD_LOST,    /* was found, is no more */
	RECORD_UNSAFE,  /* listed, under a path no command may carry: kept as absent */
};
enum haproxy_record_search haproxy_record_search(struct haproxy_record *r,
						 const struct haproxy_record_ops *ops,
						 const char *reply, size_t len);

/* The command that reads the record at a look ("show map PATH", "show
 * table NAME"); false (buf "") when it has not been found. */
bool haproxy_record_show_cmd(char *buf, size_t size, const struct haproxy_record_ops *ops,
			     const struct haproxy_record *r);

/* What turns HAProxy's value (have) into the agent's (want), NULL for no
 * entry. A table is set whenever the agent wants something: its entries
 * expire unless rewritten, and are never deleted. */
enum haproxy_record_change {
	RECORD_NOTHING,
	RECORD_ADD,
	RECORD_SET,
	RECORD_DEL,
};
enum haproxy_record_change haproxy_record_change(const struct haproxy_record_ops *ops,
						 const char *have, const char *want);

/* The key of backend/server ("server" NULL for a backend's record) into
 * buf; false when it does not fit or is over ops->key_max. */
bool haproxy_record_key(char *buf, size_t size, const struct haproxy_record_ops *ops,
			const char *backend, const char *server);

/* The one command that turns have into want for backend/server in the
 * record at `where` (built by hapi/cmd.c); false (buf "") when
 * there is nothing to do, or it cannot be built. */
bool haproxy_record_cmd(char *buf, size_t size, const struct haproxy_record_ops *ops,
			const char *where, const char *backend, const char *server,
			const char *have, const char *want);

/* Walks a `show map PATH` reply ("0xADDR KEY VALUE" lines) of a map
 * record: fn gets each entry whose key splits, by ops->key, into valid
 * names (server empty for a backend's record), with its value (empty when
 * the line has none), and returns false for a value it cannot read. Lines
 * that are not entries, and those fn refused, are counted in *skipped (may
 * be NULL). False when the reply is an error, e.g. "Unknown map
 * identifier". */
typedef bool (*haproxy_record_fn)(void *ctx, struct runtime_api_str backend,
				  struct runtime_api_str server, struct runtime_api_str value);
bool haproxy_record_walk(const struct haproxy_record_ops *ops, const char *reply, size_t len,
			 haproxy_record_fn fn, void *ctx, unsigned *skipped);

#endif /* SPOA_RECORDS_HAPROXY_RECORD_H */
