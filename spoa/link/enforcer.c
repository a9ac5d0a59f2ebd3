/*
 * enforce.c - carry the breakers' decisions to HAProxy.
 *
 * One code path for everything: look at HAProxy (`show info; show servers
 * state; show stat` in one batch), then for every breaker plan what
 * converges (enforce_plan()) and send it. A transition asks for a look at
 * once; a timer asks every poll_interval, which is what restores a
 * drain or a maxconn that an HAProxy reload or restart forgot. Commands and
 * the next look go through the same ordered queue, so a look always sees
 * the commands sent before it, and nothing is sent twice on stale news.
 *
 * In agent-check mode HAProxy asks instead, and the answer is computed from
 * the breaker on the spot; in shadow mode (none) plans are logged, never
 * sent.
 */
#include <stdlib.h>
#include <string.h>

#include "link/enforcer.h"
#include "link/faults.h"
#include "link/runtime_api.h"
#include "util/log.h"

struct haproxy_link {
	struct enforcer *owner;
	unsigned index; /* into each entry's enforce[] */
	struct runtime_api_client *client;
	struct runtime_api_info info;
	bool info_known;
	uint32_t poll_id;   /* completed looks */
	bool polled_once;
	bool polling;       /* a look is queued or in flight */
	bool poll_again;    /* something changed meanwhile: look again after */
	bool stat_read;     /* the look in flight read `show stat` */
	bool restarted;     /* the look in flight found a new HAProxy process */
};

struct enforcer {
	struct ev_loop *loop;
	enum enforce_mode mode;
	struct breakers *breakers;
	struct breaker_table *table;
	struct haproxy_link links[ENFORCE_MAX_HAPROXY];
	unsigned nb_links;
	ev_timer reconcile_timer;
	double poll_interval;
	struct agent_check agent_check;
	bool agent_check_open;
	struct enforce_stats stats;
};

/* ---- commands ---- */

struct command_ctx {
	struct haproxy_link *link;
	char command[RUNTIME_API_CMD_MAX];
};

static void command_done(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct command_ctx *cc = ctx;
	struct enforcer *e = cc->link->owner;

	if (result == RUNTIME_API_OK && len == 0) {
		e->stats.commands_ok++;
	} else if (result == RUNTIME_API_OK) {
		e->stats.commands_refused++;
		log_warning("HAProxy %s refused '%s': %.*s", runtime_api_client_address(cc->link->client),
			    cc->command, (int)strcspn(reply, "\n"), reply);
	} else {
		/* The client logs the outage itself; the next look re-plans. */
		e->stats.commands_failed++;
		log_debug("HAProxy %s: '%s' not delivered: %s",
			  runtime_api_client_address(cc->link->client), cc->command, reply);
	}
	free(cc);
}

static void send_command(struct haproxy_link *link, const char *command, const char *why)
{
	struct enforcer *e = link->owner;

	if (e->mode != ENFORCE_RUNTIME_API) {
		log_info("shadow: would send to HAProxy %s: %s (%s)",
			 runtime_api_client_address(link->client), command, why);
		e->stats.shadow_commands++;
		return;
	}
	struct command_ctx *cc = malloc(sizeof(*cc));
	if (!cc) {
		log_error("out of memory queueing '%s'", command);
		return;
	}
	cc->link = link;
	snprintf(cc->command, sizeof(cc->command), "%s", command);
	log_notice("HAProxy %s: %s (%s)", runtime_api_client_address(link->client), command, why);
	if (!runtime_api_submit(link->client, command, command_done, cc)) {
		e->stats.commands_failed++;
		log_warning("HAProxy %s: queue full, '%s' dropped (the next look retries)",
			    runtime_api_client_address(link->client), command);
		free(cc);
	}
}

