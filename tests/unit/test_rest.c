/*
 * test_rest.c - a worker's own Retry-After (rest.c), as tables: what the
 * header's value reads as; how long a response asks its server to rest
 * (bounds, retry_after_max, 0 = off, outcomes other than backpressure);
 * what a response or a tick does to a rest under way (a longer word
 * extends it, a shorter one changes nothing); and that the breaker itself
 * is never touched. How the ejection cap takes rests is test_ejection.c's;
 * the SPOE argument, test_observe.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/breaker.h"

#define T0 1000000

/* (header value) -> (kind, seconds). */
static void test_parse_table(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		enum retry_after_kind kind;
		uint64_t seconds;
	} cases[] = {
		{"2", RETRY_AFTER_SECONDS, 2},
		{"120", RETRY_AFTER_SECONDS, 120},
		{" 7\t", RETRY_AFTER_SECONDS, 7}, /* blanks around it */
		{"0", RETRY_AFTER_SECONDS, 0},
		{"007", RETRY_AFTER_SECONDS, 7},
		{"3600", RETRY_AFTER_SECONDS, 3600},
		/* Saturates far above any bound, never wraps. */
		{"99999999999999999999999999", RETRY_AFTER_SECONDS, UINT64_MAX / 1000 / 2},
		{"", RETRY_AFTER_ABSENT, 0},
		{"  ", RETRY_AFTER_ABSENT, 0},
		{"-1", RETRY_AFTER_INVALID, 0},
		{"+3", RETRY_AFTER_INVALID, 0},
		{"1.5", RETRY_AFTER_INVALID, 0},
		{"2s", RETRY_AFTER_INVALID, 0},
		{"1 2", RETRY_AFTER_INVALID, 0},
		{"soon", RETRY_AFTER_INVALID, 0},
		{"0x10", RETRY_AFTER_INVALID, 0},
		/* The three forms of an HTTP-date: counted apart, not honoured. */
		{"Wed, 21 Oct 2015 07:28:00 GMT", RETRY_AFTER_DATE, 0},
		{"Sunday, 06-Nov-94 08:49:37 GMT", RETRY_AFTER_DATE, 0},
		{"Sun Nov  6 08:49:37 1994", RETRY_AFTER_DATE, 0},
		/* What res.hdr() leaves of one: it splits values at commas. */
		{"21 Oct 2015 07:28:00 GMT", RETRY_AFTER_DATE, 0},
		{"GMT", RETRY_AFTER_DATE, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t seconds = 42;
		enum retry_after_kind kind =
			retry_after_parse(cases[i].text, strlen(cases[i].text), &seconds);
		if (kind != cases[i].kind || seconds != cases[i].seconds)
			fail_msg("\"%s\": kind %d seconds %llu, expected %d %llu", cases[i].text,
				 (int)kind, (unsigned long long)seconds, (int)cases[i].kind,
				 (unsigned long long)cases[i].seconds);
	}
	/* The length is the caller's: no NUL needed. */
	uint64_t seconds;
	assert_int_equal(retry_after_parse("25garbage", 2, &seconds), RETRY_AFTER_SECONDS);
	assert_int_equal(seconds, 25);
}

