/*
 * sim_schedule.c - a schedule: the world at the start (backends, their
 * servers and parked slots, traffic, maxconn, the breakers' policy) and
 * the events that happen to it, drawn from one seed; what each event does
 * to the world; and the one line of text a schedule is printed as, which
 * SIM_CASE replays and tests/sim/cases/ keeps.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hapi/runtime_api.h"
#include "sim.h"
#include "sim_loop.h"

static const char *const event_names[SIM_EVENT_KINDS] = {
	[EV_WORKER] = "worker",       [EV_RATE] = "rate",
	[EV_OP_DRAIN] = "op-drain",   [EV_OP_MAINT] = "op-maint",
	[EV_OP_READY] = "op-ready",   [EV_PARK] = "park",
	[EV_FILL] = "fill",           [EV_MOVE] = "move",
	[EV_API_DOWN] = "api-down",   [EV_API_LOSSY] = "api-lossy",
	[EV_HAPROXY_RELOAD] = "reload", [EV_AGENT_RESTART] = "agent-restart",
	[EV_AGENT_RESTART_SNAPSHOT] = "agent-restart-snapshot",
	[EV_POLICY_RELOAD] = "policy-reload",
	[EV_HOLD_OUT] = "hold-out",   [EV_HOLD_IN] = "hold-in",
	[EV_UNHOLD] = "unhold",       [EV_PAUSE] = "pause",
	[EV_RESUME] = "resume",       [EV_RELEASE] = "release",
	[EV_RESUME_ALL] = "resume-all",
	[EV_ADD_SERVER] = "add-server", [EV_DEL_SERVER] = "del-server",
	[EV_PEER_OPEN] = "peer-open", [EV_PEER_CLOSE] = "peer-close",
	[EV_PEER_GONE] = "peer-gone",
};

const char *sim_event_name(enum sim_event_kind kind)
{
	return kind < SIM_EVENT_KINDS ? event_names[kind] : "?";
}

/* ---- drawing a schedule ---- */

