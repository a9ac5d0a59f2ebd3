/*
 * stall_looks.h - a backend of workers looked at as the HAProxy link looks,
 * for the unit tables that simulate traffic (test_stall_counts.c,
 * closed_loop_scene.h): one breaker and one stalled-rule watch per worker,
 * their breakers staying open once opened; at each look, from each
 * worker's running counts (requests sent, heads given, requests in
 * service) to what the stalled rule reads of it - its own counts since the
 * previous look, its neighbours' summed, the requests that may still get
 * a head (in service and not yet answered) - and the rule's judgement of
 * every worker.
 */
#ifndef SPOA_TEST_STALL_LOOKS_H
#define SPOA_TEST_STALL_LOOKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/breaker.h"

#define STALL_LOOKS_MAX_WORKERS 8

struct stall_looks {
	int workers;
	struct breaker_policy policy; /* the breakers point at it */
	struct breaker_table table;
	struct breaker_table_entry *entries[STALL_LOOKS_MAX_WORKERS];
	struct stall_watch watches[STALL_LOOKS_MAX_WORKERS];
	uint64_t prev_sent[STALL_LOOKS_MAX_WORKERS], prev_heads[STALL_LOOKS_MAX_WORKERS];
};

/* The backend "be" with workers w1..wN, their breakers created at now_ms
 * on the default policy but a cool-down longer than any run; false when
 * the table cannot be built (nothing to free then). */
static bool stall_looks_start(struct stall_looks *s, int workers, uint64_t now_ms)
{
	char err[128], name[8];

	if (workers < 1 || workers > STALL_LOOKS_MAX_WORKERS)
		return false;
	memset(s, 0, sizeof(*s));
	s->workers = workers;
	breaker_policy_defaults(&s->policy);
	s->policy.cooldown_ms = 1000000000; /* once open, it stays for the run */
	if (!breaker_table_init(&s->table, 64, err, sizeof(err)))
		return false;
	for (int i = 0; i < workers; i++) {
		enum breaker_table_status status;
		snprintf(name, sizeof(name), "w%d", i + 1);
		s->entries[i] = breaker_table_get(&s->table, "be", 2, name, strlen(name), now_ms,
						  &status);
		if (s->entries[i] == NULL) {
			breaker_table_free(&s->table);
			return false;
		}
		breaker_set_policy(&s->entries[i]->breaker, &s->policy);
	}
	return true;
}

static void stall_looks_end(struct stall_looks *s)
{
	breaker_table_free(&s->table);
}

/* Judges every worker at the look at now_ms (baseline: a previous look
 * set the counts' baseline); events[k] is what worker k's breaker did. */
static void stall_looks_judge(struct stall_looks *s, const uint64_t *sent, const uint64_t *heads,
			      const uint64_t *scur, bool baseline, uint64_t now_ms,
			      struct breaker_event *events)
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
		events[k] = breaker_table_look_in_flight(&s->table, s->entries[k],
							 &s->watches[k], scur[k] > 0,
							 d_heads[k] > 0, now_ms, &l);
		s->prev_sent[k] = sent[k];
		s->prev_heads[k] = heads[k];
	}
}

#endif
