/*
 * test_config.c - the configuration as an operator meets it: every key
 * from the file and from the command line, what each refusal says and
 * where, --help and --check, and what a reload may change. Everything
 * goes through config_from_args(), as the daemon calls it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "spop/observe.h"
#include "config/keys.h"

#include "config_run.h"

/* r.out with its line breaks and indents as single spaces: --help wraps. */
static const char *flat_out(void)
{
	static char buf[16384];
	size_t n = 0;
	for (const char *p = r.out; *p && n + 1 < sizeof(buf); p++) {
		if (*p == '\n' || *p == ' ') {
			if (n > 0 && buf[n - 1] == ' ')
				continue;
			buf[n++] = ' ';
		} else {
			buf[n++] = *p;
		}
	}
	buf[n] = '\0';
	return buf;
}

/* The value of a key, as the file would spell it ([breaker] for policy keys). */
static const char *value_of(const struct config *c, const char *key)
{
	static char buf[4096];
	const struct config_key *k = config_key_find(key);
	assert_non_null(k);
	config_key_format(k, c, &c->global.values, buf, sizeof(buf));
	return buf;
}

/* ---- the key table ---- */

/* Every key of the singleton sections has an option named after it, and
 * --help lists it under its section with its default. */
static void test_every_key_is_an_option(void **state)
{
	struct config c;
	assert_int_equal(RUN(&c, "--help"), 0);
	config_free(&c);
	assert_string_equal(r.errors, "");

	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++) {
		const struct config_key *k = &config_keys[i];
		if (k->type == CONFIG_OBSOLETE) {
			assert_null(k->option);
			if (strstr(r.out, k->name))
				fail_msg("--help still mentions %s", k->name);
			continue;
		}
		/* A key of [backend NAME] sections only has no global level a
		 * command line could set. */
		if (k->sections == CONFIG_SECTION_BACKEND) {
			assert_null(k->option);
			continue;
		}
		char option[64];
		snprintf(option, sizeof(option), "%s", k->name);
		for (char *p = option; *p; p++)
			if (*p == '_')
				*p = '-';
		assert_non_null(k->option);
		assert_string_equal(k->option, option);
		char spelled[80];
		snprintf(spelled, sizeof(spelled), "--%s%s%s", option, k->arg ? " " : "",
			 k->arg ? k->arg : "");
		if (!strstr(r.out, spelled))
			fail_msg("--help lacks %s", spelled);
	}
	/* Grouped by section, in table order, defaults shown. */
	const char *agent = strstr(r.out, "\n[agent]");
	const char *haproxy = strstr(r.out, "\n[haproxy]");
	const char *breaker = strstr(r.out, "\n[breaker]");
	assert_non_null(agent);
	assert_true(agent < strstr(r.out, "--listen ADDR"));
	assert_true(strstr(r.out, "--admin ADDR") < haproxy);
	assert_true(haproxy < strstr(r.out, "--poll-interval DURATION"));
	assert_true(strstr(r.out, "--poll-interval DURATION") < breaker);
	assert_true(breaker < strstr(r.out, "--open-late-success WORD"));
	assert_non_null(strstr(r.out, "  -l, --listen ADDR"));
	assert_non_null(strstr(r.out, "  -L, --log-level LEVEL"));
	const char *flat = flat_out();
	assert_non_null(strstr(flat, "(default 500ms)"));
	assert_non_null(strstr(flat, "(default 429,503,529)"));
	assert_non_null(strstr(flat, "(default 127.0.0.1:12345; changes need a restart)"));
	assert_non_null(strstr(flat, "error, warning, notice, info or debug;"));
}

/* The reload decision as the brief states it: which keys need a restart. */
static void test_restart_only_keys(void **state)
{
	const char *restart_only[] = {"listen",       "max_frame_size", "max_connections",
				      "idle_timeout", "max_breakers",   "syslog",
				      "admin",        "state_file",     "socket_mode",
				      "socket_group", "control",      "control_mode",
				      "control_group"};
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++) {
		const struct config_key *k = &config_keys[i];
		bool expect_restart = false;
		for (size_t j = 0; j < sizeof(restart_only) / sizeof(restart_only[0]); j++)
			expect_restart |= strcmp(k->name, restart_only[j]) == 0;
		if (expect_restart == !!(k->flags & CONFIG_KEY_RELOADABLE))
			fail_msg("%s: %s", k->name,
				 expect_restart ? "should need a restart" : "should reload");
	}
}

/* ---- every key, from the file and from the command line ---- */

