/*
 * test_breaker_wedged.c - a worker wedged at 503 (wedged_after): only
 * capacity statuses for that long, with the minimum volume, while another
 * server of its backend succeeds, opens its breaker; a backend overloaded
 * as a whole never does, nor a busy worker that still serves now and then,
 * nor a server whose neighbours are in another backend.
 *
 * Responses go through breaker_table_record_response(), the path SPOP
 * takes. Loops run on observable state (breaker_would_allow) with a bound
 * in time, never on a hard-coded count.
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

#define T0 1000000 /* an arbitrary monotonic start: not 0 */
#define STEP_MS 100

static struct breaker_policy policy;

static int setup(void **state)
{
	static struct breaker_table t;
	char err[128];

	breaker_policy_defaults(&policy);
	policy.wedged_after_ms = 10000;
	policy.minimum_volume = 20;
	assert_true(breaker_table_init(&t, 64, err, sizeof(err)));
	*state = &t;
	return 0;
}

static int teardown(void **state)
{
	breaker_table_free(*state);
	return 0;
}

static struct breaker_table_entry *server(struct breaker_table *t, const char *backend,
					  const char *srv)
{
	enum breaker_table_status status;
	struct breaker_table_entry *e =
		breaker_table_get(t, backend, strlen(backend), srv, strlen(srv), T0, &status);
	assert_non_null(e);
	breaker_set_policy(&e->breaker, &policy);
	return e;
}

static void respond(struct breaker_table *t, const char *backend, const char *srv, int status,
		    uint64_t now)
{
	struct breaker_table_entry *e = server(t, backend, srv);
	breaker_table_record_response(t, e, breaker_outcome(&policy, status), now);
}

/* Time until `srv` stops admitting while `each_step` runs every STEP_MS,
 * or 0 if it still admits after `limit_ms`. */
typedef void (*step_fn)(struct breaker_table *t, uint64_t now, unsigned step);

static uint64_t time_to_open(struct breaker_table *t, const char *backend, const char *srv,
			     step_fn each_step, uint64_t limit_ms)
{
	unsigned step = 0;
	for (uint64_t now = T0; now <= T0 + limit_ms; now += STEP_MS, step++) {
		each_step(t, now, step);
		if (!breaker_would_allow(&server(t, backend, srv)->breaker))
			return now - T0;
	}
	return 0;
}

/* w1 answers only 503; w2, beside it, serves. */
static void wedged_beside_a_healthy_one(struct breaker_table *t, uint64_t now, unsigned step)
{
	(void)step;
	respond(t, "be", "w1", 503, now);
	respond(t, "be", "w2", 200, now);
}

static void test_wedged_opens_once_its_neighbour_serves(void **state)
{
	struct breaker_table *t = *state;
	uint64_t opened = time_to_open(t, "be", "w1", wedged_beside_a_healthy_one, 100000);

	assert_true(opened >= policy.wedged_after_ms);
	assert_true(opened <= policy.wedged_after_ms + STEP_MS);
	const struct breaker *b = &server(t, "be", "w1")->breaker;
	assert_int_equal(b->state, BREAKER_OPEN);
	assert_int_equal(b->last_trip_rule, BREAKER_TRIP_WEDGED);
	assert_string_equal(breaker_trip_rule_name(BREAKER_TRIP_WEDGED), "wedged");
	assert_true(breaker_would_allow(&server(t, "be", "w2")->breaker));
}

/* w1's 503s are retried elsewhere by HAProxy: the counters tell of them,
 * a batch every 5 steps (one look per 500 ms), SPOP never does. */
static void wedged_under_retries(struct breaker_table *t, uint64_t now, unsigned step)
{
	if (step % 5 == 4)
		breaker_table_record_capacity_retries(t, server(t, "be", "w1"), 9, now);
	respond(t, "be", "w2", 200, now);
}

