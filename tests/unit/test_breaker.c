/*
 * test_breaker.c - the breaker's specification as tables: how a status is
 * judged (docs/design.md, "Classification"), every (state, event) ->
 * (state, effect) cell of its "Per-state rules" under both half-open
 * backpressure policies, and the scenarios of "Busy is not dead" and
 * "Sets replace".
 *
 * Loops run on observable state (breaker_would_allow, the state, the
 * deadline) with a bound, never on a hard-coded count, so a changed default
 * cannot make a test vacuous.
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

/* A loop on observable state that reaches this has found a bug. */
#define LOOP_BOUND 100000

#define T0 1000000 /* an arbitrary monotonic start: not 0, to catch "0 means unset" */

/* Records failures until the breaker stops admitting; returns how many. */
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

/* Trips the breaker at *now, then ticks at the end of the cool-down;
 * *now is left at that time. */
static void open_then_half_open(struct breaker *b, uint64_t *now)
{
	trip(b, *now);
	*now = breaker_next_deadline(b);
	assert_true(*now != BREAKER_NO_DEADLINE);
	struct breaker_event ev = breaker_tick(b, *now);
	assert_int_equal(ev.from, BREAKER_OPEN);
	assert_int_equal(ev.to, BREAKER_HALF_OPEN);
	assert_int_equal(b->state, BREAKER_HALF_OPEN);
}

/* ==== classification (docs/design.md, "Classification") ==== */

enum policy_variant {
	POLICY_DEFAULT,
	POLICY_503_IS_FAILURE, /* capacity = {429}: the failure set follows, 529 too */
	POLICY_IGNORE_501,     /* ignore = {501} */
	POLICY_408_IS_FAILURE, /* failure = {408, 500-599} minus capacity */
	POLICY_NARROW_FAILURE, /* failure = {500, 502} */
};

static void make_policy(struct breaker_policy *p, enum policy_variant variant)
{
	struct breaker_policy_layer layer = {0};
	const struct breaker_policy_layer *layers[] = {&layer};
	char err[256];

	switch (variant) {
	case POLICY_DEFAULT:
		break;
	case POLICY_503_IS_FAILURE:
		layer.fields = BREAKER_FIELD_CAPACITY_SET;
		status_set_add(&layer.values.capacity, 429);
		break;
	case POLICY_IGNORE_501:
		layer.fields = BREAKER_FIELD_IGNORE_SET;
		status_set_add(&layer.values.ignore, 501);
		break;
	case POLICY_408_IS_FAILURE:
		layer.fields = BREAKER_FIELD_FAILURE_SET;
		status_set_add(&layer.values.failure, 408);
		status_set_add_range(&layer.values.failure, 500, 502);
		status_set_add_range(&layer.values.failure, 504, 528);
		status_set_add_range(&layer.values.failure, 530, 599);
		break;
	case POLICY_NARROW_FAILURE:
		layer.fields = BREAKER_FIELD_FAILURE_SET;
		status_set_add(&layer.values.failure, 500);
		status_set_add(&layer.values.failure, 502);
		break;
	}
	assert_true(breaker_policy_resolve(p, layers, 1, err, sizeof(err)));
}

static const struct {
	enum policy_variant policy;
	int status;
	enum breaker_outcome outcome;
} outcome_cases[] = {
	{POLICY_DEFAULT, 200, BREAKER_OUTCOME_SUCCESS},
	{POLICY_DEFAULT, 101, BREAKER_OUTCOME_SUCCESS},
	{POLICY_DEFAULT, 204, BREAKER_OUTCOME_SUCCESS},
	{POLICY_DEFAULT, 304, BREAKER_OUTCOME_SUCCESS},
	{POLICY_DEFAULT, 400, BREAKER_OUTCOME_CLIENT_ERROR},
	{POLICY_DEFAULT, 404, BREAKER_OUTCOME_CLIENT_ERROR},
	{POLICY_DEFAULT, 499, BREAKER_OUTCOME_CLIENT_ERROR},
	/* docs/design.md, "Busy is not dead": "alive and busy" is neutral. */
	{POLICY_DEFAULT, 429, BREAKER_OUTCOME_BACKPRESSURE},
	{POLICY_DEFAULT, 503, BREAKER_OUTCOME_BACKPRESSURE},
	/* NVIDIA Dynamo's overload answer, and other LLM APIs': a 5xx that
	 * says busy, as 503 does; its neighbours stay failures. */
	{POLICY_DEFAULT, 529, BREAKER_OUTCOME_BACKPRESSURE},
	{POLICY_DEFAULT, 528, BREAKER_OUTCOME_FAILURE},
	{POLICY_DEFAULT, 530, BREAKER_OUTCOME_FAILURE},
	{POLICY_DEFAULT, 500, BREAKER_OUTCOME_FAILURE},
	{POLICY_DEFAULT, 502, BREAKER_OUTCOME_FAILURE},
	{POLICY_DEFAULT, 504, BREAKER_OUTCOME_FAILURE},
	{POLICY_DEFAULT, 505, BREAKER_OUTCOME_FAILURE},
	{POLICY_DEFAULT, 599, BREAKER_OUTCOME_FAILURE},
	/* Not a status a worker can send. */
	{POLICY_DEFAULT, 0, BREAKER_OUTCOME_IGNORED},
	{POLICY_DEFAULT, -1, BREAKER_OUTCOME_IGNORED},
	{POLICY_DEFAULT, 99, BREAKER_OUTCOME_IGNORED},
	{POLICY_DEFAULT, 600, BREAKER_OUTCOME_IGNORED},
	/* docs/design.md, "Sets replace": moving 503 out of the capacity
	 * set makes it a failure, and 429 stays backpressure. */
	{POLICY_503_IS_FAILURE, 503, BREAKER_OUTCOME_FAILURE},
	{POLICY_503_IS_FAILURE, 429, BREAKER_OUTCOME_BACKPRESSURE},
	{POLICY_503_IS_FAILURE, 529, BREAKER_OUTCOME_FAILURE},
	{POLICY_IGNORE_501, 501, BREAKER_OUTCOME_IGNORED},
	{POLICY_IGNORE_501, 500, BREAKER_OUTCOME_FAILURE},
	{POLICY_IGNORE_501, 503, BREAKER_OUTCOME_BACKPRESSURE},
	{POLICY_408_IS_FAILURE, 408, BREAKER_OUTCOME_FAILURE},
	{POLICY_408_IS_FAILURE, 404, BREAKER_OUTCOME_CLIENT_ERROR},
	/* A 5xx left out of every set: the worker answered. */
	{POLICY_NARROW_FAILURE, 504, BREAKER_OUTCOME_SUCCESS},
	{POLICY_NARROW_FAILURE, 502, BREAKER_OUTCOME_FAILURE},
	{POLICY_NARROW_FAILURE, 503, BREAKER_OUTCOME_BACKPRESSURE},
};

