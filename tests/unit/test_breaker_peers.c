/*
 * test_breaker_peers.c - a breaker under another HAProxy node's verdict
 * (peers mode): held open while the verdict stands, so only its owner
 * probes; left to its own probes when the verdict stops being renewed;
 * closed with the owner; and a breaker with evidence of its own keeps it.
 * Loops run on observable state (breaker_would_allow), bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/breaker.h"
#include "breaker_allows.h"

#define T0 1000000
#define HOLD_MS 2000

static struct breaker_policy policy;
static struct breaker b;

static int setup(void **state)
{
	(void)state;
	breaker_policy_defaults(&policy);
	breaker_init(&b, &policy, T0);
	return 0;
}

/* Fails until the breaker opens; how many it took is the policy's. */
static uint64_t trip_own(uint64_t now)
{
	for (int i = 0; i < 1000 && breaker_would_allow(&b); i++)
		breaker_record_failure(&b, now++);
	assert_int_equal(b.state, BREAKER_OPEN);
	return now;
}

static void test_closed_adopts_the_verdict(void **state)
{
	(void)state;
	struct breaker_event ev = breaker_peer_hold(&b, T0 + HOLD_MS, T0);
	assert_int_equal(ev.from, BREAKER_CLOSED);
	assert_int_equal(ev.to, BREAKER_OPEN);
	assert_int_equal(ev.dirty, BREAKER_BECAME_DIRTY);
	assert_true(b.peer_adopted);
	/* Not this node's verdict to publish, and no backoff of its own. */
	assert_false(breaker_owns_verdict(&b, T0));
	assert_int_equal(b.trips_in_a_row, 0);
	assert_int_equal(breaker_next_deadline(&b), T0 + HOLD_MS);
}

static void test_a_renewed_verdict_never_lets_this_node_probe(void **state)
{
	(void)state;
	uint64_t now = T0;
	breaker_peer_hold(&b, now + HOLD_MS, now);
	/* Far past the cool-down, renewed at every look. */
	for (int look = 0; look < 200; look++) {
		now += 500;
		breaker_peer_hold(&b, now + HOLD_MS, now);
		breaker_tick(&b, now);
		assert_int_equal(b.state, BREAKER_OPEN);
	}
	assert_true(now - T0 > policy.cooldown_ms);
}

static void test_a_verdict_no_longer_renewed_leaves_its_own_probes(void **state)
{
	(void)state;
	breaker_peer_hold(&b, T0 + HOLD_MS, T0);
	breaker_tick(&b, T0 + HOLD_MS - 1);
	assert_int_equal(b.state, BREAKER_OPEN);
	struct breaker_event ev = breaker_tick(&b, T0 + HOLD_MS);
	assert_int_equal(ev.to, BREAKER_HALF_OPEN);
	assert_false(b.peer_adopted);
	/* Its own now: a probe decides, and it publishes what it finds. */
	assert_true(breaker_owns_verdict(&b, T0 + HOLD_MS));
	breaker_record_success(&b, T0 + HOLD_MS + 1);
	assert_int_equal(b.state, BREAKER_CLOSED);
}

static void test_the_owner_closing_closes_an_adopted_breaker(void **state)
{
	(void)state;
	breaker_peer_hold(&b, T0 + HOLD_MS, T0);
	struct breaker_event ev = breaker_peer_release(&b, T0 + 10);
	assert_int_equal(ev.to, BREAKER_CLOSED);
	assert_int_equal(ev.dirty, BREAKER_BECAME_CLEAN);
	assert_int_equal(breaker_peer_hold_until(&b), 0);
}

static void test_own_evidence_is_kept_through_a_release(void **state)
{
	(void)state;
	uint64_t now = trip_own(T0);
	breaker_peer_hold(&b, now + HOLD_MS, now);
	assert_false(b.peer_adopted);
	assert_false(breaker_owns_verdict(&b, now)); /* yielded while held */
	struct breaker_event ev = breaker_peer_release(&b, now + 1);
	assert_int_equal(ev.to, BREAKER_OPEN);
	assert_true(breaker_owns_verdict(&b, now + 1));
	/* Its own cool-down, as before. */
	assert_int_equal(breaker_next_deadline(&b), b.state_since_ms + breaker_open_duration_ms(&b));
}

static void test_own_trip_held_waits_for_the_later_deadline(void **state)
{
	(void)state;
	uint64_t now = trip_own(T0);
	uint64_t own = breaker_next_deadline(&b);
	breaker_peer_hold(&b, own + 5000, now);
	assert_int_equal(breaker_next_deadline(&b), own + 5000);
	breaker_tick(&b, own);
	assert_int_equal(b.state, BREAKER_OPEN);
	/* The hold over: its own verdict again, and it probes. */
	assert_true(breaker_owns_verdict(&b, own + 5000));
	breaker_tick(&b, own + 5000);
	assert_int_equal(b.state, BREAKER_HALF_OPEN);
}

static void test_half_open_yields_its_probe_to_the_owner(void **state)
{
	(void)state;
	uint64_t now = trip_own(T0);
	breaker_tick(&b, breaker_next_deadline(&b));
	assert_int_equal(b.state, BREAKER_HALF_OPEN);
	now = b.state_since_ms;
	uint32_t trips = b.trips_in_a_row;
	struct breaker_event ev = breaker_peer_hold(&b, now + HOLD_MS, now);
	assert_int_equal(ev.to, BREAKER_OPEN);
	assert_false(b.peer_adopted);
	assert_int_equal(b.trips_in_a_row, trips); /* no trip of its own */
	assert_false(breaker_would_allow(&b));
}

/* A verdict that lapsed, then another node's: still nothing of its own,
 * so the owner's close closes it too. */
static void test_lapsed_then_held_again_is_still_adopted(void **state)
{
	(void)state;
	breaker_peer_hold(&b, T0 + HOLD_MS, T0);
	breaker_tick(&b, T0 + HOLD_MS);
	assert_int_equal(b.state, BREAKER_HALF_OPEN);
	breaker_peer_hold(&b, T0 + 2 * HOLD_MS, T0 + HOLD_MS + 1);
	assert_true(b.peer_adopted);
	struct breaker_event ev = breaker_peer_release(&b, T0 + HOLD_MS + 2);
	assert_int_equal(ev.to, BREAKER_CLOSED);
}

static void test_a_closed_breaker_owns_nothing(void **state)
{
	(void)state;
	assert_false(breaker_owns_verdict(&b, T0));
	uint64_t now = trip_own(T0);
	assert_true(breaker_owns_verdict(&b, now));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_closed_adopts_the_verdict, setup),
		cmocka_unit_test_setup(test_a_renewed_verdict_never_lets_this_node_probe, setup),
		cmocka_unit_test_setup(test_a_verdict_no_longer_renewed_leaves_its_own_probes, setup),
		cmocka_unit_test_setup(test_the_owner_closing_closes_an_adopted_breaker, setup),
		cmocka_unit_test_setup(test_own_evidence_is_kept_through_a_release, setup),
		cmocka_unit_test_setup(test_own_trip_held_waits_for_the_later_deadline, setup),
		cmocka_unit_test_setup(test_half_open_yields_its_probe_to_the_owner, setup),
		cmocka_unit_test_setup(test_lapsed_then_held_again_is_still_adopted, setup),
		cmocka_unit_test_setup(test_a_closed_breaker_owns_nothing, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
