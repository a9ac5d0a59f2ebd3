/*
 * test_faults.c - the counter-delta logic as tables: what each measured
 * failure moves in `show stat` (HAProxy 2.6.12, 3.0.11, 3.2.26; see
 * faults.h) and what the breaker is told; first sight, restarts,
 * unexplained drops, garbage and caps; and each measured case driven
 * through a breaker request by request, polls included.
 *
 * Loops run on observable state (breaker_would_allow) with a bound, never
 * on a hard-coded count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/breaker.h"
#include "hapi/runtime_api.h"
#include "link/faults.h"
#include "breaker_allows.h"

#define LOOP_BOUND 100000
#define T0 1000000

#define NB(a) (sizeof(a) / sizeof((a)[0]))

/* Counters of a server that has lived a while: every case starts here, so
 * a delta that leaked the history would show. */
static const struct faults_counters history = {
	.econ = 7, .eresp = 11, .srv_abrt = 3, .wretr = 20, .wredis = 2, .cli_abrt = 5,
};

static struct faults_counters plus(const struct faults_counters *a, const struct faults_counters *b)
{
	return (struct faults_counters){
		.econ = a->econ + b->econ,
		.eresp = a->eresp + b->eresp,
		.srv_abrt = a->srv_abrt + b->srv_abrt,
		.wretr = a->wretr + b->wretr,
		.wredis = a->wredis + b->wredis,
		.cli_abrt = a->cli_abrt + b->cli_abrt,
	};
}

/* What SPOE sees of one request. */
enum spoe_sees {
	SPOE_NOTHING,	/* HAProxy answered (502/503/504), or nothing at all */
	SPOE_STATUS,	/* the worker's status, below */
};

/* One request of each measured case: what SPOE sees, what the counters of
 * the server concerned move, and what must be recorded. */
struct measured_case {
	const char *name;
	enum spoe_sees spoe;
	int status;			 /* SPOE_STATUS: the head SPOE sees */
	struct faults_counters moves;	 /* one request, one server row */
	uint64_t connect_errors, response_errors, aborted_bodies, redispatches, retries,
		client_aborts;
	uint64_t failures; /* to breaker_record_failures */
	uint64_t total;
	/* Driven through a breaker at the default threshold: */
	enum { NEVER_OPENS, OPENS_AT_THRESHOLD, OPENS_EARLIER } opens;
	uint64_t capacity_retries; /* recorded as backpressure, never a failure */
	/* Which configurations the case happens in. Within one, the counters
	 * of several requests add up to the sum of their verdicts; across
	 * them they need not (the retries of a backend without redispatch
	 * would pass for capacity retries next to a redispatch). */
	enum { ANY_CONFIG, WITHOUT_REDISPATCH, WITH_REDISPATCH } config;
};

#define MOVES(...) ((struct faults_counters){__VA_ARGS__})

