/*
 * peers_read.c - peers mode (verdicts.h): the other nodes' verdicts read
 * back from the shared stick table at every look, each one recorded by
 * its server's breaker and published; this node's own written again
 * (peers.c).
 */

#include "link/link_internal.h"
#include "records/verdicts.h"
#include "util/clock.h"

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
	enforcer_publish(e, e->breakers, entry, &ev, &cause);
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
			link_publish_verdict(link, entry, &link->entries[i], now, true);
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
