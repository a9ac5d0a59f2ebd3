/*
 * sim.h - the simulation's world: a simulated HAProxy (its backends and
 * servers, their states and counters, its maps), the workers behind the
 * servers and the traffic sent to them, the agent's real parts, and the
 * invariants watching all of it. One struct sim per schedule run.
 *
 * The files, one concern each:
 *   sim_loop.c        the simulated clock, and libev's timers over it
 *   sim_agent.c       the agent's real parts, assembled as daemon.c does
 *   sim_files.c       the private directory the agent's files go in
 *   sim_haproxy.c     HAProxy: the Runtime API commands the link sends,
 *                     answered from its queues, in HAProxy's words
 *   sim_traffic.c     workers and traffic: requests routed as HAProxy
 *                     does, answered by each worker's kind, counted, and
 *                     observed over SPOP
 *   sim_schedule.c    the schedule: a world and its events from a seed,
 *                     and the text a case is kept and replayed as
 *   sim_operator.c    the agent's own events: restarts, a SIGHUP with a
 *                     new policy, the operator's control commands
 *   sim_servers.c     servers added and deleted at run time (`add server`,
 *                     `del server`)
 *   sim_peers.c       peers mode: the verdict stick table HAProxy keeps,
 *                     and another node writing its verdicts there
 *   sim_invariants.c  the promises checked at every step
 *   sim_invariants_deleted.c  ... deleted_forgotten: a deleted server's
 *                     breaker and records go, a name added again starts
 *                     clean
 *   sim_invariants_peers.c    ... peer_verdicts_kept, and the other nodes'
 *                     verdicts haproxy_follows_breakers holds the agent to
 *   sim_run.c         one schedule, step by step
 *   sim_shrink.c      a failing schedule made short
 *   sim_main.c        the runs, their figures, the self-test
 */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "breakers/bus.h"
#include "config/config.h"
#include "daemon/daemon.h"
#include "link/enforcer.h"
#include "spop/dispatch.h"
#include "sim_rng.h"

#define SIM_MAX_BACKENDS 3
#define SIM_MAX_SERVERS 8 /* a backend's slots, parked ones included */
#define SIM_MAX_EVENTS 256
#define SIM_MAX_QUEUE 4096 /* requests HAProxy queues in a backend */
/* The maps the agent keeps: ownership, retry moments, watched servers. */
#define SIM_MAPS 3
#define SIM_MAP_WATCHED 2

/* ---- the workers ---- */

enum sim_worker_kind {
	WORKER_HEALTHY,  /* answers 200 */
	WORKER_BUSY,     /* answers 200 up to its capacity at once, a capacity status beyond */
	WORKER_REFUSING, /* answers only capacity statuses: full, and saying so */
	WORKER_FAILING,  /* answers 500 to a share of its requests */
	WORKER_HUNG,     /* accepts and never answers */
	WORKER_CRASHED,  /* refuses connections */
	WORKER_SLOW,     /* answers 200 after seconds */
	SIM_WORKER_KINDS
};

struct sim_worker {
	enum sim_worker_kind kind;
	uint32_t capacity;     /* BUSY: requests served at once */
	bool slow_refusals;    /* BUSY, REFUSING: a refusal's head after 1-3 s */
	uint32_t retry_after;  /* BUSY, REFUSING: its Retry-After, seconds; 0: none */
	uint32_t status;       /* BUSY, REFUSING: 503, 429 or 529 */
	uint32_t fail_percent; /* FAILING */
	uint32_t generation;   /* counts kind changes */
	uint64_t kind_since_us;
	uint32_t inflight;       /* requests it holds */
	uint32_t inflight_older; /* ... of them admitted under an earlier kind */
	uint64_t clean_since_us; /* when the last of those ended (0: not yet) */
	uint64_t clean_read_us;  /* the first complete look after that (0: none yet) */
	uint64_t answered_us;      /* its first answer under this kind (0: none yet) */
	uint64_t answered_read_us; /* the first complete look after it (0: none yet) */
	uint32_t stalled_trips;  /* opened by the stalled rule under this kind */
	uint64_t successes;      /* 2xx heads, all time */
};

/* ---- HAProxy ---- */

