/*
 * test_breaker_fleet.c - the rules that protect the fleet from one worker:
 * open-time backoff (each trip in a row doubles the open time, capped by
 * max_cooldown, forgotten after healthy_for closed), the failure-rate rule
 * (a threshold over a window of judged requests, only with the minimum
 * volume; backpressure is no sample), and the failure streak staying per
 * cycle.
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
#define T0 1000000 /* an arbitrary monotonic start: not 0 */

static void policy_with(struct breaker_policy *p, uint64_t cooldown_ms, uint64_t max_cooldown_ms)
{
	breaker_policy_defaults(p);
	p->cooldown_ms = cooldown_ms;
	p->max_cooldown_ms = max_cooldown_ms;
}

/* Failures until the breaker stops admitting. */
static void trip(struct breaker *b, uint64_t now)
{
	for (unsigned n = 0; breaker_would_allow(b); n++) {
		assert_true(n < LOOP_BOUND);
		breaker_record_failure(b, now);
	}
	assert_int_equal(b->state, BREAKER_OPEN);
}

/* How long the current OPEN lasts, read from its deadline. */
static uint64_t open_time(const struct breaker *b)
{
	assert_int_equal(b->state, BREAKER_OPEN);
	return breaker_next_deadline(b) - b->state_since_ms;
}

/* Ticks an OPEN breaker to HALF_OPEN at its deadline; returns that time. */
static uint64_t wait_half_open(struct breaker *b)
{
	uint64_t now = breaker_next_deadline(b);
	assert_int_equal(breaker_tick(b, now - 1).to, BREAKER_OPEN); /* not a moment early */
	struct breaker_event ev = breaker_tick(b, now);
	assert_string_equal(breaker_transition_name(&ev), "open->half_open");
	return now;
}

/* ==== Retry-After ==== */

/* Whole seconds of the open time left, rounded up, while OPEN only; the
 * backed-off open time of a second trip in a row counts. */
static void test_retry_after(void **state)
{
	struct breaker_policy p;
	struct breaker b;

	policy_with(&p, 30000, 300000);
	breaker_init(&b, &p, T0);
	assert_int_equal(breaker_retry_after_s(&b, T0), -1); /* closed */
	trip(&b, T0);
	/* (ms since the trip, seconds announced) */
	static const uint64_t table[][2] = {
	    {0, 30}, {1, 30}, {999, 30}, {1000, 29}, {1001, 29}, {29000, 1}, {29999, 1}, {30000, 0}};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (breaker_retry_after_s(&b, T0 + table[i][0]) != (int64_t)table[i][1])
			fail_msg("%llu ms after the trip: %lld, expected %llu",
				 (unsigned long long)table[i][0],
				 (long long)breaker_retry_after_s(&b, T0 + table[i][0]),
				 (unsigned long long)table[i][1]);
	uint64_t now = wait_half_open(&b);
	assert_int_equal(breaker_retry_after_s(&b, now), -1); /* half-open lets a probe in */
	breaker_record_failure(&b, now);		       /* the probe failed: 60 s */
	assert_int_equal(breaker_retry_after_s(&b, now), 60);
	assert_int_equal(breaker_retry_after_s(&b, now + 59500), 1);
}

/* ==== open-time backoff ==== */

/* cooldown x 2 per trip in a row, until max_cooldown holds it. */
static void test_backoff_doubles_per_failed_probe_up_to_max_cooldown(void **state)
{
	/* (cooldown, max_cooldown): a cap on a power of two, one between
	 * two, and no backoff at all. */
	static const uint64_t cases[][2] = {
	    {1000, 8000}, {1000, 5000}, {30000, 300000}, {500, 500}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct breaker_policy p;
		struct breaker b;
		policy_with(&p, cases[i][0], cases[i][1]);
		breaker_init(&b, &p, T0);
		trip(&b, T0);
		assert_int_equal(b.trips_in_a_row, 1);
		assert_int_equal(open_time(&b), p.cooldown_ms);
		assert_int_equal(breaker_open_duration_ms(&b), p.cooldown_ms);

		uint64_t previous = open_time(&b);
		unsigned trips = 1;
		/* Every probe fails, until the open time stops growing. */
		for (;;) {
			assert_true(trips < 64);
			/* Announced while half-open: what the next trip gets. */
			uint64_t now = wait_half_open(&b);
			uint64_t announced = breaker_open_duration_ms(&b);
			struct breaker_event ev = breaker_record_failure(&b, now + 1);
			assert_int_equal(ev.trip_rule, BREAKER_TRIP_PROBE_FAILED);
			assert_int_equal(b.trips_in_a_row, ++trips);
			uint64_t t = open_time(&b);
			assert_int_equal(t, announced);
			uint64_t doubled = 2 * previous;
			assert_int_equal(t,
					 doubled < p.max_cooldown_ms ? doubled : p.max_cooldown_ms);
			if (t == previous)
				break;
			previous = t;
		}
		assert_int_equal(previous, p.max_cooldown_ms);
	}
}

