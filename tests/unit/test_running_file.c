/*
 * test_running_file.c - the file a running agent writes for --check
 * (config/running_file.h): what it holds reads back as it ran; a text that
 * is not such a file is refused, saying where; and --check's use of it
 * (config_check_running): judged against what runs when an agent runs,
 * as for a start when the file is missing, malformed or left behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/keys.h"
#include "config/running_file.h"

static char text[RUNNING_FILE_MAX_BYTES];

static void set(struct config *c, const char *key, const char *value)
{
	char err[256];
	if (!config_key_set(config_key_find(key), c, NULL, value, err, sizeof(err)))
		fail_msg("%s = %s: %s", key, value, err);
}

/* An agent as a file would start it: two listeners, TLS with client
 * certificates, every restart-only key off its default. */
static void running_agent(struct config *c)
{
	config_defaults(c);
	set(c, "listen", "0.0.0.0:12345");
	set(c, "listen", "unix:/run/spoa-breaker/spop.sock");
	set(c, "allow", "10.0.0.0/8");
	set(c, "socket_mode", "0600");
	set(c, "socket_group", "haproxy");
	set(c, "tls_cert", "/etc/spoa-breaker/agent.pem");
	set(c, "tls_key", "/etc/spoa-breaker/agent.key");
	set(c, "tls_ca", "/etc/spoa-breaker/ca.pem");
	set(c, "max_frame_size", "32764");
	set(c, "max_connections", "200");
	set(c, "idle_timeout", "5m");
	set(c, "max_breakers", "500");
	set(c, "syslog", "true");
	set(c, "admin", "0.0.0.0:9786");
	set(c, "state_file", "/var/lib/spoa-breaker/state.msgpack");
}

static void test_what_runs_reads_back(void **state)
{
	struct config running, back;
	char err[256];
	size_t len;
	long pid = 0;

	running_agent(&running);
	assert_true(running_file_format(&running, 31337, text, sizeof(text), &len, err,
					sizeof(err)));
	assert_int_equal(len, strlen(text));
	assert_non_null(strstr(text, "\nlisten = 0.0.0.0:12345\nlisten = unix:"));
	/* Only what a reload leaves as it runs, and the TLS it judges by. */
	assert_null(strstr(text, "allow"));
	assert_null(strstr(text, "tls_key"));
	if (!running_file_parse(text, len, &back, &pid, err, sizeof(err)))
		fail_msg("%s\n%s", err, text);
	assert_int_equal(pid, 31337);
	/* Every key a restart applies, as it was; TLS too. */
	assert_int_equal(config_restart_only_changes(&running, &back, NULL, NULL), 0);
	assert_int_equal(back.nb_listen, 2);
	assert_string_equal(back.tls_cert, running.tls_cert);
	assert_string_equal(back.tls_ca, running.tls_ca);
	/* The defaults read back too ("none" for an empty value). */
	config_defaults(&running);
	snprintf(running.listen[running.nb_listen++], CONFIG_LISTEN_MAX_LEN, "127.0.0.1:12345");
	assert_true(running_file_format(&running, 7, text, sizeof(text), &len, err, sizeof(err)));
	assert_true(running_file_parse(text, len, &back, &pid, err, sizeof(err)));
	assert_int_equal(config_restart_only_changes(&running, &back, NULL, NULL), 0);
	assert_string_equal(back.tls_ca, "");
}

static void test_a_value_that_would_not_read_back(void **state)
{
	struct config running;
	char err[256];
	size_t len;

	running_agent(&running);
	snprintf(running.tls_ca, sizeof(running.tls_ca), "/etc/ca.pem\nlisten = 127.0.0.1:1");
	assert_false(running_file_format(&running, 1, text, sizeof(text), &len, err, sizeof(err)));
	assert_non_null(strstr(err, "tls_ca"));
	running_agent(&running);
	assert_false(running_file_format(&running, 1, text, 64, &len, err, sizeof(err)));
	assert_non_null(strstr(err, "does not fit"));
}