static const struct measured_case measured[] = {
	/* The worker answered: SPOE judges it, the counters add nothing. */
	{"worker 200", SPOE_STATUS, 200, MOVES(0), 0, 0, 0, 0, 0, 0, 0, 0, NEVER_OPENS, .config = ANY_CONFIG},
	{"worker 429", SPOE_STATUS, 429, MOVES(0), 0, 0, 0, 0, 0, 0, 0, 0, NEVER_OPENS, .config = ANY_CONFIG},
	/* hrsp_5xx moved, but it is not read: SPOE already counted it. */
	{"worker 500", SPOE_STATUS, 500, MOVES(0), 0, 0, 0, 0, 0, 0, 0, 0, OPENS_AT_THRESHOLD, .config = ANY_CONFIG},
	{"worker 503", SPOE_STATUS, 503, MOVES(0), 0, 0, 0, 0, 0, 0, 0, 0, NEVER_OPENS, .config = ANY_CONFIG},
	/* HAProxy answered 504/502 itself: only eresp tells. */
	{"server timeout", SPOE_NOTHING, 0, MOVES(.eresp = 1), 0, 1, 0, 0, 0, 0, 1, 1,
	 OPENS_AT_THRESHOLD, .config = ANY_CONFIG},
	{"closed before headers (2.6)", SPOE_NOTHING, 0, MOVES(.eresp = 1), 0, 1, 0, 0, 0, 0, 1, 1,
	 OPENS_AT_THRESHOLD, .config = ANY_CONFIG},
	/* 3.0 and 3.2 count eresp twice here: the documented overcount. */
	{"closed before headers (3.0, 3.2)", SPOE_NOTHING, 0, MOVES(.eresp = 2), 0, 2, 0, 0, 0, 0,
	 2, 2, OPENS_EARLIER, .config = ANY_CONFIG},
	{"invalid response (2.6, 3.0)", SPOE_NOTHING, 0, MOVES(.eresp = 1), 0, 1, 0, 0, 0, 0, 1, 1,
	 OPENS_AT_THRESHOLD, .config = ANY_CONFIG},
	{"invalid response (3.2)", SPOE_NOTHING, 0, MOVES(.eresp = 2), 0, 2, 0, 0, 0, 0, 2, 2,
	 OPENS_EARLIER, .config = ANY_CONFIG},
	/* SPOE saw the 200 head; srv_abrt (inside eresp) says the body died. */
	{"body aborted after a 200 head", SPOE_STATUS, 200, MOVES(.eresp = 1, .srv_abrt = 1), 0, 0,
	 1, 0, 0, 0, 0, 1, OPENS_AT_THRESHOLD, .config = ANY_CONFIG},
	/* One request, one failure, whatever the retries. */
	{"refused, retries 2", SPOE_NOTHING, 0, MOVES(.econ = 1, .wretr = 2), 1, 0, 0, 0, 2, 0, 1,
	 1, OPENS_AT_THRESHOLD, .config = WITHOUT_REDISPATCH},
	{"refused, retries 0", SPOE_NOTHING, 0, MOVES(.econ = 1), 1, 0, 0, 0, 0, 0, 1, 1,
	 OPENS_AT_THRESHOLD, .config = ANY_CONFIG},
	{"connect timeout, retries 2", SPOE_NOTHING, 0, MOVES(.econ = 1, .wretr = 2), 1, 0, 0, 0, 2,
	 0, 1, 1, OPENS_AT_THRESHOLD, .config = WITHOUT_REDISPATCH},
	/* option redispatch: the failed first server moves wredis only. */
	{"redispatch: the refused first server", SPOE_NOTHING, 0, MOVES(.wredis = 1), 0, 0, 0, 1, 0,
	 0, 1, 1, OPENS_AT_THRESHOLD, .config = WITH_REDISPATCH},
	{"redispatch: the first server's connect timed out", SPOE_NOTHING, 0, MOVES(.wredis = 1), 0,
	 0, 0, 1, 0, 0, 1, 1, OPENS_AT_THRESHOLD, .config = WITH_REDISPATCH},
	{"redispatch: the server that answered 200", SPOE_STATUS, 200, MOVES(0), 0, 0, 0, 0, 0, 0,
	 0, 0, NEVER_OPENS, .config = ANY_CONFIG},
	{"redispatch with retries 0: refused", SPOE_NOTHING, 0, MOVES(.econ = 1), 1, 0, 0, 0, 0, 0,
	 1, 1, OPENS_AT_THRESHOLD, .config = ANY_CONFIG},
	/* The client left: never the worker's fault. */
	{"client RST during the body", SPOE_STATUS, 200, MOVES(.cli_abrt = 1), 0, 0, 0, 0, 0, 1, 0,
	 0, NEVER_OPENS, .config = ANY_CONFIG},
	{"client RST before a slow head", SPOE_STATUS, 200, MOVES(.cli_abrt = 1), 0, 0, 0, 0, 0, 1,
	 0, 0, NEVER_OPENS, .config = ANY_CONFIG},
	{"client RST, hanging worker (3.2)", SPOE_NOTHING, 0, MOVES(.cli_abrt = 2), 0, 0, 0, 0, 0,
	 2, 0, 0, NEVER_OPENS, .config = ANY_CONFIG},
	/* 2.6/3.0 wait for the worker after the client left: its timeout is
	 * its own fault. */
	{"client RST, hanging worker (2.6, 3.0)", SPOE_NOTHING, 0, MOVES(.eresp = 1, .cli_abrt = 1),
	 0, 1, 0, 0, 0, 1, 1, 1, OPENS_AT_THRESHOLD, .config = ANY_CONFIG},
	/* L7 retries of a 503: wretr +2 per retry, and SPOE sees the last 503. */
	{"retry-on 503, same server", SPOE_STATUS, 503, MOVES(.wretr = 4), 0, 0, 0, 0, 4, 0, 0, 0,
	 NEVER_OPENS, .config = WITHOUT_REDISPATCH},
	/* retry-on 503 (429) + redispatch, the shipped configuration: a busy
	 * worker's status retried elsewhere moves wredis and wretr together,
	 * and nothing else. Busy, not failed (docs/design.md, "Sets
	 * replace"): never charged, even
	 * though SPOE never sees that 503. */
	{"retry-on 503 + redispatch: the 503 worker", SPOE_NOTHING, 0,
	 MOVES(.wretr = 1, .wredis = 1), 0, 0, 0, 0, 1, 0, 0, 0, NEVER_OPENS,
	 .capacity_retries = 1, .config = WITH_REDISPATCH},
	{"retry-on 429 + redispatch (3.x): the 429 worker", SPOE_NOTHING, 0,
	 MOVES(.wretr = 1, .wredis = 1), 0, 0, 0, 0, 1, 0, 0, 0, NEVER_OPENS,
	 .capacity_retries = 1, .config = WITH_REDISPATCH},
	/* Every worker busy, retries 2 over two: the first answered twice,
	 * retried away once, and its last 503 went to the client. */
	{"retry-on 503 + redispatch, all busy: the last worker", SPOE_STATUS, 503,
	 MOVES(.wretr = 1, .wredis = 1), 0, 0, 0, 0, 1, 0, 0, 0, NEVER_OPENS,
	 .capacity_retries = 1, .config = WITH_REDISPATCH},
	{"retry-on empty-response, closed (2.6)", SPOE_NOTHING, 0, MOVES(.eresp = 1, .wretr = 4), 0,
	 1, 0, 0, 4, 0, 1, 1, OPENS_AT_THRESHOLD, .config = WITHOUT_REDISPATCH},
	{"retry-on empty-response, closed (3.2)", SPOE_NOTHING, 0, MOVES(.eresp = 4, .wretr = 4), 0,
	 4, 0, 0, 4, 0, 4, 4, OPENS_EARLIER, .config = WITHOUT_REDISPATCH},
	/* A worker dropping an upload: no head, but srv_abrt moves (2.6). */
	{"worker drops the request upload (2.6)", SPOE_NOTHING, 0,
	 MOVES(.eresp = 1, .srv_abrt = 1), 0, 0, 1, 0, 0, 0, 0, 1, OPENS_AT_THRESHOLD, .config = ANY_CONFIG},
	{"worker drops the request upload (3.x)", SPOE_NOTHING, 0, MOVES(.eresp = 2), 0, 2, 0, 0, 0,
	 0, 2, 2, OPENS_EARLIER, .config = ANY_CONFIG},
};

