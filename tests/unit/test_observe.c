/*
 * test_observe.c - the breaker-observe answer as HAProxy receives it: a
 * NOTIFY in, through dispatch, an ACK out, decoded back into the variables
 * it sets. Pins what ack_variables selects: every variable by default,
 * only the listed ones otherwise, `error` whatever the list, and never an
 * empty ACK.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/keys.h"
#include "spop/observe.h"

#define T0 5000000
#define MAX_FRAME 16384
#define LOOP_BOUND 1000

/* The actions of one ACK, their names as C strings. */
struct answer {
	unsigned nb;
	char names[16][32];
	enum spop_action_type types[16];
};

struct fixture {
	struct breaker_table table;
	struct observe_ctx observe;
	struct dispatch dispatch;
	bool cap_ejections; /* the link's decision the handler is told of */
	uint64_t ack_ticket; /* ... and the ticket it hands back */
	uint64_t ack_ticket_heard; /* what the dispatch answered with */
	unsigned link_heard; /* records the stand-in link heard */
};

/* The HAProxy link's stand-in: it hears the record and answers. */
static struct drain_answer link_hears(struct fixture *f, const struct observe_record *rec)
{
	assert_int_equal(rec->cause.kind, BREAKER_CAUSE_RESPONSE);
	f->link_heard++;
	return (struct drain_answer){
		.drain = f->cap_ejections ? OBSERVE_DRAIN_CAPPED : OBSERVE_DRAIN_NOT_HELD,
		.ack_ticket = f->ack_ticket};
}

/* The running agent's route (daemon/observe_route.c), with the stand-in
 * in the place of the link: recorded, heard, answered. */
static void handle(void *ctx, const struct spop_message *msg, struct dispatch_reply *reply)
{
	struct fixture *f = ctx;
	struct observe_record rec;

	if (!observe_record(&f->observe, msg, reply, &rec))
		return;
	observe_answer(&f->observe, reply, &rec, link_hears(f, &rec));
}

static void setup(struct fixture *f, unsigned ack_vars)
{
	char err[256];
	memset(f, 0, sizeof(*f));
	assert_true(breaker_table_init(&f->table, 16, err, sizeof(err)));
	f->observe = (struct observe_ctx){.table = &f->table, .ack_vars = ack_vars};
	dispatch_init(&f->dispatch);
	assert_true(dispatch_register(&f->dispatch, OBSERVE_MESSAGE_NAME, handle, f));
}

static void teardown(struct fixture *f)
{
	breaker_table_free(&f->table);
}

/* One response of status from workers/w1 (srv NULL: a message without
 * srv; mode NULL: no mode argument; retry_after NULL: no such argument),
 * answered and decoded. */
static struct answer observe_full(struct fixture *f, const char *srv, int status,
				  const char *mode, const struct spop_data *retry_after)
{
	uint8_t payload[512], out[MAX_FRAME];
	struct spop_writer pw, w;
	spop_writer_init(&pw, payload, sizeof(payload));
	spop_put_message_header(&pw, OBSERVE_MESSAGE_NAME, strlen(OBSERVE_MESSAGE_NAME),
				(srv ? 3 : 2) + (mode ? 1 : 0) + (retry_after ? 1 : 0));
	struct spop_data be = spop_data_string("workers", 7);
	spop_put_kv(&pw, "be", &be);
	if (srv) {
		struct spop_data s = spop_data_string(srv, strlen(srv));
		spop_put_kv(&pw, "srv", &s);
	}
	struct spop_data st = spop_data_sint(status);
	spop_put_kv(&pw, "status", &st);
	if (mode) {
		struct spop_data m = spop_data_string(mode, strlen(mode));
		spop_put_kv(&pw, "mode", &m);
	}
	if (retry_after)
		spop_put_kv(&pw, "retry_after", retry_after);
	assert_false(pw.overflow);

	struct spop_frame notify = {.type = SPOP_FRAME_NOTIFY, .flags = SPOP_FLAG_FIN,
				    .stream_id = 1, .frame_id = 1,
				    .payload = {.ptr = payload, .len = pw.len}};
	spop_writer_init(&w, out, sizeof(out));
	const char *why = NULL;
	assert_true(dispatch_notify(&f->dispatch, &notify, &w, MAX_FRAME, T0, &why,
				    &f->ack_ticket_heard));

	struct spop_frame ack;
	struct spop_error err;
	assert_int_equal(spop_frame_decode(out, w.len, MAX_FRAME, &ack, &err), (ssize_t)w.len);
	assert_int_equal(ack.type, SPOP_FRAME_ACK);

	struct answer a = {0};
	const uint8_t *p = ack.payload.ptr;
	size_t left = ack.payload.len;
	while (left > 0) {
		struct spop_action act;
		ssize_t n = spop_action_decode(p, left, &act);
		assert_true(n > 0);
		assert_true(a.nb < 16 && act.name.len < sizeof(a.names[0]));
		memcpy(a.names[a.nb], act.name.ptr, act.name.len);
		a.names[a.nb][act.name.len] = '\0';
		a.types[a.nb++] = act.type;
		p += n;
		left -= (size_t)n;
	}
	return a;
}

