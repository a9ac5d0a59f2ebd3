/*
 * test_haproxy_record.c - the one life of the records HAProxy keeps for
 * the agent (haproxy_record.h), for each of the four: found or missing in
 * `show map`, the read of a look believed or not against the commands in
 * flight, and what HAProxy has against what the agent wants turned into
 * the one command that puts it right.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "expect_command.h"

#include "records/haproxy_record.h"
#include "records/owner_map.h"
#include "records/retry_map.h"
#include "records/verdicts.h"
#include "records/watched_map.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const struct haproxy_record_ops *const maps[] = {&owner_map_ops, &retry_map_ops,
							&watched_map_ops};

static const char show_map_all[] =
	"# id (file) description\n"
	"-1 (/etc/haproxy/breaker-owned.map) pattern loaded from file '/etc/haproxy/breaker-owned.map' used by acl at file 'h.cfg' line 12. curr_ver=0 next_ver=0 entry_cnt=0\n"
	"-2 (breaker-retry-at.map) pattern loaded from file 'breaker-retry-at.map' used by map at file 'h.cfg' line 20. curr_ver=0 next_ver=0 entry_cnt=0\n"
	"-3 (maps/breaker-watched.map) pattern loaded from file 'maps/breaker-watched.map' used by acl at file 'h.cfg' line 30. curr_ver=0 next_ver=0 entry_cnt=0\n";
static const char show_map_none[] = "# id (file) description\n";
static const char show_map_unsafe[] =
	"# id (file) description\n"
	"-1 (/etc/ha proxy/breaker-owned.map) pattern\n"
	"-2 (/x;y/breaker-retry-at.map) pattern\n"
	"-3 (a$b/breaker-watched.map) pattern\n";

/* Found, still there, lost, never there, and listed under a path no
 * command may carry: for each map. */
static void test_search(void **state)
{
	(void)state;
	static const char *const paths[] = {"/etc/haproxy/breaker-owned.map", "breaker-retry-at.map",
					    "maps/breaker-watched.map"};
	for (size_t i = 0; i < ARRAY_SIZE(maps); i++) {
		struct haproxy_record r = {0};
		assert_int_equal(haproxy_record_search(&r, maps[i], show_map_none,
						       strlen(show_map_none)),
				 RECORD_STILL);
		assert_string_equal(r.where, "");
		assert_int_equal(haproxy_record_search(&r, maps[i], show_map_all,
						       strlen(show_map_all)),
				 RECORD_FOUND);
		assert_string_equal(r.where, paths[i]);
		assert_false(r.known); /* read before written */
		r.known = true;
		assert_int_equal(haproxy_record_search(&r, maps[i], show_map_all,
						       strlen(show_map_all)),
				 RECORD_STILL);
		assert_true(r.known); /* found where it was: what was read still holds */
		assert_int_equal(haproxy_record_search(&r, maps[i], show_map_none,
						       strlen(show_map_none)),
				 RECORD_LOST);
		assert_string_equal(r.where, "");
		assert_false(r.known);
		assert_int_equal(haproxy_record_search(&r, maps[i], show_map_unsafe,
						       strlen(show_map_unsafe)),
				 RECORD_UNSAFE);
		assert_string_equal(r.where, "");
	}
}

/* A look reads each record with `show map PATH`, the table with `show
 * table NAME`; one not found is not read. */
static void test_show(void **state)
{
	(void)state;
	char buf[HAPROXY_RECORD_CMD_MAX];
	struct haproxy_record r = {0};
	for (size_t i = 0; i < ARRAY_SIZE(maps); i++)
		assert_false(haproxy_record_show_cmd(buf, sizeof(buf), maps[i], &r));
	snprintf(r.where, sizeof(r.where), "breaker-owned.map");
	assert_true(haproxy_record_show_cmd(buf, sizeof(buf), &owner_map_ops, &r));
	assert_string_equal(buf, "show map breaker-owned.map");
	snprintf(r.where, sizeof(r.where), "breaker_verdicts");
	assert_true(haproxy_record_show_cmd(buf, sizeof(buf), &verdict_table_ops, &r));
	assert_string_equal(buf, "show table breaker_verdicts");
}

