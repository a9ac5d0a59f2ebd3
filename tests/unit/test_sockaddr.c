/*
 * test_sockaddr.c - socket addresses as operators write them: which
 * spellings parse to which address, and what the refusals say.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include <cmocka.h>

#include "util/sockaddr.h"

/* (spec) -> (family, printed address, port), for specs that must parse. */
static const struct {
	const char *spec;
	int family;
	const char *host;
	unsigned port;
} valid_specs[] = {
	{"127.0.0.1:12345", AF_INET, "127.0.0.1", 12345},
	{"localhost:80", AF_INET, "127.0.0.1", 80},
	{"0.0.0.0:1", AF_INET, "0.0.0.0", 1},
	/* HAProxy's own spellings for "every IPv4 address". */
	{"*:12345", AF_INET, "0.0.0.0", 12345},
	{":12345", AF_INET, "0.0.0.0", 12345},
	{"[::1]:65535", AF_INET6, "::1", 65535},
	{"[::]:8080", AF_INET6, "::", 8080},
	{"unix:/run/haproxy/admin.sock", AF_UNIX, "/run/haproxy/admin.sock", 0},
};

static void test_valid(void **state)
{
	for (size_t i = 0; i < sizeof(valid_specs) / sizeof(valid_specs[0]); i++) {
		struct sockaddr_storage addr;
		socklen_t len;
		char err[256] = "";
		char host[128] = "";
		unsigned port = 0;

		if (!sockaddr_parse(valid_specs[i].spec, "listen", &addr, &len, err, sizeof(err)))
			fail_msg("'%s' refused: %s", valid_specs[i].spec, err);
		assert_int_equal(addr.ss_family, valid_specs[i].family);
		if (addr.ss_family == AF_INET) {
			const struct sockaddr_in *sin = (const struct sockaddr_in *)&addr;
			inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
			port = ntohs(sin->sin_port);
			assert_int_equal(len, sizeof(*sin));
		} else if (addr.ss_family == AF_INET6) {
			const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&addr;
			inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
			port = ntohs(sin6->sin6_port);
		} else {
			snprintf(host, sizeof(host), "%s", ((const struct sockaddr_un *)&addr)->sun_path);
		}
		if (strcmp(host, valid_specs[i].host) != 0 || port != valid_specs[i].port)
			fail_msg("'%s' parsed as %s port %u, expected %s port %u", valid_specs[i].spec,
				 host, port, valid_specs[i].host, valid_specs[i].port);
	}
}

/* (spec) -> (what the message must say), for specs that must not parse. */
static const struct {
	const char *spec;
	const char *message;
} invalid_specs[] = {
	{"nonsense", "listen 'nonsense': expected HOST:PORT, [IPV6]:PORT or unix:PATH"},
	{"127.0.0.1:notaport", "listen '127.0.0.1:notaport': port must be a number from 1 to 65535"},
	{"127.0.0.1:0", "port must be a number from 1 to 65535"},
	{"127.0.0.1:65536", "port must be a number from 1 to 65535"},
	{"*:", "port must be a number"},
	{"**:80", "not a numeric IPv4/IPv6 address"},
	{"example.com:80", "not a numeric IPv4/IPv6 address or 'localhost'"},
	{"[::1]80", "expected [IPV6]:PORT"},
	{"[]:80", "not a numeric IPv4/IPv6 address"},
	{"unix:", "empty unix socket path"},
	{"", "expected HOST:PORT"},
};

static void test_invalid(void **state)
{
	for (size_t i = 0; i < sizeof(invalid_specs) / sizeof(invalid_specs[0]); i++) {
		struct sockaddr_storage addr;
		socklen_t len;
		char err[256] = "";

		if (sockaddr_parse(invalid_specs[i].spec, "listen", &addr, &len, err, sizeof(err)))
			fail_msg("'%s' accepted", invalid_specs[i].spec);
		if (!strstr(err, invalid_specs[i].message))
			fail_msg("'%s': message \"%s\" lacks \"%s\"", invalid_specs[i].spec, err,
				 invalid_specs[i].message);
	}
}

/* Without a label, the message is only what is wrong: the caller names the
 * setting and the value its own way. */
static void test_without_label(void **state)
{
	struct sockaddr_storage addr;
	socklen_t len;
	char err[256] = "";

	assert_false(sockaddr_parse("127.0.0.1:x", NULL, &addr, &len, err, sizeof(err)));
	assert_string_equal(err, "port must be a number from 1 to 65535");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_without_label),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
