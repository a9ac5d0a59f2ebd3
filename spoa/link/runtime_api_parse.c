/*
 * runtime_api_parse.c - Runtime API replies, parsed (pure).
 *
 * Every parser takes (buf, len), which is not NUL-terminated and may be cut
 * anywhere or be garbage altogether: nothing is read past len, a line that
 * does not end in '\n' is a line cut short (reported, never trusted, since
 * "12" may be the start of "1234"), and columns are always found by name in
 * the reply's own header, because HAProxy adds columns between versions.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "link/runtime_api.h"

/* --- common helpers --- */

static bool str_eq(struct runtime_api_str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

/* Digits only, no sign, no blanks; false on anything else or overflow. */
static bool parse_u64(struct runtime_api_str s, uint64_t *out)
{
	uint64_t v = 0;

	if (s.len == 0 || s.len > 20)
		return false;
	for (size_t i = 0; i < s.len; i++) {
		unsigned d = (unsigned char)s.ptr[i] - '0';
		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool parse_uint(struct runtime_api_str s, unsigned *out)
{
	uint64_t v;
	if (!parse_u64(s, &v) || v > UINT_MAX)
		return false;
	*out = (unsigned)v;
	return true;
}

/* A printable excerpt of untrusted bytes, for error messages. */
static const char *excerpt(struct runtime_api_str s, char *dst, size_t size)
{
	size_t n = s.len < size - 1 ? s.len : size - 1;
	if (n > 40)
		n = 40;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s.ptr[i];
		dst[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	dst[n] = '\0';
	return dst;
}

static void report_reset(struct runtime_api_parse_report *r)
{
	r->rows = 0;
	r->malformed = 0;
	r->error[0] = '\0';
}

__attribute__((format(printf, 2, 0))) static void report_set(struct runtime_api_parse_report *r,
							     const char *fmt, va_list ap)
{
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
}

/* A line was skipped; the first such line is described. */
__attribute__((format(printf, 2, 3))) static void report_malformed(struct runtime_api_parse_report *r,
								   const char *fmt, ...)
{
	r->malformed++;
	if (r->error[0] == '\0') {
		va_list ap;
		va_start(ap, fmt);
		report_set(r, fmt, ap);
		va_end(ap);
	}
}

/* The reply as a whole is unusable: returns false, with the reason. */
__attribute__((format(printf, 2, 3))) static bool report_fail(struct runtime_api_parse_report *r,
							      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report_set(r, fmt, ap);
	va_end(ap);
	return false;
}

/* Lines of a reply. */
struct cursor {
	const char *p, *end;
	unsigned line; /* 1-based number of the line last taken */
};

static void cursor_init(struct cursor *c, const char *buf, size_t len)
{
	c->p = buf;
	c->end = buf ? buf + len : buf;
	c->line = 0;
}

/* Takes the next line without its '\n'; *complete is false for a last line
 * with no '\n' (cut short). Returns false at the end of the input. */
static bool next_line(struct cursor *c, struct runtime_api_str *line, bool *complete)
{
	if (c->p >= c->end)
		return false;
	const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	line->ptr = c->p;
	*complete = nl != NULL;
	line->len = (size_t)((nl ? nl : c->end) - c->p);
	c->p = nl ? nl + 1 : c->end;
	c->line++;
	return true;
}

/* --- multi-command replies --- */

bool runtime_api_split_reply(const char *buf, size_t len, struct runtime_api_str *out, size_t n, size_t *found)
{
	struct cursor c;
	struct runtime_api_str line;
	bool complete;
	size_t count = 0;

	cursor_init(&c, buf, len);
	while (count < n) {
		const char *start = c.p;
		bool ended = false;
		while (next_line(&c, &line, &complete)) {
			if (!complete)
				break; /* cut short: this output never ended */
			if (line.len == 0) {
				out[count].ptr = start;
				out[count].len = (size_t)(line.ptr - start);
				ended = true;
				break;
			}
		}
		if (!ended)
			break;
		count++;
	}
	if (found)
		*found = count;
	return count == n && c.p == c.end;
}

/* --- show stat (CSV) --- */

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

_Static_assert(STAT_NB_COLS <= RUNTIME_API_STAT_COLS, "runtime_api.h: RUNTIME_API_STAT_COLS too small");

enum csv_end {
	CSV_COMMA, /* more fields follow */
	CSV_EOL,   /* last field of the record */
	CSV_CUT,   /* the input ended inside the record */
	CSV_BAD,   /* bytes after a closing quote; skipped to the end of line */
};

/* Reads one field at *pp. A quoted field ("a,b", with "" for a quote) is
 * returned without its quotes and *quoted set. *f is always set: empty
 * when the input ends inside an opening quote. */
static enum csv_end csv_field(const char **pp, const char *end, struct runtime_api_str *f, bool *quoted)
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
			if (index_of[c] < 0 && str_eq(name, stat_col_names[c]))
				index_of[c] = (long)i;
		i++;
		if (e == CSV_BAD)
			return report_fail(r, "show stat: header field %zu is malformed", i);
		if (e != CSV_COMMA)
			break;
	}
	h->nb_fields = i;
	for (int c = 0; c < STAT_NB_REQUIRED; c++)
		if (index_of[c] < 0)
			return report_fail(r, "show stat: header has no '%s' column",
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
	return parse_u64(v[c], out);
}

/* Turns the fields of one row into a row struct; false names the field
 * that is not what it should be. */
static bool stat_row_fill(const struct runtime_api_str *v, const bool *quoted, struct runtime_api_stat_row *row,
			  const char **bad)
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
		if (quoted[STAT_SLIM] || !parse_u64(v[STAT_SLIM], &slim) || slim > INT64_MAX) {
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

static bool stat_is_server(const struct runtime_api_stat_columns *h, const struct runtime_api_str *v)
{
	if (h->has_type)
		return str_eq(v[STAT_TYPE], "2"); /* 0 frontend, 1 backend, 2 server, 3 listener */
	return !str_eq(v[STAT_SVNAME], "FRONTEND") && !str_eq(v[STAT_SVNAME], "BACKEND");
}

void runtime_api_stat_stream_init(struct runtime_api_stat_stream *s, runtime_api_stat_fn fn, void *ctx)
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
		report_fail(r, "show stat: no '# pxname,...' header; reply starts with '%s'",
			    excerpt(line, ex, sizeof(ex)));
		return len;
	}
	if (!nl && !at_end)
		return 0;
	if (len == 0) {
		s->refused = true;
		report_fail(r, "show stat: empty reply");
		return len;
	}
	s->lineno = 1;
	if (line.len < 2) { /* "#" alone, at the end */
		s->refused = true;
		report_fail(r, "show stat: no '# pxname,...' header; reply starts with '%s'",
			    excerpt(line, ex, sizeof(ex)));
		return len;
	}
	if (!nl) {
		s->refused = true;
		report_fail(r, "show stat: header cut short");
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
			report_malformed(r, "show stat line %u: cut short", s->lineno);
			s->ended = true;
			return len;
		}
		if (e == CSV_BAD) {
			report_malformed(r, "show stat line %u: text after a closing quote",
					 s->lineno);
			continue;
		}
		if (i != h->nb_fields) {
			report_malformed(r, "show stat line %u: %zu fields, the header has %zu",
					 s->lineno, i, h->nb_fields);
			continue;
		}
		if (!stat_is_server(h, v))
			continue;
		struct runtime_api_stat_row row;
		const char *bad = NULL;
		row.has_addr = h->has_addr;
		if (!stat_row_fill(v, quoted, &row, &bad)) {
			report_malformed(r, "show stat line %u (%s): bad %s", s->lineno,
					 excerpt(v[STAT_SVNAME], ex, sizeof(ex)), bad);
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

/* --- show servers state --- */

enum state_col {
	SS_BE_ID,
	SS_BE_NAME,
	SS_SRV_ID,
	SS_SRV_NAME,
	SS_OP_STATE,
	SS_ADMIN_STATE,
	SS_UWEIGHT,
	SS_IWEIGHT,
	/* optional (every version from 2.6 has them): "-" and the
	 * configured port for a server-template slot DNS has not filled */
	SS_ADDR,
	SS_PORT,
	SS_NB_COLS,
};
#define SS_NB_REQUIRED SS_ADDR

static const char *const state_col_names[SS_NB_COLS] = {
	[SS_BE_ID] = "be_id",
	[SS_BE_NAME] = "be_name",
	[SS_SRV_ID] = "srv_id",
	[SS_SRV_NAME] = "srv_name",
	[SS_OP_STATE] = "srv_op_state",
	[SS_ADMIN_STATE] = "srv_admin_state",
	[SS_UWEIGHT] = "srv_uweight",
	[SS_IWEIGHT] = "srv_iweight",
	[SS_ADDR] = "srv_addr",
	[SS_PORT] = "srv_port",
};

/* Splits line at single spaces (an empty field stays a field), storing the
 * fields listed in index_of; returns the number of fields. */
static size_t split_spaces(struct runtime_api_str line, const long *index_of, size_t nb_cols,
			   struct runtime_api_str *v)
{
	const char *p = line.ptr;
	const char *end = line.ptr + line.len;
	size_t i = 0;

	for (;;) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		struct runtime_api_str f = {p, (size_t)((sp ? sp : end) - p)};
		for (size_t c = 0; c < nb_cols; c++)
			if (index_of[c] == (long)i)
				v[c] = f;
		i++;
		if (!sp)
			return i;
		p = sp + 1;
	}
}

/* Finds each wanted column in the header's fields; returns their number. */
static size_t state_header_parse(struct runtime_api_str header, long *index_of)
{
	const char *p = header.ptr;
	const char *end = header.ptr + header.len;
	size_t i = 0;

	for (int k = 0; k < SS_NB_COLS; k++)
		index_of[k] = -1;
	for (;;) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		struct runtime_api_str f = {p, (size_t)((sp ? sp : end) - p)};
		for (int k = 0; k < SS_NB_COLS; k++)
			if (index_of[k] < 0 && str_eq(f, state_col_names[k]))
				index_of[k] = (long)i;
		i++;
		if (!sp)
			return i;
		p = sp + 1;
	}
}

void runtime_api_servers_state_stream_init(struct runtime_api_servers_state_stream *s,
					   runtime_api_server_state_fn fn, void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->fn = fn;
	s->ctx = ctx;
	for (int k = 0; k < SS_NB_COLS; k++)
		s->index_of[k] = -1;
}

_Static_assert(SS_NB_COLS <= RUNTIME_API_SERVERS_STATE_COLS,
	       "runtime_api.h: RUNTIME_API_SERVERS_STATE_COLS too small");

/* The version line or the header: false refuses the reply. */
static bool servers_state_preamble(struct runtime_api_servers_state_stream *s,
				   struct runtime_api_str line, bool complete)
{
	struct runtime_api_parse_report *r = &s->report;
	char ex[48];

	if (s->lineno == 1) {
		if (!complete || !str_eq(line, "1"))
			return report_fail(r, "show servers state: expected format version 1, got '%s'",
					   excerpt(line, ex, sizeof(ex)));
		return true;
	}
	if (!complete || line.len < 2 || memcmp(line.ptr, "# ", 2) != 0)
		return report_fail(r, "show servers state: no '# be_id be_name ...' header");
	s->nb_fields = state_header_parse((struct runtime_api_str){line.ptr + 2, line.len - 2},
					  s->index_of);
	for (int k = 0; k < SS_NB_REQUIRED; k++)
		if (s->index_of[k] < 0)
			return report_fail(r, "show servers state: header has no '%s' column",
					   state_col_names[k]);
	s->header_read = true;
	return true;
}

static void servers_state_row(struct runtime_api_servers_state_stream *s, struct runtime_api_str line)
{
	struct runtime_api_parse_report *r = &s->report;
	struct runtime_api_str v[SS_NB_COLS] = {{0}};
	struct runtime_api_server_state row;

	size_t n = split_spaces(line, s->index_of, SS_NB_COLS, v);
	if (n != s->nb_fields) {
		report_malformed(r, "show servers state line %u: %zu fields, the header has %zu",
				 s->lineno, n, s->nb_fields);
		return;
	}
	row.be_name = v[SS_BE_NAME];
	row.srv_name = v[SS_SRV_NAME];
	row.addr = v[SS_ADDR]; /* empty when the column is absent */
	row.port = v[SS_PORT];
	const char *bad = NULL;
	if (!parse_u64(v[SS_BE_ID], &row.be_id))
		bad = "be_id";
	else if (row.be_name.len == 0)
		bad = "be_name";
	else if (!parse_u64(v[SS_SRV_ID], &row.srv_id))
		bad = "srv_id";
	else if (row.srv_name.len == 0)
		bad = "srv_name";
	else if (!parse_uint(v[SS_OP_STATE], &row.op_state))
		bad = "srv_op_state";
	else if (!parse_uint(v[SS_ADMIN_STATE], &row.admin_state))
		bad = "srv_admin_state";
	else if (!parse_uint(v[SS_UWEIGHT], &row.uweight))
		bad = "srv_uweight";
	else if (!parse_uint(v[SS_IWEIGHT], &row.iweight))
		bad = "srv_iweight";
	if (bad) {
		report_malformed(r, "show servers state line %u: bad %s", s->lineno, bad);
		return;
	}
	r->rows++;
	s->fn(s->ctx, &row);
}

size_t runtime_api_servers_state_stream_feed(struct runtime_api_servers_state_stream *s,
					     const char *buf, size_t len, bool at_end)
{
	struct cursor c;
	struct runtime_api_str line;
	bool complete;

	if (s->refused || s->ended)
		return len;
	if (len == 0 && at_end && s->lineno == 0) {
		s->refused = true;
		report_fail(&s->report, "show servers state: empty reply");
		return len;
	}
	cursor_init(&c, buf, len);
	for (;;) {
		const char *start = c.p;
		if (!next_line(&c, &line, &complete))
			break;
		if (!complete && !at_end)
			return (size_t)(start - buf); /* the rest of it comes later */
		s->lineno++;
		if (!s->header_read) {
			if (!servers_state_preamble(s, line, complete)) {
				s->refused = true;
				return len;
			}
			continue;
		}
		if (line.len == 0 && complete)
			continue; /* the terminating empty line */
		if (!complete) {
			report_malformed(&s->report, "show servers state line %u: cut short",
					 s->lineno);
			s->ended = true;
			return len;
		}
		if (line.ptr[0] == '#')
			continue; /* a comment, says the management guide */
		servers_state_row(s, line);
	}
	if (at_end && !s->header_read) {
		s->refused = true;
		report_fail(&s->report, s->lineno == 0 ? "show servers state: empty reply"
							: "show servers state: no '# be_id be_name ...' header");
	}
	return len;
}

bool runtime_api_servers_state_stream_usable(const struct runtime_api_servers_state_stream *s)
{
	return s->header_read && !s->refused;
}

bool runtime_api_parse_servers_state(const char *buf, size_t len, runtime_api_server_state_fn fn,
				     void *ctx, struct runtime_api_parse_report *report)
{
	struct runtime_api_servers_state_stream s;

	runtime_api_servers_state_stream_init(&s, fn, ctx);
	runtime_api_servers_state_stream_feed(&s, buf, len, true);
	if (report)
		*report = s.report;
	return runtime_api_servers_state_stream_usable(&s);
}

/* --- show info --- */

bool runtime_api_parse_info(const char *buf, size_t len, struct runtime_api_info *info,
		      struct runtime_api_parse_report *report)
{
	struct runtime_api_parse_report local;
	struct runtime_api_parse_report *r = report ? report : &local;
	struct cursor c;
	struct runtime_api_str line;
	bool complete;
	bool have_pid = false, have_uptime = false;

	report_reset(r);
	memset(info, 0, sizeof(*info));
	cursor_init(&c, buf, len);
	while (next_line(&c, &line, &complete)) {
		if (line.len == 0 && complete)
			continue;
		if (!complete) {
			report_malformed(r, "show info line %u: cut short", c.line);
			break;
		}
		const char *colon = memchr(line.ptr, ':', line.len);
		if (!colon || colon + 1 >= line.ptr + line.len || colon[1] != ' ') {
			report_malformed(r, "show info line %u: not 'Key: value'", c.line);
			continue;
		}
		struct runtime_api_str key = {line.ptr, (size_t)(colon - line.ptr)};
		struct runtime_api_str value = {colon + 2, (size_t)(line.ptr + line.len - colon - 2)};
		uint64_t *dst = NULL;
		bool *seen = NULL;

		if (str_eq(key, "Pid") && !have_pid) {
			dst = &info->pid;
			seen = &have_pid;
		} else if (str_eq(key, "Uptime_sec") && !have_uptime) {
			dst = &info->uptime_sec;
			seen = &have_uptime;
		} else if (str_eq(key, "Process_num")) {
			dst = &info->process_num;
		} else if (str_eq(key, "Start_time_sec")) {
			dst = &info->start_time_sec;
		} else if (str_eq(key, "Version")) {
			size_t n = value.len < sizeof(info->version) - 1
				       ? value.len
				       : sizeof(info->version) - 1;
			memcpy(info->version, value.ptr, n);
			info->version[n] = '\0';
			continue;
		} else {
			continue;
		}
		if (!parse_u64(value, dst)) {
			*dst = 0;
			report_malformed(r, "show info line %u: %.*s is not a number", c.line,
					 (int)key.len, key.ptr);
			continue;
		}
		if (seen)
			*seen = true;
	}
	if (!have_pid)
		return report_fail(r, "show info: no Pid");
	if (!have_uptime)
		return report_fail(r, "show info: no Uptime_sec");
	return true;
}
