/*
 * fuzz_frame.c - libFuzzer target: the input is what a peer wrote on one
 * SPOP connection.
 *
 * Frames are consumed as the connection layer would (max-frame-size 16380,
 * until the stream is incomplete or invalid), each payload is walked with
 * the decoder its frame type calls for, and everything decoded is encoded
 * again and compared: values semantically, and byte for byte wherever the
 * input used the canonical form (varints are bijective, so only flag bits
 * and INT32's two widths of two's complement have more than one spelling).
 * A broken invariant calls __builtin_trap(); out-of-bounds reads are left to
 * ASan. Nothing here allocates.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "spop/spop.h"

#define MAX_FRAME_SIZE 16380

/* Room for any re-encoded payload: at most 16380 bytes of input, and a
 * value grows by at most 5 bytes (a negative INT32 from its 32-bit to its
 * 64-bit form), which takes at least 6 input bytes. */
#define SCRATCH_SIZE (4 * MAX_FRAME_SIZE)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t scratch[SCRATCH_SIZE];
static uint8_t scratch2[SCRATCH_SIZE];

static void check(bool cond)
{
	if (!cond)
		__builtin_trap();
}

static bool slice_same(struct spop_slice a, struct spop_slice b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static bool slice_within(struct spop_slice s, const uint8_t *buf, size_t len)
{
	return s.len == 0 || (s.ptr >= buf && s.len <= len && s.ptr - buf <= (ptrdiff_t)(len - s.len));
}

static bool data_same(const struct spop_data *a, const struct spop_data *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case SPOP_DATA_NULL:
		return true;
	case SPOP_DATA_BOOL:
		return a->u.boolean == b->u.boolean;
	case SPOP_DATA_INT32:
	case SPOP_DATA_INT64:
		return a->u.sint == b->u.sint;
	case SPOP_DATA_UINT32:
	case SPOP_DATA_UINT64:
		return a->u.uint == b->u.uint;
	case SPOP_DATA_IPV4:
		return memcmp(a->u.ipv4, b->u.ipv4, 4) == 0;
	case SPOP_DATA_IPV6:
		return memcmp(a->u.ipv6, b->u.ipv6, 16) == 0;
	case SPOP_DATA_STRING:
	case SPOP_DATA_BINARY:
		return slice_same(a->u.bytes, b->u.bytes);
	}
	return false;
}

/* Whether the typed data at wire[0..] (already decoded into d) is spelled
 * the way our encoder spells d. */
static bool data_is_canonical(const uint8_t *wire, size_t len, const struct spop_data *d)
{
	uint8_t want = (uint8_t)d->type;
	if (d->type == SPOP_DATA_BOOL && d->u.boolean)
		want |= SPOP_DATA_FLAG_TRUE;
	if (wire[0] != want)
		return false;
	if (d->type == SPOP_DATA_INT32) {
		uint64_t raw;
		check(spop_varint_decode(wire + 1, len - 1, &raw) > 0);
		return raw == (uint64_t)d->u.sint; /* the 64-bit form */
	}
	return true;
}

/* Appends the encoding of d to w, and checks it decodes back to d. */
static void reencode_data(struct spop_writer *w, const struct spop_data *d)
{
	size_t start = w->len;
	struct spop_data back;

	spop_put_data(w, d);
	check(!w->overflow);
	check(spop_data_decode(w->buf + start, w->len - start, &back) == (ssize_t)(w->len - start));
	check(data_same(&back, d));
}

/* Re-encodes one kv decoded from wire[0..n) onto w. Returns whether the
 * input was canonical, in which case the bytes must be identical. */
static bool reencode_kv(struct spop_writer *w, const uint8_t *wire, size_t n,
			const struct spop_kv *kv)
{
	size_t start = w->len;
	struct spop_kv back;

	spop_put_string(w, kv->name.ptr, kv->name.len);
	size_t value_at = w->len - start;
	reencode_data(w, &kv->value);
	check(spop_kv_decode(w->buf + start, w->len - start, &back) == (ssize_t)(w->len - start));
	check(slice_same(back.name, kv->name));
	check(data_same(&back.value, &kv->value));

	/* String lengths are varints, hence canonical: names re-encode exactly. */
	check(value_at <= n && memcmp(w->buf + start, wire, value_at) == 0);
	bool canonical = data_is_canonical(wire + value_at, n - value_at, &kv->value);
	if (canonical)
		check(w->len - start == n && memcmp(w->buf + start, wire, n) == 0);
	return canonical;
}

