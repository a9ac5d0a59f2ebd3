/*
 * records.c - what HAProxy keeps for the agent (haproxy_record.h), on one
 * link: found in `show map`, read at every look, said missing once, and
 * written - the life the four records share - and what the three maps
 * make of their entries: the ownership record (owner_map.h), the watched
 * servers (watched_map.h) and the moment each backend may take traffic
 * again (retry_map.h). The verdict table's entries are peers.c's.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "link/link_internal.h"
#include "records/verdicts.h"
#include "records/watched_map.h"
#include "util/clock.h"
#include "util/log.h"

static const struct haproxy_record_ops *const record_ops[HAPROXY_RECORDS] = {
	[RECORD_OWNER] = &owner_map_ops,
	[RECORD_RETRY] = &retry_map_ops,
	[RECORD_WATCHED] = &watched_map_ops,
	[RECORD_VERDICTS] = &verdict_table_ops,
};

static const char *address(const struct haproxy_link *link)
{
	return runtime_api_client_address(link->client);
}

/* The name a record goes by in this HAProxy: the file's for a map, the
 * configuration's for the table. */
static const char *record_name(const struct haproxy_link *link, enum haproxy_record_id id)
{
	return record_ops[id]->kind == HAPROXY_RECORD_TABLE ? link->records[id].where
							    : record_ops[id]->name;
}

/* Said once, until the record is back: what its absence costs. `reply`:
 * HAProxy's own words for a table it does not have. */
static void say_missing(struct haproxy_link *link, enum haproxy_record_id id, const char *reply,
			size_t len)
{
	const struct haproxy_record_ops *ops = record_ops[id];
	struct haproxy_record *r = &link->records[id];

	if (!ops->missing || r->missing_said)
		return;
	r->missing_said = true;
	if (ops->kind == HAPROXY_RECORD_TABLE)
		log_msg(ops->missing_level, "HAProxy %s has no stick table %s (%.*s): %s",
			address(link), record_name(link, id), (int)strcspn(reply, "\n"),
			reply, ops->missing);
	else
		log_msg(ops->missing_level, "HAProxy %s loads no %s: %s", address(link),
			record_name(link, id), ops->missing);
	(void)len;
}

/* Found (again): said when that is news - for a record HAProxy may lack,
 * only once its absence was said. */
static void say_found(struct haproxy_link *link, enum haproxy_record_id id)
{
	const struct haproxy_record_ops *ops = record_ops[id];
	struct haproxy_record *r = &link->records[id];
	bool news = ops->found && (!ops->missing || r->missing_said);

	r->missing_said = false;
	if (!news)
		return;
	if (ops->kind == HAPROXY_RECORD_TABLE)
		log_notice("HAProxy %s has stick table %s: %s", address(link), record_name(link, id),
			   ops->found);
	else
		log_notice("HAProxy %s loads %s: %s", address(link), record_name(link, id), ops->found);
}

/* `show map`: which of the agent's maps HAProxy loads, and under which
 * path. */
void link_on_map_list(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;

	if (result != RUNTIME_API_OK)
		return;
	link->maps_search = false;
	for (int id = 0; id < HAPROXY_RECORDS; id++) {
		if (record_ops[id]->kind != HAPROXY_RECORD_MAP)
			continue;
		switch (haproxy_record_search(&link->records[id], record_ops[id], reply, len)) {
		case RECORD_FOUND:
			say_found(link, id);
			break;
		case RECORD_LOST:
			if (record_ops[id]->lost)
				log_notice("HAProxy %s no longer loads %s: %s", address(link),
					   record_ops[id]->name, record_ops[id]->lost);
			say_missing(link, id, "", 0);
			break;
		case RECORD_UNSAFE:
			/* Said at every search: a map nobody keeps (a
			 * steady-state mode whose watched servers' successes
			 * are never notified, ...). */
			log_error("HAProxy %s loads %s under a path with characters other than "
				  "letters, digits and /._- : the agent cannot keep it; rename it",
				  address(link), record_ops[id]->name);
			break;
		case RECORD_STILL:
			if (!link->records[id].where[0])
				say_missing(link, id, "", 0);
			break;
		}
	}
	link->wiring.maps_known = true;
	link->wiring.owner_map = link->records[RECORD_OWNER].where[0] != '\0';
	link->wiring.retry_map = link->records[RECORD_RETRY].where[0] != '\0';
	link->wiring.watched_map = link->records[RECORD_WATCHED].where[0] != '\0';
}

