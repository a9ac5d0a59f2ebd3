/*
 * state_json.c - every breaker as JSON, the agent's `show servers state`
 * (see metrics.h). Written by hand: one flat shape, strings escaped here.
 *
 *   {"enforce":"runtime-api","entries":2,"capacity":10000,...,
 *    "unknown_sections":["backend be_statc"],"breakers":[
 *     {"backend":"workers","server":"w2","state":"open","failure_streak":3,
 *      "since_ms":1200,"cooldown_left_ms":58800,"trips":4,"rest_left_ms":0,"rests":0,
 *      "rest_ejection_capped":false,"maxconn_learnt":0,"trips_in_a_row":2,
 *      "opened_by":"probe_failed","window_volume":9,"window_failures":3,
 *      "failure_rate_percent":33,"open_duration_ms":60000,
 *      "policy":{"threshold":3,"cooldown_ms":30000,...}}, ...]}
 */
#include "admin/state_json.h"
#include "hapi/section_names.h"
#include "link/wiring.h"

void state_json_string(struct strbuf *out, const char *v)
{
	strbuf_putc(out, '"');
	const char *run = v;
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;
		if (c != '"' && c != '\\' && c >= 0x20)
			continue;
		strbuf_append(out, run, (size_t)(v - run));
		switch (c) {
		case '"':
			strbuf_puts(out, "\\\"");
			break;
		case '\\':
			strbuf_puts(out, "\\\\");
			break;
		case '\n':
			strbuf_puts(out, "\\n");
			break;
		case '\r':
			strbuf_puts(out, "\\r");
			break;
		case '\t':
			strbuf_puts(out, "\\t");
			break;
		default:
			strbuf_printf(out, "\\u%04x", c);
		}
		run = v + 1;
	}
	strbuf_append(out, run, (size_t)(v - run));
	strbuf_putc(out, '"');
}

static void key(struct strbuf *o, const char *k)
{
	state_json_string(o, k);
	strbuf_putc(o, ':');
}

static void u64_field(struct strbuf *o, const char *k, uint64_t v, bool last)
{
	key(o, k);
	strbuf_printf(o, "%llu%s", (unsigned long long)v, last ? "" : ",");
}

static void string_field(struct strbuf *o, const char *k, const char *v, bool last)
{
	key(o, k);
	state_json_string(o, v);
	if (!last)
		strbuf_putc(o, ',');
}

static void set_field(struct strbuf *o, const char *k, const struct status_set *set)
{
	char text[STATUS_SET_FORMAT_MAX];
	status_set_format(set, text, sizeof(text));
	string_field(o, k, text, false);
}

static void policy_object(struct strbuf *o, const struct breaker_policy *p)
{
	strbuf_putc(o, '{');
	u64_field(o, "threshold", p->threshold, false);
	u64_field(o, "cooldown_ms", p->cooldown_ms, false);
	u64_field(o, "half_open_probes", p->half_open_probes, false);
	set_field(o, "capacity_statuses", &p->capacity);
	set_field(o, "failure_statuses", &p->failure);
	set_field(o, "ignore_statuses", &p->ignore);
	string_field(o, "half_open_backpressure",
		     p->half_open_backpressure == BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE ? "ignore"
											: "close",
		     false);
	string_field(o, "open_late_success",
		     p->open_late_success == BREAKER_OPEN_LATE_SUCCESS_CLOSE ? "close" : "ignore", false);
	u64_field(o, "max_cooldown_ms", p->max_cooldown_ms, false);
	u64_field(o, "healthy_for_ms", p->healthy_for_ms, false);
	u64_field(o, "failure_rate_threshold", p->failure_rate_threshold, false);
	u64_field(o, "window", p->window, false);
	u64_field(o, "minimum_volume", p->minimum_volume, false);
	u64_field(o, "wedged_after_ms", p->wedged_after_ms, false);
	u64_field(o, "stalled_after_ms", p->stalled_after_ms, false);
	u64_field(o, "stalled_requests", p->stalled_requests, false);
	u64_field(o, "stalled_share", p->stalled_share, false);
	u64_field(o, "retry_after_max_ms", p->retry_after_max_ms, false);
	/* The backend's ejection cap, as this server's backend has it. */
	u64_field(o, "max_ejection_percent", p->max_ejection_percent, false);
	key(o, "drain_last_server");
	strbuf_puts(o, p->drain_last_server ? "true," : "false,");
	key(o, "pin_maxconn");
	strbuf_puts(o, p->pin_maxconn ? "true," : "false,");
	key(o, "release_stalled");
	strbuf_puts(o, p->release_stalled ? "true" : "false");
	strbuf_putc(o, '}');
}

