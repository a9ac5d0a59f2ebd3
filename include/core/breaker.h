/*
 * breaker.h - the breaker core: status sets (status_set.c), one breaker's
 * classification and state machine (breaker.c), and the bounded table of
 * per-server breakers with its policy resolution (breaker_table.c).
 *
 * Pure: no I/O, no clock, no allocation outside breaker_table_init() and
 * the policy setters. Every `now_ms` is a monotonic time in milliseconds
 * supplied by the caller. Functions that can fail return false (or a status)
 * and write a message saying what was wrong into the caller's `err` buffer
 * of `err_size` bytes (always NUL-terminated when err_size > 0).
 */
#ifndef BREAKER_H
#define BREAKER_H

#include "core/breaker-t.h"

/* ==== status sets (status_set.c) ==== */

void status_set_clear(struct status_set *set);
/* Adds one status; false (set unchanged) outside STATUS_SET_MIN..MAX. */
bool status_set_add(struct status_set *set, int status);
/* Adds lo..hi inclusive; false (set unchanged) if reversed or out of range. */
bool status_set_add_range(struct status_set *set, int lo, int hi);
void status_set_remove(struct status_set *set, int status);
/* out = a | b, a & b, a minus b. out may alias a or b. */
void status_set_union(struct status_set *out, const struct status_set *a,
		      const struct status_set *b);
void status_set_intersect(struct status_set *out, const struct status_set *a,
			  const struct status_set *b);
void status_set_difference(struct status_set *out, const struct status_set *a,
			   const struct status_set *b);
bool status_set_is_empty(const struct status_set *set);
bool status_set_equal(const struct status_set *a, const struct status_set *b);
unsigned status_set_count(const struct status_set *set);

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

/* ==== policy (breaker.c) ==== */

/* The defaults of DESIGN 4.2: threshold 3, cool-down 30 s, 1 probe, probe
 * timeout 30 s, capacity {429, 503}, failure 500-599 minus capacity, ignore
 * empty, half-open backpressure `close`, open late success `ignore`. */
void breaker_policy_defaults(struct breaker_policy *policy);

/* True if the policy is usable; otherwise false with the first problem in
 * err (a zero threshold, probes outside 1..BREAKER_MAX_PROBES, overlapping
 * sets naming the statuses in both, ...). */
bool breaker_policy_validate(const struct breaker_policy *policy, char *err, size_t err_size);

/*
 * Builds the effective policy from the defaults and nb_layers layers
 * applied in order (global first, the most specific last): a field set by
 * a layer replaces the inherited value, sets included. When no layer sets
 * the failure set it is derived as 500-599 minus the capacity and ignore
 * sets, so moving 503 out of the capacity set makes it a failure and
 * putting a 5xx in the ignore set never creates an overlap. NULL layers are
 * skipped. Validates the result: false with err set if unusable (*out is
 * then unspecified).
 */
bool breaker_policy_resolve(struct breaker_policy *out,
			    const struct breaker_policy_layer *const *layers, size_t nb_layers,
			    char *err, size_t err_size);

/* ==== one breaker (breaker.c) ==== */

/*
 * Classifies one worker status under a policy (DESIGN 4.1). This is the
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

/*
 * The transitions of DESIGN 4.2. Each returns what it did; nothing else
 * reports it. None of them allocates or fails.
 *   success:      CLOSED streak := 0; HALF_OPEN => CLOSED; OPEN ignored
 *                 unless open_late_success = close (then => CLOSED).
 *   failure:      CLOSED streak += 1, => OPEN at the threshold; HALF_OPEN =>
 *                 OPEN with a new cool-down; OPEN ignored (the cool-down
 *                 runs from the first trip).
 *   backpressure: CLOSED nothing, the streak is kept; OPEN ignored;
 *                 HALF_OPEN => CLOSED (policy close) or no sample but one
 *                 probe slot released (policy ignore).
 */
