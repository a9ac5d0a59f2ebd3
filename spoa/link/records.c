/*
 * records.c - the maps HAProxy keeps for the agent: found in `show map`,
 * read at every look, and kept in step - the ownership record
 * (owner_map.h), the watched servers (watched_map.h) and the moment each
 * backend may take traffic again (retry_map.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "link/link_internal.h"
#include "link/watched_map.h"
#include "util/clock.h"
#include "util/log.h"

/* Keeps HAProxy's ownership map saying what the agent did to the server:
 * what a restarted agent without its snapshot reads back. Runtime API mode
 * only (it records Runtime API drains), once the map was read. */
void link_record_ownership(struct haproxy_link *link, struct breaker_table_entry *entry,
			   struct enforce_entry *en)
{
	char command[OWNER_MAP_CMD_MAX];
	struct owner_record want = owner_record_of(&en->mem);

	if (link->owner->mode != ENFORCE_RUNTIME_API || !link->owner_known ||
	    !owner_map_cmd(command, sizeof(command), link->owner_map, entry->backend,
			   entry->server, &en->owner, &want))
		return;
	uint64_t before = link->commands;
	link_send_command(link, command, "what the agent did, for its next start");
	if (link->commands != before) {
		en->owner = want;
		en->last_command = link->commands;
	}
}

/* `show map`: which of the agent's maps HAProxy loads, and under which
 * path - the watched servers, the retry moments, the ownership record. */
void link_on_map_list(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	char path[MAP_FILE_PATH_MAX];

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
void link_on_owner_map(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
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
void link_on_retry_map(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
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
		link_queue_command(link, command, "no breaker to watch", true);
	if (link->commands != before)
		link->watched_last_command = link->commands;
}

/* `show map FILE`: the servers HAProxy notifies every response of. */
void link_on_watched_map(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
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
bool link_sync_watched(struct haproxy_link *link, struct breaker_table_entry *entry,
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
	link_queue_command(link, command,
			   want ? "breaker dirty: every response matters"
				: "breaker clean: only failures matter",
			   true);
	if (link->commands == before)
		return false; /* not queued: the next look finds it missing and tries again */
	en->watched_have = want;
	en->watched_command = link->commands;
	link->watched_last_command = link->commands;
	return want;
}

/* An open breaker's moment to probe, into its backend's earliest. */
void link_note_retry_at(struct haproxy_link *link, const struct breaker_table_entry *entry,
			const struct enforce_entry *en)
{
	if (entry->breaker.state != BREAKER_OPEN)
		return;
	struct ejection_backend *g = link_group_in_slot(link, en, link->groups_current);
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
	link_send_command(link, command,
			  "when the backend may take traffic again, for HAProxy's own 503");
	link->retry_last_command = link->commands;
}

/*
 * The look was converged: brings HAProxy's retry map to the moments its
 * backends' open breakers gathered (link_note_retry_at). Only from a look that
 * read the map after the last command to it was done.
 */
void link_sync_retry_map(struct haproxy_link *link)
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
