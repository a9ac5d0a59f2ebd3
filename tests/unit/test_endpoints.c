/*
 * test_endpoints.c - a breaker follows the worker a server points at:
 * reading the address of a `show servers state` row, remembering the
 * breakers of addresses servers left, and moving a slot's breaker when its
 * address changes (clean for a new worker, the remembered one for a
 * worker that was failing elsewhere).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "link/endpoints.h"

/* Recollections still standing at now_ms. */
static uint32_t endpoint_recall_count(const struct endpoint_recall *r, uint64_t now_ms)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < ENDPOINT_RECALL_MAX; i++)
		n += r->items[i].until_ms > now_ms;
	return n;
}

static struct runtime_api_str S(const char *s)
{
	return (struct runtime_api_str){s, strlen(s)};
}

static struct endpoint EP(const char *text)
{
	struct endpoint e;
	snprintf(e.text, sizeof(e.text), "%s", text);
	return e;
}

static struct breaker_policy policy(void)
{
	struct breaker_policy p = {0};
	p.threshold = 3;
	p.cooldown_ms = 30000;
	p.max_cooldown_ms = 300000;
	p.healthy_for_ms = 60000;
	p.half_open_probes = 1;
	p.window = BREAKER_MAX_WINDOW;
	p.minimum_volume = 20;
	status_set_add(&p.failure, 500);
	status_set_add(&p.capacity, 503);
	return p;
}

static void trip(struct breaker *b, uint64_t now)
{
	for (int i = 0; i < 3; i++)
		breaker_record_failure(b, now);
	assert_int_equal(b->state, BREAKER_OPEN);
}

static void test_read(void **state)
{
	(void)state;
	struct endpoint e;
	struct runtime_api_str none = {NULL, 0};

	assert_int_equal(endpoint_read(&e, S("127.0.0.1"), S("18261")), ENDPOINT_SET);
	assert_string_equal(e.text, "127.0.0.1:18261");
	assert_int_equal(endpoint_read(&e, S("::1"), S("80")), ENDPOINT_SET);
	assert_string_equal(e.text, "[::1]:80");
	/* A server-template slot DNS has not filled (measured on 2.6.12:
	 * srv_addr "-", the configured port kept). */
	assert_int_equal(endpoint_read(&e, S("-"), S("8080")), ENDPOINT_NONE);
	assert_false(endpoint_known(&e));
	assert_int_equal(endpoint_read(&e, S("0.0.0.0"), S("8080")), ENDPOINT_NONE);
	assert_int_equal(endpoint_read(&e, S("::"), S("0")), ENDPOINT_NONE);
	assert_int_equal(endpoint_read(&e, S(""), S("")), ENDPOINT_NONE);
	/* No column: nothing is known, and nothing must follow from it. */
	assert_int_equal(endpoint_read(&e, none, none), ENDPOINT_UNREPORTED);
	assert_false(endpoint_known(&e));
	/* Garbage longer than any address is not compared. */
	assert_int_equal(endpoint_read(&e, S("0123456789012345678901234567890123456789012345678"),
				       S("1")),
			 ENDPOINT_UNREPORTED);
}

/* A slot re-pointed at a new worker: clean breaker, the old one
 * remembered under its address. */
static void test_move_to_new_worker(void **state)
{
	(void)state;
	static struct endpoint_recall r;
	memset(&r, 0, sizeof(r));
	struct breaker_policy p = policy();
	struct breaker b;
	struct endpoint a = EP("127.0.0.1:1001"), n = EP("127.0.0.1:1002");
	bool recalled = true;

	breaker_init(&b, &p, 1000);
	trip(&b, 1000);
	struct breaker_event ev = endpoint_move(&b, "workers", &a, &n, &r, 2000, &recalled);
	assert_false(recalled);
	assert_int_equal(ev.from, BREAKER_OPEN);
	assert_int_equal(ev.to, BREAKER_CLOSED);
	assert_int_equal(ev.dirty, BREAKER_BECAME_CLEAN);
	assert_int_equal(b.state, BREAKER_CLOSED);
	assert_int_equal(b.trips_in_a_row, 0);
	assert_ptr_equal(b.policy, &p);
	assert_int_equal(endpoint_recall_count(&r, 2000), 1);

	assert_true(endpoint_recall_has(&r, "workers", &a, 2000));
	assert_false(endpoint_recall_has(&r, "workers", &n, 2000));
	/* The failing worker shows up in another slot: open again at once,
	 * since its own trip, under that slot's policy. */
	struct breaker_policy p2 = policy();
	struct breaker other;
	breaker_init(&other, &p2, 500);
	struct endpoint x = EP("127.0.0.1:1003");
	ev = endpoint_move(&other, "workers", &x, &a, &r, 3000, &recalled);
	assert_true(recalled);
	assert_int_equal(ev.from, BREAKER_CLOSED);
	assert_int_equal(ev.to, BREAKER_OPEN);
	assert_int_equal(ev.dirty, BREAKER_BECAME_DIRTY);
	assert_int_equal(ev.trip_rule, BREAKER_TRIP_FAILURE_STREAK);
	assert_int_equal(other.state_since_ms, 1000);
	assert_ptr_equal(other.policy, &p2);
	/* Taken: remembered no more. */
	assert_int_equal(endpoint_recall_count(&r, 3000), 0);
}

