/*
 * errmsg.h - errors as values: a message written into the caller's buffer.
 */
#ifndef SPOA_ERRMSG_H
#define SPOA_ERRMSG_H

#include <stddef.h>

/* snprintf into err (err_size bytes, always NUL-terminated); a NULL err or
 * a zero size means the caller does not want the message. */
void errmsg_set(char *err, size_t err_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* SPOA_ERRMSG_H */
