/*
 * enforcer.h - the HAProxy link on the event loop (its files are listed in
 * link_internal.h): the Runtime API links to each HAProxy, the periodic
 * look, reconciliation, and the agent-check listener. The decisions come
 * from enforce_plan() (enforce_plan.h); the faults SPOE never sees from
 * faults.h.
 *
 * The link hears every breaker record, after the bus's listeners
 * (enforcer_publish()): a transition converges its server at once, from
 * what the last look said (one Runtime API line in the next loop
 * iteration); the look every poll_interval corrects anything stale,
 * restores what an HAProxy reload forgot, and feeds the breakers
 * HAProxy's fault counters.
 */
#ifndef SPOA_ENFORCER_H
#define SPOA_ENFORCER_H

#include <ev.h>

#include "breakers/bus.h"
#include "link/ejection.h"
#include "link/enforce_plan.h"
#include "link/link_settings.h"
#include "spop/observe.h"
#include "util/cidr.h"

struct enforce_stats {
	uint64_t commands_ok;       /* accepted by HAProxy */
	uint64_t commands_refused;  /* answered with an error ("No such server.") */
	uint64_t commands_failed;   /* not delivered (HAProxy unreachable, queue full) */
	uint64_t commands_not_sent; /* planned but not sent (enforce none) */
	uint64_t reconciliations;   /* complete looks at an HAProxy */
	uint64_t looks_failed;
	uint64_t haproxy_restarts;  /* new HAProxy processes seen */
	uint64_t dropped_breakers;  /* servers no HAProxy has any more */
	uint64_t ejections_held_back; /* open breakers whose drain the ejection cap held back */
	uint64_t ejections_released;  /* ... and drained once room freed */
	/* Faults SPOE never sees, from show stat deltas, by kind. */
	uint64_t connect_errors;
	uint64_t response_errors;
	uint64_t aborted_bodies;
	uint64_t redispatches;
	/* Capacity statuses HAProxy retried on another worker (wredis matched
	 * by wretr): backpressure, not faults. */
	uint64_t capacity_retries;
};

struct enforcer;
struct runtime_api_client;

/*
 * Sets up c's enforcement over the breakers (borrowed; the enforcer
 * subscribes to the table's growth and unsubscribes in enforcer_free()).
 * Opens the
 * agent-check listener if that is the mode; Runtime API sockets connect on
 * first use. `previous` (may be NULL) is the enforcer this one replaces on
 * a reload: what it remembers of each HAProxy whose socket both name (what
 * the agent drained or limited, the counters' baselines) is taken over, so
 * a reload never strands a drain, and so is its place among the breakers'
 * subscribers. previous is then the caller's to free, and must hear of no
 * record (enforcer_publish()) in between: what it kept is this one's now.
 * NULL with err set on failure (previous is then untouched).
 */
struct enforcer *enforcer_new(struct ev_loop *loop, const struct link_settings *c,
			      struct breakers *breakers, struct enforcer *previous, char *err,
			      size_t err_size);
void enforcer_free(struct enforcer *e);

/*
 * The one way a breaker record reaches the HAProxy link: every listener
 * of the breakers hears it first (breakers_publish()), then the link acts
 * on it (a transition converges its server at once) and says what it
 * decided: whether the ejection cap holds the breaker in rotation, and
 * the ticket the response's ACK waits for (struct drain_answer,
 * spop/observe.h). Called by name by whoever records: the breaker-observe
 * route and the breakers' timer (daemon/observe_route.c), the operator's
 * hand (daemon/control_exec.c), the link's own looks (signals.c, peers_read.c,
 * endpoint_follow.c). With e NULL, the listeners only.
 */
struct drain_answer enforcer_publish(struct enforcer *e, struct breakers *breakers,
				     struct breaker_table_entry *entry,
				     const struct breaker_event *ev,
				     const struct breaker_cause *cause);

/*
 * Steady-state mode's ACK hold (ack_hold.h), for the SPOP agent. The
 * ticket an ACK waits for comes back with the link's answer to the
 * response (struct drain_answer, spop/observe.h); a ticket has passed
 * once it is at most the settled one (every command queued before it,
 * on each HAProxy keeping a watched map, was answered or failed).
 * enforcer_ack_settled(): the settled ticket now. fn is called with it
 * when it moves (set again on a replacing enforcer, whose settled ticket
 * lets every earlier ticket pass).
 */
