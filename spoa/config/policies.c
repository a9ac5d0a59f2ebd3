/*
 * policies.c - the configuration's policies against the breaker core:
 * checked and built by breaker_policies_build() (core/policy.c), the one
 * place layers are resolved, with each problem reported at its section.
 */
#include <stdlib.h>
#include <string.h>

#include "config/sources.h"
#include "util/errmsg.h"

/* The overrides as the core takes them; NULL when out of memory. */
static struct breaker_policy_override *core_overrides(const struct config *c)
{
	struct breaker_policy_override *list = calloc(c->nb_overrides + 1, sizeof(*list));
	if (!list)
		return NULL;
	for (unsigned i = 0; i < c->nb_overrides; i++) {
		snprintf(list[i].backend, sizeof(list[i].backend), "%s", c->overrides[i].backend);
		snprintf(list[i].server, sizeof(list[i].server), "%s", c->overrides[i].server);
		list[i].layer = c->overrides[i].layer;
	}
	return list;
}

struct reporter {
	const struct config *c;
	FILE *errors;
	int problems;
};

/* One level that does not resolve, at the line of its section and named
 * as the file names it ("[backend be]: ..."). */
static void report_level(void *ctx, int override, const char *message)
{
	struct reporter *r = ctx;
	char label[2 * NAME_MAX_LEN + 16];
	int line = r->c->global_line;

	if (override < 0) {
		snprintf(label, sizeof(label), "[breaker]");
	} else {
		const struct config_override *o = &r->c->overrides[override];
		line = o->line;
		if (o->server[0])
			snprintf(label, sizeof(label), "[server %s/%s]", o->backend, o->server);
		else
			snprintf(label, sizeof(label), "[backend %s]", o->backend);
	}
	/* The core prefixes its level ("backend be: "); the label says it. */
	const char *why = strstr(message, ": ");
	why = why ? why + 2 : message;
	if (r->c->path && line > 0)
		fprintf(r->errors, "%s:%d: %s: %s\n", r->c->path, line, label, why);
	else
		fprintf(r->errors, CONFIG_PROGRAM ": %s: %s\n", label, why);
	r->problems++;
}

int config_check_policies(const struct config *c, FILE *errors)
{
	struct reporter r = {.c = c, .errors = errors};
	struct breaker_policies built;
	struct breaker_policy_override *list = core_overrides(c);

	if (!list) {
		fprintf(errors, CONFIG_PROGRAM ": out of memory checking policies\n");
		return 1;
	}
	if (breaker_policies_build(&built, &c->global, list, c->nb_overrides, report_level, &r))
		breaker_policies_free(&built);
	else if (r.problems == 0)
		r.problems = 1;
	free(list);
	return r.problems;
}

/* Keeps the first problem for config_build_policies(). */
static void first_problem(void *ctx, int override, const char *message)
{
	char *err = ctx;
	(void)override;
	if (!err[0])
		snprintf(err, 512, "%s", message);
}

bool config_build_policies(const struct config *c, struct breaker_policies *out, char *err,
			   size_t err_size)
{
	char first[512] = "";
	struct breaker_policy_override *list = core_overrides(c);

	if (!list) {
		errmsg_set(err, err_size, "out of memory building policies");
		return false;
	}
	bool ok = breaker_policies_build(out, &c->global, list, c->nb_overrides, first_problem,
					 first);
	free(list);
	if (!ok)
		errmsg_set(err, err_size, "%s", first[0] ? first : "policies do not resolve");
	return ok;
}
