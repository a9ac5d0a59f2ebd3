/*
 * config_run.h - running config_from_args() as the daemon calls it, for
 * the unit tests of the configuration: files written for -f under a
 * directory of the test's (setup/teardown), what a run printed on its
 * output and its errors (r), and RUN/STATUS over NULL-terminated
 * arguments. Included once per test program, after cmocka.h: its
 * definitions are static.
 */
#ifndef TEST_CONFIG_RUN_H
#define TEST_CONFIG_RUN_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"

/* ---- running config_from_args ---- */

static char dir[] = "/tmp/test_config.XXXXXX";

/* What one run printed: --help/--check text, and problems. */
static struct {
	int status;
	char *out;
	char *errors;
} r;

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes a file for -f and returns its path (valid for the next 8 files). */
static const char *file(const char *text)
{
	static char paths[8][512];
	static unsigned n;
	char *path = paths[n % 8];
	snprintf(path, sizeof(paths[0]), "%s/agent%u.ini", dir, n);
	n++;
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Runs config_from_args on the NULL-terminated arguments into c. */
static int run_va(struct config *c, const char *first, va_list ap)
{
	char *argv[32] = {"spoa-breaker"};
	int argc = 1;
	for (const char *a = first; a; a = va_arg(ap, const char *)) {
		assert_true(argc < 31);
		argv[argc++] = (char *)a;
	}
	argv[argc] = NULL;

	free(r.out);
	free(r.errors);
	size_t out_len, errors_len;
	FILE *out = open_memstream(&r.out, &out_len);
	FILE *errors = open_memstream(&r.errors, &errors_len);
	assert_non_null(out);
	assert_non_null(errors);
	r.status = config_from_args(c, argc, argv, out, errors);
	fclose(out);
	fclose(errors);
	return r.status;
}

static int run_into(struct config *c, const char *first, ...)
{
	va_list ap;
	va_start(ap, first);
	int status = run_va(c, first, ap);
	va_end(ap);
	return status;
}

/* The status of a run whose configuration is of no interest. */
static int status_of(const char *first, ...)
{
	struct config scratch;
	va_list ap;
	va_start(ap, first);
	int status = run_va(&scratch, first, ap);
	va_end(ap);
	config_free(&scratch);
	return status;
}

#define RUN(c, ...) run_into((c), __VA_ARGS__, (const char *)NULL)
#define STATUS(...) status_of(__VA_ARGS__, (const char *)NULL)

/* The errors hold this text (a whole line, or the part of one). */
static void assert_errors_have(const char *text)
{
	if (!strstr(r.errors, text))
		fail_msg("errors lack \"%s\"; they are:\n%s", text, r.errors);
}

#endif /* TEST_CONFIG_RUN_H */
