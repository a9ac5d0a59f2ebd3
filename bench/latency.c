/*
 * latency.c - the bounded latency histogram (see latency.h).
 */
#include "latency.h"

static unsigned bucket_of(uint64_t ns)
{
	if (ns < LATENCY_SUB)
		return (unsigned)ns; /* exact below 64 ns */
	unsigned exp = 63u - (unsigned)__builtin_clzll(ns);
	if (exp >= LATENCY_MAX_EXP)
		return LATENCY_BUCKETS - 1;
	/* The six bits under the leading one pick the sub-bucket. */
	unsigned mantissa = (unsigned)(ns >> (exp - 6)) - LATENCY_SUB;
	return LATENCY_SUB + (exp - 6) * LATENCY_SUB + mantissa;
}

static double bucket_mid(unsigned b)
{
	if (b < LATENCY_SUB)
		return b;
	unsigned exp = (b - LATENCY_SUB) / LATENCY_SUB + 6;
	unsigned mantissa = (b - LATENCY_SUB) % LATENCY_SUB + LATENCY_SUB;
	double width = (double)(1ull << (exp - 6));
	return mantissa * width + width / 2;
}

void latency_record(struct latency *l, uint64_t ns)
{
	l->buckets[bucket_of(ns)]++;
	l->count++;
	if (ns > l->max_ns)
		l->max_ns = ns;
}

double latency_quantile_ns(const struct latency *l, double q)
{
	if (l->count == 0)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)l->count);
	if (rank >= l->count)
		rank = l->count - 1;
	uint64_t seen = 0;
	for (unsigned b = 0; b < LATENCY_BUCKETS; b++) {
		seen += l->buckets[b];
		if (seen > rank) {
			double mid = bucket_mid(b);
			/* Never above what was really seen. */
			return mid > (double)l->max_ns ? (double)l->max_ns : mid;
		}
	}
	return (double)l->max_ns;
}
