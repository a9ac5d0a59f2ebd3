/*
 * sim_agent.c - the agent's real parts, assembled in a struct daemon as
 * daemon.c's start() assembles them: the configuration from its options,
 * the breakers with their timer subscriber, the operator's record and its
 * subscriber (daemon_open_control, with no control socket), the HAProxy
 * link (enforcer_new, Runtime API mode, one HAProxy), the state store
 * with its snapshot loaded, the operator's record applied, and the
 * dispatch the SPOP connections hand NOTIFY frames to. No listener, no
 * admin page, no signal: a SIGHUP is daemon_reload() called, a control
 * command daemon_control_exec() called, a stop teardown()'s order.
 */
#include <stdio.h>
#include <string.h>

#include "spop/observe.h"
#include "spop/spop.h"
#include "util/clock.h"
#include "sim.h"

#define SIM_RUNTIME_API "unix:/sim/haproxy.sock"
#define SIM_MAX_FRAME 16380
#define SIM_STATE_FILE "state.msgpack"

/* The agent's command line, from the policy in force. */
struct sim_options {
	char threshold[16], cooldown[24], percent[16], rate[16], poll[16], node[16];
	char state_file[600];
	char *argv[32];
	int argc;
};

static void build_options(const struct sim *s, struct sim_options *o)
{
	const struct sim_policy *p = &s->policy;
	snprintf(o->threshold, sizeof(o->threshold), "%u", p->threshold);
	snprintf(o->cooldown, sizeof(o->cooldown), "%ums", p->cooldown_ms);
	/* BREAK_CAP_OFF: the agent without a cap, the checker with the
	 * policy's. */
	snprintf(o->percent, sizeof(o->percent), "%u",
		 s->brk == BREAK_CAP_OFF ? 100 : p->max_ejection_percent);
	snprintf(o->rate, sizeof(o->rate), "%u", p->failure_rate);
	snprintf(o->poll, sizeof(o->poll), "%ums", SIM_POLL_MS);
	/* A state file only where the schedule needs one (a restart with the
	 * snapshot, the operator's record): the others write nothing. */
	if (s->keeps_files)
		sim_files_path(SIM_STATE_FILE, o->state_file, sizeof(o->state_file));
	else
		snprintf(o->state_file, sizeof(o->state_file), "none");
	char *argv[] = {"spoa-breaker", "--runtime-api", SIM_RUNTIME_API, "--state-file",
			o->state_file, "--control", "none", "--log-level",
			s->verbose ? "notice" : "error", "--poll-interval", o->poll, "--threshold",
			o->threshold, "--cooldown", o->cooldown, "--max-ejection-percent", o->percent,
			"--failure-rate-threshold", o->rate,
			/* Snapshots written at a stop only (the restarts the
			 * simulation makes are a TERM, or a kill that loses the
			 * snapshot): none on the way, nothing to wait for. */
			"--state-interval", "60m"};
	o->argc = (int)(sizeof(argv) / sizeof(argv[0]));
	memcpy(o->argv, argv, sizeof(argv));
	if (p->drain_last_server || s->brk == BREAK_CAP_OFF)
		o->argv[o->argc++] = "--drain-last-server";
	if (s->schedule->peers) {
		/* Peers mode: the table breaker-peers.cfg declares, and this
		 * node's id (sim_peers.c plays the other node). */
		snprintf(o->node, sizeof(o->node), "%u", SIM_NODE_ID);
		o->argv[o->argc++] = "--verdict-table";
		o->argv[o->argc++] = SIM_VERDICT_TABLE;
		o->argv[o->argc++] = "--node-id";
		o->argv[o->argc++] = o->node;
	}
	o->argv[o->argc] = NULL;
}

/* The daemon's load callback (daemon.h), as main.c's: the options read
 * again, here the simulation's with the policy now in force. */
