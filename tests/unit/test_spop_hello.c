/*
 * test_spop_hello.c - the HELLO handshake and DISCONNECT frames, pinned.
 *
 * The negotiation rules (docs/design.md, "SPOP behaviour") as one table
 * of HAPROXY-HELLO
 * key/value lists -> (accepted, status, max-frame-size, pipelining,
 * healthcheck), plus the HELLOs and DISCONNECTs HAProxy 2.6.12 really sent
 * and the exact bytes of the AGENT-HELLO we answer with.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "spop/spop.h"
#include "haproxy_hello.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Length prefix (4) + type (1) + flags (4) + stream-id 0 + frame-id 0. */
#define SHORT_HEADER 11

/* ---- frames captured from HAProxy 2.6.12 (nbthread 2, tune.bufsize 16384) ---- */

/* HAPROXY-HELLO opening a data connection: haproxy_hello.h. */

/* HAPROXY-HELLO of `option spop-check`: empty capabilities, healthcheck
 * true, no engine-id. */
static const char haproxy_hello_healthcheck[] =
	"\x00\x00\x00\x4e" "\x01" "\x00\x00\x00\x01" "\x00" "\x00"
	"\x12" "supported-versions" "\x08\x03" "2.0"
	"\x0e" "max-frame-size" "\x03\xfc\xf0\x06"
	"\x0c" "capabilities" "\x08\x00"
	"\x0b" "healthcheck" "\x11";

/* HAPROXY-DISCONNECT after `timeout idle` in the spoe-agent section. */
static const char haproxy_disconnect_timeout[] =
	"\x00\x00\x00\x31" "\x02" "\x00\x00\x00\x01" "\x00" "\x00"
	"\x0b" "status-code" "\x03\x02"
	"\x07" "message" "\x08\x12" "a timeout occurred";

/* HAPROXY-DISCONNECT on soft-stop. */
static const char haproxy_disconnect_normal[] =
	"\x00\x00\x00\x25" "\x02" "\x00\x00\x00\x01" "\x00" "\x00"
	"\x0b" "status-code" "\x03\x00"
	"\x07" "message" "\x08\x06" "normal";

/* The AGENT-HELLO we owe a HAProxy offering 16380 and pipelining. */
static const char agent_hello_16380_pipelining[] =
	"\x00\x00\x00\x40" "\x65" "\x00\x00\x00\x01" "\x00" "\x00"
	"\x07" "version" "\x08\x03" "2.0"
	"\x0e" "max-frame-size" "\x03\xfc\xf0\x06"
	"\x0c" "capabilities" "\x08\x0a" "pipelining";

/* The AGENT-DISCONNECT refusing an invalid frame. */
static const char agent_disconnect_invalid[] =
	"\x00\x00\x00\x35" "\x66" "\x00\x00\x00\x01" "\x00" "\x00"
	"\x0b" "status-code" "\x03\x04"
	"\x07" "message" "\x08\x16" "invalid frame received";

/* The payload of a literal frame, after checking its header is what every
 * frame above has: FIN, stream-id 0, frame-id 0. */
static struct spop_slice payload_of(const char *frame, size_t size, enum spop_frame_type type)
{
	struct spop_frame f;
	struct spop_error err = {0};
	assert_int_equal(spop_frame_decode((const uint8_t *)frame, size, 16380, &f, &err), size);
	assert_int_equal(f.type, type);
	assert_int_equal(f.flags, SPOP_FLAG_FIN);
	assert_int_equal(f.stream_id, 0);
	assert_int_equal(f.frame_id, 0);
	assert_int_equal(f.payload.len, size - SHORT_HEADER);
	return f.payload;
}

#define PAYLOAD(frame, type) payload_of(frame, sizeof(frame) - 1, type)

static void expect_slice(const char *what, struct spop_slice got, const char *want)
{
	if (!spop_slice_eq(got, want))
		fail_msg("%s: got \"%.*s\", expected \"%s\"", what, (int)got.len,
			 got.ptr ? (const char *)got.ptr : "", want);
}

/* ---- negotiation ---- */

struct kv_spec {
	const char *name; /* NULL ends a list */
	struct spop_data value;
};

#define KV_STR(n, s) \
	{n, {.type = SPOP_DATA_STRING, .u.bytes = {(const uint8_t *)(s), sizeof(s) - 1}}}
