/*
 * breaker.c - one circuit breaker: how a worker's status is judged, and how
 * a judgement moves the breaker between CLOSED, OPEN and HALF_OPEN
 * (docs/design.md: "Classification", "Per-state rules", "Busy is not
 * dead", "Sets replace").
 *
 * How long each state lasts (the backoff, a peer's hold, the next
 * deadline) is breaker_time.c's.
 *
 * Pure: time comes in as an argument, nothing is allocated, and every
 * change is returned to the caller as a struct breaker_event.
 */
#include <stdio.h>
#include <string.h>

#include "core/breaker.h"

/* ---- classification ---- */

/*
 * The one place a worker's status becomes a judgement (docs/design.md,
 * "Classification").
 *
 * Trade-off, stated where it is made (docs/design.md, "Busy is not
 * dead"): a status in the capacity
 * set is backpressure, never a fault - so a worker stuck answering 503
 * forever is NOT detected here. HTTP status alone cannot tell "busy" from
 * "broken and saying 503", and counting it as a fault produced the worse,
 * fleet-wide false-shed: the busiest workers marked down, pressure
 * concentrated on the rest. A worker wedged at 503 is found by another
 * signal, not here: only capacity statuses for wedged_after while its
 * neighbours succeed (breaker_is_wedged()). Operators whose workers use
 * 503 for outages may also move it to the failure set.
 */
enum breaker_outcome breaker_outcome(const struct breaker_policy *policy, int status)
{
	/* Not a status a worker can send: nothing to learn from it. */
	if (status < STATUS_SET_MIN || status > STATUS_SET_MAX)
		return BREAKER_OUTCOME_IGNORED;
	if (status_set_contains(&policy->ignore, status))
		return BREAKER_OUTCOME_IGNORED;
	if (status_set_contains(&policy->capacity, status))
		return BREAKER_OUTCOME_BACKPRESSURE;
	if (status_set_contains(&policy->failure, status))
		return BREAKER_OUTCOME_FAILURE;
	/* A 4xx is the worker answering correctly about a bad request: it is
	 * healthy, so this counts as a success; metrics report it apart. */
	if (status >= 400 && status <= 499)
		return BREAKER_OUTCOME_CLIENT_ERROR;
	/* 1xx-3xx, and a 5xx the operator left out of every set: the worker
	 * answered. (To have a status record nothing, use the ignore set.) */
	return BREAKER_OUTCOME_SUCCESS;
}

/* ---- state machine ---- */

/* The newest n bits of a window (n <= BREAKER_MAX_WINDOW). */
static uint64_t window_mask(unsigned n)
{
	return n >= BREAKER_MAX_WINDOW ? UINT64_MAX : (UINT64_C(1) << n) - 1;
}

unsigned breaker_window_volume(const struct breaker *b)
{
	unsigned window = b->policy ? b->policy->window : BREAKER_MAX_WINDOW;
	return b->window_volume < window ? b->window_volume : window;
}

unsigned breaker_window_failures(const struct breaker *b)
{
	return (unsigned)__builtin_popcountll(b->window_failures &
					      window_mask(breaker_window_volume(b)));
}

static bool failure_rate_rule_on(const struct breaker_policy *p)
{
	return p && p->failure_rate_threshold > 0;
}

bool breaker_is_dirty(const struct breaker *b)
{
	/* A failure in the window is only worth a success's notice where the
	 * rate can open the breaker; elsewhere it changes nothing. Likewise a
	 * run of capacity statuses where wedged_after can open it: only the
	 * server's own success ends the run, so that success must be seen. */
	return b->state != BREAKER_CLOSED || b->failure_streak > 0 ||
	       (failure_rate_rule_on(b->policy) && breaker_window_failures(b) > 0) ||
	       (b->policy && b->policy->wedged_after_ms > 0 && b->capacity_run > 0);
}

bool breaker_is_forgettable(const struct breaker *b)
{
	/* A held breaker is the operator's word: never forgotten. */
	return !breaker_is_dirty(b) && b->trips_in_a_row == 0 && b->rest_until_ms == 0 &&
	       b->hold == BREAKER_HOLD_NONE;
}

