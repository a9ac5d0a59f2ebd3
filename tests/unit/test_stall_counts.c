/*
 * test_stall_counts.c - the counted stalled rule (stall_watch.c), on by
 * default, against traffic shaped like an inference fleet: a backend of
 * four workers behind round robin, requests arriving at random, looked at
 * every 500 ms as the HAProxy link looks (per server: requests sent, heads,
 * requests in flight, neighbours summed). Each table row is one shape; a
 * healthy worker must never be opened over the whole run, a hung one must
 * be, and the time it took is checked against a bound.
 *
 * Deterministic: a fixed-seed generator, time in simulated milliseconds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/breaker.h"
#include "core/silence_odds.h"
#include "stall_looks.h"

#define T0 1000000
#define LOOK_MS 500
#define WORKERS 4
#define MAX_REQUESTS 40000
#define NEVER UINT64_MAX

enum shape {
	HEALTHY,
	HUNG,   /* accepts, never answers; `timeout server` (5 min) ends it */
	SLOW,   /* twice the answer times of the others */
	IDLE,   /* sent nothing until half the run, then as the others */
};

enum answers {
	LONG_ANSWERS, /* non-streaming: the head when generation ends, 1-60 s */
	STREAMS,      /* the head at the first token (0.1-2 s), then 5-60 s */
	FIXED_TEN,    /* every answer takes exactly 10 s */
};

struct request {
	uint8_t worker;
	uint64_t sent, head, end;
};

static struct request requests[MAX_REQUESTS];
static uint64_t rng_state;

static double uniform(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) / (double)(1ull << 53);
}

/* Between lo and hi seconds with a long tail: six in ten in the first
 * tenth of the range, the rest spread over all of it. */
static uint64_t long_tailed_ms(double lo, double hi)
{
	double v = uniform() < 0.6 ? lo + (hi - lo) * 0.1 * uniform() : lo + (hi - lo) * uniform();
	return (uint64_t)(v * 1000);
}

static void answer_times(struct request *q, enum answers a, enum shape s)
{
	uint64_t head, end;
	switch (a) {
	case LONG_ANSWERS:
		head = end = long_tailed_ms(1, 60);
		break;
	case STREAMS:
		head = 100 + (uint64_t)(1900 * uniform());
		end = head + 5000 + (uint64_t)(55000 * uniform());
		break;
	default:
		head = end = 10000;
		break;
	}
	if (s == SLOW) {
		head *= 2;
		end *= 2;
	}
	if (s == HUNG) {
		q->head = NEVER;
		q->end = q->sent + 300000;
		return;
	}
	q->head = q->sent + head;
	q->end = q->sent + end;
}

struct run {
	enum answers answers;
	double rate_per_s; /* requests a second, the whole backend */
	enum shape shapes[WORKERS];
	uint64_t duration_ms;
	/* Out: when each worker was opened (0: never). */
	uint64_t opened[WORKERS];
};

static void simulate(struct run *run)
{
	struct stall_looks looks;
	size_t nb = 0;
	unsigned next_rr = 0;

	rng_state = 42;
	assert_true(stall_looks_start(&looks, WORKERS, T0));
	memset(run->opened, 0, sizeof(run->opened));
	double next_arrival = 0;
	for (uint64_t now = LOOK_MS; now <= run->duration_ms; now += LOOK_MS) {
		/* The arrivals of this interval, round robin over the servers
		 * that take traffic (an IDLE one only from half the run). */
		while (next_arrival < (double)now && nb < MAX_REQUESTS) {
			uint64_t at = (uint64_t)next_arrival;
			for (int tries = 0; tries < WORKERS; tries++) {
				unsigned k = next_rr++ % WORKERS;
				if (run->opened[k] ||
				    (run->shapes[k] == IDLE && at < run->duration_ms / 2))
					continue;
				requests[nb].worker = (uint8_t)k;
				requests[nb].sent = at;
				answer_times(&requests[nb], run->answers, run->shapes[k]);
				nb++;
				break;
			}
			/* exponential gaps: -ln(u)/rate, from a short series */
			double u = uniform(), gap = 0, term = 1 - u;
			for (int n = 1; n < 40; n++) {
				gap += term / n;
				term *= 1 - u;
			}
			next_arrival += gap * 1000.0 / run->rate_per_s;
		}
		uint64_t sent[WORKERS] = {0}, heads[WORKERS] = {0}, scur[WORKERS] = {0};
		for (size_t i = 0; i < nb; i++) {
			const struct request *q = &requests[i];
			if (q->sent > now)
				continue;
			sent[q->worker]++;
			heads[q->worker] += q->head <= now;
			scur[q->worker] += q->end > now;
		}
		struct breaker_event ev[WORKERS];
		stall_looks_judge(&looks, sent, heads, scur, now > LOOK_MS, T0 + now, ev);
		for (int k = 0; k < WORKERS; k++) {
			if (ev[k].to == BREAKER_OPEN && ev[k].from != BREAKER_OPEN &&
			    !run->opened[k]) {
				assert_int_equal(ev[k].trip_rule, BREAKER_TRIP_STALLED);
				run->opened[k] = now;
			}
		}
	}
	stall_looks_end(&looks);
}

