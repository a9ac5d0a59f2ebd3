/*
 * test_steady_support.c - whether steady-state mode can work, as a table:
 * (messages seen, links, links not looked yet, links with the watched map)
 * -> the judgement.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "link/steady_support.h"

static const struct {
	const char *what;
	uint64_t messages;
	struct steady_links links;
	enum steady_support want;
} cases[] = {
	{"every-response mode, no socket", 0, {0, 0, 0}, STEADY_SUPPORT_UNUSED},
	{"every-response mode, a socket", 0, {1, 0, 0}, STEADY_SUPPORT_UNUSED},
	{"steady, no runtime_api at all", 5, {0, 0, 0}, STEADY_SUPPORT_UNKEPT},
	{"steady, the socket's HAProxy has no map", 5, {1, 0, 0}, STEADY_SUPPORT_UNKEPT},
	{"steady, the socket has not been read yet", 5, {1, 1, 0}, STEADY_SUPPORT_PENDING},
	{"steady, the map is kept", 5, {1, 0, 1}, STEADY_SUPPORT_KEPT},
	{"steady, one of two keeps it", 5, {2, 0, 1}, STEADY_SUPPORT_KEPT},
	{"steady, one keeps it, one not read yet", 5, {2, 1, 1}, STEADY_SUPPORT_KEPT},
	{"steady, one not read yet, one without", 5, {2, 1, 0}, STEADY_SUPPORT_PENDING},
};

static void test_judgement_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum steady_support got = steady_support_judge(cases[i].messages, cases[i].links);
		if (got != cases[i].want)
			fail_msg("%s: got %s, want %s", cases[i].what, steady_support_name(got),
				 steady_support_name(cases[i].want));
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(steady_support_name(STEADY_SUPPORT_UNUSED), "unused");
	assert_string_equal(steady_support_name(STEADY_SUPPORT_KEPT), "kept");
	assert_string_equal(steady_support_name(STEADY_SUPPORT_PENDING), "pending");
	assert_string_equal(steady_support_name(STEADY_SUPPORT_UNKEPT), "unkept");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_judgement_table),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
