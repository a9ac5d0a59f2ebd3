/*
 * strbuf.h - a growable text buffer for rendering responses (metrics.c,
 * state_json.c).
 *
 * Appends never fail loudly: running out of memory sets `failed` and later
 * appends do nothing, so a renderer checks once at the end. The buffer owns
 * `data` (always NUL-terminated once anything was appended) until
 * strbuf_free() or strbuf_steal().
 */
#ifndef SPOA_STRBUF_H
#define SPOA_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
	char *data;
	size_t len;
	size_t cap;
	bool failed; /* an allocation failed: the content is incomplete */
};

void strbuf_init(struct strbuf *b);
void strbuf_free(struct strbuf *b);
void strbuf_append(struct strbuf *b, const char *s, size_t n);
void strbuf_puts(struct strbuf *b, const char *s);
void strbuf_putc(struct strbuf *b, char c);
void strbuf_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Hands data over to the caller (free() it), and leaves b empty. NULL if
 * failed or nothing was appended. */
char *strbuf_steal(struct strbuf *b, size_t *len);

#endif /* SPOA_STRBUF_H */