static void test_wedged_found_from_retried_capacity_statuses(void **state)
{
	struct breaker_table *t = *state;
	uint64_t opened = time_to_open(t, "be", "w1", wedged_under_retries, 100000);

	/* Found at the first look past wedged_after, not minimum_volume
	 * looks later: every retried 503 counts towards the run. */
	assert_true(opened >= policy.wedged_after_ms);
	assert_true(opened <= policy.wedged_after_ms + 5 * STEP_MS);
	assert_int_equal(server(t, "be", "w1")->breaker.last_trip_rule, BREAKER_TRIP_WEDGED);
}

/* The same batches while every server of the backend refuses: overload. */
static void overload_under_retries(struct breaker_table *t, uint64_t now, unsigned step)
{
	if (step % 5 == 4) {
		breaker_table_record_capacity_retries(t, server(t, "be", "w1"), 9, now);
		breaker_table_record_capacity_retries(t, server(t, "be", "w2"), 9, now);
	}
}

static void test_global_overload_under_retries_never_trips(void **state)
{
	struct breaker_table *t = *state;

	assert_int_equal(time_to_open(t, "be", "w1", overload_under_retries, 20 * policy.wedged_after_ms),
			 0);
	assert_true(server(t, "be", "w1")->breaker.capacity_run >= policy.minimum_volume);
	/* A batch is one sample of backpressure: the failure streak is
	 * untouched. */
	assert_int_equal(server(t, "be", "w1")->breaker.failure_streak, 0);
}

/* Steady-state mode notifies a success only for a dirty breaker: under
 * wedged_after, a run of capacity statuses must make it dirty, or the
 * success that ends the run would never be seen. */
static void test_capacity_run_is_dirty_under_wedged_after(void **state)
{
	struct breaker_table *t = *state;
	struct breaker_table_entry *e = server(t, "be", "w1");
	assert_false(breaker_is_dirty(&e->breaker));
	struct breaker_event ev = breaker_table_record_response(t, e, BREAKER_OUTCOME_BACKPRESSURE, T0);
	assert_int_equal(ev.dirty, BREAKER_BECAME_DIRTY);
	ev = breaker_table_record_capacity_retries(t, e, 5, T0 + 500);
	assert_int_equal(ev.dirty, BREAKER_DIRTY_UNCHANGED);
	ev = breaker_table_record_response(t, e, BREAKER_OUTCOME_SUCCESS, T0 + 600);
	assert_int_equal(ev.dirty, BREAKER_BECAME_CLEAN);
	assert_int_equal(e->breaker.capacity_run, 0);

	/* Without wedged_after a 503 changes no decision: clean throughout. */
	policy.wedged_after_ms = 0;
	ev = breaker_table_record_response(t, e, BREAKER_OUTCOME_BACKPRESSURE, T0 + 700);
	assert_int_equal(ev.dirty, BREAKER_DIRTY_UNCHANGED);
	assert_false(breaker_is_dirty(&e->breaker));
}

/* Opened as wedged, its probe answered 503 again while its neighbour
 * serves: still wedged, though an ordinary breaker's probe would close on
 * it; a success closes. */
static void test_wedged_probe_answered_503_reopens(void **state)
{
	struct breaker_table *t = *state;
	assert_true(time_to_open(t, "be", "w1", wedged_beside_a_healthy_one, 100000) > 0);
	struct breaker *b = &server(t, "be", "w1")->breaker;
	uint64_t now = breaker_next_deadline(b);
	breaker_tick(b, now);
	assert_int_equal(b->state, BREAKER_HALF_OPEN);
	policy.half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE;
	respond(t, "be", "w2", 200, now);
	struct breaker_event ev =
		breaker_table_record_response(t, server(t, "be", "w1"), BREAKER_OUTCOME_BACKPRESSURE, now);
	assert_int_equal(ev.from, BREAKER_HALF_OPEN);
	assert_int_equal(ev.to, BREAKER_OPEN);
	assert_int_equal(ev.trip_rule, BREAKER_TRIP_WEDGED);
	assert_int_equal(b->trips_in_a_row, 2);
	/* The same from the counters' retried 503s. */
	now = breaker_next_deadline(b);
	breaker_tick(b, now);
	assert_int_equal(b->state, BREAKER_HALF_OPEN);
	respond(t, "be", "w2", 200, now);
	ev = breaker_table_record_capacity_retries(t, server(t, "be", "w1"), 3, now);
	assert_int_equal(ev.to, BREAKER_OPEN);
	assert_int_equal(b->trips_in_a_row, 3);
	/* Recovered: its probe succeeds and it closes. */
	now = breaker_next_deadline(b);
	breaker_tick(b, now);
	ev = breaker_table_record_response(t, server(t, "be", "w1"), BREAKER_OUTCOME_SUCCESS, now);
	assert_int_equal(ev.to, BREAKER_CLOSED);
}

