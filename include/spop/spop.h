/*
 * spop.h - the SPOP codec: pure functions over caller-owned buffers.
 *
 * Decoders follow one convention: they return the number of bytes consumed
 * (> 0), SPOP_INCOMPLETE when the buffer ends before the item does, or
 * SPOP_INVALID when the bytes can never form a valid item. They never
 * allocate, never copy, and leave *out unspecified on failure. Slices in the
 * results point into the input buffer.
 *
 * Encoders append to a struct spop_writer. A write that does not fit sets
 * w->overflow and writes nothing more; frames are framed with
 * spop_frame_begin()/spop_frame_end(), which rolls a failed frame back so
 * the buffer always ends on a frame boundary.
 */
#ifndef SPOP_H
#define SPOP_H

#include <sys/types.h>

#include "spop/spop-t.h"

/* ---- decoding ---- */

ssize_t spop_varint_decode(const uint8_t *buf, size_t len, uint64_t *out);
/* <LENGTH:varint><BYTES> */
ssize_t spop_string_decode(const uint8_t *buf, size_t len, struct spop_slice *out);
/* <TYPE+FLAGS:1 byte><DATA>; reserved types 10..15 are invalid. */
ssize_t spop_data_decode(const uint8_t *buf, size_t len, struct spop_data *out);
ssize_t spop_kv_decode(const uint8_t *buf, size_t len, struct spop_kv *out);
/* <NAME:string><NB-ARGS:1 byte><KV-LIST of NB-ARGS items> */
ssize_t spop_message_decode(const uint8_t *buf, size_t len, struct spop_message *out);
/* <TYPE:1 byte><NB-ARGS:1 byte><SCOPE:1 byte><NAME:string>[<VALUE:typed>] */
ssize_t spop_action_decode(const uint8_t *buf, size_t len, struct spop_action *out);

/*
 * Decodes one length-prefixed frame from the start of buf.
 * Returns the bytes consumed (4 + frame length), SPOP_INCOMPLETE if more
 * bytes are needed, or SPOP_INVALID with *err filled in. The length prefix
 * is checked against max_frame_size as soon as its 4 bytes are there, so a
 * hostile prefix is refused before anyone sizes a buffer after it.
 */
ssize_t spop_frame_decode(const uint8_t *buf, size_t len, uint32_t max_frame_size,
			  struct spop_frame *out, struct spop_error *err);

/* True and *out set when d holds any integer type whose value fits int64. */
bool spop_data_to_int64(const struct spop_data *d, int64_t *out);
/* True when the slice holds exactly the NUL-terminated string s. */
bool spop_slice_eq(struct spop_slice slice, const char *s);

/* ---- encoding ---- */

void spop_writer_init(struct spop_writer *w, uint8_t *buf, size_t cap);
/* Writes v into out (at least SPOP_VARINT_MAX_SIZE bytes); returns its size. */
size_t spop_varint_encode(uint8_t *out, uint64_t v);

void spop_put_varint(struct spop_writer *w, uint64_t v);
void spop_put_string(struct spop_writer *w, const void *ptr, size_t len);
void spop_put_data(struct spop_writer *w, const struct spop_data *d);
void spop_put_kv(struct spop_writer *w, const char *name, const struct spop_data *value);
void spop_put_message_header(struct spop_writer *w, const void *name, size_t name_len,
			     unsigned nb_args);
void spop_put_set_var(struct spop_writer *w, enum spop_var_scope scope, const void *name,
		      size_t name_len, const struct spop_data *value);
void spop_put_unset_var(struct spop_writer *w, enum spop_var_scope scope, const void *name,
			size_t name_len);

/* Starts a frame: reserves the length prefix and writes the header.
 * Returns the mark to hand to spop_frame_end(). */
size_t spop_frame_begin(struct spop_writer *w, enum spop_frame_type type, uint32_t flags,
			uint64_t stream_id, uint64_t frame_id);
/* Closes the frame started at mark: patches its length. If the writer
 * overflowed or the frame exceeds max_frame_size, the frame is removed,
 * the overflow flag cleared, and false returned. */
bool spop_frame_end(struct spop_writer *w, size_t mark, uint32_t max_frame_size);

/* Typed-data constructors, for readable call sites. */
static inline struct spop_data spop_data_string(const char *s, size_t len)
{
	struct spop_data d = {.type = SPOP_DATA_STRING};
	d.u.bytes.ptr = (const uint8_t *)s;
	d.u.bytes.len = len;
	return d;
}

static inline struct spop_data spop_data_sint(int64_t v)
{
	struct spop_data d = {.type = SPOP_DATA_INT64};
	d.u.sint = v;
	return d;
}

static inline struct spop_data spop_data_uint32(uint32_t v)
{
	struct spop_data d = {.type = SPOP_DATA_UINT32};
	d.u.uint = v;
	return d;
}

static inline struct spop_data spop_data_bool(bool v)
{
	struct spop_data d = {.type = SPOP_DATA_BOOL};
	d.u.boolean = v;
	return d;
}

/* ---- handshake and disconnect (hello.c) ---- */

/* Reads a HAPROXY-HELLO payload and agrees on version 2.0, the smaller
 * max-frame-size and the capabilities we support (pipelining only: never
 * async, never fragmentation). Returns false with *err set when HAProxy's
 * offer cannot be accepted. */
bool spop_hello_negotiate(struct spop_slice payload, uint32_t our_max_frame_size,
			  struct spop_handshake *out, struct spop_error *err);
/* Appends the AGENT-HELLO answering hs. False if it does not fit. */
bool spop_put_agent_hello(struct spop_writer *w, const struct spop_handshake *hs);
/* Appends an AGENT-DISCONNECT. False if it does not fit. */
bool spop_put_agent_disconnect(struct spop_writer *w, enum spop_status status,
			       const char *message, uint32_t max_frame_size);
/* Reads the status-code and message of a HAPROXY-DISCONNECT payload; either
 * may be absent (status 0 and an empty message then). False if malformed. */
bool spop_disconnect_decode(struct spop_slice payload, uint32_t *status,
			    struct spop_slice *message);
/* The spec's text for a status code ("invalid frame received", ...). */
const char *spop_status_text(enum spop_status status);

#endif /* SPOP_H */
