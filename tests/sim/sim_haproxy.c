/*
 * sim_haproxy.c - the simulated HAProxy's Runtime API: its server table
 * and maps as the agent's commands change them, its replies in the words
 * HAProxy 2.6 to 3.2 use (so the agent's real parsers read them), and
 * the answering of the link's two clients.
 *
 * The link's Runtime API clients are the real ones, never connected:
 * what the link submits waits in their queues, and this file answers the
 * oldest commands there the way the client hands each output of a reply
 * to its callback (runtime_api_answer_oldest, from the client's own
 * hapi/client-t.h) - streamed replies through the command's
 * stream function, in chunks split at random, as they arrive from a
 * socket. A batch takes what the client's would (up to max_batch
 * commands, a streamed one alone) and is answered after a delay; while
 * the socket is down each batch fails, and while replies are lost three
 * batches in ten are applied and fail all the same.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hapi/client-t.h"
#include "link/enforcer-t.h"
#include "util/clock.h"
#include "sim.h"
#include "sim_loop.h"

static const char *const map_paths[SIM_MAPS] = {"/etc/haproxy/breaker-owned.map",
						"/etc/haproxy/breaker-retry-at.map",
						"/etc/haproxy/breaker-watched.map"};

/* ---- a reply under construction ---- */

void sim_reply_put(struct sim_reply *r, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = r->cap - r->len;
		int n = vsnprintf(r->p ? r->p + r->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			abort();
		if ((size_t)n < room) {
			r->len += (size_t)n;
			return;
		}
		r->cap = r->cap ? r->cap * 2 + (size_t)n : 4096 + (size_t)n;
		r->p = realloc(r->p, r->cap);
		if (!r->p)
			abort();
	}
}

/* ---- the table ---- */

bool sim_server_capacity(const struct sim_server *sv)
{
	return !sv->absent && !(sv->admin & RUNTIME_API_ADMF_FMAINT);
}

bool sim_server_serving(const struct sim_server *sv)
{
	return !sv->absent && sv->up &&
	       !(sv->admin & (RUNTIME_API_ADMF_FMAINT | RUNTIME_API_ADMF_FDRAIN));
}

void sim_haproxy_init(struct sim *s)
{
	const struct sim_schedule *sc = s->schedule;
	s->nb_be = sc->nb_backends;
	for (unsigned i = 0; i < s->nb_be; i++) {
		struct sim_backend *b = &s->be[i];
		snprintf(b->name, sizeof(b->name), "be%u", i + 1);
		b->id = 3 + i;
		b->nb = sc->nb_servers[i];
		b->next_id = b->nb + 1;
		b->rate = sc->rate[i];
		b->clients = sc->clients[i];
		for (unsigned j = 0; j < b->nb; j++) {
			struct sim_server *sv = &b->srv[j];
			snprintf(sv->name, sizeof(sv->name), "w%u", j + 1);
			sv->id = j + 1;
			sv->maxconn_conf = sv->maxconn = sc->maxconn_conf[i];
			sv->up = true;
			sv->w.kind = WORKER_HEALTHY;
			sv->w.kind_since_us = sim_now_us();
			sv->w.clean_since_us = sim_now_us();
			if (j >= b->nb - sc->nb_parked[i]) {
				/* A controller's spare slot, as the HAProxy
				 * Kubernetes Ingress Controller keeps them. */
				snprintf(sv->addr, sizeof(sv->addr), "127.0.0.1");
				sv->port = 1;
				sv->admin = RUNTIME_API_ADMF_FMAINT | RUNTIME_API_ADMF_CMAINT;
				sv->maint_by = HAND_CONTROLLER;
			} else {
				snprintf(sv->addr, sizeof(sv->addr), "10.0.%u.%u", i + 1, j + 1);
				sv->port = 8000;
			}
		}
	}
	s->pid = 4000;
	s->start_us = sim_now_us();
	s->api_up_since_us = sim_now_us();
	s->nb_maps = s->schedule->steady ? SIM_MAPS : SIM_MAP_WATCHED;
	for (int m = 0; m < SIM_MAPS; m++)
		s->maps[m].path = map_paths[m];
	s->next_check_us = sim_now_us() + 2 * SIM_S;
}

