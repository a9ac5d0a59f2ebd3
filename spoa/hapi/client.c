/*
 * client.c - the Runtime API client on the agent's libev loop.
 *
 * One exchange at a time per HAProxy socket: take up to max_batch queued
 * commands, join them with "; " into one line, open a fresh non-blocking
 * connection, write the line in one send, read until HAProxy closes (it
 * does after one line in non-interactive mode), split the reply by position
 * and call back in order. Everything is bounded: the queue (max_queue), the
 * line (RUNTIME_API_MAX_LINE), the reply (max_reply) and the time (timeout).
 *
 * A streamed command goes alone in its exchange, so its reply is all its
 * output: it is handed to the caller as it arrives, one read of at most
 * RUNTIME_API_STREAM_WINDOW bytes per loop turn, and never held whole -
 * a `show stat` of tens of thousands of servers neither waits for its
 * last byte nor stalls the loop while it is parsed.
 *
 * Phases: IDLE -> CONNECTING -> WRITING -> READING -> IDLE, or -> BACKOFF
 * after a failure to reach HAProxy, then IDLE again when the backoff ends.
 * A batch is only ever started from a loop callback (the kick timer, the
 * backoff timer, or the end of the previous exchange), so runtime_api_submit
 * never calls back into its caller.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "hapi/runtime_api.h"
#include "hapi/client-t.h"
#include "util/clock.h"
#include "util/sockaddr.h"
#include "util/log.h"
#include "util/container_of.h"
#include "util/errmsg.h"

static void io_cb(struct ev_loop *loop, ev_io *w, int revents);
static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void deadline_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void backoff_cb(struct ev_loop *loop, ev_timer *w, int revents);

void runtime_api_settings_default(struct runtime_api_settings *s)
{
	s->max_queue = RUNTIME_API_DEFAULT_MAX_QUEUE;
	s->max_batch = RUNTIME_API_DEFAULT_MAX_BATCH;
	s->timeout = RUNTIME_API_DEFAULT_TIMEOUT;
	s->backoff_min = RUNTIME_API_DEFAULT_BACKOFF_MIN;
	s->backoff_max = RUNTIME_API_DEFAULT_BACKOFF_MAX;
	s->max_reply = RUNTIME_API_DEFAULT_MAX_REPLY;
}

/* --- address --- */

/* --- life --- */

struct runtime_api_client *runtime_api_client_new(struct ev_loop *loop, const char *address,
				      const struct runtime_api_settings *settings, char *err,
				      size_t err_size)
{
	struct runtime_api_settings s;
	struct sockaddr_storage ss;
	socklen_t ss_len;

	if (settings)
		s = *settings;
	else
		runtime_api_settings_default(&s);
	if (s.max_queue == 0 || s.max_batch == 0 || !(s.timeout > 0) || !(s.backoff_min > 0) ||
	    s.backoff_max < s.backoff_min || s.max_reply == 0) {
		errmsg_set(err, err_size,
			 "Runtime API settings: max_queue, max_batch, timeout, backoff_min and "
			 "max_reply must be positive, and backoff_max at least backoff_min");
		return NULL;
	}
	if (!sockaddr_parse(address, "Runtime API address", &ss, &ss_len, err, err_size))
		return NULL;

	struct runtime_api_client *c = calloc(1, sizeof(*c));
	if (c) {
		c->queue = calloc(s.max_queue, sizeof(*c->queue));
		c->parts = calloc(s.max_batch, sizeof(*c->parts));
	}
	if (!c || !c->queue || !c->parts) {
		if (c) {
			free(c->queue);
			free(c->parts);
		}
		free(c);
		errmsg_set(err, err_size, "Runtime API client: out of memory");
		return NULL;
	}
	c->loop = loop;
	c->settings = s;
	c->addr = ss;
	c->addr_len = ss_len;
	snprintf(c->address, sizeof(c->address), "%s", address);
	c->fd = -1;
	c->phase = PHASE_IDLE;
	c->backoff_delay = s.backoff_min;
	ev_io_init(&c->io, io_cb, -1, 0);
	ev_timer_init(&c->kick, kick_cb, 0., 0.);
	ev_timer_init(&c->deadline, deadline_cb, s.timeout, 0.);
	ev_timer_init(&c->backoff, backoff_cb, s.backoff_min, 0.);
	ev_timer_init(&c->expire, runtime_api_expire_cb, s.timeout, 0.);
	return c;
}

