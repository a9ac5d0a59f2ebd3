/*
 * publish.c - the fan-out of the breakers' bus (see bus.h): every record
 * handed to the listeners in their order. Pure: no loop, no clock, no I/O
 * (PURE_SRCS).
 */
#include "breakers/bus.h"

bool breakers_subscribe(struct breakers *b, const struct breaker_subscriber *s)
{
	if (b->nb_subscribers == BREAKERS_MAX_SUBSCRIBERS)
		return false;
	b->subscribers[b->nb_subscribers++] = *s;
	return true;
}

void breakers_unsubscribe(struct breakers *b, void *ctx)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < b->nb_subscribers; i++)
		if (b->subscribers[i].ctx != ctx)
			b->subscribers[kept++] = b->subscribers[i];
	b->nb_subscribers = kept;
}

bool breakers_replace(struct breakers *b, void *old_ctx, const struct breaker_subscriber *s)
{
	for (unsigned i = 0; old_ctx && i < b->nb_subscribers; i++)
		if (b->subscribers[i].ctx == old_ctx) {
			b->subscribers[i] = *s;
			return true;
		}
	return breakers_subscribe(b, s);
}

void breakers_publish(struct breakers *b, struct breaker_table_entry *e,
		      const struct breaker_event *ev, const struct breaker_cause *cause)
{
	for (unsigned i = 0; i < b->nb_subscribers; i++) {
		const struct breaker_subscriber *s = &b->subscribers[i];
		if (s->recorded)
			s->recorded(s->ctx, e, ev, cause);
	}
}
