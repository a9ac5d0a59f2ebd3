/*
 * hello.c - the HELLO handshake and DISCONNECT frames, as pure functions.
 *
 * The rules come from what HAProxy 2.6 and 3.x accept: version "2.0",
 * max-frame-size = min(ours, HAProxy's) and never below 256, a capabilities
 * key in every AGENT-HELLO (3.x health checks refuse a reply without one),
 * and only "pipelining" among the capabilities. "async" is never announced
 * because 2.6 would then route ACKs across connections by engine-id (one
 * engine-id per HAProxy thread); "fragmentation" is gone since 3.1.
 */
#include <string.h>

#include "spop/spop.h"

/* Calls visit(token) for each comma-separated token, spaces trimmed.
 * Stops and returns true as soon as visit returns true. */
static bool any_token(struct spop_slice list, bool (*visit)(struct spop_slice))
{
	size_t i = 0;

	while (i <= list.len) {
		size_t start = i;
		while (i < list.len && list.ptr[i] != ',')
			i++;
		size_t end = i;
		while (start < end && list.ptr[start] == ' ')
			start++;
		while (end > start && list.ptr[end - 1] == ' ')
			end--;
		struct spop_slice token = {list.ptr + start, end - start};
		if (token.len && visit(token))
			return true;
		i++; /* skip the comma (or step past the end) */
	}
	return false;
}

static bool is_version_2_0(struct spop_slice token)
{
	return spop_slice_eq(token, "2.0");
}

static bool is_pipelining(struct spop_slice token)
{
	return spop_slice_eq(token, "pipelining");
}

static bool refuse(struct spop_error *err, enum spop_status status, const char *reason)
{
	err->status = status;
	err->reason = reason;
	return false;
}

bool spop_hello_negotiate(struct spop_slice payload, uint32_t our_max_frame_size,
			  struct spop_handshake *out, struct spop_error *err)
{
	bool have_version = false, have_frame_size = false, version_ok = false;
	int64_t their_max = 0;
	size_t off = 0;

	memset(out, 0, sizeof(*out));
	while (off < payload.len) {
		struct spop_kv kv;
		ssize_t n = spop_kv_decode(payload.ptr + off, payload.len - off, &kv);
		if (n < 0)
			return refuse(err, SPOP_STATUS_INVALID, "malformed HAPROXY-HELLO key/value list");
		off += (size_t)n;

		if (spop_slice_eq(kv.name, "supported-versions")) {
			if (kv.value.type != SPOP_DATA_STRING)
				return refuse(err, SPOP_STATUS_INVALID, "supported-versions is not a string");
			have_version = true;
			version_ok = any_token(kv.value.u.bytes, is_version_2_0);
		} else if (spop_slice_eq(kv.name, "max-frame-size")) {
			if (!spop_data_to_int64(&kv.value, &their_max))
				return refuse(err, SPOP_STATUS_INVALID, "max-frame-size is not an integer");
			have_frame_size = true;
		} else if (spop_slice_eq(kv.name, "capabilities")) {
			/* Optional: health-check HELLOs of some versions carry an
			 * empty list, and nothing is gained by insisting. */
			if (kv.value.type == SPOP_DATA_STRING)
				out->pipelining = any_token(kv.value.u.bytes, is_pipelining);
		} else if (spop_slice_eq(kv.name, "healthcheck")) {
			out->healthcheck = kv.value.type == SPOP_DATA_BOOL && kv.value.u.boolean;
		} else if (spop_slice_eq(kv.name, "engine-id")) {
			if (kv.value.type == SPOP_DATA_STRING)
				out->engine_id = kv.value.u.bytes;
		}
		/* Unknown keys are ignored, as the spec asks. */
	}

	if (!have_version)
		return refuse(err, SPOP_STATUS_NO_VERSION, "supported-versions not found");
	if (!version_ok)
		return refuse(err, SPOP_STATUS_BAD_VERSION, "version 2.0 not offered");
	if (!have_frame_size)
		return refuse(err, SPOP_STATUS_NO_FRAME_SIZE, "max-frame-size not found");
	if (their_max < SPOP_MIN_FRAME_SIZE)
		return refuse(err, SPOP_STATUS_BAD_FRAME_SIZE, "max-frame-size below 256");

