/*
 * capacity.h - each server's capacity, learnt from its worker's refusals
 * (pure; docs/capacity.md).
 *
 * A worker that answers a capacity status (503, 429, 529) says it is full:
 * its capacity is below the requests it had. HAProxy has the tool for a
 * full server: its maxconn, beyond which requests wait in HAProxy's queue
 * (`timeout queue`) for whichever worker frees a slot first, instead of
 * being sent, refused, and retried. The agent sets each server's maxconn
 * from what its looks at HAProxy see, additive increase and decrease, in
 * the spirit of TCP's congestion window, driven by the worker's explicit
 * refusals rather than by latency:
 *
 *   refusals since the previous look   the limit goes one down (with no
 *                                      limit yet: to one below the requests
 *                                      the server held, scur - 1), never
 *                                      below the floor: a refusal at
 *                                      concurrency c says the capacity is
 *                                      below c
 *   refusals, the server holding less  nothing: no capacity speaks there
 *   than half its limit (two with no   (a 429 for one client's quota, a
 *   limit yet)                         worker refusing at random)
 *   none, every slot taken (scur at    the limit grows: by one, or doubling
 *   the limit)                         back towards the last limit the
 *                                      worker held (slow start)
 *   none, slots free                   nothing: the limit is not what
 *                                      holds the server back
 *
 * So a worker refusing beyond K settles at K, probing K + 1 now and then:
 * each raise to the limit last refused that is refused again makes the
 * next such raise wait twice as many full looks (at most 20, 10 s at the
 * default poll_interval), since a look above the edge costs refusals that
 * a saturated fleet's retries cannot place; raises below it come at once.
 * The look after a lowering counts no refusal (they may be of requests let
 * in before the new maxconn landed). A capacity that falls is followed one
 * request every two looks; one that grows, one a look as soon as a raise
 * to the edge holds. After a trip the limit doubles back to the one it had,
 * then goes one by one. Never above the ceiling (the operator's own
 * maxconn, 0: none). A server that never refuses is never limited: no
 * limit is learnt before the first refusal.
 */
#ifndef SPOA_CAPACITY_H
#define SPOA_CAPACITY_H

#include <stdbool.h>
#include <stdint.h>

/* The lowest limit learnt: one request at a time still finds out whether
 * the worker can take more. */
#define CAPACITY_FLOOR 1u

/* What the link keeps per server (and per HAProxy: each learns its own
 * share of a worker, as TCP flows share a link). */
struct capacity {
	uint32_t limit;        /* the learnt maxconn; 0: none learnt */
	uint32_t step;         /* the next increase (slow start doubles it) */
	uint32_t slow_start_to; /* doubling stops here; 0: one by one */
	uint64_t refusals_counted; /* the breaker's SPOP capacity statuses at the previous look */
	bool counted;          /* refusals_counted is a baseline */
	bool probing;          /* the last look raised the limit: the next judges it */
	bool lowered;          /* the last look lowered it: the next's refusals may be lag */
	uint16_t wait;         /* full looks left before the next raise */
	uint16_t backoff;      /* the wait after the last refused raise (doubles, bounded) */
	uint32_t edge;         /* the limit last refused (0: none known); a raise to it waits */
	uint32_t raised;       /* the last raise's size: undone whole if refused */
	bool answered;         /* it answered a request at a look after its limit was set */
};

/* One look at one server whose breaker is closed. */
struct capacity_look {
	uint64_t refusals; /* capacity statuses since the previous look: over SPOP
			    * and retried elsewhere (HAProxy's counters) */
	uint32_t sessions; /* requests in flight there (scur) */
	uint32_t ceiling;  /* the operator's maxconn; 0: none */
	uint64_t answers;  /* requests it answered (1xx-3xx) since the previous look */
};

enum capacity_change {
	CAPACITY_UNCHANGED,
	CAPACITY_LOWERED,
	CAPACITY_RAISED,
};

enum capacity_change capacity_on_look(struct capacity *c, const struct capacity_look *look);

/*
 * A capacity status that reached its client (over SPOP: its retries, if
 * any, were refused too), between two looks. Right after a raise, it is
 * the raise refused: the limit comes down at once, as the next look would
 * have brought it, a look's worth of refusals sooner - in a saturated
 * fleet a refused request's retries find no free slot but the one above
 * the edge, and fail there. With no limit yet and at least two requests in
 * flight at the last look (`sessions`), the first limit is set the same
 * way. Anything else waits for the look.
 */
enum capacity_change capacity_on_refusal(struct capacity *c, uint32_t sessions,
					 uint32_t ceiling);

/* The worker is judged anew (its breaker tripped, the server points at
 * another worker, learning is off for it): where it tripped, it comes
 * back at `start` (the half-open probes' maxconn) and doubles back towards
 * the limit it had; elsewhere the limit is forgotten. */
void capacity_slow_start(struct capacity *c, uint32_t start);
void capacity_forget(struct capacity *c);
/*
 * A server with no limit in a backend where others have one: HAProxy
 * queues a request when the backend has a queue (with roundrobin, it takes
 * every server to be full), and only a server with a maxconn takes
 * requests from that queue as its slots free - an unlimited one, a worker
 * back from a crash say, would get almost nothing. So it gets a limit too,
 * `start` (the largest of its neighbours'), doubling at each look that
 * finds it full and unrefused until its first refusal: slow start.
 */
void capacity_join(struct capacity *c, uint32_t start);

/*
 * Whether the limit learnt says what a worker of the backend can take, so
 * that a neighbour with none may start there (capacity_join()): above the
 * floor, and answered under - the worker served a request at a look after
 * its limit was set. A worker that refuses every request says nothing of
 * its capacity, whatever it held when a look found it (a slow refusal
 * holds its requests as long as an answer would): starting its neighbours
 * at its limit would make HAProxy queue, and the queue hands a retried
 * refusal to whichever server frees a slot first, the refusing one above
 * all, so that its clients get its refusal after every try.
 */
bool capacity_speaks_for_neighbours(const struct capacity *c);

const char *capacity_change_name(enum capacity_change change);

#endif /* SPOA_CAPACITY_H */
