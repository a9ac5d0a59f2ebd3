/*
 * bus.h - the breaker table on the event loop, and the one place its
 * events fan out: the bus every rule publishes to and every listener
 * subscribes from. It sits below them all: it includes only util/ and
 * core/, and whoever publishes or listens includes it.
 *
 * Owns the per-server breakers and the one timer that drives their
 * time-based changes (OPEN => HALF_OPEN when a cool-down elapses, the end
 * of a worker's rest): the timer is armed for the earliest deadline of
 * all breakers, so HAProxy is told to probe, or to send to a rested
 * worker again, on time, not on the next request.
 *
 * Every record (a response over SPOP, HAProxy's counters, a cool-down) is
 * published once, with its cause, to a list of listeners, called in the
 * order they subscribed, synchronously, on the loop: the publisher gets
 * control back once every listener has run. The fan-out (publish.c) is
 * pure, the table's timer (bus.c) is not. The running agent subscribes
 * them in this order (start() in daemon/daemon.c): the transition log,
 * the metrics counters, the timer, the operator's hand, the state
 * snapshot. A part a reload rebuilds takes its predecessor's place
 * (breakers_replace), so the order holds for the agent's whole life.
 *
 * The HAProxy link, which acts on the record, is not a listener of
 * records: it comes after all of them, called by name by whoever
 * records (enforcer_publish(), link/enforcer.h: the listeners, then the
 * link), so that a reader follows a response to its drain without a
 * pointer. It subscribes only to the table's growth (reserve, created),
 * to keep its per-server arrays the table's size.
 */
#ifndef SPOA_BREAKERS_BUS_H
#define SPOA_BREAKERS_BUS_H

#include <ev.h>

#include "core/breaker.h"

/* One look's counter delta (link/faults-t.h), carried by a cause for the
 * subscribers that read it: opaque to the bus, which only hands it on. */
struct faults_delta;

/* Why a breaker was recorded. */
enum breaker_cause_kind {
	BREAKER_CAUSE_RESPONSE, /* a worker's response, over SPOP */
	BREAKER_CAUSE_COUNTERS, /* HAProxy's counters at a look (faults SPOE never sees) */
	BREAKER_CAUSE_COOLDOWN, /* the cool-down elapsed */
	/* HAProxy's counters at a look: a capacity status retried on another
	 * worker, recorded as backpressure (faults->capacity_retries) */
	BREAKER_CAUSE_CAPACITY_RETRY,
	BREAKER_CAUSE_PEER, /* another HAProxy node's verdict, read from the shared table */
	/* HAProxy's look: requests in flight with no response for too long
	 * (the stalled rule, stall_watch.c) */
	BREAKER_CAUSE_IN_FLIGHT,
	/* HAProxy's look: the server points at another worker now (DNS, `set
	 * server addr`, an ingress controller): the breaker is that worker's
	 * (link/endpoints.h) */
	BREAKER_CAUSE_ENDPOINT,
	/* The rest a worker's Retry-After asked for elapsed (core/rest.c),
	 * with no transition at the same tick */
	BREAKER_CAUSE_REST_OVER,
	/* HAProxy's look: a worker that asked to be left alone (Retry-After)
	 * answered nothing but capacity statuses since the previous look;
	 * its word becomes a rest (core/rest.c) */
	BREAKER_CAUSE_REST_WORD,
	/* The operator's hand moved (core/operator_hand.h): a hold set, lifted
	 * or ended, a backend paused or resumed, the agent released or
	 * resumed; `uid` says who asked (-1: the hold's own end, a start) */
	BREAKER_CAUSE_OPERATOR,
};

