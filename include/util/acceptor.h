/*
 * acceptor.h - one listening socket on the loop, and the accept loop every
 * listener of ours shares (acceptor.c): the SPOP listeners and the
 * agent-check listener.
 *
 * What it does for its owner: accepts up to ACCEPTOR_BURST connections a
 * wakeup; closes a TCP peer the allowlist does not name before a byte of
 * it is read, counting it and logging it (rate-limited); out of
 * descriptors, asks the owner to make room and, if it cannot, refuses the
 * waiting connection through the reserve descriptor (util/fd_limit.h) and
 * pauses for ACCEPTOR_PAUSE_S instead of being woken for it again at once.
 * Everything else is the owner's, through struct acceptor_ops.
 *
 * The owner embeds a struct acceptor and recovers itself in its hooks with
 * container_of(), as libev watchers are used.
 */
#ifndef SPOA_ACCEPTOR_H
#define SPOA_ACCEPTOR_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "util/cidr.h"
#include "util/listen_socket.h"

#define ACCEPTOR_BURST 64    /* accepts per wakeup: a storm cannot starve the rest */
#define ACCEPTOR_PAUSE_S 0.1 /* when out of descriptors */

struct acceptor;

/* What differs from one kind of listener to another; one static table a
 * kind. */
struct acceptor_ops {
	/* Before the address in every log line: "" or "agent-check ". */
	const char *log_prefix;
	/* Whether "connection from PEER refused" names the port too
	 * ("127.0.0.2:40112", "[::1]:40112") or the address alone. */
	bool log_peer_port;
	/* Takes over fd (non-blocking, close-on-exec, allowed). peer is
	 * "ADDR:PORT", "[ADDR6]:PORT" or "unix", borrowed for the call. */
	void (*accepted)(struct acceptor *acc, int fd, const char *peer);
	/* Optional. accept() found no descriptor (err: EMFILE, ENFILE,
	 * ENOBUFS or ENOMEM): true if the owner made room and accepting may go
	 * on; false and the connection is refused through the reserve. */
	bool (*make_room)(struct acceptor *acc, int err);
};

struct acceptor {
	ev_io io;       /* first: the callback recovers the acceptor from its watcher */
	ev_timer pause; /* out of descriptors: accept() waits */
	struct ev_loop *loop;
	int fd;       /* -1: closed */
	bool is_unix; /* no allowlist, no TCP options: the file's mode guards it */
	char name[128]; /* the listen address as written, "unix:PATH" too */

	/* Set by the owner before acceptor_open() (a designated initializer),
	 * all borrowed from it: */
	const struct acceptor_ops *ops;
	/* The owner's allowlist pointer, read at every accept: a reload
	 * points the owner at a new list and the acceptor follows. NULL, or
	 * a NULL or empty list: anyone. */
	const struct cidr_list *const *allow;
	/* The owner's counters, which may sum several acceptors (every SPOP
	 * listener counts into the agent's): closed at accept, not in allow;
	 * refused through the reserve descriptor. */
	uint64_t *not_allowed;
	uint64_t *refused;
};

/*
 * Listens on spec ("HOST:PORT", "[IPV6]:PORT" or "unix:PATH"; a unix
 * socket's file gets file_owner's mode and group, NULL: the defaults) and
 * starts accepting on loop. acc's ops, allow and counters are set; the
 * rest is filled here. Opens the reserve descriptor. False with
 * "listen address 'SPEC': what failed" in err.
 */
bool acceptor_open(struct acceptor *acc, struct ev_loop *loop, const char *spec,
		   const struct listen_socket_owner *file_owner, char *err, size_t err_len);

/* Stops accepting and closes the socket (a unix socket's file is removed).
 * Connections already accepted are the owner's. Harmless when closed. */
void acceptor_close(struct acceptor *acc);

/* A peer as the log and the owner name it: "ADDR:PORT", "[ADDR6]:PORT",
 * or with_port false "ADDR"; "unix" for any other family. snprintf-like.
 * The admin listener's refusals name their peer with it too. */
void acceptor_peer_text(const struct sockaddr *sa, bool with_port, char *out, size_t len);

#endif /* SPOA_ACCEPTOR_H */
