/*
 * log_json.h - one log line as a JSON object (log_json.c, pure):
 *
 *   {"time":"2026-12-02T11:09:07.123Z","level":"notice","msg":"breaker be/w1: ...",
 *    "event":"transition","backend":"be","server":"w1",...}
 *
 * time, level and msg first, then the line's fields in their order. Every
 * value is a string, escaped as JSON asks ('"', '\', control bytes as \n,
 * \t or \u00XX), and valid UTF-8 whatever the bytes were: a byte that is
 * not part of a well-formed UTF-8 sequence becomes U+FFFD, so one odd name
 * a peer sent cannot make the line unreadable to a JSON parser. The object
 * is always whole: a value too long is cut between two characters, never
 * inside an escape, and ends "..." where it was cut.
 */
#ifndef SPOA_LOG_JSON_H
#define SPOA_LOG_JSON_H

#include <stddef.h>

#include "util/log.h"

/* The longest escaped value of one field; the message takes what is left. */
#define LOG_JSON_FIELD_MAX 256
/* Room for time, level, LOG_MAX_FIELDS fields with keys under 32 bytes at
 * their longest, and at least 1 KiB of message. */
#define LOG_JSON_LINE_MAX 4096

/* Writes the object (no newline) into out, of size at least
 * LOG_JSON_LINE_MAX, NUL-terminated, and returns its length. time and level
 * are the caller's words, msg any text; nb is at most LOG_MAX_FIELDS (more
 * are left out, and so are fields that would leave the message less than
 * 1 KiB, which only keys longer than 32 bytes can reach). */
size_t log_json_format(char *out, size_t size, const char *time, const char *level, const char *msg,
		       const struct log_field *fields, size_t nb);

#endif /* SPOA_LOG_JSON_H */
