/*
 * log.c - levelled logging to stderr (with a timestamp) or syslog, that
 * never blocks the event loop (see log.h).
 *
 * stderr: a pipe or a terminal is opened again through /proc/self/fd/2, so
 * that our descriptor can be non-blocking without changing the one we share
 * with whoever started us (a shell would find its terminal non-blocking).
 * Where that cannot be done, stderr itself is made non-blocking; a socket
 * (systemd's journal stream) is written with MSG_DONTWAIT; a regular file
 * never waits for a reader and is written as it is. Lines are appended whole
 * to a bounded buffer and written from it; what is left waits for the loop
 * to see the output writable. A line that does not fit is dropped.
 *
 * syslog: our own datagram to /dev/log sent with MSG_DONTWAIT, one per
 * line, instead of syslog(3), whose send() blocks when the daemon behind
 * /dev/log stops reading. A datagram that cannot go now is dropped.
 *
 * JSON (log_set_format): the same lines, each one object (log_json.h); the
 * timestamp is its "time", with syslog too, so the body says when even
 * after a relay rewrote the header.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/log_json.h"

static enum log_level current_level = LOG_LEVEL_NOTICE;
static bool to_syslog;
static enum log_format format = LOG_FORMAT_TEXT;
static char syslog_ident[32] = "spoa-breaker";

static const char *const level_names[] = {"error", "warning", "notice", "info", "debug"};
static const int syslog_priorities[] = {LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG};

/* ---- the output: a bounded buffer, written without blocking ---- */

static struct {
	int fd;         /* -1 until first used */
	bool is_socket; /* send(MSG_DONTWAIT) rather than write() */
	bool broken;    /* a write failed for good: lines are dropped */
	char buf[LOG_BUFFER_SIZE];
	size_t len;
	uint64_t dropped;          /* lines, since start */
	uint64_t dropped_untold;   /* lines, since the last "dropped" line */
	uint64_t suppressed;       /* by the rate limit, since start */
	struct ev_loop *loop;
	ev_io writable;
	ev_timer tick;
	int syslog_fd; /* -1: not connected */
} out = {.fd = -1, .syslog_fd = -1};

static void open_stderr(void)
{
	struct stat st;

	out.fd = STDERR_FILENO;
	if (fstat(STDERR_FILENO, &st) != 0)
		return;
	if (S_ISSOCK(st.st_mode)) {
		out.is_socket = true;
	} else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
		int fd = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd >= 0) {
			out.fd = fd;
			return;
		}
		/* No /proc, or a FIFO with no reader right now: our stderr
		 * itself, then, shared or not. Never blocking comes first. */
		int flags = fcntl(STDERR_FILENO, F_GETFL);
		if (flags >= 0)
			fcntl(STDERR_FILENO, F_SETFL, flags | O_NONBLOCK);
	}
}

static size_t count_lines(const char *p, size_t len)
{
	size_t n = 0;
	for (const char *end = p + len; (p = memchr(p, '\n', (size_t)(end - p))); p++)
		n++;
	return n;
}

/* Counted for /metrics; on stderr also told once the output drains (a
 * datagram lost to syslog is not worth another one). */
static void lines_dropped(uint64_t n)
{
	out.dropped += n;
	if (!to_syslog)
		out.dropped_untold += n;
}

static void watch_writable(bool on)
{
	if (!out.loop || out.fd < 0)
		return;
	if (on && !ev_is_active(&out.writable)) {
		ev_io_set(&out.writable, out.fd, EV_WRITE);
		ev_io_start(out.loop, &out.writable);
	} else if (!on && ev_is_active(&out.writable)) {
		ev_io_stop(out.loop, &out.writable);
	}
}

/* Writes what the buffer holds, as far as the output takes it now. */
static void flush(void)
{
	size_t off = 0;

	while (off < out.len && !out.broken) {
		ssize_t n = out.is_socket
				    ? send(out.fd, out.buf + off, out.len - off, MSG_DONTWAIT | MSG_NOSIGNAL)
				    : write(out.fd, out.buf + off, out.len - off);
		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		else
			out.broken = true; /* EPIPE, EBADF, ENOSPC: nobody will read these */
	}
	if (out.broken) {
		lines_dropped(count_lines(out.buf + off, out.len - off));
		off = out.len;
	}
	memmove(out.buf, out.buf + off, out.len - off);
	out.len -= off;
	watch_writable(out.len > 0);
}

static void append_line(const char *line, size_t len)
{
	if (out.broken || len > sizeof(out.buf) - out.len) {
		lines_dropped(1);
		return;
	}
	memcpy(out.buf + out.len, line, len);
	out.len += len;
}

/* A line's text and the fields its JSON form carries beside it. */
struct line {
	enum log_level level;
	const char *text;
	const struct log_field *fields;
	size_t nb_fields;
};

