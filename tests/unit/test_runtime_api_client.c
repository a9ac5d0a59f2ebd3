/*
 * test_runtime_api_client.c - the asynchronous Runtime API client against a real
 * HAProxy: batches answered in order, an error that does not stop the rest
 * of its batch, sockets nobody listens on, a socket that never answers, the
 * queue bound, the wait of queued commands during an outage, recovery.
 *
 * The HAProxy is $HAPROXY_BIN, else `haproxy` from PATH (or /usr/sbin): it
 * runs in the foreground (-db) with its stats socket in a mkdtemp directory
 * and one backend of three servers on loopback ports nobody listens on (no
 * checks, so it never connects to them). Without an HAProxy, every test
 * that needs one fails, saying so: a missing peer is not a pass.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <ev.h>

#include "hapi/runtime_api.h"

/* --- the HAProxy under test --- */

static struct {
	pid_t pid;
	char bin[512];
	char dir[32];   /* /tmp/runtime_api-test-XXXXXX */
	char sock[128]; /* unix:<dir>/admin.sock, as the client wants it */
	char tcp[64];   /* 127.0.0.1:<port> */
	char error[1024]; /* why there is no HAProxy, for every test that needs one */
} hap;

static bool executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static bool find_haproxy(void)
{
	const char *env = getenv("HAPROXY_BIN");
	if (env && *env) {
		if (!executable(env)) {
			snprintf(hap.error, sizeof(hap.error),
				 "HAPROXY_BIN=%s is not an executable file", env);
			return false;
		}
		snprintf(hap.bin, sizeof(hap.bin), "%s", env);
		return true;
	}
	/* /usr/sbin is not in every user's PATH, but it is where Debian puts it. */
	char path[4096];
	snprintf(path, sizeof(path), "%s:/usr/sbin:/usr/local/sbin",
		 getenv("PATH") ? getenv("PATH") : "");
	for (char *save = NULL, *d = strtok_r(path, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(hap.bin, sizeof(hap.bin), "%s/haproxy", d);
		if (executable(hap.bin))
			return true;
	}
	snprintf(hap.error, sizeof(hap.error),
		 "no HAProxy to test against: set HAPROXY_BIN or install haproxy "
		 "(apt-get install haproxy); these tests need the real peer");
	return false;
}

static void append_log(void)
{
	char path[96], text[600] = "";
	snprintf(path, sizeof(path), "%s/haproxy.log", hap.dir);
	FILE *f = fopen(path, "r");
	if (f) {
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = '\0';
		fclose(f);
	}
	size_t used = strlen(hap.error);
	snprintf(hap.error + used, sizeof(hap.error) - used, "; its output: %s", text);
}

/* A free TCP port on loopback (a race with other programs, rare enough). */
static int free_port(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port = -1;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static bool unix_connects(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static bool start_haproxy(void)
{
	char cfg_path[96], log_path[96], sock_path[96];
	int port = free_port();

	snprintf(hap.dir, sizeof(hap.dir), "/tmp/runtime_api-test-XXXXXX");
	if (!mkdtemp(hap.dir)) {
		snprintf(hap.error, sizeof(hap.error), "mkdtemp: %s", strerror(errno));
		return false;
	}
	if (!find_haproxy())
		return false;
	snprintf(cfg_path, sizeof(cfg_path), "%s/haproxy.cfg", hap.dir);
	snprintf(log_path, sizeof(log_path), "%s/haproxy.log", hap.dir);
	snprintf(sock_path, sizeof(sock_path), "%s/admin.sock", hap.dir);
	snprintf(hap.sock, sizeof(hap.sock), "unix:%s", sock_path);
	snprintf(hap.tcp, sizeof(hap.tcp), "127.0.0.1:%d", port);

	FILE *f = fopen(cfg_path, "w");
	if (!f) {
		snprintf(hap.error, sizeof(hap.error), "%s: %s", cfg_path, strerror(errno));
		return false;
	}
	fprintf(f,
		"global\n"
		"    stats socket %s mode 600 level admin\n"
		"    stats socket ipv4@%s level admin\n"
		"defaults\n"
		"    mode http\n"
		"    timeout connect 1s\n"
		"    timeout client 5s\n"
		"    timeout server 5s\n"
		"backend be_app\n"
		"    server w1 127.0.0.1:1\n"
		"    server w2 127.0.0.1:2\n"
		"    server w3 127.0.0.1:3\n",
		sock_path, hap.tcp);
	fclose(f);

	hap.pid = fork();
	if (hap.pid < 0) {
		snprintf(hap.error, sizeof(hap.error), "fork: %s", strerror(errno));
		return false;
	}
	if (hap.pid == 0) {
		FILE *log = fopen(log_path, "w");
		if (log) {
			dup2(fileno(log), 1);
			dup2(fileno(log), 2);
		}
		execl(hap.bin, hap.bin, "-db", "-f", cfg_path, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", hap.bin, strerror(errno));
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		int status;
		if (waitpid(hap.pid, &status, WNOHANG) == hap.pid) {
			hap.pid = 0;
			snprintf(hap.error, sizeof(hap.error), "%s exited at start", hap.bin);
			append_log();
			return false;
		}
		if (unix_connects(sock_path))
			return true;
		sleep_ms(50);
	}
	snprintf(hap.error, sizeof(hap.error), "%s: no stats socket after 5s", hap.bin);
	append_log();
	return false;
}

static int group_setup(void **state)
{
	if (!start_haproxy())
		fprintf(stderr, "test_runtime_api_client: %s\n", hap.error);
	return 0; /* tests that need HAProxy fail one by one, saying why */
}

static int group_teardown(void **state)
{
	if (hap.pid > 0) {
		int status;
		kill(hap.pid, SIGTERM);
		for (int i = 0; i < 60 && waitpid(hap.pid, &status, WNOHANG) != hap.pid; i++)
			sleep_ms(50);
		if (kill(hap.pid, 0) == 0) {
			kill(hap.pid, SIGKILL);
			waitpid(hap.pid, &status, 0);
		}
		hap.pid = 0;
	}
	if (hap.dir[0]) {
		const char *files[] = {"haproxy.cfg", "haproxy.log", "admin.sock", "late.sock",
				       "mute.sock", "refused.sock", "fake.sock"};
		char path[160];
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", hap.dir, files[i]);
			unlink(path);
		}
		rmdir(hap.dir);
	}
	return 0;
}

static void require_haproxy(void)
{
	if (hap.pid <= 0)
		fail_msg("%s", hap.error[0] ? hap.error : "HAProxy not started");
}

/* --- recording callbacks --- */

#define NB_SLOTS 16

struct recorder;

struct slot {
	struct recorder *rec;
	unsigned calls;
	unsigned order; /* rank among all answers */
	enum runtime_api_result result;
	char reply[16384];
	size_t len;
	ev_tstamp at;
	/* Optionally, a command to submit from inside the callback. */
	struct runtime_api_client *client;
	const char *then_submit;
	struct slot *then_slot;
	bool then_accepted;
};

struct recorder {
	struct ev_loop *loop;
	unsigned answered;
	bool in_submit;
	bool answered_inside_submit;
	struct slot slots[NB_SLOTS];
};

static void on_reply(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct slot *s = ctx;
	struct recorder *rec = s->rec;

	s->calls++;
	s->order = rec->answered++;
	s->result = result;
	s->at = ev_time();
	assert_non_null(reply);
	assert_int_equal(reply[len], '\0');
	s->len = len < sizeof(s->reply) - 1 ? len : sizeof(s->reply) - 1;
	memcpy(s->reply, reply, s->len);
	s->reply[s->len] = '\0';
	if (rec->in_submit)
		rec->answered_inside_submit = true;
	if (s->then_submit) {
		s->then_slot->rec = rec;
		s->then_accepted = runtime_api_submit(s->client, s->then_submit, on_reply, s->then_slot);
	}
}

static struct recorder *recorder_new(void)
{
	struct recorder *rec = calloc(1, sizeof(*rec));
	assert_non_null(rec);
	rec->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(rec->loop);
	for (unsigned i = 0; i < NB_SLOTS; i++)
		rec->slots[i].rec = rec;
	return rec;
}

static void recorder_free(struct recorder *rec)
{
	ev_loop_destroy(rec->loop);
	free(rec);
}

static bool submit(struct runtime_api_client *c, struct recorder *rec, unsigned i, const char *command)
{
	rec->in_submit = true;
	ev_now_update(rec->loop);
	bool ok = runtime_api_submit(c, command, on_reply, &rec->slots[i]);
	rec->in_submit = false;
	return ok;
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

/* Runs the loop until `want` answers arrived or `seconds` passed. */
static bool run_until(struct recorder *rec, unsigned want, double seconds)
{
	ev_timer tick;
	ev_tstamp end = ev_time() + seconds;

	ev_timer_init(&tick, tick_cb, 0.01, 0.01);
	ev_timer_start(rec->loop, &tick);
	while (rec->answered < want && ev_time() < end)
		ev_run(rec->loop, EVRUN_ONCE);
	ev_timer_stop(rec->loop, &tick);
	return rec->answered >= want;
}

static void run_for(struct recorder *rec, double seconds)
{
	run_until(rec, UINT32_MAX, seconds);
}

static struct runtime_api_client *client_for(struct recorder *rec, const char *address,
				       const struct runtime_api_settings *s)
{
	char err[256] = "";
	struct runtime_api_client *c = runtime_api_client_new(rec->loop, address, s, err, sizeof(err));
	if (!c)
		fail_msg("runtime_api_client_new(%s): %s", address, err);
	return c;
}

static void expect_answers(struct recorder *rec, unsigned n, double seconds)
{
	if (!run_until(rec, n, seconds))
		fail_msg("%u answers after %.1fs, expected %u", rec->answered, seconds, n);
	run_for(rec, 0.05); /* and no more than that */
	assert_int_equal(rec->answered, n);
	assert_false(rec->answered_inside_submit);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(rec->slots[i].calls, 1);
}

/* --- what HAProxy says about be_app --- */

struct admin_states {
	unsigned admin[4]; /* by server number 1..3 */
	bool seen[4];
};

static void collect_admin(void *ctx, const struct runtime_api_server_state *row)
{
	struct admin_states *st = ctx;
	if (row->srv_id >= 1 && row->srv_id <= 3) {
		st->admin[row->srv_id] = row->admin_state;
		st->seen[row->srv_id] = true;
	}
}

static struct admin_states parse_admin(const struct slot *s)
{
	struct admin_states st = {{0}, {0}};
	struct runtime_api_parse_report rep;
	if (!runtime_api_parse_servers_state(s->reply, s->len, collect_admin, &st, &rep))
		fail_msg("show servers state: %s in '%s'", rep.error, s->reply);
	assert_int_equal(rep.malformed, 0);
	for (int i = 1; i <= 3; i++)
		assert_true(st.seen[i]);
	return st;
}

struct slims {
	int64_t slim[4];
	char status[4][16];
};

static void collect_slim(void *ctx, const struct runtime_api_stat_row *row)
{
	struct slims *sl = ctx;
	if (row->sid >= 1 && row->sid <= 3) {
		sl->slim[row->sid] = row->slim;
		snprintf(sl->status[row->sid], sizeof(sl->status[0]), "%.*s", (int)row->status.len,
			 row->status.ptr);
	}
}

static void settings_fast(struct runtime_api_settings *s)
{
	runtime_api_settings_default(s);
	s->timeout = 0.2;
	s->backoff_min = 0.05;
	s->backoff_max = 0.1;
}

/* Puts be_app back as configured, for the next test. */
static void restore_servers(void)
{
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, hap.sock, NULL);
	const char *cmds[] = {
		"set server be_app/w1 state ready", "set server be_app/w2 state ready",
		"set server be_app/w3 state ready", "set maxconn server be_app/w1 0",
		"set maxconn server be_app/w2 0",   "set maxconn server be_app/w3 0",
	};
	for (unsigned i = 0; i < 6; i++)
		assert_true(submit(c, rec, i, cmds[i]));
	expect_answers(rec, 6, 3.0);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(rec->slots[i].len, 0);
	runtime_api_client_free(c);
	recorder_free(rec);
}

/* --- tests --- */

/* Drain, maxconn and reads in one line: every command answered, in order,
 * from one connection, and HAProxy's state shows what the line did. */
static void test_batch_applies_in_order(void **state)
{
	require_haproxy();
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, hap.sock, NULL);
	char cmd[4][RUNTIME_API_CMD_MAX];

	assert_true(runtime_api_cmd_set_state(cmd[0], sizeof(cmd[0]), "be_app", "w1", "drain"));
	assert_true(runtime_api_cmd_set_maxconn(cmd[1], sizeof(cmd[1]), "be_app", "w2", 5));
	assert_true(runtime_api_cmd_set_state(cmd[2], sizeof(cmd[2]), "be_app", "w3", "drain"));
	assert_true(runtime_api_cmd_show_servers_state(cmd[3], sizeof(cmd[3]), "be_app"));
	for (unsigned i = 0; i < 4; i++)
		assert_true(submit(c, rec, i, cmd[i]));
	assert_true(submit(c, rec, 4, "show stat -1 4 -1"));
	assert_int_equal(runtime_api_client_pending(c), 5);
	assert_int_equal(rec->answered, 0); /* never from inside runtime_api_submit */

	expect_answers(rec, 5, 3.0);
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(rec->slots[i].result, RUNTIME_API_OK);
		assert_int_equal(rec->slots[i].order, i);
	}
	for (unsigned i = 0; i < 3; i++)
		if (rec->slots[i].len != 0)
			fail_msg("'%s' answered '%s'", cmd[i], rec->slots[i].reply);

	struct admin_states st = parse_admin(&rec->slots[3]);
	assert_int_equal(st.admin[1], RUNTIME_API_ADMF_FDRAIN);
	assert_int_equal(st.admin[2], 0);
	assert_int_equal(st.admin[3], RUNTIME_API_ADMF_FDRAIN);

	struct slims sl = {{0}, {{0}}};
	struct runtime_api_parse_report rep;
	assert_true(runtime_api_parse_stat(rec->slots[4].reply, rec->slots[4].len, collect_slim, &sl, &rep));
	assert_int_equal(rep.rows, 3);
	assert_int_equal(sl.slim[1], -1);
	assert_int_equal(sl.slim[2], 5);
	assert_string_equal(sl.status[1], "DRAIN");
	assert_string_equal(sl.status[2], "no check");

	const struct runtime_api_stats *stats = runtime_api_client_stats(c);
	assert_int_equal(stats->connects, 1);
	assert_int_equal(stats->commands_ok, 5);
	assert_int_equal(stats->commands_failed, 0);
	assert_true(runtime_api_client_reachable(c));
	assert_int_equal(runtime_api_client_pending(c), 0);
	runtime_api_client_free(c);
	recorder_free(rec);
	restore_servers();
}

/* "No such server." is an answer (RUNTIME_API_OK), and the next command of the
 * same line still runs. */
static void test_missing_server_does_not_stop_batch(void **state)
{
	require_haproxy();
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, hap.sock, NULL);

	assert_true(submit(c, rec, 0, "set server be_app/nosuch state drain"));
	assert_true(submit(c, rec, 1, "set server be_app/w2 state drain"));
	assert_true(submit(c, rec, 2, "set server nosuch/w2 state drain"));
	assert_true(submit(c, rec, 3, "show servers state be_app"));
	expect_answers(rec, 4, 3.0);

	assert_int_equal(rec->slots[0].result, RUNTIME_API_OK);
	assert_string_equal(rec->slots[0].reply, "No such server.\n");
	assert_int_equal(rec->slots[1].result, RUNTIME_API_OK);
	assert_int_equal(rec->slots[1].len, 0);
	assert_int_equal(rec->slots[2].result, RUNTIME_API_OK);
	assert_string_equal(rec->slots[2].reply, "No such backend.\n");
	struct admin_states st = parse_admin(&rec->slots[3]);
	assert_int_equal(st.admin[2], RUNTIME_API_ADMF_FDRAIN);
	assert_int_equal(runtime_api_client_stats(c)->connects, 1);
	runtime_api_client_free(c);
	recorder_free(rec);
	restore_servers();
}

