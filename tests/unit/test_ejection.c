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

/* A worker's rest takes room as a drain does, but never the last serving
 * server, whatever drain_last_server allows. */
static void test_rest_never_takes_the_last_server(void **state)
{
	(void)state;
	static const struct {
		uint32_t percent;
		bool drain_last;
		uint32_t listed, out, waited;
		bool drain, rest;
	} cases[] = {
		/* percent drain_last listed out waited -> drain rest */
		{50, false, 4, 0, 0, true, true},
		{50, false, 4, 2, 0, false, false}, /* the share is taken */
		{100, true, 3, 2, 0, true, false},  /* the last one: a drain may, a rest never */
		{100, true, 3, 1, 0, true, true},
		{100, true, 3, 1, 1, true, false},  /* one waited before it: the last one left */
		{100, false, 3, 2, 0, false, false},
		{100, true, 1, 0, 0, true, false},  /* a backend of one */
		{0, true, 4, 0, 0, false, false},   /* 0 %: nothing goes out, rests included */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct breaker_policy p;
		breaker_policy_defaults(&p);
		p.max_ejection_percent = cases[i].percent;
		p.drain_last_server = cases[i].drain_last;
		struct ejection_count c = {.listed = cases[i].listed, .out = cases[i].out};
		if (ejection_may_drain(&p, &c, cases[i].waited) != cases[i].drain ||
		    ejection_may_rest(&p, &c, cases[i].waited) != cases[i].rest)
			fail_msg("case %zu: drain %d rest %d, expected %d %d", i,
				 ejection_may_drain(&p, &c, cases[i].waited),
				 ejection_may_rest(&p, &c, cases[i].waited), cases[i].drain,
				 cases[i].rest);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_max_out_rounds_down),
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_rest_never_takes_the_last_server),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