/* The look queued when `after` commands were done; the record's last
 * command numbered `last`: believed only when it follows that command. */
static void test_stale_while_in_flight(void **state)
{
	(void)state;
	static const struct {
		bool read;
		uint64_t after, last;
		bool readable;
	} rows[] = {
		{true, 0, 0, true},   /* no command ever */
		{true, 5, 5, true},   /* the last command was done when the look was queued */
		{true, 5, 3, true},
		{true, 5, 6, false},  /* one went out after: the look shows the record before it */
		{false, 5, 5, false}, /* the look did not read it */
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		struct haproxy_record r = {.read = rows[i].read, .last_command = rows[i].last};
		assert_int_equal(haproxy_record_readable(&r, rows[i].after), rows[i].readable);
		assert_int_equal(haproxy_record_predates(rows[i].after, rows[i].last),
				 rows[i].last > rows[i].after);
	}
}

/* have -> want, for each record, into the one command (NULL: none). */
static const struct {
	const struct haproxy_record_ops *ops;
	const char *where, *backend, *server, *have, *want, *command;
} diffs[] = {
	{&owner_map_ops, "o.map", "workers", "w1", NULL, "drain", "add map o.map workers/w1 drain"},
	{&owner_map_ops, "o.map", "workers", "w1", "drain", "drain,maxconn=50",
	 "set map o.map workers/w1 drain,maxconn=50"},
	{&owner_map_ops, "o.map", "workers", "w1", "drain", NULL, "del map o.map workers/w1"},
	{&owner_map_ops, "o.map", "workers", "w1", "drain", "drain", NULL},
	{&owner_map_ops, "o.map", "workers", "w1", NULL, NULL, NULL},
	{&retry_map_ops, "r.map", "workers", NULL, NULL, "1796062829",
	 "add map r.map workers 1796062829"},
	{&retry_map_ops, "r.map", "workers", NULL, "1796062829", "1796062830", NULL}, /* within a second */
	{&retry_map_ops, "r.map", "workers", NULL, "1796062830", "1796062829", NULL},
	{&retry_map_ops, "r.map", "workers", NULL, "1796062829", "1796062831",
	 "set map r.map workers 1796062831"},
	{&retry_map_ops, "r.map", "workers", NULL, "1796062829", NULL, "del map r.map workers"},
	{&watched_map_ops, "w.map", "workers", "w3", NULL, "1", "add map w.map w3@workers 1"},
	{&watched_map_ops, "w.map", "workers", "w3", "1", NULL, "del map w.map w3@workers"},
	{&watched_map_ops, "w.map", "workers", "w3", "1", "1", NULL},
	/* The table: set whenever wanted (kept alive), never deleted. */
	{&verdict_table_ops, "breaker_verdicts", "workers", "w1", NULL, "data.gpt0 1 data.gpc0 9 data.gpc1 2",
	 "set table breaker_verdicts key workers/w1 data.gpt0 1 data.gpc0 9 data.gpc1 2"},
	{&verdict_table_ops, "breaker_verdicts", "workers", "w1", "data.gpt0 1 data.gpc0 9 data.gpc1 2",
	 "data.gpt0 1 data.gpc0 9 data.gpc1 2",
	 "set table breaker_verdicts key workers/w1 data.gpt0 1 data.gpc0 9 data.gpc1 2"},
	{&verdict_table_ops, "breaker_verdicts", "workers", "w1", "data.gpt0 1", NULL, NULL},
	/* Names that would read back as another key, or inject: none. */
	{&owner_map_ops, "o.map", "a/b", "w1", NULL, "drain", NULL},
	{&watched_map_ops, "w.map", "workers", "w@3", NULL, "1", NULL},
	{&retry_map_ops, "r.map", "a/b", NULL, NULL, "5", NULL},
	{&retry_map_ops, "r.map", "w;show info", NULL, NULL, "5", NULL},
	{&verdict_table_ops, "t", "workers", "w 1", NULL, "data.gpt0 1", NULL},
	/* Not found: no path, no command. */
	{&owner_map_ops, "", "workers", "w1", NULL, "drain", NULL},
};

