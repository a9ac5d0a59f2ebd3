/*
 * section_names.c - INI sections checked against what HAProxy lists (see
 * section_names.h). Pure: names in, sections marked; the Runtime API is
 * asked by the callers (daemon/live_check.c, link/section_watch.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hapi/section_names.h"

_Static_assert(SECTION_NAMES_MAX_SOURCES <= 8, "a source is a bit of a uint8_t");

void section_names_init(struct section_names *s, unsigned nb_sources, bool hints)
{
	*s = (struct section_names){
		.nb_sources = nb_sources < SECTION_NAMES_MAX_SOURCES ? nb_sources
								      : SECTION_NAMES_MAX_SOURCES,
		.hints = hints,
	};
}

void section_names_free(struct section_names *s)
{
	free(s->names);
	s->names = NULL;
	s->nb = s->cap = 0;
}

bool section_names_add(struct section_names *s, const char *backend, const char *server,
		       int line)
{
	if (!server)
		server = "";
	if (strlen(backend) > NAME_MAX_LEN || strlen(server) > NAME_MAX_LEN)
		return false;
	if (s->nb == s->cap) {
		unsigned cap = s->cap ? 2 * s->cap : 8;
		struct section_name *grown = realloc(s->names, cap * sizeof(*grown));
		if (!grown)
			return false;
		s->names = grown;
		s->cap = cap;
	}
	struct section_name *n = &s->names[s->nb++];
	memset(n, 0, sizeof(*n));
	memcpy(n->backend, backend, strlen(backend) + 1);
	memcpy(n->server, server, strlen(server) + 1);
	n->line = line;
	return true;
}

static int by_names(const void *a, const void *b)
{
	const struct section_name *x = a, *y = b;
	int c = strcmp(x->backend, y->backend);
	return c ? c : strcmp(x->server, y->server);
}

void section_names_sort(struct section_names *s)
{
	if (s->nb > 1)
		qsort(s->names, s->nb, sizeof(*s->names), by_names);
}

/* (a, a_len) against the NUL-terminated b, in strcmp()'s order. */
static int compare(const char *a, size_t a_len, const char *b)
{
	size_t b_len = strlen(b);
	int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
	if (c)
		return c;
	return (a_len > b_len) - (a_len < b_len);
}

