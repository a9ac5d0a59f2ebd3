/*
 * cmd.c - every command the agent sends HAProxy, from validated names
 * (pure): `set server ... state`, `set maxconn server`, `shutdown
 * sessions server`, `show servers state`, and those of the records HAProxy keeps for the agent (`show map`,
 * `add/set/del map`, `show table`, `set table`; haproxy_record.h).
 *
 * A name with ';', a space or a newline would append a command of its own,
 * so no name reaches HAProxy's admin socket unchecked, and the check lives
 * here once: names with name_is_valid() (names.h), a record's key as
 * names joined by one separator, a map's path with map_path_is_safe(), a
 * value or a table's data by the characters they may hold. The records'
 * own files (owner_map.c, retry_map.c, watched_map.c, verdicts.c) format
 * values only.
 */
#include <stdio.h>
#include <string.h>

#include "hapi/runtime_api.h"
#include "util/names.h"

/* A map's name as HAProxy lists it - absolute, or relative to its
 * default-path, exactly as the configuration wrote it - and so as the
 * commands name it. It goes into commands: nothing but a plain path. */
bool map_path_is_safe(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '/' || c == '.' || c == '_' || c == '-';
		if (!ok)
			return false;
	}
	return true;
}

static bool valid_name(const char *name)
{
	return name && name_is_valid(name, strlen(name));
}

bool runtime_api_cmd_fits(char *buf, size_t size, int n)
{
	if (n < 0 || (size_t)n >= size) {
		if (size > 0)
			buf[0] = '\0';
		return false;
	}
	return true;
}

bool runtime_api_cmd_refuse(char *buf, size_t size)
{
	if (size > 0)
		buf[0] = '\0';
	return false;
}

bool runtime_api_cmd_set_state(char *buf, size_t size, const char *backend, const char *server,
			 const char *state)
{
	if (!valid_name(backend) || !valid_name(server) || !state)
		return runtime_api_cmd_refuse(buf, size);
	if (strcmp(state, "ready") != 0 && strcmp(state, "drain") != 0 &&
	    strcmp(state, "maint") != 0)
		return runtime_api_cmd_refuse(buf, size);
	return runtime_api_cmd_fits(buf, size,
		    snprintf(buf, size, "set server %s/%s state %s", backend, server, state));
}

bool runtime_api_cmd_set_maxconn(char *buf, size_t size, const char *backend, const char *server,
			   unsigned maxconn)
{
	if (!valid_name(backend) || !valid_name(server))
		return runtime_api_cmd_refuse(buf, size);
	return runtime_api_cmd_fits(buf, size,
		    snprintf(buf, size, "set maxconn server %s/%s %u", backend, server, maxconn));
}

bool runtime_api_cmd_shutdown_sessions(char *buf, size_t size, const char *backend,
				       const char *server)
{
	if (!valid_name(backend) || !valid_name(server))
		return runtime_api_cmd_refuse(buf, size);
	return runtime_api_cmd_fits(buf, size,
		    snprintf(buf, size, "shutdown sessions server %s/%s", backend, server));
}

bool runtime_api_cmd_show_servers_state(char *buf, size_t size, const char *backend)
{
	if (!backend)
		return runtime_api_cmd_fits(buf, size, snprintf(buf, size, "show servers state"));
	if (!valid_name(backend))
		return runtime_api_cmd_refuse(buf, size);
	return runtime_api_cmd_fits(buf, size, snprintf(buf, size, "show servers state %s", backend));
}

bool runtime_api_cmd_show_map(char *buf, size_t size, const char *path)
{
	if (!path || !map_path_is_safe(path, strlen(path)))
		return runtime_api_cmd_refuse(buf, size);
	return runtime_api_cmd_fits(buf, size, snprintf(buf, size, "show map %s", path));
}

/* One name, or two joined by one '/' or '@'. */
static bool key_is_safe(const char *key)
{
	if (!key)
		return false;
	size_t len = strlen(key);
	const char *sep = NULL;
	for (size_t i = 0; i < len; i++) {
		if (key[i] != '/' && key[i] != '@')
			continue;
		if (sep)
			return false;
		sep = key + i;
	}
	if (!sep)
		return name_is_valid(key, len);
	return name_is_valid(key, (size_t)(sep - key)) &&
	       name_is_valid(sep + 1, (size_t)(key + len - sep - 1));
}

/* Letters, digits, ",=._"; with spaces, single ones between words (a
 * table's data). Nothing that ends a command or starts another. */
static bool text_is_safe(const char *v, bool spaces)
{
	if (!v || !v[0] || v[0] == ' ')
		return false;
	for (const char *c = v; *c; c++) {
		bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			  (*c >= '0' && *c <= '9') || *c == ',' || *c == '=' || *c == '.' ||
			  *c == '_' || (spaces && *c == ' ' && c[1] && c[1] != ' ');
		if (!ok)
			return false;
	}
	return true;
}

static bool map_write(char *buf, size_t size, const char *verb, const char *path,
		      const char *key, const char *value)
{
	if (!path || !map_path_is_safe(path, strlen(path)) || !key_is_safe(key) ||
	    !text_is_safe(value, false))
		return runtime_api_cmd_refuse(buf, size);
	return runtime_api_cmd_fits(buf, size,
				    snprintf(buf, size, "%s map %s %s %s", verb, path, key, value));
}

bool runtime_api_cmd_add_map(char *buf, size_t size, const char *path, const char *key,
			     const char *value)
{
	return map_write(buf, size, "add", path, key, value);
}

bool runtime_api_cmd_set_map(char *buf, size_t size, const char *path, const char *key,
			     const char *value)
{
	return map_write(buf, size, "set", path, key, value);
}

bool runtime_api_cmd_del_map(char *buf, size_t size, const char *path, const char *key)
{
	if (!path || !map_path_is_safe(path, strlen(path)) || !key_is_safe(key))
		return runtime_api_cmd_refuse(buf, size);
	return runtime_api_cmd_fits(buf, size, snprintf(buf, size, "del map %s %s", path, key));
}

bool runtime_api_cmd_show_table(char *buf, size_t size, const char *table)
{
	if (!valid_name(table))
		return runtime_api_cmd_refuse(buf, size);
	return runtime_api_cmd_fits(buf, size, snprintf(buf, size, "show table %s", table));
}

bool runtime_api_cmd_set_table(char *buf, size_t size, const char *table, const char *key,
			       const char *data)
{
	if (!valid_name(table) || !key_is_safe(key) || !text_is_safe(data, true))
		return runtime_api_cmd_refuse(buf, size);
	return runtime_api_cmd_fits(buf, size,
				    snprintf(buf, size, "set table %s key %s %s", table, key, data));
}
