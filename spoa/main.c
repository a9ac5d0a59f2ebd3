/*
 * main.c - the spoa-breaker daemon: signals, the event loop. The command
 * line and the file are spoa/config/'s (config_from_args).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_http.h"
#include "spop/agent.h"
#include "daemon/breakers.h"
#include "config/config.h"
#include "link/enforcer.h"
#include "spop/dispatch.h"
#include "util/log.h"
#include "admin/metrics.h"
#include "spop/observe.h"

/* What the signal handlers need: the command line (a reload reads the file
 * and the options again, so options keep overriding the file) and the
 * running parts. */
struct daemon {
	int argc;
	char **argv;
	struct config config;
	struct breakers breakers;
	struct enforcer *enforcer;
	struct dispatch dispatch;
	struct agent agent;
	struct admin_http *admin; /* NULL: none */
};

static void on_stop_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	log_notice("received signal %d", w->signum);
	struct daemon *d = w->data;
	agent_stop(&d->agent);
}

/* Settings that only a restart changes: say so instead of pretending. */
static void warn_restart_only(void *ctx, const char *key)
{
	(void)ctx;
	log_warning("reload: %s changed; it takes effect at the next restart", key);
}

/*
 * SIGHUP: read the file and the options again. A configuration with errors
 * is refused as a whole and the running one kept; each problem is logged.
 * Breakers keep their state; only their policies change.
 */
static void on_reload_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct daemon *d = w->data;
	(void)loop;
	(void)revents;

	if (!d->config.path) {
		log_notice("SIGHUP: running without a configuration file (-f), nothing to reload");
		return;
	}
	log_notice("SIGHUP: reloading %s", d->config.path);
	struct config fresh = {0};
	char *report = NULL;
	size_t report_len = 0;
	FILE *errors = open_memstream(&report, &report_len);
	int status = errors ? config_from_args(&fresh, d->argc, d->argv, stdout, errors) : 1;
	if (errors)
		fclose(errors);
	if (status >= 0) {
		for (char *line = report ? strtok(report, "\n") : NULL; line; line = strtok(NULL, "\n"))
			log_error("reload: %s", line);
		log_error("reload refused: the running configuration stays in effect");
		free(report);
		config_free(&fresh);
		return;
	}
	/* Accepted: what is left in the report are warnings. */
	for (char *line = report ? strtok(report, "\n") : NULL; line; line = strtok(NULL, "\n"))
		log_warning("reload: %s", line);
	free(report);

	char err[512];
	config_restart_only_changes(&d->config, &fresh, warn_restart_only, NULL);
	if (!breakers_reload(&d->breakers, &fresh, err, sizeof(err)))
		log_error("reload: %s; the default policy is in effect", err);
	log_init(fresh.log_level, d->config.use_syslog, "spoa-breaker");
	/* Restart-only settings keep describing what runs. */
	fresh.agent = d->config.agent;
	fresh.max_breakers = d->config.max_breakers;
	fresh.use_syslog = d->config.use_syslog;
	memcpy(fresh.listen, d->config.listen, sizeof(fresh.listen));
	fresh.nb_listen = d->config.nb_listen;
	memcpy(fresh.admin, d->config.admin, sizeof(fresh.admin));
	fresh.admin_set = d->config.admin_set;
	config_free(&d->config);
	d->config = fresh;
	log_notice("configuration reloaded");
}

static void on_transition(void *ctx)
{
	enforcer_breaker_changed(ctx);
}

