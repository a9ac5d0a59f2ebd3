/*
 * test_breaker_table.c - the per-server table: keys, bounds and eviction
 * (checked against a model of LRU), policy precedence (server over backend
 * over global, sets replacing), and the timer the event loop arms from it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/breaker.h"

#define LOOP_BOUND 100000
#define T0 5000000

static struct breaker_table_entry *get(struct breaker_table *t, const char *backend,
				       const char *server, enum breaker_table_status *status)
{
	enum breaker_table_status ignored;
	return breaker_table_get(t, backend, strlen(backend), server, strlen(server), T0,
				 status ? status : &ignored);
}

static struct breaker_table_entry *find(struct breaker_table *t, const char *backend,
					const char *server)
{
	return breaker_table_find(t, backend, strlen(backend), server, strlen(server));
}

static void init(struct breaker_table *t, uint32_t max_entries)
{
	char err[256];
	if (!breaker_table_init(t, max_entries, err, sizeof(err)))
		fail_msg("init %u: %s", (unsigned)max_entries, err);
}

/* Failures it takes to stop the breaker admitting: the threshold it
 * actually follows, observed rather than read. */
static unsigned failures_to_open(struct breaker *b)
{
	unsigned n = 0;
	while (breaker_would_allow(b)) {
		assert_true(++n <= LOOP_BOUND);
		breaker_record(b, breaker_outcome(b->policy, 500), T0);
	}
	return n;
}

/* ==== keys ==== */

static void test_get_creates_then_finds(void **state)
{
	struct breaker_table t;
	enum breaker_table_status st;

	init(&t, 8);
	struct breaker_table_entry *e = get(&t, "workers", "w1", &st);
	assert_non_null(e);
	assert_int_equal(st, BREAKER_TABLE_CREATED);
	assert_string_equal(e->backend, "workers");
	assert_string_equal(e->server, "w1");
	assert_int_equal(e->breaker.state, BREAKER_CLOSED);
	assert_false(breaker_is_dirty(&e->breaker));
	assert_ptr_equal(e->breaker.policy, &t.global_effective);

	breaker_record_failure(&e->breaker, T0);
	struct breaker_table_entry *again = get(&t, "workers", "w1", &st);
	assert_ptr_equal(again, e);
	assert_int_equal(st, BREAKER_TABLE_FOUND);
	assert_int_equal(again->breaker.failure_streak, 1);
	assert_int_equal(t.count, 1);

	/* Names arrive as slices (SPOP strings): no NUL needed. */
	const char slice[] = "workers/w1";
	assert_ptr_equal(breaker_table_find(&t, slice, 7, slice + 8, 2), e);
	assert_null(find(&t, "workers", "w2"));
	breaker_table_free(&t);
}

/* (backend, server) is a pair: neither half may leak into the other. */
static void test_keys_are_pairs(void **state)
{
	struct breaker_table t;

	init(&t, 8);
	struct breaker_table_entry *a = get(&t, "ab", "c", NULL);
	struct breaker_table_entry *b = get(&t, "a", "bc", NULL);
	struct breaker_table_entry *c = get(&t, "other", "c", NULL);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_ptr_not_equal(a, b);
	assert_ptr_not_equal(a, c);
	assert_int_equal(t.count, 3);
	assert_ptr_equal(find(&t, "ab", "c"), a);
	assert_ptr_equal(find(&t, "a", "bc"), b);
	breaker_table_free(&t);
}