static void close_connection(struct runtime_api_client *c)
{
	ev_io_stop(c->loop, &c->io);
	ev_timer_stop(c->loop, &c->deadline);
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

void runtime_api_client_free(struct runtime_api_client *c)
{
	if (!c)
		return;
	c->freeing = true;
	close_connection(c);
	ev_timer_stop(c->loop, &c->kick);
	ev_timer_stop(c->loop, &c->backoff);
	ev_timer_stop(c->loop, &c->expire);
	while (c->count > 0)
		runtime_api_answer_oldest(c, RUNTIME_API_FAILED, "client freed", strlen("client freed"));
	free(c->queue);
	free(c->parts);
	free(c->in);
	free(c);
}

/* --- submitting --- */

/* One command and nothing else: HAProxy splits a line at ';' (unless
 * escaped with '\'), ends it at '\n', and answers an empty command with
 * its whole help text. Any of these would shift every reply after it. */
static const char *command_problem(const char *command, size_t len)
{
	if (len == 0 || strspn(command, " \t") == len)
		return "it is empty";
	if (len > RUNTIME_API_MAX_LINE - 1)
		return "it is too long";
	if (strpbrk(command, ";\r\n\\"))
		return "it holds ';', '\\', CR or LF";
	return NULL;
}


static bool submit(struct runtime_api_client *c, const char *command, runtime_api_stream_fn stream,
		   runtime_api_reply_fn fn, void *ctx)
{
	if (c->freeing || !command || !fn)
		return false;
	size_t len = strlen(command);
	const char *problem = command_problem(command, len);
	if (problem) {
		char shown[64];
		size_t n = len < sizeof(shown) - 1 ? len : sizeof(shown) - 1;
		for (size_t i = 0; i < n; i++)
			shown[i] = command[i] >= 0x20 && command[i] < 0x7f ? command[i] : '?';
		shown[n] = '\0';
		log_error("Runtime API %s: refusing command '%s': %s", c->address, shown, problem);
		return false;
	}
	if (c->count >= c->settings.max_queue) {
		c->stats.dropped++;
		if (!c->full_logged)
			log_warning("Runtime API %s: %u commands pending, dropping new ones",
				    c->address, c->count);
		c->full_logged = true;
		return false;
	}
	char *copy = malloc(len + 1);
	if (!copy) {
		log_error("Runtime API %s: out of memory for a command", c->address);
		return false;
	}
	memcpy(copy, command, len + 1);

	struct runtime_api_entry *e = &c->queue[(c->head + c->count) % c->settings.max_queue];
	*e = (struct runtime_api_entry){copy, len, stream, fn, ctx, clock_mono_s()};
	c->count++;

	if (c->phase == PHASE_IDLE && !ev_is_active(&c->kick))
		ev_timer_start(c->loop, &c->kick);
	else if (c->phase == PHASE_BACKOFF)
		runtime_api_arm_expire(c);
	return true;
}

bool runtime_api_submit(struct runtime_api_client *c, const char *command, runtime_api_reply_fn fn, void *ctx)
{
	return submit(c, command, NULL, fn, ctx);
}

bool runtime_api_submit_streamed(struct runtime_api_client *c, const char *command,
				 runtime_api_stream_fn stream, runtime_api_reply_fn fn, void *ctx)
{
	return stream ? submit(c, command, stream, fn, ctx) : false;
}

/* --- the end of an exchange --- */

static void fail_batch(struct runtime_api_client *c, const char *reason)
{
	unsigned n = c->inflight;
	for (unsigned i = 0; i < n; i++)
		runtime_api_answer_oldest(c, RUNTIME_API_FAILED, reason, strlen(reason));
}

static void kick_next(struct runtime_api_client *c)
{
	if (c->phase == PHASE_IDLE && c->count > 0 && !ev_is_active(&c->kick))
		ev_timer_start(c->loop, &c->kick);
}

/* HAProxy could not be reached or dropped us: fail the batch, wait. */
static void fail_unreachable(struct runtime_api_client *c, const char *reason)
{
	close_connection(c);
	runtime_api_mark_down(c, reason);
	c->phase = PHASE_BACKOFF;
	ev_timer_set(&c->backoff, c->backoff_delay, 0.);
	ev_timer_start(c->loop, &c->backoff);
	c->backoff_delay *= 2;
	if (c->backoff_delay > c->settings.backoff_max)
		c->backoff_delay = c->settings.backoff_max;
	fail_batch(c, reason);
	runtime_api_expire_waiting(c);
	runtime_api_arm_expire(c);
}

/* HAProxy answered, but not in a way we can attribute to each command:
 * nothing is wrong with the socket, so no backoff. */
static void fail_unsplittable(struct runtime_api_client *c, const char *reason)
{
	close_connection(c);
	runtime_api_mark_up(c);
	c->phase = PHASE_IDLE;
	log_warning("Runtime API %s: %s; failing %u command%s (they may have been applied)",
		    c->address, reason, c->inflight, c->inflight == 1 ? "" : "s");
	fail_batch(c, reason);
	kick_next(c);
}

static void finish_exchange(struct runtime_api_client *c)
{
	size_t found;
	unsigned n = c->inflight;

	close_connection(c);
	if (c->in_len == 0) {
		fail_unreachable(c, "closed without answering");
		return;
	}
	if (!runtime_api_split_reply(c->in, c->in_len, c->parts, n, &found)) {
		char reason[128];
		snprintf(
		    reason, sizeof(reason),
		    "reply could not be split by command (%zu of %u outputs found in %zu bytes)",
		    found, n, c->in_len);
		fail_unsplittable(c, reason);
		return;
	}
	runtime_api_mark_up(c);
	c->phase = PHASE_IDLE;
	/* Each output is followed by its terminating '\n', which is ours to
	 * turn into the '\0' the callback contract promises. */
	for (unsigned i = 0; i < n; i++)
		c->in[c->parts[i].ptr - c->in + c->parts[i].len] = '\0';
	for (unsigned i = 0; i < n; i++)
		runtime_api_answer_oldest(c, RUNTIME_API_OK, c->parts[i].ptr, c->parts[i].len);
	kick_next(c);
}

/* --- the exchange --- */

static void watch(struct runtime_api_client *c, int events)
{
	ev_io_stop(c->loop, &c->io);
	ev_io_set(&c->io, c->fd, events);
	ev_io_start(c->loop, &c->io);
}

/* Joins as many queued commands as fit into one line; a streamed command
 * goes alone, so that its reply is its output and nothing else. */
static void build_line(struct runtime_api_client *c)
{
	size_t len = 0;
	unsigned n = 0;

	while (n < c->count && n < c->settings.max_batch) {
		const struct runtime_api_entry *e = runtime_api_queue_at(c, n);
		size_t sep = n > 0 ? 2 : 0;
		if (len + sep + e->len + 1 > sizeof(c->line) || (e->stream && n > 0))
			break;
		memcpy(c->line + len, "; ", sep);
		memcpy(c->line + len + sep, e->command, e->len);
		len += sep + e->len;
		n++;
		if (e->stream)
			break;
	}
	c->line[len++] = '\n';
	c->line_len = len;
	c->line_sent = 0;
	c->inflight = n;
	c->streaming = n == 1 && runtime_api_queue_at(c, 0)->stream;
	c->streamed = 0;
	c->stream_tail[0] = c->stream_tail[1] = '\0';
}

void runtime_api_client_on_exchange(struct runtime_api_client *c, runtime_api_exchange_fn fn,
				    void *ctx)
{
	c->on_exchange = fn;
	c->on_exchange_ctx = ctx;
}

static void start_batch(struct runtime_api_client *c)
{
	char reason[160];

	build_line(c);
	c->in_len = 0;
	c->started = clock_mono_s();
	if (c->on_exchange)
		c->on_exchange(c->on_exchange_ctx);
	c->stats.connects++;
	c->fd = socket(c->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		c->stats.connect_failures++;
		snprintf(reason, sizeof(reason), "socket: %s", strerror(errno));
		fail_unreachable(c, reason);
		return;
	}
	ev_timer_set(&c->deadline, c->settings.timeout, 0.);
	ev_timer_start(c->loop, &c->deadline);
	if (connect(c->fd, (const struct sockaddr *)&c->addr, c->addr_len) == 0) {
		c->phase = PHASE_WRITING;
	} else if (errno == EINPROGRESS) {
		c->phase = PHASE_CONNECTING;
	} else {
		/* EAGAIN here is a unix socket whose accept queue is full. */
		c->stats.connect_failures++;
		snprintf(reason, sizeof(reason), "connect: %s", strerror(errno));
		fail_unreachable(c, reason);
		return;
	}
	watch(c, EV_WRITE);
}

static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct runtime_api_client *c = container_of(w, struct runtime_api_client, kick);
	(void)loop;
	(void)revents;

	if (c->phase == PHASE_IDLE && c->count > 0)
		start_batch(c);
}

