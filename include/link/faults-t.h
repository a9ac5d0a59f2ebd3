/*
 * faults-t.h - types of the faults SPOE never sees (see faults.h): one
 * server's counters, the previous look's baseline, and one look's delta.
 */
#ifndef SPOA_FAULTS_T_H
#define SPOA_FAULTS_T_H

#include <stdbool.h>
#include <stdint.h>

/* A per-poll delta larger than this, in any counter, is cut to it: far more
 * than one server can fail in a poll interval, far less than a garbage
 * counter could claim, and small enough to never overflow a sum. */
#define FAULTS_MAX_DELTA 1000000u

/* One server's cumulative counters, as `show stat` reports them. */
struct faults_counters {
	uint64_t econ;	   /* requests whose connection finally failed */
	uint64_t eresp;	   /* response errors, srv_abrt included */
	uint64_t srv_abrt; /* transfers the server aborted (bodies dying) */
	uint64_t wretr;	   /* retries (connection and L7) */
	uint64_t wredis;   /* requests redispatched away from this server */
	uint64_t cli_abrt; /* transfers the client aborted */
};

/* The previous poll of one (HAProxy, server). All-zero is "never seen":
 * zero-initialise it and it needs nothing else. The link zeroes it with
 * every breaker it creates (enforcer_on_created), so a server that left
 * HAProxy's configuration and came back is a first sight again. */
struct faults_baseline {
	struct faults_counters last;
	bool valid;
	/* wretr of the previous interval no wredis matched yet. HAProxy
	 * counts a retry (wretr) when it decides it and the redispatch
	 * (wredis) when it assigns the next server, a moment later, maybe
	 * on another thread: a look can fall between the two, and the
	 * redispatch then arrives alone in the next interval. Carried one
	 * interval only, so a retry that never redispatched (one server, no
	 * `option redispatch`) cannot hide a later failed connection. */
	uint64_t retries_unmatched;
};

/* How a delta was obtained. */
enum faults_basis {
	FAULTS_FIRST_SIGHT,	 /* no baseline yet: this poll sets it, counts nothing */
	FAULTS_DELTA,		 /* cur - last */
	FAULTS_RESTARTED,	 /* a new HAProxy process: cur, counted from zero */
	FAULTS_UNEXPLAINED_DROP, /* a counter went down with no restart reported:
				  * re-baselined, counts nothing */
};

/* What one poll found for one server. Kinds first, then what to record. */
struct faults_delta {
	enum faults_basis basis;
	uint64_t connect_errors;  /* econ: refused or timed out, after retries */
	uint64_t response_errors; /* eresp - srv_abrt: timeout, closed, invalid */
	uint64_t aborted_bodies;  /* srv_abrt: bodies that died after the head */
	uint64_t redispatches;	  /* wredis not matched by wretr: the connection
				   * failed here, the request went elsewhere */
	uint64_t capacity_retries; /* wredis matched by wretr: the worker's
				    * status (retry-on 503/429) was retried
				    * elsewhere; backpressure, never a failure */
	/* Of the capacity-looking retries, those the server may have held
	 * unanswered across a look before HAProxy retried them elsewhere
	 * (faults_split_held_retries): a response timeout looks so, a
	 * capacity status never does. Moved out of capacity_retries. */
	uint64_t held_retries;
	uint64_t retries;	  /* wretr: reported, never a failure */
	uint64_t client_aborts;	  /* cli_abrt: reported, never a failure */
	/* breaker_record_poll()'s failures: connect_errors + response_errors
	 * + redispatches. aborted_bodies are its other argument, never both. */
	uint64_t failures;
	uint64_t total; /* failures + aborted_bodies: for metrics and logs */
	bool capped;	/* some counter's delta was cut to FAULTS_MAX_DELTA */
};

#endif /* SPOA_FAULTS_T_H */
