/*
 * main.c - spoa-breaker's entry point: read the configuration, hand it to
 * the daemon (daemon/daemon.c).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_http.h"
#include "config/config.h"
#include "daemon/daemon.h"
#include "util/log.h"
#include "util/sockaddr.h"

struct options {
	const char *config_path;
	bool check_only;
	struct config config;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: spoa-breaker [OPTIONS]\n"
		"A backpressure-aware circuit breaker for HAProxy, as an SPOE agent.\n"
		"\n"
		"  -f, --config FILE          read settings from an INI file (see README);\n"
		"                             the options below override it\n"
		"      --check                check the configuration, report every problem as\n"
		"                             FILE:LINE: ..., and exit (0 valid, 1 not)\n"
		"  -l, --listen ADDR          listen on ADDR: HOST:PORT, [IPV6]:PORT or unix:PATH\n"
		"                             (repeatable; default " AGENT_DEFAULT_LISTEN ")\n"
		"      --max-frame-size N     largest SPOP frame accepted and offered, 256..1048576\n"
		"                             (default %u)\n"
		"      --max-connections N    SPOP connections served at once (default %u)\n"
		"      --max-breakers N       servers tracked at once (default %u)\n"
		"      --threshold N          consecutive failures that open a breaker (default %u)\n"
		"      --cooldown DURATION    how long a breaker stays open, e.g. 30s (default 30s)\n"
		"      --capacity-statuses L  statuses meaning \"busy\", e.g. 429,503 (the default)\n"
		"      --runtime-api ADDR     HAProxy's stats socket (level admin): unix:PATH or\n"
		"                             HOST:PORT; repeatable, one per HAProxy\n"
		"      --agent-check ADDR     answer HAProxy's agent-check on ADDR instead\n"
		"      --enforce MODE         runtime-api, agent-check or none (shadow: report,\n"
		"                             change nothing); default: from the above\n"
		"      --admin ADDR           serve /metrics, /state and /healthz on HOST:PORT,\n"
		"                             or none (default " ADMIN_HTTP_DEFAULT_ADDR ")\n"
		"  -L, --log-level LEVEL      error, warning, notice, info or debug (default notice)\n"
		"      --syslog               log to syslog (facility daemon) instead of stderr\n"
		"  -h, --help                 show this help and exit\n"
		"  -V, --version              show the version and exit\n"
		"\n"
		"Signals: TERM or INT stop gracefully (AGENT-DISCONNECT to HAProxy, exit 0);\n"
		"HUP reloads the configuration file (breakers keep their state).\n",
		AGENT_DEFAULT_MAX_FRAME_SIZE, AGENT_DEFAULT_MAX_CONNECTIONS,
		CONFIG_DEFAULT_MAX_BREAKERS, BREAKER_DEFAULT_THRESHOLD);
}

static bool parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *s == '\0' || *s == '-' || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

enum {
	OPT_MAX_FRAME = 256,
	OPT_MAX_CONN,
	OPT_MAX_BREAKERS,
	OPT_THRESHOLD,
	OPT_COOLDOWN,
	OPT_CAPACITY,
	OPT_SYSLOG,
	OPT_CHECK,
	OPT_ENFORCE,
	OPT_RUNTIME_API,
	OPT_AGENT_CHECK,
	OPT_ADMIN,
};

static const struct option longopts[] = {
	{"config", required_argument, NULL, 'f'},
	{"check", no_argument, NULL, OPT_CHECK},
	{"listen", required_argument, NULL, 'l'},
	{"max-frame-size", required_argument, NULL, OPT_MAX_FRAME},
	{"max-connections", required_argument, NULL, OPT_MAX_CONN},
	{"max-breakers", required_argument, NULL, OPT_MAX_BREAKERS},
	{"threshold", required_argument, NULL, OPT_THRESHOLD},
	{"cooldown", required_argument, NULL, OPT_COOLDOWN},
	{"capacity-statuses", required_argument, NULL, OPT_CAPACITY},
	{"enforce", required_argument, NULL, OPT_ENFORCE},
	{"runtime-api", required_argument, NULL, OPT_RUNTIME_API},
	{"agent-check", required_argument, NULL, OPT_AGENT_CHECK},
	{"admin", required_argument, NULL, OPT_ADMIN},
	{"log-level", required_argument, NULL, 'L'},
	{"syslog", no_argument, NULL, OPT_SYSLOG},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};
static const char shortopts[] = "f:l:L:hV";

static int bad_option(const char *option, const char *value, const char *expected)
{
	fprintf(stderr, "spoa-breaker: %s '%s': expected %s\n", option, value, expected);
	return 2;
}

/* First pass: what decides how the rest is read (help, version, the file,
 * check mode). Returns -1 to go on, or the exit status. */
