/*
 * state_json.h - /state: every breaker and the enforcement mode as one JSON
 * object (state_json.c), rendered from a struct metrics_source (pure).
 */
#ifndef SPOA_STATE_JSON_H
#define SPOA_STATE_JSON_H

#include "admin/metrics.h"

/* Every breaker of s->table and the enforcement mode as one JSON object
 * (see docs/metrics.md, "/state"), in parts as the metrics are (see
 * metrics_render_head()): the object up to the
 * opening of "breakers", then the breakers a slice at a time - no more
 * than budget table entries looked at per call - and the closing; true
 * once the closing is written. */
struct state_json_cursor {
	uint32_t index;   /* next table index */
	uint32_t written; /* breakers written so far (for the commas) */
};

bool state_json_render_head(const struct metrics_source *s, struct strbuf *out);
/* capped: as metrics_render_servers() has it; learnt: per table index, the
 * maxconn the agent holds for the server from its learnt capacity (0:
 * none; link/capacity.h), or NULL. */
bool state_json_render_breakers(const struct breaker_table *t, const bool *capped,
				const uint32_t *learnt, uint64_t now_ms, struct state_json_cursor *c, struct strbuf *out,
				uint32_t budget);

/* Appends v as a JSON string, quotes included: " \ and every control
 * character escaped; other bytes are copied (names are ASCII). */
void state_json_string(struct strbuf *out, const char *v);

#endif /* SPOA_STATE_JSON_H */
