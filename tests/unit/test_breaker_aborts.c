/*
 * test_breaker_aborts.c - bodies that die after their head (issue 5), and
 * the other counter-fed records: breaker_record_aborted_bodies,
 * breaker_record_failures, breaker_confirm_successes.
 *
 * The specification is a table of scripts: a start state, a string of
 * events, the state and streak they must leave. Scenarios then drive whole
 * workers: one whose every body dies must open; a probe whose body dies
 * must reopen; genuine successes confirmed by a poll stay successes.
 *
 * Loops run on observable state (breaker_would_allow, the state, the
 * deadline) with a bound, never on a hard-coded count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/breaker.h"
#include "breaker_allows.h"

#define LOOP_BOUND 100000
#define T0 1000000

#define NB(a) (sizeof(a) / sizeof((a)[0]))

static unsigned trip(struct breaker *b, uint64_t now)
{
	unsigned n = 0;

	while (breaker_would_allow(b)) {
		assert_true(++n <= LOOP_BOUND);
		breaker_record_failure(b, now);
	}
	assert_int_equal(b->state, BREAKER_OPEN);
	return n;
}

static void open_then_half_open(struct breaker *b, uint64_t *now)
{
	trip(b, *now);
	*now = breaker_next_deadline(b);
	assert_true(*now != BREAKER_NO_DEADLINE);
	breaker_tick(b, *now);
	assert_int_equal(b->state, BREAKER_HALF_OPEN);
}

/* ==== the table ==== */

enum start {
	START_CLOSED,
	START_OPEN,
	START_HALF_OPEN,	 /* cool-down over: probes go to the worker */
};

#define ANY (-1)
#define HOBP_CLOSE BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE
#define HOBP_IGNORE BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE
#define LATE_IGNORE BREAKER_OPEN_LATE_SUCCESS_IGNORE
#define LATE_CLOSE BREAKER_OPEN_LATE_SUCCESS_CLOSE
#define CLOSED BREAKER_CLOSED
#define OPEN BREAKER_OPEN
#define HALF_OPEN BREAKER_HALF_OPEN

/*
 * A script, one letter per call, each 10 ms after the previous one:
 *   F failure   S success   B backpressure   (what SPOE reports)
 *   A aborted bodies: 1     Z aborted bodies: 0
 *   N failures: 2 at once (breaker_record_failures)
 *   P counters polled (the confirmation point)
 */
struct row {
	const char *why;
	enum start start;
	const char *script;
	int half_open_backpressure; /* ANY, or the policy the row needs */
	int open_late_success;	    /* ANY, or the policy the row needs */
	enum breaker_state to;
	uint32_t streak; /* checked in CLOSED only */
	bool reopened;	 /* OPEN with a cool-down from the script's last call */
};