/* Whose hand a server's drain, maintenance or maxconn is. */
enum sim_hand {
	HAND_NONE,
	HAND_AGENT,      /* a command of the agent's link */
	HAND_OPERATOR,   /* `set server ... state` by a person */
	HAND_CONTROLLER, /* a parked slot: an ingress controller's maintenance */
};

#define SIM_OK_SEEN 3

struct sim_server {
	char name[16];
	uint32_t id;
	/* Not in HAProxy: deleted (`del server`), or a slot no `add server`
	 * has filled yet. HAProxy lists it nowhere and routes nothing to it. */
	bool absent;
	uint64_t deleted_us; /* its last deletion (0: never deleted) */
	uint64_t observed_us; /* the last NOTIFY that spoke of it (0: none) */
	/* Added again under a deleted server's name: since when, and the
	 * worker it came with (deleted_forgotten's clean start). */
	uint64_t readded_us;
	uint32_t readded_generation;
	uint64_t since_deleted_kept, since_readded_unclean;
	/* Peers mode: since when another node's verdict stands on it with
	 * the breaker not open; since when the breaker holds on a verdict
	 * that is gone; since when its own verdict is not as its breaker. */
	uint64_t since_peer_unheld, since_peer_gone, since_own_verdict;
	char addr[24]; /* "10.0.B.N", or "127.0.0.1" parked */
	unsigned port;
	unsigned admin; /* RUNTIME_API_ADMF_* */
	enum sim_hand drain_by, maint_by;
	/* When a complete look first showed the agent an operator's or a
	 * controller's hand on the server (0: none has yet). */
	uint64_t hand_seen_us;
	/* The agent's drain landed on an operator's that no look had shown
	 * it: HAProxy keeps one drain flag, and answers a drain of a drained
	 * server as any other, so the drain is both hands' and the agent
	 * cannot tell it from its own. Cleared by the next change of hand. */
	bool drain_raced;
	bool up; /* health checks */
	unsigned check_fails, check_oks;
	uint32_t maxconn_conf, maxconn; /* 0: unlimited */
	enum sim_hand maxconn_by;
	/* Counters, as `show stat` names them; reset by a reload. */
	uint64_t stot, hrsp[5], wretr, wredis, econ, eresp, srv_abrt, cli_abrt;
	uint32_t scur;
	uint32_t kill_epoch; /* `shutdown sessions server`s so far */
	struct sim_worker w;
	/* hrsp_2xx as the agent's last three complete reads of `show stat`
	 * saw it, newest first, and when each was read: whether the worker
	 * answered anything between two looks the agent had read. */
	uint64_t ok_seen[SIM_OK_SEEN];
	bool ok_seen_valid[SIM_OK_SEEN];
	uint64_t ok_seen_us[SIM_OK_SEEN];
	/* Since when each timed invariant's condition holds (0: not now). */
	uint64_t since_orphan_drain, since_orphan_maxconn, since_unfollowed;
	/* The breaker's trips as the last step saw them. */
	const void *entry_seen;
	uint32_t trips_seen;
	/* The operator's hold on the server, as the control socket accepted
	 * it (sim_operator.c): what operator_hold_kept holds the agent to. */
	struct sim_hold {
		enum breaker_hold kind; /* BREAKER_HOLD_NONE: none */
		bool forced;
		uint64_t since_us, until_us; /* until: 0, until lifted */
	} hold;
	uint64_t since_hold_broken;
	/* What the agent owned here when it last stopped with its snapshot
	 * (snapshot_keeps): its drain, its maxconn, while HAProxy still
	 * shows them so. */
	bool owned_drain, owned_maxconn;
	uint64_t since_owned_lost;
};

struct sim_backend {
	char name[16];
	uint32_t id;
	struct sim_server srv[SIM_MAX_SERVERS];
	unsigned nb;
	double rate; /* requests a second (open loop) */
	uint64_t next_arrival_us;
	/* Closed loop: clients each waiting for its answer, then thinking,
	 * before the next request (0: open loop at `rate`). */
	unsigned clients;
	bool clients_started;
	/* Requests waiting for a slot (maxconn): their arrival times, and
	 * their clients (-1: open loop). */
	uint64_t queue[SIM_MAX_QUEUE];
	int16_t queue_client[SIM_MAX_QUEUE];
	unsigned q_head, q_len;
	uint64_t since_over_cap, since_no_server;
	uint32_t next_id; /* the id `add server` gives next */
	bool paused; /* `pause BACKEND`, accepted ... */
	uint64_t paused_since_us; /* ... then */
};

