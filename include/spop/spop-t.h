/*
 * spop-t.h - types and constants of the SPOP wire protocol (version 2.0).
 *
 * Everything here mirrors HAProxy's doc/SPOE.txt: frame types, typed-data
 * types, disconnect status codes, variable scopes. The structs describe a
 * decoded frame as slices pointing into the caller's buffer: decoding never
 * copies and never allocates, so a slice is valid exactly as long as the
 * buffer it was decoded from.
 */
#ifndef SPOP_T_H
#define SPOP_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every frame is preceded by its length on 4 bytes, network order. */
#define SPOP_FRAME_LENGTH_SIZE 4

/* type (1) + flags (4) + stream-id (>=1) + frame-id (>=1) */
#define SPOP_FRAME_HEADER_MIN 7

/* A peer must accept at least this max-frame-size (SPOE.txt 3.2.5). */
#define SPOP_MIN_FRAME_SIZE 256

/* A 64-bit varint never takes more than 10 bytes (4 + 9 * 7 >= 64 bits). */
#define SPOP_VARINT_MAX_SIZE 10

/* Arguments of one message kept in struct spop_message; extra arguments are
 * validated and counted but not stored (handlers ignore unknown arguments). */
#define SPOP_MESSAGE_MAX_ARGS 16

enum spop_frame_type {
	SPOP_FRAME_UNSET = 0,
	SPOP_FRAME_HAPROXY_HELLO = 1,
	SPOP_FRAME_HAPROXY_DISCONNECT = 2,
	SPOP_FRAME_NOTIFY = 3,
	SPOP_FRAME_AGENT_HELLO = 101,
	SPOP_FRAME_AGENT_DISCONNECT = 102,
	SPOP_FRAME_ACK = 103,
};

#define SPOP_FLAG_FIN 0x00000001u
#define SPOP_FLAG_ABORT 0x00000002u

/* The low nibble of a typed-data byte is the type, the high nibble flags. */
enum spop_data_type {
	SPOP_DATA_NULL = 0,
	SPOP_DATA_BOOL = 1,
	SPOP_DATA_INT32 = 2,
	SPOP_DATA_UINT32 = 3,
	SPOP_DATA_INT64 = 4,
	SPOP_DATA_UINT64 = 5,
	SPOP_DATA_IPV4 = 6,
	SPOP_DATA_IPV6 = 7,
	SPOP_DATA_STRING = 8,
	SPOP_DATA_BINARY = 9,
};
#define SPOP_DATA_TYPE_MASK 0x0f
#define SPOP_DATA_FLAG_TRUE 0x10 /* BOOL: the value lives in flag bit 0 */

/* Status codes carried by HAPROXY-DISCONNECT and AGENT-DISCONNECT. */
enum spop_status {
	SPOP_STATUS_NORMAL = 0,
	SPOP_STATUS_IO = 1,
	SPOP_STATUS_TIMEOUT = 2,
	SPOP_STATUS_TOO_BIG = 3,
	SPOP_STATUS_INVALID = 4,
	SPOP_STATUS_NO_VERSION = 5,
	SPOP_STATUS_NO_FRAME_SIZE = 6,
	SPOP_STATUS_NO_CAPABILITIES = 7,
	SPOP_STATUS_BAD_VERSION = 8,
	SPOP_STATUS_BAD_FRAME_SIZE = 9,
	SPOP_STATUS_FRAG_NOT_SUPPORTED = 10,
	SPOP_STATUS_INTERLACED_FRAMES = 11,
	SPOP_STATUS_FRAMEID_NOTFOUND = 12,
	SPOP_STATUS_RES_ALLOC = 13,
	SPOP_STATUS_UNKNOWN = 99,
};

enum spop_var_scope {
	SPOP_SCOPE_PROCESS = 0,
	SPOP_SCOPE_SESSION = 1,
	SPOP_SCOPE_TXN = 2,
	SPOP_SCOPE_REQ = 3,
	SPOP_SCOPE_RES = 4,
};

enum spop_action_type {
	SPOP_ACTION_SET_VAR = 1,
	SPOP_ACTION_UNSET_VAR = 2,
};

/* Decoders return the number of bytes consumed (> 0), or one of these. */
enum spop_decode_result {
	SPOP_INVALID = -1,    /* malformed: no amount of extra bytes helps */
	SPOP_INCOMPLETE = -2, /* the buffer ends too early: call again with more */
};

/* A read-only view into a caller's buffer. Not NUL-terminated. */
struct spop_slice {
	const uint8_t *ptr;
	size_t len;
};

/* One typed value. Signed integers (INT32, INT64) live in u.sint, unsigned
 * ones (UINT32, UINT64) in u.uint; STRING and BINARY in u.bytes. */
struct spop_data {
	enum spop_data_type type;
	union {
		bool boolean;
		int64_t sint;
		uint64_t uint;
		uint8_t ipv4[4];
		uint8_t ipv6[16];
		struct spop_slice bytes;
	} u;
};

struct spop_kv {
	struct spop_slice name;
	struct spop_data value;
};

/* A decoded frame: header fields and the payload as a slice. */
struct spop_frame {
	enum spop_frame_type type;
	uint32_t flags;
	uint64_t stream_id;
	uint64_t frame_id;
	struct spop_slice payload;
};

/* Why a frame was refused: the status to send in AGENT-DISCONNECT and a
 * static human-readable reason for the logs and the disconnect message. */
struct spop_error {
	enum spop_status status;
	const char *reason;
};

/* One message of a NOTIFY. args[] holds the first SPOP_MESSAGE_MAX_ARGS
 * arguments; nb_args is the count announced (and validated) on the wire. */
struct spop_message {
	struct spop_slice name;
	unsigned nb_args;
	unsigned nb_stored;
	struct spop_kv args[SPOP_MESSAGE_MAX_ARGS];
};

/* One action of an ACK (set-var has a value, unset-var does not). */
struct spop_action {
	enum spop_action_type type;
	enum spop_var_scope scope;
	struct spop_slice name;
	struct spop_data value;
};

/* An encoding cursor over a caller-owned buffer. Writes past cap set
 * `overflow` and write nothing; check it once at the end instead of after
 * every call. */
struct spop_writer {
	uint8_t *buf;
	size_t len;
	size_t cap;
	bool overflow;
};

/* The outcome of a HAPROXY-HELLO: what both sides agreed on. */
struct spop_handshake {
	uint32_t max_frame_size; /* min(ours, HAProxy's), never below 256 */
	bool pipelining;         /* both sides announced "pipelining" */
	bool healthcheck;        /* a probe from `option spop-check`: answer, then close */
	struct spop_slice engine_id;
};

#endif /* SPOP_T_H */