void breaker_init(struct breaker *b, const struct breaker_policy *policy, uint64_t now_ms)
{
	memset(b, 0, sizeof(*b));
	b->policy = policy;
	b->state = BREAKER_CLOSED;
	b->state_since_ms = now_ms;
}

void breaker_set_policy(struct breaker *b, const struct breaker_policy *policy)
{
	b->policy = policy;
}

bool breaker_restore(struct breaker *b, enum breaker_state state, uint32_t failure_streak,
		     uint64_t since_ms, uint32_t trips)
{
	if ((unsigned)state > BREAKER_HALF_OPEN)
		return false;
	b->state = state;
	b->failure_streak = failure_streak;
	b->state_since_ms = since_ms;
	b->trips = trips;
	/* Nothing provisional survives a restart: no look can void it. */
	b->erased_streak = 0;
	/* An older snapshot says nothing of the backoff: one trip for a
	 * breaker it saved open or half-open (the open time it had then),
	 * none for a closed one; and an empty window. */
	b->trips_in_a_row = state == BREAKER_CLOSED ? 0 : 1;
	b->window_failures = 0;
	b->window_volume = 0;
	b->last_trip_rule = BREAKER_TRIP_NONE;
	return true;
}

void breaker_restore_history(struct breaker *b, uint32_t trips_in_a_row, uint64_t window_failures,
			     unsigned window_volume, enum breaker_trip_rule last_trip_rule)
{
	if (window_volume > BREAKER_MAX_WINDOW)
		window_volume = BREAKER_MAX_WINDOW;
	b->trips_in_a_row = trips_in_a_row;
	b->window_volume = (uint8_t)window_volume;
	b->window_failures = window_failures & window_mask(window_volume);
	b->last_trip_rule = (unsigned)last_trip_rule < BREAKER_NB_TRIP_RULES
				? (uint8_t)last_trip_rule
				: BREAKER_TRIP_NONE;
}

/* Every state change goes through here: CLOSED starts a fresh streak, and
 * nothing erased in the old state can be restored in the new one. */
static void enter_state(struct breaker *b, enum breaker_state state, uint64_t now_ms)
{
	b->state = state;
	b->state_since_ms = now_ms;
	b->erased_streak = 0;
	b->capacity_run = 0;
	b->capacity_run_since_ms = 0;
	if (state == BREAKER_OPEN && b->trips < UINT32_MAX)
		b->trips++;
	if (state != BREAKER_OPEN) {
		b->peer_hold_ms = 0;
		b->peer_adopted = false;
	}
	if (state == BREAKER_CLOSED) {
		/* A fresh start for both rules: failures from before the trip
		 * must not reopen a worker that has just proved itself. */
		b->failure_streak = 0;
		b->window_failures = 0;
		b->window_volume = 0;
	}
}

/* One judged request while CLOSED, newest in bit 0. */
static void window_push(struct breaker *b, bool failed)
{
	b->window_failures = (b->window_failures << 1) | (failed ? 1u : 0u);
	if (b->window_volume < BREAKER_MAX_WINDOW)
		b->window_volume++;
}

/*
 * The failure-rate rule, judged on the last `window` requests. Count-based,
 * not time-based: it needs no clock and no buckets, fits one word, and
 * reads the same at 1 request a second as at 1000 (a time window would
 * hold two samples on a quiet worker and thousands on a busy one).
 * minimum_volume keeps a worker's first few answers from deciding alone.
 */
static bool failure_rate_reached(const struct breaker *b)
{
	const struct breaker_policy *p = b->policy;
	if (!failure_rate_rule_on(p))
		return false;
	unsigned volume = breaker_window_volume(b);
	if (volume == 0 || volume < p->minimum_volume)
		return false;
	return (uint64_t)breaker_window_failures(b) * 100 >=
	       (uint64_t)p->failure_rate_threshold * volume;
}

/*
 * Every trip goes through here. trips_in_a_row is what the open time
 * backs off on; a trip from CLOSED first forgets the earlier ones if the
 * breaker stayed closed healthy_for_ms (breaker_tick normally did it
 * already: this covers a record that beat the timer).
 */