static void check_delta(const char *name, const struct faults_delta *d,
			const struct measured_case *c)
{
	if (d->connect_errors != c->connect_errors || d->response_errors != c->response_errors ||
	    d->aborted_bodies != c->aborted_bodies || d->redispatches != c->redispatches ||
	    d->retries != c->retries || d->client_aborts != c->client_aborts ||
	    d->failures != c->failures || d->total != c->total ||
	    d->capacity_retries != c->capacity_retries)
		fail_msg("%s: got connect %llu response %llu aborted %llu redispatch %llu retries "
			 "%llu client %llu failures %llu total %llu capacity retries %llu",
			 name, (unsigned long long)d->connect_errors,
			 (unsigned long long)d->response_errors,
			 (unsigned long long)d->aborted_bodies, (unsigned long long)d->redispatches,
			 (unsigned long long)d->retries, (unsigned long long)d->client_aborts,
			 (unsigned long long)d->failures, (unsigned long long)d->total,
			 (unsigned long long)d->capacity_retries);
}

/* One request of each case, between two polls. */
static void test_measured_cases(void **state)
{
	for (size_t i = 0; i < NB(measured); i++) {
		const struct measured_case *c = &measured[i];
		struct faults_baseline base = {0};
		struct faults_delta d;

		faults_delta(&base, &history, false, &d);
		assert_int_equal(d.basis, FAULTS_FIRST_SIGHT);
		struct faults_counters cur = plus(&history, &c->moves);
		faults_delta(&base, &cur, false, &d);
		assert_int_equal(d.basis, FAULTS_DELTA);
		assert_false(d.capped);
		check_delta(c->name, &d, c);
		/* The invariants the breaker relies on. */
		assert_int_equal(d.failures, d.connect_errors + d.response_errors + d.redispatches);
		assert_int_equal(d.total, d.failures + d.aborted_bodies);
	}
}

