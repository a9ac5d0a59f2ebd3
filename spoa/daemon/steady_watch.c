/*
 * steady_watch.c - steady-state mode without a keeper, said loudly (see
 * steady_watch.h).
 */
#include "daemon/steady_watch.h"
#include "hapi/runtime_api.h"
#include "link/wiring.h"
#include "util/clock.h"
#include "util/container_of.h"
#include "util/log.h"

#define STEADY_WATCH_EVERY_S 1.0
/* While it lasts, said again this often: loud, but never a flood. */
#define STEADY_WATCH_REPEAT_S 60.0
/* Steady-state messages this recent count: none for longer (an HAProxy
 * back in every-response mode, or healthy and quiet) is no mode to judge. */
#define STEADY_WATCH_RECENT_S 120.0

struct steady_links steady_watch_links(const struct enforcer *e)
{
	struct steady_links l = {0};
	if (!e)
		return l;
	l.links = enforcer_runtime_api_count(e);
	for (unsigned i = 0; i < l.links; i++) {
		const struct wiring *w = enforcer_wiring(e, i);
		if (w->maps_known && w->watched_map)
			l.watching++;
		else if (!w->maps_known && enforcer_runtime_api_reachable(e, i))
			l.pending++;
	}
	return l;
}

static void say_unkept(struct steady_watch *w, const struct steady_links *l, bool again)
{
	uint64_t since = w->observe->steady_messages - w->unkept_since_messages;
	const char *fix = l->links == 0
		? "this agent has no runtime_api: give it HAProxy's stats socket (level admin)"
		: "none of this agent's runtime_api sockets has it loaded: check that HAProxy's "
		  "SPOE file and this agent's runtime_api name the same HAProxy";
	if (again)
		log_error("still: HAProxy sends in steady-state mode and no one keeps its "
			  "breaker-watched.map (%llu more messages); %s, or have HAProxy send every "
			  "response (spoe-breaker.conf)",
			  (unsigned long long)since, fix);
	else
		log_error("HAProxy sends in steady-state mode (spoe-breaker-steady.conf) and no "
			  "one keeps its breaker-watched.map: a failing server's successes are never "
			  "notified, so its failure streak only grows and failures far apart add up "
			  "to a trip. %s, or have HAProxy send every response (BREAKER_SPOE_CONF="
			  "spoe-breaker.conf); docs/haproxy.md, \"Steady-state mode\"",
			  fix);
}

static void tick(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)revents;
	struct steady_watch *w = container_of(t, struct steady_watch, timer);
	struct steady_links l = steady_watch_links(*w->enforcer);
	enum steady_support was = w->now;
	/* Ages on the monotonic clock: a step of the wall clock (ev_now())
	 * would make recent messages old, or old ones recent for hours. */
	double now = clock_mono_s();
	(void)loop;
	if (w->observe->steady_messages != w->messages_seen) {
		w->messages_seen = w->observe->steady_messages;
		w->last_message = now;
	}
	bool recent = w->last_message != 0 && now - w->last_message <= STEADY_WATCH_RECENT_S;
	w->now = steady_support_judge(recent ? w->observe->steady_messages : 0, l);

	if (w->now == STEADY_SUPPORT_UNKEPT && was != STEADY_SUPPORT_UNKEPT) {
		w->unkept_since_messages = w->observe->steady_messages;
		w->said_at = now;
		say_unkept(w, &l, false);
	} else if (w->now == STEADY_SUPPORT_UNKEPT &&
		   now - w->said_at >= STEADY_WATCH_REPEAT_S) {
		w->said_at = now;
		say_unkept(w, &l, true);
		w->unkept_since_messages = w->observe->steady_messages;
	} else if (was == STEADY_SUPPORT_UNKEPT && w->now == STEADY_SUPPORT_KEPT) {
		log_notice("steady-state mode: breaker-watched.map is kept again");
	}
}

void steady_watch_start(struct steady_watch *w, struct ev_loop *loop,
			const struct observe_ctx *observe, struct enforcer *const *enforcer)
{
	w->observe = observe;
	w->enforcer = enforcer;
	w->now = STEADY_SUPPORT_UNUSED;
	ev_timer_init(&w->timer, tick, STEADY_WATCH_EVERY_S, STEADY_WATCH_EVERY_S);
	ev_timer_start(loop, &w->timer);
}

void steady_watch_stop(struct steady_watch *w, struct ev_loop *loop)
{
	ev_timer_stop(loop, &w->timer);
}
