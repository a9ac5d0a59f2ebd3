/*
 * test_enforce_plan.c - what the agent tells HAProxy for each breaker
 * state, as a table of (want, what HAProxy reports, what we remember) ->
 * (commands, what we remember after). The operator's hand is never undone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "link/enforce_plan.h"

#define PROBES 2

struct row {
	const char *name;
	enum breaker_state want;
	struct enforce_seen seen;
	struct enforce_memory before;
	/* expected */
	bool ready, drain, set_maxconn;
	uint32_t maxconn;
	bool hands_off;
	struct enforce_memory after;
};

#define UP(mc) {.known = true, .maxconn = (mc)}
#define DRAINED(mc) {.known = true, .drained = true, .maxconn = (mc)}
#define MAINT {.known = true, .maint = true}
#define BUSY(mc, n) {.known = true, .maxconn = (mc), .sessions = (n)}
#define DRAINED_BUSY(mc, n) {.known = true, .drained = true, .maxconn = (mc), .sessions = (n)}
#define FRESH {0}
#define OURS_DRAIN {.drained_by_us = true}
#define OURS_DRAIN_LIMIT(own) {.drained_by_us = true, .maxconn_by_us = true, .own_maxconn_known = true, .own_maxconn = (own)}
#define OURS_LIMIT(own) {.maxconn_by_us = true, .own_maxconn_known = true, .own_maxconn = (own)}
#define KNOWN_OWN(own) {.own_maxconn_known = true, .own_maxconn = (own)}

