/*
 * test_spop_codec.c - the SPOP codec's contract, pinned as tables.
 *
 * Each table row is (wire bytes) -> (decoded value or SPOP_INCOMPLETE /
 * SPOP_INVALID). Literal bytes come from doc/SPOE.txt, from frames HAProxy
 * 2.6.12 sent to a test agent, and from an ACK HAProxy 2.6 accepted
 * (set-var of a STRING, a UINT32 and a BOOL), so the encoder
 * and the decoder cannot agree on a mistake: both are checked against bytes
 * neither of them produced.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "spop/spop.h"

struct bytes {
	const uint8_t *ptr;
	size_t len;
};

#define BYTES(...) {(const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})}
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The ten bytes of UINT64_MAX, i.e. -1 as a 64-bit two's complement. */
#define MINUS_ONE_64 0xff, 0xf0, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0x0e

static void expect_result(const char *what, ssize_t got, ssize_t want)
{
	if (got != want)
		fail_msg("%s: returned %zd, expected %zd", what, got, want);
}

static void expect_slice(const char *what, struct spop_slice got, const char *want)
{
	if (!spop_slice_eq(got, want))
		fail_msg("%s: got \"%.*s\", expected \"%s\"", what, (int)got.len,
			 got.ptr ? (const char *)got.ptr : "", want);
}

static bool data_equal(const struct spop_data *a, const struct spop_data *b)
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
		return a->u.bytes.len == b->u.bytes.len &&
		       (a->u.bytes.len == 0 || memcmp(a->u.bytes.ptr, b->u.bytes.ptr, a->u.bytes.len) == 0);
	}
	return false;
}

static void expect_bytes(const char *what, const uint8_t *got, size_t got_len, struct bytes want)
{
	if (got_len != want.len || memcmp(got, want.ptr, want.len) != 0) {
		print_error("%s: wrote %zu bytes, expected %zu\n  got :", what, got_len, want.len);
		for (size_t i = 0; i < got_len; i++)
			print_error(" %02x", got[i]);
		print_error("\n  want:");
		for (size_t i = 0; i < want.len; i++)
			print_error(" %02x", want.ptr[i]);
		print_error("\n");
		fail();
	}
}

/* ---- frames captured from HAProxy 2.6.12 and from the reference ---- */

/* NOTIFY for on-http-response: sid 0, fid 2, message "http-res" with
 * be=be_name srv=srv_name status=status. */
static const uint8_t haproxy_notify_response[] = {
	0x00, 0x00, 0x00, 0x2d, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x02,
	0x08, 'h', 't', 't', 'p', '-', 'r', 'e', 's', 0x03,
	0x02, 'b', 'e', 0x08, 0x06, 'b', 'e', '_', 'a', 'p', 'p',
	0x03, 's', 'r', 'v', 0x08, 0x02, 'w', '1',
	0x06, 's', 't', 'a', 't', 'u', 's', 0x04, 0xc8,
};

/* NOTIFY for on-frontend-http-request: cip=src (IPV4), path=path,
 * ssl=ssl_fc (BOOL false), port=dst_port (INT64 35721), miss=req.hdr(x-none)
 * (NULL: the sample does not exist), meth=method. */
static const uint8_t haproxy_notify_request[] = {
	0x00, 0x00, 0x00, 0x46, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01,
	0x08, 'h', 't', 't', 'p', '-', 'r', 'e', 'q', 0x06,
	0x03, 'c', 'i', 'p', 0x06, 0x7f, 0x00, 0x00, 0x01,
	0x04, 'p', 'a', 't', 'h', 0x08, 0x07, '/', 'p', 'a', 't', 'h', '/', '1',
	0x03, 's', 's', 'l', 0x01,
	0x04, 'p', 'o', 'r', 't', 0x04, 0xf9, 0xa9, 0x10,
	0x04, 'm', 'i', 's', 's', 0x00,
	0x04, 'm', 'e', 't', 'h', 0x08, 0x03, 'G', 'E', 'T',
};

/* The ACK HAProxy 2.6 accepted: sid 19301 (f5 a7 08), fid 1, FIN, and
 * set-var(txn) state="open", fails=UINT32 3, seen=BOOL true. */
static const uint8_t reference_ack[] = {
	0x00, 0x00, 0x00, 0x2c, 0x67, 0x00, 0x00, 0x00, 0x01, 0xf5, 0xa7, 0x08, 0x01,
	0x01, 0x03, 0x02, 0x05, 's', 't', 'a', 't', 'e', 0x08, 0x04, 'o', 'p', 'e', 'n',
	0x01, 0x03, 0x02, 0x05, 'f', 'a', 'i', 'l', 's', 0x03, 0x03,
	0x01, 0x03, 0x02, 0x04, 's', 'e', 'e', 'n', 0x11,
};

/* HAPROXY-DISCONNECT on soft-stop: status-code UINT32 0, message "normal". */
static const uint8_t haproxy_disconnect_normal[] = {
	0x00, 0x00, 0x00, 0x25, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	0x0b, 's', 't', 'a', 't', 'u', 's', '-', 'c', 'o', 'd', 'e', 0x03, 0x00,
	0x07, 'm', 'e', 's', 's', 'a', 'g', 'e', 0x08, 0x06, 'n', 'o', 'r', 'm', 'a', 'l',
};

/* Length prefix (4) + type (1) + flags (4) + one-byte stream-id and frame-id. */
#define SHORT_HEADER 11

/* ---- varint ---- */

struct varint_case {
	uint64_t value;
	struct bytes wire;
};

/* The boundaries of doc/SPOE.txt 3.1, and a few values seen on the wire. */
static const struct varint_case varint_table[] = {
	{0, BYTES(0x00)},
	{239, BYTES(0xef)},
	{240, BYTES(0xf0, 0x00)},
	{2287, BYTES(0xff, 0x7f)},
	{2288, BYTES(0xf0, 0x80, 0x00)},
	{264431, BYTES(0xff, 0xff, 0x7f)},
	{264432, BYTES(0xf0, 0x80, 0x80, 0x00)},
	{33818863, BYTES(0xff, 0xff, 0xff, 0x7f)},
	{33818864, BYTES(0xf0, 0x80, 0x80, 0x80, 0x00)},
	{16380, BYTES(0xfc, 0xf0, 0x06)},    /* HAProxy 2.6's max-frame-size */
	{19301, BYTES(0xf5, 0xa7, 0x08)},    /* the stream-id of the reference ACK */
	{UINT32_MAX, BYTES(0xff, 0xf0, 0xfe, 0xfe, 0x7e)},
	{(uint64_t)UINT32_MAX + 1, BYTES(0xf0, 0xf1, 0xfe, 0xfe, 0x7e)},
	{(uint64_t)INT64_MAX + 1, BYTES(0xf0, 0xf1, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0x06)},
	{UINT64_MAX, BYTES(MINUS_ONE_64)},
};

static void test_varint_decode_matches_spec_table(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(varint_table); i++) {
		const struct varint_case *c = &varint_table[i];
		uint64_t v = 0;
		ssize_t n = spop_varint_decode(c->wire.ptr, c->wire.len, &v);
		expect_result("varint decode", n, (ssize_t)c->wire.len);
		if (v != c->value)
			fail_msg("varint decode: got %ju, expected %ju", (uintmax_t)v, (uintmax_t)c->value);
	}
}

