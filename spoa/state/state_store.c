/*
 * state_store.c - the breakers' state across restarts (see state_store.h).
 *
 * Writing: a breaker subscriber marks the state changed; a timer coalesces
 * changes into at most one snapshot per interval (the first change of a
 * quiet period waits out what is left of the interval, so the end of a
 * burst is always written). The loop encodes (msgpack-c, in memory) only
 * the breakers that hold something - dirty ones, or ones the agent changed
 * HAProxy for - and hands the buffer to a writer thread, which does the
 * blocking part (write, fsync, rename, fsync of the directory). A buffer
 * not yet taken by the thread is replaced by the newer one. The loop
 * never waits on the disk, except for the last snapshot at TERM/INT.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state/snapshot.h"
#include "state/snapshot_file.h"
#include "state/state_store.h"
#include "util/clock.h"
#include "util/container_of.h"
#include "util/errmsg.h"
#include "util/log.h"

struct state_store {
	struct ev_loop *loop;
	struct breakers *breakers;
	struct enforcer *const *enforcer;
	char path[STATE_PATH_MAX_LEN];
	bool enabled;
	/* The largest snapshot read: what max_breakers breakers can take.
	 * A file announcing more could not fit the table anyway, and its
	 * size is refused before a byte of it is parsed. */
	uint64_t max_bytes;
	uint32_t max_breakers; /* what max_bytes was derived from, for the log */
	double interval; /* seconds */
	bool changed;    /* something worth writing since the last snapshot */
	uint64_t generation; /* changes seen so far */
	double last_write; /* clock_mono_s() of the last hand-over */
	ev_timer timer;
	struct state_store_stats stats;

	/* The writer thread and what it shares with the loop (under lock). */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	msgpack_sbuffer *pending; /* handed over, not yet taken */
	uint64_t pending_generation; /* the change count it was encoded at */
	uint64_t written_generation; /* the change count of the last good write */
	bool stopping;
	unsigned done_ok, done_failed; /* written since the loop last looked */
	char last_error[256];
	ev_async done;
};

/* The wall clock, for the dates a snapshot carries (they must mean the
 * same to the next process, whose monotonic clock starts elsewhere, and
 * after a reboot anew) and the name of one moved aside (read by a person).
 * Never for the interval between writes. */
static int64_t wall_now_ms(void)
{
	return clock_wall_ms(); /* util/clock.h: the seam the simulation's clock takes */
}

/* ---- the writer thread ---- */

static void *writer_main(void *arg)
{
	struct state_store *s = arg;
	char err[256];

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->pending && !s->stopping)
			pthread_cond_wait(&s->wake, &s->lock);
		if (!s->pending)
			break; /* stopping, nothing left */
		msgpack_sbuffer *buf = s->pending;
		uint64_t generation = s->pending_generation;
		s->pending = NULL;
		pthread_mutex_unlock(&s->lock);

		bool ok = snapshot_file_write(s->path, buf->data, buf->size, err, sizeof(err));
		msgpack_sbuffer_free(buf);

		pthread_mutex_lock(&s->lock);
		if (ok) {
			s->done_ok++;
			s->written_generation = generation;
		} else {
			s->done_failed++;
			snprintf(s->last_error, sizeof(s->last_error), "%s", err);
		}
		if (!s->stopping)
			ev_async_send(s->loop, &s->done);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* The loop's side: what the thread wrote since the last look. */
static void collect_results(struct state_store *s)
{
	unsigned ok, failed;
	char error[256];

	pthread_mutex_lock(&s->lock);
	s->stats.up_to_date = s->written_generation == s->generation;
	ok = s->done_ok;
	failed = s->done_failed;
	s->done_ok = s->done_failed = 0;
	snprintf(error, sizeof(error), "%s", s->last_error);
	pthread_mutex_unlock(&s->lock);

	s->stats.writes += ok;
	if (ok)
		s->stats.last_write_mono_ms = clock_now_ms();
	if (failed) {
		/* Once per failing batch: the next change tries again. */
		if (s->stats.write_failures == 0 || ok)
			log_warning("state snapshot %s not written: %s", s->path, error);
		s->stats.write_failures += failed;
	}
}

static void done_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)loop;
	(void)revents;
	collect_results(container_of(w, struct state_store, done));
}

/* ---- encoding ---- */

static void add_memory(void *ctx, const char *address, const struct enforce_memory *mem)
{
	struct snapshot_breaker *b = ctx;

	if (!address) {
		b->has_agent_check = true;
		b->agent_check = *mem;
		return;
	}
	if (b->nb_haproxy == ENFORCE_MAX_HAPROXY)
		return;
	struct snapshot_haproxy *h = &b->haproxy[b->nb_haproxy++];
	snprintf(h->address, sizeof(h->address), "%s", address);
	h->mem = *mem;
}

