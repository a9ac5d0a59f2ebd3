/*
 * metrics.c - the Prometheus text exposition of the agent (see metrics.h).
 *
 * Every family is written whole: HELP, TYPE, then its samples, as the
 * format requires. Per-server families walk the table in entry order, which
 * is stable between scrapes (the recency list is not). Families that exist
 * whatever happened (every outcome, every possible transition, every
 * disconnect code) are written with zeros, so rate() has a start point.
 *
 * worker_requests_total counts SPOP observations (source="spop") and, in
 * steady-state mode, the successes SPOP was not told of, from HAProxy's
 * 1xx-3xx counters (source="haproxy_counters"). Faults HAProxy's
 * counters report (connect errors, server timeouts, aborted bodies,
 * redispatches) feed the breakers but are counted apart, by kind, in
 * faults_polled_total: they are deltas of counters that do not map to one
 * request each (3.x counts some response errors twice), so adding them to
 * a per-request family would make its rates lie.
 */
#include <string.h>

#include "admin/metrics.h"

void metrics_escape_label(struct strbuf *out, const char *v)
{
	const char *run = v;
	for (; *v; v++) {
		const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
		if (!esc)
			continue;
		strbuf_append(out, run, (size_t)(v - run));
		strbuf_puts(out, esc);
		run = v + 1;
	}
	strbuf_append(out, run, (size_t)(v - run));
}

static void family(struct strbuf *o, const char *name, const char *type, const char *help)
{
	strbuf_printf(o, "# HELP " METRICS_PREFIX "%s %s\n# TYPE " METRICS_PREFIX "%s %s\n", name,
		      help, name, type);
}

/* A sample with no label, or one label. */
static void sample(struct strbuf *o, const char *name, uint64_t value)
{
	strbuf_printf(o, METRICS_PREFIX "%s %llu\n", name, (unsigned long long)value);
}

static void sample1(struct strbuf *o, const char *name, const char *label, const char *lvalue,
		    uint64_t value)
{
	strbuf_printf(o, METRICS_PREFIX "%s{%s=\"", name, label);
	metrics_escape_label(o, lvalue);
	strbuf_printf(o, "\"} %llu\n", (unsigned long long)value);
}

/* Opens a per-server sample: name{backend="B",server="S" -- the caller
 * adds any further labels, then closes it with server_sample_end(). */
static void server_sample_begin(struct strbuf *o, const char *name,
				const struct breaker_table_entry *e)
{
	strbuf_printf(o, METRICS_PREFIX "%s{backend=\"", name);
	metrics_escape_label(o, e->backend);
	strbuf_puts(o, "\",server=\"");
	metrics_escape_label(o, e->server);
	strbuf_putc(o, '"');
}

static void server_sample_end(struct strbuf *o, uint64_t value)
{
	strbuf_printf(o, "} %llu\n", (unsigned long long)value);
}

static const enum breaker_outcome outcomes[] = {
	BREAKER_OUTCOME_SUCCESS, BREAKER_OUTCOME_CLIENT_ERROR, BREAKER_OUTCOME_BACKPRESSURE,
	BREAKER_OUTCOME_FAILURE, BREAKER_OUTCOME_IGNORED,
};

/* The transitions the state machine can make, always written. */
static bool transition_possible(enum breaker_state from, enum breaker_state to)
{
	return (from == BREAKER_CLOSED && to == BREAKER_OPEN) ||
	       (from == BREAKER_OPEN && to != BREAKER_OPEN) ||
	       (from == BREAKER_HALF_OPEN && to != BREAKER_HALF_OPEN);
}

static unsigned state_value(enum breaker_state s)
{
	switch (s) {
	case BREAKER_CLOSED:
		return 0;
	case BREAKER_OPEN:
		return 1;
	case BREAKER_HALF_OPEN:
		return 2;
	}
	return 0;
}

/* source says who saw the response: the SPOP observations, and in
 * steady-state mode the successes only HAProxy's counters saw (never one
 * of the former: admin/counters.h). Disjoint, so that summing over source
 * gives every response, as every rate() and dashboard that ignores the
 * label already does; the counters' sample is written at 0 outside that
 * mode, so the family is the same whichever mode runs. */
