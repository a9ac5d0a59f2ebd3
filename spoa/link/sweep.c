/*
 * sweep.c - what follows a look: every server converged on what it said
 * (its rest word judged first, converge.c for the rest), and the end of a
 * round that confirms successes and drops servers no HAProxy has any
 * more, swept in slices from the loop.
 */

#include "link/link_internal.h"
#include "util/clock.h"
#include "util/container_of.h"
#include "util/log.h"

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

/* One entry of a look that was read whole. */
static void reconcile_entry(struct haproxy_link *link, struct breaker_table_entry *entry)
{
	struct enforcer *e = link->owner;
	struct enforce_entry *en = &link->entries[breaker_table_index(e->table, entry)];

	if (en->seen_in_look != link->look.id)
		en->seen.known = false;
	if (link->records[RECORD_OWNER].read && en->owner_in_look != link->look.id &&
	    !link_look_predates(link, en->last_command))
		en->owner.present = false; /* the map does not list it */
	link_judge_rest_word(link, entry, en);
	if (e->mode == ENFORCE_RUNTIME_API || e->mode == ENFORCE_NONE)
		link_converge_entry(link, entry);
	link_sync_watched(link, entry, en, true);
	link_note_retry_at(link, entry, en);
}

/* Converges up to *budget entries of the link's look; true when done. */
static bool reconcile_slice(struct haproxy_link *link, uint32_t *budget)
{
	struct breaker_table *t = link->owner->table;
	struct breaker_table_entry *entry;

	uint32_t *next = &link->look.reconcile_next;
	for (; (entry = breaker_table_walk(t, next, budget)); (*next)++)
		reconcile_entry(link, entry);
	return !breaker_table_walk_cut(t, *next);
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
	char command[RUNTIME_API_CMD_MAX];

	/* A slot HAProxy keeps with no address: what the agent did there is
	 * lifted, or the worker DNS puts there next would find it drained by
	 * nobody the agent knows. (A deleted server has nothing to lift.) */
	if (en->emptied_in_look == link->look.id && (en->mem.drained_by_us || en->mem.maxconn_by_us)) {
		struct enforce_seen seen = en->seen;
		seen.known = true;
		seen.maint = false;
		struct enforce_plan plan = enforce_plan(BREAKER_CLOSED, 1, true, &seen, &en->mem);
		if (plan.set_ready &&
		    runtime_api_cmd_set_state(command, sizeof(command), entry->backend, entry->server,
					      "ready"))
			link_send_command(link, command, "the server points at no worker any more");
		if (plan.set_maxconn &&
		    runtime_api_cmd_set_maxconn(command, sizeof(command), entry->backend,
						entry->server, plan.maxconn))
			link_send_command(link, command, "the server points at no worker any more");
	}
	link_record_forget_owner(link, entry, en);
	link_record_forget_watched(link, entry, en);
	link_record_forget_verdict(link, entry, en);
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
	struct breaker_table_entry *entry;

	for (; (entry = breaker_table_walk(t, &e->end_round_next, budget)); e->end_round_next++)
		end_round_entry(e, entry);
	return !breaker_table_walk_cut(t, e->end_round_next);
}

/* One look fewer to wait for; the last one ends the round. */
void enforcer_look_finished(struct enforcer *e)
{
	if (e->round_pending > 0 && --e->round_pending == 0 && e->round_ok)
		e->end_round_next = 0;
}

/* A slice of whatever sweep is under way; re-armed until all are done. */
void enforcer_sweep(struct enforcer *e)
{
	uint32_t budget = SWEEP_SLICE;

	for (unsigned i = 0; i < e->nb_links && budget > 0; i++) {
		struct haproxy_link *link = &e->links[i];
		if (link->look.reconcile_next == SWEEP_NONE || !reconcile_slice(link, &budget))
			continue;
		link->look.reconcile_next = SWEEP_NONE;
		link_sync_retry_map(link);
		enforcer_look_finished(e);
	}
	if (e->end_round_next != SWEEP_NONE && budget > 0 && end_round_slice(e, &budget))
		e->end_round_next = SWEEP_NONE;

	bool more = e->end_round_next != SWEEP_NONE;
	for (unsigned i = 0; i < e->nb_links; i++)
		more |= e->links[i].look.reconcile_next != SWEEP_NONE;
	if (more && !ev_is_active(&e->sweep_timer))
		ev_timer_start(e->loop, &e->sweep_timer);
}

void enforcer_sweep_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	enforcer_sweep(container_of(w, struct enforcer, sweep_timer));
}
