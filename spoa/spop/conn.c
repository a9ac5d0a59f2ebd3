/*
 * conn.c - one SPOP connection from HAProxy: frames in, frames out.
 *
 * Life of a connection: HELLO (waiting for HAPROXY-HELLO, under a timer),
 * READY (NOTIFYs answered with ACKs; closed after idle_timeout_ms without
 * a frame), CLOSING (our last frame is flushed, the write side shut, and
 * input discarded until the peer closes or the close timer fires). A
 * health-check HELLO goes straight from HELLO to CLOSING after the
 * AGENT-HELLO.
 *
 * The agent keeps its connections in two lists (agent.h): a new one goes
 * to the front of `fresh`, its first NOTIFY moves it to `used`, and each
 * NOTIFY to the front of `used` again. What makes room when there is none
 * (conn_evict_longest_idle()) is the last of `fresh`, else the last of
 * `used`: a burst of connections that only say HELLO never pushes out a
 * HAProxy connection that carries requests.
 *
 * I/O pattern, the hot path of every request through HAProxy: one read()
 * takes whatever frames have arrived, each is answered into the output
 * buffer, and one send() writes all the answers. No allocation per frame:
 * both buffers are allocated with the connection. When the output buffer
 * cannot hold one more maximal frame, reading pauses until it drains, so a
 * peer that does not read cannot make us queue without bound.
 *
 * Over TLS (agent.h, a->tls) the bytes go through the connection's TLS
 * session (spop/tls.h) instead of read() and send(): conn_recv() and
 * conn_send() are the one place that chooses, by one branch on c->tls, so
 * the plaintext path stays what it was. The session may need the other
 * readiness than the call it serves (a handshake write inside a read), and
 * may hold decrypted bytes the socket no longer signals: update_events()
 * asks for both.
 *
 * A held ACK (agent.h: the ticket the dispatch answered with) stops
 * sending at its first byte: it and everything answered after it wait in
 * the output buffer until its ticket has passed. The buffer's bound holds as before: a long
 * wait pauses reading, it never grows anything.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "spop/agent.h"
#include "spop/conn.h"
#include "spop/listener.h"
#include "util/log.h"
#include "spop/spop.h"
#include "spop/tls.h"
#include "util/clock.h"
#include "util/container_of.h"
#include "util/log_escape.h"

enum conn_state {
	CONN_HELLO,
	CONN_READY,
	CONN_CLOSING,
};

struct conn {
	ev_io io; /* first: the callback recovers the conn from its watcher */
	ev_timer timer;
	struct agent *agent;
	struct conn_list *list;   /* &agent->fresh or &agent->used */
	struct conn *prev, *next; /* in it, most recent first */
	double last_active;       /* clock_mono_s() of the last read that brought bytes */
	int fd;
	enum conn_state state;
	bool write_shut;
	uint32_t max_frame_size; /* negotiated; ours until the HELLO */
	bool healthcheck;
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_len, out_sent, out_cap;
	bool held;           /* output from out + held_from waits for held_ticket */
	size_t held_from;
	uint64_t held_ticket;
	struct tls_session *tls; /* NULL: plaintext */
	bool tls_established;    /* its handshake was counted */
	char peer[64];
	char engine_id[48]; /* the peer's, escaped for the log and cut to fit */
};

static void conn_io_cb(struct ev_loop *loop, ev_io *w, int revents);
static void conn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

struct conn *conn_next(struct conn *c)
{
	return c->next;
}

static void list_unlink(struct conn *c)
{
	struct conn_list *l = c->list;

	if (c->prev)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	c->prev = c->next = NULL;
}

static void list_push_front(struct conn *c, struct conn_list *l)
{
	c->list = l;
	c->prev = NULL;
	c->next = l->head;
	if (l->head)
		l->head->prev = c;
	else
		l->tail = c;
	l->head = c;
}

/* A NOTIFY came: c is the most recently used connection. */
static void conn_used(struct conn *c)
{
	struct conn_list *used = &c->agent->used;

	if (used->head != c) {
		list_unlink(c);
		list_push_front(c, used);
	}
}

