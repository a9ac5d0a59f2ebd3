/*
 * policies.c - the configuration's policies, resolved once by
 * breaker_policies_build() (core/policy.c), the one place layers are
 * resolved, with each problem reported at its section, and status sets
 * that overlap at the key that made them.
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

/* "[breaker]", "[backend be]" or "[server be/w1]", and the line of its
 * header. level: an override's index, or -1 for the global layer. */
static int level_label(const struct config *c, int level, char *label, size_t size)
{
	if (level < 0) {
		snprintf(label, size, "[breaker]");
		return c->global_line;
	}
	const struct config_override *o = &c->overrides[level];
	if (o->server[0])
		snprintf(label, size, "[server %s/%s]", o->backend, o->server);
	else
		snprintf(label, size, "[backend %s]", o->backend);
	return o->line;
}

static void report_line(struct reporter *r, int line)
{
	if (r->c->path && line > 0)
		fprintf(r->errors, "%s:%d: ", r->c->path, line);
	else
		fprintf(r->errors, CONFIG_PROGRAM ": ");
}

/* ---- status sets that overlap: once, at the key that made them ---- */

/* The three sets, by the key that sets each; pairs in the core's order. */
static const char *const set_keys[] = {"capacity_statuses", "failure_statuses", "ignore_statuses"};
static const int set_pairs[][2] = {{0, 1}, {2, 0}, {2, 1}};

/* Where a level's set comes from: the most specific layer of its chain
 * that sets it. */
struct set_source {
	const struct config_key *key;
	int level; /* the layer's: -1 global, else an override; unset when default */
	int rank;  /* its place in the chain, the more specific the higher; -1: default */
	int line;  /* of the key in the file; CONFIG_FROM_ARGS: an option */
	struct status_set set;
	bool derived; /* the failure set nobody gave: it overlaps nothing */
};

static const struct breaker_policy_layer *layer_of(const struct config *c, int level)
{
	return level < 0 ? &c->global : &c->overrides[level].layer;
}

static int key_line(const struct config *c, int level, const struct config_key *k)
{
	int bit = __builtin_ctz(k->field);
	return level < 0 ? c->global_field_lines[bit] : c->overrides[level].field_lines[bit];
}

static void find_source(const struct config *c, const int *chain, int nb_chain, int which,
			struct set_source *out)
{
	struct breaker_policy defaults;
	breaker_policy_defaults(&defaults);
	*out = (struct set_source){.key = config_key_find(set_keys[which]), .rank = -1};
	for (int i = nb_chain - 1; i >= 0; i--) {
		const struct breaker_policy_layer *l = layer_of(c, chain[i]);
		if (!(l->fields & out->key->field))
			continue;
		const struct status_set *sets[] = {&l->values.capacity, &l->values.failure,
						   &l->values.ignore};
		out->level = chain[i];
		out->rank = i;
		out->line = key_line(c, chain[i], out->key);
		out->set = *sets[which];
		return;
	}
	const struct status_set *sets[] = {&defaults.capacity, &defaults.failure, &defaults.ignore};
	out->set = *sets[which];
	out->derived = which == 1;
}

/* "failure_statuses = 500-599", "--failure-statuses 500-599", with where
 * it was when it is not where the message is said. */
static void spell_source(const struct config *c, const struct set_source *s,
			 const struct set_source *at, char *buf, size_t size)
{
	char value[STATUS_SET_FORMAT_MAX], label[2 * NAME_MAX_LEN + 16];
	status_set_format(&s->set, value, sizeof(value));
	if (s->rank < 0) {
		snprintf(buf, size, "the default %s %s", s->key->name, value);
		return;
	}
	if (s->line == CONFIG_FROM_ARGS) {
		snprintf(buf, size, "--%s %s", s->key->option, value);
		return;
	}
	size_t n = (size_t)snprintf(buf, size, "%s = %s", s->key->name, value);
	if (s == at || n >= size)
		return;
	level_label(c, s->level, label, sizeof(label));
	if (s->level != at->level)
		n += (size_t)snprintf(buf + n, size - n, " of %s", label);
	if (n < size && s->line > 0)
		snprintf(buf + n, size - n, " at line %d", s->line);
}

/*
 * The overlaps of level's effective sets that level itself made: of the
 * two sets, the more specific one (the later line when both are of one
 * section) is level's. An overlap a level inherits has the same sets, so
 * the level that made it fails too, and says it there: once, whatever
 * inherits it.
 */
static void report_overlaps(struct reporter *r, int level)
{
	const struct config *c = r->c;
	int chain[3], nb_chain = 0;

	chain[nb_chain++] = -1;
	if (level >= 0 && c->overrides[level].server[0]) {
		for (unsigned i = 0; i < c->nb_overrides; i++)
			if (!c->overrides[i].server[0] &&
			    strcmp(c->overrides[i].backend, c->overrides[level].backend) == 0)
				chain[nb_chain++] = (int)i;
	}
	if (level >= 0)
		chain[nb_chain++] = level;

	struct set_source sources[3];
	for (int i = 0; i < 3; i++)
		find_source(c, chain, nb_chain, i, &sources[i]);
	for (size_t p = 0; p < sizeof(set_pairs) / sizeof(set_pairs[0]); p++) {
		const struct set_source *a = &sources[set_pairs[p][0]],
					*b = &sources[set_pairs[p][1]];
		struct status_set both;
		if (a->derived || b->derived)
			continue;
		status_set_intersect(&both, &a->set, &b->set);
		if (status_set_is_empty(&both))
			continue;
		/* An option is read after the file: it is the later one. */
		bool a_later = a->rank != b->rank ? a->rank > b->rank
			       : b->line == CONFIG_FROM_ARGS
				   ? false
				   : a->line == CONFIG_FROM_ARGS || a->line > b->line;
		const struct set_source *maker = a_later ? a : b, *other = a_later ? b : a;
		if (maker->rank < 0 || maker->level != level)
			continue;
		char what[STATUS_SET_FORMAT_MAX + 64], against[STATUS_SET_FORMAT_MAX + 128];
		char list[STATUS_SET_FORMAT_MAX];
		char label[2 * NAME_MAX_LEN + 16];
		spell_source(c, maker, maker, what, sizeof(what));
		spell_source(c, other, maker, against, sizeof(against));
		status_set_format(&both, list, sizeof(list));
		level_label(c, level, label, sizeof(label));
		report_line(r, maker->line);
		if (maker->line == CONFIG_FROM_ARGS)
			fprintf(r->errors,
				"%s overlaps %s on %s (a status belongs to one set only)\n", what,
				against, list);
		else
			fprintf(r->errors,
				"%s: %s overlaps %s on %s (a status belongs to one set only)\n",
				label, what, against, list);
		r->problems++;
	}
}

/* One level that does not resolve, at the line of its section and named
 * as the file names it ("[backend be]: ..."). */
static void report_level(void *ctx, int override, const char *message)
{
	struct reporter *r = ctx;
	char label[2 * NAME_MAX_LEN + 16];
	int line = level_label(r->c, override, label, sizeof(label));

	/* The core's wording (core/policy.c): an overlap is said below, by
	 * the level that made it. */
	if (!strstr(message, " sets overlap on ")) {
		/* The core prefixes its level ("backend be: "); the label says it. */
		const char *why = strstr(message, ": ");
		why = why ? why + 2 : message;
		report_line(r, line);
		fprintf(r->errors, "%s: %s\n", label, why);
		r->problems++;
	}
	/* Every level that fails is asked for the overlaps it made: the
	 * core's message says only its first problem, and the sets come last. */
	report_overlaps(r, override);
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
