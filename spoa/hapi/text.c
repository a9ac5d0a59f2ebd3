/*
 * text.c - the text every Runtime API reply is made of (pure): slices
 * compared and read as numbers, excerpts of untrusted bytes for error
 * messages, the parse report, lines taken one by one, and the splitter of
 * a multi-command reply into each command's output.
 *
 * Each reply's parser (stat.c, servers_state.c, info.c) reads through
 * these, so the rules of text.h - never past len, a line without its '\n'
 * is cut short - are kept once.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hapi/runtime_api.h"
#include "hapi/text.h"

bool runtime_api_str_eq(struct runtime_api_str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

bool runtime_api_str_u64(struct runtime_api_str s, uint64_t *out)
{
	uint64_t v = 0;

	if (s.len == 0 || s.len > 20)
		return false;
	for (size_t i = 0; i < s.len; i++) {
		unsigned d = (unsigned char)s.ptr[i] - '0';
		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

bool runtime_api_str_uint(struct runtime_api_str s, unsigned *out)
{
	uint64_t v;
	if (!runtime_api_str_u64(s, &v) || v > UINT_MAX)
		return false;
	*out = (unsigned)v;
	return true;
}

const char *runtime_api_str_excerpt(struct runtime_api_str s, char *dst, size_t size)
{
	size_t n = s.len < size - 1 ? s.len : size - 1;
	if (n > 40)
		n = 40;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s.ptr[i];
		dst[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	dst[n] = '\0';
	return dst;
}

void runtime_api_report_reset(struct runtime_api_parse_report *r)
{
	r->rows = 0;
	r->malformed = 0;
	r->error[0] = '\0';
}

__attribute__((format(printf, 2, 0))) static void report_set(struct runtime_api_parse_report *r,
							     const char *fmt, va_list ap)
{
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
}

void runtime_api_report_malformed(struct runtime_api_parse_report *r, const char *fmt, ...)
{
	r->malformed++;
	if (r->error[0] == '\0') {
		va_list ap;
		va_start(ap, fmt);
		report_set(r, fmt, ap);
		va_end(ap);
	}
}

bool runtime_api_report_fail(struct runtime_api_parse_report *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report_set(r, fmt, ap);
	va_end(ap);
	return false;
}

void runtime_api_cursor_init(struct runtime_api_cursor *c, const char *buf, size_t len)
{
	c->p = buf;
	c->end = buf ? buf + len : buf;
	c->line = 0;
}

bool runtime_api_cursor_next_line(struct runtime_api_cursor *c, struct runtime_api_str *line,
				  bool *complete)
{
	if (c->p >= c->end)
		return false;
	const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	line->ptr = c->p;
	*complete = nl != NULL;
	line->len = (size_t)((nl ? nl : c->end) - c->p);
	c->p = nl ? nl + 1 : c->end;
	c->line++;
	return true;
}

bool runtime_api_split_reply(const char *buf, size_t len, struct runtime_api_str *out, size_t n,
			     size_t *found)
{
	struct runtime_api_cursor c;
	struct runtime_api_str line;
	bool complete;
	size_t count = 0;

	runtime_api_cursor_init(&c, buf, len);
	while (count < n) {
		const char *start = c.p;
		bool ended = false;
		while (runtime_api_cursor_next_line(&c, &line, &complete)) {
			if (!complete)
				break; /* cut short: this output never ended */
			if (line.len == 0) {
				out[count].ptr = start;
				out[count].len = (size_t)(line.ptr - start);
				ended = true;
				break;
			}
		}
		if (!ended)
			break;
		count++;
	}
	if (found)
		*found = count;
	return count == n && c.p == c.end;
}
