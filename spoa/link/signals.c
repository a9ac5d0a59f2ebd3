/*
 * signals.c - what HAProxy's counters tell the breakers at each look: the
 * faults SPOE never sees (faults.h), the successes steady-state mode does
 * not notify, and the stalled rule's look at requests sent and answered.
 */
#include <stdlib.h>
#include <string.h>

#include "breakers/counters.h"
#include "link/faults.h"
#include "link/link_internal.h"
#include "util/clock.h"

static uint64_t responses_of(const struct runtime_api_stat_row *row)
{
	return row->hrsp_1xx + row->hrsp_2xx + row->hrsp_3xx + row->hrsp_4xx + row->hrsp_5xx;
}

/* Whether this row's counters continue the previous look's: a look before,
 * the same process, no counter gone back. */
static bool stall_baseline(const struct haproxy_link *link, const struct enforce_entry *en,
			   const struct runtime_api_stat_row *row)
{
	return en->stalled.looked_ms != 0 && !link->look.restarted &&
	       responses_of(row) >= en->stalled.responses_counted &&
	       row->stot >= en->stalled.sent_counted &&
	       responses_of(row) - row->hrsp_1xx >= en->stalled.heads_counted;
}

/* Records what the counters say happened since the previous look. */
void link_record_faults(struct haproxy_link *link, struct breaker_table_entry *entry,
			struct enforce_entry *en, const struct runtime_api_stat_row *row)
{
	struct enforcer *e = link->owner;
	struct faults_counters counters;
	struct faults_delta d;

	faults_counters_from_stat(&counters, row);
	faults_delta(&en->faults, &counters, link->look.restarted, &d);
	/*
	 * Which of its capacity-looking retries the server may have sat on.
	 * No counter of HAProxy's tells a capacity status retried elsewhere
	 * from a response timeout retried elsewhere: both move wretr and
	 * wredis alone (the timeout's eresp is counted only when it is not
	 * retried). So only where the backend's retry-on retries timeouts at
	 * all (retried_timeouts) is any retry read as held; elsewhere - the
	 * shipped retry-on - a hung worker's timeout is an eresp, a failure,
	 * and every capacity retry is backpressure, however late the status
	 * came: a busy worker refusing after 0.4 s is busy, and reading its
	 * refusal as held re-opened its half-open breaker whenever a look
	 * fell between the probe's start and its 503.
	 * Where timeouts are retried: the requests it had in flight at the
	 * previous look, if it gave no head at all since. A request HAProxy
	 * gave up on at `timeout server` was in flight, unanswered, at the
	 * looks before, and a server that holds requests that long answers
	 * nothing. One that gave a head since is alive and answering: its
	 * retries are refusals, even with long completions in flight (an
	 * inference engine at its concurrency refuses at once while its batch
	 * runs on). Without a baseline none: read as capacity statuses.
	 */
	bool baseline = stall_baseline(link, en, row);
	uint64_t heads = baseline ? responses_of(row) - en->stalled.responses_counted : 0;
	bool may_hold = entry->breaker.policy->retried_timeouts && baseline && heads == 0;
	faults_split_held_retries(&d, may_hold ? en->stalled.scur : 0);
	e->stats.connect_errors += d.connect_errors;
	e->stats.response_errors += d.response_errors;
	e->stats.aborted_bodies += d.aborted_bodies;
	e->stats.redispatches += d.redispatches;
	e->stats.capacity_retries += d.capacity_retries;
	en->look_capacity_retries = d.capacity_retries; /* capacity_watch.c */
	uint64_t now = clock_now_ms();
	/*
	 * A held retry is no sign of life. Closed, it is left to the
	 * stalled rule, which counts the request as sent and unanswered: one
	 * held retry may be a long answer's neighbour, a fresh 503 retried
	 * while older requests run on. Half-open, HAProxy lets in only the
	 * probes: a probe it sat on until HAProxy retried it elsewhere failed
	 * - the hung worker whose probe times out must not be closed as
	 * "busy".
	 */
	/* Only a half-open that began by the previous look: this look's
	 * counts cover the interval since, and retries of requests held
	 * before the probe was let in (while open) are no verdict on it. */
	uint64_t held_failures = entry->breaker.state == BREAKER_HALF_OPEN &&
					 entry->breaker.state_since_ms <= en->stalled.looked_ms
				 ? d.held_retries
				 : 0;
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_COUNTERS, .faults = &d, .now_ms = now};
	if (d.total || held_failures) {
		struct breaker_event ev = breaker_record_poll(&entry->breaker, d.aborted_bodies,
							      d.failures + held_failures, now);
		enforcer_publish(e, e->breakers, entry, &ev, &cause);
	}
	/*
	 * A worker's capacity status that HAProxy retried elsewhere never
	 * reached SPOE: it is backpressure the counters alone tell of, and is
	 * recorded as one (a half-open probe answered 503 closes, as over
	 * SPOP). One sample per look, whatever the count: backpressure has no
	 * weight; but all of them count towards finding the worker wedged,
	 * whose 503s the retries keep from SPOP. After the failures: counters carry no order, and letting
	 * a failure of the same interval reopen a probe errs on the safe side.
	 */
	if (d.capacity_retries) {
		uint32_t count = d.capacity_retries > UINT32_MAX ? UINT32_MAX
								: (uint32_t)d.capacity_retries;
		struct breaker_event ev =
			breaker_table_record_capacity_retries(e->table, entry, count, now);
		cause.kind = BREAKER_CAUSE_CAPACITY_RETRY;
		enforcer_publish(e, e->breakers, entry, &ev, &cause);
	}
	/* For the stalled rule's row (link_look_in_flight, next): a capacity
	 * status is an answer, and its neighbours' too. */
	en->stalled.row.answered = d.capacity_retries > 0;
	en->stalled.row.answers = d.capacity_retries;
}

