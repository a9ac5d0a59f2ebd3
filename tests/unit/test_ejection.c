/*
 * test_ejection.c - the ejection cap's arithmetic (ejection.c): how many
 * servers may be out, how much room is left. The cap as it runs over a
 * backend's servers is test_ejection_cap.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/policy.h"
#include "link/ejection.h"

/* The rounding, alone: floor(listed * percent / 100). */
static void test_max_out_rounds_down(void **state)
{
	(void)state;
	static const struct {
		uint32_t listed, percent, max_out;
	} cases[] = {
		{1, 50, 0},  {2, 50, 1},  {3, 50, 1},  {4, 50, 2},    {5, 50, 2},
		{3, 67, 2},  {3, 66, 1},  {10, 10, 1}, {9, 10, 0},    {0, 50, 0},
		{4, 100, 4}, {4, 0, 0},   {100000, 50, 50000},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct breaker_policy p;
		breaker_policy_defaults(&p);
		p.max_ejection_percent = cases[i].percent;
		assert_int_equal(ejection_max_out(&p, cases[i].listed), cases[i].max_out);
	}
}

/* The room a backend has, and who may take it. */
static void test_room(void **state)
{
	(void)state;
	struct breaker_policy p;
	breaker_policy_defaults(&p);
	assert_int_equal(p.max_ejection_percent, 50);
	assert_false(p.drain_last_server);

	struct ejection_count c = {.listed = 4, .out = 0};
	assert_int_equal(ejection_room(&p, &c), 2);
	assert_true(ejection_may_drain(&p, &c, 1));
	assert_false(ejection_may_drain(&p, &c, 2));
	c.out = 2;
	assert_int_equal(ejection_room(&p, &c), 0);
	c.out = 5; /* a count gone stale never wraps around */
	assert_int_equal(ejection_room(&p, &c), 0);
	c = (struct ejection_count){.listed = 0, .out = 0};
	assert_int_equal(ejection_room(&p, &c), 0);
	p.max_ejection_percent = 100;
	p.drain_last_server = true;
	c = (struct ejection_count){.listed = 3, .out = 1};
	assert_int_equal(ejection_room(&p, &c), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_max_out_rounds_down),
		cmocka_unit_test(test_room),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
