/*
 * breaker.h - the breaker core: status sets (status_set.c), one breaker's
 * classification and state machine (breaker.c), and the bounded table of
 * per-server breakers (breaker_table.c). Policies: policy.h.
 *
 * Pure: no I/O, no clock, no allocation outside breaker_table_init() and
 * breaker_policies_build(). Every `now_ms` is a monotonic time in milliseconds
 * supplied by the caller. Functions that can fail return false (or a status)
 * and write a message saying what was wrong into the caller's `err` buffer
 * of `err_size` bytes (always NUL-terminated when err_size > 0).
 */
#ifndef BREAKER_H
#define BREAKER_H

#include "core/breaker-t.h"
#include "core/policy.h"

/* ==== status sets (status_set.c) ==== */

void status_set_clear(struct status_set *set);
/* Adds one status; false (set unchanged) outside STATUS_SET_MIN..MAX. */
bool status_set_add(struct status_set *set, int status);
/* Adds lo..hi inclusive; false (set unchanged) if reversed or out of range. */
bool status_set_add_range(struct status_set *set, int lo, int hi);
/* out = a | b, a & b, a minus b. out may alias a or b. */
void status_set_union(struct status_set *out, const struct status_set *a,
		      const struct status_set *b);
void status_set_intersect(struct status_set *out, const struct status_set *a,
			  const struct status_set *b);
void status_set_difference(struct status_set *out, const struct status_set *a,
			   const struct status_set *b);
bool status_set_is_empty(const struct status_set *set);

/* Membership; any int is accepted, a status outside 100..599 is never in. */
static inline bool status_set_contains(const struct status_set *set, int status)
{
	if (status < STATUS_SET_MIN || status > STATUS_SET_MAX)
		return false;
	return (set->bits[status / 64] >> (status % 64)) & 1u;
}

/*
 * Parses a status list: comma-separated items, each a status ("503") or an
 * inclusive range ("500-599"), blanks allowed around items and dashes; the
 * word "none" alone is the empty set (an empty string is refused so that a
 * forgotten value is never read as "no statuses"). Every status must lie in
 * 100..599. Returns true and replaces *out; on error returns false, leaves
 * *out untouched and names the bad item and what was expected in err.
 */
bool status_set_parse(struct status_set *out, const char *text, char *err, size_t err_size);

/*
 * Writes the set compactly, ascending, runs of three or more as ranges
 * ("429,500-502,504-599"; "none" when empty) - a string status_set_parse()
 * reads back to the same set. snprintf-like: returns the length of the
 * full text; it was truncated if that is >= size. STATUS_SET_FORMAT_MAX
 * bytes always suffice.
 */
size_t status_set_format(const struct status_set *set, char *buf, size_t size);

/* ==== one breaker (breaker.c) ==== */

/*
 * Classifies one worker status under a policy (docs/design.md,
 * "Classification"). This is the
 * single place where a status becomes a judgement; see the comment at its
 * definition for the trade-off it makes.
 */
enum breaker_outcome breaker_outcome(const struct breaker_policy *policy, int status);

/* A CLOSED, clean breaker following `policy` (borrowed: it must outlive the
 * breaker; swap it with breaker_set_policy()). */
void breaker_init(struct breaker *b, const struct breaker_policy *policy, uint64_t now_ms);
/* Points the breaker at another policy without touching its state; a
 * streak already past a lowered threshold trips on the next failure. */
void breaker_set_policy(struct breaker *b, const struct breaker_policy *policy);

/* Puts a breaker back as a snapshot had it, on this process's clock
 * (since_ms may lie in the past: an OPEN breaker whose cool-down has run
 * out then moves at the next breaker_tick()). False, breaker untouched,
 * for a state that does not exist. */
bool breaker_restore(struct breaker *b, enum breaker_state state, uint32_t failure_streak,
		     uint64_t since_ms, uint32_t trips);
/* After breaker_restore(): the backoff and the failure-rate window as a
 * snapshot had them. A volume above BREAKER_MAX_WINDOW is cut to it, bits
 * beyond the volume are dropped, an unknown rule reads as NONE. */
