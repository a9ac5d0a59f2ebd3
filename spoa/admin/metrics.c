/*
 * metrics.c - the Prometheus text exposition of the agent (see metrics.h).
 *
 * Every family is written whole: HELP, TYPE, then its samples, as the
 * format requires. Per-server families walk the table in entry order, which
 * is stable between scrapes (the recency list is not). Families that exist
 * whatever happened (every outcome, every possible transition, every
 * disconnect code) are written with zeros, so rate() has a start point.
 *
 * The per-server families, and their sums per backend, are
 * metrics_servers.c's; the text primitives both write with (a family's
 * HELP and TYPE, a label escaped) are metrics_text.c's.
 * server_responses_total counts SPOP observations (source="spop") and, in
 * steady-state mode, the successes SPOP was not told of, from HAProxy's
 * 1xx-3xx counters (source="haproxy_counters"). Faults HAProxy's
 * counters report (connect errors, server timeouts, aborted bodies,
 * redispatches) feed the breakers but are counted apart, by kind, in
 * faults_polled_total: they are deltas of counters that do not map to one
 * request each (3.x counts some response errors twice), so adding them to
 * a per-request family would make its rates lie.
 */
#include <stdio.h>
#include <string.h>

#include "admin/metrics.h"
#include "admin/metrics_text.h"

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

/* A family of one sample with no label, under its promex name, its
 * legacy one, or both (metrics_servers.c says why two). */
static void single(struct strbuf *o, enum metrics_names names, const char *name,
		   const char *legacy_name, const char *type, const char *help, uint64_t value)
{
	if (names != METRICS_NAMES_LEGACY) {
		metrics_family(o, name, type, help);
		sample(o, name, value);
	}
	if (names != METRICS_NAMES_PROMEX) {
		metrics_family(o, legacy_name, type, help);
		sample(o, legacy_name, value);
	}
}

