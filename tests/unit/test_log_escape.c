/*
 * test_log_escape.c - a peer's text in the log: one table of (bytes, room)
 * -> line as logged. No byte a peer sends can end the line or hide in it,
 * the quotes around it stay its bounds, and a long text is cut between two
 * escapes with "..." saying so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util/log_escape.h"

static const struct {
	const char *in;
	size_t len; /* 0: strlen(in) */
	size_t size;
	const char *out;
} cases[] = {
	{"", 0, 16, ""},
	{"a8f1c2de-0001", 0, 64, "a8f1c2de-0001"},
	/* A forged second line stays on the first. */
	{"bye\n2026-12-02 notice: breaker closed", 0, 64,
	 "bye\\n2026-12-02 notice: breaker closed"},
	{"\r\t", 0, 16, "\\r\\t"},
	{"say \"hi\" \\o/", 0, 32, "say \\\"hi\\\" \\\\o/"},
	{"\x1b[2J\x7f", 0, 32, "\\x1b[2J\\x7f"},
	{"nul\0inside", 10, 32, "nul\\x00inside"},
	{"caf\xc3\xa9 \x9b", 0, 32, "caf\\xc3\\xa9 \\x9b"},
	/* Exactly fits: not cut. */
	{"abcdefg", 0, 8, "abcdefg"},
	{"a\n", 0, 4, "a\\n"},
	/* One more byte: cut, and said. */
	{"abcdefgh", 0, 8, "abcd..."},
	/* An escape is never split: "\x1" would read as another byte. */
	{"ab\x01", 0, 6, "ab..."},
	{"abc\ndef", 0, 7, "abc..."},
	/* Less room than the marker: as much of it as fits. */
	{"abcdef", 0, 3, ".."},
	{"abcdef", 0, 1, ""},
	{"", 0, 1, ""},
};

static void test_table(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[128];
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].in);
		memset(out, 'Z', sizeof(out));
		assert_ptr_equal(log_escape(out, cases[i].size, cases[i].in, len), out);
		if (strcmp(out, cases[i].out) != 0)
			fail_msg("case %zu: got \"%s\", expected \"%s\"", i, out, cases[i].out);
		/* Nothing written past size. */
		for (size_t j = cases[i].size; j < sizeof(out); j++)
			assert_int_equal(out[j], 'Z');
	}
}

/* Every byte value, at every room: the result is printable ASCII only,
 * within size, and, when whole, reads back to the input. */
static void test_every_byte(void **state)
{
	uint8_t in[256];
	for (unsigned b = 0; b < 256; b++)
		in[b] = (uint8_t)b;
	for (size_t size = 1; size <= LOG_ESCAPE_SIZE; size++) {
		char out[LOG_ESCAPE_SIZE];
		log_escape(out, size, in, sizeof(in));
		assert_true(strlen(out) < size);
		for (const char *p = out; *p; p++)
			assert_true(*p >= 0x20 && *p <= 0x7e);
	}
	char whole[256 * 4 + 1];
	log_escape(whole, sizeof(whole), in, sizeof(in));
	uint8_t back[256];
	size_t n = 0;
	for (const char *p = whole; *p; n++) {
		assert_true(n < sizeof(back));
		if (*p != '\\') {
			back[n] = (uint8_t)*p++;
			continue;
		}
		switch (p[1]) {
		case 'n': back[n] = '\n'; p += 2; break;
		case 'r': back[n] = '\r'; p += 2; break;
		case 't': back[n] = '\t'; p += 2; break;
		case '\\': back[n] = '\\'; p += 2; break;
		case '"': back[n] = '"'; p += 2; break;
		case 'x': {
			unsigned v;
			assert_int_equal(sscanf(p + 2, "%2x", &v), 1);
			back[n] = (uint8_t)v;
			p += 4;
			break;
		}
		default: fail_msg("unknown escape \\%c", p[1]);
		}
	}
	assert_int_equal(n, sizeof(in));
	assert_memory_equal(back, in, sizeof(in));
}

/* A long message costs the room, not its length: the cut comes early. */
static void test_long_text_is_cut(void **state)
{
	static char in[1 << 16];
	memset(in, '\n', sizeof(in));
	char out[LOG_ESCAPE_SIZE];
	log_escape(out, sizeof(out), in, sizeof(in));
	assert_int_equal(strlen(out), 2 * ((LOG_ESCAPE_SIZE - 4) / 2) + 3);
	assert_string_equal(out + strlen(out) - 3, "...");
	assert_null(strchr(out, '\n'));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_every_byte),
		cmocka_unit_test(test_long_text_is_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