void sim_haproxy_free(struct sim *s)
{
	for (int m = 0; m < SIM_MAPS; m++) {
		free(s->maps[m].entries);
		s->maps[m].entries = NULL;
		s->maps[m].nb = s->maps[m].allocated = 0;
	}
}

/* A new process: counters from zero, every maxconn its configuration's,
 * the maps back to their (empty) files. Without `keep_state`, the
 * runtime's drains and maintenance are gone too (a controller's slots
 * are in its configuration); with it, as the shipped reload-haproxy.sh
 * does, the servers' states come back from server-state-file, and the
 * ownership map from the file it saved. */
void sim_haproxy_reload(struct sim *s, bool keep_state)
{
	s->pid++;
	s->start_us = sim_now_us();
	for (unsigned i = 0; i < s->nb_be; i++) {
		struct sim_backend *b = &s->be[i];
		for (unsigned j = 0; j < b->nb; j++) {
			struct sim_server *sv = &b->srv[j];
			/* The configuration follows the runtime's servers (a
			 * controller writes it before it reloads): one deleted
			 * stays deleted, one added is there. */
			if (sv->absent)
				continue;
			sv->stot = sv->wretr = sv->wredis = sv->econ = sv->eresp = 0;
			sv->srv_abrt = sv->cli_abrt = 0;
			memset(sv->hrsp, 0, sizeof(sv->hrsp));
			memset(sv->ok_seen_valid, 0, sizeof(sv->ok_seen_valid));
			if (keep_state) {
				/* the admin state and its hand, as they were */
			} else if (sv->maint_by == HAND_CONTROLLER) {
				sv->admin = RUNTIME_API_ADMF_FMAINT | RUNTIME_API_ADMF_CMAINT;
				sv->drain_by = HAND_NONE;
			} else {
				sv->admin = 0;
				sv->drain_by = sv->maint_by = HAND_NONE;
			}
			sv->maxconn = sv->maxconn_conf;
			sv->maxconn_by = HAND_NONE;
		}
	}
	for (int m = keep_state ? 1 : 0; m < SIM_MAPS; m++)
		s->maps[m].nb = 0;
	/* The connections of the old process are gone with it. */
	for (int i = 0; i < 2; i++)
		if (s->clients[i].in_flight)
			s->clients[i].refuse = true;
}

/* HAProxy's own rules for `set server ... state`: drain and maint
 * exclude each other, ready lifts both. */
void sim_haproxy_set_state(struct sim *s, struct sim_server *sv, const char *state,
			   enum sim_hand hand)
{
	(void)s;
	enum sim_hand drain_was = sv->drain_by, maint_was = sv->maint_by;
	if (strcmp(state, "ready") == 0) {
		sv->admin &= ~(unsigned)(RUNTIME_API_ADMF_FDRAIN | RUNTIME_API_ADMF_FMAINT);
		sv->drain_by = sv->maint_by = HAND_NONE;
	} else if (strcmp(state, "drain") == 0) {
		sv->admin |= RUNTIME_API_ADMF_FDRAIN;
		sv->admin &= ~(unsigned)RUNTIME_API_ADMF_FMAINT;
		sv->drain_by = hand;
		sv->maint_by = HAND_NONE;
	} else if (strcmp(state, "maint") == 0) {
		sv->admin |= RUNTIME_API_ADMF_FMAINT;
		sv->admin &= ~(unsigned)RUNTIME_API_ADMF_FDRAIN;
		sv->maint_by = hand;
		sv->drain_by = HAND_NONE;
	}
	if (sv->drain_by != drain_was || sv->maint_by != maint_was) {
		sv->hand_seen_us = 0;
		sv->drain_raced = false;
	}
}

/* Active checks every 2 s, fall 3, rise 2: a worker that refuses
 * connections or never answers goes down; one that answers anything,
 * a refusal included, is up. Servers in maintenance are not checked. */
