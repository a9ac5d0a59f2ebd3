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

/* What the handler needs from its surroundings, all borrowed. */
struct observe_ctx {
	struct breaker_table *table;
	/* Where each recorded observation is published (NULL: recorded,
	 * published to nobody): breakers_publish_response() returns what the
	 * HAProxy link decided for the breaker (struct drain_answer,
	 * breakers/bus.h): the drain goes into the answer's variables, the
	 * ACK's ticket into the reply (dispatch_reply.ack_ticket). */
	struct breakers *breakers;
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

/* The dispatch handler; ctx is a struct observe_ctx. */
void observe_handle(void *ctx, const struct spop_message *msg, struct dispatch_reply *reply);

#endif /* SPOA_OBSERVE_H */
