/*
 * on_record.c - the link hears every breaker record, after the bus's
 * listeners (enforcer_publish(), enforcer.h): a transition acts at once.
 * And, as a subscriber of the table's growth (breakers/bus.h), its
 * per-index arrays follow the table.
 */
#include <stdlib.h>
#include <string.h>

#include "link/link_internal.h"

/* What the answer to the observation is told: held back on some HAProxy. */
static enum observe_drain drain_decision(const struct enforcer *e,
					 const struct breaker_table_entry *entry, uint32_t index)
{
	return entry->breaker.state == BREAKER_OPEN && e->ejection_capped[index]
		       ? OBSERVE_DRAIN_CAPPED
		       : OBSERVE_DRAIN_NOT_HELD;
}

/* What a record does to HAProxy's servers: a transition acts at once.
 * True when the response being answered made its server watched: its
 * ACK must wait for the entry. */
static bool act_on_record(struct enforcer *e, struct breaker_table_entry *entry, uint32_t index,
			  const struct breaker_event *ev, const struct breaker_cause *cause)
{
	bool ack_waits = false;

	if (cause->kind == BREAKER_CAUSE_RESPONSE)
		e->last_spop_ms[index] = cause->now_ms;
	bool operator = cause->kind == BREAKER_CAUSE_OPERATOR;
	/* A capacity status that reached its client: the learnt limit may
	 * have to come down before the next look (capacity.h). */
	if (cause->kind == BREAKER_CAUSE_RESPONSE && cause->outcome == BREAKER_OUTCOME_BACKPRESSURE &&
	    e->mode != ENFORCE_AGENT_CHECK)
		for (unsigned i = 0; i < e->nb_links; i++)
			if (link_capacity_refused(&e->links[i], entry))
				link_converge_entry(&e->links[i], entry);
	if (ev->dirty != BREAKER_DIRTY_UNCHANGED || operator) {
		bool added = false;
		for (unsigned i = 0; i < e->nb_links; i++)
			added |= link_sync_watched(&e->links[i], entry, &e->links[i].entries[index],
						   false);
		ack_waits = added && cause->kind == BREAKER_CAUSE_RESPONSE;
	}
	/* A rest that starts or ends moves the server as a transition does;
	 * one extended leaves it where it is. */
	bool moves = breaker_event_is_transition(ev) || ev->rest == BREAKER_REST_STARTED ||
		     ev->rest == BREAKER_REST_ENDED || operator;
	if (!moves || e->mode == ENFORCE_AGENT_CHECK)
		return ack_waits;
	/* Back from a trip: its learnt capacity starts again low and earns
	 * its way up (capacity.h), so a recovered worker is not handed a full
	 * share at once. */
	if (ev->to == BREAKER_CLOSED && ev->from != BREAKER_CLOSED)
		for (unsigned i = 0; i < e->nb_links; i++)
			capacity_slow_start(&e->links[i].entries[index].capacity,
					    entry->breaker.policy->half_open_probes);
	/* Before the drain: the other nodes learn of it at their next look
	 * (a rest is this node's own: each HAProxy sees the worker's header). */
	if (e->verdict_table[0] && cause->kind != BREAKER_CAUSE_PEER &&
	    breaker_event_is_transition(ev))
		enforcer_publish_verdicts(e, entry, cause->now_ms);
	for (unsigned i = 0; i < e->nb_links; i++) {
		link_stall_release_mark(&e->links[i], entry, &e->links[i].entries[index], ev);
		link_converge_entry(&e->links[i], entry);
	}
	return ack_waits;
}

/* The listeners first, in their order (the transition is logged before
 * the drain it causes), then the link: a transition acts at once; what it
 * decided for the breaker goes back to the caller, with the ticket its
 * ACK waits for. The ticket is taken after every command the record
 * queued (the drain after the `add map`), as the point covers them all.
 * A link being freed (a reload's previous one) acts on nothing. */
struct drain_answer enforcer_publish(struct enforcer *e, struct breakers *breakers,
				     struct breaker_table_entry *entry,
				     const struct breaker_event *ev,
				     const struct breaker_cause *cause)
{
	breakers_publish(breakers, entry, ev, cause);
	if (!e || e->freeing)
		return (struct drain_answer){.drain = OBSERVE_DRAIN_NOT_HELD, .ack_ticket = 0};
	uint32_t index = breaker_table_index(e->table, entry);
	bool ack_waits = act_on_record(e, entry, index, ev, cause);

	return (struct drain_answer){.drain = drain_decision(e, entry, index),
				     .ack_ticket = ack_waits ? link_ack_hold_point(e) : 0};
}

/* Grows one per-index array from `have` to `want` elements, zeroing the
 * new ones. */
static bool grow_array(void **array, size_t elem, uint32_t have, uint32_t want)
{
	void *grown = realloc(*array, (size_t)want * elem);
	if (!grown)
		return false;
	memset((char *)grown + (size_t)have * elem, 0, (size_t)(want - have) * elem);
	*array = grown;
	return true;
}

/* The table is about to grow to `allocated` entries: every per-index
 * array first. A failure refuses the growth (the new server gets no
 * breaker, as with a full table), so no index ever lacks its state. */
bool enforcer_on_reserve(void *ctx, uint32_t allocated)
{
	struct enforcer *e = ctx;
	uint32_t have = e->capacity;

	if (allocated <= have)
		return true;
	for (unsigned i = 0; i < e->nb_links; i++)
		if (!grow_array((void **)&e->links[i].entries, sizeof(*e->links[i].entries), have,
				allocated))
			return false;
	if (!grow_array((void **)&e->last_spop_ms, sizeof(*e->last_spop_ms), have, allocated) ||
	    !grow_array((void **)&e->slots, sizeof(*e->slots), have, allocated) ||
	    !grow_array((void **)&e->ejection_capped, sizeof(*e->ejection_capped), have,
			allocated) ||
	    !grow_array((void **)&e->maxconn_learnt, sizeof(*e->maxconn_learnt), have, allocated))
		return false;
	if (e->agent_check_mem &&
	    !grow_array((void **)&e->agent_check_mem, sizeof(*e->agent_check_mem), have, allocated))
		return false;
	e->capacity = allocated;
	return true;
}

void enforcer_on_created(void *ctx, uint32_t index)
{
	struct enforcer *e = ctx;

	for (unsigned i = 0; i < e->nb_links; i++)
		memset(&e->links[i].entries[index], 0, sizeof(e->links[i].entries[index]));
	e->last_spop_ms[index] = 0;
	e->ejection_capped[index] = false;
	e->maxconn_learnt[index] = 0;
	memset(&e->slots[index], 0, sizeof(e->slots[index]));
	if (e->agent_check_mem)
		memset(&e->agent_check_mem[index], 0, sizeof(e->agent_check_mem[index]));
}
