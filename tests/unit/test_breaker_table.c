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
#include "breaker_allows.h"

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
	assert_ptr_equal(e->breaker.policy, &t.policies.levels[0].effective);

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
	/* What would inject a Runtime API command never gets a breaker. */
	assert_null(get(&t, "workers", "w1; shutdown sessions", &st));
	assert_int_equal(st, BREAKER_TABLE_BAD_NAME);
	assert_null(get(&t, "workers\nshow", "w1", &st));
	assert_int_equal(st, BREAKER_TABLE_BAD_NAME);
	assert_null(find(&t, "", "w1"));
	assert_int_equal(t.count, 0);

	struct breaker_table_entry *e = get(&t, longest, longest, &st);
	assert_non_null(e);
	assert_string_equal(e->backend, longest);
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

/* A configuration under construction: the global layer and overrides. */
struct levels {
	struct breaker_policy_layer global;
	struct breaker_policy_override overrides[8];
	size_t n;
};

static void add_level(struct levels *l, const char *backend, const char *server,
		      struct breaker_policy_layer layer)
{
	assert_true(l->n < 8);
	struct breaker_policy_override *o = &l->overrides[l->n++];
	memset(o, 0, sizeof(*o));
	snprintf(o->backend, sizeof(o->backend), "%s", backend);
	snprintf(o->server, sizeof(o->server), "%s", server);
	o->layer = layer;
}

struct first_error {
	char text[256];
	int override;
	int calls;
};

static void keep_first(void *ctx, int override, const char *message)
{
	struct first_error *fe = ctx;
	if (fe->calls++ == 0) {
		snprintf(fe->text, sizeof(fe->text), "%s", message);
		fe->override = override;
	}
}

/* Builds l and gives the result to t; false (t untouched) if it does not
 * resolve, with the first problem in *fe. */
static bool use_levels(struct breaker_table *t, const struct levels *l, struct first_error *fe)
{
	struct breaker_policies p;
	struct first_error ignored = {0};
	if (!breaker_policies_build(&p, &l->global, l->overrides, l->n, keep_first,
				    fe ? fe : &ignored))
		return false;
	breaker_table_use_policies(t, &p);
	assert_null(p.levels); /* ownership moved */
	return true;
}

/* Server over backend over global, observed through behaviour: the number
 * of failures each breaker takes to open. */
