/*
 * policies.c - the configuration's policies, resolved once by
 * breaker_policies_build() (core/policy.c), the one place layers are
 * resolved, with each problem reported at its section.
 */
#include <stdlib.h>
#include <string.h>

#include "config/sources.h"

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

int config_resolve_policies(struct config *c, FILE *errors)
{
	struct reporter r = {.c = c, .errors = errors};
	struct breaker_policy_override *list = core_overrides(c);

	breaker_policies_free(&c->policies);
	if (!list) {
		fprintf(errors, CONFIG_PROGRAM ": out of memory resolving policies\n");
		return 1;
	}
	if (!breaker_policies_build(&c->policies, &c->global, list, c->nb_overrides, report_level,
				    &r) &&
	    r.problems == 0)
		r.problems = 1;
	free(list);
	return r.problems;
}