struct breaker_cause {
	enum breaker_cause_kind kind;
	enum breaker_outcome outcome;      /* RESPONSE */
	int status;                        /* RESPONSE */
	const struct faults_delta *faults; /* COUNTERS, CAPACITY_RETRY */
	uint32_t node;                     /* PEER: the node whose verdict */
	uint64_t in_flight;                /* IN_FLIGHT: HAProxy's scur at the look */
	const struct stall_watch *stall;   /* IN_FLIGHT: the counted rule's watch */
	const char *endpoint;              /* ENDPOINT: the worker it points at now */
	bool recalled;                     /* ENDPOINT: that worker's breaker, remembered */
	long uid;                          /* OPERATOR: who asked, -1 when nobody did */
	uint64_t now_ms; /* when it was recorded: subscribers read no clock of their own */
};

/* One listener of breaker events. Each function may be NULL. `recorded`
 * runs after every record, also when nothing changed (ev->from == ev->to);
 * it may act on its entry but must not call breaker_table_get() (a
 * publication may come from inside a walk of the table). */
struct breaker_subscriber {
	const char *name;
	void (*recorded)(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
			 const struct breaker_cause *cause);
	/* Room for entry indexes below `allocated`, before the table grows;
	 * false refuses the growth. */
	bool (*reserve)(void *ctx, uint32_t allocated);
	void (*created)(void *ctx, uint32_t index); /* an entry index now holds a server */
	void (*removed)(void *ctx, uint32_t index); /* ... and no longer does */
	void *ctx;
};

#define BREAKERS_MAX_SUBSCRIBERS 8

struct breakers {
	struct ev_loop *loop;
	struct breaker_table table;
	ev_timer timer;
	uint64_t armed_ms; /* the deadline the timer is set for, or BREAKER_NO_DEADLINE */
	struct breaker_subscriber subscribers[BREAKERS_MAX_SUBSCRIBERS];
	unsigned nb_subscribers;
	/* Who publishes what the timer records (a cool-down elapsed, a rest
	 * over): the running agent's route (daemon/observe_route.c), which
	 * tells the listeners and then the HAProxy link; NULL, the listeners
	 * only (breakers_publish()). */
	void (*publish_tick)(void *ctx, struct breaker_table_entry *e,
			     const struct breaker_event *ev, const struct breaker_cause *cause);
	void *publish_tick_ctx;
};

/* A table of max_entries breakers following *policies (moved into the
 * table: *policies is emptied). False with err set. */
bool breakers_init(struct breakers *b, struct ev_loop *loop, uint32_t max_entries,
		   struct breaker_policies *policies, char *err, size_t err_size);
void breakers_free(struct breakers *b);

/* Adds a subscriber (copied), last. False when the list is full. */
bool breakers_subscribe(struct breakers *b, const struct breaker_subscriber *s);
/* Removes every subscriber whose ctx is ctx. */
void breakers_unsubscribe(struct breakers *b, void *ctx);
/* Puts s (copied) in the place of the first subscriber whose ctx is
 * old_ctx, which leaves the list: a part a reload rebuilds keeps its
 * turn. With none of old_ctx, or old_ctx NULL (the ctx of subscribers
 * that need none, never replaced), adds s last, as breakers_subscribe()
 * does. False when the list is full. */
bool breakers_replace(struct breakers *b, void *old_ctx, const struct breaker_subscriber *s);

/* Tells every subscriber about one record, in their order. */
void breakers_publish(struct breakers *b, struct breaker_table_entry *e,
		      const struct breaker_event *ev, const struct breaker_cause *cause);

/* Arms the timer for one breaker's deadline, if earlier than the one it
 * is set for: after its hold was set outside a record. */
void breakers_arm_entry(struct breakers *b, const struct breaker_table_entry *e);

/* Arms the timer for the earliest deadline of all breakers: after
 * breakers were changed without a record (restored from a snapshot). */
void breakers_rearm(struct breakers *b);

/* The subscriber that keeps the timer armed for the earliest deadline. */
struct breaker_subscriber breakers_timer_subscriber(struct breakers *b);

#endif /* SPOA_BREAKERS_BUS_H */