void breaker_restore_history(struct breaker *b, uint32_t trips_in_a_row, uint64_t window_failures,
			     unsigned window_volume, enum breaker_trip_rule last_trip_rule);

/*
 * The transitions of docs/design.md, "Per-state rules". Each returns
 * what it did; nothing else
 * reports it. None of them allocates or fails.
 *   success:      CLOSED streak := 0, a success in the window; HALF_OPEN =>
 *                 CLOSED; OPEN ignored unless open_late_success = close
 *                 (then => CLOSED).
 *   failure:      CLOSED streak += 1 and a failure in the window, => OPEN
 *                 at the threshold or at the failure rate (either rule;
 *                 the event's trip_rule says which); HALF_OPEN => OPEN
 *                 with a new, longer cool-down, the streak unchanged; OPEN
 *                 ignored (the cool-down runs from the first trip).
 *                 Each trip adds one to trips_in_a_row (from CLOSED, after
 *                 forgetting them if it stayed healthy_for_ms closed).
 *   backpressure: CLOSED nothing, the streak is kept; OPEN ignored;
 *                 HALF_OPEN => CLOSED (policy close) or no sample (policy
 *                 ignore: HAProxy frees the probe's maxconn slot when the
 *                 request ends, so a busy worker cannot wedge the breaker);
 *                 but a breaker opened as wedged (the rule still on)
 *                 keeps the run instead, and breaker_judge_wedged_probe()
 *                 decides with its neighbours.
 */
struct breaker_event breaker_record_success(struct breaker *b, uint64_t now_ms);
struct breaker_event breaker_record_failure(struct breaker *b, uint64_t now_ms);
struct breaker_event breaker_record_backpressure(struct breaker *b, uint64_t now_ms);
/* `count` capacity statuses learnt at once (HAProxy's counters of retried
 * ones): one backpressure sample - it has no weight - but a run of
 * `count` towards breaker_is_wedged(). */
struct breaker_event breaker_record_backpressure_n(struct breaker *b, uint32_t count,
						   uint64_t now_ms);
/* Dispatches on an outcome: CLIENT_ERROR is a success, IGNORED does nothing. */
struct breaker_event breaker_record(struct breaker *b, enum breaker_outcome outcome,
				    uint64_t now_ms);

/*
 * Faults HAProxy's counters report (docs/operating.md, "Faults SPOE
 * never sees"; link/faults.h turns a look
 * into counts), recorded in one call per server and look:
 *   aborted_bodies: bodies that died after their 200 head was recorded as a
 *     success. In CLOSED the successes since the last confirmed look are
 *     void: the largest streak they erased is restored first (a close by a
 *     probe's head restores threshold - 1, so its dying body reopens).
 *     OPEN and HALF_OPEN ignore them (late). See the comment at the
 *     definition for why.
 *   failures: then `failures` failures at once, leaving the breaker exactly
 *     as that many calls of breaker_record_failure() would (CLOSED trips at
 *     the threshold and ignores the rest; HALF_OPEN reopens; OPEN ignores).
 * Both 0 does nothing. Returns one event for the whole.
 */
struct breaker_event breaker_record_poll(struct breaker *b, uint64_t aborted_bodies,
					 uint64_t failures, uint64_t now_ms);

/*
 * The successes recorded before a complete look at HAProxy are confirmed:
 * no body of theirs can void them any more. The caller that polls decides
 * when a look is complete - with several HAProxy feeding one breaker, once
 * every one of them was read - and never confirms after a failed look.
 */
void breaker_confirm_successes(struct breaker *b);

/* Admission as HAProxy applies it: CLOSED and HALF_OPEN take traffic (in
 * HALF_OPEN, at most half_open_probes at once, which HAProxy's maxconn
 * enforces), OPEN takes none. */
/*
 * Whether a CLOSED breaker's server is wedged at capacity statuses (or a
 * HALF_OPEN one's opened as wedged, its probes refused again): only
 * those for policy->wedged_after_ms, at least minimum_volume of them, and
 * another server of its backend succeeded since the run began
 * (others_succeeded_ms, from breaker_table_others_succeeded(); 0: never).
 * False whenever wedged_after_ms is 0.
 */
