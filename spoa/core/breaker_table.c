/*
 * breaker_table.c - the breakers of every (backend, server) the agent has
 * seen: a bounded table with O(1) lookup, least-recently-used eviction of
 * idle entries, and the policy each entry follows (policy.c resolves them;
 * the table only points each breaker at its own).
 *
 * All entry memory is allocated once, up front: a lookup in steady state
 * never allocates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/breaker.h"
#include "core/operator_hand.h"
#include "core/policy.h"
#include "util/errmsg.h"
#include "util/names.h"

#define SLOT_EMPTY UINT32_MAX

/* aligned_alloc() wants a size that is a multiple of the alignment. */
_Static_assert(sizeof(struct breaker_table_chunk) % 64 == 0, "chunk size not a multiple of 64");

static inline struct breaker_table_entry *entry_at(const struct breaker_table *t, uint32_t idx)
{
	return breaker_table_at(t, idx);
}


/* The one gate for names (util/names.c): a server whose name HAProxy
 * would not accept never gets a breaker, so no name the table holds can
 * inject a Runtime API command. */
static bool name_ok(const char *name, size_t len)
{
	return name_is_valid(name, len);
}

static bool name_eq(const char *stored, size_t stored_len, const char *name, size_t len)
{
	return stored_len == len && memcmp(stored, name, len) == 0;
}

static void hook_created(struct breaker_table *t, uint32_t idx)
{
	if (t->hooks.created)
		t->hooks.created(t->hooks.ctx, idx);
}

static void hook_removed(struct breaker_table *t, uint32_t idx)
{
	if (t->hooks.removed)
		t->hooks.removed(t->hooks.ctx, idx);
}

/* Folds len bytes into h, a word at a time: one multiply per 8 bytes
 * rather than per byte (hashing was 3-5 % of the agent per NOTIFY with
 * FNV-1a). The shift after each multiply brings high bits down, so a
 * difference anywhere in a word reaches the next. */
static uint64_t hash_bytes(uint64_t h, const char *p, size_t len)
{
	const uint64_t k = UINT64_C(0x9e3779b97f4a7c15);

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * k;
		h ^= h >> 32;
	}
	if (len > 0) {
		uint64_t w = 0;
		for (size_t i = 0; i < len; i++)
			w |= (uint64_t)(unsigned char)p[i] << (8 * i);
		h = (h ^ w) * k;
		h ^= h >> 32;
	}
	return h;
}

/*
 * Backend, its length, server and its length (the lengths keep ("ab","c")
 * apart from ("a","bc"), and a short tail apart from zero bytes), then a
 * 64-bit finalizer so that the low bits used as the slot index depend on
 * every byte. Not keyed: names come from HAProxy's configuration, not from
 * clients, so nobody can flood a bucket. Kept in memory only, never
 * written anywhere: it may change between versions.
 */
static uint64_t hash_key(const char *backend, size_t backend_len, const char *server,
			 size_t server_len)
{
	uint64_t h = hash_bytes(UINT64_C(14695981039346656037), backend, backend_len);
	h = (h ^ backend_len) * UINT64_C(0x9e3779b97f4a7c15);
	h = hash_bytes(h, server, server_len);
	h ^= server_len;
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	return h;
}

/* ---- the hash index ---- */

/* Probes for (backend, server). Returns true with *slot at the entry, or
 * false with *slot at the empty slot where it would go. The index is at
 * most half full, so an empty slot always ends the probe. */
static bool slot_lookup(const struct breaker_table *t, uint64_t hash, const char *backend,
			size_t backend_len, const char *server, size_t server_len, uint32_t *slot)
{
	uint32_t i = (uint32_t)hash & t->slot_mask;

	for (;;) {
		uint32_t idx = t->slots[i];
		if (idx == SLOT_EMPTY) {
			*slot = i;
			return false;
		}
		const struct breaker_table_chunk *c = t->chunks[idx / BREAKER_TABLE_CHUNK];
		const struct breaker_table_entry *e = &c->entries[idx % BREAKER_TABLE_CHUNK];
		/* The names come next, through a pointer in the entry, and the
		 * breaker after them: asked for now, while the entry's line is on
		 * its way, their cache misses overlap instead of following one
		 * another (with 10,000 servers, most lookups miss on all three). */
		__builtin_prefetch(&c->names[idx % BREAKER_TABLE_CHUNK]);
		__builtin_prefetch(&e->breaker);
		if (e->hash == hash && name_eq(e->backend, e->backend_len, backend, backend_len) &&
		    name_eq(e->server, e->server_len, server, server_len)) {
			*slot = i;
			return true;
		}
		i = (i + 1) & t->slot_mask;
	}
}

