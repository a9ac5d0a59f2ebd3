/*
 * enforce_plan.h - what the breakers want from HAProxy, and how to get there.
 *
 * The plan is pure: from what a breaker wants (its state), what HAProxy
 * last said about the server, and what the agent remembers having changed,
 * it computes the commands that converge. The same function serves a
 * transition (act at once) and reconciliation (after HAProxy reloads or
 * forgets), so both always agree.
 *
 *   closed     state ready (if we drained it) and the learnt capacity as its
 *              maxconn (capacity.h), or the server's own back (if we
 *              changed it)
 *   open       state drain (also a resting worker's: enforce_wanted_state())
 *   half_open  state ready (if we drained it) and maxconn = half_open_probes;
 *              state drain while the probes are out and the worker
 *              has not answered since the look before, if guard_room
 *
 * An operator's hand is never undone: a server in maintenance is left
 * alone, and a drain the agent did not set is never lifted.
 */
#ifndef SPOA_ENFORCE_PLAN_H
#define SPOA_ENFORCE_PLAN_H

#include "core/breaker.h"
#include "link/enforce-t.h"

struct enforce_plan {
	bool set_ready;
	bool set_drain;
	bool set_maxconn;
	uint32_t maxconn;
	const char *hands_off; /* non-NULL: why nothing is done (operator's state) */
};

/*
 * What HAProxy should hold for a breaker: its state, except that a
 * resting worker's server (core/rest.c) is held as an open one's -
 * drained, its maxconn left as it is - whatever the breaker's state, which
 * the rest never changes. When the rest ends, the state's own plan
 * undoes the drain.
 */
enum breaker_state enforce_wanted_state(const struct breaker *b);

/*
 * The commands that bring HAProxy from `seen` to what a breaker in `want`
 * needs, given `mem`, which it updates as if the commands will land (the
 * caller re-plans after the next look at HAProxy if they do not).
 * guard_room: whether half-open's in-flight guard may drain the server
 * while its probes are out - a drain like any other, which the backend's
 * ejection cap may refuse (the server then stays at its probes' maxconn).
 */
struct enforce_plan enforce_plan(enum breaker_state want, uint32_t half_open_probes,
				 bool guard_room, const struct enforce_seen *seen,
				 struct enforce_memory *mem);

/* The same, with the capacity learnt for the server (capacity.h; 0:
 * none): a closed breaker's server gets it as its maxconn, unless its own
 * is lower. Only closed: half-open's probes set their own, and an open
 * server takes nothing. */
struct enforce_plan enforce_plan_limited(enum breaker_state want, uint32_t half_open_probes,
					 bool guard_room, uint32_t capacity_limit,
					 const struct enforce_seen *seen, struct enforce_memory *mem);

/* What HAProxy holds once the plan's commands have landed: seen is updated
 * as the next look would report it. */
void enforce_plan_assume_applied(const struct enforce_plan *plan, struct enforce_seen *seen);

/*
 * The line answering HAProxy's agent-check for a server whose breaker is in
 * `state` (mem NULL for a server without a breaker). HAProxy keeps every
 * word until told otherwise, and an agent's "ready" also lifts a drain set
 * by hand on the Runtime API, so "ready" is said only to undo what the
 * agent itself did:
 *   open       "drain"
 *   half_open  "ready maxconn:N"
 *   closed     "ready maxconn:0" once after the agent drained or limited
 *              the server (0 = unlimited: without an admin socket the
 *              server's own maxconn cannot be learned), "up" otherwise,
 *              which changes nothing.
 * Updates mem as if the answer is delivered.
 */
void enforce_agent_check_answer(enum breaker_state state, uint32_t half_open_probes,
				struct enforce_memory *mem, char *buf, size_t size);

/*
 * Ending what a hung worker holds (link/stall_release.c). A breaker that
 * opens as stalled marks its trip (`pending_trip`, b->trips then; 0:
 * nothing pending); the mark is acted on where its drain is planned, so
 * that the requests are ended with the drain that keeps new ones away:
 *   SEND  the drain is the agent's, in place or going out now: end them
 *   WAIT  the ejection cap holds the drain back; the release goes with it
 *         when room frees (the server still takes requests meanwhile, and
 *         its clients, released, would only be replaced by new ones)
 *   SHOW  the backend is `enforce = none`: said, never sent
 *   SKIP  not for this trip: `why` says what stopped it (the operator's
 *         hand), NULL when the breaker moved on (closed, reopened) or the
 *         policy no longer asks for it
 *   NONE  nothing pending
 * hands_off: the plan's (enforce_plan.hands_off), NULL when it acts;
 * capped: the cap holds the drain back on this HAProxy.
 */
enum enforce_release {
	ENFORCE_RELEASE_NONE,
	ENFORCE_RELEASE_SEND,
	ENFORCE_RELEASE_WAIT,
	ENFORCE_RELEASE_SHOW,
	ENFORCE_RELEASE_SKIP,
};
struct enforce_release_decision {
	enum enforce_release what;
	const char *why; /* SKIP: the operator's hand, or NULL; SHOW: why not sent */
};
struct enforce_release_decision enforce_release_stalled(const struct breaker *b,
							uint32_t pending_trip, bool capped,
							const char *hands_off);

const char *enforce_mode_name(enum enforce_mode mode);

#endif /* SPOA_ENFORCE_PLAN_H */
