/*
 * reach.c - whether the Runtime API client reaches its HAProxy (client.c
 * does the exchanges): up and down as attempts succeed and fail, the
 * commands that wait too long while it is down (failed through queue.c,
 * which client.c answers through too), and what the client shows of
 * itself.
 *
 * One concern with client.c, kept apart only for length: merged, the two
 * would make a file of some 700 lines, the most any file of the tree
 * reaches. Both work on the one struct runtime_api_client
 * (client-t.h), so this is a split by lines, not by owner; it becomes one
 * by owner when what this file reads and writes gets a struct of its own.
 */
#include <stdio.h>
#include <string.h>

#include "hapi/client-t.h"
#include "hapi/runtime_api.h"
#include "util/clock.h"
#include "util/container_of.h"
#include "util/log.h"

void runtime_api_mark_up(struct runtime_api_client *c)
{
	if (c->down)
		log_notice("Runtime API %s: reachable again after %u failed attempt%s", c->address,
			   c->failed_attempts, c->failed_attempts == 1 ? "" : "s");
	c->down = false;
	c->failed_attempts = 0;
	c->backoff_delay = c->settings.backoff_min;
	ev_timer_stop(c->loop, &c->expire);
}

void runtime_api_mark_down(struct runtime_api_client *c, const char *reason)
{
	if (!c->down)
		log_warning("Runtime API %s: unreachable (%s); retrying with backoff, commands "
			    "fail after waiting %.1fs",
			    c->address, reason, c->settings.timeout);
	else
		log_debug("Runtime API %s: attempt %u failed: %s", c->address,
			  c->failed_attempts + 1, reason);
	c->down = true;
	c->failed_attempts++;
}

/*
 * While HAProxy is down, a queued command fails once it has waited
 * `timeout` without being sent: the caller (reconciliation, the breakers)
 * learns of the outage within about that time instead of after a backoff
 * of up to backoff_max, and will re-plan when HAProxy is back. A command
 * in an attempt under way is left to that attempt, which ends within
 * `timeout` too, so no command waits much more than twice `timeout`.
 * Waits are measured on the monotonic clock (queued_at), as the expire
 * timer runs: a step of the wall clock would fail every waiting command at
 * once (forward) or hold them all for as long as the step (back).
 */
void runtime_api_expire_waiting(struct runtime_api_client *c)
{
	char reason[160];
	double now = clock_mono_s();

	snprintf(reason, sizeof(reason), "not sent within %.1fs: HAProxy is unreachable",
		 c->settings.timeout);
	while (c->count > 0 && c->inflight == 0 &&
	       runtime_api_queue_at(c, 0)->queued_at + c->settings.timeout <= now)
		runtime_api_answer_oldest(c, RUNTIME_API_FAILED, reason, strlen(reason));
}

void runtime_api_arm_expire(struct runtime_api_client *c)
{
	if (!c->down || c->count == 0 || c->inflight > 0) {
		ev_timer_stop(c->loop, &c->expire);
		return;
	}
	if (ev_is_active(&c->expire))
		return; /* already set for the oldest command */
	double wait = runtime_api_queue_at(c, 0)->queued_at + c->settings.timeout - clock_mono_s();
	ev_timer_set(&c->expire, wait > 0 ? wait : 0., 0.);
	ev_timer_start(c->loop, &c->expire);
}

void runtime_api_expire_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct runtime_api_client *c = container_of(w, struct runtime_api_client, expire);
	(void)loop;
	(void)revents;

	runtime_api_expire_waiting(c);
	runtime_api_arm_expire(c);
}

const struct runtime_api_stats *runtime_api_client_stats(const struct runtime_api_client *c)
{
	return &c->stats;
}

const char *runtime_api_client_address(const struct runtime_api_client *c)
{
	return c->address;
}

unsigned runtime_api_client_pending(const struct runtime_api_client *c)
{
	return c->count;
}

bool runtime_api_client_reachable(const struct runtime_api_client *c)
{
	return !c->down;
}