/* The TCP flavour of the stats socket (a non-blocking connect that may
 * complete later), and `show info` naming the process we started. */
static void test_tcp_socket(void **state)
{
	require_haproxy();
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, hap.tcp, NULL);
	struct runtime_api_info info;
	struct runtime_api_parse_report rep;

	assert_true(submit(c, rec, 0, "show info"));
	expect_answers(rec, 1, 3.0);
	assert_int_equal(rec->slots[0].result, RUNTIME_API_OK);
	if (!runtime_api_parse_info(rec->slots[0].reply, rec->slots[0].len, &info, &rep))
		fail_msg("show info: %s", rep.error);
	assert_int_equal(info.pid, (uint64_t)hap.pid);
	assert_true(info.version[0] != '\0');
	runtime_api_client_free(c);
	recorder_free(rec);
}

/* No socket file, or a file nobody listens on: every queued command fails,
 * once, with the reason; the connect failure is counted; and the next
 * attempt, after the backoff, tries again. */
static void test_nothing_listening(void **state)
{
	char refused[96];
	struct runtime_api_settings s;
	settings_fast(&s);

	/* A socket file whose listener is gone: ECONNREFUSED. */
	snprintf(refused, sizeof(refused), "%s/refused.sock", hap.dir);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", refused);
	unlink(refused);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);

	const struct {
		const char *file, *reason;
	} cases[] = {
		{"absent.sock", "connect: No such file or directory"},
		{"refused.sock", "connect: Connection refused"},
	};
	for (size_t k = 0; k < 2; k++) {
		char address[192];
		snprintf(address, sizeof(address), "unix:%s/%s", hap.dir, cases[k].file);
		struct recorder *rec = recorder_new();
		struct runtime_api_client *c = client_for(rec, address, &s);

		for (unsigned i = 0; i < 3; i++)
			assert_true(submit(c, rec, i, "show info"));
		assert_int_equal(rec->answered, 0);
		expect_answers(rec, 3, 2.0);
		for (unsigned i = 0; i < 3; i++) {
			assert_int_equal(rec->slots[i].result, RUNTIME_API_FAILED);
			assert_int_equal(rec->slots[i].order, i);
			assert_string_equal(rec->slots[i].reply, cases[k].reason);
		}
		const struct runtime_api_stats *stats = runtime_api_client_stats(c);
		assert_int_equal(stats->connects, 1);
		assert_int_equal(stats->connect_failures, 1);
		assert_int_equal(stats->commands_failed, 3);
		assert_false(runtime_api_client_reachable(c));

		run_for(rec, 0.1); /* the backoff (0.05 s) ends */
		assert_true(submit(c, rec, 3, "show info"));
		expect_answers(rec, 4, 2.0);
		assert_int_equal(rec->slots[3].result, RUNTIME_API_FAILED);
		assert_int_equal(stats->connects, 2);
		assert_int_equal(stats->connect_failures, 2);
		runtime_api_client_free(c);
		recorder_free(rec);
	}

	/* TCP: a loopback port nobody listens on. */
	char address[64];
	snprintf(address, sizeof(address), "127.0.0.1:%d", free_port());
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, address, &s);
	assert_true(submit(c, rec, 0, "show info"));
	expect_answers(rec, 1, 2.0);
	assert_int_equal(rec->slots[0].result, RUNTIME_API_FAILED);
	assert_string_equal(rec->slots[0].reply, "connect: Connection refused");
	assert_int_equal(runtime_api_client_stats(c)->connect_failures, 1);
	runtime_api_client_free(c);
	recorder_free(rec);
}

