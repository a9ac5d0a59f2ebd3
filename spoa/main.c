/*
 * main.c - the spoa-breaker daemon: command line, signals, the event loop.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "dispatch.h"
#include "log.h"
#include "observe.h"

#define MAX_LISTEN_SPECS AGENT_MAX_LISTENERS

struct options {
	const char *listen[MAX_LISTEN_SPECS];
	unsigned nb_listen;
	struct agent_settings settings;
	enum log_level log_level;
	bool use_syslog;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: spoa-breaker [OPTIONS]\n"
		"A backpressure-aware circuit breaker for HAProxy, as an SPOE agent.\n"
		"\n"
		"  -l, --listen ADDR          listen on ADDR: HOST:PORT, [IPV6]:PORT or unix:PATH\n"
		"                             (repeatable; default " AGENT_DEFAULT_LISTEN ")\n"
		"      --max-frame-size N     largest SPOP frame accepted and offered, 256..1048576\n"
		"                             (default %u)\n"
		"      --max-connections N    SPOP connections served at once (default %u)\n"
		"  -L, --log-level LEVEL      error, warning, notice, info or debug (default notice)\n"
		"      --syslog               log to syslog (facility daemon) instead of stderr\n"
		"  -h, --help                 show this help and exit\n"
		"  -V, --version              show the version and exit\n"
		"\n"
		"Signals: TERM or INT stop gracefully (AGENT-DISCONNECT to HAProxy, exit 0).\n",
		AGENT_DEFAULT_MAX_FRAME_SIZE, AGENT_DEFAULT_MAX_CONNECTIONS);
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

/* Returns -1 to go on, or the exit status. */
static int parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_MAX_FRAME = 256, OPT_MAX_CONN, OPT_SYSLOG };
	static const struct option longopts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"max-frame-size", required_argument, NULL, OPT_MAX_FRAME},
		{"max-connections", required_argument, NULL, OPT_MAX_CONN},
		{"log-level", required_argument, NULL, 'L'},
		{"syslog", no_argument, NULL, OPT_SYSLOG},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	unsigned long v;
	int opt;

	while ((opt = getopt_long(argc, argv, "l:L:hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			if (o->nb_listen == MAX_LISTEN_SPECS) {
				fprintf(stderr, "spoa-breaker: at most %d --listen addresses\n",
					MAX_LISTEN_SPECS);
				return 2;
			}
			o->listen[o->nb_listen++] = optarg;
			break;
		case OPT_MAX_FRAME:
			if (!parse_uint(optarg, SPOP_MIN_FRAME_SIZE, 1048576, &v)) {
				fprintf(stderr, "spoa-breaker: --max-frame-size '%s': expected 256..1048576\n",
					optarg);
				return 2;
			}
			o->settings.max_frame_size = (uint32_t)v;
			break;
		case OPT_MAX_CONN:
			if (!parse_uint(optarg, 1, 1000000, &v)) {
				fprintf(stderr, "spoa-breaker: --max-connections '%s': expected 1..1000000\n",
					optarg);
				return 2;
			}
			o->settings.max_connections = (unsigned)v;
			break;
		case 'L':
			if (!log_level_parse(optarg, &o->log_level)) {
				fprintf(stderr,
					"spoa-breaker: --log-level '%s': expected error, warning, notice, info or debug\n",
					optarg);
				return 2;
			}
			break;
		case OPT_SYSLOG:
			o->use_syslog = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("spoa-breaker %s\n", SPOA_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "spoa-breaker: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (o->nb_listen == 0)
		o->listen[o->nb_listen++] = AGENT_DEFAULT_LISTEN;
	return -1;
}

static void on_stop_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	log_notice("received signal %d", w->signum);
	agent_stop(w->data);
}

int main(int argc, char **argv)
{
	struct options opts = {.log_level = LOG_LEVEL_NOTICE};
	agent_settings_default(&opts.settings);

	int status = parse_options(argc, argv, &opts);
	if (status >= 0)
		return status;
	log_init(opts.log_level, opts.use_syslog, "spoa-breaker");

	/* Writes use MSG_NOSIGNAL; this covers anything else. */
	signal(SIGPIPE, SIG_IGN);

	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	if (!loop) {
		log_error("cannot initialise the event loop");
		return 1;
	}

	static struct dispatch dispatch;
	static struct agent agent;
	dispatch_init(&dispatch);
	dispatch_register(&dispatch, OBSERVE_MESSAGE_NAME, observe_handle, NULL);
	agent_init(&agent, loop, &opts.settings, &dispatch);

	for (unsigned i = 0; i < opts.nb_listen; i++) {
		char err[256];
		if (!agent_listen(&agent, opts.listen[i], err, sizeof(err))) {
			log_error("%s", err);
			agent_destroy(&agent);
			return 1;
		}
	}

	ev_signal sigterm, sigint;
	ev_signal_init(&sigterm, on_stop_signal, SIGTERM);
	ev_signal_init(&sigint, on_stop_signal, SIGINT);
	sigterm.data = sigint.data = &agent;
	ev_signal_start(loop, &sigterm);
	ev_signal_start(loop, &sigint);

	log_notice("spoa-breaker %s started", SPOA_VERSION);
	ev_run(loop, 0);

	agent_destroy(&agent);
	log_notice("spoa-breaker stopped");
	return 0;
}
