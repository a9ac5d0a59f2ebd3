/*
 * sim_peers.c - peers mode: the verdict stick table HAProxy keeps for the
 * agents of several nodes (breaker-peers.cfg: `stick-table type string
 * len 128 expire 5s store gpt0,gpc0,gpc1 peers ...`), and another node
 * whose agent writes its verdicts there.
 *
 * The table answers the agent's `show table breaker_verdicts` and `set
 * table breaker_verdicts key B/S data.gpt0 .. data.gpc0 .. data.gpc1 ..`
 * as HAProxy does: one entry a key, the last write wins (peers replicate
 * writes, in no order, and no deletes), an entry not written again for
 * the table's `expire` is gone. An HAProxy reload keeps it: its local
 * peer hands the table to the new process.
 *
 * The other node (node_id 1, below this node's 2: its verdict is the one
 * kept when both own one) is seen only through its writes:
 *
 *   peer-open   its breaker opened (a[0] 1), or probes (a[0] 2): it writes
 *               the verdict, and again at each of its looks, every second
 *   peer-close  its breaker closed: it writes the verdict closed, once
 *   peer-gone   it stops (its process, or the peers link): nothing it
 *               wrote is written again, and the table's expiry ends it
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records/verdicts.h"
#include "sim.h"
#include "sim_loop.h"

#define PEER_LOOK_MS 1000u /* the other node's looks */

static bool other_stands(const struct sim_verdict *v)
{
	return v->present && v->node != SIM_NODE_ID &&
	       (v->state == VERDICT_OPEN || v->state == VERDICT_HALF_OPEN);
}

/* The entry, its expiry applied. */
static struct sim_verdict *entry_at(struct sim *s, unsigned be, unsigned srv)
{
	struct sim_verdict *v = &s->verdicts[be][srv];
	if (v->present && v->expires_us <= sim_now_us()) {
		v->present = false;
		v->stands_since_us = 0;
	}
	return v;
}

const struct sim_verdict *sim_peers_entry(struct sim *s, unsigned be, unsigned srv)
{
	if (!s->schedule->peers || be >= SIM_MAX_BACKENDS || srv >= SIM_MAX_SERVERS)
		return NULL;
	const struct sim_verdict *v = entry_at(s, be, srv);
	return v->present ? v : NULL;
}

bool sim_peers_other_stands(struct sim *s, unsigned be, unsigned srv)
{
	const struct sim_verdict *v = sim_peers_entry(s, be, srv);
	return v && other_stands(v);
}

/* `set table`: the entry written, its expiry from now. */
static void write_entry(struct sim *s, unsigned be, unsigned srv, uint32_t state,
			uint32_t deadline, uint32_t node, uint32_t epoch)
{
	struct sim_verdict *v = entry_at(s, be, srv);
	bool stood = other_stands(v);
	v->present = true;
	v->state = state;
	v->deadline = deadline;
	v->node = node;
	v->written_us = sim_now_us();
	v->expires_us = sim_now_us() + SIM_VERDICT_EXPIRE_MS * SIM_MS;
	v->written_epoch = epoch;
	if (!other_stands(v))
		v->stands_since_us = 0;
	else if (!stood)
		v->stands_since_us = sim_now_us();
	if (other_stands(v)) {
		v->stale_state = state;
		v->stale_node = node;
	}
}

static uint32_t wall_s(void)
{
	return (uint32_t)(SIM_WALL_START_S + (sim_now_us() - SIM_CLOCK_START_US) / SIM_S);
}

bool sim_peers_apply(struct sim *s, const struct sim_event *ev)
{
	if (ev->kind != EV_PEER_OPEN && ev->kind != EV_PEER_CLOSE && ev->kind != EV_PEER_GONE)
		return false;
	if (!s->schedule->peers || ev->be >= SIM_MAX_BACKENDS || ev->srv >= SIM_MAX_SERVERS)
		return true;
	struct sim_verdict *v = &s->verdicts[ev->be][ev->srv];
	switch (ev->kind) {
	case EV_PEER_OPEN:
		v->peer_keeps = ev->a[0] == VERDICT_HALF_OPEN ? VERDICT_HALF_OPEN
								    : VERDICT_OPEN;
		write_entry(s, ev->be, ev->srv, v->peer_keeps, wall_s() + 30, SIM_PEER_NODE_ID, 0);
		break;
	case EV_PEER_CLOSE:
		v->peer_keeps = 0;
		write_entry(s, ev->be, ev->srv, VERDICT_CLOSED, wall_s(), SIM_PEER_NODE_ID, 0);
		break;
	default:
		for (unsigned i = 0; i < SIM_MAX_BACKENDS; i++)
			for (unsigned j = 0; j < SIM_MAX_SERVERS; j++)
				s->verdicts[i][j].peer_keeps = 0;
		break;
	}
	return true;
}

uint64_t sim_peers_next_due(const struct sim *s)
{
	return s->schedule->peers ? s->peer_next_us : UINT64_MAX;
}

