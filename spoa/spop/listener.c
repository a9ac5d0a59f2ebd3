/*
 * listener.c - the SPOP listening sockets (TCP over IPv4/IPv6, unix): an
 * acceptor each (util/acceptor.h), which handles the allowlist (a->allow),
 * the reserve descriptor and the pause; what is SPOP's is here.
 *
 * A new connection is always let in: with max_connections open, or with
 * no descriptor left for it, an idle connection is closed to make room
 * (conn_evict_longest_idle(), which says which). Only when there is
 * none to close (the descriptors went elsewhere) is the newcomer refused,
 * through the reserve descriptor, and the listener pauses.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "spop/agent.h"
#include "spop/conn.h"
#include "spop/listener.h"
#include "util/acceptor.h"
#include "util/log.h"
#include "util/errmsg.h"
#include "util/container_of.h"

struct listener {
	struct acceptor acc;
	struct agent *agent;
};

/* Out of descriptors: an idle connection gives its own up. */
static bool make_room(struct acceptor *acc, int err)
{
	struct listener *l = container_of(acc, struct listener, acc);
	return (err == EMFILE || err == ENFILE) &&
	       conn_evict_longest_idle(l->agent, "out of file descriptors");
}

static void accepted(struct acceptor *acc, int fd, const char *peer)
{
	struct listener *l = container_of(acc, struct listener, acc);
	struct agent *a = l->agent;

	if (a->nb_conns >= a->settings.max_connections)
		conn_evict_longest_idle(a, "max_connections reached");
	if (!acc->is_unix) {
		int one = 1;
		/* ACKs are small and latency is the product: no Nagle. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	conn_accept(a, fd, peer);
}

static const struct acceptor_ops spop_accept_ops = {
	.log_prefix = "",
	.log_peer_port = true,
	.accepted = accepted,
	.make_room = make_room,
};

bool agent_listen(struct agent *a, const char *spec, const struct listen_socket_owner *owner,
		  char *err, size_t err_len)
{
	if (a->nb_listeners == AGENT_MAX_LISTENERS) {
		errmsg_set(err, err_len, "too many listen addresses (at most %d)", AGENT_MAX_LISTENERS);
		return false;
	}
	struct listener *l = calloc(1, sizeof(*l));
	if (!l) {
		errmsg_set(err, err_len, "listen address '%s': out of memory", spec);
		return false;
	}
	l->agent = a;
	l->acc = (struct acceptor){
		.ops = &spop_accept_ops,
		.allow = &a->allow,
		.not_allowed = &a->stats.connections_not_allowed,
		.refused = &a->stats.connections_refused,
	};
	if (!acceptor_open(&l->acc, a->loop, spec, owner, err, err_len)) {
		free(l);
		return false;
	}
	a->listeners[a->nb_listeners++] = l;
	log_notice("listening on %s", spec);
	return true;
}

void listener_close(struct agent *a, struct listener *l)
{
	(void)a;
	acceptor_close(&l->acc);
	free(l);
}
