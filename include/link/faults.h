/*
 * faults.h - faults SPOE never sees (docs/operating.md, "Faults SPOE never
 * sees"), from HAProxy's per-server
 * `show stat` counters: each poll's counters minus the previous poll's
 * become counts of failures for that server's breaker.
 *
 * Pure: no I/O, no clock, no allocation. The caller polls, keeps one
 * struct faults_baseline per (HAProxy, server), and feeds the result to the
 * breaker (breaker.h: breaker_record_poll, and breaker_confirm_successes
 * once a look is complete).
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
 *   refused or connect timeout, option redispatch (any interval)
 *                                   failed server: wredis +1 only; the
 *                                   server that answered: its own outcome
 *   client aborts                   cli_abrt only (eresp only if the worker
 *                                   then times out on its own)
 *   retry-on (L7 retries)           wretr +2 per retry, 503s included
 *   retry-on 503 (429 on 3.x) + option redispatch, a worker's 503 retried
 *   and served elsewhere            that worker: wretr +1, wredis +1, and
 *                                   nothing else (no hrsp_5xx, no eresp);
 *                                   SPOE sees only the final response
 *   every worker 503, retries 2     each worker it was redispatched away
 *                                   from: wretr +1, wredis +1; the last
 *                                   one: hrsp_5xx +1 and SPOE sees its 503
 *
 * HAProxy-generated 502/503/504 count in hrsp_5xx of the BACKEND row only,
 * never the server's. All counters restart from zero in a new process
 * (reload, restart) and after `clear counters all`.
 */
#ifndef SPOA_FAULTS_H
#define SPOA_FAULTS_H

#include "link/faults-t.h"

struct runtime_api_stat_row;

/* Copies the counters faults.c reads from a parsed `show stat` row. */
void faults_counters_from_stat(struct faults_counters *out, const struct runtime_api_stat_row *row);

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

/*
 * Splits d's capacity-looking retries (wredis with wretr) by what the
 * server did with the requests: `held` is how many requests it had in
 * flight at the previous look with no answer since (scur then, less the
 * heads it gave meanwhile). A capacity status comes back at once, so a
 * retry beyond those was of a request sent since, refused at once:
 * backpressure. Up to `held` of them may be requests it sat on until
 * HAProxy gave up on them (retry-on response-timeout): they move to
 * held_retries, and are no sign of life. The split errs on the side of
 * "held" only when the server had requests waiting anyway.
 */
void faults_split_held_retries(struct faults_delta *d, uint64_t held);

#endif /* SPOA_FAULTS_H */
