/*
 * looks.c - the periodic look at each HAProxy: the requests of one look,
 * queued together, and their answers, parsed as they arrive.
 */
#include <string.h>

#include "link/link_internal.h"
#include "util/clock.h"
#include "util/container_of.h"
#include "util/log.h"

static void on_info(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	struct runtime_api_info info;
	struct runtime_api_parse_report report;

	link->look.restarted = false;
	if (result != RUNTIME_API_OK || !runtime_api_parse_info(reply, len, &info, &report))
		return; /* the look fails as a whole in on_servers_state */
	if (link->info_known &&
	    (info.pid != link->info.pid || info.start_time_sec != link->info.start_time_sec)) {
		link->look.restarted = true; /* its counters start from zero */
		/* Its configuration may load other maps: search again at the
		 * next look (a reload can turn steady-state mode on or off),
		 * reading meanwhile the ones known. */
		link->maps_search = true;
		log_notice("HAProxy %s: new process (pid %llu, was %llu): re-applying the breakers",
			   runtime_api_client_address(link->client), (unsigned long long)info.pid,
			   (unsigned long long)link->info.pid);
		link->owner->stats.haproxy_restarts++;
		link_records_new_process(link);
	}
	link->info = info;
	link->info_known = true;
}

static void on_server_state(void *ctx, const struct runtime_api_server_state *row)
{
	struct haproxy_link *link = ctx;
	struct enforcer *e = link->owner;
	struct endpoint at;
	link_sections_note_server(link, row); /* every server, whatever follows */
	struct breaker_table_entry *entry = breaker_table_find(
		e->table, row->be_name.ptr, row->be_name.len, row->srv_name.ptr, row->srv_name.len);
	/* A server-template slot DNS has not filled points at no worker: it
	 * is not one of the backend's servers, neither a breaker's nor an
	 * operator's drain (HAProxy keeps it in maintenance). */
	if (endpoint_read(&at, row->addr, row->port) == ENDPOINT_NONE) {
		if (entry) /* emptied: forgotten at the round's end (forget_server) */
			link->entries[breaker_table_index(e->table, entry)].emptied_in_look =
				link->look.id;
		return;
	}
	uint32_t group_index = 0;
	struct ejection_backend *group = link_count_row_backend(link, row, &group_index);
	/* The cap counts capacity, not slots (ejection.h): a server in
	 * maintenance is not the backend's capacity at all - a controller's
	 * parked slot, a `disabled` line, an operator's - so it is neither
	 * listed nor out. Every other server counts, with a breaker or not
	 * (a full table); it is out when down by health check or drained,
	 * by anyone. CMAINT alone is no maintenance: HAProxy keeps it on a
	 * `disabled` server made ready at runtime (a controller filling a
	 * parked slot), which serves; a `disabled` one not yet made ready
	 * still has FMAINT. HAProxy's own maintenance mask leaves it out too. */
	bool row_capacity = !(row->admin_state & RUNTIME_API_ADMF_MAINT);
	bool row_out = row->op_state == RUNTIME_API_SRV_STOPPED ||
		       (row->admin_state & RUNTIME_API_ADMF_DRAIN);
	if (!entry) {
		if (group && row_capacity) {
			group->count.listed++;
			group->count.out += row_out;
		}
		return; /* not an HTTP server: show stat created the others */
	}
	struct enforce_entry *en = &link->entries[breaker_table_index(e->table, entry)];
	en->seen.known = true;
	en->seen_in_look = link->look.id;
	en->be_id = row->be_id;
	if (!row_capacity)
		group = NULL; /* not counted, nor moved by its drains (none: hands off) */
	if (group) {
		int slot = (int)(link->look.id & 1);
		en->group_look[slot] = link->look.id;
		en->group_index[slot] = group_index;
	}
	/* Our last `set server ... state` was not done when this exchange
	 * began: the row may show HAProxy before it, and would undo what we
	 * know. (Our maxconn and map commands leave the admin state as the
	 * row shows it: an operator's maintenance made meanwhile is taken.) */
	if (!link_exchange_predates(link, en->last_state_command)) {
		en->seen.drained = row->admin_state & RUNTIME_API_ADMF_FDRAIN;
		/* Inherited drain is configuration, like maintenance: hands off. */
		en->seen.maint = row->admin_state & (RUNTIME_API_ADMF_MAINT | RUNTIME_API_ADMF_IDRAIN);
	}
	en->seen.down = row->op_state == RUNTIME_API_SRV_STOPPED;
	if (group) {
		group->count.listed++;
		/* What the agent knows of its own drains beats a row that may
		 * predate its command. */
		group->count.out += link_entry_out(en);
		group->drained_by_agent += en->mem.drained_by_us;
		group->capped += en->ejection_capped;
		group->has_breakers = true;
	}
	/* Last: a move converges the server, and the counts above must
	 * already include it for that. */
	en->endpoint = at;
	link_follow_endpoint(link, entry);
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

	if (link->nb_orphans)
		link_owner_orphans_listed(link, row->pxname, row->svname);
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
	wiring_note_row(&link->wiring, link->look.id, row->pxname.ptr, row->pxname.len, notified,
			e->last_spop_ms[index] != 0);
	if (!link_exchange_predates(link, en->last_maxconn_command))
		en->seen.maxconn = row->slim < 0 ? 0 : (uint32_t)row->slim;
	en->seen.sessions = row->scur > UINT32_MAX ? UINT32_MAX : (uint32_t)row->scur;
	link_record_faults(link, entry, en, row);
	uint64_t answers_since = link_note_counted_successes(link, entry, en, row);
	link_look_in_flight(link, entry, en, row);
	link_look_capacity(link, entry, en, answers_since);
}