/* One in-flight request's next moment: its head, or its timeout. */
struct sim_req {
	uint64_t due_us;
	uint64_t seq;
	uint8_t be, srv;
	uint8_t retries; /* capacity retries left (retry-on) */
	bool timeout;    /* ends as `timeout server` does */
	uint16_t status;
	uint32_t retry_after;
	uint32_t generation; /* the worker's, at admission */
	uint32_t epoch;      /* the server's kill_epoch, at admission */
	int16_t client;      /* closed loop: whose request (-1: open loop) */
	bool think;          /* not a request: that client's next one is due */
};

/* The link's Runtime API clients, answered by the simulated HAProxy. */
struct sim_client {
	bool in_flight;
	uint64_t due_us;
	unsigned n;    /* commands in the batch */
	bool lose;     /* applied, but the reply is lost */
	bool refuse;   /* not reached: HAProxy's socket is down */
};

/* ---- the schedule ---- */

enum sim_event_kind {
	EV_WORKER,       /* a server's worker becomes another kind */
	EV_RATE,         /* a backend's traffic changes */
	EV_OP_DRAIN,     /* an operator drains a server */
	EV_OP_MAINT,     /* ... puts it in maintenance */
	EV_OP_READY,     /* ... makes it ready again */
	EV_PARK,         /* a controller parks a slot (maint, 127.0.0.1:1) */
	EV_FILL,         /* ... fills a parked slot with a new worker */
	EV_MOVE,         /* a server points at another worker */
	EV_API_DOWN,     /* the Runtime API refuses for a while */
	EV_API_LOSSY,    /* replies are lost (the command applied) for a while */
	EV_HAPROXY_RELOAD,
	EV_AGENT_RESTART, /* kill -9 and start again, no snapshot */
	/* The agent's own events (sim_operator.c), drawn from a stream of
	 * their own: */
	EV_AGENT_RESTART_SNAPSHOT, /* TERM (the last snapshot written), start again */
	EV_POLICY_RELOAD, /* SIGHUP with a new [breaker] policy */
	EV_HOLD_OUT,      /* ctl hold out B/S [for a[1] s] [force: a[0]] */
	EV_HOLD_IN,       /* ctl hold in B/S [for a[1] s] */
	EV_UNHOLD,        /* ctl unhold B/S */
	EV_PAUSE,         /* ctl pause B */
	EV_RESUME,        /* ctl resume B */
	EV_RELEASE,       /* ctl release all */
	EV_RESUME_ALL,    /* ctl resume all */
	/* Servers added and deleted at run time (sim_servers.c), from a
	 * stream of their own: */
	EV_ADD_SERVER,    /* add server B/S ADDR: a[0] 1 added ready; a[1] its worker's kind */
	EV_DEL_SERVER,    /* del server B/S: a[0] 1 after `state maint` and `shutdown sessions` */
	/* Peers mode (sim_peers.c), from a stream of their own: */
	EV_PEER_OPEN,     /* another node writes its verdict: a[0] 1 open, 2 half-open */
	EV_PEER_CLOSE,    /* ... writes it closed, and keeps it no more */
	EV_PEER_GONE,     /* ... stops: none of its verdicts is rewritten from then */
	SIM_EVENT_KINDS
};

struct sim_event {
	uint64_t at_ms; /* from the schedule's start */
	enum sim_event_kind kind;
	uint8_t be, srv;
	/* EV_WORKER: the kind, capacity, slow refusals, Retry-After,
	 * status, fail share; EV_RATE: a[0] requests/s; EV_API_*: a[0]
	 * ms; EV_HAPROXY_RELOAD: a[0] 1 when the servers' states and the
	 * ownership map are saved and restored (reload-haproxy.sh);
	 * EV_POLICY_RELOAD: threshold, cooldown ms, max_ejection_percent,
	 * failure rate, drain_last_server; EV_HOLD_*: a[0] force, a[1] its
	 * seconds (0: until lifted). */
	uint32_t a[6];
};