static void test_outcome_table(void **state)
{
	for (size_t i = 0; i < sizeof(outcome_cases) / sizeof(outcome_cases[0]); i++) {
		struct breaker_policy p;
		make_policy(&p, outcome_cases[i].policy);
		enum breaker_outcome got = breaker_outcome(&p, outcome_cases[i].status);
		if (got != outcome_cases[i].outcome)
			fail_msg("case %zu: status %d: got %s, expected %s", i,
				 outcome_cases[i].status, breaker_outcome_name(got),
				 breaker_outcome_name(outcome_cases[i].outcome));
	}
}

/* Every status of the default policy lands where docs/design.md,
 * "Classification", says. */
static void test_outcome_defaults_exhaustive(void **state)
{
	struct breaker_policy p;
	breaker_policy_defaults(&p);

	for (int status = 100; status <= 599; status++) {
		enum breaker_outcome expected;
		if (status == 429 || status == 503 || status == 529)
			expected = BREAKER_OUTCOME_BACKPRESSURE;
		else if (status >= 500)
			expected = BREAKER_OUTCOME_FAILURE;
		else if (status >= 400)
			expected = BREAKER_OUTCOME_CLIENT_ERROR;
		else
			expected = BREAKER_OUTCOME_SUCCESS;
		if (breaker_outcome(&p, status) != expected)
			fail_msg("status %d: got %s", status,
				 breaker_outcome_name(breaker_outcome(&p, status)));
	}
}

/* ==== transitions (docs/design.md, "Per-state rules") ==== */

enum start {
	START_CLOSED_CLEAN,      /* no streak */
	START_CLOSED_STREAK,     /* one failure, more than one short of the threshold */
	START_CLOSED_ONE_SHORT,  /* one failure short of the threshold */
	START_OPEN,              /* just tripped */
	START_HALF_OPEN,         /* cool-down over: probes go to the worker */
};

enum event {
	EV_SUCCESS,
	EV_CLIENT_ERROR,
	EV_FAILURE,
	EV_BACKPRESSURE,
	EV_IGNORED,
	EV_TICK_EARLY, /* one ms before the breaker's deadline */
	EV_TICK_DUE,   /* at the deadline (or much later when there is none) */
};

enum effect {
	EFFECT_NONE,           /* nothing changes at all */
	EFFECT_STREAK_UP,      /* streak + 1, still CLOSED */
	EFFECT_STREAK_KEPT,    /* nothing changes, and a streak is there to keep */
	EFFECT_STREAK_RESET,   /* streak := 0, still CLOSED */
	EFFECT_TRIP,           /* => OPEN, cool-down from now */
	EFFECT_REOPEN,         /* HALF_OPEN => OPEN, a new cool-down from now */
	EFFECT_CLOSE,          /* => CLOSED, clean, admitting */
	EFFECT_HALF_OPEN,      /* OPEN => HALF_OPEN, admitting, no deadline */
};

#define ANY (-1)

struct cell {
	enum start start;
	enum event event;
	int half_open_backpressure; /* ANY, or the policy the row needs */
	int open_late_success;      /* ANY, or the policy the row needs */
	enum breaker_state to;
	enum effect effect;
	enum breaker_dirty_change dirty;
};

#define HOBP_CLOSE BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE
#define HOBP_IGNORE BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE
#define LATE_IGNORE BREAKER_OPEN_LATE_SUCCESS_IGNORE
#define LATE_CLOSE BREAKER_OPEN_LATE_SUCCESS_CLOSE
#define CLOSED BREAKER_CLOSED
#define OPEN BREAKER_OPEN
#define HALF_OPEN BREAKER_HALF_OPEN
#define SAME BREAKER_DIRTY_UNCHANGED
#define DIRTY BREAKER_BECAME_DIRTY
#define CLEAN BREAKER_BECAME_CLEAN

/* The specification. Each row runs under every policy combination it
 * allows (ANY), so each cell is checked under both half-open policies. */
