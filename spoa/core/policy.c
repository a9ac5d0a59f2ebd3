/*
 * policy.c - from configuration layers to the effective policy of each
 * breaker (see policy.h). The layering rules live here and nowhere else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy.h"
#include "core/breaker.h"
#include "util/errmsg.h"
#include "util/names.h"

/* The failure set nobody configured: every 5xx that is not already
 * backpressure or ignored, so the three sets never overlap by default. */
static void derive_failure_set(struct breaker_policy *policy)
{
	status_set_clear(&policy->failure);
	status_set_add_range(&policy->failure, 500, 599);
	status_set_difference(&policy->failure, &policy->failure, &policy->capacity);
	status_set_difference(&policy->failure, &policy->failure, &policy->ignore);
}

void breaker_policy_defaults(struct breaker_policy *policy)
{
	memset(policy, 0, sizeof(*policy));
	policy->threshold = BREAKER_DEFAULT_THRESHOLD;
	policy->cooldown_ms = BREAKER_DEFAULT_COOLDOWN_MS;
	policy->half_open_probes = BREAKER_DEFAULT_HALF_OPEN_PROBES;
	/* 503 too, unlike the {429} of docs/design.md, "Sets replace":
	 * inference engines answer 503 for
	 * "queue full", and HAProxy's own error-limit already treats 503 as
	 * an outage - the very behaviour this agent exists to correct. */
	status_set_add(&policy->capacity, 429);
	status_set_add(&policy->capacity, 503);
	/* And 529, NVIDIA Dynamo's "overloaded" answer, which other LLM APIs
	 * give too: busy, not dead. Like 503 it leaves the derived failure
	 * set below; unlike 503, HAProxy's retry-on cannot list it, so it
	 * always reaches the client and SPOE. */
	status_set_add(&policy->capacity, 529);
	derive_failure_set(policy);
	policy->half_open_backpressure = BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE;
	policy->open_late_success = BREAKER_OPEN_LATE_SUCCESS_IGNORE;
	policy->max_cooldown_ms = BREAKER_DEFAULT_MAX_COOLDOWN_MS;
	policy->healthy_for_ms = BREAKER_DEFAULT_HEALTHY_FOR_MS;
	/* Off: consecutive failures stay the one rule unless asked for. */
	policy->failure_rate_threshold = 0;
	policy->window = BREAKER_DEFAULT_WINDOW;
	policy->minimum_volume = BREAKER_DEFAULT_MINIMUM_VOLUME;
	/* Off: a 503 stays backpressure unless asked for (docs/design.md,
	 * "Busy is not dead"). */
	policy->wedged_after_ms = 0;
	/* Off: how long a response may take is the fleet's to say; an LLM
	 * worker can rightly be silent for tens of seconds. */
	policy->stalled_after_ms = 0;
	/* On: counted against the neighbours, it needs no bound on answer
	 * times (stall_watch.c says why these two). */
	policy->stalled_requests = BREAKER_DEFAULT_STALLED_REQUESTS;
	policy->stalled_share = BREAKER_DEFAULT_STALLED_SHARE;
	policy->retry_after_max_ms = BREAKER_DEFAULT_RETRY_AFTER_MAX_MS;
	policy->max_ejection_percent = BREAKER_DEFAULT_MAX_EJECTION_PERCENT;
	policy->drain_last_server = false;
	/* Off, as the shipped haproxy.cfg retries no response timeout. */
	policy->retried_timeouts = false;
	policy->guarded = true;
	/* Not pinned: a busy worker's capacity becomes its maxconn, and
	 * HAProxy queues the rest instead of sending it to be refused
	 * (link/capacity.h). */
	policy->pin_maxconn = false;
	/* On: what a hung worker holds is lost either way, and held, its
	 * closed-loop clients send nothing else for `timeout server`
	 * (docs/operating.md, "A hung worker", has the figures). */
	policy->release_stalled = true;
}

/* Reports a non-empty intersection of two named sets, listing its statuses. */
static bool check_disjoint(const struct status_set *a, const char *a_name,
			   const struct status_set *b, const char *b_name, char *err,
			   size_t err_size)
{
	struct status_set both;
	char list[STATUS_SET_FORMAT_MAX];

	status_set_intersect(&both, a, b);
	if (status_set_is_empty(&both))
		return true;
	status_set_format(&both, list, sizeof(list));
	errmsg_set(err, err_size, "%s and %s sets overlap on %s (a status belongs to one set only)",
		  a_name, b_name, list);
	return false;
}

