/*
 * sim_run.c - one schedule, step by step: the clock jumps to the next
 * thing due (an event of the schedule, a timer of the agent's, a batch
 * of HAProxy's replies, a request's arrival or answer, a health check),
 * everything due then happens, and the invariants are checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_loop.h"

static uint64_t earliest(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

bool sim_run(const struct sim_schedule *sc, enum sim_break brk, struct sim_violation *v,
	     struct sim_figures *fig, int verbose)
{
	char err[256];
	struct sim *s = calloc(1, sizeof(*s));
	if (!s)
		abort();
	sim_clock_reset();
	sim_loop_io_reset();
	s->schedule = sc;
	s->brk = brk;
	s->verbose = verbose;
	s->loop = sim_loop_new();
	if (!s->loop)
		abort();
	sim_loop_set_skip(s->loop, sim_haproxy_skip_timer, s);
	sim_rng_seed(&s->traffic_rng, sc->seed, 1);
	sim_rng_seed(&s->api_rng, sc->seed, 2);
	s->policy = (struct sim_policy){.threshold = sc->threshold, .cooldown_ms = sc->cooldown_ms,
					.max_ejection_percent = sc->max_ejection_percent,
					.failure_rate = sc->failure_rate,
					.drain_last_server = sc->drain_last_server};
	/* No agent reads another schedule's snapshot or operator's record. */
	s->keeps_files = sim_operator_keeps_files(sc);
	if (s->keeps_files)
		sim_files_clear();
	sim_haproxy_init(s);
	if (!sim_agent_start(s, err, sizeof(err))) {
		fprintf(stderr, "sim: the agent did not start: %s\n", err);
		abort();
	}

	const uint64_t start = sim_now_us(), end = start + sc->duration_ms * SIM_MS;
	for (;;) {
		uint64_t next = earliest(sim_loop_next_due(s->loop), sim_haproxy_next_due(s));
		next = earliest(next, sim_traffic_next_due(s));
		next = earliest(next, s->next_check_us);
		next = earliest(next, sim_peers_next_due(s));
		if (s->next_event < sc->nb_events)
			next = earliest(next, start + sc->events[s->next_event].at_ms * SIM_MS);
		if (next > end)
			break;
		sim_clock_set(next);
		while (s->next_event < sc->nb_events &&
		       start + sc->events[s->next_event].at_ms * SIM_MS <= sim_now_us()) {
			const struct sim_event *ev = &sc->events[s->next_event++];
			if (verbose)
				fprintf(stderr, "sim: %8.3f s  event %s be%u/w%u\n",
					(double)(sim_now_us() - start) / 1e6, sim_event_name(ev->kind),
					ev->be + 1, ev->srv + 1);
			sim_event_apply(s, ev);
		}
		sim_haproxy_checks(s);
		sim_peers_run_due(s);
		sim_loop_run_due(s->loop);
		sim_haproxy_serve(s);
		sim_traffic_run_due(s);
		sim_haproxy_serve(s);
		sim_invariants_step(s);
		s->steps++;
		if (s->failed)
			break;
	}

	if (fig) {
		fig->steps += s->steps;
		fig->requests += s->requests;
		fig->observations += s->observations;
		fig->commands += s->commands;
		fig->looks += s->looks;
		fig->races += s->races;
		fig->simulated_ms += (sim_now_us() - start) / SIM_MS;
		for (int i = 0; i < SIM_INVARIANTS; i++)
			fig->checks[i] += s->checks[i];
	}
	bool ok = !s->failed;
	if (v)
		*v = s->violation;
	sim_agent_stop(s, false);
	sim_haproxy_free(s);
	sim_traffic_free(s);
	sim_loop_free(s->loop);
	free(s);
	return ok;
}