/* A complete file but for the line given, appended. */
static const char complete[] = "pid = 12\n"
			       "listen = 0.0.0.0:12345\n"
			       "socket_mode = 0660\n"
			       "socket_group = none\n"
			       "tls_cert = none\n"
			       "tls_ca = none\n"
			       "max_frame_size = 16380\n"
			       "max_connections = 1024\n"
			       "idle_timeout = 2m\n"
			       "max_breakers = 10000\n"
			       "syslog = false\n"
			       "admin = 127.0.0.1:9786\n"
			       "state_file = /var/lib/spoa-breaker/state.msgpack\n"
			       "control = none\n"
			       "control_mode = 0660\n"
			       "control_group = none\n";

static const struct {
	const char *text; /* NULL: complete, then `extra` */
	const char *extra;
	const char *says; /* NULL: read */
} texts[] = {
	{NULL, "", NULL},
	{NULL, "# a comment\n\n   \n", NULL},
	{NULL, "  listen =  10.0.0.1:1  \r\n", NULL},
	{NULL, "allow = any\n", "line 17: 'allow' is not a key this file holds"},
	{NULL, "threshold = 3\n", "line 17: 'threshold' is not a key this file holds"},
	{NULL, "nonsense = 1\n", "line 17: 'nonsense' is not a key this file holds"},
	{NULL, "listen\n", "line 17: expected 'key = value'"},
	{NULL, "admin = 0.0.0.0:nope\n", "line 17: admin '0.0.0.0:nope': expected"},
	{NULL, "pid = 0\n", "line 17: pid '0': expected a process id"},
	{NULL, "pid = 12x\n", "line 17: pid '12x': expected a process id"},
	{"listen = 0.0.0.0:1\n", NULL, "no pid line"},
	{"pid = 1\n", NULL, "no listen line"},
	{"pid = 1\nlisten = 0.0.0.0:1\n", NULL, "no socket_mode line"},
	{"", NULL, "no pid line"},
};

static void test_texts(void **state)
{
	static char buf[RUNNING_FILE_MAX_BYTES];
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct config running;
		char err[256] = "";
		long pid = 0;
		snprintf(buf, sizeof(buf), "%s%s", texts[i].text ? texts[i].text : complete,
			 texts[i].extra ? texts[i].extra : "");
		bool ok = running_file_parse(buf, strlen(buf), &running, &pid, err, sizeof(err));
		if (ok != !texts[i].says || (texts[i].says && !strstr(err, texts[i].says)))
			fail_msg("text %zu: %s, said '%s', expected %s%s", i, ok ? "read" : "refused",
				 err, texts[i].says ? "refused saying " : "read",
				 texts[i].says ? texts[i].says : "");
		config_free(&running);
	}
	/* Not text, and a line no value fills. */
	struct config running;
	char err[256];
	long pid;
	assert_false(running_file_parse("pid = 1\0\n", 9, &running, &pid, err, sizeof(err)));
	assert_non_null(strstr(err, "NUL"));
	memset(buf, 'x', 2000);
	assert_false(running_file_parse(buf, 2000, &running, &pid, err, sizeof(err)));
	assert_non_null(strstr(err, "line 1: longer than"));
	/* A listen repeated beyond what the agent holds is refused by the key. */
	size_t n = (size_t)snprintf(buf, sizeof(buf), "%s", complete);
	for (int j = 0; j < 64; j++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "listen = 127.0.0.1:%d\n", 2000 + j);
	assert_false(running_file_parse(buf, n, &running, &pid, err, sizeof(err)));
}

/* ---- --check: config_check_running() on a real file ---- */

static char dir[64], state_file[128], path[160];

static int make_dir(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test_running_file.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(state_file, sizeof(state_file), "%s/state.msgpack", dir);
	snprintf(path, sizeof(path), "%s" RUNNING_FILE_SUFFIX, state_file);
	return 0;
}

static int remove_dir(void **state)
{
	unlink(path);
	rmdir(dir);
	return 0;
}

static void write_file(const char *content)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

/* The agent's side: it runs with 0.0.0.0 and allow, as process pid. */
static void publish(long pid)
{
	struct config running;
	char err[256];
	size_t len;
	config_defaults(&running);
	set(&running, "listen", "0.0.0.0:12345");
	set(&running, "allow", "10.0.0.0/8");
	set(&running, "state_file", state_file);
	assert_true(running_file_format(&running, pid, text, sizeof(text), &len, err, sizeof(err)));
	write_file(text);
}

