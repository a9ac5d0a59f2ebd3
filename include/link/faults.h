/*
 * faults.h - faults SPOE never sees (DESIGN 5.3), from HAProxy's per-server
 * `show stat` counters: each poll's counters minus the previous poll's
 * become counts of failures for that server's breaker.
 *
 * Pure: no I/O, no clock, no allocation. The caller polls, keeps one
 * struct faults_baseline per (HAProxy, server), and feeds the result to the
 * breaker (breaker.h: breaker_record_aborted_bodies, then
 * breaker_record_failures, then breaker_counters_polled).
 *
 * What one request moves, per server row (measured on HAProxy 2.6.12,
 * 3.0.11 and 3.2.26, one request each; faults.c says what is counted):
 *
 *   worker 200 / 4xx                hrsp_2xx / hrsp_4xx          (nothing here)
 *   worker 500, worker 503          hrsp_5xx +1                  (seen over SPOP)
 *   server timeout (sH)             eresp +1
 *   closed before headers (SH)      eresp +1 (2.6), +2 (3.0, 3.2)
 *   invalid response (PH)           eresp +1 (2.6, 3.0), +2 (3.2)
 *   body aborted after 200 (SD)     eresp +1, srv_abrt +1        (SPOE saw the 200)
 *   refused, retries N              econ +1, wretr +N
 *   connect timeout, retries N      econ +1, wretr +N
 *   refused first server, option redispatch
 *                                   failed server: wredis +1 only; the
 *                                   server that answered: its own outcome
 *   client aborts                   cli_abrt only (eresp only if the worker
 *                                   then times out on its own)
 *   retry-on (L7 retries)           wretr +2 per retry, 503s included;
 *                                   with redispatch, wredis +1 on the worker
 *                                   whose 503 was retried elsewhere
 *
 * HAProxy-generated 502/503/504 count in hrsp_5xx of the BACKEND row only,
 * never the server's. All counters restart from zero in a new process
 * (reload, restart) and after `clear counters all`.
 */
#ifndef SPOA_FAULTS_H
#define SPOA_FAULTS_H

#include <stdbool.h>
#include <stdint.h>

struct runtime_api_stat_row;

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
 * zero-initialise it (or faults_baseline_reset) and it needs nothing else. */
struct faults_baseline {
	struct faults_counters last;
	bool valid;
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
	uint64_t redispatches;	  /* wredis: failed here, served elsewhere */
	uint64_t retries;	  /* wretr: reported, never a failure */
	uint64_t client_aborts;	  /* cli_abrt: reported, never a failure */
	/* To breaker_record_failures(): connect_errors + response_errors +
	 * redispatches. aborted_bodies go to breaker_record_aborted_bodies()
	 * instead, never both. */
	uint64_t failures;
	uint64_t total; /* failures + aborted_bodies: for metrics and logs */
	bool capped;	/* some counter's delta was cut to FAULTS_MAX_DELTA */
};

/* Copies the counters faults.c reads from a parsed `show stat` row. */
void faults_counters_from_stat(struct faults_counters *out, const struct runtime_api_stat_row *row);

/* Forgets a server (it left HAProxy's configuration): its next sighting is
 * a first sight. */
void faults_baseline_reset(struct faults_baseline *base);

/*
 * The faults of one server since the previous poll. `restarted` is true
 * when the HAProxy polled now is another process than at the previous poll
 * (show info: another Pid or Start_time_sec). Fills *out and moves *base
 * to cur. Never fails, never counts a negative or absurd delta:
 *   - no baseline: FIRST_SIGHT, nothing counted (those errors are older than
 *     anything the breaker has seen - also after a restart, when a new
 *     server's errors since the reload are lost: one poll interval at most);
 *   - restarted: RESTARTED, cur counts from zero;
 *   - a counter below its baseline without `restarted`: the row was reset
 *     (a reload not yet noticed, `clear counters all`) or is garbage;
 *     UNEXPLAINED_DROP, nothing counted, the baseline moves to cur;
 *   - otherwise DELTA, cur - last;
 * and every counter's delta is cut to FAULTS_MAX_DELTA (capped is set).
 */
void faults_delta(struct faults_baseline *base, const struct faults_counters *cur, bool restarted,
		  struct faults_delta *out);

/* "first_sight", "delta", "restarted", "unexplained_drop". */
const char *faults_basis_name(enum faults_basis basis);

#endif /* SPOA_FAULTS_H */