bool link_records_look(struct haproxy_link *link, enum haproxy_record_kind kind,
		       const runtime_api_reply_fn read_cb[HAPROXY_RECORDS])
{
	char show[HAPROXY_RECORD_CMD_MAX];

	for (int id = 0; id < HAPROXY_RECORDS; id++) {
		if (record_ops[id]->kind != kind)
			continue;
		link->records[id].read = false;
		if (haproxy_record_show_cmd(show, sizeof(show), record_ops[id], &link->records[id]) &&
		    !runtime_api_submit(link->client, show, read_cb[id], link))
			return false;
	}
	return true;
}

bool link_record_read(struct haproxy_link *link, enum haproxy_record_id id, bool parsed,
		      unsigned skipped, const char *reply, size_t len)
{
	struct haproxy_record *r = &link->records[id];

	if (!parsed) {
		r->known = false;
		if (record_ops[id]->kind == HAPROXY_RECORD_MAP)
			link->maps_search = true; /* gone, or renamed: search again */
		else
			say_missing(link, id, reply, len);
		return false;
	}
	if (record_ops[id]->kind == HAPROXY_RECORD_TABLE && r->missing_said)
		say_found(link, id);
	r->read = true;
	r->known = true;
	if (skipped)
		log_debug("HAProxy %s: %u line(s) of %s skipped", address(link), skipped,
			  record_name(link, id));
	return true;
}

bool link_record_send(struct haproxy_link *link, enum haproxy_record_id id, const char *backend,
		      const char *server, const char *have, const char *want,
		      const struct link_record_why *why)
{
	char command[HAPROXY_RECORD_CMD_MAX];
	struct haproxy_record *r = &link->records[id];

	if (!haproxy_record_cmd(command, sizeof(command), record_ops[id], r->where, backend, server,
				have, want))
		return false;
	uint64_t before = link->cmd.sent;
	link_queue_command_logged(link, command, why->text, why->observing, why->level);
	if (link->cmd.sent == before)
		return false; /* not queued: the next look finds it missing and tries again */
	r->last_command = link->cmd.sent;
	return true;
}

/* ---- the ownership record ---- */

/* The ownership record's `set map` refused: the map has no entry for the
 * server (a new HAProxy process loaded its maps from their files). HAProxy
 * lists nothing, and the record is added. */
static void owner_set_refused(struct haproxy_link *link, struct breaker_table_entry *entry,
			      struct enforce_entry *en)
{
	en->owner.present = false;
	link_record_ownership(link, entry, en);
}

/* Keeps HAProxy's ownership map saying what the agent did to the server:
 * what a restarted agent without its snapshot reads back. Runtime API mode
 * only (it records Runtime API drains), once the map was read.
 *
 * The facts are en->mem's, which the state snapshot saves too: kept
 * twice on purpose, each copy for a different loss - the snapshot for a
 * restart of the agent, the map for a start without the snapshot (a new
 * host, a lost file). en->owner is no third copy: it is what HAProxy's
 * map holds, the `have` of the diff, equal to owner_record_of(&en->mem)
 * once the commands landed. */
void link_record_ownership(struct haproxy_link *link, struct breaker_table_entry *entry,
			   struct enforce_entry *en)
{
	static const struct link_record_why why = {"what the agent did, for its next start",
						   false, LOG_LEVEL_NOTICE};
	char have[OWNER_MAP_VALUE_MAX], want[OWNER_MAP_VALUE_MAX];
	char command[HAPROXY_RECORD_CMD_MAX];
	struct owner_record rec = owner_record_of(&en->mem);
	struct haproxy_record *r = &link->records[RECORD_OWNER];

