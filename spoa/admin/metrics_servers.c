/*
 * metrics_servers.c - the families that grow with the fleet (see
 * metrics.h): one sample or a few per server, a slice at a time, or with
 * metrics_detail = backend their sums per backend instead.
 *
 * Names and labels follow metrics_names. promex, the default, is HAProxy's
 * own exporter's way: a server is labelled `proxy` and `server`, so that a
 * family joins haproxy_server_status with no relabelling; a breaker's
 * state is a `state` label with one sample per state (1 for the state it
 * is in), so that max() and sum() across agents mean something; and no
 * name says "breaker" twice. legacy writes the names and labels of the
 * builds before (`backend`, a state as 0/1/2), for one release, so that
 * dashboards and rules can move at their own pace; both writes each
 * family twice, under each name (docs/metrics.md, "Names").
 */
#include <stdlib.h>
#include <string.h>

#include "admin/metrics.h"
#include "admin/metrics_text.h"

/* How one pass over the per-server families names them. */
struct style {
	bool legacy;
	const char *label; /* the backend's label: proxy, or backend */
};

static const struct style promex_style = {false, "proxy"};
static const struct style legacy_style = {true, "backend"};

/* What one server's samples read: its entry and the HAProxy link's word
 * on it. */
struct server_row {
	const struct breaker_table_entry *e;
	bool capped;     /* its open breaker's drain held back by the ejection cap */
	uint32_t learnt; /* the maxconn capacity learning set for it; 0: none */
	const struct style *style;
};

/* Opens a per-server sample: name{proxy="B",server="S" -- the caller adds
 * any further labels, then closes it with server_sample_end(). */
static void server_sample_begin(struct strbuf *o, const char *name, const struct server_row *r)
{
	strbuf_printf(o, METRICS_PREFIX "%s{%s=\"", name, r->style->label);
	metrics_escape_label(o, r->e->backend);
	strbuf_puts(o, "\",server=\"");
	metrics_escape_label(o, r->e->server);
	strbuf_putc(o, '"');
}

static void server_sample_end(struct strbuf *o, uint64_t value)
{
	strbuf_printf(o, "} %llu\n", (unsigned long long)value);
}

static void server_sample(struct strbuf *o, const char *name, const struct server_row *r,
			  uint64_t value)
{
	server_sample_begin(o, name, r);
	server_sample_end(o, value);
}

static const enum breaker_outcome outcomes[] = {
	BREAKER_OUTCOME_SUCCESS, BREAKER_OUTCOME_CLIENT_ERROR, BREAKER_OUTCOME_BACKPRESSURE,
	BREAKER_OUTCOME_FAILURE, BREAKER_OUTCOME_IGNORED,
};
#define NB_OUTCOMES (sizeof(outcomes) / sizeof(outcomes[0]))

static const enum breaker_trip_rule trip_rules[] = {
	BREAKER_TRIP_FAILURE_STREAK, BREAKER_TRIP_FAILURE_RATE, BREAKER_TRIP_PROBE_FAILED,
	BREAKER_TRIP_WEDGED, BREAKER_TRIP_STALLED,
};
#define NB_TRIP_RULES (sizeof(trip_rules) / sizeof(trip_rules[0]))

static const enum breaker_state states[] = {BREAKER_CLOSED, BREAKER_OPEN, BREAKER_HALF_OPEN};

/* The transitions the state machine can make, always written. */
static bool transition_possible(enum breaker_state from, enum breaker_state to)
{
	return (from == BREAKER_CLOSED && to == BREAKER_OPEN) ||
	       (from == BREAKER_OPEN && to != BREAKER_OPEN) ||
	       (from == BREAKER_HALF_OPEN && to != BREAKER_HALF_OPEN);
}

/* The legacy gauge's numbers. */
static unsigned legacy_state_value(enum breaker_state s)
{
	return s == BREAKER_OPEN ? 1 : s == BREAKER_HALF_OPEN ? 2 : 0;
}

/* source says who saw the response: the SPOP observations, and in
 * steady-state mode the successes only HAProxy's counters saw (never one
 * of the former: breakers/counters.h). Disjoint, so that summing over source
 * gives every response, as every rate() and dashboard that ignores the
 * label already does; the counters' sample is written at 0 outside that
 * mode, so the family is the same whichever mode runs. */
static void requests_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	for (size_t i = 0; i < NB_OUTCOMES; i++) {
		server_sample_begin(o, name, r);
		strbuf_printf(o, ",outcome=\"%s\",source=\"spop\"",
			      breaker_outcome_name(outcomes[i]));
		server_sample_end(o, r->e->counters.outcomes[outcomes[i]]);
	}
	server_sample_begin(o, name, r);
	strbuf_puts(o, ",outcome=\"success\",source=\"haproxy_counters\"");
	server_sample_end(o, r->e->counters.counted_successes);
}

