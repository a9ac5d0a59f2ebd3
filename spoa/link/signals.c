/*
 * signals.c - what HAProxy's counters tell the breakers at each look: the
 * faults SPOE never sees (faults.h), the successes steady-state mode does
 * not notify, and the stalled rule's look at requests in flight.
 */
#include "admin/counters.h"
#include "link/faults.h"
#include "link/link_internal.h"
#include "util/clock.h"

/* Records what the counters say happened since the previous look. */
void link_record_faults(struct haproxy_link *link, struct breaker_table_entry *entry,
			struct enforce_entry *en, const struct runtime_api_stat_row *row)
{
	struct enforcer *e = link->owner;
	struct faults_counters counters;
	struct faults_delta d;

	faults_counters_from_stat(&counters, row);
	faults_delta(&en->faults, &counters, link->restarted, &d);
	e->stats.connect_errors += d.connect_errors;
	e->stats.response_errors += d.response_errors;
	e->stats.aborted_bodies += d.aborted_bodies;
	e->stats.redispatches += d.redispatches;
	e->stats.capacity_retries += d.capacity_retries;
	uint64_t now = clock_now_ms();
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_COUNTERS, .faults = &d, .now_ms = now};
	if (d.total) {
		struct breaker_event ev =
			breaker_record_poll(&entry->breaker, d.aborted_bodies, d.failures, now);
		breakers_publish(e->breakers, entry, &ev, &cause);
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
		breakers_publish(e->breakers, entry, &ev, &cause);
	}
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
void link_note_counted_successes(struct haproxy_link *link, struct breaker_table_entry *entry,
				 struct enforce_entry *en, const struct runtime_api_stat_row *row)
{
	uint64_t counted = row->hrsp_1xx + row->hrsp_2xx + row->hrsp_3xx;
	bool baseline = en->seen_in_look != 0 && !link->restarted && counted >= en->successes_counted;
	uint64_t delta = baseline ? counted - en->successes_counted : 0;
	en->successes_counted = counted;
	if (delta > 0 && link->watched_map[0])
		breaker_table_note_outcome(link->owner->table, entry, BREAKER_OUTCOME_SUCCESS,
					   link->look_ms);
	/* And for the metrics, the successes SPOP was not told of. */
	counters_note_counted_successes(&entry->counters, delta, baseline && link->watched_map[0]);
}

/*
 * The stalled rule's look (stall_watch.c): requests in flight there, and
 * whether the server answered anything since the previous look - a
 * response of any class in HAProxy's counters (counted at the head, so a
 * long stream answered early), or a response over SPOP. A 5xx is an
 * answer too: the worker is not hung, and the failure rules judge it.
 * HAProxy's own 504 at `timeout server` is not among the server's counts.
 * Without a baseline (the first look, a restarted HAProxy) it cannot tell,
 * and says "answered": the watch then starts a look later, never sooner.
 */
void link_look_in_flight(struct haproxy_link *link, struct breaker_table_entry *entry,
			 struct enforce_entry *en, const struct runtime_api_stat_row *row)
{
	struct enforcer *e = link->owner;
	uint64_t responses =
		row->hrsp_1xx + row->hrsp_2xx + row->hrsp_3xx + row->hrsp_4xx + row->hrsp_5xx;
	bool baseline = en->stall_looked_ms != 0 && !link->restarted &&
			responses >= en->responses_counted;
	bool answered = !baseline || responses != en->responses_counted ||
			e->last_spop_ms[breaker_table_index(e->table, entry)] >= en->stall_looked_ms;
	en->responses_counted = responses;
	en->stall_looked_ms = link->look_ms;
	struct breaker_event ev = breaker_table_look_in_flight(e->table, entry, &en->stall,
							       row->scur > 0, answered, link->look_ms);
	if (breaker_event_is_transition(&ev)) {
		struct breaker_cause cause = {
			.kind = BREAKER_CAUSE_IN_FLIGHT, .in_flight = row->scur, .now_ms = clock_now_ms()};
		breakers_publish(e->breakers, entry, &ev, &cause);
	}
}