/* Threshold 3 throughout, so that "one short" and "restored" differ. */
static const struct row rows[] = {
	/* CLOSED: an abort with nothing erased is one failure. */
	{"abort alone", START_CLOSED, "A", ANY, ANY, CLOSED, 1, false},
	{"abort, nothing to void", START_CLOSED, "SA", ANY, ANY, CLOSED, 1, false},
	{"zero aborts do nothing", START_CLOSED, "FFSZ", ANY, ANY, CLOSED, 0, false},
	{"zero aborts consume nothing", START_CLOSED, "FFSZA", ANY, ANY, OPEN, 0, true},
	/* The success erased a streak of 2: void, it comes back, +1 trips. */
	{"a void success restores its streak", START_CLOSED, "FFSA", ANY, ANY, OPEN, 0, true},
	{"backpressure keeps what was restored", START_CLOSED, "FFSBA", ANY, ANY, OPEN, 0, true},
	{"the largest erased streak", START_CLOSED, "FFSSA", ANY, ANY, OPEN, 0, true},
	{"max, not sum", START_CLOSED, "FSFSA", ANY, ANY, CLOSED, 2, false},
	{"a later streak above the erased one", START_CLOSED, "FSFFA", ANY, ANY, OPEN, 0, true},
	{"erased above the later streak", START_CLOSED, "FFSFA", ANY, ANY, OPEN, 0, true},
	/* A poll with no abort confirms the successes before it. */
	{"confirmed success stays a success", START_CLOSED, "FFSPA", ANY, ANY, CLOSED, 1, false},
	{"confirmed, then a new void success", START_CLOSED, "FFSPFSA", ANY, ANY, CLOSED, 2, false},
	{"polls alone change nothing", START_CLOSED, "PPP", ANY, ANY, CLOSED, 0, false},
	{"polls between failures", START_CLOSED, "FPFP", ANY, ANY, CLOSED, 2, false},
	/* Heads and aborts with no poll between still add up. */
	{"void twice without a poll", START_CLOSED, "FSASA", ANY, ANY, OPEN, 0, true},
	{"abort, then a genuine-looking success", START_CLOSED, "FSASP", ANY, ANY, CLOSED, 0,
	 false},
	/* The worker whose every body dies: a head, a poll with its abort. */
	{"every body dies", START_CLOSED, "SAPSAPSAP", ANY, ANY, OPEN, 0, false},
	{"every body dies, two per poll", START_CLOSED, "SSAAPSSAAP", ANY, ANY, OPEN, 0, false},
	/* Failures from the same poll come after the restore. */
	{"restore, then failures", START_CLOSED, "FSAN", ANY, ANY, OPEN, 0, true},
	{"failures at once", START_CLOSED, "N", ANY, ANY, CLOSED, 2, false},
	{"failures at once trip", START_CLOSED, "FN", ANY, ANY, OPEN, 0, true},
	/* OPEN: aborts are late, like every failure. */
	{"open ignores aborts", START_OPEN, "A", ANY, ANY, OPEN, 0, false},
	{"open ignores many aborts", START_OPEN, "AAAAP", ANY, ANY, OPEN, 0, false},
	{"open ignores failures at once", START_OPEN, "N", ANY, ANY, OPEN, 0, false},
	{"late success ignored, abort too", START_OPEN, "SA", ANY, LATE_IGNORE, OPEN, 0, false},
	/* A late success that closes is provisional like a probe's. */
	{"late success closes, its body dies", START_OPEN, "SA", ANY, LATE_CLOSE, OPEN, 0, true},
	{"late success closes, confirmed", START_OPEN, "SPA", ANY, LATE_CLOSE, CLOSED, 1, false},
	/* HALF_OPEN: no head of a probe can be aborting here. */
	{"half-open ignores aborts", START_HALF_OPEN, "A", ANY, ANY, HALF_OPEN, 0, false},
	{"half-open ignores a confirmed look's aborts", START_HALF_OPEN, "AP", ANY, ANY, HALF_OPEN, 0, false},
	{"half-open: failures at once reopen", START_HALF_OPEN, "N", ANY, ANY, OPEN, 0,
	 true},
	/* A probe's success closes provisionally: its dying body reopens. */
	{"probe body dies", START_HALF_OPEN, "SA", ANY, ANY, OPEN, 0, true},
	{"probe body dies, other heads too", START_HALF_OPEN, "SSSA", ANY, ANY, OPEN, 0,
	 true},
	{"probe confirmed", START_HALF_OPEN, "SPA", ANY, ANY, CLOSED, 1, false},
	{"probe, then a plain failure", START_HALF_OPEN, "SF", ANY, ANY, CLOSED, 1, false},
	{"probe, failure, body dies", START_HALF_OPEN, "SFA", ANY, ANY, OPEN, 0, true},
	/* A probe's 503 closes (policy close), just as provisionally. */
	{"probe 503 body dies", START_HALF_OPEN, "BA", HOBP_CLOSE, ANY, OPEN, 0, true},
	{"probe 503 confirmed", START_HALF_OPEN, "BPA", HOBP_CLOSE, ANY, CLOSED, 1, false},
	{"probe 503 records nothing", START_HALF_OPEN, "BA", HOBP_IGNORE, ANY, HALF_OPEN, 0,
	 false},
};

