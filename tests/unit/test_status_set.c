/*
 * test_status_set.c - status lists as operators write them: what parses to
 * what, what is refused with which message, and that formatting reads back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/breaker.h"

/* Every bit the set holds, in range or not: a stray bit would show. */
static unsigned count_bits(const struct status_set *set)
{
	unsigned n = 0;
	for (size_t i = 0; i < STATUS_SET_WORDS; i++)
		n += (unsigned)__builtin_popcountll(set->bits[i]);
	return n;
}

/* (text) -> (compact form), for lists that must parse. */
static const struct {
	const char *text;
	const char *formatted;
	unsigned count;
} valid_lists[] = {
	{"429,503", "429,503", 2},
	{"503,429", "429,503", 2},
	{"500-599", "500-599", 100},
	{"500-502, 504", "500-502,504", 4},
	{" 429 , 503 ", "429,503", 2},
	{"500 - 502", "500-502", 3},
	{"\t503\t", "503", 1},
	{"503,500-599", "500-599", 100},  /* overlapping items are harmless */
	{"503,503", "503", 1},
	{"500-501", "500,501", 2},        /* two in a row read better as a list */
	{"503-503", "503", 1},
	{"100", "100", 1},
	{"599", "599", 1},
	{"100-599", "100-599", 500},
	{"0503", "503", 1},
	{"none", "none", 0},
	{"  none  ", "none", 0},
	{"429,500-502,504-599", "429,500-502,504-599", 100},
	/* The default sets, as /state and --check print them. */
	{"529,503,429", "429,503,529", 3},
	{"500-502,504-528,530-599", "500-502,504-528,530-599", 98},
};

static void test_parse_valid(void **state)
{
	for (size_t i = 0; i < sizeof(valid_lists) / sizeof(valid_lists[0]); i++) {
		struct status_set set;
		char err[256] = "";
		char out[STATUS_SET_FORMAT_MAX];

		if (!status_set_parse(&set, valid_lists[i].text, err, sizeof(err)))
			fail_msg("\"%s\" refused: %s", valid_lists[i].text, err);
		status_set_format(&set, out, sizeof(out));
		if (strcmp(out, valid_lists[i].formatted) != 0)
			fail_msg("\"%s\" formats as \"%s\", expected \"%s\"", valid_lists[i].text,
				 out, valid_lists[i].formatted);
		assert_int_equal(count_bits(&set), valid_lists[i].count);
	}
}

/* (text) -> (words the message must hold), for lists that must not parse. */
static const struct {
	const char *text;
	const char *message_has;
} invalid_lists[] = {
	{"99", "99 is not an HTTP status"},
	{"600", "600 is not an HTTP status"},
	{"0", "0 is not an HTTP status"},
	{"429,600", "item 2 \"600\""},
	{"500-600", "600 is not an HTTP status"},
	{"99-200", "99 is not an HTTP status"},
	{"5x0", "item 1 \"5x0\": not a status"},
	{"503a", "not a status"},
	{"abc", "not a status"},
	{"504-500", "reversed range"},
	{"599-500", "500-599"}, /* the message shows the fix */
	{"429,,503", "item 2 is empty"},
	{"429,", "item 2 is empty"},
	{",429", "item 1 is empty"},
	{"429, ,503", "item 2 is empty"},
	{"", "empty status list"},
	{"   ", "empty status list"},
	{"500-", "not a status"},
	{"-500", "not a status"},
	{"500--502", "not a status"},
	{"500-502-504", "not a status"},
	{"+503", "not a status"},
	{"-1", "not a status"},
	{"5 03", "not a status"},
	{"99999999999999999999", "not a status"},
	{"none,429", "\"none\" must stand alone"},
	{"429,none", "item 2: \"none\" must stand alone"},
	{"NONE", "not a status"},
	{"429;503", "not a status"},
};

static void test_parse_invalid(void **state)
{
	for (size_t i = 0; i < sizeof(invalid_lists) / sizeof(invalid_lists[0]); i++) {
		struct status_set set, untouched;
		char err[256] = "";

		status_set_clear(&set);
		status_set_add(&set, 418);
		untouched = set;
		if (status_set_parse(&set, invalid_lists[i].text, err, sizeof(err)))
			fail_msg("\"%s\" accepted", invalid_lists[i].text);
		if (!strstr(err, invalid_lists[i].message_has))
			fail_msg("\"%s\": message \"%s\" lacks \"%s\"", invalid_lists[i].text, err,
				 invalid_lists[i].message_has);
		/* A refused list leaves the previous value in place. */
		assert_memory_equal(set.bits, untouched.bits, sizeof(set.bits));
	}
}