/* The other node's look: the verdicts it keeps, written again. */
void sim_peers_run_due(struct sim *s)
{
	if (!s->schedule->peers)
		return;
	if (s->peer_next_us == 0)
		s->peer_next_us = sim_now_us() + PEER_LOOK_MS * SIM_MS;
	while (s->peer_next_us <= sim_now_us()) {
		for (unsigned i = 0; i < SIM_MAX_BACKENDS; i++)
			for (unsigned j = 0; j < SIM_MAX_SERVERS; j++)
				if (s->verdicts[i][j].peer_keeps)
					write_entry(s, i, j, s->verdicts[i][j].peer_keeps, wall_s() + 30,
						    SIM_PEER_NODE_ID, 0);
		s->peer_next_us += PEER_LOOK_MS * SIM_MS;
	}
}

/* The names of a key "beN/wM", as slots; false for a key of no slot. */
static bool key_slot(const struct sim *s, const char *key, unsigned *be, unsigned *srv)
{
	unsigned b, w;
	char rest;
	if (sscanf(key, "be%u/w%u%c", &b, &w, &rest) != 2 || b == 0 || w == 0 || b > s->nb_be ||
	    w > SIM_MAX_SERVERS)
		return false;
	*be = b - 1;
	*srv = w - 1;
	return true;
}

static void show_table(struct sim *s, struct sim_reply *r)
{
	char lines[SIM_MAX_BACKENDS * SIM_MAX_SERVERS][160];
	unsigned used = 0;
	for (unsigned i = 0; i < s->nb_be; i++) {
		for (unsigned j = 0; j < SIM_MAX_SERVERS; j++) {
			const struct sim_verdict *v = entry_at(s, i, j);
			uint32_t state = v->state, node = v->node;
			uint64_t exp_ms = v->present ? (v->expires_us - sim_now_us()) / SIM_MS : 0;
			/* BREAK_PEER_STALE: a verdict of the other node's, shown
			 * on once it was closed or expired. */
			if (s->brk == BREAK_PEER_STALE && v->stale_state && !other_stands(v)) {
				state = v->stale_state;
				node = v->stale_node;
				exp_ms = SIM_VERDICT_EXPIRE_MS;
			} else if (!v->present) {
				continue;
			}
			/* BREAK_PEER_UNSEEN: the other node's verdicts kept from
			 * the agent. */
			if (s->brk == BREAK_PEER_UNSEEN && node != SIM_NODE_ID)
				continue;
			snprintf(lines[used++], sizeof(lines[0]),
				 "0x%x: key=%s/w%u use=0 exp=%llu shard=0 gpt0=%u gpc0=%u gpc1=%u\n",
				 0x55d1c2a0u + (i * SIM_MAX_SERVERS + j) * 0x58u, s->be[i].name, j + 1,
				 (unsigned long long)exp_ms, state, v->deadline, node);
		}
	}
	sim_reply_put(r, "# table: %s, type: string, size:102400, used:%u\n", SIM_VERDICT_TABLE,
		      used);
	for (unsigned k = 0; k < used; k++)
		sim_reply_put(r, "%s", lines[k]);
}

bool sim_peers_execute(struct sim *s, const char *command, struct sim_reply *r)
{
	if (!s->schedule->peers)
		return false;
	if (strcmp(command, "show table " SIM_VERDICT_TABLE) == 0) {
		show_table(s, r);
		return true;
	}
	char key[64];
	unsigned state, deadline, node, be, srv;
	if (sscanf(command, "set table " SIM_VERDICT_TABLE " key %63s data.gpt0 %u data.gpc0 %u "
			    "data.gpc1 %u", key, &state, &deadline, &node) != 4)
		return false;
	/* BREAK_VERDICT_LOST: the plant, a write HAProxy answers and drops. */
	if (s->brk == BREAK_VERDICT_LOST || !key_slot(s, key, &be, &srv))
		return true;
	write_entry(s, be, srv, state, deadline, node, s->agent.epoch);
	return true;
}

/* ---- drawing them ---- */

void sim_peers_generate(struct sim_schedule *sc, uint64_t seed, uint64_t duration_ms)
{
	/* A stream of their own: one schedule in five in peers mode, the
	 * others exactly what they were. */
	struct sim_rng r;
	sim_rng_seed(&r, seed, 8);
	sc->peers = sim_rng_chance(&r, 0.2);
	if (!sc->peers)
		return;
	unsigned n = (unsigned)sim_rng_range(&r, 1, duration_ms / 30000 + 1);
	for (unsigned k = 0; k < n && sc->nb_events < SIM_MAX_EVENTS; k++) {
		struct sim_event *ev = sim_event_draw(sc, &r, duration_ms);
		ev->kind = sim_rng_chance(&r, 0.1) ? EV_PEER_GONE : EV_PEER_OPEN;
		ev->be = (uint8_t)sim_rng_below(&r, sc->nb_backends);
		/* Now and then a server this node does not have. */
		unsigned slots = sc->nb_servers[ev->be] + 1;
		ev->srv = (uint8_t)sim_rng_below(&r, slots < SIM_MAX_SERVERS ? slots : SIM_MAX_SERVERS);
		ev->a[0] = sim_rng_chance(&r, 0.8) ? VERDICT_OPEN : VERDICT_HALF_OPEN;
		/* Most verdicts end with the other node's probe. */
		if (ev->kind == EV_PEER_OPEN && sc->nb_events < SIM_MAX_EVENTS &&
		    sim_rng_chance(&r, 0.6))
			sim_event_then(sc, ev, EV_PEER_CLOSE, &r, 2000, 60000, duration_ms);
	}
}