static void requests_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	for (size_t i = 0; i < sizeof(outcomes) / sizeof(outcomes[0]); i++) {
		server_sample_begin(o, "worker_requests_total", e);
		strbuf_printf(o, ",outcome=\"%s\",source=\"spop\"",
			      breaker_outcome_name(outcomes[i]));
		server_sample_end(o, e->counters.outcomes[outcomes[i]]);
	}
	server_sample_begin(o, "worker_requests_total", e);
	strbuf_puts(o, ",outcome=\"success\",source=\"haproxy_counters\"");
	server_sample_end(o, e->counters.counted_successes);
}

static void state_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	server_sample_begin(o, "breaker_state", e);
	server_sample_end(o, state_value(e->breaker.state));
}

static void transitions_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	for (int from = BREAKER_CLOSED; from <= BREAKER_HALF_OPEN; from++) {
		for (int to = BREAKER_CLOSED; to <= BREAKER_HALF_OPEN; to++) {
			if (from == to)
				continue;
			uint64_t n = e->counters.transitions[breaker_transition_slot(from, to)];
			if (!n && !transition_possible(from, to))
				continue;
			server_sample_begin(o, "breaker_transitions_total", e);
			strbuf_printf(o, ",from=\"%s\",to=\"%s\"", breaker_state_name(from),
				      breaker_state_name(to));
			server_sample_end(o, n);
		}
	}
}

static void streak_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	server_sample_begin(o, "breaker_failure_streak", e);
	server_sample_end(o, e->breaker.failure_streak);
}

static void trips_in_a_row_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	server_sample_begin(o, "breaker_trips_in_a_row", e);
	server_sample_end(o, e->breaker.trips_in_a_row);
}

static const enum breaker_trip_rule trip_rules[] = {
	BREAKER_TRIP_FAILURE_STREAK, BREAKER_TRIP_FAILURE_RATE, BREAKER_TRIP_PROBE_FAILED,
	BREAKER_TRIP_WEDGED, BREAKER_TRIP_STALLED,
};

static void trips_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	for (size_t i = 0; i < sizeof(trip_rules) / sizeof(trip_rules[0]); i++) {
		server_sample_begin(o, "breaker_trips_total", e);
		strbuf_printf(o, ",rule=\"%s\"", breaker_trip_rule_name(trip_rules[i]));
		server_sample_end(o, e->counters.trips[trip_rules[i]]);
	}
}

/* The window as two integers: the rate is their ratio in PromQL, and a
 * volume below minimum_volume says why a high one did not open. */
static void window_volume_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	server_sample_begin(o, "breaker_window_volume", e);
	server_sample_end(o, breaker_window_volume(&e->breaker));
}

static void window_failures_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	server_sample_begin(o, "breaker_window_failures", e);
	server_sample_end(o, breaker_window_failures(&e->breaker));
}

static void ejection_capped_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	server_sample_begin(o, "breaker_ejection_capped", e);
	server_sample_end(o, e->breaker.state != BREAKER_CLOSED && capped);
}

/* The worker's own Retry-After (core/rest.c): rests it started, and
 * whether it rests now - its server drained unless the ejection cap holds
 * it back (backend_ejection_capped_servers), its breaker untouched. */
static void rests_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	server_sample_begin(o, "worker_rests_total", e);
	server_sample_end(o, e->breaker.rests);
}

static void resting_of(struct strbuf *o, const struct breaker_table_entry *e, bool capped)
{
	server_sample_begin(o, "worker_resting", e);
	server_sample_end(o, breaker_is_resting(&e->breaker));
}

/* The families with one sample (or a few) per server: what grows with
 * the fleet, and so what is rendered a slice at a time. */