/* A breaker a fresh agent could not rebuild: dirty, with trips in a row
 * (its backoff), or one the agent had changed HAProxy for. A forgettable
 * one with nothing done costs nothing to forget. */
static bool worth_keeping(const struct snapshot_breaker *b, const struct breaker *br)
{
	return !breaker_is_forgettable(br) || b->nb_haproxy > 0 || b->has_agent_check;
}

/* Encodes the snapshot; NULL when out of memory. */
static msgpack_sbuffer *encode(struct state_store *s)
{
	struct breaker_table *t = &s->breakers->table;
	struct snapshot_breaker *b = malloc(sizeof(*b));
	msgpack_sbuffer *body = msgpack_sbuffer_new();
	msgpack_sbuffer *out = msgpack_sbuffer_new();
	uint64_t mono = clock_now_ms();
	int64_t wall = wall_now_ms();
	uint32_t count = 0;
	bool ok = b && body && out;

	for (struct breaker_table_entry *e = ok ? breaker_table_next(t, NULL) : NULL; e && ok;
	     e = breaker_table_next(t, e)) {
		memset(b, 0, sizeof(*b));
		enforcer_memories(*s->enforcer, breaker_table_index(t, e), add_memory, b);
		/* Open on another node's verdict alone: no evidence of its own
		 * to keep, so it is written closed (its drains stay the agent's
		 * own, in the memory). A restarted agent reads the verdicts
		 * again at its first look: held again while the owner's verdict
		 * stands, or it lifts its drain once the verdict is gone - not
		 * open until a cool-down of its own. A breaker held by a peer
		 * with a trip of its own keeps its state. */
		struct breaker saved = e->breaker;
		if (saved.state == BREAKER_OPEN && saved.peer_adopted)
			saved.state = BREAKER_CLOSED;
		if (!worth_keeping(b, &saved))
			continue;
		snprintf(b->backend, sizeof(b->backend), "%s", e->backend);
		snprintf(b->server, sizeof(b->server), "%s", e->server);
		b->state = saved.state;
		b->failure_streak = e->breaker.failure_streak;
		b->since_wall_ms = wall - (int64_t)(mono - e->breaker.state_since_ms);
		b->trips = e->breaker.trips;
		b->trips_in_a_row = e->breaker.trips_in_a_row;
		b->window_failures = e->breaker.window_failures;
		b->window_volume = e->breaker.window_volume;
		b->last_trip_rule = (enum breaker_trip_rule)e->breaker.last_trip_rule;
		b->has_history = true;
		b->policy_fingerprint = snapshot_policy_fingerprint(e->breaker.policy);
		snprintf(b->endpoint, sizeof(b->endpoint), "%s",
			 enforcer_endpoint(*s->enforcer, breaker_table_index(t, e)));
		ok = snapshot_encode_breaker(body, b);
		count++;
	}
	struct snapshot_header h = {.format = SNAPSHOT_FORMAT, .written_at_ms = wall, .count = count};
	snprintf(h.agent_version, sizeof(h.agent_version), "%s", SPOA_VERSION);
	ok = ok && snapshot_encode_header(out, &h) &&
	     msgpack_sbuffer_write(out, body->data, body->size) == 0;
	free(b);
	if (body)
		msgpack_sbuffer_free(body);
	if (!ok && out) {
		msgpack_sbuffer_free(out);
		out = NULL;
	}
	return out;
}