static void test_varint_encode_matches_spec_table(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(varint_table); i++) {
		const struct varint_case *c = &varint_table[i];
		uint8_t out[SPOP_VARINT_MAX_SIZE];
		size_t n = spop_varint_encode(out, c->value);
		expect_bytes("varint encode", out, n, c->wire);
	}
}

static void test_varint_decode_reads_only_its_own_bytes(void **state)
{
	/* 240 followed by bytes of whatever comes next. */
	const uint8_t buf[] = {0xf0, 0x00, 0xff, 0xff};
	uint64_t v;
	assert_int_equal(spop_varint_decode(buf, sizeof(buf), &v), 2);
	assert_int_equal(v, 240);
}

static void test_varint_truncated_is_incomplete(void **state)
{
	uint64_t v;
	assert_int_equal(spop_varint_decode(NULL, 0, &v), SPOP_INCOMPLETE);
	for (size_t i = 0; i < ARRAY_SIZE(varint_table); i++) {
		const struct varint_case *c = &varint_table[i];
		for (size_t len = 0; len < c->wire.len; len++)
			expect_result("varint prefix", spop_varint_decode(c->wire.ptr, len, &v),
				      SPOP_INCOMPLETE);
	}
}

static void test_varint_rejects_eleven_byte_run(void **state)
{
	/* No 64-bit value needs more than 10 bytes: a continuation bit on the
	 * 10th byte can never end well, however many bytes follow. */
	const uint8_t run[] = {0xf0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
	uint64_t v;
	assert_int_equal(spop_varint_decode(run, 11, &v), SPOP_INVALID);
	assert_int_equal(spop_varint_decode(run, sizeof(run), &v), SPOP_INVALID);
	assert_int_equal(spop_varint_decode(run, 10, &v), SPOP_INVALID);
	/* Nine bytes of the run could still be a valid prefix. */
	assert_int_equal(spop_varint_decode(run, 9, &v), SPOP_INCOMPLETE);
}

static void test_varint_rejects_values_above_uint64_max(void **state)
{
	const struct bytes overflowing[] = {
		/* UINT64_MAX + 2^60: the last byte carries past bit 63 */
		BYTES(0xff, 0xf0, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0x0f),
		/* the last byte shifted by 60 loses its bit 4 */
		BYTES(0xf0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10),
		BYTES(0xf0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f),
		/* UINT64_MAX + 2^53: a middle byte carries */
		BYTES(0xff, 0xf0, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xff, 0x0e),
	};
	for (size_t i = 0; i < ARRAY_SIZE(overflowing); i++) {
		uint64_t v;
		expect_result("overflowing varint",
			      spop_varint_decode(overflowing[i].ptr, overflowing[i].len, &v), SPOP_INVALID);
	}
}

/* Smallest value that takes n bytes, from the spec's ranges: the n-byte
 * range holds 2^(4 + 7 * (n - 1)) values and starts where the last ends. */
static uint64_t varint_range_start(unsigned n)
{
	uint64_t start = 240;
	if (n == 1)
		return 0;
	for (unsigned k = 2; k < n; k++)
		start += (uint64_t)1 << (4 + 7 * (k - 1));
	return start;
}

static size_t varint_spec_size(uint64_t v)
{
	size_t n = 1;
	while (n < SPOP_VARINT_MAX_SIZE && v >= varint_range_start((unsigned)n + 1))
		n++;
	return n;
}

static void check_varint_round_trip(uint64_t v)
{
	uint8_t buf[SPOP_VARINT_MAX_SIZE];
	uint64_t back = ~v;
	size_t n = spop_varint_encode(buf, v);
	if (n != varint_spec_size(v))
		fail_msg("varint %ju: encoded on %zu bytes, spec says %zu", (uintmax_t)v, n,
			 varint_spec_size(v));
	ssize_t got = spop_varint_decode(buf, n, &back);
	if (got != (ssize_t)n || back != v)
		fail_msg("varint %ju: decoded %ju using %zd bytes", (uintmax_t)v, (uintmax_t)back, got);
}

static void test_varint_round_trips_and_sizes_follow_spec_ranges(void **state)
{
	for (unsigned n = 1; n <= SPOP_VARINT_MAX_SIZE; n++) {
		uint64_t start = varint_range_start(n);
		check_varint_round_trip(start);
		check_varint_round_trip(start + 1);
		if (start)
			check_varint_round_trip(start - 1);
	}
	for (unsigned bit = 0; bit < 64; bit++) {
		check_varint_round_trip((uint64_t)1 << bit);
		check_varint_round_trip(((uint64_t)1 << bit) - 1);
	}
	check_varint_round_trip(UINT64_MAX);
	check_varint_round_trip(UINT64_MAX - 1);

	uint64_t x = 0x9e3779b97f4a7c15u; /* xorshift64: many lengths, reproducibly */
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		check_varint_round_trip(x >> (x & 63));
	}
}

static void test_put_varint_appends_the_encoding(void **state)
{
	uint8_t buf[16];
	struct spop_writer w;
	spop_writer_init(&w, buf, sizeof(buf));
	spop_put_varint(&w, 19301);
	spop_put_varint(&w, 7);
	assert_false(w.overflow);
	expect_bytes("put_varint", buf, w.len, (struct bytes)BYTES(0xf5, 0xa7, 0x08, 0x07));
}

/* ---- string ---- */

static void test_string_decode_reads_length_then_bytes(void **state)
{
	const uint8_t buf[] = {0x05, 's', 't', 'a', 't', 'e', 0x08};
	struct spop_slice s;
	assert_int_equal(spop_string_decode(buf, sizeof(buf), &s), 6);
	assert_ptr_equal(s.ptr, buf + 1); /* a view into the input, not a copy */
	expect_slice("string", s, "state");

	const uint8_t empty[] = {0x00};
	assert_int_equal(spop_string_decode(empty, sizeof(empty), &s), 1);
	assert_int_equal(s.len, 0);
}

static void test_string_decode_long_length_varint(void **state)
{
	uint8_t buf[2 + 300];
	memset(buf, 'x', sizeof(buf));
	buf[0] = 0xfc; /* 300 = 0xfc 0x03 */
	buf[1] = 0x03;
	struct spop_slice s;
	assert_int_equal(spop_string_decode(buf, sizeof(buf), &s), 302);
	assert_int_equal(s.len, 300);
}

static void test_string_truncated_is_incomplete(void **state)
{
	const uint8_t buf[] = {0x05, 's', 't', 'a', 't', 'e'};
	struct spop_slice s;
	for (size_t len = 0; len < sizeof(buf); len++)
		expect_result("string prefix", spop_string_decode(buf, len, &s), SPOP_INCOMPLETE);
	/* the length itself cut in the middle of its varint */
	const uint8_t cut_length[] = {0xfc};
	assert_int_equal(spop_string_decode(cut_length, 1, &s), SPOP_INCOMPLETE);
}