static const struct {
	const char *name, *type, *help;
	/* capped: the HAProxy link holds the breaker's drain back */
	void (*samples)(struct strbuf *o, const struct breaker_table_entry *e, bool capped);
} server_families[] = {
	{"worker_requests_total", "counter",
	 "Worker responses, by outcome; source spop: judged over SPOP, haproxy_counters: "
	 "successes steady-state mode did not notify (HAProxy-counter faults are in "
	 "faults_polled_total).",
	 requests_of},
	{"breaker_state", "gauge", "Breaker state: 0 closed, 1 open, 2 half_open.", state_of},
	{"breaker_transitions_total", "counter", "Breaker state changes, by from and to.",
	 transitions_of},
	{"breaker_failure_streak", "gauge", "Consecutive failures counted by the breaker.",
	 streak_of},
	{"breaker_trips_in_a_row", "gauge",
	 "Trips with no healthy_for closed stretch between them: the open time doubles with each.",
	 trips_in_a_row_of},
	{"breaker_trips_total", "counter",
	 "Openings, by the rule that opened: failure_streak, failure_rate, probe_failed, wedged or stalled.",
	 trips_of},
	{"breaker_window_volume", "gauge",
	 "Judged requests in the failure-rate window (backpressure is not judged).",
	 window_volume_of},
	{"breaker_window_failures", "gauge", "Failures among them.", window_failures_of},
	{"breaker_ejection_capped", "gauge",
	 "1 while the breaker is open or half-open but the backend's ejection cap keeps its server "
	 "in full rotation.",
	 ejection_capped_of},
	{"worker_rests_total", "counter",
	 "Rests the worker asked for with Retry-After on a capacity status (bounded by "
	 "retry_after_max): no new requests meanwhile, its breaker untouched.",
	 rests_of},
	{"worker_resting", "gauge",
	 "1 while the worker rests (its Retry-After); sum() is the servers resting.", resting_of},
};

bool metrics_render_servers(const struct breaker_table *t, const bool *capped,
			    struct metrics_cursor *c,
			    struct strbuf *o, uint32_t budget)
{
	const size_t nb = sizeof(server_families) / sizeof(server_families[0]);

	while (c->family < nb) {
		if (c->index == 0) {
			/* A family's head goes out with at least one of its
			 * entries looked at, so a cut never writes it twice. */
			if (budget == 0)
				return false;
			family(o, server_families[c->family].name, server_families[c->family].type,
			       server_families[c->family].help);
		}
		for (; t && c->index < t->allocated; c->index++) {
			if (budget == 0)
				return false;
			budget--;
			const struct breaker_table_entry *e = breaker_table_at(t, c->index);
			if (e->in_use)
				server_families[c->family].samples(o, e,
								   capped && capped[c->index]);
		}
		c->family++;
		c->index = 0;
	}
	return true;
}

static void render_table(const struct metrics_source *s, struct strbuf *o)
{
	const struct breaker_table *t = s->table;

	family(o, "breaker_table_entries", "gauge", "Servers tracked.");
	sample(o, "breaker_table_entries", t ? t->count : 0);
	family(o, "breaker_table_capacity", "gauge", "Servers that can be tracked (max_breakers).");
	sample(o, "breaker_table_capacity", t ? t->max_entries : 0);
	family(o, "breaker_table_evictions_total", "counter",
	       "Idle healthy breakers dropped to make room.");
	sample(o, "breaker_table_evictions_total", t ? t->evictions : 0);
	family(o, "breaker_table_full_refusals_total", "counter",
	       "Observations refused: table full and nothing evictable.");
	sample(o, "breaker_table_full_refusals_total", t ? t->full_refusals : 0);
}

/* Writes a bound in microseconds as seconds, e.g. 2500 -> "0.0025". */
static void seconds_of_us(char *buf, size_t size, uint32_t us)
{
	int n = snprintf(buf, size, "%u.%06u", us / 1000000u, us % 1000000u);
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
}