static void test_policy_precedence(void **state)
{
	struct breaker_table t;
	struct levels l = {.global = threshold_layer(6)};

	add_level(&l, "api", "", threshold_layer(4));
	add_level(&l, "api", "s1", threshold_layer(2));
	add_level(&l, "batch", "s9", threshold_layer(8));
	init(&t, 16);
	assert_true(use_levels(&t, &l, NULL));

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

/* Sets replace the inherited set (docs/design.md, "Sets replace"), at
 * every level. */
static void test_policy_sets_replace(void **state)
{
	struct breaker_table t;
	struct levels l = {0};
	struct breaker_policy_layer backend = {0}, server = {0};

	/* The backend's workers use 503 for outages: only 429 is pushback. */
	backend.fields = BREAKER_FIELD_CAPACITY_SET;
	status_set_add(&backend.values.capacity, 429);
	/* One server behind a proxy that answers 503 when busy, never 429. */
	server.fields = BREAKER_FIELD_CAPACITY_SET;
	status_set_add(&server.values.capacity, 503);
	add_level(&l, "llm", "", backend);
	add_level(&l, "llm", "proxied", server);

	init(&t, 16);
	assert_true(use_levels(&t, &l, NULL));
	const struct breaker_policy *global = breaker_policies_for(&t.policies, "x", 1, "y", 1);
	const struct breaker_policy *be = breaker_policies_for(&t.policies, "llm", 3, "w1", 2);
	const struct breaker_policy *srv = breaker_policies_for(&t.policies, "llm", 3, "proxied", 7);

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

/* Levels may come in any order: a server given before its backend still
 * inherits from it; a level given twice is merged, the later fields
 * winning (a section repeated in a file). */
static void test_policy_order_does_not_matter(void **state)
{
	struct breaker_table t;
	struct levels l = {0};
	struct breaker_policy_layer backend = {0};
	backend.fields = BREAKER_FIELD_COOLDOWN;
	backend.values.cooldown_ms = 1234;

	add_level(&l, "b", "s", threshold_layer(2));
	add_level(&l, "b", "", backend);
	add_level(&l, "b", "", threshold_layer(9));
	init(&t, 4);
	assert_true(use_levels(&t, &l, NULL));
	const struct breaker_policy *p = breaker_policies_for(&t.policies, "b", 1, "s", 1);
	assert_int_equal(p->threshold, 2);
	assert_int_equal(p->cooldown_ms, 1234);
	p = breaker_policies_for(&t.policies, "b", 1, "other", 5);
	assert_int_equal(p->threshold, 9);
	assert_int_equal(p->cooldown_ms, 1234);
	assert_int_equal(t.policies.nb_levels, 3); /* global, b, b/s */
	breaker_table_free(&t);
}

/* Breakers created before new policies follow them after, state kept. */
static void test_new_policies_repoint_existing(void **state)
{
	struct breaker_table t;
	struct levels l = {0};

	add_level(&l, "b", "s", threshold_layer(1));
	init(&t, 4);
	struct breaker_table_entry *e = get(&t, "b", "s", NULL);
	assert_ptr_equal(e->breaker.policy, &t.policies.levels[0].effective);
	breaker_record_failure(&e->breaker, T0);
	breaker_record_failure(&e->breaker, T0);
	assert_int_equal(e->breaker.failure_streak, 2);
	assert_true(use_levels(&t, &l, NULL));
	e = find(&t, "b", "s");
	assert_int_equal(e->breaker.failure_streak, 2); /* kept */
	assert_int_equal(e->breaker.policy->threshold, 1);
	breaker_record_failure(&e->breaker, T0);
	assert_int_equal(e->breaker.state, BREAKER_OPEN);
	breaker_table_free(&t);
}

/* A contradiction anywhere is reported with its level and its index, every
 * level is checked, and nothing in use changes. */
static void test_policy_error_names_the_level(void **state)
{
	struct breaker_table t;
	struct levels l = {0};
	struct first_error fe = {0};
	struct breaker_policy_layer server = {0};

	l.global.fields = BREAKER_FIELD_FAILURE_SET | BREAKER_FIELD_THRESHOLD;
	l.global.values.threshold = 5;
	status_set_add_range(&l.global.values.failure, 500, 502);
	status_set_add_range(&l.global.values.failure, 504, 528);
	status_set_add_range(&l.global.values.failure, 530, 599);
	server.fields = BREAKER_FIELD_CAPACITY_SET;
	status_set_add(&server.values.capacity, 429);
	status_set_add(&server.values.capacity, 503);
	status_set_add(&server.values.capacity, 504);
	add_level(&l, "b", "ok", threshold_layer(2));
	add_level(&l, "b", "w1", server);
	add_level(&l, "b", "w2", threshold_layer(0));

	init(&t, 4);
	struct breaker_table_entry *e = get(&t, "b", "w1", NULL);
	assert_false(use_levels(&t, &l, &fe));
	assert_string_equal(fe.text, "server b/w1: capacity and failure sets overlap on 504 "
				     "(a status belongs to one set only)");
	assert_int_equal(fe.override, 1);
	assert_int_equal(fe.calls, 2); /* w2's zero threshold too */
	/* Still the defaults: the bad configuration took no effect. */
	assert_int_equal(e->breaker.policy->threshold, BREAKER_DEFAULT_THRESHOLD);

	struct levels bad_global = {.global = threshold_layer(0)};
	struct first_error global_error = {0};
	assert_false(use_levels(&t, &bad_global, &global_error));
	assert_non_null(strstr(global_error.text, "global: threshold"));
	assert_int_equal(global_error.override, -1);
	breaker_table_free(&t);
}

static void test_override_names_checked(void **state)
{
	struct levels l = {0};
	struct first_error fe = {0};
	struct breaker_policies p;

	add_level(&l, "", "", threshold_layer(2));
	add_level(&l, "b", "w1;shutdown", threshold_layer(2));
	assert_false(breaker_policies_build(&p, NULL, l.overrides, l.n, keep_first, &fe));
	assert_non_null(strstr(fe.text, "not a valid HAProxy name"));
	assert_int_equal(fe.calls, 2);
	assert_null(p.levels);
}

/* ==== the link's hooks, recency of looks, the entry's size ==== */

struct hook_log {
	int created, removed;
	uint32_t last;
};

static void hook_created(void *ctx, uint32_t index)
{
	struct hook_log *h = ctx;
	h->created++;
	h->last = index;
}

static void hook_removed(void *ctx, uint32_t index)
{
	struct hook_log *h = ctx;
	h->removed++;
	h->last = index;
}

/* State kept beside the table by index lives and dies with its entry:
 * creation, eviction and removal are each told once, with the index. */
static void test_hooks_follow_entries(void **state)
{
	struct breaker_table t;
	struct hook_log h = {0};

	init(&t, 2);
	breaker_table_set_hooks(&t, &(struct breaker_table_hooks){
		.created = hook_created, .removed = hook_removed, .ctx = &h});
	struct breaker_table_entry *a = get(&t, "b", "a", NULL);
	assert_int_equal(h.created, 1);
	assert_int_equal(h.last, breaker_table_index(&t, a));
	get(&t, "b", "c", NULL);
	get(&t, "b", "d", NULL); /* full: evicts a, the least recently used */
	assert_int_equal(h.created, 3);
	assert_int_equal(h.removed, 1);
	assert_null(find(&t, "b", "a"));
	breaker_table_remove(&t, find(&t, "b", "c"));
	assert_int_equal(h.removed, 2);
	assert_int_equal(t.count, 1);
	breaker_table_free(&t);
}

/* A look at HAProxy neither refreshes recency nor puts a new server ahead
 * of the ones SPOP traffic uses: eviction follows traffic. */
static void test_quiet_lookups_keep_recency(void **state)
{
	struct breaker_table t;
	enum breaker_table_status st;

	init(&t, 3);
	get(&t, "b", "old", NULL);
	get(&t, "b", "busy", NULL);
	/* The look lists "old" (found, stays least recent) and a new one. */
	assert_non_null(breaker_table_get_quiet(&t, "b", 1, "old", 3, T0, &st));
	assert_int_equal(st, BREAKER_TABLE_FOUND);
	assert_non_null(breaker_table_get_quiet(&t, "b", 1, "looked", 6, T0, &st));
	assert_int_equal(st, BREAKER_TABLE_CREATED);
	/* Full: the next one evicts the least recently used: "looked", then "old". */
	get(&t, "b", "new1", NULL);
	assert_null(find(&t, "b", "looked"));
	assert_non_null(find(&t, "b", "old"));
	get(&t, "b", "new2", NULL);
	assert_null(find(&t, "b", "old"));
	assert_non_null(find(&t, "b", "busy"));
	breaker_table_free(&t);
}

struct reserve_log {
	uint32_t allocated;
	uint32_t refuse_above; /* 0: never */
	int calls;
};

static bool hook_reserve(void *ctx, uint32_t allocated)
{
	struct reserve_log *r = ctx;
	r->calls++;
	if (r->refuse_above && allocated > r->refuse_above)
		return false;
	r->allocated = allocated;
	return true;
}

/* Entries come a chunk at a time as servers come, up to max_entries (the
 * last chunk cut to it); state kept beside the table is asked for room
 * first, and a refusal is a full table, not a missing state. */
/* The budgeted walk: cut at any budget and resumed, it visits every entry
 * in use once, in index order, and skips the free ones; each slot looked
 * at costs one; a NULL table is done at once. */
static void test_walk_cut_and_resumed(void **state)
{
	(void)state;
	struct breaker_table t;
	char name[32];
	init(&t, 64);
	for (unsigned i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "s%u", i);
		assert_non_null(get(&t, "b", name, NULL));
	}
	/* Free slots between those in use: s1, s4, s5 removed. */
	breaker_table_remove(&t, find(&t, "b", "s1"));
	breaker_table_remove(&t, find(&t, "b", "s4"));
	breaker_table_remove(&t, find(&t, "b", "s5"));
	uint32_t in_use = 0;
	for (uint32_t i = 0; i < t.allocated; i++)
		in_use += breaker_table_at(&t, i)->in_use;
	assert_int_equal(in_use, 7);

	for (uint32_t per_slice = 1; per_slice <= 4; per_slice++) {
		uint32_t index = 0, seen = 0, slices = 0, last = 0;
		bool done = false;
		while (!done && slices < LOOP_BOUND) {
			uint32_t budget = per_slice;
			struct breaker_table_entry *e;
			for (; (e = breaker_table_walk(&t, &index, &budget)); index++) {
				assert_true(e->in_use);
				assert_ptr_equal(e, breaker_table_at(&t, index));
				if (seen)
					assert_true(index > last); /* in order, never twice */
				last = index;
				seen++;
			}
			done = !breaker_table_walk_cut(&t, index);
			if (!done)
				assert_int_equal(budget, 0); /* cut only by the budget */
			slices++;
		}
		assert_true(done);
		assert_int_equal(seen, in_use);
		assert_int_equal(index, t.allocated);
		/* Every slot looked at once: allocated slots over the slices,
		 * the last slice ending the walk with what budget it has. */
		assert_int_equal(slices, (t.allocated + per_slice - 1) / per_slice);
	}

	uint32_t index = 0, budget = 5;
	assert_null(breaker_table_walk(NULL, &index, &budget));
	assert_false(breaker_table_walk_cut(NULL, index));
	assert_int_equal(budget, 5);
	breaker_table_free(&t);
}

static void test_grows_on_demand(void **state)
{
	struct breaker_table t;
	struct reserve_log r = {0};
	char name[32];
	enum breaker_table_status st;

	init(&t, 1500);
	breaker_table_set_hooks(&t, &(struct breaker_table_hooks){.reserve = hook_reserve, .ctx = &r});
	assert_int_equal(t.allocated, 0);
	get(&t, "b", "s0", NULL);
	assert_int_equal(t.allocated, BREAKER_TABLE_CHUNK);
	assert_int_equal(r.allocated, BREAKER_TABLE_CHUNK);
	for (unsigned i = 1; i <= BREAKER_TABLE_CHUNK; i++) {
		snprintf(name, sizeof(name), "s%u", i);
		assert_non_null(get(&t, "b", name, NULL));
	}
	assert_int_equal(t.allocated, 1500); /* cut to max_entries */
	assert_int_equal(r.calls, 2);
	/* Every entry keeps its index and its names across growths. */
	struct breaker_table_entry *first = find(&t, "b", "s0");
	assert_non_null(first);
	assert_int_equal(breaker_table_index(&t, first), first->index);
	assert_ptr_equal(breaker_table_at(&t, first->index), first);
	assert_string_equal(first->server, "s0");
	breaker_table_free(&t);

	/* Room refused: the server that needed it gets FULL, nothing breaks. */
	struct reserve_log tight = {.refuse_above = BREAKER_TABLE_CHUNK};
	init(&t, 5000);
	breaker_table_set_hooks(&t,
				&(struct breaker_table_hooks){.reserve = hook_reserve, .ctx = &tight});
	for (unsigned i = 0; i < BREAKER_TABLE_CHUNK; i++) {
		snprintf(name, sizeof(name), "s%u", i);
		assert_non_null(get(&t, "b", name, NULL));
	}
	/* Not at max_entries, so the table asks for room rather than evict. */
	assert_null(breaker_table_get(&t, "b", 1, "extra", 5, T0, &st));
	assert_int_equal(st, BREAKER_TABLE_FULL);
	assert_int_equal(t.full_refusals, 1);
	assert_int_equal(t.allocated, BREAKER_TABLE_CHUNK);
	breaker_table_free(&t);
}

/* The entry the hot path walks holds the breaker and its counters only:
 * names live apart, the HAProxy link's state beside the table. */
static void test_entry_size(void **state)
{
	print_message("sizeof(struct breaker_table_entry) = %zu bytes (breaker %zu, counters %zu)\n",
		      sizeof(struct breaker_table_entry), sizeof(struct breaker),
		      sizeof(struct breaker_counters));
	assert_true(sizeof(struct breaker_table_entry) <= 256);
}

/* The counters keep one slot per transition: every (from, to) with from
 * != to has its own, within the array. */
static void test_transition_slots(void **state)
{
	(void)state;
	bool used[BREAKER_NB_TRANSITION_SLOTS] = {false};
	for (int from = BREAKER_CLOSED; from <= BREAKER_HALF_OPEN; from++) {
		for (int to = BREAKER_CLOSED; to <= BREAKER_HALF_OPEN; to++) {
			if (from == to)
				continue;
			unsigned slot = breaker_transition_slot(from, to);
			assert_true(slot < BREAKER_NB_TRANSITION_SLOTS);
			assert_false(used[slot]);
			used[slot] = true;
		}
	}
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
	snprintf(log->transition, sizeof(log->transition), "%s", name ? name : "none");
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

	/* HALF_OPEN has no deadline of its own: only second's is left. */
	assert_int_equal(breaker_table_next_deadline(&t), next);

	/* Far later: the remaining deadline fires; a NULL callback is allowed. */
	next = breaker_table_tick(&t, next + 3600 * 1000, NULL, NULL);
	assert_int_equal(second->state, BREAKER_HALF_OPEN);
	assert_int_equal(next, BREAKER_NO_DEADLINE);
	assert_int_equal(log.calls, 1);
	breaker_table_free(&t);
}

/* A backend left out (guarded = false) is known as such, with or without
 * a server level of its own; every other backend is guarded, and with no
 * such backend no name is even looked up. */
static void test_unguarded_backend(void **state)
{
	(void)state;
	struct breaker_table t;
	struct levels l = {.global = threshold_layer(3)};
	struct breaker_policy_layer off = {.fields = BREAKER_FIELD_GUARDED};
	off.values.guarded = false;

	init(&t, 16);
	assert_false(t.policies.any_unguarded);
	assert_true(breaker_policies_guard(&t.policies, "static", 6, "s1", 2));
	add_level(&l, "static", "", off);
	add_level(&l, "static", "s2", threshold_layer(5));
	add_level(&l, "api", "", threshold_layer(4));
	assert_true(use_levels(&t, &l, NULL));
	assert_true(t.policies.any_unguarded);
	assert_false(breaker_policies_guard(&t.policies, "static", 6, "s1", 2));
	assert_false(breaker_policies_guard(&t.policies, "static", 6, "s2", 2));
	assert_true(breaker_policies_guard(&t.policies, "api", 3, "s1", 2));
	assert_true(breaker_policies_guard(&t.policies, "statics", 7, "s1", 2));
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
		cmocka_unit_test(test_new_policies_repoint_existing),
		cmocka_unit_test(test_policy_error_names_the_level),
		cmocka_unit_test(test_override_names_checked),
		cmocka_unit_test(test_hooks_follow_entries),
		cmocka_unit_test(test_quiet_lookups_keep_recency),
		cmocka_unit_test(test_entry_size),
		cmocka_unit_test(test_transition_slots),
		cmocka_unit_test(test_grows_on_demand),
		cmocka_unit_test(test_walk_cut_and_resumed),
		cmocka_unit_test(test_tick_drives_deadlines),
		cmocka_unit_test(test_unguarded_backend),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