#define KV_U32(n, v) {n, {.type = SPOP_DATA_UINT32, .u.uint = (v)}}
#define KV_U64(n, v) {n, {.type = SPOP_DATA_UINT64, .u.uint = (v)}}
#define KV_I64(n, v) {n, {.type = SPOP_DATA_INT64, .u.sint = (v)}}
#define KV_BOOL(n, v) {n, {.type = SPOP_DATA_BOOL, .u.boolean = (v)}}

#define VERSIONS(s) KV_STR("supported-versions", s)
#define MAX_FRAME(v) KV_U32("max-frame-size", v)
#define CAPS(s) KV_STR("capabilities", s)
#define MAX_KV 6

struct hello_case {
	const char *rule;
	struct kv_spec kv[MAX_KV];
	uint32_t ours;
	bool accepted;
	enum spop_status status; /* when refused */
	uint32_t max_frame_size; /* when accepted */
	bool pipelining;
	bool healthcheck;
};

static const struct hello_case hello_table[] = {
	{.rule = "HAProxy 2.6 data connection: pipelining taken, async not",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(16380), CAPS("pipelining,async"),
		KV_STR("engine-id", "7a2daf75")},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380, .pipelining = true},
	{.rule = "spop-check probe: healthcheck, empty capabilities, no engine-id",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(16380), CAPS(""), KV_BOOL("healthcheck", true)},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380, .healthcheck = true},
	{.rule = "healthcheck false is a data connection",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(16380), CAPS("pipelining"), KV_BOOL("healthcheck", false)},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380, .pipelining = true},
	{.rule = "a versions list with spaces is split on commas",
	 .kv = {VERSIONS("1.0, 2.0"), MAX_FRAME(16380), CAPS("")},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380},
	{.rule = "2.0 first in the list",
	 .kv = {VERSIONS(" 2.0 ,1.0"), MAX_FRAME(16380)},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380},
	{.rule = "supported-versions missing: status 5",
	 .kv = {MAX_FRAME(16380), CAPS("pipelining")},
	 .ours = 16380, .status = SPOP_STATUS_NO_VERSION},
	{.rule = "an empty HELLO misses the version first: status 5",
	 .kv = {{.name = NULL}},
	 .ours = 16380, .status = SPOP_STATUS_NO_VERSION},
	{.rule = "only 1.0 offered: status 8",
	 .kv = {VERSIONS("1.0"), MAX_FRAME(16380), CAPS("pipelining")},
	 .ours = 16380, .status = SPOP_STATUS_BAD_VERSION},
	{.rule = "an empty versions list: status 8",
	 .kv = {VERSIONS(""), MAX_FRAME(16380)},
	 .ours = 16380, .status = SPOP_STATUS_BAD_VERSION},
	{.rule = "supported-versions not a string: status 4",
	 .kv = {KV_U32("supported-versions", 2), MAX_FRAME(16380)},
	 .ours = 16380, .status = SPOP_STATUS_INVALID},
	{.rule = "max-frame-size missing: status 6",
	 .kv = {VERSIONS("2.0"), CAPS("pipelining")},
	 .ours = 16380, .status = SPOP_STATUS_NO_FRAME_SIZE},
	{.rule = "max-frame-size 255 is below the spec's minimum: status 9",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(255)},
	 .ours = 16380, .status = SPOP_STATUS_BAD_FRAME_SIZE},
	{.rule = "max-frame-size 256 is the minimum",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(256)},
	 .ours = 16380, .accepted = true, .max_frame_size = 256},
	{.rule = "a negative max-frame-size: status 9",
	 .kv = {VERSIONS("2.0"), KV_I64("max-frame-size", -1)},
	 .ours = 16380, .status = SPOP_STATUS_BAD_FRAME_SIZE},
	{.rule = "max-frame-size not an integer: status 4",
	 .kv = {VERSIONS("2.0"), KV_STR("max-frame-size", "16380")},
	 .ours = 16380, .status = SPOP_STATUS_INVALID},
	{.rule = "max-frame-size as INT64 is accepted like UINT32",
	 .kv = {VERSIONS("2.0"), KV_I64("max-frame-size", 16380)},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380},
	{.rule = "ours smaller than theirs: ours",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(16380)},
	 .ours = 1024, .accepted = true, .max_frame_size = 1024},
	{.rule = "theirs smaller than ours: theirs",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(4096)},
	 .ours = 16380, .accepted = true, .max_frame_size = 4096},
	{.rule = "theirs beyond 32 bits: ours",
	 .kv = {VERSIONS("2.0"), KV_U64("max-frame-size", (uint64_t)1 << 33)},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380},
	{.rule = "capabilities absent: accepted, no pipelining",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(16380)},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380},
	{.rule = "async alone is not pipelining",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(16380), CAPS("async")},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380},
	{.rule = "fragmentation alone is not pipelining",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(16380), CAPS("fragmentation")},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380},
	{.rule = "pipelining found among spaces",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(16380), CAPS("async , pipelining ")},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380, .pipelining = true},
	{.rule = "a token is matched whole, not as a prefix",
	 .kv = {VERSIONS("2.0"), MAX_FRAME(16380), CAPS("pipelining-v2")},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380},
	{.rule = "unknown keys are ignored",
	 .kv = {KV_STR("x-future", "anything"), VERSIONS("2.0"), KV_U32("x-number", 1), MAX_FRAME(16380)},
	 .ours = 16380, .accepted = true, .max_frame_size = 16380},
};