/* Opens w1 as wedged beside a serving w2, then lets its cool-down run out:
 * half-open at the returned time. */
static uint64_t wedged_then_half_open(struct breaker_table *t)
{
	assert_true(time_to_open(t, "be", "w1", wedged_beside_a_healthy_one, 100000) > 0);
	struct breaker *b = &server(t, "be", "w1")->breaker;
	assert_int_equal(b->last_trip_rule, BREAKER_TRIP_WEDGED);
	uint64_t now = breaker_next_deadline(b);
	breaker_tick(b, now);
	assert_int_equal(b->state, BREAKER_HALF_OPEN);
	return now;
}

/* Opened as wedged, then the whole backend is overloaded: nobody has
 * served within wedged_after, so its probe's 503 is a busy worker's among
 * busy ones, and closes as any breaker's would (policy close). */
static void test_wedged_probe_503_in_a_global_overload_closes(void **state)
{
	struct breaker_table *t = *state;
	uint64_t now = wedged_then_half_open(t);
	/* The cool-down (30 s) outlasts wedged_after (10 s): w2's last
	 * success is older than the rule's horizon. */
	respond(t, "be", "w2", 503, now);
	policy.half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE;
	struct breaker_event ev = breaker_table_record_response(t, server(t, "be", "w1"),
								BREAKER_OUTCOME_BACKPRESSURE, now);
	assert_int_equal(ev.from, BREAKER_HALF_OPEN);
	assert_int_equal(ev.to, BREAKER_CLOSED);
}

/* Under half_open_backpressure = ignore, a refusal is no verdict for a
 * wedged breaker's probe either; the wedged rule's run is: 503s only, for
 * wedged_after, its neighbour serving, and it opens again as wedged. */
static void test_wedged_probe_under_ignore_is_judged_by_the_run(void **state)
{
	struct breaker_table *t = *state;
	uint64_t start = wedged_then_half_open(t), now = start;
	policy.half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE;
	struct breaker *b = &server(t, "be", "w1")->breaker;
	struct breaker_event ev = breaker_table_record_response(t, server(t, "be", "w1"),
								BREAKER_OUTCOME_BACKPRESSURE, now);
	assert_false(breaker_event_is_transition(&ev));
	while (b->state == BREAKER_HALF_OPEN && now < start + 100000) {
		now += STEP_MS;
		wedged_beside_a_healthy_one(t, now, 0);
	}
	assert_int_equal(b->state, BREAKER_OPEN);
	assert_int_equal(b->last_trip_rule, BREAKER_TRIP_WEDGED);
	assert_true(now - start >= policy.wedged_after_ms);
	policy.half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE;
}

/* A reload turns wedged_after off: the breaker it opened is an ordinary
 * one, and its probe's 503 closes it (policy close). */
