/*
 * clock.h - the monotonic clock every breaker, timeout and interval runs
 * on. The core never reads it: the edges do, and hand the time in.
 *
 * Never ev_now() for a duration or a deadline: it is libev's copy of the
 * wall clock (CLOCK_REALTIME), which NTP or `date -s` may step by hours,
 * while libev runs its ev_timers on the monotonic clock. A deadline kept
 * beside an ev_timer must be read on the same clock as the timer. The wall
 * clock is for what a person reads or what outlives the process (log
 * stamps, snapshot dates, Retry-After dates), and each such read says why.
 */
#ifndef SPOA_CLOCK_H
#define SPOA_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t clock_now_ms(void);

/* CLOCK_MONOTONIC in seconds, the unit of libev's ev_tstamp: for the
 * deadlines and silences kept beside an ev_timer. */
double clock_mono_s(void);

/* CLOCK_REALTIME in milliseconds since the epoch: only for what outlives
 * the process (a snapshot's dates, the end of an operator's timed hold).
 * One function rather than a clock_gettime() in each of its readers, so
 * that tests/sim/ can run them on its simulated clock, as it runs the two
 * above: a restart there is replayed to the millisecond. */
int64_t clock_wall_ms(void);

#endif /* SPOA_CLOCK_H */
