/*
 * policy.h - the rules a breaker follows, and where they come from: the
 * defaults, the global layer, then one layer per backend, then one per
 * server (policy.c).
 *
 * Pure: no I/O, no clock. breaker_policies_build() is the one place where
 * layers become effective policies; the configuration calls it once per
 * load (and per reload), and the table borrows the result.
 */
#ifndef SPOA_CORE_POLICY_H
#define SPOA_CORE_POLICY_H

#include "core/breaker-t.h"

/* The defaults of docs/design.md, "Per-state rules": threshold 3,
 * cool-down 30 s, 1 probe, capacity {429, 503, 529}, failure 500-599 minus
 * capacity, ignore empty,
 * half-open backpressure `close`, open late success `ignore`; open-time
 * backoff up to 5 min, forgotten after 60 s closed; the failure-rate
 * rule off, over 64 requests with a minimum volume of 20; an ejection
 * cap of 50 % of a backend, never its last serving server. */
void breaker_policy_defaults(struct breaker_policy *policy);

/* True if the policy is usable; otherwise false with the first problem in
 * err (a zero threshold, probes outside 1..BREAKER_MAX_PROBES, overlapping
 * sets naming the statuses in both, ...). */
bool breaker_policy_validate(const struct breaker_policy *policy, char *err, size_t err_size);

/*
 * Builds one effective policy from the defaults and nb_layers layers
 * applied in order (global first, the most specific last): a field set by
 * a layer replaces the inherited value, sets included. When no layer sets
 * the failure set it is derived as 500-599 minus the capacity and ignore
 * sets, so moving 503 out of the capacity set makes it a failure and
 * putting a 5xx in the ignore set never creates an overlap. Likewise an
 * unset max_cooldown is at least the cooldown, an unset minimum_volume at
 * most the window. NULL layers are skipped. Validates the result: false with err set if unusable (*out is
 * then unspecified).
 */
bool breaker_policy_resolve(struct breaker_policy *out,
			    const struct breaker_policy_layer *const *layers, size_t nb_layers,
			    char *err, size_t err_size);

/* Told about each level that does not resolve: `override` is its index in
 * the overrides given to breaker_policies_build(), or -1 for the global
 * level; `message` says what is wrong, prefixed by the level ("server
 * be/w1: ..."). */
typedef void (*breaker_policy_error_fn)(void *ctx, int override, const char *message);

/*
 * Resolves the global layer and nb_overrides overrides (at most
 * BREAKER_TABLE_MAX_OVERRIDES, names 1..BREAKER_NAME_MAX bytes, a server's
 * override inherits from its backend's) into *out. Every level is checked,
 * and each one that fails is reported to on_error (may be NULL); then false
 * is returned and *out is left empty (nothing to free). An override given
 * twice is merged, the later fields winning. global may be NULL (the
 * defaults). Allocates; release with breaker_policies_free().
 */
bool breaker_policies_build(struct breaker_policies *out,
			    const struct breaker_policy_layer *global,
			    const struct breaker_policy_override *overrides, size_t nb_overrides,
			    breaker_policy_error_fn on_error, void *ctx);

/* The defaults everywhere: one level. False only when out of memory. */
bool breaker_policies_default(struct breaker_policies *out);

void breaker_policies_free(struct breaker_policies *p);

/* The effective policy of (backend, server): the server's level, else the
 * backend's, else the global one. Names are byte strings of the given
 * lengths. Never NULL for built policies. */
/* False if (backend, server) is in a backend left unguarded (guarded =
 * false): it gets no breaker. A name lookup only when some backend is. */
bool breaker_policies_guard(const struct breaker_policies *p, const char *backend,
			    size_t backend_len, const char *server, size_t server_len);

const struct breaker_policy *breaker_policies_for(const struct breaker_policies *p,
						  const char *backend, size_t backend_len,
						  const char *server, size_t server_len);

#endif /* SPOA_CORE_POLICY_H */