/* Empties slot `hole` by shifting later entries of its cluster back, so
 * that no tombstone is left and every probe still reaches its entry. */
static void slot_delete(struct breaker_table *t, uint32_t hole)
{
	uint32_t i = hole;
	uint32_t j = hole;

	for (;;) {
		j = (j + 1) & t->slot_mask;
		if (t->slots[j] == SLOT_EMPTY)
			break;
		uint32_t home = (uint32_t)entry_at(t, t->slots[j])->hash & t->slot_mask;
		/* The entry at j may fill the hole at i unless its home lies
		 * cyclically in (i, j]: then a probe from home never passes i. */
		bool home_between = i <= j ? (i < home && home <= j) : (i < home || home <= j);
		if (!home_between) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i] = SLOT_EMPTY;
}

/* ---- recency ---- */

static void lru_unlink(struct breaker_table *t, uint32_t idx)
{
	struct breaker_table_entry *e = entry_at(t, idx);

	if (e->lru_prev != BREAKER_TABLE_NIL)
		entry_at(t, e->lru_prev)->lru_next = e->lru_next;
	else
		t->lru_head = e->lru_next;
	if (e->lru_next != BREAKER_TABLE_NIL)
		entry_at(t, e->lru_next)->lru_prev = e->lru_prev;
	else
		t->lru_tail = e->lru_prev;
}

static void lru_push_front(struct breaker_table *t, uint32_t idx)
{
	struct breaker_table_entry *e = entry_at(t, idx);

	e->lru_prev = BREAKER_TABLE_NIL;
	e->lru_next = t->lru_head;
	if (t->lru_head != BREAKER_TABLE_NIL)
		entry_at(t, t->lru_head)->lru_prev = idx;
	else
		t->lru_tail = idx;
	t->lru_head = idx;
}

/* Drops an entry in use: out of the index, out of the recency list, onto
 * the free list. */
static void entry_remove(struct breaker_table *t, uint32_t idx)
{
	struct breaker_table_entry *e = entry_at(t, idx);
	uint32_t slot;

	if (slot_lookup(t, e->hash, e->backend, e->backend_len, e->server, e->server_len, &slot))
		slot_delete(t, slot);
	backend_successes_retire(&t->backends, e->backend, e->backend_len, &e->counters,
				 e->breaker.rests);
	backend_successes_remove_server(&t->backends, e->backend, e->backend_len);
	lru_unlink(t, idx);
	e->in_use = false;
	e->lru_prev = BREAKER_TABLE_NIL;
	e->lru_next = t->free_head;
	t->free_head = idx;
	t->count--;
	hook_removed(t, idx);
}

/*
 * Evicts the least recently used entry that is CLOSED, clean and has no
 * trips in a row left to forget (breaker_is_forgettable): such a breaker
 * holds nothing a fresh one would not, so forgetting it loses no judgement
 * and no backoff. The others are skipped, never evicted. Walks from the
 * tail, so the cost is the number of dirty entries passed over - small
 * unless the fleet is failing, and only paid when the table is full.
 */
static bool evict_one(struct breaker_table *t)
{
	for (uint32_t idx = t->lru_tail; idx != BREAKER_TABLE_NIL; idx = entry_at(t, idx)->lru_prev) {
		if (breaker_is_forgettable(&entry_at(t, idx)->breaker)) {
			entry_remove(t, idx);
			t->evictions++;
			return true;
		}
	}
	return false;
}

/* ---- lifetime ---- */