/* "2026-12-02T11:09:07.123Z": UTC, to the millisecond. */
static void timestamp(char *stamp, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char secs[40];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(secs, sizeof(secs), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp, size, "%s.%03ldZ", secs, ts.tv_nsec / 1000000);
}

/* "TIMESTAMP [level] text\n", or the JSON object and "\n"; cut to size
 * (at least LOG_JSON_LINE_MAX) but always ending the line. */
static void format_stderr_line(char *buf, size_t size, const struct line *l)
{
	char stamp[64];

	timestamp(stamp, sizeof(stamp));
	if (format == LOG_FORMAT_JSON) {
		size_t n = log_json_format(buf, size - 1, stamp, level_names[l->level], l->text,
					   l->fields, l->nb_fields);
		buf[n] = '\n';
		buf[n + 1] = '\0';
		return;
	}
	int n = snprintf(buf, size, "%s [%s] %s\n", stamp, level_names[l->level], l->text);
	if (n < 0)
		buf[0] = '\0';
	else if ((size_t)n >= size)
		buf[size - 2] = '\n';
}

/* Once the output drained, it says what it lost, before the next line. */
static void tell_dropped(void)
{
	char buf[LOG_JSON_LINE_MAX + 1], text[128];

	if (!out.dropped_untold || out.len > 0 || out.broken)
		return;
	snprintf(text, sizeof(text), "%llu log line%s dropped: the log output did not keep up",
		 (unsigned long long)out.dropped_untold, out.dropped_untold == 1 ? "" : "s");
	out.dropped_untold = 0;
	format_stderr_line(buf, sizeof(buf),
			   &(struct line){.level = LOG_LEVEL_WARNING, .text = text});
	append_line(buf, strlen(buf));
}

/* One stderr line: timestamp, level, text. */
static void emit_stderr(const struct line *l)
{
	char buf[LOG_JSON_LINE_MAX + 1];

	if (out.fd < 0)
		open_stderr();
	if (out.len)
		flush(); /* make room first: the reader may have come back */
	tell_dropped();
	format_stderr_line(buf, sizeof(buf), l);
	append_line(buf, strlen(buf));
	flush();
}

static void syslog_connect(void)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", "/dev/log");
	if (out.syslog_fd < 0)
		out.syslog_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (out.syslog_fd >= 0 &&
	    connect(out.syslog_fd, (const struct sockaddr *)&sun, sizeof(sun)) != 0) {
		close(out.syslog_fd);
		out.syslog_fd = -1;
	}
}

/* One datagram as syslog(3) would write it: <PRI>TIMESTAMP IDENT[PID]: text,
 * or the JSON object in place of the text. */