	if (link->owner->mode != ENFORCE_RUNTIME_API || !r->known)
		return;
	const char *h = owner_map_value(have, sizeof(have), &en->owner);
	const char *w = owner_map_value(want, sizeof(want), &rec);
	if (!haproxy_record_cmd(command, sizeof(command), &owner_map_ops, r->where, entry->backend,
				entry->server, h, w))
		return;
	/* A `set` rests on what the last read of the map showed; a new
	 * HAProxy process since has the map of its file, and refuses it
	 * (owner_set_refused() then adds the entry: the agent's next start
	 * reads it). */
	bool set = haproxy_record_change(&owner_map_ops, h, w) == RECORD_SET;
	uint64_t before = link->cmd.sent;
	link_send_record_command(link, entry, command, why.text, set ? owner_set_refused : NULL);
	if (link->cmd.sent == before)
		return; /* not queued: the next look tries again */
	r->last_command = link->cmd.sent;
	en->owner = rec;
	en->last_command = link->cmd.sent;
}

static bool orphan_is(const struct link_owner_orphan *o, struct runtime_api_str backend,
		      struct runtime_api_str server)
{
	return strlen(o->backend) == backend.len && strlen(o->server) == server.len &&
	       memcmp(o->backend, backend.ptr, backend.len) == 0 &&
	       memcmp(o->server, server.ptr, server.len) == 0;
}

/* An entry that names no breaker: kept for the end of the look, which
 * says whether HAProxy still lists the server. */
static void note_orphan(struct haproxy_link *link, struct runtime_api_str backend,
			struct runtime_api_str server, const struct owner_record *rec)
{
	if (backend.len > BREAKER_NAME_MAX || server.len > BREAKER_NAME_MAX)
		return; /* no name the agent ever wrote */
	for (unsigned i = 0; i < link->nb_orphans; i++)
		if (orphan_is(&link->orphans[i], backend, server))
			return; /* a copy (an `add` HAProxy kept twice): one `del` ends all */
	if (link->nb_orphans == LINK_OWNER_ORPHANS)
		return; /* the next look */
	if (!link->orphans) {
		link->orphans = calloc(LINK_OWNER_ORPHANS, sizeof(*link->orphans));
		if (!link->orphans)
			return;
	}
	struct link_owner_orphan *o = &link->orphans[link->nb_orphans++];
	memcpy(o->backend, backend.ptr, backend.len);
	o->backend[backend.len] = '\0';
	memcpy(o->server, server.ptr, server.len);
	o->server[server.len] = '\0';
	o->rec = *rec;
	o->listed = false;
}

void link_owner_orphans_listed(struct haproxy_link *link, struct runtime_api_str backend,
			       struct runtime_api_str server)
{
	for (unsigned i = 0; i < link->nb_orphans; i++) {
		struct link_owner_orphan *o = &link->orphans[i];
		if (!o->listed && orphan_is(o, backend, server))
			o->listed = true;
	}
}

/* The look's `show stat` was read whole: the entries it listed no server
 * for are deleted - unless a command to the map went out after the look
 * was queued (it may be a server's own add since). */
void link_owner_orphans_forget(struct haproxy_link *link)
{
	static const struct link_record_why why = {"HAProxy does not list the server", false,
						   LOG_LEVEL_NOTICE};
	char have[OWNER_MAP_VALUE_MAX];
	unsigned n = link->nb_orphans;

	link->nb_orphans = 0;
	if (link->owner->mode != ENFORCE_RUNTIME_API || !link->records[RECORD_OWNER].known ||
	    link_look_predates(link, link->records[RECORD_OWNER].last_command))
		return;
	for (unsigned i = 0; i < n; i++) {
		const struct link_owner_orphan *o = &link->orphans[i];
		if (!o->listed)
			link_record_send(link, RECORD_OWNER, o->backend, o->server,
					 owner_map_value(have, sizeof(have), &o->rec), NULL, &why);
	}
}

