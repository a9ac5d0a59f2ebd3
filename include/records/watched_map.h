/*
 * watched_map.h - which servers HAProxy must tell the agent every
 * response of, recorded in HAProxy (watched_map.c, pure).
 *
 * Steady-state mode (docs/haproxy.md, "Steady-state mode"): HAProxy
 * notifies only
 * the responses that can change a breaker. A status that is not a success
 * always can; a success only for a server whose breaker is dirty (open,
 * half-open, a failure streak, or a failure in the window of a failure-
 * rate policy: breaker_is_dirty()). HAProxy cannot know which those are,
 * so the agent keeps them in an HAProxy map loaded from a file named
 * breaker-watched.map (shipped empty), keyed the way the SPOE message's
 * ACL can build the key at response time:
 *     w3@workers 1          server w3 of backend workers is watched
 * (`srv_name,concat(@,txn.breaker_be),map(breaker-watched.map) -m found`,
 * txn.breaker_be set to be_name by the backend's http-request rules).
 * The agent adds a server when its breaker becomes dirty, deletes it when
 * it becomes clean, reads the map at every look and puts right whatever
 * differs (a restarted HAProxy starts from the empty file).
 */
#ifndef SPOA_RECORDS_WATCHED_MAP_H
#define SPOA_RECORDS_WATCHED_MAP_H
#include <stdbool.h>
#include <stddef.h>

#include "hapi/runtime_api.h"
#include "records/haproxy_record.h"

#define WATCHED_MAP_NAME "breaker-watched.map"

/* The record's table (haproxy_record.h): keys SERVER@BACKEND. */
extern const struct haproxy_record_ops watched_map_ops;
/* The map's value: "1" for a watched server, NULL for none. */
const char *watched_map_value(bool watched);

/*
 * Walks a `show map FILE` reply ("0xADDR SERVER@BACKEND VALUE" lines): fn
 * gets each entry whose key splits at its '@' into two valid names (the
 * value is not read: the key is what the ACL finds). Other lines are
 * skipped and counted in *skipped (may be NULL). False when the reply is
 * an error ("Unknown map identifier", ...).
 */
bool watched_map_parse(const char *reply, size_t len, haproxy_record_fn fn, void *ctx,
		       unsigned *skipped);

/*
 * The command that makes backend/server watched (add map) or not (del
 * map) in the map at path. False (buf "") when a name or the path is not
 * valid or it does not fit in size bytes.
 */
bool watched_map_cmd(char *buf, size_t size, const char *path, const char *backend,
		     const char *server, bool watched);
#endif /* SPOA_RECORDS_WATCHED_MAP_H */
