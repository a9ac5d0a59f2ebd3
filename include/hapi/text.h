/*
 * text.h - what the Runtime API reply parsers share, private to them
 * (text.c, stat.c, servers_state.c, info.c); the interface is
 * runtime_api.h.
 *
 * Every parser takes (buf, len), which is not NUL-terminated and may be cut
 * anywhere or be garbage altogether: nothing is read past len, a line that
 * does not end in '\n' is a line cut short (reported, never trusted, since
 * "12" may be the start of "1234"), and columns are always found by name in
 * the reply's own header, because HAProxy adds columns between versions.
 * The helpers below keep that discipline in one place.
 */
#ifndef SPOA_HAPI_TEXT_H
#define SPOA_HAPI_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hapi/runtime_api.h"

/* s is exactly the NUL-terminated lit. */
bool runtime_api_str_eq(struct runtime_api_str s, const char *lit);

/* Digits only, no sign, no blanks; false on anything else or overflow,
 * *out untouched then. */
bool runtime_api_str_u64(struct runtime_api_str s, uint64_t *out);
bool runtime_api_str_uint(struct runtime_api_str s, unsigned *out);

/* A printable excerpt of untrusted bytes (at most 40, anything unprintable
 * as '?'), for error messages: written to dst (size > 0), which is returned. */
const char *runtime_api_str_excerpt(struct runtime_api_str s, char *dst, size_t size);

/* A report with nothing in it yet. */
void runtime_api_report_reset(struct runtime_api_parse_report *r);

/* A line was skipped: counted; the first such line is described. */
__attribute__((format(printf, 2, 3))) void
runtime_api_report_malformed(struct runtime_api_parse_report *r, const char *fmt, ...);

/* The reply as a whole is unusable: returns false, with the reason. */
__attribute__((format(printf, 2, 3))) bool
runtime_api_report_fail(struct runtime_api_parse_report *r, const char *fmt, ...);

/* Lines of a reply. */
struct runtime_api_cursor {
	const char *p, *end;
	unsigned line; /* 1-based number of the line last taken */
};

/* buf may be NULL when len is 0. */
void runtime_api_cursor_init(struct runtime_api_cursor *c, const char *buf, size_t len);

/* Takes the next line without its '\n'; *complete is false for a last line
 * with no '\n' (cut short). Returns false at the end of the input. */
bool runtime_api_cursor_next_line(struct runtime_api_cursor *c, struct runtime_api_str *line,
				  bool *complete);

#endif /* SPOA_HAPI_TEXT_H */