static void test_string_with_malformed_length_is_invalid(void **state)
{
	const uint8_t buf[] = {0xf0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
	struct spop_slice s;
	assert_int_equal(spop_string_decode(buf, sizeof(buf), &s), SPOP_INVALID);
}

static void test_put_string_writes_length_then_bytes(void **state)
{
	uint8_t buf[16];
	struct spop_writer w;
	spop_writer_init(&w, buf, sizeof(buf));
	spop_put_string(&w, "state", 5);
	spop_put_string(&w, NULL, 0);
	assert_false(w.overflow);
	expect_bytes("put_string", buf, w.len, (struct bytes)BYTES(0x05, 's', 't', 'a', 't', 'e', 0x00));
}

/* ---- typed data ---- */

struct data_case {
	const char *rule;
	struct bytes wire;
	ssize_t result;         /* bytes consumed, or SPOP_INVALID */
	struct spop_data want;
	bool canonical;         /* our encoder writes exactly these bytes */
};

#define STRING_DATA(lit) \
	{.type = SPOP_DATA_STRING, .u.bytes = {(const uint8_t *)(lit), sizeof(lit) - 1}}

static const struct data_case data_table[] = {
	{"NULL is the bare type byte", BYTES(0x00), 1, {.type = SPOP_DATA_NULL}, true},
	{"BOOL false: flag bit 0x10 clear", BYTES(0x01), 1,
	 {.type = SPOP_DATA_BOOL, .u.boolean = false}, true},
	{"BOOL true: flag bit 0x10 set", BYTES(0x11), 1,
	 {.type = SPOP_DATA_BOOL, .u.boolean = true}, true},
	{"INT32 small", BYTES(0x02, 0x05), 2, {.type = SPOP_DATA_INT32, .u.sint = 5}, true},
	{"INT32 max", BYTES(0x02, 0xff, 0xf0, 0xfe, 0xfe, 0x3e), 6,
	 {.type = SPOP_DATA_INT32, .u.sint = INT32_MAX}, true},
	{"INT32 -1 as 32-bit two's complement", BYTES(0x02, 0xff, 0xf0, 0xfe, 0xfe, 0x7e), 6,
	 {.type = SPOP_DATA_INT32, .u.sint = -1}, false},
	{"INT32 -1 as 64-bit two's complement", BYTES(0x02, MINUS_ONE_64), 11,
	 {.type = SPOP_DATA_INT32, .u.sint = -1}, true},
	{"INT32 min as 32-bit two's complement", BYTES(0x02, 0xf0, 0xf1, 0xfe, 0xfe, 0x3e), 6,
	 {.type = SPOP_DATA_INT32, .u.sint = INT32_MIN}, false},
	{"INT32 min as 64-bit two's complement",
	 BYTES(0x02, 0xf0, 0xf1, 0xfe, 0xfe, 0xbe, 0xfe, 0xfe, 0xfe, 0xfe, 0x0e), 11,
	 {.type = SPOP_DATA_INT32, .u.sint = INT32_MIN}, true},
	{"UINT32 3", BYTES(0x03, 0x03), 2, {.type = SPOP_DATA_UINT32, .u.uint = 3}, true},
	{"UINT32 max", BYTES(0x03, 0xff, 0xf0, 0xfe, 0xfe, 0x7e), 6,
	 {.type = SPOP_DATA_UINT32, .u.uint = UINT32_MAX}, true},
	{"UINT32 above UINT32_MAX is invalid", BYTES(0x03, 0xf0, 0xf1, 0xfe, 0xfe, 0x7e),
	 SPOP_INVALID, {.type = SPOP_DATA_NULL}, false},
	{"INT64 200, as HAProxy sends status", BYTES(0x04, 0xc8), 2,
	 {.type = SPOP_DATA_INT64, .u.sint = 200}, true},
	{"INT64 -5", BYTES(0x04, 0xfb, 0xf0, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0x0e), 11,
	 {.type = SPOP_DATA_INT64, .u.sint = -5}, true},
	{"INT64 min", BYTES(0x04, 0xf0, 0xf1, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0x06), 11,
	 {.type = SPOP_DATA_INT64, .u.sint = INT64_MIN}, true},
	{"INT64 with an overflowing varint is invalid",
	 BYTES(0x04, 0xff, 0xf0, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0x0f), SPOP_INVALID,
	 {.type = SPOP_DATA_NULL}, false},
	{"UINT64 max", BYTES(0x05, MINUS_ONE_64), 11,
	 {.type = SPOP_DATA_UINT64, .u.uint = UINT64_MAX}, true},
	{"IPV4: 4 bytes in network order", BYTES(0x06, 0x7f, 0x00, 0x00, 0x01), 5,
	 {.type = SPOP_DATA_IPV4, .u.ipv4 = {127, 0, 0, 1}}, true},
	{"IPV6: 16 bytes in network order",
	 BYTES(0x07, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01), 17,
	 {.type = SPOP_DATA_IPV6, .u.ipv6 = {0x20, 0x01, 0x0d, 0xb8, [15] = 0x01}}, true},
	{"STRING", BYTES(0x08, 0x04, 'o', 'p', 'e', 'n'), 6, STRING_DATA("open"), true},
	{"STRING empty", BYTES(0x08, 0x00), 2, STRING_DATA(""), true},
	{"BINARY keeps NUL bytes", BYTES(0x09, 0x03, 0x00, 0xff, 0x0a), 5,
	 {.type = SPOP_DATA_BINARY, .u.bytes = {(const uint8_t *)"\x00\xff\x0a", 3}}, true},
};

static void test_data_decode_matches_wire_table(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(data_table); i++) {
		const struct data_case *c = &data_table[i];
		struct spop_data d;
		memset(&d, 0xa5, sizeof(d));
		ssize_t n = spop_data_decode(c->wire.ptr, c->wire.len, &d);
		expect_result(c->rule, n, c->result);
		if (n > 0 && !data_equal(&d, &c->want))
			fail_msg("%s: decoded value differs", c->rule);
	}
}

static void test_data_truncated_is_incomplete(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(data_table); i++) {
		const struct data_case *c = &data_table[i];
		if (c->result < 0)
			continue;
		for (size_t len = 0; len < (size_t)c->result; len++) {
			struct spop_data d;
			expect_result(c->rule, spop_data_decode(c->wire.ptr, len, &d), SPOP_INCOMPLETE);
		}
	}
}

static void test_data_rejects_reserved_types_10_to_15(void **state)
{
	for (unsigned type = 10; type <= 15; type++) {
		for (unsigned flags = 0; flags <= 0xf0; flags += 0x10) {
			const uint8_t buf[] = {(uint8_t)(flags | type), 0x00, 0x00, 0x00, 0x00};
			struct spop_data d;
			if (spop_data_decode(buf, sizeof(buf), &d) != SPOP_INVALID)
				fail_msg("type byte 0x%02x was accepted", buf[0]);
		}
	}
}

static void test_data_encode_matches_wire_table(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(data_table); i++) {
		const struct data_case *c = &data_table[i];
		if (!c->canonical)
			continue;
		uint8_t buf[32];
		struct spop_writer w;
		spop_writer_init(&w, buf, sizeof(buf));
		spop_put_data(&w, &c->want);
		assert_false(w.overflow);
		expect_bytes(c->rule, buf, w.len, c->wire);
	}
}

