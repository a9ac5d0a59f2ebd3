/*
 * breaker_time.c - how long a breaker stays where it is: the open time and
 * its backoff, a peer's hold, and the next moment breaker_tick() has
 * something to do (breaker.h). The rules that move the breaker are
 * breaker.c's; this is only the clock they are read against.
 *
 * Pure: time comes in as an argument.
 */
#include "core/breaker.h"

/* Deadlines saturate one short of BREAKER_NO_DEADLINE, so that a huge
 * cool-down still reads as "a deadline", never as "no timer needed". */
static uint64_t deadline_after(uint64_t now_ms, uint64_t delay_ms)
{
	if (now_ms >= BREAKER_NO_DEADLINE - 1 - delay_ms)
		return BREAKER_NO_DEADLINE - 1;
	return now_ms + delay_ms;
}

uint64_t breaker_peer_hold_until(const struct breaker *b)
{
	return b->peer_hold_ms ? b->state_since_ms + b->peer_hold_ms : 0;
}

/*
 * Open-time backoff: the n-th trip in a row stays open cooldown * 2^(n-1),
 * capped by max_cooldown. Doubling rather than cooldown * n (Envoy's):
 * every probe of a dead worker is a real request that fails, so the cap
 * should come after a handful of them (30 s, 1, 2, 4, then 5 min: four
 * probes) rather than after ten; the cap bounds how late a recovered
 * worker is let back.
 */
uint64_t breaker_backoff_ms(const struct breaker_policy *p, uint32_t trips_in_a_row)
{
	uint64_t cap = p->max_cooldown_ms > p->cooldown_ms ? p->max_cooldown_ms : p->cooldown_ms;
	uint64_t d = p->cooldown_ms;

	for (uint32_t n = 1; n < trips_in_a_row && d < cap; n++)
		d = d > cap / 2 ? cap : d * 2;
	return d < cap ? d : cap;
}

uint64_t breaker_open_duration_ms(const struct breaker *b)
{
	uint32_t n = b->trips_in_a_row;
	if (b->state != BREAKER_OPEN && n < UINT32_MAX)
		n++; /* the next trip's */
	return breaker_backoff_ms(b->policy, n);
}

uint64_t breaker_next_deadline(const struct breaker *b)
{
	if (b->state == BREAKER_OPEN && b->peer_adopted)
		return breaker_peer_hold_until(b);
	if (b->state == BREAKER_OPEN) {
		uint64_t own = deadline_after(b->state_since_ms, breaker_open_duration_ms(b));
		uint64_t held = breaker_peer_hold_until(b);
		return own > held ? own : held;
	}
	/* Forgetting the trips in a row is a deadline too, so that /state,
	 * the snapshot and eviction see it when it happens, not at the next
	 * trip. */
	if (b->state == BREAKER_CLOSED && b->trips_in_a_row > 0)
		return deadline_after(b->state_since_ms, b->policy->healthy_for_ms);
	return BREAKER_NO_DEADLINE;
}

int64_t breaker_retry_after_s(const struct breaker *b, uint64_t now_ms)
{
	if (b->state != BREAKER_OPEN)
		return -1;
	uint64_t end = breaker_next_deadline(b);
	if (end == BREAKER_NO_DEADLINE)
		return -1;
	uint64_t left = end > now_ms ? end - now_ms : 0;
	return (int64_t)(left / 1000 + (left % 1000 != 0));
}
