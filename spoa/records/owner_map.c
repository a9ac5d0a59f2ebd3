/*
 * owner_map.c - the agent's drains and limits as recorded in HAProxy (see
 * owner_map.h), one of the records HAProxy keeps (haproxy_record.h). Pure:
 * its values, formatted and read.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "records/haproxy_record.h"
#include "records/map_file.h"
#include "records/owner_map.h"

struct owner_record owner_record_of(const struct enforce_memory *mem)
{
	struct owner_record r = {0};
	r.drained = mem->drained_by_us;
	/* A limit is recorded with the value to restore; one whose own value
	 * is not known yet (it never is, once set) records unlimited. */
	r.limited = mem->maxconn_by_us;
	r.own_maxconn = mem->own_maxconn_known ? mem->own_maxconn : 0;
	r.present = r.drained || r.limited;
	if (!r.limited)
		r.own_maxconn = 0;
	return r;
}

bool owner_record_merge(const struct owner_record *rec, struct enforce_memory *mem)
{
	bool changed = false;
	if (rec->drained && !mem->drained_by_us) {
		mem->drained_by_us = true;
		changed = true;
	}
	if (rec->limited && !mem->maxconn_by_us) {
		mem->maxconn_by_us = true;
		mem->own_maxconn_known = true;
		mem->own_maxconn = rec->own_maxconn;
		changed = true;
	}
	return changed;
}

const struct haproxy_record_ops owner_map_ops = {
	.name = OWNER_MAP_NAME,
	.kind = HAPROXY_RECORD_MAP,
	.key = RECORD_KEY_SLASH,
	.missing = "without a state snapshot, a restarted agent cannot tell its drains from an "
		   "operator's; add `acl breaker_owned str(),map(" OWNER_MAP_NAME ") -m found` "
		   "to one backend (see docs/wiring.md)",
	.missing_level = LOG_LEVEL_NOTICE,
};

/* ---- reading ---- */

bool owner_map_find(const char *reply, size_t len, char *path, size_t size)
{
	return map_file_find(reply, len, OWNER_MAP_NAME, path, size);
}

/* "drain", "maxconn=N", comma-separated; unknown words are skipped so a
 * later agent may add some. */
static void parse_value(const char *v, size_t len, struct owner_record *r)
{
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && v[j] != ',')
			j++;
		size_t n = j - i;
		if (n == 5 && memcmp(v + i, "drain", 5) == 0) {
			r->drained = true;
		} else if (n > 8 && memcmp(v + i, "maxconn=", 8) == 0 && n - 8 <= 10) {
			uint64_t x = 0;
			size_t k;
			for (k = i + 8; k < j && v[k] >= '0' && v[k] <= '9'; k++)
				x = x * 10 + (uint64_t)(v[k] - '0');
			if (k == j && x <= UINT32_MAX) {
				r->limited = true;
				r->own_maxconn = (uint32_t)x;
			}
		}
		i = j + 1;
	}
	r->present = r->drained || r->limited;
}

struct walk {
	owner_map_fn fn;
	void *ctx;
};

static bool on_entry(void *ctx, struct runtime_api_str backend, struct runtime_api_str server,
		     struct runtime_api_str value)
{
	struct walk *w = ctx;
	struct owner_record rec = {0};
	if (value.len == 0)
		return false;
	parse_value(value.ptr, value.len, &rec);
	w->fn(w->ctx, backend, server, &rec);
	return true;
}

bool owner_map_parse(const char *reply, size_t len, owner_map_fn fn, void *ctx,
		     unsigned *skipped)
{
	struct walk w = {fn, ctx};
	return haproxy_record_walk(&owner_map_ops, reply, len, on_entry, &w, skipped);
}

/* ---- writing ---- */

const char *owner_map_value(char *buf, size_t size, const struct owner_record *r)
{
	if (!r->present)
		return NULL;
	if (r->drained && r->limited)
		snprintf(buf, size, "drain,maxconn=%u", (unsigned)r->own_maxconn);
	else if (r->limited)
		snprintf(buf, size, "maxconn=%u", (unsigned)r->own_maxconn);
	else
		snprintf(buf, size, "drain");
	return buf;
}

bool owner_map_cmd(char *buf, size_t size, const char *path, const char *backend,
		   const char *server, const struct owner_record *have,
		   const struct owner_record *want)
{
	char have_text[OWNER_MAP_VALUE_MAX], want_text[OWNER_MAP_VALUE_MAX];
	return haproxy_record_cmd(buf, size, &owner_map_ops, path, backend, server,
				  owner_map_value(have_text, sizeof(have_text), have),
				  owner_map_value(want_text, sizeof(want_text), want));
}