static void render_table(const struct metrics_source *s, struct strbuf *o)
{
	const struct breaker_table *t = s->table;

	single(o, s->names, "table_entries", "breaker_table_entries", "gauge", "Servers tracked.",
	       t ? t->count : 0);
	single(o, s->names, "table_capacity", "breaker_table_capacity", "gauge",
	       "Servers that can be tracked (max_breakers).", t ? t->max_entries : 0);
	single(o, s->names, "table_evictions_total", "breaker_table_evictions_total", "counter",
	       "Idle healthy breakers dropped to make room.", t ? t->evictions : 0);
	single(o, s->names, "table_full_refusals_total", "breaker_table_full_refusals_total",
	       "counter", "Observations refused: table full and nothing evictable.",
	       t ? t->full_refusals : 0);
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
	metrics_family(o, name, "histogram", help);
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

	metrics_family(o, "spop_connections_total", "counter",
	       "SPOP connections from HAProxy: accepted, or refused (out of descriptors, none "
	       "to close for room).");
	sample1(o, "spop_connections_total", "result", "accepted", a->connections_accepted);
	sample1(o, "spop_connections_total", "result", "refused", a->connections_refused);
	metrics_family(o, "spop_connections_closed_total", "counter",
	       "SPOP connections the agent closed: silent for idle_timeout, or the longest-idle "
	       "one, evicted to make room for a new one.");
	sample1(o, "spop_connections_closed_total", "reason", "idle_timeout", a->connections_idle);
	sample1(o, "spop_connections_closed_total", "reason", "evicted", a->connections_evicted);
	metrics_family(o, "connections_refused_total", "counter",
	       "Connections closed at accept, before anything was read, by listener: from an "
	       "address the allowlist (allow, admin_allow) does not name.");
	strbuf_puts(o, METRICS_PREFIX "connections_refused_total{listener=\"spop\",reason=\"not_allowed\"} ");
	strbuf_printf(o, "%llu\n", (unsigned long long)a->connections_not_allowed);
	strbuf_puts(o, METRICS_PREFIX "connections_refused_total{listener=\"admin\",reason=\"not_allowed\"} ");
	strbuf_printf(o, "%llu\n", (unsigned long long)s->admin_not_allowed);
	strbuf_puts(o, METRICS_PREFIX "connections_refused_total{listener=\"agent_check\",reason=\"not_allowed\"} ");
	strbuf_printf(o, "%llu\n", (unsigned long long)s->agent_check_not_allowed);
	metrics_family(o, "spop_tls_handshakes_total", "counter",
	       "TLS handshakes on the SPOP listeners (tls_cert): completed, or failed (no client "
	       "certificate, one no CA of tls_ca signed, not TLS at all).");
	sample1(o, "spop_tls_handshakes_total", "result", "ok", a->tls_handshakes);
	sample1(o, "spop_tls_handshakes_total", "result", "failed", a->tls_handshake_failures);
	metrics_family(o, "spop_connections_open", "gauge", "SPOP connections open now.");
	sample(o, "spop_connections_open", s->connections_open);

	metrics_family(o, "spop_frames_total", "counter", "SPOP frames received, by type.");
	sample1(o, "spop_frames_total", "type", "hello", a->hellos);
	sample1(o, "spop_frames_total", "type", "healthcheck", a->healthchecks);
	sample1(o, "spop_frames_total", "type", "notify", a->notifies);
	sample1(o, "spop_frames_total", "type", "haproxy_disconnect", a->haproxy_disconnects);

	metrics_family(o, "spop_acks_held_total", "counter",
	       "ACKs held until the watched-map entry their response caused was in HAProxy "
	       "(steady-state mode).");
	sample(o, "spop_acks_held_total", a->acks_held);

	metrics_family(o, "spop_disconnects_sent_total", "counter",
	       "AGENT-DISCONNECT frames sent, by SPOP status code (0 normal; 99 any code above 13).");
	for (unsigned i = 0; i < AGENT_STATUS_SLOTS; i++) {
		char code[8];
		snprintf(code, sizeof(code), "%u", i < AGENT_STATUS_SLOTS - 1 ? i : 99u);
		sample1(o, "spop_disconnects_sent_total", "code", code, a->disconnects_sent[i]);
	}

	metrics_family(o, "spop_observations_refused_total", "counter",
	       "breaker-observe messages answered with an error (bad arguments, table full).");
	sample(o, "spop_observations_refused_total", s->observations_refused);

	/* A spoe-message the agent has no handler for: a misspelt name in
	 * the SPOE file shows here instead of silently doing nothing. */
	metrics_family(o, "spop_unknown_messages_total", "counter",
	       "SPOE messages no handler knows (answered with no variables).");
	sample(o, "spop_unknown_messages_total", s->unknown_messages);

	metrics_family(o, "retry_after_ignored_total", "counter",
	       "Retry-After values of capacity statuses not honoured, by reason: date (an "
	       "HTTP-date), invalid (neither delta-seconds nor a date).");
	sample1(o, "retry_after_ignored_total", "reason", "date", s->retry_after_dates);
	sample1(o, "retry_after_ignored_total", "reason", "invalid", s->retry_after_invalid);

	metrics_family(o, "spop_steady_messages_total", "counter",
	       "breaker-observe messages from an HAProxy in steady-state mode (mode=steady).");
	sample(o, "spop_steady_messages_total", s->steady_messages);
	/* The one wiring mistake the breakers cannot show: successes that
	 * never come (docs/haproxy.md, "Steady-state mode"). */
	metrics_family(o, "steady_state_unkept", "gauge",
	       "1 while HAProxy sends in steady-state mode and no runtime_api of the agent keeps "
	       "its breaker-watched.map: failure streaks only grow.");
	sample(o, "steady_state_unkept", s->steady_support == STEADY_SUPPORT_UNKEPT);

	render_histogram(o, "notify_duration_seconds",
			 "Time to decode, judge and answer one NOTIFY frame (the mean over the frames of one read).", &a->notify_time);

	/* What every ACK may wait behind: the loop's work between two waits
	 * on epoll, whatever it was (a scrape, a look, a burst of frames). */
	render_histogram(o, "loop_iteration_seconds",
			 "Work done by one turn of the event loop between two waits.", s->loop_busy);
	metrics_family(o, "loop_iteration_max_seconds", "gauge", "The longest turn of the event loop since start.");
	strbuf_printf(o, METRICS_PREFIX "loop_iteration_max_seconds %.6f\n",
		      (double)s->loop_busy_max_ns / 1e9);
}

/* One sample per backend with breakers: the agent's drains, or its
 * breakers held back by the ejection cap; label: the backend's, proxy or
 * (legacy) backend. */
static void backend_samples(struct strbuf *o, const char *name, const char *label,
			    const struct metrics_runtime_api *r, bool capped)
{
	for (uint32_t k = 0; k < r->nb_backends; k++) {
		const struct ejection_backend *b = &r->backends[k];
		if (!b->has_breakers)
			continue;
		strbuf_printf(o, METRICS_PREFIX "%s{socket=\"", name);
		metrics_escape_label(o, r->address);
		strbuf_printf(o, "\",%s=\"", label);
		metrics_escape_label(o, b->name);
		strbuf_printf(o, "\"} %u\n", capped ? b->capped : b->drained_by_agent);
	}
}