static int load_options(struct config *c, FILE *errors, void *ctx)
{
	struct sim_options o;
	build_options(ctx, &o);
	FILE *devnull = fopen("/dev/null", "w");
	int status = config_from_args(c, o.argc, o.argv, devnull, errors);
	if (devnull)
		fclose(devnull);
	if (status >= 0)
		config_free(c);
	return status;
}

bool sim_agent_start(struct sim *s, char *err, size_t size)
{
	struct sim_agent *a = &s->agent;
	struct sim_options o;
	build_options(s, &o);

	uint32_t epoch = a->epoch + 1;
	memset(a, 0, sizeof(*a));
	a->epoch = epoch;
	struct daemon *d = &a->d;
	d->loop = s->loop;
	FILE *devnull = fopen("/dev/null", "w");
	int rc = config_from_args(&d->config, o.argc, o.argv, devnull, devnull);
	if (devnull)
		fclose(devnull);
	a->config_loaded = true;
	if (rc != -1) {
		snprintf(err, size, "the simulated agent's options were refused (%d)", rc);
		return false;
	}
	/* Not a file: a reload reads the options again (load_options). */
	d->config_path = "the simulation's options";
	d->load = load_options;
	d->load_ctx = s;
	if (!breakers_init(&d->breakers, s->loop, d->config.max_breakers, &d->config.policies, err,
			   size))
		return false;
	a->breakers_up = true;
	struct breaker_subscriber timer = breakers_timer_subscriber(&d->breakers);
	if (!breakers_subscribe(&d->breakers, &timer)) {
		snprintf(err, size, "too many breaker subscribers");
		return false;
	}
	/* daemon.c's order: the operator's record before any breaker comes
	 * back, the link, the snapshot, the record applied. */
	if (!daemon_open_control(d)) {
		snprintf(err, size, "the operator's record did not open");
		return false;
	}
	a->control_up = true;
	d->enforcer = enforcer_new(s->loop, &d->config.link, &d->breakers, NULL, err, size);
	if (!d->enforcer)
		return false;
	d->state = state_store_new(s->loop, &d->config.state, &d->breakers, &d->enforcer, err, size);
	if (!d->state)
		return false;
	state_store_load(d->state);
	daemon_control_apply(d);
	d->observe = (struct observe_ctx){
		.table = &d->breakers.table,
		.ack_vars = d->config.ack_variables,
		.words_confirm_words = false, /* Runtime API mode */
	};
	if (!daemon_route_records(d)) {
		snprintf(err, size, "the breaker-observe handler could not be registered");
		return false;
	}
	return true;
}

void sim_agent_stop(struct sim *s, bool last_snapshot)
{
	struct sim_agent *a = &s->agent;
	struct daemon *d = &a->d;
	/* teardown()'s order (daemon.c); the last snapshot reads the link's
	 * memory, before it goes. */
	if (a->control_up)
		daemon_close_control(d);
	a->control_up = false;
	state_store_close(d->state, last_snapshot);
	d->state = NULL;
	if (d->enforcer)
		enforcer_free(d->enforcer);
	d->enforcer = NULL;
	if (a->breakers_up)
		breakers_free(&d->breakers);
	a->breakers_up = false;
	if (a->config_loaded)
		config_free(&d->config);
	a->config_loaded = false;
}

void sim_agent_reload(struct sim *s)
{
	daemon_reload(&s->agent.d);
}

bool sim_agent_control(struct sim *s, const char *command, char *answer, size_t size)
{
	struct strbuf out;
	strbuf_init(&out);
	/* uid 0: root, as `spoa-breaker ctl` run by an operator with sudo. */
	daemon_control_exec(&s->agent.d, command, strlen(command), 0, &out);
	snprintf(answer, size, "%.*s", (int)out.len, out.data ? out.data : "");
	bool done = !(out.len >= 6 && strncmp(out.data, "error:", 6) == 0);
	strbuf_free(&out);
	return done;
}