void conn_accept(struct agent *a, int fd, const char *peer)
{
	const struct agent_settings *s = &a->settings;
	size_t in_cap = (size_t)s->max_frame_size + SPOP_FRAME_LENGTH_SIZE;
	/* Room for at least two maximal frames, so one can always be answered
	 * while the previous one is still being sent. */
	size_t out_cap = s->out_buffer > 2 * in_cap ? s->out_buffer : 2 * in_cap;

	struct conn *c = calloc(1, sizeof(*c) + in_cap + out_cap);
	if (!c) {
		log_error("%s: out of memory for a new connection, closing it", peer);
		close(fd);
		return;
	}
	c->agent = a;
	c->fd = fd;
	c->state = CONN_HELLO;
	c->max_frame_size = s->max_frame_size;
	c->in = (uint8_t *)(c + 1);
	c->in_cap = in_cap;
	c->out = c->in + in_cap;
	c->out_cap = out_cap;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	if (a->tls && !(c->tls = tls_session_new(a->tls, fd))) {
		log_error("%s: out of memory for a TLS session, closing it", peer);
		close(fd);
		free(c);
		return;
	}
	c->last_active = clock_mono_s();

	list_push_front(c, &a->fresh);
	a->nb_conns++;
	a->stats.connections_accepted++;

	ev_io_init(&c->io, conn_io_cb, fd, EV_READ);
	ev_io_start(a->loop, &c->io);
	ev_timer_init(&c->timer, conn_timer_cb, s->hello_timeout, 0.);
	ev_timer_start(a->loop, &c->timer);
	log_debug("%s: connection accepted", c->peer);
}

static void hold_end(struct conn *c)
{
	if (c->held) {
		c->held = false;
		c->agent->nb_held--;
	}
}

void conn_free(struct conn *c)
{
	struct agent *a = c->agent;

	hold_end(c);
	ev_io_stop(a->loop, &c->io);
	ev_timer_stop(a->loop, &c->timer);
	tls_session_free(c->tls);
	close(c->fd);
	list_unlink(c);
	free(c);
	agent_conn_closed(a);
}

/* Free bytes at the end of the output buffer, compacting what is still
 * unsent to the front first. */
static size_t out_room(struct conn *c)
{
	if (c->out_sent > 0) {
		memmove(c->out, c->out + c->out_sent, c->out_len - c->out_sent);
		c->out_len -= c->out_sent;
		if (c->held)
			c->held_from -= c->out_sent; /* never below out_sent: sending stops there */
		c->out_sent = 0;
	}
	return c->out_cap - c->out_len;
}

static bool can_answer_a_frame(struct conn *c)
{
	return out_room(c) >= (size_t)c->max_frame_size + SPOP_FRAME_LENGTH_SIZE;
}

/* Enters CLOSING: stop answering, flush what is queued, then linger. */
static void conn_begin_close(struct conn *c)
{
	struct agent *a = c->agent;

	/* The goodbye comes after every ACK: nothing waits any more. */
	hold_end(c);
	c->state = CONN_CLOSING;
	ev_timer_stop(a->loop, &c->timer);
	ev_timer_set(&c->timer, a->settings.close_timeout, 0.);
	ev_timer_start(a->loop, &c->timer);
}

/* Queues an AGENT-DISCONNECT and closes. Used for every protocol error. */
static void conn_disconnect(struct conn *c, enum spop_status status, const char *reason)
{
	struct spop_writer w;

	if (status == SPOP_STATUS_NORMAL)
		log_info("%s: disconnecting: %s", c->peer, reason);
	else
		log_warning("%s: %s; sending DISCONNECT status %d (%s)", c->peer, reason, status,
			    spop_status_text(status));
	agent_count_disconnect(c->agent, status);
	spop_writer_init(&w, c->out, c->out_cap);
	w.len = c->out_len;
	/* Before the HELLO we do not know HAProxy's limit; 256 is the floor
	 * every peer accepts, and our message always fits in it. */
	uint32_t limit = c->state == CONN_READY ? c->max_frame_size : SPOP_MIN_FRAME_SIZE;
	if (spop_put_agent_disconnect(&w, status, reason, limit))
		c->out_len = w.len;
	conn_begin_close(c);
}