static const struct row rows[] = {
	/* closed: nothing to do on a server we never touched */
	{"closed, untouched", BREAKER_CLOSED, UP(0), FRESH, 0, 0, 0, 0, 0, FRESH},
	{"closed, untouched, own maxconn kept", BREAKER_CLOSED, UP(7), FRESH, 0, 0, 0, 0, 0, FRESH},
	/* open: drain, once */
	{"open drains", BREAKER_OPEN, UP(0), FRESH, 0, 1, 0, 0, 0, OURS_DRAIN},
	{"open, already drained by us", BREAKER_OPEN, DRAINED(0), OURS_DRAIN, 0, 0, 0, 0, 0, OURS_DRAIN},
	{"open, our drain lost (HAProxy reload)", BREAKER_OPEN, UP(0), OURS_DRAIN, 0, 1, 0, 0, 0, OURS_DRAIN},
	/* half-open: ready with maxconn = probes, own maxconn learned first */
	{"half-open readies and limits", BREAKER_HALF_OPEN, DRAINED(0), OURS_DRAIN, 1, 0, 1, PROBES, 0, OURS_LIMIT(0)},
	{"half-open learns own maxconn 7", BREAKER_HALF_OPEN, DRAINED(7), OURS_DRAIN, 1, 0, 1, PROBES, 0, OURS_LIMIT(7)},
	{"half-open, limit already in place", BREAKER_HALF_OPEN, UP(PROBES), OURS_LIMIT(7), 0, 0, 0, 0, 0, OURS_LIMIT(7)},
	{"half-open, limit lost (HAProxy reload)", BREAKER_HALF_OPEN, UP(7), OURS_LIMIT(7), 0, 0, 1, PROBES, 0, OURS_LIMIT(7)},
	{"half-open never learns our own limit", BREAKER_HALF_OPEN, UP(PROBES), OURS_LIMIT(0), 0, 0, 0, 0, 0, OURS_LIMIT(0)},
	/* half-open with its probes out: the door closes until an outcome */
	{"half-open, one of two probes out: open", BREAKER_HALF_OPEN, BUSY(PROBES, 1), OURS_LIMIT(0), 0, 0, 0, 0, 0, OURS_LIMIT(0)},
	{"half-open, probes out: drained", BREAKER_HALF_OPEN, BUSY(PROBES, PROBES), OURS_LIMIT(0), 0, 1, 0, 0, 0, OURS_DRAIN_LIMIT(0)},
	{"half-open, probes out, already drained", BREAKER_HALF_OPEN, DRAINED_BUSY(PROBES, PROBES + 3), OURS_DRAIN_LIMIT(0), 0, 0, 0, 0, 0, OURS_DRAIN_LIMIT(0)},
	{"half-open, the probe ended with no outcome: ready", BREAKER_HALF_OPEN, DRAINED_BUSY(PROBES, 0), OURS_DRAIN_LIMIT(0), 1, 0, 0, 0, 0, OURS_LIMIT(0)},
	{"half-open from open with old requests still out", BREAKER_HALF_OPEN, DRAINED_BUSY(0, 5), OURS_DRAIN, 0, 0, 1, PROBES, 0, OURS_DRAIN_LIMIT(0)},
	/* closed after half-open: own maxconn back */
	{"closed restores unlimited", BREAKER_CLOSED, UP(PROBES), OURS_LIMIT(0), 0, 0, 1, 0, 0, KNOWN_OWN(0)},
	{"closed restores own maxconn 7", BREAKER_CLOSED, UP(PROBES), OURS_LIMIT(7), 0, 0, 1, 7, 0, KNOWN_OWN(7)},
	{"closed, own maxconn already back", BREAKER_CLOSED, UP(7), OURS_LIMIT(7), 0, 0, 0, 0, 0, KNOWN_OWN(7)},
	/* closed straight from open (open_late_success = close) */
	{"closed from open readies", BREAKER_CLOSED, DRAINED(0), OURS_DRAIN, 1, 0, 0, 0, 0, FRESH},
	/* the operator's hand */
	{"operator drain is never lifted (closed)", BREAKER_CLOSED, DRAINED(0), FRESH, 0, 0, 0, 0, 1, FRESH},
	{"operator drain is never lifted (half-open)", BREAKER_HALF_OPEN, DRAINED(0), FRESH, 0, 0, 0, 0, 1, FRESH},
	{"operator drain is not claimed (open)", BREAKER_OPEN, DRAINED(0), FRESH, 0, 0, 0, 0, 1, FRESH},
	{"maintenance is left alone (open)", BREAKER_OPEN, MAINT, FRESH, 0, 0, 0, 0, 1, FRESH},
	{"maintenance is left alone (closed)", BREAKER_CLOSED, MAINT, OURS_DRAIN, 0, 0, 0, 0, 1, FRESH},
	/* The operator took the server: a drain of the agent's under the
	 * maintenance is the operator's from now on, never one to lift. */
	{"maintenance over the agent's drain: the drain is no longer the agent's", BREAKER_OPEN,
	 MAINT, OURS_DRAIN_LIMIT(0), 0, 0, 0, 0, 1,
	 {.maxconn_by_us = true, .own_maxconn_known = true, .own_maxconn = 0}},
	{"unknown server: nothing", BREAKER_OPEN, {0}, FRESH, 0, 0, 0, 0, 1, FRESH},
};

static void test_plan_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct enforce_memory mem = r->before;
		struct enforce_plan p = enforce_plan(r->want, PROBES, true, &r->seen, &mem);

		print_message("row: %s\n", r->name);
		assert_int_equal(p.set_ready, r->ready);
		assert_int_equal(p.set_drain, r->drain);
		assert_int_equal(p.set_maxconn, r->set_maxconn);
		if (r->set_maxconn)
			assert_int_equal(p.maxconn, r->maxconn);
		assert_int_equal(p.hands_off != NULL, r->hands_off);
		assert_int_equal(mem.drained_by_us, r->after.drained_by_us);
		assert_int_equal(mem.maxconn_by_us, r->after.maxconn_by_us);
		assert_int_equal(mem.own_maxconn_known, r->after.own_maxconn_known);
		assert_int_equal(mem.own_maxconn, r->after.own_maxconn);
	}
}

/* A whole trip through the states converges, and planning again on what
 * HAProxy then reports asks for nothing more. */
