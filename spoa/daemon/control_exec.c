/*
 * control_exec.c - what the control socket's commands do (control_parse.h
 * reads them, control.c carries them): the operator's word
 * (core/operator_hand.h) recorded, written to disk, applied to the
 * breakers and published, so that every listener hears it and the HAProxy
 * link converges at once. Each change is logged with who asked.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/state_json.h"
#include "daemon/control.h"
#include "daemon/control_parse.h"
#include "daemon/daemon.h"
#include "daemon/operator_store.h"
#include "util/clock.h"
#include "util/log.h"

static int64_t wall_now_ms(void)
{
	return clock_wall_ms(); /* util/clock.h: the seam the simulation's clock takes */
}

/* ---- applying the record ---- */

/* Tells every listener, then the HAProxy link, of the change. */
static void publish_entry(struct daemon *d, struct breaker_table_entry *e, long uid,
			  enum breaker_state from)
{
	struct breaker_event ev = {.from = from, .to = e->breaker.state};
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_OPERATOR, .uid = uid,
				      .now_ms = clock_now_ms()};
	daemon_publish(d, e, &ev, &cause);
}

/* Brings one breaker in line with the record; publishes when what HAProxy
 * should hold for it changed (or `always`: a reset). */
static void apply_entry(struct daemon *d, struct breaker_table_entry *e, long uid,
			enum breaker_state from, bool always)
{
	bool changed = operator_hand_apply(&d->hand, e->backend, e->server, &e->breaker,
					   clock_now_ms(), wall_now_ms());
	if (!changed && !always)
		return;
	publish_entry(d, e, uid, from);
}

/* Every breaker, or those of one backend: the word applied to all of them
 * before any is published. Published one by one as it is applied, a pause
 * lifted the first breaker's drain while the next was still the
 * breaker's own: the room that drain freed under the ejection cap went to
 * a breaker the cap held back, drained for an instant by the very word
 * that stops the agent draining. */
static void apply_all(struct daemon *d, const char *backend, long uid)
{
	struct breaker_table *t = &d->breakers.table;
	struct changed {
		uint32_t index;
		enum breaker_state from;
	} *changed = calloc(t->allocated ? t->allocated : 1, sizeof(*changed));
	uint32_t nb = 0;

	for (uint32_t i = 0; i < t->allocated; i++) {
		struct breaker_table_entry *e = breaker_table_at(t, i);
		if (!e->in_use || (backend && strcmp(e->backend, backend) != 0))
			continue;
		if (!changed) { /* no memory for the list: one by one, as before */
			apply_entry(d, e, uid, e->breaker.state, false);
			continue;
		}
		enum breaker_state from = e->breaker.state;
		if (operator_hand_apply(&d->hand, e->backend, e->server, &e->breaker,
					clock_now_ms(), wall_now_ms()))
			changed[nb++] = (struct changed){i, from};
	}
	for (uint32_t k = 0; k < nb; k++)
		publish_entry(d, breaker_table_at(t, changed[k].index), uid, changed[k].from);
	free(changed);
}

/* The record on disk after each change: a restart keeps it. */
static void save(struct daemon *d, struct strbuf *out)
{
	char err[512];
	if (!d->operator_path[0]) {
		strbuf_puts(out, "note: no state_file: this lasts until the agent stops\n");
		return;
	}
	if (!operator_store_save(d->operator_path, &d->hand, err, sizeof(err))) {
		log_error("control: the operator's record could not be written: %s", err);
		strbuf_printf(out, "warning: not written to disk, a restart would lose it: %s\n",
			      err);
	}
}

/* The subscriber that gives a new breaker what the record says of its
 * server: a hold asked for before HAProxy listed it, its backend's pause. */
static void on_created(void *ctx, uint32_t index)
{
	struct daemon *d = ctx;
	struct breaker_table_entry *e = breaker_table_at(&d->breakers.table, index);
	if (operator_hand_apply(&d->hand, e->backend, e->server, &e->breaker, clock_now_ms(),
				wall_now_ms()) &&
	    e->breaker.hold_until_s)
		breakers_arm_entry(&d->breakers, e);
}

/* A timed hold ran out: the record forgets it too. */
static void on_recorded(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
			const struct breaker_cause *cause)
{
	struct daemon *d = ctx;
	(void)cause;
	if (!ev->hold_ended)
		return;
	if (operator_hand_unhold(&d->hand, e->backend, e->server) && d->operator_path[0]) {
		char err[512];
		if (!operator_store_save(d->operator_path, &d->hand, err, sizeof(err)))
			log_error("control: the operator's record could not be written: %s", err);
	}
}

