/*
 * test_breaker_stalled.c - a hung worker (stalled_after): requests in
 * flight there, at every look, with no response for that long, while
 * another server of its backend answers, opens its breaker; a request
 * after an idle stretch does not, nor a slow worker that still answers,
 * nor a backend that hangs as a whole, nor anything with the rule off.
 *
 * Looks go through breaker_table_look_in_flight(), the path HAProxy's
 * looks take; a server's answers since the previous look are noted first,
 * as the HAProxy link does with the counters of one `show stat` row. Loops
 * are bounded in steps.
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
#include "breaker_allows.h"

#define T0 1000000  /* an arbitrary monotonic start: not 0 */
#define LOOK_MS 250 /* the poll interval */
#define STALLED_AFTER_MS 1000
#define LIMIT_MS 60000 /* far beyond any expected trip */

static struct breaker_policy policy;

static int setup(void **state)
{
	static struct breaker_table t;
	char err[128];

	breaker_policy_defaults(&policy);
	policy.stalled_after_ms = STALLED_AFTER_MS;
	assert_true(breaker_table_init(&t, 64, err, sizeof(err)));
	*state = &t;
	return 0;
}

static int teardown(void **state)
{
	breaker_table_free(*state);
	return 0;
}

static struct breaker_table_entry *server(struct breaker_table *t, const char *srv)
{
	enum breaker_table_status status;
	struct breaker_table_entry *e = breaker_table_get(t, "be", 2, srv, strlen(srv), T0, &status);
	assert_non_null(e);
	breaker_set_policy(&e->breaker, &policy);
	return e;
}

/* What one server does between two looks: requests in flight at the
 * look, and whether it answered any since the previous one. */
struct look {
	bool in_flight;
	bool answered;
};
typedef struct look (*behaviour_fn)(unsigned step);

/* The step from which the hanging ones hang: they serve before it. */
#define HANGS_AT 20

static struct look serving(unsigned step)
{
	(void)step;
	return (struct look){.in_flight = true, .answered = true};
}

static struct look hangs(unsigned step)
{
	return (struct look){.in_flight = true, .answered = step < HANGS_AT};
}

/* Idle, then one request that takes three looks (750 ms, under
 * stalled_after) and is answered, then idle again. */
static struct look idle_then_one_request(unsigned step)
{
	return (struct look){.in_flight = step >= HANGS_AT && step < HANGS_AT + 3,
			     .answered = step == HANGS_AT + 3};
}

/* Always busy, slow: an answer every fourth look (1 s apart, never a
 * full stalled_after of silence counted from a look). */
static struct look slow_but_answering(unsigned step)
{
	return (struct look){.in_flight = true, .answered = step % 4 == 0};
}

static struct look idle(unsigned step)
{
	(void)step;
	return (struct look){.in_flight = false, .answered = false};
}

/* One look at one server, as the HAProxy link takes it: its answers first
 * (a success of the backend, stamped with the look's time), then the
 * in-flight judgement. */
static struct breaker_event look_at(struct breaker_table *t, const char *srv,
				    struct stall_watch *w, struct look l, uint64_t now)
{
	struct breaker_table_entry *e = server(t, srv);
	if (l.answered)
		breaker_table_note_outcome(t, e, BREAKER_OUTCOME_SUCCESS, now);
	return breaker_table_look_in_flight(t, e, w, l.in_flight, l.answered, now, NULL);
}

/* Milliseconds from HANGS_AT's look until w1 stops admitting, or 0 if it
 * still admits after LIMIT_MS. */
static uint64_t time_to_open(struct breaker_table *t, behaviour_fn w1, behaviour_fn w2)
{
	struct stall_watch watch1 = {0}, watch2 = {0};

	for (unsigned step = 0; step <= LIMIT_MS / LOOK_MS; step++) {
		uint64_t now = T0 + (uint64_t)step * LOOK_MS;
		look_at(t, "w1", &watch1, w1(step), now);
		look_at(t, "w2", &watch2, w2(step), now);
		if (!breaker_would_allow(&server(t, "w1")->breaker))
			return now - (T0 + HANGS_AT * LOOK_MS);
	}
	return 0;
}