/* (key, value as written) -> (value as read back). */
static const struct {
	const char *key;
	const char *value;
	const char *read_back;
} good_values[] = {
	{"listen", "unix:/tmp/agent.sock", "unix:/tmp/agent.sock"},
	{"listen", "localhost:12345", "localhost:12345"},
	{"listen", "[::1]:12345", "[::1]:12345"},
	{"allow", "10.0.0.0/8", "10.0.0.0/8"},
	{"allow", " 10.0.0.0/8 , fd00::/8,192.0.2.7", "10.0.0.0/8, fd00::/8, 192.0.2.7"},
	{"allow", "any", "any"},
	{"admin_allow", "127.0.0.1, ::1", "127.0.0.1, ::1"},
	{"socket_mode", "0600", "0600"},
	{"socket_mode", "660", "0660"},
	{"socket_group", "haproxy", "haproxy"},
	{"socket_group", "none", "none"},
	{"max_frame_size", "65536", "65536"},
	{"max_connections", "1", "1"},
	{"idle_timeout", "5m", "5m"},
	{"idle_timeout", "90s", "90s"},
	{"max_breakers", "20", "20"},
	{"log_level", "debug", "debug"},
	{"admin", "[::1]:9000", "[::1]:9000"},
	{"admin", "none", "none"},
	{"ack_variables", "all", "all"},
	{"ack_variables", "state", "state"},
	{"ack_variables", " retry_after ,state,state", "state,retry_after"},
	{"ack_variables", "upstream_status,outcome,state,failures,transition,ejection_capped,"
			  "retry_after", "all"},
	{"ack_variables", "none", "none"},
	{"enforce", "shadow", "none"},
	{"runtime_api", "unix:/run/haproxy/admin.sock", "unix:/run/haproxy/admin.sock"},
	{"agent_check", "127.0.0.1:12346", "127.0.0.1:12346"},
	{"poll_interval", "2s", "2s"},
	{"poll_interval", "1500", "1500ms"},
	{"threshold", "7", "7"},
	{"cooldown", "2m", "2m"},
	{"half_open_probes", "16", "16"},
	{"capacity_statuses", "429", "429"},
	{"failure_statuses", "500-502, 504", "500-502,504"},
	{"ignore_statuses", "404", "404"},
	{"half_open_backpressure", "ignore", "ignore"},
	{"open_late_success", "close", "close"},
	{"max_cooldown", "10m", "10m"},
	{"healthy_for", "90s", "90s"},
	{"failure_rate_threshold", "40", "40"},
	{"failure_rate_threshold", "0", "0"},
	{"window", "10", "10"},
	{"minimum_volume", "64", "64"},
	{"wedged_after", "2m", "2m"},
	{"wedged_after", "0", "0ms"},
	{"stalled_after", "500ms", "500ms"},
	{"stalled_after", "0", "0ms"},
	{"retry_after_max", "30s", "30s"},
	{"retry_after_max", "60m", "60m"},
	{"retry_after_max", "0", "0ms"},
};

static void test_good_values(void **state)
{
	for (size_t i = 0; i < sizeof(good_values) / sizeof(good_values[0]); i++) {
		const struct config_key *k = config_key_find(good_values[i].key);
		assert_non_null(k);
		const char *section = k->sections & CONFIG_SECTION_AGENT     ? "agent"
				      : k->sections & CONFIG_SECTION_HAPROXY ? "haproxy"
									     : "breaker";
		char text[256], option[64];
		struct config c;

		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", section, k->name,
			 good_values[i].value);
		if (RUN(&c, "-f", file(text)) != -1)
			fail_msg("%s = %s refused: %s", k->name, good_values[i].value, r.errors);
		assert_string_equal(value_of(&c, k->name), good_values[i].read_back);
		config_free(&c);

		snprintf(option, sizeof(option), "--%s", k->option);
		if (RUN(&c, option, good_values[i].value) != -1)
			fail_msg("%s %s refused: %s", option, good_values[i].value, r.errors);
		assert_string_equal(value_of(&c, k->name), good_values[i].read_back);
		config_free(&c);
	}
}

