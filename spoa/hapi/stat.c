/*
 * stat.c - the `show stat` CSV reply, parsed as it arrives (pure): the
 * header's columns found by name, then one callback per server row,
 * FRONTEND, BACKEND and listener rows skipped.
 *
 * A fleet's `show stat` may be megabytes, so the parser is a stream fed
 * whatever has arrived (any split gives the same rows, runtime_api.h); the
 * whole-reply runtime_api_parse_stat() is that stream fed once. Rows are
 * read field by field, since a quoted field may hold a comma.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hapi/runtime_api.h"
#include "hapi/text.h"

enum stat_col {
	/* required */
	STAT_PXNAME,
	STAT_SVNAME,
	STAT_STATUS,
	STAT_SLIM,
	STAT_ECON,
	STAT_ERESP,
	STAT_WRETR,
	STAT_WREDIS,
	STAT_SRV_ABRT,
	STAT_CLI_ABRT,
	STAT_HRSP_5XX,
	STAT_WEIGHT,
	STAT_IID,
	STAT_SID,
	/* optional: without it, FRONTEND/BACKEND rows are told by svname */
	STAT_TYPE,
	/* optional: the proxy's mode ("http", "tcp"), "" when absent */
	STAT_MODE,
	/* optional: current sessions, 0 when absent */
	STAT_SCUR,
	/* optional: the worker's own 1xx-4xx answers, 0 when absent */
	STAT_HRSP_1XX,
	STAT_HRSP_2XX,
	STAT_HRSP_3XX,
	STAT_HRSP_4XX,
	/* optional: requests sent to the server, 0 when absent */
	STAT_STOT,
	/* optional: the server's address and port, "" for a server-template
	 * slot DNS has not filled */
	STAT_ADDR,
	STAT_NB_COLS,
};
#define STAT_NB_REQUIRED STAT_TYPE

static const char *const stat_col_names[STAT_NB_COLS] = {
	[STAT_PXNAME] = "pxname",
	[STAT_SVNAME] = "svname",
	[STAT_STATUS] = "status",
	[STAT_SLIM] = "slim",
	[STAT_ECON] = "econ",
	[STAT_ERESP] = "eresp",
	[STAT_WRETR] = "wretr",
	[STAT_WREDIS] = "wredis",
	[STAT_SRV_ABRT] = "srv_abrt",
	[STAT_CLI_ABRT] = "cli_abrt",
	[STAT_HRSP_5XX] = "hrsp_5xx",
	[STAT_WEIGHT] = "weight",
	[STAT_IID] = "iid",
	[STAT_SID] = "sid",
	[STAT_TYPE] = "type",
	[STAT_MODE] = "mode",
	[STAT_SCUR] = "scur",
	[STAT_HRSP_1XX] = "hrsp_1xx",
	[STAT_HRSP_2XX] = "hrsp_2xx",
	[STAT_HRSP_3XX] = "hrsp_3xx",
	[STAT_HRSP_4XX] = "hrsp_4xx",
	[STAT_STOT] = "stot",
	[STAT_ADDR] = "addr",
};

_Static_assert(STAT_NB_COLS <= RUNTIME_API_STAT_COLS,
	       "runtime_api.h: RUNTIME_API_STAT_COLS too small");

enum csv_end {
	CSV_COMMA, /* more fields follow */
	CSV_EOL,   /* last field of the record */
	CSV_CUT,   /* the input ended inside the record */
	CSV_BAD,   /* bytes after a closing quote; skipped to the end of line */
};

/* Reads one field at *pp. A quoted field ("a,b", with "" for a quote) is
 * returned without its quotes and *quoted set. *f is always set: empty
 * when the input ends inside an opening quote. */
