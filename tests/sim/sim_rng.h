/*
 * sim_rng.h - the simulation's only source of randomness: a small seeded
 * generator (splitmix64), so that a seed replays a schedule exactly.
 * Each concern draws from a stream of its own (the traffic, the Runtime
 * API's delays, the schedule), so that dropping an event while shrinking
 * leaves the other streams where they were.
 */
#ifndef SIM_RNG_H
#define SIM_RNG_H

#include <math.h>
#include <stdint.h>

struct sim_rng {
	uint64_t state;
};

static inline void sim_rng_seed(struct sim_rng *r, uint64_t seed, uint64_t stream)
{
	r->state = seed * 0x9e3779b97f4a7c15ull ^ (stream + 1) * 0xbf58476d1ce4e5b9ull;
}

static inline uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n is 0. */
static inline uint64_t sim_rng_below(struct sim_rng *r, uint64_t n)
{
	return n ? sim_rng_next(r) % n : 0;
}

/* Uniform in [lo, hi]. */
static inline uint64_t sim_rng_range(struct sim_rng *r, uint64_t lo, uint64_t hi)
{
	return hi <= lo ? lo : lo + sim_rng_below(r, hi - lo + 1);
}

/* Uniform in [0, 1). */
static inline double sim_rng_unit(struct sim_rng *r)
{
	return (double)(sim_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static inline int sim_rng_chance(struct sim_rng *r, double p)
{
	return sim_rng_unit(r) < p;
}

/* An exponential wait of mean `mean` (any unit). */
static inline double sim_rng_exp(struct sim_rng *r, double mean)
{
	return -mean * log(1.0 - sim_rng_unit(r));
}

#endif