/* (key, bad value) -> (what the message says after "KEY 'VALUE': "). */
static const struct {
	const char *key;
	const char *value;
	const char *expected;
} bad_values[] = {
	{"listen", "nonsense", "expected HOST:PORT, [IPV6]:PORT or unix:PATH"},
	{"listen", "127.0.0.1:0",
	 "expected HOST:PORT, [IPV6]:PORT or unix:PATH (port must be a number from 1 to 65535)"},
	{"runtime_api", "nonsense", "expected HOST:PORT, [IPV6]:PORT or unix:PATH"},
	{"agent_check", "nonsense", "expected HOST:PORT, [IPV6]:PORT or unix:PATH"},
	{"admin", "nonsense", "expected HOST:PORT, [IPV6]:PORT or none"},
	{"allow", "10.0.0.0/33", "'10.0.0.0/33': an IPv4 prefix is 0..32"},
	{"allow", "fd00::/129", "'fd00::/129': an IPv6 prefix is 0..128"},
	{"allow", "haproxy.local",
	 "'haproxy.local': expected a numeric IPv4 or IPv6 address, with /PREFIX or without"},
	{"allow", "any,10.0.0.1", "'any' with addresses: either every address (any) or the ones named"},
	{"admin_allow", "10.0.0.1,", "an empty entry: expected an address or ADDRESS/PREFIX"},
	{"socket_mode", "0800", "expected an octal file mode 0000..0777, such as 0660"},
	{"socket_mode", "1777", "expected an octal file mode 0000..0777, such as 0660"},
	{"admin", "unix:/tmp/admin.sock",
	 "expected HOST:PORT, [IPV6]:PORT or none (not a unix socket)"},
	{"max_frame_size", "12", "expected 256..1048576"},
	{"max_connections", "-1", "expected 1..1000000"},
	{"idle_timeout", "500ms", "expected a duration of at least 1s such as 30s or 500ms"},
	{"max_breakers", "lots", "expected 1..1048576"},
	{"log_level", "loud", "expected error, warning, notice, info or debug"},
	{"ack_variables", "state, sate",
	 "'sate' is not one of upstream_status, outcome, state, failures, transition, "
	 "ejection_capped, retry_after, all or none"},
	{"ack_variables", "state,,outcome",
	 "expected a comma-separated list of upstream_status, outcome, state, failures, "
	 "transition, ejection_capped, retry_after, all or none"},
	{"ack_variables", "error",
	 "'error' is not one of upstream_status, outcome, state, failures, transition, "
	 "ejection_capped, retry_after, all or none"},
	{"enforce", "always", "expected runtime-api, agent-check or none"},
	{"poll_interval", "50ms", "expected a duration of at least 100ms such as 30s or 500ms"},
	{"threshold", "0", "expected 1..1000000"},
	{"cooldown", "0", "expected a duration above 0 such as 30s or 500ms"},
	{"cooldown", "30 s", "expected a duration above 0 such as 30s or 500ms"},
	{"half_open_probes", "17", "expected 1..16"},
	{"capacity_statuses", "99", "item 1 \"99\": 99 is not an HTTP status"},
	{"failure_statuses", "", "empty status list"},
	{"half_open_backpressure", "maybe", "expected close or ignore"},
	{"open_late_success", "maybe", "expected ignore or close"},
	{"max_cooldown", "0", "expected a duration above 0 such as 30s or 500ms"},
	{"healthy_for", "soon", "expected a duration above 0 such as 30s or 500ms"},
	{"failure_rate_threshold", "101", "expected 0..100"},
	{"failure_rate_threshold", "40%", "expected 0..100"},
	{"window", "65", "expected 1..64"},
	{"window", "0", "expected 1..64"},
	{"minimum_volume", "0", "expected 1..64"},
	{"wedged_after", "soon", "expected a duration (0 for none) such as 30s or 500ms"},
	{"stalled_after", "-1s", "expected a duration (0 for none) such as 30s or 500ms"},
	{"retry_after_max", "61m",
	 "expected a duration (0 for none) and at most 60m such as 30s or 500ms"},
};

/* The control socket is a unix socket: a TCP address is refused, at its
 * line or option, with why. */
static void test_control_is_unix(void **state)
{
	(void)state;
	const char *path = file("[agent]\ncontrol = 127.0.0.1:9\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	assert_errors_have(":2: control = 127.0.0.1:9: a unix socket only");
	assert_int_equal(STATUS("--check", "--control", "127.0.0.1:9"), 1);
	assert_errors_have("--control 127.0.0.1:9: a unix socket only");
	assert_int_equal(STATUS("--check", "--control", "unix:/run/x/control.sock"), 0);
	assert_int_equal(STATUS("--check", "--control", "none"), 0);
}

static void test_bad_values(void **state)
{
	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
		const struct config_key *k = config_key_find(bad_values[i].key);
		assert_non_null(k);
		const char *section = k->sections & CONFIG_SECTION_AGENT     ? "agent"
				      : k->sections & CONFIG_SECTION_HAPROXY ? "haproxy"
									     : "breaker";
		char text[256], line[512], option[64];

		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", section, k->name,
			 bad_values[i].value);
		const char *path = file(text);
		assert_int_equal(STATUS("--check", "-f", path), 1);
		snprintf(line, sizeof(line), "%s:2: %s '%s': %s", path, k->name,
			 bad_values[i].value, bad_values[i].expected);
		assert_errors_have(line);

		snprintf(option, sizeof(option), "--%s", k->option);
		assert_int_equal(STATUS("--check", option, bad_values[i].value), 2);
		snprintf(line, sizeof(line), "spoa-breaker: --%s '%s': %s", k->option,
			 bad_values[i].value, bad_values[i].expected);
		assert_errors_have(line);
	}
}

/* --check validates every address the agent will open or connect to. */
static void test_check_validates_addresses(void **state)
{
	assert_int_equal(STATUS("--check", "--listen", "nonsense"), 2);
	assert_errors_have("spoa-breaker: --listen 'nonsense': expected HOST:PORT");
	assert_int_equal(STATUS("--check", "--agent-check", "127.0.0.1:70000"), 2);
	assert_int_equal(STATUS("--check", "--runtime-api", "unix:"), 2);
	assert_int_equal(STATUS("--check", "--admin", "localhost"), 2);
	assert_int_equal(STATUS("--check", "--listen", "*:12345", "--allow", "10.0.0.0/8"), 0);
	assert_int_equal(STATUS("--check", "--listen", ":12345", "--allow", "any"), 0);
}

/* SPOP has no authentication: a listener other hosts reach needs an
 * allowlist, named in the refusal; loopback and unix sockets need none. */
