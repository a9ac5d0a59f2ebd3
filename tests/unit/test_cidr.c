/*
 * test_cidr.c - allowlists as operators write them: which peers each entry
 * lets in (IPv4, IPv6, IPv4-mapped IPv6, /0, /32, /128; an IPv6 entry
 * never an IPv4 peer unless written ::ffff:a.b.c.d/96+), what is refused
 * with which message, and which listening addresses count as loopback.
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

#include "util/cidr.h"

/* A peer address from text: IPv4 or IPv6, as accept() would fill it. */
static struct sockaddr_storage peer(const char *text)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
	} else {
		assert_int_equal(inet_pton(AF_INET6, text, &sin6->sin6_addr), 1);
		sin6->sin6_family = AF_INET6;
	}
	return ss;
}

static bool allows(const char *list, const char *who)
{
	struct cidr_list l = {0};
	char err[256] = "";
	if (!cidr_list_add(&l, list, err, sizeof(err)))
		fail_msg("'%s' refused: %s", list, err);
	struct sockaddr_storage ss = peer(who);
	return cidr_list_allows(&l, (const struct sockaddr *)&ss);
}

static const struct {
	const char *list;
	const char *peer;
	bool allowed;
} cases[] = {
	{"127.0.0.1", "127.0.0.1", true},
	{"127.0.0.1", "127.0.0.2", false},
	{"127.0.0.1/32", "127.0.0.1", true},
	{"127.0.0.1/32", "127.0.0.2", false},
	{"10.0.0.0/8", "10.255.1.2", true},
	{"10.0.0.0/8", "11.0.0.1", false},
	{"10.1.2.3/8", "10.9.9.9", true}, /* host bits past the prefix are dropped */
	{"192.168.1.0/24", "192.168.1.255", true},
	{"192.168.1.0/24", "192.168.2.0", false},
	{"172.16.0.0/12", "172.31.255.255", true},
	{"172.16.0.0/12", "172.32.0.0", false},
	{"0.0.0.0/0", "203.0.113.9", true},
	{"0.0.0.0/0", "2001:db8::1", false}, /* every IPv4 address, no IPv6 one */
	{"::1", "::1", true},
	{"::1", "::2", false},
	{"::1/128", "::1", true},
	{"fd00::/8", "fd12:3456::1", true},
	{"fd00::/8", "fe80::1", false},
	{"2001:db8::/32", "2001:db8:ffff::1", true},
	{"2001:db8::/33", "2001:db8:8000::1", false},
	{"::/0", "2001:db8::1", true},
	/* An IPv6 entry is for IPv6 peers: the mapped range it spans by its
	 * short prefix does not let IPv4 clients in, plain or mapped. */
	{"::/0", "10.0.0.1", false},
	{"::/0", "::ffff:10.0.0.1", false},
	{"::/80", "10.0.0.1", false},
	{"::/80", "::ffff:10.0.0.1", false},
	{"::/80", "::1", true},
	{"::ffff:0:0/95", "10.0.0.1", false},
	/* An IPv4 peer on an IPv6 socket arrives IPv4-mapped. */
	{"10.0.0.0/8", "::ffff:10.1.2.3", true},
	{"10.0.0.0/8", "::ffff:11.1.2.3", false},
	{"0.0.0.0/0", "::ffff:203.0.113.9", true},
	{"0.0.0.0/0", "::1", false},
	/* The mapped form written out, /96 or longer, names IPv4 on purpose. */
	{"::ffff:10.0.0.0/104", "10.1.2.3", true},
	{"::ffff:10.0.0.0/104", "::ffff:10.1.2.3", true},
	{"::ffff:10.0.0.0/104", "11.1.2.3", false},
	{"::ffff:0:0/96", "203.0.113.9", true},
	{"::ffff:0:0/96", "2001:db8::1", false},
	{"::ffff:127.0.0.1", "127.0.0.1", true},
	{"::/0, 10.0.0.0/8", "10.1.2.3", true},
	{"::/0, 10.0.0.0/8", "11.1.2.3", false},
	{"127.0.0.1, ::1", "::1", true},
	{"127.0.0.1,::1", "127.0.0.1", true},
	{" 10.0.0.1 ,\t10.0.0.2 ", "10.0.0.2", true},
	{"any", "203.0.113.9", true},
	{"any", "2001:db8::1", true},
};

static void test_matches(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (allows(cases[i].list, cases[i].peer) != cases[i].allowed)
			fail_msg("'%s' %s %s", cases[i].list,
				 cases[i].allowed ? "should let in" : "should keep out", cases[i].peer);
}

