/*
 * agent_check.h - a listener answering HAProxy's agent-check.
 *
 * For deployments without an admin socket: each server is configured with
 * `agent-check agent-send "BACKEND/SERVER\n"`, HAProxy connects every
 * agent-inter, sends that line, reads one line back and applies its words
 * (drain, ready, up, maxconn:N). The listener reads the name, asks its
 * `answer` callback for the line, writes it and closes.
 */
#ifndef SPOA_AGENT_CHECK_H
#define SPOA_AGENT_CHECK_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/acceptor.h"
#include "util/cidr.h"
#include "util/names.h"

#define AGENT_CHECK_MAX_CONNECTIONS 256
#define AGENT_CHECK_REQUEST_MAX 256 /* bytes of a request line, newline included */

/* ---- the request (agent_check_parse.c, pure) ---- */

enum agent_check_parse {
	AGENT_CHECK_REQUEST_OK,
	AGENT_CHECK_REQUEST_INCOMPLETE, /* no newline yet: read more */
	AGENT_CHECK_REQUEST_INVALID,    /* refuse: out->why says why */
};

struct agent_check_request {
	char backend[NAME_MAX_LEN + 1]; /* NUL-terminated, valid names */
	char server[NAME_MAX_LEN + 1];
	const char *why; /* INVALID: a static reason */
};

/*
 * Reads buf[0..len), the bytes received so far, as "BACKEND/SERVER\n"
 * (CR LF too; bytes after the newline are ignored). INCOMPLETE while no
 * newline came and len < max; INVALID for a longer line, a NUL byte in the
 * line, or anything but two names HAProxy accepts around one '/'.
 */
enum agent_check_parse agent_check_parse_request(const char *buf, size_t len, size_t max,
						 struct agent_check_request *out);

/* ---- the listener (agent_check.c) ---- */

/* Writes the answer for (backend, server) -- names already validated --
 * into buf, NUL-terminated, ending with "\n". */
typedef void (*agent_check_answer_fn)(void *ctx, const char *backend, const char *server,
				      char *buf, size_t size);

struct agent_check {
	struct acceptor acceptor; /* the listening socket, its name (util/acceptor.h) */
	struct ev_loop *loop;
	agent_check_answer_fn answer;
	void *ctx;
	unsigned nb_conns;
	uint64_t answered;
	uint64_t refused; /* unreadable or invalid names, too many connections,
			   * refused out of descriptors */
	/* Who may ask over TCP (borrowed, as the SPOP listener's: allow);
	 * NULL or empty: anyone. The answers tell the fleet's state, and a
	 * forged "ready" cannot come from here, but the state is nobody
	 * else's to read. */
	const struct cidr_list *allow;
	uint64_t not_allowed; /* closed at accept: not in allow */
};

/* Listens on spec (HOST:PORT, [IPV6]:PORT, unix:PATH). False with err set. */
bool agent_check_open(struct agent_check *ac, struct ev_loop *loop, const char *spec,
		      agent_check_answer_fn answer, void *ctx, char *err, size_t err_size);
/* Stops listening; connections in progress finish on their own. */
void agent_check_close(struct agent_check *ac);

#endif /* SPOA_AGENT_CHECK_H */
