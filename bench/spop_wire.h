/*
 * spop_wire.h - the few SPOP frames the benchmark tools speak, written from
 * the protocol description (SPOE.txt), independently of the agent's codec:
 * a bug shared by the tool and the agent would hide in the figures.
 *
 * Encoders write into a caller-owned buffer and return the bytes written,
 * or 0 when it does not fit. The frame reader is a pure function over a
 * buffer, like the agent's: it never allocates and never reads a socket.
 */
#ifndef BENCH_SPOP_WIRE_H
#define BENCH_SPOP_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum wire_frame_type {
	WIRE_HAPROXY_HELLO      = 1,
	WIRE_HAPROXY_DISCONNECT = 2,
	WIRE_NOTIFY             = 3,
	WIRE_AGENT_HELLO        = 101,
	WIRE_AGENT_DISCONNECT   = 102,
	WIRE_ACK                = 103,
};

enum wire_data_type {
	WIRE_T_NULL   = 0,
	WIRE_T_BOOL   = 1,
	WIRE_T_INT32  = 2,
	WIRE_T_UINT32 = 3,
	WIRE_T_INT64  = 4,
	WIRE_T_UINT64 = 5,
	WIRE_T_IPV4   = 6,
	WIRE_T_IPV6   = 7,
	WIRE_T_STRING = 8,
	WIRE_T_BINARY = 9,
};

#define WIRE_FLAG_FIN  0x00000001u
#define WIRE_SCOPE_TXN 2
#define WIRE_ACTION_SET_VAR 1
/* What both tools offer in their HELLO: HAProxy's default (bufsize - 4). */
#define WIRE_MAX_FRAME 16380u

/* One frame inside a buffer; payload points into that buffer. */
struct wire_frame {
	uint8_t type;
	uint32_t flags;
	uint64_t stream_id;
	uint64_t frame_id;
	const uint8_t *payload;
	size_t payload_len;
};

/* Reads one frame from (buf, len): the bytes it took (length prefix
 * included), 0 when the buffer does not hold a whole frame yet, -1 when
 * the frame is malformed or longer than max_frame. */
long wire_read_frame(const uint8_t *buf, size_t len, uint32_t max_frame, struct wire_frame *out);

/* Encodes a varint (SPOE.txt's variable-length integer); 0 if cap is short. */
size_t wire_put_varint(uint8_t *out, size_t cap, uint64_t v);
/* Decodes one; the bytes taken, 0 when truncated. */
size_t wire_get_varint(const uint8_t *in, size_t len, uint64_t *v);

/* Skips one typed value; the bytes taken, 0 when truncated or unknown. */
size_t wire_skip_typed(const uint8_t *in, size_t len);

/* A HAPROXY-HELLO as HAProxy 2.6 sends it (versions, max-frame-size,
 * capabilities, engine-id); healthcheck adds "healthcheck=true". */
size_t wire_haproxy_hello(uint8_t *out, size_t cap, int healthcheck);

/* A NOTIFY carrying one `breaker-observe` message, args as
 * haproxy/spoe-breaker.conf declares them: be and srv as strings, status as
 * HAProxy encodes an integer sample (INT64). */
size_t wire_notify_observe(uint8_t *out, size_t cap, uint64_t stream_id, uint64_t frame_id,
			   const char *be, const char *srv, int status);

/* An AGENT-HELLO: version 2.0, the max-frame-size given, "pipelining". */
size_t wire_agent_hello(uint8_t *out, size_t cap, uint32_t max_frame);

/* An ACK setting one txn variable `name` to an INT32 value. */
size_t wire_ack_one_var(uint8_t *out, size_t cap, uint64_t stream_id, uint64_t frame_id,
			const char *name, int32_t value);
/* An ACK setting `count` txn variables, names[i] each, all to value. */
size_t wire_ack_vars(uint8_t *out, size_t cap, uint64_t stream_id, uint64_t frame_id,
		     const char *const *names, unsigned count, int32_t value);

/* An AGENT-DISCONNECT (or HAPROXY-DISCONNECT, by type) with a status and
 * message. */
size_t wire_disconnect(uint8_t *out, size_t cap, uint8_t type, uint32_t status,
		       const char *message);

/* Looks for `key` in a KV-LIST payload (a HELLO's) holding an unsigned
 * integer; 1 and *v set if found, 0 otherwise. */
int wire_kv_find_uint(const uint8_t *p, size_t len, const char *key, uint64_t *v);
/* 1 if `key` is in the KV-LIST as a true BOOL. */
int wire_kv_has_true(const uint8_t *p, size_t len, const char *key);

/* Counts an ACK's actions, and those that set a variable called `name`
 * (the agent's "error"); -1 if the payload is malformed. */
int wire_ack_actions(const uint8_t *p, size_t len, const char *name, int *named);

#endif
