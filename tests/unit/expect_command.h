/*
 * expect_command.h - what the command builders' tests check of one build:
 * the command expected, or (want NULL) a refusal that leaves the buffer
 * empty, so that nothing half-built could be sent.
 */
#ifndef SPOA_TEST_EXPECT_COMMAND_H
#define SPOA_TEST_EXPECT_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

static inline void expect_command(bool built, const char *buf, const char *want)
{
	assert_int_equal(built, want != NULL);
	assert_string_equal(buf, want ? want : "");
}

#endif