/*
 * A worker's Retry-After kept since it came (core/rest.c), judged by the
 * look: a success since the previous look means it answers, and the word
 * goes (its refusals are its capacity speaking: capacity.c lowers its
 * maxconn instead). None, and nothing in service there either - it holds
 * no request and still says no: it refuses everything, and the rest
 * starts, until the end the word asked for. None with requests in service
 * tells nothing (a batch of long answers runs on, and a look may fall
 * between two of them): the word waits for the next look, or its end.
 * HAProxy counts every answer, notified or not, so both SPOE modes are
 * judged alike.
 */
static void judge_rest_word(struct haproxy_link *link, struct breaker_table_entry *entry,
			    bool answered, uint32_t in_flight)
{
	struct breaker *b = &entry->breaker;
	/* A rest under way that the worker's answers contradict ends too
	 * (breaker_rest_answered()): in steady-state mode no success is
	 * notified, and only the look sees them. */
	if (breaker_is_resting(b) && answered) {
		struct breaker_event ev = {.from = b->state, .to = b->state};
		ev.rest = breaker_rest_answered(b);
		struct breaker_cause cause = {.kind = BREAKER_CAUSE_REST_WORD, .now_ms = clock_now_ms()};
		enforcer_publish(link->owner, link->owner->breakers, entry, &ev, &cause);
		return;
	}
	if (!breaker_rest_word_kept(b) || (!answered && in_flight > 0))
		return;
	uint64_t now = clock_now_ms();
	struct breaker_event ev = {.from = b->state, .to = b->state};
	ev.rest = answered ? breaker_rest_answered(b) : breaker_rest_confirm(b, now);
	if (ev.rest != BREAKER_REST_STARTED)
		return;
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_REST_WORD, .now_ms = now};
	enforcer_publish(link->owner, link->owner->breakers, entry, &ev, &cause);
}

/*
 * Steady-state mode: a clean server's successes are not notified, yet
 * wedged_after and stalled_after need to know that a backend's other
 * servers are serving. HAProxy's counters know: 1xx-3xx answers since the
 * previous look count as a success of the server at the look (a look's
 * delay, well under either rule's time). Stamped with the look's time,
 * not the row's: a neighbour's answers of the interval before a watch
 * began must not read as coming after it (breaker_is_stalled() wants
 * them strictly later); the metrics count them too. Only once a previous
 * look gave the baseline, and not across an HAProxy restart (its counters
 * start again).
 */
uint64_t link_note_counted_successes(struct haproxy_link *link, struct breaker_table_entry *entry,
				     struct enforce_entry *en, const struct runtime_api_stat_row *row)
{
	uint64_t counted = row->hrsp_1xx + row->hrsp_2xx + row->hrsp_3xx;
	bool baseline = en->seen_in_look != 0 && !link->look.restarted && counted >= en->successes_counted;
	uint64_t delta = baseline ? counted - en->successes_counted : 0;
	en->successes_counted = counted;
	if (delta > 0 && link->watched_map[0])
		breaker_table_note_outcome(link->owner->table, entry, BREAKER_OUTCOME_SUCCESS,
					   link->look.ms);
	/* And for the metrics, the successes SPOP was not told of. */
	counters_note_counted_successes(&entry->counters, delta, baseline && link->watched_map[0]);
	if (baseline) {
		en->rest.judged_look = link->look.id;
		en->rest.answered = delta > 0;
		en->rest.in_flight = en->seen.sessions;
	}
	return delta;
}

void link_judge_rest_word(struct haproxy_link *link, struct breaker_table_entry *entry,
			  struct enforce_entry *en)
{
	if (en->rest.judged_look != link->look.id)
		return;
	en->rest.judged_look = 0;
	judge_rest_word(link, entry, en->rest.answered, en->rest.in_flight);
}

/* The backend's rows are all read: each server is judged against the
 * others (stall_watch.c). Members whose entry was reused since their row
 * (a full table evicting) wrote no row of this look, and are skipped. */
