/*
 * control.h - the operator's control socket on the event loop (control.c):
 * a unix socket speaking one command a line (daemon/control_parse.h), in
 * the style of HAProxy's Runtime API, so that
 *   echo "show breakers" | socat - unix:/var/lib/spoa-breaker/control.sock
 * works, and `spoa-breaker ctl` (ctl_client.c) is a thin client of it.
 *
 * Each connection carries one command: the agent reads its line, answers,
 * and closes (a line too long: answered at once, the rest the client sends
 * dropped until its stream ends, so that its writes meanwhile do not fail
 * before it reads the error). Bounded so that no client can hold the loop or the agent's
 * descriptors: at most CONTROL_MAX_CLIENTS at once (one more is told so
 * and closed), CONTROL_LINE_MAX bytes a line, CONTROL_TIMEOUT_S for the
 * line to come and for the answer to be read. Who may connect is who may
 * write to the socket's file (control_mode, control_group); who asked is
 * the peer's uid (SO_PEERCRED), handed to the command.
 */
#ifndef SPOA_CONTROL_H
#define SPOA_CONTROL_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/listen_socket.h"
#include "util/strbuf.h"

#define CONTROL_MAX_CLIENTS 16
#define CONTROL_TIMEOUT_S 10

/* Runs one command line (no newline) from the peer `uid` (-1: unknown)
 * and writes its answer into out; an error's answer starts "error: ". */
typedef void (*control_exec_fn)(void *ctx, const char *line, size_t len, long uid,
				struct strbuf *out);

struct control;

/* Listens on spec ("unix:PATH" only: the socket's file is its access
 * control), its file given owner's mode and group. NULL with err set. */
struct control *control_open(struct ev_loop *loop, const char *spec,
			     const struct listen_socket_owner *owner, control_exec_fn exec,
			     void *ctx, char *err, size_t err_size);
/* Closes the listener and every client; removes the socket's file. */
void control_close(struct control *c);

#endif /* SPOA_CONTROL_H */
