/*
 * observe_route.c - the route every breaker record takes in the running
 * agent, written out by name: the record, the bus's listeners, the
 * HAProxy link, the answer. The one function pointer on the way from a
 * NOTIFY to its drain is the SPOP message handler, which points here.
 */
#include "daemon/daemon.h"

/* breaker-observe: recorded by its server's breaker (spop/observe.c),
 * heard by every listener then acted on by the link (enforcer_publish()),
 * answered with what the link decided. A message that cannot be used is
 * answered with its error by observe_record() and published to nobody. */
static void on_breaker_observe(void *ctx, const struct spop_message *msg,
			       struct dispatch_reply *reply)
{
	struct daemon *d = ctx;
	struct observe_record rec;

	if (!observe_record(&d->observe, msg, reply, &rec))
		return;
	struct drain_answer link =
		enforcer_publish(d->enforcer, &d->breakers, rec.entry, &rec.ev, &rec.cause);
	observe_answer(&d->observe, reply, &rec, link);
}

void daemon_publish(struct daemon *d, struct breaker_table_entry *e,
		    const struct breaker_event *ev, const struct breaker_cause *cause)
{
	enforcer_publish(d->enforcer, &d->breakers, e, ev, cause);
}

/* What the breakers' timer recorded (a cool-down elapsed, a rest over). */
static void on_tick(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
		    const struct breaker_cause *cause)
{
	daemon_publish(ctx, e, ev, cause);
}

bool daemon_route_records(struct daemon *d)
{
	d->breakers.publish_tick = on_tick;
	d->breakers.publish_tick_ctx = d;
	dispatch_init(&d->dispatch);
	return dispatch_register(&d->dispatch, OBSERVE_MESSAGE_NAME, on_breaker_observe, d);
}
