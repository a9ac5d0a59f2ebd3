/*
 * retry_map.c - when each backend may take traffic again, as recorded in
 * HAProxy (see retry_map.h), one of the records HAProxy keeps
 * (haproxy_record.h). Pure: its values, formatted and read.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "records/retry_map.h"

/* Two moments within a second of each other: the clocks the agent
 * computes them from are read at different instants, and a rounding must
 * not rewrite the map at every look. */
static bool same_moment(const char *have, const char *want)
{
	long long h = strtoll(have, NULL, 10), w = strtoll(want, NULL, 10);
	return h - w <= 1 && w - h <= 1;
}

const struct haproxy_record_ops retry_map_ops = {
	.name = RETRY_MAP_NAME,
	.kind = HAPROXY_RECORD_MAP,
	.key = RECORD_KEY_BACKEND,
	.key_max = BREAKER_NAME_MAX,
	.same = same_moment,
	.missing = "its own 503 gets the configuration's fixed Retry-After, not the time until "
		   "a breaker probes (optional: the frontend's `http-after-response "
		   "set-var(txn.breaker_retry_in) be_name,map_str_int(" RETRY_MAP_NAME
		   ",0),...` line loads it, see docs/wiring.md)",
	.missing_level = LOG_LEVEL_INFO,
};

/* The entries read so far, grown as lines come. */
struct reading {
	struct retry_map_entry *list;
	size_t n, allocated;
	bool failed; /* no memory */
};

/* "BACKEND VALUE" into the list; false when VALUE is not a moment. */
static bool on_entry(void *ctx, struct runtime_api_str backend, struct runtime_api_str server,
		     struct runtime_api_str value)
{
	struct reading *r = ctx;
	const char *v = value.ptr, *end = value.ptr + value.len;
	(void)server;
	/* At most 18 digits: no overflow, and far beyond any real moment. */
	if (backend.len > BREAKER_NAME_MAX || v == end || end - v > 18)
		return false;
	int64_t at = 0;
	for (; v < end; v++) {
		if (*v < '0' || *v > '9')
			return false;
		at = at * 10 + (*v - '0');
	}
	if (r->n == r->allocated) {
		size_t more = r->allocated ? 2 * r->allocated : 16;
		struct retry_map_entry *list = realloc(r->list, more * sizeof(*list));
		if (!list) {
			r->failed = true;
			return true;
		}
		r->list = list;
		r->allocated = more;
	}
	struct retry_map_entry *e = &r->list[r->n++];
	memcpy(e->backend, backend.ptr, backend.len);
	e->backend[backend.len] = '\0';
	e->at_s = at;
	e->duplicate = false;
	e->seen = false;
	return true;
}

static int by_backend(const void *a, const void *b)
{
	return strcmp(((const struct retry_map_entry *)a)->backend,
		      ((const struct retry_map_entry *)b)->backend);
}

long retry_map_parse(const char *reply, size_t len, struct retry_map_entry **out,
		     unsigned *skipped)
{
	struct reading r = {0};

	*out = NULL;
	if (!haproxy_record_walk(&retry_map_ops, reply, len, on_entry, &r, skipped) || r.failed) {
		free(r.list);
		return -1;
	}
	size_t n = r.n;
	struct retry_map_entry *list = r.list;
	if (n > 1)
		qsort(list, n, sizeof(*list), by_backend);
	/* A name listed twice: kept once, marked, so that it is rewritten
	 * whole (del map removes every entry of a key). */
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		if (kept > 0 && strcmp(list[kept - 1].backend, list[i].backend) == 0) {
			list[kept - 1].duplicate = true;
			continue;
		}
		list[kept++] = list[i];
	}
	if (kept == 0) {
		free(list);
		list = NULL;
	}
	*out = list;
	return (long)kept;
}

struct retry_map_entry *retry_map_lookup(struct retry_map_entry *list, size_t n,
					 const char *backend)
{
	struct retry_map_entry key;
	size_t len = strlen(backend);
	if (n == 0 || len > BREAKER_NAME_MAX)
		return NULL;
	memcpy(key.backend, backend, len + 1);
	return bsearch(&key, list, n, sizeof(*list), by_backend);
}

const char *retry_map_value(char *buf, size_t size, int64_t at_s)
{
	if (at_s == RETRY_AT_NONE)
		return NULL;
	snprintf(buf, size, "%lld", (long long)at_s);
	return buf;
}

bool retry_map_cmd(char *buf, size_t size, const char *path, const char *backend, int64_t have,
		   int64_t want)
{
	char have_text[RETRY_MAP_VALUE_MAX], want_text[RETRY_MAP_VALUE_MAX];
	return haproxy_record_cmd(buf, size, &retry_map_ops, path, backend, NULL,
				  retry_map_value(have_text, sizeof(have_text), have),
				  retry_map_value(want_text, sizeof(want_text), want));
}

int64_t retry_map_moment(int64_t now_unix_s, int64_t retry_after_s)
{
	if (retry_after_s < 0 || now_unix_s < 0)
		return RETRY_AT_NONE;
	return now_unix_s + retry_after_s;
}
