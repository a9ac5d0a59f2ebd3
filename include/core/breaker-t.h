/*
 * breaker-t.h - types of the breaker core: status sets, policies, one
 * breaker's state, the events a change produces, and the per-server table.
 *
 * Nothing here does I/O or reads a clock: every time is a monotonic
 * uint64_t in milliseconds handed in by the caller. docs/design.md
 * ("Classification", "Per-state rules") is the specification these
 * types serve.
 */
#ifndef BREAKER_T_H
#define BREAKER_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/names.h"

/* ---- status sets ---- */

/* A set covers the HTTP statuses a worker can answer: 100..599. */
#define STATUS_SET_MIN 100
#define STATUS_SET_MAX 599
/* Bits are indexed by the status itself (0..99 stay unused): simpler and
 * cheaper than subtracting an offset on every lookup. */
#define STATUS_SET_WORDS ((STATUS_SET_MAX + 64) / 64)

/* Room for any formatted set: a code costs at most 4 bytes ("503," or
 * "500-"), there are 500 of them, plus the NUL. */
#define STATUS_SET_FORMAT_MAX 2048

struct status_set {
	uint64_t bits[STATUS_SET_WORDS];
};

/* ---- one observation's outcome (docs/design.md, "Classification") ---- */

enum breaker_outcome {
	BREAKER_OUTCOME_SUCCESS,      /* a worker answer that proves it works */
	BREAKER_OUTCOME_CLIENT_ERROR, /* a 4xx: counted as success, reported apart */
	BREAKER_OUTCOME_BACKPRESSURE, /* "alive and busy": neutral (capacity set) */
	BREAKER_OUTCOME_FAILURE,      /* a fault (failure set, or a transport fault) */
	BREAKER_OUTCOME_IGNORED,      /* records nothing at all (ignore set) */
};

enum breaker_state {
	BREAKER_CLOSED,    /* traffic flows; consecutive failures are counted */
	BREAKER_OPEN,      /* tripped: no traffic until the cool-down elapses */
	BREAKER_HALF_OPEN, /* a few probes decide between CLOSED and OPEN */
};

/* What backpressure does to a HALF_OPEN breaker. */
enum breaker_half_open_backpressure {
	/* The default (docs/design.md, "Busy is not dead"): any answer
	 * proves the worker is up: close. */
	BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE,
	/* docs/design.md, "Sets replace": record no sample, but release
	 * the probe slot so the
	 * breaker cannot wedge on a recovered-but-busy worker. */
	BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE,
};

/* What a late success (of a request admitted before the trip) does to an
 * OPEN breaker. */
enum breaker_open_late_success {
	BREAKER_OPEN_LATE_SUCCESS_IGNORE, /* default: the cool-down runs its course */
	BREAKER_OPEN_LATE_SUCCESS_CLOSE,  /* as the router this follows (record_success) */
};

/* ---- policy ---- */

/* Upper bound on half_open_probes: the maxconn a half-open server gets in
 * HAProxy while its probes decide. */
#define BREAKER_MAX_PROBES 16

#define BREAKER_DEFAULT_THRESHOLD 3
#define BREAKER_DEFAULT_COOLDOWN_MS 30000
#define BREAKER_DEFAULT_HALF_OPEN_PROBES 1
/* The longest a backed-off open may last, unless a level sets it; a
 * cooldown above it (given without max_cooldown) lifts it to the cooldown,
 * so that such a file means what it meant before backoff existed. */
#define BREAKER_DEFAULT_MAX_COOLDOWN_MS 300000
/* How long a breaker must stay closed for its trips in a row to be
 * forgotten: twice the default cooldown, and a fixed time rather than a
 * multiple of the cooldown, because a flapping worker fails again within
 * seconds of being let back whatever its cooldown. */
#define BREAKER_DEFAULT_HEALTHY_FOR_MS 60000

/* The failure-rate rule looks at the last `window` judged requests; one
 * bit each, so the window fits one uint64_t in the breaker. */
#define BREAKER_MAX_WINDOW 64
#define BREAKER_DEFAULT_WINDOW BREAKER_MAX_WINDOW
/* Fewer judged requests than this in the window never open on the rate:
 * a worker's first two answers failing is not a 100 % failure rate. */
