/*
 * test_log_json.c - a JSON log line is one whole object whatever it
 * carries: quotes, backslashes, control bytes and bytes that are not UTF-8
 * are escaped, a value too long is cut between two characters and says so,
 * any bytes give valid UTF-8, and the logger writes the object, its fields
 * after msg, one per line.
 */
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/log.h"
#include "util/log_json.h"
#include "log_capture.h"

#define TIME "2026-12-02T11:09:07.123Z"

static char line[LOG_JSON_LINE_MAX];

static const char *format(const char *msg, const struct log_field *fields, size_t nb)
{
	size_t n = log_json_format(line, sizeof(line), TIME, "notice", msg, fields, nb);
	assert_int_equal(n, strlen(line));
	assert_true(n < sizeof(line));
	return line;
}

static void test_a_plain_line(void **state)
{
	(void)state;
	assert_string_equal(format("listening on 127.0.0.1:12345", NULL, 0),
			    "{\"time\":\"" TIME "\",\"level\":\"notice\","
			    "\"msg\":\"listening on 127.0.0.1:12345\"}");
}

static void test_fields_follow_msg_in_their_order(void **state)
{
	(void)state;
	const struct log_field f[] = {
		{"event", "transition"}, {"backend", "be"}, {"server", "w1"},
		{"from", "closed"},      {"to", "open"},    {"cause", "response"},
	};
	assert_string_equal(format("breaker be/w1: closed -> open", f, 6),
			    "{\"time\":\"" TIME "\",\"level\":\"notice\","
			    "\"msg\":\"breaker be/w1: closed -> open\",\"event\":\"transition\","
			    "\"backend\":\"be\",\"server\":\"w1\",\"from\":\"closed\","
			    "\"to\":\"open\",\"cause\":\"response\"}");
}

/* (value in) -> (escaped value out): the table JSON (RFC 8259) asks for. */
static void test_escaping(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"say \"hi\"", "say \\\"hi\\\""},
		{"a\\b", "a\\\\b"},
		{"two\nlines\r\tend", "two\\nlines\\r\\tend"},
		{"bell\x07 esc\x1b del\x7f", "bell\\u0007 esc\\u001b del\\u007f"},
		/* valid UTF-8 passes as it is: e acute, a euro sign, an emoji */
		{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
		/* what is not UTF-8 becomes U+FFFD, one per byte */
		{"bad\xff", "bad\\ufffd"},
		{"cut \xe2\x82", "cut \\ufffd\\ufffd"},
		{"overlong \xc0\xaf", "overlong \\ufffd\\ufffd"},
		{"surrogate \xed\xa0\x80", "surrogate \\ufffd\\ufffd\\ufffd"},
		{"lone \x80 tail", "lone \\ufffd tail"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char want[256];
		const struct log_field f = {"server", cases[i].in};
		snprintf(want, sizeof(want),
			 "{\"time\":\"" TIME "\",\"level\":\"notice\",\"msg\":\"%s\",\"server\":\"%s\"}",
			 cases[i].out, cases[i].out);
		assert_string_equal(format(cases[i].in, &f, 1), want);
	}
}

/* Whether s is one object whose strings are all closed: every '"' not
 * escaped toggles a string, and the object ends outside one. */
static bool whole_object(const char *s)
{
	bool in_string = false;
	size_t n = strlen(s);
	if (n < 2 || s[0] != '{' || s[n - 1] != '}')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (in_string && s[i] == '\\')
			i++;
		else if (s[i] == '"')
			in_string = !in_string;
		else if (in_string && (unsigned char)s[i] < 0x20)
			return false;
	}
	return !in_string;
}

