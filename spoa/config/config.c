/*
 * config.c - the configuration as a whole: its defaults, the order its
 * sources are read in (config_from_args), and the checks no single key
 * can make (the enforcement channels; the policies are policies.c's).
 */
#include <stdlib.h>
#include <string.h>

#include "admin/admin_http.h"
#include "config/sources.h"

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	agent_settings_default(&c->agent);
	c->log_level = LOG_LEVEL_NOTICE;
	c->max_breakers = CONFIG_DEFAULT_MAX_BREAKERS;
	c->poll_ms = CONFIG_DEFAULT_POLL_MS;
	snprintf(c->admin, sizeof(c->admin), "%s", ADMIN_HTTP_DEFAULT_ADDR);
}

void config_free(struct config *c)
{
	free(c->overrides);
	c->overrides = NULL;
	c->nb_overrides = c->cap_overrides = 0;
}

/* ---- enforcement: runtime_api, agent_check and enforce together ---- */

/*
 * Settles the enforcement mode (see struct config) and checks that the
 * channels agree: runtime-api needs a socket; agent-check needs a listener;
 * runtime-api and an agent-check listener together are refused, because
 * an agent-check "ready" undoes a Runtime API drain within one
 * agent-inter. In agent-check mode a runtime_api socket is only read.
 * Returns the number of problems.
 */
static int check_enforcement(struct config *c, FILE *errors)
{
	const char *problem = NULL;

	if (!c->enforce_set)
		c->enforce = c->nb_runtime_api ? ENFORCE_RUNTIME_API
			     : c->agent_check[0] ? ENFORCE_AGENT_CHECK
						 : ENFORCE_NONE;
	if (c->enforce == ENFORCE_RUNTIME_API && c->nb_runtime_api == 0)
		problem = "enforce = runtime-api needs a runtime_api socket";
	else if (c->enforce == ENFORCE_RUNTIME_API && c->agent_check[0])
		problem = "runtime-api enforcement and an agent_check listener cannot be combined: "
			  "an agent-check \"ready\" undoes a Runtime API drain";
	else if (c->enforce == ENFORCE_AGENT_CHECK && !c->agent_check[0])
		problem = "enforce = agent-check needs an agent_check listen address";
	if (!problem)
		return 0;
	fprintf(errors, CONFIG_PROGRAM ": [haproxy]: %s\n", problem);
	return 1;
}

/* ---- the order of the sources ---- */

int config_from_args(struct config *c, int argc, char **argv, FILE *out, FILE *errors)
{
	struct config_args args = {0};
	struct config_origins origins = {{0}};

	config_defaults(c);
	int bad_command_line = config_args_scan(argc, argv, &args, errors);
	if (args.help) {
		config_usage(out);
		return 0;
	}
	if (args.version) {
		fprintf(out, CONFIG_PROGRAM " %s\n", SPOA_VERSION);
		return 0;
	}
	if (bad_command_line) {
		fprintf(errors, CONFIG_PROGRAM ": see " CONFIG_PROGRAM " --help\n");
		return 2;
	}

	c->path = args.path;
	int problems = c->path ? config_ini_load(c, c->path, &origins, errors) : 0;
	if (config_args_apply(c, argc, argv, &origins, errors) > 0)
		return 2;
	/* With a policy option, the global policy is no longer the file's
	 * alone: a problem with it is not the [breaker] line's to carry. */
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++)
		if (config_keys[i].place == CONFIG_IN_POLICY &&
		    origins.line[i] == CONFIG_FROM_ARGS)
			c->global_line = 0;
	if (c->nb_listen == 0)
		snprintf(c->listen[c->nb_listen++], CONFIG_LISTEN_MAX_LEN, "%s",
			 AGENT_DEFAULT_LISTEN);

	/* Even after other problems: what did parse may still conflict. */
	problems += check_enforcement(c, errors);
	problems += config_check_policies(c, errors);
	if (problems > 0) {
		if (c->path)
			fprintf(errors, CONFIG_PROGRAM ": %s: configuration refused\n", c->path);
		else
			fprintf(errors, CONFIG_PROGRAM ": configuration refused\n");
		return 1;
	}
	if (args.check) {
		fprintf(out, "%s: configuration valid\n", c->path ? c->path : "(defaults)");
		return 0;
	}
	return -1;
}