static size_t encode_kv_list(uint8_t *buf, size_t cap, const struct kv_spec *kv, size_t max)
{
	struct spop_writer w;
	spop_writer_init(&w, buf, cap);
	for (size_t i = 0; i < max && kv[i].name; i++)
		spop_put_kv(&w, kv[i].name, &kv[i].value);
	assert_false(w.overflow);
	return w.len;
}

static void test_hello_negotiation_table(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(hello_table); i++) {
		const struct hello_case *c = &hello_table[i];
		uint8_t buf[512];
		struct spop_slice payload = {buf, encode_kv_list(buf, sizeof(buf), c->kv, MAX_KV)};
		struct spop_handshake hs;
		struct spop_error err = {.status = SPOP_STATUS_NORMAL, .reason = NULL};

		bool ok = spop_hello_negotiate(payload, c->ours, &hs, &err);
		if (ok != c->accepted)
			fail_msg("%s: %s (status %d, %s)", c->rule, ok ? "accepted" : "refused",
				 err.status, err.reason ? err.reason : "no reason");
		if (!ok) {
			if (err.status != c->status)
				fail_msg("%s: status %d, expected %d", c->rule, err.status, c->status);
			if (err.reason == NULL || err.reason[0] == '\0')
				fail_msg("%s: refused without a reason", c->rule);
			continue;
		}
		if (hs.max_frame_size != c->max_frame_size || hs.pipelining != c->pipelining ||
		    hs.healthcheck != c->healthcheck)
			fail_msg("%s: max-frame-size %u pipelining %d healthcheck %d", c->rule,
				 hs.max_frame_size, hs.pipelining, hs.healthcheck);
	}
}

static void test_hello_from_haproxy_2_6_data_connection(void **state)
{
	struct spop_handshake hs;
	struct spop_error err = {0};
	assert_true(spop_hello_negotiate(PAYLOAD(haproxy_hello, SPOP_FRAME_HAPROXY_HELLO), 16380, &hs,
					 &err));
	assert_int_equal(hs.max_frame_size, 16380);
	assert_true(hs.pipelining);
	assert_false(hs.healthcheck);
	expect_slice("engine-id", hs.engine_id, "0135bc6d-7614-4f55-96b4-72bbe48ed1f4");
}

static void test_hello_from_haproxy_2_6_spop_check(void **state)
{
	struct spop_handshake hs;
	struct spop_error err = {0};
	assert_true(spop_hello_negotiate(PAYLOAD(haproxy_hello_healthcheck, SPOP_FRAME_HAPROXY_HELLO),
					 16380, &hs, &err));
	assert_int_equal(hs.max_frame_size, 16380);
	assert_false(hs.pipelining);
	assert_true(hs.healthcheck);
	assert_int_equal(hs.engine_id.len, 0);
}

struct malformed_case {
	const char *rule;
	const char *bytes;
	size_t len;
};

#define MALFORMED(rule, lit) {rule, lit, sizeof(lit) - 1}

static const struct malformed_case malformed_table[] = {
	MALFORMED("a value cut short", "\x12" "supported-versions" "\x08\x03" "2."),
	MALFORMED("a name cut short", "\x12" "supported-vers"),
	MALFORMED("a name without a value", "\x0e" "max-frame-size"),
	MALFORMED("a reserved value type", "\x03" "foo" "\x0a"),
	MALFORMED("a valid key followed by garbage",
		  "\x12" "supported-versions" "\x08\x03" "2.0" "\xff"),
};

