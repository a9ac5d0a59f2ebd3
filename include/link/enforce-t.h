/*
 * enforce-t.h - what the HAProxy link keeps per server: what each HAProxy
 * last reported, what the agent changed there, and the counters of the
 * previous look. Kept beside the breaker table, indexed by its stable entry
 * index (breaker_table_index()), zeroed when the table creates the entry.
 */
#ifndef SPOA_ENFORCE_T_H
#define SPOA_ENFORCE_T_H

#include <stdbool.h>
#include <stdint.h>

#include "core/breaker-t.h"
#include "link/capacity.h"
#include "link/faults-t.h"
#include "link/link_settings.h"
#include "records/owner_map-t.h"

/* The worker a server points at, "ADDRESS:PORT" or "[IPV6]:PORT" as
 * `show servers state` reports it (endpoints.h); "" when unknown. */
#define ENDPOINT_TEXT_MAX 64

struct endpoint {
	char text[ENDPOINT_TEXT_MAX];
};

/* What HAProxy last reported about one server (or what our commands since
 * then made of it). */
struct enforce_seen {
	bool known;       /* HAProxy has this server */
	bool drained;     /* admin state has the forced-drain bit */
	bool maint;       /* admin state has a maintenance bit */
	bool down;        /* operational state stopped: down by health check */
	uint32_t maxconn; /* current maxconn; 0 = unlimited */
	uint32_t sessions; /* requests in flight there (scur), as of the last look */
	bool answered;     /* the last look saw an answer since the one before (a
			    * head, an SPOP answer or a capacity status): the
			    * worker is not hung */
};

/* What the agent has changed in HAProxy for one server (struct
 * enforce_memory) and the ownership map's record of it (struct owner_record)
 * are records/owner_map-t.h's: the map's codec reads them. */

/* What one look's `show stat` row says of one server for the stalled
 * rule, kept until its backend's rows are all read (signals.c). */
struct enforce_stall_row {
	bool baseline;    /* the previous look of the same process gave deltas */
	bool answered;    /* a head, an SPOP answer or a capacity status since */
	bool in_flight;   /* scur > 0 */
	uint64_t sent;    /* stot since the previous look */
	uint64_t answers; /* 2xx-5xx heads and capacity statuses retried since */
	uint64_t pending; /* requests in flight that may still get a head */
};

/* The stalled rule (stall_watch.c) for one server as one HAProxy's looks
 * see it: its watch; its 1xx-5xx answers by HAProxy's counters at the
 * previous look, and that look's time (0: none yet); for the counted form,
 * its requests sent (stot), 2xx-5xx heads and requests in flight (scur) at
 * the previous look, and what this look's row said, for the judgement at
 * the end of its backend's rows (signals.c), with the look that wrote it. */
struct enforce_stall {
	struct stall_watch watch;
	uint64_t responses_counted;
	uint64_t looked_ms;
	uint64_t sent_counted;
	uint64_t heads_counted;
	uint64_t scur;
	struct enforce_stall_row row;
	uint32_t row_look;
};

/* The look's verdict on a kept Retry-After word (signals.c): read from
 * `show stat`, applied once the same look's server states are read
 * (converge.c), so that a rest it starts drains on what HAProxy shows
 * now - on the look before, its drain would cross an operator's made
 * since, and take it for the agent's. */
struct enforce_rest_word {
	uint32_t judged_look; /* 0: none waiting */
	bool answered;
	uint32_t in_flight;
};

/* Steady-state mode (watched_map.h): whether HAProxy's watched map lists
 * the server, as the agent last made it or a look read it; the look whose
 * map listed it; the link's command count after the last command to it. */
struct enforce_watched {
	bool have;
	uint32_t in_look;
	uint64_t command;
};

/* One server as one HAProxy knows it. */
struct enforce_entry {
	struct enforce_seen seen;
	struct enforce_memory mem;
	struct owner_record owner; /* the ownership map's entry */
	uint32_t owner_in_look;    /* the look whose map listed it */
	uint32_t seen_in_look;  /* the look that last listed this server */
	uint64_t last_command;  /* the link's command count after our last command */
	/* ... after our last `set server ... state` and `set maxconn server`:
	 * a look queued before one may show HAProxy before it, but only that
	 * command's field. A maxconn or a map entry changes no admin state, so
	 * a look that predates only those still says drained and maintenance
	 * (an operator's made meanwhile among them). */
	uint64_t last_state_command;
	uint64_t last_maxconn_command;
	struct faults_baseline faults; /* its counters at the previous look */
	/* Its backend (HAProxy's id) and its place in the backend counts of
	 * the looks that listed it: one slot per look parity, the last
	 * complete look's and the one under way (ejection_cap.c). */
	uint64_t be_id;
	uint32_t group_index[2];
	uint32_t group_look[2];
	/* Open, but the ejection cap holds its drain back here. */
	bool ejection_capped;
	struct enforce_rest_word rest;
	/* The trip (breaker trips) whose held requests are to be ended with
	 * its drain (stall_release.c); 0: none pending. */
	uint32_t release_trip;
	struct enforce_watched watched;
	/* Its 1xx-3xx answers by HAProxy's counters at the previous look:
	 * in steady-state mode a clean server's successes reach the agent
	 * only this way. */
	uint64_t successes_counted;
	struct enforce_stall stalled;
	/* Its worker's capacity as this HAProxy's looks learn it (capacity.h),
	 * and the capacity statuses retried elsewhere this look found. */
	struct capacity capacity;
	uint64_t look_capacity_retries;
	/* Peers mode (verdicts.h): this node wrote an open or half-open
	 * verdict for the server into the shared table, and has not yet
	 * written it closed. */
	bool verdict_published;
	/* Where this HAProxy's last look said the server points; the look
	 * that listed it with no address (a server-template slot DNS
	 * emptied: HAProxy keeps it, the agent no longer judges it). */
	struct endpoint endpoint;
	uint32_t emptied_in_look;
};

/* One breaker's endpoint (endpoints.h), for the link as a whole: the
 * worker its history is about, and whether any HAProxy ever listed the
 * server (a server listed once and no more was deleted: it is forgotten
 * at once, where one never listed is kept while SPOP speaks of it). */
struct endpoint_slot {
	struct endpoint breaker_at;
	bool listed;
};

#endif /* SPOA_ENFORCE_T_H */
