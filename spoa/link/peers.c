/*
 * peers.c - peers mode (verdicts.h): this node's verdicts written into the
 * shared stick table (peers_read.c reads the other nodes' back at every
 * look).
 */
#include <time.h>

#include "link/link_internal.h"
#include "records/verdicts.h"

/* Writes the breaker's verdict into the link's shared table: the state of
 * a breaker this node owns, or closed once for one it published before.
 * Runtime API mode only: an agent under enforce none must not make other nodes drain. */
void link_publish_verdict(struct haproxy_link *link, struct breaker_table_entry *entry,
			  struct enforce_entry *en, uint64_t now_ms, bool again)
{
	struct enforcer *e = link->owner;
	const struct breaker *b = &entry->breaker;
	char value[VERDICT_VALUE_MAX];

	if (!e->verdict_table[0] || !link->records[RECORD_VERDICTS].known)
		return;
	bool owns = breaker_owns_verdict(b, now_ms);
	if (!owns && !(en->verdict_published && b->state == BREAKER_CLOSED))
		return;
	enum verdict_state state = owns ? verdicts_state_of(b) : VERDICT_CLOSED;
	int64_t left = breaker_retry_after_s(b, now_ms);
	/* A date, on the wall clock: other nodes read it, and no monotonic
	 * clock is shared between machines. */
	uint64_t deadline = (uint64_t)time(NULL) + (uint64_t)(left > 0 ? left : 0);
	const struct link_record_why why = {
		state == VERDICT_CLOSED ? "verdict for the other nodes: closed"
					: "verdict for the other nodes: this node owns it",
		false, again ? LOG_LEVEL_DEBUG : LOG_LEVEL_NOTICE};
	if (link_record_send(link, RECORD_VERDICTS, entry->backend, entry->server, NULL,
			     verdicts_value(value, sizeof(value), state, deadline, e->node_id), &why))
		en->verdict_published = state != VERDICT_CLOSED;
}

/* A server HAProxy no longer has: an open verdict of this node on it,
 * written closed (peers do not replicate deletes). */
void link_record_forget_verdict(struct haproxy_link *link, struct breaker_table_entry *entry,
				struct enforce_entry *en)
{
	static const struct link_record_why why = {"HAProxy no longer has the server", false,
						   LOG_LEVEL_NOTICE};
	char value[VERDICT_VALUE_MAX];

	if (link->owner->mode == ENFORCE_RUNTIME_API && en->verdict_published &&
	    link->records[RECORD_VERDICTS].known)
		link_record_send(link, RECORD_VERDICTS, entry->backend, entry->server, NULL,
				 verdicts_value(value, sizeof(value), VERDICT_CLOSED,
						(uint64_t)time(NULL), link->owner->node_id),
				 &why);
}

void enforcer_publish_verdicts(struct enforcer *e, struct breaker_table_entry *entry,
			       uint64_t now_ms)
{
	uint32_t index = breaker_table_index(e->table, entry);
	for (unsigned i = 0; i < e->nb_links; i++)
		link_publish_verdict(&e->links[i], entry, &e->links[i].entries[index], now_ms, false);
}