struct breaker_event breaker_record_success(struct breaker *b, uint64_t now_ms);
struct breaker_event breaker_record_failure(struct breaker *b, uint64_t now_ms);
struct breaker_event breaker_record_backpressure(struct breaker *b, uint64_t now_ms);
/* Dispatches on an outcome: CLIENT_ERROR is a success, IGNORED does nothing. */
struct breaker_event breaker_record(struct breaker *b, enum breaker_outcome outcome,
				    uint64_t now_ms);

/*
 * Faults HAProxy's counters report (DESIGN 5.3; faults.h turns a poll into
 * counts). At each poll, per server, in this order:
 *   1. breaker_record_aborted_bodies(b, delta.aborted_bodies, now)
 *   2. breaker_record_failures(b, delta.failures, now)
 *   3. breaker_counters_polled(b)
 * and act on the events of 1 and 2 like on any other record.
 *
 * record_failures: `count` failures at once, leaving the breaker exactly as
 *   `count` calls of breaker_record_failure() would (CLOSED trips at the
 *   threshold and ignores the rest; HALF_OPEN reopens; OPEN ignores). 0
 *   does nothing.
 * record_aborted_bodies: `count` bodies died after their 200 head was
 *   recorded as a success. In CLOSED the successes since the last poll are
 *   void: the largest streak they erased is restored, then `count` failures
 *   are added (a close by a probe's head restores threshold - 1, so its
 *   dying body reopens). OPEN and HALF_OPEN ignore it (late). 0 does
 *   nothing. See the comment at its definition for why.
 * counters_polled: the poll is done; successes recorded before it are
 *   confirmed. Call it for every breaker whose server the poll covered
 *   (with several HAProxy feeding one breaker, once all were polled), also
 *   when its delta was empty, and never after a failed poll.
 */
struct breaker_event breaker_record_failures(struct breaker *b, uint64_t count, uint64_t now_ms);
struct breaker_event breaker_record_aborted_bodies(struct breaker *b, uint64_t count,
						   uint64_t now_ms);
void breaker_counters_polled(struct breaker *b);

/*
 * Admission. would_allow answers without changing anything: CLOSED yes,
 * OPEN no, HALF_OPEN while a probe slot is free. try_acquire_probe takes a
 * slot in HALF_OPEN (released by the probe's outcome or after
 * probe_timeout_ms) and returns false in any other state or when all slots
 * are taken: in CLOSED no probe is needed, ask would_allow.
 */
bool breaker_would_allow(const struct breaker *b);
bool breaker_try_acquire_probe(struct breaker *b, uint64_t now_ms);

/*
 * Time-driven changes: OPEN => HALF_OPEN once the cool-down has elapsed,
 * and release of probes past their deadline. Call it at (or after)
 * breaker_next_deadline(); calling it early does nothing.
 */
struct breaker_event breaker_tick(struct breaker *b, uint64_t now_ms);
/* When breaker_tick() next has something to do, or BREAKER_NO_DEADLINE.
 * It can only move after a record, an acquire or a tick on this breaker. */
uint64_t breaker_next_deadline(const struct breaker *b);

/* Dirty: not CLOSED, or a failure streak (DESIGN 5.5). */
bool breaker_is_dirty(const struct breaker *b);

/* Static names for logs, metrics and the ACK variables of DESIGN 4.3. */
const char *breaker_state_name(enum breaker_state state);     /* "closed", "open", "half_open" */
const char *breaker_outcome_name(enum breaker_outcome outcome); /* "success", "client_error", ... */
/* "closed->open" and the like, or NULL when the event is no transition. */
const char *breaker_transition_name(const struct breaker_event *ev);

static inline bool breaker_event_is_transition(const struct breaker_event *ev)
{
	return ev->from != ev->to;
}

/* ==== the per-server table (breaker_table.c) ==== */

/*
 * Allocates a table for at most max_entries breakers (1..BREAKER_TABLE_MAX_
 * ENTRIES) with the default policy everywhere. False with err set on a bad
 * size or an allocation failure (nothing to free then). The table owns all
 * its memory: release it with breaker_table_free().
 */