/* Walks a KV-LIST. Returns true when the whole payload is well formed. */
static bool walk_kv_list(struct spop_slice payload)
{
	size_t off = 0;
	while (off < payload.len) {
		struct spop_kv kv;
		struct spop_writer w;
		ssize_t n = spop_kv_decode(payload.ptr + off, payload.len - off, &kv);
		if (n < 0)
			return false;
		check((size_t)n <= payload.len - off);
		check(slice_within(kv.name, payload.ptr + off, (size_t)n));
		spop_writer_init(&w, scratch, sizeof(scratch));
		reencode_kv(&w, payload.ptr + off, (size_t)n, &kv);
		off += (size_t)n;
	}
	return true;
}

/* Checks one decoded message against a walk of its own bytes, then
 * re-encodes it whole and decodes it back. */
static void check_message(const uint8_t *wire, size_t n, const struct spop_message *m)
{
	struct spop_writer w;
	struct spop_slice name;
	bool canonical = true;

	check(m->nb_args <= 255);
	check(m->nb_stored == (m->nb_args < SPOP_MESSAGE_MAX_ARGS ? m->nb_args : SPOP_MESSAGE_MAX_ARGS));

	spop_writer_init(&w, scratch, sizeof(scratch));
	spop_put_message_header(&w, m->name.ptr, m->name.len, m->nb_args);
	check(!w.overflow);

	ssize_t s = spop_string_decode(wire, n, &name);
	check(s > 0 && name.ptr == m->name.ptr && name.len == m->name.len);
	size_t pos = (size_t)s + 1;
	check(pos <= n && wire[pos - 1] == m->nb_args);
	check(memcmp(w.buf, wire, pos) == 0);

	for (unsigned i = 0; i < m->nb_args; i++) {
		struct spop_kv kv;
		ssize_t k = spop_kv_decode(wire + pos, n - pos, &kv);
		check(k > 0);
		if (i < m->nb_stored) {
			check(kv.name.ptr == m->args[i].name.ptr && kv.name.len == m->args[i].name.len);
			check(data_same(&kv.value, &m->args[i].value));
		}
		canonical &= reencode_kv(&w, wire + pos, (size_t)k, &kv);
		pos += (size_t)k;
	}
	check(pos == n);
	if (canonical)
		check(w.len == n && memcmp(w.buf, wire, n) == 0);

	struct spop_message back;
	check(spop_message_decode(w.buf, w.len, &back) == (ssize_t)w.len);
	check(slice_same(back.name, m->name));
	check(back.nb_args == m->nb_args && back.nb_stored == m->nb_stored);
	for (unsigned i = 0; i < back.nb_stored; i++) {
		check(slice_same(back.args[i].name, m->args[i].name));
		check(data_same(&back.args[i].value, &m->args[i].value));
	}
}

static void walk_notify(struct spop_slice payload)
{
	size_t off = 0;
	while (off < payload.len) {
		/* static: a message is over 600 bytes, keep it off the stack */
		static struct spop_message m;
		ssize_t n = spop_message_decode(payload.ptr + off, payload.len - off, &m);
		if (n < 0)
			return;
		check((size_t)n <= payload.len - off);
		check_message(payload.ptr + off, (size_t)n, &m);
		off += (size_t)n;
	}
}