struct breaker_subscriber control_subscriber(struct daemon *d)
{
	return (struct breaker_subscriber){
		.name = "operator", .recorded = on_recorded, .created = on_created, .ctx = d};
}

/* ---- show breakers ---- */

struct done_in_haproxy {
	struct strbuf *out;
	bool json;
	unsigned n;
};

static void said_memory(void *ctx, const char *address, const struct enforce_memory *mem)
{
	struct done_in_haproxy *s = ctx;
	const char *what = mem->drained_by_us && mem->maxconn_by_us ? "drained, maxconn"
			   : mem->drained_by_us			     ? "drained"
								     : "maxconn";
	if (s->json) {
		strbuf_puts(s->out, s->n++ ? "," : "");
		strbuf_puts(s->out, "{\"haproxy\":");
		state_json_string(s->out, address ? address : "agent-check");
		strbuf_puts(s->out, ",\"done\":");
		state_json_string(s->out, what);
		strbuf_puts(s->out, "}");
	} else {
		strbuf_printf(s->out, "%s%s %s", s->n++ ? "; " : "", what,
			      address ? address : "agent-check");
	}
}

static const char *why_text(const struct breaker *b)
{
	if (b->state == BREAKER_CLOSED)
		return breaker_is_resting(b) ? "resting" : "-";
	return breaker_trip_rule_name((enum breaker_trip_rule)b->last_trip_rule);
}

/* The operator's word on one breaker, as a short text ("out 25s forced"). */
static void hand_text(const struct daemon *d, const struct breaker_table_entry *e, char *buf,
		      size_t size)
{
	const struct breaker *b = &e->breaker;
	uint64_t left = breaker_hold_left_ms(b, clock_now_ms());
	size_t n = 0;
	buf[0] = '\0';
	if (b->hold != BREAKER_HOLD_NONE)
		n = (size_t)snprintf(buf, size, "%s%s%s", breaker_hold_name(b->hold),
				     b->hold_forced ? " forced" : "", left ? "" : " until unhold");
	if (left && n < size)
		n += (size_t)snprintf(buf + n, size - n, " %" PRIu64 "s left", (left + 999) / 1000);
	if (b->observe_only && n < size)
		snprintf(buf + n, size - n, "%s%s", n ? ", " : "",
			 d->hand.released ? "released" : "paused");
}

static void show_one_text(struct daemon *d, struct breaker_table_entry *e, struct strbuf *out)
{
	const struct breaker *b = &e->breaker;
	uint32_t index = breaker_table_index(&d->breakers.table, e);
	const bool *capped = enforcer_ejection_capped(d->enforcer);
	char hand[96];
	hand_text(d, e, hand, sizeof(hand));
	strbuf_printf(out, "%s/%s %s %s %" PRIu64 "s %u %u ", e->backend, e->server,
		      breaker_state_name(b->state), why_text(b),
		      (clock_now_ms() - b->state_since_ms) / 1000, b->failure_streak, b->trips);
	struct done_in_haproxy s = {.out = out};
	if (d->enforcer)
		enforcer_memories(d->enforcer, index, said_memory, &s);
	if (s.n == 0)
		strbuf_puts(out, capped && capped[index] ? "held-back-by-cap" : "-");
	strbuf_printf(out, " %s\n", hand[0] ? hand : "-");
}

static void show_one_json(struct daemon *d, struct breaker_table_entry *e, struct strbuf *out,
			  bool first)
{
	const struct breaker *b = &e->breaker;
	uint32_t index = breaker_table_index(&d->breakers.table, e);
	const bool *capped = enforcer_ejection_capped(d->enforcer);
	strbuf_puts(out, first ? "\n{\"backend\":" : ",\n{\"backend\":");
	state_json_string(out, e->backend);
	strbuf_puts(out, ",\"server\":");
	state_json_string(out, e->server);
	strbuf_printf(out,
		      ",\"state\":\"%s\",\"why\":\"%s\",\"since_ms\":%" PRIu64
		      ",\"failures\":%u,\"trips\":%u,\"resting\":%s,\"ejection_capped\":%s,"
		      "\"hold\":\"%s\",\"hold_forced\":%s,\"hold_left_ms\":%" PRIu64
		      ",\"observe_only\":%s,\"in_haproxy\":[",
		      breaker_state_name(b->state), why_text(b), clock_now_ms() - b->state_since_ms,
		      b->failure_streak, b->trips, breaker_is_resting(b) ? "true" : "false",
		      capped && capped[index] ? "true" : "false",
		      breaker_hold_name((enum breaker_hold)b->hold), b->hold_forced ? "true" : "false",
		      breaker_hold_left_ms(b, clock_now_ms()), b->observe_only ? "true" : "false");
	struct done_in_haproxy s = {.out = out, .json = true};
	if (d->enforcer)
		enforcer_memories(d->enforcer, index, said_memory, &s);
	strbuf_puts(out, "]}");
}

