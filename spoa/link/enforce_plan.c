/*
 * enforce_plan.c - from a breaker's state to HAProxy commands (pure).
 */
#include <stdio.h>
#include <string.h>

#include "link/enforce_plan.h"

/* The server's own maxconn is learned the first time we are about to
 * change it, from what HAProxy reports then; never from our own value. */
static void learn_own_maxconn(const struct enforce_seen *seen, struct enforce_memory *mem)
{
	if (!mem->own_maxconn_known && !mem->maxconn_by_us) {
		mem->own_maxconn = seen->maxconn;
		mem->own_maxconn_known = true;
	}
}

enum breaker_state enforce_wanted_state(const struct breaker *b)
{
	/* The operator's word first (core/operator_hand.h): observing only,
	 * the agent holds nothing, which the closed plan lifts; a hold is
	 * what it says, whatever the breaker judges. */
	if (b->observe_only || b->policy->observe_only || b->hold == BREAKER_HOLD_IN)
		return BREAKER_CLOSED;
	if (b->hold == BREAKER_HOLD_OUT)
		return BREAKER_OPEN;
	return breaker_is_resting(b) ? BREAKER_OPEN : b->state;
}

struct enforce_plan enforce_plan(enum breaker_state want, uint32_t half_open_probes,
				 bool guard_room, const struct enforce_seen *seen,
				 struct enforce_memory *mem)
{
	return enforce_plan_limited(want, half_open_probes, guard_room, 0, seen, mem);
}

struct enforce_plan enforce_plan_limited(enum breaker_state want, uint32_t half_open_probes,
					 bool guard_room, uint32_t capacity_limit,
					 const struct enforce_seen *seen, struct enforce_memory *mem)
{
	struct enforce_plan plan = {0};

	if (!seen->known) {
		plan.hands_off = "HAProxy does not know this server";
		return plan;
	}
	if (seen->maint) {
		/* Maintenance takes no traffic anyway, and lifting it is the
		 * operator's call, never ours. The operator has taken the
		 * server: a drain of the agent's under it is the operator's
		 * from now on (a drain set after the maintenance is theirs,
		 * never one for the agent to lift). */
		mem->drained_by_us = false;
		plan.hands_off = "server in maintenance";
		return plan;
	}
	if (seen->drained && !mem->drained_by_us) {
		plan.hands_off = "server drained by the operator";
		return plan;
	}

	switch (want) {
	case BREAKER_OPEN:
		if (!seen->drained)
			plan.set_drain = true;
		mem->drained_by_us = true;
		break;
	case BREAKER_HALF_OPEN:
		learn_own_maxconn(seen, mem);
		/*
		 * At most half_open_probes requests an episode, hung or not.
		 * maxconn alone lets a hung probe's slot go to the next request
		 * the moment `timeout server` ends it - before any look can
		 * report the timeout - so a hung worker got two probes an
		 * episode. Once a look sees the probes out (scur at the limit),
		 * the server is drained until one of them has an outcome: its
		 * answer closes or reopens the breaker, and a probe that ended
		 * with no outcome (a 503 under half_open_backpressure = ignore)
		 * leaves scur below the limit, so the next look opens the door
		 * again. A probe that hangs for less than poll_interval can
		 * still be followed by a second one. The guard is a drain like
		 * any other: where the ejection cap has no room for it (the
		 * last serving server), the server stays at maxconn only.
		 * And it is for a hung probe: a worker the look saw answer
		 * since the look before is not hung, and a busy one answering
		 * its probes one at a time (at maxconn) is never drained
		 * between two of them - its next answer closes the breaker.
		 */
		if (seen->sessions >= half_open_probes && !seen->answered &&
		    (seen->drained || guard_room)) {
			if (!seen->drained)
				plan.set_drain = true;
			mem->drained_by_us = true;
		} else {
			if (seen->drained)
				plan.set_ready = true;
			mem->drained_by_us = false;
		}
		if (seen->maxconn != half_open_probes) {
			plan.set_maxconn = true;
			plan.maxconn = half_open_probes;
		}
		mem->maxconn_by_us = true;
		break;
	case BREAKER_CLOSED:
		if (seen->drained)
			plan.set_ready = true;
		mem->drained_by_us = false;
		if (capacity_limit != 0) {
			/* The learnt capacity (capacity.h), never above the
			 * server's own maxconn: at or above it, the server's
			 * own is what it gets back. */
			learn_own_maxconn(seen, mem);
			if (mem->own_maxconn == 0 || capacity_limit < mem->own_maxconn) {
				if (seen->maxconn != capacity_limit) {
					plan.set_maxconn = true;
					plan.maxconn = capacity_limit;
				}
				mem->maxconn_by_us = true;
				break;
			}
		}
		if (mem->maxconn_by_us && mem->own_maxconn_known && seen->maxconn != mem->own_maxconn) {
			plan.set_maxconn = true;
			plan.maxconn = mem->own_maxconn;
		}
		mem->maxconn_by_us = false; /* restored by this plan, or never changed */
		break;
	}
	return plan;
}

