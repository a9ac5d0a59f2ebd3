/*
 * test_bus.c - the breakers' bus (breakers/bus.c): a record reaches every
 * subscriber once, in the order they subscribed; the one that drains
 * decides what the publisher hears back; a subscriber that leaves takes
 * no one else's turn with it, and one that replaces another (a reload's
 * new HAProxy link) takes the other's turn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h>

#include "breakers/bus.h"
#include "core/policy.h"

#define T0 5000000

/* Who heard each record, in the order they heard it: one letter each. */
struct trace {
	char heard[32];
	size_t n;
};

/* A subscriber: a letter, the trace it writes to, and what it says when
 * it drains. */
struct listener {
	char letter;
	struct trace *trace;
	struct drain_answer says;
};

static void heard(struct listener *l)
{
	assert_true(l->trace->n + 1 < sizeof(l->trace->heard));
	l->trace->heard[l->trace->n++] = l->letter;
	l->trace->heard[l->trace->n] = '\0';
}

static void on_recorded(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
			const struct breaker_cause *cause)
{
	(void)e;
	(void)ev;
	(void)cause;
	heard(ctx);
}

static struct drain_answer on_drains(void *ctx, struct breaker_table_entry *e,
				     const struct breaker_event *ev,
				     const struct breaker_cause *cause)
{
	struct listener *l = ctx;
	(void)e;
	(void)ev;
	(void)cause;
	heard(l);
	return l->says;
}

/* recorded must not run for the subscriber that drains. */
static void never(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
		  const struct breaker_cause *cause)
{
	(void)ctx;
	(void)e;
	(void)ev;
	(void)cause;
	fail_msg("recorded ran in the place of drains");
}

static struct breaker_subscriber recorder(struct listener *l)
{
	return (struct breaker_subscriber){.name = "recorder", .recorded = on_recorded, .ctx = l};
}

static struct breaker_subscriber drainer(struct listener *l)
{
	return (struct breaker_subscriber){
		.name = "drainer", .recorded = never, .drains = on_drains, .ctx = l};
}

struct bus {
	struct ev_loop *loop;
	struct breakers b;
	struct breaker_table_entry *e;
	struct trace trace;
	struct listener l[BREAKERS_MAX_SUBSCRIBERS + 1]; /* 'a', 'b', ... */
};

static void bus_start(struct bus *t)
{
	struct breaker_policies p;
	char err[256];
	enum breaker_table_status st;

	memset(t, 0, sizeof(*t));
	t->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(t->loop);
	assert_true(breaker_policies_default(&p));
	if (!breakers_init(&t->b, t->loop, 16, &p, err, sizeof(err)))
		fail_msg("%s", err);
	t->e = breaker_table_get(&t->b.table, "be", 2, "w1", 2, T0, &st);
	assert_non_null(t->e);
	for (size_t i = 0; i < sizeof(t->l) / sizeof(t->l[0]); i++)
		t->l[i] = (struct listener){.letter = (char)('a' + i), .trace = &t->trace};
}

static void bus_stop(struct bus *t)
{
	breakers_free(&t->b);
	ev_loop_destroy(t->loop);
}

static void subscribe(struct bus *t, char letter)
{
	struct breaker_subscriber s = recorder(&t->l[letter - 'a']);
	assert_true(breakers_subscribe(&t->b, &s));
}

/* Publishes one record; returns who heard it, in order. */
static const char *publish(struct bus *t)
{
	struct breaker_event ev = {.from = BREAKER_CLOSED, .to = BREAKER_CLOSED};
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_COUNTERS, .now_ms = T0};

	t->trace.n = 0;
	t->trace.heard[0] = '\0';
	breakers_publish(&t->b, t->e, &ev, &cause);
	return t->trace.heard;
}

static void test_publish_in_subscription_order(void **state)
{
	struct bus t;
	(void)state;

	bus_start(&t);
	assert_string_equal(publish(&t), ""); /* nobody listens: nothing, no crash */
	subscribe(&t, 'c');
	subscribe(&t, 'a');
	subscribe(&t, 'b');
	assert_string_equal(publish(&t), "cab");
	assert_string_equal(publish(&t), "cab"); /* every record, the same order */
	bus_stop(&t);
}

/* A bus with every subscriber slot taken, "a", "b", ... in order, their
 * letters in `all`. */
static void bus_start_full(struct bus *t, char all[BREAKERS_MAX_SUBSCRIBERS + 1])
{
	bus_start(t);
	for (unsigned i = 0; i < BREAKERS_MAX_SUBSCRIBERS; i++) {
		all[i] = (char)('a' + i);
		subscribe(t, all[i]);
	}
}

