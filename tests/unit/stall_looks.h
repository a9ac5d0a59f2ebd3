/*
 * stall_looks.h - one look at a backend's workers as the HAProxy link
 * looks, for the unit tables that simulate traffic (test_stall_counts.c,
 * closed_loop_scene.h): from each worker's running counts (requests sent,
 * heads given, requests in service) to what the stalled rule reads of it
 * - its own counts since the previous look, its neighbours' summed, the
 * requests that may still get a head (in service and not yet answered) -
 * and the rule's judgement of every worker.
 */
#ifndef SPOA_TEST_STALL_LOOKS_H
#define SPOA_TEST_STALL_LOOKS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/breaker.h"

#define STALL_LOOKS_MAX_WORKERS 8

struct stall_looks {
	int workers;
	uint64_t prev_sent[STALL_LOOKS_MAX_WORKERS], prev_heads[STALL_LOOKS_MAX_WORKERS];
};

/* Judges every worker at the look at now_ms (baseline: a previous look
 * set the counts' baseline); events[k] is what worker k's breaker did. */
static void stall_looks_judge(struct stall_looks *s, struct breaker_table *t,
			      struct breaker_table_entry **e, struct stall_watch *w,
			      const uint64_t *sent, const uint64_t *heads, const uint64_t *scur,
			      bool baseline, uint64_t now_ms, struct breaker_event *events)
{
	uint64_t d_sent[STALL_LOOKS_MAX_WORKERS], d_heads[STALL_LOOKS_MAX_WORKERS];
	uint64_t pending[STALL_LOOKS_MAX_WORKERS];
	uint64_t all_sent = 0, all_heads = 0, all_pending = 0;

	for (int k = 0; k < s->workers; k++) {
		d_sent[k] = sent[k] - s->prev_sent[k];
		d_heads[k] = heads[k] - s->prev_heads[k];
		uint64_t open = sent[k] - heads[k];
		pending[k] = open < scur[k] ? open : scur[k];
		all_sent += d_sent[k];
		all_heads += d_heads[k];
		all_pending += pending[k];
	}
	for (int k = 0; k < s->workers; k++) {
		struct stall_look l = {.baseline = baseline,
				       .answered = d_heads[k] > 0,
				       .sent = d_sent[k],
				       .nb_sent = all_sent - d_sent[k],
				       .nb_answered = all_heads - d_heads[k],
				       .nb_pending = all_pending - pending[k],
				       .now_ms = now_ms};
		events[k] = breaker_table_look_in_flight(t, e[k], &w[k], scur[k] > 0,
							 d_heads[k] > 0, now_ms, &l);
		s->prev_sent[k] = sent[k];
		s->prev_heads[k] = heads[k];
	}
}

#endif