static void show_breakers(struct daemon *d, const struct control_request *req, struct strbuf *out)
{
	struct breaker_table *t = &d->breakers.table;
	unsigned shown = 0;

	if (req->json)
		strbuf_printf(out, "{\"released\":%s,\"paused\":[", d->hand.released ? "true" : "false");
	for (uint32_t i = 0; req->json && i < d->hand.nb_paused; i++) {
		strbuf_puts(out, i ? "," : "");
		state_json_string(out, d->hand.paused[i].backend);
	}
	if (req->json)
		strbuf_puts(out, "],\"breakers\":[");
	else
		strbuf_puts(out, "# backend/server state why since failures trips in_haproxy hold\n");
	for (uint32_t i = 0; i < t->allocated; i++) {
		struct breaker_table_entry *e = breaker_table_at(t, i);
		if (!e->in_use || (req->backend[0] && strcmp(e->backend, req->backend) != 0) ||
		    (req->server[0] && strcmp(e->server, req->server) != 0))
			continue;
		if (req->json)
			show_one_json(d, e, out, shown == 0);
		else
			show_one_text(d, e, out);
		shown++;
	}
	if (req->json)
		strbuf_puts(out, "\n]}\n");
	if (!req->json && !d->hand.released)
		for (uint32_t i = 0; i < d->hand.nb_paused; i++)
			strbuf_printf(out, "# backend %s paused: observe only\n",
				      d->hand.paused[i].backend);
	if (!req->json && d->hand.released)
		strbuf_puts(out, "# released: the agent holds nothing in HAProxy until resume all\n");
	if (shown == 0 && req->backend[0] && !req->json)
		strbuf_printf(out, "# no breaker of %s%s%s\n", req->backend, req->server[0] ? "/" : "",
			      req->server);
}

/* ---- the commands that change something ---- */

static struct breaker_table_entry *find_server(struct daemon *d, const struct control_request *req,
					       struct strbuf *out)
{
	struct breaker_table_entry *e =
		breaker_table_find(&d->breakers.table, req->backend, strlen(req->backend),
				   req->server, strlen(req->server));
	if (!e)
		strbuf_printf(out,
			      "error: no breaker for %s/%s: HAProxy lists no such server, or its "
			      "backend is not guarded (show breakers lists them)\n",
			      req->backend, req->server);
	return e;
}

static bool backend_known(struct daemon *d, const char *backend)
{
	struct breaker_table *t = &d->breakers.table;
	for (uint32_t i = 0; i < t->allocated; i++) {
		struct breaker_table_entry *e = breaker_table_at(t, i);
		if (e->in_use && strcmp(e->backend, backend) == 0)
			return true;
	}
	return false;
}

static void do_hold(struct daemon *d, const struct control_request *req, long uid,
		    struct strbuf *out)
{
	struct breaker_table_entry *e = find_server(d, req, out);
	if (!e)
		return;
	int64_t now = wall_now_ms();
	struct operator_hold hold = {.hold = req->hold, .forced = req->force,
				     .until_wall_ms = req->for_ms ? now + (int64_t)req->for_ms : 0,
				     .since_wall_ms = now, .uid = uid};
	snprintf(hold.backend, sizeof(hold.backend), "%s", req->backend);
	snprintf(hold.server, sizeof(hold.server), "%s", req->server);
	char err[256];
	if (!operator_hand_hold(&d->hand, &hold, err, sizeof(err))) {
		strbuf_printf(out, "error: %s\n", err);
		return;
	}
	/* Published: the timer subscriber arms for a timed hold's end. */
	apply_entry(d, e, uid, e->breaker.state, true);
	log_notice("control: uid %ld holds %s/%s %s%s%s", uid, e->backend, e->server,
		   breaker_hold_name(req->hold), req->force ? ", past the ejection cap" : "",
		   req->for_ms ? " for a time" : " until unhold");
	strbuf_printf(out, "%s/%s held %s", e->backend, e->server, breaker_hold_name(req->hold));
	if (req->for_ms)
		strbuf_printf(out, " for %" PRIu64 " ms", req->for_ms);
	strbuf_puts(out, "\n");
	const bool *capped = enforcer_ejection_capped(d->enforcer);
	if (req->hold == BREAKER_HOLD_OUT && capped &&
	    capped[breaker_table_index(&d->breakers.table, e)])
		strbuf_printf(out,
			      "note: the ejection cap of backend %s holds its drain back until room "
			      "frees; hold out ... force drains it now\n",
			      e->backend);
	if (e->breaker.observe_only)
		strbuf_puts(out, "note: its backend is paused or the agent released: the hold "
				 "applies once resumed\n");
	save(d, out);
}