static void test_cycle_converges(void **state)
{
	(void)state;
	struct enforce_memory mem = {0};
	struct enforce_seen seen = UP(5);
	const enum breaker_state cycle[] = {BREAKER_OPEN, BREAKER_HALF_OPEN, BREAKER_OPEN,
					    BREAKER_HALF_OPEN, BREAKER_CLOSED};

	for (size_t i = 0; i < sizeof(cycle) / sizeof(cycle[0]); i++) {
		struct enforce_plan p = enforce_plan(cycle[i], PROBES, true, &seen, &mem);
		assert_null(p.hands_off);
		/* HAProxy applies the commands. */
		if (p.set_drain)
			seen.drained = true;
		if (p.set_ready)
			seen.drained = false;
		if (p.set_maxconn)
			seen.maxconn = p.maxconn;
		struct enforce_plan again = enforce_plan(cycle[i], PROBES, true, &seen, &mem);
		assert_false(again.set_drain || again.set_ready || again.set_maxconn);
	}
	assert_false(seen.drained);
	assert_int_equal(seen.maxconn, 5); /* the server's own, back */
}

static void test_agent_check_answers(void **state)
{
	(void)state;
	char buf[64];
	struct enforce_memory mem = {0};

	enforce_agent_check_answer(BREAKER_CLOSED, PROBES, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "up\n"); /* no breaker: change nothing */
	enforce_agent_check_answer(BREAKER_CLOSED, PROBES, &mem, buf, sizeof(buf));
	assert_string_equal(buf, "up\n"); /* never "ready": it would lift a hand-set drain */
	enforce_agent_check_answer(BREAKER_OPEN, PROBES, &mem, buf, sizeof(buf));
	assert_string_equal(buf, "drain\n");
	enforce_agent_check_answer(BREAKER_HALF_OPEN, PROBES, &mem, buf, sizeof(buf));
	assert_string_equal(buf, "ready maxconn:2\n");
	enforce_agent_check_answer(BREAKER_CLOSED, PROBES, &mem, buf, sizeof(buf));
	assert_string_equal(buf, "ready maxconn:0\n"); /* undo ours, once */
	enforce_agent_check_answer(BREAKER_CLOSED, PROBES, &mem, buf, sizeof(buf));
	assert_string_equal(buf, "up\n");
	/* Straight from open to closed (open_late_success = close). */
	enforce_agent_check_answer(BREAKER_OPEN, PROBES, &mem, buf, sizeof(buf));
	enforce_agent_check_answer(BREAKER_CLOSED, PROBES, &mem, buf, sizeof(buf));
	assert_string_equal(buf, "ready maxconn:0\n");
}

static void test_mode_names(void **state)
{
	(void)state;
	assert_string_equal(enforce_mode_name(ENFORCE_RUNTIME_API), "runtime-api");
	assert_string_equal(enforce_mode_name(ENFORCE_AGENT_CHECK), "agent-check");
	assert_string_equal(enforce_mode_name(ENFORCE_NONE), "none");
}

/* A transition plans from what the last look saw, and what it sent is what
 * the next transition plans from: open, then half-open before any look,
 * must lift the drain it just set (planning from the stale look would send
 * no `ready`) and limit maxconn once. */
static void test_plans_chain_without_a_look(void **state)
{
	(void)state;
	struct enforce_seen seen = {.known = true, .maxconn = 0};
	struct enforce_memory mem = {0};

	struct enforce_plan p = enforce_plan(BREAKER_OPEN, 2, true, &seen, &mem);
	assert_true(p.set_drain);
	enforce_plan_assume_applied(&p, &seen);
	assert_true(seen.drained);

	p = enforce_plan(BREAKER_HALF_OPEN, 2, true, &seen, &mem);
	assert_true(p.set_ready);
	assert_true(p.set_maxconn);
	assert_int_equal(p.maxconn, 2);
	enforce_plan_assume_applied(&p, &seen);
	assert_false(seen.drained);
	assert_int_equal(seen.maxconn, 2);

	p = enforce_plan(BREAKER_HALF_OPEN, 2, true, &seen, &mem);
	assert_false(p.set_ready || p.set_drain || p.set_maxconn); /* nothing twice */

	p = enforce_plan(BREAKER_CLOSED, 2, true, &seen, &mem);
	assert_false(p.set_ready);
	assert_true(p.set_maxconn);
	assert_int_equal(p.maxconn, 0); /* its own, unlimited */
	enforce_plan_assume_applied(&p, &seen);
	assert_int_equal(seen.maxconn, 0);
}