static void expect(struct run *run, const char *what, uint64_t hung_found_within_ms)
{
	simulate(run);
	for (int k = 0; k < WORKERS; k++) {
		if (run->shapes[k] == HUNG) {
			print_message("%s: hung worker opened after %llu ms\n", what,
				      (unsigned long long)run->opened[k]);
			assert_true(run->opened[k] != 0);
			assert_true(run->opened[k] <= hung_found_within_ms);
		} else {
			if (run->opened[k])
				print_message("%s: healthy w%d opened at %llu ms\n", what, k,
					      (unsigned long long)run->opened[k]);
			assert_int_equal(run->opened[k], 0);
		}
	}
}

#define TEN_MINUTES 600000

static void test_long_answers(void **state)
{
	(void)state;
	struct run healthy = {LONG_ANSWERS, 8, {HEALTHY, HEALTHY, HEALTHY, HEALTHY}, TEN_MINUTES, {0}};
	expect(&healthy, "long answers, healthy", 0);
	struct run hung = {LONG_ANSWERS, 8, {HEALTHY, HUNG, HEALTHY, HEALTHY}, TEN_MINUTES, {0}};
	/* 16 requests at 2 a second; then the neighbours' requests in
	 * flight at the moment must have answered (up to the longest answer,
	 * 60 s) and nine in ten of those sent since (about as long again):
	 * within three minutes, where `timeout server` would take five. */
	expect(&hung, "long answers, one hung", 180000);
}

static void test_streams(void **state)
{
	(void)state;
	struct run healthy = {STREAMS, 8, {HEALTHY, HEALTHY, HEALTHY, HEALTHY}, TEN_MINUTES, {0}};
	expect(&healthy, "streams, healthy", 0);
	struct run hung = {STREAMS, 8, {HEALTHY, HEALTHY, HUNG, HEALTHY}, TEN_MINUTES, {0}};
	/* Heads within 2 s: found in seconds, the streams' length aside. */
	expect(&hung, "streams, one hung", 15000);
}

static void test_low_traffic(void **state)
{
	(void)state;
	struct run healthy = {LONG_ANSWERS, 0.4, {HEALTHY, HEALTHY, HEALTHY, HEALTHY},
			      3 * TEN_MINUTES, {0}};
	expect(&healthy, "low traffic, healthy", 0);
	struct run hung = {LONG_ANSWERS, 0.4, {HUNG, HEALTHY, HEALTHY, HEALTHY}, 3 * TEN_MINUTES, {0}};
	/* 16 requests at one every 10 s: later, never looser. */
	expect(&hung, "low traffic, one hung", 3 * TEN_MINUTES);
}

static void test_one_slow_worker(void **state)
{
	(void)state;
	struct run slow = {LONG_ANSWERS, 8, {HEALTHY, SLOW, HEALTHY, HEALTHY}, TEN_MINUTES, {0}};
	expect(&slow, "one slow worker", 0);
	struct run slow_streams = {STREAMS, 8, {SLOW, HEALTHY, HEALTHY, HEALTHY}, TEN_MINUTES, {0}};
	expect(&slow_streams, "one slow streaming worker", 0);
}

static void test_back_from_idle(void **state)
{
	(void)state;
	/* Every answer takes 10 s; one worker gets its first requests half
	 * way: its neighbours have long been answering, but not requests
	 * sent after its first one. */
	struct run idle = {FIXED_TEN, 8, {HEALTHY, HEALTHY, IDLE, HEALTHY}, TEN_MINUTES, {0}};
	expect(&idle, "back from idle", 0);
}

