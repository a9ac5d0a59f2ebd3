/*
 * enforcer-t.h - the HAProxy link's own state (private to spoa/link/): one
 * struct haproxy_link per Runtime API socket, and the struct enforcer that
 * holds them, the timers of the looks and sweeps, and the per-index arrays
 * beside the breaker table. The public interface is enforcer.h.
 */
#ifndef SPOA_ENFORCER_T_H
#define SPOA_ENFORCER_T_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "hapi/runtime_api.h"
#include "link/ack_hold.h"
#include "link/agent_check.h"
#include "link/ejection.h"
#include "link/endpoints.h"
#include "link/enforcer.h"
#include "link/section_watch.h"
#include "link/wiring.h"
#include "records/haproxy_record.h"
#include "records/owner_map.h"
#include "records/retry_map.h"
#include "util/index_list.h"

/* The backends of one look: rows of a backend come together in `show
 * servers state`, so a new group starts when the backend id changes. */
struct ejection_groups {
	struct ejection_backend *groups;
	uint32_t nb, allocated;
	uint32_t look_id; /* the look that counted them; 0: none */
};

/* Backend counts for the ejection cap, by look parity (backend_counts.c):
 * the last complete look's (`current`, -1 before one) and the one under
 * way. A drain the agent adds or lifts between looks moves the counts of
 * both, so neither lags behind it. */
struct backend_counts {
	struct ejection_groups slot[2];
	int current;
};

/* The look at one HAProxy (looks.c): its counters, server states and
 * records, read every poll_interval on the link's own connection. */
struct link_look {
	/* The look under way or last made, counted from 1: rows mark what
	 * they saw with it, so a look that failed half-way leaves nothing a
	 * later look could mistake for its own. */
	uint32_t id;
	bool once;      /* a look was read whole */
	bool under_way; /* a look is queued or in flight */
	bool stat_read; /* the look in flight read `show stat` */
	/* The look's two large replies, parsed as they arrive. */
	struct runtime_api_stat_stream stat_stream;
	struct runtime_api_servers_state_stream state_stream;
	bool restarted; /* the look in flight found a new HAProxy process */
	/* When the look in flight was queued: the one time its rows are
	 * stamped with, so that two servers' rows of one look compare equal. */
	uint64_t ms;
	/* cmd.done when the look in flight was queued: a look describes a
	 * server only if its last command was done by then (looks and
	 * commands travel on different connections, so one sent earlier may
	 * still be on its way when HAProxy answers the look). */
	uint64_t queued_after;
	/* cmd.done when the look's exchange under way began: the commands
	 * done by then reached HAProxy before it read this exchange's line,
	 * which is later than the look was queued. */
	uint64_t exchange_began_after;
	/* The look was read: the next table index to converge, or
	 * SWEEP_NONE (see sweep_cb). */
	uint32_t reconcile_next;
};

/* The commands to one HAProxy (commands.c). They go on a connection of
 * their own, never behind a look: a look of a large HAProxy streams for
 * tens of milliseconds, and a trip's drain must not wait for it. */
struct link_commands {
	struct runtime_api_client *client;
	uint64_t sent; /* commands queued so far */
	uint64_t done; /* of them, answered or failed (in order: one queue) */
};