static const struct cell cells[] = {
	/* CLOSED, no streak */
	{START_CLOSED_CLEAN, EV_SUCCESS, ANY, ANY, CLOSED, EFFECT_NONE, SAME},
	{START_CLOSED_CLEAN, EV_CLIENT_ERROR, ANY, ANY, CLOSED, EFFECT_NONE, SAME},
	{START_CLOSED_CLEAN, EV_FAILURE, ANY, ANY, CLOSED, EFFECT_STREAK_UP, DIRTY},
	{START_CLOSED_CLEAN, EV_BACKPRESSURE, ANY, ANY, CLOSED, EFFECT_NONE, SAME},
	{START_CLOSED_CLEAN, EV_IGNORED, ANY, ANY, CLOSED, EFFECT_NONE, SAME},
	{START_CLOSED_CLEAN, EV_TICK_DUE, ANY, ANY, CLOSED, EFFECT_NONE, SAME},
	/* CLOSED with a streak: success resets it, backpressure keeps it */
	{START_CLOSED_STREAK, EV_SUCCESS, ANY, ANY, CLOSED, EFFECT_STREAK_RESET, CLEAN},
	{START_CLOSED_STREAK, EV_CLIENT_ERROR, ANY, ANY, CLOSED, EFFECT_STREAK_RESET, CLEAN},
	{START_CLOSED_STREAK, EV_FAILURE, ANY, ANY, CLOSED, EFFECT_STREAK_UP, SAME},
	{START_CLOSED_STREAK, EV_BACKPRESSURE, ANY, ANY, CLOSED, EFFECT_STREAK_KEPT, SAME},
	{START_CLOSED_STREAK, EV_IGNORED, ANY, ANY, CLOSED, EFFECT_STREAK_KEPT, SAME},
	{START_CLOSED_STREAK, EV_TICK_DUE, ANY, ANY, CLOSED, EFFECT_STREAK_KEPT, SAME},
	/* CLOSED, one failure short: the next failure trips */
	{START_CLOSED_ONE_SHORT, EV_SUCCESS, ANY, ANY, CLOSED, EFFECT_STREAK_RESET, CLEAN},
	{START_CLOSED_ONE_SHORT, EV_CLIENT_ERROR, ANY, ANY, CLOSED, EFFECT_STREAK_RESET, CLEAN},
	{START_CLOSED_ONE_SHORT, EV_FAILURE, ANY, ANY, OPEN, EFFECT_TRIP, SAME},
	{START_CLOSED_ONE_SHORT, EV_BACKPRESSURE, ANY, ANY, CLOSED, EFFECT_STREAK_KEPT, SAME},
	{START_CLOSED_ONE_SHORT, EV_IGNORED, ANY, ANY, CLOSED, EFFECT_STREAK_KEPT, SAME},
	/* OPEN: late outcomes change nothing; a late success closes only
	 * under open_late_success = close */
	{START_OPEN, EV_SUCCESS, ANY, LATE_IGNORE, OPEN, EFFECT_NONE, SAME},
	{START_OPEN, EV_SUCCESS, ANY, LATE_CLOSE, CLOSED, EFFECT_CLOSE, CLEAN},
	{START_OPEN, EV_CLIENT_ERROR, ANY, LATE_IGNORE, OPEN, EFFECT_NONE, SAME},
	{START_OPEN, EV_CLIENT_ERROR, ANY, LATE_CLOSE, CLOSED, EFFECT_CLOSE, CLEAN},
	{START_OPEN, EV_FAILURE, ANY, ANY, OPEN, EFFECT_NONE, SAME},
	{START_OPEN, EV_BACKPRESSURE, ANY, ANY, OPEN, EFFECT_NONE, SAME},
	{START_OPEN, EV_IGNORED, ANY, ANY, OPEN, EFFECT_NONE, SAME},
	{START_OPEN, EV_TICK_EARLY, ANY, ANY, OPEN, EFFECT_NONE, SAME},
	{START_OPEN, EV_TICK_DUE, ANY, ANY, HALF_OPEN, EFFECT_HALF_OPEN, SAME},
	/* HALF_OPEN: the probe's answer decides; under `ignore` a 503 records
	 * nothing (HAProxy frees the probe's maxconn slot, the next request
	 * probes again) */
	{START_HALF_OPEN, EV_SUCCESS, ANY, ANY, CLOSED, EFFECT_CLOSE, CLEAN},
	{START_HALF_OPEN, EV_CLIENT_ERROR, ANY, ANY, CLOSED, EFFECT_CLOSE, CLEAN},
	{START_HALF_OPEN, EV_FAILURE, ANY, ANY, OPEN, EFFECT_REOPEN, SAME},
	{START_HALF_OPEN, EV_BACKPRESSURE, HOBP_CLOSE, ANY, CLOSED, EFFECT_CLOSE, CLEAN},
	{START_HALF_OPEN, EV_BACKPRESSURE, HOBP_IGNORE, ANY, HALF_OPEN, EFFECT_NONE, SAME},
	{START_HALF_OPEN, EV_IGNORED, ANY, ANY, HALF_OPEN, EFFECT_NONE, SAME},
	{START_HALF_OPEN, EV_TICK_DUE, ANY, ANY, HALF_OPEN, EFFECT_NONE, SAME},
};

/* Puts a fresh breaker into `start`; returns the time it got there. */
static uint64_t setup(struct breaker *b, const struct breaker_policy *p, enum start start)
{
	uint64_t now = T0;

	breaker_init(b, p, now);
	switch (start) {
	case START_CLOSED_CLEAN:
		break;
	case START_CLOSED_STREAK:
		breaker_record_failure(b, now);
		assert_true(b->failure_streak + 1 < p->threshold); /* the row needs room */
		break;
	case START_CLOSED_ONE_SHORT:
		while (b->failure_streak + 1 < p->threshold) {
			assert_true(b->failure_streak < LOOP_BOUND);
			breaker_record_failure(b, now);
		}
		break;
	case START_OPEN:
		trip(b, now);
		break;
	case START_HALF_OPEN:
		open_then_half_open(b, &now);
		break;
	}
	if (start != START_OPEN && start != START_HALF_OPEN)
		assert_int_equal(b->state, BREAKER_CLOSED);
	return now;
}