static void walk_ack(struct spop_slice payload)
{
	size_t off = 0;
	while (off < payload.len) {
		struct spop_action a, back;
		struct spop_writer w;
		const uint8_t *wire = payload.ptr + off;
		ssize_t n = spop_action_decode(wire, payload.len - off, &a);
		if (n < 0)
			return;
		check((size_t)n <= payload.len - off);
		check(a.scope <= SPOP_SCOPE_RES);

		spop_writer_init(&w, scratch, sizeof(scratch));
		bool canonical = true;
		if (a.type == SPOP_ACTION_SET_VAR) {
			const uint8_t *value = a.name.ptr + a.name.len;
			spop_put_set_var(&w, a.scope, a.name.ptr, a.name.len, &a.value);
			canonical = data_is_canonical(value, (size_t)(wire + n - value), &a.value);
		} else {
			check(a.type == SPOP_ACTION_UNSET_VAR);
			spop_put_unset_var(&w, a.scope, a.name.ptr, a.name.len);
		}
		check(!w.overflow);
		if (canonical)
			check(w.len == (size_t)n && memcmp(w.buf, wire, w.len) == 0);
		check(spop_action_decode(w.buf, w.len, &back) == (ssize_t)w.len);
		check(back.type == a.type && back.scope == a.scope && slice_same(back.name, a.name));
		if (a.type == SPOP_ACTION_SET_VAR)
			check(data_same(&back.value, &a.value));
		off += (size_t)n;
	}
}

/* Negotiates as the agent would and checks the answer is one HAProxy takes. */
static void walk_hello(struct spop_slice payload, bool well_formed)
{
	struct spop_handshake hs;
	struct spop_error err = {SPOP_STATUS_NORMAL, NULL};
	struct spop_writer w;
	struct spop_frame f;
	struct spop_error ferr;

	spop_writer_init(&w, scratch2, sizeof(scratch2));
	if (!spop_hello_negotiate(payload, MAX_FRAME_SIZE, &hs, &err)) {
		check(err.reason != NULL);
		check(well_formed || err.status == SPOP_STATUS_INVALID);
		check(err.status == SPOP_STATUS_INVALID || err.status == SPOP_STATUS_NO_VERSION ||
		      err.status == SPOP_STATUS_BAD_VERSION || err.status == SPOP_STATUS_NO_FRAME_SIZE ||
		      err.status == SPOP_STATUS_BAD_FRAME_SIZE);
		check(spop_put_agent_disconnect(&w, err.status, err.reason, MAX_FRAME_SIZE));
		check(spop_frame_decode(w.buf, w.len, MAX_FRAME_SIZE, &f, &ferr) == (ssize_t)w.len);
		check(f.type == SPOP_FRAME_AGENT_DISCONNECT);
		uint32_t status;
		struct spop_slice message;
		check(spop_disconnect_decode(f.payload, &status, &message));
		check(status == err.status && spop_slice_eq(message, err.reason));
		return;
	}
	check(well_formed);
	check(hs.max_frame_size >= SPOP_MIN_FRAME_SIZE && hs.max_frame_size <= MAX_FRAME_SIZE);
	check(slice_within(hs.engine_id, payload.ptr, payload.len));

	check(spop_put_agent_hello(&w, &hs));
	check(spop_frame_decode(w.buf, w.len, hs.max_frame_size, &f, &ferr) == (ssize_t)w.len);
	check(f.type == SPOP_FRAME_AGENT_HELLO && f.flags == SPOP_FLAG_FIN);
	check(f.stream_id == 0 && f.frame_id == 0);

	struct spop_kv kv;
	size_t off = 0;
	ssize_t n = spop_kv_decode(f.payload.ptr, f.payload.len, &kv);
	check(n > 0 && spop_slice_eq(kv.name, "version") && kv.value.type == SPOP_DATA_STRING &&
	      spop_slice_eq(kv.value.u.bytes, "2.0"));
	off += (size_t)n;
	n = spop_kv_decode(f.payload.ptr + off, f.payload.len - off, &kv);
	check(n > 0 && spop_slice_eq(kv.name, "max-frame-size") && kv.value.type == SPOP_DATA_UINT32 &&
	      kv.value.u.uint == hs.max_frame_size);
	off += (size_t)n;
	n = spop_kv_decode(f.payload.ptr + off, f.payload.len - off, &kv);
	check(n > 0 && spop_slice_eq(kv.name, "capabilities") && kv.value.type == SPOP_DATA_STRING &&
	      spop_slice_eq(kv.value.u.bytes, hs.pipelining ? "pipelining" : ""));
	off += (size_t)n;
	check(off == f.payload.len);
}