/* A world and what happens to it: everything a run depends on. */
struct sim_schedule {
	uint64_t seed;
	uint64_t duration_ms;
	/* The world at the start. */
	unsigned nb_backends;
	unsigned nb_servers[SIM_MAX_BACKENDS];
	unsigned nb_parked[SIM_MAX_BACKENDS]; /* the last slots, parked */
	uint32_t rate[SIM_MAX_BACKENDS];
	uint32_t maxconn_conf[SIM_MAX_BACKENDS]; /* 0: unlimited */
	uint32_t clients[SIM_MAX_BACKENDS];      /* closed-loop clients; 0: open loop */
	/* The policy (the [breaker] options). */
	uint32_t threshold, cooldown_ms, max_ejection_percent, failure_rate;
	bool drain_last_server, retry_on; /* retry_on: HAProxy retries capacity statuses elsewhere */
	/* The shipped default SPOE file: HAProxy notifies a success only for
	 * a server in breaker-watched.map, anything else always. */
	bool steady;
	/* Peers mode: the agent reads and writes the verdict table, another
	 * node writes there too (one schedule in five). */
	bool peers;
	struct sim_event events[SIM_MAX_EVENTS];
	unsigned nb_events;
};

/* ---- the invariants ---- */

enum sim_invariant {
	INV_BUSY_NEVER_CHARGED,
	INV_BUSY_NEVER_DRAINED_ANSWERING,
	INV_CAPACITY_PROBE_CLOSES,
	INV_EJECTION_CAP,
	INV_LAST_SERVING_SERVER,
	INV_OPERATOR_HAND_KEPT,
	INV_NO_ORPHAN_DRAIN,
	INV_NO_ORPHAN_MAXCONN,
	INV_HAPROXY_FOLLOWS_BREAKERS,
	INV_NO_SOCKET,
	INV_SNAPSHOT_KEEPS,
	INV_OPERATOR_HOLD_KEPT,
	INV_DELETED_FORGOTTEN,
	INV_PEER_VERDICTS_KEPT,
	SIM_INVARIANTS
};

/* A planted misbehaviour, to prove the checker fires (sim --self-test). */
enum sim_break {
	BREAK_NONE,
	BREAK_BUSY_AS_FAILURE, /* a busy worker's refusals reach SPOP as 500 */
	BREAK_PROBE_AS_FAILURE, /* a capacity status answering a probe reaches SPOP as 500 */
	BREAK_LIFT_OPERATOR,   /* HAProxy takes an operator's drain for the agent's */
	BREAK_IGNORE_READY,    /* HAProxy ignores the agent's `state ready` */
	BREAK_CAP_OFF,         /* the agent runs with no ejection cap, the checker with the schedule's */
	BREAK_SNAPSHOT_TRIPS,  /* the snapshot the agent loads has lost its breakers' trips */
	BREAK_FORGET_HOLD,     /* the agent forgets an operator's hold as soon as it is made */
	BREAK_KEEP_MAP_ENTRY,  /* HAProxy ignores the agent's `del map` */
	BREAK_PEER_UNSEEN,     /* `show table` shows the agent none of the other node's verdicts */
	BREAK_PEER_STALE,      /* `show table` shows the agent verdicts that are gone */
	BREAK_VERDICT_LOST,    /* HAProxy ignores the agent's `set table` */
	SIM_BREAKS
};

struct sim_violation {
	enum sim_invariant inv;
	uint64_t at_ms;
	char what[256];
};

/* ---- the agent ---- */

struct sim_agent {
	uint32_t epoch; /* agents started so far: what a cached entry belongs to */
	/* The parts as daemon.c holds them: reload.c and control_exec.c
	 * work on this. */
	struct daemon d;
	bool config_loaded, breakers_up, control_up;
};

/* The [breaker] policy in force: the schedule's, then each SIGHUP's. */
struct sim_policy {
	uint32_t threshold, cooldown_ms, max_ejection_percent, failure_rate;
	bool drain_last_server;
};

/* ---- one run ---- */

