/*
 * test_operator_hand.c - the operator's word (operator_hand.c) and the
 * control socket's language (control_parse.c): what a hold, a pause and
 * a release make HAProxy hold (enforce_wanted_state()), how a hold ends,
 * that a held breaker is never forgotten, the record as text both ways
 * (and every broken line refused with its number), and the commands read
 * or refused - hostile names included.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/breaker.h"
#include "core/operator_hand.h"
#include "core/policy.h"
#include "daemon/control_parse.h"
#include "link/enforce_plan.h"

#define T0 1000000

static struct breaker_policy policy;

static void fresh(struct breaker *b)
{
	breaker_policy_defaults(&policy);
	breaker_init(b, &policy, T0);
}

static void open_it(struct breaker *b)
{
	uint64_t t = T0;
	while (b->state != BREAKER_OPEN)
		breaker_record_failure(b, t++);
}

/* hold, pause and release against what the breaker judges. */
static void test_wanted_state(void **state)
{
	(void)state;
	struct breaker b;

	fresh(&b);
	breaker_hold_set(&b, BREAKER_HOLD_OUT, 0, false);
	assert_int_equal(enforce_wanted_state(&b), BREAKER_OPEN);
	assert_int_equal(b.state, BREAKER_CLOSED); /* the breaker's own judgement untouched */

	open_it(&b);
	breaker_hold_set(&b, BREAKER_HOLD_IN, 0, false);
	assert_int_equal(enforce_wanted_state(&b), BREAKER_CLOSED);
	assert_int_equal(b.state, BREAKER_OPEN);
	/* A rest is a drain too: held in wins. */
	breaker_rest_on_response(&b, BREAKER_OUTCOME_BACKPRESSURE, 5, T0);
	assert_int_equal(enforce_wanted_state(&b), BREAKER_CLOSED);

	breaker_hold_set(&b, BREAKER_HOLD_NONE, 0, false);
	assert_int_equal(enforce_wanted_state(&b), BREAKER_OPEN);
	/* Observe only wins over everything, a hold out included. */
	b.observe_only = true;
	assert_int_equal(enforce_wanted_state(&b), BREAKER_CLOSED);
	breaker_hold_set(&b, BREAKER_HOLD_OUT, 0, true);
	assert_int_equal(enforce_wanted_state(&b), BREAKER_CLOSED);
}

static void test_timed_hold_ends(void **state)
{
	(void)state;
	struct breaker b;

	fresh(&b);
	breaker_hold_set(&b, BREAKER_HOLD_OUT, T0 + 2500, true);
	assert_true(b.hold_forced);
	/* To the second, rounded up: never early. */
	assert_int_equal(breaker_hold_until_ms(&b), T0 + 3000);
	assert_int_equal(breaker_wake_deadline(&b), T0 + 3000);
	assert_false(breaker_hold_tick(&b, T0 + 2999));
	assert_int_equal(breaker_hold_left_ms(&b, T0 + 2000), 1000);
	assert_false(breaker_is_forgettable(&b));
	assert_true(breaker_hold_tick(&b, T0 + 3000));
	assert_int_equal(b.hold, BREAKER_HOLD_NONE);
	assert_false(b.hold_forced);
	assert_true(breaker_is_forgettable(&b));
	assert_int_equal(breaker_wake_deadline(&b), BREAKER_NO_DEADLINE);

	/* Until lifted: no deadline, no end. */
	breaker_hold_set(&b, BREAKER_HOLD_IN, 0, true);
	assert_false(b.hold_forced); /* force is for hold out only */
	assert_false(breaker_hold_tick(&b, UINT64_MAX / 2));
	assert_int_equal(breaker_wake_deadline(&b), BREAKER_NO_DEADLINE);
}

static void test_reset(void **state)
{
	(void)state;
	struct breaker b;

	fresh(&b);
	open_it(&b);
	uint32_t trips = b.trips;
	b.observe_only = true;
	breaker_hold_set(&b, BREAKER_HOLD_OUT, 0, false);
	breaker_reset(&b, T0 + 50);
	assert_int_equal(b.state, BREAKER_CLOSED);
	assert_int_equal(b.failure_streak, 0);
	assert_int_equal(b.trips, trips);
	assert_int_equal(b.hold, BREAKER_HOLD_NONE);
	assert_true(b.observe_only); /* the backend's, not the breaker's */
	assert_ptr_equal(b.policy, &policy);
}

static struct operator_hold hold_of(const char *be, const char *srv, enum breaker_hold h,
				    int64_t until)
{
	struct operator_hold o = {.hold = h, .until_wall_ms = until, .since_wall_ms = 5, .uid = 0};
	strcpy(o.backend, be);
	strcpy(o.server, srv);
	return o;
}

