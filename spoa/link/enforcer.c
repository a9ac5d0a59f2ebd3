/*
 * enforcer.c - carry the breakers' decisions to HAProxy (see enforcer.h).
 *
 * Two paths, one plan (enforce_plan()):
 *   - a transition converges its server at once, on every HAProxy, from
 *     what the last look said, and remembers what it sent as what HAProxy
 *     now holds;
 *   - every poll_interval a round of looks (`show info; show map`, then
 *     `show stat -1 4 -1` and `show servers state`, parsed as they
 *     arrive; queued together on each HAProxy) refreshes that picture,
 *     records the fault counters' deltas, re-plans every breaker (what
 *     restores a drain an HAProxy reload forgot) and, once every HAProxy
 *     was read, confirms the successes seen before it and drops breakers
 *     no HAProxy has any more.
 * Commands and looks share each socket's ordered queue. A look answered
 * after a command it was queued before describes HAProxy before that
 * command, so it never overwrites what the command made of the server.
 *
 * In agent-check mode HAProxy asks instead, and the answer is computed from
 * the breaker on the spot; in shadow mode (none) plans are logged, never
 * sent.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/counters.h"
#include "link/ack_hold.h"
#include "link/agent_check.h"
#include "link/ejection.h"
#include "link/endpoints.h"
#include "link/enforcer-t.h"
#include "link/enforcer.h"
#include "link/faults.h"
#include "link/owner_map.h"
#include "link/retry_map.h"
#include "link/runtime_api.h"
#include "link/verdicts.h"
#include "link/watched_map.h"
#include "link/wiring.h"
#include "util/clock.h"
#include "util/container_of.h"
#include "util/log.h"
#include "util/errmsg.h"

/* ---- commands ---- */

struct command_ctx {
	struct haproxy_link *link;
	char command[OWNER_MAP_CMD_MAX];
};

/* Points whose commands have all completed let their ACKs go. */
static void settle_ack_holds(struct enforcer *e)
{
	uint64_t done[ENFORCE_MAX_HAPROXY];

	for (unsigned i = 0; i < e->nb_links; i++)
		done[i] = e->links[i].commands_done;
	if (ack_hold_settle(&e->ack_hold, done, e->nb_links) && e->ack_released)
		e->ack_released(e->ack_released_ctx);
}

static void command_done(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct command_ctx *cc = ctx;
	struct enforcer *e = cc->link->owner;

	cc->link->commands_done++;
	if (!e->freeing && ack_hold_waiting(&e->ack_hold))
		settle_ack_holds(e);
	if (result == RUNTIME_API_OK && len == 0) {
		e->stats.commands_ok++;
	} else if (result == RUNTIME_API_OK) {
		e->stats.commands_refused++;
		log_warning("HAProxy %s refused '%s': %.*s",
			    runtime_api_client_address(cc->link->client), cc->command,
			    (int)strcspn(reply, "\n"), reply);
	} else {
		/* The client logs the outage itself; the next look re-plans. */
		e->stats.commands_failed++;
		log_debug("HAProxy %s: '%s' not delivered: %s",
			  runtime_api_client_address(cc->link->client), cc->command, reply);
	}
	free(cc);
}

/* Queues a command on the link's command connection; link->commands
 * counts it when queued. `observing`: a command that keeps HAProxy telling
 * the agent what it needs (the watched map), sent in every enforcement
 * mode - shadow mode promises not to act on HAProxy's servers, and this
 * changes none; it keeps the breakers' view right. */
static void queue_command_logged(struct haproxy_link *link, const char *command, const char *why,
				 bool observing, enum log_level level);

static void queue_command(struct haproxy_link *link, const char *command, const char *why,
			  bool observing)
{
	queue_command_logged(link, command, why, observing, LOG_LEVEL_NOTICE);
}

/* The same, the command logged at `level`: a write repeated at every look
 * (a verdict kept alive) is no news. */
static void queue_command_logged(struct haproxy_link *link, const char *command, const char *why,
				 bool observing, enum log_level level)
{
	struct enforcer *e = link->owner;

	if (e->mode != ENFORCE_RUNTIME_API && !observing) {
		log_info("shadow: would send to HAProxy %s: %s (%s)",
			 runtime_api_client_address(link->client), command, why);
		e->stats.shadow_commands++;
		return;
	}
	struct command_ctx *cc = malloc(sizeof(*cc));
	if (!cc) {
		log_error("out of memory queueing '%s'", command);
		return;
	}
	cc->link = link;
	snprintf(cc->command, sizeof(cc->command), "%s", command);
	log_msg(level, "HAProxy %s: %s (%s)", runtime_api_client_address(link->client), command,
		why);
	if (!runtime_api_submit(link->commands_client, command, command_done, cc)) {
		e->stats.commands_failed++;
		log_warning("HAProxy %s: queue full, '%s' dropped (the next look retries)",
			    runtime_api_client_address(link->client), command);
		free(cc);
		return;
	}
	link->commands++;
}

static void send_command(struct haproxy_link *link, const char *command, const char *why)
{
	queue_command(link, command, why, false);
}

/* Keeps HAProxy's ownership map saying what the agent did to the server:
 * what a restarted agent without its snapshot reads back. Runtime API mode
 * only (it records Runtime API drains), once the map was read. */
static void record_ownership(struct haproxy_link *link, struct breaker_table_entry *entry,
			     struct enforce_entry *en)
{
	char command[OWNER_MAP_CMD_MAX];
	struct owner_record want = owner_record_of(&en->mem);

	if (link->owner->mode != ENFORCE_RUNTIME_API || !link->owner_known ||
	    !owner_map_cmd(command, sizeof(command), link->owner_map, entry->backend,
			   entry->server, &en->owner, &want))
		return;
	uint64_t before = link->commands;
	send_command(link, command, "what the agent did, for its next start");
	if (link->commands != before) {
		en->owner = want;
		en->last_command = link->commands;
	}
}

/* ---- the ejection cap ---- */

/* Out of rotation for a reason that is not the agent's drain. */
static bool out_otherwise(const struct enforce_entry *en)
{
	return en->seen.down || en->seen.maint || (en->seen.drained && !en->mem.drained_by_us);
}

static bool entry_out(const struct enforce_entry *en)
{
	return out_otherwise(en) || en->mem.drained_by_us;
}

/* The entry's backend count in look slot `slot`, or NULL when that look
 * did not list it. */
static struct ejection_backend *group_in_slot(struct haproxy_link *link,
					    const struct enforce_entry *en, int slot)
{
	struct ejection_groups *g = &link->groups[slot];
	if (g->look_id == 0 || en->group_look[slot] != g->look_id || en->group_index[slot] >= g->nb)
		return NULL;
	return &g->groups[en->group_index[slot]];
}

/* Moves one of the entry's backend counters by one, up or down, in both
 * looks' counts. */
static void count_move(struct haproxy_link *link, const struct enforce_entry *en,
		       size_t field_offset, bool up)
{
	for (int slot = 0; slot < 2; slot++) {
		struct ejection_backend *g = group_in_slot(link, en, slot);
		if (!g)
			continue;
		uint32_t *field = (uint32_t *)((char *)g + field_offset);
		if (up)
			(*field)++;
		else if (*field > 0)
			(*field)--;
	}
}

/* The count a decision is made on: the last complete look's, else the
 * one under way (a server new since then). */
static struct ejection_backend *group_of(struct haproxy_link *link, const struct enforce_entry *en)
{
	struct ejection_backend *g = NULL;
	if (link->groups_current >= 0)
		g = group_in_slot(link, en, link->groups_current);
	if (!g && link->looking)
		g = group_in_slot(link, en, (int)(link->look_id & 1));
	return g;
}

/* A drain added or lifted, a server going out or back: both looks'
 * counts follow. */
static void count_change(struct haproxy_link *link, const struct enforce_entry *en, bool was_out,
			 bool was_drained)
{
	bool is_out = entry_out(en);
	if (is_out != was_out)
		count_move(link, en, offsetof(struct ejection_backend, count.out), is_out);
	if (en->mem.drained_by_us != was_drained)
		count_move(link, en, offsetof(struct ejection_backend, drained_by_agent),
			   en->mem.drained_by_us);
}

/* Entry `index` still waits for room on this link. */
static bool still_capped(struct haproxy_link *link, uint32_t index)
{
	struct breaker_table *t = link->owner->table;
	if (index >= t->allocated)
		return false;
	const struct breaker_table_entry *entry = breaker_table_at(t, index);
	return entry->in_use && entry->breaker.state == BREAKER_OPEN &&
	       link->entries[index].ejection_capped;
}

/* Waited longer: opened earlier, the lower index on a tie (a strict order). */
static bool waited_longer(struct breaker_table *t, uint32_t a, uint32_t b)
{
	uint64_t since_a = breaker_table_at(t, a)->breaker.state_since_ms;
	uint64_t since_b = breaker_table_at(t, b)->breaker.state_since_ms;
	return since_a < since_b || (since_a == since_b && a < b);
}

/* Servers of the same backend waiting for room before `index`; drops
 * stale indices from the list on the way. */
static uint32_t count_waiting_before(struct haproxy_link *link, uint32_t index, uint64_t be_id)
{
	uint32_t before = 0, kept = 0;
	for (uint32_t i = 0; i < link->nb_capped; i++) {
		uint32_t other = link->capped[i];
		if (!still_capped(link, other))
			continue;
		link->capped[kept++] = other;
		if (other != index && link->entries[other].be_id == be_id &&
		    waited_longer(link->owner->table, other, index))
			before++;
	}
	link->nb_capped = kept;
	return before;
}