/* --check's side: a file that listens on a unix socket, with or without
 * allow. Returns the problems; *said what --check said (free it). */
static int check(bool with_allow, char **said)
{
	struct config next;
	size_t len;
	config_defaults(&next);
	next.path = "/etc/spoa-breaker/spoa-breaker.ini";
	set(&next, "listen", "unix:/run/spop.sock");
	if (with_allow)
		set(&next, "allow", "10.0.0.0/8");
	set(&next, "state_file", state_file);
	FILE *errors = open_memstream(said, &len);
	assert_non_null(errors);
	int problems = config_check_running(&next, errors);
	fclose(errors);
	config_free(&next);
	return problems;
}

static void test_check_against_the_running_agent(void **state)
{
	char *said;

	/* None runs: nothing more is said. */
	assert_int_equal(check(false, &said), 0);
	assert_string_equal(said, "");
	free(said);

	/* One runs (this process plays it): what its reload would say. */
	publish((long)getpid());
	assert_int_equal(check(false, &said), 1);
	assert_non_null(strstr(said, "listen = 0.0.0.0:12345 is not a loopback address and "
				     "nothing says who may connect"));
	assert_non_null(strstr(said, "spoa-breaker: /etc/spoa-breaker/spoa-breaker.ini: valid for "
				     "a start, refused for a reload: " CONFIG_RELOAD_EXPOSED));
	assert_non_null(strstr(said, path));
	free(said);
	/* With allow the reload goes on; listen waits for a restart. */
	assert_int_equal(check(true, &said), 0);
	assert_non_null(strstr(said, "warning: listen changed; a reload leaves it as it runs"));
	assert_null(strstr(said, "refused"));
	free(said);

	/* Left by a process that is gone: as for a start, said once. */
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	publish((long)child);
	assert_int_equal(check(false, &said), 0);
	assert_non_null(strstr(said, "which no longer runs; checked as for a start"));
	free(said);

	/* Malformed: said, then as for a start. */
	write_file("pid = 1\nlisten = 0.0.0.0:12345\n");
	assert_int_equal(check(false, &said), 0);
	assert_non_null(strstr(said, "warning: "));
	assert_non_null(strstr(said, "no socket_mode line; checked without what the running agent"));
	free(said);
	unlink(path);
}

static void test_read_refuses_what_is_not_a_file(void **state)
{
	struct config running;
	char err[256];
	long pid;

	unlink(path);
	assert_int_equal(running_file_read(path, &running, &pid, err, sizeof(err)),
			 RUNNING_FILE_READ_MISSING);
	/* A FIFO: refused unread, without waiting for a writer. */
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(running_file_read(path, &running, &pid, err, sizeof(err)),
			 RUNNING_FILE_READ_FAILED);
	assert_non_null(strstr(err, "not a regular file"));
	unlink(path);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(running_file_read(path, &running, &pid, err, sizeof(err)),
			 RUNNING_FILE_READ_FAILED);
	assert_non_null(strstr(err, "symbolic link"));
	unlink(path);
	/* Too large to be ours: read no further. */
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i <= RUNNING_FILE_MAX_BYTES / 8; i++)
		fputs("# xxxxx\n", f);
	fclose(f);
	assert_int_equal(running_file_read(path, &running, &pid, err, sizeof(err)),
			 RUNNING_FILE_READ_FAILED);
	assert_non_null(strstr(err, "larger than"));
	unlink(path);
	/* No state file: no running file either. */
	config_defaults(&running);
	running.state.file[0] = '\0';
	assert_true(running_file_path(&running, err, sizeof(err)));
	assert_string_equal(err, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_what_runs_reads_back),
		cmocka_unit_test(test_a_value_that_would_not_read_back),
		cmocka_unit_test(test_texts),
		cmocka_unit_test_setup_teardown(test_check_against_the_running_agent, make_dir,
						remove_dir),
		cmocka_unit_test_setup_teardown(test_read_refuses_what_is_not_a_file, make_dir,
						remove_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