struct haproxy_link {
	struct enforcer *owner;
	unsigned index;
	struct runtime_api_client *client;
	struct enforce_entry *entries; /* one per table entry index */
	struct runtime_api_info info;
	bool info_known;
	struct link_look look;
	struct link_commands cmd;
	struct runtime_api_stats both; /* the two clients' stats, summed for metrics */
	/* What HAProxy keeps for the agent (haproxy_record.h), by
	 * enum haproxy_record_id: the ownership record, the retry moments,
	 * the watched servers, the verdict table. */
	struct haproxy_record records[HAPROXY_RECORDS];
	/* The retry map's entries as the look in flight read them: the
	 * one record whose HAProxy side is kept whole, since the look diffs
	 * it against backends, not against breakers (link_sync_retry_map).
	 * The other records keep HAProxy's side per entry (enforce-t.h). */
	struct retry_map_entry *retry_have;
	size_t nb_retry_have;
	/* The ownership map's entries the look in flight read for servers
	 * with no breaker: deleted once its `show stat`, read whole, does
	 * not list them either (records.c). At most LINK_OWNER_ORPHANS per
	 * look; the rest wait for the next. */
	struct link_owner_orphan *orphans;
	unsigned nb_orphans;
	/* records[RECORD_WATCHED].where: "" unless steady-state mode is on
	 * for this HAProxy (signals.c, commands.c read it so). */
	const char *watched_map;
	/* Search `show map` again at the next look, the known maps read all
	 * the same: a new HAProxy process may load other maps, and a map
	 * read that failed may have been renamed. */
	bool maps_search;
	struct backend_counts counts;
	/* Table indices of entries the cap holds back here (stale ones are
	 * dropped as the list is read). */
	struct index_list capped;
	/* The stalled rule's backend under way in `show stat` (its rows come
	 * together): the table indices of its servers' rows so far, judged
	 * against each other once its last row is read (signals.c). */
	struct index_list stall_group;
	/* What this HAProxy's configuration lacks for the agent (wiring.h). */
	struct wiring wiring;
};

struct enforcer {
	struct ev_loop *loop;
	enum enforce_mode mode;
	struct breakers *breakers;
	struct breaker_table *table;
	struct haproxy_link links[ENFORCE_MAX_HAPROXY];
	unsigned nb_links;
	ev_timer look_timer;
	double poll_interval;
	unsigned round_pending; /* looks of the current round not answered yet,
				 * or answered and still converging */
	bool round_ok;          /* every look of the current round succeeded */
	uint32_t end_round_next; /* the next index end_round looks at, or SWEEP_NONE */
	ev_timer sweep_timer;    /* 0 s: the next slice of the sweep */
	struct enforce_memory *agent_check_mem; /* agent-check mode: one per entry index */
	/* When SPOP last spoke of each entry's server (clock_now_ms(); 0:
	 * never): a server no HAProxy lists is kept while traffic for it
	 * comes (see end_round). */
	uint64_t *last_spop_ms;
	bool unlisted_said;
	/* The operator released the agent (core/operator_hand.h): no entry of
	 * its own in HAProxy's maps; the breakers' observe_only does the rest. */
	bool released;
	/* Per entry index: the breaker is open and its drain held back by
	 * the ejection cap on some HAProxy (ejection_cap.c); what the ACK,
	 * the metrics and /state say (enforcer_ejection_capped()). */
	bool *ejection_capped;
	/* Per breaker table index: the maxconn the agent holds for the server
	 * from its learnt capacity on the first HAProxy (0: none), as /state
	 * says it (enforcer_maxconn_learnt()). */
	uint32_t *maxconn_learnt;
	/* Per entry index: the worker each breaker is about, and whether an
	 * HAProxy ever listed its server; and the breakers of workers that
	 * servers left recently (endpoints.h). */
	struct endpoint_slot *slots;
	struct endpoint_recall *recall;
	uint32_t capacity; /* entries of every per-index array: the table's allocated */
	struct agent_check agent_check;
	bool agent_check_open;
	struct enforce_stats stats;
	/* Steady-state mode: the ACK of a response that made its server
	 * watched waits for the `add map` (ack_hold.h); its ticket goes back
	 * with the link's answer (on_record.c). released: told when points
	 * land. */
	struct ack_hold ack_hold;
	enforcer_release_fn ack_released;
	void *ack_released_ctx;
	bool freeing; /* the clients' last callbacks come from enforcer_free */
	/* Peers mode (verdicts.h): the shared table ("": off), this node's
	 * id, and how long another node's verdict holds a breaker after a
	 * look read it (renewed at every look that reads it again). */
	char verdict_table[LINK_VERDICT_TABLE_MAX_LEN];
	uint32_t node_id;
	uint64_t verdict_hold_ms;
	/* The INI sections against what the HAProxies list (section_watch.h). */
	struct section_watch sections;
};

#endif