/* A huge trip count neither overflows nor wraps below the cap. */
static void test_backoff_saturates(void **state)
{
	struct breaker_policy p;
	policy_with(&p, 1000, UINT64_MAX / 2);
	assert_int_equal(breaker_backoff_ms(&p, 1), 1000);
	assert_int_equal(breaker_backoff_ms(&p, 2), 2000);
	assert_int_equal(breaker_backoff_ms(&p, UINT32_MAX), UINT64_MAX / 2);
	/* A max_cooldown below the cooldown (never after validation) is
	 * read as no backoff, never as a shorter open time. */
	policy_with(&p, 1000, 10);
	assert_int_equal(breaker_backoff_ms(&p, 5), 1000);
}

/* Closed for healthy_for: the trips in a row are forgotten, the next trip
 * gets the plain cooldown. Closed for less: the backoff goes on. */
static void test_backoff_forgotten_after_healthy_for(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	policy_with(&p, 1000, 60000);
	p.healthy_for_ms = 10000;
	breaker_init(&b, &p, T0);

	/* Two trips in a row: a failed probe. */
	trip(&b, T0);
	uint64_t now = wait_half_open(&b);
	breaker_record_failure(&b, now);
	assert_int_equal(open_time(&b), 2000);
	/* A probe succeeds: closed, the trips remembered, a deadline to
	 * forget them. */
	now = wait_half_open(&b);
	breaker_record_success(&b, now);
	assert_int_equal(b.state, BREAKER_CLOSED);
	assert_int_equal(b.trips_in_a_row, 2);
	assert_false(breaker_is_forgettable(&b));
	assert_int_equal(breaker_next_deadline(&b), now + p.healthy_for_ms);

	/* Flapping: it fails again before healthy_for. Three in a row. */
	trip(&b, now + p.healthy_for_ms - 1);
	assert_int_equal(b.trips_in_a_row, 3);
	assert_int_equal(open_time(&b), 4000);

	/* Closes again and stays closed: a tick early changes nothing, the
	 * tick at the deadline forgets, with no transition. */
	now = wait_half_open(&b);
	breaker_record_success(&b, now);
	uint64_t forget_at = breaker_next_deadline(&b);
	assert_int_equal(forget_at, now + p.healthy_for_ms);
	struct breaker_event ev = breaker_tick(&b, forget_at - 1);
	assert_int_equal(b.trips_in_a_row, 3);
	ev = breaker_tick(&b, forget_at);
	assert_false(breaker_event_is_transition(&ev));
	assert_int_equal(b.trips_in_a_row, 0);
	assert_true(breaker_is_forgettable(&b));
	assert_int_equal(breaker_next_deadline(&b), BREAKER_NO_DEADLINE);

	/* The next trip is a first one. */
	trip(&b, forget_at + 5);
	assert_int_equal(b.trips_in_a_row, 1);
	assert_int_equal(open_time(&b), p.cooldown_ms);
	/* The record of every opening stays. */
	assert_int_equal(b.trips, 4);
}

/* A trip that beats the forgetting timer still starts from one. */
static void test_backoff_forgotten_without_the_tick(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	policy_with(&p, 1000, 60000);
	breaker_init(&b, &p, T0);
	trip(&b, T0);
	uint64_t now = wait_half_open(&b);
	breaker_record_failure(&b, now);
	now = wait_half_open(&b);
	breaker_record_success(&b, now);
	assert_int_equal(b.trips_in_a_row, 2);
	trip(&b, now + p.healthy_for_ms); /* no tick in between */
	assert_int_equal(b.trips_in_a_row, 1);
	assert_int_equal(open_time(&b), p.cooldown_ms);
}

/* ==== the failure streak across cycles ==== */

/* A hung worker: every probe fails. The streak stays the one that tripped
 * (what /state and the log show); the cycles are counted as trips. */