static void do_unhold(struct daemon *d, const struct control_request *req, long uid,
		      struct strbuf *out)
{
	if (!operator_hand_unhold(&d->hand, req->backend, req->server)) {
		strbuf_printf(out, "error: %s/%s is not held\n", req->backend, req->server);
		return;
	}
	struct breaker_table_entry *e = breaker_table_find(&d->breakers.table, req->backend,
							   strlen(req->backend), req->server,
							   strlen(req->server));
	if (e)
		apply_entry(d, e, uid, e->breaker.state, true);
	log_notice("control: uid %ld lifts the hold on %s/%s", uid, req->backend, req->server);
	strbuf_printf(out, "%s/%s no longer held: the breaker decides (%s)\n", req->backend,
		      req->server, e ? breaker_state_name(e->breaker.state) : "no breaker");
	save(d, out);
}

static void do_reset(struct daemon *d, const struct control_request *req, long uid,
		     struct strbuf *out)
{
	struct breaker_table_entry *e = find_server(d, req, out);
	if (!e)
		return;
	enum breaker_state from = e->breaker.state;
	bool was_held = operator_hand_unhold(&d->hand, e->backend, e->server);
	breaker_reset(&e->breaker, clock_now_ms());
	apply_entry(d, e, uid, from, true);
	log_notice("control: uid %ld resets %s/%s (was %s%s)", uid, e->backend, e->server,
		   breaker_state_name(from), was_held ? ", held" : "");
	strbuf_printf(out, "%s/%s reset: closed, clean%s\n", e->backend, e->server,
		      was_held ? ", its hold lifted" : "");
	if (was_held)
		save(d, out);
}

static void do_pause(struct daemon *d, const struct control_request *req, long uid,
		     struct strbuf *out)
{
	char err[256];
	if (!backend_known(d, req->backend)) {
		strbuf_printf(out, "error: no breaker of backend %s: HAProxy lists no such backend, "
				   "or it is not guarded\n",
			      req->backend);
		return;
	}
	if (!operator_hand_pause(&d->hand, req->backend, wall_now_ms(), uid, err, sizeof(err))) {
		strbuf_printf(out, "error: %s\n", err);
		return;
	}
	apply_all(d, req->backend, uid);
	log_notice("control: uid %ld pauses backend %s: observe only, the agent's drains there "
		   "lifted", uid, req->backend);
	strbuf_printf(out, "backend %s paused: observe only\n", req->backend);
	save(d, out);
}

static void do_resume(struct daemon *d, const struct control_request *req, long uid,
		      struct strbuf *out)
{
	if (!operator_hand_resume(&d->hand, req->backend)) {
		strbuf_printf(out, "error: backend %s is not paused\n", req->backend);
		return;
	}
	apply_all(d, req->backend, uid);
	log_notice("control: uid %ld resumes backend %s", uid, req->backend);
	strbuf_printf(out, "backend %s resumed%s\n", req->backend,
		      d->hand.released ? " (the agent is still released: resume all)" : "");
	save(d, out);
}

static void do_release(struct daemon *d, bool release, long uid, struct strbuf *out)
{
	bool changed = release ? operator_hand_release(&d->hand, wall_now_ms(), uid)
			       : operator_hand_resume_all(&d->hand);
	if (!changed) {
		strbuf_puts(out, release ? "released already\n" : "nothing to resume\n");
		return;
	}
	if (d->enforcer)
		enforcer_set_released(d->enforcer, release);
	apply_all(d, NULL, uid);
	if (release) {
		log_notice("control: uid %ld releases the agent: every drain, maxconn and map entry "
			   "it set in HAProxy is lifted, nothing new is done until resume all", uid);
		strbuf_puts(out, "released: the agent's drains, maxconn and map entries are being "
				 "lifted; nothing new is done until resume all\n");
	} else {
		log_notice("control: uid %ld resumes the agent (release and pauses lifted)", uid);
		strbuf_puts(out, "resumed: the breakers act again\n");
	}
	save(d, out);
}

static void run(struct daemon *d, const struct control_request *req, long uid, struct strbuf *out);