static void test_empty_list_allows_nobody(void **state)
{
	struct cidr_list l = {0};
	struct sockaddr_storage ss = peer("127.0.0.1");
	assert_false(cidr_list_allows(&l, (const struct sockaddr *)&ss));
}

static void test_unix_peer_never_matches(void **state)
{
	struct cidr_list l = {0};
	char err[256];
	assert_true(cidr_list_add(&l, "any", err, sizeof(err)));
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	assert_false(cidr_list_allows(&l, (const struct sockaddr *)&sun));
}

static const struct {
	const char *list;
	const char *err;
} refused[] = {
	{"", "an empty entry: expected an address or ADDRESS/PREFIX"},
	{"10.0.0.1,", "an empty entry: expected an address or ADDRESS/PREFIX"},
	{"10.0.0.0/33", "'10.0.0.0/33': an IPv4 prefix is 0..32"},
	{"10.0.0.0/", "'10.0.0.0/': an IPv4 prefix is 0..32"},
	{"10.0.0.0/-1", "'10.0.0.0/-1': an IPv4 prefix is 0..32"},
	{"10.0.0.0/8x", "'10.0.0.0/8x': an IPv4 prefix is 0..32"},
	{"::/129", "'::/129': an IPv6 prefix is 0..128"},
	{"localhost", "'localhost': expected a numeric IPv4 or IPv6 address, with /PREFIX or "
		      "without"},
	{"10.0.0", "'10.0.0': expected a numeric IPv4 or IPv6 address, with /PREFIX or without"},
	{"256.0.0.1", "'256.0.0.1': expected a numeric IPv4 or IPv6 address, with /PREFIX or "
		      "without"},
	{"[::1]", "'[::1]': expected a numeric IPv4 or IPv6 address, with /PREFIX or without"},
	{"any, 10.0.0.1", "'any' with addresses: either every address (any) or the ones named"},
};

static void test_refused(void **state)
{
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct cidr_list l = {0};
		char err[256] = "";
		assert_true(cidr_list_add(&l, "192.0.2.1", err, sizeof(err)));
		if (cidr_list_add(&l, refused[i].list, err, sizeof(err)))
			fail_msg("'%s' accepted", refused[i].list);
		assert_string_equal(err, refused[i].err);
		/* All or nothing: the list is as it was. */
		assert_int_equal(l.n, 1);
		assert_false(l.any);
	}
}

static void test_too_many(void **state)
{
	struct cidr_list l = {0};
	char err[256] = "";
	for (unsigned i = 0; i < CIDR_LIST_MAX; i++) {
		char text[32];
		snprintf(text, sizeof(text), "10.0.0.%u", i);
		assert_true(cidr_list_add(&l, text, err, sizeof(err)));
	}
	assert_false(cidr_list_add(&l, "10.0.1.0", err, sizeof(err)));
	assert_string_equal(err, "at most 32 entries");
}

static void test_format(void **state)
{
	struct cidr_list l = {0};
	char err[256], buf[256];
	cidr_list_format(&l, buf, sizeof(buf));
	assert_string_equal(buf, "none");
	assert_true(cidr_list_add(&l, " 10.0.0.0/8 ,::1", err, sizeof(err)));
	assert_true(cidr_list_add(&l, "192.168.0.0/16", err, sizeof(err)));
	cidr_list_format(&l, buf, sizeof(buf));
	assert_string_equal(buf, "10.0.0.0/8, ::1, 192.168.0.0/16");
	struct cidr_list any = {0};
	assert_true(cidr_list_add(&any, "any", err, sizeof(err)));
	cidr_list_format(&any, buf, sizeof(buf));
	assert_string_equal(buf, "any");
}

static void test_loopback(void **state)
{
	static const struct {
		const char *addr;
		bool loopback;
	} addrs[] = {
		{"127.0.0.1", true}, {"127.0.0.2", true},  {"127.255.0.1", true},
		{"::1", true},       {"::ffff:127.0.0.1", true},
		{"0.0.0.0", false},  {"::", false},         {"10.0.0.1", false},
		{"128.0.0.1", false}, {"::2", false},        {"fe80::1", false},
	};
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		struct sockaddr_storage ss = peer(addrs[i].addr);
		if (cidr_sockaddr_is_loopback((const struct sockaddr *)&ss) != addrs[i].loopback)
			fail_msg("%s %s loopback", addrs[i].addr, addrs[i].loopback ? "is" : "is not");
	}
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	assert_false(cidr_sockaddr_is_loopback((const struct sockaddr *)&sun));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches),
		cmocka_unit_test(test_empty_list_allows_nobody),
		cmocka_unit_test(test_unix_peer_never_matches),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_too_many),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_loopback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
