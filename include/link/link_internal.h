/*
 * link_internal.h - what the files of the HAProxy link (spoa/link/) share
 * among themselves; the rest of the agent sees enforcer.h only. The link
 * carries the breakers' decisions to HAProxy.
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
 * the breaker on the spot; under enforce none plans are logged, never
 * sent.
 *
 * The files, one concern each: lifecycle.c, on_record.c, commands.c,
 * looks.c, signals.c, endpoint_follow.c, wiring_report.c, ejection_cap.c,
 * converge.c, sweep.c, records.c (the life of the records HAProxy keeps
 * for the agent, haproxy_record.h), peers.c, peers_read.c,
 * capacity_watch.c, stall_release.c. Their state is in enforcer-t.h.
 */
#ifndef SPOA_LINK_INTERNAL_H
#define SPOA_LINK_INTERNAL_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "link/enforcer-t.h"
#include "util/log.h"

/* A link's reconcile_next, or the enforcer's end_round_next, when no
 * sweep of theirs is under way (sweep.c). */
#define SWEEP_NONE UINT32_MAX

/* commands.c: a command queued on the link's command connection, counted
 * in link->cmd.sent when queued (see there for `observing` and enforce
 * none); link_send_command() is one that changes a server. */
void link_queue_command(struct haproxy_link *link, const char *command, const char *why,
			bool observing);
void link_queue_command_logged(struct haproxy_link *link, const char *command, const char *why,
			       bool observing, enum log_level level);
void link_send_command(struct haproxy_link *link, const char *command, const char *why);

/* What a server command undoes of the agent's own, to be taken back if
 * HAProxy never applies it (the socket closed under it, a refusal): a
 * ready that did not land leaves the agent's drain in place, and the
 * drain is still the agent's; the same for a maxconn given back. */
enum link_command_undo {
	LINK_UNDO_NOTHING,
	LINK_UNDO_DRAIN,   /* `state ready` lifting the agent's drain */
	LINK_UNDO_MAXCONN, /* `set maxconn` giving the server its own back */
};
void link_send_server_command(struct haproxy_link *link, const struct breaker_table_entry *entry,
			      const char *command, const char *why, enum link_command_undo undo);
/* A record's command about one server that HAProxy refused (answered with
 * an error): what the record makes of it, told by the command's completion
 * (records.c's, for the ownership record). */
typedef void (*link_refused_fn)(struct haproxy_link *link, struct breaker_table_entry *entry,
				struct enforce_entry *en);
void link_send_record_command(struct haproxy_link *link, const struct breaker_table_entry *entry,
			      const char *command, const char *why, link_refused_fn refused);
/* A new ACK hold point at every command queued so far on each link that
 * keeps a watched map: the ticket the ACK of a response that made its
 * server watched waits for (ack_hold.h). */
uint64_t link_ack_hold_point(struct enforcer *e);

/* backend_counts.c: each backend's counts of the looks, by look parity. */
bool link_entry_out(const struct enforce_entry *en);
struct ejection_backend *link_group_in_slot(struct haproxy_link *link,
					    const struct enforce_entry *en, int slot);
/* The count a decision is made on: the last complete look's, else the
 * one under way (a server new since then); NULL when neither lists it. */
struct ejection_backend *link_group_of(struct haproxy_link *link, const struct enforce_entry *en);
/* Moves the counter at field_offset of the entry's backend by one, up or
 * down, in both looks' counts. */
void link_count_move(struct haproxy_link *link, const struct enforce_entry *en, size_t field_offset,
		     bool up);
void link_count_change(struct haproxy_link *link, const struct enforce_entry *en, bool was_out,
		       bool was_drained);
struct ejection_backend *link_count_row_backend(struct haproxy_link *link,
						const struct runtime_api_server_state *row,
						uint32_t *index);

/* ejection_cap.c */
bool link_cap_room_for_guard(struct haproxy_link *link, struct breaker_table_entry *entry,
			     struct enforce_entry *en);
bool link_cap_holds_back(struct haproxy_link *link, struct breaker_table_entry *entry,
			 struct enforce_entry *en);
/* Whether a drain of the agent's in place is beyond what the cap allows
 * now (the backend lost capacity since): to be lifted (ejection_cap.c). */