static void refresh_entry_capped(struct enforcer *e, struct breaker_table_entry *entry)
{
	uint32_t index = breaker_table_index(e->table, entry);
	bool capped = false;
	for (unsigned i = 0; i < e->nb_links; i++)
		capped |= e->links[i].entries[index].ejection_capped;
	entry->ejection_capped = capped;
}

/* Marks an open breaker's drain as held back here (logged once). */
static void hold_back(struct haproxy_link *link, struct breaker_table_entry *entry,
		      struct enforce_entry *en, const struct ejection_backend *g)
{
	struct enforcer *e = link->owner;
	if (en->ejection_capped)
		return;
	uint32_t index = breaker_table_index(e->table, entry);
	if (link->nb_capped == link->capped_allocated) {
		uint32_t want = link->capped_allocated ? 2 * link->capped_allocated : 16;
		uint32_t *grown = realloc(link->capped, want * sizeof(*grown));
		if (!grown) {
			log_error("out of memory holding back the drain of %s/%s", entry->backend,
				  entry->server);
			return; /* not capped: drained as before the cap existed */
		}
		link->capped = grown;
		link->capped_allocated = want;
	}
	link->capped[link->nb_capped++] = index;
	en->ejection_capped = true;
	count_move(link, en, offsetof(struct ejection_backend, capped), true);
	e->stats.ejections_held_back++;
	refresh_entry_capped(e, entry);
	const struct breaker_policy *p = entry->breaker.policy;
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
		if (entry->ejection_capped) /* held back on another HAProxy, or before a reload */
			refresh_entry_capped(e, entry);
		return;
	}
	en->ejection_capped = false;
	count_move(link, en, offsetof(struct ejection_backend, capped), false);
	refresh_entry_capped(e, entry);
	if (entry->breaker.state == BREAKER_OPEN) {
		e->stats.ejections_released++;
		log_notice("breaker %s/%s: room under the ejection cap of backend %s, drained on "
			   "HAProxy %s after waiting %llu ms",
			   entry->backend, entry->server, entry->backend,
			   runtime_api_client_address(link->client),
			   (unsigned long long)(clock_now_ms() - entry->breaker.state_since_ms));
	}
}

/* Whether the cap holds back the drain an open breaker wants here. */
static bool cap_holds_back(struct haproxy_link *link, struct breaker_table_entry *entry,
			   struct enforce_entry *en)
{
	if (entry->breaker.state != BREAKER_OPEN || en->mem.drained_by_us) {
		/* Not wanting a drain, or one in place: a drain is never lifted
		 * for the cap (traffic would go back to a server known to fail,
		 * and two open breakers could take turns); the cool-down ends
		 * it. */
		stop_holding_back(link, entry, en);
		return false;
	}
	if (!en->seen.known || en->seen.maint || en->seen.drained || en->seen.down) {
		/* The plan leaves it alone, or it serves nothing anyway: a drain
		 * costs the backend no capacity. */
		stop_holding_back(link, entry, en);
		return false;
	}
	struct ejection_backend *g = group_of(link, en);
	if (g && ejection_may_drain(entry->breaker.policy, &g->count,
				    count_waiting_before(link, breaker_table_index(link->owner->table,
										    entry),
							 en->be_id))) {
		stop_holding_back(link, entry, en);
		return false;
	}
	hold_back(link, entry, en, g);
	return true;
}

static void converge_entry(struct haproxy_link *link, struct breaker_table_entry *entry);

/* Room may have freed in backend be_id: the servers waiting there are
 * converged again, longest waiting first, so that they take the room in
 * that order. */
static void release_waiting(struct haproxy_link *link, uint64_t be_id)
{
	struct breaker_table *t = link->owner->table;
	uint32_t waiting[64];
	uint32_t n = 0;

	for (uint32_t i = 0; i < link->nb_capped && n < 64; i++) {
		uint32_t index = link->capped[i];
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
	/* More than 64 wait in one backend: the rest get their turn at the
	 * next look, which converges every breaker. */
	for (uint32_t i = 0; i < n; i++)
		converge_entry(link, breaker_table_at(t, waiting[i]));
}

/* Plans and sends what brings one HAProxy in line with one breaker. */
static void converge_entry(struct haproxy_link *link, struct breaker_table_entry *entry)
{
	struct enforcer *e = link->owner;
	struct enforce_entry *en = &link->entries[breaker_table_index(e->table, entry)];
	const struct breaker *b = &entry->breaker;

	if (e->mode != ENFORCE_AGENT_CHECK && cap_holds_back(link, entry, en)) {
		/* Open in the breaker, serving in HAProxy: undo nothing, add
		 * nothing until room frees. */
		record_ownership(link, entry, en);
		return;
	}
	bool was_out = entry_out(en);
	bool was_drained = en->mem.drained_by_us;
	struct enforce_plan plan = enforce_plan(b->state, b->policy->half_open_probes, &en->seen,
						&en->mem);
	char command[RUNTIME_API_CMD_MAX];
	char why[64];

	if (plan.hands_off) {
		if (b->state != BREAKER_CLOSED)
			log_debug("breaker %s/%s is %s, left alone: %s", entry->backend, entry->server,
				  breaker_state_name(b->state), plan.hands_off);
		record_ownership(link, entry, en);
		return;
	}
	snprintf(why, sizeof(why), "breaker %s", breaker_state_name(b->state));
	uint64_t before = link->commands;
	/* Ready before maxconn: a half-open server takes its probes at once. */
	if ((plan.set_drain || plan.set_ready) &&
	    runtime_api_cmd_set_state(command, sizeof(command), entry->backend, entry->server,
				      plan.set_drain ? "drain" : "ready"))
		send_command(link, command, why);
	if (plan.set_maxconn && runtime_api_cmd_set_maxconn(command, sizeof(command), entry->backend,
							    entry->server, plan.maxconn))
		send_command(link, command, why);
	if (link->commands != before) {
		/* Sent: until a look queued after them says otherwise, HAProxy
		 * holds what they asked, so the next transition plans from it. */
		enforce_plan_assume_applied(&plan, &en->seen);
		en->last_command = link->commands;
	}
	record_ownership(link, entry, en);
	count_change(link, en, was_out, was_drained);
	if (was_drained && !en->mem.drained_by_us)
		release_waiting(link, en->be_id);
}

static bool sync_watched(struct haproxy_link *link, struct breaker_table_entry *entry,
			 struct enforce_entry *en, bool look);

/* ---- peers mode: this node's verdicts (verdicts.h) ---- */

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
	queue_command_logged(link, command,
			     state == VERDICT_CLOSED ? "verdict for the other nodes: closed"
						     : "verdict for the other nodes: this node owns it",
			     false, again ? LOG_LEVEL_DEBUG : LOG_LEVEL_NOTICE);
	if (link->commands != before)
		en->verdict_published = state != VERDICT_CLOSED;
}

static void publish_verdicts(struct enforcer *e, struct breaker_table_entry *entry,
			     uint64_t now_ms)
{
	uint32_t index = breaker_table_index(e->table, entry);
	for (unsigned i = 0; i < e->nb_links; i++)
		publish_verdict(&e->links[i], entry, &e->links[i].entries[index], now_ms, false);
}

/* The breakers' subscriber: a transition acts at once. */
static void on_recorded(void *ctx, struct breaker_table_entry *entry,
			const struct breaker_event *ev, const struct breaker_cause *cause)
{
	struct enforcer *e = ctx;

	if (cause->kind == BREAKER_CAUSE_RESPONSE)
		e->last_spop_ms[breaker_table_index(e->table, entry)] = cause->now_ms;
	if (ev->dirty != BREAKER_DIRTY_UNCHANGED) {
		bool added = false;
		for (unsigned i = 0; i < e->nb_links; i++)
			added |= sync_watched(&e->links[i], entry,
					      &e->links[i].entries[breaker_table_index(e->table, entry)],
					      false);
		/* The response being answered made its server watched: its
		 * ACK waits for the entry (enforcer_ack_take()). */
		if (added && cause->kind == BREAKER_CAUSE_RESPONSE)
			e->ack_hold_wanted = true;
	}
	if (!breaker_event_is_transition(ev) || e->mode == ENFORCE_AGENT_CHECK)
		return;
	/* Before the drain: the other nodes learn of it at their next look. */
	if (e->verdict_table[0] && cause->kind != BREAKER_CAUSE_PEER)
		publish_verdicts(e, entry, cause->now_ms);
	for (unsigned i = 0; i < e->nb_links; i++)
		converge_entry(&e->links[i], entry);
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
static bool on_reserve(void *ctx, uint32_t allocated)
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
	    !grow_array((void **)&e->slots, sizeof(*e->slots), have, allocated))
		return false;
	if (e->agent_check_mem &&
	    !grow_array((void **)&e->agent_check_mem, sizeof(*e->agent_check_mem), have, allocated))
		return false;
	e->capacity = allocated;
	return true;
}