static uint64_t setup(struct breaker *b, const struct breaker_policy *p, enum start start)
{
	uint64_t now = T0;

	breaker_init(b, p, now);
	switch (start) {
	case START_CLOSED:
		break;
	case START_OPEN:
		trip(b, now);
		break;
	case START_HALF_OPEN:
		open_then_half_open(b, &now);
		break;
	}
	return now;
}

/* Runs a script; returns the time of its last call. */
static uint64_t run(struct breaker *b, const char *script, uint64_t now)
{
	for (const char *c = script; *c; c++) {
		now += 10;
		switch (*c) {
		case 'F': breaker_record_failure(b, now); break;
		case 'S': breaker_record_success(b, now); break;
		case 'B': breaker_record_backpressure(b, now); break;
		case 'A': breaker_record_poll(b, 1, 0, now); break;
		case 'Z': breaker_record_poll(b, 0, 0, now); break;
		case 'N': breaker_record_poll(b, 0, 2, now); break;
		case 'P': breaker_confirm_successes(b); break;
		default: fail_msg("bad script letter '%c'", *c);
		}
	}
	return now;
}

static void test_script_table(void **state)
{
	const enum breaker_half_open_backpressure hobps[] = {HOBP_CLOSE, HOBP_IGNORE};
	const enum breaker_open_late_success lates[] = {LATE_IGNORE, LATE_CLOSE};
	unsigned runs[NB(rows)] = {0};

	for (size_t h = 0; h < 2; h++) {
		for (size_t l = 0; l < 2; l++) {
			struct breaker_policy p;
			breaker_policy_defaults(&p);
			p.threshold = 3;
			p.half_open_backpressure = hobps[h];
			p.open_late_success = lates[l];

			for (size_t i = 0; i < NB(rows); i++) {
				const struct row *r = &rows[i];
				if ((r->half_open_backpressure != ANY &&
				     r->half_open_backpressure != (int)hobps[h]) ||
				    (r->open_late_success != ANY &&
				     r->open_late_success != (int)lates[l]))
					continue;

				struct breaker b;
				uint64_t start_time = setup(&b, &p, r->start);
				uint64_t opened_at = b.state_since_ms;
				uint64_t end = run(&b, r->script, start_time);
				char where[160];
				snprintf(where, sizeof(where), "row %zu (%s, \"%s\", hobp %s, late %s)",
					 i, r->why, r->script, h ? "ignore" : "close",
					 l ? "close" : "ignore");
				if (b.state != r->to)
					fail_msg("%s: ended %s, expected %s", where,
						 breaker_state_name(b.state),
						 breaker_state_name(r->to));
				if (r->to == BREAKER_CLOSED && b.failure_streak != r->streak)
					fail_msg("%s: streak %u, expected %u", where,
						 b.failure_streak, r->streak);
				if (r->to == BREAKER_OPEN) {
					/* `reopened`: the script's last call tripped, so
					 * the cool-down runs from it. Starting OPEN
					 * otherwise, the first trip's cool-down stands. */
					if (r->reopened && b.state_since_ms != end)
						fail_msg("%s: opened at %llu, expected %llu",
							 where,
							 (unsigned long long)b.state_since_ms,
							 (unsigned long long)end);
					if (!r->reopened && r->start == START_OPEN &&
					    b.state_since_ms != opened_at)
						fail_msg("%s: the cool-down moved", where);
					assert_int_equal(breaker_next_deadline(&b),
							 b.state_since_ms +
								 breaker_open_duration_ms(&b));
					assert_false(breaker_would_allow(&b));
				}
				/* Nothing provisional survives outside CLOSED. */
				if (b.state != BREAKER_CLOSED)
					assert_int_equal(b.erased_streak, 0);
				runs[i]++;
			}
		}
	}
	for (size_t i = 0; i < NB(rows); i++)
		if (runs[i] == 0)
			fail_msg("row %zu (%s) never ran", i, rows[i].why);
}