void sim_haproxy_checks(struct sim *s)
{
	while (s->next_check_us <= sim_now_us()) {
		for (unsigned i = 0; i < s->nb_be; i++) {
			for (unsigned j = 0; j < s->be[i].nb; j++) {
				struct sim_server *sv = &s->be[i].srv[j];
				if (!sim_server_capacity(sv))
					continue;
				bool ok = sv->w.kind != WORKER_CRASHED && sv->w.kind != WORKER_HUNG;
				sv->check_fails = ok ? 0 : sv->check_fails + 1;
				sv->check_oks = ok ? sv->check_oks + 1 : 0;
				if (sv->up && sv->check_fails >= 3)
					sv->up = false;
				else if (!sv->up && sv->check_oks >= 2)
					sv->up = true;
			}
		}
		s->next_check_us += 2 * SIM_S;
	}
}

static bool find_server(struct sim *s, const char *name, struct sim_backend **bp,
			struct sim_server **svp)
{
	const char *slash = strchr(name, '/');
	if (!slash)
		return false;
	for (unsigned i = 0; i < s->nb_be; i++) {
		struct sim_backend *b = &s->be[i];
		if (strlen(b->name) != (size_t)(slash - name) ||
		    memcmp(b->name, name, (size_t)(slash - name)) != 0)
			continue;
		for (unsigned j = 0; j < b->nb; j++) {
			if (!b->srv[j].absent && strcmp(b->srv[j].name, slash + 1) == 0) {
				*bp = b;
				*svp = &b->srv[j];
				return true;
			}
		}
	}
	return false;
}

/* ---- the replies ---- */

static const char *status_word(const struct sim_server *sv)
{
	if (sv->admin & RUNTIME_API_ADMF_FMAINT)
		return "MAINT";
	if (!sv->up)
		return "DOWN";
	if (sv->admin & RUNTIME_API_ADMF_FDRAIN)
		return "DRAIN";
	return "UP";
}

static void show_stat(struct sim *s, struct sim_reply *r)
{
	sim_reply_put(r, "# pxname,svname,qcur,scur,slim,stot,econ,eresp,wretr,wredis,status,weight,"
	       "iid,sid,type,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,cli_abrt,srv_abrt,"
	       "mode,addr,\n");
	sim_reply_put(r, "stats,FRONTEND,,0,,0,0,0,,,OPEN,,2,0,0,0,0,0,0,0,,,http,,\n");
	for (unsigned i = 0; i < s->nb_be; i++) {
		const struct sim_backend *b = &s->be[i];
		for (unsigned j = 0; j < b->nb; j++) {
			const struct sim_server *sv = &b->srv[j];
			char slim[16] = "";
			if (sv->absent)
				continue;
			if (sv->maxconn)
				snprintf(slim, sizeof(slim), "%u", sv->maxconn);
			sim_reply_put(r,
			    "%s,%s,0,%u,%s,%llu,%llu,%llu,%llu,%llu,%s,%u,%u,%u,2,%llu,%llu,%llu,%llu,"
			    "%llu,%llu,%llu,http,%s:%u,\n",
			    b->name, sv->name, sv->scur, slim, (unsigned long long)sv->stot,
			    (unsigned long long)sv->econ, (unsigned long long)sv->eresp,
			    (unsigned long long)sv->wretr, (unsigned long long)sv->wredis,
			    status_word(sv), (sv->admin & RUNTIME_API_ADMF_FDRAIN) ? 0 : 1, b->id,
			    sv->id, (unsigned long long)sv->hrsp[0], (unsigned long long)sv->hrsp[1],
			    (unsigned long long)sv->hrsp[2], (unsigned long long)sv->hrsp[3],
			    (unsigned long long)sv->hrsp[4], (unsigned long long)sv->cli_abrt,
			    (unsigned long long)sv->srv_abrt, sv->addr, sv->port);
		}
		sim_reply_put(r, "%s,BACKEND,0,0,,0,0,0,0,0,UP,1,%u,0,1,0,0,0,0,0,0,0,http,,\n", b->name, b->id);
	}
	sim_reply_put(r, "\n");
}