static void test_hello_with_malformed_kv_list_is_status_4(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(malformed_table); i++) {
		const struct malformed_case *c = &malformed_table[i];
		struct spop_slice payload = {(const uint8_t *)c->bytes, c->len};
		struct spop_handshake hs;
		struct spop_error err = {0};
		if (spop_hello_negotiate(payload, 16380, &hs, &err))
			fail_msg("%s: accepted", c->rule);
		if (err.status != SPOP_STATUS_INVALID)
			fail_msg("%s: status %d, expected 4", c->rule, err.status);
	}
}

/* ---- AGENT-HELLO ---- */

/* Decodes an AGENT-HELLO and checks it has exactly version, max-frame-size
 * and capabilities, in that order. */
static void check_agent_hello(const uint8_t *buf, size_t len, uint32_t max_frame_size,
			      const char *capabilities)
{
	struct spop_frame f;
	struct spop_error err = {0};
	assert_int_equal(spop_frame_decode(buf, len, max_frame_size, &f, &err), (ssize_t)len);
	assert_int_equal(f.type, SPOP_FRAME_AGENT_HELLO);
	assert_int_equal(f.flags, SPOP_FLAG_FIN);
	assert_int_equal(f.stream_id, 0);
	assert_int_equal(f.frame_id, 0);

	struct spop_kv kv[3];
	size_t off = 0;
	for (size_t i = 0; i < 3; i++) {
		ssize_t n = spop_kv_decode(f.payload.ptr + off, f.payload.len - off, &kv[i]);
		assert_true(n > 0);
		off += (size_t)n;
	}
	assert_int_equal(off, f.payload.len);

	expect_slice("key 0", kv[0].name, "version");
	assert_int_equal(kv[0].value.type, SPOP_DATA_STRING);
	expect_slice("version", kv[0].value.u.bytes, "2.0");
	expect_slice("key 1", kv[1].name, "max-frame-size");
	assert_int_equal(kv[1].value.type, SPOP_DATA_UINT32);
	assert_int_equal(kv[1].value.u.uint, max_frame_size);
	expect_slice("key 2", kv[2].name, "capabilities");
	assert_int_equal(kv[2].value.type, SPOP_DATA_STRING);
	expect_slice("capabilities", kv[2].value.u.bytes, capabilities);
}

static void test_agent_hello_bytes(void **state)
{
	uint8_t buf[128];
	struct spop_writer w;
	struct spop_handshake hs = {.max_frame_size = 16380, .pipelining = true};
	spop_writer_init(&w, buf, sizeof(buf));
	assert_true(spop_put_agent_hello(&w, &hs));
	assert_int_equal(w.len, sizeof(agent_hello_16380_pipelining) - 1);
	assert_memory_equal(buf, agent_hello_16380_pipelining, w.len);
}