static void trip(struct breaker *b, enum breaker_trip_rule rule, uint64_t now_ms)
{
	if (b->state == BREAKER_CLOSED && now_ms >= b->state_since_ms &&
	    now_ms - b->state_since_ms >= b->policy->healthy_for_ms)
		b->trips_in_a_row = 0;
	if (b->trips_in_a_row < UINT32_MAX)
		b->trips_in_a_row++;
	b->last_trip_rule = (uint8_t)rule;
	enter_state(b, BREAKER_OPEN, now_ms);
}

/*
 * A close decided by one response head (a probe's success or 503, a late
 * success under open_late_success = close) is provisional until the next
 * counter poll: SPOE saw only the head, and if that body dies the worker is
 * as sick as before. threshold - 1 is the streak an aborted body brings
 * back, so one abort reopens at once, without waiting for a whole new streak
 * (see breaker_record_aborted_bodies).
 */
static void close_provisionally(struct breaker *b, uint64_t now_ms)
{
	enter_state(b, BREAKER_CLOSED, now_ms);
	b->erased_streak = b->policy->threshold - 1;
}

static uint32_t saturating_add(uint32_t a, uint64_t b)
{
	return b >= (uint64_t)UINT32_MAX - a ? UINT32_MAX : a + (uint32_t)b;
}

/* One failure while CLOSED: both rules judge it; the streak is named when
 * both are reached at once (it is the rule operators know). */
static void failure_while_closed(struct breaker *b, uint64_t now_ms)
{
	window_push(b, true);
	b->failure_streak = saturating_add(b->failure_streak, 1);
	if (b->failure_streak >= b->policy->threshold)
		trip(b, BREAKER_TRIP_FAILURE_STREAK, now_ms);
	else if (failure_rate_reached(b))
		trip(b, BREAKER_TRIP_FAILURE_RATE, now_ms);
}

/*
 * `count` failures in a row, exactly as `count` calls of one failure would
 * leave the breaker: CLOSED counts up to the trip and ignores the rest (they
 * arrive OPEN); HALF_OPEN reopens on the first; OPEN ignores them all.
 */
static void add_failures(struct breaker *b, uint64_t count, uint64_t now_ms)
{
	if (count == 0)
		return;
	switch (b->state) {
	case BREAKER_CLOSED: {
		b->capacity_run = 0; /* a fault is judged by the other rules */
		/* One at a time while the rate can still decide: after
		 * BREAKER_MAX_WINDOW failures in a row the window holds nothing
		 * else, so the rate rule, if on, has opened by then. What is
		 * left (a large counter delta) only adds to the streak. */
		uint64_t judged = 0;
		while (judged < count && judged < BREAKER_MAX_WINDOW &&
		       b->state == BREAKER_CLOSED) {
			failure_while_closed(b, now_ms);
			judged++;
		}
		if (b->state != BREAKER_CLOSED || judged == count)
			break;
		uint32_t threshold = b->policy->threshold;
		uint32_t after = saturating_add(b->failure_streak, count - judged);
		if (after < threshold) {
			b->failure_streak = after;
			break;
		}
		/* The failure that trips is the first to reach the threshold. */
		b->failure_streak = threshold;
		trip(b, BREAKER_TRIP_FAILURE_STREAK, now_ms);
		break;
	}
	case BREAKER_OPEN:
		/* A late failure: the worker was already judged. Extending the
		 * cool-down here would let a trickle of stragglers keep it open;
		 * it runs from the first trip. */
		break;
	case BREAKER_HALF_OPEN:
		/* The probe failed: the worker is still sick. One more trip in
		 * a row, so a longer cool-down; the streak stays the one that
		 * tripped: it counts failures of a closed breaker, and growing
		 * it with every failed probe made a hung worker read as a
		 * streak of 14 after a minute. */
		trip(b, BREAKER_TRIP_PROBE_FAILED, now_ms);
		break;
	}
}

/* Snapshot taken before an operation; event_end() turns it into the event. */
struct before {
	enum breaker_state state;
	bool dirty;
};

static struct before event_begin(const struct breaker *b)
{
	return (struct before){.state = b->state, .dirty = breaker_is_dirty(b)};
}