static void test_record_and_apply(void **state)
{
	(void)state;
	struct operator_hand h;
	struct operator_hold o;
	struct breaker b;
	char err[256];

	operator_hand_init(&h);
	fresh(&b);
	o = hold_of("be", "s1", BREAKER_HOLD_OUT, 10000);
	assert_true(operator_hand_hold(&h, &o, err, sizeof(err)));
	/* The wall-clock end on the breaker's clock. */
	assert_true(operator_hand_apply(&h, "be", "s1", &b, T0, 4000));
	assert_int_equal(b.hold, BREAKER_HOLD_OUT);
	assert_int_equal(breaker_hold_until_ms(&b), T0 + 6000);
	assert_false(operator_hand_apply(&h, "be", "s1", &b, T0, 4000)); /* nothing new */
	/* Replaced, not added. */
	o = hold_of("be", "s1", BREAKER_HOLD_IN, 0);
	assert_true(operator_hand_hold(&h, &o, err, sizeof(err)));
	assert_int_equal(h.nb_holds, 1);
	/* A hostile name is never recorded. */
	o = hold_of("be", "s1;shutdown", BREAKER_HOLD_OUT, 0);
	assert_false(operator_hand_hold(&h, &o, err, sizeof(err)));
	assert_non_null(strstr(err, "not a server name"));

	assert_true(operator_hand_pause(&h, "be", 7, 0, err, sizeof(err)));
	assert_false(operator_hand_pause(&h, "be", 7, 0, err, sizeof(err)));
	assert_true(operator_hand_observe_only(&h, "be"));
	assert_false(operator_hand_observe_only(&h, "other"));
	assert_true(operator_hand_apply(&h, "be", "s1", &b, T0, 4000));
	assert_true(b.observe_only);
	assert_true(operator_hand_release(&h, 8, 0));
	assert_false(operator_hand_release(&h, 8, 0));
	assert_true(operator_hand_observe_only(&h, "other"));
	/* resume all lifts the release and the pauses, keeps the holds. */
	assert_true(operator_hand_resume_all(&h));
	assert_false(operator_hand_observe_only(&h, "be"));
	assert_int_equal(h.nb_holds, 1);
	assert_false(operator_hand_resume_all(&h));

	o = hold_of("be", "s2", BREAKER_HOLD_OUT, 3000);
	assert_true(operator_hand_hold(&h, &o, err, sizeof(err)));
	assert_int_equal(operator_hand_expire(&h, 3000), 1);
	assert_null(operator_hand_find_hold(&h, "be", "s2"));
	assert_true(operator_hand_unhold(&h, "be", "s1"));
	assert_false(operator_hand_unhold(&h, "be", "s1"));
	operator_hand_free(&h);
}

