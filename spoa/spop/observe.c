/*
 * observe.c - handler of the `breaker-observe` message (see observe.h).
 *
 * Turns one message into one breaker sample: validate the arguments, find
 * the server's breaker, classify the status under its policy, record the
 * outcome (observe_record); then, once the HAProxy link has acted on it,
 * answer with the variables HAProxy's configuration uses (observe_answer:
 * the agent's ack_variables, those it listed, `error` always).
 */
#include <string.h>

#include "util/names.h"
#include "spop/observe.h"

/* The arguments the handler reads; NULL when the message lacks one. */
struct observe_args {
	const struct spop_data *be, *srv, *status;
	const struct spop_data *mode; /* "steady" from spoe-breaker-steady.conf */
	const struct spop_data *retry_after; /* res.fhdr(retry-after) */
};

static bool arg_is(struct spop_slice name, const char *literal, size_t len)
{
	return name.len == len && memcmp(name.ptr, literal, len) == 0;
}

#define ARG_IS(name, literal) arg_is(name, literal, sizeof(literal) - 1)

/* One pass over the arguments, the lengths known from the message: the
 * first of each name counts, as a lookup by name would find it. */
static void collect_args(const struct spop_message *msg, struct observe_args *args)
{
	*args = (struct observe_args){0};
	for (unsigned i = 0; i < msg->nb_stored; i++) {
		const struct spop_kv *kv = &msg->args[i];
		if (!args->be && ARG_IS(kv->name, "be"))
			args->be = &kv->value;
		else if (!args->srv && ARG_IS(kv->name, "srv"))
			args->srv = &kv->value;
		else if (!args->status && ARG_IS(kv->name, "status"))
			args->status = &kv->value;
		else if (!args->mode && ARG_IS(kv->name, "mode"))
			args->mode = &kv->value;
		else if (!args->retry_after && ARG_IS(kv->name, "retry_after"))
			args->retry_after = &kv->value;
	}
}

/* A name argument: a STRING HAProxy could have produced. NULL otherwise,
 * with *why saying what was wrong. */
static const struct spop_slice *name_arg(const struct spop_data *d, const char *arg,
					 const char **why)
{
	if (!d) {
		*why = arg[0] == 'b' ? "missing argument: be" : "missing argument: srv";
		return NULL;
	}
	if (d->type != SPOP_DATA_STRING ||
	    !name_is_valid((const char *)d->u.bytes.ptr, d->u.bytes.len)) {
		*why = arg[0] == 'b' ? "argument be is not a valid backend name"
				     : "argument srv is not a valid server name";
		return NULL;
	}
	return &d->u.bytes;
}

/* The retry_after argument as the rest rule reads it. A missing argument
 * and HAProxy's NULL (no such header) ask for nothing; so does an empty
 * one. A string is the header's text; an integer is taken as seconds (a
 * configuration may convert it, `res.fhdr(retry-after),toint`), a negative
 * one is invalid. Anything else is invalid. Never a reason to refuse the
 * message: the status is judged whatever the header says. */
static enum retry_after_kind retry_after_arg(const struct spop_data *d, uint64_t *seconds)
{
	int64_t v;

	*seconds = 0;
	if (!d || d->type == SPOP_DATA_NULL)
		return RETRY_AFTER_ABSENT;
	if (d->type == SPOP_DATA_STRING || d->type == SPOP_DATA_BINARY)
		return retry_after_parse((const char *)d->u.bytes.ptr, d->u.bytes.len, seconds);
	if (spop_data_to_int64(d, &v) && v >= 0) {
		*seconds = (uint64_t)v;
		return RETRY_AFTER_SECONDS;
	}
	return RETRY_AFTER_INVALID;
}

/* What a capacity status's Retry-After makes of its server's rest; the
 * values that cannot be honoured are counted by kind. */
static enum breaker_rest_change note_retry_after(struct observe_ctx *o, struct breaker *b,
						 const struct spop_data *arg,
						 enum breaker_outcome outcome, uint64_t now)
{
	/* A worker that answers is not refusing everything: its word, if
	 * one is kept, is dropped (breaker_rest_word()). */
	if (outcome == BREAKER_OUTCOME_SUCCESS)
		return breaker_rest_answered(b);
	if (outcome != BREAKER_OUTCOME_BACKPRESSURE)
		return BREAKER_REST_UNCHANGED; /* any other status's header means nothing here */
	uint64_t seconds;
	switch (retry_after_arg(arg, &seconds)) {
	case RETRY_AFTER_SECONDS:
		/* A word with one kept before it and no success between (a
		 * success drops it): where no look at HAProxy's counters
		 * confirms words, that is the worker refusing everything. */
		if (o->words_confirm_words && breaker_rest_word_kept(b))
			return breaker_rest_confirm(b, now) == BREAKER_REST_STARTED
				       ? BREAKER_REST_STARTED
				       : breaker_rest_word(b, outcome, seconds, now);
		return breaker_rest_word(b, outcome, seconds, now);
	case RETRY_AFTER_DATE:
		/* A date needs the worker's clock and ours to agree; the
		 * workers that shed load send seconds. */
		o->retry_after_dates++;
		return BREAKER_REST_UNCHANGED;
	case RETRY_AFTER_INVALID:
		o->retry_after_invalid++;
		return BREAKER_REST_UNCHANGED;
	case RETRY_AFTER_ABSENT:
		break;
	}
	return BREAKER_REST_UNCHANGED;
}

