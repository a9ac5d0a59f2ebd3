/*
 * log_escape.c - a peer's text escaped for the log (see log_escape.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/log_escape.h"

/* The escape of one byte into e (at most 5 bytes with its NUL); its length. */
static size_t escape_byte(uint8_t b, char e[5])
{
	switch (b) {
	case '\n':
		return (size_t)snprintf(e, 5, "\\n");
	case '\r':
		return (size_t)snprintf(e, 5, "\\r");
	case '\t':
		return (size_t)snprintf(e, 5, "\\t");
	case '\\':
		return (size_t)snprintf(e, 5, "\\\\");
	case '"':
		return (size_t)snprintf(e, 5, "\\\"");
	}
	/* Bytes past 0x7e too: a terminal or a syslog relay may take some of
	 * them as controls (0x9b is a one-byte CSI), and UTF-8 is not needed
	 * to read what a peer sent. */
	if (b < 0x20 || b > 0x7e)
		return (size_t)snprintf(e, 5, "\\x%02x", b);
	e[0] = (char)b;
	e[1] = '\0';
	return 1;
}

char *log_escape(char *out, size_t size, const void *in, size_t len)
{
	static const char cut[] = "...";
	const uint8_t *p = in;
	char e[5];
	size_t whole = 0;

	/* Counted only until it is known not to fit: a long message costs
	 * no more than a short one. */
	for (size_t i = 0; i < len && whole <= size - 1; i++)
		whole += escape_byte(p[i], e);
	/* All of it, or as much as leaves room for the "..." that says so. */
	size_t room = whole;
	if (whole > size - 1)
		room = size - 1 >= sizeof(cut) - 1 ? size - 1 - (sizeof(cut) - 1) : 0;
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		size_t elen = escape_byte(p[i], e);
		if (n + elen > room)
			break;
		memcpy(out + n, e, elen);
		n += elen;
	}
	if (whole > size - 1) {
		size_t c = size - 1 - n < sizeof(cut) - 1 ? size - 1 - n : sizeof(cut) - 1;
		memcpy(out + n, cut, c);
		n += c;
	}
	out[n] = '\0';
	return out;
}
