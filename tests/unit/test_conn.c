/*
 * test_conn.c - one SPOP connection on a real loop, its peer the other end
 * of a socket pair: a held ACK waits for its ticket and goes when it
 * passes, with everything answered after it, in order; a peer that does
 * not get its ACKs makes the connection stop reading, not grow; what makes
 * room is the connection that never sent a NOTIFY, then the one whose last
 * NOTIFY is oldest.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "spop/agent.h"
#include "spop/conn.h"
#include "spop/dispatch.h"
#include "spop/spop.h"
#include "haproxy_hello.h"

#define MAX_FRAME 1024u


/* What the handler answers every message with: the ticket its ACK waits for. */
static uint64_t ticket_answered;

static void handler(void *ctx, const struct spop_message *msg, struct dispatch_reply *reply)
{
	(void)ctx;
	(void)msg;
	dispatch_set_int(reply, "n", 1);
	reply->ack_ticket = ticket_answered;
}

struct scene {
	struct ev_loop *loop;
	struct dispatch dispatch;
	struct agent agent;
};

static void scene_start(struct scene *s)
{
	struct agent_settings settings;

	memset(s, 0, sizeof(*s));
	ticket_answered = 0;
	s->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(s->loop);
	dispatch_init(&s->dispatch);
	assert_true(dispatch_register(&s->dispatch, "m", handler, NULL));
	agent_settings_default(&settings);
	settings.max_frame_size = MAX_FRAME;
	settings.out_buffer = 0; /* the floor: room for two maximal frames */
	agent_init(&s->agent, s->loop, &settings, &s->dispatch);
}

static void scene_stop(struct scene *s)
{
	agent_destroy(&s->agent);
	ev_loop_destroy(s->loop);
}

static void turns(struct scene *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		ev_run(s->loop, EVRUN_NOWAIT);
}

