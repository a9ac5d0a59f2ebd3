/*
 * impure.c - a deliberately impure fixture for tests/check-layers.sh: it
 * reads the clock, writes to a stream and logs through the agent's logger,
 * everything the pure core must not do. Compiled by the self-test only.
 */
#include <stdio.h>
#include <time.h>

#include "util/log.h"

long layers_fixture_impure(void);
/* Defined in pure.c: resolved when both objects are checked together. */
size_t layers_fixture_pure(const char *s, char *out, size_t out_size);

long layers_fixture_impure(void)
{
	struct timespec now;
	char name[16];

	clock_gettime(CLOCK_MONOTONIC, &now);
	fprintf(stderr, "%ld\n", (long)now.tv_sec);
	log_warning("fixture at %ld", (long)now.tv_sec);
	return (long)layers_fixture_pure("impure", name, sizeof(name));
}