/* The admin pages, from the running parts (borrowed for one render). */
static bool render_admin_page(void *ctx, enum admin_page page, struct strbuf *out)
{
	struct daemon *d = ctx;
	struct metrics_source s = {
		.table = &d->breakers.table,
		.agent = &d->agent.stats,
		.connections_open = d->agent.nb_conns,
		.observations_refused = d->breakers.observe.refused,
		.enforce_mode = enforcer_mode(d->enforcer),
		.enforce = enforcer_stats(d->enforcer),
		.version = SPOA_VERSION,
		.now_ms = breakers_now_ms(),
	};
	unsigned n = enforcer_runtime_api_count(d->enforcer);
	for (unsigned i = 0; i < n && i < ENFORCE_MAX_HAPROXY; i++) {
		const struct runtime_api_client *h = enforcer_runtime_api(d->enforcer, i);
		s.runtime_api[s.nb_runtime_api++] = (struct metrics_runtime_api){
			.address = runtime_api_client_address(h),
			.stats = runtime_api_client_stats(h),
			.reachable = runtime_api_client_reachable(h),
		};
	}
	switch (page) {
	case ADMIN_PAGE_METRICS:
		return metrics_render(&s, out);
	case ADMIN_PAGE_STATE:
		return state_json_render(&s, out);
	case ADMIN_PAGE_HEALTHZ:
		strbuf_puts(out, "ok\n");
		return !out->failed;
	}
	return false;
}

/* The admin listener. One asked for explicitly must open; the default one
 * only warns, so that a second agent on the host still runs. */
static bool open_admin(struct daemon *d, struct ev_loop *loop)
{
	const struct config *c = &d->config;
	char err[512];

	if (!c->admin[0])
		return true;
	d->admin = admin_http_open(loop, c->admin, render_admin_page, d, err, sizeof(err));
	if (d->admin)
		return true;
	if (c->admin_set) {
		log_error("%s", err);
		return false;
	}
	log_warning("%s: running without the admin listener", err);
	return true;
}

int main(int argc, char **argv)
{
	static struct daemon d;
	d.argc = argc;
	d.argv = argv;
	int status = config_from_args(&d.config, argc, argv, stdout, stderr);
	if (status >= 0) {
		config_free(&d.config);
		return status;
	}
	struct config *c = &d.config;
	log_init(c->log_level, c->use_syslog, "spoa-breaker");

	/* Writes use MSG_NOSIGNAL; this covers anything else. */
	signal(SIGPIPE, SIG_IGN);

	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	if (!loop) {
		log_error("cannot initialise the event loop");
		return 1;
	}

	char err[512];
	if (!breakers_init(&d.breakers, loop, c, err, sizeof(err))) {
		log_error("%s", err);
		return 1;
	}
	d.enforcer = enforcer_new(loop, c, &d.breakers, err, sizeof(err));
	if (!d.enforcer) {
		log_error("%s", err);
		breakers_free(&d.breakers);
		return 1;
	}
	d.breakers.on_transition = on_transition;
	d.breakers.on_transition_ctx = d.enforcer;
	dispatch_init(&d.dispatch);
	dispatch_register(&d.dispatch, OBSERVE_MESSAGE_NAME, observe_handle, &d.breakers.observe);
	agent_init(&d.agent, loop, &c->agent, &d.dispatch);

	for (unsigned i = 0; i < c->nb_listen; i++) {
		if (!agent_listen(&d.agent, c->listen[i], err, sizeof(err))) {
			log_error("%s", err);
			agent_destroy(&d.agent);
			enforcer_free(d.enforcer);
			breakers_free(&d.breakers);
			return 1;
		}
	}

	if (!open_admin(&d, loop)) {
		agent_destroy(&d.agent);
		enforcer_free(d.enforcer);
		breakers_free(&d.breakers);
		return 1;
	}

	ev_signal sigterm, sigint, sighup;
	ev_signal_init(&sigterm, on_stop_signal, SIGTERM);
	ev_signal_init(&sigint, on_stop_signal, SIGINT);
	ev_signal_init(&sighup, on_reload_signal, SIGHUP);
	sigterm.data = sigint.data = sighup.data = &d;
	ev_signal_start(loop, &sigterm);
	ev_signal_start(loop, &sigint);
	ev_signal_start(loop, &sighup);

	log_notice("spoa-breaker %s started", SPOA_VERSION);
	ev_run(loop, 0);

	admin_http_close(d.admin);
	agent_destroy(&d.agent);
	enforcer_free(d.enforcer);
	breakers_free(&d.breakers);
	config_free(c);
	log_notice("spoa-breaker stopped");
	return 0;
}