static void test_text_round_trip(void **state)
{
	(void)state;
	struct operator_hand h, back;
	struct operator_hold o;
	struct strbuf text;
	char err[256];

	operator_hand_init(&h);
	operator_hand_init(&back);
	o = hold_of("be", "s1", BREAKER_HOLD_OUT, 123456);
	o.forced = true;
	o.uid = 1000;
	assert_true(operator_hand_hold(&h, &o, err, sizeof(err)));
	o = hold_of("be.2", "s:9", BREAKER_HOLD_IN, 0);
	assert_true(operator_hand_hold(&h, &o, err, sizeof(err)));
	assert_true(operator_hand_pause(&h, "api", 99, -1, err, sizeof(err)));
	assert_true(operator_hand_release(&h, 100, 0));
	strbuf_init(&text);
	operator_hand_format(&h, &text);
	assert_true(operator_hand_parse(&back, text.data, text.len, err, sizeof(err)));
	assert_int_equal(back.nb_holds, 2);
	assert_int_equal(back.nb_paused, 1);
	assert_true(back.released);
	const struct operator_hold *got = operator_hand_find_hold(&back, "be", "s1");
	assert_non_null(got);
	assert_true(got->forced);
	assert_int_equal(got->until_wall_ms, 123456);
	assert_int_equal(got->uid, 1000);
	assert_int_equal(operator_hand_find_hold(&back, "be.2", "s:9")->hold, BREAKER_HOLD_IN);
	strbuf_free(&text);

	/* Each broken text is refused whole, with its line; back untouched. */
	static const struct {
		const char *text;
		const char *says;
	} bad[] = {
		{"", "empty"},
		{"spoa-breaker operator 2\n", "line 1"},
		{"spoa-breaker operator 1\nhold out be 0 0 0\n", "line 2"},
		{"spoa-breaker operator 1\npause api 1 0\nhold sideways be/s 0 0 0\n", "line 3"},
		{"spoa-breaker operator 1\nhold out be/s;x 0 0 0\n", "line 2: 'be/s;x'"},
		{"spoa-breaker operator 1\nhold out be/s x 0 0\n", "not a number"},
		{"spoa-breaker operator 1\nhold out be/s -5 0 0\n", "not a number"},
		{"spoa-breaker operator 1\npause api 1 0\npause api 1 0\n", "paused already"},
		{"spoa-breaker operator 1\nreleased 1\n", "line 2"},
		{"spoa-breaker operator 1\nhold in be/s 0 0 0 force\n", "line 2"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (operator_hand_parse(&back, bad[i].text, strlen(bad[i].text), err, sizeof(err)) ||
		    !strstr(err, bad[i].says))
			fail_msg("text %zu: said '%s', expected '%s'", i, err, bad[i].says);
	}
	assert_int_equal(back.nb_holds, 2);
	assert_false(operator_hand_parse(&back, "spoa-breaker operator 1\n\0", 25, err, sizeof(err)));
	operator_hand_free(&h);
	operator_hand_free(&back);
}

static void test_commands(void **state)
{
	(void)state;
	struct control_request r;
	char err[256];
#define PARSE(s) control_parse((s), strlen(s), &r, err, sizeof(err))

	assert_true(PARSE("show breakers"));
	assert_int_equal(r.verb, CONTROL_SHOW_BREAKERS);
	assert_true(PARSE("  show   breakers  be/s1 json "));
	assert_string_equal(r.backend, "be");
	assert_string_equal(r.server, "s1");
	assert_true(r.json);
	assert_true(PARSE("show breakers be"));
	assert_string_equal(r.server, "");
	assert_true(PARSE("hold out be/s1 for 10m force"));
	assert_int_equal(r.hold, BREAKER_HOLD_OUT);
	assert_int_equal(r.for_ms, 600000);
	assert_true(r.force);
	assert_true(PARSE("hold out be/s1 --force"));
	assert_true(r.force);
	assert_true(PARSE("hold in be/s1"));
	assert_int_equal(r.for_ms, 0);
	assert_true(PARSE("unhold be/s1"));
	assert_true(PARSE("reset be/s1"));
	assert_true(PARSE("pause be"));
	assert_int_equal(r.verb, CONTROL_PAUSE);
	assert_true(PARSE("resume be"));
	assert_int_equal(r.verb, CONTROL_RESUME);
	assert_true(PARSE("release all"));
	assert_true(PARSE("resume all\r"));
	assert_int_equal(r.verb, CONTROL_RESUME_ALL);
	assert_true(PARSE("help"));

	static const struct {
		const char *line;
		const char *says;
	} bad[] = {
		{"", "empty"},
		{"frobnicate", "unknown command"},
		{"hold in be/s1 force", "hold out only"},
		{"hold out be", "with a '/'"},
		{"hold out be/s1 for ever", "not a duration"},
		{"hold out be/s1 for 8d", "not a duration"},
		{"hold out be/s1 for 0s", "not a duration"},
		{"hold out be/s1 now", "unexpected word"},
		{"hold out be/s1;shutdown", "not one HAProxy accepts"},
		{"hold out be/s1 ;show", "unexpected word"},
		{"pause be/s1", "takes a backend"},
		{"resume be/s1", "takes a backend"},
		{"release be", "release all"},
		{"show breakers a b c", "unexpected word"},
		{"a b c d e f g h i", "too many words"},
		{"show\x01breakers", "control character"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (PARSE(bad[i].line) || !strstr(err, bad[i].says))
			fail_msg("line %zu '%s': said '%s', expected '%s'", i, bad[i].line, err,
				 bad[i].says);
	}
	char longest[CONTROL_LINE_MAX + 2];
	memset(longest, 'x', sizeof(longest));
	assert_false(control_parse(longest, sizeof(longest), &r, err, sizeof(err)));
	assert_non_null(strstr(err, "longer than"));
	/* A name with a NUL inside is no name. */
	assert_false(control_parse("pause b\0e", 9, &r, err, sizeof(err)));
#undef PARSE
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wanted_state),     cmocka_unit_test(test_timed_hold_ends),
		cmocka_unit_test(test_reset),            cmocka_unit_test(test_record_and_apply),
		cmocka_unit_test(test_text_round_trip),  cmocka_unit_test(test_commands),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
