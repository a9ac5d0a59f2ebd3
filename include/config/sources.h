/*
 * sources.h - where settings come from, inside spoa/config/: the INI file
 * (ini.c) and the command line (args.c, with --help from usage.c). Both
 * write through the key table's setter; config_from_args() (config.c)
 * puts them in order. The rest of the daemon calls config_from_args().
 */
#ifndef SPOA_CONFIG_SOURCES_H
#define SPOA_CONFIG_SOURCES_H

#include <stdio.h>

#include "config/keys.h"

/* Every message about the command line starts with this. */
#define CONFIG_PROGRAM "spoa-breaker"

/*
 * Reads the INI file at path into c, on top of what c holds. Every problem
 * is written to `errors` as "PATH:LINE: what is wrong" -- all of them, not
 * just the first -- and counted; warnings ("PATH:LINE: warning: ...") are
 * written, not counted. Records in origins the line of each key of the
 * singleton sections, and in c->global_line the [breaker] header's.
 * Returns the number of problems; 0 means every line was taken.
 */
int config_ini_load(struct config *c, const char *path, struct config_origins *origins,
		    FILE *errors);

/* What the first look at the command line found. path points into argv. */
struct config_args {
	const char *path; /* -f FILE, or NULL */
	bool check;       /* --check */
	bool help;        /* -h: wins over everything but an earlier -V */
	bool version;     /* -V */
};

/*
 * First pass: the options that decide how the rest is read (-f, --check,
 * -h, -V), and the shape of the command line: unknown options, missing
 * values and stray arguments are written to errors. Returns the number of
 * such problems (the command line is bad: exit 2).
 */
int config_args_scan(int argc, char **argv, struct config_args *a, FILE *errors);

/*
 * Second pass, after the file: every key's option, through the key
 * table's setter, overriding the file (a repeatable option replaces the
 * file's list). Writes "spoa-breaker: --OPTION 'VALUE': expected ..." to
 * errors for each bad value, marks in origins what it set, and returns the
 * number of bad values.
 */
int config_args_apply(struct config *c, int argc, char **argv, struct config_origins *origins,
		      FILE *errors);

/* --help, generated from the key table: grouped by section, with defaults. */
void config_usage(FILE *out);

#endif /* SPOA_CONFIG_SOURCES_H */