#define BREAKER_DEFAULT_MINIMUM_VOLUME 20

/* The ejection cap (link/ejection.h): at most this share of a backend's
 * servers out of rotation at once. Half: past it the servers left carry
 * more than twice their share, and overloading the healthy ones is the
 * total outage the cap exists to prevent. Envoy's 10 % would let no
 * breaker of a backend below 10 servers drain anything. */
#define BREAKER_DEFAULT_MAX_EJECTION_PERCENT 50

/* The longest rest a worker's Retry-After may ask for (rest.c). Long
 * enough for the sheds load shedders and rate limiters announce (one to a
 * few seconds), short enough that a worker which overstates its load, or
 * sends one fixed value whatever its queue, costs the backend at most this
 * much of one server at a time. The default cooldown's third: a busy
 * worker is never kept out as long as a failing one. */
#define BREAKER_DEFAULT_RETRY_AFTER_MAX_MS 10000
/* The largest retry_after_max the configuration takes: a rest longer than
 * an hour is an outage, which the failure rules are for. */
#define BREAKER_RETRY_AFTER_MAX_LIMIT_MS 3600000

/* The effective rules of one breaker. Statuses are classified by
 * breaker_outcome(); the three sets never overlap once validated. */
struct breaker_policy {
	uint32_t threshold;         /* consecutive failures that open a CLOSED breaker (>= 1) */
	uint64_t cooldown_ms;       /* OPEN lasts this long before HALF_OPEN (>= 1) */
	/* Concurrent probes in HALF_OPEN (1..BREAKER_MAX_PROBES). HAProxy
	 * enforces it: the server's maxconn is set to it, so a probe's slot is
	 * freed when its request ends, and `timeout server` ends a hung one.
	 * The breaker itself counts no probes. */
	uint32_t half_open_probes;
	struct status_set capacity; /* backpressure statuses */
	struct status_set failure;  /* fault statuses */
	struct status_set ignore;   /* statuses that record nothing */
	enum breaker_half_open_backpressure half_open_backpressure;
	enum breaker_open_late_success open_late_success;
	/* Open-time backoff: the n-th trip in a row stays open cooldown_ms *
	 * 2^(n-1), at most max_cooldown_ms (>= cooldown_ms once validated);
	 * trips in a row are forgotten after healthy_for_ms closed. */
	uint64_t max_cooldown_ms;
	uint64_t healthy_for_ms;
	/* The failure-rate rule: open when at least failure_rate_threshold
	 * percent of the last `window` judged requests failed, once at least
	 * minimum_volume of them were judged (<= window). 0 turns it off. */
	uint32_t failure_rate_threshold; /* percent, 0..100 */
	uint32_t window;                 /* judged requests, 1..BREAKER_MAX_WINDOW */
	uint32_t minimum_volume;         /* 1..window */
	/* A worker wedged at 503: only capacity statuses for this long, at
	 * least minimum_volume of them, while another server of its backend
	 * succeeded meanwhile, opens the breaker (breaker_is_wedged()).
	 * 0 turns it off (the default). */
	uint64_t wedged_after_ms;
	/* A hung worker: requests in flight there for this long with no
	 * response, while another server of its backend answered meanwhile,
	 * opens the breaker (breaker_is_stalled()). 0 turns it off (the
	 * default): only fleets whose responses have a known upper bound
	 * can name one. */
	uint64_t stalled_after_ms;
	/* A hung worker, judged by counts (stall_watch.c), on by default: at
	 * least stalled_requests sent to it since it last answered, none
	 * answered, while its neighbours answered at least stalled_share
	 * percent of theirs sent after the same look. 0 requests turns it
	 * off. */
	uint32_t stalled_requests;
	uint32_t stalled_share; /* percent, 1..100 */
	/* A worker's Retry-After on a capacity status: its server rests (no
	 * new requests) that long, at most this; 0 ignores the header
	 * (rest.c). */
	uint64_t retry_after_max_ms;
	/* The backend's ejection cap (link/ejection.h), read by the HAProxy
	 * link, never by the breaker: per backend (a server level cannot set
	 * them), as a share of servers is a property of the backend. */
	uint32_t max_ejection_percent;   /* 0..100 */
	bool drain_last_server;          /* false: never drain the last serving server */
	/* The backend's `retry-on` lists response-timeout (or
	 * all-retryable-errors): a request a server held unanswered may come
	 * back retried elsewhere, looking like a capacity retry (link/
	 * signals.c). Off, every capacity retry is backpressure. */
	bool retried_timeouts;
	/* False: a backend left out of the breakers on purpose (HAProxy sends
	 * no SPOP message for it): no breaker is kept for its servers, from
	 * SPOP or from HAProxy's counters, so nothing ever drains them, and
	 * the agent does not report its traffic as unwired. */
	bool guarded;
	/* `[backend NAME] enforce = none`: the breakers of the backend
	 * judge and log, and the agent holds nothing in HAProxy for its
	 * servers - the file's form of the control socket's pause
	 * (enforce_wanted_state()). */
	bool observe_only;
	/* False: the agent learns the servers' capacity from their workers'
	 * refusals and sets their maxconn to it (link/capacity.h). True: the
	 * operator's pin, the server's own maxconn is left alone. */
	bool pin_maxconn;
	/* A breaker opened as stalled ends the requests its server holds
	 * (`shutdown sessions server`) with the drain (link/stall_release.c):
	 * a hung worker's clients get their error at once instead of at
	 * HAProxy's `timeout server`. Read by the HAProxy link, never by the
	 * breaker. */
	bool release_stalled;
};