static void breaker_object(struct strbuf *o, const struct breaker_table_entry *e, uint64_t now,
			   bool capped, uint32_t learnt)
{
	const struct breaker *b = &e->breaker;
	uint64_t since = now > b->state_since_ms ? now - b->state_since_ms : 0;
	uint64_t left = 0;
	if (b->state == BREAKER_OPEN && b->policy) {
		uint64_t end = breaker_next_deadline(b); /* the backed-off open time */
		left = end > now ? end - now : 0;
	}
	unsigned volume = breaker_window_volume(b), failures = breaker_window_failures(b);

	strbuf_putc(o, '{');
	string_field(o, "backend", e->backend, false);
	string_field(o, "server", e->server, false);
	string_field(o, "state", breaker_state_name(b->state), false);
	/* Open or half-open, but the backend's ejection cap keeps the server
	 * in full rotation. */
	key(o, "ejection_capped");
	strbuf_puts(o, b->state != BREAKER_CLOSED && capped ? "true," : "false,");
	u64_field(o, "failure_streak", b->failure_streak, false);
	u64_field(o, "since_ms", since, false);
	u64_field(o, "cooldown_left_ms", left, false);
	u64_field(o, "trips", b->trips, false);
	/* The worker's own Retry-After: time left of its rest (0: none),
	 * rests so far. */
	u64_field(o, "rest_left_ms", breaker_rest_left_ms(b, now), false);
	u64_field(o, "rests", b->rests, false);
	/* Resting, but the ejection cap keeps the server in rotation. */
	key(o, "rest_ejection_capped");
	strbuf_puts(o, b->state != BREAKER_OPEN && breaker_is_resting(b) && capped ? "true,"
										     : "false,");
	/* The maxconn the agent holds for the server from its worker's
	 * learnt capacity (0: none; docs/capacity.md). */
	u64_field(o, "maxconn_learnt", learnt, false);
	/* The operator's word (core/operator_hand.h): a hold, how long
	 * still (0: until unhold), and whether only observed here. */
	string_field(o, "hold", breaker_hold_name((enum breaker_hold)b->hold), false);
	key(o, "hold_forced");
	strbuf_puts(o, b->hold_forced ? "true," : "false,");
	u64_field(o, "hold_left_ms", breaker_hold_left_ms(b, now), false);
	key(o, "observe_only");
	strbuf_puts(o, b->observe_only ? "true," : "false,");
	u64_field(o, "trips_in_a_row", b->trips_in_a_row, false);
	string_field(o, "opened_by",
		     breaker_trip_rule_name((enum breaker_trip_rule)b->last_trip_rule), false);
	/* Peers mode: held open by another HAProxy node's verdict (how long
	 * still, unless renewed), and whether on that verdict alone. */
	uint64_t hold_end = b->state == BREAKER_OPEN ? breaker_peer_hold_until(b) : 0;
	u64_field(o, "peer_hold_left_ms", hold_end > now ? hold_end - now : 0, false);
	key(o, "peer_adopted");
	strbuf_puts(o, b->state == BREAKER_OPEN && b->peer_adopted ? "true," : "false,");
	u64_field(o, "window_volume", volume, false);
	u64_field(o, "window_failures", failures, false);
	u64_field(o, "failure_rate_percent", volume ? failures * 100u / volume : 0, false);
	/* Capacity statuses in a row and for how long: what wedged_after judges. */
	u64_field(o, "capacity_run", b->capacity_run, false);
	u64_field(o, "capacity_run_ms",
		  b->capacity_run && now > b->capacity_run_since_ms ? now - b->capacity_run_since_ms : 0,
		  !b->policy);
	if (b->policy) {
		/* The open time of this trip, or of the next one when not open. */
		u64_field(o, "open_duration_ms", breaker_open_duration_ms(b), false);
		key(o, "policy");
		policy_object(o, b->policy);
	}
	strbuf_putc(o, '}');
}