bool breaker_is_wedged(const struct breaker *b, uint64_t now_ms, uint64_t others_succeeded_ms);

/*
 * A half-open breaker opened as wedged (wedged_after still on) after a
 * capacity status answered its probe, its backend's other servers last
 * succeeding at others_succeeded_ms (0: never). Under half_open_backpressure
 * = close: OPEN again, still wedged, when a neighbour succeeded within
 * wedged_after - the symptom again; else CLOSED, provisionally, as any
 * probe answered by a capacity status (a global overload: busy among busy
 * ones). Under ignore nothing: the run decides (breaker_is_wedged()).
 * Nothing for any other breaker.
 */
struct breaker_event breaker_judge_wedged_probe(struct breaker *b, uint64_t now_ms,
						uint64_t others_succeeded_ms);
/* Opens a CLOSED breaker with trip rule "wedged"; no-op in other states. */
struct breaker_event breaker_trip_wedged(struct breaker *b, uint64_t now_ms);

/*
 * The stalled rule, counted (stall_watch.c): stall_count_look() takes one
 * look's counts into the watch (it moves the moment on any sign of life);
 * breaker_is_stalled_by_counts() says whether a CLOSED or HALF_OPEN
 * breaker's server was sent policy->stalled_requests since the moment,
 * answered none, while its neighbours were sent as many and answered
 * policy->stalled_share percent of theirs sent after it, at least
 * STALL_MIN_WATCH_MS ago; or, from fewer requests or a lower share, when
 * silence_is_unlikely() says so of the same counts, at least
 * SILENCE_MIN_WATCH_MS ago. False whenever stalled_requests is 0.
 */
void stall_count_look(struct stall_watch *w, const struct stall_look *l);
bool breaker_is_stalled_by_counts(const struct breaker *b, const struct stall_watch *w,
				  uint64_t now_ms);
/*
 * The stalled rule, timed (stall_watch.c). stall_watch_look() takes one look at a
 * server: requests in flight there (HAProxy's scur > 0), and whether it
 * answered anything since the previous look (a response in HAProxy's
 * counters or over SPOP; the caller says true when it cannot tell, e.g.
 * at its first look). breaker_is_stalled() says whether a CLOSED or
 * HALF_OPEN breaker's server has had requests in flight with no response
 * for policy->stalled_after_ms - counted from the later of the watch's
 * start and the state's - while another server of its backend succeeded
 * after that start (others_succeeded_ms, from
 * breaker_table_others_succeeded(); 0: never). False whenever
 * stalled_after_ms is 0.
 */
void stall_watch_look(struct stall_watch *w, bool in_flight, bool answered, uint64_t now_ms);
bool breaker_is_stalled(const struct breaker *b, const struct stall_watch *w, uint64_t now_ms,
			uint64_t others_succeeded_ms);
/* Opens a CLOSED or HALF_OPEN breaker with trip rule "stalled", as a
 * failure would (backoff, probes); no-op when OPEN. */
struct breaker_event breaker_trip_stalled(struct breaker *b, uint64_t now_ms);

/*
 * Verdicts of other HAProxy nodes (peers mode, records/verdicts.h). A node
 * whose breaker opened publishes it; the others hold theirs open, so that
 * only the owner probes.
 *   hold:    another node holds the server open until until_ms (the caller
 *            extends it while the verdict stands). CLOSED or HALF_OPEN =>
 *            OPEN, adopted when it was CLOSED; OPEN stays. An adopted
 *            breaker moves to HALF_OPEN at until_ms - a verdict that stops
 *            being renewed (its node gone, the peers link down) leaves this
 *            node to its own probes - and one of its own at the later of
 *            its cool-down and until_ms. No trip: the backoff is the
 *            owner's.
 *   release: the owner closed it. An adopted breaker => CLOSED; one open on
 *            its own evidence just loses the hold.
 */
struct breaker_event breaker_peer_hold(struct breaker *b, uint64_t until_ms, uint64_t now_ms);
struct breaker_event breaker_peer_release(struct breaker *b, uint64_t now_ms);
/* Open or half-open on its own evidence, held by no other node now: the
 * verdict this node owns and publishes. */