static void test_global_stall(void **state)
{
	(void)state;
	struct run all = {LONG_ANSWERS, 8, {HUNG, HUNG, HUNG, HUNG}, TEN_MINUTES, {0}};
	simulate(&all);
	for (int k = 0; k < WORKERS; k++)
		assert_int_equal(all.opened[k], 0);
}

static void test_off(void **state)
{
	(void)state;
	struct breaker_policy p;
	struct breaker b;
	struct stall_watch w = {0};
	breaker_policy_defaults(&p);
	assert_int_equal(p.stalled_requests, 16);
	assert_int_equal(p.stalled_share, 80);
	p.stalled_requests = 0;
	breaker_init(&b, &p, T0);
	struct stall_look l = {.baseline = true, .now_ms = T0};
	stall_count_look(&w, &l);
	l = (struct stall_look){.baseline = true, .sent = 100, .nb_sent = 100, .nb_answered = 100,
				.now_ms = T0 + 10000};
	stall_count_look(&w, &l);
	assert_false(breaker_is_stalled_by_counts(&b, &w, T0 + 10000));
	p.stalled_requests = 16;
	assert_true(breaker_is_stalled_by_counts(&b, &w, T0 + 10000));
	/* The counted form at its thresholds: 16 requests, 80 % of 32. The
	 * neighbours' answers to older requests are not theirs: 25 of 32 is
	 * below the share, and the silence reading (silence_odds.c) puts the
	 * chance of that at 7e-8, above its bound. */
	w.sent = 16;
	w.nb_sent = w.nb_answered = 32;
	w.nb_pending_then = 7;
	assert_false(breaker_is_stalled_by_counts(&b, &w, T0 + 10000));
	w.nb_pending_then = 6;
	assert_true(breaker_is_stalled_by_counts(&b, &w, T0 + 10000));
	/* The silence reading below 16 requests: 5 silent against 100
	 * answered is below 5e-9, 4 is not. */
	w.nb_pending_then = 0;
	w.nb_sent = w.nb_answered = 100;
	w.sent = 5;
	assert_true(breaker_is_stalled_by_counts(&b, &w, T0 + 10000));
	/* ... once the silence lasted 5 s: a pause is no hang. */
	assert_false(breaker_is_stalled_by_counts(&b, &w, T0 + SILENCE_MIN_WATCH_MS - 1));
	assert_true(breaker_is_stalled_by_counts(&b, &w, T0 + SILENCE_MIN_WATCH_MS));
	w.sent = 4;
	assert_false(breaker_is_stalled_by_counts(&b, &w, T0 + 10000));
	/* It trusts the neighbours' share from 16 answers on; below, and
	 * below the counted form's 32 requests of theirs, nothing. */
	w.sent = 100;
	w.nb_sent = w.nb_answered = 15;
	assert_false(breaker_is_stalled_by_counts(&b, &w, T0 + 10000));
	w.nb_sent = w.nb_answered = 16;
	assert_true(breaker_is_stalled_by_counts(&b, &w, T0 + 10000));
	/* not before a second */
	assert_false(breaker_is_stalled_by_counts(&b, &w, T0 + STALL_MIN_WATCH_MS - 1));
}

/* A worker much slower than its neighbours: 16 requests unanswered for
 * 10 s while theirs are answered within the first second. Before it ever
 * answered it reads as hung; once it answered after 10 s of silence, a
 * silence must last 20 s to be a stall. */
static void test_proven_silence(void **state)
{
	(void)state;
	struct breaker_policy p;
	struct breaker b;
	struct stall_watch w = {0};
	breaker_policy_defaults(&p);
	breaker_init(&b, &p, T0);
	struct stall_look l = {.baseline = true, .now_ms = T0};
	stall_count_look(&w, &l);
	l = (struct stall_look){.baseline = true, .sent = 16, .nb_sent = 48, .nb_answered = 48,
				.now_ms = T0 + 1500};
	stall_count_look(&w, &l);
	assert_true(breaker_is_stalled_by_counts(&b, &w, T0 + 1500)); /* no history yet */
	/* It answers, 10 s after the moment: alive, and that slow. */
	l = (struct stall_look){.baseline = true, .answered = true, .now_ms = T0 + 10000};
	stall_count_look(&w, &l);
	assert_int_equal(w.proven_silence_ms, 10000);
	/* The next 16, unanswered 15 s while the neighbours answer: not yet. */
	l = (struct stall_look){.baseline = true, .sent = 16, .nb_sent = 48, .nb_answered = 48,
				.now_ms = T0 + 25000};
	stall_count_look(&w, &l);
	assert_false(breaker_is_stalled_by_counts(&b, &w, T0 + 25000));
	/* Twice its proven silence, still none: a stall. */
	assert_true(breaker_is_stalled_by_counts(&b, &w, T0 + 30000));
	/* A shorter silence that ends in an answer leaves the proof as it was. */
	l = (struct stall_look){.baseline = true, .answered = true, .now_ms = T0 + 31000};
	stall_count_look(&w, &l);
	assert_int_equal(w.proven_silence_ms, 21000);
	l = (struct stall_look){.baseline = true, .sent = 4, .now_ms = T0 + 32000};
	stall_count_look(&w, &l);
	l = (struct stall_look){.baseline = true, .answered = true, .now_ms = T0 + 33000};
	stall_count_look(&w, &l);
	assert_int_equal(w.proven_silence_ms, 21000);
}