static size_t on_stat_bytes(void *ctx, const char *buf, size_t len, bool at_end)
{
	struct haproxy_link *link = ctx;
	return runtime_api_stat_stream_feed(&link->look.stat_stream, buf, len, at_end);
}

/* `show stat` is streamed: its rows were recorded as they came. */
static void on_stat(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	(void)reply;
	(void)len;

	link->look.stat_read = result == RUNTIME_API_OK &&
			  runtime_api_stat_stream_usable(&link->look.stat_stream);
	link_stall_rows_end(link, link->look.stat_read);
	if (result == RUNTIME_API_OK && !link->look.stat_read)
		log_warning("HAProxy %s: unreadable 'show stat': %s",
			    runtime_api_client_address(link->client), link->look.stat_stream.report.error);
	if (!link->look.stat_read) {
		link->nb_orphans = 0;
		return;
	}
	link_owner_orphans_forget(link);
	link_report_unwired(link);
}

static size_t on_servers_state_bytes(void *ctx, const char *buf, size_t len, bool at_end)
{
	struct haproxy_link *link = ctx;
	return runtime_api_servers_state_stream_feed(&link->look.state_stream, buf, len, at_end);
}

/* The last answer of a look; streamed, like `show stat`. */
static void on_servers_state(void *ctx, enum runtime_api_result result, const char *reply,
			     size_t len)
{
	struct haproxy_link *link = ctx;
	struct enforcer *e = link->owner;
	(void)reply;
	(void)len;

	link->look.under_way = false;
	bool states_read = result == RUNTIME_API_OK &&
			   runtime_api_servers_state_stream_usable(&link->look.state_stream);
	if (result == RUNTIME_API_OK && !states_read)
		log_warning("HAProxy %s: unreadable 'show servers state': %s",
			    runtime_api_client_address(link->client),
			    link->look.state_stream.report.error);
	/* Without the servers' states every breaker would look unknown and be
	 * dropped: a partial look converges nothing. */
	link_sections_look_end(link, states_read);
	if (states_read && link->look.stat_read) {
		link->look.once = true;
		link->counts.current = (int)(link->look.id & 1);
		e->stats.reconciliations++;
		link->look.reconcile_next = 0;
	} else {
		e->stats.looks_failed++;
		e->round_ok = false;
		enforcer_look_finished(e);
	}
	/* A table of one slice is swept at once; a larger one from the loop. */
	enforcer_sweep(e);
}

/* An exchange of the looks' connection begins: what the commands'
 * connection finished by now, HAProxy ran before it reads this one. */
void link_on_look_exchange(void *ctx)
{
	struct haproxy_link *link = ctx;
	link->look.exchange_began_after = link->cmd.done;
}

const runtime_api_reply_fn link_record_readers[HAPROXY_RECORDS] = {
	[RECORD_OWNER] = link_on_owner_map,
	[RECORD_RETRY] = link_on_retry_map,
	[RECORD_WATCHED] = link_on_watched_map,
	[RECORD_VERDICTS] = link_on_verdict_table,
};

static bool start_look(struct haproxy_link *link)
{
	/* Queued together, the answers follow each other at once: `show info`
	 * and the ownership map in one exchange, then the two replies that
	 * grow with the fleet, each streamed in an exchange of its own (parsed
	 * as they arrive, never held whole). The servers' states come last:
	 * their answer converges. */
	char show_states[RUNTIME_API_CMD_MAX];
	struct enforcer *e = link->owner;
	link->look.id++;
	link->look.ms = clock_now_ms();
	link->wiring.verdicts_wanted = e->verdict_table[0] != '\0';
	link->look.stat_read = false;
	link->look.queued_after = link->cmd.done;
	link->nb_orphans = 0;
	runtime_api_stat_stream_init(&link->look.stat_stream, on_stat_row, link);
	runtime_api_servers_state_stream_init(&link->look.state_stream, on_server_state, link);
	bool queued =
		runtime_api_submit(link->client, "show info", on_info, link) &&
		/* The level is configuration: asked again only of a new
		 * process (which sets maps_search), until it is admin. */
		((link->wiring.level == WIRING_LEVEL_ADMIN && !link->maps_search) ||
		 runtime_api_submit(link->client, "show cli level", on_cli_level, link)) &&
		/* The records' names are looked for until found; from then on
		 * they are read, and a reply that no longer knows one starts
		 * the search again (link_record_read). */
		((link->records[RECORD_OWNER].where[0] && link->records[RECORD_RETRY].where[0] &&
		  !link->maps_search) ||
		 runtime_api_submit(link->client, "show map", link_on_map_list, link)) &&
		link_records_look(link, HAPROXY_RECORD_MAP, link_record_readers) &&
		/* The INI sections' names, while they are to be checked. */
		link_sections_look(link) &&
		runtime_api_submit_streamed(link->client, "show stat -1 4 -1", on_stat_bytes, on_stat,
					    link) &&
		/* After `show stat`: the breakers of every server it lists
		 * exist, so a verdict finds its server's. */
		link_records_look(link, HAPROXY_RECORD_TABLE, link_record_readers) &&
		runtime_api_cmd_show_servers_state(show_states, sizeof(show_states), NULL) &&
		runtime_api_submit_streamed(link->client, show_states, on_servers_state_bytes,
					    on_servers_state, link);
	link->look.under_way = queued;
	if (!queued)
		log_warning("HAProxy %s: queue full, look postponed",
			    runtime_api_client_address(link->client));
	return queued;
}

void enforcer_look_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
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
		enforcer_sweep(e);
	}
}
