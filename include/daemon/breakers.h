/*
 * breakers.h - the breaker table on the event loop.
 *
 * Owns the per-server breakers and the one timer that drives their
 * time-based transitions (Open => HalfOpen when a cool-down elapses, lost
 * probes released): the timer is armed for the earliest deadline of all
 * breakers, so HAProxy is told to probe on time, not on the next request.
 * Logs one line per transition with its reason.
 */
#ifndef SPOA_BREAKERS_H
#define SPOA_BREAKERS_H

#include <ev.h>

#include "core/breaker.h"
#include "config/config.h"
#include "spop/observe.h"

struct breakers {
	struct ev_loop *loop;
	struct breaker_table table;
	ev_timer timer;
	uint64_t armed_ms; /* the deadline the timer is set for, or BREAKER_NO_DEADLINE */
	struct observe_ctx observe; /* the breaker-observe handler's context */
	uint64_t transitions;
	/* Called after any transition (may be NULL): the enforcement layer
	 * converges HAProxy. */
	void (*on_transition)(void *ctx);
	void *on_transition_ctx;
};

/* Builds the table from c's limits and policies. False with err set. */
bool breakers_init(struct breakers *b, struct ev_loop *loop, const struct config *c, char *err,
		   size_t err_size);
void breakers_free(struct breakers *b);

/* Replaces every policy with c's, keeping every breaker's state. c must
 * have been checked (config_from_args() resolves every policy): on the rare
 * failure left (memory), false with err set and the policies are reset to
 * the defaults rather than left half-applied. */
bool breakers_reload(struct breakers *b, const struct config *c, char *err, size_t err_size);

/* For samples that do not come over SPOP (HAProxy's counters): logs a
 * transition with `reason`, tells on_transition, re-arms the timer. */
void breakers_recorded(struct breakers *b, struct breaker_table_entry *e,
		       const struct breaker_event *ev, const char *reason);

/* The monotonic clock every breaker runs on, in milliseconds. */
uint64_t breakers_now_ms(void);

#endif /* SPOA_BREAKERS_H */
