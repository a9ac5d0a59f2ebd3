/*
 * agent_check_parse.c - the agent-check request, as a pure function over
 * the bytes received (see agent_check.h). No I/O, no allocation.
 *
 * The request is what `agent-send` says: "BACKEND/SERVER" and a newline
 * (a CR before it is tolerated). Lengths, not C strings, all the way: a
 * NUL inside the line is a byte like any other, and no name may hold one,
 * so "a/b\0c" is refused instead of being read as "a/b".
 */
#include <string.h>

#include "link/agent_check.h"
#include "util/names.h"

static enum agent_check_parse refuse(struct agent_check_request *out, const char *why)
{
	out->why = why;
	return AGENT_CHECK_REQUEST_INVALID;
}

enum agent_check_parse agent_check_parse_request(const char *buf, size_t len, size_t max,
						 struct agent_check_request *out)
{
	const char *nl = memchr(buf, '\n', len);

	out->backend[0] = out->server[0] = '\0';
	out->why = NULL;
	if (!nl)
		return len < max ? AGENT_CHECK_REQUEST_INCOMPLETE
				 : refuse(out, "request line too long");
	size_t line_len = (size_t)(nl - buf);
	if (line_len > 0 && buf[line_len - 1] == '\r')
		line_len--;
	if (memchr(buf, '\0', line_len))
		return refuse(out, "a NUL byte in the request");
	const char *slash = memchr(buf, '/', line_len);
	if (!slash)
		return refuse(out, "not BACKEND/SERVER");
	size_t backend_len = (size_t)(slash - buf);
	size_t server_len = line_len - backend_len - 1;
	if (!name_is_valid(buf, backend_len) || !name_is_valid(slash + 1, server_len))
		return refuse(out, "not BACKEND/SERVER with valid names");
	memcpy(out->backend, buf, backend_len);
	out->backend[backend_len] = '\0';
	memcpy(out->server, slash + 1, server_len);
	out->server[server_len] = '\0';
	return AGENT_CHECK_REQUEST_OK;
}
