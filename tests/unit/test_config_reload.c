/*
 * test_config_reload.c - what a reload may not do, as a table: the running
 * configuration, the new one, and whether config_check_reload() refuses
 * the pair (and says what). listen and admin keep their running values
 * across a reload, so the new allow lists are judged against them. And
 * --check, which learns the running side from the file the agent writes
 * (running_file.h), says exactly what the reload says, row by row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "config/running_file.h"

/* One side of a reload: only what the check reads; NULL: the default. */
struct side {
	const char *listen;
	const char *allow;
	const char *admin; /* "" for none */
	const char *admin_allow;
	const char *tls_cert;
	const char *tls_ca;
	const char *agent_check;
};

struct row {
	const char *what;
	struct side running, next;
	int problems;
	const char *says; /* in the report, when refused */
};

static const struct row rows[] = {
	/* SPOP: the running listener decides whether a list is needed. */
	{"TCP listen, its allow dropped with a move to unix",
	 {.listen = "0.0.0.0:12345", .allow = "10.1.0.10"},
	 {.listen = "unix:/run/spop.sock"},
	 1, "listen = 0.0.0.0:12345 is not a loopback address and nothing says who may connect"},
	{"TCP listen, its allow dropped, the same listen",
	 {.listen = "0.0.0.0:12345", .allow = "10.1.0.10"},
	 {.listen = "0.0.0.0:12345"},
	 1, "set allow"},
	{"TCP listen, another list (a new HAProxy)",
	 {.listen = "0.0.0.0:12345", .allow = "10.1.0.10"},
	 {.listen = "unix:/run/spop.sock", .allow = "10.1.0.10, 10.1.0.11"},
	 0, NULL},
	{"TCP listen, allow = any said on purpose",
	 {.listen = "0.0.0.0:12345", .allow = "10.1.0.10"},
	 {.listen = "unix:/run/spop.sock", .allow = "any"},
	 0, NULL},
	{"loopback listen needs no list, before or after",
	 {.listen = "127.0.0.1:12345", .allow = "127.0.0.1"},
	 {.listen = "unix:/run/spop.sock"},
	 0, NULL},
	{"unix listen needs no list, even moved to TCP in the file",
	 {.listen = "unix:/run/spop.sock"},
	 {.listen = "127.0.0.1:12345"},
	 0, NULL},
	/* Admin: admin_allow, else allow. */
	{"admin on 0.0.0.0, its list dropped with admin = none",
	 {.listen = "127.0.0.1:12345", .admin = "0.0.0.0:9786", .admin_allow = "10.2.0.0/24"},
	 {.listen = "127.0.0.1:12345", .admin = ""},
	 1, "admin = 0.0.0.0:9786 is not a loopback address and nothing says who may read it"},
	{"admin on 0.0.0.0, allow's list takes over",
	 {.listen = "127.0.0.1:12345", .admin = "0.0.0.0:9786", .admin_allow = "10.2.0.0/24"},
	 {.listen = "127.0.0.1:12345", .admin = "", .allow = "10.2.0.7"},
	 0, NULL},
	{"SPOP and admin both left open: both said",
	 {.listen = "0.0.0.0:12345", .allow = "10.1.0.10", .admin = "0.0.0.0:9786"},
	 {.listen = "unix:/run/spop.sock", .admin = ""},
	 2, "admin = 0.0.0.0:9786"},
	/* agent_check reloads: the new file's own address is judged. */
	{"a new agent-check listener on 0.0.0.0 without allow",
	 {.listen = "127.0.0.1:12345"},
	 {.listen = "127.0.0.1:12345", .agent_check = "0.0.0.0:12346"},
	 1, "agent_check = 0.0.0.0:12346"},
	/* TLS client certificates: may change, may not go away live. */
	{"tls_ca dropped while TLS stays",
	 {.tls_cert = "/etc/a.pem", .tls_ca = "/etc/ca.pem"},
	 {.tls_cert = "/etc/a.pem"},
	 1, "tls_ca removed while the SPOP listeners serve TLS"},
	{"tls_ca dropped with a new certificate",
	 {.tls_cert = "/etc/a.pem", .tls_ca = "/etc/ca.pem"},
	 {.tls_cert = "/etc/b.pem"},
	 1, "keep tls_ca = /etc/ca.pem"},
	{"another CA: a rotation",
	 {.tls_cert = "/etc/a.pem", .tls_ca = "/etc/ca.pem"},
	 {.tls_cert = "/etc/a.pem", .tls_ca = "/etc/ca2.pem"},
	 0, NULL},
	{"a CA added: narrower",
	 {.tls_cert = "/etc/a.pem"},
	 {.tls_cert = "/etc/a.pem", .tls_ca = "/etc/ca.pem"},
	 0, NULL},
	{"TLS turned off: the running TLS stays until a restart",
	 {.tls_cert = "/etc/a.pem", .tls_ca = "/etc/ca.pem"},
	 {.tls_cert = NULL},
	 0, NULL},
	{"nothing of the kind changes",
	 {.listen = "0.0.0.0:12345", .allow = "10.1.0.10", .admin = "0.0.0.0:9786"},
	 {.listen = "0.0.0.0:12345", .allow = "10.1.0.10", .admin = "0.0.0.0:9786"},
	 0, NULL},
};

