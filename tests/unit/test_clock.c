/*
 * test_clock.c - clock_now_ms() and clock_mono_s() are one clock, the
 * monotonic one: a deadline set with one may be compared with the other,
 * and both read what libev runs its timers on (CLOCK_MONOTONIC), never the
 * wall clock. (That a step of the wall clock moves nothing is shown end to
 * end, tests/e2e/clock_step.bats.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "util/clock.h"

static double monotonic_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Each read lies between two reads of CLOCK_MONOTONIC around it. */
static void test_both_read_the_monotonic_clock(void **state)
{
	(void)state;
	for (int i = 0; i < 1000; i++) {
		double before = monotonic_s();
		double s = clock_mono_s();
		uint64_t ms = clock_now_ms();
		double after = monotonic_s();
		assert_true(s >= before && s <= after);
		/* ms is truncated: up to 1 ms below the instant it was read. */
		assert_true((double)ms / 1000.0 > before - 0.001);
		assert_true((double)ms / 1000.0 <= after);
	}
}

/* Never backwards, whichever of the two is read. */
static void test_never_goes_back(void **state)
{
	(void)state;
	double last_s = clock_mono_s();
	uint64_t last_ms = clock_now_ms();
	for (int i = 0; i < 100000; i++) {
		double s = clock_mono_s();
		uint64_t ms = clock_now_ms();
		assert_true(s >= last_s);
		assert_true(ms >= last_ms);
		last_s = s;
		last_ms = ms;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_both_read_the_monotonic_clock),
		cmocka_unit_test(test_never_goes_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