/* Several requests of several cases of one configuration in one poll
 * interval add up. */
static void test_cases_add_up(void **state)
{
	static const int configs[] = {WITHOUT_REDISPATCH, WITH_REDISPATCH};

	for (size_t k = 0; k < NB(configs); k++) {
		for (unsigned n = 1; n <= 5; n++) {
			struct faults_baseline base = {0};
			struct faults_counters cur = history;
			struct measured_case sum = {0};
			struct faults_delta d;

			faults_delta(&base, &cur, false, &d);
			for (size_t i = 0; i < NB(measured); i++) {
				const struct measured_case *c = &measured[i];
				if (c->config != ANY_CONFIG && (int)c->config != configs[k])
					continue;
				for (unsigned r = 0; r < n; r++)
					cur = plus(&cur, &c->moves);
				sum.connect_errors += n * c->connect_errors;
				sum.response_errors += n * c->response_errors;
				sum.aborted_bodies += n * c->aborted_bodies;
				sum.redispatches += n * c->redispatches;
				sum.retries += n * c->retries;
				sum.client_aborts += n * c->client_aborts;
				sum.failures += n * c->failures;
				sum.total += n * c->total;
				sum.capacity_retries += n * c->capacity_retries;
			}
			faults_delta(&base, &cur, false, &d);
			check_delta(configs[k] == WITH_REDISPATCH ? "all cases with redispatch"
								    : "all cases without redispatch",
				    &d, &sum);
		}
	}
}

/* ==== bases: first sight, restarts, drops ==== */

struct basis_case {
	const char *name;
	bool have_baseline;
	struct faults_counters last;
	struct faults_counters cur;
	bool restarted;
	enum faults_basis basis;
	uint64_t failures, aborted_bodies, retries;
};

static const struct basis_case bases[] = {
	/* First sight counts nothing, however large, restart or not: those
	 * errors predate anything the breaker saw. */
	{"first sight", false, MOVES(0), MOVES(.econ = 50, .eresp = 9, .srv_abrt = 4, .wredis = 3),
	 false, FAULTS_FIRST_SIGHT, 0, 0, 0},
	{"first sight after a restart", false, MOVES(0), MOVES(.econ = 50, .eresp = 9), true,
	 FAULTS_FIRST_SIGHT, 0, 0, 0},
	{"no change", true, MOVES(.econ = 3, .eresp = 4), MOVES(.econ = 3, .eresp = 4), false,
	 FAULTS_DELTA, 0, 0, 0},
	{"growth", true, MOVES(.econ = 3, .eresp = 4, .srv_abrt = 1),
	 MOVES(.econ = 4, .eresp = 7, .srv_abrt = 2), false, FAULTS_DELTA, 3, 1, 0},
	/* A reload: the new process counted from zero. */
	{"restart, counters below", true, MOVES(.econ = 100, .eresp = 100, .srv_abrt = 50),
	 MOVES(.econ = 1, .eresp = 2, .srv_abrt = 1), true, FAULTS_RESTARTED, 2, 1, 0},
	/* Above the old baseline is still all new: not cur - last. */
	{"restart, counters above", true, MOVES(.econ = 2, .wretr = 1),
	 MOVES(.econ = 5, .wretr = 3), true, FAULTS_RESTARTED, 5, 0, 3},
	{"restart, all zero", true, MOVES(.econ = 9), MOVES(0), true, FAULTS_RESTARTED, 0, 0, 0},
	/* A counter went down and nobody said why: re-baseline, count nothing
	 * - not even the counters that grew. */
	{"drop without restart", true, MOVES(.econ = 10, .eresp = 10),
	 MOVES(.econ = 11, .eresp = 2), false, FAULTS_UNEXPLAINED_DROP, 0, 0, 0},
	{"drop of cli_abrt alone", true, MOVES(.cli_abrt = 10), MOVES(.econ = 4, .cli_abrt = 9),
	 false, FAULTS_UNEXPLAINED_DROP, 0, 0, 0},
	{"drop of wretr alone", true, MOVES(.wretr = 10), MOVES(.wretr = 9, .wredis = 1), false,
	 FAULTS_UNEXPLAINED_DROP, 0, 0, 0},
	/* srv_abrt above eresp: aborts outside eresp still count, once. */
	{"srv_abrt beyond eresp", true, MOVES(.eresp = 5, .srv_abrt = 5),
	 MOVES(.eresp = 6, .srv_abrt = 8), false, FAULTS_DELTA, 0, 3, 0},
};

