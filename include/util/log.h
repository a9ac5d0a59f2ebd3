/*
 * log.h - the agent's logger: levelled lines to stderr or to syslog, that
 * never stall the event loop (log.c).
 *
 * Two promises. A log nobody reads costs the agent nothing: lines go
 * through a bounded buffer written without blocking, and what does not fit
 * is dropped and counted (log_lines_dropped()), never waited for. And a
 * peer cannot flood it: each call site (a format string) writes at most
 * LOG_SITE_BURST lines per LOG_SITE_WINDOW seconds, the rest are counted
 * (log_lines_suppressed()) and summed up in one line, "N more suppressed",
 * when the window ends. Debug lines, asked for explicitly, are not limited;
 * log_record() lines neither.
 *
 * Two formats: text ("TIMESTAMP [level] message") and JSON, one object per
 * line with the keys time, level and msg, and those of the line's
 * struct log_field list (log_json.h). With syslog, the object is the
 * message's body.
 */
#ifndef SPOA_LOG_H
#define SPOA_LOG_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level {
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARNING,
	LOG_LEVEL_NOTICE,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

enum log_format {
	LOG_FORMAT_TEXT,
	LOG_FORMAT_JSON,
};

/* A key a JSON line carries beside time, level and msg; the text line
 * shows only the message, which must say the same in words. Both borrowed
 * for the call. */
struct log_field {
	const char *key;   /* a literal of [a-z_]: written as it is */
	const char *value; /* any bytes: escaped */
};

#define LOG_BUFFER_SIZE (256 * 1024) /* bytes of lines waiting for a slow reader */
#define LOG_SITE_BURST 20            /* lines one call site may write per window */
#define LOG_SITE_WINDOW 10.0         /* seconds */
#define LOG_MAX_FIELDS 8

/* Sends lines at or above `level` to syslog (ident, facility daemon) when
 * use_syslog, to stderr otherwise. May be called again (on reload). */
void log_init(enum log_level level, bool use_syslog, const char *ident);
/* Text until told otherwise; applies to every line from now on. */
void log_set_format(enum log_format format);
/* From now on, a blocked output is retried when the loop sees it writable,
 * and suppressed lines are summed up once a second. */
void log_attach(struct ev_loop *loop);
/* Sums up what was suppressed, writes what is buffered (waiting at most
 * half a second for a slow reader), and leaves the loop. */
void log_detach(void);

bool log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For lines that record a decision the agent made (a breaker's transition):
 * never rate-limited; bounded by the breakers, not by what a peer sends.
 * Still dropped, and counted, when the output does not keep up. */
void log_record(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* log_record() with nb fields for the JSON line (keys other than time,
 * level and msg; at most LOG_MAX_FIELDS). */
void log_record_fields(enum log_level level, const struct log_field *fields, size_t nb,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Lines lost because the output did not keep up; lines held back by the
 * rate limit. Both only grow. */
uint64_t log_lines_dropped(void);
uint64_t log_lines_suppressed(void);

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_LEVEL_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
/* Debug lines are built only when enabled: they sit on the hot path. */
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (log_enabled(LOG_LEVEL_DEBUG))                                                  \
			log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__);                                     \
	} while (0)

#endif /* SPOA_LOG_H */
