/*
 * lifecycle.c - the enforcer's life: set up, taken over on a reload, freed;
 * the agent-check answer; and what the rest of the agent reads of it
 * (enforcer.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link/link_internal.h"
#include "util/errmsg.h"
#include "util/log.h"

static void agent_check_answer(void *ctx, const char *backend, const char *server, char *buf,
			       size_t size)
{
	struct enforcer *e = ctx;
	struct breaker_table_entry *entry =
		breaker_table_find(e->table, backend, strlen(backend), server, strlen(server));
	if (!entry) {
		enforce_agent_check_answer(BREAKER_CLOSED, 1, NULL, buf, size);
		return;
	}
	const struct breaker *b = &entry->breaker;
	/* A resting worker is answered "drain" as an open breaker's: no cap
	 * here (agent-check has no view of the backend), but the rest is
	 * bounded by retry_after_max. */
	enforce_agent_check_answer(enforce_wanted_state(b), b->policy->half_open_probes,
				   &e->agent_check_mem[breaker_table_index(e->table, entry)], buf,
				   size);
}

/* The link of `previous` that talks to `address`, or NULL. */
static struct haproxy_link *find_link(struct enforcer *previous, const char *address)
{
	for (unsigned i = 0; previous && i < previous->nb_links; i++)
		if (strcmp(runtime_api_client_address(previous->links[i].client), address) == 0)
			return &previous->links[i];
	return NULL;
}

/* Takes over what `previous` knows; only once the new enforcer is complete,
 * so that a failed reload leaves previous untouched. */
static void take_over(struct enforcer *e, struct enforcer *previous)
{
	if (!previous)
		return;
	e->stats = previous->stats;
	/* Both were sized to the table's entries: the same capacity. */
	memcpy(e->last_spop_ms, previous->last_spop_ms, e->capacity * sizeof(*e->last_spop_ms));
	memcpy(e->slots, previous->slots, e->capacity * sizeof(*e->slots));
	struct endpoint_recall *swap_recall = e->recall;
	e->recall = previous->recall;
	previous->recall = swap_recall;
	for (unsigned i = 0; i < e->nb_links; i++) {
		struct haproxy_link *old = find_link(previous, runtime_api_client_address(e->links[i].client));
		if (!old)
			continue;
		struct enforce_entry *swap = e->links[i].entries;
		e->links[i].entries = old->entries;
		old->entries = swap;
		/* Commands still queued on the old socket fail with it; counts
		 * start again on the new one, so the next look is believed. */
		/* The new link's list of servers waiting for room starts empty:
		 * they wait again from their next convergence. */
		for (uint32_t j = 0; j < e->capacity; j++) {
			struct enforce_entry *en = &e->links[i].entries[j];
			en->last_command = 0;
			en->last_state_command = 0;
			en->last_maxconn_command = 0;
			en->ejection_capped = false;
			/* The new link's looks and commands count from zero: the
			 * next look's read of the watched map decides. */
			en->watched = (struct enforce_watched){0};
		}
		/* The maps it found are still there: read from the first look. */
		memcpy(e->links[i].records[RECORD_WATCHED].where, old->records[RECORD_WATCHED].where,
		       sizeof(old->records[RECORD_WATCHED].where));
		memcpy(e->links[i].records[RECORD_RETRY].where, old->records[RECORD_RETRY].where,
		       sizeof(old->records[RECORD_RETRY].where));
		e->links[i].info = old->info;
		e->links[i].info_known = old->info_known;
		/* What it lacks was said: not again for a reload of the agent. */
		struct wiring swap_wiring = e->links[i].wiring;
		e->links[i].wiring = old->wiring;
		old->wiring = swap_wiring;
	}
	if (e->agent_check_mem && previous->agent_check_mem) {
		struct enforce_memory *swap = e->agent_check_mem;
		e->agent_check_mem = previous->agent_check_mem;
		previous->agent_check_mem = swap;
	}
}

