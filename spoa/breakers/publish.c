/*
 * publish.c - the fan-out of the breakers' bus (see bus.h): every record
 * handed to the subscribers in their order, and what the HAProxy link
 * decided handed back. Pure: no loop, no clock, no I/O (PURE_SRCS), so
 * that the pure breaker-observe handler (spop/observe.c) publishes by
 * name, not through a pointer.
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

struct drain_answer breakers_publish(struct breakers *b, struct breaker_table_entry *e,
				     const struct breaker_event *ev,
				     const struct breaker_cause *cause)
{
	struct drain_answer answer = {.drain = OBSERVE_DRAIN_NOT_HELD, .ack_ticket = 0};

	for (unsigned i = 0; i < b->nb_subscribers; i++) {
		const struct breaker_subscriber *s = &b->subscribers[i];
		if (s->drains) {
			struct drain_answer a = s->drains(s->ctx, e, ev, cause);
			if (a.drain == OBSERVE_DRAIN_CAPPED)
				answer.drain = OBSERVE_DRAIN_CAPPED;
			if (a.ack_ticket > answer.ack_ticket)
				answer.ack_ticket = a.ack_ticket;
		} else if (s->recorded) {
			s->recorded(s->ctx, e, ev, cause);
		}
	}
	return answer;
}

/* breaker-observe recorded a response: publish it, and hand back what
 * the HAProxy link made of it. */
struct drain_answer breakers_publish_response(struct breakers *b, struct breaker_table_entry *e,
					      const struct breaker_event *ev,
					      enum breaker_outcome outcome, int status,
					      uint64_t now_ms)
{
	struct breaker_cause cause = {.kind = BREAKER_CAUSE_RESPONSE,
				      .outcome = outcome,
				      .status = status,
				      .now_ms = now_ms};
	return breakers_publish(b, e, ev, &cause);
}