/* Applies one event at a time chosen for it; returns that time. */
static uint64_t apply(struct breaker *b, enum event event, uint64_t start_time,
		      struct breaker_event *ev)
{
	/* Well inside any cool-down, but not at start. */
	uint64_t now = start_time + 7;
	uint64_t deadline = breaker_next_deadline(b);

	memset(ev, 0, sizeof(*ev));
	switch (event) {
	case EV_SUCCESS: *ev = breaker_record(b, BREAKER_OUTCOME_SUCCESS, now); break;
	case EV_CLIENT_ERROR: *ev = breaker_record(b, BREAKER_OUTCOME_CLIENT_ERROR, now); break;
	case EV_FAILURE: *ev = breaker_record(b, BREAKER_OUTCOME_FAILURE, now); break;
	case EV_BACKPRESSURE: *ev = breaker_record(b, BREAKER_OUTCOME_BACKPRESSURE, now); break;
	case EV_IGNORED: *ev = breaker_record(b, BREAKER_OUTCOME_IGNORED, now); break;
	case EV_TICK_EARLY:
		assert_true(deadline != BREAKER_NO_DEADLINE);
		now = deadline - 1;
		*ev = breaker_tick(b, now);
		break;
	case EV_TICK_DUE:
		/* With no deadline, a day later: nothing may be pending. */
		now = deadline != BREAKER_NO_DEADLINE ? deadline : start_time + 86400000;
		*ev = breaker_tick(b, now);
		break;
	}
	return now;
}

static bool same_breaker(const struct breaker *a, const struct breaker *b)
{
	return a->state == b->state && a->failure_streak == b->failure_streak &&
	       a->state_since_ms == b->state_since_ms &&
	       breaker_next_deadline(a) == breaker_next_deadline(b);
}

static void assert_unchanged(const struct breaker *before, const struct breaker *after)
{
	assert_true(same_breaker(before, after));
}

static const char *const start_names[] = {
	"closed-clean", "closed-streak", "closed-one-short", "open", "half-open",
};
static const char *const event_names[] = {
	"success", "client_error", "failure", "backpressure", "ignored", "tick-early",
	"tick-due",
};

/* A failed expectation names the row and the policies it ran under. */
#define EXPECT(cond)                                                       \
	do {                                                               \
		if (!(cond))                                               \
			fail_msg("%s: expected %s", row, #cond);           \
	} while (0)

static void check_effect(const char *row, const struct cell *c, const struct breaker *before,
			 const struct breaker *b, const struct breaker_event *ev, uint64_t now)
{
	const struct breaker_policy *p = b->policy;

	EXPECT(b->state == c->to);
	EXPECT(ev->from == before->state);
	EXPECT(ev->to == c->to);
	EXPECT(ev->dirty == c->dirty);
	EXPECT(breaker_is_dirty(b) ==
	       (c->dirty == SAME ? breaker_is_dirty(before) : c->dirty == DIRTY));

	switch (c->effect) {
	case EFFECT_NONE:
		EXPECT(same_breaker(before, b));
		break;
	case EFFECT_STREAK_KEPT:
		EXPECT(before->failure_streak > 0);
		EXPECT(same_breaker(before, b));
		break;
	case EFFECT_STREAK_UP:
		EXPECT(b->failure_streak == before->failure_streak + 1);
		EXPECT(breaker_would_allow(b));
		break;
	case EFFECT_STREAK_RESET:
		EXPECT(before->failure_streak > 0);
		EXPECT(b->failure_streak == 0);
		EXPECT(breaker_would_allow(b));
		break;
	case EFFECT_TRIP:
	case EFFECT_REOPEN:
		EXPECT(!breaker_would_allow(b));
		EXPECT(b->state_since_ms == now);
		/* The cool-down starts now: for a reopen, later than the first.
		 * It lasts what the breaker announced before it tripped: the
		 * cooldown, backed off by the trips in a row. */
		EXPECT(breaker_next_deadline(b) == now + breaker_open_duration_ms(b));
		EXPECT(breaker_open_duration_ms(b) == breaker_open_duration_ms(before));
		EXPECT(breaker_open_duration_ms(b) >= p->cooldown_ms);
		EXPECT(c->effect == EFFECT_TRIP || now > before->state_since_ms);
		break;
	case EFFECT_CLOSE:
		EXPECT(b->failure_streak == 0);
		EXPECT(breaker_would_allow(b));
		/* What is left to wait for: forgetting the trips in a row. */
		EXPECT(b->trips_in_a_row > 0);
		EXPECT(breaker_next_deadline(b) == now + p->healthy_for_ms);
		break;
	case EFFECT_HALF_OPEN:
		EXPECT(breaker_would_allow(b));
		EXPECT(breaker_next_deadline(b) == BREAKER_NO_DEADLINE);
		break;
	}
}

static void test_transition_table(void **state)
{
	const enum breaker_half_open_backpressure hobps[] = {HOBP_CLOSE, HOBP_IGNORE};
	const enum breaker_open_late_success lates[] = {LATE_IGNORE, LATE_CLOSE};
	unsigned runs[sizeof(cells) / sizeof(cells[0])] = {0};

	for (size_t h = 0; h < 2; h++) {
		for (size_t l = 0; l < 2; l++) {
			struct breaker_policy p;
			breaker_policy_defaults(&p);
			/* Fixed, so "streak" and "one short" are different rows. */
			p.threshold = 3;
			p.half_open_backpressure = hobps[h];
			p.open_late_success = lates[l];

			for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
				const struct cell *c = &cells[i];
				if ((c->half_open_backpressure != ANY &&
				     c->half_open_backpressure != (int)hobps[h]) ||
				    (c->open_late_success != ANY &&
				     c->open_late_success != (int)lates[l]))
					continue;

				struct breaker b, before;
				struct breaker_event ev;
				uint64_t start_time = setup(&b, &p, c->start);
				before = b;
				uint64_t now = apply(&b, c->event, start_time, &ev);
				char row[128];
				snprintf(row, sizeof(row),
					 "row %zu: %s + %s (half-open backpressure %s, late "
					 "success %s)",
					 i, start_names[c->start], event_names[c->event],
					 hobps[h] == HOBP_CLOSE ? "close" : "ignore",
					 lates[l] == LATE_CLOSE ? "close" : "ignore");
				check_effect(row, c, &before, &b, &ev, now);
				runs[i]++;
			}
		}
	}
	/* Every row ran; every ANY row under both half-open policies. */
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		assert_true(runs[i] >= 1);
		if (cells[i].half_open_backpressure == ANY)
			assert_true(runs[i] >= 2);
	}
}

