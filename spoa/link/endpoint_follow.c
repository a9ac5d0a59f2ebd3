/*
 * endpoint_follow.c - a breaker follows its worker when HAProxy points its
 * server elsewhere (endpoints.h).
 */
#include "core/operator_hand.h"
#include "link/link_internal.h"
#include "util/clock.h"
#include "util/log.h"

/*
 * The breaker belongs to the worker its server points at (endpoints.h).
 * Once every HAProxy that lists the server points it at the same worker,
 * and that is not the breaker's, the breaker becomes that worker's: clean,
 * or what was remembered of it. While they disagree (one moved first) it
 * stays with its worker: some HAProxy still sends it traffic. Published
 * like a transition, so every HAProxy converges at once: a drain or a
 * maxconn set for the old worker is lifted for the new one.
 */
void link_follow_endpoint(struct haproxy_link *link, struct breaker_table_entry *entry)
{
	struct enforcer *e = link->owner;
	uint32_t index = breaker_table_index(e->table, entry);
	struct endpoint_slot *slot = &e->slots[index];
	const struct endpoint *agreed = NULL;

	slot->listed = true;
	for (unsigned i = 0; i < e->nb_links; i++) {
		const struct enforce_entry *other = &e->links[i].entries[index];
		if (!other->seen.known || !endpoint_known(&other->endpoint))
			continue;
		if (agreed && !endpoint_equal(agreed, &other->endpoint))
			return;
		agreed = &other->endpoint;
	}
	if (!agreed || endpoint_equal(&slot->breaker_at, agreed))
		return;
	struct endpoint from = slot->breaker_at;
	uint64_t now = clock_now_ms();
	slot->breaker_at = *agreed;
	/* The first look at it: its history is this worker's - unless it has
	 * none, and the worker left one in another server (a server added,
	 * or a DNS slot filled, with a worker that was failing). */
	if (!endpoint_known(&from) &&
	    (!breaker_is_forgettable(&entry->breaker) ||
	     !endpoint_recall_has(e->recall, entry->backend, agreed, now)))
		return;
	bool recalled;
	struct breaker operator_word = entry->breaker;
	struct breaker_event ev = endpoint_move(&entry->breaker, entry->backend, &from,
						&slot->breaker_at, e->recall, now, &recalled);
	/* A hold, a pause, a release are the server's, not the worker's. */
	breaker_keep_operator(&entry->breaker, &operator_word);
	/* Requests in flight there were the old worker's, and so was the
	 * capacity learnt. */
	for (unsigned i = 0; i < e->nb_links; i++) {
		e->links[i].entries[index].stalled.watch = (struct stall_watch){0};
		capacity_forget(&e->links[i].entries[index].capacity);
	}
	log_notice("breaker %s/%s: HAProxy points it at %s instead of %s: %s", entry->backend,
		   entry->server, slot->breaker_at.text, from.text,
		   recalled ? "that worker's breaker, remembered from another server"
			    : "a clean breaker");
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_ENDPOINT,
				      .endpoint = slot->breaker_at.text,
				      .recalled = recalled,
				      .now_ms = now};
	enforcer_publish(e, e->breakers, entry, &ev, &cause);
}
