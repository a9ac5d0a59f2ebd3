/*
 * log.h - the agent's logger: levelled lines to stderr or to syslog.
 */
#ifndef SPOA_LOG_H
#define SPOA_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARNING,
	LOG_LEVEL_NOTICE,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

/* Sends lines at or above `level` to syslog (ident, facility daemon) when
 * use_syslog, to stderr otherwise. May be called again (on reload). */
void log_init(enum log_level level, bool use_syslog, const char *ident);
const char *log_level_name(enum log_level level);
bool log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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