/* A socket that accepts (the kernel does, into its backlog) and never
 * answers: the batch fails after `timeout`, not later, not sooner. */
static void test_never_answers(void **state)
{
	char path[96], address[128];
	struct runtime_api_settings s;
	settings_fast(&s); /* timeout 0.2 s */

	snprintf(path, sizeof(path), "%s/mute.sock", hap.dir);
	snprintf(address, sizeof(address), "unix:%s", path);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fd, 8), 0);

	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, address, &s);
	ev_tstamp start = ev_time();
	assert_true(submit(c, rec, 0, "show info"));
	assert_true(submit(c, rec, 1, "show servers state"));
	expect_answers(rec, 2, 3.0);
	for (unsigned i = 0; i < 2; i++) {
		double waited = rec->slots[i].at - start;
		assert_int_equal(rec->slots[i].result, RUNTIME_API_FAILED);
		assert_string_equal(rec->slots[i].reply, "no complete reply within 0.2s");
		if (waited < 0.19 || waited > 1.0)
			fail_msg("failed after %.3fs, timeout 0.2s", waited);
	}
	const struct runtime_api_stats *stats = runtime_api_client_stats(c);
	assert_int_equal(stats->timeouts, 1);
	assert_int_equal(stats->connects, 1);
	assert_int_equal(stats->connect_failures, 0);
	assert_false(runtime_api_client_reachable(c));
	runtime_api_client_free(c);
	recorder_free(rec);
	close(fd);
}

