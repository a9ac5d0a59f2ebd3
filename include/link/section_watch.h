/*
 * section_watch.h - the running agent's check of its [backend] and
 * [server] sections against what each HAProxy lists (section_watch.c; the
 * comparison is hapi/section_names.h's), made by the looks: `show
 * backend` at a look while wanted (the first, and after a new HAProxy
 * process), the servers from the look's own `show servers state` rows.
 *
 * Once every HAProxy was looked at whole, each section none of them lists
 * is said once in the log (a warning) and listed in /state until one
 * does. The sections are the breaker table's policies (one level per
 * section), read again when a reload changes them; one already said is
 * not said again for it.
 */
#ifndef SPOA_LINK_SECTION_WATCH_H
#define SPOA_LINK_SECTION_WATCH_H

#include <stdbool.h>

#include "hapi/section_names.h"

struct haproxy_link;
struct runtime_api_server_state;

struct section_watch {
	struct section_names names; /* its address never changes: the streams point at it */
	bool built;
	/* By link index: ask `show backend` at the next look; the look under
	 * way asked it; the look under way started on these names (a reload
	 * between two links' looks reads the sections again). */
	bool backends_wanted[SECTION_NAMES_MAX_SOURCES];
	bool backends_asked[SECTION_NAMES_MAX_SOURCES];
	bool look_started[SECTION_NAMES_MAX_SOURCES];
	struct section_backends_stream backends[SECTION_NAMES_MAX_SOURCES];
};

/* At a look's start (looks.c): the sections read again if a reload changed
 * them, and `show backend` queued when wanted. False only when the queue
 * is full. */
bool link_sections_look(struct haproxy_link *link);
/* Each row of the look's `show servers state`. */
void link_sections_note_server(struct haproxy_link *link,
			       const struct runtime_api_server_state *row);
/* The look ended, read whole or not: sections none lists said once. */
void link_sections_look_end(struct haproxy_link *link, bool whole);

void section_watch_free(struct section_watch *w);

#endif /* SPOA_LINK_SECTION_WATCH_H */
