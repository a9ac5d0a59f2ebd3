/*
 * sim_invariants_deleted.c - deleted_forgotten: what the agent keeps for
 * a server HAProxy deleted goes, and a server added again under its name
 * starts as a new one (docs/dynamic-servers.md, "Servers added and
 * deleted at runtime").
 *
 *   - within the bound of its deletion, the agent has no breaker for the
 *     name, HAProxy's ownership map no entry the agent wrote for it (a
 *     server added later under the name would read as drained by the
 *     agent), the watched map none, and the verdict table no open verdict
 *     of this node on it;
 *   - a server added again under the name, with a worker never seen
 *     before, has a clean breaker (closed, no trips) and neither a drain
 *     nor a maxconn of the agent's, within the bound of its addition, for
 *     as long as that worker is what it was added as and no other node's
 *     verdict came to it.
 *
 * A server added under a name never deleted is any other server: the
 * other invariants guard it from the moment HAProxy lists it.
 */
#include <stdio.h>
#include <string.h>

#include "records/verdicts.h"
#include "sim.h"
#include "sim_loop.h"

static bool map_has(const struct sim *s, unsigned m, const char *key)
{
	if (m >= s->nb_maps)
		return false;
	for (unsigned i = 0; i < s->maps[m].nb; i++)
		if (strcmp(s->maps[m].entries[i].key, key) == 0)
			return true;
	return false;
}

/* What the agent still keeps for a deleted server; NULL: nothing. */
static const char *what_is_kept(struct sim *s, struct sim_backend *b, struct sim_server *sv)
{
	char key[48];
	if (sim_agent_entry(s, b, sv))
		return "breaker";
	snprintf(key, sizeof(key), "%s/%s", b->name, sv->name);
	if (map_has(s, 0, key))
		return "entry in the ownership map";
	snprintf(key, sizeof(key), "%s@%s", sv->name, b->name);
	if (map_has(s, SIM_MAP_WATCHED, key))
		return "entry in the watched map";
	const struct sim_verdict *v = sim_peers_entry(s, (unsigned)(b - s->be),
						      (unsigned)(sv - b->srv));
	if (v && v->node == SIM_NODE_ID && v->state != VERDICT_CLOSED)
		return "open verdict in the verdict table";
	return NULL;
}

static double seconds_since(uint64_t us)
{
	return (double)(sim_now_us() - us) / 1e6;
}

void sim_invariants_deleted(struct sim *s, struct sim_backend *b, struct sim_server *sv)
{
	if (sv->absent) {
		if (sv->deleted_us == 0)
			return; /* a free slot, never a server */
		s->checks[INV_DELETED_FORGOTTEN]++;
		const char *kept = what_is_kept(s, b, sv);
		/* A breaker SPOP spoke of lately is kept on purpose when no
		 * look lists its server (another HAProxy, one whose Runtime
		 * API the agent was not given, may have it): up to a minute
		 * after the last NOTIFY (link/converge.c, UNLISTED_IDLE_MS).
		 * A server added and deleted between two looks the agent could
		 * read was never listed to it. */
		if (kept && strcmp(kept, "breaker") == 0 && sv->observed_us != 0 &&
		    sim_now_us() < sv->observed_us + SIM_UNLISTED_IDLE_MS * SIM_MS)
			kept = NULL;
		if (sim_persists(s, &sv->since_deleted_kept, kept != NULL, SIM_CONVERGE_MS))
			sim_violate(s, INV_DELETED_FORGOTTEN,
				    "%s/%s, deleted %.3f s ago: the agent keeps its %s", b->name,
				    sv->name, seconds_since(sv->deleted_us), kept);
		return;
	}
	if (sv->readded_us == 0)
		return;
	/* Its worker changed, an operator's hold (kept by name) speaks for
	 * it, or another node judged it: what the breaker holds since is the
	 * other invariants'. */
	const struct sim_verdict *v = &s->verdicts[b - s->be][sv - b->srv];
	if (sv->w.generation != sv->readded_generation || sv->w.kind != WORKER_HEALTHY ||
	    sim_hold_applies(s, b, sv) ||
	    (s->schedule->peers && v->stale_state != 0 && v->written_us >= sv->readded_us)) {
		sv->readded_us = 0;
		sv->since_readded_unclean = 0;
		return;
	}
	s->checks[INV_DELETED_FORGOTTEN]++;
	const struct breaker_table_entry *e = sim_agent_entry(s, b, sv);
	bool dirty = e && (e->breaker.state != BREAKER_CLOSED || e->breaker.trips != 0);
	/* A limit the agent learns for the new worker is its own business
	 * (no_orphan_maxconn's); one without a learnt capacity behind it is
	 * the old server's. */
	const uint32_t *learnt =
		s->agent.d.enforcer ? enforcer_maxconn_learnt(s->agent.d.enforcer) : NULL;
	bool learns = e && learnt && learnt[breaker_table_index(&s->agent.d.breakers.table, e)];
	/* An operator's drain or maintenance puts the server out of the
	 * agent's hands, its maxconn too (as no_orphan_maxconn has it). */
	bool others = sv->drain_by == HAND_OPERATOR || sv->maint_by != HAND_NONE;
	bool old_hand = sv->drain_by == HAND_AGENT ||
			(sv->maxconn_by == HAND_AGENT && !learns && !others);
	if (sim_persists(s, &sv->since_readded_unclean, dirty || old_hand, SIM_CONVERGE_MS))
		sim_violate(s, INV_DELETED_FORGOTTEN,
			    "%s/%s, added again %.3f s ago with a new healthy worker: %s", b->name,
			    sv->name, seconds_since(sv->readded_us),
			    dirty ? (e->breaker.state != BREAKER_CLOSED ? "its breaker is not closed"
									 : "its breaker has trips")
			    : sv->drain_by == HAND_AGENT ? "drained by the agent"
							 : "a maxconn of the agent's");
}
