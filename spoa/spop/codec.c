/*
 * codec.c - decode and encode SPOP items over caller-owned buffers.
 *
 * No allocation, no I/O, no globals: the connection layer owns all memory,
 * and every function here can be unit-tested and fuzzed on a byte array.
 */
#include <string.h>

#include "spop/spop.h"

static uint32_t read_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void write_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/*
 * The peers varint: values below 240 take one byte; otherwise the first byte
 * carries 4 bits (high nibble all ones), each next byte 7 bits with the top
 * bit meaning "more follows". The encoding is additive (each byte's value,
 * continuation bit included, is added at its shift), which is why decoding
 * sums rather than ORs.
 */
ssize_t spop_varint_decode(const uint8_t *buf, size_t len, uint64_t *out)
{
	if (len == 0)
		return SPOP_INCOMPLETE;

	uint64_t value = buf[0];
	if (value < 240) {
		*out = value;
		return 1;
	}

	unsigned shift = 4;
	size_t i = 1;
	for (;;) {
		if (i == SPOP_VARINT_MAX_SIZE)
			return SPOP_INVALID; /* longer than any 64-bit value */
		if (i >= len)
			return SPOP_INCOMPLETE;
		uint8_t byte = buf[i++];
		/* Bits shifted past bit 63 would be silently lost. */
		if (shift > 56 && (byte >> (64 - shift)) != 0)
			return SPOP_INVALID;
		if (__builtin_add_overflow(value, (uint64_t)byte << shift, &value))
			return SPOP_INVALID;
		if (byte < 128)
			break;
		shift += 7;
	}
	*out = value;
	return (ssize_t)i;
}

/* Names, lengths and statuses in a NOTIFY are one-byte varints nearly
 * always: that case inline for the decoders of this file. */
static inline ssize_t varint_decode(const uint8_t *buf, size_t len, uint64_t *out)
{
	if (len > 0 && buf[0] < 240) {
		*out = buf[0];
		return 1;
	}
	return spop_varint_decode(buf, len, out);
}

