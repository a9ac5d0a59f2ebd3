/*
 * bus.c - the breaker table on the event loop: its timer, its hooks, its
 * life (see bus.h). The fan-out itself, pure, is publish.c.
 */
#include <string.h>

#include "breakers/bus.h"
#include "util/clock.h"
#include "util/container_of.h"

/* ---- the table's hooks, handed to every subscriber ---- */

static bool on_reserve(void *ctx, uint32_t allocated)
{
	struct breakers *b = ctx;

	for (unsigned i = 0; i < b->nb_subscribers; i++)
		if (b->subscribers[i].reserve &&
		    !b->subscribers[i].reserve(b->subscribers[i].ctx, allocated))
			return false;
	return true;
}

static void on_created(void *ctx, uint32_t index)
{
	struct breakers *b = ctx;

	for (unsigned i = 0; i < b->nb_subscribers; i++)
		if (b->subscribers[i].created)
			b->subscribers[i].created(b->subscribers[i].ctx, index);
}

static void on_removed(void *ctx, uint32_t index)
{
	struct breakers *b = ctx;

	for (unsigned i = 0; i < b->nb_subscribers; i++)
		if (b->subscribers[i].removed)
			b->subscribers[i].removed(b->subscribers[i].ctx, index);
}

/* ---- the timer ---- */

/* Arms the timer for `deadline` unless it already fires earlier. */
static void arm_for(struct breakers *b, uint64_t deadline, bool force)
{
	if (!force && deadline >= b->armed_ms)
		return;
	ev_timer_stop(b->loop, &b->timer);
	b->armed_ms = deadline;
	if (deadline == BREAKER_NO_DEADLINE)
		return;
	uint64_t now = clock_now_ms();
	double delay = deadline > now ? (double)(deadline - now) / 1000.0 : 0.0;
	ev_timer_set(&b->timer, delay, 0.);
	ev_timer_start(b->loop, &b->timer);
}

static void rearm_after_record(void *ctx, struct breaker_table_entry *e,
			       const struct breaker_event *ev, const struct breaker_cause *cause)
{
	(void)ev;
	(void)cause;
	arm_for(ctx, breaker_wake_deadline(&e->breaker), false);
}

struct breaker_subscriber breakers_timer_subscriber(struct breakers *b)
{
	return (struct breaker_subscriber){
		.name = "timer", .recorded = rearm_after_record, .ctx = b};
}

static void on_tick_event(struct breaker_table_entry *e, const struct breaker_event *ev, void *ctx)
{
	/* The tick entered the new state at its time; a rest that ended
	 * alone is its own cause. */
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_COOLDOWN,
				      .now_ms = e->breaker.state_since_ms};
	if (!breaker_event_is_transition(ev))
		cause = (struct breaker_cause){.kind = ev->hold_ended ? BREAKER_CAUSE_OPERATOR
								      : BREAKER_CAUSE_REST_OVER,
					       .uid = -1, .now_ms = clock_now_ms()};
	struct breakers *b = ctx;
	if (b->publish_tick)
		b->publish_tick(b->publish_tick_ctx, e, ev, &cause);
	else
		breakers_publish(b, e, ev, &cause);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct breakers *b = container_of(w, struct breakers, timer);
	(void)loop;
	(void)revents;

	b->armed_ms = BREAKER_NO_DEADLINE;
	uint64_t next = breaker_table_tick(&b->table, clock_now_ms(), on_tick_event, b);
	arm_for(b, next, true);
}

void breakers_arm_entry(struct breakers *b, const struct breaker_table_entry *e)
{
	arm_for(b, breaker_wake_deadline(&e->breaker), false);
}

void breakers_rearm(struct breakers *b)
{
	arm_for(b, breaker_table_next_deadline(&b->table), true);
}

/* ---- life ---- */

bool breakers_init(struct breakers *b, struct ev_loop *loop, uint32_t max_entries,
		   struct breaker_policies *policies, char *err, size_t err_size)
{
	memset(b, 0, sizeof(*b));
	b->loop = loop;
	b->armed_ms = BREAKER_NO_DEADLINE;
	ev_timer_init(&b->timer, timer_cb, 0., 0.);
	if (!breaker_table_init(&b->table, max_entries, err, err_size))
		return false;
	breaker_table_use_policies(&b->table, policies);
	breaker_table_set_hooks(&b->table, &(struct breaker_table_hooks){
		.reserve = on_reserve, .created = on_created, .removed = on_removed, .ctx = b});
	return true;
}

void breakers_free(struct breakers *b)
{
	ev_timer_stop(b->loop, &b->timer);
	breaker_table_free(&b->table);
}
