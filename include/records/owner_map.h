/*
 * owner_map.h - which drains and limits are the agent's, recorded in
 * HAProxy itself (owner_map.c, pure), so an agent restarted without its
 * state snapshot can still tell them from an operator's.
 *
 * The record is an HAProxy map the configuration loads from a file named
 * breaker-owned.map (shipped empty; haproxy.cfg declares it through an
 * unused ACL, which is enough for HAProxy to load it on 2.6, 3.0 and 3.2).
 * The agent finds it in `show map`, reads it with `show map FILE` at each
 * look, and keeps it equal to what it did with `add map`, `set map` and
 * `del map`:
 *     workers/w3 drain              the agent drained workers/w3
 *     workers/w1 maxconn=50         it limited w1's maxconn; w1's own is 50
 *     workers/w2 drain,maxconn=0    both (0: w2's own maxconn is unlimited)
 * A restart of HAProxy reloads the map from its file, as it reloads the
 * drains from server-state-file: reload-haproxy.sh saves both (the map
 * when haproxy.cfg loads it from BREAKER_OWNED_MAP). Whatever the file
 * lacks, the next look writes again from what the agent remembers.
 *
 * Measured replies (2.6.12, 3.0.11, 3.2.26): add/set/del succeed with an
 * empty output; `del map` of a missing key says "Key not found.", `set
 * map` of one "entry not found.".
 */
#ifndef SPOA_RECORDS_OWNER_MAP_H
#define SPOA_RECORDS_OWNER_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hapi/runtime_api.h"
#include "records/haproxy_record.h"
#include "records/owner_map-t.h"

#define OWNER_MAP_NAME "breaker-owned.map"
/* Longest value: "drain,maxconn=4294967295". */
#define OWNER_MAP_VALUE_MAX 32

/* The record's table (haproxy_record.h): keys BACKEND/SERVER. */
extern const struct haproxy_record_ops owner_map_ops;

/* The record that says what mem says the agent did. */
struct owner_record owner_record_of(const struct enforce_memory *mem);
/*
 * What the agent takes from a record: each of the drain and the limit the
 * record says the agent set and mem does not know of, as its own (with the
 * server's own maxconn). Only the agent writes the record, right after its
 * commands, so it may be newer than what a restarted agent's snapshot
 * says (a kill -9 between a snapshot and the next trip): the snapshot is
 * no reason to disown a drain HAProxy still holds. Adding is safe either
 * way: a drain the agent believes its own matters only while HAProxy shows
 * the server drained, and is then lifted when the breaker wants it in.
 * Returns whether mem changed.
 */
bool owner_record_merge(const struct owner_record *rec, struct enforce_memory *mem);

/*
 * Finds the map whose file is named OWNER_MAP_NAME in a `show map` reply
 * ("# id (file) description" then "ID (PATH) ..." lines) and copies its
 * path into path (size bytes), as HAProxy lists it: absolute, or relative
 * to the configuration's default-path ("breaker-owned.map"), which is how
 * the commands must name it too. False when there is none, or when the
 * path holds anything but letters, digits and "/._-" (it goes into
 * commands).
 */
bool owner_map_find(const char *reply, size_t len, char *path, size_t size);
typedef void (*owner_map_fn)(void *ctx, struct runtime_api_str backend,
			     struct runtime_api_str server, const struct owner_record *rec);

/*
 * Walks a `show map FILE` reply ("0xADDR KEY VALUE" lines): fn gets each
 * well-formed KEY "BACKEND/SERVER" with its VALUE read as a record
 * (unknown words skipped). Lines that are not entries are skipped and
 * counted in *skipped (may be NULL). False when the reply is an error (it
 * starts with neither an entry nor an empty line), e.g. "Unknown map
 * identifier".
 */
bool owner_map_parse(const char *reply, size_t len, owner_map_fn fn, void *ctx,
		     unsigned *skipped);

/* The map's value for a record, into buf; NULL when the record says
 * nothing (no entry). */
const char *owner_map_value(char *buf, size_t size, const struct owner_record *r);

/*
 * The one command that turns the map's entry `have` into `want` for
 * backend/server in the map at path: "add map", "set map" or "del map".
 * False (buf "") when there is nothing to do, or a name or the path is
 * not valid, or it does not fit in size bytes.
 */
bool owner_map_cmd(char *buf, size_t size, const char *path, const char *backend,
		   const char *server, const struct owner_record *have,
		   const struct owner_record *want);

#endif /* SPOA_RECORDS_OWNER_MAP_H */