/* The table covers the real breaker: every state the breaker has (counted
 * from its own names, so a new state fails here until rows are written for
 * it) is reached by a start of the table, and every outcome the breaker
 * classifies into has an event; then every such (start, outcome) pair has
 * a row under both half-open policies. */
static enum event event_of_outcome(enum breaker_outcome outcome)
{
	switch (outcome) {
	case BREAKER_OUTCOME_SUCCESS: return EV_SUCCESS;
	case BREAKER_OUTCOME_CLIENT_ERROR: return EV_CLIENT_ERROR;
	case BREAKER_OUTCOME_BACKPRESSURE: return EV_BACKPRESSURE;
	case BREAKER_OUTCOME_FAILURE: return EV_FAILURE;
	case BREAKER_OUTCOME_IGNORED: return EV_IGNORED;
	}
	fail_msg("outcome %d (%s) has no event in the table", (int)outcome,
		 breaker_outcome_name(outcome));
	return EV_SUCCESS;
}

static void test_transition_table_is_complete(void **state)
{
	static const enum start starts[] = {START_CLOSED_CLEAN, START_CLOSED_STREAK,
					    START_CLOSED_ONE_SHORT, START_OPEN, START_HALF_OPEN};
	struct breaker_policy p;
	breaker_policy_defaults(&p);
	p.threshold = 3;

	/* The breaker's states, as many as it has names for. */
	for (int s = 0; strcmp(breaker_state_name((enum breaker_state)s), "unknown") != 0; s++) {
		bool reached = false;
		for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
			struct breaker b;
			setup(&b, &p, starts[i]);
			reached |= (int)b.state == s;
		}
		if (!reached)
			fail_msg("no start of the table puts a breaker in state %s",
				 breaker_state_name((enum breaker_state)s));
	}
	/* Every outcome, from every start, under both half-open policies. */
	for (int o = 0; strcmp(breaker_outcome_name((enum breaker_outcome)o), "unknown") != 0; o++) {
		enum event ev = event_of_outcome((enum breaker_outcome)o);
		for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
			bool hobp_seen[2] = {false, false};
			for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
				if (cells[i].start != starts[s] || cells[i].event != ev)
					continue;
				if (cells[i].half_open_backpressure == ANY)
					hobp_seen[0] = hobp_seen[1] = true;
				else
					hobp_seen[cells[i].half_open_backpressure] = true;
			}
			if (!hobp_seen[0] || !hobp_seen[1])
				fail_msg("no row for %s + %s under both half-open policies",
					 start_names[starts[s]], breaker_outcome_name((enum breaker_outcome)o));
		}
	}
}

/* ==== busy is not dead, sets replace (docs/design.md) ==== */

/* Busy is not dead: an engine answering 503 (or 429, or 529) far past any
 * threshold leaves the breaker CLOSED and admitting. */
static void test_backpressure_storm_never_opens(void **state)
{
	const int statuses[] = {503, 429, 529};
	struct breaker_policy p;
	breaker_policy_defaults(&p);

	for (size_t s = 0; s < sizeof(statuses) / sizeof(statuses[0]); s++) {
		struct breaker b;
		breaker_init(&b, &p, T0);
		unsigned storm = 100 * p.threshold + 1000;
		for (unsigned i = 0; i < storm; i++) {
			struct breaker_event ev = breaker_record(&b, breaker_outcome(&p, statuses[s]),
								 T0 + i);
			assert_false(breaker_event_is_transition(&ev));
			assert_true(breaker_would_allow(&b));
		}
		assert_int_equal(b.state, BREAKER_CLOSED);
		assert_int_equal(b.failure_streak, 0);
		assert_false(breaker_is_dirty(&b));
	}
}

/* Busy is not dead: a 500 still opens it, after exactly `threshold` of
 * them. */
static void test_failures_still_open(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	unsigned n = 0;
	struct breaker_event ev = {0};

	breaker_policy_defaults(&p);
	breaker_init(&b, &p, T0);
	while (breaker_would_allow(&b)) {
		assert_true(++n <= LOOP_BOUND);
		ev = breaker_record(&b, breaker_outcome(&p, 500), T0);
	}
	assert_int_equal(n, p.threshold);
	assert_int_equal(b.state, BREAKER_OPEN);
	assert_int_equal(ev.from, BREAKER_CLOSED);
	assert_int_equal(ev.to, BREAKER_OPEN);
	assert_string_equal(breaker_transition_name(&ev), "closed->open");
}

/* Busy is not dead, its example: at threshold 3, fault, fault, 503, fault
 * trips. Generalised: a 503 after every fault never saves the worker. */