static void test_exposed_listener_needs_an_allowlist(void **state)
{
	assert_int_equal(STATUS("--check", "--listen", "0.0.0.0:12345"), 1);
	assert_errors_have("spoa-breaker: --listen 0.0.0.0:12345 is not a loopback address and "
			   "nothing says who may connect: set allow to the addresses or CIDR "
			   "blocks of the HAProxies (or allow = any, on purpose)");
	assert_int_equal(STATUS("--check", "--listen", "[::]:12345"), 1);
	assert_int_equal(STATUS("--check", "--listen", "10.1.2.3:12345"), 1);
	/* The file: at the line of the listen that is exposed. */
	const char *path = file("[agent]\nlisten = 127.0.0.1:1\nlisten = [::]:12345\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	char line[512];
	snprintf(line, sizeof(line),
		 "%s:2: listen = [::]:12345 is not a loopback address and nothing says who "
		 "may connect",
		 path);
	assert_errors_have(line);
	assert_int_equal(STATUS("--check", "-f",
				file("[agent]\nlisten = [::]:12345\nallow = 10.0.0.0/8\nallow = fd00::/8\n")),
			 0);
	/* Loopback, unix, and "any" on purpose need nothing more. */
	assert_int_equal(STATUS("--check", "--listen", "127.0.0.2:12345"), 0);
	assert_int_equal(STATUS("--check", "--listen", "[::1]:12345"), 0);
	assert_int_equal(STATUS("--check", "--listen", "localhost:12345"), 0);
	assert_int_equal(STATUS("--check", "--listen", "unix:/tmp/x.sock"), 0);
	assert_int_equal(STATUS("--check", "--listen", "0.0.0.0:12345", "--allow", "any"), 0);
}

static void test_exposed_admin_needs_an_allowlist(void **state)
{
	assert_int_equal(STATUS("--check", "--admin", "0.0.0.0:9786"), 1);
	assert_errors_have("spoa-breaker: --admin 0.0.0.0:9786 is not a loopback address and "
			   "nothing says who may read it: set admin_allow (or allow)");
	/* allow covers the admin pages too, unless admin_allow says otherwise. */
	assert_int_equal(STATUS("--check", "--admin", "0.0.0.0:9786", "--allow", "10.0.0.0/8"), 0);
	assert_int_equal(STATUS("--check", "--admin", "0.0.0.0:9786", "--admin-allow", "any"), 0);
	/* admin_allow alone does not open SPOP to the world. */
	assert_int_equal(STATUS("--check", "--listen", "0.0.0.0:12345", "--admin-allow", "any"), 1);
	assert_errors_have("--listen 0.0.0.0:12345 is not a loopback address");

	struct config c;
	assert_int_equal(RUN(&c, "--allow", "10.0.0.0/8", "--admin-allow", "192.0.2.0/24"), -1);
	assert_string_equal(config_admin_allow(&c)->entries[0].text, "192.0.2.0/24");
	config_free(&c);
	assert_int_equal(RUN(&c, "--allow", "10.0.0.0/8"), -1);
	assert_string_equal(config_admin_allow(&c)->entries[0].text, "10.0.0.0/8");
	config_free(&c);
}

/* A TCP stats socket elsewhere than loopback: accepted, with a warning. */
static void test_remote_runtime_api_warns(void **state)
{
	struct config c;
	assert_int_equal(RUN(&c, "--runtime-api", "192.0.2.1:9999"), -1);
	config_free(&c);
	assert_errors_have("spoa-breaker: warning: --runtime-api 192.0.2.1:9999 is not on "
			   "loopback: whoever reaches that stats socket can drain every server");
	assert_int_equal(RUN(&c, "--runtime-api", "127.0.0.1:9999"), -1);
	config_free(&c);
	assert_null(strstr(r.errors, "warning"));
	assert_int_equal(RUN(&c, "--runtime-api", "unix:/run/haproxy/admin.sock"), -1);
	config_free(&c);
	assert_null(strstr(r.errors, "warning"));
}

/* The command line's allow replaces the file's list, as for listen. */
static void test_allow_from_file_and_command_line(void **state)
{
	struct config c;
	const char *path = file("[agent]\nallow = 10.0.0.1\nallow = 10.0.0.2, 10.0.0.3\n");
	assert_int_equal(RUN(&c, "-f", path), -1);
	assert_string_equal(value_of(&c, "allow"), "10.0.0.1, 10.0.0.2, 10.0.0.3");
	config_free(&c);
	assert_int_equal(RUN(&c, "-f", path, "--allow", "192.0.2.1", "--allow", "::1"), -1);
	assert_string_equal(value_of(&c, "allow"), "192.0.2.1, ::1");
	config_free(&c);
}

static void test_command_line_overrides_file(void **state)
{
	struct config c;
	const char *path = file("[agent]\n"
				"listen = 127.0.0.1:1\n"
				"listen = 127.0.0.1:2\n"
				"[haproxy]\n"
				"runtime_api = unix:/a.sock\n"
				"[breaker]\n"
				"threshold = 10\n"
				"cooldown = 5s\n");

	assert_int_equal(RUN(&c, "-f", path), -1);
	assert_string_equal(value_of(&c, "listen"), "127.0.0.1:1, 127.0.0.1:2");
	assert_string_equal(value_of(&c, "threshold"), "10");
	config_free(&c);

	/* A repeatable option replaces the file's list; a single one wins. */
	assert_int_equal(RUN(&c, "-f", path, "-l", "127.0.0.1:3", "--listen", "127.0.0.1:4",
			     "--threshold", "2", "--runtime-api", "unix:/b.sock"),
			 -1);
	assert_string_equal(value_of(&c, "listen"), "127.0.0.1:3, 127.0.0.1:4");
	assert_string_equal(value_of(&c, "runtime_api"), "unix:/b.sock");
	assert_string_equal(value_of(&c, "threshold"), "2");
	assert_string_equal(value_of(&c, "cooldown"), "5s");
	assert_ptr_equal(c.path, path);
	config_free(&c);
}

static void test_defaults(void **state)
{
	struct config c;
	assert_int_equal(RUN(&c, "--log-level", "info"), -1);
	assert_string_equal(r.errors, "");
	assert_null(c.path);
	assert_string_equal(value_of(&c, "listen"), "127.0.0.1:12345");
	assert_string_equal(value_of(&c, "ack_variables"), "all");
	assert_string_equal(value_of(&c, "admin"), "127.0.0.1:9786");
	assert_false(c.admin_set);
	assert_int_equal(c.link.enforce, ENFORCE_NONE);
	assert_int_equal(c.log_level, LOG_LEVEL_INFO);
	assert_int_equal(c.global.fields, 0);
	config_free(&c);

	assert_int_equal(RUN(&c, "--check"), 0);
	assert_string_equal(r.out, "(defaults): configuration valid\n"
				   "enforce: none (no runtime_api or agent_check: decisions are "
				   "logged, HAProxy is not changed)\n");
	config_free(&c);
}

/* ---- the command line itself ---- */

static void test_bad_command_lines(void **state)
{
	assert_int_equal(STATUS("--bogus"), 2);
	assert_errors_have("spoa-breaker: unknown option '--bogus'\n");
	assert_int_equal(STATUS("-x"), 2);
	assert_errors_have("spoa-breaker: unknown option '-x'\n");
	assert_int_equal(STATUS("--threshold"), 2);
	assert_errors_have("spoa-breaker: option '--threshold' needs a value\n");
	assert_int_equal(STATUS("--syslog=yes"), 2);
	assert_errors_have("spoa-breaker: option '--syslog' takes no value\n");
	assert_int_equal(STATUS("stray"), 2);
	assert_errors_have("spoa-breaker: unexpected argument 'stray'\n");

	assert_int_equal(STATUS("--version"), 0);
	if (SPOA_REVISION[0] != '\0')
		assert_string_equal(r.out, "spoa-breaker " SPOA_VERSION " (git " SPOA_REVISION ")\n");
	else
		assert_string_equal(r.out, "spoa-breaker " SPOA_VERSION "\n");
}

/* A reload parses the same argv again: getopt must start over, and the
 * result be the same. */
static void test_callable_again(void **state)
{
	struct config a, b;
	const char *path = file("[breaker]\nthreshold = 4\n[backend be]\nthreshold = 6\n");
	assert_int_equal(RUN(&a, "-f", path, "--cooldown", "3s", "--syslog"), -1);
	assert_int_equal(RUN(&b, "-f", path, "--cooldown", "3s", "--syslog"), -1);
	assert_string_equal(value_of(&b, "cooldown"), "3s");
	assert_true(b.use_syslog);
	assert_int_equal(b.nb_overrides, 1);
	assert_int_equal(config_restart_only_changes(&a, &b, NULL, NULL), 0);
	assert_false(config_haproxy_changed(&a, &b));
	config_free(&a);
	config_free(&b);
	config_free(&b); /* harmless twice */
}

/* ---- findings of a new user ---- */

/* fopen() takes a directory and reads nothing from it. */
static void test_directory_is_refused(void **state)
{
	assert_int_equal(STATUS("--check", "-f", dir), 1);
	char line[600];
	snprintf(line, sizeof(line), "%s: is a directory", dir);
	assert_errors_have(line);
	assert_string_equal(r.out, "");
}

static void test_duplicate_keys(void **state)
{
	char line[600];
	const char *path = file("[breaker]\n"          /* 1 */
				"threshold = 3\n"      /* 2 */
				"threshold = 5\n"      /* 3 */
				"[agent]\n"            /* 4 */
				"listen = 127.0.0.1:1\n" /* 5 */
				"listen = 127.0.0.1:2\n" /* 6: repeatable */
				"max_breakers = 10\n"  /* 7 */
				"[backend be]\n"       /* 8 */
				"cooldown = 1s\n"      /* 9 */
				"[agent]\n"            /* 10: the section again */
				"max_breakers = 20\n"  /* 11 */
				"[backend be]\n"       /* 12 */
				"cooldown = 2s\n"      /* 13 */
				"[backend other]\n"    /* 14: another section, */
				"cooldown = 2s\n");    /* 15: no duplicate */
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line), "%s:3: threshold already set at line 2\n", path);
	assert_errors_have(line);
	snprintf(line, sizeof(line), "%s:11: max_breakers already set at line 7\n", path);
	assert_errors_have(line);
	snprintf(line, sizeof(line), "%s:13: cooldown already set at line 9\n", path);
	assert_errors_have(line);
	assert_null(strstr(r.errors, "listen already"));
	assert_null(strstr(r.errors, ":15:"));

	/* The same key in [breaker] and on the command line is an override. */
	path = file("[breaker]\nthreshold = 3\n");
	assert_int_equal(STATUS("--check", "-f", path, "--threshold", "4"), 0);
}