static void test_agent_hello_always_has_capabilities_key(void **state)
{
	const struct {
		uint32_t max_frame_size;
		bool pipelining;
		const char *capabilities;
	} table[] = {
		{256, false, ""}, /* 3.x health checks refuse a reply without the key */
		{256, true, "pipelining"},
		{16380, false, ""},
		{16380, true, "pipelining"},
		{UINT32_MAX, true, "pipelining"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		uint8_t buf[128];
		struct spop_writer w;
		struct spop_handshake hs = {.max_frame_size = table[i].max_frame_size,
					    .pipelining = table[i].pipelining};
		spop_writer_init(&w, buf, sizeof(buf));
		assert_true(spop_put_agent_hello(&w, &hs));
		check_agent_hello(buf, w.len, table[i].max_frame_size, table[i].capabilities);
	}
}

static void test_agent_hello_answers_what_was_negotiated(void **state)
{
	struct spop_handshake hs;
	struct spop_error err = {0};
	assert_true(spop_hello_negotiate(PAYLOAD(haproxy_hello, SPOP_FRAME_HAPROXY_HELLO), 8192, &hs,
					 &err));
	uint8_t buf[128];
	struct spop_writer w;
	spop_writer_init(&w, buf, sizeof(buf));
	assert_true(spop_put_agent_hello(&w, &hs));
	check_agent_hello(buf, w.len, 8192, "pipelining");

	/* the spop-check probe gets a reply too, with the key present but empty */
	assert_true(spop_hello_negotiate(PAYLOAD(haproxy_hello_healthcheck, SPOP_FRAME_HAPROXY_HELLO),
					 16380, &hs, &err));
	spop_writer_init(&w, buf, sizeof(buf));
	assert_true(spop_put_agent_hello(&w, &hs));
	check_agent_hello(buf, w.len, 16380, "");
}

static void test_agent_hello_that_does_not_fit_is_rolled_back(void **state)
{
	uint8_t buf[128];
	struct spop_writer w;
	struct spop_handshake hs = {.max_frame_size = 16380, .pipelining = true};
	spop_writer_init(&w, buf, sizeof(agent_hello_16380_pipelining) - 2);
	assert_false(spop_put_agent_hello(&w, &hs));
	assert_int_equal(w.len, 0);
	assert_false(w.overflow);
}

/* ---- DISCONNECT ---- */

static void test_agent_disconnect_bytes(void **state)
{
	uint8_t buf[128];
	struct spop_writer w;
	spop_writer_init(&w, buf, sizeof(buf));
	assert_true(spop_put_agent_disconnect(&w, SPOP_STATUS_INVALID, "invalid frame received", 16380));
	assert_int_equal(w.len, sizeof(agent_disconnect_invalid) - 1);
	assert_memory_equal(buf, agent_disconnect_invalid, w.len);
}

static void test_agent_disconnect_round_trips_through_decode(void **state)
{
	const struct {
		enum spop_status status;
		const char *message;
	} table[] = {
		{SPOP_STATUS_NORMAL, "normal"},
		{SPOP_STATUS_TOO_BIG, "frame length exceeds max-frame-size"},
		{SPOP_STATUS_INVALID, ""},
		{SPOP_STATUS_FRAG_NOT_SUPPORTED, "payload fragmentation is not supported"},
		{SPOP_STATUS_UNKNOWN, "an unknown error occurred"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		uint8_t buf[256];
		struct spop_writer w;
		struct spop_frame f;
		struct spop_error err = {0};
		spop_writer_init(&w, buf, sizeof(buf));
		assert_true(spop_put_agent_disconnect(&w, table[i].status, table[i].message, 256));
		assert_int_equal(spop_frame_decode(buf, w.len, 256, &f, &err), (ssize_t)w.len);
		assert_int_equal(f.type, SPOP_FRAME_AGENT_DISCONNECT);
		assert_int_equal(f.flags, SPOP_FLAG_FIN);

		uint32_t status = 12345;
		struct spop_slice message;
		assert_true(spop_disconnect_decode(f.payload, &status, &message));
		assert_int_equal(status, table[i].status);
		expect_slice("message", message, table[i].message);
	}
}

static void test_agent_disconnect_above_max_frame_size_is_rolled_back(void **state)
{
	char message[300];
	uint8_t buf[512];
	struct spop_writer w;
	memset(message, 'm', sizeof(message) - 1);
	message[sizeof(message) - 1] = '\0';
	spop_writer_init(&w, buf, sizeof(buf));
	assert_false(spop_put_agent_disconnect(&w, SPOP_STATUS_INVALID, message, 256));
	assert_int_equal(w.len, 0);
	assert_false(w.overflow);
}

static void test_disconnect_decode_haproxy_2_6_frames(void **state)
{
	uint32_t status = 12345;
	struct spop_slice message;
	assert_true(spop_disconnect_decode(
		PAYLOAD(haproxy_disconnect_timeout, SPOP_FRAME_HAPROXY_DISCONNECT), &status, &message));
	assert_int_equal(status, SPOP_STATUS_TIMEOUT);
	expect_slice("message", message, "a timeout occurred");

	assert_true(spop_disconnect_decode(
		PAYLOAD(haproxy_disconnect_normal, SPOP_FRAME_HAPROXY_DISCONNECT), &status, &message));
	assert_int_equal(status, SPOP_STATUS_NORMAL);
	expect_slice("message", message, "normal");
}

struct disconnect_case {
	const char *rule;
	struct kv_spec kv[3];
	uint32_t status;
	const char *message;
};

static const struct disconnect_case disconnect_table[] = {
	{"an empty payload is a normal close", {{.name = NULL}}, SPOP_STATUS_NORMAL, ""},
	{"message without status-code", {KV_STR("message", "bye")}, SPOP_STATUS_NORMAL, "bye"},
	{"status-code as INT64", {KV_I64("status-code", 3)}, SPOP_STATUS_TOO_BIG, ""},
	{"a negative status-code is unknown", {KV_I64("status-code", -1)}, SPOP_STATUS_UNKNOWN, ""},
	{"a status-code beyond 32 bits is unknown",
	 {KV_U64("status-code", (uint64_t)1 << 32)}, SPOP_STATUS_UNKNOWN, ""},
	{"an agent-defined code is kept", {KV_U32("status-code", 42)}, 42, ""},
	{"unknown keys are ignored",
	 {KV_STR("x-extra", "1"), KV_U32("status-code", 1), KV_STR("message", "io")},
	 SPOP_STATUS_IO, "io"},
};

static void test_disconnect_decode_table(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(disconnect_table); i++) {
		const struct disconnect_case *c = &disconnect_table[i];
		uint8_t buf[128];
		struct spop_slice payload = {buf, encode_kv_list(buf, sizeof(buf), c->kv, 3)};
		uint32_t status = 12345;
		struct spop_slice message;
		if (!spop_disconnect_decode(payload, &status, &message))
			fail_msg("%s: refused", c->rule);
		if (status != c->status)
			fail_msg("%s: status %u, expected %u", c->rule, status, c->status);
		expect_slice(c->rule, message, c->message);
	}
}

static void test_disconnect_decode_refuses_malformed_payload(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(malformed_table); i++) {
		const struct malformed_case *c = &malformed_table[i];
		struct spop_slice payload = {(const uint8_t *)c->bytes, c->len};
		uint32_t status;
		struct spop_slice message;
		if (spop_disconnect_decode(payload, &status, &message))
			fail_msg("%s: accepted", c->rule);
	}
}

