/*
 * capacity.c - a server's limit from its worker's refusals (capacity.h).
 * Pure.
 */
#include "link/capacity.h"

static uint32_t at_least_floor(uint32_t v)
{
	return v < CAPACITY_FLOOR ? CAPACITY_FLOOR : v;
}

static uint32_t within_ceiling(uint32_t v, uint32_t ceiling)
{
	return ceiling != 0 && v > ceiling ? ceiling : v;
}

/* The most looks a raise waits after raises that were refused (10 s at
 * the default poll_interval): a probe above the edge costs a look of
 * refusals, which a saturated fleet's retries cannot place elsewhere, so
 * one that keeps failing is tried less and less often - yet often enough
 * to find, within seconds, a worker that can take more. */
#define CAPACITY_PROBE_WAIT_MAX 20

static enum capacity_change judge_look(struct capacity *c, const struct capacity_look *look)
{
	/* Whether the previous look raised the limit: this one judges it. */
	bool probed = c->probing;
	bool lowered = c->lowered;
	c->probing = false;
	c->lowered = false;
	if (look->refusals > 0 && lowered)
		/* The look right after a lowering: its refusals may be of
		 * requests let in before the lower maxconn landed. Judged at
		 * the next one, so a limit is never taken below the edge by
		 * its own lag (a capacity that falls is followed one request
		 * every two looks). */
		return CAPACITY_UNCHANGED;
	if (look->refusals > 0) {
		/* Refused at the concurrency it had: the capacity is below
		 * the limit - one less, from the limit and not from what
		 * the look saw in flight, an instant that may fall between
		 * requests. With no limit yet, below what the server held at
		 * the look. Only while the server is busy, though: at least
		 * half its slots taken, two requests with no limit yet.
		 * Refusals of a server that holds little are no capacity
		 * speaking - a 429 for one client's quota, a worker refusing
		 * at random - and limiting it would throttle every client. */
		uint32_t held = c->limit != 0 ? c->limit : look->sessions;
		uint32_t busy = c->limit != 0 ? c->limit / 2 + c->limit % 2 : 2;
		if (held == 0 || look->sessions < busy)
			return CAPACITY_UNCHANGED;
		/* A raise refused goes back to the limit that held before it
		 * (a doubling past the edge undone at once, as TCP's slow
		 * start falls back on a loss), any other refusal one down. */
		uint32_t down = probed && c->raised > 0 && c->raised < held ? c->raised : 1;
		uint32_t want = within_ceiling(at_least_floor(held - down), look->ceiling);
		/* A raise refused found the edge: the next waits twice as
		 * long as the last (at least a look, at most the bound). */
		if (probed) {
			uint32_t doubled = c->backoff ? 2u * c->backoff : 1u;
			c->backoff = doubled > CAPACITY_PROBE_WAIT_MAX ? CAPACITY_PROBE_WAIT_MAX
								       : doubled;
		}
		c->wait = c->backoff;
		c->edge = held; /* refused holding this many */
		c->step = 1;
		c->slow_start_to = 0; /* found the edge: one by one from here */
		if (want == c->limit)
			return CAPACITY_UNCHANGED;
		enum capacity_change change =
			c->limit == 0 || want < c->limit ? CAPACITY_LOWERED : CAPACITY_RAISED;
		c->limit = want;
		c->lowered = change == CAPACITY_LOWERED;
		return change;
	}
	/* A raise to the edge that drew no refusal: the edge is higher, and
	 * the next raise may come at once. (One below it says nothing new: a
	 * look's refusals may be of requests let in before the limit came
	 * down, and take it one too low.) */
	if (probed && c->limit >= c->edge) {
		c->backoff = 0;
		c->edge = 0;
	}
	if (c->limit == 0 || look->sessions < c->limit)
		return CAPACITY_UNCHANGED; /* room left: the limit holds nothing back */
	if (look->ceiling != 0 && c->limit >= look->ceiling)
		return CAPACITY_UNCHANGED;
	/* Back up to one below the edge at once; to the edge, after the
	 * wait. */
	if (c->wait > 0 && c->limit + 1 >= c->edge) {
		c->wait--;
		return CAPACITY_UNCHANGED;
	}
	uint32_t step = c->step ? c->step : 1;
	uint32_t want = c->limit + step;
	if (want < c->limit)
		want = UINT32_MAX; /* saturates */
	if (c->slow_start_to != 0) {
		if (want >= c->slow_start_to) {
			want = c->slow_start_to;
			c->slow_start_to = 0;
			c->step = 1;
		} else {
			c->step = step > UINT32_MAX / 2 ? step : step * 2;
		}
	}
	uint32_t was = c->limit;
	c->limit = within_ceiling(want, look->ceiling);
	c->raised = c->limit - was;
	c->probing = true;
	return CAPACITY_RAISED;
}

enum capacity_change capacity_on_look(struct capacity *c, const struct capacity_look *look)
{
	/* Answers of a look that finds a limit count; those of the look that
	 * sets the first one came before it. */
	bool limited = c->limit != 0;
	enum capacity_change change = judge_look(c, look);
	if (limited && c->limit != 0 && look->answers > 0)
		c->answered = true;
	return change;
}

bool capacity_speaks_for_neighbours(const struct capacity *c)
{
	return c->limit > CAPACITY_FLOOR && c->answered;
}

enum capacity_change capacity_on_refusal(struct capacity *c, uint32_t sessions,
					 uint32_t ceiling)
{
	if (c->probing) {
		/* The raise is refused: down at once, as the next look would
		 * have done, a look's worth of refusals sooner. */
		struct capacity_look look = {.refusals = 1, .sessions = c->limit,
					     .ceiling = ceiling};
		return capacity_on_look(c, &look);
	}
	if (c->limit == 0 && sessions >= 2) {
		struct capacity_look look = {.refusals = 1, .sessions = sessions,
					     .ceiling = ceiling};
		return capacity_on_look(c, &look);
	}
	return CAPACITY_UNCHANGED; /* a look judges the rest */
}

void capacity_slow_start(struct capacity *c, uint32_t start)
{
	if (c->limit == 0)
		return; /* nothing learnt: nothing to come back to */
	uint32_t from = at_least_floor(start);
	if (from >= c->limit)
		return;
	c->slow_start_to = c->limit;
	c->limit = from;
	c->step = from;
	c->probing = false;
	c->wait = 0; /* doubling back at once: the worker held that much before */
	c->answered = false; /* judged anew: what it answered before the trip is gone */
}

void capacity_join(struct capacity *c, uint32_t start)
{
	if (c->limit != 0 || start == 0)
		return;
	c->limit = at_least_floor(start);
	c->step = c->limit;
	c->slow_start_to = UINT32_MAX; /* no known edge: doubling until refused */
	c->answered = false;
	c->probing = false;
	c->wait = 0;
	c->edge = 0;
}

void capacity_forget(struct capacity *c)
{
	c->limit = 0;
	c->step = 1;
	c->slow_start_to = 0;
	c->probing = false;
	c->wait = 0;
	c->backoff = 0;
	c->edge = 0;
	c->lowered = false;
	c->answered = false;
}

const char *capacity_change_name(enum capacity_change change)
{
	switch (change) {
	case CAPACITY_UNCHANGED: return "unchanged";
	case CAPACITY_LOWERED: return "lowered";
	case CAPACITY_RAISED: return "raised";
	}
	return "?";
}