bool breaker_table_init(struct breaker_table *t, uint32_t max_entries, char *err,
			size_t err_size);
void breaker_table_free(struct breaker_table *t);

/*
 * Configuration levels. The layer is copied; setting a level again
 * replaces its layer. Nothing takes effect until breaker_table_resolve_
 * policies(), so the order of these calls does not matter. False with err
 * set on a bad name, too many overrides or an allocation failure.
 */
void breaker_table_set_global_policy(struct breaker_table *t,
				     const struct breaker_policy_layer *layer);
bool breaker_table_set_backend_policy(struct breaker_table *t, const char *backend,
				      const struct breaker_policy_layer *layer, char *err,
				      size_t err_size);
bool breaker_table_set_server_policy(struct breaker_table *t, const char *backend,
				     const char *server, const struct breaker_policy_layer *layer,
				     char *err, size_t err_size);

/*
 * Computes every effective policy (global, then backend, then server) and
 * validates each; on success re-points every tracked breaker at its policy
 * and returns true. On failure returns false with the first problem in err
 * prefixed by the level ("server be/w1: ..."), and changes nothing in
 * effect: the policies in use stay as they were (the stored layers are not
 * rolled back; build a new table to try another configuration).
 */
bool breaker_table_resolve_policies(struct breaker_table *t, char *err, size_t err_size);

/*
 * For a reload: forgets the global layer and every override's layer, so
 * that each level inherits from the one above until new layers are set and
 * resolved. Overrides are emptied, not removed, because breakers point at
 * their effective policies; emptied ones cost a little memory and nothing
 * else (bounded by BREAKER_TABLE_MAX_OVERRIDES). Resolve before the next
 * breaker_table_get().
 */
void breaker_table_clear_policies(struct breaker_table *t);

/* The effective policy a breaker for (backend, server) gets: the server's
 * override, else the backend's, else the global one. */
const struct breaker_policy *breaker_table_policy_for(const struct breaker_table *t,
						      const char *backend, size_t backend_len,
						      const char *server, size_t server_len);

/*
 * Finds the breaker of (backend, server), creating it CLOSED and clean when
 * absent, and marks it most recently used. Names are byte strings of the
 * given lengths (no NUL needed). Returns the entry with *status FOUND or
 * CREATED, or NULL with *status FULL (the refusal is counted in
 * full_refusals) or BAD_NAME. To make room it evicts the least recently
 * used entry that is CLOSED and clean (counted in evictions); a dirty one
 * is never evicted, so no trip is forgotten. The entry stays valid until
 * the next breaker_table_get() or breaker_table_free(): look it up again
 * rather than keeping it. Never allocates.
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

/* Iterates the entries in use, most recently used first: pass NULL to
 * start; NULL at the end. Do not insert while iterating. */
struct breaker_table_entry *breaker_table_next(struct breaker_table *t,
					       struct breaker_table_entry *prev);

typedef void (*breaker_table_event_fn)(struct breaker_table_entry *entry,
				       const struct breaker_event *ev, void *ctx);

/*
 * Ticks every breaker whose deadline has come, calling on_event (may be
 * NULL) for each tick that did something (a transition or released
 * probes); on_event may act on its entry's breaker but must not call
 * breaker_table_get() (an insertion may evict under the iteration). Returns the earliest deadline left, BREAKER_NO_DEADLINE if none:
 * the event loop arms its one timer for it. O(entries in use); it runs once
 * per deadline, not per request.
 */
uint64_t breaker_table_tick(struct breaker_table *t, uint64_t now_ms,
			    breaker_table_event_fn on_event, void *ctx);
/* The earliest deadline of all breakers, BREAKER_NO_DEADLINE if none. */
uint64_t breaker_table_next_deadline(const struct breaker_table *t);

/* Forgets one entry (a server HAProxy no longer has). Safe while iterating
 * only if the iteration already holds the next entry. */
void breaker_table_remove(struct breaker_table *t, struct breaker_table_entry *e);

const char *breaker_table_status_name(enum breaker_table_status status);

#endif /* BREAKER_H */