static enum csv_end csv_field(const char **pp, const char *end, struct runtime_api_str *f,
			      bool *quoted)
{
	const char *p = *pp;

	f->ptr = p;
	f->len = 0;

	*quoted = p < end && *p == '"';
	if (*quoted) {
		const char *start = ++p;
		for (;;) {
			if (p >= end) {
				*pp = end;
				return CSV_CUT;
			}
			if (*p == '"') {
				if (p + 1 < end && p[1] == '"') {
					p += 2;
					continue;
				}
				break;
			}
			p++;
		}
		f->ptr = start;
		f->len = (size_t)(p - start);
		p++; /* the closing quote */
		if (p < end && *p != ',' && *p != '\n') {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			*pp = nl ? nl + 1 : end;
			return nl ? CSV_BAD : CSV_CUT;
		}
	} else {
		const char *start = p;
		while (p < end && *p != ',' && *p != '\n')
			p++;
		f->ptr = start;
		f->len = (size_t)(p - start);
	}
	if (p >= end) {
		*pp = end;
		return CSV_CUT;
	}
	*pp = p + 1;
	return *p == ',' ? CSV_COMMA : CSV_EOL;
}

static bool stat_header_parse(struct runtime_api_str line, struct runtime_api_stat_columns *h,
			      struct runtime_api_parse_report *r)
{
	long index_of[STAT_NB_COLS];
	const char *p = line.ptr + 2; /* after "# " */
	const char *end = line.ptr + line.len;
	size_t i = 0;

	for (int c = 0; c < STAT_NB_COLS; c++)
		index_of[c] = -1;
	/* The line excludes its '\n', so the last field ends in CSV_CUT. */
	for (;;) {
		struct runtime_api_str name;
		bool quoted;
		enum csv_end e = csv_field(&p, end, &name, &quoted);
		for (int c = 0; c < STAT_NB_COLS; c++)
			if (index_of[c] < 0 && runtime_api_str_eq(name, stat_col_names[c]))
				index_of[c] = (long)i;
		i++;
		if (e == CSV_BAD)
			return runtime_api_report_fail(
			    r, "show stat: header field %zu is malformed", i);
		if (e != CSV_COMMA)
			break;
	}
	h->nb_fields = i;
	for (int c = 0; c < STAT_NB_REQUIRED; c++)
		if (index_of[c] < 0)
			return runtime_api_report_fail(r, "show stat: header has no '%s' column",
						       stat_col_names[c]);
	h->has_type = index_of[STAT_TYPE] >= 0;
	h->has_addr = index_of[STAT_ADDR] >= 0;
	/* Insertion sort by field index: at most STAT_NB_COLS entries. */
	h->nb_want = 0;
	for (int c = 0; c < STAT_NB_COLS; c++) {
		if (index_of[c] < 0)
			continue;
		unsigned k = h->nb_want++;
		while (k > 0 && h->want[k - 1].index > (size_t)index_of[c]) {
			h->want[k] = h->want[k - 1];
			k--;
		}
		h->want[k].index = (size_t)index_of[c];
		h->want[k].col = (unsigned)c;
	}
	return true;
}

/* A counter: empty is 0; a quoted or non-numeric value is not a counter. */
static bool stat_counter(const struct runtime_api_str *v, const bool *quoted, enum stat_col c,
			 uint64_t *out)
{
	if (quoted[c])
		return false;
	if (v[c].len == 0) {
		*out = 0;
		return true;
	}
	return runtime_api_str_u64(v[c], out);
}

/* Turns the fields of one row into a row struct; false names the field
 * that is not what it should be. */