struct breaker_table_entry *sim_agent_entry(struct sim *s, const struct sim_backend *b,
					    const struct sim_server *sv)
{
	if (!s->agent.breakers_up)
		return NULL;
	/* The table's entries stay where they are while its agent lives
	 * (breaker-t.h); one found before still holds the server while it
	 * is in use with the same names' hash (a reused entry has another). */
	struct sim_entry_cache *c = &s->entry_cache[b - s->be][sv - b->srv];
	if (c->entry && c->epoch == s->agent.epoch && c->entry->in_use &&
	    c->entry->hash == c->hash)
		return c->entry;
	c->entry = breaker_table_find(&s->agent.d.breakers.table, b->name, strlen(b->name),
				      sv->name, strlen(sv->name));
	c->epoch = s->agent.epoch;
	c->hash = c->entry ? c->entry->hash : 0;
	return c->entry;
}
void sim_agent_observe(struct sim *s, const struct sim_backend *b, const struct sim_server *sv,
		       unsigned status, uint32_t retry_after)
{
	uint8_t payload[512], out[SIM_MAX_FRAME];
	struct spop_writer pw, w;
	char ra[16];
	struct breaker_table_entry *entry = sim_agent_entry(s, b, sv);
	enum breaker_state before = entry ? entry->breaker.state : BREAKER_CLOSED;
	/* The planted misbehaviours (sim --self-test): the agent is told a
	 * 500 where the worker said it was full. The invariants judge what
	 * the worker said. */
	bool capacity = status == 429 || status == 503 || status == 529;
	unsigned fed = status;
	if (capacity && s->brk == BREAK_BUSY_AS_FAILURE &&
	    (sv->w.kind == WORKER_BUSY || sv->w.kind == WORKER_REFUSING))
		fed = 500;
	if (capacity && s->brk == BREAK_PROBE_AS_FAILURE && before == BREAKER_HALF_OPEN)
		fed = 500;
	int ra_len = retry_after ? snprintf(ra, sizeof(ra), "%u", retry_after) : 0;

	spop_writer_init(&pw, payload, sizeof(payload));
	bool steady = s->schedule->steady;
	spop_put_message_header(&pw, OBSERVE_MESSAGE_NAME, strlen(OBSERVE_MESSAGE_NAME),
				3u + (ra_len ? 1u : 0u) + (steady ? 1u : 0u));
	struct spop_data be = spop_data_string(b->name, strlen(b->name));
	struct spop_data srv = spop_data_string(sv->name, strlen(sv->name));
	struct spop_data st = spop_data_sint((int64_t)fed);
	spop_put_kv(&pw, "be", &be);
	spop_put_kv(&pw, "srv", &srv);
	spop_put_kv(&pw, "status", &st);
	if (steady) {
		struct spop_data mode = spop_data_string("steady", 6);
		spop_put_kv(&pw, "mode", &mode);
	}
	if (ra_len) {
		struct spop_data r = spop_data_string(ra, (size_t)ra_len);
		spop_put_kv(&pw, "retry_after", &r);
	}
	struct spop_frame notify = {.type = SPOP_FRAME_NOTIFY, .flags = SPOP_FLAG_FIN,
				    .stream_id = 1, .frame_id = 1,
				    .payload = {.ptr = payload, .len = pw.len}};
	spop_writer_init(&w, out, sizeof(out));
	const char *why = NULL;
	uint64_t ack_ticket; /* no Runtime API in the simulation: never a hold */
	if (!dispatch_notify(&s->agent.d.dispatch, &notify, &w, SIM_MAX_FRAME, clock_now_ms(), &why,
			     &ack_ticket))
		sim_violate(s, INV_NO_SOCKET, "a NOTIFY the agent could not answer: %s",
			    why ? why : "?");
	s->observations++;
	sim_invariants_observed(s, b, sv, status, before, sim_agent_entry(s, b, sv));
}
