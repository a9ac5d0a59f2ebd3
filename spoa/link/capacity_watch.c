/*
 * capacity_watch.c - the link's look at each server's capacity: its
 * worker's refusals since the previous look, its requests in flight, and
 * the limit capacity.c learns from them (docs/capacity.md). The limit
 * reaches HAProxy with the server's next convergence (converge.c), which
 * follows every look.
 */
#include "link/link_internal.h"

/* Learnt only while the breaker alone decides what the server holds, and
 * it holds requests: closed, not resting, no operator's hand on it. */
static bool learns(const struct breaker *b)
{
	return b->state == BREAKER_CLOSED && !breaker_is_resting(b) && link_capacity_applies(b);
}

bool link_capacity_applies(const struct breaker *b)
{
	return !b->policy->pin_maxconn && b->hold == BREAKER_HOLD_NONE && !b->observe_only &&
	       !b->policy->observe_only;
}

/* Limits are learnt only once the link knows what the agent itself set
 * before: its ownership record read, or known to be absent. An agent
 * started again without its snapshot otherwise takes, at its first look,
 * the limit it had set for the server's own, and writes that into the
 * record over the true one: given back later, it would stay for good. */
static bool knows_own_limits(const struct haproxy_link *link)
{
	return link->records[RECORD_OWNER].known ||
	       (link->wiring.maps_known && !link->records[RECORD_OWNER].where[0]);
}

/* The operator's maxconn, as the agent found it before changing it. */
static uint32_t ceiling_of(const struct enforce_entry *en)
{
	return en->mem.own_maxconn_known ? en->mem.own_maxconn
	       : en->mem.maxconn_by_us   ? 0
					 : en->seen.maxconn;
}

bool link_capacity_refused(struct haproxy_link *link, struct breaker_table_entry *entry)
{
	const struct breaker *b = &entry->breaker;
	if (!learns(b) || !knows_own_limits(link))
		return false;
	struct enforce_entry *en = &link->entries[breaker_table_index(link->owner->table, entry)];
	return capacity_on_refusal(&en->capacity, en->seen.sessions, ceiling_of(en)) !=
	       CAPACITY_UNCHANGED;
}

void link_look_capacity(struct haproxy_link *link, struct breaker_table_entry *entry,
			struct enforce_entry *en, uint64_t answers_since)
{
	const struct breaker *b = &entry->breaker;
	struct capacity *c = &en->capacity;
	/* The capacity statuses SPOP was told of since the previous look (one
	 * per request that reached a client with one), beside those HAProxy
	 * retried elsewhere, which only its counters tell. */
	uint64_t told = entry->counters.outcomes[BREAKER_OUTCOME_BACKPRESSURE];
	uint64_t told_since = c->counted && told >= c->refusals_counted ? told - c->refusals_counted
									  : 0;
	c->refusals_counted = told;
	c->counted = true;
	if (b->policy->pin_maxconn) {
		capacity_forget(c); /* pinned by the operator: the server's own maxconn */
		return;
	}
	if (!learns(b) || !knows_own_limits(link))
		return;
	struct capacity_look look = {.refusals = told_since + en->look_capacity_retries,
				     .sessions = en->seen.sessions,
				     .ceiling = ceiling_of(en),
				     /* by HAProxy's count: both SPOE modes alike */
				     .answers = answers_since};
	uint32_t was = c->limit;
	enum capacity_change change = capacity_on_look(c, &look);
	if (change != CAPACITY_UNCHANGED)
		log_debug("HAProxy %s: %s/%s capacity %s to %u (was %u%s; %llu refused, %u in "
			  "flight)",
			  runtime_api_client_address(link->client), entry->backend, entry->server,
			  capacity_change_name(change), c->limit, was, was ? "" : ": none",
			  (unsigned long long)look.refusals, look.sessions);
}

void link_capacity_group(struct haproxy_link *link, const uint32_t *members, uint32_t nb)
{
	struct breaker_table *t = link->owner->table;
	uint32_t largest = 0;
	if (!knows_own_limits(link))
		return;
	for (uint32_t i = 0; i < nb; i++) {
		const struct breaker_table_entry *entry = breaker_table_at(t, members[i]);
		const struct capacity *c = &link->entries[members[i]].capacity;
		/* A limit at the floor (a worker refusing even one request at
		 * a time), or one under which the worker answered nothing (it
		 * refuses everything), says nothing of what its neighbours can
		 * take: starting them there would make HAProxy queue, and its
		 * queue sends the retries of the refusals back to it. */
		if (entry && entry->in_use && learns(&entry->breaker) &&
		    capacity_speaks_for_neighbours(c) && c->limit > largest)
			largest = c->limit;
	}
	if (largest == 0)
		return; /* no limit in the backend that speaks for others: nothing to join */
	for (uint32_t i = 0; i < nb; i++) {
		struct breaker_table_entry *entry = breaker_table_at(t, members[i]);
		struct enforce_entry *en = &link->entries[members[i]];
		if (!entry || !entry->in_use || !learns(&entry->breaker) || en->capacity.limit != 0)
			continue;
		capacity_join(&en->capacity, largest);
		log_debug("HAProxy %s: %s/%s capacity starts at %u, its neighbours' largest: an "
			  "unlimited server takes nothing from HAProxy's queue",
			  runtime_api_client_address(link->client), entry->backend, entry->server,
			  en->capacity.limit);
	}
}
