/*
 * ejection_cap.c - the ejection cap as it runs (ejection.h), on the
 * backends' counts (backend_counts.c): whether a drain an open breaker or
 * a resting worker wants is held back, which wait for room and in what
 * order, and a drain to give back when the backend lost capacity since.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "link/link_internal.h"
#include "util/clock.h"
#include "util/log.h"

/* The breaker wants its server out of full rotation: open, its worker
 * resting (enforce_wanted_state()), or half-open. A half-open server is
 * limited to its probes and drained while they are out (enforce_plan.c):
 * for a backend whose other servers are gone that is a drain like any
 * other, so it waits for room too - without it, the last serving server
 * went to maxconn 1 and then to a drain the moment its breaker turned
 * half-open with requests in flight, and HAProxy answered every request
 * with its own 503. */
static bool wants_out(const struct breaker *b)
{
	return enforce_wanted_state(b) != BREAKER_CLOSED;
}

static bool only_half_open(const struct breaker *b)
{
	return enforce_wanted_state(b) == BREAKER_HALF_OPEN;
}

/* The agent already took the server out, or limited it to its probes:
 * the room was found then. */
static bool already_taken(const struct breaker *b, const struct enforce_entry *en)
{
	return en->mem.drained_by_us || (only_half_open(b) && en->mem.maxconn_by_us);
}

/* Only a worker's rest, the breaker itself not open. */
static bool only_resting(const struct breaker *b)
{
	return b->state != BREAKER_OPEN && breaker_is_resting(b);
}

/* Since when it wants out: the trip or the switch to half-open, or the
 * rest's start. */
static uint64_t wants_out_since(const struct breaker *b)
{
	return b->state != BREAKER_CLOSED ? b->state_since_ms : breaker_rest_since_ms(b);
}

/* Entry `index` still waits for room on this link. */
static bool still_capped(struct haproxy_link *link, uint32_t index)
{
	struct breaker_table *t = link->owner->table;
	if (index >= t->allocated)
		return false;
	const struct breaker_table_entry *entry = breaker_table_at(t, index);
	return entry->in_use && wants_out(&entry->breaker) && link->entries[index].ejection_capped;
}

/* Waited longer: wanted out earlier (opened, or began to rest), the
 * lower index on a tie (a strict order). */
static bool waited_longer(struct breaker_table *t, uint32_t a, uint32_t b)
{
	uint64_t since_a = wants_out_since(&breaker_table_at(t, a)->breaker);
	uint64_t since_b = wants_out_since(&breaker_table_at(t, b)->breaker);
	return since_a < since_b || (since_a == since_b && a < b);
}

/* Servers of the same backend waiting for room before `index`; drops
 * stale indices from the list on the way. */
static uint32_t count_waiting_before(struct haproxy_link *link, uint32_t index, uint64_t be_id)
{
	uint32_t before = 0, kept = 0;
	for (uint32_t i = 0; i < link->capped.nb; i++) {
		uint32_t other = link->capped.at[i];
		if (!still_capped(link, other))
			continue;
		link->capped.at[kept++] = other;
		if (other != index && link->entries[other].be_id == be_id &&
		    waited_longer(link->owner->table, other, index))
			before++;
	}
	link->capped.nb = kept;
	return before;
}

static void refresh_entry_capped(struct enforcer *e, struct breaker_table_entry *entry)
{
	uint32_t index = breaker_table_index(e->table, entry);
	bool capped = false;
	for (unsigned i = 0; i < e->nb_links; i++)
		capped |= e->links[i].entries[index].ejection_capped;
	e->ejection_capped[index] = capped;
}

