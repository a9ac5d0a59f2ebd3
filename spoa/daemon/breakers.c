/*
 * breakers.c - the breaker table on the event loop (see breakers.h).
 */
#include <time.h>

#include "daemon/breakers.h"
#include "util/log.h"

uint64_t breakers_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t clock_now(void *unused)
{
	(void)unused;
	return breakers_now_ms();
}

/* Arms the timer for `deadline` unless it already fires earlier. */
static void arm_for(struct breakers *b, uint64_t deadline, bool force)
{
	if (!force && deadline >= b->armed_ms)
		return;
	ev_timer_stop(b->loop, &b->timer);
	b->armed_ms = deadline;
	if (deadline == BREAKER_NO_DEADLINE)
		return;
	uint64_t now = breakers_now_ms();
	double delay = deadline > now ? (double)(deadline - now) / 1000.0 : 0.0;
	ev_timer_set(&b->timer, delay, 0.);
	ev_timer_start(b->loop, &b->timer);
}

static void log_transition(struct breakers *b, struct breaker_table_entry *e,
			   const struct breaker_event *ev, const char *reason)
{
	b->transitions++;
	e->counters.transitions[ev->from][ev->to]++;
	log_notice("breaker %s/%s: %s -> %s (%s)", e->backend, e->server,
		   breaker_state_name(ev->from), breaker_state_name(ev->to), reason);
	/* Only queues work (a look at HAProxy): safe inside a table walk. */
	if (b->on_transition)
		b->on_transition(b->on_transition_ctx);
}

static void on_observed(void *ctx, struct breaker_table_entry *e,
			const struct breaker_event *ev, enum breaker_outcome outcome, int status)
{
	struct breakers *b = ctx;

	if (breaker_event_is_transition(ev)) {
		char reason[96];
		snprintf(reason, sizeof(reason), "%s, status %d, failure streak %u",
			 breaker_outcome_name(outcome), status, e->breaker.failure_streak);
		log_transition(b, e, ev, reason);
	}
	arm_for(b, breaker_next_deadline(&e->breaker), false);
}

void breakers_recorded(struct breakers *b, struct breaker_table_entry *e,
		       const struct breaker_event *ev, const char *reason)
{
	if (breaker_event_is_transition(ev))
		log_transition(b, e, ev, reason);
	arm_for(b, breaker_next_deadline(&e->breaker), false);
}

static void on_tick_event(struct breaker_table_entry *e, const struct breaker_event *ev,
			  void *ctx)
{
	struct breakers *b = ctx;

	if (breaker_event_is_transition(ev)) {
		char reason[96];
		snprintf(reason, sizeof(reason), "cool-down of %llu ms elapsed",
			 (unsigned long long)e->breaker.policy->cooldown_ms);
		log_transition(b, e, ev, reason);
	}
	if (ev->probes_released)
		log_info("breaker %s/%s: %u probe(s) released after probe_timeout without an outcome",
			 e->backend, e->server, ev->probes_released);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct breakers *b = (struct breakers *)((char *)w - offsetof(struct breakers, timer));
	(void)loop;
	(void)revents;

	b->armed_ms = BREAKER_NO_DEADLINE;
	uint64_t next = breaker_table_tick(&b->table, breakers_now_ms(), on_tick_event, b);
	arm_for(b, next, true);
}

bool breakers_init(struct breakers *b, struct ev_loop *loop, const struct config *c, char *err,
		   size_t err_size)
{
	b->loop = loop;
	b->armed_ms = BREAKER_NO_DEADLINE;
	b->transitions = 0;
	b->on_transition = NULL;
	ev_timer_init(&b->timer, timer_cb, 0., 0.);
	if (!breaker_table_init(&b->table, c->max_breakers, err, err_size))
		return false;
	if (!config_apply_policies(c, &b->table, err, err_size)) {
		breaker_table_free(&b->table);
		return false;
	}
	b->observe = (struct observe_ctx){
		.table = &b->table,
		.now_ms = clock_now,
		.observed = on_observed,
		.observed_ctx = b,
	};
	return true;
}

bool breakers_reload(struct breakers *b, const struct config *c, char *err, size_t err_size)
{
	breaker_table_clear_policies(&b->table);
	if (config_apply_policies(c, &b->table, err, err_size))
		return true;
	breaker_table_clear_policies(&b->table);
	char ignored[16];
	breaker_table_resolve_policies(&b->table, ignored, sizeof(ignored));
	return false;
}

void breakers_free(struct breakers *b)
{
	ev_timer_stop(b->loop, &b->timer);
	breaker_table_free(&b->table);
}
