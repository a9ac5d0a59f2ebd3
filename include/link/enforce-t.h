/*
 * enforce-t.h - what the enforcement layer keeps per server and HAProxy:
 * what HAProxy last reported, and what the agent changed there.
 */
#ifndef SPOA_ENFORCE_T_H
#define SPOA_ENFORCE_T_H

#include <stdbool.h>
#include <stdint.h>

#include "link/faults.h"

/* HAProxy instances (one Runtime API socket each) one agent can drive. */
#define ENFORCE_MAX_HAPROXY 8

/* What HAProxy last reported about one server. */
struct enforce_seen {
	bool known;       /* HAProxy has this server */
	bool drained;     /* admin state has the forced-drain bit */
	bool maint;       /* admin state has a maintenance bit */
	uint32_t maxconn; /* current maxconn; 0 = unlimited */
};

/* What the agent has changed in HAProxy for one server. */
struct enforce_memory {
	bool drained_by_us;  /* our `state drain` is in place (or on its way) */
	bool maxconn_by_us;  /* our `set maxconn` is in place (or on its way) */
	bool own_maxconn_known;
	uint32_t own_maxconn; /* the server's maxconn before we changed it; 0 = unlimited */
};

/* Per server and HAProxy. */
struct enforce_entry {
	struct enforce_seen seen;
	struct enforce_memory mem;
	uint32_t seen_in_poll; /* the poll that last listed this server */
	struct faults_baseline faults; /* its counters at the previous poll */
};

#endif /* SPOA_ENFORCE_T_H */