size_t spop_varint_encode(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	if (v < 240) {
		out[n++] = (uint8_t)v;
		return n;
	}
	out[n++] = (uint8_t)v | 240;
	v = (v - 240) >> 4;
	while (v >= 128) {
		out[n++] = (uint8_t)v | 128;
		v = (v - 128) >> 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

ssize_t spop_string_decode(const uint8_t *buf, size_t len, struct spop_slice *out)
{
	uint64_t str_len;
	ssize_t n = varint_decode(buf, len, &str_len);
	if (n < 0)
		return n;
	if (str_len > len - (size_t)n)
		return SPOP_INCOMPLETE;
	out->ptr = buf + n;
	out->len = (size_t)str_len;
	return n + (ssize_t)str_len;
}

ssize_t spop_data_decode(const uint8_t *buf, size_t len, struct spop_data *out)
{
	if (len == 0)
		return SPOP_INCOMPLETE;

	uint8_t type = buf[0] & SPOP_DATA_TYPE_MASK;
	const uint8_t *p = buf + 1;
	size_t left = len - 1;
	uint64_t v;
	ssize_t n;

	out->type = (enum spop_data_type)type;
	switch (type) {
	case SPOP_DATA_NULL:
		return 1;
	case SPOP_DATA_BOOL:
		out->u.boolean = (buf[0] & SPOP_DATA_FLAG_TRUE) != 0;
		return 1;
	case SPOP_DATA_INT32:
		if ((n = varint_decode(p, left, &v)) < 0)
			return n;
		/* Peers encode a negative INT32 either as its 32-bit or as its
		 * 64-bit two's complement; the low 32 bits agree in both. */
		out->u.sint = (int32_t)(uint32_t)v;
		return 1 + n;
	case SPOP_DATA_INT64:
		if ((n = varint_decode(p, left, &v)) < 0)
			return n;
		out->u.sint = (int64_t)v;
		return 1 + n;
	case SPOP_DATA_UINT32:
		if ((n = varint_decode(p, left, &v)) < 0)
			return n;
		if (v > UINT32_MAX)
			return SPOP_INVALID;
		out->u.uint = v;
		return 1 + n;
	case SPOP_DATA_UINT64:
		if ((n = varint_decode(p, left, &v)) < 0)
			return n;
		out->u.uint = v;
		return 1 + n;
	case SPOP_DATA_IPV4:
		if (left < 4)
			return SPOP_INCOMPLETE;
		memcpy(out->u.ipv4, p, 4);
		return 1 + 4;
	case SPOP_DATA_IPV6:
		if (left < 16)
			return SPOP_INCOMPLETE;
		memcpy(out->u.ipv6, p, 16);
		return 1 + 16;
	case SPOP_DATA_STRING:
	case SPOP_DATA_BINARY:
		if ((n = spop_string_decode(p, left, &out->u.bytes)) < 0)
			return n;
		return 1 + n;
	default:
		return SPOP_INVALID; /* types 10..15 are reserved */
	}
}

ssize_t spop_kv_decode(const uint8_t *buf, size_t len, struct spop_kv *out)
{
	ssize_t name_len = spop_string_decode(buf, len, &out->name);
	if (name_len < 0)
		return name_len;
	ssize_t value_len = spop_data_decode(buf + name_len, len - (size_t)name_len, &out->value);
	if (value_len < 0)
		return value_len;
	return name_len + value_len;
}

ssize_t spop_message_decode(const uint8_t *buf, size_t len, struct spop_message *out)
{
	ssize_t n = spop_string_decode(buf, len, &out->name);
	if (n < 0)
		return n;
	size_t off = (size_t)n;
	if (off >= len)
		return SPOP_INCOMPLETE;
	out->nb_args = buf[off++];
	out->nb_stored = 0;

	for (unsigned i = 0; i < out->nb_args; i++) {
		struct spop_kv scratch;
		struct spop_kv *kv = i < SPOP_MESSAGE_MAX_ARGS ? &out->args[i] : &scratch;
		n = spop_kv_decode(buf + off, len - off, kv);
		if (n < 0)
			return n;
		off += (size_t)n;
		if (kv != &scratch)
			out->nb_stored++;
	}
	return (ssize_t)off;
}

ssize_t spop_action_decode(const uint8_t *buf, size_t len, struct spop_action *out)
{
	if (len < 3)
		return SPOP_INCOMPLETE;

	uint8_t type = buf[0], nb_args = buf[1], scope = buf[2];
	if (scope > SPOP_SCOPE_RES)
		return SPOP_INVALID;
	if (!(type == SPOP_ACTION_SET_VAR && nb_args == 3) &&
	    !(type == SPOP_ACTION_UNSET_VAR && nb_args == 2))
		return SPOP_INVALID;
	out->type = (enum spop_action_type)type;
	out->scope = (enum spop_var_scope)scope;

	ssize_t n = spop_string_decode(buf + 3, len - 3, &out->name);
	if (n < 0)
		return n;
	size_t off = 3 + (size_t)n;
	if (type == SPOP_ACTION_UNSET_VAR) {
		out->value.type = SPOP_DATA_NULL;
		return (ssize_t)off;
	}
	n = spop_data_decode(buf + off, len - off, &out->value);
	if (n < 0)
		return n;
	return (ssize_t)(off + (size_t)n);
}

static ssize_t frame_refuse(struct spop_error *err, enum spop_status status, const char *reason)
{
	err->status = status;
	err->reason = reason;
	return SPOP_INVALID;
}

ssize_t spop_frame_decode(const uint8_t *buf, size_t len, uint32_t max_frame_size,
			  struct spop_frame *out, struct spop_error *err)
{
	if (len < SPOP_FRAME_LENGTH_SIZE)
		return SPOP_INCOMPLETE;

	uint32_t frame_len = read_be32(buf);
	if (frame_len > max_frame_size)
		return frame_refuse(err, SPOP_STATUS_TOO_BIG, "frame length exceeds max-frame-size");
	if (frame_len < SPOP_FRAME_HEADER_MIN)
		return frame_refuse(err, SPOP_STATUS_INVALID, "frame shorter than a frame header");
	if (len - SPOP_FRAME_LENGTH_SIZE < frame_len)
		return SPOP_INCOMPLETE;

	const uint8_t *p = buf + SPOP_FRAME_LENGTH_SIZE;
	size_t left = frame_len;
	ssize_t n;

	out->type = (enum spop_frame_type)p[0];
	out->flags = read_be32(p + 1);
	p += 5;
	left -= 5;
	if ((n = varint_decode(p, left, &out->stream_id)) < 0)
		return frame_refuse(err, SPOP_STATUS_INVALID, "malformed stream-id");
	p += n;
	left -= (size_t)n;
	if ((n = varint_decode(p, left, &out->frame_id)) < 0)
		return frame_refuse(err, SPOP_STATUS_INVALID, "malformed frame-id");
	p += n;
	left -= (size_t)n;
	out->payload.ptr = p;
	out->payload.len = left;
	return (ssize_t)(SPOP_FRAME_LENGTH_SIZE + frame_len);
}

bool spop_data_to_int64(const struct spop_data *d, int64_t *out)
{
	switch (d->type) {
	case SPOP_DATA_INT32:
	case SPOP_DATA_INT64:
		*out = d->u.sint;
		return true;
	case SPOP_DATA_UINT32:
	case SPOP_DATA_UINT64:
		if (d->u.uint > (uint64_t)INT64_MAX)
			return false;
		*out = (int64_t)d->u.uint;
		return true;
	default:
		return false;
	}
}

bool spop_slice_eq(struct spop_slice slice, const char *s)
{
	size_t n = strlen(s);
	return slice.len == n && (n == 0 || memcmp(slice.ptr, s, n) == 0);
}

/* ---- encoding ---- */

void spop_writer_init(struct spop_writer *w, uint8_t *buf, size_t cap)
{
	w->buf = buf;
	w->len = 0;
	w->cap = cap;
	w->overflow = false;
}

/* Returns room for n bytes at the end of the writer, or NULL (and marks the
 * writer overflowed) when they do not fit. */
static uint8_t *writer_reserve(struct spop_writer *w, size_t n)
{
	if (w->overflow || w->cap - w->len < n) {
		w->overflow = true;
		return NULL;
	}
	uint8_t *p = w->buf + w->len;
	w->len += n;
	return p;
}

static void put_bytes(struct spop_writer *w, const void *ptr, size_t len)
{
	uint8_t *p = writer_reserve(w, len);
	if (p && len)
		memcpy(p, ptr, len);
}

static void put_u8(struct spop_writer *w, uint8_t v)
{
	uint8_t *p = writer_reserve(w, 1);
	if (p)
		*p = v;
}

static void put_long_varint(struct spop_writer *w, uint64_t v)
{
	/* Encoded in place when the longest varint would fit, as it does
	 * everywhere but at the very end of a buffer; there, through a copy
	 * that fails exactly when the bytes do not fit. */
	if (!w->overflow && w->cap - w->len >= SPOP_VARINT_MAX_SIZE) {
		w->len += spop_varint_encode(w->buf + w->len, v);
		return;
	}
	uint8_t tmp[SPOP_VARINT_MAX_SIZE];
	put_bytes(w, tmp, spop_varint_encode(tmp, v));
}

/* Most varints of an ACK (lengths, small ids, counts) are one byte: that
 * case inline, the rest out of line. */
static inline void put_varint(struct spop_writer *w, uint64_t v)
{
	if (v < 240)
		put_u8(w, (uint8_t)v);
	else
		put_long_varint(w, v);
}

void spop_put_varint(struct spop_writer *w, uint64_t v)
{
	put_varint(w, v);
}

void spop_put_string(struct spop_writer *w, const void *ptr, size_t len)
{
	put_varint(w, len);
	put_bytes(w, ptr, len);
}

void spop_put_data(struct spop_writer *w, const struct spop_data *d)
{
	switch (d->type) {
	case SPOP_DATA_NULL:
		put_u8(w, SPOP_DATA_NULL);
		break;
	case SPOP_DATA_BOOL:
		put_u8(w, SPOP_DATA_BOOL | (d->u.boolean ? SPOP_DATA_FLAG_TRUE : 0));
		break;
	case SPOP_DATA_INT32:
	case SPOP_DATA_INT64:
		put_u8(w, (uint8_t)d->type);
		put_varint(w, (uint64_t)d->u.sint);
		break;
	case SPOP_DATA_UINT32:
	case SPOP_DATA_UINT64:
		put_u8(w, (uint8_t)d->type);
		put_varint(w, d->u.uint);
		break;
	case SPOP_DATA_IPV4:
		put_u8(w, SPOP_DATA_IPV4);
		put_bytes(w, d->u.ipv4, 4);
		break;
	case SPOP_DATA_IPV6:
		put_u8(w, SPOP_DATA_IPV6);
		put_bytes(w, d->u.ipv6, 16);
		break;
	case SPOP_DATA_STRING:
	case SPOP_DATA_BINARY:
		put_u8(w, (uint8_t)d->type);
		spop_put_string(w, d->u.bytes.ptr, d->u.bytes.len);
		break;
	default:
		w->overflow = true; /* not encodable: fail the frame, never emit junk */
		break;
	}
}

void spop_put_kv(struct spop_writer *w, const char *name, const struct spop_data *value)
{
	spop_put_string(w, name, strlen(name));
	spop_put_data(w, value);
}

void spop_put_message_header(struct spop_writer *w, const void *name, size_t name_len,
			     unsigned nb_args)
{
	spop_put_string(w, name, name_len);
	if (nb_args > 255)
		w->overflow = true;
	put_u8(w, (uint8_t)nb_args);
}

void spop_put_set_var(struct spop_writer *w, enum spop_var_scope scope, const void *name,
		      size_t name_len, const struct spop_data *value)
{
	uint8_t *p = writer_reserve(w, 3);
	if (p) {
		p[0] = SPOP_ACTION_SET_VAR;
		p[1] = 3; /* scope, name, value */
		p[2] = (uint8_t)scope;
	}
	spop_put_string(w, name, name_len);
	spop_put_data(w, value);
}

void spop_put_unset_var(struct spop_writer *w, enum spop_var_scope scope, const void *name,
			size_t name_len)
{
	put_u8(w, SPOP_ACTION_UNSET_VAR);
	put_u8(w, 2);
	put_u8(w, (uint8_t)scope);
	spop_put_string(w, name, name_len);
}

size_t spop_frame_begin(struct spop_writer *w, enum spop_frame_type type, uint32_t flags,
			uint64_t stream_id, uint64_t frame_id)
{
	size_t mark = w->len;
	uint8_t header[SPOP_FRAME_LENGTH_SIZE + 5] = {0};

	header[4] = (uint8_t)type;
	write_be32(header + 5, flags);
	put_bytes(w, header, sizeof(header));
	put_varint(w, stream_id);
	put_varint(w, frame_id);
	return mark;
}

bool spop_frame_end(struct spop_writer *w, size_t mark, uint32_t max_frame_size)
{
	size_t frame_len = w->len - mark - SPOP_FRAME_LENGTH_SIZE;

	if (w->overflow || w->len < mark + SPOP_FRAME_LENGTH_SIZE || frame_len > max_frame_size) {
		w->len = mark;
		w->overflow = false;
		return false;
	}
	write_be32(w->buf + mark, (uint32_t)frame_len);
	return true;
}
