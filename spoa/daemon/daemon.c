/*
 * daemon.c - the running agent (see daemon.h): start every part, wire the
 * breakers' subscribers, handle the signals, tear down in one place.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "breakers/counters.h"
#include "daemon/daemon.h"
#include "daemon/running_publish.h"
#include "daemon/transition_log.h"
#include "link/agent_check.h"
#include "spop/observe.h"
#include "spop/tls.h"
#include "util/fd_limit.h"
#include "util/listen_socket.h"
#include "util/log.h"

static void on_stop_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	log_notice("received signal %d", w->signum);
	struct daemon *d = w->data;
	agent_stop(&d->agent);
}

static void on_reload_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	daemon_reload(w->data);
}

/* Says who may connect to a listener: "any" is said on purpose, and said
 * again in the log. */
static void log_allowlist(const char *what, const char *where, const struct cidr_list *l)
{
	char list[1024];
	if (l->any) {
		log_warning("%s on %s accepts connections from any address (allow = any)", what,
			    where);
	} else if (l->n > 0) {
		cidr_list_format(l, list, sizeof(list));
		log_notice("%s on %s accepts connections from %s", what, where, list);
	}
}

/* The admin listener. One asked for explicitly must open; the default one
 * only warns, so that a second agent on the host still runs. */
static bool open_admin(struct daemon *d)
{
	const struct config *c = &d->config;
	char err[512];

	if (!c->admin[0])
		return true;
	d->admin_allow = *config_admin_allow(c);
	d->admin = admin_http_open(d->loop, c->admin, &d->admin_allow, daemon_render_admin_page, d,
				   err, sizeof(err));
	if (d->admin) {
		log_allowlist("admin", c->admin, &d->admin_allow);
		return true;
	}
	if (c->admin_set) {
		log_error("%s", err);
		return false;
	}
	log_warning("%s: running without the admin listener", err);
	return true;
}

/* Descriptors the agent needs besides its SPOP connections: the standard
 * three, the listeners, the loop, the log, the reserve and the Runtime API
 * sockets (32 covers them), the admin clients, the agent-check clients (an
 * agent-check listener may come with a reload, so always counted). */
#define FD_HEADROOM (32 + ADMIN_HTTP_MAX_CONNECTIONS + AGENT_CHECK_MAX_CONNECTIONS)

/* Fits max_connections under the descriptor limit, raised first as far as
 * the hard limit lets. At the limit accept() fails, and a default of 1024
 * is exactly the usual soft limit: the default shrinks to what fits; a
 * value given explicitly is kept, with a warning (the longest-idle
 * connection then makes room when descriptors run out). */
static void fit_descriptor_limit(const struct config *c, struct agent_settings *s)
{
	uint64_t limit = fd_limit_raise((uint64_t)s->max_connections + FD_HEADROOM);
	uint64_t room = limit > 2 * FD_HEADROOM ? limit - FD_HEADROOM : limit / 2;

	if (s->max_connections > room) {
		if (c->max_connections_set)
			log_warning("max_connections %u is more than the descriptor limit (%llu) "
				    "leaves room for (%llu)", s->max_connections,
				    (unsigned long long)limit, (unsigned long long)room);
		else
			s->max_connections = (unsigned)room;
	}
	log_notice("descriptor limit %llu: up to %u SPOP connections, %u descriptors for the rest",
		   (unsigned long long)limit, s->max_connections, FD_HEADROOM);
}

/* Who hears of every breaker record, in this order, first. After them
 * come, as start() makes them, the operator's hand (daemon_open_control),
 * the HAProxy link (enforcer_new) and the state snapshot
 * (state_store_new); a reload's new link takes the old one's place. */
static bool subscribe_all(struct daemon *d)
{
	const struct breaker_subscriber subscribers[] = {
		transition_log_subscriber(),             /* one log line per transition */
		counters_subscriber(),                   /* /metrics: outcomes, transitions */
		breakers_timer_subscriber(&d->breakers), /* the cool-down timer */
	};
	for (size_t i = 0; i < sizeof(subscribers) / sizeof(subscribers[0]); i++)
		if (!breakers_subscribe(&d->breakers, &subscribers[i]))
			return false;
	return true;
}

bool daemon_load_tls(struct daemon *d, const struct config *c)
{
	char err[512];

	if (!c->tls_cert[0]) {
		agent_set_tls(&d->agent, NULL);
		return true;
	}
	struct tls_context *t = tls_context_new(c->tls_cert, c->tls_key, c->tls_ca, err,
						sizeof(err));
	if (!t) {
		log_error("%s", err);
		return false;
	}
	agent_set_tls(&d->agent, t);
	if (c->tls_ca[0])
		log_notice("SPOP over TLS with %s; client certificates required, from a CA of %s",
			   c->tls_cert, c->tls_ca);
	else
		log_notice("SPOP over TLS with %s; no client certificate asked for (tls_ca: none)",
			   c->tls_cert);
	return true;
}

/* Starts every part; false (and logged) if one cannot start. Whatever
 * started is torn down by teardown(). */