/* The specification: (w1, w2) => whether w1 opens, and when. */
static const struct {
	const char *what;
	behaviour_fn w1, w2;
	bool opens;
} cases[] = {
	{"a hung worker beside a serving one opens", hangs, serving, true},
	{"a hung worker beside an idle one does not: nobody answered", hangs, idle, false},
	{"a request after an idle stretch, answered in time, does not", idle_then_one_request,
	 serving, false},
	{"a slow worker that still answers does not", slow_but_answering, serving, false},
	{"a backend that hangs as a whole does not", hangs, hangs, false},
};

static void test_stalled_table(void **state)
{
	struct breaker_table *t = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[128];
		breaker_table_free(t);
		assert_true(breaker_table_init(t, 64, err, sizeof(err)));
		uint64_t opened = time_to_open(t, cases[i].w1, cases[i].w2);
		print_message("%s: %s after %llu ms\n", cases[i].what,
			      opened ? "opened" : "not opened", (unsigned long long)opened);
		if (!cases[i].opens) {
			assert_int_equal(opened, 0);
			continue;
		}
		/* Never before stalled_after from the first silent look;
		 * found within a look or two of it. */
		assert_true(opened >= STALLED_AFTER_MS);
		assert_true(opened <= STALLED_AFTER_MS + 2 * LOOK_MS);
		const struct breaker *b = &server(t, "w1")->breaker;
		assert_int_equal(b->state, BREAKER_OPEN);
		assert_int_equal(b->last_trip_rule, BREAKER_TRIP_STALLED);
		assert_int_equal(b->trips_in_a_row, 1);
		assert_true(breaker_would_allow(&server(t, "w2")->breaker));
	}
	assert_string_equal(breaker_trip_rule_name(BREAKER_TRIP_STALLED), "stalled");
}

/* Off unless asked for: the defaults never open a hung worker this way. */
static void test_off_by_default(void **state)
{
	struct breaker_table *t = *state;

	breaker_policy_defaults(&policy);
	assert_int_equal(policy.stalled_after_ms, 0);
	assert_int_equal(time_to_open(t, hangs, serving), 0);
}

/* An answer ends the watch; the next silent look starts a new one, and
 * the time counts from there. */
static void test_an_answer_resets(void **state)
{
	struct breaker_table *t = *state;
	struct breaker_table_entry *e = server(t, "w1");
	struct stall_watch w = {0};

	stall_watch_look(&w, true, false, T0);
	assert_int_equal(w.since_ms, T0);
	stall_watch_look(&w, true, false, T0 + 500);
	assert_int_equal(w.since_ms, T0); /* still the first silent look */
	stall_watch_look(&w, true, true, T0 + 900);
	assert_int_equal(w.since_ms, 0);
	stall_watch_look(&w, true, false, T0 + 1000);
	assert_int_equal(w.since_ms, T0 + 1000);
	/* A neighbour answered after the new start, but the new silence is
	 * short: not stalled; a full stalled_after later it is. */
	uint64_t others = T0 + 1100;
	assert_false(breaker_is_stalled(&e->breaker, &w, T0 + 1000 + STALLED_AFTER_MS - 1, others));
	assert_true(breaker_is_stalled(&e->breaker, &w, T0 + 1000 + STALLED_AFTER_MS, others));
	/* Nothing in flight ends it too. */
	stall_watch_look(&w, false, false, T0 + 2500);
	assert_int_equal(w.since_ms, 0);
	assert_false(breaker_is_stalled(&e->breaker, &w, T0 + 5000, others));
}

/* A neighbour's answer stamped at the very look the watch began may
 * predate this server's requests: only a later one counts. */
static void test_neighbour_answer_must_come_after_the_start(void **state)
{
	struct breaker_table *t = *state;
	struct breaker_table_entry *e = server(t, "w1");
	struct stall_watch w = {.since_ms = T0};

	assert_false(breaker_is_stalled(&e->breaker, &w, T0 + 10 * STALLED_AFTER_MS, T0));
	assert_false(breaker_is_stalled(&e->breaker, &w, T0 + 10 * STALLED_AFTER_MS, T0 - 1));
	assert_false(breaker_is_stalled(&e->breaker, &w, T0 + 10 * STALLED_AFTER_MS, 0));
	assert_true(breaker_is_stalled(&e->breaker, &w, T0 + 10 * STALLED_AFTER_MS, T0 + 1));
}