static void test_data_encode_negative_int32_as_64bit_twos_complement(void **state)
{
	uint8_t buf[16];
	struct spop_writer w;
	struct spop_data d = {.type = SPOP_DATA_INT32, .u.sint = -1};
	spop_writer_init(&w, buf, sizeof(buf));
	spop_put_data(&w, &d);
	expect_bytes("INT32 -1", buf, w.len, (struct bytes)BYTES(0x02, MINUS_ONE_64));
}

static void test_data_encode_refuses_reserved_type(void **state)
{
	uint8_t buf[16];
	struct spop_writer w;
	struct spop_data d = {.type = (enum spop_data_type)10};
	spop_writer_init(&w, buf, sizeof(buf));
	spop_put_data(&w, &d);
	assert_true(w.overflow);
	assert_int_equal(w.len, 0);
}

static void test_data_constructors_build_the_types_they_name(void **state)
{
	struct spop_data d = spop_data_string("abc", 3);
	assert_int_equal(d.type, SPOP_DATA_STRING);
	expect_slice("spop_data_string", d.u.bytes, "abc");
	d = spop_data_sint(-7);
	assert_int_equal(d.type, SPOP_DATA_INT64);
	assert_int_equal(d.u.sint, -7);
	d = spop_data_uint32(16380);
	assert_int_equal(d.type, SPOP_DATA_UINT32);
	assert_int_equal(d.u.uint, 16380);
	d = spop_data_bool(true);
	assert_int_equal(d.type, SPOP_DATA_BOOL);
	assert_true(d.u.boolean);
}

struct to_int64_case {
	const char *rule;
	struct spop_data in;
	bool ok;
	int64_t want;
};

static const struct to_int64_case to_int64_table[] = {
	{"INT32 negative", {.type = SPOP_DATA_INT32, .u.sint = -5}, true, -5},
	{"UINT32 max", {.type = SPOP_DATA_UINT32, .u.uint = UINT32_MAX}, true, UINT32_MAX},
	{"INT64 min", {.type = SPOP_DATA_INT64, .u.sint = INT64_MIN}, true, INT64_MIN},
	{"UINT64 at INT64_MAX", {.type = SPOP_DATA_UINT64, .u.uint = INT64_MAX}, true, INT64_MAX},
	{"UINT64 above INT64_MAX does not fit",
	 {.type = SPOP_DATA_UINT64, .u.uint = (uint64_t)INT64_MAX + 1},
	 false, 0},
	{"NULL is not an integer", {.type = SPOP_DATA_NULL}, false, 0},
	{"BOOL is not an integer", {.type = SPOP_DATA_BOOL, .u.boolean = true}, false, 0},
	{"STRING is not an integer", STRING_DATA("200"), false, 0},
};

static void test_data_to_int64_accepts_every_integer_type_that_fits(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(to_int64_table); i++) {
		const struct to_int64_case *c = &to_int64_table[i];
		int64_t v = 12345;
		bool ok = spop_data_to_int64(&c->in, &v);
		if (ok != c->ok || (ok && v != c->want))
			fail_msg("%s: ok=%d value=%jd", c->rule, ok, (intmax_t)v);
	}
}

static void test_slice_eq_compares_length_and_bytes(void **state)
{
	const uint8_t buf[] = "statex";
	assert_true(spop_slice_eq((struct spop_slice){buf, 5}, "state"));
	assert_false(spop_slice_eq((struct spop_slice){buf, 6}, "state"));
	assert_false(spop_slice_eq((struct spop_slice){buf, 4}, "state"));
	assert_false(spop_slice_eq((struct spop_slice){buf, 5}, "stat3"));
	assert_true(spop_slice_eq((struct spop_slice){NULL, 0}, ""));
	assert_false(spop_slice_eq((struct spop_slice){NULL, 0}, "x"));
}

/* ---- key/value ---- */

static void test_kv_decode_reads_name_then_typed_value(void **state)
{
	const uint8_t buf[] = {0x06, 's', 't', 'a', 't', 'u', 's', 0x04, 0xc8, 0xff};
	struct spop_kv kv;
	assert_int_equal(spop_kv_decode(buf, sizeof(buf), &kv), 9);
	expect_slice("kv name", kv.name, "status");
	assert_int_equal(kv.value.type, SPOP_DATA_INT64);
	assert_int_equal(kv.value.u.sint, 200);
}

static void test_kv_truncated_is_incomplete(void **state)
{
	const uint8_t buf[] = {0x06, 's', 't', 'a', 't', 'u', 's', 0x04, 0xc8};
	struct spop_kv kv;
	for (size_t len = 0; len < sizeof(buf); len++)
		expect_result("kv prefix", spop_kv_decode(buf, len, &kv), SPOP_INCOMPLETE);
}

static void test_kv_with_reserved_value_type_is_invalid(void **state)
{
	const uint8_t buf[] = {0x01, 'k', 0x0a, 0x00};
	struct spop_kv kv;
	assert_int_equal(spop_kv_decode(buf, sizeof(buf), &kv), SPOP_INVALID);
}

static void test_put_kv_writes_name_then_typed_value(void **state)
{
	uint8_t buf[32];
	struct spop_writer w;
	struct spop_data v = spop_data_sint(200);
	spop_writer_init(&w, buf, sizeof(buf));
	spop_put_kv(&w, "status", &v);
	expect_bytes("put_kv", buf, w.len,
		     (struct bytes)BYTES(0x06, 's', 't', 'a', 't', 'u', 's', 0x04, 0xc8));
}

/* ---- messages ---- */

static void test_message_decode_haproxy_on_http_response(void **state)
{
	const uint8_t *p = haproxy_notify_response + SHORT_HEADER;
	size_t len = sizeof(haproxy_notify_response) - SHORT_HEADER;
	struct spop_message m;
	assert_int_equal(spop_message_decode(p, len, &m), (ssize_t)len);
	expect_slice("message name", m.name, "http-res");
	assert_int_equal(m.nb_args, 3);
	assert_int_equal(m.nb_stored, 3);
	expect_slice("arg 0", m.args[0].name, "be");
	assert_int_equal(m.args[0].value.type, SPOP_DATA_STRING);
	expect_slice("be", m.args[0].value.u.bytes, "be_app");
	expect_slice("arg 1", m.args[1].name, "srv");
	expect_slice("srv", m.args[1].value.u.bytes, "w1");
	expect_slice("arg 2", m.args[2].name, "status");
	assert_int_equal(m.args[2].value.type, SPOP_DATA_INT64);
	assert_int_equal(m.args[2].value.u.sint, 200);
}

