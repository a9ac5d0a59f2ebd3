/*
 * watched_map.c - the servers HAProxy notifies every response of, as
 * recorded in HAProxy (see watched_map.h), one of the records HAProxy
 * keeps (haproxy_record.h). Pure.
 */
#include "records/watched_map.h"

const struct haproxy_record_ops watched_map_ops = {
	.name = WATCHED_MAP_NAME,
	.kind = HAPROXY_RECORD_MAP,
	.key = RECORD_KEY_SERVER_AT,
	.found = "steady-state mode, it notifies the successes of watched servers only, and the "
		 "agent keeps the map",
	.lost = "every-response mode",
};

bool watched_map_parse(const char *reply, size_t len, haproxy_record_fn fn, void *ctx,
		       unsigned *skipped)
{
	return haproxy_record_walk(&watched_map_ops, reply, len, fn, ctx, skipped);
}

const char *watched_map_value(bool watched)
{
	return watched ? "1" : NULL;
}

bool watched_map_cmd(char *buf, size_t size, const char *path, const char *backend,
		     const char *server, bool watched)
{
	/* The one command that differs: add, or del whatever is there. */
	return haproxy_record_cmd(buf, size, &watched_map_ops, path, backend, server,
				  watched_map_value(!watched), watched_map_value(watched));
}
