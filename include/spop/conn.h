/*
 * conn.h - one SPOP connection (conn.c): its buffers, its frames, its
 * timers. The agent (agent.c) owns the list of connections; the listeners
 * (listener.c) hand each accepted socket to conn_accept().
 */
#ifndef SPOA_CONN_H
#define SPOA_CONN_H

#include "spop/agent.h"

/* Takes over fd (non-blocking, accepted by a listener) as a connection of
 * a, the most recently active one. The caller made room first
 * (conn_evict_longest_idle()) when a has max_connections already. `peer` is
 * for logs only. */
void conn_accept(struct agent *a, int fd, const char *peer);
/* Closes the connection of a that has been silent longest (an AGENT-
 * DISCONNECT first when it said HELLO), for `why` (logged). Its slot and
 * its descriptor are free on return. False if a has no connection. */
bool conn_evict_longest_idle(struct agent *a, const char *why);
/* Graceful stop: AGENT-DISCONNECT status 0, then close once written. */
void conn_goodbye(struct conn *c);
/* Closes and frees at once, without a goodbye. */
void conn_free(struct conn *c);
/* The next connection of the agent's list, or NULL. */
struct conn *conn_next(struct conn *c);
/* Sends the held output of c if its ticket has passed; may free c. */
void conn_release_hold(struct conn *c);

#endif /* SPOA_CONN_H */
