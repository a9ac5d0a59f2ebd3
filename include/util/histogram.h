/*
 * histogram.h - a fixed-bucket latency histogram cheap enough for the
 * NOTIFY path: a short scan and three adds, once per batch of samples.
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

/* n samples that took total_ns together, each counted at their mean: the
 * sum stays exact, the bucket is the mean's. n must not be 0. */
static inline void histogram_observe_batch_ns(struct histogram *h, uint64_t total_ns, uint64_t n)
{
	uint64_t mean = total_ns / n;
	unsigned i = 0;
	while (i < HISTOGRAM_BOUNDS && mean > (uint64_t)histogram_bounds_us[i] * 1000u)
		i++;
	h->buckets[i] += n;
	h->count += n;
	h->sum_ns += total_ns;
}

static inline void histogram_observe_ns(struct histogram *h, uint64_t ns)
{
	histogram_observe_batch_ns(h, ns, 1);
}

#endif /* SPOA_HISTOGRAM_H */