static struct answer observe_mode(struct fixture *f, const char *srv, int status,
				  const char *mode)
{
	return observe_full(f, srv, status, mode, NULL);
}

static struct answer observe(struct fixture *f, const char *srv, int status)
{
	return observe_mode(f, srv, status, NULL);
}

/* "a,b,c": the variables set, in the order sent. */
static const char *set_list(const struct answer *a)
{
	static char buf[512];
	size_t n = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < a->nb; i++)
		if (a->types[i] == SPOP_ACTION_SET_VAR)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? "," : "",
					      a->names[i]);
	return buf;
}

/* Failures until the breaker opens; the answer to the one that opened it,
 * with the ejection cap holding the server in rotation. */
static struct answer answer_to_trip(struct fixture *f)
{
	f->cap_ejections = true;
	for (unsigned i = 0; i < LOOP_BOUND; i++) {
		struct answer a = observe(f, "w1", 500);
		struct breaker_table_entry *e = breaker_table_find(&f->table, "workers", 7, "w1", 2);
		assert_non_null(e);
		if (e->breaker.state == BREAKER_OPEN)
			return a;
	}
	fail_msg("the breaker never opened");
	return (struct answer){0};
}

/* ---- the table: (ack_vars) -> (variables set by a success, by the trip) ---- */

static const struct {
	const char *rule;
	unsigned vars;
	const char *on_success;
	const char *on_trip;
} selections[] = {
	{"default: every variable, as before the key existed", OBSERVE_VARS_ALL,
	 "upstream_status,outcome,state,failures",
	 "upstream_status,outcome,state,failures,transition,ejection_capped,retry_after"},
	{"state only: what the shipped haproxy.cfg routes on", OBSERVE_VAR_STATE, "state",
	 "state"},
	{"a subset keeps the handler's order", OBSERVE_VAR_RETRY_AFTER | OBSERVE_VAR_OUTCOME,
	 "outcome", "outcome,retry_after"},
	{"the conditional ones stay conditional",
	 OBSERVE_VAR_TRANSITION | OBSERVE_VAR_EJECTION_CAPPED, "", "transition,ejection_capped"},
	{"none: nothing set", 0, "", ""},
};

static void test_selection_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(selections) / sizeof(selections[0]); i++) {
		struct fixture f;
		setup(&f, selections[i].vars);
		struct answer a = observe(&f, "w1", 200);
		if (strcmp(set_list(&a), selections[i].on_success) != 0)
			fail_msg("%s: a success set \"%s\", expected \"%s\"", selections[i].rule,
				 set_list(&a), selections[i].on_success);
		a = answer_to_trip(&f);
		if (strcmp(set_list(&a), selections[i].on_trip) != 0)
			fail_msg("%s: the trip set \"%s\", expected \"%s\"", selections[i].rule,
				 set_list(&a), selections[i].on_trip);
		teardown(&f);
	}
}

/* HAProxy 3.1 waits out timeout processing on an ACK without an action:
 * whatever the list leaves out, the answer carries one. */
