/*
 * observe.h - the `breaker-observe` SPOE message: one upstream response,
 * judged and recorded by the breaker of its server.
 *
 * Arguments (by name; unknown extra arguments are ignored):
 *   be      STRING  the backend (be_name)
 *   srv     STRING  the server (srv_name)
 *   status  INT     the worker's HTTP status (status)
 *   retry_after  STRING  optional: the worker's Retry-After header
 *                        (res.fhdr(retry-after)); delta-seconds on a
 *                        capacity status rest its server (core/rest.c);
 *                        absent, empty or NULL asks for nothing, an
 *                        HTTP-date or anything else is counted and
 *                        ignored - never a reason to refuse the message
 * Variables returned (txn scope; HAProxy adds the var-prefix):
 *   upstream_status  INT     the worker's status
 *   outcome          STRING  success | client_error | backpressure | failure | ignored
 *   state            STRING  closed | open | half_open, after this observation
 *   failures         INT     the consecutive-failure streak, after it
 *   transition       STRING  e.g. "closed->open", only when this observation caused one
 *   ejection_capped  INT     1, only while open and held in rotation by the ejection cap
 *   retry_after      INT     whole seconds until it may let traffic in, only while open
 *   error            STRING  only when the message could not be used; then
 *                            nothing else is set and no breaker changes
 * Each but `error` only when the agent's ack_variables lists it: every
 * set-var costs HAProxy time on every request, so a configuration that
 * reads only `state` asks for only `state`. `error` is always sent.
 */
#ifndef SPOA_OBSERVE_H
#define SPOA_OBSERVE_H

#include "breakers/bus.h"
#include "core/breaker.h"
#include "spop/dispatch.h"

#define OBSERVE_MESSAGE_NAME "breaker-observe"

/* The variables an ACK may carry, as bits of observe_ctx.ack_vars (the
 * configuration's ack_variables names them, config/keys.c). */
enum observe_var {
	OBSERVE_VAR_UPSTREAM_STATUS = 1u << 0,
	OBSERVE_VAR_OUTCOME = 1u << 1,
	OBSERVE_VAR_STATE = 1u << 2,
	OBSERVE_VAR_FAILURES = 1u << 3,
	OBSERVE_VAR_TRANSITION = 1u << 4,
	OBSERVE_VAR_EJECTION_CAPPED = 1u << 5,
	OBSERVE_VAR_RETRY_AFTER = 1u << 6,
};
#define OBSERVE_VARS_ALL 0x7fu

/* What the HAProxy link decided for a breaker at a record, handed back
 * to whoever recorded it: the breaker-observe answer says so
 * (ejection_capped). */
enum observe_drain {
	OBSERVE_DRAIN_NOT_HELD, /* drained, or no drain wanted, or no link at all */
	OBSERVE_DRAIN_CAPPED,   /* open or half-open, kept in full rotation by the backend's ejection cap */
};

/* The HAProxy link's whole answer to one record (link/enforcer.h,
 * enforcer_publish()), returned up the call chain to whoever recorded it:
 * observe_answer() puts both in its reply, and the SPOP connection holds
 * the ACK with the ticket (spop/conn.c). */
struct drain_answer {
	enum observe_drain drain;
	/* 0: the answer to the record's response may go at once. Else the
	 * response made its server watched, and its ACK waits until the
	 * HAProxy link settles this ticket (the `add map` landed or failed,
	 * link/ack_hold.h). Tickets settle in order: a later one covers an
	 * earlier one. */
	uint64_t ack_ticket;
};

/* What the handler needs from its surroundings, all borrowed. */
struct observe_ctx {
	struct breaker_table *table;
	unsigned ack_vars; /* enum observe_var bits: what an answer sets */
	uint64_t refused; /* observations answered with `error` */
	/* Messages of an HAProxy in steady-state mode (`mode=str(steady)`):
	 * it notifies only what can change a breaker, so a success reaches a
	 * dirty breaker only while someone keeps its watched map. */
	uint64_t steady_messages;
	/* Retry-After values of capacity statuses not honoured: HTTP-dates,
	 * and values that are neither seconds nor a date. */
	uint64_t retry_after_dates;
	uint64_t retry_after_invalid;
	/* No look at HAProxy's counters tells whether a worker that sent a
	 * Retry-After answers anything else (no Runtime API: agent-check
	 * mode, where every response is notified): its second word with no
	 * success between starts the rest (core/rest.c). */
	bool words_confirm_words;
};

/* One message, recorded by its server's breaker: the record to publish
 * (the cause: a response, with its outcome, status and time). */
struct observe_record {
	struct breaker_table_entry *entry;
	struct breaker_event ev;
	struct breaker_cause cause;
};

/*
 * The handler is two halves, so that whoever registers it (the daemon,
 * daemon/observe_route.c) calls the HAProxy link between them by name:
 *
 * observe_record() validates the message, finds its server's breaker,
 * classifies the status under its policy and records it (the worker's
 * Retry-After beside it). False when the message cannot be used: the
 * reply then says why in `error`, and no breaker changed.
 *
 * observe_answer() then puts in the reply the variables HAProxy's
 * configuration reads (ack_vars), with what the link decided: the
 * ejection cap's hold in `ejection_capped`, the ACK's ticket in
 * reply->ack_ticket (a later ticket covers an earlier one).
 */
bool observe_record(struct observe_ctx *o, const struct spop_message *msg,
		    struct dispatch_reply *reply, struct observe_record *rec);
void observe_answer(const struct observe_ctx *o, struct dispatch_reply *reply,
		    const struct observe_record *rec, struct drain_answer link);

#endif /* SPOA_OBSERVE_H */