/* (outcome, Retry-After seconds, retry_after_max) -> rest asked for. */
static void test_wanted_table(void **state)
{
	(void)state;
	static const struct {
		enum breaker_outcome outcome;
		uint64_t seconds;
		uint64_t max_ms;
		uint64_t rest_ms;
	} cases[] = {
		{BREAKER_OUTCOME_BACKPRESSURE, 2, 10000, 2000},
		{BREAKER_OUTCOME_BACKPRESSURE, 10, 10000, 10000},   /* exactly the bound */
		{BREAKER_OUTCOME_BACKPRESSURE, 3600, 10000, 10000}, /* bounded */
		{BREAKER_OUTCOME_BACKPRESSURE, UINT64_MAX, 10000, 10000},
		{BREAKER_OUTCOME_BACKPRESSURE, 3600, BREAKER_RETRY_AFTER_MAX_LIMIT_MS,
		 BREAKER_RETRY_AFTER_MAX_LIMIT_MS},
		{BREAKER_OUTCOME_BACKPRESSURE, 1, 500, 500}, /* a bound below a second */
		{BREAKER_OUTCOME_BACKPRESSURE, 0, 10000, 0}, /* "come back now" */
		{BREAKER_OUTCOME_BACKPRESSURE, 2, 0, 0},     /* retry_after_max 0: off */
		/* Only a capacity status asks for a rest. */
		{BREAKER_OUTCOME_FAILURE, 2, 10000, 0},
		{BREAKER_OUTCOME_SUCCESS, 2, 10000, 0},
		{BREAKER_OUTCOME_CLIENT_ERROR, 2, 10000, 0},
		{BREAKER_OUTCOME_IGNORED, 2, 10000, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct breaker_policy p;
		breaker_policy_defaults(&p);
		p.retry_after_max_ms = cases[i].max_ms;
		uint64_t got = breaker_rest_wanted_ms(&p, cases[i].outcome, cases[i].seconds);
		if (got != cases[i].rest_ms)
			fail_msg("case %zu: %llu ms, expected %llu", i, (unsigned long long)got,
				 (unsigned long long)cases[i].rest_ms);
	}
	assert_int_equal(breaker_rest_wanted_ms(NULL, BREAKER_OUTCOME_BACKPRESSURE, 2), 0);
}

/* The shipped default is on, and a sane bound. */
static void test_default(void **state)
{
	(void)state;
	struct breaker_policy p;
	breaker_policy_defaults(&p);
	assert_int_equal(p.retry_after_max_ms, BREAKER_DEFAULT_RETRY_AFTER_MAX_MS);
	assert_true(p.retry_after_max_ms > 0 && p.retry_after_max_ms < p.cooldown_ms);
	char err[256];
	assert_true(breaker_policy_validate(&p, err, sizeof(err)));
	p.retry_after_max_ms = BREAKER_RETRY_AFTER_MAX_LIMIT_MS + 1;
	assert_false(breaker_policy_validate(&p, err, sizeof(err)));
	assert_non_null(strstr(err, "retry_after_max"));
}

/* One step of a rest's life, from the breaker as the step before left it:
 * (at, response or tick) -> (change, end, length so far). */
struct rest_step {
	uint64_t at;          /* ms after T0 */
	bool tick;            /* a tick, else a response */
	enum breaker_outcome outcome;
	uint64_t seconds;     /* its Retry-After */
	enum breaker_rest_change change;
	uint64_t until;       /* ms after T0; 0: not resting */
	uint32_t rest_ms;
};

#define BP BREAKER_OUTCOME_BACKPRESSURE

static void test_life_table(void **state)
{
	(void)state;
	static const struct rest_step steps[] = {
		/* Starts: 2 s from the response. */
		{100, false, BP, 2, BREAKER_REST_STARTED, 2100, 2000},
		/* A later end extends it; the start stays. */
		{1100, false, BP, 5, BREAKER_REST_EXTENDED, 6100, 6000},
		/* A shorter word, or the same end, changes nothing. */
		{2100, false, BP, 1, BREAKER_REST_UNCHANGED, 6100, 6000},
		{3100, false, BP, 3, BREAKER_REST_UNCHANGED, 6100, 6000},
		/* A capacity status without a rest, a failure's or a success's
		 * Retry-After: nothing. */
		{3200, false, BP, 0, BREAKER_REST_UNCHANGED, 6100, 6000},
		{3300, false, BREAKER_OUTCOME_FAILURE, 60, BREAKER_REST_UNCHANGED, 6100, 6000},
		{3400, false, BREAKER_OUTCOME_SUCCESS, 60, BREAKER_REST_UNCHANGED, 6100, 6000},
		/* Bounded by retry_after_max (10 s) from the response that asked. */
		{4100, false, BP, 3600, BREAKER_REST_EXTENDED, 14100, 14000},
		/* A tick before the end does nothing; at the end, it ends. */
		{14099, true, BP, 0, BREAKER_REST_UNCHANGED, 14100, 14000},
		{14100, true, BP, 0, BREAKER_REST_ENDED, 0, 0},
		{14200, true, BP, 0, BREAKER_REST_UNCHANGED, 0, 0},
		/* The next one starts afresh. */
		{20000, false, BP, 1, BREAKER_REST_STARTED, 21000, 1000},
	};
	struct breaker_policy p;
	breaker_policy_defaults(&p);
	struct breaker b;
	breaker_init(&b, &p, T0);

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct rest_step *s = &steps[i];
		uint64_t now = T0 + s->at;
		enum breaker_rest_change got =
			s->tick ? breaker_rest_tick(&b, now)
				: breaker_rest_on_response(&b, s->outcome, s->seconds, now);
		uint64_t until = s->until ? T0 + s->until : 0;
		if (got != s->change || b.rest_until_ms != until || b.rest_ms != s->rest_ms)
			fail_msg("step %zu: change %d until %llu rest %u, expected %d %llu %u", i,
				 (int)got, (unsigned long long)b.rest_until_ms, b.rest_ms,
				 (int)s->change, (unsigned long long)until, s->rest_ms);
		assert_int_equal(breaker_is_resting(&b), until != 0);
		assert_int_equal(breaker_rest_left_ms(&b, now), until ? until - now : 0);
		if (until)
			assert_int_equal(breaker_rest_since_ms(&b), until - s->rest_ms);
	}
	assert_int_equal(b.rests, 2); /* starts are counted, extensions not */
}

