/*
 * test_retry_map.c - HAProxy's record of when each backend may take
 * traffic again: finding the map in `show map`, reading its entries
 * (sorted, duplicates marked, junk skipped), and the one command that
 * brings an entry to the breakers' moment - none for a rounding, none that
 * a hostile path or name could turn into another command.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "records/map_file.h"
#include "records/retry_map.h"

/* `show map` on HAProxy 2.6.12, with the shipped haproxy.cfg. */
static const char list_reply[] =
	"# id (file) description\n"
	"3 (breaker-retry-at.map) pattern loaded from file 'breaker-retry-at.map' used by map at "
	"file '/etc/haproxy/haproxy.cfg' line 64. curr_ver=0 next_ver=0 entry_cnt=1\n"
	"21 (breaker-owned.map) pattern loaded from file 'breaker-owned.map' used by map at file "
	"'/etc/haproxy/haproxy.cfg' line 103. curr_ver=0 next_ver=0 entry_cnt=3\n"
	"\n";

static void test_find(void **state)
{
	(void)state;
	char path[64];
	assert_true(map_file_find(list_reply, strlen(list_reply), RETRY_MAP_NAME, path, sizeof(path)));
	assert_string_equal(path, "breaker-retry-at.map");
	assert_true(map_file_find(list_reply, strlen(list_reply), "breaker-owned.map", path,
				  sizeof(path)));
	assert_string_equal(path, "breaker-owned.map");
	/* A name that only ends like it is another map. */
	static const char other[] = "4 (/x/not-breaker-retry-at.map) pattern\n";
	assert_false(map_file_find(other, strlen(other), RETRY_MAP_NAME, path, sizeof(path)));
	static const char nested[] = "4 (/etc/haproxy/breaker-retry-at.map) pattern\n";
	assert_true(map_file_find(nested, strlen(nested), RETRY_MAP_NAME, path, sizeof(path)));
	assert_string_equal(path, "/etc/haproxy/breaker-retry-at.map");
	/* A path that could carry a command is refused. */
	static const char hostile[] = "4 (/x;y/breaker-retry-at.map) pattern\n";
	assert_false(map_file_find(hostile, strlen(hostile), RETRY_MAP_NAME, path, sizeof(path)));
}

static void test_parse(void **state)
{
	(void)state;
	struct retry_map_entry *list;
	unsigned skipped;

	/* Empty: HAProxy answers an empty line. */
	assert_int_equal(retry_map_parse("\n", 1, &list, &skipped), 0);
	assert_null(list);
	assert_int_equal(retry_map_parse("", 0, &list, &skipped), 0);

	/* An error is no map. */
	static const char err[] = "Unknown map identifier. Please use #<id> or <file>.\n";
	assert_int_equal(retry_map_parse(err, strlen(err), &list, &skipped), -1);

	static const char reply[] = "0x55d0c1a0 zeta 1796062829\n"
				    "0x55d0c1b0 alpha 1796062800\n"
				    "0x55d0c1c0 bad;name 1796062800\n"
				    "0x55d0c1d0 beta not-a-number\n"
				    "0x55d0c1e0 zeta 1796062900\n"
				    "0x55d0c1f0 gamma 1234567890123456789\n"
				    "\n";
	long n = retry_map_parse(reply, strlen(reply), &list, &skipped);
	assert_int_equal(n, 2);
	assert_int_equal(skipped, 3);
	assert_string_equal(list[0].backend, "alpha");
	assert_int_equal(list[0].at_s, 1796062800);
	assert_false(list[0].duplicate);
	assert_string_equal(list[1].backend, "zeta");
	assert_true(list[1].duplicate);
	assert_non_null(retry_map_lookup(list, (size_t)n, "alpha"));
	assert_ptr_equal(retry_map_lookup(list, (size_t)n, "zeta"), &list[1]);
	assert_null(retry_map_lookup(list, (size_t)n, "beta"));
	assert_null(retry_map_lookup(list, 0, "alpha"));
	free(list);

	/* Without a final newline, the last entry still counts. */
	static const char cut[] = "0x1 workers 1796062829";
	assert_int_equal(retry_map_parse(cut, strlen(cut), &list, NULL), 1);
	assert_int_equal(list[0].at_s, 1796062829);
	free(list);
}

static void test_commands(void **state)
{
	(void)state;
	char buf[160];
	const char *path = "breaker-retry-at.map";

	/* None to a moment, a moment to another, a moment to none. */
	assert_true(retry_map_cmd(buf, sizeof(buf), path, "workers", RETRY_AT_NONE, 1796062829));
	assert_string_equal(buf, "add map breaker-retry-at.map workers 1796062829");
	assert_true(retry_map_cmd(buf, sizeof(buf), path, "workers", 1796062829, 1796062900));
	assert_string_equal(buf, "set map breaker-retry-at.map workers 1796062900");
	assert_true(retry_map_cmd(buf, sizeof(buf), path, "workers", 1796062829, RETRY_AT_NONE));
	assert_string_equal(buf, "del map breaker-retry-at.map workers");

	/* Nothing to do: equal, or a second apart (a rounding). */
	assert_false(retry_map_cmd(buf, sizeof(buf), path, "workers", RETRY_AT_NONE, RETRY_AT_NONE));
	assert_string_equal(buf, "");
	assert_false(retry_map_cmd(buf, sizeof(buf), path, "workers", 1796062829, 1796062829));
	assert_false(retry_map_cmd(buf, sizeof(buf), path, "workers", 1796062829, 1796062830));
	assert_false(retry_map_cmd(buf, sizeof(buf), path, "workers", 1796062830, 1796062829));
	assert_true(retry_map_cmd(buf, sizeof(buf), path, "workers", 1796062829, 1796062831));

	/* Hostile names and paths never make a command. */
	assert_false(retry_map_cmd(buf, sizeof(buf), path, "w;x", RETRY_AT_NONE, 5));
	assert_false(retry_map_cmd(buf, sizeof(buf), path, "w x", RETRY_AT_NONE, 5));
	assert_false(retry_map_cmd(buf, sizeof(buf), path, "w\nshow info", RETRY_AT_NONE, 5));
	assert_false(retry_map_cmd(buf, sizeof(buf), "a map;b", "workers", RETRY_AT_NONE, 5));
	assert_false(retry_map_cmd(buf, sizeof(buf), "", "workers", RETRY_AT_NONE, 5));
	/* Too long for the buffer: nothing, not a command cut short. */
	assert_false(retry_map_cmd(buf, 20, path, "workers", RETRY_AT_NONE, 1796062829));
	assert_string_equal(buf, "");
}

static void test_moment(void **state)
{
	(void)state;
	assert_int_equal(retry_map_moment(1796062800, 30), 1796062830);
	assert_int_equal(retry_map_moment(1796062800, 0), 1796062800);
	/* Not open: nothing to wait for. */
	assert_int_equal(retry_map_moment(1796062800, -1), RETRY_AT_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_moment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
