/*
 * state_json.h - /state: every breaker and the enforcement mode as one JSON
 * object (state_json.c), rendered from a struct metrics_source (pure).
 */
#ifndef SPOA_STATE_JSON_H
#define SPOA_STATE_JSON_H

#include "admin/metrics.h"

/*
 * Appends every breaker of s->table and the enforcement mode as one JSON
 * object (see README, "/state"). Returns false on out of memory.
 */
bool state_json_render(const struct metrics_source *s, struct strbuf *out);

/* Appends v as a JSON string, quotes included: " \ and every control
 * character escaped; other bytes are copied (names are ASCII). */
void state_json_string(struct strbuf *out, const char *v);

#endif /* SPOA_STATE_JSON_H */