bool breaker_table_init(struct breaker_table *t, uint32_t max_entries, char *err,
			size_t err_size)
{
	memset(t, 0, sizeof(*t));
	if (max_entries < 1 || max_entries > BREAKER_TABLE_MAX_ENTRIES) {
		errmsg_set(err, err_size, "table size %u is out of range (expected 1-%u)",
			  (unsigned)max_entries, (unsigned)BREAKER_TABLE_MAX_ENTRIES);
		return false;
	}

	/* At most half full: short probes, and an empty slot always exists. */
	uint32_t slot_count = 2;
	while (slot_count < 2 * max_entries)
		slot_count *= 2;

	uint32_t nb_chunks = (max_entries + BREAKER_TABLE_CHUNK - 1) / BREAKER_TABLE_CHUNK;
	t->chunks = calloc(nb_chunks, sizeof(*t->chunks));
	t->slots = malloc(slot_count * sizeof(*t->slots));
	if (!t->chunks || !t->slots || !breaker_policies_default(&t->policies)) {
		free(t->chunks);
		free(t->slots);
		memset(t, 0, sizeof(*t));
		errmsg_set(err, err_size, "out of memory for a table of %u breakers",
			  (unsigned)max_entries);
		return false;
	}
	memset(t->slots, 0xff, slot_count * sizeof(*t->slots)); /* all SLOT_EMPTY */
	t->slot_mask = slot_count - 1;
	t->max_entries = max_entries;
	t->free_head = BREAKER_TABLE_NIL;
	t->lru_head = BREAKER_TABLE_NIL;
	t->lru_tail = BREAKER_TABLE_NIL;
	return true;
}

/* One more chunk of free entries; false when out of memory or at
 * max_entries. The last chunk may be partly beyond max_entries: its tail
 * is never put on the free list. */
static bool grow(struct breaker_table *t)
{
	if (t->allocated >= t->max_entries)
		return false;
	/* Cache-line aligned (calloc's large blocks start 16 bytes into a
	 * page): an entry's hash, names pointers and lengths, which every
	 * probe reads, then share one line. */
	struct breaker_table_chunk *c = aligned_alloc(64, sizeof(*c));
	if (!c)
		return false;
	memset(c, 0, sizeof(*c));
	uint32_t first = t->allocated;
	uint32_t n = t->max_entries - first < BREAKER_TABLE_CHUNK ? t->max_entries - first
								  : BREAKER_TABLE_CHUNK;
	/* State kept beside the table by index must have room first. */
	if (t->hooks.reserve && !t->hooks.reserve(t->hooks.ctx, first + n)) {
		free(c);
		return false;
	}
	t->chunks[first / BREAKER_TABLE_CHUNK] = c;
	for (uint32_t i = 0; i < n; i++) {
		struct breaker_table_entry *e = &c->entries[i];
		e->index = first + i;
		e->lru_prev = BREAKER_TABLE_NIL;
		e->lru_next = i + 1 < n ? first + i + 1 : t->free_head;
		e->backend = c->names[i].key;
		e->server = c->names[i].key; /* placed when the entry is taken */
	}
	t->free_head = first;
	t->allocated = first + n;
	return true;
}

