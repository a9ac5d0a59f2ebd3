/*
 * sim_invariants_peers.c - peers mode: what the agent does with the
 * other nodes' verdicts, and with its own (docs/haproxy.md, "One agent
 * per HAProxy, verdicts shared over peers").
 *
 *   haproxy_follows_breakers (its peers part): another node's open or
 *     half-open verdict on a server this node has opens the server's
 *     breaker within the bound - the rest of haproxy_follows_breakers
 *     then drains it wherever the cap has room;
 *   peer_verdicts_kept:
 *     - a breaker held open by another node's verdict lets go (half-open,
 *       its own probe; or closed) once the verdict is gone - written
 *       closed, or expired - within the hold the agent gives a verdict it
 *       read (two looks and a second) and the bound;
 *     - a breaker that owns its verdict (open or half-open on its own
 *       evidence, held by no other node) has it in the table, in its
 *       state, within the bound;
 *     - once it owns none (closed, held by another node's), no open
 *       verdict this agent wrote stays in the table beyond the bound.
 *       One an earlier agent wrote (killed, restarted without its
 *       snapshot) goes by the table's expiry.
 */
#include <stdio.h>

#include "records/verdicts.h"
#include "util/clock.h"
#include "sim.h"
#include "sim_loop.h"

static const char *verdict_word(uint32_t state)
{
	return state == VERDICT_OPEN ? "open" : state == VERDICT_HALF_OPEN ? "half-open" : "closed";
}

void sim_invariants_peers(struct sim *s, struct sim_backend *b, struct sim_server *sv)
{
	if (!s->schedule->peers)
		return;
	unsigned be = (unsigned)(b - s->be), srv = (unsigned)(sv - b->srv);
	const struct breaker_table_entry *e = sim_agent_entry(s, b, sv);
	const struct breaker *br = e ? &e->breaker : NULL;
	uint64_t now_ms = clock_now_ms();
	const struct sim_verdict *v = sim_peers_entry(s, be, srv);

	bool stands = sim_peers_other_stands(s, be, srv);
	if (stands)
		s->checks[INV_HAPROXY_FOLLOWS_BREAKERS]++;
	if (sim_persists(s, &sv->since_peer_unheld, stands && (!br || br->state != BREAKER_OPEN),
			 SIM_CONVERGE_MS))
		sim_violate(s, INV_HAPROXY_FOLLOWS_BREAKERS,
			    "%s/%s: node %u's verdict (%s) stands, its breaker %s", b->name,
			    sv->name, v->node, verdict_word(v->state),
			    br ? breaker_state_name(br->state) : "missing");

	if (!br)
		return;
	s->checks[INV_PEER_VERDICTS_KEPT]++;
	bool held = br->state == BREAKER_OPEN &&
		    (br->peer_adopted || breaker_peer_hold_until(br) > now_ms);
	if (sim_persists(s, &sv->since_peer_gone, held && !stands,
			 SIM_VERDICT_HOLD_MS + SIM_CONVERGE_MS))
		sim_violate(s, INV_PEER_VERDICTS_KEPT,
			    "%s/%s: its breaker holds on another node's verdict, gone", b->name,
			    sv->name);

	bool owns = breaker_owns_verdict(br, now_ms);
	bool ours = v && v->node == SIM_NODE_ID;
	bool wrong = owns ? !(ours && v->state == (uint32_t)verdicts_state_of(br))
			  : ours && v->state != VERDICT_CLOSED && v->written_epoch == s->agent.epoch;
	if (sim_persists(s, &sv->since_own_verdict, wrong, SIM_CONVERGE_MS))
		sim_violate(s, INV_PEER_VERDICTS_KEPT,
			    owns ? "%s/%s: its breaker is %s on its own evidence, the table %s%s"
				 : "%s/%s: its breaker is %s, owning no verdict, the table %s%s",
			    b->name, sv->name, breaker_state_name(br->state),
			    !v ? "has no verdict" : ours ? "has this node's, " : "has another node's",
			    ours ? verdict_word(v->state) : "");
}