static void state_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	if (r->style->legacy) {
		server_sample(o, name, r, legacy_state_value(r->e->breaker.state));
		return;
	}
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		server_sample_begin(o, name, r);
		strbuf_printf(o, ",state=\"%s\"", breaker_state_name(states[i]));
		server_sample_end(o, r->e->breaker.state == states[i]);
	}
}

static void transitions_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	for (int from = BREAKER_CLOSED; from <= BREAKER_HALF_OPEN; from++) {
		for (int to = BREAKER_CLOSED; to <= BREAKER_HALF_OPEN; to++) {
			if (from == to)
				continue;
			uint64_t n = r->e->counters.transitions[breaker_transition_slot(from, to)];
			if (!n && !transition_possible(from, to))
				continue;
			server_sample_begin(o, name, r);
			strbuf_printf(o, ",from=\"%s\",to=\"%s\"", breaker_state_name(from),
				      breaker_state_name(to));
			server_sample_end(o, n);
		}
	}
}

static void streak_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	server_sample(o, name, r, r->e->breaker.failure_streak);
}

static void trips_in_a_row_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	server_sample(o, name, r, r->e->breaker.trips_in_a_row);
}

static void trips_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	for (size_t i = 0; i < NB_TRIP_RULES; i++) {
		server_sample_begin(o, name, r);
		strbuf_printf(o, ",rule=\"%s\"", breaker_trip_rule_name(trip_rules[i]));
		server_sample_end(o, r->e->counters.trips[trip_rules[i]]);
	}
}

/* The window as two integers: the rate is their ratio in PromQL, and a
 * volume below minimum_volume says why a high one did not open. */
static void window_volume_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	server_sample(o, name, r, breaker_window_volume(&r->e->breaker));
}

static void window_failures_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	server_sample(o, name, r, breaker_window_failures(&r->e->breaker));
}

static void ejection_capped_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	server_sample(o, name, r, r->e->breaker.state != BREAKER_CLOSED && r->capped);
}

/* The worker's own Retry-After (core/rest.c): rests it started, and
 * whether it rests now - its server drained unless the ejection cap holds
 * it back, its breaker untouched. */
static void rests_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	server_sample(o, name, r, r->e->breaker.rests);
}

static void resting_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	server_sample(o, name, r, breaker_is_resting(&r->e->breaker));
}

static void maxconn_learnt_of(struct strbuf *o, const char *name, const struct server_row *r)
{
	server_sample(o, name, r, r->learnt);
}

/* The per-server families. legacy_name NULL: new since the promex names,
 * so not in the legacy pass. */
static const struct server_family {
	const char *name, *legacy_name, *type, *help;
	const char *legacy_help; /* NULL: help */
	void (*samples)(struct strbuf *o, const char *name, const struct server_row *r);
} server_families[] = {
	{"server_responses_total", "worker_requests_total", "counter",
	 "Worker responses, by outcome; source spop: judged over SPOP, haproxy_counters: "
	 "successes steady-state mode did not notify (HAProxy-counter faults are in "
	 "faults_polled_total).",
	 NULL, requests_of},
	{"server_state", "breaker_state", "gauge",
	 "The breaker's state: 1 for the state it is in (closed, open or half_open), 0 for the "
	 "others.",
	 "Breaker state: 0 closed, 1 open, 2 half_open.", state_of},
	{"server_transitions_total", "breaker_transitions_total", "counter",
	 "Breaker state changes, by from and to.", NULL, transitions_of},
	{"server_failure_streak", "breaker_failure_streak", "gauge",
	 "Consecutive failures counted by the breaker.", NULL, streak_of},
	{"server_trips_in_a_row", "breaker_trips_in_a_row", "gauge",
	 "Trips with no healthy_for closed stretch between them: the open time doubles with each.",
	 NULL, trips_in_a_row_of},
	{"server_trips_total", "breaker_trips_total", "counter",
	 "Openings, by the rule that opened: failure_streak, failure_rate, probe_failed, wedged or "
	 "stalled.",
	 NULL, trips_of},
	{"server_window_volume", "breaker_window_volume", "gauge",
	 "Judged requests in the failure-rate window (backpressure is not judged).", NULL,
	 window_volume_of},
	{"server_window_failures", "breaker_window_failures", "gauge", "Failures among them.", NULL,
	 window_failures_of},
	{"server_ejection_capped", "breaker_ejection_capped", "gauge",
	 "1 while the breaker is open or half-open but the backend's ejection cap keeps its server "
	 "in full rotation.",
	 NULL, ejection_capped_of},
	{"server_rests_total", "worker_rests_total", "counter",
	 "Rests the worker asked for with Retry-After on a capacity status (bounded by "
	 "retry_after_max): no new requests meanwhile, its breaker untouched.",
	 NULL, rests_of},
	{"server_resting", "worker_resting", "gauge",
	 "1 while the worker rests (its Retry-After); sum() is the servers resting.", NULL,
	 resting_of},
	{"server_maxconn_learnt", NULL, "gauge",
	 "The maxconn capacity learning set on the server from its capacity statuses (0: none, "
	 "it runs at its own).",
	 NULL, maxconn_learnt_of},
};
#define NB_SERVER_FAMILIES (sizeof(server_families) / sizeof(server_families[0]))

