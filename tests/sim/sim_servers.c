/*
 * sim_servers.c - servers added and deleted at run time, as HAProxy's
 * Runtime API does it for an operator or a controller:
 *
 *   add-server  `add server B/S ADDR`: the server appears in `show stat`
 *               and `show servers state` with counters from zero and an id
 *               of its own, in maintenance (the operator's, lifted by a
 *               later `set server B/S state ready`) unless it was added
 *               ready; its worker new, at an address never used before.
 *               A slot whose server was deleted is added again under the
 *               same name; a free slot of the backend under a new one.
 *   del-server  `del server B/S`: HAProxy deletes only a server in
 *               maintenance with no connection attached to it, and refuses
 *               anything else. As an operator's script does it (a[0] 1),
 *               `set server B/S state maint` and `shutdown sessions server
 *               B/S` come first, and the deletion goes through; alone, it
 *               goes through only where those already hold.
 *
 * A deleted server is in HAProxy no more: listed nowhere, routed nothing,
 * checked by no health check. What the agent must make of it is
 * deleted_forgotten's (sim_invariants_deleted.c).
 */
#include <stdio.h>
#include <string.h>

#include "hapi/runtime_api.h"
#include "sim.h"
#include "sim_loop.h"

/* The name a slot's server goes by, whoever added it. */
static void slot_name(struct sim_server *sv, unsigned slot)
{
	snprintf(sv->name, sizeof(sv->name), "w%u", slot + 1);
}

static void add_server(struct sim *s, struct sim_backend *b, unsigned slot,
		       const struct sim_event *ev)
{
	/* A slot past the backend's last server: those between stay free
	 * (absent, never added), so that the slot keeps its name. */
	for (; b->nb <= slot; b->nb++) {
		b->srv[b->nb].absent = true;
		slot_name(&b->srv[b->nb], b->nb);
	}
	struct sim_server *sv = &b->srv[slot];
	if (!sv->absent)
		return; /* "Already exists a server with the same name in backend." */
	bool deleted_before = sv->deleted_us != 0;
	/* A new server: nothing of the one deleted under the name, but its
	 * deletion and the requests it ended (their epoch). */
	uint32_t kill_epoch = sv->kill_epoch, generation = sv->w.generation;
	uint64_t deleted_us = sv->deleted_us;
	struct sim_hold hold = sv->hold;
	memset(sv, 0, sizeof(*sv));
	sv->hold = hold;
	sv->kill_epoch = kill_epoch;
	sv->w.generation = generation;
	sv->deleted_us = deleted_us;
	slot_name(sv, slot);
	sv->id = b->next_id++;
	sv->maxconn_conf = sv->maxconn = s->schedule->maxconn_conf[b - s->be];
	sv->up = true;
	snprintf(sv->addr, sizeof(sv->addr), "10.%u.%u.%u", 200 + (unsigned)(b - s->be),
		 (s->addr_serial / 250) % 250, s->addr_serial % 250 + 1);
	s->addr_serial++;
	sv->port = 8000;
	uint32_t worker[6] = {ev->a[1] < SIM_WORKER_KINDS ? ev->a[1] : WORKER_HEALTHY, 4, 0, 0,
			      503, 60};
	sim_worker_become(s, sv, worker);
	if (!ev->a[0]) {
		/* Added in maintenance: whoever added it makes it ready. */
		sv->admin = RUNTIME_API_ADMF_FMAINT;
		sv->maint_by = HAND_OPERATOR;
	}
	if (deleted_before) {
		sv->readded_us = sim_now_us();
		sv->readded_generation = sv->w.generation;
	}
}

