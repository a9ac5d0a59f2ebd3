/*
 * test_state_store.c - the snapshot an agent writes (state_store.c) and
 * the next agent restores, through the real store, table and HAProxy
 * link: a breaker open on another node's verdict alone comes back closed
 * with the agent's drain still its own, so the first look lifts the drain
 * unless the verdict holds it again; one held by a peer with a trip of its
 * own comes back open.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "breakers/bus.h"
#include "config/config.h"
#include "core/breaker.h"
#include "link/enforcer.h"
#include "state/state_store.h"
#include "util/clock.h"

static char dir[] = "/tmp/test_state_store.XXXXXX";
static char runtime_api[600], state_file[600];

/* One agent's parts, as the daemon starts them (daemon.c). */
struct agent {
	struct ev_loop *loop;
	struct config c;
	struct breakers breakers;
	struct enforcer *enforcer;
	struct state_store *store;
};

static void start(struct agent *a)
{
	char *argv[] = {"spoa-breaker", "--runtime-api", runtime_api, "--state-file", state_file,
			"--cooldown", "60s", NULL};
	char err[512];
	FILE *out = fopen("/dev/null", "w");
	assert_non_null(out);
	a->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(a->loop);
	assert_int_equal(config_from_args(&a->c, 7, argv, out, stderr), -1);
	fclose(out);
	if (!breakers_init(&a->breakers, a->loop, a->c.max_breakers, &a->c.policies, err,
			   sizeof(err)))
		fail_msg("%s", err);
	a->enforcer = enforcer_new(a->loop, &a->c.link, &a->breakers, NULL, err, sizeof(err));
	if (!a->enforcer)
		fail_msg("%s", err);
	a->store = state_store_new(a->loop, &a->c.state, &a->breakers, &a->enforcer, err, sizeof(err));
	if (!a->store)
		fail_msg("%s", err);
}

/* TERM: the last snapshot, then everything goes. */
static void stop(struct agent *a)
{
	state_store_close(a->store, true);
	enforcer_free(a->enforcer);
	breakers_free(&a->breakers);
	config_free(&a->c);
	ev_loop_destroy(a->loop);
}

static struct breaker_table_entry *server(struct agent *a, const char *name)
{
	enum breaker_table_status st;
	struct breaker_table_entry *e =
		breaker_table_get(&a->breakers.table, "be", 2, name, strlen(name), clock_now_ms(), &st);
	assert_non_null(e);
	return e;
}

/* The agent drained the server on its one HAProxy. */
static void drained(struct agent *a, const char *name)
{
	uint32_t index = breaker_table_index(&a->breakers.table, server(a, name));
	struct enforce_memory mem = {.drained_by_us = true};
	assert_true(enforcer_remember(a->enforcer, index, runtime_api, &mem));
}

static void count_drains(void *ctx, const char *address, const struct enforce_memory *mem)
{
	(void)address;
	if (mem->drained_by_us)
		(*(unsigned *)ctx)++;
}

static unsigned drains_remembered(struct agent *a, struct breaker_table_entry *e)
{
	unsigned n = 0;
	enforcer_memories(a->enforcer, breaker_table_index(&a->breakers.table, e), count_drains, &n);
	return n;
}

static int setup(void **state)
{
	if (!mkdtemp(dir))
		return -1;
	snprintf(runtime_api, sizeof(runtime_api), "unix:%s/haproxy.sock", dir);
	snprintf(state_file, sizeof(state_file), "%s/state.msgpack", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_peer_verdicts_across_a_restart(void **state)
{
	struct agent a, b;
	uint64_t now = clock_now_ms();

	start(&a);
	/* adopted: open on another node's verdict alone, drained here. */
	struct breaker *adopted = &server(&a, "adopted")->breaker;
	breaker_peer_hold(adopted, now + 10000, now);
	assert_true(adopted->state == BREAKER_OPEN && adopted->peer_adopted);
	drained(&a, "adopted");
	/* own: tripped on its own failures, then held by a peer's verdict. */
	struct breaker *own = &server(&a, "own")->breaker;
	for (unsigned n = 0; n < 100 && own->state == BREAKER_CLOSED; n++)
		breaker_record_failure(own, now);
	assert_int_equal(own->state, BREAKER_OPEN);
	breaker_peer_hold(own, now + 10000, now);
	assert_true(own->peer_hold_ms > 0 && !own->peer_adopted);
	drained(&a, "own");
	/* adopted, nothing done for it: a fresh agent rebuilds it all. */
	breaker_peer_hold(&server(&a, "untouched")->breaker, now + 10000, now);
	stop(&a);

	start(&b);
	state_store_load(b.store);
	assert_int_equal(state_store_stats(b.store)->source, STATE_SOURCE_SNAPSHOT);
	assert_int_equal(state_store_stats(b.store)->restored, 2);

	struct breaker_table_entry *e = breaker_table_find(&b.breakers.table, "be", 2, "adopted", 7);
	assert_non_null(e);
	assert_int_equal(e->breaker.state, BREAKER_CLOSED);
	assert_false(e->breaker.peer_adopted);
	/* Not open until a cool-down of its own: nothing to wait for. */
	assert_int_equal(breaker_next_deadline(&e->breaker), BREAKER_NO_DEADLINE);
	assert_int_equal(drains_remembered(&b, e), 1);

	e = breaker_table_find(&b.breakers.table, "be", 2, "own", 3);
	assert_non_null(e);
	assert_int_equal(e->breaker.state, BREAKER_OPEN);
	assert_int_not_equal(e->breaker.last_trip_rule, BREAKER_TRIP_NONE);
	assert_int_equal(drains_remembered(&b, e), 1);

	assert_null(breaker_table_find(&b.breakers.table, "be", 2, "untouched", 9));
	stop(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peer_verdicts_across_a_restart),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