struct enforcer *enforcer_new(struct ev_loop *loop, const struct link_settings *c,
			      struct breakers *breakers, struct enforcer *previous, char *err,
			      size_t err_size)
{
	struct enforcer *e = calloc(1, sizeof(*e));
	/* Per-index state for the entries the table has now; more as it grows
	 * (enforcer_on_reserve). At least one, so that no array is a zero-size alloc. */
	uint32_t nb_entries = breakers->table.allocated ? breakers->table.allocated : 1;
	if (!e) {
		errmsg_set(err, err_size, "out of memory");
		return NULL;
	}
	e->loop = loop;
	e->mode = c->enforce;
	e->breakers = breakers;
	e->table = &breakers->table;
	e->poll_interval = (double)c->poll_ms / 1000.0;
	snprintf(e->verdict_table, sizeof(e->verdict_table), "%s", c->verdict_table);
	e->node_id = c->node_id;
	/* Two looks and a second: a look late or failed once does not let go
	 * of a verdict that still stands. */
	e->verdict_hold_ms = 2 * c->poll_ms + 1000;
	ev_timer_init(&e->look_timer, enforcer_look_timer_cb, 0., e->poll_interval);
	ev_timer_init(&e->sweep_timer, enforcer_sweep_cb, 0., 0.);
	e->end_round_next = SWEEP_NONE;
	e->capacity = nb_entries;
	e->last_spop_ms = calloc(nb_entries, sizeof(*e->last_spop_ms));
	e->ejection_capped = calloc(nb_entries, sizeof(*e->ejection_capped));
	e->maxconn_learnt = calloc(nb_entries, sizeof(*e->maxconn_learnt));
	e->slots = calloc(nb_entries, sizeof(*e->slots));
	e->recall = calloc(1, sizeof(*e->recall));
	if (!e->last_spop_ms || !e->ejection_capped || !e->maxconn_learnt || !e->slots || !e->recall) {
		errmsg_set(err, err_size, "out of memory");
		enforcer_free(e);
		return NULL;
	}

	for (unsigned i = 0; i < c->nb_runtime_api; i++) {
		struct haproxy_link *link = &e->links[e->nb_links];
		char why[256];
		link->owner = e;
		link->look.reconcile_next = SWEEP_NONE;
		link->counts.current = -1;
		link->index = e->nb_links;
		link->watched_map = link->records[RECORD_WATCHED].where;
		snprintf(link->records[RECORD_VERDICTS].where,
			 sizeof(link->records[RECORD_VERDICTS].where), "%s", c->verdict_table);
		link->entries = calloc(nb_entries, sizeof(*link->entries));
		link->client = runtime_api_client_new(loop, c->runtime_api[i], NULL, why, sizeof(why));
		if (link->client) {
			runtime_api_client_on_exchange(link->client, link_on_look_exchange, link);
			link->cmd.client =
				runtime_api_client_new(loop, c->runtime_api[i], NULL, why, sizeof(why));
		}
		e->nb_links++;
		if (!link->client || !link->cmd.client || !link->entries) {
			errmsg_set(err, err_size, "runtime_api %s: %s", c->runtime_api[i],
				 link->client && link->cmd.client ? "out of memory" : why);
			enforcer_free(e);
			return NULL;
		}
	}
	if (c->enforce == ENFORCE_AGENT_CHECK) {
		e->agent_check_mem = calloc(nb_entries, sizeof(*e->agent_check_mem));
		if (!e->agent_check_mem) {
			errmsg_set(err, err_size, "out of memory");
			enforcer_free(e);
			return NULL;
		}
		if (!agent_check_open(&e->agent_check, loop, c->agent_check, agent_check_answer, e, err,
				      err_size)) {
			enforcer_free(e);
			return NULL;
		}
		e->agent_check_open = true;
	}
	/* The table's growth only: a record reaches the link by name
	 * (enforcer_publish()), after every listener. */
	struct breaker_subscriber s = {.name = "HAProxy link",
				       .reserve = enforcer_on_reserve,
				       .created = enforcer_on_created,
				       .ctx = e};
	/* A link a reload makes takes its predecessor's turn, which
	 * enforcer_free() then finds gone. The first link, with none, comes
	 * last. */
	if (!breakers_replace(breakers, previous, &s)) {
		errmsg_set(err, err_size, "too many breaker subscribers");
		enforcer_free(e);
		return NULL;
	}
	take_over(e, previous);
	/* The previous link's held ACKs all go (its commands are failed as it
	 * is freed); this one's points come after them. */
	if (previous)
		e->ack_hold.issued = e->ack_hold.settled = previous->ack_hold.issued;
	if (e->nb_links > 0)
		ev_timer_start(loop, &e->look_timer);
	log_notice("enforcement: %s%s", enforce_mode_name(e->mode),
		   e->mode == ENFORCE_NONE ? " (decisions are logged, HAProxy is not changed)"
					   : "");
	return e;
}