/* A tiny message buffer is still NUL-terminated, and NULL is allowed. */
static void test_parse_error_buffer(void **state)
{
	struct status_set set;
	char err[8];

	memset(err, 'x', sizeof(err));
	assert_false(status_set_parse(&set, "5x0", err, sizeof(err)));
	assert_int_equal(strlen(err), sizeof(err) - 1);
	assert_false(status_set_parse(&set, "5x0", NULL, 0));
}

/* format(parse(x)) is stable, and parse(format(s)) == s, on many sets. */
static void test_format_round_trip(void **state)
{
	uint64_t seed = 0x9e3779b97f4a7c15u;

	for (int round = 0; round < 2000; round++) {
		struct status_set set, back;
		char text[STATUS_SET_FORMAT_MAX];
		char err[256];
		/* Densities from sparse to full, so runs of every length occur. */
		unsigned density = (unsigned)(round % 17);

		status_set_clear(&set);
		for (int s = STATUS_SET_MIN; s <= STATUS_SET_MAX; s++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			if (seed % 16 < density)
				status_set_add(&set, s);
		}
		size_t len = status_set_format(&set, text, sizeof(text));
		assert_true(len < sizeof(text));
		assert_int_equal(len, strlen(text));
		if (!status_set_parse(&back, text, err, sizeof(err)))
			fail_msg("formatted \"%s\" refused: %s", text, err);
		assert_memory_equal(set.bits, back.bits, sizeof(set.bits));
	}
}

/* The densest pattern for the formatter still fits STATUS_SET_FORMAT_MAX. */
static void test_format_worst_case_fits(void **state)
{
	static const unsigned patterns[] = {0x1, 0x3, 0x5, 0xb, 0x1b};
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		for (unsigned period = 2; period <= 6; period++) {
			struct status_set set;
			char text[STATUS_SET_FORMAT_MAX];
			status_set_clear(&set);
			for (int s = STATUS_SET_MIN; s <= STATUS_SET_MAX; s++)
				if ((patterns[i] >> ((unsigned)s % period)) & 1)
					status_set_add(&set, s);
			assert_true(status_set_format(&set, text, sizeof(text)) < sizeof(text));
		}
	}
}

/* snprintf-like truncation: the full length comes back, the buffer ends in NUL. */
static void test_format_truncation(void **state)
{
	struct status_set set;
	char small[6];

	status_set_clear(&set);
	status_set_add(&set, 429);
	status_set_add_range(&set, 500, 599);
	memset(small, 'x', sizeof(small));
	assert_int_equal(status_set_format(&set, small, sizeof(small)), strlen("429,500-599"));
	assert_string_equal(small, "429,5");
	assert_int_equal(status_set_format(&set, NULL, 0), strlen("429,500-599"));
}

static void test_set_operations(void **state)
{
	struct status_set a, b, out;
	char text[STATUS_SET_FORMAT_MAX];

	status_set_clear(&a);
	assert_true(status_set_is_empty(&a));
	assert_false(status_set_add(&a, 99));
	assert_false(status_set_add(&a, 600));
	assert_false(status_set_add(&a, -5));
	assert_false(status_set_add_range(&a, 510, 500));
	assert_false(status_set_add_range(&a, 500, 600));
	assert_true(status_set_is_empty(&a));

	assert_true(status_set_add(&a, 100));
	assert_true(status_set_add(&a, 599));
	assert_true(status_set_contains(&a, 100));
	assert_true(status_set_contains(&a, 599));
	assert_false(status_set_contains(&a, 600));
	assert_false(status_set_contains(&a, 99));
	assert_false(status_set_contains(&a, -1));
	assert_false(status_set_contains(&a, 1 << 30));

	status_set_clear(&a);
	status_set_add_range(&a, 500, 599);
	status_set_clear(&b);
	status_set_add(&b, 429);
	status_set_add(&b, 503);

	status_set_intersect(&out, &a, &b);
	status_set_format(&out, text, sizeof(text));
	assert_string_equal(text, "503");

	status_set_difference(&out, &a, &b);
	status_set_format(&out, text, sizeof(text));
	assert_string_equal(text, "500-502,504-599");

	status_set_union(&out, &a, &b);
	status_set_format(&out, text, sizeof(text));
	assert_string_equal(text, "429,500-599");
	assert_int_equal(count_bits(&out), 101);

	/* In place: out aliasing an input. */
	status_set_difference(&a, &a, &b);
	assert_false(status_set_contains(&a, 503));
	status_set_clear(&out);
	status_set_add(&out, 500);
	status_set_difference(&a, &a, &out);
	assert_false(status_set_contains(&a, 500));
	assert_int_equal(count_bits(&a), 98);
	assert_memory_not_equal(a.bits, b.bits, sizeof(a.bits));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test(test_parse_error_buffer),
		cmocka_unit_test(test_format_round_trip),
		cmocka_unit_test(test_format_worst_case_fits),
		cmocka_unit_test(test_format_truncation),
		cmocka_unit_test(test_set_operations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
