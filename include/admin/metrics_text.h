/*
 * metrics_text.h - the primitives of the Prometheus text exposition
 * (format 0.0.4) that every renderer of /metrics writes with: the names'
 * prefix, a family's HELP and TYPE lines, a label value escaped
 * (metrics_text.c). Pure: they append to a strbuf, nothing else.
 */
#ifndef SPOA_METRICS_TEXT_H
#define SPOA_METRICS_TEXT_H

#include "util/strbuf.h"

#define METRICS_PREFIX "spoa_breaker_"

/* Appends a family's HELP and TYPE lines, name without the prefix. */
void metrics_family(struct strbuf *out, const char *name, const char *type, const char *help);

/* Appends v as the inside of a quoted label value: \ " and newline escaped. */
void metrics_escape_label(struct strbuf *out, const char *v);

#endif /* SPOA_METRICS_TEXT_H */
