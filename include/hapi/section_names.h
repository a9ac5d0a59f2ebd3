/*
 * section_names.h - the INI file's [backend NAME] and [server BACKEND/SERVER]
 * sections checked against the backends and servers HAProxy lists
 * (section_names.c, pure).
 *
 * A section whose name HAProxy does not have configures nothing: a typo
 * (`[backend be_statc] guarded = false`) leaves guarded the backend the
 * operator meant to leave alone, and nothing else says so. The names come
 * from each HAProxy (a source: one runtime_api) in two listings, fed here
 * as they are read:
 *   - `show backend`: every backend, those without a server too;
 *   - the servers of a look (`show servers state` rows): every server, and
 *     so its backend.
 * A section is listed when some source's last complete listing names it;
 * unknown when every source was read and none does. Unknown is a warning,
 * never an error: HAProxy may be reloaded to add the name later.
 *
 * Bounded by the configuration (at most BREAKER_TABLE_MAX_OVERRIDES
 * sections, looked up by binary search); nothing here grows with HAProxy.
 */
#ifndef SPOA_SECTION_NAMES_H
#define SPOA_SECTION_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/names.h"

/* Sources are bits of a uint8_t: one per runtime_api (ENFORCE_MAX_HAPROXY). */
#define SECTION_NAMES_MAX_SOURCES 8
/* "backend/server" */
#define SECTION_NAMES_FULL_MAX (2 * NAME_MAX_LEN + 2)
/* The furthest a name may be from a section's to be offered as what it
 * meant (see section_names_distance()). */
#define SECTION_NAMES_NEAR_MAX 2

struct section_name {
	char backend[NAME_MAX_LEN + 1];
	char server[NAME_MAX_LEN + 1]; /* "": a [backend] section */
	int line;                      /* of its header in the file; 0: not known */
	/* By source bit: named by its last complete `show backend`, by the
	 * one being read, by the server rows of its last complete look, by
	 * those of the look under way. */
	uint8_t backends_listed, backends_now;
	uint8_t rows_listed, rows_now;
	bool said; /* reported unknown, and not listed since */
	/* With hints on: the closest name listed that is an obvious slip
	 * ("backend" or "backend/server"; "" none), how far, and whether
	 * another one is as close (then none is obvious). */
	char near[SECTION_NAMES_FULL_MAX];
	unsigned near_distance;
	bool near_tied;
};

struct section_names {
	struct section_name *names; /* sorted by (backend, server) once sorted; owned */
	unsigned nb, cap;
	unsigned nb_sources;
	uint8_t looked;        /* sources whose servers were read whole once */
	uint8_t backends_read; /* sources whose `show backend` was read whole once */
	bool hints;            /* look for near names (--check: costs a comparison a name) */
};

/* Empty, for nb_sources HAProxies (at most SECTION_NAMES_MAX_SOURCES). */
void section_names_init(struct section_names *s, unsigned nb_sources, bool hints);
/* Releases the names; s is then empty. Harmless twice. */
void section_names_free(struct section_names *s);

/* Adds one section (server "" or NULL for a [backend] one), then, once all
 * are added, section_names_sort() before anything else. False when out of
 * memory or the name is longer than NAME_MAX_LEN (nothing added). */
bool section_names_add(struct section_names *s, const char *backend, const char *server,
		       int line);
void section_names_sort(struct section_names *s);

/* A section given the same names as s's, or NULL. Lengths: bytes, no NUL
 * needed; server_len 0 finds the [backend] section. */
struct section_name *section_names_find(const struct section_names *s, const char *backend,
					size_t backend_len, const char *server,
					size_t server_len);

/* What was said before (another configuration's check): a section said
 * unknown there and still here is not said again. */
void section_names_carry_said(struct section_names *s, const struct section_names *before);

/*
 * One source's listings. section_names_look_start() before its listings
 * are read; then each name as it comes; then whether each listing was
 * read whole: only a whole one replaces what the source listed before.
 */
void section_names_look_start(struct section_names *s, unsigned source);
void section_names_note_backend(struct section_names *s, unsigned source, const char *backend,
				size_t len);
void section_names_note_server(struct section_names *s, unsigned source, const char *backend,
			       size_t backend_len, const char *server, size_t server_len);
void section_names_backends_end(struct section_names *s, unsigned source, bool whole);

/* Told of each section that has just become unknown. */
typedef void (*section_names_fn)(void *ctx, const struct section_name *n);

/* The servers of the source's look were read (whole, or not: nothing
 * changes then). Once every source's servers and backends were read whole
 * (section_names_known()), each section listed by none that was not said
 * yet goes to fn (may be NULL) and is marked said; one listed again may be
 * said again later. */
void section_names_look_end(struct section_names *s, unsigned source, bool whole,
			    section_names_fn fn, void *ctx);

bool section_names_known(const struct section_names *s);
/* Listed by some source's last whole listings. */
bool section_names_listed(const struct section_name *n);
/* Each section no source lists (whatever was read so far), in order. */
void section_names_each_unlisted(const struct section_names *s, section_names_fn fn, void *ctx);

/* "backend NAME" or "server BACKEND/SERVER", as the file's header has it
 * between its brackets; into buf, which is returned. */
const char *section_names_header(const struct section_name *n, char *buf, size_t size);

/*
 * The edit distance (insertions, deletions, substitutions) between a and
 * b, or max + 1 when it is more than max: computed on the band |i - j| <=
 * max only, so a comparison costs about (2 max + 1) times the length.
 */
unsigned section_names_distance(const char *a, size_t a_len, const char *b, size_t b_len,
				unsigned max);

/*
 * `show backend`, fed as it arrives (as runtime_api_stat_stream_feed() is:
 * returns how many bytes it used, complete lines; the caller keeps the rest
 * for the next feed, at_end on the last). Its "# name" header, then one
 * backend a line, each noted for source, then the empty line that ends
 * it. usable() is false for a reply without the header (an error
 * message: refused) or without its end (cut short).
 */
struct section_backends_stream {
	struct section_names *names;
	unsigned source;
	bool header_read;
	bool refused;
	bool ended;
};
void section_backends_stream_init(struct section_backends_stream *st, struct section_names *s,
				  unsigned source);
size_t section_backends_stream_feed(struct section_backends_stream *st, const char *buf,
				    size_t len, bool at_end);
bool section_backends_stream_usable(const struct section_backends_stream *st);

#endif /* SPOA_SECTION_NAMES_H */
