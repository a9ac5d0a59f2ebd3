/*
 * log_capture.h - what the unit tests read the agent's log through. The
 * logger opens its output once, on its first line: stderr is the write
 * end of a pipe for that line, and is given back to cmocka after it. What
 * is logged from then on waits in the pipe until log_capture_drain()
 * reads it (or does not: a pipe nobody reads is what test_log.c is about).
 */
#ifndef SPOA_TEST_LOG_CAPTURE_H
#define SPOA_TEST_LOG_CAPTURE_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

static int log_capture_fd = -1;

/* Lines at or above `level` go into the pipe from now on. */
static inline bool log_capture_start(enum log_level level)
{
	int fds[2];
	if (pipe(fds) != 0)
		return false;
	/* The read end is ours and non-blocking; the write end becomes the
	 * process's stderr before the logger's first line. */
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	int saved = dup(STDERR_FILENO);
	dup2(fds[1], STDERR_FILENO);
	close(fds[1]);
	log_capture_fd = fds[0];
	log_init(level, false, "test");
	log_record(LOG_LEVEL_NOTICE, "first line: the logger opens its output");
	dup2(saved, STDERR_FILENO); /* cmocka's own messages go where they did */
	close(saved);
	return true;
}

/* Everything the logger wrote that is waiting in the pipe, into buf. */
static inline size_t log_capture_drain(char *buf, size_t size)
{
	size_t len = 0;
	for (;;) {
		ssize_t n = read(log_capture_fd, buf + len, size - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == size - 1)
			len = 0; /* keep the tail: a test only looks at the last lines */
	}
	buf[len] = '\0';
	return len;
}

/* How many times needle is in text. */
static inline size_t log_capture_count(const char *text, const char *needle)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

#endif