bool breaker_owns_verdict(const struct breaker *b, uint64_t now_ms);
/* When another node's hold ends; 0: not held. */
uint64_t breaker_peer_hold_until(const struct breaker *b);

/*
 * Time-driven changes: OPEN => HALF_OPEN once the open time (the cooldown,
 * backed off: breaker_open_duration_ms) has elapsed; CLOSED forgets its
 * trips in a row once it has been closed healthy_for_ms (no transition).
 * Call it at (or after) breaker_next_deadline(); calling it early does
 * nothing.
 */
struct breaker_event breaker_tick(struct breaker *b, uint64_t now_ms);
/* When breaker_tick() next has something to do, or BREAKER_NO_DEADLINE.
 * It can only move after a record or a tick on this breaker. */
uint64_t breaker_next_deadline(const struct breaker *b);

/* Whole seconds until an OPEN breaker lets traffic in again (its
 * backed-off open time left, rounded up: a client told to come back
 * sooner finds it still open); -1 when not OPEN - closed and half-open
 * breakers let traffic in now, so there is nothing to wait for. */
int64_t breaker_retry_after_s(const struct breaker *b, uint64_t now_ms);

/*
 * A worker's own Retry-After (rest.c). A worker that answers a capacity
 * status with "come back in N s" rests: its server gets no new requests
 * for that long, and comes back on its own when it elapses. A rest is
 * not a state: the breaker's state, streak and window are untouched
 * (busy is not dead), and a breaker of any state may rest.
 *
 * retry_after_parse() reads the header's value (blanks around it
 * allowed): delta-seconds set *seconds (saturating); an HTTP-date, which
 * only a clock could turn into a delay, is told apart from garbage so
 * that each can be counted.
 *
 * breaker_rest_on_response() applies one response: only a capacity
 * status (outcome BACKPRESSURE) with Retry-After seconds > 0, under a
 * policy whose retry_after_max_ms is not 0, asks for a rest, of
 * min(seconds, retry_after_max) from now. Not resting: it STARTS (rests
 * counted). Resting: a later end EXTENDS it; an earlier one changes
 * nothing - the answers that come during a rest are of requests sent
 * before it, and the one that said "less" does not undo the one that
 * said "more". So each rest ends at most retry_after_max after the
 * latest response that asked for it.
 *
 * breaker_rest_tick() ENDS a rest once now_ms reaches its end.
 * breaker_wake_deadline() is the earlier of breaker_next_deadline() and
 * that end: what the breakers' timer is armed for.
 */
enum retry_after_kind {
	RETRY_AFTER_ABSENT,  /* empty: no rest asked for */
	RETRY_AFTER_SECONDS, /* delta-seconds, in *seconds */
	RETRY_AFTER_DATE,    /* an HTTP-date: not honoured */
	RETRY_AFTER_INVALID, /* neither: not honoured */
};
enum retry_after_kind retry_after_parse(const char *text, size_t len, uint64_t *seconds);
/* How long a response asks its server to rest, bounded: 0 for none. */
uint64_t breaker_rest_wanted_ms(const struct breaker_policy *policy, enum breaker_outcome outcome,
				uint64_t retry_after_s);
enum breaker_rest_change breaker_rest_on_response(struct breaker *b, enum breaker_outcome outcome,
						  uint64_t retry_after_s, uint64_t now_ms);