void enforcer_free(struct enforcer *e)
{
	if (!e)
		return;
	e->freeing = true;
	breakers_unsubscribe(e->breakers, e);
	ev_timer_stop(e->loop, &e->look_timer);
	ev_timer_stop(e->loop, &e->sweep_timer);
	if (e->agent_check_open)
		agent_check_close(&e->agent_check);
	for (unsigned i = 0; i < e->nb_links; i++) {
		runtime_api_client_free(e->links[i].client);
		runtime_api_client_free(e->links[i].cmd.client);
		free(e->links[i].entries);
		free(e->links[i].retry_have);
		free(e->links[i].orphans);
		free(e->links[i].counts.slot[0].groups);
		free(e->links[i].counts.slot[1].groups);
		index_list_free(&e->links[i].capped);
		index_list_free(&e->links[i].stall_group);
		wiring_free(&e->links[i].wiring);
	}
	section_watch_free(&e->sections);
	free(e->agent_check_mem);
	free(e->last_spop_ms);
	free(e->ejection_capped);
	free(e->maxconn_learnt);
	free(e->slots);
	free(e->recall);
	free(e);
}

static bool holds_something(const struct enforce_memory *m)
{
	return m->drained_by_us || m->maxconn_by_us;
}

void enforcer_memories(const struct enforcer *e, uint32_t index, enforcer_memory_fn fn, void *ctx)
{
	for (unsigned i = 0; i < e->nb_links; i++)
		if (holds_something(&e->links[i].entries[index].mem))
			fn(ctx, runtime_api_client_address(e->links[i].client),
			   &e->links[i].entries[index].mem);
	if (e->agent_check_mem && holds_something(&e->agent_check_mem[index]))
		fn(ctx, NULL, &e->agent_check_mem[index]);
}

bool enforcer_remember(struct enforcer *e, uint32_t index, const char *address,
		       const struct enforce_memory *mem)
{
	if (!address) {
		if (!e->agent_check_mem)
			return false;
		e->agent_check_mem[index] = *mem;
		return true;
	}
	struct haproxy_link *link = find_link(e, address);
	if (!link)
		return false;
	link->entries[index].mem = *mem;
	return true;
}

const char *enforcer_endpoint(const struct enforcer *e, uint32_t index)
{
	return e->slots[index].breaker_at.text;
}

void enforcer_restore_endpoint(struct enforcer *e, uint32_t index, const char *endpoint)
{
	snprintf(e->slots[index].breaker_at.text, sizeof(e->slots[index].breaker_at.text), "%s",
		 endpoint);
}

const struct ejection_backend *enforcer_backends(const struct enforcer *e, unsigned i,
						 uint32_t *nb)
{
	const struct haproxy_link *link = &e->links[i];
	*nb = 0;
	if (link->counts.current < 0)
		return NULL;
	*nb = link->counts.slot[link->counts.current].nb;
	return link->counts.slot[link->counts.current].groups;
}

const bool *enforcer_ejection_capped(const struct enforcer *e)
{
	return e ? e->ejection_capped : NULL;
}

const uint32_t *enforcer_maxconn_learnt(const struct enforcer *e)
{
	return e ? e->maxconn_learnt : NULL;
}

void enforcer_set_released(struct enforcer *e, bool released)
{
	e->released = released;
}

const struct enforce_stats *enforcer_stats(const struct enforcer *e)
{
	return &e->stats;
}

enum enforce_mode enforcer_mode(const struct enforcer *e)
{
	return e->mode;
}

void enforcer_agent_check_allow(struct enforcer *e, const struct cidr_list *allow)
{
	e->agent_check.allow = allow;
}

uint64_t enforcer_agent_check_not_allowed(const struct enforcer *e)
{
	return e->agent_check_open ? e->agent_check.not_allowed : 0;
}

unsigned enforcer_runtime_api_count(const struct enforcer *e)
{
	return e->nb_links;
}

const struct runtime_api_client *enforcer_runtime_api(const struct enforcer *e, unsigned i)
{
	return e->links[i].client;
}

const struct runtime_api_stats *enforcer_runtime_api_stats(struct enforcer *e, unsigned i)
{
	struct haproxy_link *link = &e->links[i];
	const struct runtime_api_stats *a = runtime_api_client_stats(link->client);
	const struct runtime_api_stats *b = runtime_api_client_stats(link->cmd.client);

	link->both = (struct runtime_api_stats){
		.commands_ok = a->commands_ok + b->commands_ok,
		.commands_failed = a->commands_failed + b->commands_failed,
		.dropped = a->dropped + b->dropped,
		.connects = a->connects + b->connects,
		.connect_failures = a->connect_failures + b->connect_failures,
		.timeouts = a->timeouts + b->timeouts,
	};
	return &link->both;
}

const struct wiring *enforcer_wiring(const struct enforcer *e, unsigned i)
{
	return &e->links[i].wiring;
}

bool enforcer_runtime_api_reachable(const struct enforcer *e, unsigned i)
{
	return runtime_api_client_reachable(e->links[i].client) &&
	       runtime_api_client_reachable(e->links[i].cmd.client);
}