static void test_bad_names(void **state)
{
	struct breaker_table t;
	enum breaker_table_status st;
	char longest[BREAKER_NAME_MAX + 1];
	char too_long[BREAKER_NAME_MAX + 2];

	memset(longest, 'n', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	memset(too_long, 'n', sizeof(too_long) - 1);
	too_long[sizeof(too_long) - 1] = '\0';

	init(&t, 8);
	assert_null(get(&t, "", "w1", &st));
	assert_int_equal(st, BREAKER_TABLE_BAD_NAME);
	assert_null(get(&t, "workers", "", &st));
	assert_int_equal(st, BREAKER_TABLE_BAD_NAME);
	assert_null(get(&t, too_long, "w1", &st));
	assert_int_equal(st, BREAKER_TABLE_BAD_NAME);
	assert_null(breaker_table_get(&t, "work\0ers", 8, "w1", 2, T0, &st));
	assert_int_equal(st, BREAKER_TABLE_BAD_NAME);
	assert_null(find(&t, "", "w1"));
	assert_int_equal(t.count, 0);

	struct breaker_table_entry *e = get(&t, longest, longest, &st);
	assert_non_null(e);
	assert_string_equal(e->backend, longest);
	assert_string_equal(breaker_table_status_name(BREAKER_TABLE_FULL), "table full");
	breaker_table_free(&t);
}

static void test_init_bounds(void **state)
{
	struct breaker_table t;
	char err[256] = "";

	assert_false(breaker_table_init(&t, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "table size 0"));
	assert_false(breaker_table_init(&t, BREAKER_TABLE_MAX_ENTRIES + 1, err, sizeof(err)));
	init(&t, 1);
	assert_non_null(get(&t, "b", "s1", NULL));
	assert_non_null(get(&t, "b", "s2", NULL)); /* s1 was clean: evicted */
	assert_null(find(&t, "b", "s1"));
	assert_int_equal(t.evictions, 1);
	breaker_table_free(&t);
}

/* ==== bound and eviction ==== */

static void test_evicts_least_recently_used(void **state)
{
	struct breaker_table t;
	char name[16];

	init(&t, 4);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		assert_non_null(get(&t, "b", name, NULL));
	}
	get(&t, "b", "w0", NULL); /* w0 used again: w1 is now the oldest */
	enum breaker_table_status st;
	assert_non_null(get(&t, "b", "w4", &st));
	assert_int_equal(st, BREAKER_TABLE_CREATED);
	assert_int_equal(t.count, 4);
	assert_int_equal(t.evictions, 1);
	assert_null(find(&t, "b", "w1"));
	assert_non_null(find(&t, "b", "w0"));
	assert_non_null(find(&t, "b", "w2"));
	breaker_table_free(&t);
}

/* A dirty breaker holds a judgement: it is never evicted. With none
 * evictable the lookup is refused and counted, and the caller fails open. */
static void test_dirty_entries_are_kept(void **state)
{
	struct breaker_table t;
	enum breaker_table_status st;
	char name[16];

	init(&t, 4);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		struct breaker_table_entry *e = get(&t, "b", name, NULL);
		if (i == 0)
			failures_to_open(&e->breaker); /* OPEN */
		else
			breaker_record_failure(&e->breaker, T0); /* a streak */
	}
	assert_null(get(&t, "b", "w4", &st));
	assert_int_equal(st, BREAKER_TABLE_FULL);
	assert_null(get(&t, "b", "w5", &st));
	assert_int_equal(t.full_refusals, 2);
	assert_int_equal(t.evictions, 0);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		assert_non_null(find(&t, "b", name));
	}

	/* w2 recovers: now it is the one that goes, not the OPEN w0. */
	breaker_record_success(&find(&t, "b", "w2")->breaker, T0);
	assert_non_null(get(&t, "b", "w4", &st));
	assert_int_equal(st, BREAKER_TABLE_CREATED);
	assert_null(find(&t, "b", "w2"));
	assert_non_null(find(&t, "b", "w0"));
	assert_int_equal(t.evictions, 1);
	breaker_table_free(&t);
}

/* Random traffic over more servers than fit, against a model of LRU: the
 * table must hold exactly the model's entries in the model's order after
 * every step (this exercises the hash index's deletion under churn). */
static void test_churn_matches_lru_model(void **state)
{
	enum { CAP = 37, KEYS = 300, STEPS = 20000 };
	struct breaker_table t;
	int model[CAP]; /* key ids, most recently used first */
	int model_len = 0;
	uint64_t expected_evictions = 0;
	uint64_t rng = 88172645463325252u;

	init(&t, CAP);
	for (int step = 0; step < STEPS; step++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		/* Skewed: a hot set gets hits, the tail forces evictions. */
		int key = (int)(rng % 4 == 0 ? rng % KEYS : rng % (CAP / 2));
		char be[16], srv[16];
		snprintf(be, sizeof(be), "be%d", key % 7);
		snprintf(srv, sizeof(srv), "srv%d", key);

		int pos = -1;
		for (int i = 0; i < model_len; i++)
			if (model[i] == key)
				pos = i;
		if (pos < 0) {
			if (model_len == CAP) {
				model_len--;
				expected_evictions++;
			}
			pos = model_len++;
		}
		memmove(&model[1], &model[0], (size_t)pos * sizeof(model[0]));
		model[0] = key;

		enum breaker_table_status st;
		assert_non_null(get(&t, be, srv, &st));
		assert_int_equal(t.count, model_len);
		assert_int_equal(t.evictions, expected_evictions);

		if (step % 97 == 0 || step == STEPS - 1) {
			struct breaker_table_entry *e = breaker_table_next(&t, NULL);
			for (int i = 0; i < model_len; i++, e = breaker_table_next(&t, e)) {
				snprintf(be, sizeof(be), "be%d", model[i] % 7);
				snprintf(srv, sizeof(srv), "srv%d", model[i]);
				assert_non_null(e);
				assert_string_equal(e->server, srv);
				assert_ptr_equal(find(&t, be, srv), e);
			}
			assert_null(e);
		}
	}
	assert_true(expected_evictions > 1000); /* the test did churn */
	breaker_table_free(&t);
}