enum breaker_rest_change breaker_rest_tick(struct breaker *b, uint64_t now_ms);
uint64_t breaker_wake_deadline(const struct breaker *b);
/* The rest's time left (0: not resting). */
uint64_t breaker_rest_left_ms(const struct breaker *b, uint64_t now_ms);
static inline bool breaker_is_resting(const struct breaker *b)
{
	return b->rest_ms != 0;
}
/*
 * A capacity status's Retry-After is one client's word (RFC 9110: when
 * that client may come back), not a sign that the worker refuses
 * everything: a busy engine says it on every refusal while it goes on
 * serving its batch. Drained on every such word, the workers that carry
 * the load at its peak would each leave rotation in turn. So a word
 * becomes a rest only once the worker is seen answering nothing else:
 *
 * breaker_rest_word() takes a response's word. Resting already, it is
 * breaker_rest_on_response() (a later end extends the rest). Otherwise
 * it is kept, not acted on (ASKED): the latest end asked for stands.
 * breaker_rest_answered(): the worker answered something other than a
 * capacity status - the word is dropped (DROPPED), or the rest under way
 * ends (ENDED): one waiting for room under the ejection cap would
 * otherwise drain, once room came, a worker that serves.
 * breaker_rest_confirm(): the verdict on a kept word, from a look at
 * HAProxy's counters (no success since the previous look) or, where the
 * agent has no look, a second word with no success between: the rest
 * starts, until the end the word asked for (STARTED); a word whose end
 * has passed is dropped, never applied late (DROPPED).
 * breaker_rest_tick() drops a kept word whose end has passed, quietly.
 */
static inline bool breaker_rest_word_kept(const struct breaker *b)
{
	return b->rest_ms == 0 && b->rest_until_ms != 0;
}
enum breaker_rest_change breaker_rest_word(struct breaker *b, enum breaker_outcome outcome,
					   uint64_t retry_after_s, uint64_t now_ms);
enum breaker_rest_change breaker_rest_answered(struct breaker *b);
enum breaker_rest_change breaker_rest_confirm(struct breaker *b, uint64_t now_ms);
/* When the rest began (meaningful while resting). */
static inline uint64_t breaker_rest_since_ms(const struct breaker *b)
{
	return b->rest_until_ms - b->rest_ms;
}
/* "started", "extended", "ended", "asked", "dropped"; NULL for UNCHANGED. */
const char *breaker_rest_change_name(enum breaker_rest_change change);

/* Dirty: not CLOSED, a failure streak, or a failure in the window under
 * a failure-rate policy (docs/design.md, "Dirty and clean breakers"). */
bool breaker_is_dirty(const struct breaker *b);
/* Holds nothing a fresh breaker would not: clean, no trips in a row left
 * to forget, not resting (its server is drained: forgetting the rest
 * would leave it so). Only such a breaker is evicted, or left out of a
 * snapshot. */
bool breaker_is_forgettable(const struct breaker *b);

/* How long the breaker stays OPEN: for an OPEN breaker its current trip's
 * time, otherwise what the next trip would get. cooldown_ms doubled for
 * each trip in a row after the first, at most max_cooldown_ms. */
uint64_t breaker_open_duration_ms(const struct breaker *b);
/* The same rule for the n-th trip in a row under a policy (n >= 1). */
uint64_t breaker_backoff_ms(const struct breaker_policy *policy, uint32_t trips_in_a_row);

/* The failure-rate window as the policy reads it: judged requests in the
 * newest `window` (at most that many), and the failures among them. */
unsigned breaker_window_volume(const struct breaker *b);
unsigned breaker_window_failures(const struct breaker *b);

/* Static names for logs, metrics and the ACK variables (docs/haproxy.md,
 * "Variables"). */
const char *breaker_state_name(enum breaker_state state);     /* "closed", "open", "half_open" */
const char *breaker_outcome_name(enum breaker_outcome outcome); /* "success", "client_error", ... */
/* "failure_streak", "failure_rate", "probe_failed"; "none". */
const char *breaker_trip_rule_name(enum breaker_trip_rule rule);
/* "closed->open" and the like, or NULL when the event is no transition. */
const char *breaker_transition_name(const struct breaker_event *ev);

static inline bool breaker_event_is_transition(const struct breaker_event *ev)
{
	return ev->from != ev->to;
}

/* Where breaker_counters.transitions keeps from -> to (from != to):
 * each from's two others, in state order. */
static inline unsigned breaker_transition_slot(enum breaker_state from, enum breaker_state to)
{
	unsigned f = (unsigned)from, t = (unsigned)to;
	return f * 2 + (t > f ? t - 1 : t);
}

/* ==== the per-server table (breaker_table.c) ==== */

/*
 * A table for at most max_entries breakers (1..BREAKER_TABLE_MAX_ENTRIES)
 * with the default policy everywhere; entries are allocated as servers
 * come (see struct breaker_table). False with err set on a bad size or an
 * allocation failure (nothing to free then). The table owns all its
 * memory: release it with breaker_table_free().
 */
