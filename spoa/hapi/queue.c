/*
 * queue.c - the Runtime API client's queue of commands (see client-t.h):
 * the i-th waiting command, and the oldest popped and answered. Below
 * both client.c, which fills the queue and sends its commands, and
 * reach.c, which fails those that waited too long while HAProxy is down.
 */
#include <stdlib.h>

#include "hapi/client-t.h"

static struct runtime_api_entry queue_pop(struct runtime_api_client *c)
{
	struct runtime_api_entry e = c->queue[c->head];
	c->head = (c->head + 1) % c->settings.max_queue;
	c->count--;
	if (c->inflight > 0)
		c->inflight--;
	if (c->count <= c->settings.max_queue / 2)
		c->full_logged = false;
	return e;
}

const struct runtime_api_entry *runtime_api_queue_at(const struct runtime_api_client *c,
						     unsigned i)
{
	return &c->queue[(c->head + i) % c->settings.max_queue];
}

/* Pops the oldest command and answers it. The entry leaves the queue
 * before the callback runs, so the callback may submit. */
void runtime_api_answer_oldest(struct runtime_api_client *c, enum runtime_api_result result,
			       const char *reply, size_t len)
{
	struct runtime_api_entry e = queue_pop(c);

	if (result == RUNTIME_API_OK)
		c->stats.commands_ok++;
	else
		c->stats.commands_failed++;
	free(e.command);
	e.fn(e.ctx, result, reply, len);
}