static void test_streak_does_not_grow_across_cycles(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	policy_with(&p, 1000, 4000);
	breaker_init(&b, &p, T0);
	trip(&b, T0);
	uint32_t tripped_at = b.failure_streak;
	assert_int_equal(tripped_at, p.threshold);
	for (unsigned cycle = 1; cycle <= 10; cycle++) {
		uint64_t now = wait_half_open(&b);
		assert_int_equal(b.failure_streak, tripped_at);
		breaker_record_failure(&b, now);
		assert_int_equal(b.failure_streak, tripped_at);
		assert_int_equal(b.trips_in_a_row, cycle + 1);
		/* Late failures while open change nothing either. */
		breaker_record_failure(&b, now + 1);
		assert_int_equal(b.failure_streak, tripped_at);
		assert_int_equal(b.trips_in_a_row, cycle + 1);
	}
	/* Recovery starts a fresh streak and a fresh window. */
	uint64_t now = wait_half_open(&b);
	breaker_record_success(&b, now);
	assert_int_equal(b.failure_streak, 0);
	assert_int_equal(breaker_window_volume(&b), 0);
}

/* ==== the failure-rate rule ==== */

/*
 * A scenario: a policy and a pattern of outcomes replayed until the
 * breaker opens or `rounds` replays are done. S success, C client error
 * (a success), F failure, B backpressure, I ignored.
 */
static const struct rate_row {
	const char *why;
	uint32_t threshold; /* consecutive failures */
	uint32_t rate;      /* failure_rate_threshold, percent */
	uint32_t window, minimum_volume;
	const char *pattern;
	unsigned rounds;
	enum breaker_state to;
	enum breaker_trip_rule rule;
} rate_rows[] = {
	{"40 % interleaved failures, rate off: never opens", 3, 0, 20, 20, "FSFSS", 100,
	 BREAKER_CLOSED, BREAKER_TRIP_NONE},
	{"40 % interleaved failures over 30 %: the rate opens", 3, 30, 20, 20, "FSFSS", 100,
	 BREAKER_OPEN, BREAKER_TRIP_FAILURE_RATE},
	{"40 % is at the threshold of 40 %: opens", 3, 40, 20, 20, "FSFSS", 100, BREAKER_OPEN,
	 BREAKER_TRIP_FAILURE_RATE},
	{"40 % stays below 41 %: never opens", 3, 41, 20, 20, "FSFSS", 100, BREAKER_CLOSED,
	 BREAKER_TRIP_NONE},
	{"client errors are successes", 3, 30, 20, 20, "FCFCC", 100, BREAKER_OPEN,
	 BREAKER_TRIP_FAILURE_RATE},
	{"client errors alone are a 0 % rate", 3, 1, 20, 20, "C", 100, BREAKER_CLOSED,
	 BREAKER_TRIP_NONE},
	{"backpressure is no sample: 2 of 3 judged failed", 3, 60, 10, 10, "FBBBBFBBBBS", 100,
	 BREAKER_OPEN, BREAKER_TRIP_FAILURE_RATE},
	{"backpressure alone never reaches the volume", 3, 1, 10, 10, "BBBBB", 100,
	 BREAKER_CLOSED, BREAKER_TRIP_NONE},
	{"ignored statuses are no sample either", 3, 1, 10, 10, "IIIII", 100, BREAKER_CLOSED,
	 BREAKER_TRIP_NONE},
	{"consecutive failures still open with the rate on", 3, 90, 64, 64, "SSSSFFF", 1,
	 BREAKER_OPEN, BREAKER_TRIP_FAILURE_STREAK},
	{"both rules at once: the streak is named", 3, 50, 4, 4, "SFFF", 1, BREAKER_OPEN,
	 BREAKER_TRIP_FAILURE_STREAK},
	{"a high rate under the minimum volume does not open", 3, 50, 64, 20, "FSFSFS", 1,
	 BREAKER_CLOSED, BREAKER_TRIP_NONE},
	{"the same rate once the volume is there opens", 3, 50, 64, 20, "FSFSFS", 10,
	 BREAKER_OPEN, BREAKER_TRIP_FAILURE_RATE},
	{"a small window forgets old failures", 3, 50, 4, 4, "FSSSSSSS", 100, BREAKER_CLOSED,
	 BREAKER_TRIP_NONE},
};