static void on_created(void *ctx, uint32_t index)
{
	struct enforcer *e = ctx;

	for (unsigned i = 0; i < e->nb_links; i++)
		memset(&e->links[i].entries[index], 0, sizeof(e->links[i].entries[index]));
	e->last_spop_ms[index] = 0;
	memset(&e->slots[index], 0, sizeof(e->slots[index]));
	if (e->agent_check_mem)
		memset(&e->agent_check_mem[index], 0, sizeof(e->agent_check_mem[index]));
}

/* ---- looking at HAProxy ---- */

static void on_info(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	struct runtime_api_info info;
	struct runtime_api_parse_report report;

	link->restarted = false;
	if (result != RUNTIME_API_OK || !runtime_api_parse_info(reply, len, &info, &report))
		return; /* the look fails as a whole in on_servers_state */
	if (link->info_known &&
	    (info.pid != link->info.pid || info.start_time_sec != link->info.start_time_sec)) {
		link->restarted = true; /* its counters start from zero */
		/* Its configuration may load other maps: search again at the
		 * next look (a reload can turn steady-state mode on or off),
		 * reading meanwhile the ones known. */
		link->maps_search = true;
		log_notice("HAProxy %s: new process (pid %llu, was %llu): re-applying the breakers",
			   runtime_api_client_address(link->client), (unsigned long long)info.pid,
			   (unsigned long long)link->info.pid);
		link->owner->stats.haproxy_restarts++;
	}
	link->info = info;
	link->info_known = true;
}

/* The look's count of the row's backend, started when the backend id
 * changes; NULL when out of memory (the cap then waits for a later look). */
static struct ejection_backend *count_row_backend(struct haproxy_link *link,
						  const struct runtime_api_server_state *row,
						  uint32_t *index)
{
	uint64_t be_id = row->be_id;
	struct ejection_groups *g = &link->groups[link->look_id & 1];
	if (g->look_id != link->look_id) {
		g->look_id = link->look_id;
		g->nb = 0;
	}
	if (g->nb == 0 || g->groups[g->nb - 1].be_id != be_id) {
		if (g->nb == g->allocated) {
			uint32_t want = g->allocated ? 2 * g->allocated : 64;
			struct ejection_backend *grown = realloc(g->groups, want * sizeof(*grown));
			if (!grown)
				return NULL;
			g->groups = grown;
			g->allocated = want;
		}
		struct ejection_backend *b = &g->groups[g->nb++];
		*b = (struct ejection_backend){.be_id = be_id, .retry_at_s = RETRY_AT_NONE};
		size_t len = row->be_name.len < BREAKER_NAME_MAX ? row->be_name.len : BREAKER_NAME_MAX;
		memcpy(b->name, row->be_name.ptr, len);
		b->name[len] = '\0';
	}
	*index = g->nb - 1;
	return &g->groups[g->nb - 1];
}

/*
 * The breaker belongs to the worker its server points at (endpoints.h).
 * Once every HAProxy that lists the server points it at the same worker,
 * and that is not the breaker's, the breaker becomes that worker's: clean,
 * or what was remembered of it. While they disagree (one moved first) it
 * stays with its worker: some HAProxy still sends it traffic. Published
 * like a transition, so every HAProxy converges at once: a drain or a
 * maxconn set for the old worker is lifted for the new one.
 */
static void follow_endpoint(struct haproxy_link *link, struct breaker_table_entry *entry)
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
	struct breaker_event ev = endpoint_move(&entry->breaker, entry->backend, &from,
						&slot->breaker_at, e->recall, now, &recalled);
	/* Requests in flight there were the old worker's. */
	for (unsigned i = 0; i < e->nb_links; i++)
		e->links[i].entries[index].stall = (struct stall_watch){0};
	log_notice("breaker %s/%s: HAProxy points it at %s instead of %s: %s", entry->backend,
		   entry->server, slot->breaker_at.text, from.text,
		   recalled ? "that worker's breaker, remembered from another server"
			    : "a clean breaker");
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_ENDPOINT,
				      .endpoint = slot->breaker_at.text,
				      .recalled = recalled,
				      .now_ms = now};
	breakers_publish(e->breakers, entry, &ev, &cause);
}

static void on_server_state(void *ctx, const struct runtime_api_server_state *row)
{
	struct haproxy_link *link = ctx;
	struct enforcer *e = link->owner;
	struct endpoint at;
	struct breaker_table_entry *entry = breaker_table_find(
		e->table, row->be_name.ptr, row->be_name.len, row->srv_name.ptr, row->srv_name.len);
	/* A server-template slot DNS has not filled points at no worker: it
	 * is not one of the backend's servers, neither a breaker's nor an
	 * operator's drain (HAProxy keeps it in maintenance). */
	if (endpoint_read(&at, row->addr, row->port) == ENDPOINT_NONE) {
		if (entry) /* emptied: forgotten at the round's end (forget_server) */
			link->entries[breaker_table_index(e->table, entry)].emptied_in_look =
				link->look_id;
		return;
	}
	uint32_t group_index = 0;
	struct ejection_backend *group = count_row_backend(link, row, &group_index);
	/* Every server the backend lists counts, with a breaker or not (a
	 * full table); a server is out when down by health check, in
	 * maintenance or drained, by anyone. */
	bool row_out = row->op_state == RUNTIME_API_SRV_STOPPED ||
		       (row->admin_state & (RUNTIME_API_ADMF_MAINT | RUNTIME_API_ADMF_CMAINT |
					    RUNTIME_API_ADMF_DRAIN));
	if (!entry) {
		if (group) {
			group->count.listed++;
			group->count.out += row_out;
		}
		return; /* not an HTTP server: show stat created the others */
	}
	struct enforce_entry *en = &link->entries[breaker_table_index(e->table, entry)];
	en->seen.known = true;
	en->seen_in_look = link->look_id;
	en->be_id = row->be_id;
	if (group) {
		int slot = (int)(link->look_id & 1);
		en->group_look[slot] = link->look_id;
		en->group_index[slot] = group_index;
	}
	/* Our command went out after this look was queued: the look shows
	 * HAProxy before it, and would undo what we know. */
	if (en->last_command <= link->look_queued_after) {
		en->seen.drained = row->admin_state & RUNTIME_API_ADMF_FDRAIN;
		/* Inherited drain is configuration, like maintenance: hands off. */
		en->seen.maint = row->admin_state & (RUNTIME_API_ADMF_MAINT | RUNTIME_API_ADMF_CMAINT |
						     RUNTIME_API_ADMF_IDRAIN);
	}
	en->seen.down = row->op_state == RUNTIME_API_SRV_STOPPED;
	if (group) {
		group->count.listed++;
		/* What the agent knows of its own drains beats a row that may
		 * predate its command. */
		group->count.out += entry_out(en);
		group->drained_by_agent += en->mem.drained_by_us;
		group->capped += en->ejection_capped;
		group->has_breakers = true;
	}
	/* Last: a move converges the server, and the counts above must
	 * already include it for that. */
	en->endpoint = at;
	follow_endpoint(link, entry);
}

/* `show cli level`: the agent's drains need `level admin`. */
static void on_cli_level(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	if (result != RUNTIME_API_OK)
		return;
	enum wiring_level level = wiring_level_parse(reply, len);
	if (wiring_note_level(&link->wiring, level))
		log_error("HAProxy %s: the Runtime API is at level %s, not admin: every drain "
			  "and ready the agent sends is refused. Add `level admin` to the `stats "
			  "socket` line this runtime_api points at (docs/wiring.md)",
			  runtime_api_client_address(link->client), wiring_level_name(level));
}

/* `show map`: where HAProxy keeps the ownership record. */
static void on_map_list(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	char path[OWNER_MAP_PATH_MAX];

	if (result != RUNTIME_API_OK)
		return;
	link->maps_search = false;
	if (map_file_find(reply, len, WATCHED_MAP_NAME, path, sizeof(path))) {
		if (!link->watched_map[0])
			log_notice("HAProxy %s loads %s: steady-state mode, it notifies the successes "
				   "of watched servers only, and the agent keeps the map",
				   runtime_api_client_address(link->client), WATCHED_MAP_NAME);
		snprintf(link->watched_map, sizeof(link->watched_map), "%s", path);
	} else {
		if (link->watched_map[0])
			log_notice("HAProxy %s no longer loads %s: every-response mode",
				   runtime_api_client_address(link->client), WATCHED_MAP_NAME);
		link->watched_map[0] = '\0';
		/* Listed, but under a path no command may carry: steady-state
		 * mode with a map nobody keeps, whose watched servers' successes
		 * would never be notified. Said at every search. */
		static const char listed[] = WATCHED_MAP_NAME ")";
		if (memmem(reply, len, listed, sizeof(listed) - 1))
			log_error("HAProxy %s loads %s under a path with characters other than "
				  "letters, digits and /._- : the agent cannot keep it, and failures "
				  "of its servers would add up to trips; rename it",
				  runtime_api_client_address(link->client), WATCHED_MAP_NAME);
	}
	if (map_file_find(reply, len, RETRY_MAP_NAME, path, sizeof(path))) {
		snprintf(link->retry_map, sizeof(link->retry_map), "%s", path);
	} else {
		link->retry_map[0] = '\0';
	}
	if (!link->retry_map[0] && !link->retry_missing_said) {
		link->retry_missing_said = true;
		log_info("HAProxy %s loads no %s: its own 503 gets the configuration's fixed "
			 "Retry-After, not the time until a breaker probes (optional: the "
			 "frontend's `http-after-response set-var(txn.breaker_retry_in) "
			 "be_name,map_str_int(%s,0),...` line loads it, see docs/wiring.md)",
			 runtime_api_client_address(link->client), RETRY_MAP_NAME, RETRY_MAP_NAME);
	}
	link->wiring.maps_known = true;
	link->wiring.watched_map = link->watched_map[0] != '\0';
	link->wiring.retry_map = link->retry_map[0] != '\0';
	link->wiring.owner_map = owner_map_find(reply, len, path, sizeof(path));
	if (link->wiring.owner_map) {
		if (strcmp(path, link->owner_map) != 0) {
			snprintf(link->owner_map, sizeof(link->owner_map), "%s", path);
			link->owner_known = false; /* read it before writing to it */
		}
		return;
	}
	link->owner_map[0] = '\0';
	link->owner_known = false;
	if (!link->owner_missing_said) {
		link->owner_missing_said = true;
		log_notice("HAProxy %s loads no %s: without a state snapshot, a restarted agent "
			   "cannot tell its drains from an operator's; add `acl breaker_owned "
			   "str(),map(%s) -m found` to one backend (see docs/wiring.md)",
			   runtime_api_client_address(link->client), OWNER_MAP_NAME, OWNER_MAP_NAME);
	}
}