/* Which fields of a policy one configuration level sets. */
enum breaker_policy_field {
	BREAKER_FIELD_THRESHOLD = 1u << 0,
	BREAKER_FIELD_COOLDOWN = 1u << 1,
	BREAKER_FIELD_HALF_OPEN_PROBES = 1u << 2,
	BREAKER_FIELD_CAPACITY_SET = 1u << 3,
	BREAKER_FIELD_FAILURE_SET = 1u << 4,
	BREAKER_FIELD_IGNORE_SET = 1u << 5,
	BREAKER_FIELD_HALF_OPEN_BACKPRESSURE = 1u << 6,
	BREAKER_FIELD_OPEN_LATE_SUCCESS = 1u << 7,
	BREAKER_FIELD_MAX_COOLDOWN = 1u << 8,
	BREAKER_FIELD_HEALTHY_FOR = 1u << 9,
	BREAKER_FIELD_FAILURE_RATE_THRESHOLD = 1u << 10,
	BREAKER_FIELD_WINDOW = 1u << 11,
	BREAKER_FIELD_MINIMUM_VOLUME = 1u << 12,
	BREAKER_FIELD_WEDGED_AFTER = 1u << 15,
	BREAKER_FIELD_STALLED_AFTER = 1u << 16,
	BREAKER_FIELD_MAX_EJECTION_PERCENT = 1u << 13,
	BREAKER_FIELD_DRAIN_LAST_SERVER = 1u << 14,
	BREAKER_FIELD_GUARDED = 1u << 17,
	BREAKER_FIELD_STALLED_REQUESTS = 1u << 18,
	BREAKER_FIELD_STALLED_SHARE = 1u << 19,
	BREAKER_FIELD_RETRY_AFTER_MAX = 1u << 20,
	BREAKER_FIELD_RETRIED_TIMEOUTS = 1u << 21,
	BREAKER_FIELD_OBSERVE_ONLY = 1u << 22,
	BREAKER_FIELD_PIN_MAXCONN = 1u << 23,
	BREAKER_FIELD_RELEASE_STALLED = 1u << 24,
};

/* One level of configuration (global, a backend, a server): the fields
 * named in `fields` replace what the levels above set, sets included
 * (docs/design.md, "Sets replace": a set replaces the inherited one, it
 * is never merged into it). */
struct breaker_policy_layer {
	unsigned fields; /* OR of enum breaker_policy_field */
	struct breaker_policy values;
};

/* ---- one breaker ---- */

/* next_deadline value of a breaker that needs no timer. */
#define BREAKER_NO_DEADLINE UINT64_MAX