/* The styles of the passes metrics_names asks for, in order; their count. */
static unsigned passes_of(enum metrics_names names, const struct style *passes[2])
{
	unsigned n = 0;
	if (names != METRICS_NAMES_LEGACY)
		passes[n++] = &promex_style;
	if (names != METRICS_NAMES_PROMEX)
		passes[n++] = &legacy_style;
	return n;
}

bool metrics_render_servers(const struct metrics_view *v, struct metrics_cursor *c,
			    struct strbuf *o, uint32_t budget)
{
	const struct style *passes[2];
	const unsigned nb = passes_of(c->names, passes) * NB_SERVER_FAMILIES;
	const struct breaker_table *t = v->table;

	if (c->detail == METRICS_DETAIL_BACKEND)
		c->family = nb; /* the sums went with the head */
	while (c->family < nb) {
		const struct style *style = passes[c->family / NB_SERVER_FAMILIES];
		const struct server_family *f = &server_families[c->family % NB_SERVER_FAMILIES];
		const char *name = style->legacy ? f->legacy_name : f->name;
		if (!name) {
			c->family++;
			continue;
		}
		if (c->index == 0) {
			/* A family's head goes out with at least one of its
			 * entries looked at, so a cut never writes it twice. */
			if (budget == 0)
				return false;
			metrics_family(o, name, f->type,
				       style->legacy && f->legacy_help ? f->legacy_help : f->help);
		}
		const struct breaker_table_entry *e;
		for (; (e = breaker_table_walk(t, &c->index, &budget)); c->index++) {
			const struct server_row r = {
				.e = e,
				.capped = v->capped && v->capped[c->index],
				.learnt = v->maxconn_learnt ? v->maxconn_learnt[c->index] : 0,
				.style = style,
			};
			f->samples(o, name, &r);
		}
		if (breaker_table_walk_cut(t, c->index))
			return false;
		c->family++;
		c->index = 0;
	}
	return true;
}

/* ==== metrics_detail = backend: the same, summed per backend ==== */

/* One backend's sums over its breakers, and what its dropped ones had
 * counted (core/breaker_table.c keeps that in the backend's record). */
struct backend_sums {
	uint32_t in_state[BREAKER_HALF_OPEN + 1];
	uint32_t resting;
	uint32_t capped;
	uint64_t learnt; /* the learnt limits' sum: what the backend takes at once */
	struct breaker_counters counters;
	uint64_t rests;
};

static void add_counters(struct breaker_counters *to, const struct breaker_counters *c)
{
	for (size_t i = 0; i < sizeof(to->outcomes) / sizeof(to->outcomes[0]); i++)
		to->outcomes[i] += c->outcomes[i];
	for (size_t i = 0; i < sizeof(to->transitions) / sizeof(to->transitions[0]); i++)
		to->transitions[i] += c->transitions[i];
	/* 64 bits here: a backend's sum may pass what one breaker keeps. */
	to->counted_successes += c->counted_successes;
}

/* Per slot of the table's backend records; NULL when out of memory. */
static struct backend_sums *sum_backends(const struct metrics_view *v, uint64_t *trips)
{
	const struct breaker_table *t = v->table;
	const struct backend_successes *b = &t->backends;
	struct backend_sums *sums = calloc((size_t)b->mask + 1, sizeof(*sums));

	if (!sums)
		return NULL;
	for (uint32_t i = 0; i < t->allocated; i++) {
		const struct breaker_table_entry *e = breaker_table_at(t, i);
		uint32_t slot;
		if (!e->in_use ||
		    (slot = backend_successes_slot(b, e->backend, e->backend_len)) == UINT32_MAX)
			continue;
		struct backend_sums *s = &sums[slot];
		s->in_state[e->breaker.state]++;
		s->resting += breaker_is_resting(&e->breaker);
		s->capped += e->breaker.state != BREAKER_CLOSED && v->capped && v->capped[i];
		s->learnt += v->maxconn_learnt ? v->maxconn_learnt[i] : 0;
		s->rests += e->breaker.rests;
		add_counters(&s->counters, &e->counters);
		for (size_t r = 0; r < NB_TRIP_RULES; r++)
			trips[(size_t)slot * NB_TRIP_RULES + r] += e->counters.trips[trip_rules[r]];
	}
	for (uint32_t slot = 0; slot <= b->mask; slot++) {
		const struct backend_success *rec = &b->slots[slot];
		if (!rec->hash)
			continue;
		add_counters(&sums[slot].counters, &rec->retired);
		sums[slot].rests += rec->retired_rests;
		for (size_t r = 0; r < NB_TRIP_RULES; r++)
			trips[(size_t)slot * NB_TRIP_RULES + r] += rec->retired.trips[trip_rules[r]];
	}
	return sums;
}