/* 0 = off: no rest starts, and one under way is left to end on its own. */
static void test_off(void **state)
{
	(void)state;
	struct breaker_policy p;
	breaker_policy_defaults(&p);
	p.retry_after_max_ms = 0;
	struct breaker b;
	breaker_init(&b, &p, T0);
	assert_int_equal(breaker_rest_on_response(&b, BP, 5, T0), BREAKER_REST_UNCHANGED);
	assert_false(breaker_is_resting(&b));
	assert_int_equal(b.rests, 0);
	assert_int_equal(breaker_wake_deadline(&b), BREAKER_NO_DEADLINE);
}

/* Busy is not dead: a rest changes nothing of the breaker - no failure,
 * no transition, the streak and the window as they were - in any state. */
static void test_breaker_untouched(void **state)
{
	(void)state;
	struct breaker_policy p;
	breaker_policy_defaults(&p);
	for (int s = BREAKER_CLOSED; s <= BREAKER_HALF_OPEN; s++) {
		struct breaker b;
		breaker_init(&b, &p, T0);
		if (s == BREAKER_CLOSED) {
			breaker_record_failure(&b, T0);
			breaker_record_failure(&b, T0);
		} else {
			for (uint32_t i = 0; i < p.threshold; i++)
				breaker_record_failure(&b, T0);
			if (s == BREAKER_HALF_OPEN)
				breaker_tick(&b, T0 + p.cooldown_ms);
		}
		assert_int_equal(b.state, s);
		struct breaker before = b;
		bool dirty = breaker_is_dirty(&b);
		uint64_t deadline = breaker_next_deadline(&b);

		uint64_t now = T0 + p.cooldown_ms + 10;
		assert_int_equal(breaker_rest_on_response(&b, BP, 3, now), BREAKER_REST_STARTED);
		assert_int_equal(b.state, before.state);
		assert_int_equal(b.failure_streak, before.failure_streak);
		assert_int_equal(b.window_failures, before.window_failures);
		assert_int_equal(b.window_volume, before.window_volume);
		assert_int_equal(b.state_since_ms, before.state_since_ms);
		assert_int_equal(b.trips, before.trips);
		assert_int_equal(breaker_is_dirty(&b), dirty);
		/* The state's own deadline is unchanged; the wake deadline is the
		 * earlier of it and the rest's end. */
		assert_int_equal(breaker_next_deadline(&b), deadline);
		uint64_t end = now + 3000;
		assert_int_equal(breaker_wake_deadline(&b), deadline < end ? deadline : end);
		/* Its end moves nothing of the state either. */
		assert_int_equal(breaker_rest_tick(&b, end), BREAKER_REST_ENDED);
		assert_int_equal(b.state, before.state);
		assert_int_equal(b.failure_streak, before.failure_streak);
	}
}

