/*
 * test_capacity.c - a server's capacity learnt from its worker's refusals
 * (capacity.c): the first refusals set a limit one below what the server
 * held; refusals lower it one a look while the server is busy (none
 * count where it holds little: a quota's 429s, random refusals), a full server with none raises it
 * one a look; never below the floor nor above the ceiling; a worker that
 * never refuses is never limited; after a trip the limit doubles back to
 * where it was; and, simulated against a worker of capacity K, the limit
 * settles at K or K + 1 and follows K when it changes; a limit speaks for
 * the neighbours only once the worker answered under it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "link/capacity.h"

/* One look, and what the worker answered (1xx-3xx) since the previous. */
static enum capacity_change look_answered(struct capacity *c, uint64_t refusals,
					  uint32_t sessions, uint32_t ceiling, uint64_t answers)
{
	struct capacity_look l = {
		.refusals = refusals, .sessions = sessions, .ceiling = ceiling, .answers = answers};
	return capacity_on_look(c, &l);
}

static enum capacity_change look(struct capacity *c, uint64_t refusals, uint32_t sessions,
				 uint32_t ceiling)
{
	return look_answered(c, refusals, sessions, ceiling, 0);
}

/* (limit before, refusals, in flight, ceiling) -> (change, limit after). */
static void test_rules_table(void **state)
{
	(void)state;
	const struct {
		uint32_t limit, sessions, ceiling;
		uint64_t refusals;
		enum capacity_change change;
		uint32_t after;
	} cases[] = {
		/* Never refused: never limited, however busy. */
		{0, 40, 0, 0, CAPACITY_UNCHANGED, 0},
		/* The first refusals: one below what it held. */
		{0, 5, 0, 3, CAPACITY_LOWERED, 4},
		{0, 2, 0, 1, CAPACITY_LOWERED, 1}, /* the floor */
		{0, 0, 0, 2, CAPACITY_UNCHANGED, 0}, /* nothing seen: no guess */
		/* Refusals of a server holding little: no capacity speaks
		 * (one client's quota, a worker refusing at random). */
		{0, 1, 0, 9, CAPACITY_UNCHANGED, 0},
		{8, 3, 0, 9, CAPACITY_UNCHANGED, 8},
		{8, 4, 0, 9, CAPACITY_LOWERED, 7},
		{0, 9, 6, 1, CAPACITY_LOWERED, 6},   /* the ceiling */
		/* Limited and refused: one down, from the limit. */
		{4, 4, 0, 7, CAPACITY_LOWERED, 3},
		{4, 2, 0, 1, CAPACITY_LOWERED, 3},
		{1, 1, 0, 5, CAPACITY_UNCHANGED, 1},
		{1, 0, 0, 5, CAPACITY_UNCHANGED, 1},
		/* Limited, no refusal: up one when full, nothing when not. */
		{4, 4, 0, 0, CAPACITY_RAISED, 5},
		{4, 3, 0, 0, CAPACITY_UNCHANGED, 4},
		{6, 6, 6, 0, CAPACITY_UNCHANGED, 6}, /* at the ceiling */
		{UINT32_MAX, UINT32_MAX, 0, 0, CAPACITY_RAISED, UINT32_MAX},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct capacity c = {.limit = cases[i].limit, .step = 1};
		enum capacity_change got =
			look(&c, cases[i].refusals, cases[i].sessions, cases[i].ceiling);
		if (got != cases[i].change || c.limit != cases[i].after)
			fail_msg("case %zu: %s to %u, want %s to %u", i, capacity_change_name(got),
				 c.limit, capacity_change_name(cases[i].change), cases[i].after);
	}
}

/* Back from a trip: from the probes' limit, doubling while full, to the
 * limit it had, then one by one; a refusal on the way ends the doubling. */
