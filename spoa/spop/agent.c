/*
 * agent.c - the agent as a whole: settings, counters, graceful stop.
 */
#include <string.h>

#include "spop/agent.h"
#include "spop/conn.h"
#include "spop/listener.h"
#include "spop/tls.h"
#include "util/log.h"
#include "util/container_of.h"

static void release_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent *a = container_of(w, struct agent, release_timer);
	(void)loop;
	(void)revents;

	/* Held connections have answered a NOTIFY: all are in `used`. */
	for (struct conn *c = a->used.head, *next; c && a->nb_held > 0; c = next) {
		next = conn_next(c);
		conn_release_hold(c); /* may free c */
	}
}

void agent_settings_default(struct agent_settings *s)
{
	s->max_frame_size = AGENT_DEFAULT_MAX_FRAME_SIZE;
	s->max_connections = AGENT_DEFAULT_MAX_CONNECTIONS;
	s->idle_timeout_ms = AGENT_DEFAULT_IDLE_TIMEOUT_MS;
	s->out_buffer = 64 * 1024;
	s->hello_timeout = 5.0;
	s->close_timeout = 2.0;
	s->shutdown_timeout = 3.0;
}

void agent_init(struct agent *a, struct ev_loop *loop, const struct agent_settings *s,
		struct dispatch *d)
{
	memset(a, 0, sizeof(*a));
	a->loop = loop;
	a->settings = *s;
	a->dispatch = d;
	ev_timer_init(&a->release_timer, release_cb, 0., 0.);
}

void agent_release_held(struct agent *a, uint64_t settled)
{
	if (settled > a->acks_settled)
		a->acks_settled = settled;
	if (a->nb_held == 0 || !a->loop || ev_is_active(&a->release_timer))
		return;
	ev_timer_start(a->loop, &a->release_timer);
}

void agent_count_disconnect(struct agent *a, enum spop_status status)
{
	unsigned slot = (unsigned)status < AGENT_STATUS_SLOTS - 1 ? (unsigned)status
								  : AGENT_STATUS_SLOTS - 1;
	a->stats.disconnects_sent[slot]++;
}

void agent_conn_closed(struct agent *a)
{
	a->nb_conns--;
	if (a->stopping && a->nb_conns == 0) {
		ev_timer_stop(a->loop, &a->shutdown_timer);
		ev_break(a->loop, EVBREAK_ALL);
	}
}

static void close_listeners(struct agent *a)
{
	for (unsigned i = 0; i < a->nb_listeners; i++)
		listener_close(a, a->listeners[i]);
	a->nb_listeners = 0;
}

static void shutdown_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent *a = container_of(w, struct agent, shutdown_timer);
	(void)revents;

	log_warning("%u connection(s) still open after %.1fs, closing them", a->nb_conns,
		    a->settings.shutdown_timeout);
	ev_break(loop, EVBREAK_ALL);
}

void agent_stop(struct agent *a)
{
	if (a->stopping)
		return;
	a->stopping = true;
	close_listeners(a);
	log_notice("stopping: saying goodbye to %u connection(s)", a->nb_conns);
	if (a->nb_conns == 0) {
		ev_break(a->loop, EVBREAK_ALL);
		return;
	}
	ev_timer_init(&a->shutdown_timer, shutdown_timeout_cb, a->settings.shutdown_timeout, 0.);
	ev_timer_start(a->loop, &a->shutdown_timer);
	struct conn_list *lists[] = {&a->fresh, &a->used};
	for (size_t i = 0; i < 2; i++) {
		for (struct conn *c = lists[i]->head, *next; c; c = next) {
			next = conn_next(c);
			conn_goodbye(c);
		}
	}
}

void agent_destroy(struct agent *a)
{
	close_listeners(a);
	if (a->loop)
		ev_timer_stop(a->loop, &a->release_timer);
	a->stopping = false; /* no ev_break from conn_free now */
	while (a->fresh.head)
		conn_free(a->fresh.head);
	while (a->used.head)
		conn_free(a->used.head);
	agent_set_tls(a, NULL);
}

void agent_set_tls(struct agent *a, struct tls_context *t)
{
	tls_context_free(a->tls); /* open sessions hold their own reference */
	a->tls = t;
}
