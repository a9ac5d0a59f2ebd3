/*
 * test_stall_release.c - when the requests a hung worker holds are ended
 * (enforce_release_stalled(), link/stall_release.c), as a table of (the
 * breaker, its trip marked or not, the ejection cap, the plan's hands-off)
 * -> (send, wait for the drain, say it, skip it, nothing). Only the
 * stalled rule's own trip releases, once; the operator's hand and the cap
 * bind the release as they bind the drain.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/policy.h"
#include "link/enforce_plan.h"

#define TRIP 3 /* the breaker's trips when it opened */

enum tweak {
	AS_OPENED,     /* open, stalled, the trip marked */
	NOT_MARKED,    /* nothing pending: no stalled open, or done already */
	OTHER_RULE,    /* opened by the failure streak */
	PROBE_FAILED,  /* reopened by a failed probe */
	LATER_TRIP,    /* a later trip than the one marked */
	HALF_OPEN,     /* the cool-down ended before the drain could go */
	CLOSED,        /* closed since */
	POLICY_OFF,    /* release_stalled = false (a reload) */
	BACKEND_ENFORCE_NONE, /* [backend] enforce = none */
	PAUSED,        /* the control socket's pause (or release all) */
	HELD_IN,       /* hold in */
	HELD_OUT,      /* hold out: drained all the same */
};

struct row {
	const char *name;
	enum tweak tweak;
	bool capped;
	const char *hands_off;
	enum enforce_release what;
	const char *why; /* NULL: none expected; "" any */
};

static const struct row rows[] = {
	{"a stalled open releases with its drain", AS_OPENED, false, NULL, ENFORCE_RELEASE_SEND, NULL},
	{"nothing marked: nothing to do", NOT_MARKED, false, NULL, ENFORCE_RELEASE_NONE, NULL},
	{"a failing worker answers: nothing held", OTHER_RULE, false, NULL, ENFORCE_RELEASE_SKIP, NULL},
	{"a failed probe is no stalled trip", PROBE_FAILED, false, NULL, ENFORCE_RELEASE_SKIP, NULL},
	{"a later trip is not the one marked", LATER_TRIP, false, NULL, ENFORCE_RELEASE_SKIP, NULL},
	{"half-open before the drain went: its probes are new", HALF_OPEN, false, NULL, ENFORCE_RELEASE_SKIP, NULL},
	{"closed since: nothing", CLOSED, false, NULL, ENFORCE_RELEASE_SKIP, NULL},
	{"the policy turned off since", POLICY_OFF, false, NULL, ENFORCE_RELEASE_SKIP, NULL},
	{"capped: waits with the drain", AS_OPENED, true, NULL, ENFORCE_RELEASE_WAIT, NULL},
	{"enforce = none: said, never sent", BACKEND_ENFORCE_NONE, false, NULL, ENFORCE_RELEASE_SHOW, ""},
	{"enforce = none, capped: said all the same", BACKEND_ENFORCE_NONE, true, NULL, ENFORCE_RELEASE_SHOW, ""},
	{"paused: the operator's", PAUSED, false, NULL, ENFORCE_RELEASE_SKIP, ""},
	{"held in: the operator's", HELD_IN, false, NULL, ENFORCE_RELEASE_SKIP, ""},
	{"held in, capped: the operator's", HELD_IN, true, NULL, ENFORCE_RELEASE_SKIP, ""},
	{"held out: drained, released", HELD_OUT, false, NULL, ENFORCE_RELEASE_SEND, NULL},
	{"in maintenance: the operator's", AS_OPENED, false, "server in maintenance", ENFORCE_RELEASE_SKIP, "server in maintenance"},
	{"drained by the operator: the operator's", AS_OPENED, false, "server drained by the operator", ENFORCE_RELEASE_SKIP, "server drained by the operator"},
};

static void test_rows(void **state)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct breaker_policy policy;
		struct breaker b;

		breaker_policy_defaults(&policy);
		breaker_init(&b, &policy, 1000);
		b.state = BREAKER_OPEN;
		b.trips = TRIP;
		b.last_trip_rule = BREAKER_TRIP_STALLED;
		uint32_t pending = TRIP;
		switch (r->tweak) {
		case AS_OPENED: break;
		case NOT_MARKED: pending = 0; break;
		case OTHER_RULE: b.last_trip_rule = BREAKER_TRIP_FAILURE_STREAK; break;
		case PROBE_FAILED: b.last_trip_rule = BREAKER_TRIP_PROBE_FAILED; break;
		case LATER_TRIP: b.trips = TRIP + 1; break;
		case HALF_OPEN: b.state = BREAKER_HALF_OPEN; break;
		case CLOSED: b.state = BREAKER_CLOSED; break;
		case POLICY_OFF: policy.release_stalled = false; break;
		case BACKEND_ENFORCE_NONE: policy.observe_only = true; break;
		case PAUSED: b.observe_only = true; break;
		case HELD_IN: b.hold = BREAKER_HOLD_IN; break;
		case HELD_OUT: b.hold = BREAKER_HOLD_OUT; break;
		}
		struct enforce_release_decision d =
			enforce_release_stalled(&b, pending, r->capped, r->hands_off);
		if (d.what != r->what)
			fail_msg("%s: decided %d, want %d", r->name, d.what, r->what);
		if (!r->why && d.why)
			fail_msg("%s: says '%s', want nothing", r->name, d.why);
		if (r->why && !d.why)
			fail_msg("%s: says nothing, want a reason", r->name);
		if (r->why && r->why[0] && strcmp(d.why, r->why) != 0)
			fail_msg("%s: says '%s', want '%s'", r->name, d.why, r->why);
	}
}

/* On by default: what a hung worker holds is lost either way. */
static void test_default_on(void **state)
{
	struct breaker_policy policy;

	breaker_policy_defaults(&policy);
	assert_true(policy.release_stalled);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_default_on),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