/* During a long backoff, a queued command is not held for the whole
 * backoff: it fails once it has waited `timeout`, without a new attempt. */
static void test_queued_commands_expire_during_outage(void **state)
{
	char address[160];
	struct runtime_api_settings s;
	settings_fast(&s);
	s.backoff_min = 5.0;
	s.backoff_max = 5.0;

	snprintf(address, sizeof(address), "unix:%s/absent.sock", hap.dir);
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, address, &s);
	assert_true(submit(c, rec, 0, "show info"));
	expect_answers(rec, 1, 2.0); /* the attempt fails: backoff of 5 s begins */

	ev_tstamp start = ev_time();
	assert_true(submit(c, rec, 1, "show info"));
	assert_true(submit(c, rec, 2, "show info"));
	expect_answers(rec, 3, 2.0);
	for (unsigned i = 1; i < 3; i++) {
		double waited = rec->slots[i].at - start;
		assert_int_equal(rec->slots[i].result, RUNTIME_API_FAILED);
		assert_string_equal(rec->slots[i].reply,
				    "not sent within 0.2s: HAProxy is unreachable");
		if (waited < 0.19 || waited > 1.0)
			fail_msg("failed after %.3fs, timeout 0.2s", waited);
	}
	assert_int_equal(runtime_api_client_stats(c)->connects, 1); /* no attempt during backoff */
	runtime_api_client_free(c);
	recorder_free(rec);
}