/*
 * Half-open: the requests hung before the trip are still in flight when
 * the cool-down ends, yet they are no verdict on the probe - the state is
 * judged on its own time. A half-open stretch of stalled_after with
 * nothing answered, neighbours serving, reopens (one more trip in a row);
 * an answer closes as usual.
 */
static void test_half_open_stalled_reopens(void **state)
{
	struct breaker_table *t = *state;
	struct stall_watch w1 = {0}, w2 = {0};

	assert_true(time_to_open(t, hangs, serving) > 0);
	struct breaker *b = &server(t, "w1")->breaker;
	uint64_t now = breaker_next_deadline(b);
	breaker_tick(b, now);
	assert_int_equal(b->state, BREAKER_HALF_OPEN);

	struct breaker_event ev = {0};
	uint64_t half_open_at = now;
	/* The watch has run all along the open time. */
	look_at(t, "w1", &w1, hangs(HANGS_AT), half_open_at - LOOK_MS);
	for (unsigned i = 0; i <= LIMIT_MS / LOOK_MS && b->state == BREAKER_HALF_OPEN; i++) {
		now = half_open_at + (uint64_t)i * LOOK_MS;
		look_at(t, "w2", &w2, serving(i), now);
		ev = look_at(t, "w1", &w1, hangs(HANGS_AT), now);
	}
	assert_int_equal(b->state, BREAKER_OPEN);
	assert_int_equal(ev.from, BREAKER_HALF_OPEN);
	assert_int_equal(ev.trip_rule, BREAKER_TRIP_STALLED);
	assert_true(now - half_open_at >= STALLED_AFTER_MS);
	assert_true(now - half_open_at <= STALLED_AFTER_MS + LOOK_MS);
	assert_int_equal(b->trips_in_a_row, 2);

	/* Recovered: the probe answers, and the breaker closes. */
	now = breaker_next_deadline(b);
	breaker_tick(b, now);
	assert_int_equal(b->state, BREAKER_HALF_OPEN);
	look_at(t, "w2", &w2, serving(0), now);
	ev = look_at(t, "w1", &w1, (struct look){.in_flight = true, .answered = true}, now);
	assert_int_equal(b->state, BREAKER_HALF_OPEN); /* a look alone closes nothing */
	ev = breaker_table_record_response(t, server(t, "w1"), BREAKER_OUTCOME_SUCCESS, now);
	assert_int_equal(ev.to, BREAKER_CLOSED);
}

/* Layered like every policy key: a backend turns it on, one of its
 * servers (a known slow one) off again. */
static void test_layers(void **state)
{
	(void)state;
	struct breaker_policy_layer global = {0}, backend = {0}, slow = {0};
	struct breaker_policy out;
	char err[256];

	backend.fields = BREAKER_FIELD_STALLED_AFTER;
	backend.values.stalled_after_ms = 500;
	slow.fields = BREAKER_FIELD_STALLED_AFTER;
	slow.values.stalled_after_ms = 0;
	const struct breaker_policy_layer *to_backend[] = {&global, &backend};
	const struct breaker_policy_layer *to_slow[] = {&global, &backend, &slow};
	const struct breaker_policy_layer *to_global[] = {&global};
	assert_true(breaker_policy_resolve(&out, to_global, 1, err, sizeof(err)));
	assert_int_equal(out.stalled_after_ms, 0);
	assert_true(breaker_policy_resolve(&out, to_backend, 2, err, sizeof(err)));
	assert_int_equal(out.stalled_after_ms, 500);
	assert_true(breaker_policy_resolve(&out, to_slow, 3, err, sizeof(err)));
	assert_int_equal(out.stalled_after_ms, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stalled_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off_by_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_an_answer_resets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_neighbour_answer_must_come_after_the_start,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_half_open_stalled_reopens, setup, teardown),
		cmocka_unit_test(test_layers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