static bool unwired_item(void *ctx, const char *backend)
{
	struct strbuf *o = ctx;
	if (o->len > 0 && o->data[o->len - 1] != '[')
		strbuf_putc(o, ',');
	state_json_string(o, backend);
	return true;
}

static void problem(struct strbuf *o, bool *first, const char *text)
{
	if (!*first)
		strbuf_putc(o, ',');
	*first = false;
	state_json_string(o, text);
}

/*
 * One HAProxy the agent acts on, and what its configuration lacks for the
 * agent: each problem names the line that is missing (docs/wiring.md).
 */
static void haproxy_object(struct strbuf *o, const struct metrics_runtime_api *r)
{
	const struct wiring *w = r->wiring;
	strbuf_putc(o, '{');
	string_field(o, "runtime_api", r->address ? r->address : "", false);
	key(o, "reachable");
	strbuf_puts(o, r->reachable ? "true," : "false,");
	if (!w) {
		strbuf_puts(o, "\"problems\":[]}");
		return;
	}
	string_field(o, "level", wiring_level_name(w->level), false);
	key(o, "maps");
	if (w->maps_known) {
		strbuf_putc(o, '{');
		key(o, "breaker-owned.map");
		strbuf_puts(o, w->owner_map ? "true," : "false,");
		key(o, "breaker-retry-at.map");
		strbuf_puts(o, w->retry_map ? "true," : "false,");
		key(o, "breaker-watched.map");
		strbuf_puts(o, w->watched_map ? "true}," : "false},");
	} else {
		strbuf_puts(o, "null,");
	}
	key(o, "unwired_backends");
	strbuf_putc(o, '[');
	wiring_each_unwired(w, unwired_item, o);
	strbuf_puts(o, "],");
	key(o, "problems");
	strbuf_putc(o, '[');
	bool first = true;
	if (w->level != WIRING_LEVEL_ADMIN && w->level != WIRING_LEVEL_UNKNOWN)
		problem(o, &first,
			"the Runtime API is not at level admin: drains are refused; add `level "
			"admin` to the `stats socket` line");
	if (w->maps_known && !w->owner_map)
		problem(o, &first,
			"breaker-owned.map is not loaded: add `acl breaker_owned "
			"str(),map(breaker-owned.map) -m found` to one backend");
	if (w->verdicts_wanted && !w->verdict_table)
		problem(o, &first,
			"the verdict table is missing: load breaker-peers.cfg with a second -f");
	if (w->unwired > 0)
		problem(o, &first,
			"backends in unwired_backends carry traffic no SPOP message names: add "
			"`filter spoe engine breaker config spoe-breaker.conf` to their frontends, "
			"or `guarded = false` to their [backend] section");
	strbuf_puts(o, "]}");
}

static void unknown_section(void *ctx, const struct section_name *n)
{
	struct strbuf *o = ctx;
	char header[SECTION_NAMES_FULL_MAX + 16];
	if (o->len > 0 && o->data[o->len - 1] != '[')
		strbuf_putc(o, ',');
	state_json_string(o, section_names_header(n, header, sizeof(header)));
}

