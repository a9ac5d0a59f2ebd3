/*
 * loop_watch.c - the event loop's busy time per turn (see loop_watch.h).
 */
#include "daemon/loop_watch.h"
#include "util/container_of.h"

static void woke_cb(struct ev_loop *loop, ev_check *c, int revents)
{
	(void)loop;
	(void)revents;
	container_of(c, struct loop_watch, woke)->woke_ns = histogram_now_ns();
}

static void sleeps_cb(struct ev_loop *loop, ev_prepare *p, int revents)
{
	struct loop_watch *w = container_of(p, struct loop_watch, sleeps);
	(void)loop;
	(void)revents;
	if (w->woke_ns == 0)
		return; /* the first wait: no turn before it */
	uint64_t ns = histogram_now_ns() - w->woke_ns;
	histogram_observe_ns(&w->busy, ns);
	if (ns > w->max_ns)
		w->max_ns = ns;
	w->woke_ns = 0;
}

void loop_watch_start(struct loop_watch *w, struct ev_loop *loop)
{
	ev_check_init(&w->woke, woke_cb);
	/* First among the turn's callbacks, so the turn is measured whole. */
	ev_set_priority(&w->woke, EV_MAXPRI);
	ev_check_start(loop, &w->woke);
	ev_prepare_init(&w->sleeps, sleeps_cb);
	ev_set_priority(&w->sleeps, EV_MINPRI);
	ev_prepare_start(loop, &w->sleeps);
}

void loop_watch_stop(struct loop_watch *w, struct ev_loop *loop)
{
	ev_check_stop(loop, &w->woke);
	ev_prepare_stop(loop, &w->sleeps);
}
