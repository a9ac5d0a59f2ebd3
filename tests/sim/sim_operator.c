/*
 * sim_operator.c - the agent's own events, each through the code the
 * daemon runs for it:
 *
 *   agent-restart           kill -9 and start again, without the snapshot
 *                           (the operator's record, written at each
 *                           change, stays)
 *   agent-restart-snapshot  TERM - the last snapshot written as teardown()
 *                           writes it - and start again, the snapshot
 *                           loaded by state_store_load()
 *   policy-reload           SIGHUP: daemon_reload() with a new [breaker]
 *                           policy in the options it reads again
 *   hold-out, hold-in, unhold, pause, resume, release, resume-all
 *                           a control command, parsed and executed by
 *                           daemon_control_exec() as the socket's are
 *
 * What the operator said and the agent accepted is recorded here (a
 * server's hold, a backend paused, the agent released): what
 * operator_hold_kept holds the agent to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"
#include "sim_loop.h"

bool sim_operator_keeps_files(const struct sim_schedule *sc)
{
	for (unsigned k = 0; k < sc->nb_events; k++)
		if (sc->events[k].kind >= EV_AGENT_RESTART_SNAPSHOT &&
		    sc->events[k].kind <= EV_RESUME_ALL && sc->events[k].kind != EV_POLICY_RELOAD)
			return true;
	return false;
}

bool sim_hold_applies(const struct sim *s, const struct sim_backend *b,
		      const struct sim_server *sv)
{
	/* A pause or a release wins over a hold (docs/control.md); a timed
	 * hold ends to the second, never early: checked until its end. */
	return sv->hold.kind != BREAKER_HOLD_NONE && !b->paused && !s->released &&
	       (sv->hold.until_us == 0 || sim_now_us() < sv->hold.until_us);
}

static void restart(struct sim *s, bool with_snapshot)
{
	char err[256];
	uint64_t now = sim_now_us();
	struct sim_snapshot_seen *seen = with_snapshot ? sim_invariants_before_snapshot(s) : NULL;
	sim_agent_stop(s, with_snapshot);
	memset(s->clients, 0, sizeof(s->clients));
	if (!with_snapshot && s->keeps_files) {
		/* Killed: no last snapshot, and none of an earlier stop
		 * either. The operator's record beside it was written at each
		 * change, and stays. */
		char path[600];
		sim_files_path("state.msgpack", path, sizeof(path));
		unlink(path);
	}
	if (!sim_agent_start(s, err, sizeof(err))) {
		fprintf(stderr, "sim: the agent did not start again: %s\n", err);
		abort();
	}
	if (s->api_up_since_us < now)
		s->api_up_since_us = now;
	if (with_snapshot && s->brk == BREAK_SNAPSHOT_TRIPS) {
		/* The plant: what came back has lost its trips. */
		struct breaker_table *t = &s->agent.d.breakers.table;
		for (uint32_t i = 0; i < t->allocated; i++)
			breaker_table_at(t, i)->breaker.trips = 0;
	}
	if (with_snapshot) {
		sim_invariants_after_snapshot(s, seen);
		return;
	}
	/* Without its snapshot the agent forgets how slow a worker proved
	 * to be: it may open it once more (busy_never_charged). */
	for (unsigned i = 0; i < s->nb_be; i++)
		for (unsigned j = 0; j < s->be[i].nb; j++)
			s->be[i].srv[j].w.stalled_trips = 0;
}

static void policy_reload(struct sim *s, const struct sim_event *ev)
{
	s->policy = (struct sim_policy){.threshold = ev->a[0], .cooldown_ms = ev->a[1],
					.max_ejection_percent = ev->a[2],
					.failure_rate = ev->a[3],
					.drain_last_server = ev->a[4] != 0};
	sim_agent_reload(s);
	/* What the cap lets out changed: the agent's drains beyond it go
	 * back within the bound, counted from the reload. */
	if (s->api_up_since_us < sim_now_us())
		s->api_up_since_us = sim_now_us();
}

/* One control command; the answer said when SIM_VERBOSE. */
static bool control(struct sim *s, const char *command)
{
	char answer[512];
	bool done = sim_agent_control(s, command, answer, sizeof(answer));
	if (s->verbose)
		fprintf(stderr, "sim:            ctl %s: %s", command, answer);
	return done;
}

static void hold(struct sim *s, struct sim_backend *b, struct sim_server *sv,
		 const struct sim_event *ev)
{
	bool out = ev->kind == EV_HOLD_OUT, forced = out && ev->a[0];
	char command[128], duration[32] = "";
	if (ev->a[1])
		snprintf(duration, sizeof(duration), " for %us", ev->a[1]);
	snprintf(command, sizeof(command), "hold %s %s/%s%s%s", out ? "out" : "in", b->name,
		 sv->name, duration, forced ? " force" : "");
	if (!control(s, command))
		return;
	uint64_t now = sim_now_us();
	sv->hold = (struct sim_hold){.kind = out ? BREAKER_HOLD_OUT : BREAKER_HOLD_IN,
				     .forced = forced, .since_us = now,
				     .until_us = ev->a[1] ? now + ev->a[1] * SIM_S : 0};
	sv->since_hold_broken = 0;
	if (s->brk == BREAK_FORGET_HOLD) {
		/* The plant: the breaker loses the hold the record keeps. */
		struct breaker_table_entry *e = sim_agent_entry(s, b, sv);
		if (e)
			breaker_hold_set(&e->breaker, BREAKER_HOLD_NONE, 0, false);
	}
}