/* Which rule opened a breaker (its last trip). */
enum breaker_trip_rule {
	BREAKER_TRIP_NONE,           /* never tripped (or restored from an older snapshot) */
	BREAKER_TRIP_FAILURE_STREAK, /* threshold consecutive failures while closed */
	BREAKER_TRIP_FAILURE_RATE,   /* failure_rate_threshold over the window */
	BREAKER_TRIP_PROBE_FAILED,   /* a half-open probe failed */
	BREAKER_TRIP_WEDGED,         /* only capacity statuses for wedged_after, others succeeding */
	BREAKER_TRIP_STALLED,        /* sent requests, none answered, others answering theirs */
};
#define BREAKER_NB_TRIP_RULES (BREAKER_TRIP_STALLED + 1)

struct breaker {
	const struct breaker_policy *policy; /* not owned; must outlive the breaker */
	enum breaker_state state;
	/* Consecutive failures while CLOSED; 0 on entering CLOSED. OPEN and
	 * HALF_OPEN keep the streak that tripped (a rate trip's may be below
	 * the threshold): a failed probe is one more trip in a row, not one
	 * more failure, so the streak never grows across open cycles. */
	uint32_t failure_streak;
	/* CLOSED only: the largest streak a success erased since the last
	 * counter poll (threshold - 1 after a success or backpressure closed
	 * the breaker). Those successes are provisional: if the poll reports
	 * aborted bodies, they were 200 heads whose bodies died, and the
	 * streak comes back (breaker_record_aborted_bodies). 0 elsewhere. */
	uint32_t erased_streak;
	uint8_t window_volume;  /* judged requests in window_failures (below) */
	uint8_t last_trip_rule; /* enum breaker_trip_rule */
	bool peer_adopted;      /* see peer_hold_ms */
	/* CLOSED only: capacity statuses in a row (no success, no failure in
	 * between; saturates) and when the first of them came (0: none) -
	 * what breaker_is_wedged() judges. Reset on entering any state. */
	uint32_t capacity_run;
	/* OPEN only: held open by another HAProxy node's verdict (peers,
	 * records/verdicts.h) until state_since_ms + peer_hold_ms, 0 when not:
	 * the verdict's owner probes, this node does not (breaker_peer_hold).
	 * peer_adopted: it opened on that verdict alone, not on evidence of
	 * its own. Relative and 32 bits, to keep the entry in four cache
	 * lines. Not in the snapshot: a restarted agent reads the verdicts
	 * again. */
	uint32_t peer_hold_ms;
	uint64_t capacity_run_since_ms;
	uint64_t state_since_ms;  /* when the current state began (OPEN: the trip) */
	uint32_t trips;           /* times it opened, for the record (saturates) */
	/* Trips with no healthy_for_ms CLOSED stretch between them (a failed
	 * probe is one): what the open time backs off on. 0 once forgotten. */
	uint32_t trips_in_a_row;
	/* The last BREAKER_MAX_WINDOW judged requests while CLOSED, newest in
	 * bit 0: 1 failed, 0 succeeded (backpressure and ignored statuses
	 * are neither: docs/design.md, "Busy is not dead"). window_volume
	 * of them are real (saturates
	 * at BREAKER_MAX_WINDOW); emptied on entering CLOSED, kept while
	 * OPEN and HALF_OPEN to show what tripped. The policy's window reads
	 * the newest `window` of them, so a reload may change it. */
	uint64_t window_failures;
	/* The worker's own Retry-After (rest.c): no new requests until
	 * rest_until_ms, a rest of rest_ms so far (rest_ms 0: not resting);
	 * rests started, for the record (saturates). rest_until_ms set with
	 * rest_ms 0 is a word not yet a rest: the end the worker asked for,
	 * kept until it is known whether the worker refuses everything.
	 * Beside the state, never part of it: a resting breaker keeps its
	 * state, its streak and its window. Not in the snapshot: a rest
	 * lasts seconds. */
	uint64_t rest_until_ms;
	uint32_t rest_ms;
	uint32_t rests;
	/* The operator's hand (operator_hand.c), beside the state like a
	 * rest: a hold (enum breaker_hold) decides what HAProxy holds for
	 * the server whatever the breaker judges, until hold_until_s (the
	 * monotonic clock in whole seconds, rounded up, so that the entry
	 * keeps to four cache lines; 0: until lifted); hold_forced lets a
	 * hold out past the ejection cap.
	 * observe_only: its backend is paused, or the agent released: the
	 * breaker judges and logs, and the agent holds nothing in HAProxy
	 * for it. The breaker's own rules never touch these. */
	uint8_t hold;
	bool hold_forced;
	bool observe_only;
	uint32_t hold_until_s;
};

