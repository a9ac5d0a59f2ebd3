/*
 * histogram.h - a fixed-bucket latency histogram cheap enough for the
 * NOTIFY path: one clock read before and after, a short scan, three adds.
 *
 * Bounds are in microseconds and fixed at build time, so every scrape and
 * every agent agree on them; buckets hold plain (non-cumulative) counts and
 * the renderer (metrics.c) accumulates them.
 */
#ifndef SPOA_HISTOGRAM_H
#define SPOA_HISTOGRAM_H

#include <stdint.h>
#include <time.h>

/* Finite upper bounds; one more bucket catches everything above (+Inf). */
#define HISTOGRAM_BOUNDS 13
extern const uint32_t histogram_bounds_us[HISTOGRAM_BOUNDS];

struct histogram {
	uint64_t buckets[HISTOGRAM_BOUNDS + 1]; /* [i]: bounds[i-1] < t <= bounds[i]; last: +Inf */
	uint64_t count;
	uint64_t sum_ns;
};

/* CLOCK_MONOTONIC in nanoseconds (a vDSO call on Linux, no syscall). */
static inline uint64_t histogram_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void histogram_observe_ns(struct histogram *h, uint64_t ns)
{
	unsigned i = 0;
	while (i < HISTOGRAM_BOUNDS && ns > (uint64_t)histogram_bounds_us[i] * 1000u)
		i++;
	h->buckets[i]++;
	h->count++;
	h->sum_ns += ns;
}

#endif /* SPOA_HISTOGRAM_H */
