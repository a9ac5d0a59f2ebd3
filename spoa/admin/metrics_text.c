/*
 * metrics_text.c - the Prometheus text primitives (see metrics_text.h):
 * a family's HELP and TYPE lines, a label value escaped. Below both
 * metrics.c (the families that do not grow with the fleet) and
 * metrics_servers.c (those that do), which write with them.
 */
#include "admin/metrics_text.h"

void metrics_escape_label(struct strbuf *out, const char *v)
{
	const char *run = v;
	for (; *v; v++) {
		const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
		if (!esc)
			continue;
		strbuf_append(out, run, (size_t)(v - run));
		strbuf_puts(out, esc);
		run = v + 1;
	}
	strbuf_append(out, run, (size_t)(v - run));
}

void metrics_family(struct strbuf *o, const char *name, const char *type, const char *help)
{
	strbuf_printf(o, "# HELP " METRICS_PREFIX "%s %s\n# TYPE " METRICS_PREFIX "%s %s\n", name,
		      help, name, type);
}