static void del_server(struct sim *s, struct sim_backend *b, struct sim_server *sv,
		       bool prepared)
{
	if (sv->absent)
		return;
	if (prepared) {
		if (!(sv->admin & RUNTIME_API_ADMF_FMAINT))
			sim_haproxy_set_state(s, sv, "maint", HAND_OPERATOR);
		sim_traffic_kill_sessions(s, b, sv);
	}
	/* "Only servers in maintenance mode can be deleted." / "Server still
	 * has connections attached to it, cannot remove it." */
	if (!(sv->admin & RUNTIME_API_ADMF_FMAINT) || sv->scur > 0)
		return;
	sv->absent = true;
	sv->deleted_us = sim_now_us();
	sv->readded_us = 0;
	/* An operator's hold stays: the operator's record keeps it by name. */
	sv->owned_drain = sv->owned_maxconn = false;
	sv->since_deleted_kept = 0;
}

bool sim_servers_apply(struct sim *s, const struct sim_event *ev)
{
	if (ev->be >= s->nb_be)
		return true;
	struct sim_backend *b = &s->be[ev->be];
	switch (ev->kind) {
	case EV_ADD_SERVER:
		if (ev->srv < SIM_MAX_SERVERS)
			add_server(s, b, ev->srv, ev);
		return true;
	case EV_DEL_SERVER:
		if (ev->srv < b->nb)
			del_server(s, b, &b->srv[ev->srv], ev->a[0] != 0);
		return true;
	default:
		return false;
	}
}

/* ---- drawing them ---- */

void sim_servers_generate(struct sim_schedule *sc, uint64_t seed, uint64_t duration_ms)
{
	/* A stream of their own: a seed's world and its other events stay
	 * what they were. Two schedules in five have them. */
	struct sim_rng r;
	sim_rng_seed(&r, seed, 7);
	if (!sim_rng_chance(&r, 0.4))
		return;
	static const uint32_t kinds[] = {WORKER_HEALTHY, WORKER_HEALTHY, WORKER_HEALTHY,
					 WORKER_FAILING, WORKER_CRASHED, WORKER_BUSY};
	unsigned n = (unsigned)sim_rng_range(&r, 1, duration_ms / 40000 + 1);
	for (unsigned k = 0; k < n && sc->nb_events < SIM_MAX_EVENTS; k++) {
		struct sim_event *ev = sim_event_draw(sc, &r, duration_ms);
		ev->kind = sim_rng_chance(&r, 0.5) ? EV_ADD_SERVER : EV_DEL_SERVER;
		ev->be = (uint8_t)sim_rng_below(&r, sc->nb_backends);
		/* Added: a deleted one's slot or a new one; deleted: any. */
		unsigned slots = sc->nb_servers[ev->be] + (ev->kind == EV_ADD_SERVER ? 2 : 0);
		ev->srv = (uint8_t)sim_rng_below(&r, slots < SIM_MAX_SERVERS ? slots : SIM_MAX_SERVERS);
		if (ev->kind == EV_ADD_SERVER) {
			ev->a[0] = sim_rng_chance(&r, 0.3);
			ev->a[1] = kinds[sim_rng_below(&r, sizeof(kinds) / sizeof(kinds[0]))];
		} else {
			ev->a[0] = sim_rng_chance(&r, 0.8);
		}
		struct sim_event *next = NULL;
		if (sc->nb_events < SIM_MAX_EVENTS)
			next = &sc->events[sc->nb_events];
		if (!next)
			continue;
		if (ev->kind == EV_ADD_SERVER && !ev->a[0]) {
			/* Made ready by whoever added it, soon after. */
			*next = *ev;
			next->kind = EV_OP_READY;
			next->at_ms = ev->at_ms + sim_rng_range(&r, 500, 10000);
		} else if (ev->kind == EV_DEL_SERVER && sim_rng_chance(&r, 0.6)) {
			/* Added again under the name, sometimes within a look. */
			*next = *ev;
			next->kind = EV_ADD_SERVER;
			next->at_ms = ev->at_ms + (sim_rng_chance(&r, 0.3) ? sim_rng_range(&r, 1, 800)
									   : sim_rng_range(&r, 1000, 60000));
			next->a[0] = 1;
			next->a[1] = WORKER_HEALTHY;
		} else {
			continue;
		}
		if (next->at_ms < duration_ms)
			sc->nb_events++;
	}
}
