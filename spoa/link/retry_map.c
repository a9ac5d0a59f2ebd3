/*
 * retry_map.c - when each backend may take traffic again, as recorded in
 * HAProxy (see retry_map.h). Pure: parsing and building over caller-owned
 * buffers.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "link/map_file.h"
#include "link/retry_map.h"
#include "util/names.h"

/* "0xADDR BACKEND VALUE" into e; false when the line is not such an entry. */
static bool parse_entry(const char *p, size_t len, struct retry_map_entry *e)
{
	struct runtime_api_str k, value;
	if (!map_entry_split(p, len, &k, &value) || !value.ptr)
		return false;
	const char *key = k.ptr, *v = value.ptr, *end = value.ptr + value.len;
	size_t key_len = k.len;
	if (key_len > BREAKER_NAME_MAX || !name_is_valid(key, key_len))
		return false;
	/* At most 18 digits: no overflow, and far beyond any real moment. */
	if (v == end || end - v > 18)
		return false;
	int64_t at = 0;
	for (; v < end; v++) {
		if (*v < '0' || *v > '9')
			return false;
		at = at * 10 + (*v - '0');
	}
	memcpy(e->backend, key, key_len);
	e->backend[key_len] = '\0';
	e->at_s = at;
	e->duplicate = false;
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
	const char *p = reply, *end = reply + len;
	unsigned bad = 0;
	size_t n = 0, lines = 0;

	*out = NULL;
	if (skipped)
		*skipped = 0;
	if (!map_reply_is_list(reply, len))
		return -1;
	for (size_t i = 0; i < len; i++)
		lines += reply[i] == '\n';
	lines += len > 0 && reply[len - 1] != '\n';
	if (lines == 0)
		return 0;
	struct retry_map_entry *list = malloc(lines * sizeof(*list));
	if (!list)
		return -1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;
		size_t line_len = (size_t)(stop - p);
		if (line_len > 0) {
			if (parse_entry(p, line_len, &list[n]))
				n++;
			else
				bad++;
		}
		p = nl ? nl + 1 : end;
	}
	if (n == 0) {
		free(list);
		list = NULL;
	}
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
	if (skipped)
		*skipped = bad;
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

bool retry_map_cmd(char *buf, size_t size, const char *path, const char *backend, int64_t have,
		   int64_t want)
{
	int n;

	if (size > 0)
		buf[0] = '\0';
	if (have == want || (have != RETRY_AT_NONE && want != RETRY_AT_NONE &&
			     (have - want <= 1 && want - have <= 1)))
		return false;
	if (!map_path_is_safe(path, strlen(path)) || !name_is_valid(backend, strlen(backend)))
		return false;
	if (want == RETRY_AT_NONE)
		n = snprintf(buf, size, "del map %s %s", path, backend);
	else
		n = snprintf(buf, size, "%s map %s %s %lld", have == RETRY_AT_NONE ? "add" : "set",
			     path, backend, (long long)want);
	return runtime_api_cmd_fits(buf, size, n);
}

int64_t retry_map_moment(int64_t now_unix_s, int64_t retry_after_s)
{
	if (retry_after_s < 0 || now_unix_s < 0)
		return RETRY_AT_NONE;
	return now_unix_s + retry_after_s;
}
