/*
 * wiring.c - what an HAProxy's configuration lacks for the agent (see
 * wiring.h). Pure: the enforcer feeds it what its looks read and logs what
 * it reports.
 */
#include <stdlib.h>
#include <string.h>

#include "link/wiring.h"

void wiring_free(struct wiring *w)
{
	free(w->backends);
	memset(w, 0, sizeof(*w));
}

enum wiring_level wiring_level_parse(const char *reply, size_t len)
{
	static const struct {
		const char *word;
		enum wiring_level level;
	} levels[] = {
		{"admin", WIRING_LEVEL_ADMIN},
		{"operator", WIRING_LEVEL_OPERATOR},
		{"user", WIRING_LEVEL_USER},
	};
	while (len > 0 && (reply[len - 1] == '\n' || reply[len - 1] == ' '))
		len--;
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (len == strlen(levels[i].word) && memcmp(reply, levels[i].word, len) == 0)
			return levels[i].level;
	return WIRING_LEVEL_UNKNOWN;
}

const char *wiring_level_name(enum wiring_level level)
{
	switch (level) {
	case WIRING_LEVEL_ADMIN:
		return "admin";
	case WIRING_LEVEL_OPERATOR:
		return "operator";
	case WIRING_LEVEL_USER:
		return "user";
	case WIRING_LEVEL_UNKNOWN:
		break;
	}
	return "unknown";
}

bool wiring_note_level(struct wiring *w, enum wiring_level level)
{
	w->level = level;
	if (level == WIRING_LEVEL_ADMIN)
		w->level_said = false;
	if (level == WIRING_LEVEL_ADMIN || level == WIRING_LEVEL_UNKNOWN || w->level_said)
		return false;
	w->level_said = true;
	return true;
}

/* FNV-1a: names are short, and a look hashes each backend once per row. */
static uint32_t hash_name(const char *name, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 16777619u;
	return h;
}

static bool slot_is(const struct wiring_backend *b, const char *name, size_t len)
{
	return strncmp(b->name, name, len) == 0 && b->name[len] == '\0';
}

static struct wiring_backend *slot_for(struct wiring_backend *slots, uint32_t capacity,
				       const char *name, size_t len)
{
	uint32_t i = hash_name(name, len) & (capacity - 1);
	while (slots[i].name[0] && !slot_is(&slots[i], name, len))
		i = (i + 1) & (capacity - 1);
	return &slots[i];
}

/* Doubles the table (64 slots at first), keeping it at most half full. */
static bool grow(struct wiring *w)
{
	uint32_t capacity = w->capacity ? 2 * w->capacity : 64;
	if (capacity < w->capacity)
		return false;
	struct wiring_backend *slots = calloc(capacity, sizeof(*slots));
	if (!slots)
		return false;
	for (uint32_t i = 0; i < w->capacity; i++) {
		const struct wiring_backend *b = &w->backends[i];
		if (b->name[0])
			*slot_for(slots, capacity, b->name, strlen(b->name)) = *b;
	}
	free(w->backends);
	w->backends = slots;
	w->capacity = capacity;
	return true;
}

bool wiring_note_row(struct wiring *w, uint32_t look_id, const char *backend, size_t backend_len,
		     uint64_t responses, bool named)
{
	if (backend_len == 0 || backend_len > NAME_MAX_LEN)
		return false;
	if (2 * (w->count + 1) > w->capacity && !grow(w))
		return false;
	struct wiring_backend *b = slot_for(w->backends, w->capacity, backend, backend_len);
	if (!b->name[0]) {
		memcpy(b->name, backend, backend_len);
		b->name[backend_len] = '\0';
		w->count++;
	}
	if (b->look_id != look_id) {
		b->look_id = look_id;
		b->responses = 0;
		b->named_now = false;
	}
	b->responses += responses;
	b->named_now |= named;
	return true;
}

void wiring_end_look(struct wiring *w, uint32_t look_id, uint64_t look_ms, uint64_t grace_ms,
		     bool restarted, wiring_unwired_fn fn, void *ctx)
{
	for (uint32_t i = 0; i < w->capacity; i++) {
		struct wiring_backend *b = &w->backends[i];
		/* A backend this look did not list (a reload removed it) is
		 * neither judged nor listed. */
		if (!b->name[0] || b->look_id != look_id) {
			if (b->name[0] && b->reported) {
				b->reported = false;
				w->unwired--;
			}
			continue;
		}
		if (b->named_now || b->named) {
			b->named = true;
			b->watching = false;
			if (b->reported) {
				b->reported = false;
				w->unwired--;
			}
			continue;
		}
		if (!b->watching || restarted || b->responses < b->watch_base) {
			b->watching = true;
			b->watch_from_ms = look_ms;
			b->watch_base = b->responses;
			continue;
		}
		uint64_t carried = b->responses - b->watch_base;
		if (b->reported || look_ms - b->watch_from_ms < grace_ms ||
		    carried < WIRING_MIN_RESPONSES)
			continue;
		b->reported = true;
		w->unwired++;
		if (fn)
			fn(ctx, b->name, carried);
	}
}

void wiring_each_unwired(const struct wiring *w, wiring_backend_fn fn, void *ctx)
{
	for (uint32_t i = 0; i < w->capacity; i++)
		if (w->backends[i].name[0] && w->backends[i].reported &&
		    !fn(ctx, w->backends[i].name))
			return;
}