void enforce_plan_assume_applied(const struct enforce_plan *plan, struct enforce_seen *seen)
{
	if (plan->set_drain)
		seen->drained = true;
	if (plan->set_ready)
		seen->drained = false;
	if (plan->set_maxconn)
		seen->maxconn = plan->maxconn;
}

void enforce_agent_check_answer(enum breaker_state state, uint32_t half_open_probes,
				struct enforce_memory *mem, char *buf, size_t size)
{
	if (!mem) {
		snprintf(buf, size, "up\n");
		return;
	}
	switch (state) {
	case BREAKER_OPEN:
		snprintf(buf, size, "drain\n");
		mem->drained_by_us = true;
		break;
	case BREAKER_HALF_OPEN:
		snprintf(buf, size, "ready maxconn:%u\n", half_open_probes);
		mem->drained_by_us = false;
		mem->maxconn_by_us = true;
		break;
	case BREAKER_CLOSED:
		if (mem->drained_by_us || mem->maxconn_by_us)
			snprintf(buf, size, "ready maxconn:0\n");
		else
			snprintf(buf, size, "up\n");
		mem->drained_by_us = false;
		mem->maxconn_by_us = false;
		break;
	}
}

struct enforce_release_decision enforce_release_stalled(const struct breaker *b,
							uint32_t pending_trip, bool capped,
							const char *hands_off)
{
	struct enforce_release_decision d = {ENFORCE_RELEASE_NONE, NULL};

	if (pending_trip == 0)
		return d;
	d.what = ENFORCE_RELEASE_SKIP;
	/* Another trip, or none: a probe or a cool-down came between (the
	 * drain waited that long under the cap), and what the server holds
	 * now was let in after the verdict. */
	if (b->state != BREAKER_OPEN || b->trips != pending_trip ||
	    b->last_trip_rule != BREAKER_TRIP_STALLED || !b->policy->release_stalled)
		return d;
	/* The operator's word first, as for the drain (enforce_wanted_state):
	 * requests of a server the operator keeps in, or of a backend the
	 * agent must not act on, are the operator's to end. */
	if (b->policy->observe_only) {
		d.what = ENFORCE_RELEASE_SHOW;
		d.why = "enforce = none for its backend";
		return d;
	}
	if (b->observe_only) {
		d.why = "observe only (paused or released)";
		return d;
	}
	if (b->hold == BREAKER_HOLD_IN) {
		d.why = "held in by the operator";
		return d;
	}
	if (hands_off) {
		d.why = hands_off; /* in maintenance, drained by the operator */
		return d;
	}
	d.what = capped ? ENFORCE_RELEASE_WAIT : ENFORCE_RELEASE_SEND;
	return d;
}

const char *enforce_mode_name(enum enforce_mode mode)
{
	switch (mode) {
	case ENFORCE_NONE: return "none";
	case ENFORCE_RUNTIME_API: return "runtime-api";
	case ENFORCE_AGENT_CHECK: return "agent-check";
	}
	return "?";
}