static void refuse(struct observe_ctx *o, struct dispatch_reply *reply, const char *why)
{
	o->refused++;
	dispatch_set_string(reply, "error", why);
}

bool observe_record(struct observe_ctx *o, const struct spop_message *msg,
		    struct dispatch_reply *reply, struct observe_record *rec)
{
	const char *why = NULL;
	int64_t status;

	struct observe_args args;
	collect_args(msg, &args);
	/* Counted before any check: HAProxy sends only some responses, and
	 * whether someone keeps its watched map is judged from this. */
	if (args.mode && args.mode->type == SPOP_DATA_STRING && args.mode->u.bytes.len == 6 &&
	    memcmp(args.mode->u.bytes.ptr, "steady", 6) == 0)
		o->steady_messages++;

	const struct spop_slice *be = name_arg(args.be, "be", &why);
	const struct spop_slice *srv = be ? name_arg(args.srv, "srv", &why) : NULL;
	if (!srv) {
		refuse(o, reply, why);
		return false;
	}

	const struct spop_data *status_arg = args.status;
	if (!status_arg) {
		refuse(o, reply, "missing argument: status");
		return false;
	}
	/* A NULL is what HAProxy sends when the sample does not exist. */
	if (!spop_data_to_int64(status_arg, &status) || status < 100 || status > 599) {
		refuse(o, reply, "argument status is not an HTTP status");
		return false;
	}

	/* HAProxy sends for a backend the configuration leaves out: said in
	 * the answer's error, never judged. */
	if (!breaker_policies_guard(&o->table->policies, (const char *)be->ptr, be->len,
				    (const char *)srv->ptr, srv->len)) {
		refuse(o, reply, "backend not guarded (guarded = false)");
		return false;
	}

	uint64_t now = reply->now_ms;
	enum breaker_table_status found;
	struct breaker_table_entry *entry =
		breaker_table_get(o->table, (const char *)be->ptr, be->len, (const char *)srv->ptr,
				  srv->len, now, &found);
	if (!entry) {
		refuse(o, reply, found == BREAKER_TABLE_FULL ? "breaker table full"
							    : "invalid backend or server name");
		return false;
	}

	struct breaker *b = &entry->breaker;
	enum breaker_outcome outcome = breaker_outcome(b->policy, (int)status);
	rec->entry = entry;
	rec->ev = breaker_table_record_response(o->table, entry, outcome, now);
	/* The worker's word on when to come back, beside the breaker's
	 * judgement: published with it, so the link drains a resting
	 * server in the same step as an opening one. */
	rec->ev.rest = note_retry_after(o, b, args.retry_after, outcome, now);
	rec->cause = (struct breaker_cause){.kind = BREAKER_CAUSE_RESPONSE,
					    .outcome = outcome,
					    .status = (int)status,
					    .now_ms = now};
	return true;
}

void observe_answer(const struct observe_ctx *o, struct dispatch_reply *reply,
		    const struct observe_record *rec, struct drain_answer link)
{
	const struct breaker *b = &rec->entry->breaker;
	int64_t status = rec->cause.status;
	uint64_t now = rec->cause.now_ms;

	if (link.ack_ticket > reply->ack_ticket)
		reply->ack_ticket = link.ack_ticket; /* a later ticket covers an earlier one */

	/* One bit test per variable: the list was settled when the
	 * configuration was read, nothing is looked up by name here. An
	 * answer left empty by the list is still an ACK with an action
	 * (dispatch unsets `error`). */
	unsigned vars = o->ack_vars;
	if (vars & OBSERVE_VAR_UPSTREAM_STATUS)
		dispatch_set_int(reply, "upstream_status", status);
	if (vars & OBSERVE_VAR_OUTCOME)
		dispatch_set_string(reply, "outcome", breaker_outcome_name(rec->cause.outcome));
	if (vars & OBSERVE_VAR_STATE)
		dispatch_set_string(reply, "state", breaker_state_name(b->state));
	if (vars & OBSERVE_VAR_FAILURES)
		dispatch_set_int(reply, "failures", b->failure_streak);
	if ((vars & OBSERVE_VAR_TRANSITION) && breaker_event_is_transition(&rec->ev))
		dispatch_set_string(reply, "transition", breaker_transition_name(&rec->ev));
	if ((vars & OBSERVE_VAR_EJECTION_CAPPED) && b->state != BREAKER_CLOSED &&
	    link.drain == OBSERVE_DRAIN_CAPPED)
		dispatch_set_int(reply, "ejection_capped", 1);
	if (vars & OBSERVE_VAR_RETRY_AFTER) {
		int64_t retry_after = breaker_retry_after_s(b, now);
		if (retry_after >= 0)
			dispatch_set_int(reply, "retry_after", retry_after);
	}
}