/* ==== scenarios ==== */

/*
 * The worker whose every body dies after a 200 head: each request is a
 * success over SPOE and, at the next poll, an aborted body. It must open,
 * whatever the threshold and however many requests share a poll.
 */
static void test_every_body_dies_opens(void **state)
{
	static const uint32_t thresholds[] = {1, 2, 3, 5, 10};
	static const unsigned per_poll[] = {1, 2, 7};

	for (size_t t = 0; t < NB(thresholds); t++) {
		for (size_t k = 0; k < NB(per_poll); k++) {
			struct breaker_policy p;
			struct breaker b;
			uint64_t now = T0;
			unsigned requests = 0;

			breaker_policy_defaults(&p);
			p.threshold = thresholds[t];
			breaker_init(&b, &p, now);
			while (breaker_would_allow(&b)) {
				assert_true(requests <= LOOP_BOUND);
				for (unsigned i = 0; i < per_poll[k]; i++, requests++)
					breaker_record_success(&b, now += 10);
				breaker_record_poll(&b, per_poll[k], 0, now += 10);
				breaker_confirm_successes(&b);
			}
			/* It opens at the poll that brings the threshold. */
			if (b.state != BREAKER_OPEN || requests < p.threshold ||
			    requests >= p.threshold + per_poll[k])
				fail_msg("threshold %u, %u per poll: %s after %u requests",
					 p.threshold, per_poll[k], breaker_state_name(b.state),
					 requests);
		}
	}
}

/*
 * The same worker over whole cycles: open, cool-down, a probe whose 200
 * closes, its body dies, reopen. Every poll after a probe leaves it open
 * again: it never stays CLOSED past the poll that reports the abort.
 */
static void test_every_body_dies_reopens_after_each_probe(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	uint64_t now = T0;

	breaker_policy_defaults(&p);
	breaker_init(&b, &p, now);
	trip(&b, now);
	uint64_t previous_open = breaker_open_duration_ms(&b);
	for (unsigned cycle = 0; cycle < 5; cycle++) {
		now = breaker_next_deadline(&b);
		breaker_tick(&b, now);
		assert_int_equal(b.state, BREAKER_HALF_OPEN);
		struct breaker_event ev = breaker_record_success(&b, now + 5);
		assert_string_equal(breaker_transition_name(&ev), "half_open->closed");
		ev = breaker_record_poll(&b, 1, 0, now + 20);
		assert_string_equal(breaker_transition_name(&ev), "closed->open");
		breaker_confirm_successes(&b);
		/* A new cool-down, from the abort, longer each time: the worker
		 * never stayed closed healthy_for, so each reopen is one more
		 * trip in a row (capped by max_cooldown). */
		assert_int_equal(b.state_since_ms, now + 20);
		assert_int_equal(breaker_next_deadline(&b),
				 now + 20 + breaker_open_duration_ms(&b));
		assert_true(breaker_open_duration_ms(&b) > previous_open ||
			    breaker_open_duration_ms(&b) == p.max_cooldown_ms);
		previous_open = breaker_open_duration_ms(&b);
	}
}

/* A probe whose body completes: the poll confirms the close, and a later,
 * unrelated abort is one failure, not a reopen. */
