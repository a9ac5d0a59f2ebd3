/*
 * converge.c - bringing one HAProxy in line with one breaker: at a
 * transition, and for every server after a look (sweep.c walks them).
 */
#include <stdio.h>

#include "link/link_internal.h"
#include "util/log.h"

/* Plans and sends what brings one HAProxy in line with one breaker. */
/* Room may have freed in backend be_id: the servers waiting there are
 * converged again, longest waiting first, so that they take the room in
 * that order. More than 64 waiting in one backend: the rest get their turn
 * at the next look, which converges every breaker. */
static void release_waiting(struct haproxy_link *link, uint64_t be_id)
{
	uint32_t waiting[64];
	uint32_t n = link_cap_waiting(link, be_id, waiting, 64);
	for (uint32_t i = 0; i < n; i++)
		link_converge_entry(link, breaker_table_at(link->owner->table, waiting[i]));
}

void link_converge_entry(struct haproxy_link *link, struct breaker_table_entry *entry)
{
	struct enforcer *e = link->owner;
	struct enforce_entry *en = &link->entries[breaker_table_index(e->table, entry)];
	const struct breaker *b = &entry->breaker;

	if (e->mode != ENFORCE_AGENT_CHECK && link_cap_lifts(link, entry, en)) {
		/* Beyond the cap as it is now: the drain goes back, and the
		 * breaker waits for room like any other it held back. */
		char ready[RUNTIME_API_CMD_MAX];
		bool was_out = link_entry_out(en);
		uint64_t before = link->cmd.sent;
		if (runtime_api_cmd_set_state(ready, sizeof(ready), entry->backend, entry->server,
					      "ready"))
			link_send_server_command(link, entry, ready, "ejection cap: capacity lost",
						 LINK_UNDO_DRAIN);
		if (link->cmd.sent != before) {
			en->seen.drained = false;
			en->last_command = link->cmd.sent;
			en->last_state_command = link->cmd.sent;
		}
		en->mem.drained_by_us = false;
		link_count_change(link, en, was_out, true);
	}
	if (e->mode != ENFORCE_AGENT_CHECK && link_cap_holds_back(link, entry, en)) {
		/* Open in the breaker, serving in HAProxy: undo nothing, add
		 * nothing until room frees. */
		link_record_ownership(link, entry, en);
		link_stall_release(link, entry, en, true, NULL);
		return;
	}
	bool was_out = link_entry_out(en);
	bool was_drained = en->mem.drained_by_us;
	struct owner_record was_ours = owner_record_of(&en->mem);
	enum breaker_state want = enforce_wanted_state(b);
	bool guard_room = want != BREAKER_HALF_OPEN || e->mode == ENFORCE_AGENT_CHECK ||
			  link_cap_room_for_guard(link, entry, en);
	uint32_t limit = want == BREAKER_CLOSED && link_capacity_applies(b) ? en->capacity.limit : 0;
	struct enforce_plan plan = enforce_plan_limited(want, b->policy->half_open_probes, guard_room,
							limit, &en->seen, &en->mem);
	char command[RUNTIME_API_CMD_MAX];
	char why[64];

	/* What /state says, the first HAProxy's: the limit in force (the
	 * plan keeps it only below the server's own maxconn). */
	if (link == &e->links[0])
		e->maxconn_learnt[breaker_table_index(e->table, entry)] =
			!plan.hands_off && en->mem.maxconn_by_us && want == BREAKER_CLOSED ? limit : 0;

	if (plan.hands_off) {
		if (want != BREAKER_CLOSED)
			log_debug("breaker %s/%s is %s%s, left alone: %s", entry->backend,
				  entry->server, breaker_state_name(b->state),
				  breaker_is_resting(b) ? " and its worker resting" : "",
				  plan.hands_off);
		link_record_ownership(link, entry, en);
		link_stall_release(link, entry, en, false, plan.hands_off);
		return;
	}
	if (want != b->state)
		snprintf(why, sizeof(why), "worker resting (Retry-After), breaker %s",
			 breaker_state_name(b->state));
	else
		snprintf(why, sizeof(why), "breaker %s", breaker_state_name(b->state));
	uint64_t before = link->cmd.sent;
	/* Ready before maxconn: a half-open server takes its probes at once. */
	if ((plan.set_drain || plan.set_ready) &&
	    runtime_api_cmd_set_state(command, sizeof(command), entry->backend, entry->server,
				      plan.set_drain ? "drain" : "ready")) {
		uint64_t queued = link->cmd.sent;
		link_send_server_command(link, entry, command, why,
					 plan.set_ready ? LINK_UNDO_DRAIN : LINK_UNDO_NOTHING);
		if (link->cmd.sent != queued)
			en->last_state_command = link->cmd.sent;
	}
	/* A maxconn planned while the breaker is closed gives the server its
	 * own back; in half-open it sets the probes, the agent's either way. */
	if (plan.set_maxconn && runtime_api_cmd_set_maxconn(command, sizeof(command), entry->backend,
							    entry->server, plan.maxconn)) {
		uint64_t queued = link->cmd.sent;
		link_send_server_command(link, entry, command, why,
					 want == BREAKER_CLOSED ? LINK_UNDO_MAXCONN
								: LINK_UNDO_NOTHING);
		if (link->cmd.sent != queued)
			en->last_maxconn_command = link->cmd.sent;
	}
	if (link->cmd.sent != before) {
		/* Sent: until a look queued after them says otherwise, HAProxy
		 * holds what they asked, so the next transition plans from it. */
		enforce_plan_assume_applied(&plan, &en->seen);
		en->last_command = link->cmd.sent;
		/* What the agent had done, sent again: HAProxy lost it - a new
		 * process, most often, whose ownership map is its file's, and
		 * the look that would have said so may be lost too. The record
		 * goes with the command (an `add`), so that an agent restarted
		 * before the next look still finds its own. A copy the map kept
		 * is listed twice until the next change, which HAProxy applies
		 * to both. */
		struct owner_record ours = owner_record_of(&en->mem);
		if (was_ours.drained == ours.drained && was_ours.limited == ours.limited &&
		    (ours.drained || ours.limited))
			en->owner.present = false;
	}
	/* After the drain, on the same connection: nothing new reaches the
	 * server once its requests are ended. */
	link_stall_release(link, entry, en, false, NULL);
	link_record_ownership(link, entry, en);
	link_count_change(link, en, was_out, was_drained);
	if (was_drained && !en->mem.drained_by_us)
		release_waiting(link, en->be_id);
}