struct sim {
	const struct sim_schedule *schedule;
	enum sim_break brk;
	/* SIM_VERBOSE: 1, the events and the commands HAProxy runs; 2,
	 * its looks' too */
	int verbose;
	struct ev_loop *loop;
	struct sim_rng traffic_rng, api_rng;
	struct sim_agent agent;
	struct sim_policy policy;
	/* The agent keeps a state file (sim_files.c): the schedule restarts it
	 * with its snapshot, or the operator speaks to it. */
	bool keeps_files;
	bool released; /* `release all`, accepted ... */
	uint64_t released_since_us; /* ... then */
	/* HAProxy */
	struct sim_backend be[SIM_MAX_BACKENDS];
	unsigned nb_be;
	uint32_t pid;
	uint64_t start_us;
	struct sim_client clients[2]; /* looks, commands */
	uint64_t api_down_until_us, api_lossy_until_us, api_up_since_us;
	/* Every map the agent keeps, key and value per entry. */
	struct sim_map {
		const char *path;
		struct sim_map_entry {
			char key[48];
			char value[48];
		} *entries;
		unsigned nb, allocated;
	} maps[SIM_MAPS];
	unsigned nb_maps; /* the watched map only in steady-state mode */
	/* Peers mode: the verdict stick table, one entry a server slot (its
	 * key BACKEND/SERVER), and the other node's own view (sim_peers.c). */
	struct sim_verdict {
		bool present;
		uint32_t state, deadline, node; /* gpt0, gpc0, gpc1 */
		uint64_t written_us, expires_us;
		uint32_t written_epoch; /* the agent's that wrote it (0: the other node) */
		uint64_t stands_since_us; /* another node's open or half-open verdict, since */
		/* BREAK_PEER_STALE: the last open verdict, shown on after it went */
		bool stale_shown;
		uint32_t stale_state, stale_node;
		/* The other node keeps it alive: the state it rewrites (0: none) */
		uint32_t peer_keeps;
	} verdicts[SIM_MAX_BACKENDS][SIM_MAX_SERVERS];
	uint64_t peer_next_us; /* the other node's next rewrite */
	uint64_t next_check_us; /* health checks, every 2 s */
	/* Each server's breaker as last found, and the agent it was found
	 * in: the invariants look at every server at every step. */
	struct sim_entry_cache {
		struct breaker_table_entry *entry;
		uint64_t hash;
		uint32_t epoch;
	} entry_cache[SIM_MAX_BACKENDS][SIM_MAX_SERVERS];
	/* Requests in flight: a binary heap by (due_us, seq). */
	struct sim_req *heap;
	unsigned heap_len, heap_cap;
	uint64_t req_seq;
	unsigned next_event;
	uint32_t addr_serial; /* new workers' addresses */
	uint64_t stat_reads; /* complete `show stat` reads answered */
	/* What happened */
	uint64_t steps, requests, observations, commands, looks;
	/* Agent commands that undid an operator's hand it could not have
	 * seen yet (queued before a look showed it): HAProxy's race. */
	uint64_t races;
	struct sim_violation violation;
	bool failed;
	uint64_t checks[SIM_INVARIANTS];
};

/* Times, in microseconds of the simulated clock. */
#define SIM_MS 1000ull
#define SIM_S 1000000ull
#define SIM_POLL_MS 500u          /* the agent's poll_interval (its default) */
#define SIM_TIMEOUT_SERVER_S 10u  /* HAProxy's timeout server */
#define SIM_TIMEOUT_QUEUE_S 5u    /* ... and timeout queue, as shipped */
/* How long HAProxy may lag behind the breakers (and an agent's drain its
 * reason) with the Runtime API up: a look and its sweep, the command's
 * way, and a look to notice a command that did not land. */
#define SIM_CONVERGE_MS (6 * SIM_POLL_MS + 1000u)
/* How long the agent keeps a breaker SPOP speaks of and no look lists
 * (link/converge.c, UNLISTED_IDLE_MS), plus a look to drop it. */
#define SIM_UNLISTED_IDLE_MS (60000 + SIM_CONVERGE_MS)
/* Peers mode: this node's node_id and the other node's (the lower keeps
 * a verdict both own: here always the other's); the table's `expire`, as
 * breaker-peers.cfg ships it; how long the agent holds on a verdict after
 * it last read it (two looks and a second: lifecycle.c). */
#define SIM_NODE_ID 2u
#define SIM_PEER_NODE_ID 1u
#define SIM_VERDICT_EXPIRE_MS 5000u
#define SIM_VERDICT_HOLD_MS (2 * SIM_POLL_MS + 1000u)
#define SIM_VERDICT_TABLE "breaker_verdicts"