/* A conflict is reported where the key that makes it was set, naming the
 * other one. */
static void test_conflict_reported_at_its_key(void **state)
{
	char line[800];
	const char *path = file("[haproxy]\n"
				"runtime_api = unix:/run/haproxy/admin.sock\n"
				"poll_interval = 1s\n"
				"agent_check = 127.0.0.1:12346\n"
				"\n"
				"[breaker]\n"
				"threshold = 3\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:4: agent_check cannot be combined with runtime_api at line 2: ", path);
	assert_errors_have(line);
	assert_errors_have("an agent-check \"ready\" undoes a Runtime API drain");

	path = file("[haproxy]\nagent_check = 127.0.0.1:12346\nenforce = runtime-api\n"
		    "runtime_api = unix:/a.sock\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:3: enforce = runtime-api cannot be combined with agent_check at line 2: ",
		 path);
	assert_errors_have(line);

	/* From the command line, against the file. */
	path = file("[haproxy]\nruntime_api = unix:/a.sock\n");
	assert_int_equal(STATUS("--check", "-f", path, "--agent-check", "127.0.0.1:1"), 1);
	snprintf(line, sizeof(line),
		 "spoa-breaker: --agent-check cannot be combined with runtime_api at %s:2: ", path);
	assert_errors_have(line);

	path = file("[haproxy]\n\nenforce = agent-check\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:3: enforce = agent-check needs an agent_check listen address\n", path);
	assert_errors_have(line);
	assert_int_equal(STATUS("--check", "--enforce", "runtime-api"), 1);
	assert_errors_have("spoa-breaker: --enforce runtime-api needs a runtime_api socket\n");
}