static void on_owner_entry(void *ctx, struct runtime_api_str backend, struct runtime_api_str server,
			   const struct owner_record *rec)
{
	struct haproxy_link *link = ctx;
	struct enforcer *e = link->owner;
	struct breaker_table_entry *entry =
		breaker_table_find(e->table, backend.ptr, backend.len, server.ptr, server.len);
	if (!entry) {
		note_orphan(link, backend, server, rec);
		return;
	}
	struct enforce_entry *en = &link->entries[breaker_table_index(e->table, entry)];
	en->owner_in_look = link->look.id;
	if (link_look_predates(link, en->last_command))
		return;
	en->owner = *rec;
	/* What the agent does not remember of this server (started without
	 * its snapshot, or with one older than the record) it takes on the
	 * record's word: the drain or the limit is its own. */
	if (rec->present && owner_record_merge(rec, &en->mem))
		log_notice("HAProxy %s records that the agent %s %s/%s: taken back as its own",
			   address(link), rec->drained ? "drained" : "limited", entry->backend,
			   entry->server);
}

/* `show map FILE`: the ownership record. */
void link_on_owner_map(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	unsigned skipped = 0;

	if (result != RUNTIME_API_OK)
		return;
	bool parsed = owner_map_parse(reply, len, on_owner_entry, link, &skipped);
	link_record_read(link, RECORD_OWNER, parsed, skipped, reply, len);
}

/* A new HAProxy process loaded the map from its file: what the agent
 * wrote into the old one at run time is gone, the file may hold some of
 * it (saved before the reload) or none. Until a look reads the new map,
 * every record is taken as absent, so that what the agent writes next
 * is an `add`: written at once, whether or not a look comes before the
 * agent itself is restarted. (A record the file kept is then listed
 * twice, for a while: HAProxy's `set map` and `del map` act on every
 * copy.) */
void link_records_new_process(struct haproxy_link *link)
{
	struct breaker_table *t = link->owner->table;

	for (uint32_t i = 0; i < t->allocated; i++)
		link->entries[i].owner.present = false;
}

/* A server HAProxy no longer has: its entry, gone. */
void link_record_forget_owner(struct haproxy_link *link, struct breaker_table_entry *entry,
			      struct enforce_entry *en)
{
	static const struct link_record_why why = {"HAProxy no longer has the server", false,
						   LOG_LEVEL_NOTICE};
	char have[OWNER_MAP_VALUE_MAX];

	if (link->owner->mode == ENFORCE_RUNTIME_API && link->records[RECORD_OWNER].known)
		link_record_send(link, RECORD_OWNER, entry->backend, entry->server,
				 owner_map_value(have, sizeof(have), &en->owner), NULL, &why);
}

/* ---- the watched servers ---- */

/* One server the watched map lists. */
static bool on_watched_entry(void *ctx, struct runtime_api_str backend, struct runtime_api_str server,
			     struct runtime_api_str value)
{
	static const struct link_record_why why = {"no breaker to watch", true, LOG_LEVEL_NOTICE};
	struct haproxy_link *link = ctx;
	struct enforcer *e = link->owner;
	struct breaker_table_entry *entry =
		breaker_table_find(e->table, backend.ptr, backend.len, server.ptr, server.len);
	if (entry) {
		link->entries[breaker_table_index(e->table, entry)].watched.in_look = link->look.id;
		return true;
	}
	/* No breaker (dropped, evicted, or never one): nothing to watch.
	 * Unless a command to the map went out after this look was queued:
	 * it may be this server's own add. */
	if (link_look_predates(link, link->records[RECORD_WATCHED].last_command))
		return true;
	char be[BREAKER_NAME_MAX + 1], srv[BREAKER_NAME_MAX + 1];
	if (backend.len > BREAKER_NAME_MAX || server.len > BREAKER_NAME_MAX)
		return true;
	memcpy(be, backend.ptr, backend.len);
	be[backend.len] = '\0';
	memcpy(srv, server.ptr, server.len);
	srv[server.len] = '\0';
	link_record_send(link, RECORD_WATCHED, be, srv, watched_map_value(true), NULL, &why);
	return true;
}

/* `show map FILE`: the servers HAProxy notifies every response of. */
void link_on_watched_map(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	unsigned skipped = 0;

	if (result != RUNTIME_API_OK)
		return;
	bool parsed = watched_map_parse(reply, len, on_watched_entry, link, &skipped);
	link_record_read(link, RECORD_WATCHED, parsed, skipped, reply, len);
}

