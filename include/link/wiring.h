/*
 * wiring.h - what an HAProxy's configuration lacks for the agent to do its
 * work, judged from what the looks read (wiring.c, pure).
 *
 * Three things an operator can forget when wiring the agent into their own
 * haproxy.cfg, each silent until now:
 *   - a backend whose traffic no SPOP message ever names: its frontend has
 *     no `filter spoe` line for the agent, or the message's condition
 *     leaves the backend out. Its servers' failures are never judged.
 *   - a Runtime API below `level admin`: every drain is refused.
 *   - a map the agent keeps in HAProxy (the ownership record, the Retry-After
 *     moments) or the peers' stick table, not loaded.
 * Each problem is said once when it appears (the caller logs), again only
 * after it went away and came back, and listed while it lasts (/state).
 *
 * A backend counts as unwired only after it carried at least
 * WIRING_MIN_RESPONSES responses over at least `grace_ms` with none of its
 * servers ever named over SPOP: an agent that has just started (HAProxy's
 * health check has not marked it up yet, so requests pass unnotified) is
 * never mistaken for a missing line.
 */
#ifndef SPOA_LINK_WIRING_H
#define SPOA_LINK_WIRING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/names.h"

#define WIRING_MIN_RESPONSES 20

/* What `show cli level` answered: the socket's access level. */
enum wiring_level {
	WIRING_LEVEL_UNKNOWN, /* not asked yet, or an HAProxy without the command */
	WIRING_LEVEL_USER,
	WIRING_LEVEL_OPERATOR,
	WIRING_LEVEL_ADMIN,
};

struct wiring_backend {
	char name[NAME_MAX_LEN + 1]; /* "" : a free slot */
	uint32_t look_id;    /* the look whose rows were summed below */
	uint64_t responses;  /* this look's sum over the backend's servers */
	bool named_now;      /* a server of it was named over SPOP, at this look */
	bool named;          /* ever named: wired */
	bool watching;       /* counting since watch_from_ms, watch_base */
	uint64_t watch_from_ms;
	uint64_t watch_base;
	bool reported;       /* said unwired; listed until named */
};

struct wiring {
	enum wiring_level level;
	bool level_said;     /* the level below admin was said */
	/* The agent's records in HAProxy, as the last look found them. */
	bool maps_known;     /* a look read `show map` */
	bool owner_map, retry_map, watched_map;
	bool verdicts_wanted, verdict_table; /* peers mode: the stick table */
	/* Backends by name, open addressing (capacity a power of two). */
	struct wiring_backend *backends;
	uint32_t capacity, count;
	uint32_t unwired;    /* backends reported and not named since */
};

void wiring_free(struct wiring *w);

/* Parses a `show cli level` reply ("admin\n", ...); UNKNOWN otherwise
 * (an HAProxy that does not know the command answers with its help). */
enum wiring_level wiring_level_parse(const char *reply, size_t len);
const char *wiring_level_name(enum wiring_level level);

/* Records the level; true if it is below admin and was not said yet (the
 * caller says it). Back at admin, the next drop is said again. */
bool wiring_note_level(struct wiring *w, enum wiring_level level);

/*
 * One `show stat` row of an HTTP server: its backend's name, the responses
 * HAProxy counted for it (the classes the SPOE message is sent for), and
 * whether SPOP ever named that server. Summed per backend and look. False
 * when out of memory (the row is then not counted).
 */
bool wiring_note_row(struct wiring *w, uint32_t look_id, const char *backend, size_t backend_len,
		     uint64_t responses, bool named);

/* Told of each backend that has just become unwired (reported), with the
 * responses HAProxy counted since its watch began. */
typedef void (*wiring_unwired_fn)(void *ctx, const char *backend, uint64_t responses);

/*
 * The look `look_id`, made at look_ms, has read every row: backends named
 * become wired (a reported one is no longer listed), the others are
 * watched, and those past the grace are reported once to fn. A counter
 * that went down (a restarted HAProxy) starts the watch again.
 * `restarted`: this look's counters start from zero.
 */
void wiring_end_look(struct wiring *w, uint32_t look_id, uint64_t look_ms, uint64_t grace_ms,
		     bool restarted, wiring_unwired_fn fn, void *ctx);

/* Each backend reported unwired and not named since; stops when fn
 * returns false. */
typedef bool (*wiring_backend_fn)(void *ctx, const char *backend);
void wiring_each_unwired(const struct wiring *w, wiring_backend_fn fn, void *ctx);

#endif /* SPOA_LINK_WIRING_H */