/* Peers mode: a verdict names its owner, and travels through HAProxy; the
 * table's name goes into commands, so only an HAProxy name is taken. */
static void test_verdict_table_needs_a_node_and_a_socket(void **state)
{
	struct config c;
	char line[800];
	const char *path = file("[haproxy]\nverdict_table = breaker_verdicts\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:2: verdict_table = breaker_verdicts needs a node_id, unique among the HAProxy "
		 "nodes\n",
		 path);
	assert_errors_have(line);
	assert_int_equal(STATUS("--check", "--verdict-table", "t", "--node-id", "2"), 1);
	assert_errors_have("spoa-breaker: --verdict-table t needs a runtime_api socket\n");
	assert_int_equal(STATUS("--check", "--verdict-table", "t;show info", "--node-id", "2",
				"--runtime-api", "unix:/a.sock"),
			 2);
	assert_errors_have("expected an HAProxy name");
	assert_int_equal(STATUS("--check", "--node-id", "0"), 2);
	assert_int_equal(RUN(&c, "--check", "--verdict-table", "breaker_verdicts", "--node-id", "7",
			     "--runtime-api", "unix:/a.sock"),
			 0);
	assert_string_equal(c.link.verdict_table, "breaker_verdicts");
	assert_int_equal(c.link.node_id, 7);
	config_free(&c);
	/* none: off, as by default. */
	assert_int_equal(RUN(&c, "--check", "--verdict-table", "none"), 0);
	assert_string_equal(c.link.verdict_table, "");
	config_free(&c);
}

/* probe_timeout is gone from the breaker; old files load with a warning. */
static void test_probe_timeout_warns(void **state)
{
	struct config c;
	char line[800];
	const char *path = file("[breaker]\nprobe_timeout = 30s\n[server be/s1]\nprobe_timeout = x\n");
	assert_int_equal(RUN(&c, "--check", "-f", path), 0);
	snprintf(line, sizeof(line),
		 "%s:2: warning: probe_timeout is no longer used: HAProxy's maxconn limits "
		 "half-open probes and timeout server ends a hung one\n",
		 path);
	assert_errors_have(line);
	snprintf(line, sizeof(line), "%s:4: warning: probe_timeout", path);
	assert_errors_have(line);
	assert_non_null(strstr(r.out, "configuration valid"));
	assert_int_equal(c.global.fields, 0);
	config_free(&c);

	assert_int_equal(STATUS("--probe-timeout", "30s"), 2);
}

/* ---- policies ---- */