static void show_servers_state(struct sim *s, struct sim_reply *r)
{
	sim_reply_put(r, "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state "
	       "srv_uweight srv_iweight srv_time_since_last_change srv_check_status "
	       "srv_check_result srv_check_health srv_check_state srv_agent_state "
	       "bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord\n");
	for (unsigned i = 0; i < s->nb_be; i++) {
		const struct sim_backend *b = &s->be[i];
		for (unsigned j = 0; j < b->nb; j++) {
			const struct sim_server *sv = &b->srv[j];
			if (sv->absent)
				continue;
			sim_reply_put(r, "%u %s %u %s %s %u %u 1 1 10 6 3 4 6 0 0 0 - %u -\n", b->id, b->name,
			    sv->id, sv->name, sv->addr,
			    sv->up ? RUNTIME_API_SRV_RUNNING : RUNTIME_API_SRV_STOPPED, sv->admin,
			    sv->port);
		}
	}
	sim_reply_put(r, "\n");
}

static struct sim_map *map_named(struct sim *s, const char *path)
{
	for (unsigned m = 0; m < s->nb_maps; m++)
		if (strcmp(s->maps[m].path, path) == 0)
			return &s->maps[m];
	return NULL;
}

static void show_map_list(struct sim *s, struct sim_reply *r)
{
	sim_reply_put(r, "# id (file) description\n");
	for (unsigned m = 0; m < s->nb_maps; m++)
		sim_reply_put(r,
		    "%d (%s) pattern loaded from file '%s' used by map at file "
		    "'/etc/haproxy/haproxy.cfg' line %d. curr_ver=0 next_ver=0 entry_cnt=%u\n",
		    m + 3, s->maps[m].path, s->maps[m].path, 60 + m, s->maps[m].nb);
}

static void map_add(struct sim_map *m, const char *key, const char *value)
{
	if (m->nb == m->allocated) {
		m->allocated = m->allocated ? 2 * m->allocated : 16;
		m->entries = realloc(m->entries, m->allocated * sizeof(*m->entries));
		if (!m->entries)
			abort();
	}
	snprintf(m->entries[m->nb].key, sizeof(m->entries[0].key), "%.47s", key);
	snprintf(m->entries[m->nb].value, sizeof(m->entries[0].value), "%.47s", value);
	m->nb++;
}

bool sim_haproxy_notifies(const struct sim *s, const struct sim_backend *b,
			  const struct sim_server *sv, unsigned status)
{
	/* spoe-breaker-steady.conf: `breaker_success status 100:428 430:499`,
	 * the event `if breaker_watched || !breaker_success`. */
	bool success = (status >= 100 && status <= 428) || (status >= 430 && status <= 499);
	if (!s->schedule->steady || !success)
		return true;
	char key[48];
	snprintf(key, sizeof(key), "%s@%s", sv->name, b->name);
	const struct sim_map *m = &s->maps[SIM_MAP_WATCHED];
	for (unsigned i = 0; i < m->nb; i++)
		if (strcmp(m->entries[i].key, key) == 0)
			return true;
	return false;
}

void sim_haproxy_claim(struct sim *s, const struct sim_backend *b, const struct sim_server *sv)
{
	char key[48];
	snprintf(key, sizeof(key), "%s/%s", b->name, sv->name);
	map_add(&s->maps[0], key, "drain");
}

