/*
 * state_settings.h - what the configuration sets of the state snapshot
 * (state_store.h). Held in struct config as `state` and handed to
 * state_store_new(), so that the store does not depend on the
 * configuration that fills it.
 */
#ifndef SPOA_STATE_SETTINGS_H
#define SPOA_STATE_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#define STATE_PATH_MAX_LEN 256
#define STATE_DEFAULT_FILE "/var/lib/spoa-breaker/state.msgpack"
#define STATE_DEFAULT_INTERVAL_MS 1000

struct state_settings {
	/* The snapshot's file; empty: none. file_set: given explicitly (then
	 * an unwritable directory is fatal; the default only warns). */
	char file[STATE_PATH_MAX_LEN];
	bool file_set;
	uint64_t interval_ms; /* at most one write per interval */
};

#endif /* SPOA_STATE_SETTINGS_H */