/* A worker answering whole after 10 s among streaming neighbours, opened
 * before its first answer: its 16 requests are answered while it is
 * half-open, the first of those answers (over SPOP) closes it before the
 * look that counts the heads, and nothing was sent to it in that state.
 * The silence its answers ended is still proven, from the look since
 * which its requests were in flight unanswered. */
static void test_answers_after_a_trip_prove_silence(void **state)
{
	(void)state;
	struct breaker_policy p;
	struct breaker_table t;
	struct stall_watch w = {0};
	enum breaker_table_status status;
	char err[128];

	breaker_policy_defaults(&p);
	assert_true(breaker_table_init(&t, 8, err, sizeof(err)));
	struct breaker_table_entry *e = breaker_table_get(&t, "be", 2, "w1", 2, T0, &status);
	assert_non_null(e);
	breaker_set_policy(&e->breaker, &p);
	struct stall_look l = {.baseline = true, .now_ms = T0};
	breaker_table_look_in_flight(&t, e, &w, false, false, T0, &l);
	l = (struct stall_look){.baseline = true, .sent = 16, .nb_sent = 48, .nb_answered = 48,
				.now_ms = T0 + 500};
	breaker_table_look_in_flight(&t, e, &w, true, false, T0 + 500, &l);
	/* Opened, then half-open; its requests still in flight. */
	e->breaker.state = BREAKER_HALF_OPEN;
	e->breaker.state_since_ms = T0 + 2500;
	for (uint64_t at = T0 + 1000; at <= T0 + 10000; at += 500) {
		l = (struct stall_look){.baseline = true, .now_ms = at};
		breaker_table_look_in_flight(&t, e, &w, true, false, at, &l);
	}
	/* The first answer, over SPOP at T0 + 10400: closed. */
	e->breaker.state = BREAKER_CLOSED;
	e->breaker.state_since_ms = T0 + 10400;
	l = (struct stall_look){.baseline = true, .answered = true, .now_ms = T0 + 10500};
	breaker_table_look_in_flight(&t, e, &w, true, true, T0 + 10500, &l);
	assert_int_equal(w.proven_silence_ms, 10000);
	/* Its next 12 requests, unanswered for 10 s while its neighbours
	 * answer 36: below the bound, but shorter than twice the proof. */
	l = (struct stall_look){.baseline = true, .sent = 12, .nb_sent = 36, .nb_answered = 36,
				.now_ms = T0 + 11000};
	breaker_table_look_in_flight(&t, e, &w, true, false, T0 + 11000, &l);
	for (uint64_t at = T0 + 11500; at <= T0 + 30000; at += 500) {
		l = (struct stall_look){.baseline = true, .now_ms = at};
		struct breaker_event ev = breaker_table_look_in_flight(&t, e, &w, true, false, at, &l);
		assert_int_equal(ev.to, BREAKER_CLOSED);
	}
	/* Twice the proof, still none: a stall. */
	l = (struct stall_look){.baseline = true, .now_ms = T0 + 31000};
	struct breaker_event ev = breaker_table_look_in_flight(&t, e, &w, true, false, T0 + 31000, &l);
	assert_int_equal(ev.to, BREAKER_OPEN);
	breaker_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_long_answers),
		cmocka_unit_test(test_streams),
		cmocka_unit_test(test_low_traffic),
		cmocka_unit_test(test_one_slow_worker),
		cmocka_unit_test(test_back_from_idle),
		cmocka_unit_test(test_global_stall),
		cmocka_unit_test(test_proven_silence),
		cmocka_unit_test(test_answers_after_a_trip_prove_silence),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