void breaker_table_free(struct breaker_table *t)
{
	breaker_policies_free(&t->policies);
	backend_successes_free(&t->backends);
	uint32_t nb_chunks = (t->max_entries + BREAKER_TABLE_CHUNK - 1) / BREAKER_TABLE_CHUNK;
	for (uint32_t i = 0; t->chunks && i < nb_chunks; i++)
		free(t->chunks[i]);
	free(t->chunks);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* ---- policies and hooks ---- */

void breaker_table_set_hooks(struct breaker_table *t, const struct breaker_table_hooks *hooks)
{
	t->hooks = *hooks;
}

void breaker_table_use_policies(struct breaker_table *t, struct breaker_policies *policies)
{
	struct breaker_policies old = t->policies;

	t->policies = *policies;
	memset(policies, 0, sizeof(*policies));
	/* A new override may now apply to breakers created before it. */
	for (struct breaker_table_entry *e = breaker_table_next(t, NULL); e;
	     e = breaker_table_next(t, e))
		breaker_set_policy(&e->breaker, breaker_policies_for(&t->policies, e->backend,
								     e->backend_len, e->server,
								     e->server_len));
	breaker_policies_free(&old);
}

/* ---- lookup ---- */

static void lru_push_back(struct breaker_table *t, uint32_t idx)
{
	struct breaker_table_entry *e = entry_at(t, idx);

	e->lru_next = BREAKER_TABLE_NIL;
	e->lru_prev = t->lru_tail;
	if (t->lru_tail != BREAKER_TABLE_NIL)
		entry_at(t, t->lru_tail)->lru_next = idx;
	else
		t->lru_head = idx;
	t->lru_tail = idx;
}

static struct breaker_table_entry *get_entry(struct breaker_table *t, const char *backend,
					     size_t backend_len, const char *server,
					     size_t server_len, uint64_t now_ms, bool quiet,
					     enum breaker_table_status *status)
{
	if (!name_ok(backend, backend_len) || !name_ok(server, server_len)) {
		*status = BREAKER_TABLE_BAD_NAME;
		return NULL;
	}

	uint64_t hash = hash_key(backend, backend_len, server, server_len);
	uint32_t slot;
	if (slot_lookup(t, hash, backend, backend_len, server, server_len, &slot)) {
		uint32_t idx = t->slots[slot];
		if (!quiet) {
			lru_unlink(t, idx);
			lru_push_front(t, idx);
		}
		*status = BREAKER_TABLE_FOUND;
		return entry_at(t, idx);
	}

	if (t->count == t->max_entries) {
		if (!evict_one(t)) {
			/* Every tracked breaker holds a judgement: keep them all,
			 * and let the caller fail open for this server. */
			t->full_refusals++;
			*status = BREAKER_TABLE_FULL;
			return NULL;
		}
		/* The eviction may have shifted the cluster: probe again. */
		slot_lookup(t, hash, backend, backend_len, server, server_len, &slot);
	}

	if (t->free_head == BREAKER_TABLE_NIL && !grow(t)) {
		t->full_refusals++;
		*status = BREAKER_TABLE_FULL;
		return NULL;
	}
	uint32_t idx = t->free_head;
	struct breaker_table_entry *e = entry_at(t, idx);
	t->free_head = e->lru_next;

	struct breaker_table_names *names =
		&t->chunks[idx / BREAKER_TABLE_CHUNK]->names[idx % BREAKER_TABLE_CHUNK];
	memcpy(names->key, backend, backend_len);
	names->key[backend_len] = '\0';
	e->backend_len = (uint8_t)backend_len;
	e->server = names->key + backend_len + 1;
	memcpy(names->key + backend_len + 1, server, server_len);
	names->key[backend_len + 1 + server_len] = '\0';
	e->server_len = (uint8_t)server_len;
	e->hash = hash;
	e->in_use = true;
	backend_successes_add_server(&t->backends, backend, backend_len);
	memset(&e->counters, 0, sizeof(e->counters));
	breaker_init(&e->breaker,
		     breaker_policies_for(&t->policies, backend, backend_len, server, server_len),
		     now_ms);

	t->slots[slot] = idx;
	if (quiet)
		lru_push_back(t, idx);
	else
		lru_push_front(t, idx);
	t->count++;
	hook_created(t, idx);
	*status = BREAKER_TABLE_CREATED;
	return e;
}

struct breaker_table_entry *breaker_table_get(struct breaker_table *t, const char *backend,
					      size_t backend_len, const char *server,
					      size_t server_len, uint64_t now_ms,
					      enum breaker_table_status *status)
{
	return get_entry(t, backend, backend_len, server, server_len, now_ms, false, status);
}

struct breaker_table_entry *breaker_table_get_quiet(struct breaker_table *t, const char *backend,
						    size_t backend_len, const char *server,
						    size_t server_len, uint64_t now_ms,
						    enum breaker_table_status *status)
{
	return get_entry(t, backend, backend_len, server, server_len, now_ms, true, status);
}

struct breaker_table_entry *breaker_table_find(struct breaker_table *t, const char *backend,
					       size_t backend_len, const char *server,
					       size_t server_len)
{
	uint32_t slot;

	if (!name_ok(backend, backend_len) || !name_ok(server, server_len))
		return NULL;
	uint64_t hash = hash_key(backend, backend_len, server, server_len);
	if (!slot_lookup(t, hash, backend, backend_len, server, server_len, &slot))
		return NULL;
	return entry_at(t, t->slots[slot]);
}

struct breaker_table_entry *breaker_table_next(struct breaker_table *t,
					       struct breaker_table_entry *prev)
{
	uint32_t idx = prev ? prev->lru_next : t->lru_head;

	return idx == BREAKER_TABLE_NIL ? NULL : entry_at(t, idx);
}

/* ---- time ---- */

uint64_t breaker_table_tick(struct breaker_table *t, uint64_t now_ms,
			    breaker_table_event_fn on_event, void *ctx)
{
	uint64_t next = BREAKER_NO_DEADLINE;

	for (uint32_t idx = t->lru_head; idx != BREAKER_TABLE_NIL; idx = entry_at(t, idx)->lru_next) {
		struct breaker_table_entry *e = entry_at(t, idx);
		uint64_t deadline = breaker_wake_deadline(&e->breaker);

		if (deadline <= now_ms) {
			struct breaker_event ev = breaker_tick(&e->breaker, now_ms);
			ev.rest = breaker_rest_tick(&e->breaker, now_ms);
			ev.hold_ended = breaker_hold_tick(&e->breaker, now_ms);
			if (on_event && (breaker_event_is_transition(&ev) ||
					 ev.rest != BREAKER_REST_UNCHANGED || ev.hold_ended))
				on_event(e, &ev, ctx);
			deadline = breaker_wake_deadline(&e->breaker);
		}
		if (deadline < next)
			next = deadline;
	}
	return next;
}

uint64_t breaker_table_next_deadline(const struct breaker_table *t)
{
	uint64_t next = BREAKER_NO_DEADLINE;

	for (uint32_t idx = t->lru_head; idx != BREAKER_TABLE_NIL; idx = entry_at(t, idx)->lru_next) {
		uint64_t deadline = breaker_wake_deadline(&entry_at(t, idx)->breaker);
		if (deadline < next)
			next = deadline;
	}
	return next;
}

void breaker_table_remove(struct breaker_table *t, struct breaker_table_entry *e)
{
	entry_remove(t, breaker_table_index(t, e));
}

/* ---- backends ---- */

/* After a capacity status: the wedged rule, with the backend's other
 * servers - a closed breaker's run, or a wedged one's half-open probe. */
static struct breaker_event judge_wedged(struct breaker_table *t, struct breaker_table_entry *e,
					 struct breaker_event ev, uint64_t now_ms)
{
	struct breaker *b = &e->breaker;
	uint64_t others = breaker_table_others_succeeded(t, e);

	if (breaker_is_wedged(b, now_ms, others))
		return breaker_trip_wedged(b, now_ms);
	struct breaker_event probe = breaker_judge_wedged_probe(b, now_ms, others);
	return breaker_event_is_transition(&probe) ? probe : ev;
}

struct breaker_event breaker_table_record_response(struct breaker_table *t,
						   struct breaker_table_entry *e,
						   enum breaker_outcome outcome, uint64_t now_ms)
{
	struct breaker *b = &e->breaker;
	struct breaker_event ev = breaker_record(b, outcome, now_ms);

	breaker_table_note_outcome(t, e, outcome, now_ms);
	if (outcome == BREAKER_OUTCOME_BACKPRESSURE)
		ev = judge_wedged(t, e, ev, now_ms);
	return ev;
}

struct breaker_event breaker_table_record_capacity_retries(struct breaker_table *t,
							   struct breaker_table_entry *e,
							   uint32_t count, uint64_t now_ms)
{
	struct breaker_event ev = breaker_record_backpressure_n(&e->breaker, count, now_ms);

	return judge_wedged(t, e, ev, now_ms);
}

struct breaker_event breaker_table_look_in_flight(struct breaker_table *t,
						  struct breaker_table_entry *e,
						  struct stall_watch *w, bool in_flight,
						  bool answered, uint64_t now_ms,
						  const struct stall_look *counts)
{
	struct breaker *b = &e->breaker;

	bool stalled_by_counts = false;
	if (counts) {
		/* A state is judged on its own requests: a watch begun
		 * before the state starts again at this look. Before the
		 * timed watch's look: an answer here proves the silence
		 * that watch saw (stall_watch.c). */
		if (w->from_ms != 0 && w->from_ms < b->state_since_ms)
			w->from_ms = 0;
		stall_count_look(w, counts);
		stalled_by_counts = breaker_is_stalled_by_counts(b, w, now_ms);
	}
	stall_watch_look(w, in_flight, answered, now_ms);
	if (stalled_by_counts)
		return breaker_trip_stalled(b, now_ms);
	if (breaker_is_stalled(b, w, now_ms, breaker_table_others_succeeded(t, e)))
		return breaker_trip_stalled(b, now_ms);
	return (struct breaker_event){.from = b->state, .to = b->state,
				      .dirty = BREAKER_DIRTY_UNCHANGED,
				      .trip_rule = BREAKER_TRIP_NONE};
}

void breaker_table_note_outcome(struct breaker_table *t, const struct breaker_table_entry *e,
				enum breaker_outcome outcome, uint64_t now_ms)
{
	/* A client error is the worker answering correctly: a success here
	 * as in the breaker. */
	if (outcome == BREAKER_OUTCOME_SUCCESS || outcome == BREAKER_OUTCOME_CLIENT_ERROR)
		backend_successes_record(&t->backends, e->backend, e->backend_len, e->index, now_ms);
}

uint64_t breaker_table_others_succeeded(const struct breaker_table *t,
					const struct breaker_table_entry *e)
{
	return backend_successes_by_others(&t->backends, e->backend, e->backend_len, e->index);
}
