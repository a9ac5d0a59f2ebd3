/*
 * test_bus.c - the breakers' bus (breakers/bus.c, publish.c): a record
 * reaches every subscriber once, in the order they subscribed; a
 * subscriber that leaves takes no one else's turn with it, and one that
 * replaces another (a part a reload rebuilds) takes the other's turn. What
 * the timer records goes to the route set above the bus (the running
 * agent's: the listeners, then the HAProxy link), else to the listeners.
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
#include "util/clock.h"

#define T0 5000000

/* Who heard each record, in the order they heard it: one letter each. */
struct trace {
	char heard[32];
	size_t n;
};

/* A subscriber: a letter and the trace it writes to. */
struct listener {
	char letter;
	struct trace *trace;
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

/* A subscriber that must never hear anything. */
static void never(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
		  const struct breaker_cause *cause)
{
	(void)ctx;
	(void)e;
	(void)ev;
	(void)cause;
	fail_msg("a subscriber that must not be called was");
}

static struct breaker_subscriber recorder(struct listener *l)
{
	return (struct breaker_subscriber){.name = "recorder", .recorded = on_recorded, .ctx = l};
}

struct bus {
	struct ev_loop *loop;
	struct breakers b;
	struct breaker_table_entry *e;
	struct trace trace;
	struct listener l[BREAKERS_MAX_SUBSCRIBERS + 1]; /* 'a', 'b', ... */
};

/* A bus on its own loop with one breaker, be/w1, made at `now`; the
 * policy's cool-down is cooldown_ms (0: the default's). */
static void bus_start_at(struct bus *t, uint64_t cooldown_ms, uint64_t now)
{
	struct breaker_policies p;
	char err[256];
	enum breaker_table_status st;

	memset(t, 0, sizeof(*t));
	t->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(t->loop);
	assert_true(breaker_policies_default(&p));
	for (uint32_t i = 0; cooldown_ms && i < p.nb_levels; i++)
		p.levels[i].effective.cooldown_ms = p.levels[i].effective.max_cooldown_ms =
			cooldown_ms;
	if (!breakers_init(&t->b, t->loop, 16, &p, err, sizeof(err)))
		fail_msg("%s", err);
	t->e = breaker_table_get(&t->b.table, "be", 2, "w1", 2, now, &st);
	assert_non_null(t->e);
	for (size_t i = 0; i < sizeof(t->l) / sizeof(t->l[0]); i++)
		t->l[i] = (struct listener){.letter = (char)('a' + i), .trace = &t->trace};
}

static void bus_start(struct bus *t)
{
	bus_start_at(t, 0, T0);
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

/* What a subscriber or the route reads of a record. */
struct cause_seen {
	enum breaker_cause_kind kind;
	enum breaker_state to;
	unsigned calls;
};

static void keep_cause(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
		       const struct breaker_cause *cause)
{
	struct cause_seen *seen = ctx;
	(void)e;
	*seen = (struct cause_seen){.kind = cause->kind, .to = ev->to, .calls = seen->calls + 1};
}

/* A bus whose breakers cool down in 1 ms, its one breaker opened now and
 * the timer armed for the cool-down's end. */
static void bus_start_opened(struct bus *t)
{
	uint64_t now = clock_now_ms();

	bus_start_at(t, 1, now);
	for (unsigned i = 0; i < 1000 && t->e->breaker.state != BREAKER_OPEN; i++)
		breaker_table_record_response(&t->b.table, t->e, BREAKER_OUTCOME_FAILURE, now);
	assert_int_equal(t->e->breaker.state, BREAKER_OPEN);
	breakers_arm_entry(&t->b, t->e);
}

/* Runs the loop until `seen` was called (bounded: a few turns of a 1 ms
 * timer). */
static void run_until_heard(struct bus *t, const struct cause_seen *seen)
{
	for (unsigned turns = 0; turns < 1000 && seen->calls == 0; turns++)
		ev_run(t->loop, EVRUN_ONCE);
}

/* With a route set above it, the timer's record (the cool-down over: the
 * breaker half-open) goes to the route alone: the route tells the
 * listeners, then the link, so the bus must not tell them first. */
static void test_the_timer_publishes_on_the_route(void **state)
{
	struct bus t;
	struct cause_seen route = {0};
	(void)state;

	bus_start_opened(&t);
	struct breaker_subscriber quiet = {.name = "listener", .recorded = never, .ctx = &t};
	assert_true(breakers_subscribe(&t.b, &quiet));
	t.b.publish_tick = keep_cause;
	t.b.publish_tick_ctx = &route;
	run_until_heard(&t, &route);
	assert_int_equal(route.calls, 1);
	assert_int_equal(route.kind, BREAKER_CAUSE_COOLDOWN);
	assert_int_equal(route.to, BREAKER_HALF_OPEN);
	bus_stop(&t);
}

/* With none (the bus alone), the listeners hear the timer's record. */
static void test_the_timer_publishes_to_the_listeners_without_a_route(void **state)
{
	struct bus t;
	struct cause_seen heard = {0};
	(void)state;

	bus_start_opened(&t);
	struct breaker_subscriber s = {.name = "listener", .recorded = keep_cause, .ctx = &heard};
	assert_true(breakers_subscribe(&t.b, &s));
	run_until_heard(&t, &heard);
	assert_int_equal(heard.calls, 1);
	assert_int_equal(heard.kind, BREAKER_CAUSE_COOLDOWN);
	assert_int_equal(heard.to, BREAKER_HALF_OPEN);
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
		cmocka_unit_test(test_the_timer_publishes_on_the_route),
		cmocka_unit_test(test_the_timer_publishes_to_the_listeners_without_a_route),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