/* Makes HAProxy's watched map list the server exactly when its breaker is
 * dirty (want), or never (a server HAProxy no longer has). From a
 * transition (look false) or a look that read the map. True when it
 * queued an `add map`. */
static bool sync_watched(struct haproxy_link *link, struct breaker_table_entry *entry,
			 struct enforce_entry *en, bool look, bool want, const char *text)
{
	const struct link_record_why why = {text, true, LOG_LEVEL_NOTICE};
	if (!link->records[RECORD_WATCHED].where[0])
		return false;
	if (look) {
		if (!link->records[RECORD_WATCHED].read || link_look_predates(link, en->watched.command))
			return false; /* the look predates our own command */
		en->watched.have = en->watched.in_look == link->look.id;
	}
	if (!link_record_send(link, RECORD_WATCHED, entry->backend, entry->server,
			      watched_map_value(en->watched.have), watched_map_value(want), &why))
		return false;
	en->watched.have = want;
	en->watched.command = link->cmd.sent;
	return want;
}

bool link_sync_watched(struct haproxy_link *link, struct breaker_table_entry *entry,
		       struct enforce_entry *en, bool look)
{
	/* Released (core/operator_hand.h), the agent keeps no entry of its
	 * own in HAProxy's maps. */
	bool want = breaker_is_dirty(&entry->breaker) && !link->owner->released;
	return sync_watched(link, entry, en, look, want,
			    want ? "breaker dirty: every response matters"
				 : "breaker clean: only failures matter");
}

void link_record_forget_watched(struct haproxy_link *link, struct breaker_table_entry *entry,
				struct enforce_entry *en)
{
	sync_watched(link, entry, en, false, false, "HAProxy no longer has the server");
}

/* ---- the retry moments ---- */

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
	if (!link_record_read(link, RECORD_RETRY, n >= 0, skipped, reply, len))
		return; /* gone (another configuration), or no memory */
	free(link->retry_have);
	link->retry_have = have;
	link->nb_retry_have = (size_t)n;
}

/* An open breaker's moment to probe, into its backend's earliest. */
void link_note_retry_at(struct haproxy_link *link, const struct breaker_table_entry *entry,
			const struct enforce_entry *en)
{
	if (entry->breaker.state != BREAKER_OPEN || entry->breaker.observe_only ||
	    entry->breaker.policy->observe_only)
		return;
	struct ejection_backend *g = link_group_in_slot(link, en, link->counts.current);
	if (!g)
		return;
	/* A date, on the wall clock: HAProxy subtracts its own date from it
	 * for Retry-After. */
	int64_t at = retry_map_moment((int64_t)time(NULL),
				      breaker_retry_after_s(&entry->breaker, clock_now_ms()));
	if (at != RETRY_AT_NONE && (g->retry_at_s == RETRY_AT_NONE || at < g->retry_at_s))
		g->retry_at_s = at;
}

/* Sends what turns the entry `have` into `want` for one backend. */
static void retry_map_write(struct haproxy_link *link, const char *backend, int64_t have,
			    int64_t want)
{
	static const struct link_record_why why = {
		"when the backend may take traffic again, for HAProxy's own 503", false,
		LOG_LEVEL_NOTICE};
	char have_text[RETRY_MAP_VALUE_MAX], want_text[RETRY_MAP_VALUE_MAX];
	link_record_send(link, RECORD_RETRY, backend, NULL,
			 retry_map_value(have_text, sizeof(have_text), have),
			 retry_map_value(want_text, sizeof(want_text), want), &why);
}

/*
 * The look was converged: brings HAProxy's retry map to the moments its
 * backends' open breakers gathered (link_note_retry_at). Only from a look that
 * read the map after the last command to it was done.
 */
void link_sync_retry_map(struct haproxy_link *link)
{
	if (link->owner->mode != ENFORCE_RUNTIME_API || !link->records[RECORD_RETRY].where[0] ||
	    !haproxy_record_readable(&link->records[RECORD_RETRY], link->look.queued_after) ||
	    link->counts.current < 0)
		return;
	struct ejection_groups *g = &link->counts.slot[link->counts.current];
	if (g->look_id != link->look.id)
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
