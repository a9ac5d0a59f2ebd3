/*
 * test_owner_map.c - HAProxy's record of the agent's drains and limits:
 * finding the map in `show map` as 2.6, 3.0 and 3.2 print it, reading its
 * entries, and the one command that brings an entry to what the agent
 * did - never one that a hostile path or name could turn into another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "records/owner_map.h"

/* `show map` on HAProxy 2.6.12 (3.0 and 3.2 print the same columns). */
static const char list_reply[] =
	"# id (file) description\n"
	"1 (/etc/haproxy/router-conditions.map) pattern loaded from file "
	"'/etc/haproxy/router-conditions.map' used by map at file '/etc/haproxy/haproxy.cfg' "
	"line 90. curr_ver=0 next_ver=0 entry_cnt=12\n"
	"0 (/etc/haproxy/breaker-owned.map) pattern loaded from file "
	"'/etc/haproxy/breaker-owned.map' used by map at file '/etc/haproxy/haproxy.cfg' line "
	"82. curr_ver=0 next_ver=0 entry_cnt=1\n"
	"\n";

static void test_find(void **state)
{
	char path[MAP_FILE_PATH_MAX];

	assert_true(owner_map_find(list_reply, strlen(list_reply), path, sizeof(path)));
	assert_string_equal(path, "/etc/haproxy/breaker-owned.map");

	const char none[] = "# id (file) description\n\n";
	assert_false(owner_map_find(none, strlen(none), path, sizeof(path)));
	/* Relative to default-path, as the shipped haproxy.cfg loads it:
	 * listed, and named in commands, exactly so. */
	const char relative[] = "17 (breaker-owned.map) pattern loaded from file "
				"'breaker-owned.map' used by map at file 'haproxy/haproxy.cfg' line 83.\n";
	assert_true(owner_map_find(relative, strlen(relative), path, sizeof(path)));
	assert_string_equal(path, "breaker-owned.map");
	/* A name that merely ends the same way is another file. */
	const char other[] = "0 (/etc/haproxy/not-breaker-owned.map) x\n";
	assert_false(owner_map_find(other, strlen(other), path, sizeof(path)));
	/* A path that would end the command early is never used. */
	const char hostile[] = "0 (/tmp/x;shutdown/breaker-owned.map) x\n";
	assert_false(owner_map_find(hostile, strlen(hostile), path, sizeof(path)));
	assert_false(owner_map_find(list_reply, strlen(list_reply), path, 10));
}

struct seen {
	char keys[4][64];
	struct owner_record recs[4];
	int n;
};

static void collect(void *ctx, struct runtime_api_str backend, struct runtime_api_str server,
		    const struct owner_record *rec)
{
	struct seen *s = ctx;
	if (s->n < 4) {
		snprintf(s->keys[s->n], sizeof(s->keys[0]), "%.*s/%.*s", (int)backend.len,
			 backend.ptr, (int)server.len, server.ptr);
		s->recs[s->n] = *rec;
	}
	s->n++;
}

static void test_parse(void **state)
{
	const char reply[] = "0x7f9db8a7d0e0 workers/w1 maxconn=50\n"
			     "0x7f9db8a7d100 workers/w2 drain\n"
			     "0x7f9db8a7d120 workers/w3 drain,maxconn=0,later-word\n"
			     "0x7f9db8a7d140 bad;name/w4 drain\n"
			     "garbage\n"
			     "\n";
	struct seen s = {0};
	unsigned skipped = 0;

	assert_true(owner_map_parse(reply, strlen(reply), collect, &s, &skipped));
	assert_int_equal(s.n, 3);
	assert_int_equal(skipped, 2);
	assert_string_equal(s.keys[0], "workers/w1");
	assert_true(s.recs[0].present && s.recs[0].limited && !s.recs[0].drained);
	assert_int_equal(s.recs[0].own_maxconn, 50);
	assert_true(s.recs[1].present && s.recs[1].drained && !s.recs[1].limited);
	assert_true(s.recs[2].drained && s.recs[2].limited);
	assert_int_equal(s.recs[2].own_maxconn, 0);

	/* An empty map answers an empty line; an unknown one a sentence. */
	struct seen empty = {0};
	assert_true(owner_map_parse("\n", 1, collect, &empty, NULL));
	assert_int_equal(empty.n, 0);
	const char unknown[] = "Unknown map identifier. Please use #<id> or <file>.\n";
	assert_false(owner_map_parse(unknown, strlen(unknown), collect, &empty, NULL));
}