/* A resting server is drained: its breaker must not be evicted, or
 * nothing would ever lift the drain. */
static void test_resting_is_not_forgettable(void **state)
{
	(void)state;
	struct breaker_policy p;
	breaker_policy_defaults(&p);
	struct breaker b;
	breaker_init(&b, &p, T0);
	assert_true(breaker_is_forgettable(&b));
	breaker_rest_on_response(&b, BP, 1, T0);
	assert_false(breaker_is_forgettable(&b));
	assert_false(breaker_is_dirty(&b)); /* a success changes nothing of it */
	breaker_rest_tick(&b, T0 + 1000);
	assert_true(breaker_is_forgettable(&b));
}

struct seen_events {
	unsigned calls;
	struct breaker_event last;
};

static void on_event(struct breaker_table_entry *e, const struct breaker_event *ev, void *ctx)
{
	struct seen_events *seen = ctx;
	(void)e;
	seen->calls++;
	seen->last = *ev;
}

/* The table's timer walk: the rest's end is a deadline, and its end an
 * event of its own (no transition). */
static void test_table_tick(void **state)
{
	(void)state;
	struct breaker_table t;
	char err[256];
	assert_true(breaker_table_init(&t, 4, err, sizeof(err)));
	enum breaker_table_status st;
	struct breaker_table_entry *e = breaker_table_get(&t, "be", 2, "w1", 2, T0, &st);
	assert_non_null(e);
	assert_int_equal(breaker_table_next_deadline(&t), BREAKER_NO_DEADLINE);
	breaker_rest_on_response(&e->breaker, BP, 2, T0);
	assert_int_equal(breaker_table_next_deadline(&t), T0 + 2000);

	struct seen_events seen = {0};
	assert_int_equal(breaker_table_tick(&t, T0 + 1999, on_event, &seen), T0 + 2000);
	assert_int_equal(seen.calls, 0);
	assert_int_equal(breaker_table_tick(&t, T0 + 2000, on_event, &seen), BREAKER_NO_DEADLINE);
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.last.rest, BREAKER_REST_ENDED);
	assert_false(breaker_event_is_transition(&seen.last));
	assert_false(breaker_is_resting(&e->breaker));
	breaker_table_free(&t);
}

static void test_names(void **state)
{
	(void)state;
	assert_null(breaker_rest_change_name(BREAKER_REST_UNCHANGED));
	assert_string_equal(breaker_rest_change_name(BREAKER_REST_STARTED), "started");
	assert_string_equal(breaker_rest_change_name(BREAKER_REST_EXTENDED), "extended");
	assert_string_equal(breaker_rest_change_name(BREAKER_REST_ENDED), "ended");
}

/* A word is kept, not acted on: the longer one stands; a success drops
 * it; the verdict starts a rest until the end it asked for (never a full
 * word from the verdict), or drops one whose end has passed; the tick
 * drops an expired word with nothing to undo; a resting worker's word
 * extends its rest as before. */
