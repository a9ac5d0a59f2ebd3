/*
 * state_store.h - the breakers' state across restarts (state_store.c): a
 * snapshot written when breakers change (at most once per state_interval,
 * the end of a burst always), on a thread of its own so the event loop
 * never waits on the disk, and a last one on TERM/INT; read back at start.
 */
#ifndef SPOA_STATE_STORE_H
#define SPOA_STATE_STORE_H

#include <ev.h>

#include "breakers/bus.h"
#include "state/state_settings.h"
#include "link/enforcer.h"

/* Where the breakers of this process came from. */
enum state_source {
	STATE_SOURCE_OFF,      /* state_file = none, or its directory unusable */
	STATE_SOURCE_FRESH,    /* no snapshot: a first start */
	STATE_SOURCE_SNAPSHOT, /* restored from the snapshot */
	STATE_SOURCE_REFUSED,  /* a snapshot that could not be used: moved aside */
};

struct state_store_stats {
	const char *path;           /* "" when off */
	enum state_source source;
	uint64_t restored;          /* breakers restored at start */
	uint64_t writes;            /* snapshots written */
	uint64_t write_failures;
	uint64_t last_write_mono_ms; /* clock_now_ms() of the last good write; 0: none */
	bool up_to_date;            /* the file holds every change seen so far */
};

struct state_store;

/*
 * The store of c's state_file, for these breakers and the HAProxy link the
 * daemon holds at *enforcer (read at each write: a reload replaces it). A
 * directory that cannot take the file is an error (NULL, err set) when
 * state_file was given, a warning and no snapshots with the default.
 * Subscribes to the breakers; starts the writer thread.
 */
struct state_store *state_store_new(struct ev_loop *loop, const struct state_settings *c,
				    struct breakers *breakers, struct enforcer *const *enforcer,
				    char *err, size_t err_size);

/* At start, once the HAProxy link exists and before the loop runs: the
 * breakers of the snapshot come back (a cool-down measured on the wall
 * clock), with what the agent had done to each server. A snapshot that
 * cannot be used is reported in one line, moved aside and ignored whole. */
void state_store_load(struct state_store *s);

/* SIGHUP: state_interval is reloadable. */
void state_store_set_interval(struct state_store *s, uint64_t interval_ms);

/* TERM/INT: writes the last snapshot when last_write (waiting for it: the
 * agent ran, and what it knows now is the newest), stops the thread,
 * unsubscribes, frees. NULL-safe. Call it before the HAProxy link is
 * freed: the snapshot reads its memory. */
void state_store_close(struct state_store *s, bool last_write);

const struct state_store_stats *state_store_stats(const struct state_store *s);
/* "off", "fresh", "snapshot", "refused" (inline: the pure renderers use it). */
static inline const char *state_source_name(enum state_source source)
{
	switch (source) {
	case STATE_SOURCE_OFF: return "off";
	case STATE_SOURCE_FRESH: return "fresh";
	case STATE_SOURCE_SNAPSHOT: return "snapshot";
	case STATE_SOURCE_REFUSED: return "refused";
	}
	return "unknown";
}

#endif /* SPOA_STATE_STORE_H */