/* An operator's hold on one breaker (operator_hand.c). */
enum breaker_hold {
	BREAKER_HOLD_NONE,
	BREAKER_HOLD_OUT, /* drained, no probe: as an open breaker, whatever it judges */
	BREAKER_HOLD_IN,  /* serving, never drained: as a closed one, whatever it judges */
};

/* Whether an operation turned the breaker dirty or clean. A breaker is
 * dirty when it is not CLOSED, has a failure streak, (under a policy with
 * the failure-rate rule) a failure in its window, or (under a policy with
 * wedged_after) a run of capacity statuses: only then can a success change
 * a decision, which is what lets HAProxy skip notifying
 * successes of clean servers (docs/design.md, "Dirty and clean
 * breakers"). Trips in a row are no part of
 * it (a success does not change them); breaker_is_forgettable() says
 * whether a breaker holds anything a fresh one would not. */
enum breaker_dirty_change {
	BREAKER_DIRTY_UNCHANGED,
	BREAKER_BECAME_DIRTY,
	BREAKER_BECAME_CLEAN,
};

/* What a response or a tick did to a worker's rest (rest.c). */
enum breaker_rest_change {
	BREAKER_REST_UNCHANGED,
	BREAKER_REST_STARTED,  /* it was not resting: no new requests from now */
	BREAKER_REST_EXTENDED, /* resting, and told to wait longer than that */
	BREAKER_REST_ENDED,    /* the time it asked for elapsed, or the worker answered */
	/* A word not yet a rest (breaker_rest_word()): the worker said "come
	 * back in N s"; whether it refuses everything is told later. */
	BREAKER_REST_ASKED,
	BREAKER_REST_DROPPED, /* the word was dropped: the worker answers, or it expired */
};

/* What one record or tick did, for the caller to act on (log, Runtime API,
 * metrics, dirty map). from == to when the state did not change. */
struct breaker_event {
	enum breaker_state from;
	enum breaker_state to;
	enum breaker_dirty_change dirty;
	/* When to == BREAKER_OPEN: the rule that opened it; NONE otherwise. */
	enum breaker_trip_rule trip_rule;
	/* What it did to the worker's rest (rest.c); the state
	 * transitions never touch it. */
	enum breaker_rest_change rest;
	/* A tick: the operator's hold ran out (operator_hand.c). */
	bool hold_ended;
};

/* What one server's breaker has seen, for the metrics endpoint (metrics.c).
 * Zeroed with its table entry; counted on the event loop, never read by the
 * core. */
#define BREAKER_NB_TRANSITION_SLOTS 6 /* (from, to) pairs of three states, from != to */

struct breaker_counters {
	uint64_t outcomes[BREAKER_OUTCOME_IGNORED + 1]; /* SPOP observations, by outcome */
	/* By breaker_transition_slot(from, to): only from != to, so that the
	 * entry keeps to four cache lines (test_breaker_table.c). */
	uint64_t transitions[BREAKER_NB_TRANSITION_SLOTS];
	/* Openings, by the rule that opened. 32 bits, saturating: one a
	 * cool-down at most, so never near the bound, and the entry the hot
	 * path walks stays within 256 bytes with a rule more. */
	uint32_t trips[BREAKER_NB_TRIP_RULES];
	/* Steady-state mode (breakers/counters.h): successes HAProxy's counters
	 * report and SPOP was not told of; and how many of outcomes[SUCCESS]
	 * a counters' delta has already accounted for. */
	uint64_t counted_successes;
	uint64_t successes_matched;
};

/* ---- the stalled rule's view of one server (stall_watch.c) ---- */