static bool stat_row_fill(const struct runtime_api_str *v, const bool *quoted,
			  struct runtime_api_stat_row *row, const char **bad)
{
	static const struct {
		enum stat_col col;
		size_t offset;
	} counters[] = {
	    {STAT_ECON, offsetof(struct runtime_api_stat_row, econ)},
	    {STAT_ERESP, offsetof(struct runtime_api_stat_row, eresp)},
	    {STAT_WRETR, offsetof(struct runtime_api_stat_row, wretr)},
	    {STAT_WREDIS, offsetof(struct runtime_api_stat_row, wredis)},
	    {STAT_SRV_ABRT, offsetof(struct runtime_api_stat_row, srv_abrt)},
	    {STAT_CLI_ABRT, offsetof(struct runtime_api_stat_row, cli_abrt)},
	    {STAT_HRSP_5XX, offsetof(struct runtime_api_stat_row, hrsp_5xx)},
	    {STAT_WEIGHT, offsetof(struct runtime_api_stat_row, weight)},
	    {STAT_IID, offsetof(struct runtime_api_stat_row, iid)},
	    {STAT_SID, offsetof(struct runtime_api_stat_row, sid)},
	    {STAT_SCUR, offsetof(struct runtime_api_stat_row, scur)},
	    {STAT_HRSP_1XX, offsetof(struct runtime_api_stat_row, hrsp_1xx)},
	    {STAT_HRSP_2XX, offsetof(struct runtime_api_stat_row, hrsp_2xx)},
	    {STAT_HRSP_3XX, offsetof(struct runtime_api_stat_row, hrsp_3xx)},
	    {STAT_HRSP_4XX, offsetof(struct runtime_api_stat_row, hrsp_4xx)},
	    {STAT_STOT, offsetof(struct runtime_api_stat_row, stot)},
	};

	row->pxname = v[STAT_PXNAME];
	row->svname = v[STAT_SVNAME];
	row->status = v[STAT_STATUS];
	row->mode = v[STAT_MODE]; /* empty when the column is absent */
	row->addr = v[STAT_ADDR];
	if (row->pxname.len == 0 || row->svname.len == 0) {
		*bad = row->pxname.len == 0 ? "pxname" : "svname";
		return false;
	}
	if (v[STAT_SLIM].len == 0 && !quoted[STAT_SLIM]) {
		row->slim = -1;
	} else {
		uint64_t slim;
		if (quoted[STAT_SLIM] || !runtime_api_str_u64(v[STAT_SLIM], &slim) ||
		    slim > INT64_MAX) {
			*bad = "slim";
			return false;
		}
		row->slim = (int64_t)slim;
	}
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		uint64_t *dst = (uint64_t *)((char *)row + counters[i].offset);
		if (!stat_counter(v, quoted, counters[i].col, dst)) {
			*bad = stat_col_names[counters[i].col];
			return false;
		}
	}
	return true;
}

static bool stat_is_server(const struct runtime_api_stat_columns *h,
			   const struct runtime_api_str *v)
{
	if (h->has_type)
		/* 0 frontend, 1 backend, 2 server, 3 listener */
		return runtime_api_str_eq(v[STAT_TYPE], "2");
	return !runtime_api_str_eq(v[STAT_SVNAME], "FRONTEND") &&
	       !runtime_api_str_eq(v[STAT_SVNAME], "BACKEND");
}

void runtime_api_stat_stream_init(struct runtime_api_stat_stream *s, runtime_api_stat_fn fn,
				  void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->fn = fn;
	s->ctx = ctx;
}

/* The header line, once it is all there. Returns the bytes it took: 0
 * while it is incomplete, or all of len once the reply is refused. */
static size_t stat_stream_header(struct runtime_api_stat_stream *s, const char *buf, size_t len,
				 bool at_end)
{
	struct runtime_api_parse_report *r = &s->report;
	const char *nl = memchr(buf, '\n', len);
	struct runtime_api_str line = {buf, nl ? (size_t)(nl - buf) : len};
	char ex[48];

	/* A reply that does not start with "# " is an error message: said
	 * as soon as its excerpt (40 bytes) or its first line is there, not
	 * after waiting for the rest. */
	if (len >= 2 && memcmp(buf, "# ", 2) != 0 && (nl || len >= 40 || at_end)) {
		s->refused = true;
		runtime_api_report_fail(
		    r, "show stat: no '# pxname,...' header; reply starts with '%s'",
		    runtime_api_str_excerpt(line, ex, sizeof(ex)));
		return len;
	}
	if (!nl && !at_end)
		return 0;
	if (len == 0) {
		s->refused = true;
		runtime_api_report_fail(r, "show stat: empty reply");
		return len;
	}
	s->lineno = 1;
	if (line.len < 2) { /* "#" alone, at the end */
		s->refused = true;
		runtime_api_report_fail(
		    r, "show stat: no '# pxname,...' header; reply starts with '%s'",
		    runtime_api_str_excerpt(line, ex, sizeof(ex)));
		return len;
	}
	if (!nl) {
		s->refused = true;
		runtime_api_report_fail(r, "show stat: header cut short");
		return len;
	}
	if (!stat_header_parse(line, &s->columns, r)) {
		s->refused = true;
		return len;
	}
	s->header_read = true;
	return (size_t)(nl + 1 - buf);
}

