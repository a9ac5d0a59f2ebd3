/*
 * breaker_table.c - the breakers of every (backend, server) the agent has
 * seen: a bounded table with O(1) lookup, least-recently-used eviction of
 * idle entries, and the policy each entry follows (global defaults, then
 * per-backend, then per-server overrides).
 *
 * All entry memory is allocated once, up front: a lookup in steady state
 * never allocates. Only configuration (the policy setters) allocates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/breaker.h"
#include "util/errmsg.h"

#define SLOT_EMPTY UINT32_MAX


/* A name we can store and later hand to the Runtime API as a C string. */
static bool name_ok(const char *name, size_t len)
{
	return len >= 1 && len <= BREAKER_NAME_MAX && !memchr(name, '\0', len);
}

static bool name_eq(const char *stored, size_t stored_len, const char *name, size_t len)
{
	return stored_len == len && memcmp(stored, name, len) == 0;
}

/*
 * FNV-1a over backend, its length, and server (the length keeps ("ab","c")
 * apart from ("a","bc")), then a 64-bit finalizer so that the low bits used
 * as the slot index depend on every byte. Not keyed: names come from
 * HAProxy's configuration, not from clients, so nobody can flood a bucket.
 */
static uint64_t hash_key(const char *backend, size_t backend_len, const char *server,
			 size_t server_len)
{
	uint64_t h = UINT64_C(14695981039346656037);
	const uint64_t prime = UINT64_C(1099511628211);

	for (size_t i = 0; i < backend_len; i++)
		h = (h ^ (unsigned char)backend[i]) * prime;
	h = (h ^ backend_len) * prime;
	for (size_t i = 0; i < server_len; i++)
		h = (h ^ (unsigned char)server[i]) * prime;
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
		const struct breaker_table_entry *e = &t->entries[idx];
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
		uint32_t home = (uint32_t)t->entries[t->slots[j]].hash & t->slot_mask;
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
	struct breaker_table_entry *e = &t->entries[idx];

	if (e->lru_prev != BREAKER_TABLE_NIL)
		t->entries[e->lru_prev].lru_next = e->lru_next;
	else
		t->lru_head = e->lru_next;
	if (e->lru_next != BREAKER_TABLE_NIL)
		t->entries[e->lru_next].lru_prev = e->lru_prev;
	else
		t->lru_tail = e->lru_prev;
}

static void lru_push_front(struct breaker_table *t, uint32_t idx)
{
	struct breaker_table_entry *e = &t->entries[idx];

	e->lru_prev = BREAKER_TABLE_NIL;
	e->lru_next = t->lru_head;
	if (t->lru_head != BREAKER_TABLE_NIL)
		t->entries[t->lru_head].lru_prev = idx;
	else
		t->lru_tail = idx;
	t->lru_head = idx;
}

/* Drops an entry in use: out of the index, out of the recency list, onto
 * the free list. */
static void entry_remove(struct breaker_table *t, uint32_t idx)
{
	struct breaker_table_entry *e = &t->entries[idx];
	uint32_t slot;

	if (slot_lookup(t, e->hash, e->backend, e->backend_len, e->server, e->server_len, &slot))
		slot_delete(t, slot);
	lru_unlink(t, idx);
	e->in_use = false;
	e->lru_prev = BREAKER_TABLE_NIL;
	e->lru_next = t->free_head;
	t->free_head = idx;
	t->count--;
}

/*
 * Evicts the least recently used entry that is CLOSED and clean: such a
 * breaker holds nothing a fresh one would not, so forgetting it loses no
 * judgement. Dirty entries are skipped, never evicted. Walks from the
 * tail, so the cost is the number of dirty entries passed over - small
 * unless the fleet is failing, and only paid when the table is full.
 */