/* The defaults of the counted rule; stall_watch.c says why these. */
#define BREAKER_DEFAULT_STALLED_REQUESTS 16
#define BREAKER_DEFAULT_STALLED_SHARE 80
/* The counted rule never opens on less than this since the moment: a
 * pause shorter than a second (a collector, a page-in) is no hang. */
#define STALL_MIN_WATCH_MS 1000

/* What one look at HAProxy says of one server and of its neighbours (the
 * other servers of its backend at the same HAProxy), since the previous
 * look of the same process. */
struct stall_look {
	bool baseline;        /* false: no previous look to count from */
	bool answered;        /* any sign of life from it: a response head, an
			       * answer over SPOP, a capacity status retried */
	uint64_t sent;        /* requests sent to it (stot) */
	uint64_t nb_sent;     /* requests sent to its neighbours */
	uint64_t nb_answered; /* their response heads (2xx-5xx) and capacity
			       * statuses retried */
	uint64_t nb_pending;  /* at this look, their requests in flight that
			       * may still get a head: an upper bound */
	uint64_t now_ms;
};

/* What one HAProxy's looks say of one server, kept by whoever looks (the
 * HAProxy link): each HAProxy has its own. */
struct stall_watch {
	/* stalled_after: the look from which requests were in flight there
	 * with no response since, at every look (0: not so). */
	uint64_t since_ms;
	/* stalled_requests: the moment (a look, 0: none yet) after which it
	 * was sent `sent` requests and answered none, and its neighbours
	 * were sent nb_sent and gave nb_answered answers; nb_pending_then
	 * of those may answer requests sent before the moment. */
	uint64_t from_ms;
	uint64_t sent;
	uint64_t nb_sent;
	uint64_t nb_answered;
	uint64_t nb_pending_then;
	/* The longest the worker went with requests sent and none answered
	 * before it did answer: how long it has shown it can be silent and
	 * alive. A later silence must last twice that to be a stall. */
	uint64_t proven_silence_ms;
};

/* ---- policies of one configuration (policy.c) ---- */

/* Longest backend or server name kept; longer ones are refused. */
#define BREAKER_NAME_MAX NAME_MAX_LEN

/* What a configuration sets for one backend (server "") or one server. */
struct breaker_policy_override {
	char backend[BREAKER_NAME_MAX + 1];
	char server[BREAKER_NAME_MAX + 1];
	struct breaker_policy_layer layer;
};

/* One resolved level: level 0 is the global policy (both names empty). */
struct breaker_policy_level {
	char backend[BREAKER_NAME_MAX + 1];
	char server[BREAKER_NAME_MAX + 1];
	struct breaker_policy effective;
};

/* Every effective policy of one configuration. The levels live on the heap
 * so that breakers may point at `effective` while the struct itself is
 * copied around: a struct breaker_policies may be moved by assignment. */
struct breaker_policies {
	struct breaker_policy_level *levels; /* nb_levels of them; owned */
	uint32_t nb_levels;
	/* Some backend is not guarded: only then does a name need its policy
	 * before it gets a breaker. */
	bool any_unguarded;
};

/* ---- the per-server table ---- */

/* Upper bound on a table's max_entries (its memory is allocated up front). */
#define BREAKER_TABLE_MAX_ENTRIES (1u << 20)
/* Upper bound on per-backend plus per-server policy overrides (resolving
 * them is quadratic, and they come from a config file, not from traffic). */
#define BREAKER_TABLE_MAX_OVERRIDES 4096

enum breaker_table_status {
	BREAKER_TABLE_FOUND,    /* lookup: an existing entry */
	BREAKER_TABLE_CREATED,  /* lookup: a new entry, CLOSED and clean */
	BREAKER_TABLE_FULL,     /* lookup: no room and nothing evictable */
	BREAKER_TABLE_BAD_NAME, /* not a name HAProxy accepts (name_is_valid()) */
};

/* One tracked server: the breaker and its counters, nothing of HAProxy
 * (the link keeps its own state per entry index, see breaker_table_hooks).
 * Names are NUL-terminated copies owned by the table, in an array of their
 * own so that the entries the hot path walks stay small. */