static void test_backpressure_keeps_the_streak(void **state)
{
	struct breaker_policy p;
	struct breaker b;

	breaker_policy_defaults(&p);
	p.threshold = 3;
	breaker_init(&b, &p, T0);
	breaker_record(&b, breaker_outcome(&p, 500), T0);
	breaker_record(&b, breaker_outcome(&p, 502), T0);
	breaker_record(&b, breaker_outcome(&p, 503), T0);
	assert_true(breaker_would_allow(&b));
	breaker_record(&b, breaker_outcome(&p, 500), T0);
	assert_int_equal(b.state, BREAKER_OPEN);

	/* Any threshold: interleaving 503s changes nothing. */
	breaker_policy_defaults(&p);
	breaker_init(&b, &p, T0);
	unsigned faults = 0;
	while (breaker_would_allow(&b)) {
		assert_true(++faults <= LOOP_BOUND);
		breaker_record(&b, breaker_outcome(&p, 500), T0);
		breaker_record(&b, breaker_outcome(&p, 503), T0);
		breaker_record(&b, breaker_outcome(&p, 429), T0);
	}
	assert_int_equal(faults, p.threshold);
}

/* Busy is not dead: a half-open probe answered 503 recovers the breaker
 * (policy close, the default). */
static void test_half_open_probe_503_closes(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	uint64_t now = T0;

	breaker_policy_defaults(&p);
	assert_int_equal(p.half_open_backpressure, BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE);
	breaker_init(&b, &p, now);
	open_then_half_open(&b, &now);
	struct breaker_event ev = breaker_record(&b, breaker_outcome(&p, 503), now + 5);
	assert_string_equal(breaker_transition_name(&ev), "half_open->closed");
	assert_int_equal(ev.dirty, BREAKER_BECAME_CLEAN);
	assert_true(breaker_would_allow(&b));
}

/* Sets replace, its last paragraph: under policy ignore a probe answered 503
 * records no sample and the breaker keeps admitting (HAProxy frees the
 * probe's maxconn slot), so a busy worker never wedges it; the success
 * that follows closes it. */
static void test_half_open_probe_503_never_wedges(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	uint64_t now = T0;

	breaker_policy_defaults(&p);
	p.half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE;
	breaker_init(&b, &p, now);
	open_then_half_open(&b, &now);

	/* Many busy answers in a row: each time a new probe can go out. */
	for (unsigned i = 0; i < 100 * p.half_open_probes; i++) {
		assert_true(breaker_would_allow(&b));
		struct breaker_event ev = breaker_record(&b, breaker_outcome(&p, 503), ++now);
		assert_int_equal(b.state, BREAKER_HALF_OPEN);
		assert_false(breaker_event_is_transition(&ev));
		assert_true(breaker_would_allow(&b));
	}
	struct breaker_event ev = breaker_record(&b, breaker_outcome(&p, 200), ++now);
	assert_string_equal(breaker_transition_name(&ev), "half_open->closed");
}

/* Busy is not dead: a late 503 or failure while OPEN changes nothing; with the
 * default, neither does a late success. */
static void test_late_outcomes_while_open(void **state)
{
	const int statuses[] = {503, 429, 529, 500, 502, 200, 404};
	struct breaker_policy p;
	breaker_policy_defaults(&p);

	for (size_t s = 0; s < sizeof(statuses) / sizeof(statuses[0]); s++) {
		struct breaker b;
		breaker_init(&b, &p, T0);
		trip(&b, T0);
		struct breaker before = b;
		struct breaker_event ev = breaker_record(&b, breaker_outcome(&p, statuses[s]),
							 T0 + 10);
		assert_false(breaker_event_is_transition(&ev));
		assert_int_equal(ev.dirty, BREAKER_DIRTY_UNCHANGED);
		assert_unchanged(&before, &b);
	}
}

/* open_late_success = close: exact parity with the router this follows. */
static void test_late_success_closes_when_asked(void **state)
{
	struct breaker_policy p;
	struct breaker b;

	breaker_policy_defaults(&p);
	p.open_late_success = BREAKER_OPEN_LATE_SUCCESS_CLOSE;
	breaker_init(&b, &p, T0);
	trip(&b, T0);
	struct breaker_event ev = breaker_record(&b, breaker_outcome(&p, 200), T0 + 10);
	assert_string_equal(breaker_transition_name(&ev), "open->closed");
	assert_true(breaker_would_allow(&b));
}

/* The cool-down runs from the first trip: failures while OPEN do not
 * push the HALF_OPEN time back. */
static void test_cooldown_runs_from_first_trip(void **state)
{
	struct breaker_policy p;
	struct breaker b;

	breaker_policy_defaults(&p);
	breaker_init(&b, &p, T0);
	trip(&b, T0);
	uint64_t due = breaker_next_deadline(&b);
	assert_int_equal(due, T0 + p.cooldown_ms);

	for (uint64_t t = T0 + 1; t < due; t += p.cooldown_ms / 10 + 1)
		breaker_record_failure(&b, t);
	assert_int_equal(breaker_next_deadline(&b), due);

	struct breaker_event ev = breaker_tick(&b, due - 1);
	assert_false(breaker_event_is_transition(&ev));
	assert_int_equal(b.state, BREAKER_OPEN);
	ev = breaker_tick(&b, due);
	assert_string_equal(breaker_transition_name(&ev), "open->half_open");
}

/* A tick long after the deadline still moves on (a late timer). */
static void test_late_tick(void **state)
{
	struct breaker_policy p;
	struct breaker b;

	breaker_policy_defaults(&p);
	breaker_init(&b, &p, T0);
	trip(&b, T0);
	breaker_tick(&b, breaker_next_deadline(&b) + 3600 * 1000);
	assert_int_equal(b.state, BREAKER_HALF_OPEN);
}