static int parse_early_options(int argc, char **argv, struct options *o)
{
	int opt;
	optind = 0; /* GNU getopt: start over (a reload parses again) */
	opterr = 0; /* the second pass reports bad options */
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			o->config_path = optarg;
			break;
		case OPT_CHECK:
			o->check_only = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("spoa-breaker %s\n", SPOA_VERSION);
			return 0;
		default:
			break;
		}
	}
	return -1;
}

/* Second pass, after the file: command-line settings win over it. */
static int parse_options(int argc, char **argv, struct options *o)
{
	struct config *c = &o->config;
	struct breaker_policy *g = &c->global.values;
	char err[256];
	unsigned long v;
	uint64_t ms;
	bool listen_from_command_line = false, runtime_api_from_command_line = false;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	int opt;

	optind = 0; /* GNU getopt: start over */
	opterr = 1;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
		case OPT_CHECK:
			break;
		case 'l':
			if (!listen_from_command_line) {
				c->nb_listen = 0; /* --listen replaces the file's addresses */
				listen_from_command_line = true;
			}
			if (c->nb_listen == AGENT_MAX_LISTENERS)
				return bad_option("--listen", optarg, "at most 8 addresses");
			snprintf(c->listen[c->nb_listen++], CONFIG_LISTEN_MAX_LEN, "%s", optarg);
			break;
		case OPT_MAX_FRAME:
			if (!parse_uint(optarg, SPOP_MIN_FRAME_SIZE, 1048576, &v))
				return bad_option("--max-frame-size", optarg, "256..1048576");
			c->agent.max_frame_size = (uint32_t)v;
			break;
		case OPT_MAX_CONN:
			if (!parse_uint(optarg, 1, 1000000, &v))
				return bad_option("--max-connections", optarg, "1..1000000");
			c->agent.max_connections = (unsigned)v;
			break;
		case OPT_MAX_BREAKERS:
			if (!parse_uint(optarg, 1, BREAKER_TABLE_MAX_ENTRIES, &v))
				return bad_option("--max-breakers", optarg, "1..1048576");
			c->max_breakers = (uint32_t)v;
			break;
		case OPT_THRESHOLD:
			if (!parse_uint(optarg, 1, 1000000, &v))
				return bad_option("--threshold", optarg, "1..1000000");
			g->threshold = (uint32_t)v;
			c->global.fields |= BREAKER_FIELD_THRESHOLD;
			break;
		case OPT_COOLDOWN:
			if (!config_parse_duration_ms(optarg, &ms) || ms == 0)
				return bad_option("--cooldown", optarg, "a duration above 0 such as 30s or 500ms");
			g->cooldown_ms = ms;
			c->global.fields |= BREAKER_FIELD_COOLDOWN;
			break;
		case OPT_CAPACITY:
			if (!status_set_parse(&g->capacity, optarg, err, sizeof(err)))
				return bad_option("--capacity-statuses", optarg, err);
			c->global.fields |= BREAKER_FIELD_CAPACITY_SET;
			break;
		case OPT_ENFORCE:
			if (!enforce_mode_parse(optarg, &c->enforce))
				return bad_option("--enforce", optarg, "runtime-api, agent-check or none");
			c->enforce_set = true;
			break;
		case OPT_RUNTIME_API:
			if (!sockaddr_parse(optarg, "--runtime-api", &addr, &addr_len, err, sizeof(err)))
				return bad_option("--runtime-api", optarg, "unix:PATH, HOST:PORT or [IPV6]:PORT");
			if (!runtime_api_from_command_line) {
				c->nb_runtime_api = 0; /* replaces the file's sockets */
				runtime_api_from_command_line = true;
			}
			if (c->nb_runtime_api == CONFIG_MAX_RUNTIME_APIS)
				return bad_option("--runtime-api", optarg, "at most 8 sockets");
			snprintf(c->runtime_api[c->nb_runtime_api++], CONFIG_LISTEN_MAX_LEN, "%s", optarg);
			break;
		case OPT_AGENT_CHECK:
			if (!sockaddr_parse(optarg, "--agent-check", &addr, &addr_len, err, sizeof(err)))
				return bad_option("--agent-check", optarg, "HOST:PORT, [IPV6]:PORT or unix:PATH");
			snprintf(c->agent_check, sizeof(c->agent_check), "%s", optarg);
			break;
		case OPT_ADMIN:
			if (!config_set_admin(c, optarg, err, sizeof(err)))
				return bad_option("--admin", optarg, "HOST:PORT, [IPV6]:PORT or none");
			break;
		case 'L':
			if (!log_level_parse(optarg, &c->log_level))
				return bad_option("--log-level", optarg, "error, warning, notice, info or debug");
			break;
		case OPT_SYSLOG:
			c->use_syslog = true;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "spoa-breaker: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (c->nb_listen == 0)
		snprintf(c->listen[c->nb_listen++], CONFIG_LISTEN_MAX_LEN, "%s", AGENT_DEFAULT_LISTEN);
	if (!config_finish_enforcement(c, err, sizeof(err))) {
		fprintf(stderr, "spoa-breaker: %s\n", err);
		return 1;
	}
	return -1;
}