static bool flush_output(struct conn *c);
static void update_events(struct conn *c);

void conn_goodbye(struct conn *c)
{
	if (c->state == CONN_HELLO) {
		conn_free(c); /* nothing was agreed: nothing to say */
		return;
	}
	if (c->state == CONN_READY)
		conn_disconnect(c, SPOP_STATUS_NORMAL, "agent is shutting down");
	if (flush_output(c))
		update_events(c);
}

static void handle_hello(struct conn *c, const struct spop_frame *f)
{
	struct agent *a = c->agent;
	struct spop_handshake hs;
	struct spop_error err;
	struct spop_writer w;

	if (f->type != SPOP_FRAME_HAPROXY_HELLO) {
		conn_disconnect(c, SPOP_STATUS_INVALID, "expected HAPROXY-HELLO as first frame");
		return;
	}
	if (!(f->flags & SPOP_FLAG_FIN)) {
		conn_disconnect(c, SPOP_STATUS_FRAG_NOT_SUPPORTED, "fragmented HELLO");
		return;
	}
	if (!spop_hello_negotiate(f->payload, a->settings.max_frame_size, &hs, &err)) {
		conn_disconnect(c, err.status, err.reason);
		return;
	}
	spop_writer_init(&w, c->out, c->out_cap);
	w.len = c->out_len;
	if (!spop_put_agent_hello(&w, &hs)) {
		conn_disconnect(c, SPOP_STATUS_RES_ALLOC, "no room for AGENT-HELLO");
		return;
	}
	c->out_len = w.len;
	c->max_frame_size = hs.max_frame_size;
	log_escape(c->engine_id, sizeof(c->engine_id), hs.engine_id.ptr, hs.engine_id.len);

	if (hs.healthcheck) {
		/* `option spop-check`: the answer is the whole conversation. */
		a->stats.healthchecks++;
		conn_begin_close(c);
		return;
	}
	a->stats.hellos++;
	c->state = CONN_READY;
	/* From now on the timer watches for silence (conn_timer_cb). */
	ev_timer_stop(a->loop, &c->timer);
	ev_timer_set(&c->timer, (double)a->settings.idle_timeout_ms / 1000.0, 0.);
	ev_timer_start(a->loop, &c->timer);
	log_info("%s: HELLO: max-frame-size %u, pipelining %s, engine-id %s", c->peer,
		 hs.max_frame_size, hs.pipelining ? "on" : "off",
		 c->engine_id[0] ? c->engine_id : "-");
}

/*
 * The NOTIFYs answered by one process_input() call. The clock is read at
 * the first and after the last, not around each: two reads per batch of
 * pipelined frames instead of three per frame (the breakers' time came
 * from a third). The time of every NOTIFY in the batch is the batch's
 * start, well within the milliseconds the breakers count in; the
 * notify_time histogram gets the batch's mean once per frame.
 */
struct notify_batch {
	uint64_t start_ns;
	uint64_t notifies;
};

static void notify_batch_end(struct agent *a, const struct notify_batch *b)
{
	if (b->notifies > 0)
		histogram_observe_batch_ns(&a->stats.notify_time, histogram_now_ns() - b->start_ns,
					   b->notifies);
}

/* The ACK just written at ack_at waits for `ticket`, the dispatch's
 * answer (0: it goes at once). Held already: the later ticket covers
 * both (tickets pass in order). */
static void hold_for_ticket(struct conn *c, size_t ack_at, uint64_t ticket)
{
	struct agent *a = c->agent;

	if (ticket == 0 || agent_conn_may_send(a, ticket))
		return;
	a->stats.acks_held++;
	if (c->held) {
		if (ticket > c->held_ticket)
			c->held_ticket = ticket;
		return;
	}
	c->held = true;
	c->held_from = ack_at;
	c->held_ticket = ticket;
	a->nb_held++;
}