/* The agent's `set server B/S state X`. */
static void agent_set_state(struct sim *s, struct sim_backend *b, struct sim_server *sv,
			    const char *state, uint64_t queued_us)
{
	sim_invariants_agent_command(s, b, sv, state, queued_us);
	if (s->brk == BREAK_IGNORE_READY && strcmp(state, "ready") == 0)
		return;
	/* A drain on a drain keeps the first hand's; on an operator's that
	 * the agent could not have seen when it queued its own, the drain is
	 * both hands' from then on (sim.h, drain_raced). */
	if (strcmp(state, "drain") == 0 && (sv->admin & RUNTIME_API_ADMF_FDRAIN)) {
		if (sv->drain_by == HAND_OPERATOR &&
		    (sv->hand_seen_us == 0 || sv->hand_seen_us > queued_us))
			sv->drain_raced = true;
		return;
	}
	sim_haproxy_set_state(s, sv, state, HAND_AGENT);
}

/* One command, as HAProxy runs it; its output (without the empty line
 * that ends it) into r. */
static void execute(struct sim *s, const char *command, uint64_t queued_us, struct sim_reply *r)
{
	char w[6][128];
	int n = 0;
	const char *p = command;
	while (*p && n < 6) {
		while (*p == ' ')
			p++;
		size_t len = strcspn(p, " ");
		if (len == 0)
			break;
		snprintf(w[n++], sizeof(w[0]), "%.*s", (int)len, p);
		p += len;
	}
	struct sim_backend *b;
	struct sim_server *sv;
	s->commands++;
	if (s->verbose > 1 || (s->verbose && strncmp(command, "show ", 5) != 0))
		fprintf(stderr, "sim: %8.3f s  HAProxy runs: %s\n",
			(double)(sim_now_us() - SIM_CLOCK_START_US) / 1e6, command);
	if (strcmp(command, "show info") == 0) {
		uint64_t up = (sim_now_us() - s->start_us) / SIM_S;
		sim_reply_put(r, "Name: HAProxy\nVersion: 3.2.0-sim\nNbthread: 1\nProcess_num: 1\nPid: %u\n"
		       "Uptime_sec: %llu\nStart_time_sec: %llu\n",
		    s->pid, (unsigned long long)up,
		    (unsigned long long)(SIM_WALL_START_S + (s->start_us - SIM_CLOCK_START_US) / SIM_S));
	} else if (strcmp(command, "show cli level") == 0) {
		sim_reply_put(r, "admin\n");
	} else if (strcmp(command, "show map") == 0) {
		show_map_list(s, r);
	} else if (n == 3 && strcmp(w[0], "show") == 0 && strcmp(w[1], "map") == 0) {
		struct sim_map *m = map_named(s, w[2]);
		if (!m) {
			sim_reply_put(r, "Unknown map identifier. Please use #<id> or <file>.\n");
			return;
		}
		for (unsigned i = 0; i < m->nb; i++)
			sim_reply_put(r, "0x%x %s %s\n", 0x55d0a000u + i * 64u, m->entries[i].key,
			    m->entries[i].value);
	} else if (strcmp(command, "show stat -1 4 -1") == 0) {
		s->looks++;
		show_stat(s, r);
	} else if (strcmp(command, "show servers state") == 0) {
		show_servers_state(s, r);
	} else if (strcmp(command, "show backend") == 0) {
		sim_reply_put(r, "# name\n");
		for (unsigned i = 0; i < s->nb_be; i++)
			sim_reply_put(r, "%s\n", s->be[i].name);
		sim_reply_put(r, "\n");
	} else if (sim_peers_execute(s, command, r)) {
		/* the verdict table, in peers mode */
	} else if (n >= 2 && strcmp(w[0], "show") == 0 && strcmp(w[1], "table") == 0) {
		sim_reply_put(r, "Unknown table name.\n");
	} else if (n == 5 && strcmp(w[0], "set") == 0 && strcmp(w[1], "server") == 0 &&
		   strcmp(w[3], "state") == 0) {
		if (!find_server(s, w[2], &b, &sv)) {
			sim_reply_put(r, "No such server.\n");
			return;
		}
		agent_set_state(s, b, sv, w[4], queued_us);
	} else if (n == 5 && strcmp(w[0], "set") == 0 && strcmp(w[1], "maxconn") == 0 &&
		   strcmp(w[2], "server") == 0) {
		if (!find_server(s, w[3], &b, &sv)) {
			sim_reply_put(r, "No such server.\n");
			return;
		}
		sv->maxconn = (uint32_t)strtoul(w[4], NULL, 10);
		sv->maxconn_by = sv->maxconn == sv->maxconn_conf ? HAND_NONE : HAND_AGENT;
	} else if (n == 4 && strcmp(w[0], "shutdown") == 0 && strcmp(w[1], "sessions") == 0 &&
		   strcmp(w[2], "server") == 0) {
		if (!find_server(s, w[3], &b, &sv)) {
			sim_reply_put(r, "No such server.\n");
			return;
		}
		sim_traffic_kill_sessions(s, b, sv);
	} else if (n >= 4 && strcmp(w[1], "map") == 0 &&
		   (strcmp(w[0], "add") == 0 || strcmp(w[0], "set") == 0 || strcmp(w[0], "del") == 0)) {
		struct sim_map *m = map_named(s, w[2]);
		if (!m) {
			sim_reply_put(r, "Unknown map identifier. Please use #<id> or <file>.\n");
			return;
		}
		if (strcmp(w[0], "add") == 0) {
			map_add(m, w[3], n > 4 ? w[4] : "");
			return;
		}
		unsigned found = 0;
		for (unsigned i = 0; i < m->nb;) {
			if (strcmp(m->entries[i].key, w[3]) != 0) {
				i++;
				continue;
			}
			found++;
			/* BREAK_KEEP_MAP_ENTRY: the plant, a `del map` that
			 * keeps the entry (and says it did not). */
			if (w[0][0] == 'd' && s->brk == BREAK_KEEP_MAP_ENTRY) {
				i++;
				continue;
			}
			if (w[0][0] == 's') {
				snprintf(m->entries[i].value, sizeof(m->entries[0].value), "%.47s",
					 n > 4 ? w[4] : "");
				i++;
			} else {
				memmove(&m->entries[i], &m->entries[i + 1],
					(m->nb - i - 1) * sizeof(m->entries[0]));
				m->nb--;
			}
		}
		if (!found)
			sim_reply_put(r, w[0][0] == 's' ? "entry not found.\n" : "Key not found.\n");
	} else {
		/* The agent learnt a command the simulation has not: every
		 * run would judge it on a world that answers wrongly. */
		fprintf(stderr, "sim: the simulated HAProxy knows no '%s': teach sim_haproxy.c\n",
			command);
		abort();
	}
}

