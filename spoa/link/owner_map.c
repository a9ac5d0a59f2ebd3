/*
 * owner_map.c - the agent's drains and limits as recorded in HAProxy (see
 * owner_map.h). Pure: builders and parsers over caller-owned buffers.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "link/map_file.h"
#include "link/owner_map.h"
#include "util/names.h"

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

void owner_record_adopt(const struct owner_record *rec, struct enforce_memory *mem)
{
	mem->drained_by_us = rec->drained;
	mem->maxconn_by_us = rec->limited;
	if (rec->limited) {
		mem->own_maxconn_known = true;
		mem->own_maxconn = rec->own_maxconn;
	}
}

bool owner_record_equal(const struct owner_record *a, const struct owner_record *b)
{
	if (a->present != b->present)
		return false;
	if (!a->present)
		return true;
	return a->drained == b->drained && a->limited == b->limited &&
	       (!a->limited || a->own_maxconn == b->own_maxconn);
}

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

/* "0xADDR BACKEND/SERVER VALUE": false when the line is not an entry. */
static bool parse_entry(struct runtime_api_str line, struct runtime_api_str *backend,
			struct runtime_api_str *server, struct owner_record *rec)
{
	struct runtime_api_str key, value;
	if (!map_entry_split(line.ptr, line.len, &key, &value) || !value.ptr)
		return false;
	const char *slash = memchr(key.ptr, '/', key.len);
	if (!slash)
		return false;
	*backend = (struct runtime_api_str){key.ptr, (size_t)(slash - key.ptr)};
	*server = (struct runtime_api_str){slash + 1, (size_t)(key.ptr + key.len - slash - 1)};
	if (!name_is_valid(backend->ptr, backend->len) || !name_is_valid(server->ptr, server->len))
		return false;
	memset(rec, 0, sizeof(*rec));
	parse_value(value.ptr, value.len, rec);
	return true;
}

bool owner_map_parse(const char *reply, size_t len, owner_map_fn fn, void *ctx,
		     unsigned *skipped)
{
	const char *p = reply, *end = reply + len;
	struct runtime_api_str line, backend, server;
	struct owner_record rec;
	unsigned bad = 0;

	if (!map_reply_is_list(reply, len))
		return false;
	while (map_reply_next_line(&p, end, &line)) {
		if (line.len == 0)
			continue;
		if (parse_entry(line, &backend, &server, &rec))
			fn(ctx, backend, server, &rec);
		else
			bad++;
	}
	if (skipped)
		*skipped = bad;
	return true;
}

/* ---- writing ---- */

static void format_value(char *buf, size_t size, const struct owner_record *r)
{
	if (r->drained && r->limited)
		snprintf(buf, size, "drain,maxconn=%u", (unsigned)r->own_maxconn);
	else if (r->limited)
		snprintf(buf, size, "maxconn=%u", (unsigned)r->own_maxconn);
	else
		snprintf(buf, size, "drain");
}

bool owner_map_cmd(char *buf, size_t size, const char *path, const char *backend,
		   const char *server, const struct owner_record *have,
		   const struct owner_record *want)
{
	char value[48];
	int n;

	if (size > 0)
		buf[0] = '\0';
	if (owner_record_equal(have, want) || !map_path_is_safe(path, strlen(path)) ||
	    !name_is_valid(backend, strlen(backend)) || !name_is_valid(server, strlen(server)))
		return false;
	if (!want->present) {
		n = snprintf(buf, size, "del map %s %s/%s", path, backend, server);
	} else {
		format_value(value, sizeof(value), want);
		n = snprintf(buf, size, "%s map %s %s/%s %s", have->present ? "set" : "add", path,
			     backend, server, value);
	}
	return runtime_api_cmd_fits(buf, size, n);
}