static void test_probe_confirmed_stays_closed(void **state)
{
	static const uint32_t thresholds[] = {1, 2, 3, 5};

	for (size_t t = 0; t < NB(thresholds); t++) {
		struct breaker_policy p;
		struct breaker b;
		uint64_t now = T0;

		breaker_policy_defaults(&p);
		p.threshold = thresholds[t];
		breaker_init(&b, &p, now);
		open_then_half_open(&b, &now);
		breaker_record_success(&b, now + 1);
		breaker_confirm_successes(&b);
		struct breaker_event ev = breaker_record_poll(&b, 1, 0, now + 2);
		if (p.threshold == 1) {
			/* One failure is a trip at threshold 1, void or not. */
			assert_int_equal(b.state, BREAKER_OPEN);
			continue;
		}
		assert_false(breaker_event_is_transition(&ev));
		assert_int_equal(b.state, BREAKER_CLOSED);
		assert_int_equal(b.failure_streak, 1);
	}
}

/* Genuine successes between SPOE failures, each confirmed by a poll with
 * no abort: the streak never survives them, however long this goes on. */
static void test_confirmed_successes_stay_successes(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	uint64_t now = T0;

	breaker_policy_defaults(&p);
	breaker_init(&b, &p, now);
	for (unsigned round = 0; round < 50 * p.threshold; round++) {
		while (b.failure_streak + 1 < p.threshold)
			breaker_record_failure(&b, now += 10);
		breaker_record_success(&b, now += 10);
		breaker_record_poll(&b, 0, 0, now += 10);
		breaker_record_poll(&b, 0, 0, now);
		breaker_confirm_successes(&b);
		assert_int_equal(b.failure_streak, 0);
	}
	assert_int_equal(b.state, BREAKER_CLOSED);
	/* An abort in a later poll, with no success since, voids nothing. */
	breaker_record_poll(&b, 1, 0, now += 10);
	assert_int_equal(b.state, BREAKER_CLOSED);
	assert_int_equal(b.failure_streak, 1);
}

/* Aborts reported while OPEN change nothing at all, cool-down included. */
static void test_aborts_in_open_ignored(void **state)
{
	struct breaker_policy p;
	struct breaker b;

	breaker_policy_defaults(&p);
	breaker_init(&b, &p, T0);
	trip(&b, T0);
	struct breaker before = b;
	uint64_t deadline = breaker_next_deadline(&b);
	for (uint64_t k = 0; k < 5; k++) {
		struct breaker_event ev = breaker_record_poll(&b, k * 1000, 0, T0 + 1 + k);
		assert_false(breaker_event_is_transition(&ev));
		assert_int_equal(ev.dirty, BREAKER_DIRTY_UNCHANGED);
		breaker_confirm_successes(&b);
	}
	assert_int_equal(b.state, BREAKER_OPEN);
	assert_int_equal(b.failure_streak, before.failure_streak);
	assert_int_equal(b.state_since_ms, before.state_since_ms);
	assert_int_equal(breaker_next_deadline(&b), deadline);
}

/* record_failures(n) leaves the breaker exactly as n single failures,
 * event included, from every state, also past a lowered threshold. */