static void test_commands(void **state)
{
	char buf[HAPROXY_RECORD_CMD_MAX];
	const char *path = "/etc/haproxy/breaker-owned.map";
	struct owner_record none = {0};
	struct enforce_memory drained = {.drained_by_us = true};
	struct enforce_memory limited = {.maxconn_by_us = true, .own_maxconn_known = true,
					 .own_maxconn = 50};
	struct owner_record want_drain = owner_record_of(&drained);
	struct owner_record want_limit = owner_record_of(&limited);

	assert_true(owner_map_cmd(buf, sizeof(buf), path, "workers", "w2", &none, &want_drain));
	assert_string_equal(buf, "add map /etc/haproxy/breaker-owned.map workers/w2 drain");
	assert_true(owner_map_cmd(buf, sizeof(buf), path, "workers", "w2", &want_drain,
				  &want_limit));
	assert_string_equal(buf, "set map /etc/haproxy/breaker-owned.map workers/w2 maxconn=50");
	assert_true(owner_map_cmd(buf, sizeof(buf), path, "workers", "w2", &want_limit, &none));
	assert_string_equal(buf, "del map /etc/haproxy/breaker-owned.map workers/w2");
	/* Nothing to do, or nothing safe to do. */
	assert_false(owner_map_cmd(buf, sizeof(buf), path, "workers", "w2", &want_drain,
				   &want_drain));
	assert_string_equal(buf, "");
	assert_false(owner_map_cmd(buf, sizeof(buf), path, "workers", "w2; shutdown", &none,
				   &want_drain));
	assert_false(owner_map_cmd(buf, sizeof(buf), "x;y.map", "workers", "w2", &none,
				   &want_drain));
	assert_true(owner_map_cmd(buf, sizeof(buf), "breaker-owned.map", "workers", "w2", &none,
				  &want_drain));
	assert_string_equal(buf, "add map breaker-owned.map workers/w2 drain");
	assert_false(owner_map_cmd(buf, 20, path, "workers", "w2", &none, &want_drain));

	/* A record taken back is what the agent had done. */
	struct enforce_memory back = {0};
	assert_true(owner_record_merge(&want_limit, &back));
	assert_true(back.maxconn_by_us && back.own_maxconn_known && !back.drained_by_us);
	assert_int_equal(back.own_maxconn, 50);
	struct owner_record again = owner_record_of(&back);
	char again_text[OWNER_MAP_VALUE_MAX], want_text[OWNER_MAP_VALUE_MAX];
	assert_string_equal(owner_map_value(again_text, sizeof(again_text), &again),
			    owner_map_value(want_text, sizeof(want_text), &want_limit));
	/* Again: nothing new. */
	assert_false(owner_record_merge(&want_limit, &back));

	/* A snapshot older than the record: half-open (limited, not drained)
	 * in the snapshot, drained and limited in HAProxy's record. The drain
	 * is taken as the agent's own, the limit and its value kept. */
	struct enforce_memory older = {.maxconn_by_us = true, .own_maxconn_known = true,
				       .own_maxconn = 0};
	struct owner_record both = {.present = true, .drained = true, .limited = true,
				    .own_maxconn = 0};
	assert_true(owner_record_merge(&both, &older));
	assert_true(older.drained_by_us && older.maxconn_by_us);
	assert_int_equal(older.own_maxconn, 0);
	/* A record of less than the agent knows takes nothing away. */
	struct enforce_memory knows = {.drained_by_us = true};
	assert_false(owner_record_merge(&(struct owner_record){0}, &knows));
	assert_true(knows.drained_by_us);
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