static void test_diff_to_command(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(diffs); i++) {
		char buf[HAPROXY_RECORD_CMD_MAX] = "left over";
		bool built = haproxy_record_cmd(buf, sizeof(buf), diffs[i].ops, diffs[i].where,
						diffs[i].backend, diffs[i].server, diffs[i].have,
						diffs[i].want);
		expect_command(built, buf, diffs[i].command);
	}
}

/* A key the verdict table would cut (and collide with another) is never
 * written; the maps take any two names. */
static void test_key_max(void **state)
{
	(void)state;
	char name[100], buf[HAPROXY_RECORD_CMD_MAX];
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_false(haproxy_record_key(buf, sizeof(buf), &verdict_table_ops, name, name));
	assert_true(haproxy_record_key(buf, sizeof(buf), &owner_map_ops, name, name));
	assert_true(haproxy_record_key(buf, sizeof(buf), &verdict_table_ops, "workers", "w1"));
	assert_string_equal(buf, "workers/w1");
	assert_true(haproxy_record_key(buf, sizeof(buf), &watched_map_ops, "workers", "w1"));
	assert_string_equal(buf, "w1@workers");
	assert_true(haproxy_record_key(buf, sizeof(buf), &retry_map_ops, "workers", NULL));
	assert_string_equal(buf, "workers");
}

/* What a walk handed over, one "BACKEND|SERVER|VALUE;" after another. */
static char walked[256];

static bool note(void *ctx, struct runtime_api_str backend, struct runtime_api_str server,
		 struct runtime_api_str value)
{
	(void)ctx;
	if (value.len == 1 && value.ptr[0] == 'x')
		return false; /* a value the record cannot read */
	size_t at = strlen(walked);
	snprintf(walked + at, sizeof(walked) - at, "%.*s|%.*s|%.*s;", (int)backend.len, backend.ptr,
		 (int)server.len, server.ptr, (int)value.len, value.ptr);
	return true;
}

/* Each map's key splits into its names; what is not an entry of it, or
 * a value it refuses, is counted skipped; an error is no list. */
static void test_walk(void **state)
{
	(void)state;
	static const char owner_reply[] = "0x1 workers/w1 drain\n0x2 workers@w1 drain\n"
					  "0x3 a/b/c drain\n0x4 workers/w2 x\n0x5 workers/w3\n\n";
	static const char watched_reply[] = "0x1 w3@workers 1\n0x2 workers/w3 1\n0x3 @workers 1\n";
	static const char retry_reply[] = "0x1 workers 17\n0x2 a/b 17\nnot an entry\n";
	unsigned skipped = 0;

	walked[0] = '\0';
	assert_true(haproxy_record_walk(&owner_map_ops, owner_reply, strlen(owner_reply), note, NULL,
					&skipped));
	assert_string_equal(walked, "workers|w1|drain;workers|w3|;"); /* no value: empty */
	assert_int_equal(skipped, 3);

	walked[0] = '\0';
	assert_true(haproxy_record_walk(&watched_map_ops, watched_reply, strlen(watched_reply), note,
					NULL, &skipped));
	assert_string_equal(walked, "workers|w3|1;");
	assert_int_equal(skipped, 2);

	walked[0] = '\0';
	assert_true(haproxy_record_walk(&retry_map_ops, retry_reply, strlen(retry_reply), note, NULL,
					&skipped));
	assert_string_equal(walked, "workers||17;");
	assert_int_equal(skipped, 2);

	static const char error[] = "Unknown map identifier. Please use #<id> or <file>.\n";
	for (size_t i = 0; i < ARRAY_SIZE(maps); i++)
		assert_false(haproxy_record_walk(maps[i], error, strlen(error), note, NULL, &skipped));
	assert_true(haproxy_record_walk(&owner_map_ops, "", 0, note, NULL, &skipped));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_search),
		cmocka_unit_test(test_show),
		cmocka_unit_test(test_stale_while_in_flight),
		cmocka_unit_test(test_diff_to_command),
		cmocka_unit_test(test_key_max),
		cmocka_unit_test(test_walk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