static void on_owner_entry(void *ctx, struct runtime_api_str backend, struct runtime_api_str server,
			   const struct owner_record *rec)
{
	struct haproxy_link *link = ctx;
	struct enforcer *e = link->owner;
	struct breaker_table_entry *entry =
		breaker_table_find(e->table, backend.ptr, backend.len, server.ptr, server.len);
	if (!entry)
		return;
	struct enforce_entry *en = &link->entries[breaker_table_index(e->table, entry)];
	en->owner_in_look = link->look_id;
	if (en->last_command > link->look_queued_after)
		return; /* our own command went out after this look was queued */
	en->owner = *rec;
	/* An agent that remembers nothing of this server (started without
	 * its snapshot) takes the record's word: the drain is its own. */
	if (rec->present && !en->mem.drained_by_us && !en->mem.maxconn_by_us) {
		owner_record_adopt(rec, &en->mem);
		log_notice("HAProxy %s records that the agent %s %s/%s: taken back as its own",
			   runtime_api_client_address(link->client),
			   rec->drained ? "drained" : "limited", entry->backend, entry->server);
	}
}

/* `show map FILE`: the ownership record. */
static void on_owner_map(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	unsigned skipped = 0;

	if (result != RUNTIME_API_OK)
		return;
	if (!owner_map_parse(reply, len, on_owner_entry, link, &skipped)) {
		/* Gone (HAProxy restarted with another configuration): find
		 * it again at the next look. */
		link->owner_map[0] = '\0';
		link->owner_known = false;
		return;
	}
	link->owner_read = true;
	if (skipped)
		log_debug("HAProxy %s: %u line(s) of %s skipped", runtime_api_client_address(link->client),
			  skipped, link->owner_map);
}

/* `show map FILE`: when each backend may take traffic again, as HAProxy
 * has it. */
static void on_retry_map(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	struct retry_map_entry *have;
	unsigned skipped = 0;

	if (result != RUNTIME_API_OK)
		return;
	long n = retry_map_parse(reply, len, &have, &skipped);
	if (n < 0) {
		/* Gone (another configuration), or no memory: search again. */
		link->maps_search = true;
		return;
	}
	free(link->retry_have);
	link->retry_have = have;
	link->nb_retry_have = (size_t)n;
	link->retry_read = true;
	if (skipped)
		log_debug("HAProxy %s: %u line(s) of %s skipped", runtime_api_client_address(link->client),
			  skipped, link->retry_map);
}

/* One server the watched map lists. */
static void on_watched_entry(void *ctx, struct runtime_api_str backend, struct runtime_api_str server)
{
	struct haproxy_link *link = ctx;
	struct enforcer *e = link->owner;
	struct breaker_table_entry *entry =
		breaker_table_find(e->table, backend.ptr, backend.len, server.ptr, server.len);
	if (entry) {
		link->entries[breaker_table_index(e->table, entry)].watched_in_look = link->look_id;
		return;
	}
	/* No breaker (dropped, evicted, or never one): nothing to watch.
	 * Unless a command to the map went out after this look was queued:
	 * it may be this server's own add. */
	if (link->watched_last_command > link->look_queued_after)
		return;
	char command[OWNER_MAP_CMD_MAX], be[BREAKER_NAME_MAX + 1], srv[BREAKER_NAME_MAX + 1];
	if (backend.len > BREAKER_NAME_MAX || server.len > BREAKER_NAME_MAX)
		return;
	memcpy(be, backend.ptr, backend.len);
	be[backend.len] = '\0';
	memcpy(srv, server.ptr, server.len);
	srv[server.len] = '\0';
	uint64_t before = link->commands;
	if (watched_map_cmd(command, sizeof(command), link->watched_map, be, srv, false))
		queue_command(link, command, "no breaker to watch", true);
	if (link->commands != before)
		link->watched_last_command = link->commands;
}

/* `show map FILE`: the servers HAProxy notifies every response of. */
static void on_watched_map(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	unsigned skipped = 0;

	if (result != RUNTIME_API_OK)
		return;
	if (!watched_map_parse(reply, len, on_watched_entry, link, &skipped)) {
		link->maps_search = true; /* gone, or renamed: search again */
		return;
	}
	link->watched_read = true;
	if (skipped)
		log_debug("HAProxy %s: %u line(s) of %s skipped", runtime_api_client_address(link->client),
			  skipped, link->watched_map);
}

/* Makes HAProxy's watched map list the server exactly when its breaker is
 * dirty. From a transition (look false) or a look that read the map. True
 * when it queued an `add map`. */
static bool sync_watched(struct haproxy_link *link, struct breaker_table_entry *entry,
			 struct enforce_entry *en, bool look)
{
	if (!link->watched_map[0])
		return false;
	if (look) {
		if (!link->watched_read || en->watched_command > link->look_queued_after)
			return false; /* the look predates our own command */
		en->watched_have = en->watched_in_look == link->look_id;
	}
	bool want = breaker_is_dirty(&entry->breaker);
	char command[OWNER_MAP_CMD_MAX];
	if (want == en->watched_have ||
	    !watched_map_cmd(command, sizeof(command), link->watched_map, entry->backend,
			     entry->server, want))
		return false;
	uint64_t before = link->commands;
	queue_command(link, command,
		      want ? "breaker dirty: every response matters" : "breaker clean: only failures matter",
		      true);
	if (link->commands == before)
		return false; /* not queued: the next look finds it missing and tries again */
	en->watched_have = want;
	en->watched_command = link->commands;
	link->watched_last_command = link->commands;
	return want;
}

/* Records what the counters say happened since the previous look. */
static void record_faults(struct haproxy_link *link, struct breaker_table_entry *entry,
			  struct enforce_entry *en, const struct runtime_api_stat_row *row)
{
	struct enforcer *e = link->owner;
	struct faults_counters counters;
	struct faults_delta d;

	faults_counters_from_stat(&counters, row);
	faults_delta(&en->faults, &counters, link->restarted, &d);
	e->stats.connect_errors += d.connect_errors;
	e->stats.response_errors += d.response_errors;
	e->stats.aborted_bodies += d.aborted_bodies;
	e->stats.redispatches += d.redispatches;
	e->stats.capacity_retries += d.capacity_retries;
	uint64_t now = clock_now_ms();
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_COUNTERS, .faults = &d, .now_ms = now};
	if (d.total) {
		struct breaker_event ev =
			breaker_record_poll(&entry->breaker, d.aborted_bodies, d.failures, now);
		breakers_publish(e->breakers, entry, &ev, &cause);
	}
	/*
	 * A worker's capacity status that HAProxy retried elsewhere never
	 * reached SPOE: it is backpressure the counters alone tell of, and is
	 * recorded as one (a half-open probe answered 503 closes, as over
	 * SPOP). One sample per look, whatever the count: backpressure has no
	 * weight; but all of them count towards finding the worker wedged,
	 * whose 503s the retries keep from SPOP. After the failures: counters carry no order, and letting
	 * a failure of the same interval reopen a probe errs on the safe side.
	 */
	if (d.capacity_retries) {
		uint32_t count = d.capacity_retries > UINT32_MAX ? UINT32_MAX
								: (uint32_t)d.capacity_retries;
		struct breaker_event ev =
			breaker_table_record_capacity_retries(e->table, entry, count, now);
		cause.kind = BREAKER_CAUSE_CAPACITY_RETRY;
		breakers_publish(e->breakers, entry, &ev, &cause);
	}
}

/*
 * Steady-state mode: a clean server's successes are not notified, yet
 * wedged_after and stalled_after need to know that a backend's other
 * servers are serving. HAProxy's counters know: 1xx-3xx answers since the
 * previous look count as a success of the server at the look (a look's
 * delay, well under either rule's time). Stamped with the look's time,
 * not the row's: a neighbour's answers of the interval before a watch
 * began must not read as coming after it (breaker_is_stalled() wants
 * them strictly later); the metrics count them too. Only once a previous
 * look gave the baseline, and not across an HAProxy restart (its counters
 * start again).
 */