bool link_cap_lifts(struct haproxy_link *link, struct breaker_table_entry *entry,
		    struct enforce_entry *en);
/* The servers of backend be_id still waiting for room, longest waiting
 * first, at most max of them into waiting[] (table indices); their count. */
uint32_t link_cap_waiting(struct haproxy_link *link, uint64_t be_id, uint32_t *waiting,
			  uint32_t max);

/* converge.c */
void link_converge_entry(struct haproxy_link *link, struct breaker_table_entry *entry);
/* looks.c: told by the looks' Runtime API client when an exchange begins. */
void link_on_look_exchange(void *ctx);
/* sweep.c: what follows a look, every server converged, a round ended. */
void enforcer_look_finished(struct enforcer *e);
void enforcer_sweep(struct enforcer *e);
void enforcer_sweep_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* The one staleness test (haproxy_record_predates): the look in flight
 * was queued before the command numbered `command` was done. */
static inline bool link_look_predates(const struct haproxy_link *link, uint64_t command)
{
	return haproxy_record_predates(link->look.queued_after, command);
}

/* The same for what the exchange under way reads (`show stat`, `show
 * servers state`): it began after the command was done, or not. */
static inline bool link_exchange_predates(const struct haproxy_link *link, uint64_t command)
{
	return haproxy_record_predates(link->look.exchange_began_after, command);
}

/* records.c: the life of the records HAProxy keeps for the agent on one
 * link (haproxy_record.h), and the maps' entries. */
struct link_record_why {
	const char *text; /* why, for the log */
	bool observing;   /* sent in every mode (see link_queue_command) */
	enum log_level level;
};
void link_on_map_list(void *ctx, enum runtime_api_result result, const char *reply, size_t len);
/* Queues the look's reads of the records of one kind that were found, each
 * reply to its reader in read_cb (link_record_readers); false when the
 * queue is full. */
bool link_records_look(struct haproxy_link *link, enum haproxy_record_kind kind,
		       const runtime_api_reply_fn read_cb[HAPROXY_RECORDS]);
/* looks.c: who reads each record's reply to the look, the maps records.c,
 * the verdict table peers_read.c. */
extern const runtime_api_reply_fn link_record_readers[HAPROXY_RECORDS];
/* A record's reply to the look was read (parsed) or is an error: read
 * and known, or said missing. Returns parsed. */
bool link_record_read(struct haproxy_link *link, enum haproxy_record_id id, bool parsed,
		      unsigned skipped, const char *reply, size_t len);
/* Sends what turns have into want (values, NULL: no entry) for
 * backend/server in the record; true when queued. (The ownership record
 * goes through link_record_ownership, which also says what to do if
 * HAProxy refuses its `set map`: LINK_UNDO_OWNER_SET.) */
bool link_record_send(struct haproxy_link *link, enum haproxy_record_id id, const char *backend,
		      const char *server, const char *have, const char *want,
		      const struct link_record_why *why);
void link_record_ownership(struct haproxy_link *link, struct breaker_table_entry *entry,
			   struct enforce_entry *en);
/* A new HAProxy process: its ownership map is its file's (records.c). */
void link_records_new_process(struct haproxy_link *link);
void link_on_owner_map(void *ctx, enum runtime_api_result result, const char *reply, size_t len);
void link_on_retry_map(void *ctx, enum runtime_api_result result, const char *reply, size_t len);
void link_on_watched_map(void *ctx, enum runtime_api_result result, const char *reply,
			 size_t len);
bool link_sync_watched(struct haproxy_link *link, struct breaker_table_entry *entry,
		       struct enforce_entry *en, bool look);
void link_note_retry_at(struct haproxy_link *link, const struct breaker_table_entry *entry,
			const struct enforce_entry *en);
void link_sync_retry_map(struct haproxy_link *link);
/* An ownership entry for a server HAProxy no longer lists - deleted
 * while the agent was down, or before its look saw it - names no
 * breaker, so nothing else would ever remove it, and a server added
 * later under the name would read as the agent's. */
#define LINK_OWNER_ORPHANS 32
struct link_owner_orphan {
	char backend[BREAKER_NAME_MAX + 1];
	char server[BREAKER_NAME_MAX + 1];
	struct owner_record rec;
	bool listed; /* the look's `show stat` has a row for it */
};
void link_owner_orphans_listed(struct haproxy_link *link, struct runtime_api_str backend,
			       struct runtime_api_str server);