/* Per backend and HAProxy: the cap counts each HAProxy apart. Only
 * backends with breakers (HTTP ones), so the agent's own is not one. The
 * promex names differ from the legacy ones by more than the label, so
 * that both can be written at once. */
static void render_backend_ejections(const struct metrics_source *s, struct strbuf *o)
{
	static const struct {
		const char *name, *legacy_name, *help;
		bool capped;
	} families[] = {
		{"backend_servers_ejected", "backend_ejected_servers",
		 "Servers of the backend the agent holds drained, per HAProxy.", false},
		{"backend_servers_ejection_capped", "backend_ejection_capped_servers",
		 "Open breakers (and resting workers) of the backend the ejection cap keeps in "
		 "rotation, per HAProxy.",
		 true},
	};
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		if (s->names != METRICS_NAMES_LEGACY) {
			metrics_family(o, families[f].name, "gauge", families[f].help);
			for (unsigned i = 0; i < s->nb_runtime_api; i++)
				backend_samples(o, families[f].name, "proxy", &s->runtime_api[i],
						families[f].capped);
		}
		if (s->names != METRICS_NAMES_PROMEX) {
			metrics_family(o, families[f].legacy_name, "gauge", families[f].help);
			for (unsigned i = 0; i < s->nb_runtime_api; i++)
				backend_samples(o, families[f].legacy_name, "backend",
						&s->runtime_api[i], families[f].capped);
		}
	}
}

