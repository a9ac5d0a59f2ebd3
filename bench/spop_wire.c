/*
 * spop_wire.c - SPOP frames for the benchmark tools (see spop_wire.h).
 */
#include <string.h>

#include "spop_wire.h"

size_t wire_put_varint(uint8_t *out, size_t cap, uint64_t v)
{
	size_t n = 0;
	if (v < 240) {
		if (cap < 1)
			return 0;
		out[0] = (uint8_t)v;
		return 1;
	}
	/* The first byte carries 4 bits, the next ones 7 each, high bit set
	 * while more follow. */
	if (cap < 1)
		return 0;
	out[n++] = (uint8_t)(v | 240);
	v = (v - 240) >> 4;
	while (v >= 128) {
		if (n >= cap)
			return 0;
		out[n++] = (uint8_t)(v | 128);
		v = (v - 128) >> 7;
	}
	if (n >= cap)
		return 0;
	out[n++] = (uint8_t)v;
	return n;
}

size_t wire_get_varint(const uint8_t *in, size_t len, uint64_t *v)
{
	if (len < 1)
		return 0;
	uint64_t value = in[0];
	if (value < 240) {
		*v = value;
		return 1;
	}
	unsigned shift = 4;
	for (size_t i = 1; i < len && i < 10; i++) {
		value += (uint64_t)in[i] << shift;
		shift += 7;
		if (in[i] < 128) {
			*v = value;
			return i + 1;
		}
	}
	return 0;
}

static size_t put_string(uint8_t *out, size_t cap, const char *s, size_t slen)
{
	size_t n = wire_put_varint(out, cap, slen);
	if (!n || cap - n < slen)
		return 0;
	memcpy(out + n, s, slen);
	return n + slen;
}

/* A KV-LIST entry or message argument: NAME, then a typed STRING. */
static size_t put_kv_string(uint8_t *out, size_t cap, const char *key, const char *value)
{
	size_t n = put_string(out, cap, key, strlen(key));
	if (!n || n >= cap)
		return 0;
	out[n++] = WIRE_T_STRING;
	size_t m = put_string(out + n, cap - n, value, strlen(value));
	return m ? n + m : 0;
}

static size_t put_kv_int(uint8_t *out, size_t cap, const char *key, uint8_t type, uint64_t v)
{
	size_t n = put_string(out, cap, key, strlen(key));
	if (!n || n >= cap)
		return 0;
	out[n++] = type;
	size_t m = wire_put_varint(out + n, cap - n, v);
	return m ? n + m : 0;
}

/* Writes the frame header after 4 bytes left for the length; returns the
 * offset of the payload, 0 if cap is short. */
static size_t put_header(uint8_t *out, size_t cap, uint8_t type, uint64_t sid, uint64_t fid)
{
	if (cap < 9)
		return 0;
	out[4] = type;
	out[5] = 0;
	out[6] = 0;
	out[7] = 0;
	out[8] = WIRE_FLAG_FIN;
	size_t n = 9, m;
	if (!(m = wire_put_varint(out + n, cap - n, sid)))
		return 0;
	n += m;
	if (!(m = wire_put_varint(out + n, cap - n, fid)))
		return 0;
	return n + m;
}

static size_t finish(uint8_t *out, size_t total)
{
	uint32_t body = (uint32_t)(total - 4);
	out[0] = (uint8_t)(body >> 24);
	out[1] = (uint8_t)(body >> 16);
	out[2] = (uint8_t)(body >> 8);
	out[3] = (uint8_t)body;
	return total;
}

/* Appends with `expr`, a call returning the bytes written or 0; gives up
 * the whole frame on 0. */
#define APPEND(expr)                 \
	do {                         \
		size_t m_ = (expr);  \
		if (!m_)             \
			return 0;    \
		n += m_;             \
	} while (0)

size_t wire_haproxy_hello(uint8_t *out, size_t cap, int healthcheck)
{
	size_t n = put_header(out, cap, WIRE_HAPROXY_HELLO, 0, 0);
	if (!n)
		return 0;
	APPEND(put_kv_string(out + n, cap - n, "supported-versions", "2.0"));
	APPEND(put_kv_int(out + n, cap - n, "max-frame-size", WIRE_T_UINT32, WIRE_MAX_FRAME));
	APPEND(put_kv_string(out + n, cap - n, "capabilities", "pipelining"));
	if (healthcheck) {
		APPEND(put_string(out + n, cap - n, "healthcheck", 11));
		if (n >= cap)
			return 0;
		out[n++] = WIRE_T_BOOL | 0x10; /* the value rides in the flags */
	} else {
		APPEND(put_kv_string(out + n, cap - n, "engine-id", "spop-load-engine"));
	}
	return finish(out, n);
}

size_t wire_notify_observe(uint8_t *out, size_t cap, uint64_t stream_id, uint64_t frame_id,
			   const char *be, const char *srv, int status)
{
	size_t n = put_header(out, cap, WIRE_NOTIFY, stream_id, frame_id);
	if (!n)
		return 0;
	APPEND(put_string(out + n, cap - n, "breaker-observe", 15));
	if (n >= cap)
		return 0;
	out[n++] = 3; /* nb-args */
	APPEND(put_kv_string(out + n, cap - n, "be", be));
	APPEND(put_kv_string(out + n, cap - n, "srv", srv));
	APPEND(put_kv_int(out + n, cap - n, "status", WIRE_T_INT64, (uint64_t)status));
	return finish(out, n);
}

size_t wire_agent_hello(uint8_t *out, size_t cap, uint32_t max_frame)
{
	size_t n = put_header(out, cap, WIRE_AGENT_HELLO, 0, 0);
	if (!n)
		return 0;
	APPEND(put_kv_string(out + n, cap - n, "version", "2.0"));
	APPEND(put_kv_int(out + n, cap - n, "max-frame-size", WIRE_T_UINT32, max_frame));
	APPEND(put_kv_string(out + n, cap - n, "capabilities", "pipelining"));
	return finish(out, n);
}