static void backoff_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct runtime_api_client *c = container_of(w, struct runtime_api_client, backoff);
	(void)loop;
	(void)revents;

	c->phase = PHASE_IDLE;
	if (c->count > 0) {
		ev_timer_stop(c->loop, &c->expire);
		start_batch(c);
	}
}

static void deadline_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct runtime_api_client *c = container_of(w, struct runtime_api_client, deadline);
	char reason[128];
	(void)loop;
	(void)revents;

	c->stats.timeouts++;
	snprintf(reason, sizeof(reason), "%s within %.1fs",
		 c->phase == PHASE_CONNECTING ? "could not connect" : "no complete reply",
		 c->settings.timeout);
	fail_unreachable(c, reason);
}

static bool connect_done(struct runtime_api_client *c)
{
	int err = 0;
	socklen_t len = sizeof(err);
	char reason[160];

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == 0)
		return true;
	c->stats.connect_failures++;
	snprintf(reason, sizeof(reason), "connect: %s", strerror(err));
	fail_unreachable(c, reason);
	return false;
}

/* Returns false if the exchange ended (failed). */
static bool write_line(struct runtime_api_client *c)
{
	char reason[160];

	while (c->line_sent < c->line_len) {
		ssize_t n =
		    send(c->fd, c->line + c->line_sent, c->line_len - c->line_sent, MSG_NOSIGNAL);
		if (n > 0) {
			c->line_sent += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return true;
		} else {
			snprintf(reason, sizeof(reason), "write: %s",
				 n < 0 ? strerror(errno) : "nothing written");
			fail_unreachable(c, reason);
			return false;
		}
	}
	c->phase = PHASE_READING;
	watch(c, EV_READ);
	return true;
}

