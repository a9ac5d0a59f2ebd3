/*
 * test_acceptor.c - the accept loop the listeners share, on a real loop and
 * real sockets (loopback TCP, unix sockets in a temporary directory): an
 * allowed connection reaches the owner's hook with its peer; a TCP peer
 * outside the allowlist is closed, counted and logged, never handed over;
 * the allowlist is read through the owner's pointer at every accept (a
 * reload replaces it); out of descriptors, the owner makes room or the
 * connection is refused through the reserve and counted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "log_capture.h"
#include "util/acceptor.h"
#include "util/cidr.h"
#include "util/container_of.h"

/* An owner as the listeners are: the acceptor inside, its counters, its
 * allowlist pointer, and what its hooks saw. */
struct owner {
	struct acceptor acc;
	const struct cidr_list *allow;
	uint64_t not_allowed, refused;
	unsigned accepted;
	char peer[64];
	unsigned make_room_calls;
	bool room_to_make;
	int spare_fd; /* make_room closes it when room_to_make */
};

static void owner_accepted(struct acceptor *acc, int fd, const char *peer)
{
	struct owner *o = container_of(acc, struct owner, acc);
	o->accepted++;
	snprintf(o->peer, sizeof(o->peer), "%s", peer);
	close(fd);
}

static bool owner_make_room(struct acceptor *acc, int err)
{
	struct owner *o = container_of(acc, struct owner, acc);
	o->make_room_calls++;
	assert_true(err == EMFILE || err == ENFILE);
	if (!o->room_to_make || o->spare_fd < 0)
		return false;
	close(o->spare_fd);
	o->spare_fd = -1;
	return true;
}

static const struct acceptor_ops with_port_ops = {
	.log_prefix = "",
	.log_peer_port = true,
	.accepted = owner_accepted,
	.make_room = owner_make_room,
};

static const struct acceptor_ops address_only_ops = {
	.log_prefix = "test ",
	.log_peer_port = false,
	.accepted = owner_accepted,
};

static struct ev_loop *loop;
static char dir[] = "/tmp/test_acceptor.XXXXXX";
static char log_text[16384];

static void owner_open(struct owner *o, const struct acceptor_ops *ops, const char *spec)
{
	memset(o, 0, sizeof(*o));
	o->spare_fd = -1;
	o->acc = (struct acceptor){
		.ops = ops,
		.allow = &o->allow,
		.not_allowed = &o->not_allowed,
		.refused = &o->refused,
	};
	char err[256] = "";
	assert_true(acceptor_open(&o->acc, loop, spec, NULL, err, sizeof(err)));
	assert_true(o->acc.fd >= 0);
}

/* Runs the loop until cond() holds for o; the bound (2,000 turns, ten
 * seconds at least) is a hang guard for a loaded machine, never a
 * measure: the tests assert cond() after it. */
