/*
 * peers.c - peers mode (verdicts.h): this node's verdicts written into the
 * shared stick table, and the other nodes' read back from it at every
 * look.
 */
#include <string.h>
#include <time.h>

#include "link/link_internal.h"
#include "records/verdicts.h"
#include "util/clock.h"
#include "util/log.h"

/* Writes the breaker's verdict into the link's shared table: the state of
 * a breaker this node owns, or closed once for one it published before.
 * Runtime API mode only: an agent under enforce none must not make other nodes drain. */
static void publish_verdict(struct haproxy_link *link, struct breaker_table_entry *entry,
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
		publish_verdict(&e->links[i], entry, &e->links[i].entries[index], now_ms, false);
}

/* One entry of the shared table: another node's verdict on one of our
 * servers. A server this node does not have gets nothing (no breaker is
 * made for it). */
static void on_verdict(void *ctx, const struct verdict *v)
{
	struct haproxy_link *link = ctx;
	struct enforcer *e = link->owner;
	uint64_t now = clock_now_ms();
	struct breaker_table_entry *entry = breaker_table_find(
		e->table, v->backend.ptr, v->backend.len, v->server.ptr, v->server.len);

	if (!entry)
		return;
	struct breaker_event ev;
	switch (verdicts_decide(v, &entry->breaker, e->node_id, now)) {
	case VERDICT_HOLD:
		ev = breaker_peer_hold(&entry->breaker, now + e->verdict_hold_ms, now);
		break;
	case VERDICT_RELEASE:
		ev = breaker_peer_release(&entry->breaker, now);
		break;
	case VERDICT_IGNORE:
	default:
		return;
	}
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_PEER, .node = v->node, .now_ms = now};
	breakers_publish(e->breakers, entry, &ev, &cause);
}

/* This node's verdicts again, at every look: what keeps them alive in the
 * other nodes (each expires entries on its own clock), and what puts
 * right a write peers lost or replaced (verdicts.h). */
static void reassert_verdicts(struct haproxy_link *link)
{
	struct enforcer *e = link->owner;
	uint64_t now = clock_now_ms();

	for (uint32_t i = 0; i < e->table->allocated; i++) {
		struct breaker_table_entry *entry = breaker_table_at(e->table, i);
		if (entry && entry->in_use && breaker_owns_verdict(&entry->breaker, now))
			publish_verdict(link, entry, &link->entries[i], now, true);
	}
}

void link_on_verdict_table(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	unsigned skipped = 0;

	if (result != RUNTIME_API_OK)
		return; /* the look fails as a whole in on_servers_state */
	/* Entries that are not verdicts are left alone (skipped). */
	bool parsed = verdicts_parse(reply, len, on_verdict, link, &skipped);
	link->wiring.verdict_table = parsed;
	if (link_record_read(link, RECORD_VERDICTS, parsed, skipped, reply, len))
		reassert_verdicts(link);
}