/* A Runtime API reply under construction. */
struct sim_reply {
	char *p;
	size_t len, cap;
};
void sim_reply_put(struct sim_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* sim_agent.c */
bool sim_agent_start(struct sim *s, char *err, size_t size);
/* last_snapshot: a TERM (the snapshot written); false, a kill. */
void sim_agent_stop(struct sim *s, bool last_snapshot);
/* SIGHUP: daemon_reload(), the options read again with s->policy. */
void sim_agent_reload(struct sim *s);
/* One control command, executed as the socket's are; false when the
 * agent refused it (its answer starts "error:"). */
bool sim_agent_control(struct sim *s, const char *command, char *answer, size_t size);
/* A worker's response as HAProxy's SPOE sends it: through the same
 * dispatch the SPOP connections hand their frames to. */
void sim_agent_observe(struct sim *s, const struct sim_backend *b, const struct sim_server *sv,
		       unsigned status, uint32_t retry_after);
struct breaker_table_entry *sim_agent_entry(struct sim *s, const struct sim_backend *b,
					    const struct sim_server *sv);

/* sim_files.c: the process's private directory, emptied per schedule. */
const char *sim_files_dir(void);
void sim_files_clear(void);
void sim_files_path(const char *name, char *out, size_t size);

/* sim_operator.c */
/* Whether a schedule has events that need the agent's files. */
bool sim_operator_keeps_files(const struct sim_schedule *sc);
/* The agent's own events (EV_AGENT_RESTART*, EV_POLICY_RELOAD, EV_HOLD_*,
 * ...): false when ev is none of them. */
bool sim_operator_apply(struct sim *s, const struct sim_event *ev);
/* Whether the operator's hold on a server is in force (not run out, its
 * backend not paused, the agent not released). */
bool sim_hold_applies(const struct sim *s, const struct sim_backend *b,
		      const struct sim_server *sv);
/* Draws the agent's own events into a schedule, from a stream of their own. */
void sim_operator_generate(struct sim_schedule *sc, uint64_t seed, uint64_t duration_ms);

/* sim_servers.c */
/* EV_ADD_SERVER, EV_DEL_SERVER; false when ev is neither. */
bool sim_servers_apply(struct sim *s, const struct sim_event *ev);
/* Draws servers added and deleted, from a stream of their own. */
void sim_servers_generate(struct sim_schedule *sc, uint64_t seed, uint64_t duration_ms);

/* sim_peers.c */
/* EV_PEER_*; false when ev is none of them. */
bool sim_peers_apply(struct sim *s, const struct sim_event *ev);
/* Draws peers mode (one schedule in five) and the other node's events. */
void sim_peers_generate(struct sim_schedule *sc, uint64_t seed, uint64_t duration_ms);
/* `show table` and `set table`: true when the command was one of them. */
bool sim_peers_execute(struct sim *s, const char *command, struct sim_reply *r);
/* The other node's rewrites, and the table's expiry. */
uint64_t sim_peers_next_due(const struct sim *s);
void sim_peers_run_due(struct sim *s);
/* The table's entry for a server slot, NULL when there is none (or it
 * expired). */
const struct sim_verdict *sim_peers_entry(struct sim *s, unsigned be, unsigned srv);
/* Another node's open or half-open verdict stands on the slot. */
bool sim_peers_other_stands(struct sim *s, unsigned be, unsigned srv);

/* sim_haproxy.c */
void sim_haproxy_init(struct sim *s);
/* Steady-state mode: whether HAProxy notifies the agent of this answer
 * (the SPOE message's ACLs, over the watched map the agent keeps). */
bool sim_haproxy_notifies(const struct sim *s, const struct sim_backend *b,
			  const struct sim_server *sv, unsigned status);
void sim_haproxy_free(struct sim *s);
void sim_haproxy_reload(struct sim *s, bool keep_state);
/* When the next batch is answered (UINT64_MAX: none in flight); answers
 * what is due, starts the next batches. */
uint64_t sim_haproxy_next_due(struct sim *s);
void sim_haproxy_serve(struct sim *s);
bool sim_haproxy_skip_timer(void *ctx, const ev_timer *w);
void sim_haproxy_checks(struct sim *s);
/* BREAK_LIFT_OPERATOR: the agent's ownership record claims an
 * operator's drain, as if the agent had made it. */
void sim_haproxy_claim(struct sim *s, const struct sim_backend *b, const struct sim_server *sv);
/* The operator's and the controller's hands, and address moves. */
void sim_haproxy_set_state(struct sim *s, struct sim_server *sv, const char *state,
			   enum sim_hand hand);
bool sim_server_serving(const struct sim_server *sv);
bool sim_server_capacity(const struct sim_server *sv);

/* sim_traffic.c */
void sim_worker_become(struct sim *s, struct sim_server *sv, const uint32_t a[6]);
uint64_t sim_traffic_next_due(struct sim *s);
/* `shutdown sessions server`: every request the server holds ends now. */
void sim_traffic_kill_sessions(struct sim *s, struct sim_backend *b, struct sim_server *sv);
void sim_traffic_run_due(struct sim *s);
void sim_traffic_free(struct sim *s);

/* sim_schedule.c */
void sim_schedule_generate(struct sim_schedule *sc, uint64_t seed, uint64_t duration_ms);
/* A new event of the schedule, cleared, its moment drawn from r within
 * the schedule; the caller checked that there is room. */
struct sim_event *sim_event_draw(struct sim_schedule *sc, struct sim_rng *r, uint64_t duration_ms);
/* What follows ev: a copy as `kind`, lo_ms to hi_ms later (drawn from r);
 * NULL, and nothing added, when there is no room or it falls past the
 * schedule's end. */
struct sim_event *sim_event_then(struct sim_schedule *sc, const struct sim_event *ev,
				 enum sim_event_kind kind, struct sim_rng *r, uint64_t lo_ms,
				 uint64_t hi_ms, uint64_t duration_ms);
void sim_event_apply(struct sim *s, const struct sim_event *ev);
/* The case as one line of text, and back. */
void sim_schedule_print(const struct sim_schedule *sc, FILE *out);
bool sim_schedule_parse(struct sim_schedule *sc, const char *text, char *err, size_t size);
const char *sim_event_name(enum sim_event_kind kind);

/* sim_invariants.c */
const char *sim_invariant_name(enum sim_invariant inv);
/* Records the first violation; false from then on. */
bool sim_violate(struct sim *s, enum sim_invariant inv, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void sim_invariants_step(struct sim *s);
/* sim_invariants_deleted.c: deleted_forgotten, for a server slot. */
void sim_invariants_deleted(struct sim *s, struct sim_backend *b, struct sim_server *sv);
/* sim_invariants_peers.c: the other nodes' verdicts held
 * (haproxy_follows_breakers) and peer_verdicts_kept, for a server slot. */
void sim_invariants_peers(struct sim *s, struct sim_backend *b, struct sim_server *sv);
/* The condition holds now; whether it has held longer than bound_ms,
 * counted from when it began or the Runtime API came back. */
bool sim_persists(struct sim *s, uint64_t *since, bool cond, uint64_t bound_ms);
/* Around one observation: what the breaker was, and what it became. */
void sim_invariants_observed(struct sim *s, const struct sim_backend *b,
			     const struct sim_server *sv, unsigned status, enum breaker_state before,
			     const struct breaker_table_entry *entry);
/* An agent's command, queued at `queued_us`, about to land on a server. */
void sim_invariants_agent_command(struct sim *s, const struct sim_backend *b,
				  const struct sim_server *sv, const char *state,
				  uint64_t queued_us);
/* A complete `show stat`, `show servers state` was handed to the agent. */
void sim_invariants_stat_read(struct sim *s);
void sim_invariants_state_read(struct sim *s);
/* An agent about to stop with its snapshot: what it holds, to be found
 * again once it starts (snapshot_keeps). */
struct sim_snapshot_seen;
struct sim_snapshot_seen *sim_invariants_before_snapshot(struct sim *s);
void sim_invariants_after_snapshot(struct sim *s, struct sim_snapshot_seen *seen);

/* sim_run.c: runs one schedule; false when an invariant broke
 * (s->violation says which, when). */
struct sim_figures {
	uint64_t steps, requests, observations, commands, looks, races;
	uint64_t checks[SIM_INVARIANTS];
	uint64_t simulated_ms;
};
bool sim_run(const struct sim_schedule *sc, enum sim_break brk, struct sim_violation *v,
	     struct sim_figures *fig, int verbose);

/* sim_shrink.c: the shortest schedule found that still breaks `inv`. */
void sim_shrink(struct sim_schedule *sc, enum sim_break brk, enum sim_invariant inv,
		uint64_t failed_at_ms, unsigned *runs);

#endif
