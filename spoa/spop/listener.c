/*
 * listener.c - listening sockets (TCP over IPv4/IPv6, unix) and accept.
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
#include "util/log.h"
#include "util/listen_socket.h"
#include "util/sockaddr.h"
#include "util/errmsg.h"

struct listener {
	ev_io io; /* first: the callback recovers the listener from its watcher */
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

static void listener_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct listener *l = (struct listener *)w;
	struct agent *a = l->agent;
	(void)revents;

	/* Bounded per wakeup so a connection storm cannot starve the
	 * connections already being served. */
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t ss_len = sizeof(ss);
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &ss_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warning("%s: accept failed: %s", l->name, strerror(errno));
			return;
		}
		if (a->nb_conns >= a->settings.max_connections) {
			a->stats.connections_refused++;
			if (ev_now(loop) - a->last_refusal_log >= 1.0) {
				log_warning("%s: %u connections open (max-connections), refusing new ones",
					    l->name, a->nb_conns);
				a->last_refusal_log = ev_now(loop);
			}
			close(fd);
			continue;
		}
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

bool agent_listen(struct agent *a, const char *spec, char *err, size_t err_len)
{
	if (a->nb_listeners == AGENT_MAX_LISTENERS) {
		errmsg_set(err, err_len, "too many listen addresses (at most %d)", AGENT_MAX_LISTENERS);
		return false;
	}
	bool is_unix;
	int fd = listen_socket_open(spec, &is_unix, err, err_len);
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
	a->listeners[a->nb_listeners++] = l;
	log_notice("listening on %s", spec);
	return true;
}

void listener_close(struct agent *a, struct listener *l)
{
	ev_io_stop(a->loop, &l->io);
	close(l->fd);
	if (l->is_unix && l->name[0])
		unlink(l->name + 5);
	free(l);
}