static void handle_notify(struct conn *c, const struct spop_frame *f, struct notify_batch *batch)
{
	struct spop_writer w;
	const char *why = NULL;

	/* Without the fragmentation capability every frame must be whole; a
	 * missing FIN or an ABORT can only belong to a fragmented payload. */
	if (!(f->flags & SPOP_FLAG_FIN) || (f->flags & SPOP_FLAG_ABORT)) {
		conn_disconnect(c, SPOP_STATUS_FRAG_NOT_SUPPORTED, "fragmented NOTIFY");
		return;
	}
	c->agent->stats.notifies++;
	conn_used(c);
	if (batch->notifies++ == 0)
		batch->start_ns = histogram_now_ns();
	spop_writer_init(&w, c->out, c->out_cap);
	w.len = c->out_len;
	/* CLOCK_MONOTONIC in ms, as clock_now_ms() reads it elsewhere. */
	uint64_t now_ms = batch->start_ns / 1000000u;
	size_t ack_at = c->out_len;
	uint64_t ticket;
	if (!dispatch_notify(c->agent->dispatch, f, &w, c->max_frame_size, now_ms, &why,
			     &ticket)) {
		conn_disconnect(c, SPOP_STATUS_INVALID, why); /* nothing waits after it */
		return;
	}
	c->out_len = w.len;
	hold_for_ticket(c, ack_at, ticket);
}

static void handle_haproxy_disconnect(struct conn *c, const struct spop_frame *f)
{
	uint32_t status;
	struct spop_slice message;

	c->agent->stats.haproxy_disconnects++;
	if (spop_disconnect_decode(f->payload, &status, &message)) {
		/* The peer's text: a newline in it must not start a line. */
		char text[LOG_ESCAPE_SIZE];
		log_info("%s: HAProxy disconnects: status %u, \"%s\"", c->peer, status,
			 log_escape(text, sizeof(text), message.ptr, message.len));
	}
	conn_disconnect(c, SPOP_STATUS_NORMAL, "answering HAPROXY-DISCONNECT");
}

static void handle_frame(struct conn *c, const struct spop_frame *f, struct notify_batch *batch)
{
	if (c->state == CONN_HELLO) {
		handle_hello(c, f);
		return;
	}
	switch (f->type) {
	case SPOP_FRAME_NOTIFY:
		handle_notify(c, f, batch);
		break;
	case SPOP_FRAME_HAPROXY_DISCONNECT:
		handle_haproxy_disconnect(c, f);
		break;
	case SPOP_FRAME_HAPROXY_HELLO:
		conn_disconnect(c, SPOP_STATUS_INVALID, "second HAPROXY-HELLO");
		break;
	default:
		conn_disconnect(c, SPOP_STATUS_INVALID, "unexpected frame type");
		break;
	}
}

/* Answers every complete frame in the input buffer while there is room to
 * answer; keeps a partial frame for the next read. */
static void process_input(struct conn *c)
{
	struct notify_batch batch = {0};
	size_t off = 0;

	while (c->state != CONN_CLOSING && can_answer_a_frame(c)) {
		struct spop_frame frame;
		struct spop_error err;
		/* The size agreed in the HELLO, ours before it: SPOE.txt says the
		 * agreed one "will be used for all subsequent frames". */
		ssize_t n = spop_frame_decode(c->in + off, c->in_len - off, c->max_frame_size,
					      &frame, &err);
		if (n == SPOP_INCOMPLETE)
			break;
		if (n < 0) {
			conn_disconnect(c, err.status, err.reason);
			break;
		}
		off += (size_t)n;
		handle_frame(c, &frame, &batch);
	}
	notify_batch_end(c->agent, &batch);
	if (c->state == CONN_CLOSING) {
		c->in_len = 0; /* nothing more will be answered */
	} else if (off > 0) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
}

/* Where what may be sent ends: ACKs held for the Runtime API wait. */
static size_t sendable_end(const struct conn *c)
{
	return c->held ? c->held_from : c->out_len;
}