/* Reads what has arrived; on EOF the exchange is complete. */
static void read_reply(struct runtime_api_client *c)
{
	char reason[160];

	/* One byte beyond max_reply is enough to know it is exceeded. */
	size_t limit = c->settings.max_reply + 1;

	/* A few reads per wakeup: a long `show stat` must not hog the loop. */
	for (int i = 0; i < 16; i++) {
		/* Never read into zero bytes of room: that returns 0, like EOF. */
		if (c->in_cap - c->in_len < 4096 && c->in_cap < limit) {
			size_t cap = c->in_cap ? c->in_cap * 2 : 16384;
			if (cap > limit)
				cap = limit;
			char *grown = realloc(c->in, cap);
			if (!grown) {
				fail_unsplittable(c, "out of memory for the reply");
				return;
			}
			c->in = grown;
			c->in_cap = cap;
		}
		ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
		if (n > 0) {
			c->in_len += (size_t)n;
			if (c->in_len > c->settings.max_reply) {
				snprintf(reason, sizeof(reason), "reply larger than %zu bytes",
					 c->settings.max_reply);
				fail_unsplittable(c, reason);
				return;
			}
		} else if (n == 0) {
			finish_exchange(c);
			return;
		} else if (errno == EINTR) {
			continue;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			return;
		} else {
			snprintf(reason, sizeof(reason), "read: %s", strerror(errno));
			fail_unreachable(c, reason);
			return;
		}
	}
}

