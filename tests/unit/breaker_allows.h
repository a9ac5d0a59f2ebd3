/*
 * breaker_allows.h - what the unit tests watch a breaker by: whether it
 * would let a request through (every state but OPEN; a HALF_OPEN breaker
 * lets its probes through). The agent itself never asks: HAProxy routes,
 * the link drains.
 */
#ifndef SPOA_TEST_BREAKER_ALLOWS_H
#define SPOA_TEST_BREAKER_ALLOWS_H

#include <stdbool.h>

#include "core/breaker-t.h"

static inline bool breaker_would_allow(const struct breaker *b)
{
	return b->state != BREAKER_OPEN;
}

#endif