static void test_never_empty(void **state)
{
	(void)state;
	struct fixture f;
	setup(&f, 0);
	struct answer a = observe(&f, "w1", 200);
	assert_int_equal(a.nb, 1);
	assert_int_equal(a.types[0], SPOP_ACTION_UNSET_VAR);
	assert_string_equal(a.names[0], "error");
	teardown(&f);

	/* A list whose variables this answer has no reason to set. */
	setup(&f, OBSERVE_VAR_TRANSITION);
	a = observe(&f, "w1", 200);
	assert_int_equal(a.nb, 1);
	assert_int_equal(a.types[0], SPOP_ACTION_UNSET_VAR);
	teardown(&f);
}

/* An unusable message is answered with `error` whatever the list says. */
static void test_error_always_sent(void **state)
{
	(void)state;
	const unsigned lists[] = {OBSERVE_VARS_ALL, OBSERVE_VAR_STATE, 0};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		struct fixture f;
		setup(&f, lists[i]);
		struct answer a = observe(&f, NULL, 200);
		assert_string_equal(set_list(&a), "error");
		assert_int_equal(f.link_heard, 0); /* recorded by nobody: the link hears nothing */
		a = observe(&f, "w1", 200);
		assert_int_equal(f.link_heard, 1);
		teardown(&f);
	}
}

/* The ticket the HAProxy link hands back with its answer is what the
 * dispatch answers the NOTIFY with (the connection holds the ACK with
 * it); a refused message was never published, so it carries none. */
static void test_the_ack_ticket_reaches_the_dispatch(void **state)
{
	struct fixture f;
	(void)state;

	setup(&f, OBSERVE_VARS_ALL);
	observe(&f, "w1", 200);
	assert_int_equal(f.ack_ticket_heard, 0);
	f.ack_ticket = 7;
	observe(&f, "w1", 200);
	assert_int_equal(f.ack_ticket_heard, 7);
	observe(&f, NULL, 200);
	assert_int_equal(f.ack_ticket_heard, 0);
	teardown(&f);
}

/* The configuration's words are the names the handler sends: each word
 * alone selects exactly the variable of that name. */
static void test_config_words_are_the_variables(void **state)
{
	(void)state;
	const struct config_key *k = config_key_find("ack_variables");
	assert_non_null(k);
	unsigned single = 0;
	for (const struct config_word *w = k->words; w->word; w++) {
		unsigned v = (unsigned)w->value;
		if (v == 0 || (v & (v - 1)) != 0)
			continue;
		single |= v;
		struct fixture f;
		setup(&f, v);
		struct answer a = answer_to_trip(&f);
		assert_string_equal(set_list(&a), w->word);
		teardown(&f);
	}
	assert_int_equal(single, OBSERVE_VARS_ALL);
}

/* Steady-state mode's messages are counted (daemon/steady_watch.h judges
 * from the count), whatever else they carry; others are not. */
static void test_steady_messages_counted(void **state)
{
	(void)state;
	struct fixture f;
	setup(&f, 0);
	observe(&f, "w1", 500);
	observe_mode(&f, "w1", 500, "every");
	observe_mode(&f, "w1", 500, "steadyx");
	assert_int_equal(f.observe.steady_messages, 0);
	observe_mode(&f, "w1", 500, "steady");
	observe_mode(&f, "w1", 200, "steady");
	observe_mode(&f, NULL, 500, "steady"); /* refused, still in steady-state mode */
	assert_int_equal(f.observe.steady_messages, 3);
	/* The argument changes nothing else: only the message without srv
	 * was refused. */
	assert_int_equal(f.observe.refused, 1);
	teardown(&f);
}

/* The retry_after argument: (status, its value) -> (w1 resting how long,
 * counted as a date, counted as invalid). Never a refusal: the status is
 * judged whatever the header says. */
