/*
 * sim_invariants.c - the promises the simulation holds the agent to,
 * checked at every step (and around every observation and every command
 * that lands), each by its name in docs/testing.md:
 *
 *   busy_never_charged        a busy worker (its answers 200s and capacity
 *                             statuses) never trips its breaker, once what
 *                             it did before is behind it; a worker slow to
 *                             refuse may be opened once by the stalled rule
 *                             before its answers prove it alive (design.md,
 *                             "A hung worker")
 *   busy_never_drained_answering  a rest drains a busy worker only after a
 *                             look that saw it answer nothing but refusals
 *   capacity_probe_closes     a half-open probe answered with a capacity
 *                             status closes (half_open_backpressure close)
 *   ejection_cap              the agent's drains of a backend stay within
 *                             max_ejection_percent of its capacity
 *   last_serving_server       never every server of a backend out with one
 *                             of them the agent's (drain_last_server off)
 *   operator_hand_kept        no command of the agent lifts or changes an
 *                             operator's drain or maintenance, or a
 *                             controller's parked slot
 *   no_orphan_drain           a drain of the agent's goes once its breaker
 *                             wants the server in
 *   no_orphan_maxconn         a maxconn of the agent's goes once neither a
 *                             probe nor a learnt capacity holds it
 *   haproxy_follows_breakers  an open breaker's server is drained, a
 *                             half-open one's at its probes (and drained
 *                             only while they are out), where the cap has
 *                             room
 *   no_socket                 the agent's code opened no socket, and
 *                             answered every NOTIFY
 *   snapshot_keeps            an agent restarted with its snapshot has every
 *                             breaker back (state, trips) with what it held
 *                             in HAProxy (its drains, its maxconn), and
 *                             never takes one of those for another's
 *   operator_hold_kept        an operator's hold is never undone: a server
 *                             held in is never drained, nor limited to
 *                             probes; one held out with force is drained
 *                             and never lifted (without force the ejection
 *                             cap still decides: haproxy_follows_breakers);
 *                             until the hold ends, or a pause or a release
 *                             puts it aside
 *   deleted_forgotten         a deleted server's breaker, ownership and
 *                             watched entries (and open verdict) go; one
 *                             added again under its name starts clean, with
 *                             none of the old drains (sim_invariants_deleted.c)
 *   peer_verdicts_kept        a breaker held open by another node's verdict
 *                             lets go once the verdict is gone; this node's
 *                             own verdict is in the table while its breaker
 *                             owns it, and gone once it closes
 *                             (sim_invariants_peers.c, which also holds the
 *                             agent to another node's verdict for
 *                             haproxy_follows_breakers)
 *
 * What must hold at once is checked at once; what the agent reaches
 * through HAProxy's Runtime API must hold within SIM_CONVERGE_MS of the
 * moment it became due, counted from when the Runtime API last came back
 * (an outage, lost replies, an agent's restart delay everything).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hapi/runtime_api.h"
#include "link/enforce_plan.h"
#include "util/clock.h"
#include "sim.h"
#include "sim_loop.h"

static const char *const names[SIM_INVARIANTS] = {
	[INV_BUSY_NEVER_CHARGED] = "busy_never_charged",
	[INV_BUSY_NEVER_DRAINED_ANSWERING] = "busy_never_drained_answering",
	[INV_CAPACITY_PROBE_CLOSES] = "capacity_probe_closes",
	[INV_EJECTION_CAP] = "ejection_cap",
	[INV_LAST_SERVING_SERVER] = "last_serving_server",
	[INV_OPERATOR_HAND_KEPT] = "operator_hand_kept",
	[INV_NO_ORPHAN_DRAIN] = "no_orphan_drain",
	[INV_NO_ORPHAN_MAXCONN] = "no_orphan_maxconn",
	[INV_HAPROXY_FOLLOWS_BREAKERS] = "haproxy_follows_breakers",
	[INV_NO_SOCKET] = "no_socket",
	[INV_SNAPSHOT_KEEPS] = "snapshot_keeps",
	[INV_OPERATOR_HOLD_KEPT] = "operator_hold_kept",
	[INV_DELETED_FORGOTTEN] = "deleted_forgotten",
	[INV_PEER_VERDICTS_KEPT] = "peer_verdicts_kept",
};

const char *sim_invariant_name(enum sim_invariant inv)
{
	return inv < SIM_INVARIANTS ? names[inv] : "?";
}

bool sim_violate(struct sim *s, enum sim_invariant inv, const char *fmt, ...)
{
	if (s->failed)
		return false;
	s->failed = true;
	s->violation.inv = inv;
	s->violation.at_ms = (sim_now_us() - SIM_CLOCK_START_US) / SIM_MS;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->violation.what, sizeof(s->violation.what), fmt, ap);
	va_end(ap);
	return true;
}

static bool capacity_status(unsigned status)
{
	return status == 429 || status == 503 || status == 529;
}

/* A busy worker, and nothing of an earlier kind still in its counters:
 * its requests of before have ended, it has answered since, and a
 * complete look, in an earlier step, has read both (what a look makes of
 * an earlier kind's timeouts, or of the silence they left, is that
 * kind's). */