static void record_char(struct breaker *b, char c, uint64_t now)
{
	switch (c) {
	case 'S': breaker_record(b, BREAKER_OUTCOME_SUCCESS, now); break;
	case 'C': breaker_record(b, BREAKER_OUTCOME_CLIENT_ERROR, now); break;
	case 'F': breaker_record(b, BREAKER_OUTCOME_FAILURE, now); break;
	case 'B': breaker_record(b, BREAKER_OUTCOME_BACKPRESSURE, now); break;
	case 'I': breaker_record(b, BREAKER_OUTCOME_IGNORED, now); break;
	default: fail_msg("bad pattern character %c", c);
	}
}

static void test_failure_rate_table(void **state)
{
	for (size_t i = 0; i < sizeof(rate_rows) / sizeof(rate_rows[0]); i++) {
		const struct rate_row *r = &rate_rows[i];
		struct breaker_policy p;
		struct breaker b;
		struct breaker_event last = {0};
		breaker_policy_defaults(&p);
		p.threshold = r->threshold;
		p.failure_rate_threshold = r->rate;
		p.window = r->window;
		p.minimum_volume = r->minimum_volume;
		breaker_init(&b, &p, T0);

		uint64_t now = T0;
		for (unsigned round = 0; round < r->rounds && breaker_would_allow(&b); round++) {
			for (const char *c = r->pattern; *c && breaker_would_allow(&b); c++) {
				enum breaker_state from = b.state;
				record_char(&b, *c, ++now);
				if (b.state != from)
					last = (struct breaker_event){.from = from, .to = b.state,
								      .trip_rule = b.last_trip_rule};
			}
		}
		if (b.state != r->to)
			fail_msg("row %zu (%s): ended %s", i, r->why, breaker_state_name(b.state));
		if (r->to != BREAKER_OPEN)
			continue;
		if (last.trip_rule != r->rule)
			fail_msg("row %zu (%s): opened by %s", i, r->why,
				 breaker_trip_rule_name(last.trip_rule));
		if (r->rule == BREAKER_TRIP_FAILURE_RATE) {
			/* It opened on what it saw: enough volume, at the rate,
			 * and with a streak short of the threshold. */
			unsigned volume = breaker_window_volume(&b);
			assert_true(volume >= r->minimum_volume && volume <= r->window);
			assert_true(breaker_window_failures(&b) * 100 >= r->rate * volume);
			assert_true(b.failure_streak < r->threshold);
		}
	}
}

/* Backpressure moves neither the volume nor the failures, nor dirtiness. */
static void test_backpressure_does_not_move_the_rate(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	breaker_policy_defaults(&p);
	p.failure_rate_threshold = 50;
	breaker_init(&b, &p, T0);
	breaker_record_failure(&b, T0 + 1);
	breaker_record_success(&b, T0 + 2);
	unsigned volume = breaker_window_volume(&b), failures = breaker_window_failures(&b);
	assert_int_equal(volume, 2);
	assert_int_equal(failures, 1);
	assert_true(breaker_is_dirty(&b)); /* a failure in the window, rate on */
	for (unsigned i = 0; i < 1000; i++) {
		struct breaker_event ev = breaker_record_backpressure(&b, T0 + 3 + i);
		assert_int_equal(ev.dirty, BREAKER_DIRTY_UNCHANGED);
	}
	assert_int_equal(breaker_window_volume(&b), volume);
	assert_int_equal(breaker_window_failures(&b), failures);
	assert_int_equal(b.state, BREAKER_CLOSED);
}

/* The window is dirty only where the rate can act; the successes that push
 * the last failure out make it clean. */
static void test_window_dirtiness(void **state)
{
	struct breaker_policy off, on;
	struct breaker b;
	breaker_policy_defaults(&off);
	on = off;
	on.failure_rate_threshold = 50;
	on.window = 4;
	on.minimum_volume = 4;

	breaker_init(&b, &off, T0);
	breaker_record_failure(&b, T0);
	breaker_record_success(&b, T0);
	assert_false(breaker_is_dirty(&b));

	breaker_init(&b, &on, T0);
	breaker_record_failure(&b, T0);
	struct breaker_event ev = breaker_record_success(&b, T0);
	assert_int_equal(ev.dirty, BREAKER_DIRTY_UNCHANGED); /* still one failure in 4 */
	unsigned n = 0;
	while (breaker_is_dirty(&b)) {
		assert_true(++n <= LOOP_BOUND);
		ev = breaker_record_success(&b, T0);
	}
	assert_int_equal(ev.dirty, BREAKER_BECAME_CLEAN);
	assert_int_equal(breaker_window_volume(&b), on.window);
}