static void emit_syslog(const struct line *l)
{
	char line[LOG_JSON_LINE_MAX + 128], stamp[32], body[LOG_JSON_LINE_MAX];
	const char *text = l->text;
	time_t now = time(NULL);
	struct tm tm;

	if (format == LOG_FORMAT_JSON) {
		char iso[64];
		timestamp(iso, sizeof(iso));
		log_json_format(body, sizeof(body), iso, level_names[l->level], l->text, l->fields,
				l->nb_fields);
		text = body;
	}
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", &tm);
	int n = snprintf(line, sizeof(line), "<%d>%s %s[%d]: %s",
			 LOG_DAEMON | syslog_priorities[l->level], stamp, syslog_ident,
			 (int)getpid(), text);
	if (n < 0)
		return;
	size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (out.syslog_fd < 0)
			syslog_connect();
		if (out.syslog_fd < 0)
			break;
		if (send(out.syslog_fd, line, len, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			return;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break; /* the daemon is not reading: drop, never wait */
		close(out.syslog_fd); /* it restarted: connect again, once */
		out.syslog_fd = -1;
	}
	lines_dropped(1);
}

static void emit_fields(enum log_level level, const char *text, const struct log_field *fields,
			size_t nb)
{
	const struct line l = {.level = level, .text = text, .fields = fields, .nb_fields = nb};
	if (to_syslog)
		emit_syslog(&l);
	else
		emit_stderr(&l);
}

static void emit(enum log_level level, const char *text)
{
	emit_fields(level, text, NULL, 0);
}

/* ---- the rate limit, per call site ---- */

#define LOG_SITES 128

struct site {
	const char *fmt; /* the call site; NULL: a free slot */
	enum log_level level;
	double window_start;
	unsigned lines;      /* written in this window */
	uint64_t suppressed; /* held back in this window */
	char last[200];      /* the last line held back */
};

static struct site sites[LOG_SITES];
static struct site overflow_site; /* every call site once the table is full */

static double monotonic_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Format strings are literals: their address names the call site. */
static struct site *site_of(const char *fmt)
{
	size_t h = ((size_t)(uintptr_t)fmt >> 3) % LOG_SITES;
	for (size_t i = 0; i < 16; i++) {
		struct site *s = &sites[(h + i) % LOG_SITES];
		if (s->fmt == fmt)
			return s;
		if (!s->fmt) {
			s->fmt = fmt;
			return s;
		}
	}
	return &overflow_site;
}

static void site_summarise(struct site *s)
{
	if (!s->suppressed)
		return;
	char line[400];
	snprintf(line, sizeof(line), "%llu more suppressed in %.0fs, the last: %s",
		 (unsigned long long)s->suppressed, LOG_SITE_WINDOW, s->last);
	s->suppressed = 0;
	emit(s->level, line);
}

/* Whether a line of this site may be written now; counts it if not. */
static bool site_allows(struct site *s, enum log_level level, double now)
{
	if (now - s->window_start >= LOG_SITE_WINDOW) {
		site_summarise(s);
		s->window_start = now;
		s->lines = 0;
	}
	s->level = level;
	if (s->lines < LOG_SITE_BURST) {
		s->lines++;
		return true;
	}
	s->suppressed++;
	out.suppressed++;
	return false;
}

static void summarise_ended_windows(double now, bool all)
{
	for (size_t i = 0; i < LOG_SITES; i++)
		if (sites[i].suppressed && (all || now - sites[i].window_start >= LOG_SITE_WINDOW))
			site_summarise(&sites[i]);
	if (overflow_site.suppressed && (all || now - overflow_site.window_start >= LOG_SITE_WINDOW))
		site_summarise(&overflow_site);
}

/* ---- the interface ---- */

void log_init(enum log_level level, bool use_syslog, const char *ident)
{
	current_level = level;
	to_syslog = use_syslog;
	if (ident)
		snprintf(syslog_ident, sizeof(syslog_ident), "%s", ident);
	if (use_syslog && out.syslog_fd < 0)
		syslog_connect();
}

static void writable_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	tell_dropped();
	flush();
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	summarise_ended_windows(monotonic_now(), false);
}

void log_attach(struct ev_loop *loop)
{
	out.loop = loop;
	if (out.fd < 0)
		open_stderr();
	ev_io_init(&out.writable, writable_cb, out.fd >= 0 ? out.fd : STDERR_FILENO, EV_WRITE);
	ev_timer_init(&out.tick, tick_cb, 1., 1.);
	ev_timer_start(loop, &out.tick);
	/* The timer alone must not keep the loop running. */
	ev_unref(loop);
	if (out.len)
		watch_writable(true);
}

void log_detach(void)
{
	summarise_ended_windows(monotonic_now(), true);
	if (out.loop) {
		watch_writable(false);
		ev_ref(out.loop);
		ev_timer_stop(out.loop, &out.tick);
		out.loop = NULL;
	}
	/* Last words: wait a little for a slow reader, never forever. */
	double deadline = monotonic_now() + 0.5;
	while (out.len && !out.broken && monotonic_now() < deadline) {
		struct pollfd p = {.fd = out.fd, .events = POLLOUT};
		poll(&p, 1, 50);
		flush();
	}
}

void log_set_format(enum log_format f)
{
	format = f;
}

bool log_enabled(enum log_level level)
{
	return level <= current_level;
}

uint64_t log_lines_dropped(void)
{
	return out.dropped;
}

uint64_t log_lines_suppressed(void)
{
	return out.suppressed;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (!log_enabled(level))
		return;
	struct site *s = level == LOG_LEVEL_DEBUG ? NULL : site_of(fmt);
	char line[1024];
	va_list ap;
	if (s && !site_allows(s, level, monotonic_now())) {
		va_start(ap, fmt);
		vsnprintf(s->last, sizeof(s->last), fmt, ap);
		va_end(ap);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	emit(level, line);
}

/* A format of the caller's, checked at its call (clang's
 * -Wformat-nonliteral wants the attribute to follow it here). */
__attribute__((format(printf, 4, 0))) static void vrecord(enum log_level level,
							const struct log_field *fields, size_t nb,
							const char *fmt, va_list ap)
{
	char line[1024];
	vsnprintf(line, sizeof(line), fmt, ap);
	emit_fields(level, line, fields, nb);
}

void log_record(enum log_level level, const char *fmt, ...)
{
	if (!log_enabled(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	vrecord(level, NULL, 0, fmt, ap);
	va_end(ap);
}

void log_record_fields(enum log_level level, const struct log_field *fields, size_t nb,
		       const char *fmt, ...)
{
	if (!log_enabled(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	vrecord(level, fields, nb, fmt, ap);
	va_end(ap);
}