static bool busy_and_clean(const struct sim_server *sv)
{
	const struct sim_worker *w = &sv->w;
	return (w->kind == WORKER_BUSY || w->kind == WORKER_REFUSING) && w->clean_since_us != 0 &&
	       w->clean_read_us > w->clean_since_us && w->answered_read_us != 0 &&
	       sim_now_us() > w->clean_read_us && sim_now_us() > w->answered_read_us;
}

bool sim_persists(struct sim *s, uint64_t *since, bool cond, uint64_t bound_ms)
{
	if (!cond) {
		*since = 0;
		return false;
	}
	uint64_t now = sim_now_us();
	if (*since == 0)
		*since = now;
	uint64_t from = *since > s->api_up_since_us ? *since : s->api_up_since_us;
	return now > from + bound_ms * SIM_MS;
}

/* The condition holds now; whether it has held too long (the bound),
 * counted from when it began or the Runtime API came back, whichever is
 * later. */
static bool persists(struct sim *s, uint64_t *since, bool cond)
{
	return sim_persists(s, since, cond, SIM_CONVERGE_MS);
}

void sim_invariants_observed(struct sim *s, const struct sim_backend *b,
			     const struct sim_server *sv, unsigned status, enum breaker_state before,
			     const struct breaker_table_entry *entry)
{
	if (!entry || before != BREAKER_HALF_OPEN || !capacity_status(status))
		return;
	const struct breaker_policy *p = entry->breaker.policy;
	if (p->half_open_backpressure != BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE ||
	    p->wedged_after_ms != 0)
		return;
	s->checks[INV_CAPACITY_PROBE_CLOSES]++;
	if (entry->breaker.state != BREAKER_CLOSED)
		sim_violate(s, INV_CAPACITY_PROBE_CLOSES,
			    "%s/%s: half-open, answered %u, left %s", b->name, sv->name, status,
			    entry->breaker.state == BREAKER_OPEN ? "open" : "half-open");
}

/* ---- operator_hold_kept ---- */

/* A command the agent queued after the hold was accepted, landing now:
 * a drain of a server held in, a ready of one held out with force; and
 * a drain at all under a pause or a release, which win over a hold: the
 * agent does nothing new there (docs/control.md). One queued before the
 * operator spoke races it, as HAProxy takes no condition. */
static void check_hold_command(struct sim *s, const struct sim_backend *b,
			       const struct sim_server *sv, bool ready, bool drain,
			       uint64_t queued_us)
{
	bool paused = b->paused && queued_us >= b->paused_since_us;
	bool released = s->released && queued_us >= s->released_since_us;
	if (drain && (paused || released)) {
		s->checks[INV_OPERATOR_HOLD_KEPT]++;
		sim_violate(s, INV_OPERATOR_HOLD_KEPT, "the agent drained %s/%s, %s", b->name,
			    sv->name, released ? "released" : "its backend paused");
	}
	if (!sim_hold_applies(s, b, sv) || queued_us <= sv->hold.since_us)
		return;
	s->checks[INV_OPERATOR_HOLD_KEPT]++;
	if (drain && sv->hold.kind == BREAKER_HOLD_IN)
		sim_violate(s, INV_OPERATOR_HOLD_KEPT, "the agent drained %s/%s, held in", b->name,
			    sv->name);
	if (ready && sv->hold.kind == BREAKER_HOLD_OUT && sv->hold.forced)
		sim_violate(s, INV_OPERATOR_HOLD_KEPT,
			    "the agent sent `state ready` to %s/%s, held out with force", b->name,
			    sv->name);
}

