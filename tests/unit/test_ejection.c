/*
 * test_ejection.c - the backend's ejection cap as tables: a backend's
 * servers (which breakers want a drain, since when; which are out already)
 * -> which may be drained.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/policy.h"
#include "link/ejection.h"

#define MAX_SERVERS 8

/* One server, by letter:
 *   .  serving, its breaker closed
 *   w  serving, its breaker open: wants a drain
 *   D  drained by the agent, its breaker still open
 *   d  down by health check (or maintenance, an operator's drain), breaker closed
 *   x  down by health check, its breaker open too
 * Waiting order: the digit after a letter is when it began wanting the
 * drain (lower waited longer); without a digit, its position. */
struct row {
	const char *name;
	const char *servers;    /* e.g. "w1 w2 w3 ." */
	uint32_t percent;
	bool drain_last_server;
	const char *may_drain;  /* one char per server: 1 may, 0 may not, - does not want */
};

static const struct row rows[] = {
	/* The defaults: 50 %, never the last serving server. */
	{"3 of 4 failing: 2 drained, the one that waited least is capped",
	 "w1 w2 w3 .", 50, false, "110-"},
	{"the waiting order, not the position, decides",
	 "w3 w1 w2 .", 50, false, "011-"},
	{"4 of 4 failing: still 2", "w1 w2 w3 w4", 50, false, "1100"},
	{"1 of 1 failing: never drained (0 % of 1 server, and it is the last)",
	 "w1", 50, false, "0"},
	{"1 of 1 at 100 %: the last server is kept all the same", "w1", 100, false, "0"},
	{"1 of 1 at 100 % with drain_last_server: drained", "w1", 100, true, "1"},
	{"50 % of 3 rounds down to 1", "w1 w2 .", 50, false, "10-"},
	{"50 % of 2 is 1", "w1 w2", 50, false, "10"},
	{"0 % drains nothing", "w1 . . .", 0, false, "0---"},
	{"100 % of 4 keeps the last serving server", "w1 w2 w3 w4", 100, false, "1110"},
	{"100 % with drain_last_server drains all", "w1 w2 w3 w4", 100, true, "1111"},
	/* Drains in place. */
	{"a drain in place stays, and uses up the room", "D1 w2 w3 .", 50, false, "110-"},
	{"drains in place beyond the cap are not lifted", "D1 D2 D3 w4", 50, false, "1110"},
	{"room freed (a drained one closed): the longest waiting goes first",
	 "D1 . w3 w2", 50, false, "1-01"},
	/* Servers out for other reasons count against the cap. */
	{"a server down by health check uses up room", "d w1 w2 .", 50, false, "-10-"},
	{"two down of 4: no room left at 50 %", "d d w1 .", 50, false, "--0-"},
	{"an open breaker on a down server: drained freely, it serves nothing",
	 "x1 w2 . .", 50, false, "11--"},
	{"everything else down: the last serving server is kept", "d d d w1", 100, false, "---0"},
	{"10 servers at 50 %: 5", "w1 w2 w3 w4 w5 w6 w7 . . .", 50, false, "11111 00---"},
};

static size_t parse(const char *text, struct ejection_server *out)
{
	size_t n = 0;
	for (const char *p = text; *p; p++) {
		if (*p == ' ')
			continue;
		struct ejection_server s = {0};
		switch (*p) {
		case '.': break;
		case 'w': s.wants_drain = true; break;
		case 'D': s.wants_drain = true; s.drained_by_agent = true; break;
		case 'd': s.out_otherwise = true; break;
		case 'x': s.wants_drain = true; s.out_otherwise = true; break;
		default: fail_msg("bad server letter '%c'", *p);
		}
		s.wants_since_ms = 100 + n;
		if (p[1] >= '0' && p[1] <= '9')
			s.wants_since_ms = (uint64_t)(*++p - '0');
		assert_true(n < MAX_SERVERS * 2);
		out[n++] = s;
	}
	return n;
}

static void test_table(void **state)
{
	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct ejection_server servers[MAX_SERVERS * 2];
		size_t n = parse(rows[r].servers, servers);
		struct breaker_policy p;
		breaker_policy_defaults(&p);
		p.max_ejection_percent = rows[r].percent;
		p.drain_last_server = rows[r].drain_last_server;
		ejection_decide(&p, servers, n);

		char got[MAX_SERVERS * 2 + 1];
		char want[MAX_SERVERS * 2 + 1];
		size_t k = 0;
		for (const char *c = rows[r].may_drain; *c; c++)
			if (*c != ' ')
				want[k++] = *c;
		want[k] = '\0';
		for (size_t i = 0; i < n; i++)
			got[i] = !servers[i].wants_drain ? '-' : servers[i].may_drain ? '1' : '0';
		got[n] = '\0';
		if (strcmp(got, want) != 0)
			fail_msg("%s: %s -> %s, expected %s", rows[r].name, rows[r].servers, got, want);
	}
}

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

/* The enforcer's one-server form agrees with the table's. */
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
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_max_out_rounds_down),
		cmocka_unit_test(test_room),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
