/*
 * acceptor.c - the accept loop our listeners share (see acceptor.h).
 *
 * A TCP peer the allowlist does not name is closed at accept, before a
 * byte of it is read: SPOP has no authentication, one frame could open a
 * breaker, and the agent-check answers tell the fleet's state. A unix
 * socket is guarded by its file's mode instead.
 *
 * A listening socket with a connection waiting stays readable: out of
 * descriptors, accept() fails and the loop would wake us for the same
 * connection at once, forever. So the owner first makes room if it can;
 * if not, that connection is refused through the reserve descriptor and
 * the socket is left alone for ACCEPTOR_PAUSE_S.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/acceptor.h"
#include "util/container_of.h"
#include "util/fd_limit.h"
#include "util/log.h"

void acceptor_peer_text(const struct sockaddr *sa, bool with_port, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port;
	bool v6 = sa->sa_family == AF_INET6;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)sa;
		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		port = ntohs(sin->sin_port);
	} else if (v6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)sa;
		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		port = ntohs(sin6->sin6_port);
	} else {
		snprintf(out, len, "unix");
		return;
	}
	if (!with_port)
		snprintf(out, len, "%s", ip);
	else
		snprintf(out, len, v6 ? "[%s]:%u" : "%s:%u", ip, port);
}

static bool peer_allowed(const struct acceptor *acc, const struct sockaddr_storage *ss)
{
	const struct cidr_list *l = acc->allow ? *acc->allow : NULL;
	if (!l || (!l->any && l->n == 0))
		return true;
	return cidr_list_allows(l, (const struct sockaddr *)ss);
}

static void pause_done_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct acceptor *acc = container_of(w, struct acceptor, pause);
	(void)revents;
	ev_io_start(loop, &acc->io);
}

/* accept() found no descriptor. Returns true when the owner made room and
 * accepting may go on. */
static bool out_of_descriptors(struct acceptor *acc, int err)
{
	const struct acceptor_ops *ops = acc->ops;

	if (ops->make_room && ops->make_room(acc, err))
		return true;
	if (fd_reserve_refuse(acc->fd))
		(*acc->refused)++;
	/* An owner that can make room says it could not. */
	log_warning("%s%s: accept failed: %s; %spausing %.0f ms", ops->log_prefix, acc->name,
		    strerror(err), ops->make_room ? "no connection to close for room, " : "",
		    ACCEPTOR_PAUSE_S * 1000);
	ev_io_stop(acc->loop, &acc->io);
	/* Set again each time: a stopped one-shot timer keeps no delay. */
	ev_timer_set(&acc->pause, ACCEPTOR_PAUSE_S, 0.);
	ev_timer_start(acc->loop, &acc->pause);
	return false;
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct acceptor *acc = (struct acceptor *)w;
	const struct acceptor_ops *ops = acc->ops;
	(void)loop;
	(void)revents;

	for (int i = 0; i < ACCEPTOR_BURST; i++) {
		struct sockaddr_storage ss;
		socklen_t ss_len = sizeof(ss);
		int fd = accept4(acc->fd, (struct sockaddr *)&ss, &ss_len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int err = errno;
			if (fd_limit_hit(err)) {
				if (out_of_descriptors(acc, err))
					continue;
				return;
			}
			if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR && err != ECONNABORTED)
				log_warning("%s%s: accept failed: %s", ops->log_prefix, acc->name,
					    strerror(err));
			return;
		}
		if (!acc->is_unix && !peer_allowed(acc, &ss)) {
			char who[64];
			acceptor_peer_text((struct sockaddr *)&ss, ops->log_peer_port, who, sizeof(who));
			close(fd);
			(*acc->not_allowed)++;
			/* Rate-limited per call site (util/log.h): a flood of
			 * them is one line per window and a count. */
			log_warning("%s%s: connection from %s refused: not in allow", ops->log_prefix,
				    acc->name, who);
			continue;
		}
		char peer[64];
		acceptor_peer_text((struct sockaddr *)&ss, true, peer, sizeof(peer));
		ops->accepted(acc, fd, peer);
	}
}

bool acceptor_open(struct acceptor *acc, struct ev_loop *loop, const char *spec,
		   const struct listen_socket_owner *file_owner, char *err, size_t err_len)
{
	bool is_unix;
	int fd = listen_socket_open_as(spec, file_owner, &is_unix, err, err_len);
	if (fd < 0) {
		acc->fd = -1;
		return false;
	}
	acc->loop = loop;
	acc->fd = fd;
	acc->is_unix = is_unix;
	snprintf(acc->name, sizeof(acc->name), "%s", spec);
	ev_io_init(&acc->io, accept_cb, fd, EV_READ);
	ev_io_start(loop, &acc->io);
	ev_timer_init(&acc->pause, pause_done_cb, ACCEPTOR_PAUSE_S, 0.);
	fd_reserve_open();
	return true;
}

void acceptor_close(struct acceptor *acc)
{
	if (acc->fd < 0 || !acc->loop)
		return;
	ev_io_stop(acc->loop, &acc->io);
	ev_timer_stop(acc->loop, &acc->pause);
	close(acc->fd);
	if (acc->is_unix)
		unlink(acc->name + 5); /* "unix:" */
	acc->fd = -1;
}