/* A streamed reply ended with the connection: the rest goes to the
 * stream, and the command is answered. */
static void finish_stream(struct runtime_api_client *c)
{
	const struct runtime_api_entry *e = runtime_api_queue_at(c, 0);

	close_connection(c);
	if (c->streamed == 0) {
		fail_unreachable(c, "closed without answering");
		return;
	}
	e->stream(e->ctx, c->in, c->in_len, true);
	c->in_len = 0;
	/* An output ends with an empty line; without it the reply was cut. */
	if (c->stream_tail[0] != '\n' || c->stream_tail[1] != '\n') {
		fail_unsplittable(c, "reply cut short (no empty line at its end)");
		return;
	}
	runtime_api_mark_up(c);
	c->phase = PHASE_IDLE;
	runtime_api_answer_oldest(c, RUNTIME_API_OK, "", 0);
	kick_next(c);
}

/* Reads what has arrived of a streamed reply and hands it over. */
static void read_stream(struct runtime_api_client *c)
{
	const struct runtime_api_entry *e = runtime_api_queue_at(c, 0);
	char reason[160];

	if (c->in_cap < RUNTIME_API_STREAM_WINDOW) {
		char *grown = realloc(c->in, RUNTIME_API_STREAM_WINDOW);
		if (!grown) {
			fail_unsplittable(c, "out of memory for the reply");
			return;
		}
		c->in = grown;
		c->in_cap = RUNTIME_API_STREAM_WINDOW;
	}
	/* One read per loop turn: what is parsed in a turn stays bounded by
	 * the window, whatever the size of the reply. */
	ssize_t n = read(c->fd, c->in + c->in_len, RUNTIME_API_STREAM_WINDOW - c->in_len);
	if (n == 0) {
		finish_stream(c);
		return;
	}
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		snprintf(reason, sizeof(reason), "read: %s", strerror(errno));
		fail_unreachable(c, reason);
		return;
	}
	if (n >= 2) {
		memcpy(c->stream_tail, c->in + c->in_len + n - 2, 2);
	} else {
		c->stream_tail[0] = c->stream_tail[1];
		c->stream_tail[1] = c->in[c->in_len];
	}
	c->in_len += (size_t)n;
	c->streamed += (size_t)n;
	size_t used = e->stream(e->ctx, c->in, c->in_len, false);
	if (used > c->in_len)
		used = c->in_len;
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
	if (c->in_len == RUNTIME_API_STREAM_WINDOW) {
		snprintf(reason, sizeof(reason), "a line of the reply is longer than %u bytes",
			 RUNTIME_API_STREAM_WINDOW);
		fail_unsplittable(c, reason);
		return;
	}
	/* The deadline bounds a silence, not a reply that keeps coming; a
	 * reply that trickles on is cut at RUNTIME_API_STREAM_TIMEOUTS times
	 * the timeout. On the monotonic clock: a step of the wall clock would
	 * cut a reply that just began, or let one trickle on for hours. */
	double now = clock_mono_s();
	if (now - c->started > c->settings.timeout * RUNTIME_API_STREAM_TIMEOUTS) {
		c->stats.timeouts++;
		snprintf(reason, sizeof(reason), "reply still coming after %.1fs",
			 now - c->started);
		fail_unsplittable(c, reason);
		return;
	}
	ev_timer_stop(c->loop, &c->deadline);
	ev_timer_set(&c->deadline, c->settings.timeout, 0.);
	ev_timer_start(c->loop, &c->deadline);
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct runtime_api_client *c = (struct runtime_api_client *)w;
	(void)loop;
	(void)revents;

	if (c->phase == PHASE_CONNECTING) {
		if (!connect_done(c))
			return;
		c->phase = PHASE_WRITING;
	}
	if (c->phase == PHASE_WRITING)
		write_line(c);
	else if (c->phase == PHASE_READING && c->streaming)
		read_stream(c);
	else if (c->phase == PHASE_READING)
		read_reply(c);
}
