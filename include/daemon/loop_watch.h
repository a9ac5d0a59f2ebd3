/*
 * loop_watch.h - how long each turn of the event loop works between two
 * waits on epoll (loop_watch.c): the number that says whether anything
 * stalls SPOP. A check watcher notes when the wait ends, a prepare watcher
 * when the next one begins.
 */
#ifndef SPOA_LOOP_WATCH_H
#define SPOA_LOOP_WATCH_H

#include <ev.h>
#include <stdint.h>

#include "util/histogram.h"

struct loop_watch {
	ev_check woke;     /* the wait on epoll is over */
	ev_prepare sleeps; /* the next wait begins */
	uint64_t woke_ns;  /* 0: not in a turn */
	struct histogram busy; /* time worked per turn */
	uint64_t max_ns;       /* the longest turn since start */
};

void loop_watch_start(struct loop_watch *w, struct ev_loop *loop);
void loop_watch_stop(struct loop_watch *w, struct ev_loop *loop);

#endif /* SPOA_LOOP_WATCH_H */
