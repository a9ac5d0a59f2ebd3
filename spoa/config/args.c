/*
 * args.c - the command line, read through the key table (see sources.h).
 *
 * getopt's table is built from the key table: every key with an option
 * gets one, so a new key is on the command line without touching this
 * file. Read in two passes, because the file named by -f sits between the
 * defaults and the options that override it.
 */
#include <getopt.h>
#include <string.h>

#include "config/sources.h"

/* getopt values of the options that are no key; a key's own is its short
 * letter, or OPT_KEY + its index in the table. */
enum {
	OPT_CHECK = 256,
	OPT_KEY = 512,
};

struct option_table {
	struct option longopts[CONFIG_NB_KEYS + 5];
	char shortopts[3 * CONFIG_NB_KEYS + 8];
};

/* The options that are no key: how the configuration is read. */
static const struct option command_options[] = {
	{"config", required_argument, NULL, 'f'},
	{"check", no_argument, NULL, OPT_CHECK},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
};

static void build_options(struct option_table *t)
{
	size_t n = 0, s = 0;
	/* ':' first: a missing value is told apart from an unknown option. */
	memcpy(t->shortopts, ":f:hV", 5);
	s = 5;
	for (size_t i = 0; i < sizeof(command_options) / sizeof(command_options[0]); i++)
		t->longopts[n++] = command_options[i];
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++) {
		const struct config_key *k = &config_keys[i];
		if (!k->option)
			continue;
		bool flag = k->type == CONFIG_BOOL;
		int val = k->short_option ? k->short_option : OPT_KEY + (int)i;
		t->longopts[n++] = (struct option){k->option, flag ? no_argument : required_argument,
						   NULL, val};
		if (k->short_option) {
			t->shortopts[s++] = k->short_option;
			if (!flag)
				t->shortopts[s++] = ':';
		}
	}
	t->longopts[n] = (struct option){NULL, 0, NULL, 0};
	t->shortopts[s] = '\0';
}

static const struct config_key *key_of_option(int opt)
{
	if (opt >= OPT_KEY && opt < OPT_KEY + CONFIG_NB_KEYS)
		return &config_keys[opt - OPT_KEY];
	for (unsigned i = 0; i < CONFIG_NB_KEYS; i++)
		if (config_keys[i].short_option && config_keys[i].short_option == opt)
			return &config_keys[i];
	return NULL;
}

/* GNU getopt keeps state between calls; optind = 0 starts it over
 * entirely (a reload reads the same argv again). Errors are ours to
 * word and to write where the caller wants them. */
static void getopt_restart(void)
{
	optind = 0;
	opterr = 0;
}

/* The option getopt just refused, as the user typed it: a long one is
 * its whole argument, a short one its letter (it may sit in a bundle). */
static const char *offending(int argc, char **argv, bool *is_long, char *buf, size_t size)
{
	const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	*is_long = strncmp(arg, "--", 2) == 0;
	if (*is_long || optopt <= 0 || optopt >= 256)
		return arg;
	snprintf(buf, size, "-%c", optopt);
	return buf;
}

int config_args_scan(int argc, char **argv, struct config_args *a, FILE *errors)
{
	struct option_table t;
	char buf[8];
	const char *what;
	bool is_long;
	int opt, problems = 0;

	build_options(&t);
	getopt_restart();
	while ((opt = getopt_long(argc, argv, t.shortopts, t.longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			a->path = optarg;
			break;
		case OPT_CHECK:
			a->check = true;
			break;
		case 'h':
			a->help = !a->version;
			break;
		case 'V':
			a->version = !a->help;
			break;
		case ':':
			what = offending(argc, argv, &is_long, buf, sizeof(buf));
			fprintf(errors, CONFIG_PROGRAM ": option '%s' needs a value\n", what);
			problems++;
			break;
		case '?':
			what = offending(argc, argv, &is_long, buf, sizeof(buf));
			/* getopt names a known option given "=value" in optopt. */
			if (is_long && optopt != 0)
				fprintf(errors, CONFIG_PROGRAM ": option '%.*s' takes no value\n",
					(int)strcspn(what, "="), what);
			else
				fprintf(errors, CONFIG_PROGRAM ": unknown option '%s'\n", what);
			problems++;
			break;
		default:
			break; /* a key: the second pass */
		}
	}
	for (int i = optind; i < argc; i++) {
		fprintf(errors, CONFIG_PROGRAM ": unexpected argument '%s'\n", argv[i]);
		problems++;
	}
	return problems;
}

int config_args_apply(struct config *c, int argc, char **argv, struct config_origins *origins,
		      FILE *errors)
{
	struct option_table t;
	bool replaced[CONFIG_NB_KEYS] = {false};
	int opt, problems = 0;

	build_options(&t);
	getopt_restart();
	while ((opt = getopt_long(argc, argv, t.shortopts, t.longopts, NULL)) != -1) {
		const struct config_key *k = key_of_option(opt);
		if (!k)
			continue; /* -f, --check, or a problem the first pass told */
		unsigned i = config_key_index(k);
		const char *value = k->type == CONFIG_BOOL ? "true" : optarg;
		if ((k->flags & CONFIG_KEY_REPEATABLE) && !replaced[i]) {
			/* The command line's list replaces the file's. */
			config_key_clear(k, c);
			replaced[i] = true;
		}
		char err[512];
		struct breaker_policy_layer *layer =
			k->place == CONFIG_IN_POLICY ? &c->global : NULL;
		if (!config_key_set(k, c, layer, value, err, sizeof(err))) {
			fprintf(errors, CONFIG_PROGRAM ": --%s '%s': %s\n", k->option, value, err);
			problems++;
		}
		origins->line[i] = CONFIG_FROM_ARGS;
	}
	return problems;
}