/* read() and send(), or their TLS equivalents: the same contract. */
static inline ssize_t conn_recv(struct conn *c, void *buf, size_t len)
{
	return c->tls ? tls_session_read(c->tls, buf, len) : read(c->fd, buf, len);
}

static inline ssize_t conn_send(struct conn *c, const void *buf, size_t len)
{
	return c->tls ? tls_session_write(c->tls, buf, len) : send(c->fd, buf, len, MSG_NOSIGNAL);
}

/* Sends what is queued. Returns false if the connection was freed. */
static bool flush_output(struct conn *c)
{
	size_t end = sendable_end(c);

	while (c->out_sent < end) {
		ssize_t n = conn_send(c, c->out + c->out_sent, end - c->out_sent);
		if (n > 0) {
			c->out_sent += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return true;
		} else {
			log_info("%s: write failed: %s", c->peer,
				 errno == EPROTO && c->tls ? tls_session_error(c->tls) : strerror(errno));
			conn_free(c);
			return false;
		}
	}
	if (c->held)
		return true; /* the rest waits for its ticket */
	c->out_len = c->out_sent = 0;
	if (c->state == CONN_CLOSING && !c->write_shut) {
		/* Our last frame is out: FIN after it, so HAProxy reads it before
		 * seeing the close (a close with unread input would send RST). */
		if (c->tls)
			tls_session_close_notify(c->tls);
		shutdown(c->fd, SHUT_WR);
		c->write_shut = true;
	}
	return true;
}

/* The session's own needs on top of the connection's: a read that waits
 * for the socket to be writable (a handshake flight that did not fit),
 * a write that waits for it to be readable. */
static int tls_events(const struct conn *c, int events)
{
	if ((events & EV_READ) && tls_session_read_wants_write(c->tls))
		events |= EV_WRITE;
	if ((events & EV_WRITE) && c->out_sent < sendable_end(c) &&
	    tls_session_write_wants_read(c->tls))
		events |= EV_READ;
	return events;
}

static void update_events(struct conn *c)
{
	bool pending = c->out_sent < sendable_end(c);
	int events;

	if (c->state == CONN_CLOSING)
		events = pending ? EV_WRITE : EV_READ; /* then read only to see EOF */
	else
		events = (can_answer_a_frame(c) ? EV_READ : 0) | (pending ? EV_WRITE : 0);
	if (c->tls)
		events = tls_events(c, events);
	if (events != (c->io.events & (EV_READ | EV_WRITE))) {
		ev_io_stop(c->agent->loop, &c->io);
		ev_io_set(&c->io, c->fd, events);
		ev_io_start(c->agent->loop, &c->io);
	}
	/* Decrypted bytes the socket will not signal again: read them on the
	 * loop's next turn (stopping the watcher, conn_free() drops this). */
	if (c->tls && (events & EV_READ) && tls_session_pending(c->tls))
		ev_feed_event(c->agent->loop, &c->io, EV_READ);
}

static void tls_handshake_done(struct conn *c)
{
	c->tls_established = true;
	c->agent->stats.tls_handshakes++;
	log_debug("%s: TLS handshake done", c->peer);
}

/* Rate-limited per call site (util/log.h): a client without a valid
 * certificate retrying in a loop is one line per window. */
static void tls_failed(struct conn *c)
{
	if (c->tls_established) {
		log_info("%s: TLS read failed: %s", c->peer, tls_session_error(c->tls));
		return;
	}
	c->agent->stats.tls_handshake_failures++;
	log_warning("%s: TLS handshake failed: %s", c->peer, tls_session_error(c->tls));
}

