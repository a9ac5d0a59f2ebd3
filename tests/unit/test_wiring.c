/*
 * test_wiring.c - what an HAProxy's configuration lacks: the Runtime API's
 * level, and backends whose traffic no SPOP message names, judged only
 * after enough of it over the grace (never at an agent's start).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "link/wiring.h"

#define GRACE 2000

struct reports {
	char names[8][NAME_MAX_LEN + 1];
	uint64_t responses[8];
	int n;
};

static void collect(void *ctx, const char *backend, uint64_t responses)
{
	struct reports *r = ctx;
	assert_true(r->n < 8);
	snprintf(r->names[r->n], sizeof(r->names[0]), "%s", backend);
	r->responses[r->n++] = responses;
}

static bool count_listed(void *ctx, const char *backend)
{
	(void)backend;
	(*(int *)ctx)++;
	return true;
}

static int listed(const struct wiring *w)
{
	int n = 0;
	wiring_each_unwired(w, count_listed, &n);
	assert_int_equal(n, (int)w->unwired);
	return n;
}

/* One look: `static` serves `per_look` more responses, never named;
 * `workers` as many, named. */
static void look(struct wiring *w, uint32_t id, uint64_t ms, uint64_t total, struct reports *r)
{
	assert_true(wiring_note_row(w, id, "static", 6, total / 2, false));
	assert_true(wiring_note_row(w, id, "static", 6, total - total / 2, false));
	assert_true(wiring_note_row(w, id, "workers", 7, total, true));
	wiring_end_look(w, id, ms, GRACE, false, collect, r);
}

static void test_level(void **state)
{
	(void)state;
	assert_int_equal(wiring_level_parse("admin\n", 6), WIRING_LEVEL_ADMIN);
	assert_int_equal(wiring_level_parse("operator\n", 9), WIRING_LEVEL_OPERATOR);
	assert_int_equal(wiring_level_parse("user", 4), WIRING_LEVEL_USER);
	assert_int_equal(wiring_level_parse("Unknown command: 'show cli level'\n", 34),
			 WIRING_LEVEL_UNKNOWN);
	assert_int_equal(wiring_level_parse("", 0), WIRING_LEVEL_UNKNOWN);
	assert_int_equal(wiring_level_parse("administrator\n", 14), WIRING_LEVEL_UNKNOWN);

	struct wiring w;
	memset(&w, 0, sizeof(w));
	assert_false(wiring_note_level(&w, WIRING_LEVEL_ADMIN));
	assert_false(wiring_note_level(&w, WIRING_LEVEL_UNKNOWN));
	/* Said once while it lasts, again after it was mended and broke. */
	assert_true(wiring_note_level(&w, WIRING_LEVEL_OPERATOR));
	assert_false(wiring_note_level(&w, WIRING_LEVEL_OPERATOR));
	assert_false(wiring_note_level(&w, WIRING_LEVEL_USER));
	assert_false(wiring_note_level(&w, WIRING_LEVEL_ADMIN));
	assert_true(wiring_note_level(&w, WIRING_LEVEL_USER));
	assert_string_equal(wiring_level_name(w.level), "user");
	wiring_free(&w);
}

static void test_unnamed_backend_reported_after_grace_and_volume(void **state)
{
	(void)state;
	struct wiring w;
	struct reports r = {0};
	memset(&w, 0, sizeof(w));

	look(&w, 1, 0, 100, &r); /* the watch starts: the baseline */
	look(&w, 2, GRACE - 1, 1000, &r);
	assert_int_equal(r.n, 0); /* not yet the grace, however much traffic */
	look(&w, 3, GRACE, 1000, &r);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.names[0], "static");
	assert_int_equal(r.responses[0], 900);
	assert_int_equal(listed(&w), 1);
	look(&w, 4, GRACE + 500, 2000, &r);
	assert_int_equal(r.n, 1); /* said once */
	assert_int_equal(listed(&w), 1);
	wiring_free(&w);
}

static void test_too_little_traffic_is_not_judged(void **state)
{
	(void)state;
	struct wiring w;
	struct reports r = {0};
	memset(&w, 0, sizeof(w));
	look(&w, 1, 0, 10, &r);
	look(&w, 2, 10 * GRACE, 10 + WIRING_MIN_RESPONSES - 1, &r);
	assert_int_equal(r.n, 0);
	look(&w, 3, 11 * GRACE, 10 + WIRING_MIN_RESPONSES, &r);
	assert_int_equal(r.n, 1);
	wiring_free(&w);
}

/* An agent that has just started: requests passed unnotified until
 * HAProxy's check marked it up, then SPOP names the backend. */
