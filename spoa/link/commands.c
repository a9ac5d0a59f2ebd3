/*
 * commands.c - the link's commands to HAProxy: queued on each HAProxy's
 * command connection, or only logged under enforce none; their completions let
 * the ACKs held for them go (ack_hold.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link/link_internal.h"
#include "util/log.h"

struct command_ctx {
	struct haproxy_link *link;
	char command[HAPROXY_RECORD_CMD_MAX];
	/* A server command: what to take back if it never lands. */
	enum link_command_undo undo;
	link_refused_fn refused; /* a record's command: its own take-back */
	char backend[NAME_MAX_LEN + 1], server[NAME_MAX_LEN + 1];
	/* What the last look showed of the server before the command: the
	 * plan assumes the command applied (enforce_plan_assume_applied),
	 * and a command that never lands must not leave that assumption
	 * for the next transition to plan from. */
	struct enforce_seen seen_before;
};

/*
 * A server command that HAProxy never applied: what it undid of the
 * agent's own is the agent's again. Without this the memory said "lifted"
 * while HAProxy kept the drain, and the next look took the agent's own
 * drain for an operator's and left it there for good. The server is
 * found by name: its slot may have been reused since.
 */
static void take_back(struct command_ctx *cc, bool refused)
{
	struct haproxy_link *link = cc->link;
	struct enforcer *e = link->owner;
	struct breaker_table_entry *entry = breaker_table_find(
		e->table, cc->backend, strlen(cc->backend), cc->server, strlen(cc->server));
	if (!entry)
		return;
	struct enforce_entry *en = &link->entries[breaker_table_index(e->table, entry)];
	/* Without this, a transition before the next look planned from a
	 * server it took as ready (its maxconn given back): it found no
	 * drain to lift and forgot the agent's, left in HAProxy for good
	 * (the simulation's release_lift_lost_in_outage). */
	if (cc->undo == LINK_UNDO_DRAIN)
		en->seen.drained = cc->seen_before.drained;
	else if (cc->undo == LINK_UNDO_MAXCONN)
		en->seen.maxconn = cc->seen_before.maxconn;
	if (cc->refused) {
		/* Not delivered, it is not known what HAProxy holds, and the
		 * next look that reads the record says. */
		if (refused)
			cc->refused(link, entry, en);
		return;
	}
	if (cc->undo == LINK_UNDO_DRAIN)
		en->mem.drained_by_us = true;
	else
		en->mem.maxconn_by_us = true;
	log_notice("HAProxy %s: '%s' did not land: the agent's %s of %s/%s stays its own, the next "
		   "look tries again",
		   runtime_api_client_address(link->client), cc->command,
		   cc->undo == LINK_UNDO_DRAIN ? "drain" : "maxconn", cc->backend, cc->server);
}

/* Points whose commands have all completed let their ACKs go. */
static void settle_ack_holds(struct enforcer *e)
{
	uint64_t done[ENFORCE_MAX_HAPROXY];

	for (unsigned i = 0; i < e->nb_links; i++)
		done[i] = e->links[i].cmd.done;
	if (ack_hold_settle(&e->ack_hold, done, e->nb_links) && e->ack_released)
		e->ack_released(e->ack_released_ctx, e->ack_hold.settled);
}

static void command_done(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct command_ctx *cc = ctx;
	struct enforcer *e = cc->link->owner;

	cc->link->cmd.done++;
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
	if (!(result == RUNTIME_API_OK && len == 0) && !e->freeing &&
	    (cc->undo != LINK_UNDO_NOTHING || cc->refused))
		take_back(cc, result == RUNTIME_API_OK);
	free(cc);
}

/* Queues a command on the link's command connection; link->cmd.sent
 * counts it when queued. `observing`: a command that keeps HAProxy telling
 * the agent what it needs (the watched map), sent in every enforcement
 * mode - enforce none promises not to act on HAProxy's servers, and this
 * changes none; it keeps the breakers' view right. */