/* ==== policies ==== */

static struct breaker_policy_layer threshold_layer(uint32_t threshold)
{
	struct breaker_policy_layer layer = {0};
	layer.fields = BREAKER_FIELD_THRESHOLD;
	layer.values.threshold = threshold;
	return layer;
}

static void resolve(struct breaker_table *t)
{
	char err[256];
	if (!breaker_table_resolve_policies(t, err, sizeof(err)))
		fail_msg("resolve: %s", err);
}

/* Server over backend over global, observed through behaviour: the number
 * of failures each breaker takes to open. */
static void test_policy_precedence(void **state)
{
	struct breaker_table t;
	char err[256];
	struct breaker_policy_layer global = threshold_layer(6);
	struct breaker_policy_layer backend = threshold_layer(4);
	struct breaker_policy_layer server = threshold_layer(2);
	struct breaker_policy_layer lone_server = threshold_layer(8);

	init(&t, 16);
	breaker_table_set_global_policy(&t, &global);
	assert_true(breaker_table_set_backend_policy(&t, "api", &backend, err, sizeof(err)));
	assert_true(breaker_table_set_server_policy(&t, "api", "s1", &server, err, sizeof(err)));
	assert_true(breaker_table_set_server_policy(&t, "batch", "s9", &lone_server, err,
						    sizeof(err)));
	resolve(&t);

	static const struct {
		const char *backend, *server;
		unsigned failures; /* the configured threshold that must win */
	} cases[] = {
		{"api", "s1", 2},   /* server override */
		{"api", "s2", 4},   /* backend override */
		{"batch", "s9", 8}, /* server override, no backend override */
		{"batch", "s1", 6}, /* global: s1's override is api's, not batch's */
		{"other", "s1", 6}, /* global */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct breaker_table_entry *e = get(&t, cases[i].backend, cases[i].server, NULL);
		assert_non_null(e);
		unsigned n = failures_to_open(&e->breaker);
		if (n != cases[i].failures)
			fail_msg("%s/%s opened after %u failures, expected %u", cases[i].backend,
				 cases[i].server, n, cases[i].failures);
	}
	breaker_table_free(&t);
}

/* Sets replace the inherited set (seed 001), at every level. */
static void test_policy_sets_replace(void **state)
{
	struct breaker_table t;
	char err[256];
	struct breaker_policy_layer backend = {0}, server = {0};

	/* The backend's workers use 503 for outages: only 429 is pushback. */
	backend.fields = BREAKER_FIELD_CAPACITY_SET;
	status_set_add(&backend.values.capacity, 429);
	/* One server behind a proxy that answers 503 when busy, never 429. */
	server.fields = BREAKER_FIELD_CAPACITY_SET;
	status_set_add(&server.values.capacity, 503);

	init(&t, 16);
	assert_true(breaker_table_set_backend_policy(&t, "llm", &backend, err, sizeof(err)));
	assert_true(breaker_table_set_server_policy(&t, "llm", "proxied", &server, err,
						    sizeof(err)));
	resolve(&t);

	const struct breaker_policy *global = breaker_table_policy_for(&t, "x", 1, "y", 1);
	const struct breaker_policy *be = breaker_table_policy_for(&t, "llm", 3, "w1", 2);
	const struct breaker_policy *srv = breaker_table_policy_for(&t, "llm", 3, "proxied", 7);

	assert_int_equal(breaker_outcome(global, 503), BREAKER_OUTCOME_BACKPRESSURE);
	assert_int_equal(breaker_outcome(global, 429), BREAKER_OUTCOME_BACKPRESSURE);
	assert_int_equal(breaker_outcome(be, 503), BREAKER_OUTCOME_FAILURE);
	assert_int_equal(breaker_outcome(be, 429), BREAKER_OUTCOME_BACKPRESSURE);
	assert_int_equal(breaker_outcome(srv, 503), BREAKER_OUTCOME_BACKPRESSURE);
	assert_int_equal(breaker_outcome(srv, 429), BREAKER_OUTCOME_CLIENT_ERROR);

	/* And a breaker created for them follows the same policy. */
	assert_ptr_equal(get(&t, "llm", "proxied", NULL)->breaker.policy, srv);
	breaker_table_free(&t);
}

