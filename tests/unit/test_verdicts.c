/*
 * test_verdicts.c - the shared verdict table: reading `show table` as
 * HAProxy 2.6 and 3.x print it, refusing errors and hostile keys, the
 * `set table` commands (none that a name could turn into another
 * command), and what a node does with another node's verdict.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "records/verdicts.h"
#include "breaker_allows.h"

struct seen {
	char text[8][96];
	int n;
};

static void collect(void *ctx, const struct verdict *v)
{
	struct seen *s = ctx;
	assert_true(s->n < 8);
	snprintf(s->text[s->n++], sizeof(s->text[0]), "%.*s/%.*s %u %llu %u", (int)v->backend.len,
		 v->backend.ptr, (int)v->server.len, v->server.ptr, (unsigned)v->state,
		 (unsigned long long)v->deadline_s, v->node);
}

static void test_parse_26(void **state)
{
	(void)state;
	static const char reply[] =
		"# table: breaker_verdicts, type: string, size:102400, used:2\n"
		"0x56449ab6a358: key=workers/w1 use=0 exp=4978 gpt0=1 gpc0=1796080000 gpc1=2\n"
		"0x7f0164047628: key=workers/w2 use=0 exp=1983 gpt0=0 gpc0=0 gpc1=3\n"
		"\n";
	struct seen s = {0};
	unsigned skipped = 9;
	assert_true(verdicts_parse(reply, strlen(reply), collect, &s, &skipped));
	assert_int_equal(s.n, 2);
	assert_string_equal(s.text[0], "workers/w1 1 1796080000 2");
	assert_string_equal(s.text[1], "workers/w2 0 0 3");
	assert_int_equal(skipped, 0);
}

static void test_parse_3x_shard_and_column_order(void **state)
{
	(void)state;
	static const char reply[] =
		"# table: breaker_verdicts, type: string, size:102400, used:1\n"
		"0x7f91cfde6408: key=api/gpu-7 use=0 exp=4976 shard=0 gpt0=2 gpc0=17 gpc1=1\n"
		"0x7f91cfde6409: key=api/gpu-8 use=0 exp=4976 shard=0 gpc1=4 gpc0=18 gpt0=1\n";
	struct seen s = {0};
	assert_true(verdicts_parse(reply, strlen(reply), collect, &s, NULL));
	assert_int_equal(s.n, 2);
	assert_string_equal(s.text[0], "api/gpu-7 2 17 1");
	assert_string_equal(s.text[1], "api/gpu-8 1 18 4");
}

static void test_errors_are_not_tables(void **state)
{
	(void)state;
	static const char *const errors[] = {"No such table\n", "Unknown command.\n", "", "\n",
					     "Permission denied\n"};
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		struct seen s = {0};
		assert_false(verdicts_parse(errors[i], strlen(errors[i]), collect, &s, NULL));
		assert_int_equal(s.n, 0);
	}
	/* A table with nothing in it is a table. */
	static const char empty[] = "# table: breaker_verdicts, type: string, size:102400, used:0\n";
	struct seen s = {0};
	assert_true(verdicts_parse(empty, strlen(empty), collect, &s, NULL));
	assert_int_equal(s.n, 0);
}

static void test_bad_lines_are_skipped(void **state)
{
	(void)state;
	static const char reply[] =
		"# table: breaker_verdicts, type: string, size:102400, used:8\n"
		"0x1: key=noslash use=0 exp=1 gpt0=1 gpc0=1 gpc1=1\n"
		"0x2: key=a\\ b/c use=0 exp=1 gpt0=1 gpc0=1 gpc1=1\n"
		"0x3: key=a/b use=0 exp=1 gpt0=7 gpc0=1 gpc1=1\n"
		"0x4: key=a/b use=0 exp=1 gpt0=x gpc0=1 gpc1=1\n"
		"0x5: key=a/b use=0 exp=1 gpt0=1 gpc0=99999999999 gpc1=1\n"
		"0x6: use=0 exp=1 gpt0=1 gpc0=1 gpc1=1\n"
		"garbage\n"
		"0x7: key=a/ use=0 exp=1 gpt0=1 gpc0=1 gpc1=1\n"
		"0x8: key=be/ok use=0 exp=1 gpt0=1\n";
	struct seen s = {0};
	unsigned skipped = 0;
	assert_true(verdicts_parse(reply, strlen(reply), collect, &s, &skipped));
	assert_int_equal(s.n, 1);
	assert_string_equal(s.text[0], "be/ok 1 0 0");
	assert_int_equal(skipped, 8);
}