/* The same backend name matters: another backend's worker on the same
 * address is another service. */
static void test_per_backend(void **state)
{
	(void)state;
	static struct endpoint_recall r;
	memset(&r, 0, sizeof(r));
	struct breaker_policy p = policy();
	struct breaker b, got;
	struct endpoint a = EP("10.0.0.1:80");

	breaker_init(&b, &p, 0);
	trip(&b, 0);
	endpoint_recall_put(&r, "one", &a, &b, 10);
	assert_false(endpoint_recall_take(&r, "two", &a, 20, &got));
	assert_true(endpoint_recall_take(&r, "one", &a, 20, &got));
	assert_int_equal(got.state, BREAKER_OPEN);
	assert_null(got.policy);
}

/* A clean breaker is not remembered; a remembered one expires. */
static void test_worth_and_expiry(void **state)
{
	(void)state;
	static struct endpoint_recall r;
	memset(&r, 0, sizeof(r));
	struct breaker_policy p = policy();
	struct breaker b, got;
	struct endpoint a = EP("10.0.0.1:80"), n = EP("10.0.0.2:80");
	bool recalled;

	breaker_init(&b, &p, 0);
	assert_false(endpoint_recall_worth(&b));
	endpoint_move(&b, "be", &a, &n, &r, 10, &recalled);
	assert_int_equal(endpoint_recall_count(&r, 10), 0);

	/* Open at 0: remembered until healthy_for after it was left
	 * (60 s), longer than its 30 s open time. */
	trip(&b, 0);
	endpoint_recall_put(&r, "be", &a, &b, 1000);
	assert_int_equal(endpoint_recall_count(&r, 60999), 1);
	assert_int_equal(endpoint_recall_count(&r, 61000), 0);
	assert_false(endpoint_recall_take(&r, "be", &a, 61000, &got));

	/* Another node's verdict alone is that node's, not the address's. */
	breaker_init(&b, &p, 0);
	breaker_peer_hold(&b, 5000, 0);
	assert_int_equal(b.state, BREAKER_OPEN);
	assert_false(endpoint_recall_worth(&b));
}

/* Bounded: a full memory forgets the one that would expire first. */
static void test_bounded(void **state)
{
	(void)state;
	static struct endpoint_recall r;
	memset(&r, 0, sizeof(r));
	struct breaker_policy p = policy();
	struct breaker b, got;
	char text[32];

	breaker_init(&b, &p, 0);
	trip(&b, 0);
	for (int i = 0; i < ENDPOINT_RECALL_MAX + 10; i++) {
		snprintf(text, sizeof(text), "10.0.%d.%d:80", i / 250, i % 250);
		struct endpoint e = EP(text);
		endpoint_recall_put(&r, "be", &e, &b, (uint64_t)i);
	}
	assert_int_equal(endpoint_recall_count(&r, ENDPOINT_RECALL_MAX + 10), ENDPOINT_RECALL_MAX);
	struct endpoint first = EP("10.0.0.0:80"), last = EP("10.0.1.15:80");
	assert_false(endpoint_recall_take(&r, "be", &first, 300, &got));
	assert_true(endpoint_recall_take(&r, "be", &last, 300, &got));
	/* The same address again replaces, never duplicates. */
	struct endpoint e = EP("10.0.0.20:80");
	endpoint_recall_put(&r, "be", &e, &b, 400);
	endpoint_recall_put(&r, "be", &e, &b, 500);
	assert_true(endpoint_recall_take(&r, "be", &e, 600, &got));
	assert_false(endpoint_recall_take(&r, "be", &e, 600, &got));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_move_to_new_worker),
		cmocka_unit_test(test_per_backend),
		cmocka_unit_test(test_worth_and_expiry),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