static bool start(struct daemon *d)
{
	struct config *c = &d->config;
	char err[512];

	/* The policies resolved with the configuration move into the table. */
	if (!breakers_init(&d->breakers, d->loop, c->max_breakers, &c->policies, err,
			   sizeof(err))) {
		log_error("%s", err);
		return false;
	}
	if (!subscribe_all(d)) {
		log_error("too many breaker subscribers");
		return false;
	}
	/* The operator's record before any breaker comes back, so that each
	 * one, restored or new, is created under it. */
	if (!daemon_open_control(d))
		return false;
	d->enforcer = enforcer_new(d->loop, &c->link, &d->breakers, NULL, err, sizeof(err));
	if (!d->enforcer) {
		log_error("%s", err);
		return false;
	}
	/* Before any traffic: the breakers of the last run come back first. */
	d->state = state_store_new(d->loop, &c->state, &d->breakers, &d->enforcer, err, sizeof(err));
	if (!d->state) {
		log_error("%s", err);
		return false;
	}
	state_store_load(d->state);
	daemon_control_apply(d);
	d->observe = (struct observe_ctx){
		.table = &d->breakers.table,
		.ack_vars = c->ack_variables,
		.words_confirm_words = c->link.enforce != ENFORCE_RUNTIME_API,
	};
	if (!daemon_route_records(d)) {
		log_error("the breaker-observe handler could not be registered");
		return false;
	}
	/* What runs may differ from what was configured (the descriptor limit);
	 * d->config keeps the configured value, so a reload compares like
	 * with like. */
	struct agent_settings settings = c->agent;
	fit_descriptor_limit(c, &settings);
	agent_init(&d->agent, d->loop, &settings, &d->dispatch);
	daemon_link_acks(d);
	/* Borrowed: a reload rewrites d->config, and with it the list, in place. */
	d->agent.allow = &c->allow;
	enforcer_agent_check_allow(d->enforcer, &c->allow);
	if (!daemon_load_tls(d, c))
		return false;
	struct listen_socket_owner owner = {.mode = c->socket_mode, .gid = -1};
	if (c->socket_group[0] &&
	    !listen_socket_group_id(c->socket_group, &owner.gid, err, sizeof(err))) {
		log_error("%s", err);
		return false;
	}
	for (unsigned i = 0; i < c->nb_listen; i++) {
		if (!agent_listen(&d->agent, c->listen[i], &owner, err, sizeof(err))) {
			log_error("%s", err);
			return false;
		}
		if (strncmp(c->listen[i], "unix:", 5) != 0)
			log_allowlist("SPOP", c->listen[i], &c->allow);
	}
	if (c->link.nb_runtime_api == 0)
		log_warning("no runtime_api: an HAProxy in steady-state mode (spoe-breaker-steady.conf, "
			    "the shipped default) needs the agent on its Runtime API to keep "
			    "breaker-watched.map; without one it must send every response "
			    "(spoe-breaker.conf)");
	return open_admin(d);
}

/* The one teardown, in the reverse order of start(). */
static void teardown(struct daemon *d)
{
	admin_http_close(d->admin);
	daemon_close_control(d);
	if (d->agent.loop)
		agent_destroy(&d->agent);
	state_store_close(d->state, d->ran); /* reads the link's memory: before it goes */
	enforcer_free(d->enforcer);
	if (d->breakers.loop)
		breakers_free(&d->breakers);
	config_free(&d->config);
}

int daemon_run(struct config *c, const char *config_path, daemon_load_fn load, void *load_ctx)
{
	static struct daemon d; /* the signal watchers point at it */

	d.config = *c;
	memset(c, 0, sizeof(*c));
	d.config_path = config_path;
	d.load = load;
	d.load_ctx = load_ctx;
	log_init(d.config.log_level, d.config.use_syslog, "spoa-breaker");
	log_set_format(d.config.log_format);

	/* Writes use MSG_NOSIGNAL; this covers anything else. */
	signal(SIGPIPE, SIG_IGN);
	d.loop = ev_default_loop(EVFLAG_AUTO);
	if (!d.loop) {
		log_error("cannot initialise the event loop");
		config_free(&d.config);
		log_detach();
		return 1;
	}
	log_attach(d.loop);
	if (!start(&d)) {
		teardown(&d);
		log_detach();
		return 1;
	}
	ev_signal_init(&d.sigterm, on_stop_signal, SIGTERM);
	ev_signal_init(&d.sigint, on_stop_signal, SIGINT);
	ev_signal_init(&d.sighup, on_reload_signal, SIGHUP);
	d.sigterm.data = d.sigint.data = d.sighup.data = &d;
	ev_signal_start(d.loop, &d.sigterm);
	ev_signal_start(d.loop, &d.sigint);
	ev_signal_start(d.loop, &d.sighup);

	loop_watch_start(&d.loop_watch, d.loop);
	steady_watch_start(&d.steady_watch, d.loop, &d.observe, &d.enforcer);
	/* Every listener is open: what a reload would judge a file by is
	 * written down for --check, and taken back at a clean exit. */
	daemon_running_publish(&d.config);
	log_notice("spoa-breaker %s started", SPOA_VERSION);
	d.ran = true;
	ev_run(d.loop, 0);
	daemon_running_withdraw(&d.config);
	steady_watch_stop(&d.steady_watch, d.loop);
	loop_watch_stop(&d.loop_watch, d.loop);
	teardown(&d);
	log_notice("spoa-breaker stopped");
	log_detach();
	return 0;
}