/* Down, then back: the socket appears (a symlink to HAProxy's), and the
 * next attempt after the backoff succeeds and resets the state. */
static void test_recovers_when_haproxy_returns(void **state)
{
	require_haproxy();
	char late[96], address[128];
	struct runtime_api_settings s;
	settings_fast(&s);

	snprintf(late, sizeof(late), "%s/late.sock", hap.dir);
	snprintf(address, sizeof(address), "unix:%s", late);
	unlink(late);
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, address, &s);

	assert_true(submit(c, rec, 0, "show info"));
	expect_answers(rec, 1, 2.0);
	assert_int_equal(rec->slots[0].result, RUNTIME_API_FAILED);
	assert_false(runtime_api_client_reachable(c));

	assert_int_equal(symlink(hap.sock + strlen("unix:"), late), 0);
	run_for(rec, 0.1);
	assert_true(submit(c, rec, 1, "show info"));
	expect_answers(rec, 2, 3.0);
	assert_int_equal(rec->slots[1].result, RUNTIME_API_OK);
	assert_non_null(strstr(rec->slots[1].reply, "Name: HAProxy\n"));
	assert_true(runtime_api_client_reachable(c));
	runtime_api_client_free(c);
	recorder_free(rec);
	unlink(late);
}

/* max_queue counts waiting and in-flight commands; the rest is refused
 * and counted, never called back. */
static void test_queue_bound(void **state)
{
	require_haproxy();
	struct runtime_api_settings s;
	runtime_api_settings_default(&s);
	s.max_queue = 4;
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, hap.sock, &s);

	for (unsigned i = 0; i < 4; i++)
		assert_true(submit(c, rec, i, "set maxconn server be_app/w1 0"));
	assert_false(submit(c, rec, 4, "set maxconn server be_app/w1 0"));
	assert_false(submit(c, rec, 5, "set maxconn server be_app/w1 0"));
	assert_int_equal(runtime_api_client_stats(c)->dropped, 2);
	assert_int_equal(runtime_api_client_pending(c), 4);

	expect_answers(rec, 4, 3.0);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(rec->slots[i].result, RUNTIME_API_OK);
	assert_int_equal(rec->slots[4].calls, 0);
	assert_int_equal(rec->slots[5].calls, 0);
	/* Room again once answered. */
	assert_true(submit(c, rec, 4, "set maxconn server be_app/w1 0"));
	expect_answers(rec, 5, 3.0);
	runtime_api_client_free(c);
	recorder_free(rec);
}

/* The exchange hook: told once per exchange, before its line goes out,
 * after every answer of the one before (what the link counts on to know
 * which of its other connection's commands HAProxy ran before a look). */
struct exchanges {
	struct recorder *rec;
	unsigned begun;
	unsigned answered_then[4];
};