static void test_failures_at_once_equal_one_by_one(void **state)
{
	static const uint32_t thresholds[] = {1, 2, 3, 7};
	static const uint64_t counts[] = {0, 1, 2, 3, 6, 7, 8, 100, 1000000};
	static const enum start starts[] = {START_CLOSED, START_OPEN, START_HALF_OPEN};

	for (size_t t = 0; t < NB(thresholds); t++) {
		for (size_t s = 0; s < NB(starts); s++) {
			for (uint32_t pre = 0; pre < thresholds[t]; pre++) {
				for (size_t c = 0; c < NB(counts); c++) {
					struct breaker_policy p;
					struct breaker one, many;
					breaker_policy_defaults(&p);
					p.threshold = thresholds[t];
					uint64_t now = setup(&one, &p, starts[s]);
					setup(&many, &p, starts[s]);
					if (starts[s] != START_CLOSED && pre > 0)
						continue;
					for (uint32_t i = 0; i < pre; i++) {
						breaker_record_failure(&one, now);
						breaker_record_failure(&many, now);
					}
					struct breaker_event ev_one = {0}, ev_many;
					enum breaker_state from = one.state;
					bool was_dirty = breaker_is_dirty(&one);
					/* Past the trip every failure is ignored, so
					 * LOOP_BOUND single calls stand for any more. */
					for (uint64_t i = 0; i < counts[c] && i < LOOP_BOUND; i++)
						breaker_record_failure(&one, now + 5);
					ev_one.from = from;
					ev_one.to = one.state;
					ev_many = breaker_record_poll(&many, 0, counts[c], now + 5);
					assert_int_equal(ev_many.from, ev_one.from);
					assert_int_equal(ev_many.to, ev_one.to);
					assert_int_equal(ev_many.dirty == BREAKER_BECAME_DIRTY,
							 !was_dirty && breaker_is_dirty(&many));
					assert_int_equal(many.state, one.state);
					assert_int_equal(many.failure_streak, one.failure_streak);
					assert_int_equal(many.state_since_ms, one.state_since_ms);
				}
			}
		}
	}

	/* A threshold lowered under a long streak: the next failure trips. */
	struct breaker_policy high, low;
	struct breaker b;
	breaker_policy_defaults(&high);
	high.threshold = 10;
	low = high;
	low.threshold = 2;
	breaker_init(&b, &high, T0);
	breaker_record_poll(&b, 0, 6, T0);
	breaker_set_policy(&b, &low);
	struct breaker_event ev = breaker_record_poll(&b, 0, 3, T0 + 1);
	assert_string_equal(breaker_transition_name(&ev), "closed->open");
	assert_int_equal(b.failure_streak, 7);
}

/* The streak saturates instead of wrapping. */
static void test_failures_saturate(void **state)
{
	struct breaker_policy p;
	struct breaker b;

	breaker_policy_defaults(&p);
	p.threshold = UINT32_MAX;
	breaker_init(&b, &p, T0);
	breaker_record_poll(&b, 0, UINT64_MAX, T0);
	assert_int_equal(b.state, BREAKER_OPEN);
	assert_int_equal(b.failure_streak, UINT32_MAX);
	breaker_init(&b, &p, T0);
	breaker_record_poll(&b, 0, (uint64_t)UINT32_MAX - 1, T0);
	assert_int_equal(b.state, BREAKER_CLOSED);
	assert_int_equal(b.failure_streak, UINT32_MAX - 1);
}

/* A restored streak is a dirty/clean event like any other (docs/design.md,
 * "Dirty and clean breakers"). */
static void test_abort_dirty_events(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	uint64_t now = T0;

	breaker_policy_defaults(&p);
	p.threshold = 5;
	breaker_init(&b, &p, now);
	breaker_record_failure(&b, now);
	breaker_record_failure(&b, now);
	struct breaker_event ev = breaker_record_success(&b, now);
	assert_int_equal(ev.dirty, BREAKER_BECAME_CLEAN);
	assert_false(breaker_is_dirty(&b)); /* provisional is not dirty */
	ev = breaker_record_poll(&b, 1, 0, now);
	assert_int_equal(ev.dirty, BREAKER_BECAME_DIRTY);
	assert_int_equal(b.failure_streak, 3);
	ev = breaker_record_poll(&b, 0, 0, now);
	assert_int_equal(ev.dirty, BREAKER_DIRTY_UNCHANGED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script_table),
		cmocka_unit_test(test_every_body_dies_opens),
		cmocka_unit_test(test_every_body_dies_reopens_after_each_probe),
		cmocka_unit_test(test_probe_confirmed_stays_closed),
		cmocka_unit_test(test_confirmed_successes_stay_successes),
		cmocka_unit_test(test_aborts_in_open_ignored),
		cmocka_unit_test(test_failures_at_once_equal_one_by_one),
		cmocka_unit_test(test_failures_saturate),
		cmocka_unit_test(test_abort_dirty_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