/* Half-open's in-flight guard is a drain like any other: with no room
 * under the ejection cap (guard_room false) the server keeps serving at
 * its probes' maxconn; a drain already in place is kept either way. */
static void test_half_open_guard_needs_room(void **state)
{
	(void)state;
	struct enforce_seen seen = {.known = true, .maxconn = 0, .sessions = 2};
	struct enforce_memory mem = {0};

	struct enforce_plan p = enforce_plan(BREAKER_HALF_OPEN, 2, false, &seen, &mem);
	assert_false(p.set_drain);
	assert_false(mem.drained_by_us);
	assert_true(p.set_maxconn);
	assert_int_equal(p.maxconn, 2);
	enforce_plan_assume_applied(&p, &seen);

	p = enforce_plan(BREAKER_HALF_OPEN, 2, true, &seen, &mem);
	assert_true(p.set_drain); /* room now: the guard drains */
	enforce_plan_assume_applied(&p, &seen);
	assert_true(mem.drained_by_us);

	p = enforce_plan(BREAKER_HALF_OPEN, 2, false, &seen, &mem);
	assert_false(p.set_ready); /* never lifted for the cap */
	assert_true(mem.drained_by_us);
}

/* The guard is for a hung probe: a worker the look saw answer since the
 * look before (a busy one answering its probes one at a time) is not
 * drained with its probes out, and a guard's drain already in place is
 * lifted by such a look; one that has answered nothing is. */
static void test_half_open_guard_spares_an_answering_worker(void **state)
{
	(void)state;
	struct enforce_seen seen = {.known = true, .maxconn = 1, .sessions = 1, .answered = true};
	struct enforce_memory mem = {.maxconn_by_us = true};

	struct enforce_plan p = enforce_plan(BREAKER_HALF_OPEN, 1, true, &seen, &mem);
	assert_false(p.set_drain);
	assert_false(mem.drained_by_us);

	seen.answered = false; /* silent since the look before */
	p = enforce_plan(BREAKER_HALF_OPEN, 1, true, &seen, &mem);
	assert_true(p.set_drain);
	enforce_plan_assume_applied(&p, &seen);

	seen.answered = true; /* its probe answered, the next one out */
	p = enforce_plan(BREAKER_HALF_OPEN, 1, true, &seen, &mem);
	assert_true(p.set_ready);
	assert_false(mem.drained_by_us);
}

/* A resting worker's server (core/rest.c) is planned as an open one's,
 * whatever the breaker's state, and given back by the state's own plan
 * when the rest ends: drained, then ready with a half-open's maxconn kept,
 * or its own back; agent-check says "drain", then undoes it. */