void link_owner_orphans_forget(struct haproxy_link *link);
/* What the records keep for a server HAProxy no longer has, deleted. */
void link_record_forget_owner(struct haproxy_link *link, struct breaker_table_entry *entry,
			      struct enforce_entry *en);
void link_record_forget_watched(struct haproxy_link *link, struct breaker_table_entry *entry,
				struct enforce_entry *en);

/* peers.c: this node's verdicts written (again: a look's reassertion). */
void enforcer_publish_verdicts(struct enforcer *e, struct breaker_table_entry *entry,
			       uint64_t now_ms);
void link_publish_verdict(struct haproxy_link *link, struct breaker_table_entry *entry,
			  struct enforce_entry *en, uint64_t now_ms, bool again);
/* peers_read.c: the other nodes' read back at a look. */
void link_on_verdict_table(void *ctx, enum runtime_api_result result, const char *reply,
			   size_t len);
void link_record_forget_verdict(struct haproxy_link *link, struct breaker_table_entry *entry,
				struct enforce_entry *en);

/* on_record.c: the table's growth, as a breaker_subscriber
 * (breakers/bus.h); a record is enforcer_publish()'s (enforcer.h). */
bool enforcer_on_reserve(void *ctx, uint32_t allocated);
void enforcer_on_created(void *ctx, uint32_t index);

/* looks.c: the look timer, every poll_interval. */
void enforcer_look_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* stall_release.c: a transition to open as stalled marks its trip; the
 * converging of the server, where its drain is planned, ends what the
 * server holds with it (capped: the cap holds the drain back; hands_off:
 * the plan's). */
void link_stall_release_mark(struct haproxy_link *link, const struct breaker_table_entry *entry,
			     struct enforce_entry *en, const struct breaker_event *ev);
void link_stall_release(struct haproxy_link *link, struct breaker_table_entry *entry,
			struct enforce_entry *en, bool capped, const char *hands_off);

/* wiring_report.c */
void link_report_unwired(struct haproxy_link *link);

/* endpoint_follow.c */
void link_follow_endpoint(struct haproxy_link *link, struct breaker_table_entry *entry);

/* signals.c: what one `show stat` row's counters say, in this order. */
void link_record_faults(struct haproxy_link *link, struct breaker_table_entry *entry,
			struct enforce_entry *en, const struct runtime_api_stat_row *row);
/* Returns the server's 1xx-3xx answers since the previous look (0 at a
 * first look or across an HAProxy restart: no baseline). */
uint64_t link_note_counted_successes(struct haproxy_link *link, struct breaker_table_entry *entry,
				     struct enforce_entry *en, const struct runtime_api_stat_row *row);
/* The look's verdict on the server's kept Retry-After word, once its
 * server states are read (signals.c). */
void link_judge_rest_word(struct haproxy_link *link, struct breaker_table_entry *entry,
			  struct enforce_entry *en);
void link_look_in_flight(struct haproxy_link *link, struct breaker_table_entry *entry,
			 struct enforce_entry *en, const struct runtime_api_stat_row *row);
/* capacity_watch.c: the capacity each look learns (capacity.h), after
 * the row's faults are recorded, given what the server answered since the
 * previous look (link_note_counted_successes()); and whether a breaker's
 * server takes the limit learnt (no operator's hand, pin_maxconn off). */
void link_look_capacity(struct haproxy_link *link, struct breaker_table_entry *entry,
			struct enforce_entry *en, uint64_t answers_since);
bool link_capacity_applies(const struct breaker *b);
/* At the end of a backend's rows: its servers with no limit get one where
 * a neighbour has one (capacity_join()). */
void link_capacity_group(struct haproxy_link *link, const uint32_t *members, uint32_t nb);
/* A capacity status over SPOP: a raise refused comes down at once. True
 * when the limit changed: the caller converges the server, so that HAProxy
 * has the new limit before the next look. */
bool link_capacity_refused(struct haproxy_link *link, struct breaker_table_entry *entry);
/* ... and once `show stat` ended (complete: read whole), the stalled
 * rule judges the last backend's servers. */
void link_stall_rows_end(struct haproxy_link *link, bool complete);

#endif