static void test_retry_after_argument(void **state)
{
	(void)state;
	static const struct spop_data null_arg = {.type = SPOP_DATA_NULL};
	const struct spop_data two = spop_data_string("2", 1), spaced = spop_data_string(" 3 ", 3),
			       empty = spop_data_string("", 0), as_int = spop_data_sint(4),
			       negative = spop_data_sint(-4), huge = spop_data_string("3600", 4),
			       date = spop_data_string("Wed, 21 Oct 2015 07:28:00 GMT", 29),
			       garbage = spop_data_string("soon", 4), flag = spop_data_bool(true);
	static const struct spop_data *none = NULL;
	const struct {
		int status;
		const struct spop_data *arg;
		uint64_t rest_ms;
		uint64_t dates, invalid;
	} cases[] = {
		{503, &two, 2000, 0, 0},
		{429, &spaced, 3000, 0, 0},
		{503, &as_int, 4000, 0, 0},  /* res.fhdr(retry-after),toint */
		{503, &huge, 10000, 0, 0},   /* bounded by the default retry_after_max */
		{503, none, 0, 0, 0},        /* no argument: an older SPOE file */
		{503, &null_arg, 0, 0, 0},   /* no header */
		{503, &empty, 0, 0, 0},
		{503, &date, 0, 1, 0},
		{503, &garbage, 0, 0, 1},
		{503, &negative, 0, 0, 1},
		{503, &flag, 0, 0, 1},
		/* Not a capacity status: the header is not read at all. */
		{200, &two, 0, 0, 0},
		{500, &two, 0, 0, 0},
		{500, &garbage, 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture f;
		setup(&f, OBSERVE_VARS_ALL);
		struct answer a = observe_full(&f, "w1", cases[i].status, NULL, cases[i].arg);
		for (unsigned k = 0; k < a.nb; k++)
			if (strcmp(a.names[k], "error") == 0 && a.types[k] == SPOP_ACTION_SET_VAR)
				fail_msg("case %zu: refused", i);
		struct breaker_table_entry *e = breaker_table_find(&f.table, "workers", 7, "w1", 2);
		assert_non_null(e);
		/* The word is kept, not yet a rest: the look that finds no
		 * success since turns it into one, of what it asked. */
		assert_false(breaker_is_resting(&e->breaker));
		breaker_rest_confirm(&e->breaker, T0);
		if (breaker_rest_left_ms(&e->breaker, T0) != cases[i].rest_ms ||
		    f.observe.retry_after_dates != cases[i].dates ||
		    f.observe.retry_after_invalid != cases[i].invalid)
			fail_msg("case %zu: rest %llu ms, dates %llu, invalid %llu", i,
				 (unsigned long long)breaker_rest_left_ms(&e->breaker, T0),
				 (unsigned long long)f.observe.retry_after_dates,
				 (unsigned long long)f.observe.retry_after_invalid);
		/* Busy is not dead, rest or none. */
		if (cases[i].status != 500)
			assert_int_equal(e->breaker.failure_streak, 0);
		assert_int_equal(f.observe.refused, 0);
		teardown(&f);
	}
}

/* The word and the worker's answers over SPOP: a success drops a kept
 * word; where no look confirms words, a second word with nothing but
 * capacity statuses since starts the rest; where looks do, it does not. */
static void test_words_over_spop(void **state)
{
	(void)state;
	const struct spop_data two = spop_data_string("2", 1);
	for (int by_words = 0; by_words <= 1; by_words++) {
		struct fixture f;
		setup(&f, OBSERVE_VARS_ALL);
		f.observe.words_confirm_words = by_words;
		observe_full(&f, "w1", 503, NULL, &two);
		struct breaker_table_entry *e = breaker_table_find(&f.table, "workers", 7, "w1", 2);
		assert_non_null(e);
		assert_true(breaker_rest_word_kept(&e->breaker));
		/* A success: the worker answers, the word goes. */
		observe_full(&f, "w1", 200, NULL, NULL);
		assert_false(breaker_rest_word_kept(&e->breaker));
		assert_false(breaker_is_resting(&e->breaker));
		/* Two words in a row, nothing else between. */
		observe_full(&f, "w1", 503, NULL, &two);
		observe_full(&f, "w1", 429, NULL, &two);
		assert_int_equal(breaker_is_resting(&e->breaker), by_words);
		assert_int_equal(e->breaker.rests, by_words);
		assert_int_equal(breaker_rest_word_kept(&e->breaker), !by_words);
		teardown(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_selection_table),
		cmocka_unit_test(test_never_empty),
		cmocka_unit_test(test_error_always_sent),
		cmocka_unit_test(test_the_ack_ticket_reaches_the_dispatch),
		cmocka_unit_test(test_config_words_are_the_variables),
		cmocka_unit_test(test_steady_messages_counted),
		cmocka_unit_test(test_retry_after_argument),
		cmocka_unit_test(test_words_over_spop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