struct breaker_table_entry {
	struct breaker breaker;
	struct breaker_counters counters; /* zeroed with the entry */
	const char *backend; /* points into the table's name store */
	const char *server;
	uint64_t hash;
	uint32_t lru_prev; /* in use: towards the most recently used; free: unused */
	uint32_t lru_next; /* in use: towards the least recently used; free: next free */
	uint32_t index;    /* its own, stable index */
	uint8_t backend_len;
	uint8_t server_len;
	bool in_use;
};

/* "backend\0server\0", packed: a lookup compares both names, and for
 * names of usual length they share one cache line instead of two. */
struct breaker_table_names {
	char key[2 * (BREAKER_NAME_MAX + 1)];
};

/* Entries are allocated a chunk at a time, as servers come: a table sized
 * for a million servers costs what it holds, not a million entries up
 * front. A chunk never moves, so entry pointers stay valid. */
#define BREAKER_TABLE_CHUNK 1024u

struct breaker_table_chunk {
	struct breaker_table_entry entries[BREAKER_TABLE_CHUNK];
	struct breaker_table_names names[BREAKER_TABLE_CHUNK];
};

/* Told when an entry index starts or stops holding a server, so that state
 * kept elsewhere per index (the HAProxy link's) lives and dies with it; and
 * asked, before the table grows to `allocated` entries, to make room for
 * them (false refuses the growth: the lookup that needed it gets FULL).
 * Any function may be NULL. */
struct breaker_table_hooks {
	bool (*reserve)(void *ctx, uint32_t allocated);
	void (*created)(void *ctx, uint32_t index);
	void (*removed)(void *ctx, uint32_t index);
	void *ctx;
};

/* When a backend last had a success, and from which server (entry index):
 * see backend_successes.c. */
struct backend_success {
	uint64_t hash;        /* of the name; 0: an empty slot */
	uint64_t last_ms;     /* the latest success, 0: none yet */
	uint64_t other_ms;    /* the latest by a server other than last_server */
	uint32_t last_server;
	uint32_t servers;     /* breakers of this backend in the table */
	uint8_t name_len;
	char name[BREAKER_NAME_MAX + 1];
	/* What its dropped breakers (evicted, or gone from HAProxy) had
	 * counted: a sum over the backend's breakers adds it, so that a
	 * per-backend counter never goes back while the backend has one. */
	struct breaker_counters retired;
	uint64_t retired_rests;
};

struct backend_successes {
	struct backend_success *slots; /* NULL until the first backend */
	uint32_t mask;                 /* slot count - 1 */
	uint32_t used;
};

/*
 * Breakers keyed by (backend, server). Entries come a chunk at a time, when
 * no free one is left and max_entries is not reached; the hash index is
 * sized for max_entries at init (4 bytes a slot, at most half full). Lookup
 * is an open-addressing hash (linear probing, backward-shift deletion, so
 * no tombstones accumulate under eviction churn); recency is a doubly
 * linked list through the entries. Fields are read-only outside
 * breaker_table.c.
 */
struct breaker_table {
	struct breaker_table_chunk **chunks; /* ceil(max_entries / CHUNK); NULL until used */
	uint32_t allocated;                  /* entries in the chunks so far */
	uint32_t *slots;                     /* hash index: entry index or empty */
	uint32_t slot_mask;                  /* slot count - 1 (a power of two) */
	uint32_t max_entries;
	uint32_t count;       /* entries in use */
	uint32_t lru_head;    /* most recently used, or BREAKER_TABLE_NIL */
	uint32_t lru_tail;    /* least recently used, or BREAKER_TABLE_NIL */
	uint32_t free_head;   /* first unused entry, or BREAKER_TABLE_NIL */
	uint64_t evictions;   /* idle entries dropped to make room */
	uint64_t full_refusals; /* lookups refused: full and nothing evictable */
	struct backend_successes backends; /* one record per backend with a breaker */
	struct breaker_policies policies; /* owned; every breaker points into it */
	struct breaker_table_hooks hooks;
};

#define BREAKER_TABLE_NIL UINT32_MAX

#endif /* BREAKER_T_H */