/* Levels may be set in any order: a server set before its backend still
 * inherits from it. */
static void test_policy_order_does_not_matter(void **state)
{
	struct breaker_table t;
	char err[256];
	struct breaker_policy_layer server = threshold_layer(2);
	struct breaker_policy_layer backend = {0};
	backend.fields = BREAKER_FIELD_COOLDOWN;
	backend.values.cooldown_ms = 1234;

	init(&t, 4);
	assert_true(breaker_table_set_server_policy(&t, "b", "s", &server, err, sizeof(err)));
	assert_true(breaker_table_set_backend_policy(&t, "b", &backend, err, sizeof(err)));
	resolve(&t);
	const struct breaker_policy *p = breaker_table_policy_for(&t, "b", 1, "s", 1);
	assert_int_equal(p->threshold, 2);
	assert_int_equal(p->cooldown_ms, 1234);

	/* Setting a level again replaces its layer. */
	struct breaker_policy_layer again = threshold_layer(9);
	assert_true(breaker_table_set_backend_policy(&t, "b", &again, err, sizeof(err)));
	resolve(&t);
	p = breaker_table_policy_for(&t, "b", 1, "s", 1);
	assert_int_equal(p->cooldown_ms, BREAKER_DEFAULT_COOLDOWN_MS);
	assert_int_equal(p->threshold, 2);
	assert_int_equal(t.override_count, 2);
	breaker_table_free(&t);
}

/* Breakers created before a resolve follow the new policy after it. */
static void test_resolve_repoints_existing(void **state)
{
	struct breaker_table t;
	char err[256];
	struct breaker_policy_layer server = threshold_layer(1);

	init(&t, 4);
	struct breaker_table_entry *e = get(&t, "b", "s", NULL);
	assert_ptr_equal(e->breaker.policy, &t.global_effective);
	assert_true(breaker_table_set_server_policy(&t, "b", "s", &server, err, sizeof(err)));
	resolve(&t);
	assert_int_equal(failures_to_open(&find(&t, "b", "s")->breaker), 1);
	breaker_table_free(&t);
}

/* A contradiction anywhere is reported with its level, and nothing in use
 * changes. */
static void test_resolve_error_names_the_level(void **state)
{
	struct breaker_table t;
	char err[256] = "";
	struct breaker_policy_layer global = {0}, server = {0};

	global.fields = BREAKER_FIELD_FAILURE_SET | BREAKER_FIELD_THRESHOLD;
	global.values.threshold = 5;
	status_set_add_range(&global.values.failure, 500, 502);
	status_set_add_range(&global.values.failure, 504, 599);
	server.fields = BREAKER_FIELD_CAPACITY_SET;
	status_set_add(&server.values.capacity, 429);
	status_set_add(&server.values.capacity, 503);
	status_set_add(&server.values.capacity, 504);

	init(&t, 4);
	struct breaker_table_entry *e = get(&t, "b", "w1", NULL);
	breaker_table_set_global_policy(&t, &global);
	assert_true(breaker_table_set_server_policy(&t, "b", "w1", &server, err, sizeof(err)));
	assert_false(breaker_table_resolve_policies(&t, err, sizeof(err)));
	assert_string_equal(err, "server b/w1: capacity and failure sets overlap on 504 "
				 "(a status belongs to one set only)");
	/* Still the defaults: the bad configuration took no effect. */
	assert_int_equal(e->breaker.policy->threshold, BREAKER_DEFAULT_THRESHOLD);
	assert_int_equal(t.global_effective.threshold, BREAKER_DEFAULT_THRESHOLD);

	struct breaker_table bad_global;
	struct breaker_policy_layer zero = threshold_layer(0);
	init(&bad_global, 4);
	breaker_table_set_global_policy(&bad_global, &zero);
	assert_false(breaker_table_resolve_policies(&bad_global, err, sizeof(err)));
	assert_non_null(strstr(err, "global: threshold"));
	breaker_table_free(&bad_global);
	breaker_table_free(&t);
}