static struct breaker_event event_end(const struct breaker *b, struct before before)
{
	struct breaker_event ev = {
		.from = before.state,
		.to = b->state,
		.dirty = BREAKER_DIRTY_UNCHANGED,
		.trip_rule = BREAKER_TRIP_NONE,
	};
	if (ev.to == BREAKER_OPEN && ev.from != BREAKER_OPEN)
		ev.trip_rule = (enum breaker_trip_rule)b->last_trip_rule;
	bool dirty = breaker_is_dirty(b);
	if (dirty != before.dirty)
		ev.dirty = dirty ? BREAKER_BECAME_DIRTY : BREAKER_BECAME_CLEAN;
	return ev;
}

struct breaker_event breaker_record_success(struct breaker *b, uint64_t now_ms)
{
	struct before before = event_begin(b);

	switch (b->state) {
	case BREAKER_CLOSED:
		/* Remembered until the next counter poll: if this was a 200 head
		 * whose body then died, the streak it erased comes back. */
		if (b->failure_streak > b->erased_streak)
			b->erased_streak = b->failure_streak;
		b->failure_streak = 0;
		window_push(b, false);
		b->capacity_run = 0; /* it answered: not wedged */
		break;
	case BREAKER_OPEN:
		/*
		 * A late success belongs to a request admitted before the trip.
		 * Ignored by default: with long requests (LLM generations) the
		 * successes still in flight would otherwise close a breaker
		 * that just tripped, and the failing worker would get the full
		 * load again at once. `close` gives exact parity with the router
		 * this follows, whose record_success closes from any state.
		 */
		if (b->policy->open_late_success == BREAKER_OPEN_LATE_SUCCESS_CLOSE)
			close_provisionally(b, now_ms);
		break;
	case BREAKER_HALF_OPEN:
		close_provisionally(b, now_ms);
		break;
	}
	return event_end(b, before);
}

struct breaker_event breaker_record_failure(struct breaker *b, uint64_t now_ms)
{
	struct before before = event_begin(b);

	add_failures(b, 1, now_ms);
	return event_end(b, before);
}

/*
 * The body-abort problem (issue 5). SPOE fires on the response head, so a
 * worker that sends "200" and then dies mid-body is recorded as a success,
 * which resets the streak; its failure only shows later, as a srv_abrt in
 * the counter poll. Recorded naively (success, then a failure at the poll,
 * then success, failure ...) the streak never passes 1, and a worker whose
 * every body dies would stay CLOSED forever.
 *
 * So a success in CLOSED is provisional until the next poll: it remembers
 * the largest streak it erased (erased_streak). A poll that reports k
 * aborted bodies declares the successes it covers void - they were heads of
 * bodies that died - so the streak they erased is restored, and the k
 * aborts are then k failures on top of it, tripping at the threshold as
 * usual. A complete look confirms them (breaker_confirm_successes).
 * A close by a single head (HALF_OPEN's probe) restores threshold - 1, so a
 * probe whose body dies reopens at once.
 *
 * Judgement calls, stated here:
 * - Counters say how many bodies died, not which: with several successes
 *   and fewer aborts in one poll, the largest erased streak is restored
 *   (max, not sum). It errs towards opening, like every counter fault, and
 *   for the worker whose bodies always die it is exact enough: each poll's
 *   first success erased what the previous poll left, so the streak grows
 *   by k per poll until it trips.
 * - A body that dies after the next poll (a long stream) finds its success
 *   confirmed: its abort still counts, as a plain failure at that poll, but
 *   no longer voids the success. Per-request detail for such bodies needs
 *   HAProxy's log (termination state SD), not counters.
 * - In the failure-rate window an aborted body is one more failure, and
 *   the success its head recorded stays: counters do not say which sample
 *   it was. The rate errs low by at most the aborts since the last look;
 *   the streak, restored above, is the rule that voids the success.
 * - HALF_OPEN and OPEN ignore aborts. In OPEN they are late, like any
 *   failure. In HALF_OPEN any head would already have closed the breaker
 *   (success, or backpressure under `close`) or recorded nothing
 *   (backpressure under `ignore`): the abort belongs to a request admitted
 *   before the trip, not to a probe.
 */