static void run_until(struct owner *o, bool (*cond)(const struct owner *))
{
	for (int i = 0; i < 2000 && !cond(o); i++) {
		ev_run(loop, EVRUN_NOWAIT);
		struct timespec ts = {.tv_nsec = 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static bool was_accepted(const struct owner *o)
{
	return o->accepted > 0;
}

static bool was_not_allowed(const struct owner *o)
{
	return o->not_allowed > 0;
}

static bool was_refused(const struct owner *o)
{
	return o->refused > 0;
}

/* A TCP listener on 127.0.0.1, its port chosen by the kernel: the spec
 * needs a port, so one is found first. */
static unsigned short free_tcp_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s >= 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
	socklen_t len = sizeof(sin);
	assert_int_equal(getsockname(s, (struct sockaddr *)&sin, &len), 0);
	close(s);
	return ntohs(sin.sin_port);
}

static int connect_tcp(unsigned short port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return s;
}

static int connect_unix(const char *path)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_int_equal(connect(s, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return s;
}

/* Whether the peer of s closed it: EOF or a reset, within a second. */
static bool closed_by_peer(int s)
{
	struct timeval tv = {.tv_sec = 1};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char c;
	ssize_t n = recv(s, &c, 1, 0);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

static void test_unix_connection_is_handed_over(void **state)
{
	(void)state;
	char spec[160], path[128];
	snprintf(path, sizeof(path), "%s/a.sock", dir);
	snprintf(spec, sizeof(spec), "unix:%s", path);
	struct owner o;
	owner_open(&o, &with_port_ops, spec);
	assert_true(o.acc.is_unix);

	int c = connect_unix(path);
	run_until(&o, was_accepted);
	assert_int_equal(o.accepted, 1);
	assert_string_equal(o.peer, "unix");
	assert_int_equal(o.not_allowed, 0);
	close(c);

	acceptor_close(&o.acc);
	assert_int_equal(o.acc.fd, -1);
	assert_int_equal(access(path, F_OK), -1); /* the socket's file is gone */
	acceptor_close(&o.acc);                    /* harmless again */
}

/* Unix sockets have no address to check: an allowlist does not apply. */
static void test_unix_connection_ignores_allowlist(void **state)
{
	(void)state;
	char spec[160], path[128];
	snprintf(path, sizeof(path), "%s/b.sock", dir);
	snprintf(spec, sizeof(spec), "unix:%s", path);
	struct cidr_list ten = {0};
	char err[128];
	assert_true(cidr_list_add(&ten, "10.0.0.0/8", err, sizeof(err)));
	struct owner o;
	owner_open(&o, &with_port_ops, spec);
	o.allow = &ten;

	int c = connect_unix(path);
	run_until(&o, was_accepted);
	assert_int_equal(o.accepted, 1);
	assert_int_equal(o.not_allowed, 0);
	close(c);
	acceptor_close(&o.acc);
}

static void test_tcp_connection_is_handed_over_with_its_peer(void **state)
{
	(void)state;
	unsigned short port = free_tcp_port();
	char spec[64];
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", port);
	struct cidr_list loopback = {0};
	char err[128];
	assert_true(cidr_list_add(&loopback, "127.0.0.0/8", err, sizeof(err)));
	struct owner o;
	owner_open(&o, &with_port_ops, spec);
	o.allow = &loopback;
	assert_false(o.acc.is_unix);

	int c = connect_tcp(port);
	struct sockaddr_in mine;
	socklen_t len = sizeof(mine);
	assert_int_equal(getsockname(c, (struct sockaddr *)&mine, &len), 0);
	run_until(&o, was_accepted);
	assert_int_equal(o.accepted, 1);
	char expected[64];
	snprintf(expected, sizeof(expected), "127.0.0.1:%u", ntohs(mine.sin_port));
	assert_string_equal(o.peer, expected);
	close(c);
	acceptor_close(&o.acc);
}

/* 127.0.0.1 against 10.0.0.0/8: closed, counted, logged, never handed
 * over; the line names the peer with its port or without, as the owner
 * asked, after the owner's prefix. */
static void refused_not_allowed(const struct acceptor_ops *ops, bool with_port)
{
	unsigned short port = free_tcp_port();
	char spec[64];
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", port);
	struct cidr_list ten = {0};
	char err[128];
	assert_true(cidr_list_add(&ten, "10.0.0.0/8", err, sizeof(err)));
	struct owner o;
	owner_open(&o, ops, spec);
	o.allow = &ten;
	log_capture_drain(log_text, sizeof(log_text));

	int c = connect_tcp(port);
	struct sockaddr_in mine;
	socklen_t len = sizeof(mine);
	assert_int_equal(getsockname(c, (struct sockaddr *)&mine, &len), 0);
	run_until(&o, was_not_allowed);
	assert_int_equal(o.not_allowed, 1);
	assert_int_equal(o.accepted, 0);
	assert_true(closed_by_peer(c));
	close(c);

	char line[320];
	if (with_port)
		snprintf(line, sizeof(line), "%s%s: connection from 127.0.0.1:%u refused: not in allow",
			 ops->log_prefix, spec, ntohs(mine.sin_port));
	else
		snprintf(line, sizeof(line), "%s%s: connection from 127.0.0.1 refused: not in allow",
			 ops->log_prefix, spec);
	log_capture_drain(log_text, sizeof(log_text));
	assert_non_null(strstr(log_text, line));
	acceptor_close(&o.acc);
}

static void test_tcp_peer_outside_allowlist_is_closed_and_counted(void **state)
{
	(void)state;
	refused_not_allowed(&with_port_ops, true);
}

static void test_refusal_line_may_name_the_address_alone(void **state)
{
	(void)state;
	refused_not_allowed(&address_only_ops, false);
}

/* The owner's pointer is read at every accept: pointing it at another
 * list (as a reload does) changes who gets in, with no call. */
static void test_allowlist_followed_through_owner_pointer(void **state)
{
	(void)state;
	unsigned short port = free_tcp_port();
	char spec[64];
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", port);
	struct cidr_list ten = {0}, loopback = {0};
	char err[128];
	assert_true(cidr_list_add(&ten, "10.0.0.0/8", err, sizeof(err)));
	assert_true(cidr_list_add(&loopback, "127.0.0.1", err, sizeof(err)));
	struct owner o;
	owner_open(&o, &with_port_ops, spec);
	o.allow = &ten;

	int c = connect_tcp(port);
	run_until(&o, was_not_allowed);
	assert_int_equal(o.not_allowed, 1);
	close(c);

	o.allow = &loopback;
	c = connect_tcp(port);
	run_until(&o, was_accepted);
	assert_int_equal(o.accepted, 1);
	assert_int_equal(o.not_allowed, 1);
	close(c);

	o.allow = NULL; /* no list: anyone */
	c = connect_tcp(port);
	o.accepted = 0;
	run_until(&o, was_accepted);
	assert_int_equal(o.accepted, 1);
	close(c);
	acceptor_close(&o.acc);
}

/* Takes every descriptor below the (lowered) limit, copies of any; returns
 * how many, in fds. */
static size_t fill_descriptors(int any, int *fds, size_t max)
{
	size_t n = 0;
	while (n < max) {
		int fd = dup(any);
		if (fd < 0)
			break;
		fds[n++] = fd;
	}
	return n;
}

/* Out of descriptors with a connection waiting: the owner is asked for
 * room first; without it the connection is refused through the reserve,
 * counted, and the acceptor pauses; with it, the connection is let in. */
static void test_out_of_descriptors(void **state)
{
	(void)state;
	char spec[160], path[128];
	snprintf(path, sizeof(path), "%s/c.sock", dir);
	snprintf(spec, sizeof(spec), "unix:%s", path);
	struct owner o;
	owner_open(&o, &with_port_ops, spec);

	struct rlimit saved, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	low = saved;
	if (low.rlim_cur > 512)
		low.rlim_cur = 512;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	static int fds[512];

	/* No room to make: refused through the reserve. */
	int c = connect_unix(path);
	size_t n = fill_descriptors(c, fds, 512);
	assert_true(n > 0);
	log_capture_drain(log_text, sizeof(log_text));
	run_until(&o, was_refused);
	assert_int_equal(o.refused, 1);
	assert_int_equal(o.make_room_calls, 1);
	assert_int_equal(o.accepted, 0);
	assert_true(ev_is_active(&o.acc.pause));
	assert_false(ev_is_active(&o.acc.io));
	assert_true(closed_by_peer(c));
	close(c);
	log_capture_drain(log_text, sizeof(log_text));
	char line[320];
	snprintf(line, sizeof(line),
		 "%s: accept failed: Too many open files; no connection to close for room, "
		 "pausing 100 ms",
		 spec);
	assert_non_null(strstr(log_text, line));

	/* The pause ends, and this time the owner makes room. */
	o.room_to_make = true;
	o.spare_fd = fds[--n];
	c = connect_unix(path);
	run_until(&o, was_accepted);
	assert_int_equal(o.accepted, 1);
	assert_int_equal(o.make_room_calls, 2);
	assert_int_equal(o.refused, 1);
	close(c);

	while (n > 0)
		close(fds[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
	acceptor_close(&o.acc);
}

static void test_peer_text(void **state)
{
	(void)state;
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(4242);
	inet_pton(AF_INET, "10.1.2.3", &sin->sin_addr);
	char out[64];
	acceptor_peer_text((struct sockaddr *)&ss, true, out, sizeof(out));
	assert_string_equal(out, "10.1.2.3:4242");
	acceptor_peer_text((struct sockaddr *)&ss, false, out, sizeof(out));
	assert_string_equal(out, "10.1.2.3");

	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(80);
	inet_pton(AF_INET6, "::1", &sin6->sin6_addr);
	acceptor_peer_text((struct sockaddr *)&ss, true, out, sizeof(out));
	assert_string_equal(out, "[::1]:80");
	acceptor_peer_text((struct sockaddr *)&ss, false, out, sizeof(out));
	assert_string_equal(out, "::1");

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = AF_UNIX;
	acceptor_peer_text((struct sockaddr *)&ss, true, out, sizeof(out));
	assert_string_equal(out, "unix");
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	loop = ev_loop_new(EVFLAG_AUTO);
	if (!loop || !log_capture_start(LOG_LEVEL_NOTICE))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ev_loop_destroy(loop);
	rmdir(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unix_connection_is_handed_over),
		cmocka_unit_test(test_unix_connection_ignores_allowlist),
		cmocka_unit_test(test_tcp_connection_is_handed_over_with_its_peer),
		cmocka_unit_test(test_tcp_peer_outside_allowlist_is_closed_and_counted),
		cmocka_unit_test(test_refusal_line_may_name_the_address_alone),
		cmocka_unit_test(test_allowlist_followed_through_owner_pointer),
		cmocka_unit_test(test_out_of_descriptors),
		cmocka_unit_test(test_peer_text),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