bool state_json_render_head(const struct metrics_source *s, struct strbuf *o)
{
	const struct breaker_table *t = s->table;

	strbuf_putc(o, '{');
	string_field(o, "enforce", enforce_mode_name(s->enforce_mode), false);
	u64_field(o, "entries", t ? t->count : 0, false);
	u64_field(o, "capacity", t ? t->max_entries : 0, false);
	/* Where the breakers came from: a restart restores them. */
	key(o, "state");
	strbuf_putc(o, '{');
	string_field(o, "file", s->state && s->state->path[0] ? s->state->path : "none", false);
	string_field(o, "source", state_source_name(s->state ? s->state->source : STATE_SOURCE_OFF),
		     false);
	u64_field(o, "restored", s->state ? s->state->restored : 0, false);
	key(o, "up_to_date");
	strbuf_puts(o, s->state && s->state->up_to_date ? "true" : "false");
	strbuf_puts(o, "},");
	/* Whether steady-state mode can work (link/steady_support.h). */
	key(o, "steady_state");
	strbuf_putc(o, '{');
	u64_field(o, "messages", s->steady_messages, false);
	string_field(o, "watched_map", steady_support_name(s->steady_support), false);
	key(o, "problem");
	if (s->steady_support == STEADY_SUPPORT_UNKEPT)
		strbuf_puts(o, "\"HAProxy sends in steady-state mode and no runtime_api keeps its "
			       "breaker-watched.map: give the agent runtime_api, or use "
			       "spoe-breaker.conf\"");
	else
		strbuf_puts(o, "null");
	strbuf_puts(o, "},");
	/* The operator's word: released, paused backends, holds. */
	key(o, "operator");
	strbuf_putc(o, '{');
	key(o, "released");
	strbuf_puts(o, s->hand && s->hand->released ? "true," : "false,");
	key(o, "paused");
	strbuf_putc(o, '[');
	for (uint32_t i = 0; s->hand && i < s->hand->nb_paused; i++) {
		if (i)
			strbuf_putc(o, ',');
		state_json_string(o, s->hand->paused[i].backend);
	}
	strbuf_puts(o, "],");
	key(o, "holds");
	strbuf_putc(o, '[');
	for (uint32_t i = 0; s->hand && i < s->hand->nb_holds; i++) {
		const struct operator_hold *h = &s->hand->holds[i];
		strbuf_puts(o, i ? ",{" : "{");
		string_field(o, "backend", h->backend, false);
		string_field(o, "server", h->server, false);
		string_field(o, "hold", breaker_hold_name(h->hold), false);
		key(o, "forced");
		strbuf_puts(o, h->forced ? "true," : "false,");
		u64_field(o, "until_wall_ms", (uint64_t)(h->until_wall_ms > 0 ? h->until_wall_ms : 0),
			  false);
		strbuf_printf(o, "\"uid\":%ld}", h->uid);
	}
	strbuf_puts(o, "]},");
	key(o, "haproxy");
	strbuf_putc(o, '[');
	for (unsigned i = 0; i < s->nb_runtime_api; i++) {
		if (i)
			strbuf_putc(o, ',');
		haproxy_object(o, &s->runtime_api[i]);
	}
	strbuf_puts(o, "],");
	/* [backend]/[server] sections naming what no HAProxy lists: null
	 * until every HAProxy was looked at (or with none to ask). */
	key(o, "unknown_sections");
	if (s->sections) {
		strbuf_putc(o, '[');
		section_names_each_unlisted(s->sections, unknown_section, o);
		strbuf_puts(o, "],");
	} else {
		strbuf_puts(o, "null,");
	}
	key(o, "breakers");
	strbuf_putc(o, '[');
	return !o->failed;
}

bool state_json_render_breakers(const struct breaker_table *t, const bool *capped,
				const uint32_t *learnt, uint64_t now_ms, struct state_json_cursor *c, struct strbuf *o,
				uint32_t budget)
{
	const struct breaker_table_entry *e;
	for (; (e = breaker_table_walk(t, &c->index, &budget)); c->index++) {
		if (c->written++)
			strbuf_putc(o, ',');
		breaker_object(o, e, now_ms, capped && capped[c->index],
			       learnt ? learnt[c->index] : 0);
	}
	if (breaker_table_walk_cut(t, c->index))
		return false;
	strbuf_puts(o, "]}\n");
	return true;
}
