/*
 * test_log.c - the logger never blocks and cannot be flooded: a pipe nobody
 * reads costs a bounded buffer and a count of dropped lines, never a wait;
 * one call site writes LOG_SITE_BURST lines per window, the rest are
 * counted; a transition record (log_record) is never held back.
 *
 * The logger opens its output once, on the first line: stderr is then the
 * write end of a pipe this test reads (or does not), for every test below.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/log.h"

static int pipe_read_end = -1;

/* Everything the logger wrote that is waiting in the pipe. */
static size_t drain(char *buf, size_t size)
{
	size_t len = 0;
	for (;;) {
		ssize_t n = read(pipe_read_end, buf + len, size - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == size - 1)
			len = 0; /* keep the tail: a test only looks at the last lines */
	}
	buf[len] = '\0';
	return len;
}

static size_t count(const char *text, const char *needle)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static int setup_pipe(void **state)
{
	int fds[2];
	(void)state;
	if (pipe(fds) != 0)
		return -1;
	/* The read end is ours and non-blocking; the write end becomes the
	 * process's stderr before the logger's first line. */
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	int saved = dup(STDERR_FILENO);
	dup2(fds[1], STDERR_FILENO);
	close(fds[1]);
	pipe_read_end = fds[0];
	log_init(LOG_LEVEL_INFO, false, "test");
	log_record(LOG_LEVEL_NOTICE, "first line: the logger opens its output");
	dup2(saved, STDERR_FILENO); /* cmocka's own messages go where they did */
	close(saved);
	return 0;
}

static void test_a_pipe_nobody_reads_never_blocks(void **state)
{
	static char buf[1 << 20];
	(void)state;
	drain(buf, sizeof(buf));
	uint64_t dropped = log_lines_dropped();

	/* 100,000 lines (~8 MB) into a 64 KiB pipe nobody reads: the old
	 * logger blocked in fprintf() on the first full pipe. The alarm turns
	 * a block into a failure instead of a hung test run. */
	alarm(20);
	for (int i = 0; i < 100000; i++)
		log_record(LOG_LEVEL_NOTICE, "line %d of a flood nobody reads", i);
	alarm(0);
	uint64_t lost = log_lines_dropped() - dropped;
	assert_true(lost > 90000);
	assert_true(lost < 100000); /* what fits (pipe + buffer) was kept */

	/* Once the reader comes back and the buffer has drained, the next
	 * line says what was lost. */
	bool told = false;
	for (int round = 0; round < 50 && !told; round++) {
		drain(buf, sizeof(buf));
		log_record(LOG_LEVEL_NOTICE, "after the flood");
		told = strstr(buf, "log lines dropped: the log output did not keep up") != NULL;
	}
	assert_true(told);
	assert_int_equal(log_lines_dropped() - dropped, lost);
}

static void test_one_call_site_is_rate_limited(void **state)
{
	static char buf[1 << 16];
	(void)state;
	drain(buf, sizeof(buf));
	uint64_t suppressed = log_lines_suppressed();

	for (int i = 0; i < 2000; i++)
		log_warning("peer %d: garbage", i);
	drain(buf, sizeof(buf));
	assert_int_equal(count(buf, ": garbage"), LOG_SITE_BURST);
	assert_int_equal(log_lines_suppressed() - suppressed, 2000 - LOG_SITE_BURST);

	/* Another call site has its own allowance. */
	log_warning("another warning");
	drain(buf, sizeof(buf));
	assert_non_null(strstr(buf, "another warning"));
}

static void test_records_and_debug_are_never_held_back(void **state)
{
	static char buf[1 << 18];
	(void)state;
	drain(buf, sizeof(buf));
	uint64_t suppressed = log_lines_suppressed();

	for (int i = 0; i < 500; i++)
		log_record(LOG_LEVEL_NOTICE, "breaker b/s%d: closed -> open", i);
	drain(buf, sizeof(buf));
	assert_int_equal(count(buf, ": closed -> open"), 500);

	log_init(LOG_LEVEL_DEBUG, false, "test");
	for (int i = 0; i < 100; i++)
		log_debug("debug %d", i);
	drain(buf, sizeof(buf));
	assert_int_equal(count(buf, "[debug] debug "), 100);
	assert_int_equal(log_lines_suppressed(), suppressed);
	log_init(LOG_LEVEL_INFO, false, "test");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_pipe_nobody_reads_never_blocks),
		cmocka_unit_test(test_one_call_site_is_rate_limited),
		cmocka_unit_test(test_records_and_debug_are_never_held_back),
	};
	return cmocka_run_group_tests(tests, setup_pipe, NULL);
}
