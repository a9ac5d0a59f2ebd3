/*
 * haproxy_record.c - the life the records HAProxy keeps for the agent
 * share (see haproxy_record.h). Pure: decisions and builders over
 * caller-owned buffers; the commands themselves come from
 * hapi/cmd.c.
 */
#include <stdio.h>
#include <string.h>

#include "records/haproxy_record.h"
#include "util/names.h"

bool haproxy_record_readable(const struct haproxy_record *r, uint64_t look_queued_after)
{
	return r->read && !haproxy_record_predates(look_queued_after, r->last_command);
}

/* Whether [s, s + len) holds the n bytes of what. */
static bool contains(const char *s, size_t len, const char *what, size_t n)
{
	for (size_t i = 0; n <= len && i <= len - n; i++)
		if (s[i] == what[0] && memcmp(s + i, what, n) == 0)
			return true;
	return false;
}

enum haproxy_record_search haproxy_record_search(struct haproxy_record *r,
						 const struct haproxy_record_ops *ops,
						 const char *reply, size_t len)
{
	char path[MAP_FILE_PATH_MAX];
	bool was = r->where[0] != '\0';

	if (map_file_find(reply, len, ops->name, path, sizeof(path))) {
		if (was && strcmp(path, r->where) == 0)
			return RECORD_STILL;
		snprintf(r->where, sizeof(r->where), "%s", path);
		r->known = false; /* read it before writing to it */
		return RECORD_FOUND;
	}
	r->where[0] = '\0';
	r->known = false;
	/* "(NAME)" in the list, yet not found: under a path commands cannot
	 * carry (map_file_find refuses those). */
	char listed[MAP_FILE_PATH_MAX + 2];
	int n = snprintf(listed, sizeof(listed), "%s)", ops->name);
	if (n > 0 && (size_t)n < sizeof(listed) && contains(reply, len, listed, (size_t)n))
		return RECORD_UNSAFE;
	return was ? RECORD_LOST : RECORD_STILL;
}

bool haproxy_record_show_cmd(char *buf, size_t size, const struct haproxy_record_ops *ops,
			     const struct haproxy_record *r)
{
	if (!r->where[0])
		return runtime_api_cmd_refuse(buf, size);
	if (ops->kind == HAPROXY_RECORD_TABLE)
		return runtime_api_cmd_show_table(buf, size, r->where);
	return runtime_api_cmd_show_map(buf, size, r->where);
}

enum haproxy_record_change haproxy_record_change(const struct haproxy_record_ops *ops,
						 const char *have, const char *want)
{
	if (ops->kind == HAPROXY_RECORD_TABLE)
		return want ? RECORD_SET : RECORD_NOTHING;
	if (!want)
		return have ? RECORD_DEL : RECORD_NOTHING;
	if (!have)
		return RECORD_ADD;
	bool same = ops->same ? ops->same(have, want) : strcmp(have, want) == 0;
	return same ? RECORD_NOTHING : RECORD_SET;
}

bool haproxy_record_key(char *buf, size_t size, const struct haproxy_record_ops *ops,
			const char *backend, const char *server)
{
	int n;
	/* A name holding a separator would read back as another key. */
	if (strpbrk(backend, "/@") || (server && strpbrk(server, "/@")))
		return runtime_api_cmd_refuse(buf, size);
	switch (ops->key) {
	case RECORD_KEY_SLASH:
		n = snprintf(buf, size, "%s/%s", backend, server ? server : "");
		break;
	case RECORD_KEY_SERVER_AT:
		n = snprintf(buf, size, "%s@%s", server ? server : "", backend);
		break;
	case RECORD_KEY_BACKEND:
	default:
		n = snprintf(buf, size, "%s", backend);
		break;
	}
	/* A key HAProxy would cut could collide with another: never built. */
	if (n >= 0 && ops->key_max && (size_t)n > ops->key_max)
		return runtime_api_cmd_refuse(buf, size);
	return runtime_api_cmd_fits(buf, size, n);
}

bool haproxy_record_cmd(char *buf, size_t size, const struct haproxy_record_ops *ops,
			const char *where, const char *backend, const char *server,
			const char *have, const char *want)
{
	char key[2 * (NAME_MAX_LEN + 1) + 1];
	enum haproxy_record_change change = haproxy_record_change(ops, have, want);

	if (change == RECORD_NOTHING || !backend || !haproxy_record_key(key, sizeof(key), ops, backend, server))
		return runtime_api_cmd_refuse(buf, size);
	switch (change) {
	case RECORD_ADD: return runtime_api_cmd_add_map(buf, size, where, key, want);
	case RECORD_SET:
		if (ops->kind == HAPROXY_RECORD_TABLE)
			return runtime_api_cmd_set_table(buf, size, where, key, want);
		return runtime_api_cmd_set_map(buf, size, where, key, want);
	case RECORD_DEL: return runtime_api_cmd_del_map(buf, size, where, key);
	case RECORD_NOTHING: break;
	}
	return runtime_api_cmd_refuse(buf, size);
}

/* KEY into the names ops->key makes it of; false when it is not such a key. */
static bool split_key(const struct haproxy_record_ops *ops, struct runtime_api_str key,
		      struct runtime_api_str *backend, struct runtime_api_str *server)
{
	*backend = key;
	*server = (struct runtime_api_str){key.ptr + key.len, 0};
	if (ops->key != RECORD_KEY_BACKEND) {
		char sep = ops->key == RECORD_KEY_SLASH ? '/' : '@';
		const char *at = memchr(key.ptr, sep, key.len);
		if (!at)
			return false;
		struct runtime_api_str first = {key.ptr, (size_t)(at - key.ptr)};
		struct runtime_api_str second = {at + 1, (size_t)(key.ptr + key.len - at - 1)};
		*backend = ops->key == RECORD_KEY_SLASH ? first : second;
		*server = ops->key == RECORD_KEY_SLASH ? second : first;
		if (!name_is_valid(server->ptr, server->len))
			return false;
	}
	/* No valid name holds '/' or '@': a second separator fails here. */
	return name_is_valid(backend->ptr, backend->len);
}

bool haproxy_record_walk(const struct haproxy_record_ops *ops, const char *reply, size_t len,
			 haproxy_record_fn fn, void *ctx, unsigned *skipped)
{
	const char *p = reply, *end = reply + len;
	struct runtime_api_str line, key, value, backend, server;
	unsigned bad = 0;

	if (skipped)
		*skipped = 0;
	if (!map_reply_is_list(reply, len))
		return false;
	while (map_reply_next_line(&p, end, &line)) {
		if (line.len == 0)
			continue;
		if (!map_entry_split(line.ptr, line.len, &key, &value) ||
		    !split_key(ops, key, &backend, &server)) {
			bad++;
			continue;
		}
		if (!value.ptr)
			value = (struct runtime_api_str){key.ptr + key.len, 0};
		if (!fn(ctx, backend, server, value))
			bad++;
	}
	if (skipped)
		*skipped = bad;
	return true;
}
