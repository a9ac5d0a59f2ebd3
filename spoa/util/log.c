/*
 * log.c - levelled logging to stderr (with a timestamp) or syslog.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "util/log.h"

static enum log_level current_level = LOG_LEVEL_NOTICE;
static bool to_syslog;

static const char *const level_names[] = {"error", "warning", "notice", "info", "debug"};
static const int syslog_priorities[] = {LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG};

void log_init(enum log_level level, bool use_syslog, const char *ident)
{
	if (to_syslog && !use_syslog)
		closelog();
	current_level = level;
	to_syslog = use_syslog;
	if (use_syslog)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

const char *log_level_name(enum log_level level)
{
	return level <= LOG_LEVEL_DEBUG ? level_names[level] : "?";
}

bool log_enabled(enum log_level level)
{
	return level <= current_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (!log_enabled(level))
		return;

	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);

	if (to_syslog) {
		syslog(syslog_priorities[level], "%s", line);
		return;
	}
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ [%s] %s\n", stamp, ts.tv_nsec / 1000000, level_names[level], line);
}
