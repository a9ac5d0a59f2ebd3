/*
 * agent_check.c - answer HAProxy's agent-check (see agent_check.h).
 *
 * One short connection per check: read a line "BACKEND/SERVER" (at most
 * 255 bytes, 2 s), answer one line, close. The line is read by
 * agent_check_parse_request() (agent_check_parse.c); a name that is not a
 * valid HAProxy name is refused (the connection closed without an answer,
 * which HAProxy reports as an agent check error), never looked up.
 *
 * The listening socket is an acceptor (util/acceptor.h), as the SPOP
 * listeners are: a TCP peer `allow` does not name is closed at accept,
 * before a byte of it is read; out of descriptors, the waiting connection
 * is refused through the reserve descriptor and the listener pauses. It
 * has no connection it could close to make room: a check is short-lived.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "spop/agent.h"
#include "link/agent_check.h"
#include "util/log.h"
#include "util/names.h"
#include "util/container_of.h"

#define REQUEST_TIMEOUT 2.0

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
		log_warning("agent-check %s: refusing a request: %s", ac->acceptor.name, req->why);
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

/* Takes the accepted fd as one check, if there is room for it. */
static void accepted(struct acceptor *acc, int fd, const char *peer)
{
	struct agent_check *ac = container_of(acc, struct agent_check, acceptor);
	(void)peer;

	struct check_conn *cc =
		ac->nb_conns < AGENT_CHECK_MAX_CONNECTIONS ? calloc(1, sizeof(*cc)) : NULL;
	if (!cc) {
		ac->refused++;
		close(fd);
		return;
	}
	cc->ac = ac;
	cc->fd = fd;
	ac->nb_conns++;
	ev_io_init(&cc->io, check_conn_read_cb, fd, EV_READ);
	ev_io_start(ac->loop, &cc->io);
	ev_timer_init(&cc->timer, check_conn_timeout_cb, REQUEST_TIMEOUT, 0.);
	ev_timer_start(ac->loop, &cc->timer);
}

/* Its refusal line names the peer's address alone, no port. */
static const struct acceptor_ops agent_check_accept_ops = {
	.log_prefix = "agent-check ",
	.log_peer_port = false,
	.accepted = accepted,
	.make_room = NULL, /* no connection worth closing for another */
};

bool agent_check_open(struct agent_check *ac, struct ev_loop *loop, const char *spec,
		      agent_check_answer_fn answer, void *ctx, char *err, size_t err_size)
{
	memset(ac, 0, sizeof(*ac));
	ac->acceptor = (struct acceptor){
		.ops = &agent_check_accept_ops,
		.allow = &ac->allow,
		.not_allowed = &ac->not_allowed,
		.refused = &ac->refused,
	};
	if (!acceptor_open(&ac->acceptor, loop, spec, NULL, err, err_size))
		return false;
	ac->loop = loop;
	ac->answer = answer;
	ac->ctx = ctx;
	log_notice("answering agent-check on %s", spec);
	return true;
}

void agent_check_close(struct agent_check *ac)
{
	acceptor_close(&ac->acceptor);
}