static void test_policy_problems_at_their_sections(void **state)
{
	char line[600];
	const char *path = file("[breaker]\n"
				"threshold = 3\n"
				"[backend b1]\n"
				"capacity_statuses = 429,503\n"
				"failure_statuses = 500-599\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:5: [backend b1]: failure_statuses = 500-599 overlaps capacity_statuses = "
		 "429,503 at line 4 on 503 (a status belongs to one set only)",
		 path);
	assert_errors_have(line);

	/* Made by the command line: no line of the file to blame. */
	path = file("[breaker]\nthreshold = 3\n");
	assert_int_equal(STATUS("--check", "-f", path, "--failure-statuses", "500-599"), 1);
	assert_errors_have("spoa-breaker: --failure-statuses 500-599 overlaps the default "
			   "capacity_statuses 429,503,529 on 503,529 "
			   "(a status belongs to one set only)");
}

/* The backoff and failure-rate keys that only make sense together. */
static void test_backoff_and_rate_keys_checked_together(void **state)
{
	char line[600];
	struct config c;

	/* max_cooldown below the cooldown, in one section or through
	 * inheritance: reported at the section whose policy is wrong. */
	const char *path = file("[breaker]\n"
				"cooldown = 1m\n"
				"max_cooldown = 30s\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:1: [breaker]: max_cooldown of 30000 ms is below cooldown of 60000 ms", path);
	assert_errors_have(line);
	path = file("[breaker]\n"
		    "max_cooldown = 1m\n"
		    "[server be/w1]\n"
		    "cooldown = 2m\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:3: [server be/w1]: max_cooldown of 60000 ms is below cooldown of 120000 ms",
		 path);
	assert_errors_have(line);
	assert_int_equal(STATUS("--check", "--cooldown", "2m", "--max-cooldown", "1m"), 1);
	assert_errors_have("spoa-breaker: [breaker]: max_cooldown of 60000 ms is below cooldown");

	/* A long cooldown alone still loads: the unset cap follows it. */
	path = file("[breaker]\ncooldown = 10m\n");
	assert_int_equal(RUN(&c, "--check", "-f", path), 0);
	config_free(&c);

	/* minimum_volume above the window. */
	path = file("[breaker]\n"
		    "failure_rate_threshold = 30\n"
		    "[backend be]\n"
		    "window = 10\n"
		    "minimum_volume = 20\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line), "%s:3: [backend be]: minimum_volume is 20, above the window of 10",
		 path);
	assert_errors_have(line);

	/* A whole valid set, layered: the server's policy has all of it. */
	path = file("[breaker]\n"
		    "cooldown = 1s\n"
		    "max_cooldown = 8s\n"
		    "healthy_for = 20s\n"
		    "[backend be]\n"
		    "failure_rate_threshold = 30\n"
		    "window = 10\n"
		    "[server be/w1]\n"
		    "minimum_volume = 5\n");
	assert_int_equal(RUN(&c, "-f", path), -1);
	const struct breaker_policy *p = breaker_policies_for(&c.policies, "be", 2, "w1", 2);
	assert_int_equal(p->cooldown_ms, 1000);
	assert_int_equal(p->max_cooldown_ms, 8000);
	assert_int_equal(p->healthy_for_ms, 20000);
	assert_int_equal(p->failure_rate_threshold, 30);
	assert_int_equal(p->window, 10);
	assert_int_equal(p->minimum_volume, 5);
	p = breaker_policies_for(&c.policies, "other", 5, "w1", 2);
	assert_int_equal(p->failure_rate_threshold, 0);
	assert_int_equal(p->minimum_volume, BREAKER_DEFAULT_MINIMUM_VOLUME);
	config_free(&c);
}

/* The ejection cap is per backend: layered from [breaker] to [backend],
 * refused in [server] with where it belongs. */
static void test_ejection_keys_per_backend(void **state)
{
	(void)state;
	struct config c;
	char line[512];

	const char *path = file("[breaker]\n"
				"max_ejection_percent = 30\n"
				"[backend be]\n"
				"max_ejection_percent = 100\n"
				"drain_last_server = true\n");
	assert_int_equal(RUN(&c, "-f", path), -1);
	const struct breaker_policy *p = breaker_policies_for(&c.policies, "be", 2, "w1", 2);
	assert_int_equal(p->max_ejection_percent, 100);
	assert_true(p->drain_last_server);
	p = breaker_policies_for(&c.policies, "other", 5, "w1", 2);
	assert_int_equal(p->max_ejection_percent, 30);
	assert_false(p->drain_last_server);
	config_free(&c);

	assert_int_equal(RUN(&c, "--threshold", "3"), -1);
	p = breaker_policies_for(&c.policies, "be", 2, "w1", 2);
	assert_int_equal(p->max_ejection_percent, 50);
	assert_false(p->drain_last_server);
	config_free(&c);

	path = file("[server be/w1]\n"
		    "max_ejection_percent = 20\n"
		    "drain_last_server = true\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line),
		 "%s:2: [server be/w1]: unknown key 'max_ejection_percent' (it belongs in "
		 "[breaker] or [backend NAME])",
		 path);
	assert_errors_have(line);
	snprintf(line, sizeof(line), "%s:3: [server be/w1]: unknown key 'drain_last_server'", path);
	assert_errors_have(line);

	assert_int_equal(STATUS("--check", "--max-ejection-percent", "101"), 2); /* a usage error */
	assert_errors_have("expected 0..100");
}