/* At every step: a server held in carries no drain nor probe limit of the
 * agent's; one held out is drained (unless another hand's maintenance
 * keeps it), with force at once, without where the cap has room for it
 * (`room`, as haproxy_follows_breakers counts it); within the bound from
 * the hold. */
static void check_hold(struct sim *s, const struct sim_backend *b, struct sim_server *sv,
		       bool learnt, bool room)
{
	bool applies = sim_hold_applies(s, b, sv);
	if (applies)
		s->checks[INV_OPERATOR_HOLD_KEPT]++;
	bool in = applies && sv->hold.kind == BREAKER_HOLD_IN;
	bool out = applies && sv->hold.kind == BREAKER_HOLD_OUT && (sv->hold.forced || room);
	/* Under an operator's drain or another hand's maintenance the agent
	 * keeps its hands off the server, its own maxconn included (as
	 * no_orphan_maxconn has it): that is not the hold undone. */
	bool others = sv->drain_by == HAND_OPERATOR || sv->maint_by != HAND_NONE;
	bool held_in_touched =
		in && (sv->drain_by == HAND_AGENT ||
		       (sv->maxconn_by == HAND_AGENT && !learnt && !others));
	bool not_out = out && sv->maint_by == HAND_NONE && !(sv->admin & RUNTIME_API_ADMF_FDRAIN);
	if (persists(s, &sv->since_hold_broken, held_in_touched || not_out))
		sim_violate(s, INV_OPERATOR_HOLD_KEPT,
			    held_in_touched ? "%s/%s held in, and %s by the agent"
					    : "%s/%s held out%s, and %s", b->name, sv->name,
			    held_in_touched ? (sv->drain_by == HAND_AGENT ? "drained" : "limited")
					    : sv->hold.forced ? " with force" : ", the cap with room",
			    held_in_touched ? "" : "in rotation");
}

/* ---- snapshot_keeps ---- */

struct sim_memory {
	bool any, drained, limited, own_known;
	uint32_t own;
};

static void add_memory(void *ctx, const char *address, const struct enforce_memory *mem)
{
	struct sim_memory *m = ctx;
	(void)address;
	m->any = true;
	m->drained |= mem->drained_by_us;
	m->limited |= mem->maxconn_by_us;
	if (mem->own_maxconn_known) {
		m->own_known = true;
		m->own = mem->own_maxconn;
	}
}

static struct sim_memory memory_of(struct sim *s, const struct breaker_table_entry *e)
{
	struct sim_memory m = {0};
	if (e && s->agent.d.enforcer)
		enforcer_memories(s->agent.d.enforcer,
				  breaker_table_index(&s->agent.d.breakers.table, e), add_memory, &m);
	return m;
}

struct sim_snapshot_seen {
	struct sim_snapshot_breaker {
		bool present, kept;
		enum breaker_state state;
		uint32_t trips;
		struct sim_memory mem;
	} srv[SIM_MAX_BACKENDS][SIM_MAX_SERVERS];
};

