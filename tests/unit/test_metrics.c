/*
 * test_metrics.c - the admin endpoint's renderers: the Prometheus text of
 * metrics.c (every family present, the exposition format, label escaping,
 * the histogram) and the JSON of state_json.c (escaping, every field).
 *
 * The format check below is written from the 0.0.4 text format, not from
 * the renderer: HELP then TYPE before a family's samples, each family once,
 * every sample `name{labels} value`, counters named *_total, histogram
 * buckets cumulative with +Inf equal to _count. It is itself tested on
 * broken inputs, so it cannot pass by accepting everything.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hapi/section_names.h"
#include "link/wiring.h"

#include "breakers/counters.h"
#include "admin/metrics.h"
#include "admin/state_json.h"

/* The whole page at once, as the admin server renders it slice by slice. */
static bool metrics_render(const struct metrics_source *s, struct strbuf *o)
{
	struct metrics_cursor c = {.names = s->names, .detail = s->detail};
	const struct metrics_view v = {s->table, s->capped, s->maxconn_learnt};

	metrics_render_head(s, o);
	while (!metrics_render_servers(&v, &c, o, UINT32_MAX))
		;
	return !o->failed;
}

static bool state_json_render(const struct metrics_source *s, struct strbuf *o)
{
	struct state_json_cursor c = {0};

	state_json_render_head(s, o);
	while (!state_json_render_breakers(s->table, NULL, NULL, s->now_ms, &c, o, UINT32_MAX))
		;
	return !o->failed;
}

#define T0 5000000

/* ==== a format checker for the Prometheus text format 0.0.4 ==== */

static char check_error[512];

