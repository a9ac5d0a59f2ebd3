/*
 * enforcer.h - the enforcement layer on the event loop (enforce.c): the
 * Runtime API links to each HAProxy, reconciliation, the agent-check
 * listener. The decisions themselves come from enforce_plan() (enforce.h).
 */
#ifndef SPOA_ENFORCER_H
#define SPOA_ENFORCER_H

#include <ev.h>

#include "link/agent_check.h"
#include "daemon/breakers.h"
#include "config/config.h"
#include "link/enforce_plan.h"

struct enforce_stats {
	uint64_t commands_ok;       /* accepted by HAProxy */
	uint64_t commands_refused;  /* answered with an error ("No such server.") */
	uint64_t commands_failed;   /* not delivered (HAProxy unreachable, queue full) */
	uint64_t shadow_commands;   /* planned but not sent (enforce = none) */
	uint64_t reconciliations;   /* complete looks at an HAProxy */
	uint64_t looks_failed;
	uint64_t haproxy_restarts;  /* new HAProxy processes seen */
	uint64_t dropped_breakers;  /* servers no HAProxy has any more */
	/* Faults SPOE never sees, from show stat deltas, by kind. */
	uint64_t connect_errors;
	uint64_t response_errors;
	uint64_t aborted_bodies;
	uint64_t redispatches;
};

struct enforcer;
struct runtime_api_client;

/* Sets up c's enforcement over the breakers (borrowed). Opens the
 * agent-check listener if that is the mode; Runtime API sockets connect on
 * first use. Every look at HAProxy also feeds the breakers the faults SPOE
 * never sees (faults.h), in every mode. NULL with err set on failure. */
struct enforcer *enforcer_new(struct ev_loop *loop, const struct config *c,
			      struct breakers *breakers, char *err, size_t err_size);
void enforcer_free(struct enforcer *e);

/* A breaker changed state: look at HAProxy and converge, now. NULL-safe. */
void enforcer_breaker_changed(struct enforcer *e);

const struct enforce_stats *enforcer_stats(const struct enforcer *e);
enum enforce_mode enforcer_mode(const struct enforcer *e);
/* The Runtime API clients, one per HAProxy (i < enforcer_runtime_api_count()),
 * for the metrics endpoint to read. */
unsigned enforcer_runtime_api_count(const struct enforcer *e);
const struct runtime_api_client *enforcer_runtime_api(const struct enforcer *e, unsigned i);

#endif /* SPOA_ENFORCER_H */
