/*
 * fuzz_agent_check.c - libFuzzer target: the input is what a peer sent to
 * the agent-check listener.
 *
 * It is handed to agent_check_parse_request() the way the listener reads
 * it, growing a chunk at a time (the input's own bytes decide the chunk
 * sizes), and the verdict must hold: names that are valid and NUL-free,
 * copied from the line exactly, the line being "BACKEND/SERVER" and a
 * newline (CR LF too); INCOMPLETE only while no newline came and the limit
 * is not reached, and then the same verdict for every shorter prefix.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "link/agent_check.h"
#include "util/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond)
{
	if (!cond)
		__builtin_trap();
}

static void check_verdict(const char *buf, size_t len, enum agent_check_parse got,
			  const struct agent_check_request *req)
{
	const char *nl = memchr(buf, '\n', len);

	switch (got) {
	case AGENT_CHECK_REQUEST_INCOMPLETE:
		check(!nl && len < AGENT_CHECK_REQUEST_MAX);
		return;
	case AGENT_CHECK_REQUEST_INVALID:
		check(req->why != NULL);
		check(nl || len >= AGENT_CHECK_REQUEST_MAX);
		return;
	case AGENT_CHECK_REQUEST_OK:
		break;
	}
	check(nl != NULL);
	size_t b = strlen(req->backend), s = strlen(req->server);
	check(name_is_valid(req->backend, b) && name_is_valid(req->server, s));
	size_t line = (size_t)(nl - buf);
	check(line == b + 1 + s || (line == b + 2 + s && buf[line - 1] == '\r'));
	check(memcmp(buf, req->backend, b) == 0 && buf[b] == '/' &&
	      memcmp(buf + b + 1, req->server, s) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct agent_check_request req, last;
	enum agent_check_parse verdict = AGENT_CHECK_REQUEST_INCOMPLETE;
	size_t len = 0;

	/* As the listener reads: a chunk at a time, until a verdict. */
	while (len < size && verdict == AGENT_CHECK_REQUEST_INCOMPLETE) {
		size_t chunk = 1 + (uint8_t)buf[len] % 16;
		len = len + chunk < size ? len + chunk : size;
		verdict = agent_check_parse_request(buf, len, AGENT_CHECK_REQUEST_MAX, &req);
		check_verdict(buf, len, verdict, &req);
	}
	/* Whatever arrived after the verdict changes nothing. */
	if (verdict != AGENT_CHECK_REQUEST_INCOMPLETE && len < size) {
		size_t more = size < AGENT_CHECK_REQUEST_MAX ? size : AGENT_CHECK_REQUEST_MAX;
		if (more > len && memchr(buf, '\n', len)) {
			enum agent_check_parse again =
				agent_check_parse_request(buf, more, AGENT_CHECK_REQUEST_MAX, &last);
			check(again == verdict);
			if (verdict == AGENT_CHECK_REQUEST_OK)
				check(strcmp(last.backend, req.backend) == 0 &&
				      strcmp(last.server, req.server) == 0);
		}
	}
	return 0;
}
