/*
 * fuzz_runtime_api.c - libFuzzer target: the input is what HAProxy's
 * Runtime API answered.
 *
 * The input is split as a reply to a batch of 1, 2 and 3 commands; the
 * whole of it, and each output of the 3-command split, goes through every
 * reply parser (show stat, show servers state, show info), as a look hands
 * them the outputs of the commands it queues together (`show info`, then
 * `show stat` and `show servers state`, each streamed in an exchange of its
 * own); and the whole of it is fed to the stream parsers in arrivals of
 * 1 to 16 bytes (more on long inputs), which must make of it exactly what the whole-reply
 * parsers make. What comes back must point into the input, the counts must agree
 * with the callbacks, and every message must be a terminated string; a
 * broken invariant calls __builtin_trap(), reads past the input are ASan's.
 * The parsers take (buf, len) with no terminator, and libFuzzer's buffer
 * has exactly `size` bytes: a read one past the end is caught.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hapi/runtime_api.h"

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

/* Fed as it arrives (runtime_api_*_stream_feed), a reply must give what it
 * gives whole: the same rows, in order, and the same report. Rows are
 * compared by a hash of their fields, taken during the callback. */
struct fed {
	uint64_t hash;
	unsigned rows;
};

static void hash_bytes(struct fed *f, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		f->hash = (f->hash ^ b[i]) * 1099511628211u;
	f->hash = (f->hash ^ n) * 1099511628211u;
}

static void hash_str(struct fed *f, struct runtime_api_str s)
{
	hash_bytes(f, s.ptr ? s.ptr : "", s.len);
}

static void fed_stat_row(void *ctx, const struct runtime_api_stat_row *row)
{
	struct fed *f = ctx;
	f->rows++;
	hash_str(f, row->pxname);
	hash_str(f, row->svname);
	hash_str(f, row->status);
	hash_str(f, row->mode);
	const uint64_t n[] = {(uint64_t)row->slim, row->econ, row->eresp, row->wretr, row->wredis,
			      row->srv_abrt, row->cli_abrt, row->hrsp_5xx, row->weight, row->iid,
			      row->sid};
	hash_bytes(f, n, sizeof(n));
}

static void fed_state_row(void *ctx, const struct runtime_api_server_state *row)
{
	struct fed *f = ctx;
	f->rows++;
	hash_str(f, row->be_name);
	hash_str(f, row->srv_name);
	const uint64_t n[] = {row->be_id, row->srv_id, row->op_state, row->admin_state,
			      row->uweight, row->iweight};
	hash_bytes(f, n, sizeof(n));
}

/* Feeds buf `chunk` bytes at a time, each feed in a buffer of exactly what
 * it holds: the unused rest of the last one, then the new bytes. */
static void feed_in_chunks(const char *buf, size_t len, size_t chunk, bool servers_state,
			   struct fed *f, struct runtime_api_parse_report *report, bool *usable)
{
	struct runtime_api_stat_stream st;
	struct runtime_api_servers_state_stream ss;
	char *pending = NULL;
	size_t pending_len = 0, pos = 0;

	runtime_api_stat_stream_init(&st, fed_stat_row, f);
	runtime_api_servers_state_stream_init(&ss, fed_state_row, f);
	for (;;) {
		size_t n = len - pos < chunk ? len - pos : chunk;
		bool at_end = pos + n == len;
		size_t have = pending_len + n;
		char *in = malloc(have ? have : 1);
		check(in != NULL);
		if (pending_len)
			memcpy(in, pending, pending_len);
		if (n)
			memcpy(in + pending_len, buf + pos, n);
		pos += n;
		size_t used = servers_state ? runtime_api_servers_state_stream_feed(&ss, in, have, at_end)
					    : runtime_api_stat_stream_feed(&st, in, have, at_end);
		check(used <= have && (!at_end || used == have));
		free(pending);
		pending_len = have - used;
		pending = malloc(pending_len ? pending_len : 1);
		check(pending != NULL);
		if (pending_len)
			memcpy(pending, in + used, pending_len);
		free(in);
		if (at_end)
			break;
	}
	free(pending);
	*report = servers_state ? ss.report : st.report;
	*usable = servers_state ? runtime_api_servers_state_stream_usable(&ss)
				: runtime_api_stat_stream_usable(&st);
}

static void check_fed_like_whole(const char *buf, size_t len, size_t chunk)
{
	for (int servers_state = 0; servers_state <= 1; servers_state++) {
		struct fed whole = {14695981039346656037u, 0}, fed = whole;
		struct runtime_api_parse_report wr, fr;
		bool wok = servers_state
				   ? runtime_api_parse_servers_state(buf, len, fed_state_row, &whole, &wr)
				   : runtime_api_parse_stat(buf, len, fed_stat_row, &whole, &wr);
		bool fok;
		feed_in_chunks(buf, len, chunk, servers_state, &fed, &fr, &fok);
		check(wok == fok && whole.rows == fed.rows && whole.hash == fed.hash);
		check(wr.rows == fr.rows && wr.malformed == fr.malformed &&
		      strcmp(wr.error, fr.error) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct span whole = {buf, size, 0};

	parse_all(buf, size, size % 2 == 0);
	/* Arrivals of 1 to 16 bytes, the size chosen by the input; scaled up
	 * on long inputs, where each feed copies what the last left unused
	 * (a cost that grows with the square of the arrivals). */
	size_t scale = size / 512 + 1;
	check_fed_like_whole(buf, size, size ? scale * (1 + (size_t)(data[size - 1] % 16)) : 1);
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