static void test_message_decode_haproxy_request_types(void **state)
{
	const uint8_t *p = haproxy_notify_request + SHORT_HEADER;
	size_t len = sizeof(haproxy_notify_request) - SHORT_HEADER;
	struct spop_message m;
	assert_int_equal(spop_message_decode(p, len, &m), (ssize_t)len);
	expect_slice("message name", m.name, "http-req");
	assert_int_equal(m.nb_args, 6);
	assert_int_equal(m.nb_stored, 6);

	const struct {
		const char *name;
		struct spop_data value;
	} want[] = {
		{"cip", {.type = SPOP_DATA_IPV4, .u.ipv4 = {127, 0, 0, 1}}},
		{"path", STRING_DATA("/path/1")},
		{"ssl", {.type = SPOP_DATA_BOOL, .u.boolean = false}},
		{"port", {.type = SPOP_DATA_INT64, .u.sint = 35721}},
		{"miss", {.type = SPOP_DATA_NULL}}, /* a sample that does not exist */
		{"meth", STRING_DATA("GET")},
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		expect_slice("arg name", m.args[i].name, want[i].name);
		if (!data_equal(&m.args[i].value, &want[i].value))
			fail_msg("arg %s: value differs", want[i].name);
	}
}

static void test_message_with_no_args(void **state)
{
	const uint8_t buf[] = {0x04, 'p', 'i', 'n', 'g', 0x00};
	struct spop_message m;
	assert_int_equal(spop_message_decode(buf, sizeof(buf), &m), 6);
	expect_slice("name", m.name, "ping");
	assert_int_equal(m.nb_args, 0);
	assert_int_equal(m.nb_stored, 0);
}

/* A message named "many" with nb_args INT64 arguments a00, a01, ... */
static size_t build_message(uint8_t *buf, size_t cap, unsigned nb_args)
{
	struct spop_writer w;
	spop_writer_init(&w, buf, cap);
	spop_put_message_header(&w, "many", 4, nb_args);
	for (unsigned i = 0; i < nb_args; i++) {
		char name[4] = {'a', (char)('0' + i / 10), (char)('0' + i % 10), 0};
		struct spop_data v = spop_data_sint((int64_t)i);
		spop_put_kv(&w, name, &v);
	}
	assert_false(w.overflow);
	return w.len;
}

static void test_message_counts_all_args_but_stores_first_16(void **state)
{
	uint8_t buf[512];
	size_t len = build_message(buf, sizeof(buf), 20);
	struct spop_message m;
	assert_int_equal(spop_message_decode(buf, len, &m), (ssize_t)len);
	assert_int_equal(m.nb_args, 20);
	assert_int_equal(m.nb_stored, SPOP_MESSAGE_MAX_ARGS);
	expect_slice("last stored", m.args[15].name, "a15");
	assert_int_equal(m.args[15].value.u.sint, 15);
}

static void test_message_validates_args_beyond_the_stored_ones(void **state)
{
	uint8_t buf[512];
	size_t len = build_message(buf, sizeof(buf), 20);
	/* the last argument is "a19" INT64 19: make its type reserved */
	assert_int_equal(buf[len - 2], SPOP_DATA_INT64);
	buf[len - 2] = 0x0b;
	struct spop_message m;
	assert_int_equal(spop_message_decode(buf, len, &m), SPOP_INVALID);
}

static void test_message_truncated_is_incomplete(void **state)
{
	uint8_t buf[512];
	size_t len = build_message(buf, sizeof(buf), 18);
	struct spop_message m;
	for (size_t cut = 0; cut < len; cut++)
		expect_result("message prefix", spop_message_decode(buf, cut, &m), SPOP_INCOMPLETE);
}

static void test_put_message_header_writes_name_and_count(void **state)
{
	uint8_t buf[32];
	struct spop_writer w;
	spop_writer_init(&w, buf, sizeof(buf));
	spop_put_message_header(&w, "http-res", 8, 3);
	expect_bytes("message header", buf, w.len,
		     (struct bytes)BYTES(0x08, 'h', 't', 't', 'p', '-', 'r', 'e', 's', 0x03));
}

static void test_put_message_header_refuses_more_than_255_args(void **state)
{
	uint8_t buf[32];
	struct spop_writer w;
	spop_writer_init(&w, buf, sizeof(buf));
	spop_put_message_header(&w, "m", 1, 256);
	assert_true(w.overflow);
}

/* ---- actions ---- */

struct action_case {
	const char *rule;
	struct bytes wire;
	ssize_t result;
	enum spop_action_type type;
	enum spop_var_scope scope;
	const char *name;
	struct spop_data value;
};

static const struct action_case action_table[] = {
	{"set-var txn string",
	 BYTES(0x01, 0x03, 0x02, 0x05, 's', 't', 'a', 't', 'e', 0x08, 0x04, 'o', 'p', 'e', 'n'),
	 15, SPOP_ACTION_SET_VAR, SPOP_SCOPE_TXN, "state", STRING_DATA("open")},
	{"set-var txn uint32", BYTES(0x01, 0x03, 0x02, 0x05, 'f', 'a', 'i', 'l', 's', 0x03, 0x03),
	 11, SPOP_ACTION_SET_VAR, SPOP_SCOPE_TXN, "fails", {.type = SPOP_DATA_UINT32, .u.uint = 3}},
	{"set-var txn bool", BYTES(0x01, 0x03, 0x02, 0x04, 's', 'e', 'e', 'n', 0x11),
	 9, SPOP_ACTION_SET_VAR, SPOP_SCOPE_TXN, "seen", {.type = SPOP_DATA_BOOL, .u.boolean = true}},
	{"set-var process scope", BYTES(0x01, 0x03, 0x00, 0x01, 'p', 0x00),
	 6, SPOP_ACTION_SET_VAR, SPOP_SCOPE_PROCESS, "p", {.type = SPOP_DATA_NULL}},
	{"unset-var has no value", BYTES(0x02, 0x02, 0x03, 0x04, 's', 'e', 'e', 'n'),
	 8, SPOP_ACTION_UNSET_VAR, SPOP_SCOPE_REQ, "seen", {.type = SPOP_DATA_NULL}},
	{"unset-var res scope", BYTES(0x02, 0x02, 0x04, 0x01, 'r'),
	 5, SPOP_ACTION_UNSET_VAR, SPOP_SCOPE_RES, "r", {.type = SPOP_DATA_NULL}},
	{.rule = "scope 5 does not exist",
	 .wire = BYTES(0x01, 0x03, 0x05, 0x01, 'x', 0x00),
	 .result = SPOP_INVALID},
	{.rule = "scope 255 does not exist",
	 .wire = BYTES(0x02, 0x02, 0xff, 0x01, 'x'),
	 .result = SPOP_INVALID},
	{.rule = "set-var needs exactly 3 args",
	 .wire = BYTES(0x01, 0x02, 0x02, 0x01, 'x', 0x00),
	 .result = SPOP_INVALID},
	{.rule = "set-var with 4 args",
	 .wire = BYTES(0x01, 0x04, 0x02, 0x01, 'x', 0x00, 0x00),
	 .result = SPOP_INVALID},
	{.rule = "unset-var needs exactly 2 args",
	 .wire = BYTES(0x02, 0x03, 0x02, 0x01, 'x', 0x00),
	 .result = SPOP_INVALID},
	{.rule = "action type 0 is unknown",
	 .wire = BYTES(0x00, 0x03, 0x02, 0x01, 'x', 0x00),
	 .result = SPOP_INVALID},
	{.rule = "action type 3 is unknown",
	 .wire = BYTES(0x03, 0x02, 0x02, 0x01, 'x'),
	 .result = SPOP_INVALID},
	{.rule = "set-var with reserved value type",
	 .wire = BYTES(0x01, 0x03, 0x02, 0x01, 'x', 0x0c),
	 .result = SPOP_INVALID},
};

