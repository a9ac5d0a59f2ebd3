/*
 * sim_loop.h - the simulated clock and event loop the agent's real code
 * runs on.
 *
 * The agent reads time through clock_now_ms() and clock_mono_s()
 * (util/clock.h), the wall clock through time() and clock_wall_ms(), and
 * waits through libev's timers. sim_loop.c defines all of them over one
 * simulated clock, so the same objects that run in the daemon run here:
 * the simulation links them without libev and without util/clock.o.
 * Nothing waits: the clock jumps to the next thing due. The state
 * store's ev_async is a flag (its writer thread is joined at a stop);
 * what only daemon_run() calls (the default loop, signals, check and
 * prepare watchers) aborts.
 *
 * Only timers ever fire. An ev_io started here means the agent tried to
 * open a socket, which the simulation has none of: it is counted
 * (sim_loop_io_starts) and the run is failed.
 */
#ifndef SIM_LOOP_H
#define SIM_LOOP_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

/* The simulated monotonic clock, in microseconds; it starts at
 * SIM_CLOCK_START_US, never at 0 (a time of 0 means "never" here and
 * there in the agent). */
#define SIM_CLOCK_START_US 1000000000ull
/* The wall clock's Unix seconds at SIM_CLOCK_START_US. */
#define SIM_WALL_START_S 1800000000ll

uint64_t sim_now_us(void);
/* Moves the clock forward to `us` (never back). */
void sim_clock_set(uint64_t us);
/* Back to the start, for the next schedule. */
void sim_clock_reset(void);

/* Timers the loop must leave alone (the Runtime API clients' own: the
 * simulated HAProxy answers their queues directly, sim_haproxy.h). */
typedef bool (*sim_loop_skip_fn)(void *ctx, const ev_timer *w);

struct ev_loop *sim_loop_new(void);
void sim_loop_free(struct ev_loop *loop);
void sim_loop_set_skip(struct ev_loop *loop, sim_loop_skip_fn skip, void *ctx);
/* When the earliest timer not skipped is due, UINT64_MAX if none. */
uint64_t sim_loop_next_due(struct ev_loop *loop);
/* Fires every timer due at or before now, earliest first (ties in the
 * order they were started), including those the callbacks start due by
 * then. Returns how many fired. */
unsigned sim_loop_run_due(struct ev_loop *loop);
/* ev_io_start calls since the last reset (there must be none). */
uint64_t sim_loop_io_starts(void);
void sim_loop_io_reset(void);

#endif