struct breaker_event breaker_record_poll(struct breaker *b, uint64_t aborted_bodies,
					 uint64_t failures, uint64_t now_ms)
{
	struct before before = event_begin(b);

	/* Aborted bodies first: they void the successes their heads recorded
	 * over SPOP before this look. */
	if (aborted_bodies > 0 && b->state == BREAKER_CLOSED) {
		/* erased_streak stays until the look is confirmed: the streak is
		 * now above it, so restoring it again is a no-op. */
		if (b->erased_streak > b->failure_streak)
			b->failure_streak = b->erased_streak;
		add_failures(b, aborted_bodies, now_ms);
	}
	add_failures(b, failures, now_ms);
	return event_end(b, before);
}

void breaker_confirm_successes(struct breaker *b)
{
	/* No aborted body was reported for the successes recorded since the
	 * last poll (or they were already voided): they are confirmed. */
	b->erased_streak = 0;
}

/* Opened by the wedged rule, and the rule still on: a reload that turns
 * wedged_after off makes it a breaker like any other, whatever its last
 * trip was. */
static bool opened_as_wedged(const struct breaker *b)
{
	return b->last_trip_rule == BREAKER_TRIP_WEDGED && b->policy->wedged_after_ms > 0;
}

/* Where a run of capacity statuses is kept for the wedged rule: closed,
 * and half-open after a wedged trip (the probes are judged by it too). */
static bool keeps_capacity_run(const struct breaker *b)
{
	return b->state == BREAKER_CLOSED ||
	       (b->state == BREAKER_HALF_OPEN && opened_as_wedged(b));
}

static void extend_capacity_run(struct breaker *b, uint64_t now_ms)
{
	if (b->capacity_run == 0)
		b->capacity_run_since_ms = now_ms;
	if (b->capacity_run < UINT32_MAX)
		b->capacity_run++;
}

struct breaker_event breaker_record_backpressure(struct breaker *b, uint64_t now_ms)
{
	struct before before = event_begin(b);

	switch (b->state) {
	case BREAKER_CLOSED:
		/* Neutral, and deliberately not a success: the streak is kept, so
		 * a worker interleaving real faults with 503s still trips. Nor
		 * is it a sample of the failure rate (docs/design.md, "Busy is
		 * not dead"): counted as a
		 * success it would hide a failing worker behind its own 503s,
		 * counted as a failure it would open the busiest workers.
		 * Only the run of them is kept, for breaker_is_wedged(). */
		extend_capacity_run(b, now_ms);
		break;
	case BREAKER_OPEN:
		/* A late 503 must not reset a breaker that has already tripped. */
		break;
	case BREAKER_HALF_OPEN:
		if (opened_as_wedged(b)) {
			/* Opened for answering nothing but capacity statuses: one
			 * more is the symptom, not a sign of life - while its
			 * neighbours serve. Under a global overload nobody serves,
			 * and it is as busy as the rest. Only the neighbours tell,
			 * which this breaker does not know: the run is kept, and
			 * breaker_judge_wedged_probe() decides with them. */
			extend_capacity_run(b, now_ms);
			break;
		}
		if (b->policy->half_open_backpressure == BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE) {
			/* Policy close (docs/design.md, "Busy is not dead"): any
			 * answer proves the worker is up, which is
			 * what the probe was sent to find out - provided its body
			 * does not die before the next poll. */
			close_provisionally(b, now_ms);
		}
		/* Policy ignore (docs/design.md, "Sets replace"): a refused
		 * request proves nothing either
		 * way, so no sample. The probe's slot is HAProxy's maxconn slot,
		 * freed when this request ended, so the next request probes
		 * again: a recovered-but-busy worker cannot wedge the breaker. */
		break;
	}
	return event_end(b, before);
}

struct breaker_event breaker_record_backpressure_n(struct breaker *b, uint32_t count,
						   uint64_t now_ms)
{
	bool keeps_run = keeps_capacity_run(b);
	struct breaker_event ev = breaker_record_backpressure(b, now_ms);
	/* Only where the run is kept; the first of them counted. */
	if (keeps_run && keeps_capacity_run(b) && count > 1)
		b->capacity_run = count - 1 > UINT32_MAX - b->capacity_run ? UINT32_MAX
									 : b->capacity_run + count - 1;
	return ev;
}

