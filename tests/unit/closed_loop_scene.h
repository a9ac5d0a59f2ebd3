/*
 * closed_loop_scene.h - the stalled rule (stall_watch.c and its silence
 * reading, silence_odds.c) under closed-loop clients: a fixed number of
 * users, each sending its next request only once the previous one is
 * answered whole or ended by `timeout server`. A hung worker then
 * swallows clients, not requests: it is sent few, however long it hangs.
 * Shared by the unit tables (test_stall_closed_loop.c, one seed) and the
 * spread over many seeds (bench/closed_loop_spread.c).
 *
 * Three workers behind round robin, looked at every 500 ms as the HAProxy
 * link looks (per server: requests sent, heads, requests that may still
 * get a head; the neighbours summed). Inference-shaped answers: half
 * streamed (the head at once, the end 6 s later), four in ten answered
 * whole after 1-6 s, one in ten after 20 s - the shape of
 * tests/e2e/hung_closed_loop.bats.
 *
 * Beside the rule, the bound alone: the first look at which the silence
 * reading, fed perfect counts from the first request on (the hung
 * worker's requests against all its neighbours' requests and heads,
 * nothing held back at the start), says a healthy worker would show that
 * silence with a chance below 5e-9 on at least SILENCE_MIN_NB_ANSWERS
 * answers: the best the bound allows the scene when judged on the
 * counts since the first request, which the rule's floors (5 s of
 * silence, the moment at a look) and its lower bound on the neighbours'
 * answers can only follow.
 *
 * Deterministic for a seed: its own generator, time in simulated
 * milliseconds.
 */
#ifndef SPOA_TEST_CLOSED_LOOP_SCENE_H
#define SPOA_TEST_CLOSED_LOOP_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/breaker.h"
#include "core/silence_odds.h"
#include "stall_looks.h"

#define SCENE_T0 1000000
#define SCENE_LOOK_MS 500
#define SCENE_WORKERS 3
#define SCENE_MAX_CLIENTS 48
#define SCENE_MAX_REQUESTS 60000
#define SCENE_NEVER UINT64_MAX
/* The load begins once two looks have set the counters' baseline, as
 * the e2e scene waits for them. */
#define SCENE_LOAD_FROM_MS 1000
#define SCENE_LN_BOUND (-19.113827924512311) /* ln 5e-9 */

struct scene_request {
	uint8_t worker;
	uint64_t sent, head, end;
};

struct closed_loop_run {
	unsigned clients;
	uint64_t timeout_server_ms;
	int hung; /* the hung worker, -1: none */
	uint64_t duration_ms;
	uint64_t seed;
	/* Out: when each worker was opened by the rule (0: never), in
	 * simulated ms from the start (the load starts at
	 * SCENE_LOAD_FROM_MS), and by which rule; when the bound alone would have opened the
	 * hung worker, had the rule left it in rotation (0: never); the
	 * lowest natural log of the silence chance a healthy worker's
	 * watch reached. */
	uint64_t opened[SCENE_WORKERS];
	enum breaker_trip_rule opened_by[SCENE_WORKERS];
	uint64_t bound_opened;
	double lowest_healthy_log_odds;
};

static struct scene_request scene_requests[SCENE_MAX_REQUESTS];
static uint64_t scene_rng;

static double scene_uniform(void)
{
	scene_rng = scene_rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(scene_rng >> 11) / (double)(1ull << 53);
}

/* One request's head and end, from its sending time. */
static void scene_answer_times(struct scene_request *q, bool hung, uint64_t timeout_server_ms)
{
	double u = scene_uniform();
	uint64_t head, end;

	if (u < 0.5) { /* streamed: the head at once, then 6 s of chunks */
		head = 50;
		end = 6000;
	} else if (u < 0.9) { /* whole after 1-6 s */
		head = end = 1000 + (uint64_t)(5000 * scene_uniform());
	} else { /* whole after 20 s */
		head = end = 20000;
	}
	if (hung) {
		q->head = SCENE_NEVER;
		q->end = q->sent + timeout_server_ms;
		return;
	}
	q->head = q->sent + head;
	q->end = q->sent + end;
}

/* The bound alone at this look (see the header): the hung worker's
 * requests, all unanswered, against every request of its neighbours and
 * every head they gave, judged by the silence reading's own test. */
