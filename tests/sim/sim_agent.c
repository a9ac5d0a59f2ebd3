/*
 * sim_agent.c - the agent's real parts, assembled as daemon.c starts
 * them: the configuration from its options, the breakers with their
 * timer subscriber, the HAProxy link (enforcer_new, Runtime API mode,
 * one HAProxy) and the dispatch the SPOP connections hand NOTIFY frames
 * to. No listener, no admin page, no state file: what the simulation
 * drives are the breakers and the link.
 */
#include <stdio.h>
#include <string.h>

#include "spop/observe.h"
#include "spop/spop.h"
#include "util/clock.h"
#include "sim.h"

#define SIM_RUNTIME_API "unix:/sim/haproxy.sock"
#define SIM_MAX_FRAME 16380

bool sim_agent_start(struct sim *s, char *err, size_t size)
{
	const struct sim_schedule *sc = s->schedule;
	struct sim_agent *a = &s->agent;
	char threshold[16], cooldown[24], percent[16], rate[16], poll[16];
	snprintf(threshold, sizeof(threshold), "%u", sc->threshold);
	snprintf(cooldown, sizeof(cooldown), "%ums", sc->cooldown_ms);
	/* BREAK_CAP_OFF: the agent without a cap, the checker with the
	 * schedule's. */
	snprintf(percent, sizeof(percent), "%u",
		 s->brk == BREAK_CAP_OFF ? 100 : sc->max_ejection_percent);
	snprintf(rate, sizeof(rate), "%u", sc->failure_rate);
	snprintf(poll, sizeof(poll), "%ums", SIM_POLL_MS);
	char *argv[24] = {"spoa-breaker", "--runtime-api", SIM_RUNTIME_API, "--state-file", "none",
			  "--control", "none", "--log-level", "error", "--poll-interval", poll,
			  "--threshold", threshold, "--cooldown", cooldown,
			  "--max-ejection-percent", percent, "--failure-rate-threshold", rate};
	int argc = 19;
	if (sc->drain_last_server || s->brk == BREAK_CAP_OFF)
		argv[argc++] = "--drain-last-server";
	argv[argc] = NULL;

	uint32_t epoch = a->epoch + 1;
	memset(a, 0, sizeof(*a));
	a->epoch = epoch;
	FILE *devnull = fopen("/dev/null", "w");
	int rc = config_from_args(&a->config, argc, argv, devnull, devnull);
	if (devnull)
		fclose(devnull);
	a->config_loaded = true;
	if (rc != -1) {
		snprintf(err, size, "the simulated agent's options were refused (%d)", rc);
		return false;
	}
	if (!breakers_init(&a->breakers, s->loop, a->config.max_breakers, &a->config.policies, err,
			   size))
		return false;
	a->breakers_up = true;
	struct breaker_subscriber timer = breakers_timer_subscriber(&a->breakers);
	if (!breakers_subscribe(&a->breakers, &timer)) {
		snprintf(err, size, "too many breaker subscribers");
		return false;
	}
	a->enforcer = enforcer_new(s->loop, &a->config, &a->breakers, NULL, err, size);
	if (!a->enforcer)
		return false;
	a->breakers.observe.ack_vars = a->config.ack_variables;
	a->breakers.observe.words_confirm_words = false; /* Runtime API mode */
	dispatch_init(&a->dispatch);
	dispatch_register(&a->dispatch, OBSERVE_MESSAGE_NAME, observe_handle,
			  &a->breakers.observe);
	return true;
}

void sim_agent_stop(struct sim *s)
{
	struct sim_agent *a = &s->agent;
	if (a->enforcer)
		enforcer_free(a->enforcer);
	a->enforcer = NULL;
	if (a->breakers_up)
		breakers_free(&a->breakers);
	a->breakers_up = false;
	if (a->config_loaded)
		config_free(&a->config);
	a->config_loaded = false;
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
	c->entry = breaker_table_find(&s->agent.breakers.table, b->name, strlen(b->name), sv->name,
				      strlen(sv->name));
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
	if (!dispatch_notify(&s->agent.dispatch, &notify, &w, SIM_MAX_FRAME, clock_now_ms(), &why))
		sim_violate(s, INV_NO_SOCKET, "a NOTIFY the agent could not answer: %s",
			    why ? why : "?");
	s->observations++;
	sim_invariants_observed(s, b, sv, status, before, sim_agent_entry(s, b, sv));
}