/* ---- the link's clients ---- */

static struct runtime_api_client *client_of(struct sim *s, int i)
{
	struct enforcer *e = s->agent.d.enforcer;
	if (!e || e->nb_links == 0)
		return NULL;
	return i == 0 ? e->links[0].client : e->links[0].cmd.client;
}

bool sim_haproxy_skip_timer(void *ctx, const ev_timer *w)
{
	struct sim *s = ctx;
	for (int i = 0; i < 2; i++) {
		const struct runtime_api_client *c = client_of(s, i);
		if (c && (w == &c->kick || w == &c->deadline || w == &c->backoff || w == &c->expire))
			return true;
	}
	return false;
}

/* What a socket does to a reply: it arrives in pieces. */
static void feed_stream(struct sim *s, const struct runtime_api_entry *e, const struct sim_reply *r)
{
	char *window = malloc(r->len + 1);
	size_t kept = 0, pos = 0;
	if (!window)
		abort();
	while (pos < r->len) {
		size_t chunk = sim_rng_chance(&s->api_rng, 0.5) ? r->len - pos
								 : sim_rng_range(&s->api_rng, 1, 600);
		if (chunk > r->len - pos)
			chunk = r->len - pos;
		memcpy(window + kept, r->p + pos, chunk);
		kept += chunk;
		pos += chunk;
		size_t used = e->stream(e->ctx, window, kept, false);
		if (used > kept)
			used = kept;
		memmove(window, window + used, kept - used);
		kept -= used;
	}
	e->stream(e->ctx, window, kept, true);
	free(window);
}