/* HALF_OPEN has no timer of its own: HAProxy's maxconn limits the probes,
 * and `timeout server` ends a hung one, whose failure then reopens. With
 * several probes, one failure reopens whatever the others are doing. */
static void test_half_open_waits_for_an_answer(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	uint64_t now = T0;

	breaker_policy_defaults(&p);
	p.half_open_probes = 3;
	breaker_init(&b, &p, now);
	open_then_half_open(&b, &now);
	assert_int_equal(breaker_next_deadline(&b), BREAKER_NO_DEADLINE);
	struct breaker_event ev = breaker_tick(&b, now + 3600 * 1000);
	assert_false(breaker_event_is_transition(&ev));
	assert_true(breaker_would_allow(&b));
	ev = breaker_record_failure(&b, now + 1);
	assert_string_equal(breaker_transition_name(&ev), "half_open->open");
	assert_false(breaker_would_allow(&b));
}

/* A client error counts as a success: it resets the streak. */
static void test_client_error_is_success(void **state)
{
	struct breaker_policy p;
	struct breaker b;

	breaker_policy_defaults(&p);
	breaker_init(&b, &p, T0);
	for (unsigned round = 0; round < 10 * p.threshold; round++) {
		while (b.failure_streak + 1 < p.threshold)
			breaker_record(&b, breaker_outcome(&p, 500), T0);
		breaker_record(&b, breaker_outcome(&p, 404), T0);
		assert_int_equal(b.failure_streak, 0);
	}
	assert_int_equal(b.state, BREAKER_CLOSED);
}

/* The dirty/clean events (docs/design.md, "Dirty and clean breakers")
 * over a whole life cycle. */
static void test_dirty_events(void **state)
{
	struct breaker_policy p;
	struct breaker b;
	uint64_t now = T0;

	breaker_policy_defaults(&p);
	breaker_init(&b, &p, now);
	assert_false(breaker_is_dirty(&b));
	assert_int_equal(breaker_record_failure(&b, now).dirty, BREAKER_BECAME_DIRTY);
	assert_int_equal(breaker_record_failure(&b, now).dirty, BREAKER_DIRTY_UNCHANGED);
	assert_int_equal(breaker_record_success(&b, now).dirty, BREAKER_BECAME_CLEAN);
	assert_int_equal(breaker_record_success(&b, now).dirty, BREAKER_DIRTY_UNCHANGED);

	/* Threshold 1: clean straight to OPEN is one "became dirty". */
	p.threshold = 1;
	struct breaker_event ev = breaker_record_failure(&b, now);
	assert_string_equal(breaker_transition_name(&ev), "closed->open");
	assert_int_equal(ev.dirty, BREAKER_BECAME_DIRTY);
	ev = breaker_tick(&b, breaker_next_deadline(&b));
	assert_int_equal(ev.dirty, BREAKER_DIRTY_UNCHANGED);
	ev = breaker_record_success(&b, breaker_next_deadline(&b));
	assert_int_equal(ev.dirty, BREAKER_BECAME_CLEAN);
}

/* ==== policy ==== */

static void test_defaults(void **state)
{
	struct breaker_policy p;
	char err[256];
	char list[STATUS_SET_FORMAT_MAX];

	breaker_policy_defaults(&p);
	assert_true(breaker_policy_validate(&p, err, sizeof(err)));
	assert_int_equal(p.threshold, 3);
	assert_int_equal(p.cooldown_ms, 30000);
	assert_int_equal(p.half_open_probes, 1);
	status_set_format(&p.capacity, list, sizeof(list));
	assert_string_equal(list, "429,503,529");
	status_set_format(&p.failure, list, sizeof(list));
	assert_string_equal(list, "500-502,504-528,530-599");
	assert_true(status_set_is_empty(&p.ignore));
	assert_int_equal(p.half_open_backpressure, BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE);
	assert_int_equal(p.open_late_success, BREAKER_OPEN_LATE_SUCCESS_IGNORE);
}

static void spoil_threshold(struct breaker_policy *p) { p->threshold = 0; }
static void spoil_cooldown(struct breaker_policy *p) { p->cooldown_ms = 0; }
static void spoil_no_probes(struct breaker_policy *p) { p->half_open_probes = 0; }
static void spoil_many_probes(struct breaker_policy *p)
{
	p->half_open_probes = BREAKER_MAX_PROBES + 1;
}
static void spoil_overlap(struct breaker_policy *p) { status_set_add(&p->failure, 503); }
static void spoil_ignore_overlap(struct breaker_policy *p) { status_set_add(&p->ignore, 429); }
static void spoil_ignore_failure(struct breaker_policy *p) { status_set_add(&p->ignore, 500); }
static void spoil_hobp(struct breaker_policy *p) { p->half_open_backpressure = 7; }
static void spoil_late(struct breaker_policy *p) { p->open_late_success = 7; }

static void test_invalid_policies(void **state)
{
	static const struct {
		void (*spoil)(struct breaker_policy *p);
		const char *message_has;
	} cases[] = {
		{spoil_threshold, "threshold"},
		{spoil_cooldown, "cool-down"},
		{spoil_no_probes, "probes is 0"},
		{spoil_many_probes, "probes is 17"},
		{spoil_overlap, "capacity and failure sets overlap on 503"},
		{spoil_ignore_overlap, "ignore and capacity sets overlap on 429"},
		{spoil_ignore_failure, "ignore and failure sets overlap on 500"},
		{spoil_hobp, "half-open backpressure"},
		{spoil_late, "late success"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct breaker_policy p;
		char err[256] = "";
		breaker_policy_defaults(&p);
		cases[i].spoil(&p);
		assert_false(breaker_policy_validate(&p, err, sizeof(err)));
		if (!strstr(err, cases[i].message_has))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].message_has);
	}
}