/* ---- status texts ---- */

static void test_status_text_matches_spec(void **state)
{
	const struct {
		enum spop_status status;
		const char *text;
	} table[] = {
		{SPOP_STATUS_NORMAL, "normal"},
		{SPOP_STATUS_IO, "I/O error"},
		{SPOP_STATUS_TIMEOUT, "a timeout occurred"}, /* HAProxy's own wording, see above */
		{SPOP_STATUS_TOO_BIG, "frame is too big"},
		{SPOP_STATUS_INVALID, "invalid frame received"},
		{SPOP_STATUS_NO_VERSION, "version value not found"},
		{SPOP_STATUS_NO_FRAME_SIZE, "max-frame-size value not found"},
		{SPOP_STATUS_NO_CAPABILITIES, "capabilities value not found"},
		{SPOP_STATUS_BAD_VERSION, "unsupported version"},
		{SPOP_STATUS_BAD_FRAME_SIZE, "max-frame-size too big or too small"},
		{SPOP_STATUS_FRAG_NOT_SUPPORTED, "payload fragmentation is not supported"},
		{SPOP_STATUS_INTERLACED_FRAMES, "invalid interlaced frames"},
		{SPOP_STATUS_FRAMEID_NOTFOUND, "frame-id not found"},
		{SPOP_STATUS_RES_ALLOC, "resource allocation error"},
		{SPOP_STATUS_UNKNOWN, "an unknown error occurred"},
		{(enum spop_status)42, "an unknown error occurred"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(table); i++)
		assert_string_equal(spop_status_text(table[i].status), table[i].text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello_negotiation_table),
		cmocka_unit_test(test_hello_from_haproxy_2_6_data_connection),
		cmocka_unit_test(test_hello_from_haproxy_2_6_spop_check),
		cmocka_unit_test(test_hello_with_malformed_kv_list_is_status_4),
		cmocka_unit_test(test_agent_hello_bytes),
		cmocka_unit_test(test_agent_hello_always_has_capabilities_key),
		cmocka_unit_test(test_agent_hello_answers_what_was_negotiated),
		cmocka_unit_test(test_agent_hello_that_does_not_fit_is_rolled_back),
		cmocka_unit_test(test_agent_disconnect_bytes),
		cmocka_unit_test(test_agent_disconnect_round_trips_through_decode),
		cmocka_unit_test(test_agent_disconnect_above_max_frame_size_is_rolled_back),
		cmocka_unit_test(test_disconnect_decode_haproxy_2_6_frames),
		cmocka_unit_test(test_disconnect_decode_table),
		cmocka_unit_test(test_disconnect_decode_refuses_malformed_payload),
		cmocka_unit_test(test_status_text_matches_spec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
