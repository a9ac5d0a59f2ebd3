/*
 * sim_shrink.c - a failing schedule made short: cut after the moment it
 * failed, then drop events - halves, quarters, down to one at a time -
 * keeping each drop after which the same invariant still breaks (the
 * schedule's seed kept: the traffic and the Runtime API's delays draw
 * from streams of their own, which dropping an event does not shift).
 */
#include <string.h>

#include "sim.h"

#define SHRINK_MAX_RUNS 300

/* Whether sc still breaks inv; *at: when. */
static bool still_fails(struct sim_schedule *sc, enum sim_break brk, enum sim_invariant inv,
			uint64_t *at, unsigned *runs)
{
	struct sim_violation v;
	(*runs)++;
	if (sim_run(sc, brk, &v, NULL, false) || v.inv != inv)
		return false;
	*at = v.at_ms;
	return true;
}

/* Ends the schedule a second after `at`, without the events after it. */
static void cut_after(struct sim_schedule *sc, uint64_t at)
{
	sc->duration_ms = at + 1000;
	while (sc->nb_events > 0 && sc->events[sc->nb_events - 1].at_ms > sc->duration_ms)
		sc->nb_events--;
}

void sim_shrink(struct sim_schedule *sc, enum sim_break brk, enum sim_invariant inv,
		uint64_t failed_at_ms, unsigned *runs)
{
	struct sim_schedule trial;
	uint64_t at = failed_at_ms;

	cut_after(sc, at);
	for (unsigned chunk = sc->nb_events / 2 ? sc->nb_events / 2 : 1; chunk >= 1; chunk /= 2) {
		for (unsigned i = 0; i < sc->nb_events && *runs < SHRINK_MAX_RUNS;) {
			unsigned n = i + chunk <= sc->nb_events ? chunk : sc->nb_events - i;
			trial = *sc;
			memmove(&trial.events[i], &trial.events[i + n],
				(trial.nb_events - i - n) * sizeof(trial.events[0]));
			trial.nb_events -= n;
			uint64_t trial_at;
			if (still_fails(&trial, brk, inv, &trial_at, runs)) {
				*sc = trial;
				at = trial_at;
				cut_after(sc, at);
			} else {
				i += n;
			}
		}
		if (chunk == 1)
			break;
	}
	/* Shorter: each event, and all after it, earlier by half the gap
	 * before it, for as long as the case still fails. */
	for (unsigned i = 0; i < sc->nb_events && *runs < SHRINK_MAX_RUNS; i++) {
		for (;;) {
			uint64_t prev = i ? sc->events[i - 1].at_ms : 0;
			uint64_t gap = sc->events[i].at_ms - prev;
			if (gap < 200 || *runs >= SHRINK_MAX_RUNS)
				break;
			trial = *sc;
			for (unsigned k = i; k < trial.nb_events; k++)
				trial.events[k].at_ms -= gap / 2;
			uint64_t trial_at;
			if (!still_fails(&trial, brk, inv, &trial_at, runs))
				break;
			*sc = trial;
			cut_after(sc, trial_at);
		}
	}
}