/* Layers replace, field by field and set by set (docs/design.md, "Sets
 * replace"). */
static void test_resolve_replaces(void **state)
{
	struct breaker_policy_layer global = {0}, backend = {0}, server = {0};
	struct breaker_policy p;
	char err[256];
	char list[STATUS_SET_FORMAT_MAX];

	global.fields = BREAKER_FIELD_THRESHOLD | BREAKER_FIELD_CAPACITY_SET;
	global.values.threshold = 5;
	status_set_add(&global.values.capacity, 429);
	status_set_add(&global.values.capacity, 503);
	status_set_add(&global.values.capacity, 529);
	backend.fields = BREAKER_FIELD_THRESHOLD | BREAKER_FIELD_COOLDOWN;
	backend.values.threshold = 4;
	backend.values.cooldown_ms = 5000;
	server.fields = BREAKER_FIELD_CAPACITY_SET | BREAKER_FIELD_HALF_OPEN_BACKPRESSURE;
	status_set_add(&server.values.capacity, 503);
	server.values.half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE;

	const struct breaker_policy_layer *layers[] = {&global, &backend, &server};
	assert_true(breaker_policy_resolve(&p, layers, 3, err, sizeof(err)));
	assert_int_equal(p.threshold, 4);
	assert_int_equal(p.cooldown_ms, 5000);
	assert_int_equal(p.half_open_probes, BREAKER_DEFAULT_HALF_OPEN_PROBES);
	/* Replaced, not merged: 429 and 529 are gone. */
	status_set_format(&p.capacity, list, sizeof(list));
	assert_string_equal(list, "503");
	assert_true(status_set_contains(&p.capacity, 503));
	assert_false(status_set_contains(&p.capacity, 429));
	/* The unconfigured failure set follows: 529 is a failure again. */
	assert_true(status_set_contains(&p.failure, 529));
	assert_int_equal(breaker_outcome(&p, 429), BREAKER_OUTCOME_CLIENT_ERROR);
	assert_int_equal(p.half_open_backpressure, BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE);

	/* A NULL layer (a backend without override) is skipped. */
	const struct breaker_policy_layer *sparse[] = {&global, NULL, &server};
	assert_true(breaker_policy_resolve(&p, sparse, 3, err, sizeof(err)));
	assert_int_equal(p.threshold, 5);

	/* An explicit failure set is kept as written, and checked. */
	struct breaker_policy_layer explicit_failure = {0};
	explicit_failure.fields = BREAKER_FIELD_FAILURE_SET;
	status_set_add_range(&explicit_failure.values.failure, 500, 599);
	const struct breaker_policy_layer *clash[] = {&explicit_failure};
	assert_false(breaker_policy_resolve(&p, clash, 1, err, sizeof(err)));
	assert_non_null(strstr(err, "overlap on 503"));

	/* An ignored 5xx never collides with the derived failure set. */
	struct breaker_policy_layer ignore = {0};
	ignore.fields = BREAKER_FIELD_IGNORE_SET;
	status_set_add(&ignore.values.ignore, 504);
	const struct breaker_policy_layer *ignoring[] = {&ignore};
	assert_true(breaker_policy_resolve(&p, ignoring, 1, err, sizeof(err)));
	assert_int_equal(breaker_outcome(&p, 504), BREAKER_OUTCOME_IGNORED);
}

static void test_names(void **state)
{
	assert_string_equal(breaker_state_name(BREAKER_CLOSED), "closed");
	assert_string_equal(breaker_state_name(BREAKER_OPEN), "open");
	assert_string_equal(breaker_state_name(BREAKER_HALF_OPEN), "half_open");
	assert_string_equal(breaker_outcome_name(BREAKER_OUTCOME_SUCCESS), "success");
	assert_string_equal(breaker_outcome_name(BREAKER_OUTCOME_CLIENT_ERROR), "client_error");
	assert_string_equal(breaker_outcome_name(BREAKER_OUTCOME_BACKPRESSURE), "backpressure");
	assert_string_equal(breaker_outcome_name(BREAKER_OUTCOME_FAILURE), "failure");
	assert_string_equal(breaker_outcome_name(BREAKER_OUTCOME_IGNORED), "ignored");
	struct breaker_event none = {.from = BREAKER_OPEN, .to = BREAKER_OPEN};
	assert_null(breaker_transition_name(&none));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outcome_table),
		cmocka_unit_test(test_outcome_defaults_exhaustive),
		cmocka_unit_test(test_transition_table),
		cmocka_unit_test(test_transition_table_is_complete),
		cmocka_unit_test(test_backpressure_storm_never_opens),
		cmocka_unit_test(test_failures_still_open),
		cmocka_unit_test(test_backpressure_keeps_the_streak),
		cmocka_unit_test(test_half_open_probe_503_closes),
		cmocka_unit_test(test_half_open_probe_503_never_wedges),
		cmocka_unit_test(test_late_outcomes_while_open),
		cmocka_unit_test(test_late_success_closes_when_asked),
		cmocka_unit_test(test_cooldown_runs_from_first_trip),
		cmocka_unit_test(test_late_tick),
		cmocka_unit_test(test_half_open_waits_for_an_answer),
		cmocka_unit_test(test_client_error_is_success),
		cmocka_unit_test(test_dirty_events),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_invalid_policies),
		cmocka_unit_test(test_resolve_replaces),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