/* retried_timeouts follows the backend's retry-on: per backend, off by
 * default (the shipped retry-on retries no timeout), a flag that turns it
 * on everywhere, and no [server] level. */
static void test_retried_timeouts_per_backend(void **state)
{
	(void)state;
	struct config c;
	char line[512];

	const char *path = file("[backend be]\n"
				"retried_timeouts = true\n");
	assert_int_equal(RUN(&c, "-f", path), -1);
	assert_true(breaker_policies_for(&c.policies, "be", 2, "w1", 2)->retried_timeouts);
	assert_false(breaker_policies_for(&c.policies, "other", 5, "w1", 2)->retried_timeouts);
	config_free(&c);

	assert_int_equal(RUN(&c, "--retried-timeouts"), -1);
	assert_true(breaker_policies_for(&c.policies, "any", 3, "w1", 2)->retried_timeouts);
	config_free(&c);

	path = file("[server be/w1]\n"
		    "retried_timeouts = true\n");
	assert_int_equal(STATUS("--check", "-f", path), 1);
	snprintf(line, sizeof(line), "%s:2: [server be/w1]: unknown key 'retried_timeouts'", path);
	assert_errors_have(line);
}

/* ---- reload ---- */

static void collect(void *ctx, const char *key)
{
	char *names = ctx;
	strcat(names, key);
	strcat(names, " ");
}

static void test_reload_decision(void **state)
{
	struct config running, next;
	char names[256] = "";
	const char *before = file("[agent]\nlisten = 127.0.0.1:1\nmax_connections = 10\n"
				  "log_level = info\n[breaker]\nthreshold = 3\n");
	const char *after = file("[agent]\nlisten = 127.0.0.1:2\nmax_connections = 20\n"
				 "log_level = debug\nack_variables = state\n"
				 "[breaker]\nthreshold = 4\n");

	assert_int_equal(RUN(&running, "-f", before), -1);
	assert_int_equal(RUN(&next, "-f", after), -1);
	assert_int_equal(config_restart_only_changes(&running, &next, collect, names), 2);
	assert_string_equal(names, "listen max_connections ");
	assert_false(config_haproxy_changed(&running, &next));
	/* What runs keeps describing what runs; what reloads is the new. */
	config_keep_restart_only(&next, &running);
	assert_int_equal(config_restart_only_changes(&running, &next, NULL, NULL), 0);
	assert_int_equal(next.nb_listen, 1);
	assert_string_equal(next.listen[0], "127.0.0.1:1");
	assert_int_equal(next.agent.max_connections, 10);
	assert_int_equal(next.log_level, LOG_LEVEL_DEBUG);
	assert_int_equal(next.ack_variables, OBSERVE_VAR_STATE);
	assert_int_equal(next.global.values.threshold, 4);
	config_free(&next);

	/* The admin listener turned off; a longer poll. */
	assert_int_equal(RUN(&next, "-f", before, "--admin", "none", "--poll-interval", "1s"), -1);
	names[0] = '\0';
	assert_int_equal(config_restart_only_changes(&running, &next, collect, names), 1);
	assert_string_equal(names, "admin ");
	assert_true(config_haproxy_changed(&running, &next));
	config_free(&next);

	/* Enforcement compares as settled: a socket given makes runtime-api. */
	assert_int_equal(RUN(&next, "-f", before, "--enforce", "none"), -1);
	assert_false(config_haproxy_changed(&running, &next));
	config_free(&next);
	assert_int_equal(RUN(&next, "-f", before, "--runtime-api", "unix:/a.sock"), -1);
	assert_true(config_haproxy_changed(&running, &next));
	config_free(&next);
	config_free(&running);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_key_is_an_option),
		cmocka_unit_test(test_verdict_table_needs_a_node_and_a_socket),
		cmocka_unit_test(test_restart_only_keys),
		cmocka_unit_test(test_good_values),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_control_is_unix),
		cmocka_unit_test(test_check_validates_addresses),
		cmocka_unit_test(test_exposed_listener_needs_an_allowlist),
		cmocka_unit_test(test_exposed_admin_needs_an_allowlist),
		cmocka_unit_test(test_remote_runtime_api_warns),
		cmocka_unit_test(test_allow_from_file_and_command_line),
		cmocka_unit_test(test_command_line_overrides_file),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_bad_command_lines),
		cmocka_unit_test(test_callable_again),
		cmocka_unit_test(test_directory_is_refused),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_conflict_reported_at_its_key),
		cmocka_unit_test(test_probe_timeout_warns),
		cmocka_unit_test(test_policy_problems_at_their_sections),
		cmocka_unit_test(test_backoff_and_rate_keys_checked_together),
		cmocka_unit_test(test_ejection_keys_per_backend),
		cmocka_unit_test(test_retried_timeouts_per_backend),
		cmocka_unit_test(test_reload_decision),
	};
	int failed = cmocka_run_group_tests(tests, setup, teardown);
	free(r.out);
	free(r.errors);
	return failed;
}