static void stall_judge_group(struct haproxy_link *link, bool complete)
{
	struct enforcer *e = link->owner;
	uint64_t sent = 0, answers = 0, pending = 0;

	/* The same rows, for the capacity learnt (capacity_watch.c). */
	if (complete)
		link_capacity_group(link, link->stall_group.at, link->stall_group.nb);

	for (uint32_t i = 0; i < link->stall_group.nb; i++) {
		const struct enforce_entry *en = &link->entries[link->stall_group.at[i]];
		if (en->stalled.row_look != link->look.id)
			continue;
		pending += en->stalled.row.pending;
		if (en->stalled.row.baseline) {
			sent += en->stalled.row.sent;
			answers += en->stalled.row.answers;
		}
	}
	for (uint32_t i = 0; i < link->stall_group.nb; i++) {
		uint32_t index = link->stall_group.at[i];
		struct enforce_entry *en = &link->entries[index];
		struct breaker_table_entry *entry = breaker_table_at(e->table, index);
		if (en->stalled.row_look != link->look.id || !entry || !entry->in_use)
			continue;
		const struct enforce_stall_row *r = &en->stalled.row;
		/* A look that failed half-way knows only some neighbours: it
		 * counts nothing, and the next one starts again. */
		if (!complete)
			en->stalled.watch.from_ms = 0;
		struct stall_look look = {.baseline = r->baseline,
					  .answered = r->answered,
					  .sent = r->sent,
					  .nb_pending = pending - r->pending,
					  .now_ms = link->look.ms};
		if (r->baseline) {
			look.nb_sent = sent - r->sent;
			look.nb_answered = answers - r->answers;
		}
		/* The timed rule, as it always read the row: without a
		 * baseline it cannot tell, and says "answered". */
		struct breaker_event ev = breaker_table_look_in_flight(
			e->table, entry, &en->stalled.watch, r->in_flight, !r->baseline || r->answered,
			link->look.ms, complete ? &look : NULL);
		if (breaker_event_is_transition(&ev)) {
			struct breaker_cause cause = {.kind = BREAKER_CAUSE_IN_FLIGHT,
						      .in_flight = en->seen.sessions,
						      .stall = &en->stalled.watch,
						      .now_ms = clock_now_ms()};
			enforcer_publish(e, e->breakers, entry, &ev, &cause);
		}
	}
	link->stall_group.nb = 0;
}

void link_stall_rows_end(struct haproxy_link *link, bool complete)
{
	stall_judge_group(link, complete);
}

/*
 * The stalled rule's look at one row: what it says of requests sent to
 * the server and answered since the previous look, kept until the last
 * row of its backend. An answer is a response of any class in HAProxy's
 * counters (counted at the head, so a long stream answered early), one
 * over SPOP, or a capacity status HAProxy retried elsewhere. A 5xx is an
 * answer too: the worker is not hung, and the failure rules judge it.
 * HAProxy's own 504 at `timeout server` is not among the server's counts.
 *
 * The requests that may still get a head: in flight (scur), and not
 * already answered or ended without one - stot less its 2xx-5xx heads,
 * connections that failed (econ) and requests redispatched away (wredis).
 * Other ends without a head (a timeout, a client that left) are not
 * subtracted: the count errs high, which only ever holds the rule back,
 * and scur bounds it. 1xx are left out of the heads for the same reason:
 * an interim 100 is no answer.
 */
void link_look_in_flight(struct haproxy_link *link, struct breaker_table_entry *entry,
			 struct enforce_entry *en, const struct runtime_api_stat_row *row)
{
	struct enforcer *e = link->owner;
	uint32_t index = breaker_table_index(e->table, entry);
	uint64_t responses = responses_of(row);
	uint64_t heads = responses - row->hrsp_1xx;
	struct enforce_stall_row *r = &en->stalled.row;

	r->baseline = stall_baseline(link, en, row);
	if (r->baseline) {
		r->sent = row->stot - en->stalled.sent_counted;
		r->answers += heads - en->stalled.heads_counted;
		r->answered = r->answered || responses != en->stalled.responses_counted ||
			      e->last_spop_ms[index] >= en->stalled.looked_ms;
	} else {
		r->sent = 0;
		r->answers = 0;
		r->answered = false;
	}
	uint64_t ended = heads + row->econ + row->wredis;
	uint64_t open = row->stot > ended ? row->stot - ended : 0;
	r->pending = open < row->scur ? open : row->scur;
	r->in_flight = row->scur > 0;
	/* And for half-open's in-flight guard (enforce_plan.c). */
	en->seen.answered = r->baseline && r->answered;
	en->stalled.responses_counted = responses;
	en->stalled.heads_counted = heads;
	en->stalled.sent_counted = row->stot;
	en->stalled.scur = row->scur;
	en->stalled.looked_ms = link->look.ms;
	en->stalled.row_look = link->look.id;

	/* Rows of one backend come together: a row of another ends it. */
	if (link->stall_group.nb > 0) {
		const struct breaker_table_entry *first =
			breaker_table_at(e->table, link->stall_group.at[0]);
		if (!first || strcmp(first->backend, entry->backend) != 0)
			stall_judge_group(link, true);
	}
	if (!index_list_push(&link->stall_group, index)) {
		/* No room to judge this backend whole: judge what is there
		 * (which empties the list), and this server alone with none. */
		stall_judge_group(link, true);
		r->baseline = false;
		(void)index_list_push(&link->stall_group, index);
	}
}