static void test_override_names_checked(void **state)
{
	struct breaker_table t;
	char err[256] = "";
	struct breaker_policy_layer layer = threshold_layer(2);

	init(&t, 4);
	assert_false(breaker_table_set_backend_policy(&t, "", &layer, err, sizeof(err)));
	assert_non_null(strstr(err, "backend name"));
	assert_false(breaker_table_set_server_policy(&t, "b", "", &layer, err, sizeof(err)));
	assert_non_null(strstr(err, "server name"));
	assert_int_equal(t.override_count, 0);
	breaker_table_free(&t);
}

/* ==== time ==== */

struct tick_log {
	int calls;
	char last[2 * BREAKER_NAME_MAX + 2];
	char transition[32];
};

static void on_tick_event(struct breaker_table_entry *entry, const struct breaker_event *ev,
			  void *ctx)
{
	struct tick_log *log = ctx;
	const char *name = breaker_transition_name(ev);

	log->calls++;
	snprintf(log->last, sizeof(log->last), "%s/%s", entry->backend, entry->server);
	snprintf(log->transition, sizeof(log->transition), "%s",
		 name ? name : "probes released");
}

/* The event loop's single timer: armed at breaker_table_tick()'s answer,
 * it moves each breaker when its own deadline comes, and only then. */
static void test_tick_drives_deadlines(void **state)
{
	struct breaker_table t;
	struct tick_log log = {0};

	init(&t, 8);
	get(&t, "b", "idle", NULL);
	assert_int_equal(breaker_table_next_deadline(&t), BREAKER_NO_DEADLINE);
	assert_int_equal(breaker_table_tick(&t, T0, on_tick_event, &log), BREAKER_NO_DEADLINE);

	struct breaker *first = &get(&t, "b", "first", NULL)->breaker;
	struct breaker *second = &get(&t, "b", "second", NULL)->breaker;
	uint64_t cooldown = first->policy->cooldown_ms;
	while (breaker_would_allow(first))
		breaker_record_failure(first, T0);
	while (breaker_would_allow(second))
		breaker_record_failure(second, T0 + 100);

	uint64_t due = breaker_table_next_deadline(&t);
	assert_int_equal(due, T0 + cooldown);
	/* Early: nothing moves, the same deadline comes back. */
	assert_int_equal(breaker_table_tick(&t, due - 1, on_tick_event, &log), due);
	assert_int_equal(log.calls, 0);

	uint64_t next = breaker_table_tick(&t, due, on_tick_event, &log);
	assert_int_equal(log.calls, 1);
	assert_string_equal(log.last, "b/first");
	assert_string_equal(log.transition, "open->half_open");
	assert_int_equal(first->state, BREAKER_HALF_OPEN);
	assert_int_equal(second->state, BREAKER_OPEN);
	assert_int_equal(next, T0 + 100 + cooldown);

	/* A probe adds its own deadline; the earlier one wins. */
	uint64_t probe_at = due + 1;
	assert_true(breaker_try_acquire_probe(first, probe_at));
	uint64_t probe_due = probe_at + first->policy->probe_timeout_ms;
	uint64_t expected = probe_due < next ? probe_due : next;
	assert_int_equal(breaker_table_next_deadline(&t), expected);

	/* Far later: both remaining deadlines fire in one tick. */
	log.calls = 0;
	next = breaker_table_tick(&t, probe_due + next, on_tick_event, &log);
	assert_int_equal(log.calls, 2);
	assert_int_equal(second->state, BREAKER_HALF_OPEN);
	assert_int_equal(first->probes_in_flight, 0);
	assert_int_equal(next, BREAKER_NO_DEADLINE);

	/* A NULL callback is allowed. */
	while (breaker_would_allow(second))
		assert_true(breaker_try_acquire_probe(second, probe_due + next));
	breaker_table_tick(&t, BREAKER_NO_DEADLINE - 1, NULL, NULL);
	assert_true(breaker_would_allow(second));
	breaker_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_creates_then_finds),
		cmocka_unit_test(test_keys_are_pairs),
		cmocka_unit_test(test_bad_names),
		cmocka_unit_test(test_init_bounds),
		cmocka_unit_test(test_evicts_least_recently_used),
		cmocka_unit_test(test_dirty_entries_are_kept),
		cmocka_unit_test(test_churn_matches_lru_model),
		cmocka_unit_test(test_policy_precedence),
		cmocka_unit_test(test_policy_sets_replace),
		cmocka_unit_test(test_policy_order_does_not_matter),
		cmocka_unit_test(test_resolve_repoints_existing),
		cmocka_unit_test(test_resolve_error_names_the_level),
		cmocka_unit_test(test_override_names_checked),
		cmocka_unit_test(test_tick_drives_deadlines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
