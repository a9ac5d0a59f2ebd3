/*
 * section_watch.c - the agent's [backend] and [server] sections against
 * what each HAProxy lists, from the looks (see section_watch.h).
 */
#include <string.h>

#include "link/link_internal.h"
#include "link/section_watch.h"
#include "util/log.h"

_Static_assert(ENFORCE_MAX_HAPROXY <= SECTION_NAMES_MAX_SOURCES, "a link is a source bit");

/* Sections named in the log at one look; the rest are counted. */
#define SECTIONS_SAID_PER_LOOK 5

/* Whether names holds exactly the sections of p (level 0 is the global
 * policy; each other level is one section). */
static bool same_sections(const struct section_names *names, const struct breaker_policies *p)
{
	if (names->nb != (p->nb_levels ? p->nb_levels - 1 : 0))
		return false;
	for (uint32_t i = 1; i < p->nb_levels; i++) {
		const struct breaker_policy_level *l = &p->levels[i];
		if (!section_names_find(names, l->backend, strlen(l->backend), l->server,
					strlen(l->server)))
			return false;
	}
	return true;
}

/* The sections of the table's policies now, those said before kept said. */
static void rebuild(struct enforcer *e)
{
	struct section_watch *w = &e->sections;
	const struct breaker_policies *p = &e->table->policies;
	struct section_names fresh;

	section_names_init(&fresh, e->nb_links, false);
	for (uint32_t i = 1; i < p->nb_levels; i++)
		if (!section_names_add(&fresh, p->levels[i].backend, p->levels[i].server, 0)) {
			/* Out of memory: no check rather than a partial one,
			 * which would call the missing sections' names unknown. */
			section_names_free(&fresh);
			break;
		}
	section_names_sort(&fresh);
	if (w->built)
		section_names_carry_said(&fresh, &w->names);
	section_names_free(&w->names);
	w->names = fresh; /* in place: a stream under way still points here */
	w->built = true;
	for (unsigned i = 0; i < SECTION_NAMES_MAX_SOURCES; i++) {
		w->backends_wanted[i] = true;
		w->backends_asked[i] = false;
		w->look_started[i] = false;
	}
}

static size_t on_backends_bytes(void *ctx, const char *buf, size_t len, bool at_end)
{
	struct haproxy_link *link = ctx;
	return section_backends_stream_feed(&link->owner->sections.backends[link->index], buf, len,
					    at_end);
}

static void on_backends(void *ctx, enum runtime_api_result result, const char *reply, size_t len)
{
	struct haproxy_link *link = ctx;
	struct section_watch *w = &link->owner->sections;
	unsigned source = link->index;
	(void)reply;
	(void)len;

	/* Asked before a reload read the sections again: for other names. */
	if (!w->backends_asked[source])
		return;
	bool whole = result == RUNTIME_API_OK &&
		     section_backends_stream_usable(&w->backends[source]);
	section_names_backends_end(&w->names, source, whole);
	if (whole)
		w->backends_wanted[source] = false; /* until a new HAProxy process */
}

bool link_sections_look(struct haproxy_link *link)
{
	struct enforcer *e = link->owner;
	struct section_watch *w = &e->sections;
	unsigned source = link->index;

	if (!w->built || !same_sections(&w->names, &e->table->policies))
		rebuild(e);
	if (w->names.nb == 0)
		return true; /* no section to check: nothing asked */
	section_names_look_start(&w->names, source);
	w->look_started[source] = true;
	w->backends_asked[source] = false;
	if (!w->backends_wanted[source])
		return true;
	section_backends_stream_init(&w->backends[source], &w->names, source);
	w->backends_asked[source] = runtime_api_submit_streamed(
		link->client, "show backend", on_backends_bytes, on_backends, link);
	return w->backends_asked[source];
}

void link_sections_note_server(struct haproxy_link *link,
			       const struct runtime_api_server_state *row)
{
	struct section_watch *w = &link->owner->sections;
	if (w->names.nb == 0 || !w->look_started[link->index])
		return;
	section_names_note_server(&w->names, link->index, row->be_name.ptr, row->be_name.len,
				  row->srv_name.ptr, row->srv_name.len);
}

struct sections_said {
	unsigned said, more;
};

static void on_unknown(void *ctx, const struct section_name *n)
{
	struct sections_said *said = ctx;
	char header[SECTION_NAMES_FULL_MAX + 16];
	if (said->said >= SECTIONS_SAID_PER_LOOK) {
		said->more++;
		return;
	}
	said->said++;
	log_warning("INI section [%s] names a %s no HAProxy lists: its keys apply to nothing "
		    "until one does (a misspelt name, or one HAProxy is yet to load; listed in "
		    "/state as unknown_sections)",
		    section_names_header(n, header, sizeof(header)),
		    n->server[0] ? "server" : "backend");
}

void link_sections_look_end(struct haproxy_link *link, bool whole)
{
	struct section_watch *w = &link->owner->sections;
	unsigned source = link->index;
	if (w->names.nb == 0 || !w->look_started[source])
		return;
	w->look_started[source] = false;
	/* A new process may load other backends: asked again, unless this
	 * look already asked the new one. */
	if (link->look.restarted && !w->backends_asked[source])
		w->backends_wanted[source] = true;
	struct sections_said said = {0};
	section_names_look_end(&w->names, source, whole, on_unknown, &said);
	if (said.more > 0)
		log_warning("%u more INI sections name what no HAProxy lists (listed in /state as "
			    "unknown_sections)",
			    said.more);
}

void section_watch_free(struct section_watch *w)
{
	section_names_free(&w->names);
	w->built = false;
}

const struct section_names *enforcer_sections(const struct enforcer *e)
{
	const struct section_watch *w = e ? &e->sections : NULL;
	/* Not judged yet, or judged on sections a reload has since changed. */
	if (!w || !w->built || !same_sections(&w->names, &e->table->policies))
		return NULL;
	return w->names.nb == 0 || section_names_known(&w->names) ? &w->names : NULL;
}
