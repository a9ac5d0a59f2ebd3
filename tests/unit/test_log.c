/*
 * test_log.c - the logger never blocks and cannot be flooded: a pipe nobody
 * reads costs a bounded buffer and a count of dropped lines, never a wait;
 * one call site writes LOG_SITE_BURST lines per window, the rest are
 * counted; a transition record (log_record) is never held back.
 *
 * The logger opens its output once, on the first line: stderr is then the
 * write end of a pipe this test reads (or does not), for every test below.
 */
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
#include "log_capture.h"

static int setup_pipe(void **state)
{
	(void)state;
	return log_capture_start(LOG_LEVEL_INFO) ? 0 : -1;
}

static void test_a_pipe_nobody_reads_never_blocks(void **state)
{
	static char buf[1 << 20];
	(void)state;
	log_capture_drain(buf, sizeof(buf));
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
		log_capture_drain(buf, sizeof(buf));
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
	log_capture_drain(buf, sizeof(buf));
	uint64_t suppressed = log_lines_suppressed();

	for (int i = 0; i < 2000; i++)
		log_warning("peer %d: garbage", i);
	log_capture_drain(buf, sizeof(buf));
	assert_int_equal(log_capture_count(buf, ": garbage"), LOG_SITE_BURST);
	assert_int_equal(log_lines_suppressed() - suppressed, 2000 - LOG_SITE_BURST);

	/* Another call site has its own allowance. */
	log_warning("another warning");
	log_capture_drain(buf, sizeof(buf));
	assert_non_null(strstr(buf, "another warning"));
}

static void test_records_and_debug_are_never_held_back(void **state)
{
	static char buf[1 << 18];
	(void)state;
	log_capture_drain(buf, sizeof(buf));
	uint64_t suppressed = log_lines_suppressed();

	for (int i = 0; i < 500; i++)
		log_record(LOG_LEVEL_NOTICE, "breaker b/s%d: closed -> open", i);
	log_capture_drain(buf, sizeof(buf));
	assert_int_equal(log_capture_count(buf, ": closed -> open"), 500);

	log_init(LOG_LEVEL_DEBUG, false, "test");
	for (int i = 0; i < 100; i++)
		log_debug("debug %d", i);
	log_capture_drain(buf, sizeof(buf));
	assert_int_equal(log_capture_count(buf, "[debug] debug "), 100);
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