bool breaker_policy_validate(const struct breaker_policy *policy, char *err, size_t err_size)
{
	if (policy->threshold < 1) {
		errmsg_set(err, err_size, "threshold is 0 (expected at least 1 failure)");
		return false;
	}
	if (policy->cooldown_ms < 1) {
		errmsg_set(err, err_size, "cool-down is 0 (expected at least 1 ms)");
		return false;
	}
	if (policy->half_open_probes < 1 || policy->half_open_probes > BREAKER_MAX_PROBES) {
		errmsg_set(err, err_size, "half-open probes is %u (expected 1-%d)",
			  (unsigned)policy->half_open_probes, BREAKER_MAX_PROBES);
		return false;
	}
	if (policy->half_open_backpressure != BREAKER_HALF_OPEN_BACKPRESSURE_CLOSE &&
	    policy->half_open_backpressure != BREAKER_HALF_OPEN_BACKPRESSURE_IGNORE) {
		errmsg_set(err, err_size, "half-open backpressure policy is neither close nor ignore");
		return false;
	}
	if (policy->open_late_success != BREAKER_OPEN_LATE_SUCCESS_IGNORE &&
	    policy->open_late_success != BREAKER_OPEN_LATE_SUCCESS_CLOSE) {
		errmsg_set(err, err_size, "open late success policy is neither ignore nor close");
		return false;
	}
	if (policy->max_cooldown_ms < policy->cooldown_ms) {
		errmsg_set(err, err_size,
			  "max_cooldown of %llu ms is below cooldown of %llu ms (the backoff "
			  "starts at the cooldown; raise max_cooldown or lower cooldown)",
			  (unsigned long long)policy->max_cooldown_ms,
			  (unsigned long long)policy->cooldown_ms);
		return false;
	}
	if (policy->healthy_for_ms < 1) {
		errmsg_set(err, err_size, "healthy_for is 0 (expected at least 1 ms)");
		return false;
	}
	if (policy->failure_rate_threshold > 100) {
		errmsg_set(err, err_size, "failure_rate_threshold is %u (expected 0-100 percent)",
			  (unsigned)policy->failure_rate_threshold);
		return false;
	}
	if (policy->stalled_share < 1 || policy->stalled_share > 100) {
		errmsg_set(err, err_size, "stalled_share is %u (expected 1-100 percent)",
			  (unsigned)policy->stalled_share);
		return false;
	}
	if (policy->window < 1 || policy->window > BREAKER_MAX_WINDOW) {
		errmsg_set(err, err_size, "window is %u (expected 1-%d judged requests)",
			  (unsigned)policy->window, BREAKER_MAX_WINDOW);
		return false;
	}
	if (policy->minimum_volume < 1 || policy->minimum_volume > policy->window) {
		errmsg_set(err, err_size,
			  "minimum_volume is %u, above the window of %u (the failure rate "
			  "could never be judged; expected 1-%u)",
			  (unsigned)policy->minimum_volume, (unsigned)policy->window,
			  (unsigned)policy->window);
		return false;
	}
	if (policy->retry_after_max_ms > BREAKER_RETRY_AFTER_MAX_LIMIT_MS) {
		errmsg_set(err, err_size, "retry_after_max is %llu ms (expected at most %d ms)",
			  (unsigned long long)policy->retry_after_max_ms,
			  BREAKER_RETRY_AFTER_MAX_LIMIT_MS);
		return false;
	}
	return check_disjoint(&policy->capacity, "capacity", &policy->failure, "failure", err,
			      err_size) &&
	       check_disjoint(&policy->ignore, "ignore", &policy->capacity, "capacity", err,
			      err_size) &&
	       check_disjoint(&policy->ignore, "ignore", &policy->failure, "failure", err,
			      err_size);
}