struct breaker_event breaker_record(struct breaker *b, enum breaker_outcome outcome,
				    uint64_t now_ms)
{
	switch (outcome) {
	case BREAKER_OUTCOME_SUCCESS:
	case BREAKER_OUTCOME_CLIENT_ERROR:
		return breaker_record_success(b, now_ms);
	case BREAKER_OUTCOME_FAILURE:
		return breaker_record_failure(b, now_ms);
	case BREAKER_OUTCOME_BACKPRESSURE:
		return breaker_record_backpressure(b, now_ms);
	case BREAKER_OUTCOME_IGNORED:
		break;
	}
	return event_end(b, event_begin(b));
}

/*
 * The blind spot of docs/design.md, "Busy is not dead", closed carefully:
 * status alone cannot tell busy
 * from broken, so a 503 stays backpressure. But a worker that has answered
 * nothing else for wedged_after, at least minimum_volume times, while
 * another server of the same backend succeeded in that time, is not busy:
 * its neighbours under the same load are serving. Under a global overload
 * every server answers 503 and none succeeds, so nobody is wedged - which
 * is why the neighbours' success is required, not just the run.
 */
bool breaker_is_wedged(const struct breaker *b, uint64_t now_ms, uint64_t others_succeeded_ms)
{
	const struct breaker_policy *p = b->policy;

	return p->wedged_after_ms > 0 && keeps_capacity_run(b) &&
	       b->capacity_run >= p->minimum_volume && now_ms >= b->capacity_run_since_ms &&
	       now_ms - b->capacity_run_since_ms >= p->wedged_after_ms &&
	       others_succeeded_ms >= b->capacity_run_since_ms && others_succeeded_ms != 0;
}

struct breaker_event breaker_trip_wedged(struct breaker *b, uint64_t now_ms)
{
	struct before before = event_begin(b);

	/* A failure's trip, with its own reason: backoff and probes as any.
	 * From a wedged half-open too: its probes found it wedged still. */
	if (keeps_capacity_run(b))
		trip(b, BREAKER_TRIP_WEDGED, now_ms);
	return event_end(b, before);
}

struct breaker_event breaker_judge_wedged_probe(struct breaker *b, uint64_t now_ms,
						uint64_t others_succeeded_ms)
{
	struct before before = event_begin(b);

	if (b->state != BREAKER_HALF_OPEN || !opened_as_wedged(b) || b->capacity_run == 0 ||
	    b->policy->half_open_backpressure != BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE)
		return event_end(b, before);
	/* Policy ignore: a refusal is no verdict, for this breaker as for
	 * any; the run it is building is (breaker_is_wedged()). Policy close:
	 * a refusal decides at once - the symptom again while a neighbour
	 * served within wedged_after (the rule's own horizon), else a busy
	 * worker among busy ones, which closes as any breaker's probe does. */
	bool neighbours_serve = others_succeeded_ms != 0 &&
				others_succeeded_ms + b->policy->wedged_after_ms >= now_ms;
	if (neighbours_serve)
		trip(b, BREAKER_TRIP_WEDGED, now_ms);
	else
		close_provisionally(b, now_ms);
	return event_end(b, before);
}

struct breaker_event breaker_trip_stalled(struct breaker *b, uint64_t now_ms)
{
	struct before before = event_begin(b);

	/* A failure's trip, with its own reason. From HALF_OPEN too: a probe
	 * that hangs as long is a probe that failed, found before HAProxy's
	 * `timeout server` ends it. */
	if (b->state != BREAKER_OPEN)
		trip(b, BREAKER_TRIP_STALLED, now_ms);
	return event_end(b, before);
}

struct breaker_event breaker_peer_hold(struct breaker *b, uint64_t until_ms, uint64_t now_ms)
{
	struct before before = event_begin(b);

