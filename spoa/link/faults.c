/*
 * faults.c - turns two polls of one server's `show stat` counters into the
 * failures SPOE could not see (see faults.h for what each case moves).
 *
 * Pure: the caller owns the baseline and the breaker; nothing here reads a
 * clock, a socket or a file.
 */
#include <string.h>

#include "hapi/runtime_api.h"
#include "link/faults.h"

void faults_counters_from_stat(struct faults_counters *out, const struct runtime_api_stat_row *row)
{
	out->econ = row->econ;
	out->eresp = row->eresp;
	out->srv_abrt = row->srv_abrt;
	out->wretr = row->wretr;
	out->wredis = row->wredis;
	out->cli_abrt = row->cli_abrt;
}

/* HAProxy's counters only grow within one process; a smaller value means
 * the row was reset. All its counters reset together, so one is enough. */
static bool any_below(const struct faults_counters *cur, const struct faults_counters *last)
{
	return cur->econ < last->econ || cur->eresp < last->eresp ||
	       cur->srv_abrt < last->srv_abrt || cur->wretr < last->wretr ||
	       cur->wredis < last->wredis || cur->cli_abrt < last->cli_abrt;
}

static uint64_t cut(uint64_t value, bool *capped)
{
	if (value <= FAULTS_MAX_DELTA)
		return value;
	*capped = true;
	return FAULTS_MAX_DELTA;
}

/*
 * The mapping, decided on the measurements in faults.h. A breaker counts
 * failed requests, as it does over SPOP; each request that failed in a way
 * SPOE cannot see must count once, on the server that failed it.
 *
 * - econ counts: one per request whose connection was refused or timed out,
 *   however many retries it took.
 * - wretr never counts. A request refused with `retries N` moves econ +1
 *   and wretr +N: counting both would make one refused request N+1
 *   failures and trip a breaker on a single request (HAProxy's default is
 *   retries 3). A retry that then succeeds ends in a response SPOE sees as
 *   a success. And L7 retries (`retry-on`) move wretr by 2 per retry on
 *   the same server and retry 503/429 too, which are backpressure, never
 *   faults (docs/design.md, "Busy is not dead").
 * - wredis counts, except the part matched by wretr. Under `option
 *   redispatch` a connection that failed (refused or timed out) moves the
 *   failed server's wredis +1 and nothing else - no econ, no wretr - and
 *   the request is served, and seen by SPOE, on another server: without
 *   wredis that server would never be charged. A worker's capacity status
 *   retried elsewhere (`retry-on 503`, shipped) moves wredis +1 *and*
 *   wretr +1 on that worker, and nothing else: no hrsp_5xx, and SPOE sees
 *   only the final response, from another worker (measured on 2.6, 3.0
 *   and 3.2, `option redispatch` with and without an interval). That is
 *   busy, not dead (docs/design.md, "Sets replace": retryable, no
 *   breaker sample), so each
 *   wredis matched by a wretr is a capacity retry, reported apart and
 *   never a failure; only the wredis left over are failed connections.
 *   The two counters of one retry can straddle a look (wretr when the
 *   retry is decided, wredis when the next server is assigned), so a
 *   wretr left unmatched may still match a wredis of the next interval,
 *   no later (faults_baseline.retries_unmatched).
 *   Under redispatch a failed connection never moves wretr, so nothing is
 *   hidden; retries without a redispatch (no `option redispatch`, one
 *   server) leave wredis at 0, and econ counts their failures. What this
 *   cannot tell apart: a retry-on *failure* condition (500, 502, 504,
 *   response-timeout) redispatched moves the same two counters, and would
 *   pass for a capacity retry. Time tells a response timeout apart: the
 *   request sat there unanswered across looks, where a capacity status
 *   comes back at once (faults_split_held_retries). A failure *status*
 *   retried is not told apart by any counter (measured on 2.6 and 3.4:
 *   a 500, 502 or 503 retried elsewhere moves wretr and wredis alike, and
 *   never reaches SPOE), which is why the shipped retry-on lists only
 *   conn-failure and the capacity statuses.
 * - eresp counts, split in two: srv_abrt is included in eresp (measured on
 *   every version: a body abort moves both by 1), so eresp - srv_abrt are
 *   the response errors no response reached SPOE for (server timeout,
 *   closed before headers, invalid response), and srv_abrt are bodies that
 *   died - after a head SPOE recorded as a success, which the breaker must
 *   then void (breaker_record_aborted_bodies). Should srv_abrt ever exceed
 *   eresp, the excess are aborts outside eresp: still failures, so the
 *   total is max(eresp, srv_abrt), never eresp + srv_abrt.
 *   srv_abrt also moves (with eresp) when a worker drops the connection
 *   while a request body is still uploading: no head reached SPOE then, but
 *   counters cannot tell the two apart, so it is treated as an aborted body
 *   too; at worst it voids a success that was genuine, which errs towards
 *   opening a breaker whose worker does drop requests.
 *   Known overcount: HAProxy 3.0 and 3.2 count eresp twice for a worker
 *   that closes before its headers (3.2 also for an invalid response), so
 *   such a worker trips after ceil(threshold / 2) requests there. Counters
 *   cannot tell one double-counted close from two timeouts; erring towards
 *   opening is the safe side for a worker that answers nothing.
 * - hrsp_5xx is not read: on a server row it counts only the worker's own
 *   5xx, already judged over SPOP (HAProxy's 502/503/504 count on the
 *   BACKEND row only). Reading it would count each 500 twice.
 * - cli_abrt never counts: the client left. Measured, a client abort moves
 *   only cli_abrt; eresp moves only if the worker then times out on its
 *   own, which is the worker's fault and is counted as such.
 *
 * Counters carry no order: a poll's failures are recorded after every
 * success SPOE reported during the interval, as if consecutive. That is an
 * upper bound on the real streak, which is why the poll interval should
 * stay short (well under a second): it bounds how many unrelated faults one
 * poll can stack up.
 */
