/*
 * counters.c - the metrics counters subscriber (see counters.h).
 */
#include "breakers/counters.h"

static void count(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
		  const struct breaker_cause *cause)
{
	(void)ctx;
	/* Outcomes are SPOP observations only: counter faults have their own
	 * family (faults_polled_total), kept by the link. */
	if (cause->kind == BREAKER_CAUSE_RESPONSE)
		e->counters.outcomes[cause->outcome]++;
	if (breaker_event_is_transition(ev))
		e->counters.transitions[breaker_transition_slot(ev->from, ev->to)]++;
	if (ev->to == BREAKER_OPEN && ev->from != BREAKER_OPEN &&
	    e->counters.trips[ev->trip_rule] < UINT32_MAX)
		e->counters.trips[ev->trip_rule]++;
}

struct breaker_subscriber counters_subscriber(void)
{
	return (struct breaker_subscriber){.name = "metrics counters", .recorded = count};
}

void counters_note_counted_successes(struct breaker_counters *c, uint64_t delta, bool baseline)
{
	uint64_t notified = c->outcomes[BREAKER_OUTCOME_SUCCESS];
	if (!baseline) {
		c->successes_matched = notified;
		return;
	}
	uint64_t unmatched = notified - c->successes_matched;
	/* A success counted by HAProxy before its NOTIFY arrived is counted
	 * here once too many; the next delta lacks it while its NOTIFY waits
	 * in `unmatched`, and evens it out. */
	uint64_t matched = delta < unmatched ? delta : unmatched;
	c->successes_matched += matched;
	c->counted_successes += delta - matched;
}
