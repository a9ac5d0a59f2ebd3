/*
 * runtime_api_cmd.c - the commands about servers and the look's reads,
 * from validated names (pure): `set server ... state`, `set maxconn
 * server`, `show servers state`, `show map FILE`.
 *
 * A name with ';', a space or a newline would append a command of its own,
 * so no name reaches HAProxy's admin socket unchecked: these builders and
 * those of the records HAProxy keeps for the agent (owner_map.c,
 * retry_map.c, watched_map.c, verdicts.c) each check theirs with
 * name_is_valid() (names.h), and a map's path with map_path_is_safe().
 */
#include <stdio.h>
#include <string.h>

#include "link/map_file.h"
#include "link/runtime_api.h"
#include "util/names.h"

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