/* Reads a DISCONNECT and echoes its status and message back in ours. */
static void walk_disconnect(struct spop_slice payload, bool well_formed)
{
	uint32_t status;
	struct spop_slice message;
	static char text[MAX_FRAME_SIZE + 1];

	bool ok = spop_disconnect_decode(payload, &status, &message);
	check(ok == well_formed);
	if (!ok)
		return;
	check(slice_within(message, payload.ptr, payload.len));
	check(spop_status_text((enum spop_status)status) != NULL);

	memcpy(text, message.ptr, message.len);
	text[message.len] = '\0';
	struct spop_writer w;
	spop_writer_init(&w, scratch2, sizeof(scratch2));
	if (!spop_put_agent_disconnect(&w, (enum spop_status)status, text, MAX_FRAME_SIZE)) {
		check(w.len == 0 && !w.overflow);
		return;
	}
	struct spop_frame f;
	struct spop_error err;
	uint32_t back_status;
	struct spop_slice back_message;
	check(spop_frame_decode(w.buf, w.len, MAX_FRAME_SIZE, &f, &err) == (ssize_t)w.len);
	check(spop_disconnect_decode(f.payload, &back_status, &back_message));
	check(back_status == status && spop_slice_eq(back_message, text));
}

static void walk_frame(const struct spop_frame *f)
{
	bool well_formed;

	switch (f->type) {
	case SPOP_FRAME_HAPROXY_HELLO:
		well_formed = walk_kv_list(f->payload);
		walk_hello(f->payload, well_formed);
		break;
	case SPOP_FRAME_HAPROXY_DISCONNECT:
	case SPOP_FRAME_AGENT_DISCONNECT:
		well_formed = walk_kv_list(f->payload);
		walk_disconnect(f->payload, well_formed);
		break;
	case SPOP_FRAME_AGENT_HELLO:
		walk_kv_list(f->payload);
		break;
	case SPOP_FRAME_NOTIFY:
		walk_notify(f->payload);
		break;
	case SPOP_FRAME_ACK:
		walk_ack(f->payload);
		break;
	case SPOP_FRAME_UNSET:
		break; /* fragments: refused by the connection layer */
	}
}

static uint32_t read_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The frame header is a type byte, raw flags and two bijective varints:
 * framing the payload again must give back the very same bytes. */
static void reencode_frame(const uint8_t *wire, size_t n, const struct spop_frame *f)
{
	struct spop_writer w;
	spop_writer_init(&w, scratch, sizeof(scratch));
	size_t mark = spop_frame_begin(&w, f->type, f->flags, f->stream_id, f->frame_id);
	check(!w.overflow && w.len + f->payload.len <= w.cap);
	memcpy(w.buf + w.len, f->payload.ptr, f->payload.len);
	w.len += f->payload.len;
	check(spop_frame_end(&w, mark, MAX_FRAME_SIZE));
	check(w.len == n && memcmp(w.buf, wire, n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		const uint8_t *buf = data + off;
		size_t left = size - off;
		struct spop_frame f;
		struct spop_error err = {SPOP_STATUS_NORMAL, NULL};

		ssize_t n = spop_frame_decode(buf, left, MAX_FRAME_SIZE, &f, &err);
		if (n == SPOP_INCOMPLETE) {
			check(left < SPOP_FRAME_LENGTH_SIZE || read_be32(buf) + (size_t)4 > left);
			break;
		}
		if (n == SPOP_INVALID) {
			check(left >= SPOP_FRAME_LENGTH_SIZE && err.reason != NULL);
			if (read_be32(buf) > MAX_FRAME_SIZE)
				check(err.status == SPOP_STATUS_TOO_BIG);
			else
				check(err.status == SPOP_STATUS_INVALID);
			break;
		}
		check(n > 0 && (size_t)n <= left);
		check((size_t)n == SPOP_FRAME_LENGTH_SIZE + read_be32(buf));
		check((size_t)n >= SPOP_FRAME_LENGTH_SIZE + SPOP_FRAME_HEADER_MIN);
		check(slice_within(f.payload, buf, (size_t)n));
		check(f.payload.ptr + f.payload.len == buf + n);

		reencode_frame(buf, (size_t)n, &f);
		walk_frame(&f);
		off += (size_t)n;
	}
	return 0;
}