/* Marks an open breaker's drain as held back here (logged once). */
static void hold_back(struct haproxy_link *link, struct breaker_table_entry *entry,
		      struct enforce_entry *en, const struct ejection_backend *g)
{
	struct enforcer *e = link->owner;
	if (en->ejection_capped)
		return;
	uint32_t index = breaker_table_index(e->table, entry);
	if (!index_list_push(&link->capped, index)) {
		log_error("out of memory holding back the drain of %s/%s", entry->backend,
			  entry->server);
		return; /* not capped: drained as before the cap existed */
	}
	en->ejection_capped = true;
	link_count_move(link, en, offsetof(struct ejection_backend, capped), true);
	e->stats.ejections_held_back++;
	refresh_entry_capped(e, entry);
	const struct breaker_policy *p = entry->breaker.policy;
	if (only_half_open(&entry->breaker)) {
		if (g)
			log_notice("breaker %s/%s is half-open, kept in full rotation on HAProxy %s: "
				   "ejection cap of backend %s (%u of %u servers out of rotation, at "
				   "most %u%%%s)",
				   entry->backend, entry->server,
				   runtime_api_client_address(link->client), entry->backend,
				   g->count.out, g->count.listed, p->max_ejection_percent,
				   p->drain_last_server ? "" : ", never the last serving one");
		else
			log_notice("breaker %s/%s is half-open, kept in full rotation on HAProxy %s "
				   "until a look counts backend %s for its ejection cap",
				   entry->backend, entry->server,
				   runtime_api_client_address(link->client), entry->backend);
		return;
	}
	if (only_resting(&entry->breaker)) {
		if (g)
			log_notice("worker %s/%s asked to rest (Retry-After), not drained on HAProxy "
				   "%s: ejection cap of backend %s (%u of %u servers out of rotation, "
				   "at most %u%%, never the last serving one)",
				   entry->backend, entry->server,
				   runtime_api_client_address(link->client), entry->backend,
				   g->count.out, g->count.listed, p->max_ejection_percent);
		else
			log_notice("worker %s/%s asked to rest (Retry-After), not drained on HAProxy "
				   "%s until a look counts backend %s for its ejection cap",
				   entry->backend, entry->server,
				   runtime_api_client_address(link->client), entry->backend);
		return;
	}
	if (g)
		log_notice("breaker %s/%s is open, not drained on HAProxy %s: ejection cap of "
			   "backend %s (%u of %u servers out of rotation, at most %u%%%s)",
			   entry->backend, entry->server, runtime_api_client_address(link->client),
			   entry->backend, g->count.out, g->count.listed, p->max_ejection_percent,
			   p->drain_last_server ? "" : ", never the last serving one");
	else
		log_notice("breaker %s/%s is open, not drained on HAProxy %s until a look counts "
			   "backend %s for its ejection cap",
			   entry->backend, entry->server, runtime_api_client_address(link->client),
			   entry->backend);
}

/* The drain is no longer held back: released (about to be drained), or
 * the breaker left open. */
static void stop_holding_back(struct haproxy_link *link, struct breaker_table_entry *entry,
			      struct enforce_entry *en)
{
	struct enforcer *e = link->owner;
	if (!en->ejection_capped) {
		/* Held back on another HAProxy: that one lifts it. */
		if (e->ejection_capped[breaker_table_index(e->table, entry)])
			refresh_entry_capped(e, entry);
		return;
	}
	en->ejection_capped = false;
	link_count_move(link, en, offsetof(struct ejection_backend, capped), false);
	refresh_entry_capped(e, entry);
	if (wants_out(&entry->breaker)) {
		e->stats.ejections_released++;
		log_notice("%s %s/%s: room under the ejection cap of backend %s, %s on "
			   "HAProxy %s after waiting %llu ms",
			   only_resting(&entry->breaker) ? "resting worker" : "breaker",
			   entry->backend, entry->server, entry->backend,
			   only_half_open(&entry->breaker) ? "limited to its probes" : "drained",
			   runtime_api_client_address(link->client),
			   (unsigned long long)(clock_now_ms() - wants_out_since(&entry->breaker)));
	}
}

/* Whether the cap holds back the drain an open breaker, or a resting
 * worker, wants here. */
bool link_cap_holds_back(struct haproxy_link *link, struct breaker_table_entry *entry,
			 struct enforce_entry *en)
{
	if (!wants_out(&entry->breaker) || already_taken(&entry->breaker, en)) {
		/* Not wanting a drain, or one in place: a drain is never lifted
		 * for the cap (traffic would go back to a server known to fail,
		 * and two open breakers could take turns); the cool-down, or
		 * the rest's end, ends it. */
		stop_holding_back(link, entry, en);
		return false;
	}
	if (!en->seen.known || en->seen.maint || en->seen.drained || en->seen.down) {
		/* The plan leaves it alone, or it serves nothing anyway: a drain
		 * costs the backend no capacity. */
		stop_holding_back(link, entry, en);
		return false;
	}
	if (entry->breaker.hold == BREAKER_HOLD_OUT && entry->breaker.hold_forced) {
		/* The operator said out, past the cap, on purpose (hold out
		 * ... force): the one drain the cap does not judge. */
		stop_holding_back(link, entry, en);
		return false;
	}
	struct ejection_backend *g = link_group_of(link, en);
	/* A half-open server is judged as a drain: its breaker's. */
	bool (*may)(const struct breaker_policy *, const struct ejection_count *, uint32_t) =
		only_resting(&entry->breaker) ? ejection_may_rest : ejection_may_drain;
	if (g && may(entry->breaker.policy, &g->count,
		     count_waiting_before(link, breaker_table_index(link->owner->table, entry),
					  en->be_id))) {
		stop_holding_back(link, entry, en);
		return false;
	}
	hold_back(link, entry, en, g);
	return true;
}