/* Returns false if the connection was freed (EOF or error). */
static bool read_input(struct conn *c)
{
	uint8_t discard[4096];
	uint8_t *dst = c->state == CONN_CLOSING ? discard : c->in + c->in_len;
	size_t room = c->state == CONN_CLOSING ? sizeof(discard) : c->in_cap - c->in_len;

	if (room == 0)
		return true; /* a full frame is waiting for output room */
	ssize_t n = conn_recv(c, dst, room);
	if (n > 0) {
		if (c->tls && !c->tls_established)
			tls_handshake_done(c);
		if (c->state != CONN_CLOSING) {
			c->in_len += (size_t)n;
			c->last_active = clock_mono_s();
		}
		return true;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return true;
	/* EOF or RST without a DISCONNECT is how HAProxy ends idle and
	 * reloaded connections: a normal close, not an error. */
	if (n == 0 || errno == ECONNRESET)
		log_debug("%s: closed by peer", c->peer);
	else if (errno == EPROTO && c->tls)
		tls_failed(c);
	else
		log_info("%s: read failed: %s", c->peer, strerror(errno));
	conn_free(c);
	return false;
}

/* Answers what is waiting, sends, and answers again what waited for room. */
static void answer_and_send(struct conn *c)
{
	for (;;) {
		size_t before = c->in_len;
		if (c->state != CONN_CLOSING)
			process_input(c);
		if (!flush_output(c))
			return;
		if (c->state == CONN_CLOSING || c->in_len == before || c->in_len == 0 ||
		    !can_answer_a_frame(c))
			break;
	}
	update_events(c);
}

static void conn_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn *c = (struct conn *)w;
	(void)loop;

	/* A TLS read that waited for writability is retried when it comes. */
	bool readable = (revents & EV_READ) ||
			(c->tls && (revents & EV_WRITE) && tls_session_read_wants_write(c->tls));
	if (readable && !read_input(c))
		return;
	answer_and_send(c);
}

void conn_release_hold(struct conn *c)
{
	if (!c->held || !agent_conn_may_send(c->agent, c->held_ticket))
		return;
	hold_end(c);
	answer_and_send(c); /* frames that waited for output room, too */
}

/* READY: closes a connection silent for idle_timeout_ms; the timer is
 * re-armed for what is left when bytes came meanwhile (cheaper than
 * restarting it on every read). The silence is measured on the monotonic
 * clock, as the timer runs: ev_now() follows the wall clock, and a step of
 * it would close a busy connection (forward) or keep a silent one for
 * hours (back). */
static void idle_check(struct conn *c)
{
	struct agent *a = c->agent;
	double idle = (double)a->settings.idle_timeout_ms / 1000.0;
	double left = c->last_active + idle - clock_mono_s();

	if (left > 0.001) {
		ev_timer_set(&c->timer, left, 0.);
		ev_timer_start(a->loop, &c->timer);
		return;
	}
	a->stats.connections_idle++;
	conn_disconnect(c, SPOP_STATUS_NORMAL, "idle for longer than idle_timeout");
	if (flush_output(c))
		update_events(c);
}

bool conn_evict_longest_idle(struct agent *a, const char *why)
{
	struct conn *c = a->fresh.tail ? a->fresh.tail : a->used.tail;

	if (!c)
		return false;
	a->stats.connections_evicted++;
	log_info("%s: closing it to make room (%s, silent for %.1fs): %s", c->peer,
		 c->list == &a->fresh ? "no NOTIFY yet" : "the oldest last NOTIFY",
		 clock_mono_s() - c->last_active, why);
	/* A goodbye HAProxy can read, if the socket takes it now; no waiting. */
	if (c->state == CONN_READY) {
		conn_disconnect(c, SPOP_STATUS_NORMAL, "making room for a new connection");
		if (!flush_output(c))
			return true; /* freed already */
	}
	conn_free(c);
	return true;
}

static void conn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct conn *c = container_of(w, struct conn, timer);
	(void)loop;
	(void)revents;

	if (c->state == CONN_READY) {
		idle_check(c);
		return;
	}
	if (c->state == CONN_HELLO)
		log_warning("%s: no HAPROXY-HELLO within %.1fs, closing", c->peer,
			    c->agent->settings.hello_timeout);
	else
		log_debug("%s: closing after linger timeout", c->peer);
	conn_free(c);
}