/* Plans and sends what brings HAProxy in line with one breaker. */
static void converge_entry(struct haproxy_link *link, struct breaker_table_entry *entry)
{
	struct enforce_entry *en = &entry->enforce[link->index];
	const struct breaker *b = &entry->breaker;
	struct enforce_plan plan = enforce_plan(b->state, b->policy->half_open_probes, &en->seen,
						&en->mem);
	char command[RUNTIME_API_CMD_MAX];
	char why[64];

	if (plan.hands_off) {
		if (b->state != BREAKER_CLOSED)
			log_debug("breaker %s/%s is %s, left alone: %s", entry->backend, entry->server,
				  breaker_state_name(b->state), plan.hands_off);
		return;
	}
	snprintf(why, sizeof(why), "breaker %s", breaker_state_name(b->state));
	/* Ready before maxconn: a half-open server takes its probes at once. */
	if ((plan.set_drain || plan.set_ready) &&
	    runtime_api_cmd_set_state(command, sizeof(command), entry->backend, entry->server,
				plan.set_drain ? "drain" : "ready"))
		send_command(link, command, why);
	if (plan.set_maxconn && runtime_api_cmd_set_maxconn(command, sizeof(command), entry->backend,
						      entry->server, plan.maxconn))
		send_command(link, command, why);
}

/* ---- looking at HAProxy ---- */

static void start_poll(struct haproxy_link *link);

static void on_info(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	struct runtime_api_info info;
	struct runtime_api_parse_report report;

	link->restarted = false;
	if (result != RUNTIME_API_OK || !runtime_api_parse_info(reply, len, &info, &report))
		return; /* the look fails as a whole in on_stat */
	if (link->info_known &&
	    (info.pid != link->info.pid || info.start_time_sec != link->info.start_time_sec)) {
		link->restarted = true; /* its counters start from zero */
		log_notice("HAProxy %s: new process (pid %llu, was %llu): re-applying the breakers",
			   runtime_api_client_address(link->client), (unsigned long long)info.pid,
			   (unsigned long long)link->info.pid);
		link->owner->stats.haproxy_restarts++;
	}
	link->info = info;
	link->info_known = true;
}

static void on_server_state(void *ctx, const struct runtime_api_server_state *row)
{
	struct haproxy_link *link = ctx;
	struct breaker_table_entry *entry =
		breaker_table_find(link->owner->table, row->be_name.ptr, row->be_name.len,
				   row->srv_name.ptr, row->srv_name.len);
	if (!entry)
		return; /* not an HTTP server: show stat created the others */
	struct enforce_entry *en = &entry->enforce[link->index];
	en->seen.known = true;
	en->seen.drained = row->admin_state & RUNTIME_API_ADMF_FDRAIN;
	/* Inherited drain is configuration, like maintenance: hands off. */
	en->seen.maint = row->admin_state & (RUNTIME_API_ADMF_MAINT | RUNTIME_API_ADMF_CMAINT | RUNTIME_API_ADMF_IDRAIN);
	en->seen_in_poll = link->poll_id + 1;
}

/* Records what the counters say happened since the previous look. */
static void record_faults(struct haproxy_link *link, struct breaker_table_entry *entry,
			  const struct runtime_api_stat_row *row)
{
	struct enforcer *e = link->owner;
	struct breaker *b = &entry->breaker;
	struct faults_counters counters;
	struct faults_delta d;
	char reason[160];

	faults_counters_from_stat(&counters, row);
	faults_delta(&entry->enforce[link->index].faults, &counters, link->restarted, &d);
	e->stats.connect_errors += d.connect_errors;
	e->stats.response_errors += d.response_errors;
	e->stats.aborted_bodies += d.aborted_bodies;
	e->stats.redispatches += d.redispatches;
	uint64_t now = breakers_now_ms();

	/* Aborted bodies first: they void the successes their heads recorded
	 * over SPOP before this look (see breaker_record_aborted_bodies()). */
	if (d.aborted_bodies) {
		snprintf(reason, sizeof(reason), "%llu bodies aborted after the head (srv_abrt)",
			 (unsigned long long)d.aborted_bodies);
		struct breaker_event ev = breaker_record_aborted_bodies(b, d.aborted_bodies, now);
		breakers_recorded(e->breakers, entry, &ev, reason);
	}
	if (d.failures) {
		snprintf(reason, sizeof(reason),
			 "HAProxy counters: %llu connect errors (econ), %llu response errors "
			 "(eresp), %llu redispatched (wredis)",
			 (unsigned long long)d.connect_errors, (unsigned long long)d.response_errors,
			 (unsigned long long)d.redispatches);
		struct breaker_event ev = breaker_record_failures(b, d.failures, now);
		breakers_recorded(e->breakers, entry, &ev, reason);
	}
	/* The look confirms the successes seen before it. With several
	 * HAProxy instances each look confirms its own share. */
	breaker_counters_polled(b);
}

