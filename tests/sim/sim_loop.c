/*
 * sim_loop.c - the simulated clock, and the part of libev the agent's
 * objects call, over it (see sim_loop.h).
 *
 * libev keeps a started timer's deadline in its `at` field; so does this
 * loop, in seconds of the simulated clock, and a stopped timer's `at`
 * goes back to the delay it was set to, as libev's does.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "sim_loop.h"

#define SIM_MAX_TIMERS 512

struct ev_loop {
	ev_timer *timers[SIM_MAX_TIMERS]; /* started, in no order */
	uint64_t started_seq[SIM_MAX_TIMERS];
	unsigned nb;
	uint64_t seq;
	sim_loop_skip_fn skip;
	void *skip_ctx;
};

static uint64_t clock_us = SIM_CLOCK_START_US;
static uint64_t io_starts;

uint64_t sim_now_us(void)
{
	return clock_us;
}

void sim_clock_set(uint64_t us)
{
	if (us > clock_us)
		clock_us = us;
}

void sim_clock_reset(void)
{
	clock_us = SIM_CLOCK_START_US;
}

/* --- the clocks the agent reads (util/clock.h, and libc's time()) --- */

uint64_t clock_now_ms(void)
{
	return clock_us / 1000u;
}

double clock_mono_s(void)
{
	return (double)clock_us / 1e6;
}

/* The wall clock: the agent writes Unix times into HAProxy's maps (the
 * retry moments) and its peers' verdicts; on the simulated clock, so a
 * seed replays them too. */
time_t time(time_t *t)
{
	time_t now = (time_t)(SIM_WALL_START_S + (int64_t)((clock_us - SIM_CLOCK_START_US) / 1000000u));
	if (t)
		*t = now;
	return now;
}

/* The wall clock in milliseconds (util/clock.h): the dates a snapshot
 * carries and the end of an operator's timed hold, on the simulated
 * clock too, so that a restart with the snapshot replays exactly. */
int64_t clock_wall_ms(void)
{
	return SIM_WALL_START_S * 1000 + (int64_t)((clock_us - SIM_CLOCK_START_US) / 1000u);
}

/* --- the loop --- */

struct ev_loop *sim_loop_new(void)
{
	return calloc(1, sizeof(struct ev_loop));
}

void sim_loop_free(struct ev_loop *loop)
{
	free(loop);
}

void sim_loop_set_skip(struct ev_loop *loop, sim_loop_skip_fn skip, void *ctx)
{
	loop->skip = skip;
	loop->skip_ctx = ctx;
}

static uint64_t due_us(const ev_timer *w)
{
	double at = w->at * 1e6;
	return at <= 0 ? 0 : (uint64_t)ceil(at);
}

/* The earliest timer due, its slot; -1 when none. */
static int earliest(struct ev_loop *loop)
{
	int best = -1;
	uint64_t best_due = UINT64_MAX, best_seq = UINT64_MAX;
	for (unsigned i = 0; i < loop->nb; i++) {
		const ev_timer *w = loop->timers[i];
		if (loop->skip && loop->skip(loop->skip_ctx, w))
			continue;
		uint64_t d = due_us(w);
		if (d < best_due || (d == best_due && loop->started_seq[i] < best_seq)) {
			best = (int)i;
			best_due = d;
			best_seq = loop->started_seq[i];
		}
	}
	return best;
}

uint64_t sim_loop_next_due(struct ev_loop *loop)
{
	int i = earliest(loop);
	return i < 0 ? UINT64_MAX : due_us(loop->timers[i]);
}

unsigned sim_loop_run_due(struct ev_loop *loop)
{
	unsigned fired = 0;
	for (;;) {
		int i = earliest(loop);
		if (i < 0 || due_us(loop->timers[i]) > clock_us)
			return fired;
		ev_timer *w = loop->timers[i];
		if (w->repeat > 0) {
			/* libev re-arms a repeating timer from its deadline. */
			w->at += w->repeat;
			loop->started_seq[i] = ++loop->seq;
		} else {
			ev_timer_stop(loop, w);
		}
		fired++;
		w->cb(loop, w, EV_TIMER);
		if (fired > 1000000) {
			fprintf(stderr, "sim: a timer fires without end at %llu us\n",
				(unsigned long long)clock_us);
			abort();
		}
	}
}