static void test_slow_start(void **state)
{
	(void)state;
	struct capacity c = {0};
	capacity_slow_start(&c, 1);
	assert_int_equal(c.limit, 0); /* nothing learnt: nothing to come back to */

	c = (struct capacity){.limit = 16, .step = 1};
	capacity_slow_start(&c, 1);
	assert_int_equal(c.limit, 1);
	const uint32_t climb[] = {2, 4, 8, 16, 17, 18};
	for (size_t i = 0; i < sizeof(climb) / sizeof(climb[0]); i++) {
		assert_int_equal(look(&c, 0, c.limit, 0), CAPACITY_RAISED);
		assert_int_equal(c.limit, climb[i]);
	}
	c = (struct capacity){.limit = 16, .step = 1};
	capacity_slow_start(&c, 2);
	look(&c, 0, 2, 0);
	assert_int_equal(c.limit, 4);
	look(&c, 3, 4, 0); /* the doubling refused: the worker changed */
	assert_int_equal(c.limit, 2); /* back where it held */
	/* One by one from here, at once below the edge, after a wait to it. */
	assert_int_equal(look(&c, 0, 2, 0), CAPACITY_RAISED);
	assert_int_equal(c.limit, 3);
	assert_int_equal(look(&c, 0, 3, 0), CAPACITY_UNCHANGED);
	assert_int_equal(look(&c, 0, 3, 0), CAPACITY_RAISED);
	assert_int_equal(c.limit, 4);
	capacity_forget(&c);
	assert_int_equal(c.limit, 0);
	assert_int_equal(look(&c, 0, 50, 0), CAPACITY_UNCHANGED);
}

/* A worker of capacity k behind HAProxy: at a limit above k, the excess
 * requests are refused; at or below, none is; demand always fills the
 * limit (a queue waits). */
static void simulate(struct capacity *c, uint32_t k, int looks)
{
	for (int i = 0; i < looks; i++) {
		uint32_t held = c->limit == 0 ? 3 * k : c->limit;
		uint64_t refused = held > k ? held - k : 0;
		look(c, refused, held, 0);
	}
}

static void test_settles_and_follows(void **state)
{
	(void)state;
	const uint32_t ks[] = {1, 2, 4, 8, 16, 64};
	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		struct capacity c = {0};
		simulate(&c, ks[i], 4 * (int)ks[i] + 10);
		if (c.limit < ks[i] || c.limit > ks[i] + 1)
			fail_msg("capacity %u: limit %u", ks[i], c.limit);
	}
	/* 4 -> 2 -> 6: followed each way, up within the longest wait. */
	struct capacity c = {0};
	simulate(&c, 4, 40);
	simulate(&c, 2, 20);
	assert_in_range(c.limit, 2, 3);
	simulate(&c, 6, 20 + 4 + 2);
	assert_in_range(c.limit, 6, 7);
}

/* Raises refused again and again come less and less often, down to one
 * in 21 full looks: over a long run, a worker of capacity 4 spends almost
 * all its looks at 4. */
static void test_probes_back_off(void **state)
{
	(void)state;
	struct capacity c = {0};
	simulate(&c, 4, 200);
	unsigned above = 0, at = 0;
	for (int i = 0; i < 420; i++) {
		simulate(&c, 4, 1);
		above += c.limit > 4;
		at += c.limit == 4;
	}
	assert_int_equal(above + at, 420);
	if (above > 420 / 21 + 1)
		fail_msg("%u looks of 420 above the capacity", above);
	assert_int_equal(c.backoff, 20);
}

/* A refusal between looks: a raise refused comes down at once; with no
 * limit, the first comes from the last look's requests in flight; else
 * the look judges. */
static void test_refusal_between_looks(void **state)
{
	(void)state;
	struct capacity c = {.limit = 4, .step = 1};
	assert_int_equal(look(&c, 0, 4, 0), CAPACITY_RAISED);
	assert_int_equal(c.limit, 5);
	assert_int_equal(capacity_on_refusal(&c, 5, 0), CAPACITY_LOWERED);
	assert_int_equal(c.limit, 4);
	assert_int_equal(c.backoff, 1);
	/* Not probing any more: the next refusal waits for the look, and
	 * that look's refusals may be the lag of the raise. */
	assert_int_equal(capacity_on_refusal(&c, 4, 0), CAPACITY_UNCHANGED);
	assert_int_equal(look(&c, 3, 4, 0), CAPACITY_UNCHANGED);
	assert_int_equal(c.limit, 4);

	c = (struct capacity){0};
	assert_int_equal(capacity_on_refusal(&c, 1, 0), CAPACITY_UNCHANGED);
	assert_int_equal(capacity_on_refusal(&c, 6, 0), CAPACITY_LOWERED);
	assert_int_equal(c.limit, 5);
}

