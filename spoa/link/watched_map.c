/*
 * watched_map.c - the servers HAProxy notifies every response of, as
 * recorded in HAProxy (see watched_map.h). Pure: parsing and building
 * over caller-owned buffers.
 */
#include <stdio.h>
#include <string.h>

#include "link/map_file.h"
#include "link/watched_map.h"
#include "util/names.h"

/* "0xADDR SERVER@BACKEND VALUE": false when the line is not such an entry. */
static bool parse_entry(const char *p, size_t len, struct runtime_api_str *backend,
			struct runtime_api_str *server)
{
	struct runtime_api_str key, value;
	if (!map_entry_split(p, len, &key, &value))
		return false;
	const char *key_end = key.ptr + key.len, *at = NULL;
	for (const char *c = key.ptr; c < key_end; c++)
		if (*c == '@')
			at = c;
	if (!at)
		return false;
	*server = (struct runtime_api_str){key.ptr, (size_t)(at - key.ptr)};
	*backend = (struct runtime_api_str){at + 1, (size_t)(key_end - at - 1)};
	return name_is_valid(server->ptr, server->len) && name_is_valid(backend->ptr, backend->len);
}

bool watched_map_parse(const char *reply, size_t len, watched_map_fn fn, void *ctx,
		       unsigned *skipped)
{
	const char *p = reply, *end = reply + len;
	struct runtime_api_str backend, server;
	unsigned bad = 0;

	if (!map_reply_is_list(reply, len))
		return false;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;
		size_t line_len = (size_t)(stop - p);
		if (line_len > 0) {
			if (parse_entry(p, line_len, &backend, &server))
				fn(ctx, backend, server);
			else
				bad++;
		}
		p = nl ? nl + 1 : end;
	}
	if (skipped)
		*skipped = bad;
	return true;
}

bool watched_map_cmd(char *buf, size_t size, const char *path, const char *backend,
		     const char *server, bool watched)
{
	int n;

	if (size > 0)
		buf[0] = '\0';
	if (!map_path_is_safe(path, strlen(path)) || !name_is_valid(backend, strlen(backend)) ||
	    !name_is_valid(server, strlen(server)))
		return false;
	if (watched)
		n = snprintf(buf, size, "add map %s %s@%s 1", path, server, backend);
	else
		n = snprintf(buf, size, "del map %s %s@%s", path, server, backend);
	return runtime_api_cmd_fits(buf, size, n);
}