static void test_action_decode_matches_wire_table(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(action_table); i++) {
		const struct action_case *c = &action_table[i];
		struct spop_action a;
		ssize_t n = spop_action_decode(c->wire.ptr, c->wire.len, &a);
		expect_result(c->rule, n, c->result);
		if (n < 0)
			continue;
		if (a.type != c->type || a.scope != c->scope)
			fail_msg("%s: type %d scope %d", c->rule, a.type, a.scope);
		expect_slice(c->rule, a.name, c->name);
		if (!data_equal(&a.value, &c->value))
			fail_msg("%s: value differs", c->rule);
	}
}

static void test_action_truncated_is_incomplete(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(action_table); i++) {
		const struct action_case *c = &action_table[i];
		if (c->result < 0)
			continue;
		for (size_t len = 0; len < (size_t)c->result; len++) {
			struct spop_action a;
			expect_result(c->rule, spop_action_decode(c->wire.ptr, len, &a), SPOP_INCOMPLETE);
		}
	}
}

static void test_action_encode_matches_wire_table(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(action_table); i++) {
		const struct action_case *c = &action_table[i];
		if (c->result < 0)
			continue;
		uint8_t buf[64];
		struct spop_writer w;
		spop_writer_init(&w, buf, sizeof(buf));
		if (c->type == SPOP_ACTION_SET_VAR)
			spop_put_set_var(&w, c->scope, c->name, strlen(c->name), &c->value);
		else
			spop_put_unset_var(&w, c->scope, c->name, strlen(c->name));
		assert_false(w.overflow);
		expect_bytes(c->rule, buf, w.len, c->wire);
	}
}

static void test_action_round_trips_in_every_scope(void **state)
{
	for (int scope = SPOP_SCOPE_PROCESS; scope <= SPOP_SCOPE_RES; scope++) {
		uint8_t buf[64];
		struct spop_writer w;
		struct spop_data v = spop_data_sint(-42);
		struct spop_action a;
		spop_writer_init(&w, buf, sizeof(buf));
		spop_put_set_var(&w, (enum spop_var_scope)scope, "v", 1, &v);
		size_t set_len = w.len;
		spop_put_unset_var(&w, (enum spop_var_scope)scope, "v", 1);

		assert_int_equal(spop_action_decode(buf, w.len, &a), (ssize_t)set_len);
		assert_int_equal(a.type, SPOP_ACTION_SET_VAR);
		assert_int_equal(a.scope, scope);
		assert_int_equal(a.value.u.sint, -42);
		assert_int_equal(spop_action_decode(buf + set_len, w.len - set_len, &a),
				 (ssize_t)(w.len - set_len));
		assert_int_equal(a.type, SPOP_ACTION_UNSET_VAR);
		assert_int_equal(a.scope, scope);
	}
}

/* ---- frame decoding ---- */

static void test_frame_decode_haproxy_notify(void **state)
{
	struct spop_frame f;
	struct spop_error err = {0};
	ssize_t n = spop_frame_decode(haproxy_notify_response, sizeof(haproxy_notify_response), 16380,
				      &f, &err);
	assert_int_equal(n, sizeof(haproxy_notify_response));
	assert_int_equal(f.type, SPOP_FRAME_NOTIFY);
	assert_int_equal(f.flags, SPOP_FLAG_FIN);
	assert_int_equal(f.stream_id, 0);
	assert_int_equal(f.frame_id, 2);
	assert_ptr_equal(f.payload.ptr, haproxy_notify_response + SHORT_HEADER);
	assert_int_equal(f.payload.len, sizeof(haproxy_notify_response) - SHORT_HEADER);
}

static void test_frame_decode_multibyte_stream_id(void **state)
{
	struct spop_frame f;
	struct spop_error err = {0};
	assert_int_equal(spop_frame_decode(reference_ack, sizeof(reference_ack), 16380, &f, &err),
			 sizeof(reference_ack));
	assert_int_equal(f.type, SPOP_FRAME_ACK);
	assert_int_equal(f.flags, SPOP_FLAG_FIN);
	assert_int_equal(f.stream_id, 19301);
	assert_int_equal(f.frame_id, 1);
	assert_int_equal(f.payload.len, sizeof(reference_ack) - 13);
}

static void test_frame_decode_consumes_one_frame_at_a_time(void **state)
{
	uint8_t stream[sizeof(haproxy_notify_request) + sizeof(haproxy_disconnect_normal)];
	memcpy(stream, haproxy_notify_request, sizeof(haproxy_notify_request));
	memcpy(stream + sizeof(haproxy_notify_request), haproxy_disconnect_normal,
	       sizeof(haproxy_disconnect_normal));
	struct spop_frame f;
	struct spop_error err = {0};

	ssize_t n = spop_frame_decode(stream, sizeof(stream), 16380, &f, &err);
	assert_int_equal(n, sizeof(haproxy_notify_request));
	assert_int_equal(f.type, SPOP_FRAME_NOTIFY);
	assert_int_equal(f.payload.len, sizeof(haproxy_notify_request) - SHORT_HEADER);

	n = spop_frame_decode(stream + n, sizeof(stream) - (size_t)n, 16380, &f, &err);
	assert_int_equal(n, sizeof(haproxy_disconnect_normal));
	assert_int_equal(f.type, SPOP_FRAME_HAPROXY_DISCONNECT);
}

static void test_frame_below_four_bytes_is_incomplete(void **state)
{
	struct spop_frame f;
	struct spop_error err = {0};
	for (size_t len = 0; len < SPOP_FRAME_LENGTH_SIZE; len++)
		expect_result("prefix", spop_frame_decode(reference_ack, len, 16380, &f, &err),
			      SPOP_INCOMPLETE);
}

static void test_frame_cut_mid_frame_is_incomplete(void **state)
{
	struct spop_frame f;
	struct spop_error err = {0};
	for (size_t len = SPOP_FRAME_LENGTH_SIZE; len < sizeof(reference_ack); len++)
		expect_result("mid-frame", spop_frame_decode(reference_ack, len, 16380, &f, &err),
			      SPOP_INCOMPLETE);
}

struct frame_refusal_case {
	const char *rule;
	struct bytes wire;
	uint32_t max_frame_size;
	enum spop_status status;
};

/* Only the 4 prefix bytes are given where the rule says "from the prefix":
 * the length is judged before anyone waits for (or sizes a buffer after) it. */
