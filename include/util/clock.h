/*
 * clock.h - the monotonic clock every breaker runs on. The core never reads
 * it: the edges do, and hand the time in.
 */
#ifndef SPOA_CLOCK_H
#define SPOA_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t clock_now_ms(void);

#endif /* SPOA_CLOCK_H */