/* For failure messages. */
static const char *basis_name(enum faults_basis basis)
{
	switch (basis) {
	case FAULTS_FIRST_SIGHT: return "first_sight";
	case FAULTS_DELTA: return "delta";
	case FAULTS_RESTARTED: return "restarted";
	case FAULTS_UNEXPLAINED_DROP: return "unexplained_drop";
	}
	return "unknown";
}

static void test_bases(void **state)
{
	for (size_t i = 0; i < NB(bases); i++) {
		const struct basis_case *c = &bases[i];
		struct faults_baseline base = {0};
		struct faults_delta d;

		if (c->have_baseline) {
			faults_delta(&base, &c->last, false, &d);
			assert_int_equal(d.basis, FAULTS_FIRST_SIGHT);
		}
		faults_delta(&base, &c->cur, c->restarted, &d);
		if (d.basis != c->basis || d.failures != c->failures ||
		    d.aborted_bodies != c->aborted_bodies || d.retries != c->retries)
			fail_msg("%s: got %s failures %llu aborted %llu retries %llu", c->name,
				 basis_name(d.basis), (unsigned long long)d.failures,
				 (unsigned long long)d.aborted_bodies,
				 (unsigned long long)d.retries);
		assert_int_equal(d.total, d.failures + d.aborted_bodies);
		/* Whatever happened, the baseline is now cur: the next poll
		 * counts from here, and only from here. */
		assert_true(base.valid);
		assert_memory_equal(&base.last, &c->cur, sizeof(c->cur));
		struct faults_counters next = plus(&c->cur, &MOVES(.econ = 1, .srv_abrt = 1, .eresp = 1));
		faults_delta(&base, &next, false, &d);
		if (d.basis != FAULTS_DELTA || d.failures != 1 || d.aborted_bodies != 1)
			fail_msg("%s: the poll after: %s failures %llu aborted %llu", c->name,
				 basis_name(d.basis), (unsigned long long)d.failures,
				 (unsigned long long)d.aborted_bodies);
	}
}

/* A server that left the configuration comes back as a first sight: its
 * baseline zeroed, as the link zeroes the entry of every breaker it
 * creates. */
static void test_baseline_reset(void **state)
{
	struct faults_baseline base = {0};
	struct faults_delta d;
	struct faults_counters cur = history;

	faults_delta(&base, &cur, false, &d);
	cur.econ += 3;
	faults_delta(&base, &cur, false, &d);
	assert_int_equal(d.failures, 3);
	memset(&base, 0, sizeof(base));
	assert_false(base.valid);
	cur.econ += 3;
	faults_delta(&base, &cur, false, &d);
	assert_int_equal(d.basis, FAULTS_FIRST_SIGHT);
	assert_int_equal(d.total, 0);
}

/* A capacity retry's two counters straddle a look: HAProxy counts the
 * retry (wretr) when it decides it and the redispatch (wredis) when it
 * assigns the next server, maybe on another thread. The redispatch that
 * comes alone in the next interval is still the capacity retry's, never a
 * failed connection - seen on 3.0 under load: a busy worker opened by
 * three such redispatches. The match waits one interval, no more. */
static void test_retry_straddles_a_look(void **state)
{
	struct faults_baseline base = {0};
	struct faults_delta d;
	struct faults_counters cur = history;

	faults_delta(&base, &cur, false, &d);
	cur.wretr += 2; /* two retries decided, one of them redispatched */
	cur.wredis += 1;
	faults_delta(&base, &cur, false, &d);
	assert_int_equal(d.failures, 0);
	assert_int_equal(d.capacity_retries, 1);
	cur.wredis += 1; /* the other's redispatch, next interval */
	faults_delta(&base, &cur, false, &d);
	assert_int_equal(d.failures, 0);
	assert_int_equal(d.redispatches, 0);
	assert_int_equal(d.capacity_retries, 1);

	/* One interval only: a retry never redispatched (one server) does
	 * not hide a failed connection two looks later. */
	cur.wretr += 1;
	faults_delta(&base, &cur, false, &d);
	faults_delta(&base, &cur, false, &d);
	cur.wredis += 1;
	faults_delta(&base, &cur, false, &d);
	assert_int_equal(d.redispatches, 1);
	assert_int_equal(d.failures, 1);

	/* Nor across a new HAProxy process. */
	cur.wretr += 1;
	faults_delta(&base, &cur, false, &d);
	struct faults_counters fresh = {.wredis = 1};
	faults_delta(&base, &fresh, true, &d);
	assert_int_equal(d.basis, FAULTS_RESTARTED);
	assert_int_equal(d.redispatches, 1);
}