static void render_histogram(struct strbuf *o, const char *name, const char *help,
			     const struct histogram *h)
{
	static const struct histogram zero;
	char le[32];
	uint64_t cumulative = 0;

	if (!h)
		h = &zero;
	family(o, name, "histogram", help);
	for (unsigned i = 0; i < HISTOGRAM_BOUNDS; i++) {
		cumulative += h->buckets[i];
		seconds_of_us(le, sizeof(le), histogram_bounds_us[i]);
		strbuf_printf(o, METRICS_PREFIX "%s_bucket{le=\"%s\"} %llu\n", name, le,
			      (unsigned long long)cumulative);
	}
	cumulative += h->buckets[HISTOGRAM_BOUNDS];
	strbuf_printf(o, METRICS_PREFIX "%s_bucket{le=\"+Inf\"} %llu\n", name,
		      (unsigned long long)cumulative);
	strbuf_printf(o, METRICS_PREFIX "%s_sum %llu.%09llu\n", name,
		      (unsigned long long)(h->sum_ns / 1000000000u),
		      (unsigned long long)(h->sum_ns % 1000000000u));
	/* The buckets' total, not h->count: the two are equal, but a sum read
	 * off the same numbers can never disagree with +Inf. */
	strbuf_printf(o, METRICS_PREFIX "%s_count %llu\n", name, (unsigned long long)cumulative);
}

static void render_spop(const struct metrics_source *s, struct strbuf *o)
{
	static const struct agent_stats zero;
	const struct agent_stats *a = s->agent ? s->agent : &zero;

	family(o, "spop_connections_total", "counter",
	       "SPOP connections from HAProxy: accepted, or refused (out of descriptors, none "
	       "to close for room).");
	sample1(o, "spop_connections_total", "result", "accepted", a->connections_accepted);
	sample1(o, "spop_connections_total", "result", "refused", a->connections_refused);
	family(o, "spop_connections_closed_total", "counter",
	       "SPOP connections the agent closed: silent for idle_timeout, or the longest-idle "
	       "one, evicted to make room for a new one.");
	sample1(o, "spop_connections_closed_total", "reason", "idle_timeout", a->connections_idle);
	sample1(o, "spop_connections_closed_total", "reason", "evicted", a->connections_evicted);
	family(o, "connections_refused_total", "counter",
	       "Connections closed at accept, before anything was read, by listener: from an "
	       "address the allowlist (allow, admin_allow) does not name.");
	strbuf_puts(o, METRICS_PREFIX "connections_refused_total{listener=\"spop\",reason=\"not_allowed\"} ");
	strbuf_printf(o, "%llu\n", (unsigned long long)a->connections_not_allowed);
	strbuf_puts(o, METRICS_PREFIX "connections_refused_total{listener=\"admin\",reason=\"not_allowed\"} ");
	strbuf_printf(o, "%llu\n", (unsigned long long)s->admin_not_allowed);
	strbuf_puts(o, METRICS_PREFIX "connections_refused_total{listener=\"agent_check\",reason=\"not_allowed\"} ");
	strbuf_printf(o, "%llu\n", (unsigned long long)s->agent_check_not_allowed);
	family(o, "spop_tls_handshakes_total", "counter",
	       "TLS handshakes on the SPOP listeners (tls_cert): completed, or failed (no client "
	       "certificate, one no CA of tls_ca signed, not TLS at all).");
	sample1(o, "spop_tls_handshakes_total", "result", "ok", a->tls_handshakes);
	sample1(o, "spop_tls_handshakes_total", "result", "failed", a->tls_handshake_failures);
	family(o, "spop_connections_open", "gauge", "SPOP connections open now.");
	sample(o, "spop_connections_open", s->connections_open);

	family(o, "spop_frames_total", "counter", "SPOP frames received, by type.");
	sample1(o, "spop_frames_total", "type", "hello", a->hellos);
	sample1(o, "spop_frames_total", "type", "healthcheck", a->healthchecks);
	sample1(o, "spop_frames_total", "type", "notify", a->notifies);
	sample1(o, "spop_frames_total", "type", "haproxy_disconnect", a->haproxy_disconnects);

	family(o, "spop_acks_held_total", "counter",
	       "ACKs held until the watched-map entry their response caused was in HAProxy "
	       "(steady-state mode).");
	sample(o, "spop_acks_held_total", a->acks_held);

	family(o, "spop_disconnects_sent_total", "counter",
	       "AGENT-DISCONNECT frames sent, by SPOP status code (0 normal; 99 any code above 13).");
	for (unsigned i = 0; i < AGENT_STATUS_SLOTS; i++) {
		char code[8];
		snprintf(code, sizeof(code), "%u", i < AGENT_STATUS_SLOTS - 1 ? i : 99u);
		sample1(o, "spop_disconnects_sent_total", "code", code, a->disconnects_sent[i]);
	}

	family(o, "spop_observations_refused_total", "counter",
	       "breaker-observe messages answered with an error (bad arguments, table full).");
	sample(o, "spop_observations_refused_total", s->observations_refused);

	/* A spoe-message the agent has no handler for: a misspelt name in
	 * the SPOE file shows here instead of silently doing nothing. */
	family(o, "spop_unknown_messages_total", "counter",
	       "SPOE messages no handler knows (answered with no variables).");
	sample(o, "spop_unknown_messages_total", s->unknown_messages);

	family(o, "retry_after_ignored_total", "counter",
	       "Retry-After values of capacity statuses not honoured, by reason: date (an "
	       "HTTP-date), invalid (neither delta-seconds nor a date).");
	sample1(o, "retry_after_ignored_total", "reason", "date", s->retry_after_dates);
	sample1(o, "retry_after_ignored_total", "reason", "invalid", s->retry_after_invalid);

	family(o, "spop_steady_messages_total", "counter",
	       "breaker-observe messages from an HAProxy in steady-state mode (mode=steady).");
	sample(o, "spop_steady_messages_total", s->steady_messages);
	/* The one wiring mistake the breakers cannot show: successes that
	 * never come (docs/haproxy.md, "Steady-state mode"). */
	family(o, "steady_state_unkept", "gauge",
	       "1 while HAProxy sends in steady-state mode and no runtime_api of the agent keeps "
	       "its breaker-watched.map: failure streaks only grow.");
	sample(o, "steady_state_unkept", s->steady_support == STEADY_SUPPORT_UNKEPT);

	render_histogram(o, "notify_duration_seconds",
			 "Time to decode, judge and answer one NOTIFY frame (the mean over the frames of one read).", &a->notify_time);

	/* What every ACK may wait behind: the loop's work between two waits
	 * on epoll, whatever it was (a scrape, a look, a burst of frames). */
	render_histogram(o, "loop_iteration_seconds",
			 "Work done by one turn of the event loop between two waits.", s->loop_busy);
	family(o, "loop_iteration_max_seconds", "gauge", "The longest turn of the event loop since start.");
	strbuf_printf(o, METRICS_PREFIX "loop_iteration_max_seconds %.6f\n",
		      (double)s->loop_busy_max_ns / 1e9);
}