static void note_counted_successes(struct haproxy_link *link, struct breaker_table_entry *entry,
				   struct enforce_entry *en, const struct runtime_api_stat_row *row)
{
	uint64_t counted = row->hrsp_1xx + row->hrsp_2xx + row->hrsp_3xx;
	bool baseline = en->seen_in_look != 0 && !link->restarted && counted >= en->successes_counted;
	uint64_t delta = baseline ? counted - en->successes_counted : 0;
	en->successes_counted = counted;
	if (delta > 0 && link->watched_map[0])
		breaker_table_note_outcome(link->owner->table, entry, BREAKER_OUTCOME_SUCCESS,
					   link->look_ms);
	/* And for the metrics, the successes SPOP was not told of. */
	counters_note_counted_successes(&entry->counters, delta, baseline && link->watched_map[0]);
}

/*
 * The stalled rule's look (stall_watch.c): requests in flight there, and
 * whether the server answered anything since the previous look - a
 * response of any class in HAProxy's counters (counted at the head, so a
 * long stream answered early), or a response over SPOP. A 5xx is an
 * answer too: the worker is not hung, and the failure rules judge it.
 * HAProxy's own 504 at `timeout server` is not among the server's counts.
 * Without a baseline (the first look, a restarted HAProxy) it cannot tell,
 * and says "answered": the watch then starts a look later, never sooner.
 */
static void look_in_flight(struct haproxy_link *link, struct breaker_table_entry *entry,
			   struct enforce_entry *en, const struct runtime_api_stat_row *row)
{
	struct enforcer *e = link->owner;
	uint64_t responses =
		row->hrsp_1xx + row->hrsp_2xx + row->hrsp_3xx + row->hrsp_4xx + row->hrsp_5xx;
	bool baseline = en->stall_looked_ms != 0 && !link->restarted &&
			responses >= en->responses_counted;
	bool answered = !baseline || responses != en->responses_counted ||
			e->last_spop_ms[breaker_table_index(e->table, entry)] >= en->stall_looked_ms;
	en->responses_counted = responses;
	en->stall_looked_ms = link->look_ms;
	struct breaker_event ev = breaker_table_look_in_flight(e->table, entry, &en->stall,
							       row->scur > 0, answered, link->look_ms);
	if (breaker_event_is_transition(&ev)) {
		struct breaker_cause cause = {
			.kind = BREAKER_CAUSE_IN_FLIGHT, .in_flight = row->scur, .now_ms = clock_now_ms()};
		breakers_publish(e->breakers, entry, &ev, &cause);
	}
}

/*
 * Every HTTP server HAProxy lists gets a breaker (within max_breakers): one
 * that only ever refuses connections sends nothing over SPOP, and its
 * faults come from the counters alone. TCP backends -- the agent's own
 * among them -- carry no HTTP statuses and are never the breakers' to
 * drain. Looked up without touching recency: eviction follows SPOP
 * traffic, not the order of `show stat` rows.
 */
static void on_stat_row(void *ctx, const struct runtime_api_stat_row *row)
{
	struct haproxy_link *link = ctx;
	struct enforcer *e = link->owner;
	static const char http[] = "http";

	if (row->mode.len && !(row->mode.len == 4 && memcmp(row->mode.ptr, http, 4) == 0))
		return;
	/* A server-template slot DNS has not filled: no worker to judge. */
	if (row->has_addr && row->addr.len == 0)
		return;
	/* Left out on purpose: no breaker, and not unwired either. */
	if (!breaker_policies_guard(&e->table->policies, row->pxname.ptr, row->pxname.len,
				    row->svname.ptr, row->svname.len))
		return;
	enum breaker_table_status status;
	struct breaker_table_entry *entry =
		breaker_table_get_quiet(e->table, row->pxname.ptr, row->pxname.len, row->svname.ptr,
					row->svname.len, clock_now_ms(), &status);
	if (!entry)
		return; /* table full of judgements, or a name we do not keep */
	uint32_t index = breaker_table_index(e->table, entry);
	struct enforce_entry *en = &link->entries[index];
	/* Whether this backend's traffic reaches SPOP: in steady-state mode
	 * only what is not a success is notified, of which a 5xx always. */
	uint64_t notified = link->watched_map[0] ? row->hrsp_5xx
						 : row->hrsp_1xx + row->hrsp_2xx + row->hrsp_3xx +
							   row->hrsp_4xx + row->hrsp_5xx;
	wiring_note_row(&link->wiring, link->look_id, row->pxname.ptr, row->pxname.len, notified,
			e->last_spop_ms[index] != 0);
	if (en->last_command <= link->look_queued_after)
		en->seen.maxconn = row->slim < 0 ? 0 : (uint32_t)row->slim;
	en->seen.sessions = row->scur > UINT32_MAX ? UINT32_MAX : (uint32_t)row->scur;
	record_faults(link, entry, en, row);
	note_counted_successes(link, entry, en, row);
	look_in_flight(link, entry, en, row);
}

static size_t on_stat_bytes(void *ctx, const char *buf, size_t len, bool at_end)
{
	struct haproxy_link *link = ctx;
	return runtime_api_stat_stream_feed(&link->stat_stream, buf, len, at_end);
}

#define WIRING_GRACE_LOOKS 20
#define WIRING_GRACE_MIN_MS 2000
/* Backends named in the log at one look; the rest are counted. */
#define WIRING_SAID_PER_LOOK 5

struct unwired_said {
	struct haproxy_link *link;
	unsigned said, more;
};

/* Whether any breaker was ever named over SPOP: if none was, the whole
 * SPOE link is missing, not one frontend's line. */
static bool spop_ever_spoke(const struct enforcer *e)
{
	for (uint32_t i = 0; i < e->capacity; i++)
		if (e->last_spop_ms[i] != 0)
			return true;
	return false;
}

static void on_unwired(void *ctx, const char *backend, uint64_t responses)
{
	struct unwired_said *said = ctx;
	struct haproxy_link *link = said->link;
	if (said->said >= WIRING_SAID_PER_LOOK) {
		said->more++;
		return;
	}
	said->said++;
	if (!spop_ever_spoke(link->owner))
		log_warning("HAProxy %s served %llu responses of backend %s and no SPOP message "
			    "has come at all: check that its frontends have `filter spoe engine "
			    "breaker config spoe-breaker.conf` and that the SPOE configuration's "
			    "use-backend reaches this agent's listen address (docs/wiring.md)",
			    runtime_api_client_address(link->client), (unsigned long long)responses,
			    backend);
	else
		log_warning("HAProxy %s served %llu responses of backend %s that no SPOP message "
			    "named: its failures are not judged. Add `filter spoe engine breaker "
			    "config spoe-breaker.conf` to the frontend routing to it (or check the "
			    "breaker-observe message's condition), or set `guarded = false` in "
			    "[backend %s] to leave it out on purpose (docs/wiring.md)",
			    runtime_api_client_address(link->client), (unsigned long long)responses,
			    backend, backend);
}

/* `show stat` is streamed: its rows were recorded as they came. */
static void on_stat(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	(void)reply;
	(void)len;

	link->stat_read = result == RUNTIME_API_OK &&
			  runtime_api_stat_stream_usable(&link->stat_stream);
	if (result == RUNTIME_API_OK && !link->stat_read)
		log_warning("HAProxy %s: unreadable 'show stat': %s",
			    runtime_api_client_address(link->client), link->stat_stream.report.error);
	if (!link->stat_read)
		return;
	/* Twenty looks, and never under 2 s: an agent just started is named
	 * as soon as HAProxy's check has marked it up. */
	uint64_t grace_ms = (uint64_t)(link->owner->poll_interval * 1000.0) * WIRING_GRACE_LOOKS;
	if (grace_ms < WIRING_GRACE_MIN_MS)
		grace_ms = WIRING_GRACE_MIN_MS;
	struct unwired_said said = {.link = link};
	wiring_end_look(&link->wiring, link->look_id, link->look_ms, grace_ms, link->restarted,
			on_unwired, &said);
	if (said.more > 0)
		log_warning("HAProxy %s: %u more backends carry traffic no SPOP message names "
			    "(listed in /state)",
			    runtime_api_client_address(link->client), said.more);
}

/*
 * What follows a look walks the whole table: converging every breaker on
 * what the look said, then, at the end of a round, confirming successes
 * and dropping servers no HAProxy has. At 100,000 servers that is several
 * milliseconds, so it is done in slices of SWEEP_SLICE entries, one per
 * loop turn, SPOP served in between. The round is not over until its
 * sweep is, so no look starts meanwhile. Entries created or removed by
 * SPOP during a sweep are handled as at any other moment between looks.
 */
#define SWEEP_SLICE 8192
#define SWEEP_NONE UINT32_MAX

/* An open breaker's moment to probe, into its backend's earliest. */
static void note_retry_at(struct haproxy_link *link, const struct breaker_table_entry *entry,
			  const struct enforce_entry *en)
{
	if (entry->breaker.state != BREAKER_OPEN)
		return;
	struct ejection_backend *g = group_in_slot(link, en, link->groups_current);
	if (!g)
		return;
	int64_t at = retry_map_moment((int64_t)time(NULL),
				      breaker_retry_after_s(&entry->breaker, clock_now_ms()));
	if (at != RETRY_AT_NONE && (g->retry_at_s == RETRY_AT_NONE || at < g->retry_at_s))
		g->retry_at_s = at;
}