static void test_wedged_probe_after_the_rule_is_turned_off_closes(void **state)
{
	struct breaker_table *t = *state;
	uint64_t now = wedged_then_half_open(t);
	respond(t, "be", "w2", 200, now);
	policy.wedged_after_ms = 0;
	policy.half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE;
	struct breaker_event ev = breaker_table_record_response(t, server(t, "be", "w1"),
								BREAKER_OUTCOME_BACKPRESSURE, now);
	assert_int_equal(ev.to, BREAKER_CLOSED);
	/* And from the counters' retried 503s the same. */
	policy.wedged_after_ms = 10000;
	now = wedged_then_half_open(t);
	respond(t, "be", "w2", 200, now);
	policy.wedged_after_ms = 0;
	ev = breaker_table_record_capacity_retries(t, server(t, "be", "w1"), 2, now);
	assert_int_equal(ev.to, BREAKER_CLOSED);
}

/* An ordinary breaker (opened by failures) still closes on a probe's 503. */
static void test_failed_probe_answered_503_closes(void **state)
{
	struct breaker_table *t = *state;
	struct breaker_table_entry *e = server(t, "be", "w1");
	policy.half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE;
	uint64_t now = T0;
	while (breaker_would_allow(&e->breaker) && now < T0 + 1000)
		breaker_table_record_response(t, e, BREAKER_OUTCOME_FAILURE, now++);
	assert_int_equal(e->breaker.state, BREAKER_OPEN);
	now = breaker_next_deadline(&e->breaker);
	breaker_tick(&e->breaker, now);
	struct breaker_event ev = breaker_table_record_response(t, e, BREAKER_OUTCOME_BACKPRESSURE, now);
	assert_int_equal(ev.to, BREAKER_CLOSED);
}

/* Everyone answers 503: the backend is busy, nobody is wedged. */
static void global_overload(struct breaker_table *t, uint64_t now, unsigned step)
{
	(void)step;
	respond(t, "be", "w1", 503, now);
	respond(t, "be", "w2", 503, now);
	respond(t, "be", "w3", 429, now);
}

static void test_global_overload_never_trips(void **state)
{
	struct breaker_table *t = *state;

	assert_int_equal(time_to_open(t, "be", "w1", global_overload, 20 * policy.wedged_after_ms), 0);
	assert_true(breaker_would_allow(&server(t, "be", "w2")->breaker));
	assert_true(breaker_would_allow(&server(t, "be", "w3")->breaker));
	/* The run is there: only the neighbours' success was missing. */
	assert_true(server(t, "be", "w1")->breaker.capacity_run >= policy.minimum_volume);
}

/* A busy worker that still serves one request in fifty is busy, not wedged. */
static void busy_but_serving(struct breaker_table *t, uint64_t now, unsigned step)
{
	respond(t, "be", "w1", step % 50 == 49 ? 200 : 503, now);
	respond(t, "be", "w2", 200, now);
}

static void test_busy_worker_that_serves_never_trips(void **state)
{
	assert_int_equal(time_to_open(*state, "be", "w1", busy_but_serving, 20 * policy.wedged_after_ms),
			 0);
}

/* Only 503s, but fewer than minimum_volume in the whole time: too little
 * to judge. */
static void rare_503s(struct breaker_table *t, uint64_t now, unsigned step)
{
	if (step % 200 == 0)
		respond(t, "be", "w1", 503, now);
	respond(t, "be", "w2", 200, now);
}

static void test_below_minimum_volume_never_trips(void **state)
{
	/* One 503 every 200 steps (20 s): 2 of them in 40 s, under 20. */
	assert_int_equal(time_to_open(*state, "be", "w1", rare_503s, 2 * policy.wedged_after_ms), 0);
}

/* The one serving neighbour is in another backend: not a neighbour. */
static void other_backend_serves(struct breaker_table *t, uint64_t now, unsigned step)
{
	(void)step;
	respond(t, "be", "w1", 503, now);
	respond(t, "other", "w2", 200, now);
}

static void test_success_in_another_backend_does_not_count(void **state)
{
	assert_int_equal(
	    time_to_open(*state, "be", "w1", other_backend_serves, 20 * policy.wedged_after_ms), 0);
}

/* Its own successes are not its neighbours': w1 served, then went wedged
 * alone in its backend. */
static void alone_in_its_backend(struct breaker_table *t, uint64_t now, unsigned step)
{
	respond(t, "be", "w1", step < 10 ? 200 : 503, now);
}