/*
 * Every HTTP server HAProxy lists gets a breaker (within max_breakers): one
 * that only ever refuses connections sends nothing over SPOP, and its
 * faults come from the counters alone. TCP backends -- the agent's own
 * among them -- carry no HTTP statuses and are never the breakers' to
 * drain.
 */
static void on_stat_row(void *ctx, const struct runtime_api_stat_row *row)
{
	struct haproxy_link *link = ctx;
	static const char http[] = "http";

	if (row->mode.len && !(row->mode.len == 4 && memcmp(row->mode.ptr, http, 4) == 0))
		return;
	enum breaker_table_status status;
	struct breaker_table_entry *entry =
		breaker_table_get(link->owner->table, row->pxname.ptr, row->pxname.len,
				  row->svname.ptr, row->svname.len, breakers_now_ms(), &status);
	if (!entry)
		return; /* table full of judgements, or a name we do not keep */
	entry->enforce[link->index].seen.maxconn = row->slim < 0 ? 0 : (uint32_t)row->slim;
	record_faults(link, entry, row);
}

/* The look is complete: converge every breaker, forget servers HAProxy no
 * longer has. */
static void reconcile(struct haproxy_link *link)
{
	struct enforcer *e = link->owner;
	struct breaker_table_entry *entry, *next;

	link->poll_id++;
	link->polled_once = true;
	e->stats.reconciliations++;
	for (entry = breaker_table_next(e->table, NULL); entry; entry = next) {
		next = breaker_table_next(e->table, entry);
		struct enforce_entry *en = &entry->enforce[link->index];
		if (en->seen_in_poll != link->poll_id)
			en->seen.known = false;
		if (e->mode == ENFORCE_RUNTIME_API || e->mode == ENFORCE_NONE)
			converge_entry(link, entry);

		bool known_anywhere = false, all_looked = true;
		for (unsigned i = 0; i < e->nb_links; i++) {
			known_anywhere |= entry->enforce[i].seen.known;
			all_looked &= e->links[i].polled_once;
		}
		if (!known_anywhere && all_looked) {
			log_notice("breaker %s/%s dropped: no HAProxy has this server", entry->backend,
				   entry->server);
			e->stats.dropped_breakers++;
			breaker_table_remove(e->table, entry);
		}
	}
}

static void on_stat(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	struct runtime_api_parse_report report;

	link->stat_read = result == RUNTIME_API_OK &&
			  runtime_api_parse_stat(reply, len, on_stat_row, link, &report);
	if (result == RUNTIME_API_OK && !link->stat_read)
		log_warning("HAProxy %s: unreadable 'show stat': %s",
			    runtime_api_client_address(link->client), report.error);
}

/* The last answer of a look: converge, then look again if asked meanwhile. */
static void on_servers_state(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	struct runtime_api_parse_report report;

	link->polling = false;
	bool states_read = result == RUNTIME_API_OK &&
			   runtime_api_parse_servers_state(reply, len, on_server_state, link, &report);
	if (result == RUNTIME_API_OK && !states_read)
		log_warning("HAProxy %s: unreadable 'show servers state': %s",
			    runtime_api_client_address(link->client), report.error);
	/* Without the servers' states every breaker would look unknown and be
	 * dropped: a partial look converges nothing. */
	if (states_read && link->stat_read)
		reconcile(link);
	else
		link->owner->stats.looks_failed++;
	if (link->poll_again) {
		link->poll_again = false;
		start_poll(link);
	}
}

