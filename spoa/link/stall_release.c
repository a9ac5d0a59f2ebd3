/*
 * stall_release.c - ending the requests a hung worker holds.
 *
 * A breaker opened as stalled (core/stall_watch.c, core/silence_odds.c) has
 * its server drained, which keeps new requests away; the requests its
 * worker holds already would wait out HAProxy's `timeout server` (minutes,
 * for inference), and under closed-loop clients each one is a client that
 * sends nothing else meanwhile. `shutdown sessions server B/S`, sent on the
 * command connection right after the drain, ends them at once (what their
 * clients then get, version by version: docs/operating.md, "A hung
 * worker"). Only for the stalled rule: a failing worker answers, and holds
 * nothing worth ending.
 *
 * The transition marks the trip on each HAProxy (link_stall_release_mark);
 * the mark is acted on where the drain is planned (link_stall_release,
 * from converge.c), through the pure enforce_release_stalled(), so that
 * the operator's hand and the ejection cap bind the release as they bind
 * the drain. At most once a trip and a HAProxy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link/link_internal.h"
#include "util/log.h"

struct release_ctx {
	struct haproxy_link *link;
	char command[RUNTIME_API_CMD_MAX];
	char name[2 * NAME_MAX_LEN + 2]; /* BACKEND/SERVER */
	uint32_t in_flight;		 /* its scur at the last look */
};

void link_stall_release_mark(struct haproxy_link *link, const struct breaker_table_entry *entry,
			     struct enforce_entry *en, const struct breaker_event *ev)
{
	const struct breaker *b = &entry->breaker;

	if (ev->to == BREAKER_OPEN && ev->from != BREAKER_OPEN &&
	    ev->trip_rule == BREAKER_TRIP_STALLED && b->policy->release_stalled)
		en->release_trip = b->trips;
}

/* HAProxy's answer: nothing is its success (as for `set server`), a line
 * its refusal ("No such server."). */
static void release_done(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct release_ctx *rc = ctx;
	struct haproxy_link *link = rc->link;

	if (link->owner->freeing) {
		free(rc);
		return;
	}
	const char *address = runtime_api_client_address(link->client);
	/* Counted with the link's other commands (/metrics). */
	struct enforce_stats *stats = &link->owner->stats;
	if (result == RUNTIME_API_OK && len == 0)
		stats->commands_ok++;
	else if (result == RUNTIME_API_OK)
		stats->commands_refused++;
	else
		stats->commands_failed++;
	if (result == RUNTIME_API_OK && len == 0)
		log_notice("released %u held session(s) of %s on HAProxy %s: stalled (HAProxy "
			   "answered nothing: done; the count is the last look's)",
			   rc->in_flight, rc->name, address);
	else if (result == RUNTIME_API_OK)
		log_warning("HAProxy %s refused '%s': %.*s: the held sessions of %s stay until "
			    "timeout server",
			    address, rc->command, (int)strcspn(reply, "\n"), reply, rc->name);
	else
		log_warning("HAProxy %s: '%s' not delivered (%s): the held sessions of %s stay "
			    "until timeout server",
			    address, rc->command, reply, rc->name);
	free(rc);
}

static void send_release(struct haproxy_link *link, const struct breaker_table_entry *entry,
			 const struct enforce_entry *en, const char *command)
{
	const char *address = runtime_api_client_address(link->client);
	struct release_ctx *rc = malloc(sizeof(*rc));

	if (!rc) {
		log_error("out of memory queueing '%s'", command);
		return;
	}
	rc->link = link;
	rc->in_flight = en->seen.sessions;
	snprintf(rc->command, sizeof(rc->command), "%s", command);
	snprintf(rc->name, sizeof(rc->name), "%s/%s", entry->backend, entry->server);
	log_notice("HAProxy %s: %s (breaker open, stalled: the %u request(s) in flight there at "
		   "the last look would wait for timeout server)",
		   address, command, en->seen.sessions);
	if (!runtime_api_submit(link->cmd.client, command, release_done, rc)) {
		link->owner->stats.commands_failed++;
		log_warning("HAProxy %s: queue full, '%s' dropped: the held sessions of %s stay "
			    "until timeout server",
			    address, command, rc->name);
		free(rc);
	}
}

void link_stall_release(struct haproxy_link *link, struct breaker_table_entry *entry,
			struct enforce_entry *en, bool capped, const char *hands_off)
{
	struct enforce_release_decision d =
		enforce_release_stalled(&entry->breaker, en->release_trip, capped, hands_off);
	char command[RUNTIME_API_CMD_MAX];
	const char *address = runtime_api_client_address(link->client);

	if (d.what == ENFORCE_RELEASE_NONE || d.what == ENFORCE_RELEASE_WAIT)
		return;
	en->release_trip = 0; /* once a trip, whatever comes of it */
	if (d.what == ENFORCE_RELEASE_SKIP) {
		if (d.why)
			log_info("breaker %s/%s opened as stalled: the sessions its server holds on "
				 "HAProxy %s are left to timeout server: %s",
				 entry->backend, entry->server, address, d.why);
		return;
	}
	if (!runtime_api_cmd_shutdown_sessions(command, sizeof(command), entry->backend,
					       entry->server))
		return; /* a name no command may carry: its drain was never sent either */
	if (d.what == ENFORCE_RELEASE_SHOW || link->owner->mode != ENFORCE_RUNTIME_API) {
		log_info("enforce none: would send to HAProxy %s: %s (breaker open, stalled%s%s)",
			 address, command, d.why ? "; " : "", d.why ? d.why : "");
		link->owner->stats.commands_not_sent++;
		return;
	}
	send_release(link, entry, en, command);
}
