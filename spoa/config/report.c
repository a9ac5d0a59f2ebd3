/*
 * report.c - how the checks of a whole configuration (config.c,
 * exposure.c) say where a key was set (see report.h): the start of a
 * message, a key as the user wrote it, the line that set it.
 */
#include "config/report.h"

/* Starts a message at where a key was set: "PATH:LINE: " or "spoa-breaker: ". */
void config_report_at(FILE *errors, const struct config *c, int origin)
{
	if (origin > 0)
		fprintf(errors, "%s:%d: ", c->path, origin);
	else
		fprintf(errors, CONFIG_PROGRAM ": ");
}

/* A key as the user wrote it ("enforce = runtime-api", "--enforce
 * runtime-api", "runtime_api"). For the other side of a conflict
 * (culprit_origin: where the side reported was set; 0 for that side
 * itself) also where it was: "runtime_api at line 3" in the same file,
 * "runtime_api at FILE:3" seen from the command line. */
void config_spell(char *buf, size_t size, const struct config_key *k, const char *value,
		  int origin, int culprit_origin, const struct config *c)
{
	size_t n;
	if (origin == CONFIG_FROM_ARGS)
		n = (size_t)snprintf(buf, size, "--%s%s%s", k->option, value ? " " : "",
				     value ? value : "");
	else
		n = (size_t)snprintf(buf, size, "%s%s%s", k->name, value ? " = " : "",
				     value ? value : "");
	if (origin > 0 && culprit_origin > 0 && n < size)
		snprintf(buf + n, size - n, " at line %d", origin);
	else if (origin > 0 && culprit_origin != 0 && n < size)
		snprintf(buf + n, size - n, " at %s:%d", c->path, origin);
}

/* Where key was set, when the caller knows (origins may be NULL: a
 * reload checks values that no single file line set). */
int config_origin_of(const struct config_origins *origins, const struct config_key *key)
{
	return origins ? origins->line[config_key_index(key)] : 0;
}