static void start_poll(struct haproxy_link *link)
{
	if (link->polling) {
		link->poll_again = true;
		return;
	}
	/* One batch: the three answers describe the same moment. */
	link->stat_read = false;
	bool queued = runtime_api_submit(link->client, "show info", on_info, link) &&
		      runtime_api_submit(link->client, "show stat -1 4 -1", on_stat, link) &&
		      runtime_api_submit(link->client, "show servers state", on_servers_state, link);
	link->polling = queued;
	if (!queued)
		log_warning("HAProxy %s: queue full, look postponed", runtime_api_client_address(link->client));
}

static void reconcile_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct enforcer *e = (struct enforcer *)((char *)w - offsetof(struct enforcer, reconcile_timer));
	(void)loop;
	(void)revents;
	for (unsigned i = 0; i < e->nb_links; i++)
		start_poll(&e->links[i]);
}

void enforcer_breaker_changed(struct enforcer *e)
{
	if (!e)
		return;
	for (unsigned i = 0; i < e->nb_links; i++)
		start_poll(&e->links[i]);
}

/* ---- agent-check ---- */

static void agent_check_answer(void *ctx, const char *backend, const char *server, char *buf,
			       size_t size)
{
	struct enforcer *e = ctx;
	struct breaker_table_entry *entry =
		breaker_table_find(e->table, backend, strlen(backend), server, strlen(server));
	if (!entry) {
		enforce_agent_check_answer(BREAKER_CLOSED, 1, NULL, buf, size);
		return;
	}
	const struct breaker *b = &entry->breaker;
	enforce_agent_check_answer(b->state, b->policy->half_open_probes, &entry->enforce[0].mem,
				   buf, size);
}

/* ---- life ---- */

struct enforcer *enforcer_new(struct ev_loop *loop, const struct config *c,
			      struct breakers *breakers, char *err, size_t err_size)
{
	struct enforcer *e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	e->loop = loop;
	e->mode = c->enforce;
	e->breakers = breakers;
	e->table = &breakers->table;
	e->poll_interval = (double)c->poll_ms / 1000.0;

	for (unsigned i = 0; i < c->nb_runtime_api; i++) {
		struct haproxy_link *link = &e->links[e->nb_links];
		char why[256];
		link->client = runtime_api_client_new(loop, c->runtime_api[i], NULL, why, sizeof(why));
		if (!link->client) {
			snprintf(err, err_size, "runtime_api %s: %s", c->runtime_api[i], why);
			enforcer_free(e);
			return NULL;
		}
		link->owner = e;
		link->index = e->nb_links++;
	}
	if (c->enforce == ENFORCE_AGENT_CHECK) {
		if (!agent_check_open(&e->agent_check, loop, c->agent_check, agent_check_answer, e, err,
				      err_size)) {
			enforcer_free(e);
			return NULL;
		}
		e->agent_check_open = true;
	}
	if (e->nb_links > 0) {
		ev_timer_init(&e->reconcile_timer, reconcile_timer_cb, 0., e->poll_interval);
		ev_timer_start(loop, &e->reconcile_timer);
	}
	log_notice("enforcement: %s%s", enforce_mode_name(e->mode),
		   e->mode == ENFORCE_NONE ? " (shadow: decisions are logged, HAProxy is not changed)"
					   : "");
	return e;
}

void enforcer_free(struct enforcer *e)
{
	if (!e)
		return;
	ev_timer_stop(e->loop, &e->reconcile_timer);
	if (e->agent_check_open)
		agent_check_close(&e->agent_check);
	for (unsigned i = 0; i < e->nb_links; i++)
		runtime_api_client_free(e->links[i].client);
	free(e);
}

const struct enforce_stats *enforcer_stats(const struct enforcer *e)
{
	return &e->stats;
}

enum enforce_mode enforcer_mode(const struct enforcer *e)
{
	return e->mode;
}

unsigned enforcer_runtime_api_count(const struct enforcer *e)
{
	return e->nb_links;
}

const struct runtime_api_client *enforcer_runtime_api(const struct enforcer *e, unsigned i)
{
	return e->links[i].client;
}