static void test_commands(void **state)
{
	(void)state;
	char buf[RUNTIME_API_CMD_MAX];
	assert_true(runtime_api_cmd_show_table(buf, sizeof(buf), "breaker_verdicts"));
	assert_string_equal(buf, "show table breaker_verdicts");
	assert_true(verdicts_cmd_set(buf, sizeof(buf), "breaker_verdicts", "workers", "w1",
				     VERDICT_OPEN, 1796080000, 3));
	assert_string_equal(buf, "set table breaker_verdicts key workers/w1 data.gpt0 1 "
				 "data.gpc0 1796080000 data.gpc1 3");
	/* 32-bit column: capped, never wrapped to the past. */
	assert_true(verdicts_cmd_set(buf, sizeof(buf), "t", "b", "s", VERDICT_CLOSED,
				     UINT64_C(1) << 40, 1));
	assert_non_null(strstr(buf, "data.gpc0 4294967295 "));
}

static void test_hostile_names_make_no_command(void **state)
{
	(void)state;
	char buf[RUNTIME_API_CMD_MAX];
	static const char *const bad[] = {"a;b", "a b", "a\nb", "a\\b", "", "a/b", "x;show info"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(runtime_api_cmd_show_table(buf, sizeof(buf), bad[i]));
		assert_string_equal(buf, "");
		assert_false(verdicts_cmd_set(buf, sizeof(buf), "t", bad[i], "s", VERDICT_OPEN, 1, 1));
		assert_string_equal(buf, "");
		assert_false(verdicts_cmd_set(buf, sizeof(buf), "t", "b", bad[i], VERDICT_OPEN, 1, 1));
		assert_false(verdicts_cmd_set(buf, sizeof(buf), bad[i], "b", "s", VERDICT_OPEN, 1, 1));
	}
	/* A key the table would cut (and collide) is never written. */
	char longer[100];
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_false(verdicts_cmd_set(buf, sizeof(buf), "t", longer, longer, VERDICT_OPEN, 1, 1));
	/* No room: nothing half-written. */
	char tiny[16];
	assert_false(verdicts_cmd_set(tiny, sizeof(tiny), "t", "b", "s", VERDICT_OPEN, 1, 1));
	assert_string_equal(tiny, "");
}

#define T0 1000000

static void test_decide(void **state)
{
	(void)state;
	struct breaker_policy policy;
	struct breaker b;
	breaker_policy_defaults(&policy);
	breaker_init(&b, &policy, T0);
	struct verdict open2 = {.state = VERDICT_OPEN, .node = 2};
	struct verdict closed2 = {.state = VERDICT_CLOSED, .node = 2};
	struct verdict mine = {.state = VERDICT_OPEN, .node = 1};

	/* Closed here: another node's open verdict is held; ours ignored. */
	assert_int_equal(verdicts_decide(&open2, &b, 1, T0), VERDICT_HOLD);
	assert_int_equal(verdicts_decide(&mine, &b, 1, T0), VERDICT_IGNORE);
	/* Nothing to undo on a closed breaker. */
	assert_int_equal(verdicts_decide(&closed2, &b, 1, T0), VERDICT_IGNORE);
	breaker_peer_hold(&b, T0 + 1000, T0);
	assert_int_equal(verdicts_decide(&closed2, &b, 1, T0), VERDICT_RELEASE);

	/* Open on its own evidence: node 1 outranks node 2 and keeps it... */
	breaker_init(&b, &policy, T0);
	for (int i = 0; i < 1000 && breaker_would_allow(&b); i++)
		breaker_record_failure(&b, T0);
	assert_int_equal(verdicts_decide(&open2, &b, 1, T0), VERDICT_IGNORE);
	/* ... node 3 yields to node 2. */
	assert_int_equal(verdicts_decide(&open2, &b, 3, T0), VERDICT_HOLD);
	/* A closed verdict never closes evidence of its own. */
	assert_int_equal(verdicts_decide(&closed2, &b, 3, T0), VERDICT_IGNORE);
	assert_int_equal(verdicts_state_of(&b), VERDICT_OPEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_26),
		cmocka_unit_test(test_parse_3x_shard_and_column_order),
		cmocka_unit_test(test_errors_are_not_tables),
		cmocka_unit_test(test_bad_lines_are_skipped),
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_hostile_names_make_no_command),
		cmocka_unit_test(test_decide),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