static void test_resting_is_planned_as_open(void **state)
{
	(void)state;
	struct breaker_policy policy;
	breaker_policy_defaults(&policy);
	for (int s = BREAKER_CLOSED; s <= BREAKER_HALF_OPEN; s++) {
		struct breaker b;
		breaker_init(&b, &policy, 1000);
		b.state = (enum breaker_state)s;
		assert_int_equal(enforce_wanted_state(&b), s);
		breaker_rest_on_response(&b, BREAKER_OUTCOME_BACKPRESSURE, 2, 1000);
		assert_int_equal(enforce_wanted_state(&b), BREAKER_OPEN);
		assert_int_equal(b.state, s); /* the breaker's own state is untouched */

		struct enforce_seen seen = {.known = true, .maxconn = 0};
		struct enforce_memory mem = {0};
		struct enforce_plan p = enforce_plan(enforce_wanted_state(&b), PROBES, true, &seen, &mem);
		assert_true(p.set_drain);
		assert_false(p.set_maxconn);
		enforce_plan_assume_applied(&p, &seen);
		breaker_rest_tick(&b, 3000);
		p = enforce_plan(enforce_wanted_state(&b), PROBES, true, &seen, &mem);
		if (s == BREAKER_OPEN) {
			assert_false(p.set_ready || p.set_drain); /* still open: stays drained */
		} else {
			assert_true(p.set_ready);
			assert_false(mem.drained_by_us);
		}

		char buf[64];
		struct enforce_memory ac = {0};
		breaker_rest_on_response(&b, BREAKER_OUTCOME_BACKPRESSURE, 2, 4000);
		enforce_agent_check_answer(enforce_wanted_state(&b), PROBES, &ac, buf, sizeof(buf));
		assert_string_equal(buf, "drain\n");
		breaker_rest_tick(&b, 6000);
		enforce_agent_check_answer(enforce_wanted_state(&b), PROBES, &ac, buf, sizeof(buf));
		assert_string_equal(buf, s == BREAKER_OPEN	     ? "drain\n"
					 : s == BREAKER_HALF_OPEN ? "ready maxconn:2\n"
								  : "ready maxconn:0\n");
	}
}

/* A closed breaker's server takes the capacity learnt as its maxconn,
 * the server's own noted first; never above its own (at or above it, the
 * own comes back); a limit of 0 gives the own back. */
static void test_capacity_limit(void **state)
{
	(void)state;
	struct enforce_seen seen = UP(0);
	struct enforce_memory mem = FRESH;
	struct enforce_plan p = enforce_plan_limited(BREAKER_CLOSED, PROBES, true, 3, &seen, &mem);
	assert_true(p.set_maxconn);
	assert_int_equal(p.maxconn, 3);
	assert_true(mem.maxconn_by_us);
	assert_true(mem.own_maxconn_known);
	assert_int_equal(mem.own_maxconn, 0);
	enforce_plan_assume_applied(&p, &seen);
	/* Unchanged: nothing to send. */
	p = enforce_plan_limited(BREAKER_CLOSED, PROBES, true, 3, &seen, &mem);
	assert_false(p.set_maxconn);
	/* Learning forgot it: the own (unlimited) back. */
	p = enforce_plan_limited(BREAKER_CLOSED, PROBES, true, 0, &seen, &mem);
	assert_true(p.set_maxconn);
	assert_int_equal(p.maxconn, 0);
	assert_false(mem.maxconn_by_us);

	/* The operator's own maxconn 50 is a ceiling. */
	seen = (struct enforce_seen)UP(50);
	mem = (struct enforce_memory)FRESH;
	p = enforce_plan_limited(BREAKER_CLOSED, PROBES, true, 7, &seen, &mem);
	assert_int_equal(p.maxconn, 7);
	enforce_plan_assume_applied(&p, &seen);
	p = enforce_plan_limited(BREAKER_CLOSED, PROBES, true, 60, &seen, &mem);
	assert_true(p.set_maxconn);
	assert_int_equal(p.maxconn, 50);
	assert_false(mem.maxconn_by_us);
	/* Half-open keeps its probes' limit, whatever was learnt. */
	seen = (struct enforce_seen)UP(0);
	mem = (struct enforce_memory)FRESH;
	p = enforce_plan_limited(BREAKER_HALF_OPEN, PROBES, true, 0, &seen, &mem);
	assert_int_equal(p.maxconn, PROBES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_table),
		cmocka_unit_test(test_cycle_converges),
		cmocka_unit_test(test_agent_check_answers),
		cmocka_unit_test(test_plans_chain_without_a_look),
		cmocka_unit_test(test_half_open_guard_needs_room),
		cmocka_unit_test(test_half_open_guard_spares_an_answering_worker),
		cmocka_unit_test(test_mode_names),
		cmocka_unit_test(test_resting_is_planned_as_open),
		cmocka_unit_test(test_capacity_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