/* The list is bounded; a subscriber refused leaves it as it was. */
static void test_subscribe_refused_when_full(void **state)
{
	struct bus t;
	char all[BREAKERS_MAX_SUBSCRIBERS + 1] = {0};
	(void)state;

	bus_start_full(&t, all);
	struct breaker_subscriber extra = recorder(&t.l[BREAKERS_MAX_SUBSCRIBERS]);
	assert_false(breakers_subscribe(&t.b, &extra));
	assert_int_equal(t.b.nb_subscribers, BREAKERS_MAX_SUBSCRIBERS);
	assert_string_equal(publish(&t), all);
	bus_stop(&t);
}

/* Who leaves goes alone; who comes back comes back last. */
static void test_unsubscribe_keeps_the_others_order(void **state)
{
	struct bus t;
	(void)state;

	bus_start(&t);
	subscribe(&t, 'a');
	subscribe(&t, 'b');
	subscribe(&t, 'c');
	subscribe(&t, 'd');
	breakers_unsubscribe(&t.b, &t.l['b' - 'a']);
	assert_string_equal(publish(&t), "acd");
	breakers_unsubscribe(&t.b, &t.l['b' - 'a']); /* no longer there: nothing */
	assert_string_equal(publish(&t), "acd");
	subscribe(&t, 'b');
	assert_string_equal(publish(&t), "acdb");
	bus_stop(&t);
}

/* A part a reload rebuilds keeps its turn: the new one where the old one
 * was, the old one gone; with nobody to replace, last. */
static void test_replace_keeps_the_turn(void **state)
{
	struct bus t;
	(void)state;

	bus_start(&t);
	subscribe(&t, 'a');
	subscribe(&t, 'b'); /* the link */
	subscribe(&t, 'c'); /* the snapshot, after it */
	struct breaker_subscriber next = recorder(&t.l['e' - 'a']);
	assert_true(breakers_replace(&t.b, &t.l['b' - 'a'], &next));
	assert_string_equal(publish(&t), "aec");
	breakers_unsubscribe(&t.b, &t.l['b' - 'a']); /* the old one freed: nothing to do */
	assert_string_equal(publish(&t), "aec");
	next = recorder(&t.l['f' - 'a']);
	assert_true(breakers_replace(&t.b, &t.l['b' - 'a'], &next)); /* gone: last */
	assert_string_equal(publish(&t), "aecf");
	bus_stop(&t);
}

/* NULL is the ctx of the subscribers that need none (the transition log,
 * the counters): never one to replace. */
static void test_replace_of_nobody_adds_last(void **state)
{
	struct bus t;
	struct breaker_subscriber no_ctx = {.name = "no ctx", .recorded = never};
	(void)state;

	bus_start(&t);
	subscribe(&t, 'a');
	assert_true(breakers_subscribe(&t.b, &no_ctx));
	struct breaker_subscriber s = recorder(&t.l['b' - 'a']);
	assert_true(breakers_replace(&t.b, NULL, &s));
	assert_int_equal(t.b.nb_subscribers, 3);
	assert_ptr_equal(t.b.subscribers[1].recorded, never);
	assert_ptr_equal(t.b.subscribers[2].ctx, &t.l['b' - 'a']);
	bus_stop(&t);
}

/* A full list refuses a newcomer, not a replacement: a reload's link
 * needs no room the running one did not have. */
static void test_replace_in_a_full_list(void **state)
{
	struct bus t;
	char all[BREAKERS_MAX_SUBSCRIBERS + 1] = {0};
	(void)state;

	bus_start_full(&t, all);
	struct breaker_subscriber next = recorder(&t.l[BREAKERS_MAX_SUBSCRIBERS]);
	assert_true(breakers_replace(&t.b, &t.l[1], &next));
	all[1] = (char)('a' + BREAKERS_MAX_SUBSCRIBERS);
	assert_string_equal(publish(&t), all);
	next = recorder(&t.l[1]);
	assert_false(breakers_replace(&t.b, &t.l[1], &next)); /* gone: a newcomer */
	assert_int_equal(t.b.nb_subscribers, BREAKERS_MAX_SUBSCRIBERS);
	assert_string_equal(publish(&t), all);
	bus_stop(&t);
}

/* The subscriber that drains runs in its turn, in the place of recorded,
 * and its word is what the publisher hears; without one, NOT_HELD and no
 * ticket. */