/*
 * Whether a drain of the agent's in place is more than the cap allows now.
 * The cap was judged when the drain was taken; the backend may have lost
 * capacity since (a neighbour down by its health check, put in
 * maintenance, its slot emptied), and the agent would then hold out the
 * last servers that could serve until its cool-down ended. Drains beyond
 * what the cap allows now are given back, one server at a time in the
 * order the look converges them, each counted as it goes, so that exactly
 * the excess is lifted; each waits for room again like any held-back
 * drain. A half-open server limited to its probes still serves: left as
 * it is. The operator's forced hold is the one drain the cap never judges.
 */
bool link_cap_lifts(struct haproxy_link *link, struct breaker_table_entry *entry,
		    struct enforce_entry *en)
{
	const struct breaker *b = &entry->breaker;
	/* Down by its health checks, it serves nothing drained or not: its
	 * drain costs the backend nothing (and would be taken again at once,
	 * as link_cap_holds_back() lets it). */
	if (!en->mem.drained_by_us || !en->seen.known || en->seen.maint || !en->seen.drained ||
	    en->seen.down || !wants_out(b) || (b->hold == BREAKER_HOLD_OUT && b->hold_forced))
		return false;
	const struct ejection_backend *g = link_group_of(link, en);
	if (!g)
		return false;
	/* What the backend has without the agent's drains. */
	struct ejection_count without = {
		.listed = g->count.listed,
		.out = g->count.out > g->drained_by_agent ? g->count.out - g->drained_by_agent : 0,
	};
	uint32_t allowed = only_resting(b) ? ejection_rest_room(b->policy, &without)
					   : ejection_room(b->policy, &without);
	if (g->drained_by_agent <= allowed)
		return false;
	log_notice("%s %s/%s: drain lifted on HAProxy %s, backend %s lost capacity since it was "
		   "taken (%u of %u servers out of rotation, %u of them the agent's, at most "
		   "%u%%%s): it waits for room again",
		   only_resting(b) ? "resting worker" : "breaker", entry->backend, entry->server,
		   runtime_api_client_address(link->client), entry->backend, g->count.out,
		   g->count.listed, g->drained_by_agent, b->policy->max_ejection_percent,
		   b->policy->drain_last_server && !only_resting(b) ? ""
								    : ", never the last serving one");
	return true;
}

/* Whether the half-open in-flight guard may drain the server now (its
 * probes are out): a drain in place stays; a new one needs room under the
 * cap, like an open breaker's, behind those that waited longer. Without
 * room the server stays at its probes' maxconn, serving. */
bool link_cap_room_for_guard(struct haproxy_link *link, struct breaker_table_entry *entry,
			     struct enforce_entry *en)
{
	if (en->seen.drained)
		return true;
	struct ejection_backend *g = link_group_of(link, en);
	return g && ejection_may_drain(entry->breaker.policy, &g->count,
				       count_waiting_before(link,
							    breaker_table_index(link->owner->table,
										entry),
							    en->be_id));
}

uint32_t link_cap_waiting(struct haproxy_link *link, uint64_t be_id, uint32_t *waiting,
			  uint32_t max)
{
	struct breaker_table *t = link->owner->table;
	uint32_t n = 0;

	for (uint32_t i = 0; i < link->capped.nb && n < max; i++) {
		uint32_t index = link->capped.at[i];
		if (!still_capped(link, index) || link->entries[index].be_id != be_id)
			continue;
		/* Insertion by wait: a backend's waiting servers are few. */
		uint32_t at = n++;
		while (at > 0 && waited_longer(t, index, waiting[at - 1])) {
			waiting[at] = waiting[at - 1];
			at--;
		}
		waiting[at] = index;
	}
	return n;
}