void daemon_control_exec(void *ctx, const char *line, size_t len, long uid, struct strbuf *out)
{
	struct daemon *d = ctx;
	struct control_request req;
	char err[256];

	if (!control_parse(line, len, &req, err, sizeof(err))) {
		strbuf_printf(out, "error: %s\n", err);
		d->control_refused++;
		log_info("control: uid %ld: refused: %s", uid, err);
		return;
	}
	size_t before = out->len;
	run(d, &req, uid, out);
	if (out->len > before && strncmp(out->data + before, "error:", 6) == 0)
		d->control_refused++;
	else
		d->control_done++;
}

static void run(struct daemon *d, const struct control_request *req, long uid, struct strbuf *out)
{
	switch (req->verb) {
	case CONTROL_HELP: strbuf_puts(out, control_help_text); return;
	case CONTROL_SHOW_BREAKERS: show_breakers(d, req, out); return;
	case CONTROL_HOLD: do_hold(d, req, uid, out); return;
	case CONTROL_UNHOLD: do_unhold(d, req, uid, out); return;
	case CONTROL_RESET: do_reset(d, req, uid, out); return;
	case CONTROL_PAUSE: do_pause(d, req, uid, out); return;
	case CONTROL_RESUME: do_resume(d, req, uid, out); return;
	case CONTROL_RELEASE_ALL: do_release(d, true, uid, out); return;
	case CONTROL_RESUME_ALL: do_release(d, false, uid, out); return;
	}
}

/* ---- start and stop ---- */

/* Where the control socket is: the key, or control.sock beside the state
 * file; "" for none. */
static void control_spec(const struct config *c, char *out, size_t size)
{
	out[0] = '\0';
	if (c->control_set) {
		snprintf(out, size, "%s", c->control);
		return;
	}
	if (!c->state.file[0])
		return;
	const char *slash = strrchr(c->state.file, '/');
	if (!slash)
		snprintf(out, size, "unix:control.sock");
	else
		snprintf(out, size, "unix:%.*s/control.sock", (int)(slash - c->state.file),
			 c->state.file);
}

bool daemon_open_control(struct daemon *d)
{
	const struct config *c = &d->config;
	char err[512], spec[CONFIG_LISTEN_MAX_LEN + 32];

	operator_hand_init(&d->hand);
	d->operator_path[0] = '\0';
	if (c->state.file[0] &&
	    operator_store_path(c->state.file, d->operator_path, sizeof(d->operator_path))) {
		if (!operator_store_load(d->operator_path, &d->hand, err, sizeof(err))) {
			/* Said loudly and kept aside: starting without the
			 * operator's holds is the lesser harm than not starting. */
			log_error("control: the operator's record is unreadable, starting without "
				  "it: %s", err);
		} else {
			uint32_t ended = operator_hand_expire(&d->hand, wall_now_ms());
			if (d->hand.nb_holds || d->hand.nb_paused || d->hand.released || ended)
				log_notice("control: the operator's record: %u holds, %u backends "
					   "paused%s%s",
					   d->hand.nb_holds, d->hand.nb_paused,
					   d->hand.released ? ", released" : "",
					   ended ? " (holds that ran out meanwhile dropped)" : "");
		}
	}
	struct breaker_subscriber s = control_subscriber(d);
	if (!breakers_subscribe(&d->breakers, &s)) {
		log_error("control: no room for its subscriber");
		return false;
	}
	control_spec(c, spec, sizeof(spec));
	if (!spec[0])
		return true;
	struct listen_socket_owner owner = {.mode = c->control_mode, .gid = -1};
	if (c->control_group[0] &&
	    !listen_socket_group_id(c->control_group, &owner.gid, err, sizeof(err))) {
		log_error("control_group: %s", err);
		return false;
	}
	d->control = control_open(d->loop, spec, &owner, daemon_control_exec, d, err, sizeof(err));
	if (d->control) {
		log_notice("control socket on %s (mode %04o): spoa-breaker ctl --socket %s help",
			   spec, c->control_mode, spec + 5);
		return true;
	}
	if (c->control_set) {
		log_error("%s", err);
		return false;
	}
	log_warning("%s: running without the control socket", err);
	return true;
}

void daemon_control_apply(struct daemon *d)
{
	if (d->enforcer)
		enforcer_set_released(d->enforcer, d->hand.released);
	apply_all(d, NULL, -1);
}

void daemon_close_control(struct daemon *d)
{
	control_close(d->control);
	d->control = NULL;
	operator_hand_free(&d->hand);
}