static void test_own_success_is_not_a_neighbours(void **state)
{
	assert_int_equal(
	    time_to_open(*state, "be", "w1", alone_in_its_backend, 20 * policy.wedged_after_ms), 0);
}

/* Off (the default): never, whatever the neighbours do. */
static void test_off_by_default(void **state)
{
	struct breaker_policy defaults;
	breaker_policy_defaults(&defaults);
	assert_int_equal(defaults.wedged_after_ms, 0);
	policy.wedged_after_ms = 0;
	assert_int_equal(
	    time_to_open(*state, "be", "w1", wedged_beside_a_healthy_one, 100000), 0);
}

/* The run ends with any other answer, a failure included (that one is
 * for the failure rules to judge), and with a trip. */
static void test_run_resets(void **state)
{
	struct breaker_table *t = *state;
	struct breaker *b = &server(t, "be", "w1")->breaker;

	respond(t, "be", "w1", 503, T0);
	respond(t, "be", "w1", 429, T0 + 5);
	assert_int_equal(b->capacity_run, 2);
	assert_int_equal(b->capacity_run_since_ms, T0);
	respond(t, "be", "w1", 500, T0 + 10);
	assert_int_equal(b->capacity_run, 0);
	respond(t, "be", "w1", 503, T0 + 20);
	assert_int_equal(b->capacity_run_since_ms, T0 + 20);
	respond(t, "be", "w1", 404, T0 + 30); /* a client error: it answered */
	assert_int_equal(b->capacity_run, 0);
}

/* A backend's record goes with its last breaker, and comes back empty. */
static void test_backend_record_follows_its_breakers(void **state)
{
	struct breaker_table *t = *state;

	respond(t, "be", "w1", 200, T0);
	respond(t, "be", "w2", 503, T0 + 1);
	assert_int_equal(breaker_table_others_succeeded(t, server(t, "be", "w2")), T0);
	assert_int_equal(breaker_table_others_succeeded(t, server(t, "be", "w1")), 0);
	assert_int_equal(t->backends.used, 1);
	breaker_table_remove(t, server(t, "be", "w1"));
	breaker_table_remove(t, server(t, "be", "w2"));
	assert_int_equal(t->backends.used, 0);
	assert_int_equal(breaker_table_others_succeeded(t, server(t, "be", "w2")), 0);
}

/* Many backends come and go: the records stay exactly those with breakers. */
static void test_many_backends(void **state)
{
	struct breaker_table *t = *state;
	char name[32];

	for (unsigned i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "be%u", i);
		respond(t, name, "s", 200, T0 + i);
	}
	assert_int_equal(t->backends.used, 60);
	for (unsigned i = 0; i < 60; i += 2) {
		snprintf(name, sizeof(name), "be%u", i);
		breaker_table_remove(t, server(t, name, "s"));
	}
	assert_int_equal(t->backends.used, 30);
	for (unsigned i = 1; i < 60; i += 2) {
		snprintf(name, sizeof(name), "be%u", i);
		respond(t, name, "other", 503, T0 + 100);
		/* Still found after the deletions shifted its cluster. */
		assert_int_equal(breaker_table_others_succeeded(t, server(t, name, "other")), T0 + i);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_wedged_opens_once_its_neighbour_serves, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_global_overload_never_trips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wedged_found_from_retried_capacity_statuses, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_global_overload_under_retries_never_trips, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_capacity_run_is_dirty_under_wedged_after, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wedged_probe_answered_503_reopens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wedged_probe_503_in_a_global_overload_closes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wedged_probe_under_ignore_is_judged_by_the_run,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_wedged_probe_after_the_rule_is_turned_off_closes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_probe_answered_503_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_worker_that_serves_never_trips, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_below_minimum_volume_never_trips, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_success_in_another_backend_does_not_count, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_own_success_is_not_a_neighbours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off_by_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_resets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_record_follows_its_breakers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_many_backends, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
