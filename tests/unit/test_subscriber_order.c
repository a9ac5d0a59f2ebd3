/*
 * test_subscriber_order.c - the order in which the running agent's parts
 * are subscribed to the breakers (breakers/bus.h). start() in daemon.c
 * makes them the transition log, the metrics counters, the timer, the
 * operator's hand, the HAProxy link, the state snapshot: the listeners of
 * records hear them in that order, and the HAProxy link, which subscribes
 * only to the table's growth, acts on a record after all of them
 * (enforcer_publish()). A reload that replaces the link (reload.c: a new
 * link made with the running one, then the running one freed) leaves the
 * order as it was: the new link's arrays grow with the table before the
 * snapshot's turn, as the old one's did.
 *
 * The real parts, but the operator's hand, which needs the whole daemon:
 * a stand-in of the same name takes its turn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h>

#include "breakers/counters.h"
#include "breakers/bus.h"
#include "config/config.h"
#include "daemon/transition_log.h"
#include "link/enforcer.h"
#include "state/state_store.h"

static char dir[] = "/tmp/test_subscriber_order.XXXXXX";
static char runtime_api[600], state_file[600];

#define STARTED_ORDER                                                                  \
	"transition log, metrics counters, timer, operator, HAProxy link, state snapshot"

struct agent {
	struct ev_loop *loop;
	struct config c;
	struct breakers breakers;
	struct enforcer *enforcer;
	struct state_store *store;
	int operator; /* the stand-in's ctx */
};

/* The subscribers' names, in their order, joined by ", ". */
static const char *order(const struct agent *a)
{
	static char names[512];
	size_t n = 0;

	names[0] = '\0';
	for (unsigned i = 0; i < a->breakers.nb_subscribers; i++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
				      a->breakers.subscribers[i].name);
	assert_true(n < sizeof(names));
	return names;
}

/* start()'s order (daemon.c), with the stand-in for the operator's hand. */
static void start(struct agent *a, const char *runtime_api_address)
{
	char *argv[] = {"spoa-breaker", "--runtime-api", (char *)runtime_api_address,
			"--state-file", state_file, NULL};
	char err[512];
	FILE *out = fopen("/dev/null", "w");

	assert_non_null(out);
	memset(a, 0, sizeof(*a));
	a->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(a->loop);
	assert_int_equal(config_from_args(&a->c, 5, argv, out, stderr), -1);
	fclose(out);
	if (!breakers_init(&a->breakers, a->loop, a->c.max_breakers, &a->c.policies, err,
			   sizeof(err)))
		fail_msg("%s", err);
	const struct breaker_subscriber first[] = {
		transition_log_subscriber(),
		counters_subscriber(),
		breakers_timer_subscriber(&a->breakers),
		{.name = "operator", .ctx = &a->operator},
	};
	for (size_t i = 0; i < sizeof(first) / sizeof(first[0]); i++)
		assert_true(breakers_subscribe(&a->breakers, &first[i]));
	a->enforcer = enforcer_new(a->loop, &a->c.link, &a->breakers, NULL, err, sizeof(err));
	if (!a->enforcer)
		fail_msg("%s", err);
	a->store = state_store_new(a->loop, &a->c.state, &a->breakers, &a->enforcer, err, sizeof(err));
	if (!a->store)
		fail_msg("%s", err);
}

/* What reload.c does when [haproxy] changed: the new link is made with
 * the running one, then the running one goes. */
static void reload_link(struct agent *a, const char *runtime_api_address)
{
	char *argv[] = {"spoa-breaker", "--runtime-api", (char *)runtime_api_address,
			"--state-file", state_file, NULL};
	struct config fresh;
	char err[512];
	FILE *out = fopen("/dev/null", "w");

	assert_non_null(out);
	assert_int_equal(config_from_args(&fresh, 5, argv, out, stderr), -1);
	fclose(out);
	struct enforcer *next = enforcer_new(a->loop, &fresh.link, &a->breakers, a->enforcer, err,
					     sizeof(err));
	if (!next)
		fail_msg("%s", err);
	/* Already in the old one's place, which is gone from the list. */
	assert_string_equal(order(a), STARTED_ORDER);
	assert_ptr_equal(a->breakers.subscribers[4].ctx, next);
	enforcer_free(a->enforcer);
	a->enforcer = next;
	config_free(&fresh);
}

static void stop(struct agent *a)
{
	state_store_close(a->store, false);
	enforcer_free(a->enforcer);
	breakers_free(&a->breakers);
	config_free(&a->c);
	ev_loop_destroy(a->loop);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(runtime_api, sizeof(runtime_api), "unix:%s/haproxy.sock", dir);
	snprintf(state_file, sizeof(state_file), "%s/state.msgpack", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[700];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_started_order(void **state)
{
	struct agent a;
	(void)state;

	start(&a, runtime_api);
	assert_string_equal(order(&a), STARTED_ORDER);
	assert_ptr_equal(a.breakers.subscribers[4].ctx, a.enforcer);
	stop(&a);
}

/* Twice, to another HAProxy and back: the link keeps its turn each time,
 * and the list does not grow. */
static void test_a_reload_keeps_the_links_turn(void **state)
{
	char other[620];
	struct agent a;
	(void)state;

	snprintf(other, sizeof(other), "unix:%s/other.sock", dir);
	start(&a, runtime_api);
	reload_link(&a, other);
	assert_string_equal(order(&a), STARTED_ORDER);
	reload_link(&a, runtime_api);
	assert_string_equal(order(&a), STARTED_ORDER);
	assert_ptr_equal(a.breakers.subscribers[4].ctx, a.enforcer);
	stop(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_started_order),
		cmocka_unit_test(test_a_reload_keeps_the_links_turn),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