size_t wire_ack_one_var(uint8_t *out, size_t cap, uint64_t stream_id, uint64_t frame_id,
			const char *name, int32_t value)
{
	const char *names[1] = {name};
	return wire_ack_vars(out, cap, stream_id, frame_id, names, 1, value);
}

size_t wire_ack_vars(uint8_t *out, size_t cap, uint64_t stream_id, uint64_t frame_id,
		     const char *const *names, unsigned count, int32_t value)
{
	size_t n = put_header(out, cap, WIRE_ACK, stream_id, frame_id);
	if (!n)
		return 0;
	for (unsigned i = 0; i < count; i++) {
		if (cap - n < 3)
			return 0;
		out[n++] = WIRE_ACTION_SET_VAR;
		out[n++] = 3; /* nb-args: scope, name, value */
		out[n++] = WIRE_SCOPE_TXN;
		/* INT32 travels as a varint of its 64-bit two's complement. */
		APPEND(put_kv_int(out + n, cap - n, names[i], WIRE_T_INT32,
				  (uint64_t)(int64_t)value));
	}
	return finish(out, n);
}

size_t wire_disconnect(uint8_t *out, size_t cap, uint8_t type, uint32_t status,
		       const char *message)
{
	size_t n = put_header(out, cap, type, 0, 0);
	if (!n)
		return 0;
	APPEND(put_kv_int(out + n, cap - n, "status-code", WIRE_T_UINT32, status));
	APPEND(put_kv_string(out + n, cap - n, "message", message));
	return finish(out, n);
}

long wire_read_frame(const uint8_t *buf, size_t len, uint32_t max_frame, struct wire_frame *out)
{
	if (len < 4)
		return 0;
	uint32_t body = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 |
			buf[3];
	if (body > max_frame || body < 7)
		return -1;
	if (len - 4 < body)
		return 0;
	const uint8_t *p = buf + 4;
	out->type = p[0];
	out->flags = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
	size_t i = 5, m;
	if (!(m = wire_get_varint(p + i, body - i, &out->stream_id)))
		return -1;
	i += m;
	if (!(m = wire_get_varint(p + i, body - i, &out->frame_id)))
		return -1;
	i += m;
	out->payload = p + i;
	out->payload_len = body - i;
	return (long)body + 4;
}

size_t wire_skip_typed(const uint8_t *in, size_t len)
{
	if (len < 1)
		return 0;
	uint64_t v;
	size_t m;
	switch (in[0] & 0x0f) {
	case WIRE_T_NULL:
	case WIRE_T_BOOL:
		return 1;
	case WIRE_T_INT32:
	case WIRE_T_UINT32:
	case WIRE_T_INT64:
	case WIRE_T_UINT64:
		m = wire_get_varint(in + 1, len - 1, &v);
		return m ? 1 + m : 0;
	case WIRE_T_IPV4:
		return len >= 5 ? 5 : 0;
	case WIRE_T_IPV6:
		return len >= 17 ? 17 : 0;
	case WIRE_T_STRING:
	case WIRE_T_BINARY:
		m = wire_get_varint(in + 1, len - 1, &v);
		if (!m || v > len - 1 - m)
			return 0;
		return 1 + m + (size_t)v;
	default:
		return 0;
	}
}

/* Walks a KV-LIST to `key`; the offset of its typed value, or -1. */
static long kv_find(const uint8_t *p, size_t len, const char *key)
{
	size_t i = 0, klen = strlen(key);
	while (i < len) {
		uint64_t n;
		size_t m = wire_get_varint(p + i, len - i, &n);
		if (!m || n > len - i - m)
			return -1;
		const uint8_t *name = p + i + m;
		i += m + (size_t)n;
		if (n == klen && memcmp(name, key, klen) == 0)
			return (long)i;
		size_t t = wire_skip_typed(p + i, len - i);
		if (!t)
			return -1;
		i += t;
	}
	return -1;
}

int wire_kv_find_uint(const uint8_t *p, size_t len, const char *key, uint64_t *v)
{
	long at = kv_find(p, len, key);
	if (at < 0 || (size_t)at >= len)
		return 0;
	uint8_t t = p[at] & 0x0f;
	if (t != WIRE_T_UINT32 && t != WIRE_T_UINT64 && t != WIRE_T_INT32 && t != WIRE_T_INT64)
		return 0;
	return wire_get_varint(p + at + 1, len - (size_t)at - 1, v) != 0;
}

int wire_kv_has_true(const uint8_t *p, size_t len, const char *key)
{
	long at = kv_find(p, len, key);
	return at >= 0 && (size_t)at < len && (p[at] & 0x0f) == WIRE_T_BOOL && (p[at] & 0x10);
}

int wire_ack_actions(const uint8_t *p, size_t len, const char *name, int *named)
{
	size_t i = 0, nlen = strlen(name);
	int actions = 0;
	*named = 0;
	while (i < len) {
		if (len - i < 3)
			return -1;
		uint8_t type = p[i];
		i += 3; /* type, nb-args, scope */
		uint64_t n;
		size_t m = wire_get_varint(p + i, len - i, &n);
		if (!m || n > len - i - m)
			return -1;
		if (n == nlen && memcmp(p + i + m, name, nlen) == 0)
			(*named)++;
		i += m + (size_t)n;
		if (type == WIRE_ACTION_SET_VAR) {
			size_t t = wire_skip_typed(p + i, len - i);
			if (!t)
				return -1;
			i += t;
		}
		actions++;
	}
	return actions;
}
