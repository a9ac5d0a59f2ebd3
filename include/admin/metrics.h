/*
 * metrics.h - what the admin endpoint shows, rendered from the agent's own
 * structures: Prometheus text (metrics.c, metrics_servers.c, written with
 * metrics_text.h's primitives); the breakers as JSON are
 * state_json.h's, from the same struct metrics_source.
 *
 * Pure: the caller gathers a struct metrics_source (borrowed pointers, a
 * `now`), the renderers read it and append to a strbuf. No I/O, no clock.
 */
#ifndef SPOA_METRICS_H
#define SPOA_METRICS_H

#include "admin/metrics_style.h"
#include "admin/metrics_text.h"
#include "spop/agent.h"
#include "core/breaker.h"
#include "core/operator_hand.h"
#include "link/enforce-t.h"
#include "link/enforce_plan.h"
#include "link/enforcer.h"
#include "link/ejection.h"
#include "hapi/runtime_api.h"
#include "link/steady_support.h"
#include "state/state_store.h"
#include "util/strbuf.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics_runtime_api {
	const char *address;
	const struct runtime_api_stats *stats;
	bool reachable;
	/* Its backends as the last look counted them (link/ejection.h). */
	const struct ejection_backend *backends;
	uint32_t nb_backends;
	/* What its configuration lacks for the agent (link/wiring.h); NULL:
	 * not known. */
	const struct wiring *wiring;
};

/* Everything borrowed; NULL pointers render as zeros (or no samples for
 * the per-socket families). */
struct metrics_source {
	const struct breaker_table *table;
	/* Per table index (NULL: none): the HAProxy link's word on which open
	 * breakers its ejection cap holds back (enforcer_ejection_capped()),
	 * and the maxconn capacity learning set (enforcer_maxconn_learnt()). */
	const bool *capped;
	const uint32_t *maxconn_learnt;
	enum metrics_names names;
	enum metrics_detail detail;
	const struct agent_stats *agent;
	unsigned connections_open;
	uint64_t admin_not_allowed; /* admin clients closed at accept: not in the allowlist */
	uint64_t agent_check_not_allowed; /* agent-check clients, the same */
	uint64_t observations_refused;
	uint64_t unknown_messages; /* SPOE messages no handler claimed */
	uint64_t steady_messages;  /* sent by an HAProxy in steady-state mode */
	/* Retry-After values of capacity statuses not honoured (observe.h) */
	uint64_t retry_after_dates;
	uint64_t retry_after_invalid;
	enum steady_support steady_support; /* whether its watched map is kept */
	uint64_t log_lines_dropped;    /* the log output did not keep up */
	uint64_t log_lines_suppressed; /* held back by the per-line rate limit */
	enum enforce_mode enforce_mode;
	const struct enforce_stats *enforce;
	struct metrics_runtime_api runtime_api[ENFORCE_MAX_HAPROXY];
	unsigned nb_runtime_api;
	/* The INI sections as the HAProxies' listings judged them
	 * (hapi/section_names.h, /state only); NULL: not known. */
	const struct section_names *sections;
	const struct state_store_stats *state; /* NULL: no state store */
	const struct histogram *loop_busy; /* the loop's work per turn; NULL: none */
	uint64_t loop_busy_max_ns;
	const char *version;
	uint64_t now_ms; /* on the breakers' clock (clock_now_ms()) */
	uint64_t now_unix_ms; /* the wall clock's now, for timestamps; 0: not known */
	/* The operator's word (core/operator_hand.h; NULL: none) and the
	 * control socket's commands, done and refused. */
	const struct operator_hand *hand;
	uint64_t control_done;
	uint64_t control_refused;
};


/*
 * The Prometheus text exposition (format 0.0.4) of s, every family with
 * its HELP and TYPE lines, then its samples; in parts, so that a large
 * fleet never holds the event loop for a whole scrape: first the head -
 * every family whose size does not grow with the fleet, rendered from s at
 * once (s may borrow what a reload frees), and with metrics_detail =
 * backend the per-backend sums - then the per-server families, a slice at
 * a time, from the table alone (metrics_servers.c).
 */
struct metrics_cursor {
	unsigned family; /* of the per-server families, over every naming pass */
	uint32_t index;  /* next table index */
	/* As the head had them: a reload between two slices changes nothing
	 * of a scrape under way. */
	enum metrics_names names;
	enum metrics_detail detail;
};

bool metrics_render_head(const struct metrics_source *s, struct strbuf *out);

/* What the per-server families read: t (may be NULL) must outlive the
 * cursor; capped and maxconn_learnt as in struct metrics_source, read
 * during the call only. */
struct metrics_view {
	const struct breaker_table *table;
	const bool *capped;
	const uint32_t *maxconn_learnt;
};

/* Appends per-server samples from *c on, looking at no more than budget
 * table entries; true when every per-server family is written (c then
 * says so), false when more remains. Entries may come and go between two
 * slices: a scrape is then a mix of two moments, as any Prometheus target
 * scraped under load is. */
bool metrics_render_servers(const struct metrics_view *v, struct metrics_cursor *c,
			    struct strbuf *out, uint32_t budget);

/* With detail METRICS_DETAIL_BACKEND, appends the per-server families'
 * sums per backend (one pass over the table); nothing otherwise. */
bool metrics_render_backends(const struct metrics_view *v, enum metrics_detail detail,
			     struct strbuf *out);

#endif /* SPOA_METRICS_H */