	out->max_frame_size = (uint64_t)their_max < our_max_frame_size ? (uint32_t)their_max
									: our_max_frame_size;
	return true;
}

bool spop_put_agent_hello(struct spop_writer *w, const struct spop_handshake *hs)
{
	static const char version[] = "2.0";
	const char *caps = hs->pipelining ? "pipelining" : "";
	struct spop_data v;

	size_t mark = spop_frame_begin(w, SPOP_FRAME_AGENT_HELLO, SPOP_FLAG_FIN, 0, 0);
	v = spop_data_string(version, sizeof(version) - 1);
	spop_put_kv(w, "version", &v);
	v = spop_data_uint32(hs->max_frame_size);
	spop_put_kv(w, "max-frame-size", &v);
	v = spop_data_string(caps, strlen(caps));
	spop_put_kv(w, "capabilities", &v);
	return spop_frame_end(w, mark, hs->max_frame_size);
}

bool spop_put_agent_disconnect(struct spop_writer *w, enum spop_status status,
			       const char *message, uint32_t max_frame_size)
{
	struct spop_data v;

	size_t mark = spop_frame_begin(w, SPOP_FRAME_AGENT_DISCONNECT, SPOP_FLAG_FIN, 0, 0);
	v = spop_data_uint32((uint32_t)status);
	spop_put_kv(w, "status-code", &v);
	v = spop_data_string(message, strlen(message));
	spop_put_kv(w, "message", &v);
	return spop_frame_end(w, mark, max_frame_size);
}

bool spop_disconnect_decode(struct spop_slice payload, uint32_t *status,
			    struct spop_slice *message)
{
	size_t off = 0;

	*status = 0;
	message->ptr = payload.ptr;
	message->len = 0;
	while (off < payload.len) {
		struct spop_kv kv;
		ssize_t n = spop_kv_decode(payload.ptr + off, payload.len - off, &kv);
		if (n < 0)
			return false;
		off += (size_t)n;
		int64_t code;
		if (spop_slice_eq(kv.name, "status-code") && spop_data_to_int64(&kv.value, &code))
			*status = code < 0 || code > UINT32_MAX ? SPOP_STATUS_UNKNOWN : (uint32_t)code;
		else if (spop_slice_eq(kv.name, "message") && kv.value.type == SPOP_DATA_STRING)
			*message = kv.value.u.bytes;
	}
	return true;
}

const char *spop_status_text(enum spop_status status)
{
	switch (status) {
	case SPOP_STATUS_NORMAL: return "normal";
	case SPOP_STATUS_IO: return "I/O error";
	case SPOP_STATUS_TIMEOUT: return "a timeout occurred";
	case SPOP_STATUS_TOO_BIG: return "frame is too big";
	case SPOP_STATUS_INVALID: return "invalid frame received";
	case SPOP_STATUS_NO_VERSION: return "version value not found";
	case SPOP_STATUS_NO_FRAME_SIZE: return "max-frame-size value not found";
	case SPOP_STATUS_NO_CAPABILITIES: return "capabilities value not found";
	case SPOP_STATUS_BAD_VERSION: return "unsupported version";
	case SPOP_STATUS_BAD_FRAME_SIZE: return "max-frame-size too big or too small";
	case SPOP_STATUS_FRAG_NOT_SUPPORTED: return "payload fragmentation is not supported";
	case SPOP_STATUS_INTERLACED_FRAMES: return "invalid interlaced frames";
	case SPOP_STATUS_FRAMEID_NOTFOUND: return "frame-id not found";
	case SPOP_STATUS_RES_ALLOC: return "resource allocation error";
	case SPOP_STATUS_UNKNOWN: break;
	}
	return "an unknown error occurred";
}