static const struct frame_refusal_case frame_refusal_table[] = {
	{"4 GiB prefix is too big, from the prefix alone", BYTES(0xff, 0xff, 0xff, 0xff), 16380,
	 SPOP_STATUS_TOO_BIG},
	{"max-frame-size + 1 is too big, from the prefix alone", BYTES(0x00, 0x00, 0x3f, 0xfd), 16380,
	 SPOP_STATUS_TOO_BIG},
	{"too big against a negotiated 256", BYTES(0x00, 0x00, 0x01, 0x01), 256, SPOP_STATUS_TOO_BIG},
	{"length 0 is shorter than a header", BYTES(0x00, 0x00, 0x00, 0x00), 16380,
	 SPOP_STATUS_INVALID},
	{"length 6 is shorter than a header", BYTES(0x00, 0x00, 0x00, 0x06), 16380,
	 SPOP_STATUS_INVALID},
	{"stream-id running past the frame end",
	 BYTES(0x00, 0x00, 0x00, 0x07, 0x03, 0x00, 0x00, 0x00, 0x01, 0xf0, 0xf0), 16380,
	 SPOP_STATUS_INVALID},
	{"stream-id not completed by the bytes after the frame",
	 BYTES(0x00, 0x00, 0x00, 0x07, 0x03, 0x00, 0x00, 0x00, 0x01, 0xf0, 0xf0, 0x00, 0x00), 16380,
	 SPOP_STATUS_INVALID},
	{"stream-id of an 11-byte run",
	 BYTES(0x00, 0x00, 0x00, 0x11, 0x03, 0x00, 0x00, 0x00, 0x01, 0xf0, 0x80, 0x80, 0x80, 0x80,
	       0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00),
	 16380, SPOP_STATUS_INVALID},
	{"stream-id above UINT64_MAX",
	 BYTES(0x00, 0x00, 0x00, 0x10, 0x03, 0x00, 0x00, 0x00, 0x01, 0xff, 0xf0, 0xfe, 0xfe, 0xfe,
	       0xfe, 0xfe, 0xfe, 0xfe, 0x0f, 0x01),
	 16380, SPOP_STATUS_INVALID},
	{"frame-id missing",
	 BYTES(0x00, 0x00, 0x00, 0x07, 0x03, 0x00, 0x00, 0x00, 0x01, 0xf0, 0x00), 16380,
	 SPOP_STATUS_INVALID},
};

static void test_frame_refusals_carry_the_disconnect_status(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(frame_refusal_table); i++) {
		const struct frame_refusal_case *c = &frame_refusal_table[i];
		struct spop_frame f;
		struct spop_error err = {.status = SPOP_STATUS_NORMAL, .reason = NULL};
		expect_result(c->rule, spop_frame_decode(c->wire.ptr, c->wire.len, c->max_frame_size, &f, &err),
			      SPOP_INVALID);
		if (err.status != c->status)
			fail_msg("%s: status %d, expected %d", c->rule, err.status, c->status);
		if (err.reason == NULL || err.reason[0] == '\0')
			fail_msg("%s: no reason given", c->rule);
	}
}

static void test_frame_of_exactly_max_frame_size_is_accepted(void **state)
{
	/* prefix 256, then a header and 249 payload bytes */
	uint8_t buf[4 + 256] = {0x00, 0x00, 0x01, 0x00, SPOP_FRAME_NOTIFY, 0x00, 0x00, 0x00, 0x01,
				0x05, 0x01};
	struct spop_frame f;
	struct spop_error err = {0};
	/* with only the prefix there, a legal length means "wait for more" */
	assert_int_equal(spop_frame_decode(buf, 4, 256, &f, &err), SPOP_INCOMPLETE);
	assert_int_equal(spop_frame_decode(buf, sizeof(buf), 256, &f, &err), sizeof(buf));
	assert_int_equal(f.stream_id, 5);
	assert_int_equal(f.payload.len, 249);
}

static void test_frame_header_only_has_empty_payload(void **state)
{
	const uint8_t buf[] = {0x00, 0x00, 0x00, 0x07, SPOP_FRAME_NOTIFY, 0x00, 0x00, 0x00, 0x01,
			       0x07, 0x01};
	struct spop_frame f;
	struct spop_error err = {0};
	assert_int_equal(spop_frame_decode(buf, sizeof(buf), 16380, &f, &err), sizeof(buf));
	assert_int_equal(f.payload.len, 0);
}

/* ---- frame encoding and the writer ---- */

static size_t put_reference_ack(struct spop_writer *w, bool *ok)
{
	struct spop_data open = spop_data_string("open", 4);
	struct spop_data fails = spop_data_uint32(3);
	struct spop_data seen = spop_data_bool(true);
	size_t mark = spop_frame_begin(w, SPOP_FRAME_ACK, SPOP_FLAG_FIN, 19301, 1);
	spop_put_set_var(w, SPOP_SCOPE_TXN, "state", 5, &open);
	spop_put_set_var(w, SPOP_SCOPE_TXN, "fails", 5, &fails);
	spop_put_set_var(w, SPOP_SCOPE_TXN, "seen", 4, &seen);
	*ok = spop_frame_end(w, mark, 16380);
	return mark;
}

static void test_frame_encode_reproduces_ack_haproxy_accepted(void **state)
{
	uint8_t buf[128];
	struct spop_writer w;
	bool ok;
	spop_writer_init(&w, buf, sizeof(buf));
	assert_int_equal(put_reference_ack(&w, &ok), 0);
	assert_true(ok);
	expect_bytes("reference ACK", buf, w.len, (struct bytes){reference_ack, sizeof(reference_ack)});
}

static void test_frame_end_patches_each_frame_length(void **state)
{
	uint8_t buf[256];
	struct spop_writer w;
	bool ok;
	spop_writer_init(&w, buf, sizeof(buf));
	put_reference_ack(&w, &ok);
	assert_true(ok);
	size_t mark = spop_frame_begin(&w, SPOP_FRAME_ACK, SPOP_FLAG_FIN, 300, 2);
	spop_put_unset_var(&w, SPOP_SCOPE_SESSION, "x", 1);
	assert_int_equal(mark, sizeof(reference_ack));
	assert_true(spop_frame_end(&w, mark, 16380));

	struct spop_frame f;
	struct spop_error err = {0};
	size_t off = 0;
	ssize_t n = spop_frame_decode(buf, w.len, 16380, &f, &err);
	assert_int_equal(n, sizeof(reference_ack));
	off += (size_t)n;
	n = spop_frame_decode(buf + off, w.len - off, 16380, &f, &err);
	assert_int_equal(off + (size_t)n, w.len);
	assert_int_equal(f.stream_id, 300);
	assert_int_equal(f.frame_id, 2);
	expect_bytes("second frame", buf + mark, 4, (struct bytes)BYTES(0x00, 0x00, 0x00, 0x0d));
}

static void test_frame_overflow_rolls_back_and_clears_flag(void **state)
{
	uint8_t buf[sizeof(reference_ack) + 20];
	struct spop_writer w;
	bool ok;
	spop_writer_init(&w, buf, sizeof(buf));
	put_reference_ack(&w, &ok);
	assert_true(ok);

	/* A second frame that does not fit: the first must survive intact. */
	size_t mark = spop_frame_begin(&w, SPOP_FRAME_ACK, SPOP_FLAG_FIN, 1, 1);
	spop_put_string(&w, "a value longer than what is left", 32);
	assert_true(w.overflow);
	assert_false(spop_frame_end(&w, mark, 16380));
	assert_false(w.overflow);
	assert_int_equal(w.len, sizeof(reference_ack));
	expect_bytes("first frame", buf, w.len, (struct bytes){reference_ack, sizeof(reference_ack)});

	/* ...and the writer is usable again for a frame that fits. */
	mark = spop_frame_begin(&w, SPOP_FRAME_ACK, SPOP_FLAG_FIN, 1, 1);
	spop_put_unset_var(&w, SPOP_SCOPE_TXN, "x", 1);
	assert_true(spop_frame_end(&w, mark, 16380));
	assert_int_equal(w.len, sizeof(reference_ack) + 16);
}

