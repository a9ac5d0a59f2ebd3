/*
 * listener.c - listening sockets (TCP over IPv4/IPv6, unix) and accept.
 *
 * A new connection is always let in: with max_connections open, or with
 * no descriptor left for it, an idle connection is closed to make room
 * (conn_evict_longest_idle(), which says which). Only when there is
 * none to close (the descriptors went elsewhere) is the newcomer refused,
 * through the reserve descriptor, and the listener pauses for
 * LISTENER_PAUSE instead of being woken for the same connection at once.
 *
 * A TCP peer the allowlist (a->allow) does not name is closed at accept,
 * before a byte of it is read: SPOP has no authentication, and one frame
 * could open a breaker.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "spop/agent.h"
#include "spop/conn.h"
#include "spop/listener.h"
#include "util/fd_limit.h"
#include "util/log.h"
#include "util/listen_socket.h"
#include "util/sockaddr.h"
#include "util/errmsg.h"
#include "util/container_of.h"

#define LISTENER_PAUSE 0.1 /* seconds, when out of descriptors */

struct listener {
	ev_io io; /* first: the callback recovers the listener from its watcher */
	ev_timer pause;
	struct agent *agent;
	int fd;
	bool is_unix;
	char name[128];
};

static void describe_peer(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(out, len, "%s:%u", ip, ntohs(sin->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		snprintf(out, len, "[%s]:%u", ip, ntohs(sin6->sin6_port));
	} else {
		snprintf(out, len, "unix");
	}
}

static bool peer_allowed(const struct agent *a, const struct sockaddr_storage *ss)
{
	const struct cidr_list *l = a->allow;
	if (!l || (!l->any && l->n == 0))
		return true;
	return cidr_list_allows(l, (const struct sockaddr *)ss);
}

static void pause_done_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct listener *l = container_of(w, struct listener, pause);
	(void)revents;
	ev_io_start(loop, &l->io);
}

/* accept() found no descriptor. Returns true when room was made and
 * accepting may go on. */
static bool out_of_descriptors(struct listener *l, int err)
{
	struct agent *a = l->agent;

	if ((err == EMFILE || err == ENFILE) && conn_evict_longest_idle(a, "out of file descriptors"))
		return true;
	if (fd_reserve_refuse(l->fd))
		a->stats.connections_refused++;
	log_warning("%s: accept failed: %s; no connection to close for room, pausing %.0f ms",
		    l->name, strerror(err), LISTENER_PAUSE * 1000);
	ev_io_stop(a->loop, &l->io);
	ev_timer_set(&l->pause, LISTENER_PAUSE, 0.);
	ev_timer_start(a->loop, &l->pause);
	return false;
}

static void listener_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct listener *l = (struct listener *)w;
	struct agent *a = l->agent;
	(void)loop;
	(void)revents;

	/* Bounded per wakeup so a connection storm cannot starve the
	 * connections already being served. */
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t ss_len = sizeof(ss);
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &ss_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int err = errno;
			if (fd_limit_hit(err)) {
				if (out_of_descriptors(l, err))
					continue;
				return;
			}
			if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR && err != ECONNABORTED)
				log_warning("%s: accept failed: %s", l->name, strerror(err));
			return;
		}
		if (!l->is_unix && !peer_allowed(a, &ss)) {
			char who[64];
			describe_peer(&ss, who, sizeof(who));
			close(fd);
			a->stats.connections_not_allowed++;
			/* Rate-limited per call site (util/log.h): a flood of
			 * them is one line per window and a count. */
			log_warning("%s: connection from %s refused: not in allow", l->name, who);
			continue;
		}
		if (a->nb_conns >= a->settings.max_connections)
			conn_evict_longest_idle(a, "max_connections reached");
		if (!l->is_unix) {
			int one = 1;
			/* ACKs are small and latency is the product: no Nagle. */
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		char peer[64];
		describe_peer(&ss, peer, sizeof(peer));
		conn_accept(a, fd, peer);
	}
}

bool agent_listen(struct agent *a, const char *spec, const struct listen_socket_owner *owner,
		  char *err, size_t err_len)
{
	if (a->nb_listeners == AGENT_MAX_LISTENERS) {
		errmsg_set(err, err_len, "too many listen addresses (at most %d)", AGENT_MAX_LISTENERS);
		return false;
	}
	bool is_unix;
	int fd = listen_socket_open_as(spec, owner, &is_unix, err, err_len);
	if (fd < 0)
		return false;

	struct listener *l = calloc(1, sizeof(*l));
	if (!l) {
		errmsg_set(err, err_len, "listen address '%s': out of memory", spec);
		close(fd);
		return false;
	}
	l->agent = a;
	l->fd = fd;
	l->is_unix = is_unix;
	snprintf(l->name, sizeof(l->name), "%s", spec);
	ev_io_init(&l->io, listener_accept_cb, fd, EV_READ);
	ev_io_start(a->loop, &l->io);
	ev_timer_init(&l->pause, pause_done_cb, LISTENER_PAUSE, 0.);
	fd_reserve_open();
	a->listeners[a->nb_listeners++] = l;
	log_notice("listening on %s", spec);
	return true;
}

void listener_close(struct agent *a, struct listener *l)
{
	ev_io_stop(a->loop, &l->io);
	ev_timer_stop(a->loop, &l->pause);
	close(l->fd);
	if (l->is_unix && l->name[0])
		unlink(l->name + 5);
	free(l);
}
