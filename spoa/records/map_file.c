/*
 * map_file.c - what every HAProxy map the agent keeps shares (see
 * map_file.h). Pure: parsers over caller-owned buffers.
 */
#include <stddef.h>
#include <string.h>

#include "records/map_file.h"

bool map_reply_next_line(const char **p, const char *end, struct runtime_api_str *line)
{
	if (*p >= end)
		return false;
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	const char *stop = nl ? nl : end;
	line->ptr = *p;
	line->len = (size_t)(stop - *p);
	*p = nl ? nl + 1 : end;
	return true;
}

bool map_file_find(const char *reply, size_t len, const char *name, char *path, size_t size)
{
	const char *p = reply, *end = reply + len;
	struct runtime_api_str line;
	const size_t name_len = strlen(name);

	while (map_reply_next_line(&p, end, &line)) {
		/* "ID (PATH) description": the path between the first '(' and
		 * the ')' before the first blank after it. */
		const char *open = memchr(line.ptr, '(', line.len);
		if (!open || line.ptr[0] == '#')
			continue;
		const char *rest = open + 1, *stop = line.ptr + line.len;
		const char *close = memchr(rest, ')', (size_t)(stop - rest));
		if (!close)
			continue;
		size_t n = (size_t)(close - rest);
		/* The file itself, or a path that ends with "/" and its name. */
		if (n < name_len || memcmp(close - name_len, name, name_len) != 0 ||
		    (n > name_len && close[-(ptrdiff_t)name_len - 1] != '/'))
			continue;
		if (!map_path_is_safe(rest, n) || n >= size)
			return false;
		memcpy(path, rest, n);
		path[n] = '\0';
		return true;
	}
	return false;
}

bool map_entry_split(const char *p, size_t len, struct runtime_api_str *key,
		     struct runtime_api_str *value)
{
	const char *end = p + len;
	if (len < 3 || p[0] != '0' || p[1] != 'x')
		return false;
	const char *sp1 = memchr(p, ' ', len);
	if (!sp1)
		return false;
	const char *k = sp1 + 1;
	const char *sp2 = memchr(k, ' ', (size_t)(end - k));
	*key = (struct runtime_api_str){k, (size_t)((sp2 ? sp2 : end) - k)};
	*value = sp2 ? (struct runtime_api_str){sp2 + 1, (size_t)(end - sp2 - 1)}
		     : (struct runtime_api_str){NULL, 0};
	return true;
}

bool map_reply_is_list(const char *reply, size_t len)
{
	/* An empty map answers nothing; an error answers a sentence. */
	return len == 0 || (len >= 2 && reply[0] == '0' && reply[1] == 'x') || reply[0] == '\n';
}