static bool fail_at(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail_at(int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(check_error, sizeof(check_error), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(check_error + n, sizeof(check_error) - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

static bool is_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

/* Length of the metric or label name at s (0 if none). */
static size_t name_len(const char *s)
{
	size_t n = 0;
	if (!is_name_start(s[0]))
		return 0;
	while (is_name_char(s[n]))
		n++;
	return n;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);
	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

struct prom_check {
	char family[128];
	char type[32];
	bool help, typed;
	char seen[256][128]; /* families already closed */
	unsigned nb_seen;
	/* histogram state */
	double last_le;
	double last_bucket;
	bool inf_seen;
	double inf_value;
	unsigned samples;
};

static bool family_close(struct prom_check *c, int line)
{
	if (c->family[0] && strcmp(c->type, "histogram") == 0 && c->samples && !c->inf_seen)
		return fail_at(line, "histogram %s has no +Inf bucket", c->family);
	if (c->family[0] && c->nb_seen < 256)
		memcpy(c->seen[c->nb_seen++], c->family, sizeof(c->family));
	c->family[0] = '\0';
	c->help = c->typed = false;
	c->last_le = -INFINITY;
	c->last_bucket = 0;
	c->inf_seen = false;
	c->samples = 0;
	return true;
}

/* Parses {name="value",...}; *le gets the le label's value if any. */
static bool parse_labels(const char **p, int line, char *le, size_t le_size)
{
	const char *s = *p;
	le[0] = '\0';
	if (*s != '{')
		return true;
	s++;
	while (*s != '}') {
		size_t n = name_len(s);
		if (!n)
			return fail_at(line, "bad label name at '%s'", s);
		bool is_le = n == 2 && memcmp(s, "le", 2) == 0;
		s += n;
		if (s[0] != '=' || s[1] != '"')
			return fail_at(line, "expected =\" after a label name");
		s += 2;
		size_t out = 0;
		while (*s != '"') {
			if (!*s || *s == '\n')
				return fail_at(line, "unterminated label value");
			if (*s == '\\') {
				if (s[1] != '\\' && s[1] != '"' && s[1] != 'n')
					return fail_at(line, "bad escape \\%c in a label value", s[1]);
				s++;
			}
			if (is_le && out + 1 < le_size)
				le[out++] = *s;
			s++;
		}
		if (is_le)
			le[out] = '\0';
		s++;
		if (*s == ',')
			s++;
		else if (*s != '}')
			return fail_at(line, "expected , or } after a label");
	}
	*p = s + 1;
	return true;
}

static bool parse_value(const char *s, int line, double *v)
{
	char *end;
	*v = strtod(s, &end);
	if (end == s || *end != '\0')
		return fail_at(line, "bad sample value '%s'", s);
	return true;
}

static bool sample_line(struct prom_check *c, const char *s, int line)
{
	size_t n = name_len(s);
	char le[64];
	double v;
	if (!n)
		return fail_at(line, "not a sample: '%s'", s);
	if (!c->typed)
		return fail_at(line, "sample before its family's HELP and TYPE: '%s'", s);
	const char *name = s;
	const char *p = s + n;
	if (!parse_labels(&p, line, le, sizeof(le)))
		return false;
	if (*p != ' ')
		return fail_at(line, "expected a space before the value");
	if (!parse_value(p + 1, line, &v))
		return false;

	size_t fam = strlen(c->family);
	if (strcmp(c->type, "histogram") == 0) {
		bool bucket = n == fam + 7 && ends_with(name, n, "_bucket");
		bool count = n == fam + 6 && ends_with(name, n, "_count");
		bool sum = n == fam + 4 && ends_with(name, n, "_sum");
		if (!(bucket || count || sum) || memcmp(name, c->family, fam) != 0)
			return fail_at(line, "%.*s is not part of histogram %s", (int)n, name, c->family);
		if (bucket) {
			double bound;
			if (!le[0])
				return fail_at(line, "bucket without le");
			if (c->inf_seen)
				return fail_at(line, "bucket after +Inf");
			if (!parse_value(le, line, &bound))
				return false;
			if (bound <= c->last_le)
				return fail_at(line, "le not increasing");
			if (v < c->last_bucket)
				return fail_at(line, "buckets not cumulative");
			c->last_le = bound;
			c->last_bucket = v;
			if (isinf(bound)) {
				c->inf_seen = true;
				c->inf_value = v;
			}
		}
		if (count && (!c->inf_seen || v != c->inf_value))
			return fail_at(line, "_count %g is not the +Inf bucket", v);
	} else if (n != fam || memcmp(name, c->family, n) != 0) {
		return fail_at(line, "sample %.*s outside its family (%s)", (int)n, name, c->family);
	}
	c->samples++;
	return true;
}

/* true if text is valid; otherwise check_error says why. */
static bool prom_check_text(const char *text)
{
	static struct prom_check c;
	memset(&c, 0, sizeof(c));
	c.last_le = -INFINITY;
	char *copy = strdup(text);
	int line = 0;
	bool ok = true;
	if (!text[0] || text[strlen(text) - 1] != '\n')
		ok = fail_at(0, "the text does not end with a newline");
	for (char *save = NULL, *l = strtok_r(copy, "\n", &save); ok && l;
	     l = strtok_r(NULL, "\n", &save)) {
		line++;
		char name[128], type[32];
		if (strncmp(l, "# HELP ", 7) == 0) {
			if (sscanf(l + 7, "%127s", name) != 1 || name_len(name) != strlen(name)) {
				ok = fail_at(line, "bad HELP line");
				break;
			}
			if (!(ok = family_close(&c, line)))
				break;
			for (unsigned i = 0; i < c.nb_seen; i++)
				if (strcmp(c.seen[i], name) == 0)
					ok = fail_at(line, "family %s appears twice", name);
			snprintf(c.family, sizeof(c.family), "%s", name);
			c.help = true;
		} else if (strncmp(l, "# TYPE ", 7) == 0) {
			if (sscanf(l + 7, "%127s %31s", name, type) != 2)
				ok = fail_at(line, "bad TYPE line");
			else if (!c.help || strcmp(name, c.family) != 0)
				ok = fail_at(line, "TYPE %s without its HELP just before", name);
			else if (strcmp(type, "counter") && strcmp(type, "gauge") &&
				 strcmp(type, "histogram"))
				ok = fail_at(line, "unexpected type %s", type);
			else if ((strcmp(type, "counter") == 0) != ends_with(name, strlen(name), "_total"))
				ok = fail_at(line, "%s: counters, and only counters, end in _total", name);
			snprintf(c.type, sizeof(c.type), "%s", type);
			c.typed = true;
		} else if (l[0] == '#') {
			ok = fail_at(line, "unexpected comment");
		} else {
			ok = sample_line(&c, l, line);
		}
	}
	if (ok)
		ok = family_close(&c, line);
	free(copy);
	return ok;
}

/* ==== fixtures ==== */

static struct breaker_table table;
static struct agent_stats agent;
static struct enforce_stats enforce;
static struct runtime_api_stats runtime_api;
/* As a look counts them: workers with breakers, the agent's TCP backend
 * without (never shown). */
static const struct ejection_backend backends[] = {
	{.be_id = 3, .name = "workers", .count = {.listed = 4, .out = 2}, .drained_by_agent = 2,
	 .capped = 1, .has_breakers = true},
	{.be_id = 4, .name = "spoa-breaker", .count = {.listed = 1}},
};

/* The table refuses names HAProxy would not accept; the renderers must
 * still escape whatever a name holds, so a test gives an entry any bytes
 * but NUL by writing its name store directly. */
static struct breaker_table_entry *get_weird(const char *backend, const char *server)
{
	enum breaker_table_status st;
	struct breaker_table_entry *e = breaker_table_get(&table, "weird", 5, server[0] == 's' ? "s1" : "s2", 2, T0, &st);
	assert_non_null(e);
	uint32_t i = breaker_table_index(&table, e);
	struct breaker_table_names *names =
		&table.chunks[i / BREAKER_TABLE_CHUNK]->names[i % BREAKER_TABLE_CHUNK];
	size_t backend_len = strlen(backend);
	snprintf(names->key, sizeof(names->key), "%s%c%s", backend, '\0', server);
	e->server = names->key + backend_len + 1;
	e->backend_len = (uint8_t)backend_len;
	e->server_len = (uint8_t)strlen(server);
	return e;
}

static struct breaker_table_entry *get(const char *backend, const char *server)
{
	enum breaker_table_status st;
	struct breaker_table_entry *e =
		breaker_table_get(&table, backend, strlen(backend), server, strlen(server), T0, &st);
	assert_non_null(e);
	return e;
}

/* What observe.c does for one observation, then what the counters
 * subscriber (breakers/counters.c) counts of it. */
static void observe(struct breaker_table_entry *e, int status)
{
	enum breaker_outcome o = breaker_outcome(e->breaker.policy, status);
	struct breaker_event ev = breaker_record(&e->breaker, o, T0);
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_RESPONSE, .outcome = o, .status = status};
	struct breaker_subscriber counting = counters_subscriber();
	counting.recorded(counting.ctx, e, &ev, &cause);
}

static const struct state_store_stats state_stats = {
	.path = "/var/lib/x/state.msgpack",
	.source = STATE_SOURCE_SNAPSHOT,
	.restored = 2,
	.writes = 5,
	.write_failures = 1,
	.last_write_mono_ms = T0 - 3000,
	.up_to_date = true,
};

static struct metrics_source source(void)
{
	struct metrics_source s = {
		.table = &table,
		.agent = &agent,
		.connections_open = 2,
		.observations_refused = 1,
		.unknown_messages = 2,
		.state = &state_stats,
		.enforce_mode = ENFORCE_RUNTIME_API,
		.enforce = &enforce,
		.nb_runtime_api = 1,
		.version = "9.9.9",
		.now_ms = T0 + 1000,
		.now_unix_ms = UINT64_C(1700000000000),
	};
	s.runtime_api[0] = (struct metrics_runtime_api){
		.address = "unix:/run/haproxy/admin.sock", .stats = &runtime_api, .reachable = true,
		.backends = backends, .nb_backends = 2};
	return s;
}

static int setup(void **state)
{
	char err[256];
	memset(&agent, 0, sizeof(agent));
	memset(&enforce, 0, sizeof(enforce));
	memset(&runtime_api, 0, sizeof(runtime_api));
	if (!breaker_table_init(&table, 16, err, sizeof(err)))
		fail_msg("%s", err);
	struct breaker_table_entry *w1 = get("workers", "w1");
	struct breaker_table_entry *w2 = get("workers", "w2");
	for (int i = 0; i < 4; i++)
		observe(w1, 503);
	observe(w1, 200);
	observe(w1, 404);
	for (int i = 0; i < 3; i++)
		observe(w2, 500);
	agent.connections_accepted = 5;
	agent.notifies = 9;
	agent.acks_held = 2;
	agent.disconnects_sent[0] = 3;
	agent.disconnects_sent[AGENT_STATUS_SLOTS - 1] = 1;
	histogram_observe_ns(&agent.notify_time, 800);     /* <= 1 us */
	histogram_observe_ns(&agent.notify_time, 1000);    /* <= 1 us: bounds are inclusive */
	histogram_observe_ns(&agent.notify_time, 1001);    /* <= 2 us */
	histogram_observe_ns(&agent.notify_time, 7000);    /* <= 10 us */
	histogram_observe_ns(&agent.notify_time, 99000000); /* +Inf */
	enforce.commands_ok = 4;
	enforce.connect_errors = 2;
	runtime_api.commands_ok = 7;
	return 0;
}

static int teardown(void **state)
{
	breaker_table_free(&table);
	return 0;
}

static char *render_metrics(const struct metrics_source *s)
{
	struct strbuf b;
	strbuf_init(&b);
	assert_true(metrics_render(s, &b));
	size_t len;
	char *text = strbuf_steal(&b, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	return text;
}

static void assert_contains(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("missing: %s\n--- in:\n%s", needle, text);
}

/* ==== the checker catches what it must ==== */

static void test_checker_rejects_broken_text(void **state)
{
	static const struct {
		const char *text;
		const char *why;
	} bad[] = {
		{"x_total 1\n", "sample before"},
		{"# HELP a_total h\na_total 1\n", "sample before"},
		{"# TYPE a_total counter\na_total 1\n", "without its HELP"},
		{"# HELP a h\n# TYPE a counter\na 1\n", "end in _total"},
		{"# HELP a_total h\n# TYPE a_total gauge\na_total 1\n", "end in _total"},
		{"# HELP a h\n# TYPE a gauge\nb 1\n", "outside its family"},
		{"# HELP a h\n# TYPE a gauge\na{x=\"1} 1\n", "unterminated"},
		{"# HELP a h\n# TYPE a gauge\na{x=\"\\t\"} 1\n", "bad escape"},
		{"# HELP a h\n# TYPE a gauge\na{x=1} 1\n", "expected =\""},
		{"# HELP a h\n# TYPE a gauge\na one\n", "bad sample value"},
		{"# HELP a h\n# TYPE a gauge\na 1", "newline"},
		{"# HELP a h\n# TYPE a gauge\na 1\n# HELP a h\n# TYPE a gauge\n", "twice"},
		{"# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\n"
		 "h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n",
		 "cumulative"},
		{"# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
		 "h_sum 1\nh_count 3\n",
		 "_count"},
		{"# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\n", "+Inf"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (prom_check_text(bad[i].text))
			fail_msg("accepted: %s", bad[i].text);
		if (!strstr(check_error, bad[i].why))
			fail_msg("'%s': said '%s', expected '%s'", bad[i].text, check_error, bad[i].why);
	}
	assert_true(prom_check_text("# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\n"
				    "h_bucket{le=\"+Inf\"} 2\nh_sum 1.5\nh_count 2\n"
				    "# HELP g h\n# TYPE g gauge\ng{a=\"x\\\"y\\\\z\\n\",b=\"\"} -1\n"));
}

/* ==== /metrics ==== */

/* Every family, by its promex name and its legacy one ("" where the
 * legacy names have no such family). */
static const char *const families[][3] = {
	{"build_info", "build_info", "gauge"},
	{"connections_refused_total", "connections_refused_total", "counter"},
	{"log_lines_dropped_total", "log_lines_dropped_total", "counter"},
	{"log_lines_suppressed_total", "log_lines_suppressed_total", "counter"},
	{"server_responses_total", "worker_requests_total", "counter"},
	{"server_state", "breaker_state", "gauge"},
	{"server_transitions_total", "breaker_transitions_total", "counter"},
	{"server_failure_streak", "breaker_failure_streak", "gauge"},
	{"server_trips_in_a_row", "breaker_trips_in_a_row", "gauge"},
	{"server_trips_total", "breaker_trips_total", "counter"},
	{"server_window_volume", "breaker_window_volume", "gauge"},
	{"server_window_failures", "breaker_window_failures", "gauge"},
	{"server_ejection_capped", "breaker_ejection_capped", "gauge"},
	{"server_rests_total", "worker_rests_total", "counter"},
	{"server_resting", "worker_resting", "gauge"},
	{"server_maxconn_learnt", "", "gauge"},
	{"table_entries", "breaker_table_entries", "gauge"},
	{"table_capacity", "breaker_table_capacity", "gauge"},
	{"table_evictions_total", "breaker_table_evictions_total", "counter"},
	{"table_full_refusals_total", "breaker_table_full_refusals_total", "counter"},
	{"spop_connections_total", "spop_connections_total", "counter"},
	{"spop_connections_closed_total", "spop_connections_closed_total", "counter"},
	{"spop_tls_handshakes_total", "spop_tls_handshakes_total", "counter"},
	{"spop_connections_open", "spop_connections_open", "gauge"},
	{"spop_frames_total", "spop_frames_total", "counter"},
	{"spop_acks_held_total", "spop_acks_held_total", "counter"},
	{"spop_disconnects_sent_total", "spop_disconnects_sent_total", "counter"},
	{"spop_observations_refused_total", "spop_observations_refused_total", "counter"},
	{"spop_unknown_messages_total", "spop_unknown_messages_total", "counter"},
	{"retry_after_ignored_total", "retry_after_ignored_total", "counter"},
	{"spop_steady_messages_total", "spop_steady_messages_total", "counter"},
	{"steady_state_unkept", "steady_state_unkept", "gauge"},
	{"notify_duration_seconds", "notify_duration_seconds", "histogram"},
	{"enforcement_mode", "enforcement_mode", "gauge"},
	{"runtime_api_commands_total", "runtime_api_commands_total", "counter"},
	{"runtime_api_socket_commands_total", "runtime_api_socket_commands_total", "counter"},
	{"runtime_api_connect_attempts_total", "runtime_api_connect_attempts_total", "counter"},
	{"runtime_api_connect_failures_total", "runtime_api_connect_failures_total", "counter"},
	{"runtime_api_timeouts_total", "runtime_api_timeouts_total", "counter"},
	{"runtime_api_up", "runtime_api_up", "gauge"},
	{"haproxy_looks_total", "haproxy_looks_total", "counter"},
	{"haproxy_restarts_total", "haproxy_restarts_total", "counter"},
	{"faults_polled_total", "faults_polled_total", "counter"},
	{"capacity_retries_total", "capacity_retries_total", "counter"},
	{"breakers_dropped_total", "breakers_dropped_total", "counter"},
	{"ejections_held_back_total", "ejections_held_back_total", "counter"},
	{"ejections_released_total", "ejections_released_total", "counter"},
	{"backend_servers_ejected", "backend_ejected_servers", "gauge"},
	{"backend_servers_ejection_capped", "backend_ejection_capped_servers", "gauge"},
	{"loop_iteration_seconds", "loop_iteration_seconds", "histogram"},
	{"loop_iteration_max_seconds", "loop_iteration_max_seconds", "gauge"},
	{"state_writes_total", "state_writes_total", "counter"},
	{"state_last_write_timestamp_seconds", "state_last_write_age_seconds", "gauge"},
	{"state_breakers_restored", "state_breakers_restored", "gauge"},
	{"state_source", "state_source", "gauge"},
	{"operator_holds", "operator_holds", "gauge"},
	{"operator_paused_backends", "operator_paused_backends", "gauge"},
	{"operator_released", "operator_released", "gauge"},
	{"control_commands_total", "control_commands_total", "counter"},
};
#define NB_FAMILIES (sizeof(families) / sizeof(families[0]))

/* The families of `text` are exactly those of columns `from` to `to` of
 * the list above: each one's TYPE line, and no other. */
static void assert_families(const char *text, int from, int to)
{
	unsigned want = 0;
	for (size_t i = 0; i < NB_FAMILIES; i++) {
		for (int col = from; col <= to; col++) {
			if (!families[i][col][0] ||
			    (col > from && strcmp(families[i][col], families[i][from]) == 0))
				continue;
			char line[160];
			snprintf(line, sizeof(line), "\n# TYPE spoa_breaker_%s %s\n",
				 families[i][col], families[i][2]);
			assert_contains(text, line);
			want++;
		}
	}
	unsigned types = 0;
	for (const char *p = text; (p = strstr(p, "# TYPE ")); p++)
		types++;
	assert_int_equal(types, want);
}

static void test_every_family_present(void **state)
{
	struct metrics_source s = source();
	char *text = render_metrics(&s);
	assert_families(text, 0, 0);
	free(text);
}

/* metrics_names = legacy: the names of the releases before, and only
 * those; both: each family under both names (a family whose name did not
 * change, once), and still one valid page. */
static void test_legacy_and_both_names(void **state)
{
	(void)state;
	struct metrics_source s = source();
	s.names = METRICS_NAMES_LEGACY;
	char *text = render_metrics(&s);
	assert_families(text, 1, 1);
	assert_contains(text, "\nspoa_breaker_breaker_state{backend=\"workers\",server=\"w2\"} 1\n");
	assert_contains(text, "\nspoa_breaker_worker_requests_total{backend=\"workers\",server="
			      "\"w2\",outcome=\"failure\",source=\"spop\"} 3\n");
	assert_contains(text, "\nspoa_breaker_state_last_write_age_seconds 4\n");
	assert_null(strstr(text, "proxy="));
	free(text);

	s.names = METRICS_NAMES_BOTH;
	text = render_metrics(&s);
	assert_families(text, 0, 1);
	if (!prom_check_text(text))
		fail_msg("%s", check_error);
	assert_contains(text, "\nspoa_breaker_breaker_state{backend=\"workers\",server=\"w2\"} 1\n");
	assert_contains(text, "\nspoa_breaker_server_state{proxy=\"workers\",server=\"w2\","
			      "state=\"open\"} 1\n");
	free(text);
}

/* metrics_detail = backend: no per-server sample, the sums per backend
 * instead; a breaker dropped keeps its counts in its backend's sums, so
 * that no counter goes back, and a backend with no breaker left is gone. */
static void test_backend_detail(void **state)
{
	(void)state;
	struct metrics_source s = source();
	s.detail = METRICS_DETAIL_BACKEND;
	observe(get("other", "o1"), 500);

	char *text = render_metrics(&s);
	if (!prom_check_text(text))
		fail_msg("%s", check_error);
	assert_null(strstr(text, "spoa_breaker_server_"));
	assert_null(strstr(text, "server=\""));
	static const char *const lines[] = {
		"backend_breakers{proxy=\"workers\",state=\"closed\"} 1\n",
		"backend_breakers{proxy=\"workers\",state=\"open\"} 1\n",
		"backend_breakers{proxy=\"workers\",state=\"half_open\"} 0\n",
		"backend_breakers{proxy=\"other\",state=\"closed\"} 1\n",
		"backend_responses_total{proxy=\"workers\",outcome=\"backpressure\",source=\"spop\"} 4\n",
		"backend_responses_total{proxy=\"workers\",outcome=\"failure\",source=\"spop\"} 3\n",
		"backend_responses_total{proxy=\"other\",outcome=\"failure\",source=\"spop\"} 1\n",
		"backend_transitions_total{proxy=\"workers\",from=\"closed\",to=\"open\"} 1\n",
		"backend_trips_total{proxy=\"workers\",rule=\"failure_streak\"} 1\n",
		"backend_rests_total{proxy=\"workers\"} 0\n",
		"backend_resting_servers{proxy=\"workers\"} 0\n",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char line[256];
		snprintf(line, sizeof(line), "\nspoa_breaker_%s", lines[i]);
		assert_contains(text, line);
	}
	free(text);

	breaker_table_remove(&table, get("workers", "w2"));
	breaker_table_remove(&table, get("other", "o1"));
	text = render_metrics(&s);
	assert_contains(text, "\nspoa_breaker_backend_responses_total{proxy=\"workers\",outcome="
			      "\"failure\",source=\"spop\"} 3\n");
	assert_contains(text, "\nspoa_breaker_backend_trips_total{proxy=\"workers\",rule="
			      "\"failure_streak\"} 1\n");
	assert_contains(text, "\nspoa_breaker_backend_breakers{proxy=\"workers\",state=\"open\"} 0\n");
	assert_null(strstr(text, "proxy=\"other\""));
	free(text);
}

/* Per backend and HAProxy: the agent's drains and the held-back breakers;
 * a backend without breakers is not shown. */
static void test_backend_ejection_gauges(void **state)
{
	(void)state;
	struct metrics_source s = source();
	char *text = render_metrics(&s);
	assert_contains(text, "\nspoa_breaker_backend_servers_ejected{socket=\"unix:/run/haproxy/"
			      "admin.sock\",proxy=\"workers\"} 2\n");
	assert_contains(text, "\nspoa_breaker_backend_servers_ejection_capped{socket=\"unix:/run/"
			      "haproxy/admin.sock\",proxy=\"workers\"} 1\n");
	assert_null(strstr(text, "proxy=\"spoa-breaker\""));
	free(text);
}

/* Rendered a slice at a time, with any budget, a page is the same page. */
static void test_slices_make_the_same_page(void **state)
{
	struct metrics_source s = source();
	static const uint32_t budgets[] = {1, 2, 3, 7, 1024};
	/* Both names: two passes over the table, each cut anywhere. */
	s.names = METRICS_NAMES_BOTH;
	char *whole = render_metrics(&s);

	for (size_t b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
		struct strbuf out;
		struct metrics_cursor c = {.names = s.names, .detail = s.detail};
		const struct metrics_view v = {s.table, NULL, NULL};
		unsigned calls = 0;
		strbuf_init(&out);
		assert_true(metrics_render_head(&s, &out));
		while (!metrics_render_servers(&v, &c, &out, budgets[b]))
			assert_true(++calls < 100000);
		assert_string_equal(out.data, whole);
		strbuf_free(&out);

		struct strbuf js, js_whole;
		struct state_json_cursor jc = {0};
		strbuf_init(&js);
		strbuf_init(&js_whole);
		assert_true(state_json_render(&s, &js_whole));
		assert_true(state_json_render_head(&s, &js));
		while (!state_json_render_breakers(s.table, NULL, NULL, s.now_ms, &jc, &js, budgets[b]))
			;
		assert_string_equal(js.data, js_whole.data);
		strbuf_free(&js);
		strbuf_free(&js_whole);
	}
	free(whole);
}

static void test_output_passes_the_format_check(void **state)
{
	struct metrics_source s = source();
	get_weird("we\"ird\\be", "w\nx");
	char *text = render_metrics(&s);
	if (!prom_check_text(text))
		{
		fprintf(stderr, "%s\n---\n", text);
		fail_msg("%s", check_error);
	}
	free(text);

	/* Nothing to report at all: still every family, still valid. */
	struct metrics_source empty = {0};
	text = render_metrics(&empty);
	if (!prom_check_text(text))
		{
		fprintf(stderr, "%s\n---\n", text);
		fail_msg("%s", check_error);
	}
	assert_contains(text, "spoa_breaker_table_entries 0\n");
	assert_contains(text, "spoa_breaker_notify_duration_seconds_count 0\n");
	free(text);
}

static void test_per_server_samples(void **state)
{
	struct metrics_source s = source();
	char *text = render_metrics(&s);
	static const char *const lines[] = {
		"server_responses_total{proxy=\"workers\",server=\"w1\",outcome=\"backpressure\",source=\"spop\"} 4\n",
		"server_responses_total{proxy=\"workers\",server=\"w1\",outcome=\"success\",source=\"spop\"} 1\n",
		"server_responses_total{proxy=\"workers\",server=\"w1\",outcome=\"client_error\",source=\"spop\"} 1\n",
		"server_responses_total{proxy=\"workers\",server=\"w1\",outcome=\"failure\",source=\"spop\"} 0\n",
		"server_responses_total{proxy=\"workers\",server=\"w2\",outcome=\"failure\",source=\"spop\"} 3\n",
		"server_state{proxy=\"workers\",server=\"w1\",state=\"closed\"} 1\n",
		"server_state{proxy=\"workers\",server=\"w1\",state=\"open\"} 0\n",
		"server_state{proxy=\"workers\",server=\"w1\",state=\"half_open\"} 0\n",
		"server_state{proxy=\"workers\",server=\"w2\",state=\"closed\"} 0\n",
		"server_state{proxy=\"workers\",server=\"w2\",state=\"open\"} 1\n",
		"server_transitions_total{proxy=\"workers\",server=\"w2\",from=\"closed\",to=\"open\"} 1\n",
		"server_transitions_total{proxy=\"workers\",server=\"w1\",from=\"closed\",to=\"open\"} 0\n",
		"server_transitions_total{proxy=\"workers\",server=\"w2\",from=\"half_open\",to=\"closed\"} 0\n",
		"server_failure_streak{proxy=\"workers\",server=\"w2\"} 3\n",
		"server_trips_in_a_row{proxy=\"workers\",server=\"w2\"} 1\n",
		"server_trips_total{proxy=\"workers\",server=\"w2\",rule=\"failure_streak\"} 1\n",
		"server_trips_total{proxy=\"workers\",server=\"w2\",rule=\"failure_rate\"} 0\n",
		"server_trips_total{proxy=\"workers\",server=\"w1\",rule=\"probe_failed\"} 0\n",
		"server_window_volume{proxy=\"workers\",server=\"w1\"} 2\n",
		"server_window_failures{proxy=\"workers\",server=\"w2\"} 3\n",
		"server_maxconn_learnt{proxy=\"workers\",server=\"w1\"} 0\n",
		"table_entries 2\n",
		"table_capacity 16\n",
		"state_last_write_timestamp_seconds 1699999996.000\n",
		"spop_connections_total{result=\"accepted\"} 5\n",
		"spop_connections_open 2\n",
		"spop_frames_total{type=\"notify\"} 9\n",
		"spop_acks_held_total 2\n",
		"spop_disconnects_sent_total{code=\"0\"} 3\n",
		"spop_disconnects_sent_total{code=\"13\"} 0\n",
		"spop_disconnects_sent_total{code=\"99\"} 1\n",
		"spop_observations_refused_total 1\n",
		"spop_unknown_messages_total 2\n",
		"enforcement_mode{mode=\"runtime-api\"} 1\n",
		"enforcement_mode{mode=\"none\"} 0\n",
		"runtime_api_commands_total{result=\"ok\"} 4\n",
		"runtime_api_socket_commands_total{socket=\"unix:/run/haproxy/admin.sock\",result=\"answered\"} 7\n",
		"runtime_api_up{socket=\"unix:/run/haproxy/admin.sock\"} 1\n",
		"faults_polled_total{kind=\"connect_error\"} 2\n",
		"build_info{version=\"9.9.9\"} 1\n",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char line[256];
		snprintf(line, sizeof(line), "\nspoa_breaker_%s", lines[i]);
		assert_contains(text, line);
	}
	/* Impossible transitions are not written while they have not happened. */
	assert_null(strstr(text, "from=\"closed\",to=\"half_open\""));
	free(text);
}

/* ==== steady-state mode: successes from HAProxy's counters ==== */

/* One look at one HAProxy: `notified` successes reached SPOP since the
 * step before, then the look found `delta` more 1xx-3xx in HAProxy's
 * counters (baseline: a delta that means something, in steady-state mode). */
struct look_step {
	uint64_t notified, delta;
	bool baseline;
	uint64_t want_counted; /* counted_successes after the step */
};

static const struct {
	const char *rule;
	struct look_step steps[4];
	unsigned nb_steps;
} counted_cases[] = {
	{"a clean server: every success only in the counters",
	 {{0, 10, true, 10}, {0, 5, true, 15}}, 2},
	{"a watched server: every success notified, none counted twice",
	 {{4, 4, true, 0}, {3, 3, true, 0}}, 2},
	{"a server watched part of the interval: the rest is counted",
	 {{2, 7, true, 5}}, 1},
	{"a NOTIFY after the look: once too many, evened out at the next",
	 {{2, 3, true, 1}, {1, 0, true, 1}, {0, 5, true, 5}}, 3},
	{"no previous look: nothing counted, the notified ones forgotten",
	 {{3, 0, false, 0}, {0, 6, true, 6}}, 2},
	{"a restarted HAProxy: its delta means nothing",
	 {{0, 4, true, 4}, {2, 0, false, 4}, {1, 1, true, 4}}, 3},
	{"not in steady-state mode: nothing counted, nothing kept",
	 {{5, 5, false, 0}, {5, 5, false, 0}}, 2},
	{"two HAProxies: matched per server, exact in sum",
	 {{5, 4, true, 0}, {0, 6, true, 5}}, 2},
};

static void test_counted_successes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(counted_cases) / sizeof(counted_cases[0]); i++) {
		struct breaker_counters c = {0};
		uint64_t notified = 0;
		for (unsigned k = 0; k < counted_cases[i].nb_steps; k++) {
			const struct look_step *st = &counted_cases[i].steps[k];
			c.outcomes[BREAKER_OUTCOME_SUCCESS] += st->notified;
			notified += st->notified;
			counters_note_counted_successes(&c, st->delta, st->baseline);
			if (c.counted_successes != st->want_counted)
				fail_msg("%s, step %u: counted %llu, expected %llu",
					 counted_cases[i].rule, k + 1,
					 (unsigned long long)c.counted_successes,
					 (unsigned long long)st->want_counted);
			/* SPOP's own count is never touched. */
			assert_int_equal(c.outcomes[BREAKER_OUTCOME_SUCCESS], notified);
			assert_true(c.successes_matched <= notified);
		}
	}
}

/* The counters' successes are a sample of their own, next to SPOP's. */
static void test_counted_successes_sample(void **state)
{
	struct metrics_source s = source();
	struct breaker_table_entry *e = get("workers", "w1");
	counters_note_counted_successes(&e->counters, 0, false);
	counters_note_counted_successes(&e->counters, 12, true);
	char *text = render_metrics(&s);
	assert_contains(text, "\nspoa_breaker_server_responses_total{proxy=\"workers\",server="
			      "\"w1\",outcome=\"success\",source=\"spop\"} 1\n");
	assert_contains(text, "\nspoa_breaker_server_responses_total{proxy=\"workers\",server="
			      "\"w1\",outcome=\"success\",source=\"haproxy_counters\"} 12\n");
	assert_contains(text, "\nspoa_breaker_server_responses_total{proxy=\"workers\",server="
			      "\"w2\",outcome=\"success\",source=\"haproxy_counters\"} 0\n");
	free(text);
}

static void test_histogram_buckets(void **state)
{
	struct metrics_source s = source();
	char *text = render_metrics(&s);
	static const char *const lines[] = {
		"notify_duration_seconds_bucket{le=\"0.000001\"} 2\n",
		"notify_duration_seconds_bucket{le=\"0.000002\"} 3\n",
		"notify_duration_seconds_bucket{le=\"0.000005\"} 3\n",
		"notify_duration_seconds_bucket{le=\"0.00001\"} 4\n",
		"notify_duration_seconds_bucket{le=\"0.01\"} 4\n",
		"notify_duration_seconds_bucket{le=\"+Inf\"} 5\n",
		"notify_duration_seconds_count 5\n",
		"notify_duration_seconds_sum 0.099009801\n",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char line[256];
		snprintf(line, sizeof(line), "\nspoa_breaker_%s", lines[i]);
		assert_contains(text, line);
	}
	assert_int_equal(agent.notify_time.count, 5);
	free(text);
}

/* A read's frames share its time: counted once each, at the mean. */
static void test_histogram_batch(void **state)
{
	struct histogram h = {0};

	histogram_observe_batch_ns(&h, 4500, 3); /* mean 1.5 us: <= 2 us */
	histogram_observe_batch_ns(&h, 500, 1);  /* <= 1 us */
	assert_int_equal(h.buckets[0], 1);
	assert_int_equal(h.buckets[1], 3);
	assert_int_equal(h.count, 4);
	assert_int_equal(h.sum_ns, 5000);
}

static void test_label_escaping(void **state)
{
	static const char *const cases[][2] = {
		{"plain", "plain"},
		{"", ""},
		{"a\"b", "a\\\"b"},
		{"a\\b", "a\\\\b"},
		{"a\nb", "a\\nb"},
		{"\"\\\n", "\\\"\\\\\\n"},
		{"tab\there", "tab\there"}, /* only \ " and newline are escaped */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strbuf b;
		strbuf_init(&b);
		metrics_escape_label(&b, cases[i][0]);
		assert_string_equal(b.data ? b.data : "", cases[i][1]);
		strbuf_free(&b);
	}

	struct metrics_source s = source();
	get_weird("we\"ird\\be", "w\nx");
	char *text = render_metrics(&s);
	assert_contains(text, "\nspoa_breaker_server_state{proxy=\"we\\\"ird\\\\be\",server=\"w\\nx\","
			      "state=\"closed\"} 1\n");
	free(text);
}

/* ==== /state ==== */

static void test_json_string_escaping(void **state)
{
	static const char *const cases[][2] = {
		{"w1", "\"w1\""},
		{"", "\"\""},
		{"a\"b", "\"a\\\"b\""},
		{"a\\b", "\"a\\\\b\""},
		{"l1\nl2\r\t", "\"l1\\nl2\\r\\t\""},
		{"\x01\x1f", "\"\\u0001\\u001f\""},
		{"caf\xc3\xa9", "\"caf\xc3\xa9\""}, /* UTF-8 passes through */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strbuf b;
		strbuf_init(&b);
		state_json_string(&b, cases[i][0]);
		assert_string_equal(b.data, cases[i][1]);
		strbuf_free(&b);
	}
}

static void test_state_json(void **state)
{
	struct metrics_source s = source();
	get_weird("we\"ird", "s\x01");
	struct strbuf b;
	strbuf_init(&b);
	assert_true(state_json_render(&s, &b));
	const char *text = b.data;

	assert_contains(text, "{\"enforce\":\"runtime-api\",\"entries\":3,\"capacity\":16,"
			      "\"state\":{\"file\":\"/var/lib/x/state.msgpack\",\"source\":\"snapshot\","
			      "\"restored\":2,\"up_to_date\":true},\"steady_state\":{\"messages\":0,"
			      "\"watched_map\":\"unused\",\"problem\":null},"
			      "\"operator\":{\"released\":false,\"paused\":[],\"holds\":[]},"
			      "\"haproxy\":[{\"runtime_api\":"
			      "\"unix:/run/haproxy/admin.sock\",\"reachable\":true,\"problems\":[]}],"
			      "\"unknown_sections\":null,\"breakers\":[");
	assert_contains(text, "{\"backend\":\"workers\",\"server\":\"w2\",\"state\":\"open\","
			      "\"ejection_capped\":false,\"failure_streak\":3,\"since_ms\":1000,\"cooldown_left_ms\":29000,"
			      "\"trips\":1,\"rest_left_ms\":0,\"rests\":0,\"rest_ejection_capped\":false,\"maxconn_learnt\":0,"
			      "\"hold\":\"none\",\"hold_forced\":false,\"hold_left_ms\":0,"
			      "\"observe_only\":false,"
			      "\"trips_in_a_row\":1,\"opened_by\":\"failure_streak\","
			      "\"peer_hold_left_ms\":0,\"peer_adopted\":false,"
			      "\"window_volume\":3,\"window_failures\":3,\"failure_rate_percent\":100,"
			      "\"capacity_run\":0,\"capacity_run_ms\":0,"
			      "\"open_duration_ms\":30000,\"policy\":{\"threshold\":3,"
			      "\"cooldown_ms\":30000,\"half_open_probes\":1,"
			      "\"capacity_statuses\":\"429,503,529\","
			      "\"failure_statuses\":\"500-502,504-528,530-599\","
			      "\"ignore_statuses\":\"none\","
			      "\"half_open_backpressure\":\"close\",\"open_late_success\":\"ignore\","
			      "\"max_cooldown_ms\":300000,\"healthy_for_ms\":60000,"
			      "\"failure_rate_threshold\":0,\"window\":64,\"minimum_volume\":20,"
			      "\"wedged_after_ms\":0,\"stalled_after_ms\":0,\"stalled_requests\":16,\"stalled_share\":80,\"retry_after_max_ms\":10000,\"max_ejection_percent\":50,\"drain_last_server\":false,\"pin_maxconn\":false,\"release_stalled\":true}}");
	/* Backpressure is not judged: w1's four 503s are not in its window. */
	assert_contains(text, "\"server\":\"w1\",\"state\":\"closed\",\"ejection_capped\":false,\"failure_streak\":0,"
			      "\"since_ms\":1000,\"cooldown_left_ms\":0,\"trips\":0,"
			      "\"rest_left_ms\":0,\"rests\":0,\"rest_ejection_capped\":false,\"maxconn_learnt\":0,"
			      "\"hold\":\"none\",\"hold_forced\":false,\"hold_left_ms\":0,"
			      "\"observe_only\":false,"
			      "\"trips_in_a_row\":0,\"opened_by\":\"none\","
			      "\"peer_hold_left_ms\":0,\"peer_adopted\":false,\"window_volume\":2,"
			      "\"window_failures\":0,\"failure_rate_percent\":0,"
			      "\"capacity_run\":0,\"capacity_run_ms\":0,\"open_duration_ms\":30000,");
	assert_contains(text, "\"server\":\"w1\",\"state\":\"closed\",\"ejection_capped\":false,\"failure_streak\":0,"
			      "\"since_ms\":1000,\"cooldown_left_ms\":0");
	assert_contains(text, "\"backend\":\"we\\\"ird\",\"server\":\"s\\u0001\"");
	assert_int_equal(text[b.len - 1], '\n');
	assert_int_equal(text[b.len - 2], '}');

	/* Balanced: every { and [ outside strings is closed. */
	int depth = 0;
	bool in_string = false;
	for (const char *p = text; *p; p++) {
		if (in_string) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in_string = false;
			continue;
		}
		if (*p == '"')
			in_string = true;
		else if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			assert_true(--depth >= 0);
	}
	assert_false(in_string);
	assert_int_equal(depth, 0);
	strbuf_free(&b);

	/* A cool-down already over says 0, not a wrapped-around number. */
	s.now_ms = T0 + 10000000;
	strbuf_init(&b);
	assert_true(state_json_render(&s, &b));
	assert_contains(b.data, "\"server\":\"w2\",\"state\":\"open\",\"ejection_capped\":false,\"failure_streak\":3,"
				"\"since_ms\":10000000,\"cooldown_left_ms\":0,");
	strbuf_free(&b);

	struct metrics_source empty = {.enforce_mode = ENFORCE_NONE};
	strbuf_init(&b);
	assert_true(state_json_render(&empty, &b));
	assert_string_equal(b.data,
			    "{\"enforce\":\"none\",\"entries\":0,\"capacity\":0,\"state\":{\"file\":"
			    "\"none\",\"source\":\"off\",\"restored\":0,\"up_to_date\":false},"
			    "\"steady_state\":{\"messages\":0,\"watched_map\":\"unused\",\"problem\":null},"
			    "\"operator\":{\"released\":false,\"paused\":[],\"holds\":[]},"
			    "\"haproxy\":[],\"unknown_sections\":null,\"breakers\":[]}\n");
	strbuf_free(&b);

	/* Steady-state mode with no one keeping its map: the problem is named,
	 * and the gauge says it. */
	s.steady_messages = 7;
	s.steady_support = STEADY_SUPPORT_UNKEPT;
	strbuf_init(&b);
	assert_true(state_json_render(&s, &b));
	assert_contains(b.data, "\"steady_state\":{\"messages\":7,\"watched_map\":\"unkept\","
				"\"problem\":\"HAProxy sends in steady-state mode and no runtime_api");
	strbuf_free(&b);
	char *page = render_metrics(&s);
	assert_contains(page, "\nspoa_breaker_steady_state_unkept 1\n");
	assert_contains(page, "\nspoa_breaker_spop_steady_messages_total 7\n");
	free(page);
}

/* A resting worker: its rest in /metrics (started, resting now) and in
 * /state (time left, count; held back by the cap when its index says so),
 * its breaker shown as it was - closed; the Retry-After values not
 * honoured, by reason. */
static void test_rest_shown(void **state)
{
	struct breaker_table_entry *w1 = get("workers", "w1");
	assert_int_equal(breaker_rest_on_response(&w1->breaker, BREAKER_OUTCOME_BACKPRESSURE, 3,
						  T0),
			 BREAKER_REST_STARTED);
	struct metrics_source s = source();
	s.retry_after_dates = 2;
	s.retry_after_invalid = 5;
	char *page = render_metrics(&s);
	assert_contains(page, "\nspoa_breaker_server_rests_total{proxy=\"workers\",server=\"w1\"} 1\n");
	assert_contains(page, "\nspoa_breaker_server_resting{proxy=\"workers\",server=\"w1\"} 1\n");
	assert_contains(page, "\nspoa_breaker_server_resting{proxy=\"workers\",server=\"w2\"} 0\n");
	assert_contains(page, "\nspoa_breaker_server_state{proxy=\"workers\",server=\"w1\","
			      "state=\"closed\"} 1\n");
	assert_contains(page, "\nspoa_breaker_retry_after_ignored_total{reason=\"date\"} 2\n");
	assert_contains(page, "\nspoa_breaker_retry_after_ignored_total{reason=\"invalid\"} 5\n");
	free(page);

	/* now is T0 + 1000: 2 s of the 3 left. */
	struct strbuf b;
	strbuf_init(&b);
	assert_true(state_json_render(&s, &b));
	assert_contains(b.data, "\"server\":\"w1\",\"state\":\"closed\"");
	assert_contains(b.data, "\"rest_left_ms\":2000,\"rests\":1,\"rest_ejection_capped\":false,");
	strbuf_free(&b);
	bool capped[16] = {false};
	capped[breaker_table_index(&table, w1)] = true;
	strbuf_init(&b);
	struct state_json_cursor c = {0};
	assert_true(state_json_render_breakers(&table, capped, NULL, s.now_ms, &c, &b, 1000));
	assert_contains(b.data, "\"rest_left_ms\":2000,\"rests\":1,\"rest_ejection_capped\":true,");
	strbuf_free(&b);
}

/* ==== the buffer ==== */

static void test_strbuf_grows(void **state)
{
	struct strbuf b;
	strbuf_init(&b);
	for (int i = 0; i < 3000; i++)
		strbuf_printf(&b, "%04d,", i);
	assert_false(b.failed);
	assert_int_equal(b.len, 15000);
	assert_int_equal(strlen(b.data), 15000);
	assert_memory_equal(b.data + 14995, "2999,", 5);
	size_t len;
	char *data = strbuf_steal(&b, &len);
	assert_int_equal(len, 15000);
	assert_null(b.data);
	free(data);

	strbuf_init(&b);
	assert_null(strbuf_steal(&b, &len)); /* nothing appended */
	assert_int_equal(len, 0);
}

/* What an HAProxy's configuration lacks, each problem naming its line. */
static void test_state_json_wiring(void **state)
{
	(void)state;
	struct metrics_source s = source();
	struct wiring w;
	memset(&w, 0, sizeof(w));
	s.runtime_api[0].wiring = &w;

	struct strbuf b;
	strbuf_init(&b);
	assert_true(state_json_render(&s, &b));
	assert_contains(b.data, "\"reachable\":true,\"level\":\"unknown\",\"maps\":null,"
				"\"unwired_backends\":[],\"problems\":[]}");
	strbuf_free(&b);

	wiring_note_level(&w, WIRING_LEVEL_OPERATOR);
	w.maps_known = true;
	w.retry_map = true;
	for (uint32_t look = 1; look <= 2; look++) {
		assert_true(wiring_note_row(&w, look, "static", 6, look * 100, false));
		assert_true(wiring_note_row(&w, look, "assets", 6, look * 100, false));
		assert_true(wiring_note_row(&w, look, "workers", 7, look * 100, true));
		wiring_end_look(&w, look, look * 5000, 2000, false, NULL, NULL);
	}
	strbuf_init(&b);
	assert_true(state_json_render(&s, &b));
	assert_contains(b.data, "\"level\":\"operator\",\"maps\":{\"breaker-owned.map\":false,"
				"\"breaker-retry-at.map\":true,\"breaker-watched.map\":false},");
	assert_true(strstr(b.data, "\"unwired_backends\":[\"static\",\"assets\"]") ||
		    strstr(b.data, "\"unwired_backends\":[\"assets\",\"static\"]"));
	assert_contains(b.data, "add `level admin` to the `stats socket` line");
	assert_contains(b.data, "add `acl breaker_owned str(),map(breaker-owned.map) -m found`");
	assert_contains(b.data, "`filter spoe engine breaker config spoe-breaker.conf`");
	assert_null(strstr(b.data, "verdict table"));
	strbuf_free(&b);
	wiring_free(&w);
}

/* The sections no HAProxy lists, as the file names them; none is []. */
static void test_state_json_unknown_sections(void **state)
{
	(void)state;
	struct metrics_source s = source();
	struct section_names names;
	section_names_init(&names, 1, false);
	assert_true(section_names_add(&names, "be_statc", NULL, 0));
	assert_true(section_names_add(&names, "be_static", "s9", 0));
	assert_true(section_names_add(&names, "be_static", NULL, 0));
	section_names_sort(&names);
	section_names_look_start(&names, 0);
	section_names_note_server(&names, 0, "be_static", 9, "s1", 2);
	section_names_look_end(&names, 0, true, NULL, NULL);
	s.sections = &names;

	struct strbuf b;
	strbuf_init(&b);
	assert_true(state_json_render(&s, &b));
	assert_contains(b.data, "\"unknown_sections\":[\"backend be_statc\","
				"\"server be_static/s9\"],\"breakers\":[");
	strbuf_free(&b);
	section_names_free(&names);

	section_names_init(&names, 1, false);
	s.sections = &names;
	strbuf_init(&b);
	assert_true(state_json_render(&s, &b));
	assert_contains(b.data, "\"unknown_sections\":[],\"breakers\":[");
	strbuf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checker_rejects_broken_text),
		cmocka_unit_test_setup_teardown(test_every_family_present, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_ejection_gauges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_and_both_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_detail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_passes_the_format_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slices_make_the_same_page, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_server_samples, setup, teardown),
		cmocka_unit_test(test_counted_successes),
		cmocka_unit_test_setup_teardown(test_counted_successes_sample, setup, teardown),
		cmocka_unit_test_setup_teardown(test_histogram_buckets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_label_escaping, setup, teardown),
		cmocka_unit_test(test_histogram_batch),
		cmocka_unit_test(test_json_string_escaping),
		cmocka_unit_test_setup_teardown(test_state_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_json_wiring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_json_unknown_sections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rest_shown, setup, teardown),
		cmocka_unit_test(test_strbuf_grows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
