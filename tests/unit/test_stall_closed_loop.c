/*
 * test_stall_closed_loop.c - the stalled rule under closed-loop clients
 * (the scene: closed_loop_scene.h), one seed per row.
 *
 * Each row: a client count, the time within which the hung worker must
 * be opened, and the bound on opening a healthy one. The rule opens only
 * when the chance that a healthy worker shows what the looks show is
 * below 5e-9 (silence_odds.c), so that is the false-positive bound per
 * judgement at every row; the healthy runs check that none of ten
 * minutes of looks comes near it (the lowest chance seen is printed).
 * How the opening time spreads over seeds, against the best the bound
 * allows: bench/closed_loop_spread.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "closed_loop_scene.h"

#define TEN_MINUTES 600000

/* A run with w3 hung, and one with none; the hung one opened within
 * found_within_ms of the first request, no healthy one ever. */
static void expect_closed_loop(unsigned clients, uint64_t timeout_server_ms,
			       uint64_t found_within_ms)
{
	struct closed_loop_run hung = {.clients = clients, .timeout_server_ms = timeout_server_ms,
				       .hung = 2, .duration_ms = TEN_MINUTES, .seed = 7};
	assert_true(closed_loop_simulate(&hung, true));
	print_message("%u clients, timeout server %llu s: hung w3 opened %llu ms after the "
		      "first request\n",
		      clients, (unsigned long long)timeout_server_ms / 1000,
		      (unsigned long long)(hung.opened[2] - SCENE_LOAD_FROM_MS));
	assert_true(hung.opened[2] != 0);
	assert_int_equal(hung.opened_by[2], BREAKER_TRIP_STALLED);
	assert_true(hung.opened[2] - SCENE_LOAD_FROM_MS <= found_within_ms);
	assert_int_equal(hung.opened[0], 0);
	assert_int_equal(hung.opened[1], 0);

	struct closed_loop_run healthy = {.clients = clients,
					  .timeout_server_ms = timeout_server_ms, .hung = -1,
					  .duration_ms = TEN_MINUTES, .seed = 7};
	assert_true(closed_loop_simulate(&healthy, true));
	print_message("%u clients, all healthy for 10 min: lowest chance of a silence e^%.1f, "
		      "opened below e^%.1f (5e-9)\n",
		      clients, healthy.lowest_healthy_log_odds, SCENE_LN_BOUND);
	for (int k = 0; k < SCENE_WORKERS; k++)
		assert_int_equal(healthy.opened[k], 0);
}

/* Four clients: w3 holds each one that reaches it for the whole
 * `timeout server`; its evidence grows by a few requests per timeout.
 * Found after 100 s (by 16 requests alone: 162 s). */
static void test_four_clients(void **state)
{
	(void)state;
	expect_closed_loop(4, 30000, 150000);
}

/* Twelve clients, the scene of hung_closed_loop.bats. Under `timeout
 * server 30s` found at 38 s, after the first timeouts (44 s by 16
 * requests alone): the counts of the first 25 s - 9 or 10 requests to w3
 * against about 20 answered - are at the bound, not past it. Under 5 min,
 * at 30 s, once the clients it holds make 10-12 (by 16 requests alone:
 * never before the timeouts free them, 311 s). */
static void test_twelve_clients(void **state)
{
	(void)state;
	expect_closed_loop(12, 30000, 60000);
	expect_closed_loop(12, 300000, 60000);
}

/* Forty-eight: 16 requests to w3 at once; found in seconds (the same by
 * 16 requests alone). */
static void test_forty_eight_clients(void **state)
{
	(void)state;
	expect_closed_loop(48, 30000, 10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_four_clients),
		cmocka_unit_test(test_twelve_clients),
		cmocka_unit_test(test_forty_eight_clients),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