uint64_t sim_loop_io_starts(void)
{
	return io_starts;
}

void sim_loop_io_reset(void)
{
	io_starts = 0;
}

/* --- libev's functions the agent's objects call --- */

void ev_timer_start(struct ev_loop *loop, ev_timer *w)
{
	if (w->active)
		return;
	if (loop->nb == SIM_MAX_TIMERS) {
		fprintf(stderr, "sim: more than %d timers started\n", SIM_MAX_TIMERS);
		abort();
	}
	w->at += (double)clock_us / 1e6;
	w->active = 1;
	w->pending = 0;
	loop->timers[loop->nb] = w;
	loop->started_seq[loop->nb] = ++loop->seq;
	loop->nb++;
}

void ev_timer_stop(struct ev_loop *loop, ev_timer *w)
{
	w->pending = 0;
	if (!w->active)
		return;
	for (unsigned i = 0; i < loop->nb; i++) {
		if (loop->timers[i] != w)
			continue;
		loop->nb--;
		loop->timers[i] = loop->timers[loop->nb];
		loop->started_seq[i] = loop->started_seq[loop->nb];
		break;
	}
	w->at -= (double)clock_us / 1e6;
	w->active = 0;
}

void ev_io_start(struct ev_loop *loop, ev_io *w)
{
	(void)loop;
	io_starts++;
	w->active = 1;
}

void ev_io_stop(struct ev_loop *loop, ev_io *w)
{
	(void)loop;
	w->active = 0;
	w->pending = 0;
}

void ev_feed_event(struct ev_loop *loop, void *w, int revents)
{
	(void)loop, (void)w, (void)revents;
	io_starts++; /* only a connection feeds itself an event */
}

void ev_break(struct ev_loop *loop, int how)
{
	(void)loop, (void)how;
}

void ev_ref(struct ev_loop *loop)
{
	(void)loop;
}

void ev_unref(struct ev_loop *loop)
{
	(void)loop;
}

void ev_timer_again(struct ev_loop *loop, ev_timer *w)
{
	/* libev: a repeating timer restarts its repeat from now, any other
	 * stops. */
	ev_timer_stop(loop, w);
	if (w->repeat > 0) {
		w->at = w->repeat;
		ev_timer_start(loop, w);
	}
}

/* The state store's writer thread tells the loop of each write; the
 * simulation reads what it wrote when the store is closed (it joins the
 * thread then), so there is nothing to wake. */
void ev_async_start(struct ev_loop *loop, ev_async *w)
{
	(void)loop;
	w->active = 1;
}

void ev_async_stop(struct ev_loop *loop, ev_async *w)
{
	(void)loop;
	w->active = 0;
	w->pending = 0;
}

void ev_async_send(struct ev_loop *loop, ev_async *w)
{
	(void)loop, (void)w;
}

/* What only daemon_run() calls (daemon.c, linked for reload.c's sake):
 * the process's own loop, its signals and its watchers. The simulation
 * runs its loop itself and never calls daemon_run(). */
static void not_simulated(const char *what)
{
	fprintf(stderr, "sim: the agent called %s, which the simulation does not run\n", what);
	abort();
}

struct ev_loop *ev_default_loop(unsigned int flags)
{
	(void)flags;
	not_simulated("ev_default_loop");
	return NULL;
}

int ev_run(struct ev_loop *loop, int flags)
{
	(void)loop, (void)flags;
	not_simulated("ev_run");
	return 0;
}

unsigned int ev_iteration(struct ev_loop *loop)
{
	(void)loop;
	not_simulated("ev_iteration");
	return 0;
}

void ev_signal_start(struct ev_loop *loop, ev_signal *w)
{
	(void)loop, (void)w;
	not_simulated("ev_signal_start");
}

void ev_prepare_start(struct ev_loop *loop, ev_prepare *w)
{
	(void)loop, (void)w;
	not_simulated("ev_prepare_start");
}

void ev_prepare_stop(struct ev_loop *loop, ev_prepare *w)
{
	(void)loop, (void)w;
	not_simulated("ev_prepare_stop");
}

void ev_check_start(struct ev_loop *loop, ev_check *w)
{
	(void)loop, (void)w;
	not_simulated("ev_check_start");
}

void ev_check_stop(struct ev_loop *loop, ev_check *w)
{
	(void)loop, (void)w;
	not_simulated("ev_check_stop");
}