/* One sample per backend with breakers: the agent's drains, or its
 * breakers held back by the ejection cap. */
static void backend_samples(struct strbuf *o, const char *name, const struct metrics_runtime_api *r,
			    bool capped)
{
	for (uint32_t k = 0; k < r->nb_backends; k++) {
		const struct ejection_backend *b = &r->backends[k];
		if (!b->has_breakers)
			continue;
		strbuf_printf(o, METRICS_PREFIX "%s{socket=\"", name);
		metrics_escape_label(o, r->address);
		strbuf_puts(o, "\",backend=\"");
		metrics_escape_label(o, b->name);
		strbuf_printf(o, "\"} %u\n", capped ? b->capped : b->drained_by_agent);
	}
}

static void render_enforcement(const struct metrics_source *s, struct strbuf *o)
{
	static const struct enforce_stats zero;
	const struct enforce_stats *e = s->enforce ? s->enforce : &zero;
	static const enum enforce_mode modes[] = {ENFORCE_RUNTIME_API, ENFORCE_AGENT_CHECK,
						  ENFORCE_NONE};

	family(o, "enforcement_mode", "gauge", "How decisions reach HAProxy: 1 for the mode in use.");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		sample1(o, "enforcement_mode", "mode", enforce_mode_name(modes[i]),
			modes[i] == s->enforce_mode);

	family(o, "runtime_api_commands_total", "counter",
	       "Commands the breakers wanted sent to HAProxy, by result (none: planned under enforce none, not sent).");
	sample1(o, "runtime_api_commands_total", "result", "ok", e->commands_ok);
	sample1(o, "runtime_api_commands_total", "result", "refused", e->commands_refused);
	sample1(o, "runtime_api_commands_total", "result", "failed", e->commands_failed);
	sample1(o, "runtime_api_commands_total", "result", "none", e->commands_not_sent);

	family(o, "runtime_api_socket_commands_total", "counter",
	       "Commands through each Runtime API socket, looks included, by result.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++) {
		const struct metrics_runtime_api *r = &s->runtime_api[i];
		static const char *const results[] = {"answered", "failed", "dropped"};
		const uint64_t values[] = {r->stats->commands_ok, r->stats->commands_failed,
					   r->stats->dropped};
		for (unsigned k = 0; k < 3; k++) {
			strbuf_puts(o, METRICS_PREFIX "runtime_api_socket_commands_total{socket=\"");
			metrics_escape_label(o, r->address);
			strbuf_printf(o, "\",result=\"%s\"} %llu\n", results[k],
				      (unsigned long long)values[k]);
		}
	}
	family(o, "runtime_api_connect_attempts_total", "counter",
	       "Connections attempted to each Runtime API socket.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++)
		sample1(o, "runtime_api_connect_attempts_total", "socket", s->runtime_api[i].address,
			s->runtime_api[i].stats->connects);
	family(o, "runtime_api_connect_failures_total", "counter",
	       "Connections to each Runtime API socket refused or failed.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++)
		sample1(o, "runtime_api_connect_failures_total", "socket", s->runtime_api[i].address,
			s->runtime_api[i].stats->connect_failures);
	family(o, "runtime_api_timeouts_total", "counter",
	       "Exchanges with each Runtime API socket that ran out of time.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++)
		sample1(o, "runtime_api_timeouts_total", "socket", s->runtime_api[i].address,
			s->runtime_api[i].stats->timeouts);
	family(o, "runtime_api_up", "gauge",
	       "1 when the last exchange with the Runtime API socket succeeded.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++)
		sample1(o, "runtime_api_up", "socket", s->runtime_api[i].address,
			s->runtime_api[i].reachable);

	family(o, "haproxy_looks_total", "counter",
	       "Looks at HAProxy (show info, show map, show stat, show servers state), by result.");
	sample1(o, "haproxy_looks_total", "result", "ok", e->reconciliations);
	sample1(o, "haproxy_looks_total", "result", "failed", e->looks_failed);
	family(o, "haproxy_restarts_total", "counter", "New HAProxy processes seen (reloads, restarts).");
	sample(o, "haproxy_restarts_total", e->haproxy_restarts);
	family(o, "faults_polled_total", "counter",
	       "Faults SPOE never sees, from HAProxy's per-server counters, by kind.");
	sample1(o, "faults_polled_total", "kind", "connect_error", e->connect_errors);
	sample1(o, "faults_polled_total", "kind", "response_error", e->response_errors);
	sample1(o, "faults_polled_total", "kind", "aborted_body", e->aborted_bodies);
	sample1(o, "faults_polled_total", "kind", "redispatch", e->redispatches);
	family(o, "capacity_retries_total", "counter",
	       "Capacity statuses HAProxy retried on another worker (retry-on, option redispatch): "
	       "backpressure, never a fault.");
	sample(o, "capacity_retries_total", e->capacity_retries);
	family(o, "breakers_dropped_total", "counter", "Breakers dropped: no HAProxy has the server any more.");
	sample(o, "breakers_dropped_total", e->dropped_breakers);
	/* Per backend and HAProxy: the cap counts each HAProxy apart. Only
	 * backends with breakers (HTTP ones), so the agent's own is not one. */
	family(o, "backend_ejected_servers", "gauge",
	       "Servers of the backend the agent holds drained, per HAProxy.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++)
		backend_samples(o, "backend_ejected_servers", &s->runtime_api[i], false);
	family(o, "backend_ejection_capped_servers", "gauge",
	       "Open breakers (and resting workers) of the backend the ejection cap keeps in "
	       "rotation, per HAProxy.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++)
		backend_samples(o, "backend_ejection_capped_servers", &s->runtime_api[i], true);
	family(o, "ejections_held_back_total", "counter",
	       "Open breakers (and resting workers) whose drain the backend's ejection cap held "
	       "back.");
	sample(o, "ejections_held_back_total", e->ejections_held_back);
	family(o, "ejections_released_total", "counter",
	       "Held-back drains made once room freed under the ejection cap.");
	sample(o, "ejections_released_total", e->ejections_released);
}

/* The state snapshot: whether it is being written, where the breakers
 * came from. Seconds since the last write are a gauge an alert can watch. */
static void render_state(const struct metrics_source *s, struct strbuf *o)
{
	static const struct state_store_stats none;
	static const enum state_source sources[] = {STATE_SOURCE_OFF, STATE_SOURCE_FRESH,
						     STATE_SOURCE_SNAPSHOT, STATE_SOURCE_REFUSED};
	const struct state_store_stats *st = s->state ? s->state : &none;

	family(o, "state_writes_total", "counter", "State snapshots written, by result.");
	sample1(o, "state_writes_total", "result", "ok", st->writes);
	sample1(o, "state_writes_total", "result", "failed", st->write_failures);
	family(o, "state_last_write_age_seconds", "gauge",
	       "Seconds since the last snapshot was written (absent before the first).");
	if (st->last_write_mono_ms && s->now_ms >= st->last_write_mono_ms)
		sample(o, "state_last_write_age_seconds",
		       (s->now_ms - st->last_write_mono_ms) / 1000);
	family(o, "state_breakers_restored", "gauge", "Breakers restored from the snapshot at start.");
	sample(o, "state_breakers_restored", st->restored);
	family(o, "state_source", "gauge",
	       "Where this process's breakers came from: 1 for the source.");
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		sample1(o, "state_source", "source", state_source_name(sources[i]),
			sources[i] == st->source);
}

/* The operator's word: what is held, paused, released right now, and
 * the control socket's commands (docs/operating.md, "During an incident"). */
static void render_operator(const struct metrics_source *s, struct strbuf *o)
{
	uint64_t out = 0, in = 0;
	const struct operator_hand *h = s->hand;
	for (uint32_t i = 0; h && i < h->nb_holds; i++) {
		if (h->holds[i].hold == BREAKER_HOLD_OUT)
			out++;
		else
			in++;
	}
	family(o, "operator_holds", "gauge",
	       "Servers the operator holds out (drained) or in (never drained).");
	sample1(o, "operator_holds", "hold", "out", out);
	sample1(o, "operator_holds", "hold", "in", in);
	family(o, "operator_paused_backends", "gauge",
	       "Backends the operator paused: observed, not acted on.");
	sample(o, "operator_paused_backends", h ? h->nb_paused : 0);
	family(o, "operator_released", "gauge",
	       "1 while the operator has released the agent: it holds nothing in HAProxy.");
	sample(o, "operator_released", h && h->released);
	family(o, "control_commands_total", "counter",
	       "Commands on the control socket, by result (refused: answered with an error).");
	sample1(o, "control_commands_total", "result", "done", s->control_done);
	sample1(o, "control_commands_total", "result", "refused", s->control_refused);
}

bool metrics_render_head(const struct metrics_source *s, struct strbuf *o)
{
	family(o, "build_info", "gauge", "Always 1; the agent's version as a label.");
	sample1(o, "build_info", "version", s->version ? s->version : "unknown", 1);
	/* The log never blocks the agent: what it could not write is counted. */
	family(o, "log_lines_dropped_total", "counter",
	       "Log lines lost because the log output did not keep up.");
	sample(o, "log_lines_dropped_total", s->log_lines_dropped);
	family(o, "log_lines_suppressed_total", "counter",
	       "Log lines held back by the rate limit of their call site (summed up in the log).");
	sample(o, "log_lines_suppressed_total", s->log_lines_suppressed);
	render_table(s, o);
	render_operator(s, o);
	render_spop(s, o);
	render_enforcement(s, o);
	render_state(s, o);
	return !o->failed;
}