static bool evict_one(struct breaker_table *t)
{
	for (uint32_t idx = t->lru_tail; idx != BREAKER_TABLE_NIL; idx = t->entries[idx].lru_prev) {
		if (!breaker_is_dirty(&t->entries[idx].breaker)) {
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

	t->entries = calloc(max_entries, sizeof(*t->entries));
	t->slots = malloc(slot_count * sizeof(*t->slots));
	if (!t->entries || !t->slots) {
		free(t->entries);
		free(t->slots);
		memset(t, 0, sizeof(*t));
		errmsg_set(err, err_size, "out of memory for a table of %u breakers",
			  (unsigned)max_entries);
		return false;
	}
	memset(t->slots, 0xff, slot_count * sizeof(*t->slots)); /* all SLOT_EMPTY */
	t->slot_mask = slot_count - 1;
	t->max_entries = max_entries;
	for (uint32_t i = 0; i < max_entries; i++) {
		t->entries[i].lru_prev = BREAKER_TABLE_NIL;
		t->entries[i].lru_next = i + 1 < max_entries ? i + 1 : BREAKER_TABLE_NIL;
	}
	t->free_head = 0;
	t->lru_head = BREAKER_TABLE_NIL;
	t->lru_tail = BREAKER_TABLE_NIL;
	breaker_policy_defaults(&t->global_effective);
	return true;
}

void breaker_table_free(struct breaker_table *t)
{
	for (uint32_t i = 0; i < t->override_count; i++)
		free(t->overrides[i]);
	free(t->overrides);
	free(t->entries);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* ---- policies ---- */

static bool override_matches(const struct breaker_table_override *o, const char *backend,
			     size_t backend_len, const char *server, size_t server_len)
{
	return name_eq(o->backend, strlen(o->backend), backend, backend_len) &&
	       name_eq(o->server, strlen(o->server), server, server_len);
}

/* The override for (backend, server) - server "" for a backend's - or NULL. */
static struct breaker_table_override *override_find(const struct breaker_table *t,
						    const char *backend, size_t backend_len,
						    const char *server, size_t server_len)
{
	for (uint32_t i = 0; i < t->override_count; i++)
		if (override_matches(t->overrides[i], backend, backend_len, server, server_len))
			return t->overrides[i];
	return NULL;
}

/* Stores layer for (backend, server), replacing a previous one. */
static bool override_set(struct breaker_table *t, const char *backend, const char *server,
			 const struct breaker_policy_layer *layer, char *err, size_t err_size)
{
	size_t backend_len = strlen(backend);
	size_t server_len = strlen(server);
	struct breaker_table_override *o =
		override_find(t, backend, backend_len, server, server_len);

	if (o) {
		o->layer = *layer;
		return true;
	}
	if (t->override_count == BREAKER_TABLE_MAX_OVERRIDES) {
		errmsg_set(err, err_size, "more than %d backend and server overrides",
			  BREAKER_TABLE_MAX_OVERRIDES);
		return false;
	}
	if (t->override_count == t->override_cap) {
		uint32_t cap = t->override_cap ? 2 * t->override_cap : 8;
		struct breaker_table_override **grown =
			realloc(t->overrides, cap * sizeof(*t->overrides));
		if (!grown) {
			errmsg_set(err, err_size, "out of memory for policy overrides");
			return false;
		}
		t->overrides = grown;
		t->override_cap = cap;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		errmsg_set(err, err_size, "out of memory for policy overrides");
		return false;
	}
	memcpy(o->backend, backend, backend_len + 1);
	memcpy(o->server, server, server_len + 1);
	o->layer = *layer;
	/* Usable before the next resolve: what the entry follows today. */
	o->effective = t->global_effective;
	t->overrides[t->override_count++] = o;
	return true;
}

void breaker_table_set_global_policy(struct breaker_table *t,
				     const struct breaker_policy_layer *layer)
{
	t->global = *layer;
}

bool breaker_table_set_backend_policy(struct breaker_table *t, const char *backend,
				      const struct breaker_policy_layer *layer, char *err,
				      size_t err_size)
{
	if (!name_ok(backend, strlen(backend))) {
		errmsg_set(err, err_size, "backend name \"%.*s\" is empty or longer than %d bytes",
			  BREAKER_NAME_MAX, backend, BREAKER_NAME_MAX);
		return false;
	}
	return override_set(t, backend, "", layer, err, err_size);
}

bool breaker_table_set_server_policy(struct breaker_table *t, const char *backend,
				     const char *server, const struct breaker_policy_layer *layer,
				     char *err, size_t err_size)
{
	if (!name_ok(backend, strlen(backend)) || !name_ok(server, strlen(server))) {
		errmsg_set(err, err_size,
			  "server name \"%.*s/%.*s\" has an empty part or one longer than %d bytes",
			  BREAKER_NAME_MAX, backend, BREAKER_NAME_MAX, server, BREAKER_NAME_MAX);
		return false;
	}
	return override_set(t, backend, server, layer, err, err_size);
}

const struct breaker_policy *breaker_table_policy_for(const struct breaker_table *t,
						      const char *backend, size_t backend_len,
						      const char *server, size_t server_len)
{
	const struct breaker_policy *found = &t->global_effective;

	for (uint32_t i = 0; i < t->override_count; i++) {
		const struct breaker_table_override *o = t->overrides[i];
		if (!name_eq(o->backend, strlen(o->backend), backend, backend_len))
			continue;
		if (o->server[0] == '\0')
			found = &o->effective; /* the backend's; a server's may follow */
		else if (name_eq(o->server, strlen(o->server), server, server_len))
			return &o->effective; /* the most specific wins at once */
	}
	return found;
}

bool breaker_table_resolve_policies(struct breaker_table *t, char *err, size_t err_size)
{
	char why[256];
	struct breaker_policy global;
	struct breaker_policy *resolved = NULL;
	const struct breaker_policy_layer *layers[3];

	layers[0] = &t->global;
	if (!breaker_policy_resolve(&global, layers, 1, why, sizeof(why))) {
		errmsg_set(err, err_size, "global: %s", why);
		return false;
	}
	if (t->override_count > 0) {
		resolved = calloc(t->override_count, sizeof(*resolved));
		if (!resolved) {
			errmsg_set(err, err_size, "out of memory resolving policies");
			return false;
		}
	}
	/* Everything is computed aside first: a bad override leaves every
	 * policy in use untouched. */
	for (uint32_t i = 0; i < t->override_count; i++) {
		const struct breaker_table_override *o = t->overrides[i];
		bool ok;

		if (o->server[0] == '\0') {
			layers[1] = &o->layer;
			ok = breaker_policy_resolve(&resolved[i], layers, 2, why, sizeof(why));
			if (!ok)
				errmsg_set(err, err_size, "backend %s: %s", o->backend, why);
		} else {
			const struct breaker_table_override *be =
				override_find(t, o->backend, strlen(o->backend), "", 0);
			layers[1] = be ? &be->layer : NULL;
			layers[2] = &o->layer;
			ok = breaker_policy_resolve(&resolved[i], layers, 3, why, sizeof(why));
			if (!ok)
				errmsg_set(err, err_size, "server %s/%s: %s", o->backend, o->server,
					  why);
		}
		if (!ok) {
			free(resolved);
			return false;
		}
	}

	t->global_effective = global;
	for (uint32_t i = 0; i < t->override_count; i++)
		t->overrides[i]->effective = resolved[i];
	free(resolved);

	/* A new override may now apply to breakers created before it. */
	for (struct breaker_table_entry *e = breaker_table_next(t, NULL); e;
	     e = breaker_table_next(t, e))
		breaker_set_policy(&e->breaker, breaker_table_policy_for(t, e->backend,
									   e->backend_len, e->server,
									   e->server_len));
	return true;
}

void breaker_table_clear_policies(struct breaker_table *t)
{
	memset(&t->global, 0, sizeof(t->global));
	for (uint32_t i = 0; i < t->override_count; i++)
		memset(&t->overrides[i]->layer, 0, sizeof(t->overrides[i]->layer));
}

/* ---- lookup ---- */

struct breaker_table_entry *breaker_table_get(struct breaker_table *t, const char *backend,
					      size_t backend_len, const char *server,
					      size_t server_len, uint64_t now_ms,
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
		lru_unlink(t, idx);
		lru_push_front(t, idx);
		*status = BREAKER_TABLE_FOUND;
		return &t->entries[idx];
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

	uint32_t idx = t->free_head;
	struct breaker_table_entry *e = &t->entries[idx];
	t->free_head = e->lru_next;

	memcpy(e->backend, backend, backend_len);
	e->backend[backend_len] = '\0';
	e->backend_len = (uint8_t)backend_len;
	memcpy(e->server, server, server_len);
	e->server[server_len] = '\0';
	e->server_len = (uint8_t)server_len;
	e->hash = hash;
	e->in_use = true;
	memset(e->enforce, 0, sizeof(e->enforce));
	memset(&e->counters, 0, sizeof(e->counters));
	breaker_init(&e->breaker, breaker_table_policy_for(t, backend, backend_len, server,
							    server_len),
		     now_ms);

	t->slots[slot] = idx;
	lru_push_front(t, idx);
	t->count++;
	*status = BREAKER_TABLE_CREATED;
	return e;
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
	return &t->entries[t->slots[slot]];
}

struct breaker_table_entry *breaker_table_next(struct breaker_table *t,
					       struct breaker_table_entry *prev)
{
	uint32_t idx = prev ? prev->lru_next : t->lru_head;

	return idx == BREAKER_TABLE_NIL ? NULL : &t->entries[idx];
}

/* ---- time ---- */

uint64_t breaker_table_tick(struct breaker_table *t, uint64_t now_ms,
			    breaker_table_event_fn on_event, void *ctx)
{
	uint64_t next = BREAKER_NO_DEADLINE;

	for (uint32_t idx = t->lru_head; idx != BREAKER_TABLE_NIL; idx = t->entries[idx].lru_next) {
		struct breaker_table_entry *e = &t->entries[idx];
		uint64_t deadline = breaker_next_deadline(&e->breaker);

		if (deadline <= now_ms) {
			struct breaker_event ev = breaker_tick(&e->breaker, now_ms);
			if (on_event && (breaker_event_is_transition(&ev) || ev.probes_released))
				on_event(e, &ev, ctx);
			deadline = breaker_next_deadline(&e->breaker);
		}
		if (deadline < next)
			next = deadline;
	}
	return next;
}

uint64_t breaker_table_next_deadline(const struct breaker_table *t)
{
	uint64_t next = BREAKER_NO_DEADLINE;

	for (uint32_t idx = t->lru_head; idx != BREAKER_TABLE_NIL; idx = t->entries[idx].lru_next) {
		uint64_t deadline = breaker_next_deadline(&t->entries[idx].breaker);
		if (deadline < next)
			next = deadline;
	}
	return next;
}

void breaker_table_remove(struct breaker_table *t, struct breaker_table_entry *e)
{
	entry_remove(t, (uint32_t)(e - t->entries));
}

const char *breaker_table_status_name(enum breaker_table_status status)
{
	switch (status) {
	case BREAKER_TABLE_FOUND: return "found";
	case BREAKER_TABLE_CREATED: return "created";
	case BREAKER_TABLE_FULL: return "table full";
	case BREAKER_TABLE_BAD_NAME: return "bad name";
	}
	return "unknown";
}
