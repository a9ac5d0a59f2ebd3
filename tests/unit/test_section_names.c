/*
 * test_section_names.c - INI sections against what HAProxy lists: a
 * section is unknown only once every HAProxy was read whole and none
 * lists it; said once; a near name offered only when it is an obvious
 * slip; `show backend` read a piece at a time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hapi/section_names.h"

struct said {
	char headers[8][SECTION_NAMES_FULL_MAX + 16];
	int n;
};

static void collect(void *ctx, const struct section_name *n)
{
	struct said *s = ctx;
	assert_true(s->n < 8);
	section_names_header(n, s->headers[s->n], sizeof(s->headers[0]));
	s->n++;
}

static void feed_backends(struct section_names *s, unsigned source, const char *reply)
{
	struct section_backends_stream st;
	section_backends_stream_init(&st, s, source);
	size_t used = section_backends_stream_feed(&st, reply, strlen(reply), true);
	assert_int_equal(used, strlen(reply));
	section_names_backends_end(s, source, section_backends_stream_usable(&st));
}

static void server(struct section_names *s, unsigned source, const char *be, const char *srv)
{
	section_names_note_server(s, source, be, strlen(be), srv, strlen(srv));
}

/* The sections of the examples: a misspelt backend, a server that does
 * not exist, and three that are right, one of a backend without servers. */
static void sections(struct section_names *s, unsigned sources, bool hints)
{
	section_names_init(s, sources, hints);
	assert_true(section_names_add(s, "be_statc", NULL, 3));
	assert_true(section_names_add(s, "be_static", "s9", 5));
	assert_true(section_names_add(s, "be_static", NULL, 7));
	assert_true(section_names_add(s, "be_static", "s1", 9));
	assert_true(section_names_add(s, "empty", "", 11));
	section_names_sort(s);
}

/* HAProxy source's listings: be_static with s1 and s2, empty with none. */
static void look(struct section_names *s, unsigned source, struct said *said)
{
	section_names_look_start(s, source);
	feed_backends(s, source, "# name\nbe_static\nempty\n\n");
	server(s, source, "be_static", "s1");
	server(s, source, "be_static", "s2");
	section_names_look_end(s, source, true, collect, said);
}

static void test_unknown_said_once(void **state)
{
	(void)state;
	struct section_names s;
	struct said said = {0};
	sections(&s, 1, false);
	look(&s, 0, &said);
	assert_true(section_names_known(&s));
	assert_int_equal(said.n, 2);
	assert_string_equal(said.headers[0], "backend be_statc");
	assert_string_equal(said.headers[1], "server be_static/s9");
	/* The next look says nothing more; the list stays. */
	look(&s, 0, &said);
	assert_int_equal(said.n, 2);
	struct said listed = {0};
	section_names_each_unlisted(&s, collect, &listed);
	assert_int_equal(listed.n, 2);
	section_names_free(&s);
}

static void test_listed_by_any_haproxy(void **state)
{
	(void)state;
	struct section_names s;
	struct said said = {0};
	sections(&s, 2, false);
	/* The first HAProxy read: nothing is judged while the second is not. */
	look(&s, 0, &said);
	assert_false(section_names_known(&s));
	assert_int_equal(said.n, 0);
	/* The second lists be_statc (a backend of its own, no servers). */
	section_names_look_start(&s, 1);
	feed_backends(&s, 1, "# name\nbe_statc\n\n");
	section_names_look_end(&s, 1, true, collect, &said);
	assert_true(section_names_known(&s));
	assert_int_equal(said.n, 1);
	assert_string_equal(said.headers[0], "server be_static/s9");
	section_names_free(&s);
}

static void test_incomplete_reads_change_nothing(void **state)
{
	(void)state;
	struct section_names s;
	struct said said = {0};
	sections(&s, 1, false);
	/* `show backend` answered with an error: backends not read, nothing
	 * judged. */
	section_names_look_start(&s, 0);
	feed_backends(&s, 0, "Unknown command.\n");
	server(&s, 0, "be_static", "s1");
	section_names_look_end(&s, 0, true, collect, &said);
	assert_false(section_names_known(&s));
	/* Then a look whose servers were cut short: judged at the next
	 * whole one only. */
	section_names_look_start(&s, 0);
	feed_backends(&s, 0, "# name\nbe_static\nempty\n\n");
	section_names_look_end(&s, 0, false, collect, &said);
	assert_int_equal(said.n, 0);
	look(&s, 0, &said);
	assert_int_equal(said.n, 2);
	/* A later look cut short keeps what the last whole one listed. */
	section_names_look_start(&s, 0);
	feed_backends(&s, 0, "# name\nbe_sta");
	section_names_look_end(&s, 0, false, collect, &said);
	struct section_name *empty = section_names_find(&s, "empty", 5, "", 0);
	assert_non_null(empty);
	assert_true(section_names_listed(empty));
	section_names_free(&s);
}

static void test_said_again_after_it_came_back(void **state)
{
	(void)state;
	struct section_names s;
	struct said said = {0};
	section_names_init(&s, 1, false);
	assert_true(section_names_add(&s, "be", "w1", 1));
	section_names_sort(&s);
	section_names_look_start(&s, 0);
	feed_backends(&s, 0, "# name\nbe\n\n");
	section_names_look_end(&s, 0, true, collect, &said);
	assert_int_equal(said.n, 1);
	/* A dynamic server of that name added: listed, not said. */
	section_names_look_start(&s, 0);
	server(&s, 0, "be", "w1");
	section_names_look_end(&s, 0, true, collect, &said);
	assert_int_equal(said.n, 1);
	/* Deleted again: said again. */
	section_names_look_start(&s, 0);
	section_names_look_end(&s, 0, true, collect, &said);
	assert_int_equal(said.n, 2);
	section_names_free(&s);
}

