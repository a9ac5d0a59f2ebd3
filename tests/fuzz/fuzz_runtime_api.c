/*
 * fuzz_runtime_api.c - libFuzzer target: the input is what HAProxy's
 * Runtime API answered.
 *
 * The input is split as a reply to a batch of 1, 2 and 3 commands; the
 * whole of it, and each output of the 3-command split, goes through every
 * reply parser (show stat, show servers state, show info), as the enforcer
 * hands them the outputs of its `show info; show servers state; show stat`
 * batch. What comes back must point into the input, the counts must agree
 * with the callbacks, and every message must be a terminated string; a
 * broken invariant calls __builtin_trap(), reads past the input are ASan's.
 * The parsers take (buf, len) with no terminator, and libFuzzer's buffer
 * has exactly `size` bytes: a read one past the end is caught.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "link/runtime_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond)
{
	if (!cond)
		__builtin_trap();
}

struct span {
	const char *buf;
	size_t len;
	unsigned rows;
};

static void within(const struct span *s, struct runtime_api_str str)
{
	check(str.len == 0 || (str.ptr >= s->buf && str.len <= s->len &&
			       (size_t)(str.ptr - s->buf) <= s->len - str.len));
}

static void report_sane(const struct runtime_api_parse_report *r, bool ok, unsigned rows)
{
	check(memchr(r->error, '\0', sizeof(r->error)) != NULL);
	check(r->rows == rows);
	if (!ok)
		check(r->error[0] != '\0' && rows == 0);
}

static void on_stat_row(void *ctx, const struct runtime_api_stat_row *row)
{
	struct span *s = ctx;
	s->rows++;
	within(s, row->pxname);
	within(s, row->svname);
	within(s, row->status);
	within(s, row->mode);
	check(row->slim >= -1);
	/* (Which rows are servers is the type column's word when there is
	 * one: a row named BACKEND with type 2 is a server, so the name
	 * proves nothing here.) */
}

static void on_server_state(void *ctx, const struct runtime_api_server_state *row)
{
	struct span *s = ctx;
	s->rows++;
	within(s, row->be_name);
	within(s, row->srv_name);
}

/* Every parser over buf; with_report false passes a NULL report (allowed). */
static void parse_all(const char *buf, size_t len, bool with_report)
{
	struct runtime_api_parse_report report, *r = with_report ? &report : NULL;
	struct span s = {buf, len, 0};

	bool ok = runtime_api_parse_stat(buf, len, on_stat_row, &s, r);
	if (r)
		report_sane(r, ok, s.rows);
	s.rows = 0;
	ok = runtime_api_parse_servers_state(buf, len, on_server_state, &s, r);
	if (r)
		report_sane(r, ok, s.rows);

	struct runtime_api_info info;
	ok = runtime_api_parse_info(buf, len, &info, r);
	if (r)
		report_sane(r, ok, 0);
	if (ok)
		check(memchr(info.version, '\0', sizeof(info.version)) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct span whole = {buf, size, 0};

	parse_all(buf, size, size % 2 == 0);
	for (size_t n = 1; n <= 3; n++) {
		struct runtime_api_str out[3];
		size_t found = 99;
		bool ok = runtime_api_split_reply(buf, size, out, n, &found);
		check(found <= n);
		check(!ok || found == n);
		for (size_t i = 0; i < found; i++) {
			within(&whole, out[i]);
			if (i > 0 && out[i].len && out[i - 1].len)
				check(out[i].ptr >= out[i - 1].ptr + out[i - 1].len);
			if (n == 3)
				parse_all(out[i].ptr, out[i].len, true);
		}
	}
	return 0;
}