static void apply_layer(struct breaker_policy *p, const struct breaker_policy_layer *layer)
{
	const struct breaker_policy *v = &layer->values;
	unsigned f = layer->fields;

	if (f & BREAKER_FIELD_THRESHOLD)
		p->threshold = v->threshold;
	if (f & BREAKER_FIELD_COOLDOWN)
		p->cooldown_ms = v->cooldown_ms;
	if (f & BREAKER_FIELD_HALF_OPEN_PROBES)
		p->half_open_probes = v->half_open_probes;
	/* Sets replace the inherited set whole (docs/design.md, "Sets
	 * replace"): a backend that
	 * lists only 429 means 503 is no longer backpressure there. */
	if (f & BREAKER_FIELD_CAPACITY_SET)
		p->capacity = v->capacity;
	if (f & BREAKER_FIELD_FAILURE_SET)
		p->failure = v->failure;
	if (f & BREAKER_FIELD_IGNORE_SET)
		p->ignore = v->ignore;
	if (f & BREAKER_FIELD_HALF_OPEN_BACKPRESSURE)
		p->half_open_backpressure = v->half_open_backpressure;
	if (f & BREAKER_FIELD_OPEN_LATE_SUCCESS)
		p->open_late_success = v->open_late_success;
	if (f & BREAKER_FIELD_MAX_COOLDOWN)
		p->max_cooldown_ms = v->max_cooldown_ms;
	if (f & BREAKER_FIELD_HEALTHY_FOR)
		p->healthy_for_ms = v->healthy_for_ms;
	if (f & BREAKER_FIELD_FAILURE_RATE_THRESHOLD)
		p->failure_rate_threshold = v->failure_rate_threshold;
	if (f & BREAKER_FIELD_WINDOW)
		p->window = v->window;
	if (f & BREAKER_FIELD_MINIMUM_VOLUME)
		p->minimum_volume = v->minimum_volume;
	if (f & BREAKER_FIELD_WEDGED_AFTER)
		p->wedged_after_ms = v->wedged_after_ms;
	if (f & BREAKER_FIELD_STALLED_AFTER)
		p->stalled_after_ms = v->stalled_after_ms;
	if (f & BREAKER_FIELD_STALLED_REQUESTS)
		p->stalled_requests = v->stalled_requests;
	if (f & BREAKER_FIELD_STALLED_SHARE)
		p->stalled_share = v->stalled_share;
	if (f & BREAKER_FIELD_RETRY_AFTER_MAX)
		p->retry_after_max_ms = v->retry_after_max_ms;
	if (f & BREAKER_FIELD_MAX_EJECTION_PERCENT)
		p->max_ejection_percent = v->max_ejection_percent;
	if (f & BREAKER_FIELD_DRAIN_LAST_SERVER)
		p->drain_last_server = v->drain_last_server;
	if (f & BREAKER_FIELD_RETRIED_TIMEOUTS)
		p->retried_timeouts = v->retried_timeouts;
	if (f & BREAKER_FIELD_GUARDED)
		p->guarded = v->guarded;
	if (f & BREAKER_FIELD_OBSERVE_ONLY)
		p->observe_only = v->observe_only;
	if (f & BREAKER_FIELD_PIN_MAXCONN)
		p->pin_maxconn = v->pin_maxconn;
	if (f & BREAKER_FIELD_RELEASE_STALLED)
		p->release_stalled = v->release_stalled;
}

bool breaker_policy_resolve(struct breaker_policy *out,
			    const struct breaker_policy_layer *const *layers, size_t nb_layers,
			    char *err, size_t err_size)
{
	unsigned configured = 0;

	breaker_policy_defaults(out);
	for (size_t i = 0; i < nb_layers; i++) {
		if (!layers[i])
			continue;
		apply_layer(out, layers[i]);
		configured |= layers[i]->fields;
	}
	bool failure_set_configured = configured & BREAKER_FIELD_FAILURE_SET;
	/* Defaults that follow what was set, so that no key given alone turns
	 * a file that loaded before into an error: a cooldown above the
	 * default max_cooldown means no backoff (the open time it always
	 * had), and a window below the default minimum_volume is judged once
	 * full. Given explicitly, both are checked as written. */
	if (!(configured & BREAKER_FIELD_MAX_COOLDOWN) && out->max_cooldown_ms < out->cooldown_ms)
		out->max_cooldown_ms = out->cooldown_ms;
	if (!(configured & BREAKER_FIELD_MINIMUM_VOLUME) && out->minimum_volume > out->window)
		out->minimum_volume = out->window;
	/* An unconfigured failure set follows the capacity and ignore sets
	 * wherever they were set, so "capacity = 429" alone turns 503 into
	 * a failure, as an operator moving 503 out would expect. */
	if (!failure_set_configured)
		derive_failure_set(out);
	return breaker_policy_validate(out, err, err_size);
}


/* ---- every level of one configuration ---- */

static bool names_eq(const char *stored, const char *name, size_t len)
{
	return strlen(stored) == len && memcmp(stored, name, len) == 0;
}

/* The override of (backend, server) among the first n, or -1. */
static int find_override(const struct breaker_policy_override *o, size_t n, const char *backend,
			 const char *server)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(o[i].backend, backend) == 0 && strcmp(o[i].server, server) == 0)
			return (int)i;
	return -1;
}

static bool name_fits(const char *name)
{
	return name_is_valid(name, strnlen(name, BREAKER_NAME_MAX + 1));
}

/* A later override of the same level adds its fields on top of the
 * earlier one's: what a repeated section means in a file. */
static void merge_layer(struct breaker_policy_layer *into, const struct breaker_policy_layer *from)
{
	apply_layer(&into->values, from);
	into->fields |= from->fields;
}

static void report(breaker_policy_error_fn on_error, void *ctx, int override, const char *msg)
{
	if (on_error)
		on_error(ctx, override, msg);
}

