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

enum capacity_change capacity_on_look(struct capacity *c, const struct capacity_look *look)
{
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
		uint32_t want = within_ceiling(at_least_floor(held - 1), look->ceiling);
		c->step = 1;
		c->slow_start_to = 0; /* found the edge: one by one from here */
		if (want == c->limit)
			return CAPACITY_UNCHANGED;
		enum capacity_change change =
			c->limit == 0 || want < c->limit ? CAPACITY_LOWERED : CAPACITY_RAISED;
		c->limit = want;
		return change;
	}
	if (c->limit == 0 || look->sessions < c->limit) {
		/* Room left: the limit holds nothing back; a doubling run
		 * starts again from one. */
		if (c->slow_start_to == 0)
			c->step = 1;
		return CAPACITY_UNCHANGED;
	}
	if (look->ceiling != 0 && c->limit >= look->ceiling)
		return CAPACITY_UNCHANGED;
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
	c->limit = within_ceiling(want, look->ceiling);
	return CAPACITY_RAISED;
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
}

void capacity_forget(struct capacity *c)
{
	c->limit = 0;
	c->step = 1;
	c->slow_start_to = 0;
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
