/*
 * main.c - spoa-breaker's entry point: read the configuration
 * (config/config.c), hand it to the daemon (daemon/daemon.c).
 */
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "daemon/ctl_client.h"
#include "daemon/daemon.h"
#include "daemon/live_check.h"

/* A reload reads the file and the options again, so that options keep
 * overriding the file. */
struct command_line {
	int argc;
	char **argv;
};

static int reload_config(struct config *c, FILE *errors, void *ctx)
{
	struct command_line *cl = ctx;
	int status = config_from_args(c, cl->argc, cl->argv, stdout, errors);
	if (status >= 0)
		config_free(c);
	return status;
}

int main(int argc, char **argv)
{
	static struct config config;
	static struct command_line cl;

	/* `spoa-breaker ctl ...`: a client of a running agent, nothing more. */
	if (argc > 1 && strcmp(argv[1], "ctl") == 0)
		return ctl_main(argc - 1, argv + 1);

	int status = config_from_args(&config, argc, argv, stdout, stderr);
	/* A valid configuration that names HAProxies: are they wired? */
	if (status == 0 && config.checked)
		status = live_check(&config, stdout);
	if (status >= 0) {
		config_free(&config);
		return status;
	}
	cl = (struct command_line){.argc = argc, .argv = argv};
	return daemon_run(&config, config.path, reload_config, &cl);
}