struct section_name *section_names_find(const struct section_names *s, const char *backend,
					size_t backend_len, const char *server,
					size_t server_len)
{
	size_t lo = 0, hi = s->nb;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct section_name *n = &s->names[mid];
		int c = compare(backend, backend_len, n->backend);
		if (c == 0)
			c = compare(server, server_len, n->server);
		if (c == 0)
			return n;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

void section_names_carry_said(struct section_names *s, const struct section_names *before)
{
	for (unsigned i = 0; before && i < s->nb; i++) {
		struct section_name *n = &s->names[i];
		const struct section_name *was = section_names_find(
			before, n->backend, strlen(n->backend), n->server, strlen(n->server));
		n->said = was && was->said;
	}
}

unsigned section_names_distance(const char *a, size_t a_len, const char *b, size_t b_len,
				unsigned max)
{
	const unsigned big = max + 1;
	size_t diff = a_len > b_len ? a_len - b_len : b_len - a_len;
	if (diff > max || a_len > NAME_MAX_LEN || b_len > NAME_MAX_LEN)
		return big;
	unsigned rows[2][NAME_MAX_LEN + 2];
	unsigned *prev = rows[0], *cur = rows[1];
	for (size_t j = 0; j <= b_len; j++)
		prev[j] = j <= max ? (unsigned)j : big;
	for (size_t i = 1; i <= a_len; i++) {
		/* Only the band |i - j| <= max: a cell outside it is more than
		 * max away whatever follows, and reads as big. */
		size_t lo = i > max ? i - max : 0;
		size_t hi = i + max < b_len ? i + max : b_len;
		unsigned row_min = big;
		if (lo > 0)
			cur[lo - 1] = big;
		for (size_t j = lo; j <= hi; j++) {
			unsigned v;
			if (j == 0) {
				v = (unsigned)i;
			} else {
				v = prev[j - 1] + (a[i - 1] != b[j - 1]);
				if (prev[j] + 1 < v)
					v = prev[j] + 1;
				if (cur[j - 1] + 1 < v)
					v = cur[j - 1] + 1;
			}
			cur[j] = v < big ? v : big;
			if (cur[j] < row_min)
				row_min = cur[j];
		}
		if (hi < b_len)
			cur[hi + 1] = big;
		if (row_min >= big)
			return big;
		unsigned *swap = prev;
		prev = cur;
		cur = swap;
	}
	return prev[b_len] < big ? prev[b_len] : big;
}

/* An obvious slip: a few edits, and few for the name's length - "s9" is
 * one edit from "s1" and means another server, "be_statc" one from
 * "be_static" and means it. */
static bool slight(unsigned distance, size_t len)
{
	return distance == 0 || (distance <= SECTION_NAMES_NEAR_MAX && 3 * distance <= len);
}

static void consider(struct section_name *n, const char *candidate, unsigned distance)
{
	if (distance == 0 || distance > SECTION_NAMES_NEAR_MAX)
		return;
	if (n->near_distance == 0 || distance < n->near_distance) {
		snprintf(n->near, sizeof(n->near), "%s", candidate);
		n->near_distance = distance;
		n->near_tied = false;
	} else if (distance == n->near_distance && strcmp(n->near, candidate) != 0) {
		n->near_tied = true; /* two as close: neither is obvious */
	}
}

void section_names_look_start(struct section_names *s, unsigned source)
{
	uint8_t keep = (uint8_t)~(1u << source);
	for (unsigned i = 0; i < s->nb; i++) {
		s->names[i].rows_now &= keep;
		s->names[i].backends_now &= keep;
	}
}

void section_names_note_backend(struct section_names *s, unsigned source, const char *backend,
				size_t len)
{
	struct section_name *n = section_names_find(s, backend, len, "", 0);
	if (n)
		n->backends_now |= (uint8_t)(1u << source);
	if (!s->hints || len > NAME_MAX_LEN)
		return;
	char name[NAME_MAX_LEN + 1];
	memcpy(name, backend, len);
	name[len] = '\0';
	for (unsigned i = 0; i < s->nb; i++) {
		struct section_name *m = &s->names[i];
		if (m->server[0])
			continue; /* a server's section is offered servers, from the rows */
		size_t m_len = strlen(m->backend);
		unsigned d = section_names_distance(m->backend, m_len, backend, len,
						    SECTION_NAMES_NEAR_MAX);
		if (slight(d, m_len))
			consider(m, name, d);
	}
}

/* A server's section offered (backend, server): both parts an obvious
 * slip, and at most SECTION_NAMES_NEAR_MAX edits in all. */
static void consider_server(struct section_name *m, const char *backend, size_t backend_len,
			    const char *server, size_t server_len)
{
	size_t be_len = strlen(m->backend), srv_len = strlen(m->server);
	unsigned d_be = section_names_distance(m->backend, be_len, backend, backend_len,
					       SECTION_NAMES_NEAR_MAX);
	if (!slight(d_be, be_len))
		return;
	unsigned d_srv = section_names_distance(m->server, srv_len, server, server_len,
						SECTION_NAMES_NEAR_MAX - d_be);
	if (d_be + d_srv > SECTION_NAMES_NEAR_MAX || !slight(d_srv, srv_len))
		return;
	char full[SECTION_NAMES_FULL_MAX];
	snprintf(full, sizeof(full), "%.*s/%.*s", (int)backend_len, backend, (int)server_len,
		 server);
	consider(m, full, d_be + d_srv);
}

void section_names_note_server(struct section_names *s, unsigned source, const char *backend,
			       size_t backend_len, const char *server, size_t server_len)
{
	uint8_t bit = (uint8_t)(1u << source);
	struct section_name *n = section_names_find(s, backend, backend_len, server, server_len);
	if (n)
		n->rows_now |= bit;
	/* A backend with a server is listed, whatever `show backend` says. */
	n = section_names_find(s, backend, backend_len, "", 0);
	if (n)
		n->rows_now |= bit;
	if (!s->hints || backend_len > NAME_MAX_LEN || server_len > NAME_MAX_LEN)
		return;
	for (unsigned i = 0; i < s->nb; i++)
		if (s->names[i].server[0])
			consider_server(&s->names[i], backend, backend_len, server, server_len);
}

void section_names_backends_end(struct section_names *s, unsigned source, bool whole)
{
	uint8_t bit = (uint8_t)(1u << source);
	if (!whole)
		return; /* a listing cut short names too few: the last whole one stands */
	s->backends_read |= bit;
	for (unsigned i = 0; i < s->nb; i++) {
		struct section_name *n = &s->names[i];
		n->backends_listed = (uint8_t)((n->backends_listed & ~bit) | (n->backends_now & bit));
	}
}

bool section_names_known(const struct section_names *s)
{
	uint8_t all = (uint8_t)((1u << s->nb_sources) - 1);
	return s->nb_sources > 0 && (s->looked & all) == all && (s->backends_read & all) == all;
}

bool section_names_listed(const struct section_name *n)
{
	return (n->backends_listed | n->rows_listed) != 0;
}

void section_names_look_end(struct section_names *s, unsigned source, bool whole,
			    section_names_fn fn, void *ctx)
{
	uint8_t bit = (uint8_t)(1u << source);
	if (!whole)
		return;
	s->looked |= bit;
	for (unsigned i = 0; i < s->nb; i++) {
		struct section_name *n = &s->names[i];
		n->rows_listed = (uint8_t)((n->rows_listed & ~bit) | (n->rows_now & bit));
	}
	/* Until every HAProxy was read, a name missing here may be another's. */
	if (!section_names_known(s))
		return;
	for (unsigned i = 0; i < s->nb; i++) {
		struct section_name *n = &s->names[i];
		if (section_names_listed(n)) {
			n->said = false;
		} else if (!n->said) {
			n->said = true;
			if (fn)
				fn(ctx, n);
		}
	}
}

void section_names_each_unlisted(const struct section_names *s, section_names_fn fn, void *ctx)
{
	for (unsigned i = 0; i < s->nb; i++)
		if (!section_names_listed(&s->names[i]))
			fn(ctx, &s->names[i]);
}

const char *section_names_header(const struct section_name *n, char *buf, size_t size)
{
	if (n->server[0])
		snprintf(buf, size, "server %s/%s", n->backend, n->server);
	else
		snprintf(buf, size, "backend %s", n->backend);
	return buf;
}

/* ---- `show backend` ---- */

void section_backends_stream_init(struct section_backends_stream *st, struct section_names *s,
				  unsigned source)
{
	*st = (struct section_backends_stream){.names = s, .source = source};
}

static void backends_line(struct section_backends_stream *st, const char *line, size_t len)
{
	static const char header[] = "# name";
	size_t header_len = sizeof(header) - 1;
	if (!st->header_read) {
		/* Columns HAProxy may add later follow the name. */
		st->header_read = len >= header_len && memcmp(line, header, header_len) == 0 &&
				  (len == header_len || line[header_len] == ' ');
		st->refused = !st->header_read;
		return;
	}
	if (len == 0 || st->ended) {
		st->ended = true; /* the empty line that ends every reply */
		return;
	}
	const char *space = memchr(line, ' ', len);
	section_names_note_backend(st->names, st->source, line,
				   space ? (size_t)(space - line) : len);
}

size_t section_backends_stream_feed(struct section_backends_stream *st, const char *buf,
				    size_t len, bool at_end)
{
	size_t used = 0;
	while (!st->refused) {
		const char *nl = len > used ? memchr(buf + used, '\n', len - used) : NULL;
		if (!nl)
			break;
		backends_line(st, buf + used, (size_t)(nl - (buf + used)));
		used = (size_t)(nl - buf) + 1;
	}
	/* Refused: the rest is the error message. At the end: a line without
	 * its '\n' was cut short, and a cut name is another name. */
	return st->refused || at_end ? len : used;
}

bool section_backends_stream_usable(const struct section_backends_stream *st)
{
	return st->header_read && !st->refused && st->ended;
}