	if (b->state != BREAKER_OPEN) {
		/* A half-open breaker with a trip of its own yields the probe
		 * to the owner but keeps its evidence (not adopted); one that
		 * is half-open because an adopted verdict lapsed has none. */
		bool adopted = b->state == BREAKER_CLOSED || b->last_trip_rule == BREAKER_TRIP_NONE;
		enter_state(b, BREAKER_OPEN, now_ms);
		b->peer_adopted = adopted;
		if (adopted)
			b->last_trip_rule = BREAKER_TRIP_NONE;
	}
	if (until_ms > breaker_peer_hold_until(b)) {
		uint64_t rel = until_ms > b->state_since_ms ? until_ms - b->state_since_ms : 1;
		b->peer_hold_ms = rel > UINT32_MAX ? UINT32_MAX : (uint32_t)rel;
	}
	return event_end(b, before);
}

struct breaker_event breaker_peer_release(struct breaker *b, uint64_t now_ms)
{
	struct before before = event_begin(b);

	if (b->state == BREAKER_OPEN && b->peer_adopted)
		enter_state(b, BREAKER_CLOSED, now_ms);
	else
		b->peer_hold_ms = 0;
	return event_end(b, before);
}

bool breaker_owns_verdict(const struct breaker *b, uint64_t now_ms)
{
	return b->state != BREAKER_CLOSED && !b->peer_adopted && breaker_peer_hold_until(b) <= now_ms;
}

struct breaker_event breaker_tick(struct breaker *b, uint64_t now_ms)
{
	struct before before = event_begin(b);

	if (now_ms >= breaker_next_deadline(b)) {
		if (b->state == BREAKER_OPEN)
			enter_state(b, BREAKER_HALF_OPEN, now_ms);
		else if (b->state == BREAKER_CLOSED)
			/* Reset rather than halved: a worker that served
			 * healthy_for has proved itself, and its next fault
			 * deserves the plain cooldown; a flapping one never
			 * stays closed that long, so it keeps its backoff. */
			b->trips_in_a_row = 0;
	}
	return event_end(b, before);
}

/* ---- names ---- */

const char *breaker_state_name(enum breaker_state state)
{
	switch (state) {
	case BREAKER_CLOSED: return "closed";
	case BREAKER_OPEN: return "open";
	case BREAKER_HALF_OPEN: return "half_open";
	}
	return "unknown";
}

const char *breaker_outcome_name(enum breaker_outcome outcome)
{
	switch (outcome) {
	case BREAKER_OUTCOME_SUCCESS: return "success";
	case BREAKER_OUTCOME_CLIENT_ERROR: return "client_error";
	case BREAKER_OUTCOME_BACKPRESSURE: return "backpressure";
	case BREAKER_OUTCOME_FAILURE: return "failure";
	case BREAKER_OUTCOME_IGNORED: return "ignored";
	}
	return "unknown";
}

const char *breaker_trip_rule_name(enum breaker_trip_rule rule)
{
	switch (rule) {
	case BREAKER_TRIP_NONE: return "none";
	case BREAKER_TRIP_FAILURE_STREAK: return "failure_streak";
	case BREAKER_TRIP_FAILURE_RATE: return "failure_rate";
	case BREAKER_TRIP_PROBE_FAILED: return "probe_failed";
	case BREAKER_TRIP_WEDGED: return "wedged";
	case BREAKER_TRIP_STALLED: return "stalled";
	}
	return "none";
}

const char *breaker_transition_name(const struct breaker_event *ev)
{
	static const char *const names[3][3] = {
		[BREAKER_CLOSED][BREAKER_OPEN] = "closed->open",
		[BREAKER_OPEN][BREAKER_CLOSED] = "open->closed",
		[BREAKER_OPEN][BREAKER_HALF_OPEN] = "open->half_open",
		[BREAKER_HALF_OPEN][BREAKER_CLOSED] = "half_open->closed",
		[BREAKER_HALF_OPEN][BREAKER_OPEN] = "half_open->open",
	};

	if ((unsigned)ev->from > BREAKER_HALF_OPEN || (unsigned)ev->to > BREAKER_HALF_OPEN)
		return NULL;
	return names[ev->from][ev->to]; /* NULL on the diagonal: no transition */
}