static void test_words(void **state)
{
	(void)state;
	struct breaker_policy p;
	breaker_policy_defaults(&p);
	struct breaker b;
	breaker_init(&b, &p, T0);

	assert_int_equal(breaker_rest_word(&b, BP, 2, T0), BREAKER_REST_ASKED);
	assert_true(breaker_rest_word_kept(&b));
	assert_false(breaker_is_resting(&b));
	assert_int_equal(breaker_rest_left_ms(&b, T0), 0);
	assert_false(breaker_is_forgettable(&b));
	assert_int_equal(breaker_wake_deadline(&b), T0 + 2000);
	/* A shorter word changes nothing, a longer one moves the end. */
	assert_int_equal(breaker_rest_word(&b, BP, 1, T0 + 100), BREAKER_REST_ASKED);
	assert_int_equal(b.rest_until_ms, T0 + 2000);
	assert_int_equal(breaker_rest_word(&b, BP, 3, T0 + 100), BREAKER_REST_ASKED);
	assert_int_equal(b.rest_until_ms, T0 + 3100);
	/* The worker answers: the word goes. */
	assert_int_equal(breaker_rest_answered(&b), BREAKER_REST_DROPPED);
	assert_false(breaker_rest_word_kept(&b));
	assert_int_equal(breaker_rest_answered(&b), BREAKER_REST_UNCHANGED);
	assert_int_equal(breaker_rest_confirm(&b, T0 + 200), BREAKER_REST_UNCHANGED);
	assert_true(breaker_is_forgettable(&b));

	/* Confirmed: a rest until the word's end. */
	breaker_rest_word(&b, BP, 2, T0 + 1000);
	assert_int_equal(breaker_rest_confirm(&b, T0 + 1400), BREAKER_REST_STARTED);
	assert_true(breaker_is_resting(&b));
	assert_int_equal(b.rests, 1);
	assert_int_equal(breaker_rest_left_ms(&b, T0 + 1400), 1600);
	/* Resting, a word extends the rest, and its end ends it. */
	assert_int_equal(breaker_rest_word(&b, BP, 3, T0 + 1500), BREAKER_REST_EXTENDED);
	assert_int_equal(b.rest_until_ms, T0 + 4500);
	assert_int_equal(breaker_rest_tick(&b, T0 + 4499), BREAKER_REST_UNCHANGED);
	assert_true(breaker_is_resting(&b));
	assert_int_equal(breaker_rest_tick(&b, T0 + 4500), BREAKER_REST_ENDED);
	assert_false(breaker_is_resting(&b));

	/* A success ends a rest under way: the worker answers, so it does not
	 * refuse everything (a rest the ejection cap held back would
	 * otherwise drain it, serving, once room came). */
	breaker_rest_word(&b, BP, 2, T0 + 4600);
	assert_int_equal(breaker_rest_confirm(&b, T0 + 4700), BREAKER_REST_STARTED);
	assert_int_equal(b.rests, 2);
	assert_int_equal(breaker_rest_word(&b, BP, 4, T0 + 4800), BREAKER_REST_EXTENDED);
	assert_int_equal(breaker_rest_answered(&b), BREAKER_REST_ENDED);
	assert_false(breaker_is_resting(&b));
	assert_false(breaker_rest_word_kept(&b));
	assert_int_equal(breaker_rest_answered(&b), BREAKER_REST_UNCHANGED);
	/* Refused again with a word: only a word, to be confirmed anew. */
	assert_int_equal(breaker_rest_word(&b, BP, 2, T0 + 4900), BREAKER_REST_ASKED);
	assert_false(breaker_is_resting(&b));
	breaker_rest_answered(&b);

	/* A word whose end passed before its verdict is never applied late. */
	breaker_rest_word(&b, BP, 1, T0 + 5000);
	assert_int_equal(breaker_rest_confirm(&b, T0 + 6000), BREAKER_REST_DROPPED);
	assert_false(breaker_is_resting(&b));
	assert_int_equal(b.rests, 2);
	/* And the tick drops an expired word quietly. */
	breaker_rest_word(&b, BP, 1, T0 + 7000);
	assert_int_equal(breaker_rest_tick(&b, T0 + 8000), BREAKER_REST_UNCHANGED);
	assert_false(breaker_rest_word_kept(&b));
	assert_int_equal(breaker_wake_deadline(&b), BREAKER_NO_DEADLINE);
	/* Only a capacity status's word counts, and not with the rule off. */
	assert_int_equal(breaker_rest_word(&b, BREAKER_OUTCOME_FAILURE, 2, T0), BREAKER_REST_UNCHANGED);
	p.retry_after_max_ms = 0;
	assert_int_equal(breaker_rest_word(&b, BP, 2, T0), BREAKER_REST_UNCHANGED);
	assert_false(breaker_rest_word_kept(&b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_wanted_table),
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_life_table),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_breaker_untouched),
		cmocka_unit_test(test_resting_is_not_forgettable),
		cmocka_unit_test(test_table_tick),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
