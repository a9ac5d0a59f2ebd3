/*
 * closed_loop_spread.c - how soon the stalled rule opens a hung worker
 * behind closed-loop clients, over many seeds, against the best the
 * 5e-9 bound allows the same traffic (the scene: closed_loop_scene.h,
 * the shape of tests/e2e/hung_closed_loop.bats). The unit tables pin one
 * seed; this prints the spread, and the healthy side: how many of the
 * seeds' ten healthy minutes opened a worker, and the nearest any look
 * came to the bound.
 *
 *   make bench-closed-loop            # 200 seeds a row, about a minute
 *   SPREAD_SEEDS=1000 build/bench/closed_loop_spread
 *
 * Figures only: it asserts nothing. Times are from the first request.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "closed_loop_scene.h"

#define HUNG_RUN_MS 700000     /* past the 5 min timeouts of the slowest row (4 clients) */
#define HEALTHY_RUN_MS 600000  /* ten minutes of healthy traffic */
#define WITHIN_MS 40000        /* the time the e2e scene is asked to drain within */
#define LATE_MS 60000          /* a minute: the tail a bounded load must outlast */
#define MAX_SEEDS 100000

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* "12.5" (seconds) or "never". */
static const char *seconds(uint64_t ms, char *buf, size_t size)
{
	if (ms == SCENE_NEVER)
		snprintf(buf, size, "never");
	else
		snprintf(buf, size, "%.1f", (double)ms / 1000.0);
	return buf;
}

/* One line: the 10th, 50th and 90th percentiles and the largest, the
 * share within WITHIN_MS, the share past LATE_MS (what a scene whose load
 * stops then would not see) and the share before the first timeout (the
 * hung worker's first request is sent with the load's first). */
static void print_spread(const char *what, uint64_t *times, unsigned n, uint64_t timeout_ms)
{
	char p10[16], p50[16], p90[16], max[16];
	unsigned within = 0, late = 0, before_timeout = 0;

	qsort(times, n, sizeof(*times), by_value);
	for (unsigned i = 0; i < n; i++) {
		within += times[i] <= WITHIN_MS;
		late += times[i] > LATE_MS;
		before_timeout += times[i] < timeout_ms;
	}
	printf("  %-10s p10 %6s s  p50 %6s s  p90 %6s s  max %6s s  within 40 s %5.1f %%  "
	       "past 60 s %5.1f %%  before the timeout %5.1f %%\n",
	       what, seconds(times[n / 10], p10, sizeof(p10)),
	       seconds(times[n / 2], p50, sizeof(p50)),
	       seconds(times[n * 9 / 10], p90, sizeof(p90)),
	       seconds(times[n - 1], max, sizeof(max)), 100.0 * within / n, 100.0 * late / n,
	       100.0 * before_timeout / n);
}

static uint64_t since_load(uint64_t at)
{
	return at == 0 ? SCENE_NEVER : at - SCENE_LOAD_FROM_MS;
}

static int row(unsigned clients, uint64_t timeout_ms, unsigned seeds)
{
	static uint64_t rule[MAX_SEEDS], bound[MAX_SEEDS];
	unsigned healthy_opened = 0, hung_neighbours_opened = 0;
	double nearest = 0.0;

	for (unsigned s = 0; s < seeds; s++) {
		struct closed_loop_run hung = {.clients = clients, .timeout_server_ms = timeout_ms,
					       .hung = 2, .duration_ms = HUNG_RUN_MS,
					       .seed = 1000 + s};
		struct closed_loop_run unhindered = hung, healthy = hung;
		healthy.hung = -1;
		healthy.duration_ms = HEALTHY_RUN_MS;
		if (!closed_loop_simulate(&hung, true) ||
		    !closed_loop_simulate(&unhindered, false) ||
		    !closed_loop_simulate(&healthy, true)) {
			fprintf(stderr, "closed_loop_spread: the scene does not fit (%u clients)\n",
				clients);
			return 1;
		}
		rule[s] = since_load(hung.opened[2]);
		bound[s] = since_load(unhindered.bound_opened);
		hung_neighbours_opened += (hung.opened[0] != 0) + (hung.opened[1] != 0);
		for (int k = 0; k < SCENE_WORKERS; k++)
			healthy_opened += healthy.opened[k] != 0;
		if (healthy.lowest_healthy_log_odds < nearest)
			nearest = healthy.lowest_healthy_log_odds;
	}
	printf("%u clients, timeout server %llu s, %u seeds:\n", clients,
	       (unsigned long long)timeout_ms / 1000, seeds);
	print_spread("the rule", rule, seeds, timeout_ms);
	print_spread("the bound", bound, seeds, timeout_ms);
	printf("  healthy: %u workers opened in %u ten-minute runs (%u neighbours of the hung "
	       "one), nearest look to the bound e^%.1f (the bound e^%.1f)\n",
	       healthy_opened, seeds, hung_neighbours_opened, nearest, SCENE_LN_BOUND);
	return 0;
}

int main(void)
{
	const char *env = getenv("SPREAD_SEEDS");
	long seeds = env != NULL ? strtol(env, NULL, 10) : 200;
	static const unsigned clients[] = {4, 12, 48};
	static const uint64_t timeouts[] = {30000, 300000};

	if (seeds < 10 || seeds > MAX_SEEDS) {
		fprintf(stderr, "closed_loop_spread: SPREAD_SEEDS must be 10 to %d\n", MAX_SEEDS);
		return 2;
	}
	printf("The stalled rule under closed-loop clients (three workers, w3 hung; half the "
	       "answers streamed, four in ten whole after 1-6 s, one in ten after 20 s; looks "
	       "every %d ms). \"the bound\": the first look at which the silence reading, fed "
	       "perfect counts from the first request, falls below 5e-9.\n",
	       SCENE_LOOK_MS);
	for (size_t c = 0; c < sizeof(clients) / sizeof(clients[0]); c++)
		for (size_t t = 0; t < sizeof(timeouts) / sizeof(timeouts[0]); t++)
			if (row(clients[c], timeouts[t], (unsigned)seeds) != 0)
				return 1;
	return 0;
}