bool sim_operator_apply(struct sim *s, const struct sim_event *ev)
{
	struct sim_backend *b = &s->be[ev->be];
	struct sim_server *sv = &b->srv[ev->srv];
	char command[128];

	switch (ev->kind) {
	case EV_AGENT_RESTART:
	case EV_AGENT_RESTART_SNAPSHOT:
		restart(s, ev->kind == EV_AGENT_RESTART_SNAPSHOT);
		return true;
	case EV_POLICY_RELOAD:
		policy_reload(s, ev);
		return true;
	case EV_HOLD_OUT:
	case EV_HOLD_IN:
		hold(s, b, sv, ev);
		return true;
	case EV_UNHOLD:
		snprintf(command, sizeof(command), "unhold %s/%s", b->name, sv->name);
		if (control(s, command))
			sv->hold.kind = BREAKER_HOLD_NONE;
		return true;
	case EV_PAUSE:
	case EV_RESUME:
		snprintf(command, sizeof(command), "%s %s", ev->kind == EV_PAUSE ? "pause" : "resume",
			 b->name);
		if (control(s, command)) {
			b->paused = ev->kind == EV_PAUSE;
			b->paused_since_us = sim_now_us();
		}
		return true;
	case EV_RELEASE:
		if (control(s, "release all")) {
			s->released = true;
			s->released_since_us = sim_now_us();
		}
		return true;
	case EV_RESUME_ALL:
		/* The release and every pause lifted; holds stay. */
		if (control(s, "resume all")) {
			s->released = false;
			for (unsigned i = 0; i < s->nb_be; i++)
				s->be[i].paused = false;
		}
		return true;
	default:
		return false;
	}
}

/* ---- drawing them ---- */

void sim_operator_generate(struct sim_schedule *sc, uint64_t seed, uint64_t duration_ms)
{
	/* A stream of their own: a seed's world and its other events stay
	 * what they were before these were simulated. Half the schedules
	 * have none. */
	struct sim_rng r;
	sim_rng_seed(&r, seed, 6);
	if (!sim_rng_chance(&r, 0.5))
		return;
	static const enum sim_event_kind kinds[] = {
		EV_AGENT_RESTART_SNAPSHOT, EV_AGENT_RESTART_SNAPSHOT, EV_AGENT_RESTART_SNAPSHOT,
		EV_POLICY_RELOAD, EV_POLICY_RELOAD, EV_POLICY_RELOAD,
		EV_HOLD_OUT, EV_HOLD_OUT, EV_HOLD_OUT, EV_HOLD_IN, EV_HOLD_IN, EV_HOLD_IN,
		EV_UNHOLD, EV_UNHOLD, EV_PAUSE, EV_RELEASE,
	};
	static const uint32_t percents[] = {34, 50, 50, 67, 100};
	unsigned n = (unsigned)sim_rng_range(&r, 1, duration_ms / 50000 + 1);
	for (unsigned k = 0; k < n && sc->nb_events < SIM_MAX_EVENTS; k++) {
		struct sim_event *ev = sim_event_draw(sc, &r, duration_ms);
		ev->kind = kinds[sim_rng_below(&r, sizeof(kinds) / sizeof(kinds[0]))];
		ev->be = (uint8_t)sim_rng_below(&r, sc->nb_backends);
		ev->srv = (uint8_t)sim_rng_below(&r, sc->nb_servers[ev->be]);
		switch (ev->kind) {
		case EV_POLICY_RELOAD:
			ev->a[0] = (uint32_t)sim_rng_range(&r, 2, 5);
			ev->a[1] = (uint32_t)sim_rng_range(&r, 2, 30) * 1000;
			ev->a[2] = percents[sim_rng_below(&r, 5)];
			ev->a[3] = sim_rng_chance(&r, 0.3) ? (uint32_t)sim_rng_range(&r, 30, 60) : 0;
			ev->a[4] = sim_rng_chance(&r, 0.1);
			break;
		case EV_HOLD_OUT:
		case EV_HOLD_IN:
			ev->a[0] = ev->kind == EV_HOLD_OUT && sim_rng_chance(&r, 0.3);
			ev->a[1] = sim_rng_chance(&r, 0.5) ? (uint32_t)sim_rng_range(&r, 5, 120) : 0;
			break;
		default:
			break;
		}
		/* A pause, a release, most often ends: the agent acts again
		 * on what its breakers judge then. */
		bool ends = ev->kind == EV_PAUSE || ev->kind == EV_RELEASE;
		if (ends && sc->nb_events < SIM_MAX_EVENTS && sim_rng_chance(&r, 0.7))
			sim_event_then(sc, ev, ev->kind == EV_PAUSE ? EV_RESUME : EV_RESUME_ALL, &r,
				       5000, 60000, duration_ms);
	}
}