static void test_frame_header_overflow_rolls_back(void **state)
{
	uint8_t buf[8];
	struct spop_writer w;
	spop_writer_init(&w, buf, sizeof(buf));
	size_t mark = spop_frame_begin(&w, SPOP_FRAME_ACK, SPOP_FLAG_FIN, 0, 0);
	assert_int_equal(mark, 0);
	assert_true(w.overflow);
	assert_false(spop_frame_end(&w, mark, 16380));
	assert_false(w.overflow);
	assert_int_equal(w.len, 0);
}

static void test_frame_above_max_frame_size_rolls_back(void **state)
{
	uint8_t buf[1024];
	uint8_t blob[300];
	struct spop_writer w;
	memset(blob, 'b', sizeof(blob));
	spop_writer_init(&w, buf, sizeof(buf));

	/* header 7 + string 2 + 247 = 256: exactly max-frame-size fits */
	size_t mark = spop_frame_begin(&w, SPOP_FRAME_ACK, SPOP_FLAG_FIN, 1, 1);
	spop_put_string(&w, blob, 247);
	assert_true(spop_frame_end(&w, mark, 256));
	assert_int_equal(w.len, 4 + 256);

	/* one byte more does not, although the buffer has room */
	mark = spop_frame_begin(&w, SPOP_FRAME_ACK, SPOP_FLAG_FIN, 1, 1);
	spop_put_string(&w, blob, 248);
	assert_false(w.overflow);
	assert_false(spop_frame_end(&w, mark, 256));
	assert_false(w.overflow);
	assert_int_equal(w.len, 4 + 256);
}

static void test_writer_overflow_writes_nothing_and_sticks(void **state)
{
	uint8_t buf[8];
	struct spop_writer w;
	memset(buf, 0xee, sizeof(buf));
	spop_writer_init(&w, buf, 4);
	spop_put_varint(&w, 1);
	spop_put_varint(&w, UINT32_MAX); /* 5 bytes into 3 left */
	assert_true(w.overflow);
	assert_int_equal(w.len, 1);
	spop_put_varint(&w, 2); /* would fit, but the writer has failed */
	assert_int_equal(w.len, 1);
	expect_bytes("after overflow", buf, sizeof(buf),
		     (struct bytes)BYTES(0x01, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee));
}

static void test_writer_fills_exactly_to_capacity(void **state)
{
	uint8_t buf[6];
	struct spop_writer w;
	spop_writer_init(&w, buf, sizeof(buf));
	assert_int_equal(w.len, 0);
	assert_int_equal(w.cap, sizeof(buf));
	assert_false(w.overflow);
	spop_put_string(&w, "hello", 5);
	assert_false(w.overflow);
	assert_int_equal(w.len, 6);
	spop_put_varint(&w, 0);
	assert_true(w.overflow);
	assert_int_equal(w.len, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint_decode_matches_spec_table),
		cmocka_unit_test(test_varint_encode_matches_spec_table),
		cmocka_unit_test(test_varint_decode_reads_only_its_own_bytes),
		cmocka_unit_test(test_varint_truncated_is_incomplete),
		cmocka_unit_test(test_varint_rejects_eleven_byte_run),
		cmocka_unit_test(test_varint_rejects_values_above_uint64_max),
		cmocka_unit_test(test_varint_round_trips_and_sizes_follow_spec_ranges),
		cmocka_unit_test(test_put_varint_appends_the_encoding),
		cmocka_unit_test(test_string_decode_reads_length_then_bytes),
		cmocka_unit_test(test_string_decode_long_length_varint),
		cmocka_unit_test(test_string_truncated_is_incomplete),
		cmocka_unit_test(test_string_with_malformed_length_is_invalid),
		cmocka_unit_test(test_put_string_writes_length_then_bytes),
		cmocka_unit_test(test_data_decode_matches_wire_table),
		cmocka_unit_test(test_data_truncated_is_incomplete),
		cmocka_unit_test(test_data_rejects_reserved_types_10_to_15),
		cmocka_unit_test(test_data_encode_matches_wire_table),
		cmocka_unit_test(test_data_encode_negative_int32_as_64bit_twos_complement),
		cmocka_unit_test(test_data_encode_refuses_reserved_type),
		cmocka_unit_test(test_data_constructors_build_the_types_they_name),
		cmocka_unit_test(test_data_to_int64_accepts_every_integer_type_that_fits),
		cmocka_unit_test(test_slice_eq_compares_length_and_bytes),
		cmocka_unit_test(test_kv_decode_reads_name_then_typed_value),
		cmocka_unit_test(test_kv_truncated_is_incomplete),
		cmocka_unit_test(test_kv_with_reserved_value_type_is_invalid),
		cmocka_unit_test(test_put_kv_writes_name_then_typed_value),
		cmocka_unit_test(test_message_decode_haproxy_on_http_response),
		cmocka_unit_test(test_message_decode_haproxy_request_types),
		cmocka_unit_test(test_message_with_no_args),
		cmocka_unit_test(test_message_counts_all_args_but_stores_first_16),
		cmocka_unit_test(test_message_validates_args_beyond_the_stored_ones),
		cmocka_unit_test(test_message_truncated_is_incomplete),
		cmocka_unit_test(test_put_message_header_writes_name_and_count),
		cmocka_unit_test(test_put_message_header_refuses_more_than_255_args),
		cmocka_unit_test(test_action_decode_matches_wire_table),
		cmocka_unit_test(test_action_truncated_is_incomplete),
		cmocka_unit_test(test_action_encode_matches_wire_table),
		cmocka_unit_test(test_action_round_trips_in_every_scope),
		cmocka_unit_test(test_frame_decode_haproxy_notify),
		cmocka_unit_test(test_frame_decode_multibyte_stream_id),
		cmocka_unit_test(test_frame_decode_consumes_one_frame_at_a_time),
		cmocka_unit_test(test_frame_below_four_bytes_is_incomplete),
		cmocka_unit_test(test_frame_cut_mid_frame_is_incomplete),
		cmocka_unit_test(test_frame_refusals_carry_the_disconnect_status),
		cmocka_unit_test(test_frame_of_exactly_max_frame_size_is_accepted),
		cmocka_unit_test(test_frame_header_only_has_empty_payload),
		cmocka_unit_test(test_frame_encode_reproduces_ack_haproxy_accepted),
		cmocka_unit_test(test_frame_end_patches_each_frame_length),
		cmocka_unit_test(test_frame_overflow_rolls_back_and_clears_flag),
		cmocka_unit_test(test_frame_header_overflow_rolls_back),
		cmocka_unit_test(test_frame_above_max_frame_size_rolls_back),
		cmocka_unit_test(test_writer_overflow_writes_nothing_and_sticks),
		cmocka_unit_test(test_writer_fills_exactly_to_capacity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