struct sim_snapshot_seen *sim_invariants_before_snapshot(struct sim *s)
{
	struct sim_snapshot_seen *seen = calloc(1, sizeof(*seen));
	if (!seen)
		abort();
	for (unsigned i = 0; i < s->nb_be; i++) {
		for (unsigned j = 0; j < s->be[i].nb; j++) {
			struct sim_server *sv = &s->be[i].srv[j];
			/* A deleted server's breaker is deleted_forgotten's. */
			if (sv->absent)
				continue;
			struct breaker_table_entry *e = sim_agent_entry(s, &s->be[i], sv);
			struct sim_snapshot_breaker *k = &seen->srv[i][j];
			k->present = e != NULL;
			if (!e)
				continue;
			k->state = e->breaker.state;
			k->trips = e->breaker.trips;
			k->mem = memory_of(s, e);
			/* A clean closed breaker holding nothing is one a fresh
			 * agent makes alike: the snapshot need not keep it
			 * (state_store.c). */
			k->kept = !breaker_is_forgettable(&e->breaker) || k->mem.any;
			/* Open on another node's verdict alone: the hold is not
			 * in the snapshot, the next look reads the table again
			 * (peer_verdicts_kept and haproxy_follows_breakers judge
			 * what comes of it). */
			if (e->breaker.state == BREAKER_OPEN && e->breaker.peer_adopted)
				k->kept = false;
			/* What the agent owns in HAProxy and must still know
			 * for its own once started again. */
			sv->owned_drain = k->mem.drained && sv->drain_by == HAND_AGENT;
			sv->owned_maxconn = k->mem.limited && sv->maxconn_by == HAND_AGENT;
			sv->since_owned_lost = 0;
		}
	}
	return seen;
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

void sim_invariants_after_snapshot(struct sim *s, struct sim_snapshot_seen *seen)
{
	for (unsigned i = 0; i < s->nb_be && !s->failed; i++) {
		for (unsigned j = 0; j < s->be[i].nb && !s->failed; j++) {
			const struct sim_backend *b = &s->be[i];
			const struct sim_snapshot_breaker *k = &seen->srv[i][j];
			if (!k->kept || b->srv[j].absent)
				continue;
			s->checks[INV_SNAPSHOT_KEEPS]++;
			struct breaker_table_entry *e = sim_agent_entry(s, b, &b->srv[j]);
			struct sim_memory m = memory_of(s, e);
			if (!e)
				sim_violate(s, INV_SNAPSHOT_KEEPS, "%s/%s: its breaker (%s, %u trips) is "
					    "not back", b->name, b->srv[j].name,
					    breaker_state_name(k->state), k->trips);
			else if (e->breaker.state != k->state || e->breaker.trips != k->trips)
				sim_violate(s, INV_SNAPSHOT_KEEPS,
					    "%s/%s: %s with %u trips before, %s with %u after", b->name,
					    b->srv[j].name, breaker_state_name(k->state), k->trips,
					    breaker_state_name(e->breaker.state), e->breaker.trips);
			else if (m.drained != k->mem.drained || m.limited != k->mem.limited ||
				 (k->mem.own_known && (!m.own_known || m.own != k->mem.own)))
				sim_violate(s, INV_SNAPSHOT_KEEPS,
					    "%s/%s: the agent's drain %s, maxconn %s (own %u) before; "
					    "drain %s, maxconn %s (own %u) after",
					    b->name, b->srv[j].name, yes_no(k->mem.drained),
					    yes_no(k->mem.limited), k->mem.own, yes_no(m.drained),
					    yes_no(m.limited), m.own);
		}
	}
	free(seen);
}

/* At every step after: a drain or a maxconn the agent owned when it
 * stopped, still the agent's in HAProxy, is one it knows for its own
 * (within the bound: a lift on its way has the memory go first). */
static void check_owned(struct sim *s, const struct sim_backend *b, struct sim_server *sv,
			const struct breaker_table_entry *e)
{
	/* Another hand came, or the agent's went: the promise is kept. */
	if (sv->drain_by != HAND_AGENT || sv->maint_by != HAND_NONE)
		sv->owned_drain = false;
	if (sv->maxconn_by != HAND_AGENT || sv->maint_by != HAND_NONE)
		sv->owned_maxconn = false;
	if (!sv->owned_drain && !sv->owned_maxconn) {
		sv->since_owned_lost = 0;
		return;
	}
	s->checks[INV_SNAPSHOT_KEEPS]++;
	struct sim_memory m = memory_of(s, e);
	bool lost = (sv->owned_drain && !m.drained) || (sv->owned_maxconn && !m.limited);
	if (persists(s, &sv->since_owned_lost, lost))
		sim_violate(s, INV_SNAPSHOT_KEEPS,
			    "%s/%s: the agent's own %s, from before its restart, taken for "
			    "another's", b->name, sv->name,
			    sv->owned_drain && !m.drained ? "drain" : "maxconn");
}

void sim_invariants_agent_command(struct sim *s, const struct sim_backend *b,
				  const struct sim_server *sv, const char *state,
				  uint64_t queued_us)
{
	bool ready = strcmp(state, "ready") == 0, drain = strcmp(state, "drain") == 0;
	bool others_maint = sv->maint_by == HAND_OPERATOR || sv->maint_by == HAND_CONTROLLER;
	bool undoes = (ready && (sv->drain_by == HAND_OPERATOR || others_maint)) ||
		      (drain && others_maint) || (!ready && !drain);
	/* HAProxy takes no condition with a command: one the agent queued
	 * before any look could show it the operator's hand races it, and
	 * only a command queued after such a look breaks the promise. A
	 * drain the agent's own landed on unseen is as much the agent's as
	 * the operator's (drain_raced): no look can ever tell them apart,
	 * and lifting it is the same race, later. */
	bool knew = sv->hand_seen_us != 0 && sv->hand_seen_us <= queued_us &&
		    !(ready && sv->drain_by == HAND_OPERATOR && sv->drain_raced && !others_maint);
	s->checks[INV_OPERATOR_HAND_KEPT]++;
	check_hold_command(s, b, sv, ready, drain, queued_us);
	if (undoes && !knew)
		s->races++;
	if (undoes && knew)
		sim_violate(s, INV_OPERATOR_HAND_KEPT,
			    "the agent sent `state %s` to %s/%s, %s by %s", state, b->name, sv->name,
			    others_maint ? "in maintenance" : "drained",
			    (others_maint ? sv->maint_by : sv->drain_by) == HAND_CONTROLLER
				    ? "its controller (a parked slot)"
				    : "an operator");
	if (!drain)
		return;
	/* A hold out is the operator's drain, not a rest. */
	if (sim_hold_applies(s, b, sv) && sv->hold.kind == BREAKER_HOLD_OUT)
		return;
	/* A rest: the breaker is closed (an open one is busy_never_charged's). */
	struct breaker_table_entry *entry = sim_agent_entry(s, b, sv);
	if (!entry || entry->breaker.state != BREAKER_CLOSED || !busy_and_clean(sv))
		return;
	/* Judged by the looks the agent had read when it queued the drain:
	 * one read since (a slow Runtime API, a drain queued while a probe
	 * was out and landing after the breaker closed) could not stop it,
	 * and the next plan lifts it. */
	unsigned k = 0;
	while (k + 1 < SIM_OK_SEEN && sv->ok_seen_valid[k] && sv->ok_seen_us[k] > queued_us)
		k++;
	if (k + 1 >= SIM_OK_SEEN || !sv->ok_seen_valid[k] || !sv->ok_seen_valid[k + 1] ||
	    sv->ok_seen_us[k] > queued_us)
		return;
	s->checks[INV_BUSY_NEVER_DRAINED_ANSWERING]++;
	if (sv->ok_seen[k] > sv->ok_seen[k + 1])
		sim_violate(s, INV_BUSY_NEVER_DRAINED_ANSWERING,
			    "%s/%s drained while busy: the last look before the drain was queued saw "
			    "%llu successes since the one before",
			    b->name, sv->name,
			    (unsigned long long)(sv->ok_seen[k] - sv->ok_seen[k + 1]));
}

void sim_invariants_state_read(struct sim *s)
{
	for (unsigned i = 0; i < s->nb_be; i++) {
		for (unsigned j = 0; j < s->be[i].nb; j++) {
			struct sim_server *sv = &s->be[i].srv[j];
			bool others = sv->drain_by == HAND_OPERATOR || sv->maint_by == HAND_OPERATOR ||
				      sv->maint_by == HAND_CONTROLLER;
			if (others && sv->hand_seen_us == 0)
				sv->hand_seen_us = sim_now_us();
		}
	}
}

void sim_invariants_stat_read(struct sim *s)
{
	for (unsigned i = 0; i < s->nb_be; i++) {
		for (unsigned j = 0; j < s->be[i].nb; j++) {
			struct sim_server *sv = &s->be[i].srv[j];
			memmove(&sv->ok_seen[1], &sv->ok_seen[0],
				(SIM_OK_SEEN - 1) * sizeof(sv->ok_seen[0]));
			memmove(&sv->ok_seen_valid[1], &sv->ok_seen_valid[0],
				(SIM_OK_SEEN - 1) * sizeof(sv->ok_seen_valid[0]));
			memmove(&sv->ok_seen_us[1], &sv->ok_seen_us[0],
				(SIM_OK_SEEN - 1) * sizeof(sv->ok_seen_us[0]));
			sv->ok_seen[0] = sv->hrsp[1];
			sv->ok_seen_valid[0] = true;
			sv->ok_seen_us[0] = sim_now_us();
			if (sv->w.clean_since_us != 0 && sv->w.clean_read_us <= sv->w.clean_since_us)
				sv->w.clean_read_us = sim_now_us();
			if (sv->w.answered_us != 0 && sv->w.answered_read_us == 0)
				sv->w.answered_read_us = sim_now_us();
		}
	}
}

static const char *trip_rule_name(unsigned rule)
{
	switch (rule) {
	case BREAKER_TRIP_FAILURE_STREAK: return "failure streak";
	case BREAKER_TRIP_FAILURE_RATE: return "failure rate";
	case BREAKER_TRIP_PROBE_FAILED: return "failed probe";
	case BREAKER_TRIP_WEDGED: return "wedged";
	case BREAKER_TRIP_STALLED: return "stalled";
	default: return "none";
	}
}

static void check_trips(struct sim *s, const struct sim_backend *b, struct sim_server *sv,
			const struct breaker_table_entry *entry)
{
	uint32_t trips = entry ? entry->breaker.trips : 0;
	if (busy_and_clean(sv))
		s->checks[INV_BUSY_NEVER_CHARGED]++;
	if (entry != sv->entry_seen || trips < sv->trips_seen) {
		sv->entry_seen = entry;
		sv->trips_seen = trips;
		return;
	}
	if (trips == sv->trips_seen)
		return;
	sv->trips_seen = trips;
	if (!busy_and_clean(sv))
		return;
	unsigned rule = entry->breaker.last_trip_rule;
	/* Opened by another node's verdict (peers mode): that node's
	 * judgement, not a charge of this agent's. */
	if (rule == BREAKER_TRIP_NONE && entry->breaker.peer_adopted)
		return;
	if (rule == BREAKER_TRIP_STALLED && sv->w.slow_refusals && sv->w.stalled_trips == 0) {
		sv->w.stalled_trips++; /* slow, until its answers prove how slow */
		return;
	}
	sim_violate(s, INV_BUSY_NEVER_CHARGED,
		    "%s/%s, a busy worker (capacity %u, %s %u refusals%s), opened by %s", b->name,
		    sv->name, sv->w.capacity, sv->w.slow_refusals ? "slow" : "fast", sv->w.status,
		    sv->w.retry_after ? " with Retry-After" : "", trip_rule_name(rule));
}

static void check_backend(struct sim *s, struct sim_backend *b)
{
	/* The policy in force: a SIGHUP changes it. */
	const struct sim_policy *policy = &s->policy;
	const uint32_t *learnt =
		s->agent.d.enforcer ? enforcer_maxconn_learnt(s->agent.d.enforcer) : NULL;
	unsigned listed = 0, serving = 0, agent_out = 0, want_up = 0, out_base = 0;

	for (unsigned j = 0; j < b->nb; j++) {
		const struct sim_server *sv = &b->srv[j];
		if (!sim_server_capacity(sv)) /* a deleted one too */
			continue;
		listed++;
		serving += sim_server_serving(sv);
		/* A drain on a server down by its health checks takes out
		 * nothing that serves: the cap counts it out already. */
		/* A hold out with force is the operator's, past the cap. */
		bool forced = sim_hold_applies(s, b, sv) && sv->hold.kind == BREAKER_HOLD_OUT &&
			      sv->hold.forced;
		agent_out += sv->drain_by == HAND_AGENT && sv->up && !forced;
	}
	unsigned max_out = listed * policy->max_ejection_percent / 100;
	s->checks[INV_EJECTION_CAP]++;
	if (persists(s, &b->since_over_cap, agent_out > max_out))
		sim_violate(s, INV_EJECTION_CAP,
			    "%s: the agent holds %u of its %u servers out, the cap (%u %%) %u",
			    b->name, agent_out, listed, policy->max_ejection_percent, max_out);
	if (!policy->drain_last_server) {
		s->checks[INV_LAST_SERVING_SERVER]++;
		if (persists(s, &b->since_no_server, listed > 0 && serving == 0 && agent_out > 0))
			sim_violate(s, INV_LAST_SERVING_SERVER,
				    "%s: no server serves, %u of its %u out by the agent", b->name,
				    agent_out, listed);
	}

	/* The servers the breakers want out and HAProxy does not show so,
	 * where the cap has room for them all: room counted on the servers
	 * out for other reasons (down, someone else's drain), as the cap's
	 * own rule counts it (ejection.c). A server down wants no room. */
	unsigned room = 0;
	for (unsigned pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			unsigned serving_base = listed - out_base;
			room = max_out > out_base ? max_out - out_base : 0;
			unsigned spare = policy->drain_last_server ? serving_base
							       : serving_base ? serving_base - 1 : 0;
			if (room > spare)
				room = spare;
		}
		for (unsigned j = 0; j < b->nb; j++) {
			struct sim_server *sv = &b->srv[j];
			/* A deleted server: deleted_forgotten's alone. */
			if (sv->absent) {
				if (pass == 1)
					sim_invariants_deleted(s, b, sv);
				continue;
			}
			struct breaker_table_entry *entry = sim_agent_entry(s, b, sv);
			if (pass == 1) {
				check_trips(s, b, sv, entry);
				sim_invariants_deleted(s, b, sv);
				sim_invariants_peers(s, b, sv);
			}
			bool ours = sim_server_capacity(sv) && sv->drain_by != HAND_OPERATOR;
			enum breaker_state want = entry ? enforce_wanted_state(&entry->breaker)
							: BREAKER_CLOSED;
			uint32_t index =
				entry ? breaker_table_index(&s->agent.d.breakers.table, entry) : 0;
			if (pass == 1)
				check_owned(s, b, sv, entry);
			bool drained = sv->admin & RUNTIME_API_ADMF_FDRAIN;
			bool wants = ours && entry && want != BREAKER_CLOSED;
			/* An operator's hold out wants room as an open breaker
			 * does, whatever the breaker says of it. */
			bool wants_room = wants || (ours && entry && sim_hold_applies(s, b, sv) &&
						    sv->hold.kind == BREAKER_HOLD_OUT);
			/* Only a rest: never the last serving server, whatever
			 * drain_last_server allows (ejection_may_rest). */
			bool rest_only = wants && entry->breaker.state != BREAKER_OPEN &&
					 breaker_is_resting(&entry->breaker);
			/* Half-open: at its probes, and drained only while they
			 * are out (enforce_plan.c's guard). */
			uint32_t probes = entry ? entry->breaker.policy->half_open_probes : 0;
			bool unfollowed =
				wants &&
				((want == BREAKER_OPEN && !drained) ||
				 (want == BREAKER_HALF_OPEN &&
				  (sv->maxconn != probes || (drained && sv->scur < probes))));
			if (pass == 0) {
				want_up += wants_room && sv->up;
				out_base += sim_server_capacity(sv) && !sim_server_serving(sv) &&
					    !(wants_room && sv->up);
				continue;
			}
			s->checks[INV_HAPROXY_FOLLOWS_BREAKERS]++;
			unsigned serving_base = listed - out_base;
			unsigned my_room = room;
			if (rest_only && my_room + 1 > serving_base)
				my_room = serving_base ? serving_base - 1 : 0;
			check_hold(s, b, sv, entry && learnt && learnt[index],
				   !sv->up || want_up <= my_room);
			if (persists(s, &sv->since_unfollowed,
				     unfollowed && (!sv->up || want_up <= my_room)))
				sim_violate(s, INV_HAPROXY_FOLLOWS_BREAKERS,
					    "%s/%s: its breaker is %s, HAProxy shows it %s, maxconn %u, "
					    "%u in flight",
					    b->name, sv->name,
					    want == BREAKER_OPEN ? "open" : "half-open",
					    drained ? "drained" : "in rotation", sv->maxconn, sv->scur);
			s->checks[INV_NO_ORPHAN_DRAIN]++;
			if (persists(s, &sv->since_orphan_drain,
				     sv->drain_by == HAND_AGENT && want == BREAKER_CLOSED))
				sim_violate(s, INV_NO_ORPHAN_DRAIN,
					    "%s/%s: drained by the agent, its breaker %s", b->name,
					    sv->name, entry ? "closed" : "gone");
			s->checks[INV_NO_ORPHAN_MAXCONN]++;
			/* A probe's limit stays through the episode (an open
			 * breaker's server is drained: the limit waits for the
			 * close that gives the server its own back). */
			bool held = entry && (want != BREAKER_CLOSED || (learnt && learnt[index]));
			/* An operator's drain puts the server out of the agent's
			 * hands, its maxconn too (enforce_plan: hands off). */
			if (persists(s, &sv->since_orphan_maxconn,
				     sv->maxconn_by == HAND_AGENT && ours && !held))
				sim_violate(s, INV_NO_ORPHAN_MAXCONN,
					    "%s/%s: maxconn %u the agent's (its own %u), nothing holds it",
					    b->name, sv->name, sv->maxconn, sv->maxconn_conf);
		}
	}
}

void sim_invariants_step(struct sim *s)
{
	s->checks[INV_NO_SOCKET]++;
	if (sim_loop_io_starts() > 0)
		sim_violate(s, INV_NO_SOCKET, "the agent started an ev_io: a socket");
	for (unsigned i = 0; i < s->nb_be && !s->failed; i++)
		check_backend(s, &s->be[i]);
}