bool breaker_table_init(struct breaker_table *t, uint32_t max_entries, char *err,
			size_t err_size);
void breaker_table_free(struct breaker_table *t);

/* Who is told when an entry index starts or stops holding a server. */
void breaker_table_set_hooks(struct breaker_table *t, const struct breaker_table_hooks *hooks);

/*
 * Makes *policies (built by breaker_policies_build()) the table's: every
 * tracked breaker is re-pointed at its effective policy there, keeping its
 * state, and the policies in use until now are freed. Takes ownership:
 * *policies is emptied. Cannot fail.
 */
void breaker_table_use_policies(struct breaker_table *t, struct breaker_policies *policies);

/*
 * Finds the breaker of (backend, server), creating it CLOSED and clean when
 * absent, and marks it most recently used. Names are byte strings of the
 * given lengths (no NUL needed). Returns the entry with *status FOUND or
 * CREATED, or NULL with *status FULL (the refusal is counted in
 * full_refusals) or BAD_NAME. To make room it evicts the least recently
 * used entry that is CLOSED and clean (counted in evictions); a dirty one
 * is never evicted, so no trip is forgotten. FULL also when a new chunk of
 * entries cannot be allocated. The entry stays valid until the next
 * breaker_table_get() or breaker_table_free(): look it up again rather
 * than keeping it. Allocates only a new chunk, when every entry so far is
 * in use.
 */
struct breaker_table_entry *breaker_table_get(struct breaker_table *t, const char *backend,
					      size_t backend_len, const char *server,
					      size_t server_len, uint64_t now_ms,
					      enum breaker_table_status *status);
/* Like breaker_table_get() but never creates and leaves recency alone;
 * NULL when absent. */
struct breaker_table_entry *breaker_table_find(struct breaker_table *t, const char *backend,
					       size_t backend_len, const char *server,
					       size_t server_len);
/* Like breaker_table_get(), but a new entry goes to the least recently
 * used end and a found one keeps its place: for servers learned from a
 * look at HAProxy, so that eviction order follows SPOP traffic, not the
 * order of `show stat` rows. */
struct breaker_table_entry *breaker_table_get_quiet(struct breaker_table *t, const char *backend,
						    size_t backend_len, const char *server,
						    size_t server_len, uint64_t now_ms,
						    enum breaker_table_status *status);

/*
 * The backend side of breaker_is_wedged(): breaker_table_note_outcome()
 * records a success of e's server for its backend;
 * breaker_table_others_succeeded() is when another server of e's backend
 * last succeeded (0: never, or the backend is untracked).
 */
/*
 * A worker's response to e's breaker: breaker_record(), then what its
 * backend's other servers make of it - a capacity status may find the
 * server wedged (breaker_is_wedged()) and open it. The one way SPOP
 * responses reach a breaker in the table.
 */
struct breaker_event breaker_table_record_response(struct breaker_table *t,
						   struct breaker_table_entry *e,
						   enum breaker_outcome outcome, uint64_t now_ms);
/* The same for `count` capacity statuses HAProxy retried on another
 * worker, which only its counters tell of: with the shipped retry-on 503 a
 * wedged worker's 503s mostly never reach SPOP, and must find it wedged
 * all the same. */
struct breaker_event breaker_table_record_capacity_retries(struct breaker_table *t,
							   struct breaker_table_entry *e,
							   uint32_t count, uint64_t now_ms);
/* One look at e's server by one HAProxy (see stall_watch_look() and
 * stall_count_look(); `counts` may be NULL: the timed rule alone), then
 * the stalled rule judges it against its backend: a stalled server's
 * breaker opens. The event says what changed (nothing, mostly). */
struct breaker_event breaker_table_look_in_flight(struct breaker_table *t,
						  struct breaker_table_entry *e,
						  struct stall_watch *w, bool in_flight,
						  bool answered, uint64_t now_ms,
						  const struct stall_look *counts);
void breaker_table_note_outcome(struct breaker_table *t, const struct breaker_table_entry *e,
				enum breaker_outcome outcome, uint64_t now_ms);