static void test_too_long_is_cut_between_characters(void **state)
{
	static char msg[8192], name[1024];
	(void)state;

	/* A message of control bytes: six bytes each once escaped, far more
	 * than the line holds. */
	memset(msg, '\x01', sizeof(msg) - 1);
	memset(name, '"', sizeof(name) - 1);
	struct log_field f[LOG_MAX_FIELDS];
	for (size_t i = 0; i < LOG_MAX_FIELDS; i++)
		f[i] = (struct log_field){"a_key_of_thirty_one_characters_", name};
	const char *out = format(msg, f, LOG_MAX_FIELDS);
	assert_true(whole_object(out));
	assert_non_null(strstr(out, "\\u0001...\",\"a_key_of"));
	/* each field at most LOG_JSON_FIELD_MAX: 126 escaped quotes, then "..." */
	char field[LOG_JSON_FIELD_MAX + 64];
	int n = snprintf(field, sizeof(field), "\"a_key_of_thirty_one_characters_\":\"");
	for (int i = 0; i < (LOG_JSON_FIELD_MAX - 3) / 2; i++)
		n += snprintf(field + n, sizeof(field) - (size_t)n, "\\\"");
	snprintf(field + n, sizeof(field) - (size_t)n, "...\"");
	assert_int_equal(log_capture_count(out, field), LOG_MAX_FIELDS);
	/* and the message kept at least a kilobyte */
	assert_true(log_capture_count(out, "\\u0001") >= 1024 / 6);

	/* Keys past the contract's 32 bytes: the fields that would squeeze
	 * the message under 1 KiB are left out, the object stays whole. */
	static char key[300];
	memset(key, 'k', sizeof(key) - 1);
	for (size_t i = 0; i < LOG_MAX_FIELDS; i++)
		f[i] = (struct log_field){key, name};
	out = format("the message", f, LOG_MAX_FIELDS);
	assert_true(whole_object(out));
	assert_non_null(strstr(out, "\"msg\":\"the message\""));
	/* each takes 299 + 6 + 256 bytes; time, level and 1 KiB of
	 * message keep 1152 */
	assert_int_equal(log_capture_count(out, "\"kkkkkkkk"), (LOG_JSON_LINE_MAX - 1152) / 561);
	assert_true(strlen(out) <= LOG_JSON_LINE_MAX - 1024);

	/* A multi-byte character is never split by the cut. */
	static char wide[4096];
	for (size_t i = 0; i + 3 < sizeof(wide); i += 3)
		memcpy(wide + i, "\xe2\x82\xac", 3);
	const struct log_field w = {"server", wide};
	out = format("x", &w, 1);
	assert_true(whole_object(out));
	const char *v = strstr(out, "\"server\":\"") + strlen("\"server\":\"");
	assert_int_equal((strlen(v) - strlen("...\"}")) % 3, 0);
	assert_non_null(strstr(out, "\xe2\x82\xac...\"}"));
}

/* Whatever the bytes, the line is one whole object of valid UTF-8 (the C
 * library's UTF-8 decoder, not ours, is the judge). */
static void test_any_bytes_give_one_object_of_utf8(void **state)
{
	static char msg[3000], value[3][600];
	uint64_t x = 88172645463325252ull; /* xorshift: the same bytes each run */
	(void)state;
	if (!setlocale(LC_CTYPE, "C.UTF-8"))
		skip();
	for (int round = 0; round < 5000; round++) {
		char *bufs[] = {msg, value[0], value[1], value[2]};
		size_t sizes[] = {sizeof(msg), sizeof(value[0]), sizeof(value[1]), sizeof(value[2])};
		for (size_t b = 0; b < 4; b++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t len = x % sizes[b];
			for (size_t i = 0; i < len; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				bufs[b][i] = (char)(x % 255 + 1);
			}
			bufs[b][len] = '\0';
		}
		const struct log_field f[] = {{"event", value[0]}, {"backend", value[1]},
					      {"server", value[2]}};
		const char *out = format(msg, f, 3);
		assert_true(whole_object(out));
		assert_true(mbstowcs(NULL, out, 0) != (size_t)-1);
	}
	setlocale(LC_CTYPE, "C");
}

static void test_the_logger_writes_json_lines(void **state)
{
	static char buf[1 << 16];
	(void)state;
	assert_true(log_capture_start(LOG_LEVEL_INFO));
	log_capture_drain(buf, sizeof(buf));

	log_set_format(LOG_FORMAT_JSON);
	const struct log_field f[] = {{"event", "transition"}, {"server", "w\"1"}};
	log_record_fields(LOG_LEVEL_NOTICE, f, 2, "breaker %s: %s", "be/w\"1", "closed -> open");
	log_warning("a peer said \"%s\"", "no\nthanks");
	log_capture_drain(buf, sizeof(buf));
	log_set_format(LOG_FORMAT_TEXT);

	const char *first = buf, *second = strchr(buf, '\n') + 1;
	assert_int_equal(log_capture_count(buf, "\n"), 2);
	assert_memory_equal(first, "{\"time\":\"", 9);
	assert_non_null(strstr(first, "\",\"level\":\"notice\",\"msg\":\"breaker be/w\\\"1: closed -> "
				      "open\",\"event\":\"transition\",\"server\":\"w\\\"1\"}\n{"));
	assert_non_null(strstr(second, "\"level\":\"warning\",\"msg\":\"a peer said "
				       "\\\"no\\nthanks\\\"\"}\n"));

	/* Text again: the fields are the JSON line's alone. */
	log_record_fields(LOG_LEVEL_NOTICE, f, 2, "breaker be/w1: open -> half_open");
	log_capture_drain(buf, sizeof(buf));
	assert_non_null(strstr(buf, "Z [notice] breaker be/w1: open -> half_open\n"));
	assert_null(strstr(buf, "transition"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_plain_line),
		cmocka_unit_test(test_fields_follow_msg_in_their_order),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_too_long_is_cut_between_characters),
		cmocka_unit_test(test_any_bytes_give_one_object_of_utf8),
		cmocka_unit_test(test_the_logger_writes_json_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
