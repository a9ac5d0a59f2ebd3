/*
 * test_ack_hold.c - when an ACK held for an `add map` may go: points land
 * in order, per link, on completed commands (failed ones too), and a full
 * ring joins the newest point rather than letting an ACK go early.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "link/ack_hold.h"

static struct ack_hold hold;

static int reset(void **state)
{
	(void)state;
	memset(&hold, 0, sizeof(hold));
	return 0;
}

static void test_nothing_waits_at_first(void **state)
{
	(void)state;
	assert_false(ack_hold_waiting(&hold));
	const uint64_t done[1] = {0};
	assert_false(ack_hold_settle(&hold, done, 1));
}

static void test_one_link_lands_when_its_command_completes(void **state)
{
	(void)state;
	const uint64_t queued[1] = {5};
	uint64_t id = ack_hold_point(&hold, queued, 1);
	assert_int_equal(id, 1);
	assert_true(ack_hold_waiting(&hold));

	const uint64_t four[1] = {4};
	assert_false(ack_hold_settle(&hold, four, 1));
	assert_false(ack_hold_passed(&hold, id));

	const uint64_t five[1] = {5};
	assert_true(ack_hold_settle(&hold, five, 1));
	assert_true(ack_hold_passed(&hold, id));
	assert_false(ack_hold_waiting(&hold));
}

static void test_every_link_must_reach_its_target(void **state)
{
	(void)state;
	const uint64_t queued[3] = {2, 7, 1};
	uint64_t id = ack_hold_point(&hold, queued, 3);

	const uint64_t two_of_three[3] = {2, 6, 9};
	assert_false(ack_hold_settle(&hold, two_of_three, 3));
	assert_false(ack_hold_passed(&hold, id));
	const uint64_t all[3] = {2, 7, 1};
	assert_true(ack_hold_settle(&hold, all, 3));
	assert_true(ack_hold_passed(&hold, id));
}

static void test_points_land_in_order(void **state)
{
	(void)state;
	const uint64_t q1[1] = {1}, q2[1] = {2}, q3[1] = {3};
	uint64_t a = ack_hold_point(&hold, q1, 1);
	uint64_t b = ack_hold_point(&hold, q2, 1);
	uint64_t c = ack_hold_point(&hold, q3, 1);

	const uint64_t d2[1] = {2};
	assert_true(ack_hold_settle(&hold, d2, 1));
	assert_true(ack_hold_passed(&hold, a));
	assert_true(ack_hold_passed(&hold, b));
	assert_false(ack_hold_passed(&hold, c));
	assert_true(ack_hold_waiting(&hold));
}

static void test_full_ring_joins_the_newest_point(void **state)
{
	(void)state;
	uint64_t queued[1];
	uint64_t last = 0;
	for (uint64_t i = 1; i <= ACK_HOLD_POINTS; i++) {
		queued[0] = i;
		last = ack_hold_point(&hold, queued, 1);
	}
	assert_int_equal(last, ACK_HOLD_POINTS);
	/* One more add: no new point, the newest waits for it too. */
	queued[0] = ACK_HOLD_POINTS + 10;
	assert_int_equal(ack_hold_point(&hold, queued, 1), ACK_HOLD_POINTS);

	const uint64_t before_it[1] = {ACK_HOLD_POINTS + 9};
	ack_hold_settle(&hold, before_it, 1);
	assert_true(ack_hold_passed(&hold, ACK_HOLD_POINTS - 1));
	assert_false(ack_hold_passed(&hold, ACK_HOLD_POINTS));
	const uint64_t all[1] = {ACK_HOLD_POINTS + 10};
	assert_true(ack_hold_settle(&hold, all, 1));
	assert_true(ack_hold_passed(&hold, ACK_HOLD_POINTS));

	/* Room again: the next point gets a new id. */
	queued[0] = ACK_HOLD_POINTS + 11;
	assert_int_equal(ack_hold_point(&hold, queued, 1), ACK_HOLD_POINTS + 1);
}

static void test_too_many_links_are_bounded(void **state)
{
	(void)state;
	uint64_t queued[ENFORCE_MAX_HAPROXY + 2];
	for (unsigned i = 0; i < ENFORCE_MAX_HAPROXY + 2; i++)
		queued[i] = 1;
	uint64_t id = ack_hold_point(&hold, queued, ENFORCE_MAX_HAPROXY + 2);
	assert_true(ack_hold_settle(&hold, queued, ENFORCE_MAX_HAPROXY + 2));
	assert_true(ack_hold_passed(&hold, id));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_nothing_waits_at_first, reset),
		cmocka_unit_test_setup(test_one_link_lands_when_its_command_completes, reset),
		cmocka_unit_test_setup(test_every_link_must_reach_its_target, reset),
		cmocka_unit_test_setup(test_points_land_in_order, reset),
		cmocka_unit_test_setup(test_full_ring_joins_the_newest_point, reset),
		cmocka_unit_test_setup(test_too_many_links_are_bounded, reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