static void on_exchange(void *ctx)
{
	struct exchanges *x = ctx;
	if (x->begun < 4)
		x->answered_then[x->begun] = x->rec->answered;
	x->begun++;
}

/* max_batch commands per line; a command submitted from a callback, or
 * while a batch is in flight, goes in a later batch; order holds. */
static void test_batches_and_submit_from_callback(void **state)
{
	require_haproxy();
	struct runtime_api_settings s;
	runtime_api_settings_default(&s);
	s.max_batch = 2;
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, hap.sock, &s);

	struct exchanges x = {.rec = rec};
	runtime_api_client_on_exchange(c, on_exchange, &x);
	rec->slots[0].client = c;
	rec->slots[0].then_submit = "show servers state be_app";
	rec->slots[0].then_slot = &rec->slots[5];
	for (unsigned i = 0; i < 5; i++)
		assert_true(submit(c, rec, i, "set maxconn server be_app/w3 0"));
	assert_int_equal(x.begun, 0); /* nothing begins inside submit */
	expect_answers(rec, 6, 3.0);
	assert_true(rec->slots[0].then_accepted);
	for (unsigned i = 0; i < 6; i++) {
		assert_int_equal(rec->slots[i].result, RUNTIME_API_OK);
		assert_int_equal(rec->slots[i].order, i);
	}
	parse_admin(&rec->slots[5]);
	/* [0 1] [2 3] [4 5]: the one submitted during the first batch's
	 * callbacks waited for a later line. Each began once the one before
	 * was all answered, and said so first. */
	assert_int_equal(runtime_api_client_stats(c)->connects, 3);
	assert_int_equal(x.begun, 3);
	assert_int_equal(x.answered_then[0], 0);
	assert_int_equal(x.answered_then[1], 2);
	assert_int_equal(x.answered_then[2], 4);
	runtime_api_client_free(c);
	recorder_free(rec);
}

/* A reply larger than max_reply fails its batch; the socket is fine, so
 * HAProxy stays reachable and the next batch goes at once. */
static void test_reply_too_large(void **state)
{
	require_haproxy();
	struct runtime_api_settings s;
	runtime_api_settings_default(&s);
	s.max_reply = 100;
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, hap.sock, &s);

	assert_true(submit(c, rec, 0, "show stat"));
	expect_answers(rec, 1, 3.0);
	assert_int_equal(rec->slots[0].result, RUNTIME_API_FAILED);
	assert_string_equal(rec->slots[0].reply, "reply larger than 100 bytes");
	assert_true(runtime_api_client_reachable(c));
	assert_true(submit(c, rec, 1, "set maxconn server be_app/w1 0"));
	expect_answers(rec, 2, 3.0);
	assert_int_equal(rec->slots[1].result, RUNTIME_API_OK);
	runtime_api_client_free(c);
	recorder_free(rec);
}

/* --- streamed replies --- */

/* A stream that takes complete lines and keeps a copy of what it took;
 * its answer goes to a slot like any other. */
struct streamed {
	struct slot *slot;
	unsigned feeds;
	size_t largest_feed;
	bool at_end;
	char *copy;
	size_t len, cap;
	struct runtime_api_stat_stream stat;
	bool parse_stat;
};

static size_t take_lines(void *ctx, const char *buf, size_t len, bool at_end)
{
	struct streamed *t = ctx;
	size_t used = len;

	t->feeds++;
	if (len > t->largest_feed)
		t->largest_feed = len;
	assert_false(t->at_end); /* at_end comes once, last */
	t->at_end = at_end;
	if (!at_end) {
		const char *nl = memrchr(buf, '\n', len);
		used = nl ? (size_t)(nl + 1 - buf) : 0;
	}
	if (t->len + used > t->cap) {
		t->cap = (t->len + used) * 2;
		t->copy = realloc(t->copy, t->cap);
		assert_non_null(t->copy);
	}
	if (used)
		memcpy(t->copy + t->len, buf, used);
	t->len += used;
	if (t->parse_stat)
		assert_int_equal(runtime_api_stat_stream_feed(&t->stat, buf, used, at_end), used);
	return used;
}

static void on_streamed_reply(void *ctx, enum runtime_api_result result, const char *reply,
			      size_t len)
{
	struct streamed *t = ctx;
	on_reply(t->slot, result, reply, len);
}

static bool submit_streamed(struct runtime_api_client *c, struct recorder *rec, unsigned i,
			    const char *command, struct streamed *t)
{
	t->slot = &rec->slots[i];
	rec->in_submit = true;
	bool ok = runtime_api_submit_streamed(c, command, take_lines, on_streamed_reply, t);
	rec->in_submit = false;
	return ok;
}

static void count_row(void *ctx, const struct runtime_api_stat_row *row)
{
	(void)row;
	(*(unsigned *)ctx)++;
}

/* A streamed `show stat` goes alone in its exchange, is not bound by
 * max_reply, and is answered in its place among the others. */
