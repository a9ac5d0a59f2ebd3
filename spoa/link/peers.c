/*
 * peers.c - peers mode (verdicts.h): this node's verdicts written into the
 * shared stick table, and the other nodes' read back from it at every
 * look.
 */
#include <string.h>
#include <time.h>

#include "link/link_internal.h"
#include "link/verdicts.h"
#include "util/clock.h"
#include "util/log.h"

/* Writes the breaker's verdict into the link's shared table: the state of
 * a breaker this node owns, or closed once for one it published before.
 * Runtime API mode only: a shadow agent must not make other nodes drain. */
static void publish_verdict(struct haproxy_link *link, struct breaker_table_entry *entry,
			    struct enforce_entry *en, uint64_t now_ms, bool again)
{
	struct enforcer *e = link->owner;
	const struct breaker *b = &entry->breaker;
	char command[RUNTIME_API_CMD_MAX];

	if (!e->verdict_table[0] || !link->verdicts_known || link->verdicts_missing)
		return;
	bool owns = breaker_owns_verdict(b, now_ms);
	if (!owns && !(en->verdict_published && b->state == BREAKER_CLOSED))
		return;
	enum verdict_state state = owns ? verdicts_state_of(b) : VERDICT_CLOSED;
	int64_t left = breaker_retry_after_s(b, now_ms);
	uint64_t deadline = (uint64_t)time(NULL) + (uint64_t)(left > 0 ? left : 0);
	if (!verdicts_cmd_set(command, sizeof(command), e->verdict_table, entry->backend,
			      entry->server, state, deadline, e->node_id))
		return;
	uint64_t before = link->commands;
	link_queue_command_logged(link, command,
				  state == VERDICT_CLOSED
				      ? "verdict for the other nodes: closed"
				      : "verdict for the other nodes: this node owns it",
				  false, again ? LOG_LEVEL_DEBUG : LOG_LEVEL_NOTICE);
	if (link->commands != before)
		en->verdict_published = state != VERDICT_CLOSED;
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
	struct enforcer *e = link->owner;
	unsigned skipped = 0;

	if (result != RUNTIME_API_OK)
		return; /* the look fails as a whole in on_servers_state */
	if (!verdicts_parse(reply, len, on_verdict, link, &skipped)) {
		if (!link->verdicts_missing)
			log_warning("HAProxy %s has no stick table %s (%.*s): its verdicts are "
				    "neither shared nor read until it has; load "
				    "breaker-peers.cfg with a second -f (docs/haproxy.md)",
				    runtime_api_client_address(link->client), e->verdict_table,
				    (int)strcspn(reply, "\n"), reply);
		link->verdicts_missing = true;
		link->wiring.verdict_table = false;
		return;
	}
	if (link->verdicts_missing)
		log_notice("HAProxy %s has stick table %s: verdicts shared again",
			   runtime_api_client_address(link->client), e->verdict_table);
	link->verdicts_missing = false;
	link->verdicts_known = true;
	link->wiring.verdict_table = true;
	if (skipped > 0)
		log_debug("HAProxy %s: %u entries of %s are not verdicts, left alone",
			  runtime_api_client_address(link->client), skipped, e->verdict_table);
	reassert_verdicts(link);
}
