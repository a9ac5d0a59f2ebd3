/*
 * stall_watch.c - the stalled rule: a hung worker (it accepts requests and
 * never answers) found from HAProxy's looks, before `timeout server`
 * expires on it. Pure: no clock, no I/O; the HAProxy link looks and calls
 * in.
 *
 * The failure rules learn of a hung worker only from its first timeouts,
 * `timeout server` after it hung; every request sent there meanwhile is
 * lost. What shows sooner is the shape of its traffic: requests in flight
 * and none answered, while its neighbours answer theirs.
 *
 * Off by default, and meant for fleets whose responses have a known upper
 * bound: a worker that generates text for tens of seconds is legitimately
 * "in flight, unanswered" all that time. The bound covers the whole
 * exchange: HAProxy counts a response at its head, so a stream (or a
 * WebSocket tunnel) that outlasts stalled_after, with no other answer
 * from its server meanwhile, looks the same as a hang. And always relative to the
 * neighbours: when the whole backend stops answering (a shared dependency
 * down, a global overload), no one worker is at fault, and draining them
 * one by one would only make the outage total.
 */
#include "core/breaker.h"

/*
 * Conservative on both ends. The watch starts at the first look that sees
 * requests in flight with no response since the previous one - the
 * requests may be older, never younger - so a request is in flight at
 * least as long as the watch says, and the rule never fires early. It
 * stops at any response, or a look with nothing in flight: a request
 * after an idle stretch starts a new watch, and a worker that answers now
 * and then, however slowly, is never stalled. Between two looks a request
 * may end without an answer (an error, a client that gave up): that is no
 * sign of life, so the watch goes on.
 */
void stall_watch_look(struct stall_watch *w, bool in_flight, bool answered, uint64_t now_ms)
{
	if (!in_flight || answered)
		w->since_ms = 0;
	else if (w->since_ms == 0)
		w->since_ms = now_ms != 0 ? now_ms : 1; /* 0 means "not watching" */
}

bool breaker_is_stalled(const struct breaker *b, const struct stall_watch *w, uint64_t now_ms,
			uint64_t others_succeeded_ms)
{
	const struct breaker_policy *p = b->policy;

	if (!p || p->stalled_after_ms == 0 || w->since_ms == 0 || b->state == BREAKER_OPEN)
		return false;
	/* A state is judged on its own time: requests hung before a trip
	 * are no verdict on the half-open that follows, however long they
	 * stay until `timeout server` ends them. */
	uint64_t since = w->since_ms > b->state_since_ms ? w->since_ms : b->state_since_ms;
	/* Strictly after: a neighbour's answer stamped at the very look that
	 * started the watch may predate this server's requests. The same
	 * reason a whole backend that hangs at once never trips: its last
	 * answers all come before every watch began. */
	return now_ms >= since && now_ms - since >= p->stalled_after_ms &&
	       others_succeeded_ms > since;
}
