/*
 * steady_watch.h - the running agent's watch over steady-state mode
 * (steady_watch.c): once a second, whether an HAProxy sends in that mode
 * while no one keeps its watched map (link/steady_support.h), said in the
 * log when it starts, every minute while it lasts, and when it ends, and
 * shown on /state and /metrics.
 */
#ifndef SPOA_DAEMON_STEADY_WATCH_H
#define SPOA_DAEMON_STEADY_WATCH_H
#include <ev.h>
#include <stdint.h>

#include "link/enforcer.h"
#include "link/steady_support.h"
#include "spop/observe.h"

struct steady_watch {
	ev_timer timer;
	const struct observe_ctx *observe; /* counts the steady-state messages */
	struct enforcer *const *enforcer;  /* the link of the moment (a reload swaps it) */
	enum steady_support now;
	/* Judged on recent messages only: an HAProxy restarted into
	 * every-response mode sends none any more, and its missing watched
	 * map is then no mistake. */
	uint64_t messages_seen;  /* the count at the last tick */
	double last_message;     /* clock_mono_s() when the count last grew (0: never) */
	uint64_t unkept_since_messages; /* the count when UNKEPT began */
	double said_at;                 /* clock_mono_s() when UNKEPT was last logged */
};

void steady_watch_start(struct steady_watch *w, struct ev_loop *loop,
			const struct observe_ctx *observe, struct enforcer *const *enforcer);
void steady_watch_stop(struct steady_watch *w, struct ev_loop *loop);

/* What the agent knows of its HAProxy links, for the judgement. */
struct steady_links steady_watch_links(const struct enforcer *e);

#endif /* SPOA_DAEMON_STEADY_WATCH_H */