static void test_named_within_grace_is_wired(void **state)
{
	(void)state;
	struct wiring w;
	struct reports r = {0};
	memset(&w, 0, sizeof(w));
	assert_true(wiring_note_row(&w, 1, "workers", 7, 0, false));
	wiring_end_look(&w, 1, 0, GRACE, false, collect, &r);
	assert_true(wiring_note_row(&w, 2, "workers", 7, 500, false));
	wiring_end_look(&w, 2, GRACE / 2, GRACE, false, collect, &r);
	/* One server of two named is enough. */
	assert_true(wiring_note_row(&w, 3, "workers", 7, 400, false));
	assert_true(wiring_note_row(&w, 3, "workers", 7, 400, true));
	wiring_end_look(&w, 3, GRACE, GRACE, false, collect, &r);
	assert_true(wiring_note_row(&w, 4, "workers", 7, 9000, false));
	wiring_end_look(&w, 4, 10 * GRACE, GRACE, false, collect, &r);
	assert_int_equal(r.n, 0);
	assert_int_equal(listed(&w), 0);
	wiring_free(&w);
}

static void test_reported_backend_named_later_is_no_longer_listed(void **state)
{
	(void)state;
	struct wiring w;
	struct reports r = {0};
	memset(&w, 0, sizeof(w));
	look(&w, 1, 0, 0, &r);
	look(&w, 2, GRACE, 100, &r);
	assert_int_equal(listed(&w), 1);
	/* The operator added the filter line and reloaded. */
	assert_true(wiring_note_row(&w, 3, "static", 6, 120, true));
	wiring_end_look(&w, 3, GRACE + 100, GRACE, false, collect, &r);
	assert_int_equal(listed(&w), 0);
	wiring_free(&w);
}

/* Counters that start again (a new HAProxy process) restart the watch:
 * a drop is never read as a huge count. */
static void test_restart_starts_the_watch_again(void **state)
{
	(void)state;
	struct wiring w;
	struct reports r = {0};
	memset(&w, 0, sizeof(w));
	look(&w, 1, 0, 5000, &r);
	assert_true(wiring_note_row(&w, 2, "static", 6, 3, false));
	wiring_end_look(&w, 2, GRACE, GRACE, false, collect, &r); /* went down */
	assert_int_equal(r.n, 0);
	assert_true(wiring_note_row(&w, 3, "static", 6, 100, false));
	wiring_end_look(&w, 3, GRACE + 10, GRACE, true, collect, &r);
	assert_true(wiring_note_row(&w, 4, "static", 6, 200, false));
	wiring_end_look(&w, 4, GRACE + 20, GRACE, false, collect, &r);
	assert_int_equal(r.n, 0);
	assert_true(wiring_note_row(&w, 5, "static", 6, 300, false));
	wiring_end_look(&w, 5, 2 * GRACE + 20, GRACE, false, collect, &r);
	assert_int_equal(r.n, 1);
	wiring_free(&w);
}

/* A backend a reload removed is neither judged nor listed. */
static void test_backend_gone_is_not_listed(void **state)
{
	(void)state;
	struct wiring w;
	struct reports r = {0};
	memset(&w, 0, sizeof(w));
	look(&w, 1, 0, 0, &r);
	look(&w, 2, GRACE, 100, &r);
	assert_int_equal(listed(&w), 1);
	assert_true(wiring_note_row(&w, 3, "workers", 7, 100, true));
	wiring_end_look(&w, 3, GRACE + 1, GRACE, false, collect, &r);
	assert_int_equal(listed(&w), 0);
	wiring_free(&w);
}

/* Thousands of backends: the table grows, each keeps its own count. */
static void test_many_backends(void **state)
{
	(void)state;
	struct wiring w;
	struct reports r = {0};
	char name[32];
	memset(&w, 0, sizeof(w));
	for (uint32_t id = 1; id <= 2; id++) {
		for (int i = 0; i < 5000; i++) {
			int n = snprintf(name, sizeof(name), "be%d", i);
			/* Only be4321 is unwired. */
			assert_true(wiring_note_row(&w, id, name, (size_t)n, id * 100, i != 4321));
		}
		wiring_end_look(&w, id, (id - 1) * GRACE, GRACE, false, collect, &r);
	}
	assert_int_equal(w.count, 5000);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.names[0], "be4321");
	/* Names HAProxy cannot have are refused, not stored. */
	assert_false(wiring_note_row(&w, 3, "", 0, 1, false));
	char longname[NAME_MAX_LEN + 2];
	memset(longname, 'a', sizeof(longname));
	assert_false(wiring_note_row(&w, 3, longname, sizeof(longname), 1, false));
	wiring_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level),
		cmocka_unit_test(test_unnamed_backend_reported_after_grace_and_volume),
		cmocka_unit_test(test_too_little_traffic_is_not_judged),
		cmocka_unit_test(test_named_within_grace_is_wired),
		cmocka_unit_test(test_reported_backend_named_later_is_no_longer_listed),
		cmocka_unit_test(test_restart_starts_the_watch_again),
		cmocka_unit_test(test_backend_gone_is_not_listed),
		cmocka_unit_test(test_many_backends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