/* Encodes now and hands the buffer to the thread. */
static void write_now(struct state_store *s)
{
	msgpack_sbuffer *buf = encode(s);

	s->changed = false;
	s->last_write = clock_mono_s();
	if (!buf) {
		s->stats.write_failures++;
		log_warning("state snapshot %s not written: out of memory", s->path);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (s->pending) /* the thread is still busy with an older one: replace it */
		msgpack_sbuffer_free(s->pending);
	s->pending = buf;
	s->pending_generation = s->generation;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct state_store *s = container_of(w, struct state_store, timer);
	if (s->changed)
		write_now(s);
}

/* Something changed: write when the interval since the last write is up. */
static void mark_changed(struct state_store *s)
{
	if (!s->enabled)
		return;
	s->changed = true;
	s->generation++;
	s->stats.up_to_date = false;
	if (ev_is_active(&s->timer))
		return;
	/* On the monotonic clock, as the timer runs: with ev_now() (the wall
	 * clock) a step back would hold every change for as long as the step. */
	double wait = s->last_write + s->interval - clock_mono_s();
	ev_timer_set(&s->timer, wait > 0 ? wait : 0., 0.);
	ev_timer_start(s->loop, &s->timer);
}

/* The breakers' subscriber: a clean breaker that stays clean changes
 * nothing a snapshot holds. */
static void on_recorded(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
			const struct breaker_cause *cause)
{
	(void)cause;
	if (breaker_event_is_transition(ev) || ev->dirty != BREAKER_DIRTY_UNCHANGED ||
	    breaker_is_dirty(&e->breaker))
		mark_changed(ctx);
}

static void on_removed(void *ctx, uint32_t index)
{
	(void)index;
	mark_changed(ctx); /* a dropped breaker leaves the snapshot */
}

/* ---- loading ---- */

struct restoring {
	struct state_store *s;
	uint64_t mono;
	int64_t wall;
	uint64_t restored, policy_changed, refused, memories_dropped;
};

static bool restore_one(void *ctx, const struct snapshot_breaker *b)
{
	struct restoring *r = ctx;
	struct breaker_table *t = &r->s->breakers->table;
	enum breaker_table_status st;
	struct breaker_table_entry *e =
		breaker_table_get_quiet(t, b->backend, strlen(b->backend), b->server,
					strlen(b->server), r->mono, &st);
	if (!e) {
		r->refused++;
		return true;
	}
	/* The wall clock says how long ago; this process's monotonic clock
	 * says when that was here. A future time (a clock set back) is now. */
	int64_t ago = r->wall - b->since_wall_ms;
	uint64_t since = r->mono;
	if (ago > 0)
		since = (uint64_t)ago < r->mono ? r->mono - (uint64_t)ago : 0;
	breaker_restore(&e->breaker, b->state, b->failure_streak, since, b->trips);
	/* A snapshot of an agent without backoff has no history: restore
	 * keeps its own reading of it (one trip for an open breaker). */
	if (b->has_history)
		breaker_restore_history(&e->breaker, b->trips_in_a_row, b->window_failures,
					b->window_volume, b->last_trip_rule);
	if (b->policy_fingerprint != snapshot_policy_fingerprint(e->breaker.policy))
		r->policy_changed++;
	uint32_t index = breaker_table_index(t, e);
	/* The worker it judged: a server that points elsewhere by the first
	 * look gets a clean breaker, and the drain restored below is lifted
	 * (link/endpoints.h). */
	enforcer_restore_endpoint(*r->s->enforcer, index, b->endpoint);
	for (unsigned i = 0; i < b->nb_haproxy; i++)
		if (!enforcer_remember(*r->s->enforcer, index, b->haproxy[i].address,
				       &b->haproxy[i].mem))
			r->memories_dropped++;
	if (b->has_agent_check && !enforcer_remember(*r->s->enforcer, index, NULL, &b->agent_check))
		r->memories_dropped++;
	r->restored++;
	return true;
}

/* A snapshot that cannot be used: said once, kept aside, never read again. */
static void refuse(struct state_store *s, const char *what)
{
	char moved[STATE_PATH_MAX_LEN + 32], err[256];

	s->stats.source = STATE_SOURCE_REFUSED;
	if (snapshot_file_move_aside(s->path, wall_now_ms() / 1000, moved, sizeof(moved), err,
				     sizeof(err)))
		log_error("state snapshot %s: %s; moved aside to %s; starting clean", s->path, what,
			  moved);
	else
		log_error("state snapshot %s: %s; starting clean (and it could not be moved aside: %s)",
			  s->path, what, err);
}

/* Whether a TOO_BIG read was refused for max_bytes itself (err ends "over
 * the limit of MAX_BYTES"), not for its header's own count. */
static bool over_max_bytes(const struct state_store *s, const char *err)
{
	char tail[64];
	int n = snprintf(tail, sizeof(tail), "over the limit of %llu",
			 (unsigned long long)s->max_bytes);
	size_t len = strlen(err);
	return n > 0 && (size_t)n <= len && strcmp(err + len - (size_t)n, tail) == 0;
}

/* err, saying where the limit comes from. */
static const char *with_max_breakers(const struct state_store *s, const char *err, char *out,
				     size_t size)
{
	snprintf(out, size, "%s for max_breakers %u", err, s->max_breakers);
	return out;
}

void state_store_load(struct state_store *s)
{
	char *data;
	size_t len;
	char err[256], what[320];
	struct snapshot_header h;

	if (!s->enabled)
		return;
	switch (snapshot_file_read(s->path, s->max_bytes, &data, &len, err, sizeof(err))) {
	case SNAPSHOT_READ_MISSING:
		s->stats.source = STATE_SOURCE_FRESH;
		log_notice("no state snapshot at %s: starting clean", s->path);
		return;
	case SNAPSHOT_READ_TOO_BIG:
		refuse(s, over_max_bytes(s, err) ? with_max_breakers(s, err, what, sizeof(what)) : err);
		return;
	case SNAPSHOT_READ_FAILED:
		s->stats.source = STATE_SOURCE_FRESH;
		log_error("state snapshot %s: %s; starting clean", s->path, err);
		return;
	case SNAPSHOT_READ_OK:
		break;
	}
	/* Checked whole first: a snapshot is used whole or not at all. */
	enum snapshot_status st = snapshot_decode(data, len, &h, NULL, NULL, err, sizeof(err));
	if (st != SNAPSHOT_OK) {
		snprintf(what, sizeof(what), "%s (%s)", snapshot_status_name(st), err);
		refuse(s, what);
		free(data);
		return;
	}
	struct restoring r = {.s = s, .mono = clock_now_ms(), .wall = wall_now_ms()};
	snapshot_decode(data, len, &h, restore_one, &r, err, sizeof(err));
	free(data);
	s->stats.source = STATE_SOURCE_SNAPSHOT;
	s->stats.restored = r.restored;
	log_notice("restored %llu breaker(s) from %s (written %llds ago by spoa-breaker %s)",
		   (unsigned long long)r.restored, s->path,
		   (long long)((r.wall - h.written_at_ms) / 1000), h.agent_version);
	if (r.policy_changed)
		log_notice("%llu of them followed another policy then: they keep their state "
			   "under today's",
			   (unsigned long long)r.policy_changed);
	if (r.refused)
		log_warning("%llu breaker(s) of the snapshot did not fit in the table",
			    (unsigned long long)r.refused);
	if (r.memories_dropped)
		log_notice("%llu memory(ies) of HAProxy sockets no longer configured were dropped",
			   (unsigned long long)r.memories_dropped);
	breakers_rearm(s->breakers);
}

/* ---- life ---- */

struct state_store *state_store_new(struct ev_loop *loop, const struct state_settings *c,
				    struct breakers *breakers, struct enforcer *const *enforcer,
				    char *err, size_t err_size)
{
	struct state_store *s = calloc(1, sizeof(*s));
	if (!s) {
		errmsg_set(err, err_size, "out of memory");
		return NULL;
	}
	s->loop = loop;
	s->breakers = breakers;
	s->enforcer = enforcer;
	s->interval = (double)c->interval_ms / 1000.0;
	s->max_bytes = snapshot_max_bytes(breakers->table.max_entries);
	s->max_breakers = breakers->table.max_entries;
	s->last_write = -1e9;
	snprintf(s->path, sizeof(s->path), "%s", c->file);
	s->stats.path = s->path;
	s->stats.source = STATE_SOURCE_OFF;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	ev_timer_init(&s->timer, timer_cb, 0., 0.);
	ev_async_init(&s->done, done_cb);

	char why[256];
	if (s->path[0] && !snapshot_file_dir_writable(s->path, why, sizeof(why))) {
		if (c->file_set) {
			errmsg_set(err, err_size, "state_file %s: %s", s->path, why);
			state_store_close(s, false);
			return NULL;
		}
		log_warning("state_file %s: %s: the breakers' state will not survive a restart "
			    "(set state_file, or none to say so)", s->path, why);
		s->path[0] = '\0';
	}
	if (!s->path[0])
		return s; /* off: a store that keeps nothing */

	if (pthread_create(&s->thread, NULL, writer_main, s) != 0) {
		errmsg_set(err, err_size, "state_file %s: cannot start the writer thread", s->path);
		state_store_close(s, false);
		return NULL;
	}
	s->thread_started = true;
	ev_async_start(loop, &s->done);
	struct breaker_subscriber sub = {
		.name = "state snapshot", .recorded = on_recorded, .removed = on_removed, .ctx = s};
	if (!breakers_subscribe(breakers, &sub)) {
		errmsg_set(err, err_size, "too many breaker subscribers");
		state_store_close(s, false);
		return NULL;
	}
	s->enabled = true;
	s->stats.up_to_date = true; /* nothing changed yet */
	log_notice("state snapshot: %s (at most one write per %.1fs)", s->path, s->interval);
	return s;
}

void state_store_set_interval(struct state_store *s, uint64_t interval_ms)
{
	s->interval = (double)interval_ms / 1000.0;
}

void state_store_close(struct state_store *s, bool last_write)
{
	if (!s)
		return;
	if (s->enabled && last_write)
		write_now(s); /* the last one: what TERM found */
	if (s->thread_started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
		collect_results(s);
		ev_async_stop(s->loop, &s->done);
	}
	if (s->enabled)
		log_notice("state snapshot written to %s (%llu write(s), %llu failed)", s->path,
			   (unsigned long long)s->stats.writes,
			   (unsigned long long)s->stats.write_failures);
	breakers_unsubscribe(s->breakers, s);
	ev_timer_stop(s->loop, &s->timer);
	if (s->pending)
		msgpack_sbuffer_free(s->pending);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

const struct state_store_stats *state_store_stats(const struct state_store *s)
{
	return &s->stats;
}