static bool scene_bound_says_open(const uint64_t *sent, const uint64_t *heads, int hung)
{
	uint64_t nb_sent = 0, nb_heads = 0;

	for (int k = 0; k < SCENE_WORKERS; k++) {
		if (k == hung)
			continue;
		nb_sent += sent[k];
		nb_heads += heads[k];
	}
	return silence_is_unlikely(sent[hung], nb_sent, nb_heads);
}

/* Runs the scene; false when it does not fit (too many clients or
 * requests) or the table cannot be built. With route_away false, a
 * worker the rule opens stays in the round robin (how long the bound
 * alone would take, unhindered by the rule having acted). */
static bool closed_loop_simulate(struct closed_loop_run *run, bool route_away)
{
	struct stall_looks looks;
	const struct stall_watch *w = looks.watches;
	/* Each client's request in flight (an index in scene_requests), or
	 * SIZE_MAX before its first. */
	size_t current[SCENE_MAX_CLIENTS];
	size_t nb = 0;
	unsigned next_rr = 0;

	if (run->clients > SCENE_MAX_CLIENTS)
		return false;
	scene_rng = run->seed;
	run->lowest_healthy_log_odds = 0;
	run->bound_opened = 0;
	if (!stall_looks_start(&looks, SCENE_WORKERS, SCENE_T0))
		return false;
	memset(run->opened, 0, sizeof(run->opened));
	for (unsigned c = 0; c < run->clients; c++)
		current[c] = SIZE_MAX; /* sends at SCENE_LOAD_FROM_MS */
	for (uint64_t now = 0; now <= run->duration_ms; now += 50) {
		/* Clients whose request ended send the next, round robin
		 * over the workers still in rotation. */
		for (unsigned c = 0; c < run->clients && now >= SCENE_LOAD_FROM_MS; c++) {
			if (current[c] != SIZE_MAX && scene_requests[current[c]].end > now)
				continue;
			if (nb >= SCENE_MAX_REQUESTS) {
				stall_looks_end(&looks);
				return false;
			}
			unsigned k = next_rr++ % SCENE_WORKERS;
			for (int tries = 0; route_away && run->opened[k] && tries < SCENE_WORKERS;
			     tries++)
				k = next_rr++ % SCENE_WORKERS;
			scene_requests[nb].worker = (uint8_t)k;
			scene_requests[nb].sent = now;
			scene_answer_times(&scene_requests[nb], (int)k == run->hung,
					   run->timeout_server_ms);
			current[c] = nb++;
		}
		if (now == 0 || now % SCENE_LOOK_MS != 0)
			continue;
		uint64_t sent[SCENE_WORKERS] = {0}, heads[SCENE_WORKERS] = {0};
		uint64_t scur[SCENE_WORKERS] = {0};
		for (size_t i = 0; i < nb; i++) {
			const struct scene_request *q = &scene_requests[i];
			sent[q->worker]++;
			heads[q->worker] += q->head <= now;
			scur[q->worker] += q->end > now;
		}
		if (run->hung >= 0 && run->bound_opened == 0 &&
		    scene_bound_says_open(sent, heads, run->hung))
			run->bound_opened = now;
		struct breaker_event ev[SCENE_WORKERS];
		stall_looks_judge(&looks, sent, heads, scur, now > SCENE_LOOK_MS, SCENE_T0 + now,
				  ev);
		for (int k = 0; k < SCENE_WORKERS; k++) {
			if (ev[k].to == BREAKER_OPEN && ev[k].from != BREAKER_OPEN &&
			    !run->opened[k]) {
				run->opened[k] = now;
				run->opened_by[k] = ev[k].trip_rule;
			}
			if (k != run->hung && w[k].from_ms != 0) {
				uint64_t answered = w[k].nb_answered > w[k].nb_pending_then
							    ? w[k].nb_answered - w[k].nb_pending_then
							    : 0;
				double odds = silence_odds_log(w[k].sent, w[k].nb_sent, answered);
				if (odds < run->lowest_healthy_log_odds)
					run->lowest_healthy_log_odds = odds;
			}
		}
	}
	stall_looks_end(&looks);
	return true;
}

#endif
