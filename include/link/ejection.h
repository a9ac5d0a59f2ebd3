/*
 * ejection.h - how much of a backend the breakers may take out of
 * rotation (ejection.c, pure).
 *
 * Draining every server of a backend turns a partial outage into a total
 * one: HAProxy answers 503 at once. So a backend's drains are capped, per
 * HAProxy, by two rules of its policy:
 *   max_ejection_percent  at most this share of the backend's capacity
 *                         may be out of rotation (rounded down);
 *   drain_last_server     off (the default): never take out the last
 *                         server still serving.
 * An open breaker whose drain the cap holds back stays open (its verdict
 * says so: ejection_capped) and waits; when room frees, the one that has
 * waited longest is drained first. A resting worker (its Retry-After)
 * counts as out of rotation, and waits for room the same way; so does a
 * half-open server (limited to its probes, drained while they are out).
 *
 * The cap counts capacity, not slots. A server in maintenance is not
 * counted at all: whether a controller parked it (the HAProxy Kubernetes
 * Ingress Controller keeps 42 slots a backend, the unused ones at
 * 127.0.0.1:1 in maintenance; haproxy-ingress writes `disabled` lines at
 * 127.0.0.1:1023), the configuration says `disabled`, or an operator took
 * it out, it is not capacity the backend has, and counting it as lost
 * capacity switched the cap shut for any backend with more spare slots
 * than pods. A server down by health check, or drained by anyone, is
 * capacity lost for now: it counts, as out.
 */
#ifndef SPOA_EJECTION_H
#define SPOA_EJECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/breaker-t.h"

/* One backend as one HAProxy lists it. */
struct ejection_count {
	uint32_t listed; /* servers HAProxy lists for the backend, less maintenance */
	/* Of those, servers not serving, whoever took them out: the agent's
	 * drains, and servers down by health check or drained by an operator.
	 * See ejection_room() for why all of them count. */
	uint32_t out;
};

/* One backend as one look at one HAProxy counted it (and the agent's
 * drains and holds since then): what the cap decides on, and what the
 * metrics show. */
struct ejection_backend {
	uint64_t be_id; /* HAProxy's backend id */
	char name[BREAKER_NAME_MAX + 1];
	struct ejection_count count;
	uint32_t drained_by_agent; /* servers the agent holds drained */
	uint32_t capped;           /* open breakers the cap keeps in rotation */
	bool has_breakers;         /* an HTTP backend: its servers have breakers */
	/* When the first of its open breakers lets a probe through (Unix
	 * seconds), -1 when none is open: what HAProxy's own 503 tells a
	 * client (retry_map.h). Gathered as the look is converged. */
	int64_t retry_at_s;
};

/* The largest number of servers the cap lets be out of rotation at once:
 * floor(listed * max_ejection_percent / 100). */
uint32_t ejection_max_out(const struct breaker_policy *policy, uint32_t listed);

/* How many more serving servers may be drained now (0 when none). */
uint32_t ejection_room(const struct breaker_policy *policy, const struct ejection_count *count);

/* The same for rests: never the last serving server (ejection_may_rest()). */
uint32_t ejection_rest_room(const struct breaker_policy *policy, const struct ejection_count *count);

/*
 * Whether a serving server whose breaker wants a drain may be drained,
 * `waited_longer` other servers of its backend waiting for room before it
 * (they are served first).
 */
bool ejection_may_drain(const struct breaker_policy *policy, const struct ejection_count *count,
			uint32_t waited_longer);

/*
 * The same for a worker's rest (its Retry-After, core/rest.c): the same
 * share, but never the last serving server, whatever drain_last_server
 * allows - the worker is busy, not broken, and a busy answer now and then
 * beats HAProxy's own 503 for every request.
 */
bool ejection_may_rest(const struct breaker_policy *policy, const struct ejection_count *count,
		       uint32_t waited_longer);

#endif /* SPOA_EJECTION_H */