size_t runtime_api_stat_stream_feed(struct runtime_api_stat_stream *s, const char *buf, size_t len,
				    bool at_end)
{
	struct runtime_api_parse_report *r = &s->report;
	const struct runtime_api_stat_columns *h = &s->columns;
	char ex[48];

	if (s->refused || s->ended)
		return len;
	if (!buf) /* nothing (yet): an empty reply, never a NULL to read */
		buf = "", len = 0;
	const char *p = buf, *end = buf + len;
	if (!s->header_read) {
		p += stat_stream_header(s, buf, len, at_end);
		if (!s->header_read)
			return (size_t)(p - buf);
	}

	/* Rows are read field by field rather than line by line: a quoted
	 * field may hold a comma (and, in theory, a newline). A record the
	 * input ends inside is left for the next feed, unless there is none. */
	while (p < end) {
		const char *record = p;
		struct runtime_api_str v[STAT_NB_COLS] = {{0}};
		bool quoted[STAT_NB_COLS] = {0};
		size_t i = 0;
		unsigned k = 0;
		enum csv_end e;

		if (*p == '\n') { /* the terminating empty line */
			s->lineno++;
			p++;
			continue;
		}
		if (*p == '#') { /* a comment */
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl && !at_end)
				break;
			s->lineno++;
			p = nl ? nl + 1 : end;
			continue;
		}
		do {
			struct runtime_api_str f;
			bool q;
			e = csv_field(&p, end, &f, &q);
			if (k < h->nb_want && h->want[k].index == i) {
				v[h->want[k].col] = f;
				quoted[h->want[k].col] = q;
				k++;
			}
			i++;
		} while (e == CSV_COMMA);

		if (e == CSV_CUT && !at_end) {
			p = record;
			break;
		}
		s->lineno++;
		if (e == CSV_CUT) {
			runtime_api_report_malformed(r, "show stat line %u: cut short", s->lineno);
			s->ended = true;
			return len;
		}
		if (e == CSV_BAD) {
			runtime_api_report_malformed(
			    r, "show stat line %u: text after a closing quote", s->lineno);
			continue;
		}
		if (i != h->nb_fields) {
			runtime_api_report_malformed(
			    r, "show stat line %u: %zu fields, the header has %zu", s->lineno, i,
			    h->nb_fields);
			continue;
		}
		if (!stat_is_server(h, v))
			continue;
		struct runtime_api_stat_row row;
		const char *bad = NULL;
		row.has_addr = h->has_addr;
		if (!stat_row_fill(v, quoted, &row, &bad)) {
			runtime_api_report_malformed(
			    r, "show stat line %u (%s): bad %s", s->lineno,
			    runtime_api_str_excerpt(v[STAT_SVNAME], ex, sizeof(ex)), bad);
			continue;
		}
		r->rows++;
		s->fn(s->ctx, &row);
	}
	return (size_t)(p - buf);
}

bool runtime_api_stat_stream_usable(const struct runtime_api_stat_stream *s)
{
	return s->header_read && !s->refused;
}

bool runtime_api_parse_stat(const char *buf, size_t len, runtime_api_stat_fn fn, void *ctx,
			    struct runtime_api_parse_report *report)
{
	struct runtime_api_stat_stream s;

	runtime_api_stat_stream_init(&s, fn, ctx);
	runtime_api_stat_stream_feed(&s, buf, len, true);
	if (report)
		*report = s.report;
	return runtime_api_stat_stream_usable(&s);
}