static void test_carry_said(void **state)
{
	(void)state;
	struct section_names before, after;
	struct said said = {0};
	sections(&before, 1, false);
	look(&before, 0, &said);
	assert_int_equal(said.n, 2);
	/* A reload keeps the misspelt backend and adds another typo. */
	section_names_init(&after, 1, false);
	assert_true(section_names_add(&after, "be_statc", NULL, 3));
	assert_true(section_names_add(&after, "nowhere", NULL, 4));
	section_names_sort(&after);
	section_names_carry_said(&after, &before);
	said.n = 0;
	look(&after, 0, &said);
	assert_int_equal(said.n, 1);
	assert_string_equal(said.headers[0], "backend nowhere");
	section_names_free(&before);
	section_names_free(&after);
}

static const struct {
	const char *a, *b;
	unsigned max, want;
} distances[] = {
	{"be_static", "be_static", 2, 0},
	{"be_statc", "be_static", 2, 1},  /* a letter left out */
	{"be_sattic", "be_static", 2, 2}, /* two swapped: two substitutions */
	{"workers", "wrokers", 2, 2},
	{"abc", "xyz", 2, 3},             /* more than max: max + 1 */
	{"a", "abcd", 2, 3},              /* the lengths alone say so */
	{"", "ab", 2, 2},
	{"kitten", "sitting", 3, 3},
	{"kitten", "sitting", 2, 3},
	{"s9", "s1", 2, 1},
};

static void test_distance_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(distances) / sizeof(distances[0]); i++) {
		unsigned got =
			section_names_distance(distances[i].a, strlen(distances[i].a), distances[i].b,
					       strlen(distances[i].b), distances[i].max);
		if (got != distances[i].want)
			fail_msg("%s / %s (max %u): got %u, want %u", distances[i].a, distances[i].b,
				 distances[i].max, got, distances[i].want);
	}
}

static void test_near_names(void **state)
{
	(void)state;
	struct section_names s;
	struct said said = {0};
	sections(&s, 1, true);
	assert_true(section_names_add(&s, "be_statc", "s1", 13)); /* its backend misspelt */
	assert_true(section_names_add(&s, "zz", NULL, 15));       /* nothing near */
	assert_true(section_names_add(&s, "app", NULL, 17));      /* two as near */
	section_names_sort(&s);
	section_names_look_start(&s, 0);
	feed_backends(&s, 0, "# name\nbe_static\nempty\napp1\napp2\n\n");
	server(&s, 0, "be_static", "s1");
	server(&s, 0, "be_static", "s2");
	section_names_look_end(&s, 0, true, collect, &said);

	struct section_name *n = section_names_find(&s, "be_statc", 8, "", 0);
	assert_string_equal(n->near, "be_static");
	assert_int_equal(n->near_distance, 1);
	assert_false(n->near_tied);
	n = section_names_find(&s, "be_statc", 8, "s1", 2);
	assert_string_equal(n->near, "be_static/s1");
	/* s9 is one edit from s1 and s2, and a two-letter name: another
	 * server, not a slip. */
	n = section_names_find(&s, "be_static", 9, "s9", 2);
	assert_string_equal(n->near, "");
	n = section_names_find(&s, "zz", 2, "", 0);
	assert_string_equal(n->near, "");
	n = section_names_find(&s, "app", 3, "", 0);
	assert_true(n->near_tied);
	section_names_free(&s);
}

/* `show backend` split anywhere gives the same names. */
static void test_backends_any_split(void **state)
{
	(void)state;
	static const char reply[] = "# name\nbe_static\nempty\n\n";
	size_t len = sizeof(reply) - 1;
	for (size_t cut = 0; cut <= len; cut++) {
		struct section_names s;
		sections(&s, 1, false);
		section_names_look_start(&s, 0);
		struct section_backends_stream st;
		section_backends_stream_init(&st, &s, 0);
		size_t used = section_backends_stream_feed(&st, reply, cut, false);
		char rest[sizeof(reply)];
		memcpy(rest, reply + used, len - used);
		assert_int_equal(section_backends_stream_feed(&st, rest, len - used, true),
				 len - used);
		assert_true(section_backends_stream_usable(&st));
		section_names_backends_end(&s, 0, true);
		assert_true(section_names_listed(section_names_find(&s, "be_static", 9, "", 0)));
		assert_true(section_names_listed(section_names_find(&s, "empty", 5, "", 0)));
		assert_false(section_names_listed(section_names_find(&s, "be_statc", 8, "", 0)));
		section_names_free(&s);
	}
}

static void test_bounds(void **state)
{
	(void)state;
	struct section_names s;
	char longer[NAME_MAX_LEN + 2];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	section_names_init(&s, SECTION_NAMES_MAX_SOURCES + 4, false);
	assert_int_equal(s.nb_sources, SECTION_NAMES_MAX_SOURCES);
	assert_false(section_names_add(&s, longer, NULL, 1));
	assert_int_equal(s.nb, 0);
	/* No HAProxy at all: never known, nothing said. */
	section_names_init(&s, 0, false);
	assert_true(section_names_add(&s, "be", NULL, 1));
	section_names_sort(&s);
	assert_false(section_names_known(&s));
	section_names_free(&s);
	section_names_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unknown_said_once),
		cmocka_unit_test(test_listed_by_any_haproxy),
		cmocka_unit_test(test_incomplete_reads_change_nothing),
		cmocka_unit_test(test_said_again_after_it_came_back),
		cmocka_unit_test(test_carry_said),
		cmocka_unit_test(test_distance_table),
		cmocka_unit_test(test_near_names),
		cmocka_unit_test(test_backends_any_split),
		cmocka_unit_test(test_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
