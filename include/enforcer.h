/*
 * enforcer.h - the enforcement layer on the event loop (enforce.c): the
 * Runtime API links to each HAProxy, reconciliation, the agent-check
 * listener. The decisions themselves come from enforce_plan() (enforce.h).
 */
#ifndef SPOA_ENFORCER_H
#define SPOA_ENFORCER_H

#include <ev.h>

#include "agent_check.h"
#include "config.h"
#include "enforce.h"

struct enforce_stats {
	uint64_t commands_ok;       /* accepted by HAProxy */
	uint64_t commands_refused;  /* answered with an error ("No such server.") */
	uint64_t commands_failed;   /* not delivered (HAProxy unreachable, queue full) */
	uint64_t shadow_commands;   /* planned but not sent (enforce = none) */
	uint64_t reconciliations;   /* complete looks at an HAProxy */
	uint64_t looks_failed;
	uint64_t haproxy_restarts;  /* new HAProxy processes seen */
	uint64_t dropped_breakers;  /* servers no HAProxy has any more */
};

struct enforcer;

/* Sets up c's enforcement over the breakers in table (borrowed). Opens the
 * agent-check listener if that is the mode; Runtime API sockets connect on
 * first use. NULL with err set on failure. */
struct enforcer *enforcer_new(struct ev_loop *loop, const struct config *c,
			      struct breaker_table *table, char *err, size_t err_size);
void enforcer_free(struct enforcer *e);

/* A breaker changed state: look at HAProxy and converge, now. NULL-safe. */
void enforcer_breaker_changed(struct enforcer *e);

const struct enforce_stats *enforcer_stats(const struct enforcer *e);

#endif /* SPOA_ENFORCER_H */