static void copy(char *dst, size_t size, const char *src)
{
	if (src)
		snprintf(dst, size, "%s", src);
}

static void build(struct config *c, const struct side *s)
{
	char err[256];
	config_defaults(c);
	snprintf(c->listen[c->nb_listen++], CONFIG_LISTEN_MAX_LEN, "%s",
		 s->listen ? s->listen : AGENT_DEFAULT_LISTEN);
	if (s->allow)
		assert_true(cidr_list_add(&c->allow, s->allow, err, sizeof(err)));
	if (s->admin_allow)
		assert_true(cidr_list_add(&c->admin_allow, s->admin_allow, err, sizeof(err)));
	copy(c->admin, sizeof(c->admin), s->admin);
	copy(c->tls_cert, sizeof(c->tls_cert), s->tls_cert);
	copy(c->tls_ca, sizeof(c->tls_ca), s->tls_ca);
	copy(c->link.agent_check, sizeof(c->link.agent_check), s->agent_check);
}

static void test_reload_table(void **state)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct config running, next;
		build(&running, &r->running);
		build(&next, &r->next);
		char listen_before[CONFIG_LISTEN_MAX_LEN];
		memcpy(listen_before, next.listen[0], sizeof(listen_before));

		char *report = NULL;
		size_t len = 0;
		FILE *errors = open_memstream(&report, &len);
		assert_non_null(errors);
		int problems = config_check_reload(&running, &next, errors);
		fclose(errors);

		if (problems != r->problems || (r->says && !strstr(report, r->says)))
			fail_msg("%s: %d problem(s), expected %d%s%s; said:\n%s", r->what, problems,
				 r->problems, r->says ? " saying " : "", r->says ? r->says : "",
				 report);
		if (r->problems == 0 && len != 0)
			fail_msg("%s: accepted, yet said:\n%s", r->what, report);
		/* Only read: next is still the new file's. */
		assert_string_equal(next.listen[0], listen_before);
		free(report);
		config_free(&running);
		config_free(&next);
	}
}

/* The report of config_check_reload(running, next), as the caller frees it. */
static char *reload_report(const struct config *running, const struct config *next,
			   int *problems)
{
	char *report = NULL;
	size_t len = 0;
	FILE *errors = open_memstream(&report, &len);
	assert_non_null(errors);
	*problems = config_check_reload(running, next, errors);
	fclose(errors);
	return report;
}

static void test_running_file_says_the_same(void **state)
{
	static char text[RUNNING_FILE_MAX_BYTES];
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct config running, next, published;
		char err[256];
		size_t len;
		long pid = 0;
		build(&running, &r->running);
		build(&next, &r->next);
		if (!running_file_format(&running, 4242, text, sizeof(text), &len, err, sizeof(err)))
			fail_msg("%s: not written: %s", r->what, err);
		if (!running_file_parse(text, len, &published, &pid, err, sizeof(err)))
			fail_msg("%s: not read back: %s\n%s", r->what, err, text);
		assert_int_equal(pid, 4242);

		int direct, via_file;
		char *said = reload_report(&running, &next, &direct);
		char *said_via_file = reload_report(&published, &next, &via_file);
		if (direct != via_file || strcmp(said, said_via_file) != 0)
			fail_msg("%s: the reload says (%d):\n%s--check says (%d):\n%s", r->what,
				 direct, said, via_file, said_via_file);
		free(said);
		free(said_via_file);
		config_free(&published);
		config_free(&running);
		config_free(&next);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reload_table),
		cmocka_unit_test(test_running_file_says_the_same),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
