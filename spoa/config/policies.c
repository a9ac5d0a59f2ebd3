/*
 * policies.c - the configuration's policies against the breaker core:
 * checked the way the table will resolve them, and installed in it.
 */
#include <string.h>

#include "config/sources.h"

/* Reports one level that does not resolve, at its section's line. */
static int check_level(const struct config *c, int line, const char *label,
		       const struct breaker_policy_layer *const *layers, size_t nb_layers,
		       FILE *errors)
{
	struct breaker_policy effective;
	char err[512];
	if (breaker_policy_resolve(&effective, layers, nb_layers, err, sizeof(err)))
		return 0;
	if (c->path && line > 0)
		fprintf(errors, "%s:%d: [%s]: %s\n", c->path, line, label, err);
	else
		fprintf(errors, CONFIG_PROGRAM ": [%s]: %s\n", label, err);
	return 1;
}

int config_check_policies(const struct config *c, FILE *errors)
{
	const struct breaker_policy_layer *layers[3] = {&c->global, NULL, NULL};
	char label[2 * NAME_MAX_LEN + 16];
	int problems = check_level(c, c->global_line, "breaker", layers, 1, errors);

	for (unsigned i = 0; i < c->nb_overrides; i++) {
		const struct config_override *o = &c->overrides[i];
		layers[1] = NULL;
		if (o->server[0]) {
			/* A server inherits its backend's override, if any. */
			for (unsigned j = 0; j < c->nb_overrides; j++)
				if (!c->overrides[j].server[0] &&
				    strcmp(c->overrides[j].backend, o->backend) == 0)
					layers[1] = &c->overrides[j].layer;
			snprintf(label, sizeof(label), "server %s/%s", o->backend, o->server);
		} else {
			layers[1] = &o->layer;
			snprintf(label, sizeof(label), "backend %s", o->backend);
		}
		layers[2] = o->server[0] ? &o->layer : NULL;
		problems += check_level(c, o->line, label, layers, 3, errors);
	}
	return problems;
}

bool config_apply_policies(const struct config *c, struct breaker_table *t, char *err,
			   size_t err_size)
{
	breaker_table_set_global_policy(t, &c->global);
	for (unsigned i = 0; i < c->nb_overrides; i++) {
		const struct config_override *o = &c->overrides[i];
		bool ok = o->server[0]
				  ? breaker_table_set_server_policy(t, o->backend, o->server, &o->layer,
								    err, err_size)
				  : breaker_table_set_backend_policy(t, o->backend, &o->layer, err,
								     err_size);
		if (!ok)
			return false;
	}
	return breaker_table_resolve_policies(t, err, err_size);
}