/* A connection accepted by the agent; returns the peer's end. */
static int connect_peer(struct scene *s)
{
	int fds[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	assert_int_equal(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(fcntl(fds[1], F_SETFL, O_NONBLOCK), 0);
	conn_accept(&s->agent, fds[0], "peer");
	return fds[1];
}

static void put(int fd, const void *buf, size_t len)
{
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
}

/* NOTIFYs of streams first..last, one message each, in one write. */
static void notify_streams(int fd, uint32_t first, uint32_t last)
{
	static uint8_t buf[1 << 15];
	struct spop_writer w;

	spop_writer_init(&w, buf, sizeof(buf));
	for (uint32_t id = first; id <= last; id++) {
		size_t mark = spop_frame_begin(&w, SPOP_FRAME_NOTIFY, SPOP_FLAG_FIN, id, 1);
		spop_put_message_header(&w, "m", 1, 0);
		assert_true(spop_frame_end(&w, mark, MAX_FRAME));
	}
	put(fd, buf, w.len);
}

static void notify(int fd, uint32_t stream_id)
{
	notify_streams(fd, stream_id, stream_id);
}

/* What the peer has received so far, frame by frame. */
struct received {
	uint8_t buf[1 << 16];
	size_t len, used;
	bool eof;
};

static void receive(int fd, struct received *r)
{
	for (;;) {
		ssize_t n = read(fd, r->buf + r->len, sizeof(r->buf) - r->len);
		if (n > 0) {
			r->len += (size_t)n;
			continue;
		}
		r->eof = n == 0;
		return;
	}
}

/* The next whole frame received, false when none is whole yet. */
static bool next_frame(struct received *r, struct spop_frame *f)
{
	struct spop_error err;
	ssize_t n = spop_frame_decode(r->buf + r->used, r->len - r->used, 16384, f,
				      &err);
	if (n == SPOP_INCOMPLETE)
		return false;
	assert_true(n > 0);
	r->used += (size_t)n;
	return true;
}

static int hello(struct scene *s, struct received *r)
{
	struct spop_frame f;
	int peer = connect_peer(s);

	put(peer, haproxy_hello, sizeof(haproxy_hello) - 1);
	turns(s, 3);
	receive(peer, r);
	assert_true(next_frame(r, &f));
	assert_int_equal(f.type, SPOP_FRAME_AGENT_HELLO);
	return peer;
}

/* ---- the hold ---- */

static void test_held_ack_goes_when_its_ticket_passes(void **state)
{
	struct scene s;
	struct received r = {0};
	struct spop_frame f;
	(void)state;

	scene_start(&s);
	int peer = hello(&s, &r);
	ticket_answered = 3;
	notify(peer, 1);
	turns(&s, 3);
	ticket_answered = 0;
	notify(peer, 2); /* answered at once, but behind the held one */
	turns(&s, 3);
	receive(peer, &r);
	assert_false(next_frame(&r, &f));
	assert_int_equal(s.agent.stats.acks_held, 1);
	assert_int_equal(s.agent.nb_held, 1);

	agent_release_held(&s.agent, 2); /* an earlier ticket: still waiting */
	turns(&s, 3);
	receive(peer, &r);
	assert_false(next_frame(&r, &f));

	agent_release_held(&s.agent, 3);
	turns(&s, 3);
	receive(peer, &r);
	assert_true(next_frame(&r, &f));
	assert_int_equal(f.type, SPOP_FRAME_ACK);
	assert_int_equal(f.stream_id, 1);
	assert_true(next_frame(&r, &f));
	assert_int_equal(f.type, SPOP_FRAME_ACK);
	assert_int_equal(f.stream_id, 2);
	assert_int_equal(s.agent.nb_held, 0);

	/* A ticket that has passed already holds nothing. */
	ticket_answered = 3;
	notify(peer, 3);
	turns(&s, 3);
	receive(peer, &r);
	assert_true(next_frame(&r, &f));
	assert_int_equal(f.stream_id, 3);
	assert_int_equal(s.agent.stats.acks_held, 1);
	close(peer);
	scene_stop(&s);
}

/* ---- backpressure ---- */

/* Held ACKs fill the output buffer: the connection stops reading once it
 * has no room for one more maximal frame, and answers the rest, in order,
 * once its output drains. */
static void test_full_output_stops_reading(void **state)
{
	enum { SENT = 300 };
	struct scene s;
	static struct received r;
	struct spop_frame f;
	(void)state;

	memset(&r, 0, sizeof(r));
	scene_start(&s);
	int peer = hello(&s, &r);
	ticket_answered = 1; /* every ACK answered before the release */
	notify_streams(peer, 1, SENT);
	turns(&s, 20);
	uint64_t answered = s.agent.stats.notifies;
	assert_true(answered > 0);
	assert_true(answered < SENT);
	turns(&s, 20);
	assert_int_equal(s.agent.stats.notifies, answered); /* paused, not growing */

	agent_release_held(&s.agent, 1);
	ticket_answered = 0;
	uint32_t next = 1;
	for (unsigned i = 0; i < 200 && next <= SENT; i++) {
		turns(&s, 2);
		receive(peer, &r);
		while (next_frame(&r, &f)) {
			assert_int_equal(f.type, SPOP_FRAME_ACK);
			assert_int_equal(f.stream_id, next);
			next++;
		}
	}
	assert_int_equal(next, SENT + 1);
	assert_int_equal(s.agent.stats.notifies, SENT);
	close(peer);
	scene_stop(&s);
}

/* ---- eviction ---- */

/* The peer was told goodbye and the connection is closed. */
static void assert_evicted(int peer, struct received *r)
{
	struct spop_frame f;

	receive(peer, r);
	assert_true(next_frame(r, &f));
	assert_int_equal(f.type, SPOP_FRAME_AGENT_DISCONNECT);
	assert_true(r->eof);
}

static void test_eviction_takes_the_longest_idle(void **state)
{
	struct scene s;
	static struct received r1, r2, r3;
	struct spop_frame f;
	(void)state;

	memset(&r1, 0, sizeof(r1)), memset(&r2, 0, sizeof(r2)), memset(&r3, 0, sizeof(r3));
	scene_start(&s);
	int older_used = hello(&s, &r1);
	int newer_used = hello(&s, &r2);
	int fresh = hello(&s, &r3); /* HELLO only, the newest of all */
	notify(older_used, 1);
	turns(&s, 3);
	notify(newer_used, 1);
	turns(&s, 3);
	receive(older_used, &r1);
	assert_true(next_frame(&r1, &f));
	receive(newer_used, &r2);
	assert_true(next_frame(&r2, &f));
	assert_int_equal(s.agent.nb_conns, 3);

	/* The one that never sent a NOTIFY goes first, however new. */
	assert_true(conn_evict_longest_idle(&s.agent, "test"));
	assert_evicted(fresh, &r3);
	assert_int_equal(s.agent.nb_conns, 2);
	/* Then the one whose last NOTIFY is oldest. */
	assert_true(conn_evict_longest_idle(&s.agent, "test"));
	assert_evicted(older_used, &r1);
	receive(newer_used, &r2);
	assert_false(r2.eof);
	assert_true(conn_evict_longest_idle(&s.agent, "test"));
	assert_evicted(newer_used, &r2);
	assert_false(conn_evict_longest_idle(&s.agent, "test"));
	assert_int_equal(s.agent.stats.connections_evicted, 3);
	close(older_used), close(newer_used), close(fresh);
	scene_stop(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held_ack_goes_when_its_ticket_passes),
		cmocka_unit_test(test_full_output_stops_reading),
		cmocka_unit_test(test_eviction_takes_the_longest_idle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
