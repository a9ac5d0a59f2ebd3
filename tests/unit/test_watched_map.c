/*
 * test_watched_map.c - steady-state mode's map of watched servers:
 * reading its entries as HAProxy lists them (SERVER@BACKEND keys), and
 * the add/del commands - none that a hostile path or name could turn into
 * another command.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "records/map_file.h"
#include "records/watched_map.h"

struct seen {
	char keys[8][64];
	int n;
};

static bool collect(void *ctx, struct runtime_api_str backend, struct runtime_api_str server,
		    struct runtime_api_str value)
{
	struct seen *s = ctx;
	(void)value;
	assert_true(s->n < 8);
	snprintf(s->keys[s->n++], sizeof(s->keys[0]), "%.*s/%.*s", (int)backend.len, backend.ptr,
		 (int)server.len, server.ptr);
	return true;
}

static void test_find(void **state)
{
	(void)state;
	/* `show map` on HAProxy 2.6.12 with spoe-breaker-steady.conf. */
	static const char list[] =
		"# id (file) description\n"
		"3 (breaker-retry-at.map) pattern loaded from file 'breaker-retry-at.map' used by map "
		"at file '/etc/haproxy/haproxy.cfg' line 64. curr_ver=0 next_ver=0 entry_cnt=0\n"
		"11 (breaker-watched.map) pattern loaded from file 'breaker-watched.map' used by map "
		"at file '/etc/haproxy/spoe-breaker-steady.conf' line 31. curr_ver=0 next_ver=0 "
		"entry_cnt=0\n\n";
	char path[64];
	assert_true(map_file_find(list, strlen(list), WATCHED_MAP_NAME, path, sizeof(path)));
	assert_string_equal(path, "breaker-watched.map");
}

static void test_parse(void **state)
{
	(void)state;
	struct seen s = {0};
	unsigned skipped = 0;

	assert_true(watched_map_parse("\n", 1, collect, &s, &skipped));
	assert_int_equal(s.n, 0);
	static const char err[] = "Unknown map identifier. Please use #<id> or <file>.\n";
	assert_false(watched_map_parse(err, strlen(err), collect, &s, &skipped));

	static const char reply[] = "0x55d0c1a0 w3@workers 1\n"
				    "0x55d0c1b0 w1@other.be 1\n"
				    "0x55d0c1c0 no-at-sign 1\n"
				    "0x55d0c1d0 w;1@workers 1\n"
				    "0x55d0c1e0 @workers 1\n"
				    "0x55d0c1f0 w2@ 1\n"
				    "0x55d0c200 w4@workers\n"
				    "\n";
	assert_true(watched_map_parse(reply, strlen(reply), collect, &s, &skipped));
	assert_int_equal(s.n, 3);
	assert_string_equal(s.keys[0], "workers/w3");
	assert_string_equal(s.keys[1], "other.be/w1");
	/* A key without a value (an add map with none) still names a server. */
	assert_string_equal(s.keys[2], "workers/w4");
	assert_int_equal(skipped, 4);
}

static void test_commands(void **state)
{
	(void)state;
	char buf[128];
	const char *path = "breaker-watched.map";

	assert_true(watched_map_cmd(buf, sizeof(buf), path, "workers", "w3", true));
	assert_string_equal(buf, "add map breaker-watched.map w3@workers 1");
	assert_true(watched_map_cmd(buf, sizeof(buf), path, "workers", "w3", false));
	assert_string_equal(buf, "del map breaker-watched.map w3@workers");

	/* Hostile names and paths never make a command. */
	assert_false(watched_map_cmd(buf, sizeof(buf), path, "workers", "w3;shutdown", true));
	assert_string_equal(buf, "");
	assert_false(watched_map_cmd(buf, sizeof(buf), path, "a@b", "w3", true));
	assert_false(watched_map_cmd(buf, sizeof(buf), path, "workers", "w 3", false));
	assert_false(watched_map_cmd(buf, sizeof(buf), "x map;y", "workers", "w3", true));
	assert_false(watched_map_cmd(buf, 16, path, "workers", "w3", true));
	assert_string_equal(buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_commands),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
