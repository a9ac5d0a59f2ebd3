/*
 * config.h - the agent's configuration file (INI) and its defaults.
 *
 *   [agent]                  listen (repeatable), max_frame_size,
 *                            max_connections, max_breakers, log_level, syslog,
 *                            admin (HOST:PORT of /metrics, /state, /healthz;
 *                            none to disable)
 *   [breaker]                the global breaker policy
 *   [backend NAME]           overrides for one backend
 *   [server BACKEND/SERVER]  overrides for one server
 *   [haproxy]                enforce (runtime-api|agent-check|none),
 *                            runtime_api (repeatable: one per HAProxy),
 *                            agent_check, poll_interval
 *
 * Policy keys: threshold, cooldown, half_open_probes,
 * capacity_statuses, failure_statuses, ignore_statuses,
 * half_open_backpressure (close|ignore), open_late_success (ignore|close).
 * A status set given at a level replaces the inherited one (never merged).
 * Durations take a unit (ms, s, m); a bare number is milliseconds, as in
 * HAProxy.
 */
#ifndef SPOA_CONFIG_H
#define SPOA_CONFIG_H

#include <stdio.h>

#include "spop/agent.h"
#include "core/breaker.h"
#include "link/enforce_plan.h"
#include "util/log.h"
#include "util/names.h"

#define CONFIG_LISTEN_MAX_LEN 128
#define CONFIG_DEFAULT_MAX_BREAKERS 10000
#define CONFIG_MAX_RUNTIME_APIS 8
#define CONFIG_DEFAULT_POLL_MS 500

struct config_override {
	char backend[NAME_MAX_LEN + 1];
	char server[NAME_MAX_LEN + 1]; /* empty for a backend-wide override */
	int line;                      /* of its section header, for messages */
	struct breaker_policy_layer layer;
};

struct config {
	char listen[AGENT_MAX_LISTENERS][CONFIG_LISTEN_MAX_LEN];
	unsigned nb_listen; /* 0: the default address */
	struct agent_settings agent;
	enum log_level log_level;
	bool use_syslog;
	uint32_t max_breakers;
	struct breaker_policy_layer global;
	/* How decisions reach HAProxy. enforce_set: given explicitly; when
	 * not, runtime-api if a socket is given, agent-check if a listener
	 * is, shadow (none) otherwise. */
	enum enforce_mode enforce;
	bool enforce_set;
	char runtime_api[CONFIG_MAX_RUNTIME_APIS][CONFIG_LISTEN_MAX_LEN];
	unsigned nb_runtime_api;
	char agent_check[CONFIG_LISTEN_MAX_LEN]; /* empty: none */
	uint64_t poll_ms;
	/* The admin HTTP listener; empty: none. admin_set: given explicitly
	 * (then failing to open it is fatal; the default only warns). */
	char admin[CONFIG_LISTEN_MAX_LEN];
	bool admin_set;
	struct config_override *overrides; /* owned: config_free() */
	unsigned nb_overrides;
	unsigned cap_overrides;
};

/* The embedded defaults: what the agent runs with when given no file. */
void config_defaults(struct config *c);
void config_free(struct config *c);

/*
 * Reads the INI file at path into c (on top of what c holds). Every problem
 * is written to `errors` as "PATH:LINE: what is wrong" -- all of them, not
 * just the first -- and counted. Returns the number of problems; 0 means c
 * is usable. Policies are checked as they would be resolved (global, then
 * backend, then server), so overlapping sets are reported at the section
 * that creates the overlap.
 */
int config_load(struct config *c, const char *path, FILE *errors);

/*
 * Settles the enforcement mode (see struct config) and checks that the
 * channels agree: runtime-api needs a socket; agent-check needs a listener;
 * runtime-api and an agent-check listener together are refused, because
 * an agent-check "ready" undoes a Runtime API drain within one
 * agent-inter. In agent-check mode a runtime_api socket is only read.
 * False with err set.
 */
bool config_finish_enforcement(struct config *c, char *err, size_t err_size);

/* Sets the admin listener from value: HOST:PORT, [IPV6]:PORT, or "none" or
 * "" to disable it. False with err set on anything else. */
bool config_set_admin(struct config *c, const char *value, char *err, size_t err_size);

/* Parses a duration ("250ms", "30s", "2m", "1500"): false on anything else. */
bool config_parse_duration_ms(const char *text, uint64_t *out_ms);

/*
 * Resolves c's policies (global, every backend and server override) into
 * *out, through breaker_policies_build(). False with the first problem in
 * err, which config_load() has already ruled out for a file it accepted.
 */
bool config_build_policies(const struct config *c, struct breaker_policies *out, char *err,
			   size_t err_size);

#endif /* SPOA_CONFIG_H */