/* A server with no limit among limited ones starts at their largest and
 * doubles while full, until its first refusal; one with a limit keeps it. */
static void test_join(void **state)
{
	(void)state;
	struct capacity c = {0};
	capacity_join(&c, 0);
	assert_int_equal(c.limit, 0);
	capacity_join(&c, 4);
	assert_int_equal(c.limit, 4);
	const uint32_t climb[] = {8, 16, 32};
	for (size_t i = 0; i < sizeof(climb) / sizeof(climb[0]); i++) {
		assert_int_equal(look(&c, 0, c.limit, 0), CAPACITY_RAISED);
		assert_int_equal(c.limit, climb[i]);
	}
	assert_int_equal(look(&c, 0, 20, 0), CAPACITY_UNCHANGED); /* room left */
	assert_int_equal(look(&c, 5, 32, 0), CAPACITY_LOWERED);   /* the edge */
	assert_int_equal(c.limit, 31);
	assert_int_equal(c.slow_start_to, 0);
	capacity_join(&c, 2);
	assert_int_equal(c.limit, 31);
}

/* A limit speaks for the neighbours only once the worker answered under
 * it: one that refuses everything, however much a look found it holding
 * (a slow refusal), never does; nor a limit at the floor; and a limit
 * judged anew (a trip, forgotten) must be answered under again. */
static void test_speaks_for_neighbours(void **state)
{
	(void)state;
	struct capacity refuses_all = {0};
	assert_int_equal(look_answered(&refuses_all, 12, 8, 0, 0), CAPACITY_LOWERED);
	assert_int_equal(refuses_all.limit, 7);
	for (int i = 0; i < 20; i++) {
		look_answered(&refuses_all, 9, refuses_all.limit, 0, 0);
		assert_false(capacity_speaks_for_neighbours(&refuses_all));
	}
	assert_int_equal(refuses_all.limit, CAPACITY_FLOOR);

	/* Answers of the look that set the first limit came before it. */
	struct capacity serves = {0};
	assert_int_equal(look_answered(&serves, 3, 5, 0, 40), CAPACITY_LOWERED);
	assert_int_equal(serves.limit, 4);
	assert_false(capacity_speaks_for_neighbours(&serves));
	look_answered(&serves, 0, 2, 0, 0);
	assert_false(capacity_speaks_for_neighbours(&serves));
	look_answered(&serves, 0, 3, 0, 25);
	assert_true(capacity_speaks_for_neighbours(&serves));
	/* Refusing everything from then on: what it answered stays said. */
	look_answered(&serves, 4, 4, 0, 0);
	assert_true(capacity_speaks_for_neighbours(&serves));

	/* A trip: judged anew. */
	capacity_slow_start(&serves, 1);
	assert_false(capacity_speaks_for_neighbours(&serves));
	look_answered(&serves, 0, 1, 0, 3);
	assert_int_equal(serves.limit, 2);
	assert_true(capacity_speaks_for_neighbours(&serves));
	capacity_forget(&serves);
	assert_false(capacity_speaks_for_neighbours(&serves));

	/* At the floor, answered or not, it speaks for none. */
	struct capacity one = {0};
	look_answered(&one, 5, 2, 0, 0);
	assert_int_equal(one.limit, CAPACITY_FLOOR);
	look_answered(&one, 0, 1, 0, 30);
	assert_int_equal(one.limit, 2); /* full and unrefused: raised */
	look_answered(&one, 1, 2, 0, 10);
	assert_int_equal(one.limit, CAPACITY_FLOOR);
	assert_false(capacity_speaks_for_neighbours(&one));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_table),
		cmocka_unit_test(test_slow_start),
		cmocka_unit_test(test_settles_and_follows),
		cmocka_unit_test(test_probes_back_off),
		cmocka_unit_test(test_refusal_between_looks),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_speaks_for_neighbours),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
