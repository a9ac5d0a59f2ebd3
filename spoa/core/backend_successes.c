/*
 * backend_successes.c - when each backend last had a success, and from
 * whom: what tells a worker wedged at 503 from a backend that is busy as a
 * whole (breaker_is_wedged()). Pure: no clock, no I/O.
 *
 * An open-addressing hash keyed by backend name (linear probing, at most
 * half full, backward-shift deletion), one record per backend that has a
 * breaker; a backend's record goes with its last breaker, so names sent
 * over SPOP cannot grow it beyond the table's own bound. The record also
 * keeps what the backend's dropped breakers had counted, for the
 * per-backend sums of /metrics (metrics_detail = backend).
 */
#include <stdlib.h>
#include <string.h>

#include "core/breaker.h"

static uint64_t name_hash(const char *name, size_t len)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * UINT64_C(1099511628211);
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	return h | 1; /* 0 marks an empty slot */
}

/* The slot of `name`, or false with *slot at the empty slot it would take. */
static bool find(const struct backend_successes *s, uint64_t hash, const char *name, size_t len,
		 uint32_t *slot)
{
	uint32_t i = (uint32_t)hash & s->mask;

	for (;;) {
		const struct backend_success *b = &s->slots[i];
		if (b->hash == 0) {
			*slot = i;
			return false;
		}
		if (b->hash == hash && b->name_len == len && memcmp(b->name, name, len) == 0) {
			*slot = i;
			return true;
		}
		i = (i + 1) & s->mask;
	}
}

static bool grow(struct backend_successes *s)
{
	uint32_t count = s->slots ? (s->mask + 1) * 2 : 16;
	struct backend_success *slots = calloc(count, sizeof(*slots));
	if (!slots)
		return false;
	struct backend_successes bigger = {.slots = slots, .mask = count - 1, .used = s->used};
	for (uint32_t i = 0; s->slots && i <= s->mask; i++) {
		uint32_t slot;
		if (s->slots[i].hash &&
		    !find(&bigger, s->slots[i].hash, s->slots[i].name, s->slots[i].name_len, &slot))
			slots[slot] = s->slots[i];
	}
	free(s->slots);
	*s = bigger;
	return true;
}

void backend_successes_free(struct backend_successes *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

void backend_successes_add_server(struct backend_successes *s, const char *name, size_t len)
{
	uint64_t hash = name_hash(name, len);
	uint32_t slot;

	if (len > BREAKER_NAME_MAX)
		return;
	if (s->slots && find(s, hash, name, len, &slot)) {
		s->slots[slot].servers++;
		return;
	}
	/* At most half full; out of memory, the backend goes untracked and
	 * its servers are never judged wedged (the safe side). */
	if ((!s->slots || 2 * (s->used + 1) > s->mask + 1) && !grow(s))
		return;
	find(s, hash, name, len, &slot);
	struct backend_success *b = &s->slots[slot];
	memset(b, 0, sizeof(*b));
	b->hash = hash;
	b->name_len = (uint8_t)len;
	memcpy(b->name, name, len);
	b->servers = 1;
	s->used++;
}

/* Empties `hole` by shifting the later members of its cluster back. */
static void delete_slot(struct backend_successes *s, uint32_t hole)
{
	uint32_t j = hole;

	for (;;) {
		j = (j + 1) & s->mask;
		if (s->slots[j].hash == 0)
			break;
		uint32_t home = (uint32_t)s->slots[j].hash & s->mask;
		/* Movable when its home is not within (hole, j], cyclically. */
		bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (stays)
			continue;
		s->slots[hole] = s->slots[j];
		hole = j;
	}
	memset(&s->slots[hole], 0, sizeof(s->slots[hole]));
	s->used--;
}

void backend_successes_remove_server(struct backend_successes *s, const char *name, size_t len)
{
	uint32_t slot;

	if (!s->slots || !find(s, name_hash(name, len), name, len, &slot))
		return;
	if (--s->slots[slot].servers == 0)
		delete_slot(s, slot);
}

void backend_successes_record(struct backend_successes *s, const char *name, size_t len,
			      uint32_t server, uint64_t now_ms)
{
	uint32_t slot;

	if (!s->slots || !find(s, name_hash(name, len), name, len, &slot))
		return;
	struct backend_success *b = &s->slots[slot];
	/* The latest success by anyone but the latest succeeder is what
	 * backend_successes_by_others() needs for that one server. */
	if (b->last_ms != 0 && b->last_server != server)
		b->other_ms = b->last_ms;
	b->last_ms = now_ms;
	b->last_server = server;
}

uint64_t backend_successes_by_others(const struct backend_successes *s, const char *name,
				     size_t len, uint32_t server)
{
	uint32_t slot;

	if (!s->slots || !find(s, name_hash(name, len), name, len, &slot))
		return 0;
	const struct backend_success *b = &s->slots[slot];
	return b->last_server == server ? b->other_ms : b->last_ms;
}

void backend_successes_retire(struct backend_successes *s, const char *name, size_t len,
			      const struct breaker_counters *c, uint32_t rests)
{
	uint32_t slot = backend_successes_slot(s, name, len);

	if (slot == UINT32_MAX)
		return;
	struct breaker_counters *r = &s->slots[slot].retired;
	for (size_t i = 0; i < sizeof(r->outcomes) / sizeof(r->outcomes[0]); i++)
		r->outcomes[i] += c->outcomes[i];
	for (size_t i = 0; i < sizeof(r->transitions) / sizeof(r->transitions[0]); i++)
		r->transitions[i] += c->transitions[i];
	for (size_t i = 0; i < sizeof(r->trips) / sizeof(r->trips[0]); i++)
		r->trips[i] = r->trips[i] > UINT32_MAX - c->trips[i] ? UINT32_MAX
								      : r->trips[i] + c->trips[i];
	r->counted_successes += c->counted_successes;
	s->slots[slot].retired_rests += rests;
}

uint32_t backend_successes_slot(const struct backend_successes *s, const char *name, size_t len)
{
	uint32_t slot;

	if (!s->slots || len > BREAKER_NAME_MAX || !find(s, name_hash(name, len), name, len, &slot))
		return UINT32_MAX;
	return slot;
}