/* ==== garbage and caps ==== */

struct cap_case {
	const char *name;
	struct faults_counters last;
	struct faults_counters cur;
	bool restarted;
	bool capped;
	uint64_t connect_errors, response_errors, aborted_bodies, redispatches, retries,
		client_aborts;
};

#define MAXD FAULTS_MAX_DELTA

static const struct cap_case caps[] = {
	{"exactly the cap", MOVES(.econ = 10), MOVES(.econ = 10 + MAXD), false, false, MAXD, 0, 0, 0,
	 0, 0},
	{"one past the cap", MOVES(.econ = 10), MOVES(.econ = 10 + MAXD + 1), false, true, MAXD, 0,
	 0, 0, 0, 0},
	{"a counter jumping to 2^64-1", MOVES(.eresp = 1), MOVES(.eresp = UINT64_MAX), false, true, 0,
	 MAXD, 0, 0, 0, 0},
	{"every counter at 2^64-1 after a restart", MOVES(.econ = 1),
	 MOVES(.econ = UINT64_MAX, .eresp = UINT64_MAX, .srv_abrt = UINT64_MAX,
	       .wretr = UINT64_MAX, .wredis = UINT64_MAX, .cli_abrt = UINT64_MAX),
	 true, true, MAXD, 0, MAXD, 0, MAXD, MAXD}, /* every wredis matched by a wretr */
	/* Both capped, then split: never a negative response error. */
	{"eresp and srv_abrt both huge", MOVES(0),
	 MOVES(.eresp = UINT64_MAX, .srv_abrt = UINT64_MAX - 1), false, true, 0, 0, MAXD, 0, 0, 0},
	{"eresp huge, srv_abrt small", MOVES(0), MOVES(.eresp = UINT64_MAX, .srv_abrt = 2), false,
	 true, 0, MAXD - 2, 2, 0, 0, 0},
	{"retries alone huge", MOVES(.wretr = 3), MOVES(.wretr = UINT64_MAX / 2), false, true, 0, 0,
	 0, 0, MAXD, 0},
};

static void test_garbage_and_caps(void **state)
{
	for (size_t i = 0; i < NB(caps); i++) {
		const struct cap_case *c = &caps[i];
		struct faults_baseline base = {0};
		struct faults_delta d;

		faults_delta(&base, &c->last, false, &d);
		faults_delta(&base, &c->cur, c->restarted, &d);
		if (d.capped != c->capped || d.connect_errors != c->connect_errors ||
		    d.response_errors != c->response_errors ||
		    d.aborted_bodies != c->aborted_bodies || d.redispatches != c->redispatches ||
		    d.retries != c->retries || d.client_aborts != c->client_aborts)
			fail_msg("%s: capped %d connect %llu response %llu aborted %llu redispatch "
				 "%llu retries %llu client %llu",
				 c->name, d.capped, (unsigned long long)d.connect_errors,
				 (unsigned long long)d.response_errors,
				 (unsigned long long)d.aborted_bodies,
				 (unsigned long long)d.redispatches, (unsigned long long)d.retries,
				 (unsigned long long)d.client_aborts);
		/* No sum overflows, nothing is absurd. */
		assert_int_equal(d.failures, d.connect_errors + d.response_errors + d.redispatches);
		assert_int_equal(d.total, d.failures + d.aborted_bodies);
		assert_true(d.total <= 3ull * MAXD);
	}
}

/* The parsed `show stat` row's counters land in the right fields. */
static void test_counters_from_stat(void **state)
{
	struct runtime_api_stat_row row;
	struct faults_counters c;

	memset(&row, 0, sizeof(row));
	row.econ = 1;
	row.eresp = 2;
	row.wretr = 3;
	row.wredis = 4;
	row.srv_abrt = 5;
	row.cli_abrt = 6;
	row.hrsp_5xx = 7;
	row.weight = 8;
	faults_counters_from_stat(&c, &row);
	assert_int_equal(c.econ, 1);
	assert_int_equal(c.eresp, 2);
	assert_int_equal(c.wretr, 3);
	assert_int_equal(c.wredis, 4);
	assert_int_equal(c.srv_abrt, 5);
	assert_int_equal(c.cli_abrt, 6);
}