void link_queue_command(struct haproxy_link *link, const char *command, const char *why,
			bool observing)
{
	link_queue_command_logged(link, command, why, observing, LOG_LEVEL_NOTICE);
}

/* A command queued, logged at `level`; a server command (entry given)
 * carries what to take back if HAProxy never applies it: `undo` of the
 * agent's own, or a record's `refused`. */
static void queue(struct haproxy_link *link, const char *command, const char *why,
		  bool observing, enum log_level level, const struct breaker_table_entry *entry,
		  enum link_command_undo undo, link_refused_fn refused)
{
	struct enforcer *e = link->owner;

	if (e->mode != ENFORCE_RUNTIME_API && !observing) {
		log_info("enforce none: would send to HAProxy %s: %s (%s)",
			 runtime_api_client_address(link->client), command, why);
		e->stats.commands_not_sent++;
		return;
	}
	struct command_ctx *cc = malloc(sizeof(*cc));
	if (!cc) {
		log_error("out of memory queueing '%s'", command);
		return;
	}
	cc->link = link;
	snprintf(cc->command, sizeof(cc->command), "%s", command);
	cc->undo = entry ? undo : LINK_UNDO_NOTHING;
	cc->refused = entry ? refused : NULL;
	snprintf(cc->backend, sizeof(cc->backend), "%s", entry ? entry->backend : "");
	snprintf(cc->server, sizeof(cc->server), "%s", entry ? entry->server : "");
	if (entry)
		cc->seen_before = link->entries[breaker_table_index(e->table, entry)].seen;
	log_msg(level, "HAProxy %s: %s (%s)", runtime_api_client_address(link->client), command,
		why);
	if (!runtime_api_submit(link->cmd.client, command, command_done, cc)) {
		e->stats.commands_failed++;
		log_warning("HAProxy %s: queue full, '%s' dropped (the next look retries)",
			    runtime_api_client_address(link->client), command);
		if (cc->undo != LINK_UNDO_NOTHING)
			take_back(cc, false);
		free(cc);
		return;
	}
	link->cmd.sent++;
}

/* The same, the command logged at `level`: a write repeated at every look
 * (a verdict kept alive) is no news. */
void link_queue_command_logged(struct haproxy_link *link, const char *command, const char *why,
			       bool observing, enum log_level level)
{
	queue(link, command, why, observing, level, NULL, LINK_UNDO_NOTHING, NULL);
}

void link_send_command(struct haproxy_link *link, const char *command, const char *why)
{
	queue(link, command, why, false, LOG_LEVEL_NOTICE, NULL, LINK_UNDO_NOTHING, NULL);
}

void link_send_server_command(struct haproxy_link *link, const struct breaker_table_entry *entry,
			      const char *command, const char *why, enum link_command_undo undo)
{
	queue(link, command, why, false, LOG_LEVEL_NOTICE, entry, undo, NULL);
}

void link_send_record_command(struct haproxy_link *link, const struct breaker_table_entry *entry,
			      const char *command, const char *why, link_refused_fn refused)
{
	queue(link, command, why, false, LOG_LEVEL_NOTICE, entry, LINK_UNDO_NOTHING, refused);
}

uint64_t link_ack_hold_point(struct enforcer *e)
{
	/* Only links that keep a watched map: another HAProxy's drains have
	 * nothing to do with this ACK. */
	uint64_t queued[ENFORCE_MAX_HAPROXY] = {0};
	for (unsigned i = 0; i < e->nb_links; i++)
		if (e->links[i].watched_map[0])
			queued[i] = e->links[i].cmd.sent;
	return ack_hold_point(&e->ack_hold, queued, e->nb_links);
}

uint64_t enforcer_ack_settled(const struct enforcer *e)
{
	return e->ack_hold.settled;
}

void enforcer_on_ack_release(struct enforcer *e, enforcer_release_fn fn, void *ctx)
{
	e->ack_released = fn;
	e->ack_released_ctx = ctx;
}