typedef void (*enforcer_release_fn)(void *ctx, uint64_t settled);
uint64_t enforcer_ack_settled(const struct enforcer *e);
void enforcer_on_ack_release(struct enforcer *e, enforcer_release_fn fn, void *ctx);

/* What the agent changed on one server (entry index), for the snapshot:
 * fn is called once per HAProxy where it drained or limited the server,
 * with that HAProxy's Runtime API address, and once with address NULL for
 * what its agent-check answers did. */
typedef void (*enforcer_memory_fn)(void *ctx, const char *address,
				   const struct enforce_memory *mem);
void enforcer_memories(const struct enforcer *e, uint32_t index, enforcer_memory_fn fn,
		       void *ctx);

/* Puts back what a snapshot remembers of one server on the HAProxy at
 * `address` (NULL: the agent-check answers). False when no link talks to
 * that address any more (the memory is then dropped: the ownership record
 * in HAProxy, where there is one, still says what is the agent's). */
bool enforcer_remember(struct enforcer *e, uint32_t index, const char *address,
		       const struct enforce_memory *mem);

/* The worker entry `index`'s breaker is about ("ADDRESS:PORT", "" when
 * no look has said yet; endpoints.h), for the snapshot; and putting back
 * what a snapshot says of it: the first look that finds the server
 * pointing elsewhere then gives it a clean breaker, never the restored
 * one's drain. */
const char *enforcer_endpoint(const struct enforcer *e, uint32_t index);
void enforcer_restore_endpoint(struct enforcer *e, uint32_t index, const char *endpoint);

/* The backends of HAProxy i as its last complete look counted them, with
 * the agent's drains and holds since (*nb of them; NULL before a look).
 * Valid until the next look completes. */
const struct ejection_backend *enforcer_backends(const struct enforcer *e, unsigned i,
						 uint32_t *nb);

/* Per breaker table index: open, its drain held back by its backend's
 * ejection cap on some HAProxy (NULL without an enforcer). Valid until the
 * table grows or the enforcer is replaced: borrow it for one render. */
const bool *enforcer_ejection_capped(const struct enforcer *e);
/* Per breaker table index: the maxconn the agent holds for the server from
 * its learnt capacity on the first HAProxy (0: none; capacity.h). The same
 * lifetime as enforcer_ejection_capped()'s. */
const uint32_t *enforcer_maxconn_learnt(const struct enforcer *e);

/* The operator released the agent, or resumed it: the maps' entries the
 * agent keeps follow at each breaker's next convergence. */
void enforcer_set_released(struct enforcer *e, bool released);

const struct enforce_stats *enforcer_stats(const struct enforcer *e);
enum enforce_mode enforcer_mode(const struct enforcer *e);
/* The agent-check listener (agent-check mode) lets in only `allow`
 * (borrowed; NULL: anyone), and counts whom it did not. */
void enforcer_agent_check_allow(struct enforcer *e, const struct cidr_list *allow);
uint64_t enforcer_agent_check_not_allowed(const struct enforcer *e);
/* The Runtime API clients, one per HAProxy (i < enforcer_runtime_api_count()),
 * for the metrics endpoint to read. */
unsigned enforcer_runtime_api_count(const struct enforcer *e);
const struct runtime_api_client *enforcer_runtime_api(const struct enforcer *e, unsigned i);
/* The i-th HAProxy's Runtime API traffic, looks and commands together
 * (they use a connection each), and whether both reach it. */
const struct runtime_api_stats *enforcer_runtime_api_stats(struct enforcer *e, unsigned i);
bool enforcer_runtime_api_reachable(const struct enforcer *e, unsigned i);

/* What the i-th HAProxy's configuration lacks for the agent (wiring.h),
 * as its looks found it. */
struct wiring;
const struct wiring *enforcer_wiring(const struct enforcer *e, unsigned i);

/* The agent's [backend] and [server] sections as the HAProxies' listings
 * judged them (section_watch.h): NULL until every HAProxy was looked at
 * whole since the sections last changed, or without an HAProxy to ask.
 * Borrowed for one render. */
struct section_names;
const struct section_names *enforcer_sections(const struct enforcer *e);

#endif /* SPOA_ENFORCER_H */
