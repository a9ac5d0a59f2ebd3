/*
 * endpoints.c - which worker a server points at, and the breakers of the
 * addresses servers left (see endpoints.h). Pure.
 */
#include <stdio.h>
#include <string.h>

#include "link/endpoints.h"

static bool str_is(struct runtime_api_str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

enum endpoint_reading endpoint_read(struct endpoint *out, struct runtime_api_str addr,
				    struct runtime_api_str port)
{
	out->text[0] = '\0';
	if (!addr.ptr)
		return ENDPOINT_UNREPORTED;
	/* "-": HAProxy has no address for the slot; the "any" addresses are
	 * what an unresolved slot reads as in some versions. */
	if (addr.len == 0 || str_is(addr, "-") || str_is(addr, "0.0.0.0") || str_is(addr, "::"))
		return ENDPOINT_NONE;
	/* An address too long for any IP is not one we could compare safely:
	 * unknown, as with no column at all. */
	if (addr.len > 45 || port.len > 5)
		return ENDPOINT_UNREPORTED;
	bool v6 = memchr(addr.ptr, ':', addr.len) != NULL;
	snprintf(out->text, sizeof(out->text), v6 ? "[%.*s]:%.*s" : "%.*s:%.*s", (int)addr.len,
		 addr.ptr, (int)port.len, port.len ? port.ptr : "");
	return ENDPOINT_SET;
}

bool endpoint_equal(const struct endpoint *a, const struct endpoint *b)
{
	return strcmp(a->text, b->text) == 0;
}

bool endpoint_recall_worth(const struct breaker *b)
{
	/* Opened on another node's verdict alone: that verdict names the
	 * server, and it is the other node's to carry. */
	return !breaker_is_forgettable(b) && !(b->state == BREAKER_OPEN && b->peer_adopted);
}

/* Until when a breaker left at now_ms is worth remembering: healthy_for
 * (how long a closed breaker keeps its trips in a row), and an open one
 * at least until its open time is over. */
static uint64_t remember_until(const struct breaker *b, uint64_t now_ms)
{
	uint64_t until = now_ms + b->policy->healthy_for_ms;
	if (b->state == BREAKER_OPEN) {
		uint64_t open_end = b->state_since_ms + breaker_open_duration_ms(b);
		if (open_end > until)
			until = open_end;
	}
	return until > now_ms ? until : now_ms + 1;
}

static struct endpoint_recollection *find(const struct endpoint_recall *r, const char *backend,
					  const struct endpoint *where)
{
	for (uint32_t i = 0; i < ENDPOINT_RECALL_MAX; i++) {
		const struct endpoint_recollection *c = &r->items[i];
		if (c->until_ms != 0 && endpoint_equal(&c->where, where) &&
		    strcmp(c->backend, backend) == 0)
			return (struct endpoint_recollection *)c;
	}
	return NULL;
}

void endpoint_recall_put(struct endpoint_recall *r, const char *backend,
			 const struct endpoint *where, const struct breaker *b, uint64_t now_ms)
{
	if (!endpoint_known(where) || strlen(backend) > BREAKER_NAME_MAX)
		return;
	struct endpoint_recollection *c = find(r, backend, where);
	for (uint32_t i = 0; !c && i < ENDPOINT_RECALL_MAX; i++)
		if (r->items[i].until_ms <= now_ms) /* free, or expired */
			c = &r->items[i];
	if (!c) {
		/* Every place holds a live one: the first to expire goes. */
		c = &r->items[0];
		for (uint32_t i = 1; i < ENDPOINT_RECALL_MAX; i++)
			if (r->items[i].until_ms < c->until_ms)
				c = &r->items[i];
	}
	snprintf(c->backend, sizeof(c->backend), "%s", backend);
	c->where = *where;
	c->breaker = *b;
	c->until_ms = remember_until(b, now_ms);
	/* Never followed: the policy may be gone by the time it is taken
	 * (a reload frees the old policies). */
	c->breaker.policy = NULL;
}

bool endpoint_recall_take(struct endpoint_recall *r, const char *backend,
			  const struct endpoint *where, uint64_t now_ms, struct breaker *out)
{
	struct endpoint_recollection *c = find(r, backend, where);
	if (!c)
		return false;
	bool live = c->until_ms > now_ms;
	if (live)
		*out = c->breaker;
	c->until_ms = 0;
	return live;
}

bool endpoint_recall_has(const struct endpoint_recall *r, const char *backend,
			 const struct endpoint *where, uint64_t now_ms)
{
	const struct endpoint_recollection *c = find(r, backend, where);
	return c && c->until_ms > now_ms;
}


struct breaker_event endpoint_move(struct breaker *b, const char *backend,
				   const struct endpoint *from, const struct endpoint *to,
				   struct endpoint_recall *r, uint64_t now_ms, bool *recalled)
{
	const struct breaker_policy *policy = b->policy;
	bool was_dirty = breaker_is_dirty(b);
	struct breaker_event ev = {.from = b->state};

	if (endpoint_known(from) && endpoint_recall_worth(b))
		endpoint_recall_put(r, backend, from, b, now_ms);
	struct breaker recalled_breaker;
	*recalled = endpoint_recall_take(r, backend, to, now_ms, &recalled_breaker);
	if (*recalled) {
		*b = recalled_breaker;
		b->policy = policy;
		/* Nothing provisional and no other node's hold comes along:
		 * those belonged to the slot's name and moment. */
		b->erased_streak = 0;
		b->peer_hold_ms = 0;
		b->peer_adopted = false;
	} else {
		breaker_init(b, policy, now_ms);
	}
	ev.to = b->state;
	bool dirty = breaker_is_dirty(b);
	ev.dirty = dirty == was_dirty ? BREAKER_DIRTY_UNCHANGED
				      : (dirty ? BREAKER_BECAME_DIRTY : BREAKER_BECAME_CLEAN);
	ev.trip_rule = ev.to == BREAKER_OPEN && ev.from != BREAKER_OPEN
			       ? (enum breaker_trip_rule)b->last_trip_rule
			       : BREAKER_TRIP_NONE;
	return ev;
}
