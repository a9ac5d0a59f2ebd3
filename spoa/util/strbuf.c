/*
 * strbuf.c - a growable text buffer (see strbuf.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

void strbuf_init(struct strbuf *b)
{
	*b = (struct strbuf){0};
}

void strbuf_free(struct strbuf *b)
{
	free(b->data);
	strbuf_init(b);
}

/* Room for `extra` more bytes and the NUL. */
static bool reserve(struct strbuf *b, size_t extra)
{
	if (b->failed)
		return false;
	if (b->len + extra + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + extra + 1)
		cap *= 2;
	char *data = realloc(b->data, cap);
	if (!data) {
		b->failed = true;
		return false;
	}
	b->data = data;
	b->cap = cap;
	return true;
}

void strbuf_append(struct strbuf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void strbuf_puts(struct strbuf *b, const char *s)
{
	strbuf_append(b, s, strlen(s));
}

void strbuf_putc(struct strbuf *b, char c)
{
	strbuf_append(b, &c, 1);
}

void strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = true;
		return;
	}
	if (!reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *strbuf_steal(struct strbuf *b, size_t *len)
{
	char *data = b->failed ? NULL : b->data;
	*len = data ? b->len : 0;
	if (!data)
		free(b->data);
	strbuf_init(b);
	return data;
}