/* Faults from HAProxy's counters are judged requests too: a large delta
 * opens by the rate when the streak would take longer, and stays cheap. */
static void test_counter_faults_feed_the_rate(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	breaker_policy_defaults(&p);
	p.threshold = 1000000;
	p.failure_rate_threshold = 50;
	p.window = 10;
	p.minimum_volume = 10;
	breaker_init(&b, &p, T0);
	for (unsigned i = 0; i < 10; i++)
		breaker_record_success(&b, T0);
	struct breaker_event ev = breaker_record_poll(&b, 0, 1000000000ull, T0 + 1);
	assert_string_equal(breaker_transition_name(&ev), "closed->open");
	assert_int_equal(ev.trip_rule, BREAKER_TRIP_FAILURE_RATE);
	assert_int_equal(breaker_window_failures(&b), 5); /* 5 of 10: the first at 50 % */

	/* With the rate off the streak takes the rest in one step. */
	p.failure_rate_threshold = 0;
	p.threshold = 1000;
	breaker_init(&b, &p, T0);
	ev = breaker_record_poll(&b, 0, 1000000000ull, T0 + 1);
	assert_int_equal(ev.trip_rule, BREAKER_TRIP_FAILURE_STREAK);
	assert_int_equal(b.failure_streak, p.threshold);
}

/* A reload may shrink or widen the window: the breaker keeps the last 64
 * outcomes, the policy reads the newest `window` of them. */
static void test_window_follows_the_policy(void **state)
{
	struct breaker_policy wide, narrow;
	struct breaker b;
	breaker_policy_defaults(&wide);
	narrow = wide;
	narrow.window = 2;
	narrow.minimum_volume = 2;
	breaker_init(&b, &wide, T0);
	breaker_record_failure(&b, T0);
	breaker_record_success(&b, T0);
	breaker_record_success(&b, T0);
	assert_int_equal(breaker_window_volume(&b), 3);
	assert_int_equal(breaker_window_failures(&b), 1);
	breaker_set_policy(&b, &narrow);
	assert_int_equal(breaker_window_volume(&b), 2);
	assert_int_equal(breaker_window_failures(&b), 0);
	breaker_set_policy(&b, &wide);
	assert_int_equal(breaker_window_failures(&b), 1);
}

/* ==== restoring ==== */

static void test_restore_history(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	policy_with(&p, 1000, 60000);
	breaker_init(&b, &p, T0);

	/* An older snapshot: an open breaker gets the open time it had. */
	assert_true(breaker_restore(&b, BREAKER_OPEN, 3, T0, 9));
	assert_int_equal(b.trips_in_a_row, 1);
	assert_int_equal(open_time(&b), p.cooldown_ms);
	assert_true(breaker_restore(&b, BREAKER_CLOSED, 0, T0, 9));
	assert_int_equal(b.trips_in_a_row, 0);

	/* A newer one: the backoff and the window as they were. */
	assert_true(breaker_restore(&b, BREAKER_OPEN, 3, T0, 9));
	breaker_restore_history(&b, 3, 0x5, 3, BREAKER_TRIP_FAILURE_RATE);
	assert_int_equal(open_time(&b), 4000);
	assert_int_equal(breaker_window_volume(&b), 3);
	assert_int_equal(breaker_window_failures(&b), 2);
	assert_int_equal(b.last_trip_rule, BREAKER_TRIP_FAILURE_RATE);
	/* Out of range: cut, dropped, NONE. */
	breaker_restore_history(&b, 1, UINT64_MAX, 200, (enum breaker_trip_rule)9);
	assert_int_equal(breaker_window_volume(&b), 64);
	assert_int_equal(breaker_window_failures(&b), 64);
	assert_int_equal(b.last_trip_rule, BREAKER_TRIP_NONE);
	breaker_restore_history(&b, 1, 0xff, 2, BREAKER_TRIP_NONE);
	assert_int_equal(b.window_failures, 0x3);
}

/* ==== policies ==== */

static bool resolve(struct breaker_policy *out, const struct breaker_policy_layer *global,
		    const struct breaker_policy_layer *server, char *err, size_t err_size)
{
	const struct breaker_policy_layer *layers[] = {global, NULL, server};
	return breaker_policy_resolve(out, layers, 3, err, err_size);
}

