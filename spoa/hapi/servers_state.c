/*
 * servers_state.c - the `show servers state` reply, parsed as it arrives
 * (pure): the format version line, the header's columns found by name,
 * then one callback per server row.
 *
 * Its own file because its reply is its own: space-separated, versioned,
 * and the one that says how a server is out (srv_admin_state's bits: a
 * forced drain, an inherited one, maintenance from the configuration),
 * which `show stat`'s status text does not tell apart. Fed line by line
 * like the stat stream; runtime_api_parse_servers_state() is that stream
 * fed once.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hapi/runtime_api.h"
#include "hapi/text.h"

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

/* Takes the field at *p, up to the next single space or end (an empty
 * field stays a field), and moves *p past it and its space. Returns false
 * for the line's last field. */
static bool next_space_field(const char **p, const char *end, struct runtime_api_str *f)
{
	const char *sp = memchr(*p, ' ', (size_t)(end - *p));
	f->ptr = *p;
	f->len = (size_t)((sp ? sp : end) - *p);
	*p = sp ? sp + 1 : end;
	return sp != NULL;
}

/* Splits line at single spaces, storing the fields listed in index_of;
 * returns the number of fields. */
static size_t split_spaces(struct runtime_api_str line, const long *index_of, size_t nb_cols,
			   struct runtime_api_str *v)
{
	const char *p = line.ptr;
	size_t i = 0;

	for (bool more = true; more; i++) {
		struct runtime_api_str f;
		more = next_space_field(&p, line.ptr + line.len, &f);
		for (size_t c = 0; c < nb_cols; c++)
			if (index_of[c] == (long)i)
				v[c] = f;
	}
	return i;
}

/* Finds each wanted column in the header's fields; returns their number. */
static size_t state_header_parse(struct runtime_api_str header, long *index_of)
{
	const char *p = header.ptr;
	size_t i = 0;

	for (int k = 0; k < SS_NB_COLS; k++)
		index_of[k] = -1;
	for (bool more = true; more; i++) {
		struct runtime_api_str f;
		more = next_space_field(&p, header.ptr + header.len, &f);
		for (int k = 0; k < SS_NB_COLS; k++)
			if (index_of[k] < 0 && runtime_api_str_eq(f, state_col_names[k]))
				index_of[k] = (long)i;
	}
	return i;
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
		if (!complete || !runtime_api_str_eq(line, "1"))
			return runtime_api_report_fail(
			    r, "show servers state: expected format version 1, got '%s'",
			    runtime_api_str_excerpt(line, ex, sizeof(ex)));
		return true;
	}
	if (!complete || line.len < 2 || memcmp(line.ptr, "# ", 2) != 0)
		return runtime_api_report_fail(
		    r, "show servers state: no '# be_id be_name ...' header");
	s->nb_fields =
	    state_header_parse((struct runtime_api_str){line.ptr + 2, line.len - 2}, s->index_of);
	for (int k = 0; k < SS_NB_REQUIRED; k++)
		if (s->index_of[k] < 0)
			return runtime_api_report_fail(
			    r, "show servers state: header has no '%s' column", state_col_names[k]);
	s->header_read = true;
	return true;
}

static void servers_state_row(struct runtime_api_servers_state_stream *s,
			      struct runtime_api_str line)
{
	struct runtime_api_parse_report *r = &s->report;
	struct runtime_api_str v[SS_NB_COLS] = {{0}};
	struct runtime_api_server_state row;

	size_t n = split_spaces(line, s->index_of, SS_NB_COLS, v);
	if (n != s->nb_fields) {
		runtime_api_report_malformed(
		    r, "show servers state line %u: %zu fields, the header has %zu", s->lineno, n,
		    s->nb_fields);
		return;
	}
	row.be_name = v[SS_BE_NAME];
	row.srv_name = v[SS_SRV_NAME];
	row.addr = v[SS_ADDR]; /* empty when the column is absent */
	row.port = v[SS_PORT];
	const char *bad = NULL;
	if (!runtime_api_str_u64(v[SS_BE_ID], &row.be_id))
		bad = "be_id";
	else if (row.be_name.len == 0)
		bad = "be_name";
	else if (!runtime_api_str_u64(v[SS_SRV_ID], &row.srv_id))
		bad = "srv_id";
	else if (row.srv_name.len == 0)
		bad = "srv_name";
	else if (!runtime_api_str_uint(v[SS_OP_STATE], &row.op_state))
		bad = "srv_op_state";
	else if (!runtime_api_str_uint(v[SS_ADMIN_STATE], &row.admin_state))
		bad = "srv_admin_state";
	else if (!runtime_api_str_uint(v[SS_UWEIGHT], &row.uweight))
		bad = "srv_uweight";
	else if (!runtime_api_str_uint(v[SS_IWEIGHT], &row.iweight))
		bad = "srv_iweight";
	if (bad) {
		runtime_api_report_malformed(r, "show servers state line %u: bad %s", s->lineno,
					     bad);
		return;
	}
	r->rows++;
	s->fn(s->ctx, &row);
}

size_t runtime_api_servers_state_stream_feed(struct runtime_api_servers_state_stream *s,
					     const char *buf, size_t len, bool at_end)
{
	struct runtime_api_cursor c;
	struct runtime_api_str line;
	bool complete;

	if (s->refused || s->ended)
		return len;
	if (len == 0 && at_end && s->lineno == 0) {
		s->refused = true;
		runtime_api_report_fail(&s->report, "show servers state: empty reply");
		return len;
	}
	runtime_api_cursor_init(&c, buf, len);
	for (;;) {
		const char *start = c.p;
		if (!runtime_api_cursor_next_line(&c, &line, &complete))
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
			runtime_api_report_malformed(
			    &s->report, "show servers state line %u: cut short", s->lineno);
			s->ended = true;
			return len;
		}
		if (line.ptr[0] == '#')
			continue; /* a comment, says the management guide */
		servers_state_row(s, line);
	}
	if (at_end && !s->header_read) {
		s->refused = true;
		runtime_api_report_fail(
		    &s->report, s->lineno == 0
				    ? "show servers state: empty reply"
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