/* Sends what turns the entry `have` into `want` for one backend. */
static void retry_map_write(struct haproxy_link *link, const char *backend, int64_t have,
			    int64_t want)
{
	char command[OWNER_MAP_CMD_MAX];
	if (!retry_map_cmd(command, sizeof(command), link->retry_map, backend, have, want))
		return;
	send_command(link, command, "when the backend may take traffic again, for HAProxy's own 503");
	link->retry_last_command = link->commands;
}

/*
 * The look was converged: brings HAProxy's retry map to the moments its
 * backends' open breakers gathered (note_retry_at). Only from a look that
 * read the map after the last command to it was done.
 */
static void sync_retry_map(struct haproxy_link *link)
{
	if (link->owner->mode != ENFORCE_RUNTIME_API || !link->retry_map[0] || !link->retry_read ||
	    link->retry_last_command > link->look_queued_after || link->groups_current < 0)
		return;
	struct ejection_groups *g = &link->groups[link->groups_current];
	if (g->look_id != link->look_id)
		return;
	for (size_t i = 0; i < link->nb_retry_have; i++)
		link->retry_have[i].seen = false;
	for (uint32_t i = 0; i < g->nb; i++) {
		const struct ejection_backend *b = &g->groups[i];
		struct retry_map_entry *have =
			retry_map_lookup(link->retry_have, link->nb_retry_have, b->name);
		if (have)
			have->seen = true;
		if (have && have->duplicate) {
			/* del map removes every copy; then one is written. */
			retry_map_write(link, b->name, have->at_s, RETRY_AT_NONE);
			retry_map_write(link, b->name, RETRY_AT_NONE, b->retry_at_s);
			continue;
		}
		retry_map_write(link, b->name, have ? have->at_s : RETRY_AT_NONE, b->retry_at_s);
	}
	/* Backends this HAProxy no longer lists. */
	for (size_t i = 0; i < link->nb_retry_have; i++)
		if (!link->retry_have[i].seen)
			retry_map_write(link, link->retry_have[i].backend, link->retry_have[i].at_s,
					RETRY_AT_NONE);
}

/* One entry of a look that was read whole. */
static void reconcile_entry(struct haproxy_link *link, struct breaker_table_entry *entry)
{
	struct enforcer *e = link->owner;
	struct enforce_entry *en = &link->entries[breaker_table_index(e->table, entry)];

	if (en->seen_in_look != link->look_id)
		en->seen.known = false;
	if (link->owner_read && en->owner_in_look != link->look_id &&
	    en->last_command <= link->look_queued_after)
		en->owner.present = false; /* the map does not list it */
	if (e->mode == ENFORCE_RUNTIME_API || e->mode == ENFORCE_NONE)
		converge_entry(link, entry);
	sync_watched(link, entry, en, true);
	note_retry_at(link, entry, en);
}

/* Converges up to *budget entries of the link's look; true when done. */
static bool reconcile_slice(struct haproxy_link *link, uint32_t *budget)
{
	struct breaker_table *t = link->owner->table;

	while (link->reconcile_next < t->allocated && *budget > 0) {
		struct breaker_table_entry *entry = breaker_table_at(t, link->reconcile_next++);
		(*budget)--;
		if (entry->in_use)
			reconcile_entry(link, entry);
	}
	return link->reconcile_next >= t->allocated;
}

/* How long a breaker whose server no HAProxy lists is kept after SPOP
 * last spoke of it: traffic for it means some HAProxy has it - one whose
 * Runtime API the agent was not given - and its judgement must not be
 * thrown away every poll_interval. */
#define UNLISTED_IDLE_MS 60000

/* A server no configured HAProxy lists: keep it while SPOP speaks of it. */
static bool keep_unlisted(struct enforcer *e, struct breaker_table_entry *entry, uint32_t index)
{
	uint64_t last = e->last_spop_ms[index];
	if (last == 0 || clock_now_ms() - last >= UNLISTED_IDLE_MS)
		return false;
	if (!e->unlisted_said) {
		e->unlisted_said = true;
		log_warning("SPOP speaks of %s/%s, which no configured HAProxy lists: is a "
			    "runtime_api missing for another HAProxy? Such breakers are kept while "
			    "traffic for them comes, and forgotten %d s after it stops (said once)",
			    entry->backend, entry->server, UNLISTED_IDLE_MS / 1000);
	}
	return true;
}

/* What one HAProxy keeps for a server it no longer has: its ownership
 * record (a server added later under the name must not read as drained by
 * the agent), its watched entry, and an open verdict of this node. */
static void forget_on_link(struct haproxy_link *link, struct breaker_table_entry *entry,
			   struct enforce_entry *en)
{
	struct enforcer *e = link->owner;
	char command[OWNER_MAP_CMD_MAX];
	static const struct owner_record none = {0};

	/* A slot HAProxy keeps with no address: what the agent did there is
	 * lifted, or the worker DNS puts there next would find it drained by
	 * nobody the agent knows. (A deleted server has nothing to lift.) */
	if (en->emptied_in_look == link->look_id && (en->mem.drained_by_us || en->mem.maxconn_by_us)) {
		struct enforce_seen seen = en->seen;
		seen.known = true;
		seen.maint = false;
		struct enforce_plan plan = enforce_plan(BREAKER_CLOSED, 1, &seen, &en->mem);
		if (plan.set_ready &&
		    runtime_api_cmd_set_state(command, sizeof(command), entry->backend, entry->server,
					      "ready"))
			send_command(link, command, "the server points at no worker any more");
		if (plan.set_maxconn &&
		    runtime_api_cmd_set_maxconn(command, sizeof(command), entry->backend,
						entry->server, plan.maxconn))
			send_command(link, command, "the server points at no worker any more");
	}
	if (e->mode == ENFORCE_RUNTIME_API && link->owner_known && en->owner.present &&
	    owner_map_cmd(command, sizeof(command), link->owner_map, entry->backend, entry->server,
			  &en->owner, &none))
		send_command(link, command, "HAProxy no longer has the server");
	uint64_t before = link->commands;
	if (link->watched_map[0] && en->watched_have &&
	    watched_map_cmd(command, sizeof(command), link->watched_map, entry->backend,
			    entry->server, false))
		queue_command(link, command, "HAProxy no longer has the server", true);
	if (link->commands != before)
		link->watched_last_command = link->commands;
	if (e->mode == ENFORCE_RUNTIME_API && e->verdict_table[0] && en->verdict_published &&
	    link->verdicts_known && !link->verdicts_missing &&
	    verdicts_cmd_set(command, sizeof(command), e->verdict_table, entry->backend,
			     entry->server, VERDICT_CLOSED, (uint64_t)time(NULL), e->node_id))
		send_command(link, command, "HAProxy no longer has the server");
}

/* A server HAProxy listed and lists no more (`del server`, a reload
 * without it, a DNS record gone): forgotten at once, with what each
 * HAProxy keeps for it; its worker's breaker is remembered, should the
 * worker come back in another server. */
static void forget_server(struct enforcer *e, struct breaker_table_entry *entry, uint32_t index)
{
	const struct endpoint *at = &e->slots[index].breaker_at;
	if (endpoint_known(at) && endpoint_recall_worth(&entry->breaker))
		endpoint_recall_put(e->recall, entry->backend, at, &entry->breaker, clock_now_ms());
	for (unsigned i = 0; i < e->nb_links; i++)
		forget_on_link(&e->links[i], entry, &e->links[i].entries[index]);
	log_notice("breaker %s/%s dropped: HAProxy no longer lists this server", entry->backend,
		   entry->server);
	e->stats.dropped_breakers++;
	breaker_table_remove(e->table, entry);
}

/*
 * Every HAProxy of the round was read. The one step that needs them all:
 * successes recorded before the round are confirmed (no aborted body can
 * void them any more) and a breaker no HAProxy lists is dropped, unless
 * SPOP still speaks of it. After a round with a failed look neither
 * happens: a success stays provisional until a complete round, and an
 * unread HAProxy may still have the server.
 */
static void end_round_entry(struct enforcer *e, struct breaker_table_entry *entry)
{
	uint32_t index = breaker_table_index(e->table, entry);
	bool known_anywhere = false;

	for (unsigned i = 0; i < e->nb_links; i++)
		known_anywhere |= e->links[i].entries[index].seen.known;
	if (known_anywhere) {
		breaker_confirm_successes(&entry->breaker);
		return;
	}
	if (e->slots[index].listed) {
		forget_server(e, entry, index);
		return;
	}
	if (keep_unlisted(e, entry, index))
		return;
	log_notice("breaker %s/%s dropped: no HAProxy has this server", entry->backend,
		   entry->server);
	e->stats.dropped_breakers++;
	breaker_table_remove(e->table, entry);
}

/* Up to *budget entries of end_round; true when done. */
static bool end_round_slice(struct enforcer *e, uint32_t *budget)
{
	struct breaker_table *t = e->table;

	while (e->end_round_next < t->allocated && *budget > 0) {
		struct breaker_table_entry *entry = breaker_table_at(t, e->end_round_next++);
		(*budget)--;
		if (entry->in_use)
			end_round_entry(e, entry);
	}
	return e->end_round_next >= t->allocated;
}

/* One look fewer to wait for; the last one ends the round. */
static void look_finished(struct enforcer *e)
{
	if (e->round_pending > 0 && --e->round_pending == 0 && e->round_ok)
		e->end_round_next = 0;
}

