/*
 * test_config_check.c - what --check says, and only that: one message per
 * problem, at the line that makes it, naming what the agent will do. A bad
 * allow entry is said alone; an entry with bits past its prefix is taken
 * as its network and that network is named; two status sets that overlap
 * are said once, at the key that made them overlap, however many sections
 * inherit them; and a valid configuration ends with the enforcement mode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "config_run.h"

/* How many times the errors hold text. */
static int count_in_errors(const char *text)
{
	int n = 0;
	for (const char *p = r.errors; (p = strstr(p, text)); p += strlen(text))
		n++;
	return n;
}

static void assert_errors_lack(const char *text)
{
	if (strstr(r.errors, text))
		fail_msg("errors have \"%s\"; they are:\n%s", text, r.errors);
}

/* ---- allow, admin_allow ---- */

/* A list whose entry is refused is a list given: its line says what is
 * wrong, and nothing claims that no list says who may connect. */
static void test_bad_allow_entry_said_alone(void **state)
{
	char line[600];
	const char *path = file("[agent]\n"
				"listen = 0.0.0.0:12345\n"
				"allow = 10.1.0.0/33\n"
				"admin = 0.0.0.0:9786\n"
				"state_file = none\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:3: allow '10.1.0.0/33': '10.1.0.0/33': an IPv4 prefix is 0..32", path);
	assert_errors_have(line);
	assert_errors_lack("nothing says who may");

	/* admin_allow the same, for the admin listener. */
	path = file("[agent]\n"
		    "admin = 0.0.0.0:9786\n"
		    "admin_allow = 10.2.0.0/24, fd00::/200\n"
		    "state_file = none\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line), "%s:3: admin_allow '10.2.0.0/24, fd00::/200': 'fd00::/200'",
		 path);
	assert_errors_have(line);
	assert_errors_lack("nothing says who may");

	/* With no list at all, the listener's line still says it. */
	path = file("[agent]\nlisten = 0.0.0.0:12345\nstate_file = none\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:2: listen = 0.0.0.0:12345 is not a loopback address and nothing says who "
		 "may connect",
		 path);
	assert_errors_have(line);
}

/* 10.1.0.1/16 lets in 10.1.0.0/16: accepted, as HAProxy's ACLs accept it,
 * with a warning that names the network. */
static void test_allow_bits_past_the_prefix_warn(void **state)
{
	struct config c;
	char line[600];
	const char *path = file("[agent]\n"
				"listen = 0.0.0.0:12345\n"
				"allow = 10.1.0.1/16, 192.0.2.7, 10.9.0.0/16\n"
				"admin_allow = fd00:1::5/64\n"
				"state_file = none\n");
	assert_int_equal(RUN(&c, "--check", "-f", path), 0);
	snprintf(line, sizeof(line),
		 "%s:3: warning: allow entry '10.1.0.1/16' has bits set past its /16: it lets "
		 "in the whole network 10.1.0.0/16; write that, or 10.1.0.1 alone for the one "
		 "address\n",
		 path);
	assert_errors_have(line);
	snprintf(line, sizeof(line),
		 "%s:4: warning: admin_allow entry 'fd00:1::5/64' has bits set past its /64: it "
		 "lets in the whole network fd00:1::/64; write that, or fd00:1::5 alone for the "
		 "one address\n",
		 path);
	assert_errors_have(line);
	/* The exact ones are not named. */
	assert_errors_lack("192.0.2.7'");
	assert_errors_lack("10.9.0.0/16'");
	assert_int_equal(count_in_errors("warning:"), 2);
	config_free(&c);

	assert_int_equal(STATUS("--check", "--state-file", "none", "--allow", "10.0.0.1/8"), 0);
	assert_errors_have("spoa-breaker: warning: --allow entry '10.0.0.1/8' has bits set past "
			   "its /8: it lets in the whole network 10.0.0.0/8");
	assert_int_equal(STATUS("--check", "--state-file", "none", "--allow", "10.0.0.1/32"), 0);
	assert_errors_lack("warning:");
}

/* ---- status sets that overlap ---- */

/* Made in [breaker], inherited by every section: said once, at the key. */
static void test_overlap_said_once_at_its_key(void **state)
{
	char line[600];
	const char *path = file("[agent]\n"
				"state_file = none\n"
				"[breaker]\n"
				"capacity_statuses = 429,503\n"
				"failure_statuses = 500-503\n"
				"[backend a]\n"
				"threshold = 4\n"
				"[backend b]\n"
				"threshold = 5\n"
				"[server a/x]\n"
				"threshold = 2\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:5: [breaker]: failure_statuses = 500-503 overlaps capacity_statuses = "
		 "429,503 at line 4 on 503 (a status belongs to one set only)\n",
		 path);
	assert_errors_have(line);
	assert_int_equal(count_in_errors("overlap"), 1);
	assert_errors_lack("[backend");
	assert_errors_lack("[server");
}

/* The more specific key made it: the one in the section, naming where
 * the other set comes from (another section, the default). */