static void test_the_drainer_decides(void **state)
{
	struct bus t;
	struct breaker_event ev = {.from = BREAKER_CLOSED, .to = BREAKER_CLOSED};
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_COUNTERS, .now_ms = T0};
	(void)state;

	bus_start(&t);
	subscribe(&t, 'a');
	struct drain_answer heard = breakers_publish(&t.b, t.e, &ev, &cause);
	assert_int_equal(heard.drain, OBSERVE_DRAIN_NOT_HELD);
	assert_int_equal(heard.ack_ticket, 0);
	t.l[1].says = (struct drain_answer){.drain = OBSERVE_DRAIN_CAPPED};
	struct breaker_subscriber s = drainer(&t.l[1]);
	assert_true(breakers_subscribe(&t.b, &s));
	subscribe(&t, 'c');
	t.trace.n = 0;
	assert_int_equal(breakers_publish(&t.b, t.e, &ev, &cause).drain, OBSERVE_DRAIN_CAPPED);
	assert_string_equal(t.trace.heard, "abc");
	t.l[1].says = (struct drain_answer){.drain = OBSERVE_DRAIN_NOT_HELD};
	assert_int_equal(breakers_publish(&t.b, t.e, &ev, &cause).drain, OBSERVE_DRAIN_NOT_HELD);
	bus_stop(&t);
}

/* The ACK's ticket travels back with the drainer's word: the publisher
 * hears the ticket the drainer returned, 0 when it returned none. */
static void test_the_ack_ticket_comes_back(void **state)
{
	struct bus t;
	struct breaker_event ev = {.from = BREAKER_CLOSED, .to = BREAKER_CLOSED};
	(void)state;

	bus_start(&t);
	subscribe(&t, 'a');
	t.l[1].says = (struct drain_answer){.drain = OBSERVE_DRAIN_NOT_HELD, .ack_ticket = 42};
	struct breaker_subscriber s = drainer(&t.l[1]);
	assert_true(breakers_subscribe(&t.b, &s));
	struct drain_answer heard =
		breakers_publish_response(&t.b, t.e, &ev, BREAKER_OUTCOME_SUCCESS, 200, T0);
	assert_int_equal(heard.ack_ticket, 42);
	assert_int_equal(heard.drain, OBSERVE_DRAIN_NOT_HELD);
	t.l[1].says.ack_ticket = 0;
	heard = breakers_publish_response(&t.b, t.e, &ev, BREAKER_OUTCOME_SUCCESS, 200, T0);
	assert_int_equal(heard.ack_ticket, 0);
	bus_stop(&t);
}

/* What a subscriber reads of a response's cause. */
struct cause_seen {
	enum breaker_cause_kind kind;
	enum breaker_outcome outcome;
	int status;
	uint64_t now_ms;
	unsigned calls;
};

static void keep_cause(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
		       const struct breaker_cause *cause)
{
	struct cause_seen *seen = ctx;
	(void)e;
	(void)ev;
	*seen = (struct cause_seen){.kind = cause->kind, .outcome = cause->outcome,
				    .status = cause->status, .now_ms = cause->now_ms,
				    .calls = seen->calls + 1};
}

/* breaker-observe's way in (breakers_publish_response()): a response, with its
 * outcome, status and time, as the cause every subscriber reads, and the
 * drainer's word handed back. */
static void test_a_response_is_published_with_its_cause(void **state)
{
	struct bus t;
	struct cause_seen seen = {0};
	struct breaker_event ev = {.from = BREAKER_CLOSED, .to = BREAKER_CLOSED};
	(void)state;

	bus_start(&t);
	struct breaker_subscriber s = {.name = "cause", .recorded = keep_cause, .ctx = &seen};
	assert_true(breakers_subscribe(&t.b, &s));
	t.l[0].says = (struct drain_answer){.drain = OBSERVE_DRAIN_CAPPED};
	struct breaker_subscriber link = drainer(&t.l[0]);
	assert_true(breakers_subscribe(&t.b, &link));
	assert_int_equal(
		breakers_publish_response(&t.b, t.e, &ev, BREAKER_OUTCOME_FAILURE, 502, T0 + 7)
			.drain,
		OBSERVE_DRAIN_CAPPED);
	assert_string_equal(t.trace.heard, "a");
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.kind, BREAKER_CAUSE_RESPONSE);
	assert_int_equal(seen.outcome, BREAKER_OUTCOME_FAILURE);
	assert_int_equal(seen.status, 502);
	assert_int_equal(seen.now_ms, T0 + 7);
	bus_stop(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_publish_in_subscription_order),
		cmocka_unit_test(test_subscribe_refused_when_full),
		cmocka_unit_test(test_unsubscribe_keeps_the_others_order),
		cmocka_unit_test(test_replace_keeps_the_turn),
		cmocka_unit_test(test_replace_of_nobody_adds_last),
		cmocka_unit_test(test_replace_in_a_full_list),
		cmocka_unit_test(test_the_drainer_decides),
		cmocka_unit_test(test_the_ack_ticket_comes_back),
		cmocka_unit_test(test_a_response_is_published_with_its_cause),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