/* Loads the file (if any) and the options. Returns -1 to run, or the exit
 * status (check mode, help, errors). */
static int configure(int argc, char **argv, struct options *o, FILE *errors)
{
	config_defaults(&o->config);
	int status = parse_early_options(argc, argv, o);
	if (status >= 0)
		return status;
	if (o->config_path && config_load(&o->config, o->config_path, errors) > 0) {
		fprintf(errors, "spoa-breaker: %s: configuration refused\n", o->config_path);
		return 1;
	}
	status = parse_options(argc, argv, o);
	if (status >= 0)
		return status;

	/* The command line may have changed the global policy: check the
	 * result the way the table will use it. */
	struct breaker_policies policies;
	char err[512];
	if (!config_build_policies(&o->config, &policies, err, sizeof(err))) {
		fprintf(errors, "spoa-breaker: %s\n", err);
		return 1;
	}
	breaker_policies_free(&policies);
	if (o->check_only) {
		printf("%s: configuration valid\n", o->config_path ? o->config_path : "(defaults)");
		return 0;
	}
	return -1;
}

/* A reload reads the file and the options again, so that options keep
 * overriding the file. */
struct command_line {
	int argc;
	char **argv;
};

static int reload_config(struct config *c, FILE *errors, void *ctx)
{
	struct command_line *cl = ctx;
	struct options fresh = {0};
	int status = configure(cl->argc, cl->argv, &fresh, errors);
	if (status >= 0) {
		config_free(&fresh.config);
		return status;
	}
	*c = fresh.config;
	return -1;
}

int main(int argc, char **argv)
{
	static struct options opts;
	static struct command_line cl;
	int status = configure(argc, argv, &opts, stderr);
	if (status >= 0) {
		config_free(&opts.config);
		return status;
	}
	cl = (struct command_line){.argc = argc, .argv = argv};
	return daemon_run(&opts.config, opts.config_path, reload_config, &cl);
}