static void answer_batch(struct sim *s, int i, struct runtime_api_client *c)
{
	struct sim_client *sc = &s->clients[i];
	static const char refused[] = "connect: Connection refused";
	static const char lost[] = "no complete reply within 1.0s";
	for (unsigned k = 0; k < sc->n && runtime_api_client_pending(c) > 0; k++) {
		const struct runtime_api_entry *e = runtime_api_queue_at(c, 0);
		if (sc->refuse) {
			runtime_api_answer_oldest(c, RUNTIME_API_FAILED, refused, strlen(refused));
			continue;
		}
		struct sim_reply r = {0};
		sim_reply_put(&r, "%s", "");
		/* The client stamps each command with clock_mono_s(). */
		execute(s, e->command, (uint64_t)(e->queued_at * 1e6 + 0.5), &r);
		bool stat = strcmp(e->command, "show stat -1 4 -1") == 0;
		bool states = strcmp(e->command, "show servers state") == 0;
		if (sc->lose) {
			runtime_api_answer_oldest(c, RUNTIME_API_FAILED, lost, strlen(lost));
		} else if (e->stream) {
			feed_stream(s, e, &r);
			runtime_api_answer_oldest(c, RUNTIME_API_OK, "", 0);
			if (stat)
				sim_invariants_stat_read(s);
			if (states)
				sim_invariants_state_read(s);
		} else {
			runtime_api_answer_oldest(c, RUNTIME_API_OK, r.p, r.len);
		}
		free(r.p);
	}
}

static void start_batch(struct sim *s, int i, struct runtime_api_client *c)
{
	struct sim_client *sc = &s->clients[i];
	unsigned pending = runtime_api_client_pending(c);
	unsigned n = 0;
	while (n < pending && n < c->settings.max_batch) {
		const struct runtime_api_entry *e = runtime_api_queue_at(c, n);
		if (e->stream && n > 0)
			break;
		n++;
		if (e->stream)
			break;
	}
	/* As the client's own start_batch: the exchange begins now. */
	if (c->on_exchange)
		c->on_exchange(c->on_exchange_ctx);
	double u = sim_rng_unit(&s->api_rng);
	uint64_t delay = u < 0.9 ? sim_rng_range(&s->api_rng, 100, 2000)
		       : u < 0.99 ? sim_rng_range(&s->api_rng, 2000, 50000)
				  : sim_rng_range(&s->api_rng, 50000, 400000);
	sc->in_flight = true;
	sc->n = n;
	sc->refuse = sim_now_us() < s->api_down_until_us;
	sc->lose = !sc->refuse && sim_now_us() < s->api_lossy_until_us &&
		   sim_rng_chance(&s->api_rng, 0.3);
	if (sc->refuse)
		delay = 1000;
	else if (sc->lose)
		delay = SIM_S; /* the client's timeout */
	sc->due_us = sim_now_us() + delay;
}

uint64_t sim_haproxy_next_due(struct sim *s)
{
	uint64_t next = UINT64_MAX;
	for (int i = 0; i < 2; i++) {
		struct runtime_api_client *c = client_of(s, i);
		if (!c)
			continue;
		if (s->clients[i].in_flight) {
			if (s->clients[i].due_us < next)
				next = s->clients[i].due_us;
		} else if (runtime_api_client_pending(c) > 0) {
			next = sim_now_us();
		}
	}
	return next;
}

void sim_haproxy_serve(struct sim *s)
{
	for (int round = 0; round < 64; round++) {
		bool moved = false;
		for (int i = 0; i < 2; i++) {
			struct runtime_api_client *c = client_of(s, i);
			if (!c)
				continue;
			struct sim_client *sc = &s->clients[i];
			if (sc->in_flight && sc->due_us <= sim_now_us()) {
				sc->in_flight = false;
				answer_batch(s, i, c);
				moved = true;
			}
			c = client_of(s, i);
			if (c && !sc->in_flight && runtime_api_client_pending(c) > 0) {
				start_batch(s, i, c);
				moved = true;
			}
		}
		if (!moved)
			return;
	}
}