static void test_streamed_show_stat(void **state)
{
	require_haproxy();
	struct runtime_api_settings s;
	runtime_api_settings_default(&s);
	s.max_reply = 100;
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, hap.sock, &s);
	struct streamed t = {.parse_stat = true};
	unsigned rows = 0;

	runtime_api_stat_stream_init(&t.stat, count_row, &rows);
	assert_true(submit(c, rec, 0, "set maxconn server be_app/w1 0"));
	assert_true(submit_streamed(c, rec, 1, "show stat -1 4 -1", &t));
	assert_true(submit(c, rec, 2, "set maxconn server be_app/w2 0"));
	expect_answers(rec, 3, 3.0);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(rec->slots[i].result, RUNTIME_API_OK);
		assert_int_equal(rec->slots[i].order, i);
		assert_int_equal(rec->slots[i].len, 0);
	}
	assert_true(t.at_end);
	assert_true(t.len > 100);
	assert_true(runtime_api_stat_stream_usable(&t.stat));
	assert_int_equal(rows, 3);
	/* before, alone, after */
	assert_int_equal(runtime_api_client_stats(c)->connects, 3);
	free(t.copy);
	runtime_api_client_free(c);
	recorder_free(rec);
}

/* A peer that answers one connection with `reply`, then exits. */
static pid_t fake_haproxy(const char *path, const char *reply, size_t len)
{
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fd, 8), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int conn = accept(fd, NULL, NULL);
		char line[512];
		size_t got = 0;
		while (got < sizeof(line)) { /* the command line */
			ssize_t n = read(conn, line + got, sizeof(line) - got);
			if (n <= 0 || memchr(line + got, '\n', (size_t)n))
				break;
			got += (size_t)n;
		}
		for (size_t sent = 0; sent < len;) {
			ssize_t n = write(conn, reply + sent, len - sent);
			if (n <= 0)
				_exit(1);
			sent += (size_t)n;
		}
		close(conn);
		_exit(0);
	}
	close(fd);
	return pid;
}

/* Streams `reply` from a fake HAProxy into t; returns the answer's slot. */
static struct slot run_streamed(const char *reply, size_t len, struct streamed *t)
{
	char path[96], address[128];
	snprintf(path, sizeof(path), "%s/fake.sock", hap.dir);
	snprintf(address, sizeof(address), "unix:%s", path);
	pid_t pid = fake_haproxy(path, reply, len);

	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, address, NULL);
	assert_true(submit_streamed(c, rec, 0, "show stat", t));
	expect_answers(rec, 1, 5.0);
	struct slot answer = rec->slots[0];
	assert_true(runtime_api_client_reachable(c));
	runtime_api_client_free(c);
	recorder_free(rec);
	int status;
	waitpid(pid, &status, 0);
	unlink(path);
	return answer;
}

/* 200 KB reach the stream in pieces of at most the window, byte for byte. */
static void test_streamed_in_pieces(void **state)
{
	require_haproxy(); /* for its directory */
	size_t len = 0, cap = 210000;
	char *reply = malloc(cap);
	assert_non_null(reply);
	for (unsigned i = 0; len < 200000; i++)
		len += (size_t)snprintf(reply + len, cap - len, "line %u of a long reply\n", i);
	reply[len++] = '\n';

	struct streamed t = {0};
	struct slot answer = run_streamed(reply, len, &t);
	assert_int_equal(answer.result, RUNTIME_API_OK);
	assert_true(t.at_end);
	assert_int_equal(t.len, len);
	assert_memory_equal(t.copy, reply, len);
	assert_true(t.feeds >= 1 + len / RUNTIME_API_STREAM_WINDOW);
	assert_true(t.largest_feed <= RUNTIME_API_STREAM_WINDOW);
	free(t.copy);
	free(reply);
}

/* Without the empty line that ends an output the reply was cut: the
 * command fails, though the stream saw its beginning. */
static void test_streamed_cut_short(void **state)
{
	require_haproxy();
	static const char reply[] = "# pxname,svname\nbe,s1\n";
	struct streamed t = {0};
	struct slot answer = run_streamed(reply, strlen(reply), &t);
	assert_int_equal(answer.result, RUNTIME_API_FAILED);
	assert_string_equal(answer.reply, "reply cut short (no empty line at its end)");
	assert_true(t.at_end);
	free(t.copy);
}

/* A line the window cannot hold fails the command rather than grow. */
static void test_streamed_line_too_long(void **state)
{
	require_haproxy();
	size_t len = RUNTIME_API_STREAM_WINDOW + 100;
	char *reply = malloc(len);
	assert_non_null(reply);
	memset(reply, 'x', len);
	reply[len - 2] = reply[len - 1] = '\n';
	struct streamed t = {0};
	struct slot answer = run_streamed(reply, len, &t);
	assert_int_equal(answer.result, RUNTIME_API_FAILED);
	assert_non_null(strstr(answer.reply, "a line of the reply is longer than 65536 bytes"));
	free(t.copy);
	free(reply);
}