bool breaker_policies_build(struct breaker_policies *out,
			    const struct breaker_policy_layer *global,
			    const struct breaker_policy_override *overrides, size_t nb_overrides,
			    breaker_policy_error_fn on_error, void *ctx)
{
	char why[512], msg[800];
	bool ok = true;

	memset(out, 0, sizeof(*out));
	if (nb_overrides > BREAKER_TABLE_MAX_OVERRIDES) {
		snprintf(msg, sizeof(msg), "more than %d backend and server overrides",
			 BREAKER_TABLE_MAX_OVERRIDES);
		report(on_error, ctx, -1, msg);
		return false;
	}
	/* Repeated levels are merged first, so each level resolves once. */
	struct breaker_policy_override *unique = calloc(nb_overrides + 1, sizeof(*unique));
	int *origin = calloc(nb_overrides + 1, sizeof(*origin));
	struct breaker_policy_level *levels = calloc(nb_overrides + 1, sizeof(*levels));
	if (!unique || !origin || !levels) {
		report(on_error, ctx, -1, "out of memory resolving policies");
		free(unique), free(origin), free(levels);
		return false;
	}
	size_t nb_unique = 0;
	for (size_t i = 0; i < nb_overrides; i++) {
		const struct breaker_policy_override *o = &overrides[i];
		if (!name_fits(o->backend) || (o->server[0] && !name_fits(o->server))) {
			snprintf(msg, sizeof(msg), "override %zu: '%s/%s' is not a valid HAProxy name",
				 i, o->backend, o->server);
			report(on_error, ctx, (int)i, msg);
			ok = false;
			continue;
		}
		int seen = find_override(unique, nb_unique, o->backend, o->server);
		if (seen >= 0) {
			merge_layer(&unique[seen].layer, &o->layer);
			continue;
		}
		origin[nb_unique] = (int)i;
		unique[nb_unique++] = *o;
	}

	const struct breaker_policy_layer *layers[3] = {global, NULL, NULL};
	if (!breaker_policy_resolve(&levels[0].effective, layers, 1, why, sizeof(why))) {
		snprintf(msg, sizeof(msg), "global: %s", why);
		report(on_error, ctx, -1, msg);
		ok = false;
	}
	for (size_t i = 0; i < nb_unique; i++) {
		const struct breaker_policy_override *o = &unique[i];
		struct breaker_policy_level *level = &levels[i + 1];
		int backend = o->server[0] ? find_override(unique, nb_unique, o->backend, "") : -1;

		memcpy(level->backend, o->backend, sizeof(level->backend));
		memcpy(level->server, o->server, sizeof(level->server));
		layers[1] = o->server[0] ? (backend >= 0 ? &unique[backend].layer : NULL) : &o->layer;
		layers[2] = o->server[0] ? &o->layer : NULL;
		if (breaker_policy_resolve(&level->effective, layers, 3, why, sizeof(why)))
			continue;
		if (o->server[0])
			snprintf(msg, sizeof(msg), "server %s/%s: %s", o->backend, o->server, why);
		else
			snprintf(msg, sizeof(msg), "backend %s: %s", o->backend, why);
		report(on_error, ctx, origin[i], msg);
		ok = false;
	}
	free(unique);
	free(origin);
	if (!ok) {
		free(levels);
		return false;
	}
	out->levels = levels;
	out->nb_levels = (uint32_t)nb_unique + 1;
	out->any_unguarded = false;
	for (uint32_t i = 0; i < out->nb_levels; i++)
		out->any_unguarded |= !levels[i].effective.guarded;
	return true;
}

bool breaker_policies_default(struct breaker_policies *out)
{
	return breaker_policies_build(out, NULL, NULL, 0, NULL, NULL);
}

void breaker_policies_free(struct breaker_policies *p)
{
	free(p->levels);
	p->levels = NULL;
	p->nb_levels = 0;
	p->any_unguarded = false;
}

const struct breaker_policy *breaker_policies_for(const struct breaker_policies *p,
						  const char *backend, size_t backend_len,
						  const char *server, size_t server_len)
{
	const struct breaker_policy *found = &p->levels[0].effective;

	for (uint32_t i = 1; i < p->nb_levels; i++) {
		const struct breaker_policy_level *l = &p->levels[i];
		if (!names_eq(l->backend, backend, backend_len))
			continue;
		if (l->server[0] == '\0')
			found = &l->effective; /* the backend's; a server's may follow */
		else if (names_eq(l->server, server, server_len))
			return &l->effective; /* the most specific wins at once */
	}
	return found;
}

bool breaker_policies_guard(const struct breaker_policies *p, const char *backend,
			    size_t backend_len, const char *server, size_t server_len)
{
	return !p->any_unguarded ||
	       breaker_policies_for(p, backend, backend_len, server, server_len)->guarded;
}