static void map_counters(const struct faults_counters *d, uint64_t carried_wretr,
			 struct faults_delta *out, uint64_t *unmatched_wretr)
{
	out->connect_errors = d->econ;
	out->aborted_bodies = d->srv_abrt;
	out->response_errors = d->eresp > d->srv_abrt ? d->eresp - d->srv_abrt : 0;
	/* The retries a redispatch may match: this interval's, and the
	 * previous interval's left over (faults_baseline.retries_unmatched:
	 * the two counters of one capacity retry can straddle a look). */
	uint64_t matchable = d->wretr + carried_wretr;
	out->capacity_retries = d->wredis < matchable ? d->wredis : matchable;
	out->redispatches = d->wredis - out->capacity_retries;
	/* Left for the next interval: this interval's own retries only. */
	uint64_t left = matchable - out->capacity_retries;
	*unmatched_wretr = left < d->wretr ? left : d->wretr;
	out->retries = d->wretr;
	out->client_aborts = d->cli_abrt;
	out->failures = out->connect_errors + out->response_errors + out->redispatches;
	out->total = out->failures + out->aborted_bodies;
}

void faults_delta(struct faults_baseline *base, const struct faults_counters *cur, bool restarted,
		  struct faults_delta *out)
{
	struct faults_counters d;
	/* What the previous interval left to match; none across a new
	 * process or a baseline set anew. */
	uint64_t carried = base->retries_unmatched;

	memset(out, 0, sizeof(*out));
	base->retries_unmatched = 0;
	if (!base->valid) {
		/* The counters hold everything since HAProxy started, long
		 * before this agent (or this server's breaker) existed. */
		out->basis = FAULTS_FIRST_SIGHT;
		goto rebase;
	}
	if (restarted) {
		/* The process polled before is gone; the new one counted from
		 * zero, after the previous poll. Its counters are the delta,
		 * even those that happen to be above the old baseline. */
		out->basis = FAULTS_RESTARTED;
		d = *cur;
		carried = 0;
	} else if (any_below(cur, &base->last)) {
		/* A reset nobody told us about, or a garbage row: which part
		 * is new cannot be known, and guessing "all of cur" could
		 * charge a server its whole history. Losing one interval is
		 * the cheaper mistake. */
		out->basis = FAULTS_UNEXPLAINED_DROP;
		goto rebase;
	} else {
		out->basis = FAULTS_DELTA;
		d.econ = cur->econ - base->last.econ;
		d.eresp = cur->eresp - base->last.eresp;
		d.srv_abrt = cur->srv_abrt - base->last.srv_abrt;
		d.wretr = cur->wretr - base->last.wretr;
		d.wredis = cur->wredis - base->last.wredis;
		d.cli_abrt = cur->cli_abrt - base->last.cli_abrt;
	}
	d.econ = cut(d.econ, &out->capped);
	d.eresp = cut(d.eresp, &out->capped);
	d.srv_abrt = cut(d.srv_abrt, &out->capped);
	d.wretr = cut(d.wretr, &out->capped);
	d.wredis = cut(d.wredis, &out->capped);
	d.cli_abrt = cut(d.cli_abrt, &out->capped);
	map_counters(&d, carried, out, &base->retries_unmatched);
rebase:
	base->last = *cur;
	base->valid = true;
}

void faults_split_held_retries(struct faults_delta *d, uint64_t held)
{
	uint64_t moved = d->capacity_retries < held ? d->capacity_retries : held;
	d->capacity_retries -= moved;
	d->held_retries += moved;
}