/* What would shift every reply after it is never sent. */
static void test_refuses_commands(void **state)
{
	char long_command[RUNTIME_API_MAX_LINE + 1];
	memset(long_command, 'a', RUNTIME_API_MAX_LINE);
	long_command[RUNTIME_API_MAX_LINE] = '\0';
	const char *bad[] = {
		"",
		"   ",
		"show info; show stat",
		"show info\n",
		"show info\r",
		"set map x y\\",
		long_command,
	};
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, "unix:/nonexistent/runtime_api.sock", NULL);

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (submit(c, rec, 0, bad[i]))
			fail_msg("accepted '%.40s'", bad[i]);
	assert_false(runtime_api_submit(c, "show info", NULL, NULL));
	assert_int_equal(runtime_api_client_pending(c), 0);
	run_for(rec, 0.05);
	assert_int_equal(rec->answered, 0);
	assert_int_equal(runtime_api_client_stats(c)->dropped, 0);
	runtime_api_client_free(c);
	recorder_free(rec);
}

/* Freeing answers what is pending (RUNTIME_API_FAILED, in order), and refuses
 * submissions made meanwhile. */
static void test_free_answers_pending(void **state)
{
	struct recorder *rec = recorder_new();
	struct runtime_api_client *c = client_for(rec, "unix:/nonexistent/runtime_api.sock", NULL);

	rec->slots[1].client = c;
	rec->slots[1].then_submit = "show info";
	rec->slots[1].then_slot = &rec->slots[9];
	rec->slots[1].then_accepted = true;
	for (unsigned i = 0; i < 3; i++)
		assert_true(submit(c, rec, i, "show info"));
	runtime_api_client_free(c);
	assert_int_equal(rec->answered, 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(rec->slots[i].result, RUNTIME_API_FAILED);
		assert_int_equal(rec->slots[i].order, i);
		assert_string_equal(rec->slots[i].reply, "client freed");
	}
	assert_false(rec->slots[1].then_accepted);
	assert_int_equal(rec->slots[9].calls, 0);
	recorder_free(rec);
}

/* (address) -> accepted, or the words of the refusal. */
static const struct {
	const char *address;
	const char *error_has; /* NULL: accepted */
} addresses[] = {
	{"unix:/run/haproxy/admin.sock", NULL},
	{"127.0.0.1:9999", NULL},
	{"localhost:9999", NULL},
	{"[::1]:9999", NULL},
	{"*:9999", NULL}, /* HAProxy's spellings for 0.0.0.0 */
	{":9999", NULL},
	{"unix:", "empty unix socket path"},
	{"/run/haproxy/admin.sock", "expected HOST:PORT, [IPV6]:PORT or unix:PATH"},
	{"127.0.0.1", "expected HOST:PORT"},
	{"127.0.0.1:0", "port must be a number from 1 to 65535"},
	{"127.0.0.1:65536", "port must be"},
	{"127.0.0.1:80x", "port must be"},
	{"127.0.0.1:", "port must be"},
	{"*x:80", "not a numeric IPv4/IPv6 address"},
	{"[::1]", "expected [IPV6]:PORT"},
	{"[::1]80", "expected [IPV6]:PORT"},
	{"haproxy.example:80", "not a numeric IPv4/IPv6 address"},
	{"", "expected HOST:PORT"},
};

static void test_addresses_and_settings(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	for (size_t i = 0; i < sizeof(addresses) / sizeof(addresses[0]); i++) {
		char err[256] = "";
		struct runtime_api_client *c =
			runtime_api_client_new(loop, addresses[i].address, NULL, err, sizeof(err));
		if (!addresses[i].error_has) {
			if (!c)
				fail_msg("'%s' refused: %s", addresses[i].address, err);
			assert_string_equal(runtime_api_client_address(c), addresses[i].address);
			assert_true(runtime_api_client_reachable(c));
			runtime_api_client_free(c);
		} else if (c || !strstr(err, addresses[i].error_has)) {
			fail_msg("'%s': %s, expected '%s'", addresses[i].address,
				 c ? "accepted" : err, addresses[i].error_has);
		}
	}

	struct runtime_api_settings bad[5];
	for (int i = 0; i < 5; i++)
		runtime_api_settings_default(&bad[i]);
	bad[0].max_queue = 0;
	bad[1].max_batch = 0;
	bad[2].timeout = 0;
	bad[3].backoff_max = bad[3].backoff_min / 2;
	bad[4].max_reply = 0;
	for (int i = 0; i < 5; i++) {
		char err[256] = "";
		assert_null(runtime_api_client_new(loop, "127.0.0.1:1", &bad[i], err, sizeof(err)));
		assert_non_null(strstr(err, "settings"));
	}
	ev_loop_destroy(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_applies_in_order),
		cmocka_unit_test(test_missing_server_does_not_stop_batch),
		cmocka_unit_test(test_tcp_socket),
		cmocka_unit_test(test_nothing_listening),
		cmocka_unit_test(test_never_answers),
		cmocka_unit_test(test_queued_commands_expire_during_outage),
		cmocka_unit_test(test_recovers_when_haproxy_returns),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_batches_and_submit_from_callback),
		cmocka_unit_test(test_reply_too_large),
		cmocka_unit_test(test_streamed_show_stat),
		cmocka_unit_test(test_streamed_in_pieces),
		cmocka_unit_test(test_streamed_cut_short),
		cmocka_unit_test(test_streamed_line_too_long),
		cmocka_unit_test(test_refuses_commands),
		cmocka_unit_test(test_free_answers_pending),
		cmocka_unit_test(test_addresses_and_settings),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