/* ==== each measured case, through a breaker ==== */

/* One complete look, as the link records it. */
static void poll_into(struct breaker *b, struct faults_baseline *base,
		      const struct faults_counters *cur, uint64_t now)
{
	struct faults_delta d;

	faults_delta(base, cur, false, &d);
	breaker_record_poll(b, d.aborted_bodies, d.failures, now);
	if (d.capacity_retries)
		breaker_record_backpressure(b, now);
	breaker_confirm_successes(b);
}

/*
 * A worker behaving as the case says, one request per poll interval: SPOE
 * reports what it sees, then the poll reports the counters. Failing cases
 * open after `threshold` requests (fewer where HAProxy double-counts);
 * healthy ones never do.
 */
static void test_measured_cases_through_breaker(void **state)
{
	struct breaker_policy p;
	breaker_policy_defaults(&p);

	for (size_t i = 0; i < NB(measured); i++) {
		const struct measured_case *c = &measured[i];
		struct breaker b;
		struct faults_baseline base = {0};
		struct faults_counters cur = history;
		uint64_t now = T0;
		unsigned requests = 0;
		unsigned enough = 10 * p.threshold;

		breaker_init(&b, &p, now);
		poll_into(&b, &base, &cur, now);
		while (breaker_would_allow(&b) && requests < enough) {
			assert_true(++requests <= LOOP_BOUND);
			now += 100;
			if (c->spoe == SPOE_STATUS)
				breaker_record(&b, breaker_outcome(&p, c->status), now);
			cur = plus(&cur, &c->moves);
			now += 400;
			poll_into(&b, &base, &cur, now);
		}
		switch (c->opens) {
		case NEVER_OPENS:
			if (b.state != BREAKER_CLOSED || b.failure_streak != 0)
				fail_msg("%s: %s with streak %u after %u requests", c->name,
					 breaker_state_name(b.state), b.failure_streak, requests);
			break;
		case OPENS_AT_THRESHOLD:
			if (b.state != BREAKER_OPEN || requests != p.threshold)
				fail_msg("%s: %s after %u requests, expected open after %u",
					 c->name, breaker_state_name(b.state), requests,
					 p.threshold);
			break;
		case OPENS_EARLIER:
			if (b.state != BREAKER_OPEN || requests >= p.threshold)
				fail_msg("%s: %s after %u requests, expected open before %u",
					 c->name, breaker_state_name(b.state), requests,
					 p.threshold);
			break;
		}
	}
}

/* A healthy worker next to a failing one: per-server baselines keep every
 * fault on the server that caused it. */
static void test_neighbour_not_charged(void **state)
{
	struct breaker_policy p;
	struct breaker sick, healthy;
	struct faults_baseline sick_base = {0}, healthy_base = {0};
	struct faults_counters sick_cur = history, healthy_cur = history;
	uint64_t now = T0;
	unsigned polls = 0;

	breaker_policy_defaults(&p);
	breaker_init(&sick, &p, now);
	breaker_init(&healthy, &p, now);
	poll_into(&sick, &sick_base, &sick_cur, now);
	poll_into(&healthy, &healthy_base, &healthy_cur, now);
	while (breaker_would_allow(&sick)) {
		assert_true(++polls <= LOOP_BOUND);
		now += 500;
		/* redispatch: the sick one refuses, the healthy one serves */
		sick_cur.wredis++;
		breaker_record_success(&healthy, now);
		poll_into(&sick, &sick_base, &sick_cur, now);
		poll_into(&healthy, &healthy_base, &healthy_cur, now);
	}
	assert_int_equal(polls, p.threshold);
	assert_int_equal(healthy.state, BREAKER_CLOSED);
	assert_int_equal(healthy.failure_streak, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_measured_cases),
		cmocka_unit_test(test_cases_add_up),
		cmocka_unit_test(test_bases),
		cmocka_unit_test(test_baseline_reset),
		cmocka_unit_test(test_retry_straddles_a_look),
		cmocka_unit_test(test_garbage_and_caps),
		cmocka_unit_test(test_counters_from_stat),
		cmocka_unit_test(test_measured_cases_through_breaker),
		cmocka_unit_test(test_neighbour_not_charged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