static void test_policy_keys_resolve_and_validate(void **state)
{
	struct breaker_policy out;
	struct breaker_policy_layer g = {0}, s = {0};
	char err[256];

	/* Defaults. */
	assert_true(resolve(&out, NULL, NULL, err, sizeof(err)));
	assert_int_equal(out.max_cooldown_ms, BREAKER_DEFAULT_MAX_COOLDOWN_MS);
	assert_int_equal(out.healthy_for_ms, BREAKER_DEFAULT_HEALTHY_FOR_MS);
	assert_int_equal(out.failure_rate_threshold, 0);
	assert_int_equal(out.window, BREAKER_MAX_WINDOW);
	assert_int_equal(out.minimum_volume, BREAKER_DEFAULT_MINIMUM_VOLUME);

	/* A long cooldown alone lifts the unset cap: no backoff, no error. */
	g.fields = BREAKER_FIELD_COOLDOWN;
	g.values.cooldown_ms = 600000;
	assert_true(resolve(&out, &g, NULL, err, sizeof(err)));
	assert_int_equal(out.max_cooldown_ms, 600000);

	/* Given explicitly below the cooldown: refused, saying both. */
	g.fields |= BREAKER_FIELD_MAX_COOLDOWN;
	g.values.max_cooldown_ms = 60000;
	assert_false(resolve(&out, &g, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "max_cooldown of 60000 ms is below cooldown of 600000 ms"));

	/* A server's cooldown under the global cap: refused at that level. */
	g.fields = BREAKER_FIELD_MAX_COOLDOWN;
	g.values.max_cooldown_ms = 60000;
	s.fields = BREAKER_FIELD_COOLDOWN;
	s.values.cooldown_ms = 120000;
	assert_false(resolve(&out, &g, &s, err, sizeof(err)));

	/* A small window alone brings the unset minimum volume down to it. */
	memset(&g, 0, sizeof(g));
	g.fields = BREAKER_FIELD_WINDOW | BREAKER_FIELD_FAILURE_RATE_THRESHOLD;
	g.values.window = 10;
	g.values.failure_rate_threshold = 30;
	assert_true(resolve(&out, &g, NULL, err, sizeof(err)));
	assert_int_equal(out.minimum_volume, 10);
	/* Given above it: refused. */
	g.fields |= BREAKER_FIELD_MINIMUM_VOLUME;
	g.values.minimum_volume = 20;
	assert_false(resolve(&out, &g, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "minimum_volume is 20, above the window of 10"));
	/* A server may change the window its backend's volume is judged in. */
	g.values.minimum_volume = 5;
	memset(&s, 0, sizeof(s));
	s.fields = BREAKER_FIELD_WINDOW;
	s.values.window = 4;
	assert_false(resolve(&out, &g, &s, err, sizeof(err)));
	s.values.window = 5;
	assert_true(resolve(&out, &g, &s, err, sizeof(err)));
	assert_int_equal(out.failure_rate_threshold, 30); /* inherited */

	/* Out of range values the key table would refuse anyway. */
	breaker_policy_defaults(&out);
	out.failure_rate_threshold = 101;
	assert_false(breaker_policy_validate(&out, err, sizeof(err)));
	breaker_policy_defaults(&out);
	out.window = 65;
	assert_false(breaker_policy_validate(&out, err, sizeof(err)));
	breaker_policy_defaults(&out);
	out.healthy_for_ms = 0;
	assert_false(breaker_policy_validate(&out, err, sizeof(err)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_backoff_doubles_per_failed_probe_up_to_max_cooldown),
		cmocka_unit_test(test_backoff_saturates),
		cmocka_unit_test(test_backoff_forgotten_after_healthy_for),
		cmocka_unit_test(test_backoff_forgotten_without_the_tick),
		cmocka_unit_test(test_streak_does_not_grow_across_cycles),
		cmocka_unit_test(test_failure_rate_table),
		cmocka_unit_test(test_backpressure_does_not_move_the_rate),
		cmocka_unit_test(test_window_dirtiness),
		cmocka_unit_test(test_counter_faults_feed_the_rate),
		cmocka_unit_test(test_window_follows_the_policy),
		cmocka_unit_test(test_restore_history),
		cmocka_unit_test(test_policy_keys_resolve_and_validate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