static void test_overlap_at_the_more_specific_key(void **state)
{
	char line[600];
	const char *path = file("[agent]\n"
				"state_file = none\n"
				"[breaker]\n"
				"failure_statuses = 500-599\n"
				"capacity_statuses = 429\n"
				"[backend be]\n"
				"capacity_statuses = 429,503\n"
				"[server be/w1]\n"
				"threshold = 4\n"
				"[server other/w2]\n"
				"ignore_statuses = 429\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:7: [backend be]: capacity_statuses = 429,503 overlaps failure_statuses = "
		 "500-599 of [breaker] at line 4 on 503 (a status belongs to one set only)\n",
		 path);
	assert_errors_have(line);
	snprintf(line, sizeof(line),
		 "%s:11: [server other/w2]: ignore_statuses = 429 overlaps capacity_statuses = "
		 "429 of [breaker] at line 5 on 429 (a status belongs to one set only)\n",
		 path);
	assert_errors_have(line);
	assert_int_equal(count_in_errors("overlap"), 2);
	assert_errors_lack("[server be/w1]");

	path = file("[agent]\nstate_file = none\n[backend be]\nignore_statuses = 503\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:4: [backend be]: ignore_statuses = 503 overlaps the default "
		 "capacity_statuses 429,503,529 on 503 (a status belongs to one set only)\n",
		 path);
	assert_errors_have(line);

	/* The command line is read after the file: its option made it. */
	path = file("[agent]\nstate_file = none\n[breaker]\ncapacity_statuses = 429,503\n");
	assert_int_equal(STATUS("--check", "-f", path, "--failure-statuses", "500-599"), 1);
	assert_errors_have("spoa-breaker: --failure-statuses 500-599 overlaps capacity_statuses = "
			   "429,503 at line 4 on 503 (a status belongs to one set only)\n");
	assert_int_equal(count_in_errors("overlap"), 1);
}

/* A section whose first problem is another one still has its overlap said. */
static void test_overlap_said_beside_another_problem(void **state)
{
	char line[600];
	const char *path = file("[agent]\n"
				"state_file = none\n"
				"[breaker]\n"
				"cooldown = 1m\n"
				"max_cooldown = 30s\n"
				"failure_statuses = 500-599\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line), "%s:3: [breaker]: max_cooldown of 30000 ms is below cooldown",
		 path);
	assert_errors_have(line);
	snprintf(line, sizeof(line),
		 "%s:6: [breaker]: failure_statuses = 500-599 overlaps the default "
		 "capacity_statuses 429,503,529 on 503,529",
		 path);
	assert_errors_have(line);
}

/* ---- the enforcement mode it settled on ---- */

static void test_check_says_the_enforcement_mode(void **state)
{
	struct config c;
	const char *path = file("[agent]\n"
				"state_file = none\n"
				"[haproxy]\n"
				"runtime_api = unix:/run/haproxy/admin.sock\n");
	assert_int_equal(RUN(&c, "--check", "-f", path), 0);
	assert_non_null(strstr(r.out,
			       "configuration valid\n"
			       "enforce: runtime-api (HAProxy unix:/run/haproxy/admin.sock)\n"));
	config_free(&c);

	assert_int_equal(RUN(&c, "--check", "--state-file", "none", "--runtime-api", "unix:/a.sock",
			     "--runtime-api", "127.0.0.1:9999"),
			 0);
	assert_non_null(
	    strstr(r.out, "enforce: runtime-api (HAProxy unix:/a.sock, 127.0.0.1:9999)\n"));
	config_free(&c);

	assert_int_equal(
	    RUN(&c, "--check", "--state-file", "none", "--agent-check", "127.0.0.1:12346"), 0);
	assert_non_null(strstr(r.out, "enforce: agent-check (HAProxy's agent-check asks "
				      "127.0.0.1:12346)\n"));
	config_free(&c);

	assert_int_equal(RUN(&c, "--check", "--state-file", "none", "--enforce", "none",
			     "--runtime-api", "unix:/a.sock"),
			 0);
	assert_non_null(strstr(r.out, "enforce: none (decisions are logged, HAProxy is not "
				      "changed)\n"));
	config_free(&c);

	/* Said once, and never when the configuration is refused. */
	assert_int_equal(RUN(&c, "--check", "--state-file", "none", "--enforce", "runtime-api"), 1);
	assert_null(strstr(r.out, "enforce:"));
	config_free(&c);
	/* Not a --check: nothing on the output. */
	assert_int_equal(RUN(&c, "--state-file", "none"), -1);
	assert_string_equal(r.out, "");
	config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_allow_entry_said_alone),
	    cmocka_unit_test(test_allow_bits_past_the_prefix_warn),
	    cmocka_unit_test(test_overlap_said_once_at_its_key),
	    cmocka_unit_test(test_overlap_at_the_more_specific_key),
	    cmocka_unit_test(test_overlap_said_beside_another_problem),
	    cmocka_unit_test(test_check_says_the_enforcement_mode),
	};
	int failed = cmocka_run_group_tests(tests, setup, teardown);
	free(r.out);
	free(r.errors);
	return failed;
}
