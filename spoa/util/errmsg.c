/*
 * errmsg.c - see errmsg.h.
 */
#include <stdarg.h>
#include <stdio.h>

#include "util/errmsg.h"

void errmsg_set(char *err, size_t err_size, const char *fmt, ...)
{
	if (!err || err_size == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, err_size, fmt, ap);
	va_end(ap);
}
