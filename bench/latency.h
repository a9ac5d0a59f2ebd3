/*
 * latency.h - a bounded latency histogram: 64 sub-buckets per power of two
 * (about 1.6% resolution), the exact maximum kept apart. Fixed size, so a
 * long run at a high rate costs no more memory than a short one.
 */
#ifndef BENCH_LATENCY_H
#define BENCH_LATENCY_H

#include <stdint.h>

#define LATENCY_SUB     64
#define LATENCY_MAX_EXP 42 /* 2^42 ns, over an hour: far above any timeout */
#define LATENCY_BUCKETS (LATENCY_SUB + (LATENCY_MAX_EXP - 6) * LATENCY_SUB)

struct latency {
	uint64_t count;
	uint64_t max_ns;
	uint64_t buckets[LATENCY_BUCKETS];
};

void latency_record(struct latency *l, uint64_t ns);
/* The value below which a fraction q (0..1) of the samples lie, in ns
 * (a bucket's midpoint); 0 when empty. */
double latency_quantile_ns(const struct latency *l, double q);

#endif
