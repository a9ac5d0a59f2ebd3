/*
 * test_agent_check_parse.c - the agent-check request as a table: (bytes
 * received) -> (ok, read more, or refused; the names read).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "link/agent_check.h"

#define S(lit) lit, sizeof(lit) - 1

static const struct {
	const char *bytes;
	size_t len;
	enum agent_check_parse want;
	const char *backend, *server;
} cases[] = {
	{S("workers/w1\n"), AGENT_CHECK_REQUEST_OK, "workers", "w1"},
	{S("workers/w1\r\n"), AGENT_CHECK_REQUEST_OK, "workers", "w1"},
	{S("be.x:1/srv-2_a\nanything after"), AGENT_CHECK_REQUEST_OK, "be.x:1", "srv-2_a"},
	{S("workers/w1"), AGENT_CHECK_REQUEST_INCOMPLETE, "", ""},
	{S(""), AGENT_CHECK_REQUEST_INCOMPLETE, "", ""},
	/* A NUL cut the name short, once: "a/b\0c" was answered for a/b. */
	{S("a/b\0c\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
	{S("a\0/b\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
	{S("\0\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
	{S("workers\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
	{S("/w1\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
	{S("workers/\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
	{S("a/b/c\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
	{S("a/b c\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
	{S("a/b;show info\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
	{S("a/b\r\r\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
	{S("\n"), AGENT_CHECK_REQUEST_INVALID, "", ""},
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct agent_check_request req;
		enum agent_check_parse got =
			agent_check_parse_request(cases[i].bytes, cases[i].len, 256, &req);
		if (got != cases[i].want)
			fail_msg("case %zu: got %d, want %d", i, got, cases[i].want);
		assert_string_equal(req.backend, cases[i].backend);
		assert_string_equal(req.server, cases[i].server);
		if (got == AGENT_CHECK_REQUEST_INVALID)
			assert_non_null(req.why);
	}
}

static void test_too_long(void **state)
{
	char line[300];
	struct agent_check_request req;
	(void)state;

	memset(line, 'a', sizeof(line));
	assert_int_equal(agent_check_parse_request(line, 255, 256, &req),
			 AGENT_CHECK_REQUEST_INCOMPLETE);
	assert_int_equal(agent_check_parse_request(line, 256, 256, &req),
			 AGENT_CHECK_REQUEST_INVALID);
	/* Names longer than HAProxy allows, within the line limit. */
	line[130] = '/';
	line[200] = '\n';
	assert_int_equal(agent_check_parse_request(line, 201, 256, &req),
			 AGENT_CHECK_REQUEST_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_too_long),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
