/*
 * agent_check.c - answer HAProxy's agent-check (see agent_check.h).
 *
 * One short connection per check: read a line "BACKEND/SERVER" (at most
 * 255 bytes, 2 s), answer one line, close. The line is read by
 * agent_check_parse_request() (agent_check_parse.c); a name that is not a
 * valid HAProxy name is refused (the connection closed without an answer,
 * which HAProxy reports as an agent check error), never looked up.
 *
 * A TCP peer `allow` does not name is closed at accept, as on the SPOP
 * listener (spop/listener.c), before a byte of it is read.
 *
 * Out of descriptors, accept() fails while the connection waits, and the
 * listener would be woken for it at once, forever: it refuses that one
 * through the reserve descriptor and pauses (fd_limit.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "spop/agent.h"
#include "link/agent_check.h"
#include "util/log.h"
#include "util/names.h"
#include "util/container_of.h"
#include "util/fd_limit.h"
#include "util/listen_socket.h"

#define REQUEST_TIMEOUT 2.0
#define ACCEPT_PAUSE 0.1 /* seconds, when out of descriptors */

struct check_conn {
	ev_io io; /* first */
	ev_timer timer;
	struct agent_check *ac;
	int fd;
	size_t len;
	char buf[AGENT_CHECK_REQUEST_MAX];
};

static void check_conn_close(struct check_conn *cc)
{
	ev_io_stop(cc->ac->loop, &cc->io);
	ev_timer_stop(cc->ac->loop, &cc->timer);
	close(cc->fd);
	cc->ac->nb_conns--;
	free(cc);
}

/* Answers a complete request, or refuses it (closing without a word). */
static void answer_request(struct check_conn *cc, enum agent_check_parse parsed,
			   const struct agent_check_request *req)
{
	struct agent_check *ac = cc->ac;
	char reply[128];

	if (parsed != AGENT_CHECK_REQUEST_OK) {
		ac->refused++;
		log_warning("agent-check %s: refusing a request: %s", ac->name, req->why);
		return;
	}
	ac->answer(ac->ctx, req->backend, req->server, reply, sizeof(reply));
	/* One short line on a fresh socket: it fits the send buffer whole. */
	if (send(cc->fd, reply, strlen(reply), MSG_NOSIGNAL) > 0)
		ac->answered++;
	log_debug("agent-check %s/%s: %.*s", req->backend, req->server,
		  (int)strcspn(reply, "\n"), reply);
}

static void check_conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct check_conn *cc = (struct check_conn *)w;
	struct agent_check_request req;
	(void)loop;
	(void)revents;

	ssize_t n = read(cc->fd, cc->buf + cc->len, sizeof(cc->buf) - cc->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		check_conn_close(cc);
		return;
	}
	cc->len += (size_t)n;
	enum agent_check_parse parsed =
		agent_check_parse_request(cc->buf, cc->len, sizeof(cc->buf), &req);
	if (parsed == AGENT_CHECK_REQUEST_INCOMPLETE)
		return; /* the rest of the line is on its way */
	answer_request(cc, parsed, &req);
	check_conn_close(cc);
}

static void check_conn_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct check_conn *cc = container_of(w, struct check_conn, timer);
	(void)loop;
	(void)revents;
	cc->ac->refused++;
	check_conn_close(cc);
}

static void pause_done_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent_check *ac = container_of(w, struct agent_check, pause);
	(void)revents;
	ev_io_start(loop, &ac->io);
}

/* The peer's address, for the log. */
static void peer_address(const struct sockaddr_storage *ss, char *out, size_t len)
{
	const void *a = ss->ss_family == AF_INET6
				? (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr
				: (const void *)&((const struct sockaddr_in *)ss)->sin_addr;
	if (!inet_ntop(ss->ss_family, a, out, (socklen_t)len))
		snprintf(out, len, "?");
}

static bool peer_allowed(const struct agent_check *ac, const struct sockaddr_storage *ss)
{
	const struct cidr_list *l = ac->allow;
	if (!l || (!l->any && l->n == 0))
		return true;
	return cidr_list_allows(l, (const struct sockaddr *)ss);
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent_check *ac = (struct agent_check *)w;
	(void)revents;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t ss_len = sizeof(ss);
		int fd = accept4(ac->fd, (struct sockaddr *)&ss, &ss_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (fd_limit_hit(errno)) {
				int err = errno;
				if (fd_reserve_refuse(ac->fd))
					ac->refused++;
				log_warning("agent-check %s: accept failed: %s; pausing %.0f ms",
					    ac->name, strerror(err), ACCEPT_PAUSE * 1000);
				ev_io_stop(loop, &ac->io);
				ev_timer_start(loop, &ac->pause);
			}
			return;
		}
		if (!ac->is_unix && !peer_allowed(ac, &ss)) {
			char who[64];
			peer_address(&ss, who, sizeof(who));
			close(fd);
			ac->not_allowed++;
			/* Rate-limited per call site (util/log.h). */
			log_warning("agent-check %s: connection from %s refused: not in allow",
				    ac->name, who);
			continue;
		}
		struct check_conn *cc = ac->nb_conns < AGENT_CHECK_MAX_CONNECTIONS
						? calloc(1, sizeof(*cc))
						: NULL;
		if (!cc) {
			ac->refused++;
			close(fd);
			continue;
		}
		cc->ac = ac;
		cc->fd = fd;
		ac->nb_conns++;
		ev_io_init(&cc->io, check_conn_read_cb, fd, EV_READ);
		ev_io_start(loop, &cc->io);
		ev_timer_init(&cc->timer, check_conn_timeout_cb, REQUEST_TIMEOUT, 0.);
		ev_timer_start(loop, &cc->timer);
	}
}

bool agent_check_open(struct agent_check *ac, struct ev_loop *loop, const char *spec,
		      agent_check_answer_fn answer, void *ctx, char *err, size_t err_size)
{
	memset(ac, 0, sizeof(*ac));
	ac->fd = listen_socket_open(spec, &ac->is_unix, err, err_size);
	if (ac->fd < 0)
		return false;
	ac->loop = loop;
	ac->answer = answer;
	ac->ctx = ctx;
	snprintf(ac->name, sizeof(ac->name), "%s", spec);
	ev_io_init(&ac->io, accept_cb, ac->fd, EV_READ);
	ev_io_start(loop, &ac->io);
	ev_timer_init(&ac->pause, pause_done_cb, ACCEPT_PAUSE, 0.);
	fd_reserve_open();
	log_notice("answering agent-check on %s", spec);
	return true;
}

void agent_check_close(struct agent_check *ac)
{
	if (ac->fd < 0 || !ac->loop)
		return;
	ev_io_stop(ac->loop, &ac->io);
	ev_timer_stop(ac->loop, &ac->pause);
	close(ac->fd);
	if (ac->is_unix)
		unlink(ac->name + 5);
	ac->fd = -1;
}