static void render_enforcement(const struct metrics_source *s, struct strbuf *o)
{
	static const struct enforce_stats zero;
	const struct enforce_stats *e = s->enforce ? s->enforce : &zero;
	static const enum enforce_mode modes[] = {ENFORCE_RUNTIME_API, ENFORCE_AGENT_CHECK,
						  ENFORCE_NONE};

	metrics_family(o, "enforcement_mode", "gauge", "How decisions reach HAProxy: 1 for the mode in use.");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		sample1(o, "enforcement_mode", "mode", enforce_mode_name(modes[i]),
			modes[i] == s->enforce_mode);

	metrics_family(o, "runtime_api_commands_total", "counter",
	       "Commands the breakers wanted sent to HAProxy, by result (none: planned under enforce none, not sent).");
	sample1(o, "runtime_api_commands_total", "result", "ok", e->commands_ok);
	sample1(o, "runtime_api_commands_total", "result", "refused", e->commands_refused);
	sample1(o, "runtime_api_commands_total", "result", "failed", e->commands_failed);
	sample1(o, "runtime_api_commands_total", "result", "none", e->commands_not_sent);

	metrics_family(o, "runtime_api_socket_commands_total", "counter",
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
	metrics_family(o, "runtime_api_connect_attempts_total", "counter",
	       "Connections attempted to each Runtime API socket.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++)
		sample1(o, "runtime_api_connect_attempts_total", "socket", s->runtime_api[i].address,
			s->runtime_api[i].stats->connects);
	metrics_family(o, "runtime_api_connect_failures_total", "counter",
	       "Connections to each Runtime API socket refused or failed.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++)
		sample1(o, "runtime_api_connect_failures_total", "socket", s->runtime_api[i].address,
			s->runtime_api[i].stats->connect_failures);
	metrics_family(o, "runtime_api_timeouts_total", "counter",
	       "Exchanges with each Runtime API socket that ran out of time.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++)
		sample1(o, "runtime_api_timeouts_total", "socket", s->runtime_api[i].address,
			s->runtime_api[i].stats->timeouts);
	metrics_family(o, "runtime_api_up", "gauge",
	       "1 when the last exchange with the Runtime API socket succeeded.");
	for (unsigned i = 0; i < s->nb_runtime_api; i++)
		sample1(o, "runtime_api_up", "socket", s->runtime_api[i].address,
			s->runtime_api[i].reachable);

	metrics_family(o, "haproxy_looks_total", "counter",
	       "Looks at HAProxy (show info, show map, show stat, show servers state), by result.");
	sample1(o, "haproxy_looks_total", "result", "ok", e->reconciliations);
	sample1(o, "haproxy_looks_total", "result", "failed", e->looks_failed);
	metrics_family(o, "haproxy_restarts_total", "counter", "New HAProxy processes seen (reloads, restarts).");
	sample(o, "haproxy_restarts_total", e->haproxy_restarts);
	metrics_family(o, "faults_polled_total", "counter",
	       "Faults SPOE never sees, from HAProxy's per-server counters, by kind.");
	sample1(o, "faults_polled_total", "kind", "connect_error", e->connect_errors);
	sample1(o, "faults_polled_total", "kind", "response_error", e->response_errors);
	sample1(o, "faults_polled_total", "kind", "aborted_body", e->aborted_bodies);
	sample1(o, "faults_polled_total", "kind", "redispatch", e->redispatches);
	metrics_family(o, "capacity_retries_total", "counter",
	       "Capacity statuses HAProxy retried on another worker (retry-on, option redispatch): "
	       "backpressure, never a fault.");
	sample(o, "capacity_retries_total", e->capacity_retries);
	metrics_family(o, "breakers_dropped_total", "counter", "Breakers dropped: no HAProxy has the server any more.");
	sample(o, "breakers_dropped_total", e->dropped_breakers);
	render_backend_ejections(s, o);
	metrics_family(o, "ejections_held_back_total", "counter",
	       "Open breakers (and resting workers) whose drain the backend's ejection cap held "
	       "back.");
	sample(o, "ejections_held_back_total", e->ejections_held_back);
	metrics_family(o, "ejections_released_total", "counter",
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

	metrics_family(o, "state_writes_total", "counter", "State snapshots written, by result.");
	sample1(o, "state_writes_total", "result", "ok", st->writes);
	sample1(o, "state_writes_total", "result", "failed", st->write_failures);
	/* A timestamp, as promex and node_exporter write them: time() minus
	 * it is the age, and it does not move while nothing is written. The
	 * legacy gauge was the age itself. */
	bool written = st->last_write_mono_ms && s->now_ms >= st->last_write_mono_ms;
	uint64_t age_ms = written ? s->now_ms - st->last_write_mono_ms : 0;
	if (s->names != METRICS_NAMES_LEGACY) {
		metrics_family(o, "state_last_write_timestamp_seconds", "gauge",
			       "When the last snapshot was written, in seconds since the epoch "
			       "(absent before the first).");
		if (written && s->now_unix_ms >= age_ms)
			strbuf_printf(o, METRICS_PREFIX "state_last_write_timestamp_seconds %.3f\n",
				      (double)(s->now_unix_ms - age_ms) / 1000.0);
	}
	if (s->names != METRICS_NAMES_PROMEX) {
		metrics_family(o, "state_last_write_age_seconds", "gauge",
			       "Seconds since the last snapshot was written (absent before the "
			       "first).");
		if (written)
			sample(o, "state_last_write_age_seconds", age_ms / 1000);
	}
	metrics_family(o, "state_breakers_restored", "gauge", "Breakers restored from the snapshot at start.");
	sample(o, "state_breakers_restored", st->restored);
	metrics_family(o, "state_source", "gauge",
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
	metrics_family(o, "operator_holds", "gauge",
	       "Servers the operator holds out (drained) or in (never drained).");
	sample1(o, "operator_holds", "hold", "out", out);
	sample1(o, "operator_holds", "hold", "in", in);
	metrics_family(o, "operator_paused_backends", "gauge",
	       "Backends the operator paused: observed, not acted on.");
	sample(o, "operator_paused_backends", h ? h->nb_paused : 0);
	metrics_family(o, "operator_released", "gauge",
	       "1 while the operator has released the agent: it holds nothing in HAProxy.");
	sample(o, "operator_released", h && h->released);
	metrics_family(o, "control_commands_total", "counter",
	       "Commands on the control socket, by result (refused: answered with an error).");
	sample1(o, "control_commands_total", "result", "done", s->control_done);
	sample1(o, "control_commands_total", "result", "refused", s->control_refused);
}

bool metrics_render_head(const struct metrics_source *s, struct strbuf *o)
{
	metrics_family(o, "build_info", "gauge", "Always 1; the agent's version as a label.");
	sample1(o, "build_info", "version", s->version ? s->version : "unknown", 1);
	/* The log never blocks the agent: what it could not write is counted. */
	metrics_family(o, "log_lines_dropped_total", "counter",
	       "Log lines lost because the log output did not keep up.");
	sample(o, "log_lines_dropped_total", s->log_lines_dropped);
	metrics_family(o, "log_lines_suppressed_total", "counter",
	       "Log lines held back by the rate limit of their call site (summed up in the log).");
	sample(o, "log_lines_suppressed_total", s->log_lines_suppressed);
	render_table(s, o);
	render_operator(s, o);
	render_spop(s, o);
	render_enforcement(s, o);
	render_state(s, o);
	const struct metrics_view v = {s->table, s->capped, s->maxconn_learnt};
	return metrics_render_backends(&v, s->detail, o) && !o->failed;
}
