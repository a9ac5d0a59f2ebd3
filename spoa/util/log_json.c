/*
 * log_json.c - a log line as one JSON object (see log_json.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/log_json.h"

/* What the fields always leave: time and level (at most 128 bytes with
 * their keys) and 1 KiB of message. */
#define MSG_ROOM_MIN (128 + 1024)

/* The length of the well-formed UTF-8 sequence at p (at most `left`
 * bytes), or 0 when the byte at p does not start one (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF). */
static size_t utf8_sequence(const uint8_t *p, size_t left)
{
	uint8_t lo = 0x80, hi = 0xbf;
	size_t n;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, lo = p[0] == 0xe0 ? 0xa0 : 0x80, hi = p[0] == 0xed ? 0x9f : 0xbf;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, lo = p[0] == 0xf0 ? 0x90 : 0x80, hi = p[0] == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (left < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/* The escaped form of the character at p into e (at most 7 bytes and a
 * NUL); its length. *used: the bytes of p it stands for. */
static size_t escape_char(const uint8_t *p, size_t left, char e[8], size_t *used)
{
	*used = 1;
	switch (p[0]) {
	case '"':
		return (size_t)snprintf(e, 8, "\\\"");
	case '\\':
		return (size_t)snprintf(e, 8, "\\\\");
	case '\n':
		return (size_t)snprintf(e, 8, "\\n");
	case '\r':
		return (size_t)snprintf(e, 8, "\\r");
	case '\t':
		return (size_t)snprintf(e, 8, "\\t");
	}
	if (p[0] < 0x20 || p[0] == 0x7f)
		return (size_t)snprintf(e, 8, "\\u%04x", p[0]);
	if (p[0] < 0x80) {
		e[0] = (char)p[0];
		e[1] = '\0';
		return 1;
	}
	size_t n = utf8_sequence(p, left);
	if (!n)
		return (size_t)snprintf(e, 8, "\\ufffd");
	memcpy(e, p, n);
	e[n] = '\0';
	*used = n;
	return n;
}

/* The escaped length of s, counted only up to just past `limit`. */
static size_t escaped_length(const char *s, size_t limit)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t left = strlen(s), whole = 0, used;
	char e[8];

	while (left && whole <= limit) {
		whole += escape_char(p, left, e, &used);
		p += used;
		left -= used;
	}
	return whole;
}

/* Writes s escaped into out, at most `room` bytes: all of it, or as much
 * as leaves room for the "..." that says it was cut (room >= 3). Returns
 * the bytes written; no NUL. */
static size_t write_escaped(char *out, size_t room, const char *s)
{
	static const char cut[] = "...";
	const uint8_t *p = (const uint8_t *)s;
	size_t left = strlen(s), n = 0, used;
	bool whole = escaped_length(s, room) <= room;
	size_t limit = whole ? room : room - (sizeof(cut) - 1);
	char e[8];

	while (left) {
		size_t elen = escape_char(p, left, e, &used);
		if (n + elen > limit)
			break;
		memcpy(out + n, e, elen);
		n += elen;
		p += used;
		left -= used;
	}
	if (!whole) {
		memcpy(out + n, cut, sizeof(cut) - 1);
		n += sizeof(cut) - 1;
	}
	return n;
}

/* ,"key":" - or {"key":" for the first - into out; its length. */
static size_t write_key(char *out, const char *key, bool first)
{
	size_t n = strlen(key);
	out[0] = first ? '{' : ',';
	out[1] = '"';
	memcpy(out + 2, key, n);
	memcpy(out + 2 + n, "\":\"", 3);
	return n + 5;
}

size_t log_json_format(char *out, size_t size, const char *time, const char *level, const char *msg,
		       const struct log_field *fields, size_t nb)
{
	size_t fields_room = 0, n = 0;

	if (nb > LOG_MAX_FIELDS)
		nb = LOG_MAX_FIELDS;
	/* What the fields take, each at most LOG_JSON_FIELD_MAX: the message,
	 * which comes before them, has the rest. */
	for (size_t i = 0; i < nb; i++) {
		size_t v = escaped_length(fields[i].value, LOG_JSON_FIELD_MAX);
		size_t room =
		    strlen(fields[i].key) + 6 + (v < LOG_JSON_FIELD_MAX ? v : LOG_JSON_FIELD_MAX);
		/* Keys longer than the contract's are left out with what
		 * follows, rather than the object overrunning out. */
		if (fields_room + room + MSG_ROOM_MIN > size) {
			nb = i;
			break;
		}
		fields_room += room;
	}
	n += write_key(out + n, "time", true);
	n += write_escaped(out + n, 64, time);
	out[n++] = '"';
	n += write_key(out + n, "level", false);
	n += write_escaped(out + n, 16, level);
	out[n++] = '"';
	n += write_key(out + n, "msg", false);
	/* The closing "} and the NUL after the fields. */
	n += write_escaped(out + n, size - n - fields_room - 3, msg);
	out[n++] = '"';
	for (size_t i = 0; i < nb; i++) {
		n += write_key(out + n, fields[i].key, false);
		n += write_escaped(out + n, LOG_JSON_FIELD_MAX, fields[i].value);
		out[n++] = '"';
	}
	out[n++] = '}';
	out[n] = '\0';
	return n;
}