static uint32_t weighted(struct sim_rng *r, const unsigned *weights, unsigned n)
{
	unsigned total = 0;
	for (unsigned i = 0; i < n; i++)
		total += weights[i];
	unsigned x = (unsigned)sim_rng_below(r, total);
	for (unsigned i = 0; i < n; i++) {
		if (x < weights[i])
			return i;
		x -= weights[i];
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct sim_event *x = a, *y = b;
	if (x->at_ms != y->at_ms)
		return x->at_ms < y->at_ms ? -1 : 1;
	/* A total order: equal times keep one order whatever was dropped. */
	return memcmp(&x->kind, &y->kind, sizeof(*x) - offsetof(struct sim_event, kind));
}

struct sim_event *sim_event_draw(struct sim_schedule *sc, struct sim_rng *r, uint64_t duration_ms)
{
	struct sim_event *ev = &sc->events[sc->nb_events++];
	memset(ev, 0, sizeof(*ev));
	ev->at_ms = sim_rng_below(r, duration_ms);
	return ev;
}

struct sim_event *sim_event_then(struct sim_schedule *sc, const struct sim_event *ev,
				 enum sim_event_kind kind, struct sim_rng *r, uint64_t lo_ms,
				 uint64_t hi_ms, uint64_t duration_ms)
{
	if (sc->nb_events >= SIM_MAX_EVENTS)
		return NULL;
	struct sim_event *next = &sc->events[sc->nb_events++];
	*next = *ev;
	next->kind = kind;
	next->at_ms = ev->at_ms + sim_rng_range(r, lo_ms, hi_ms);
	if (next->at_ms < duration_ms)
		return next;
	sc->nb_events--;
	return NULL;
}

void sim_schedule_generate(struct sim_schedule *sc, uint64_t seed, uint64_t duration_ms)
{
	struct sim_rng r;
	sim_rng_seed(&r, seed, 0);
	memset(sc, 0, sizeof(*sc));
	sc->seed = seed;
	sc->duration_ms = duration_ms;
	sc->nb_backends = (unsigned)sim_rng_range(&r, 1, SIM_MAX_BACKENDS);
	for (unsigned i = 0; i < sc->nb_backends; i++) {
		sc->nb_parked[i] = sim_rng_chance(&r, 0.4) ? (unsigned)sim_rng_range(&r, 1, 2) : 0;
		sc->nb_servers[i] = sc->nb_parked[i] + (unsigned)sim_rng_range(&r, 1, 6);
		sc->rate[i] = (uint32_t)sim_rng_range(&r, 5, 150);
		sc->maxconn_conf[i] = sim_rng_chance(&r, 0.3) ? (uint32_t)sim_rng_range(&r, 10, 60) : 0;
	}
	sc->threshold = (uint32_t)sim_rng_range(&r, 2, 5);
	sc->cooldown_ms = (uint32_t)sim_rng_range(&r, 2, 30) * 1000;
	static const uint32_t percents[] = {34, 50, 50, 67, 100};
	sc->max_ejection_percent = percents[sim_rng_below(&r, 5)];
	sc->failure_rate = sim_rng_chance(&r, 0.3) ? (uint32_t)sim_rng_range(&r, 30, 60) : 0;
	sc->drain_last_server = sim_rng_chance(&r, 0.1);
	sc->retry_on = sim_rng_chance(&r, 0.7);

	static const unsigned kind_weights[SIM_EVENT_KINDS] = {
		[EV_WORKER] = 45, [EV_RATE] = 10, [EV_OP_DRAIN] = 6, [EV_OP_MAINT] = 4,
		[EV_OP_READY] = 8, [EV_PARK] = 3, [EV_FILL] = 4, [EV_MOVE] = 4,
		[EV_API_DOWN] = 4, [EV_API_LOSSY] = 4, [EV_HAPROXY_RELOAD] = 3,
		[EV_AGENT_RESTART] = 5,
	};
	static const unsigned worker_weights[SIM_WORKER_KINDS] = {
		[WORKER_HEALTHY] = 25, [WORKER_BUSY] = 22, [WORKER_REFUSING] = 10,
		[WORKER_FAILING] = 15, [WORKER_HUNG] = 8, [WORKER_CRASHED] = 10, [WORKER_SLOW] = 10,
	};
	struct sim_rng saved;
	sim_rng_seed(&saved, seed, 5);
	unsigned n = (unsigned)(duration_ms / 15000) + 2;
	if (n > SIM_MAX_EVENTS)
		n = SIM_MAX_EVENTS;
	for (unsigned k = 0; k < n && sc->nb_events < SIM_MAX_EVENTS; k++) {
		struct sim_event *ev = &sc->events[sc->nb_events++];
		ev->at_ms = sim_rng_below(&r, duration_ms);
		ev->kind = weighted(&r, kind_weights, SIM_EVENT_KINDS);
		ev->be = (uint8_t)sim_rng_below(&r, sc->nb_backends);
		ev->srv = (uint8_t)sim_rng_below(&r, sc->nb_servers[ev->be]);
		switch (ev->kind) {
		case EV_WORKER: {
			static const uint32_t statuses[] = {503, 503, 503, 429, 529};
			ev->a[0] = weighted(&r, worker_weights, SIM_WORKER_KINDS);
			ev->a[1] = (uint32_t)sim_rng_range(&r, 1, 8);
			ev->a[2] = sim_rng_chance(&r, 0.3);
			ev->a[3] = sim_rng_chance(&r, 0.5) ? (uint32_t)sim_rng_range(&r, 1, 5) : 0;
			ev->a[4] = statuses[sim_rng_below(&r, 5)];
			ev->a[5] = (uint32_t)sim_rng_range(&r, 30, 100);
			break;
		}
		case EV_RATE:
			ev->a[0] = (uint32_t)sim_rng_range(&r, 0, 200);
			break;
		case EV_API_DOWN:
			ev->a[0] = (uint32_t)sim_rng_range(&r, 500, 8000);
			break;
		case EV_API_LOSSY:
			ev->a[0] = (uint32_t)sim_rng_range(&r, 2000, 20000);
			break;
		case EV_HAPROXY_RELOAD:
			/* Half of them with the servers' states saved (from a
			 * stream of its own: the other draws stay as they were). */
			ev->a[0] = (uint32_t)sim_rng_below(&saved, 2);
			break;
		default:
			break;
		}
		/* A worker that broke often comes back, busy as often as not:
		 * its breaker's probes meet what it answers then. */
		bool broke = ev->kind == EV_WORKER &&
			     (ev->a[0] == WORKER_FAILING || ev->a[0] == WORKER_HUNG ||
			      ev->a[0] == WORKER_CRASHED);
		if (broke && sc->nb_events < SIM_MAX_EVENTS && sim_rng_chance(&r, 0.6)) {
			struct sim_event *back = &sc->events[sc->nb_events++];
			*back = *ev;
			back->at_ms = ev->at_ms + sim_rng_range(&r, 2000, 60000);
			back->a[0] = sim_rng_chance(&r, 0.5) ? WORKER_HEALTHY
			           : sim_rng_chance(&r, 0.6) ? WORKER_BUSY : WORKER_REFUSING;
			if (back->at_ms >= duration_ms)
				sc->nb_events--;
		}
	}
	/* The agent's own events: restarts with the snapshot, SIGHUPs, the
	 * operator's commands (sim_operator.c). */
	sim_operator_generate(sc, seed, duration_ms);
	/* Servers added and deleted at run time, and peers mode with another
	 * node's verdicts: each from a stream of its own too. */
	sim_servers_generate(sc, seed, duration_ms);
	sim_peers_generate(sc, seed, duration_ms);
	qsort(sc->events, sc->nb_events, sizeof(sc->events[0]), by_time);
	/* Steady-state mode (the shipped default SPOE file) in three worlds
	 * of five, from a stream of its own: every seed's world and events
	 * stay what they were before it was simulated. */
	struct sim_rng mode;
	sim_rng_seed(&mode, seed, 3);
	sc->steady = sim_rng_chance(&mode, 0.6);
	/* Closed-loop clients in a third of the backends (users or agents
	 * each waiting for its answer), from a stream of their own too. */
	struct sim_rng loop;
	sim_rng_seed(&loop, seed, 4);
	for (unsigned i = 0; i < sc->nb_backends; i++)
		sc->clients[i] = sim_rng_chance(&loop, 0.33) ? (uint32_t)sim_rng_range(&loop, 4, 48) : 0;
}

/* ---- what an event does ---- */

static void new_worker(struct sim *s, struct sim_backend *b, struct sim_server *sv)
{
	static const uint32_t healthy[6] = {WORKER_HEALTHY, 0, 0, 0, 0, 0};
	snprintf(sv->addr, sizeof(sv->addr), "10.%u.%u.%u", 100 + (unsigned)(b - s->be),
		 (s->addr_serial / 250) % 250, s->addr_serial % 250 + 1);
	s->addr_serial++;
	sv->port = 8000;
	sim_worker_become(s, sv, healthy);
}

/* An event that happens to one server: none where HAProxy has no server. */
static bool on_one_server(enum sim_event_kind kind)
{
	switch (kind) {
	case EV_WORKER: case EV_OP_DRAIN: case EV_OP_MAINT: case EV_OP_READY: case EV_PARK:
	case EV_FILL: case EV_MOVE: case EV_HOLD_OUT: case EV_HOLD_IN: case EV_UNHOLD:
		return true;
	default:
		return false;
	}
}

void sim_event_apply(struct sim *s, const struct sim_event *ev)
{
	/* Servers come and go, and verdicts name servers whether this node
	 * has them or not: before the slot is looked at. */
	if (sim_servers_apply(s, ev) || sim_peers_apply(s, ev))
		return;
	if (ev->be >= s->nb_be || ev->srv >= s->be[ev->be].nb)
		return;
	struct sim_backend *b = &s->be[ev->be];
	struct sim_server *sv = &b->srv[ev->srv];
	if (sv->absent && on_one_server(ev->kind))
		return;
	bool parked = sv->maint_by == HAND_CONTROLLER;
	uint64_t now = sim_now_us();

	switch (ev->kind) {
	case EV_WORKER:
		if (!parked)
			sim_worker_become(s, sv, ev->a);
		break;
	case EV_RATE:
		b->rate = ev->a[0];
		b->next_arrival_us = 0;
		break;
	case EV_OP_DRAIN:
		/* A drain on a drained server changes nothing HAProxy shows:
		 * no one could tell it from the first, which stays whose it
		 * was. */
		if (!parked && !(sv->admin & RUNTIME_API_ADMF_FDRAIN)) {
			sim_haproxy_set_state(s, sv, "drain", HAND_OPERATOR);
			if (s->brk == BREAK_LIFT_OPERATOR)
				sim_haproxy_claim(s, b, sv);
		}
		break;
	case EV_OP_MAINT:
		if (!parked)
			sim_haproxy_set_state(s, sv, "maint", HAND_OPERATOR);
		break;
	case EV_OP_READY:
		/* An operator lifts only what is theirs. */
		if (sv->drain_by == HAND_OPERATOR || sv->maint_by == HAND_OPERATOR)
			sim_haproxy_set_state(s, sv, "ready", HAND_OPERATOR);
		break;
	case EV_PARK:
		if (!parked) {
			sim_haproxy_set_state(s, sv, "maint", HAND_CONTROLLER);
			snprintf(sv->addr, sizeof(sv->addr), "127.0.0.1");
			sv->port = 1;
			static const uint32_t gone[6] = {WORKER_HEALTHY, 0, 0, 0, 0, 0};
			sim_worker_become(s, sv, gone);
		}
		break;
	case EV_FILL:
		if (parked) {
			new_worker(s, b, sv);
			sim_haproxy_set_state(s, sv, "ready", HAND_CONTROLLER);
			sv->up = true;
			sv->check_fails = 0;
		}
		break;
	case EV_MOVE:
		if (!parked)
			new_worker(s, b, sv);
		break;
	case EV_API_DOWN:
		s->api_down_until_us = now + ev->a[0] * SIM_MS;
		if (s->api_up_since_us < s->api_down_until_us)
			s->api_up_since_us = s->api_down_until_us;
		break;
	case EV_API_LOSSY:
		s->api_lossy_until_us = now + ev->a[0] * SIM_MS;
		if (s->api_up_since_us < s->api_lossy_until_us)
			s->api_up_since_us = s->api_lossy_until_us;
		break;
	case EV_HAPROXY_RELOAD:
		sim_haproxy_reload(s, ev->a[0] != 0);
		break;
	default:
		/* The agent's own: restarts, SIGHUP, the control socket. */
		sim_operator_apply(s, ev);
		break;
	}
}

/* ---- the case as text ---- */

void sim_schedule_print(const struct sim_schedule *sc, FILE *out)
{
	fprintf(out, "sim1 seed=%" PRIu64 " duration_ms=%" PRIu64 " policy=%u,%u,%u,%u,%d,%d%s%s backends=",
		sc->seed, sc->duration_ms, sc->threshold, sc->cooldown_ms, sc->max_ejection_percent,
		sc->failure_rate, sc->drain_last_server, sc->retry_on, sc->steady ? ",steady" : "",
		sc->peers ? ",peers" : "");
	for (unsigned i = 0; i < sc->nb_backends; i++) {
		fprintf(out, "%s%u/%u/%u/%u", i ? "," : "", sc->nb_servers[i], sc->nb_parked[i],
			sc->rate[i], sc->maxconn_conf[i]);
		if (sc->clients[i])
			fprintf(out, "/c%u", sc->clients[i]);
	}
	fprintf(out, " events=");
	for (unsigned k = 0; k < sc->nb_events; k++) {
		const struct sim_event *ev = &sc->events[k];
		fprintf(out, "%s%" PRIu64 ":%s:%u:%u:%u,%u,%u,%u,%u,%u", k ? ";" : "", ev->at_ms,
			sim_event_name(ev->kind), ev->be, ev->srv, ev->a[0], ev->a[1], ev->a[2],
			ev->a[3], ev->a[4], ev->a[5]);
	}
	fprintf(out, "\n");
}

static bool parse_event(struct sim_event *ev, const char *text)
{
	char name[32];
	unsigned long long at;
	unsigned be, srv;
	if (sscanf(text, "%llu:%31[a-z-]:%u:%u:%u,%u,%u,%u,%u,%u", &at, name, &be, &srv, &ev->a[0],
		   &ev->a[1], &ev->a[2], &ev->a[3], &ev->a[4], &ev->a[5]) != 10)
		return false;
	ev->at_ms = at;
	ev->be = (uint8_t)be;
	ev->srv = (uint8_t)srv;
	for (int k = 0; k < SIM_EVENT_KINDS; k++) {
		if (strcmp(name, event_names[k]) == 0) {
			ev->kind = (enum sim_event_kind)k;
			return be < SIM_MAX_BACKENDS && srv < SIM_MAX_SERVERS;
		}
	}
	return false;
}

bool sim_schedule_parse(struct sim_schedule *sc, const char *text, char *err, size_t size)
{
	unsigned long long seed, duration;
	int dls, retry, used = 0;
	memset(sc, 0, sizeof(*sc));
	if (sscanf(text, " sim1 seed=%llu duration_ms=%llu policy=%u,%u,%u,%u,%d,%d%n", &seed,
		   &duration, &sc->threshold, &sc->cooldown_ms, &sc->max_ejection_percent,
		   &sc->failure_rate, &dls, &retry, &used) != 8 || used == 0) {
		snprintf(err, size, "expected 'sim1 seed=N duration_ms=N policy=... backends=...'");
		return false;
	}
	/* ",steady": the shipped default SPOE file (steady-state mode). */
	if (strncmp(text + used, ",steady", 7) == 0) {
		sc->steady = true;
		used += 7;
	}
	/* ",peers": verdicts shared with another node (sim_peers.c). */
	if (strncmp(text + used, ",peers", 6) == 0) {
		sc->peers = true;
		used += 6;
	}
	if (strncmp(text + used, " backends=", 10) != 0) {
		snprintf(err, size, "expected ' backends=' after the policy");
		return false;
	}
	used += 10;
	sc->seed = seed;
	sc->duration_ms = duration;
	sc->drain_last_server = dls;
	sc->retry_on = retry;
	const char *p = text + used;
	while (*p && *p != ' ') {
		unsigned nb, parked, rate, maxconn;
		int n = 0;
		if (sc->nb_backends == SIM_MAX_BACKENDS ||
		    sscanf(p, "%u/%u/%u/%u%n", &nb, &parked, &rate, &maxconn, &n) != 4 ||
		    nb == 0 || nb > SIM_MAX_SERVERS || parked > nb) {
			snprintf(err, size, "backends: expected up to %d of SERVERS/PARKED/RATE/MAXCONN[/cCLIENTS]",
				 SIM_MAX_BACKENDS);
			return false;
		}
		unsigned i = sc->nb_backends++;
		sc->nb_servers[i] = nb;
		sc->nb_parked[i] = parked;
		sc->rate[i] = rate;
		sc->maxconn_conf[i] = maxconn;
		p += n;
		/* "/cN": N closed-loop clients instead of the rate. */
		unsigned clients;
		if (sscanf(p, "/c%u%n", &clients, &n) == 1) {
			if (clients > 1000) {
				snprintf(err, size, "backends: at most 1000 clients");
				return false;
			}
			sc->clients[i] = clients;
			p += n;
		}
		if (*p == ',')
			p++;
	}
	if (sc->nb_backends == 0 || strncmp(p, " events=", 8) != 0) {
		snprintf(err, size, "expected ' events=' after the backends");
		return false;
	}
	p += 8;
	while (*p && *p != '\n') {
		size_t len = strcspn(p, ";\n");
		char one[160];
		if (len == 0 || len >= sizeof(one) || sc->nb_events == SIM_MAX_EVENTS) {
			snprintf(err, size, "event %u: too long, or too many events", sc->nb_events);
			return false;
		}
		memcpy(one, p, len);
		one[len] = '\0';
		if (!parse_event(&sc->events[sc->nb_events], one)) {
			snprintf(err, size, "event '%s': expected MS:KIND:BACKEND:SERVER:A,B,C,D,E,F", one);
			return false;
		}
		sc->nb_events++;
		p += len;
		if (*p == ';')
			p++;
	}
	qsort(sc->events, sc->nb_events, sizeof(sc->events[0]), by_time);
	return true;
}