static void backend_sample_begin(struct strbuf *o, const char *name, const char *backend)
{
	strbuf_printf(o, METRICS_PREFIX "%s{proxy=\"", name);
	metrics_escape_label(o, backend);
	strbuf_putc(o, '"');
}

bool metrics_render_backends(const struct metrics_view *v, enum metrics_detail detail,
			     struct strbuf *o)
{
	static const char *const families[][3] = {
		{"backend_breakers", "gauge",
		 "Breakers of the backend, by state (metrics_detail = backend)."},
		{"backend_responses_total", "counter",
		 "server_responses_total summed over the backend's servers, those dropped since "
		 "included."},
		{"backend_transitions_total", "counter",
		 "server_transitions_total summed over the backend's servers."},
		{"backend_trips_total", "counter", "server_trips_total summed over the backend's servers."},
		{"backend_rests_total", "counter", "server_rests_total summed over the backend's servers."},
		{"backend_resting_servers", "gauge", "Servers of the backend resting now."},
		{"backend_ejection_capped_breakers", "gauge",
		 "Open breakers of the backend the ejection cap keeps in full rotation, over every "
		 "HAProxy."},
		{"backend_maxconn_learnt", "gauge",
		 "The maxconn capacity learning set, summed over the backend's servers (0: none)."},
	};
	const struct breaker_table *t = v->table;

	if (detail != METRICS_DETAIL_BACKEND)
		return true;
	const struct backend_successes *b = t ? &t->backends : NULL;
	bool any = b && b->slots;
	uint64_t *trips = any ? calloc(((size_t)b->mask + 1) * NB_TRIP_RULES, sizeof(*trips)) : NULL;
	struct backend_sums *sums = trips ? sum_backends(v, trips) : NULL;
	if (any && !sums) {
		free(trips);
		o->failed = true;
		return false;
	}
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		metrics_family(o, families[f][0], families[f][1], families[f][2]);
		for (uint32_t slot = 0; any && slot <= b->mask; slot++) {
			const char *name = b->slots[slot].name, *fam = families[f][0];
			const struct backend_sums *s = &sums[slot];
			if (!b->slots[slot].hash)
				continue;
			switch (f) {
			case 0:
				for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
					backend_sample_begin(o, fam, name);
					strbuf_printf(o, ",state=\"%s\"} %u\n",
						      breaker_state_name(states[i]),
						      s->in_state[states[i]]);
				}
				break;
			case 1:
				for (size_t i = 0; i < NB_OUTCOMES; i++) {
					backend_sample_begin(o, fam, name);
					strbuf_printf(o, ",outcome=\"%s\",source=\"spop\"} %llu\n",
						      breaker_outcome_name(outcomes[i]),
						      (unsigned long long)
							      s->counters.outcomes[outcomes[i]]);
				}
				backend_sample_begin(o, fam, name);
				strbuf_printf(o, ",outcome=\"success\",source=\"haproxy_counters\"} %llu\n",
					      (unsigned long long)s->counters.counted_successes);
				break;
			case 2:
				for (int from = BREAKER_CLOSED; from <= BREAKER_HALF_OPEN; from++)
					for (int to = BREAKER_CLOSED; to <= BREAKER_HALF_OPEN; to++) {
						uint64_t n = from == to ? 0 : s->counters.transitions
							[breaker_transition_slot(from, to)];
						if (from == to || (!n && !transition_possible(from, to)))
							continue;
						backend_sample_begin(o, fam, name);
						strbuf_printf(o, ",from=\"%s\",to=\"%s\"} %llu\n",
							      breaker_state_name(from),
							      breaker_state_name(to),
							      (unsigned long long)n);
					}
				break;
			case 3:
				for (size_t r = 0; r < NB_TRIP_RULES; r++) {
					backend_sample_begin(o, fam, name);
					strbuf_printf(o, ",rule=\"%s\"} %llu\n",
						      breaker_trip_rule_name(trip_rules[r]),
						      (unsigned long long)
							      trips[(size_t)slot * NB_TRIP_RULES + r]);
				}
				break;
			default: {
				uint64_t value = f == 4 ? s->rests
						 : f == 5 ? s->resting
						 : f == 6 ? s->capped
							  : s->learnt;
				backend_sample_begin(o, fam, name);
				strbuf_printf(o, "} %llu\n", (unsigned long long)value);
			}
			}
		}
	}
	free(sums);
	free(trips);
	return !o->failed;
}