/* A slice of whatever sweep is under way; re-armed until all are done. */
static void sweep(struct enforcer *e)
{
	uint32_t budget = SWEEP_SLICE;

	for (unsigned i = 0; i < e->nb_links && budget > 0; i++) {
		struct haproxy_link *link = &e->links[i];
		if (link->reconcile_next == SWEEP_NONE || !reconcile_slice(link, &budget))
			continue;
		link->reconcile_next = SWEEP_NONE;
		sync_retry_map(link);
		look_finished(e);
	}
	if (e->end_round_next != SWEEP_NONE && budget > 0 && end_round_slice(e, &budget))
		e->end_round_next = SWEEP_NONE;

	bool more = e->end_round_next != SWEEP_NONE;
	for (unsigned i = 0; i < e->nb_links; i++)
		more |= e->links[i].reconcile_next != SWEEP_NONE;
	if (more && !ev_is_active(&e->sweep_timer))
		ev_timer_start(e->loop, &e->sweep_timer);
}

static void sweep_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	sweep(container_of(w, struct enforcer, sweep_timer));
}

static size_t on_servers_state_bytes(void *ctx, const char *buf, size_t len, bool at_end)
{
	struct haproxy_link *link = ctx;
	return runtime_api_servers_state_stream_feed(&link->state_stream, buf, len, at_end);
}

/* The last answer of a look; streamed, like `show stat`. */
static void on_servers_state(void *ctx, enum runtime_api_result result, const char *reply,
			     size_t len)
{
	struct haproxy_link *link = ctx;
	struct enforcer *e = link->owner;
	(void)reply;
	(void)len;

	link->looking = false;
	bool states_read = result == RUNTIME_API_OK &&
			   runtime_api_servers_state_stream_usable(&link->state_stream);
	if (result == RUNTIME_API_OK && !states_read)
		log_warning("HAProxy %s: unreadable 'show servers state': %s",
			    runtime_api_client_address(link->client),
			    link->state_stream.report.error);
	/* Without the servers' states every breaker would look unknown and be
	 * dropped: a partial look converges nothing. */
	if (states_read && link->stat_read) {
		link->looked_once = true;
		link->groups_current = (int)(link->look_id & 1);
		if (link->owner_read)
			link->owner_known = true;
		e->stats.reconciliations++;
		link->reconcile_next = 0;
	} else {
		e->stats.looks_failed++;
		e->round_ok = false;
		look_finished(e);
	}
	/* A table of one slice is swept at once; a larger one from the loop. */
	sweep(e);
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

static void on_verdict_table(void *ctx, enum runtime_api_result result, const char *reply,
			     size_t len)
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

static bool start_look(struct haproxy_link *link)
{
	/* Queued together, the answers follow each other at once: `show info`
	 * and the ownership map in one exchange, then the two replies that
	 * grow with the fleet, each streamed in an exchange of its own (parsed
	 * as they arrive, never held whole). The servers' states come last:
	 * their answer converges. */
	char show_owner[OWNER_MAP_PATH_MAX + 16], show_retry[OWNER_MAP_PATH_MAX + 16];
	char show_watched[OWNER_MAP_PATH_MAX + 16];
	char show_verdicts[RUNTIME_API_CMD_MAX];
	struct enforcer *e = link->owner;
	link->look_id++;
	link->look_ms = clock_now_ms();
	link->wiring.verdicts_wanted = e->verdict_table[0] != '\0';
	link->stat_read = false;
	link->owner_read = false;
	link->retry_read = false;
	link->watched_read = false;
	link->look_queued_after = link->commands_done;
	runtime_api_stat_stream_init(&link->stat_stream, on_stat_row, link);
	runtime_api_servers_state_stream_init(&link->state_stream, on_server_state, link);
	snprintf(show_owner, sizeof(show_owner), "show map %s", link->owner_map);
	snprintf(show_retry, sizeof(show_retry), "show map %s", link->retry_map);
	snprintf(show_watched, sizeof(show_watched), "show map %s", link->watched_map);
	bool queued =
		runtime_api_submit(link->client, "show info", on_info, link) &&
		/* The level is configuration: asked again only of a new
		 * process (which sets maps_search), until it is admin. */
		((link->wiring.level == WIRING_LEVEL_ADMIN && !link->maps_search) ||
		 runtime_api_submit(link->client, "show cli level", on_cli_level, link)) &&
		/* The records' names are looked for until found; from then on
		 * they are read, and a reply that no longer knows one starts
		 * the search again (on_owner_map, on_retry_map). */
		((link->owner_map[0] && link->retry_map[0] && !link->maps_search) ||
		 runtime_api_submit(link->client, "show map", on_map_list, link)) &&
		(!link->owner_map[0] ||
		 runtime_api_submit(link->client, show_owner, on_owner_map, link)) &&
		(!link->retry_map[0] ||
		 runtime_api_submit(link->client, show_retry, on_retry_map, link)) &&
		(!link->watched_map[0] ||
		 runtime_api_submit(link->client, show_watched, on_watched_map, link)) &&
		runtime_api_submit_streamed(link->client, "show stat -1 4 -1", on_stat_bytes, on_stat,
					    link) &&
		/* After `show stat`: the breakers of every server it lists
		 * exist, so a verdict finds its server's. */
		(!e->verdict_table[0] ||
		 !verdicts_cmd_show(show_verdicts, sizeof(show_verdicts), e->verdict_table) ||
		 runtime_api_submit(link->client, show_verdicts, on_verdict_table, link)) &&
		runtime_api_submit_streamed(link->client, "show servers state",
					    on_servers_state_bytes, on_servers_state, link);
	link->looking = queued;
	if (!queued)
		log_warning("HAProxy %s: queue full, look postponed",
			    runtime_api_client_address(link->client));
	return queued;
}

static void look_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct enforcer *e = container_of(w, struct enforcer, look_timer);
	(void)loop;
	(void)revents;

	/* A slow HAProxy still answering the last round, or the round still
	 * being swept: wait for it rather than pile looks up in its queue. */
	if (e->round_pending > 0 || e->end_round_next != SWEEP_NONE)
		return;
	e->round_ok = true;
	for (unsigned i = 0; i < e->nb_links; i++) {
		if (start_look(&e->links[i]))
			e->round_pending++;
		else
			e->round_ok = false;
	}
	if (e->round_pending == 0 && e->round_ok) {
		e->end_round_next = 0;
		sweep(e);
	}
}

/* ---- agent-check ---- */

static void agent_check_answer(void *ctx, const char *backend, const char *server, char *buf,
			       size_t size)
{
	struct enforcer *e = ctx;
	struct breaker_table_entry *entry =
		breaker_table_find(e->table, backend, strlen(backend), server, strlen(server));
	if (!entry) {
		enforce_agent_check_answer(BREAKER_CLOSED, 1, NULL, buf, size);
		return;
	}
	const struct breaker *b = &entry->breaker;
	enforce_agent_check_answer(b->state, b->policy->half_open_probes,
				   &e->agent_check_mem[breaker_table_index(e->table, entry)], buf,
				   size);
}

/* ---- life ---- */

/* The link of `previous` that talks to `address`, or NULL. */
static struct haproxy_link *find_link(struct enforcer *previous, const char *address)
{
	for (unsigned i = 0; previous && i < previous->nb_links; i++)
		if (strcmp(runtime_api_client_address(previous->links[i].client), address) == 0)
			return &previous->links[i];
	return NULL;
}

/* Takes over what `previous` knows; only once the new enforcer is complete,
 * so that a failed reload leaves previous untouched. */
static void take_over(struct enforcer *e, struct enforcer *previous)
{
	if (!previous)
		return;
	e->stats = previous->stats;
	/* Both were sized to the table's entries: the same capacity. */
	memcpy(e->last_spop_ms, previous->last_spop_ms, e->capacity * sizeof(*e->last_spop_ms));
	memcpy(e->slots, previous->slots, e->capacity * sizeof(*e->slots));
	struct endpoint_recall *swap_recall = e->recall;
	e->recall = previous->recall;
	previous->recall = swap_recall;
	for (unsigned i = 0; i < e->nb_links; i++) {
		struct haproxy_link *old = find_link(previous, runtime_api_client_address(e->links[i].client));
		if (!old)
			continue;
		struct enforce_entry *swap = e->links[i].entries;
		e->links[i].entries = old->entries;
		old->entries = swap;
		/* Commands still queued on the old socket fail with it; counts
		 * start again on the new one, so the next look is believed. */
		/* The new link's list of servers waiting for room starts empty:
		 * they wait again from their next convergence. */
		for (uint32_t j = 0; j < e->capacity; j++) {
			struct enforce_entry *en = &e->links[i].entries[j];
			en->last_command = 0;
			en->ejection_capped = false;
			/* The new link's looks and commands count from zero: the
			 * next look's read of the watched map decides. */
			en->watched_command = 0;
			en->watched_in_look = 0;
			en->watched_have = false;
		}
		/* The maps it found are still there: read from the first look. */
		memcpy(e->links[i].watched_map, old->watched_map, sizeof(old->watched_map));
		memcpy(e->links[i].retry_map, old->retry_map, sizeof(old->retry_map));
		e->links[i].info = old->info;
		e->links[i].info_known = old->info_known;
		/* What it lacks was said: not again for a reload of the agent. */
		struct wiring swap_wiring = e->links[i].wiring;
		e->links[i].wiring = old->wiring;
		old->wiring = swap_wiring;
	}
	if (e->agent_check_mem && previous->agent_check_mem) {
		struct enforce_memory *swap = e->agent_check_mem;
		e->agent_check_mem = previous->agent_check_mem;
		previous->agent_check_mem = swap;
	}
}