uint64_t breaker_table_others_succeeded(const struct breaker_table *t,
					const struct breaker_table_entry *e);

/* backend_successes.c, kept by the table. */
void backend_successes_free(struct backend_successes *s);
void backend_successes_add_server(struct backend_successes *s, const char *name, size_t len);
void backend_successes_remove_server(struct backend_successes *s, const char *name, size_t len);
void backend_successes_record(struct backend_successes *s, const char *name, size_t len,
			      uint32_t server, uint64_t now_ms);
uint64_t backend_successes_by_others(const struct backend_successes *s, const char *name,
				     size_t len, uint32_t server);
/* Adds a breaker's counts to its backend's retired ones, before the
 * breaker goes (breaker_table.c). */
void backend_successes_retire(struct backend_successes *s, const char *name, size_t len,
			      const struct breaker_counters *counters, uint32_t rests);
/* The slot of backend `name` in s->slots, or UINT32_MAX when it has no
 * breaker; slots move only when a backend comes or goes. */
uint32_t backend_successes_slot(const struct backend_successes *s, const char *name, size_t len);

/* The stable index of an entry (0..max_entries-1), for state kept beside
 * the table: below t->allocated, which only grows. */
static inline uint32_t breaker_table_index(const struct breaker_table *t,
					   const struct breaker_table_entry *e)
{
	(void)t;
	return e->index;
}

/* The entry at an index below t->allocated, in use or not (in_use says):
 * for renderers that walk the table in index order. */
static inline struct breaker_table_entry *breaker_table_at(const struct breaker_table *t,
							  uint32_t index)
{
	return &t->chunks[index / BREAKER_TABLE_CHUNK]->entries[index % BREAKER_TABLE_CHUNK];
}

/* A walk of the entries in use, in index order, that a renderer can cut
 * and resume: the first entry in use from *index on (left at its index),
 * each slot looked at taking one of *budget. NULL when the table is done
 * (*index reaches t->allocated; a NULL table is done) or the budget ran
 * out first (*index below t->allocated): the walk goes on from *index. The
 * caller moves *index past an entry it has used. */
static inline struct breaker_table_entry *
breaker_table_walk(const struct breaker_table *t, uint32_t *index, uint32_t *budget)
{
	for (; t && *index < t->allocated; (*index)++) {
		if (*budget == 0)
			return NULL;
		(*budget)--;
		struct breaker_table_entry *e = breaker_table_at(t, *index);
		if (e->in_use)
			return e;
	}
	return NULL;
}

/* Whether a walk that returned NULL ran out of budget (else the table is done). */
static inline bool breaker_table_walk_cut(const struct breaker_table *t, uint32_t index)
{
	return t && index < t->allocated;
}

/* Iterates the entries in use, most recently used first: pass NULL to
 * start; NULL at the end. Do not insert while iterating. */
struct breaker_table_entry *breaker_table_next(struct breaker_table *t,
					       struct breaker_table_entry *prev);

typedef void (*breaker_table_event_fn)(struct breaker_table_entry *entry,
				       const struct breaker_event *ev, void *ctx);

/*
 * Ticks every breaker whose deadline (breaker_wake_deadline()) has come,
 * calling on_event (may be NULL) for each tick that made a transition or
 * ended a rest; on_event may act on its
 * entry's breaker but must not call breaker_table_get() (an insertion may
 * evict under the iteration). Returns the earliest deadline left,
 * BREAKER_NO_DEADLINE if none: the event loop arms its one timer for it.
 * O(entries in use); it runs once per deadline, not per request.
 */
uint64_t breaker_table_tick(struct breaker_table *t, uint64_t now_ms,
			    breaker_table_event_fn on_event, void *ctx);
/* The earliest wake deadline of all breakers, BREAKER_NO_DEADLINE if none. */
uint64_t breaker_table_next_deadline(const struct breaker_table *t);

/* Forgets one entry (a server HAProxy no longer has). Safe while iterating
 * only if the iteration already holds the next entry. */
void breaker_table_remove(struct breaker_table *t, struct breaker_table_entry *e);

#endif /* BREAKER_H */