struct enforcer *enforcer_new(struct ev_loop *loop, const struct config *c,
			      struct breakers *breakers, struct enforcer *previous, char *err,
			      size_t err_size)
{
	struct enforcer *e = calloc(1, sizeof(*e));
	/* Per-index state for the entries the table has now; more as it grows
	 * (on_reserve). At least one, so that no array is a zero-size alloc. */
	uint32_t nb_entries = breakers->table.allocated ? breakers->table.allocated : 1;
	if (!e) {
		errmsg_set(err, err_size, "out of memory");
		return NULL;
	}
	e->loop = loop;
	e->mode = c->enforce;
	e->breakers = breakers;
	e->table = &breakers->table;
	e->poll_interval = (double)c->poll_ms / 1000.0;
	snprintf(e->verdict_table, sizeof(e->verdict_table), "%s", c->verdict_table);
	e->node_id = c->node_id;
	/* Two looks and a second: a look late or failed once does not let go
	 * of a verdict that still stands. */
	e->verdict_hold_ms = 2 * c->poll_ms + 1000;
	ev_timer_init(&e->look_timer, look_timer_cb, 0., e->poll_interval);
	ev_timer_init(&e->sweep_timer, sweep_cb, 0., 0.);
	e->end_round_next = SWEEP_NONE;
	e->capacity = nb_entries;
	e->last_spop_ms = calloc(nb_entries, sizeof(*e->last_spop_ms));
	e->slots = calloc(nb_entries, sizeof(*e->slots));
	e->recall = calloc(1, sizeof(*e->recall));
	if (!e->last_spop_ms || !e->slots || !e->recall) {
		errmsg_set(err, err_size, "out of memory");
		enforcer_free(e);
		return NULL;
	}

	for (unsigned i = 0; i < c->nb_runtime_api; i++) {
		struct haproxy_link *link = &e->links[e->nb_links];
		char why[256];
		link->owner = e;
		link->reconcile_next = SWEEP_NONE;
		link->groups_current = -1;
		link->index = e->nb_links;
		link->entries = calloc(nb_entries, sizeof(*link->entries));
		link->client = runtime_api_client_new(loop, c->runtime_api[i], NULL, why, sizeof(why));
		if (link->client)
			link->commands_client =
				runtime_api_client_new(loop, c->runtime_api[i], NULL, why, sizeof(why));
		e->nb_links++;
		if (!link->client || !link->commands_client || !link->entries) {
			errmsg_set(err, err_size, "runtime_api %s: %s", c->runtime_api[i],
				 link->client && link->commands_client ? "out of memory" : why);
			enforcer_free(e);
			return NULL;
		}
	}
	if (c->enforce == ENFORCE_AGENT_CHECK) {
		e->agent_check_mem = calloc(nb_entries, sizeof(*e->agent_check_mem));
		if (!e->agent_check_mem) {
			errmsg_set(err, err_size, "out of memory");
			enforcer_free(e);
			return NULL;
		}
		if (!agent_check_open(&e->agent_check, loop, c->agent_check, agent_check_answer, e, err,
				      err_size)) {
			enforcer_free(e);
			return NULL;
		}
		e->agent_check_open = true;
	}
	struct breaker_subscriber s = {.name = "HAProxy link",
				       .recorded = on_recorded,
				       .reserve = on_reserve,
				       .created = on_created,
				       .ctx = e};
	if (!breakers_subscribe(breakers, &s)) {
		errmsg_set(err, err_size, "too many breaker subscribers");
		enforcer_free(e);
		return NULL;
	}
	take_over(e, previous);
	/* The previous link's held ACKs all go (its commands are failed as it
	 * is freed); this one's points come after them. */
	if (previous)
		e->ack_hold.issued = e->ack_hold.settled = previous->ack_hold.issued;
	if (e->nb_links > 0)
		ev_timer_start(loop, &e->look_timer);
	log_notice("enforcement: %s%s", enforce_mode_name(e->mode),
		   e->mode == ENFORCE_NONE ? " (shadow: decisions are logged, HAProxy is not changed)"
					   : "");
	return e;
}

void enforcer_free(struct enforcer *e)
{
	if (!e)
		return;
	e->freeing = true;
	breakers_unsubscribe(e->breakers, e);
	ev_timer_stop(e->loop, &e->look_timer);
	ev_timer_stop(e->loop, &e->sweep_timer);
	if (e->agent_check_open)
		agent_check_close(&e->agent_check);
	for (unsigned i = 0; i < e->nb_links; i++) {
		runtime_api_client_free(e->links[i].client);
		runtime_api_client_free(e->links[i].commands_client);
		free(e->links[i].entries);
		free(e->links[i].retry_have);
		free(e->links[i].groups[0].groups);
		free(e->links[i].groups[1].groups);
		free(e->links[i].capped);
		wiring_free(&e->links[i].wiring);
	}
	free(e->agent_check_mem);
	free(e->last_spop_ms);
	free(e->slots);
	free(e->recall);
	free(e);
}

uint64_t enforcer_ack_take(struct enforcer *e)
{
	if (!e || !e->ack_hold_wanted)
		return 0;
	e->ack_hold_wanted = false;
	/* Only links that keep a watched map: another HAProxy's drains have
	 * nothing to do with this ACK. */
	uint64_t queued[ENFORCE_MAX_HAPROXY] = {0};
	for (unsigned i = 0; i < e->nb_links; i++)
		if (e->links[i].watched_map[0])
			queued[i] = e->links[i].commands;
	return ack_hold_point(&e->ack_hold, queued, e->nb_links);
}

bool enforcer_ack_passed(const struct enforcer *e, uint64_t ticket)
{
	return !e || ack_hold_passed(&e->ack_hold, ticket);
}

void enforcer_on_ack_release(struct enforcer *e, enforcer_release_fn fn, void *ctx)
{
	e->ack_released = fn;
	e->ack_released_ctx = ctx;
}

static bool holds_something(const struct enforce_memory *m)
{
	return m->drained_by_us || m->maxconn_by_us;
}

void enforcer_memories(const struct enforcer *e, uint32_t index, enforcer_memory_fn fn, void *ctx)
{
	for (unsigned i = 0; i < e->nb_links; i++)
		if (holds_something(&e->links[i].entries[index].mem))
			fn(ctx, runtime_api_client_address(e->links[i].client),
			   &e->links[i].entries[index].mem);
	if (e->agent_check_mem && holds_something(&e->agent_check_mem[index]))
		fn(ctx, NULL, &e->agent_check_mem[index]);
}

bool enforcer_remember(struct enforcer *e, uint32_t index, const char *address,
		       const struct enforce_memory *mem)
{
	if (!address) {
		if (!e->agent_check_mem)
			return false;
		e->agent_check_mem[index] = *mem;
		return true;
	}
	struct haproxy_link *link = find_link(e, address);
	if (!link)
		return false;
	link->entries[index].mem = *mem;
	return true;
}

const char *enforcer_endpoint(const struct enforcer *e, uint32_t index)
{
	return e->slots[index].breaker_at.text;
}

void enforcer_restore_endpoint(struct enforcer *e, uint32_t index, const char *endpoint)
{
	snprintf(e->slots[index].breaker_at.text, sizeof(e->slots[index].breaker_at.text), "%s",
		 endpoint);
}

const struct ejection_backend *enforcer_backends(const struct enforcer *e, unsigned i,
						 uint32_t *nb)
{
	const struct haproxy_link *link = &e->links[i];
	*nb = 0;
	if (link->groups_current < 0)
		return NULL;
	*nb = link->groups[link->groups_current].nb;
	return link->groups[link->groups_current].groups;
}

const struct enforce_stats *enforcer_stats(const struct enforcer *e)
{
	return &e->stats;
}

enum enforce_mode enforcer_mode(const struct enforcer *e)
{
	return e->mode;
}

unsigned enforcer_runtime_api_count(const struct enforcer *e)
{
	return e->nb_links;
}

const struct runtime_api_client *enforcer_runtime_api(const struct enforcer *e, unsigned i)
{
	return e->links[i].client;
}

const struct runtime_api_stats *enforcer_runtime_api_stats(struct enforcer *e, unsigned i)
{
	struct haproxy_link *link = &e->links[i];
	const struct runtime_api_stats *a = runtime_api_client_stats(link->client);
	const struct runtime_api_stats *b = runtime_api_client_stats(link->commands_client);

	link->both = (struct runtime_api_stats){
		.commands_ok = a->commands_ok + b->commands_ok,
		.commands_failed = a->commands_failed + b->commands_failed,
		.dropped = a->dropped + b->dropped,
		.connects = a->connects + b->connects,
		.connect_failures = a->connect_failures + b->connect_failures,
		.timeouts = a->timeouts + b->timeouts,
	};
	return &link->both;
}

const struct wiring *enforcer_wiring(const struct enforcer *e, unsigned i)
{
	return &e->links[i].wiring;
}

bool enforcer_runtime_api_reachable(const struct enforcer *e, unsigned i)
{
	return runtime_api_client_reachable(e->links[i].client) &&
	       runtime_api_client_reachable(e->links[i].commands_client);
}
