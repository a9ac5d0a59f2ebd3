/*
 * test_snapshot_bounds.c - what decoding a hostile snapshot costs in
 * memory. msgpack-c spends a msgpack_object (24 bytes) for each element a
 * container announces, so a small file of one-byte elements could cost
 * tens of times its size. Each case below is a small file that announces
 * large counts; the decoding must refuse it with its status while the
 * memory it holds at any moment stays under DECODE_BUDGET, whatever the
 * file's size.
 *
 * The memory is counted by replacing malloc and its kin in this binary
 * (glibc lets a program do so, and calls the originals __libc_*). Not in
 * a sanitizer build, whose runtime replaces them itself: there the cases
 * still check the statuses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "state/snapshot.h"

#if defined(__SANITIZE_ADDRESS__)
#define COUNTING 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNTING 0
#endif
#endif
#ifndef COUNTING
#define COUNTING 1
#endif

/* One breaker's worth of msgpack-c objects: 24 bytes for each byte of a
 * breaker at its limit (the worst case: one-byte elements), up to twice
 * that once msgpack-c's zone rounds the request up to a power of two of
 * its 8 KiB chunk, and the first chunk. What decoding may hold at once. */
#define DECODE_BUDGET (64 * SNAPSHOT_BREAKER_MAX_BYTES)

static long long live_bytes, peak_bytes;

#if COUNTING
#include <malloc.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void __libc_free(void *p);

static void counted(void *p)
{
	if (!p)
		return;
	live_bytes += (long long)malloc_usable_size(p);
	if (live_bytes > peak_bytes)
		peak_bytes = live_bytes;
}

void *malloc(size_t size)
{
	void *p = __libc_malloc(size);
	counted(p);
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p = __libc_calloc(n, size);
	counted(p);
	return p;
}

void *realloc(void *p, size_t size)
{
	long long before = p ? (long long)malloc_usable_size(p) : 0;
	void *q = __libc_realloc(p, size);
	if (q || size == 0)
		live_bytes -= before;
	counted(q);
	return q;
}

void free(void *p)
{
	if (p)
		live_bytes -= (long long)malloc_usable_size(p);
	__libc_free(p);
}
#endif

/* A header announcing count breakers, then body; the caller frees it. */
static msgpack_sbuffer *hostile(uint32_t count, const char *body, size_t body_len)
{
	msgpack_sbuffer *buf = msgpack_sbuffer_new();
	struct snapshot_header h = {.format = SNAPSHOT_FORMAT, .count = count};
	assert_true(snapshot_encode_header(buf, &h));
	assert_int_equal(msgpack_sbuffer_write(buf, body, body_len), 0);
	return buf;
}

/* Decodes buf and returns its status; *peak is the most memory the
 * decoding held at once beyond what was held before it. */
static enum snapshot_status decode_counted(const msgpack_sbuffer *buf, long long *peak,
					   char *err, size_t err_size)
{
	struct snapshot_header h;
	long long before = live_bytes;
	peak_bytes = live_bytes;
	enum snapshot_status st = snapshot_decode(buf->data, buf->size, &h, NULL, NULL, err,
						  err_size);
	*peak = peak_bytes - before;
	printf("%zu bytes: %s (%s), decoding held %lld bytes at most\n", buf->size,
	       snapshot_status_name(st), err, *peak);
	return st;
}

static void assert_within_budget(long long peak)
{
	if (COUNTING && peak > DECODE_BUDGET)
		fail_msg("decoding held %lld bytes, more than %d", peak, DECODE_BUDGET);
}

/* One container of `count` one-byte elements (0xc0, nil): an array, or a
 * map of count / 2 pairs. */
static char *nils(uint8_t kind, uint16_t count, size_t *len)
{
	*len = 3 + (size_t)count;
	char *body = malloc(*len);
	assert_non_null(body);
	body[0] = (char)kind; /* 0xdc array 16, 0xde map 16 */
	uint16_t announced = kind == 0xde ? (uint16_t)(count / 2) : count;
	body[1] = (char)(announced >> 8);
	body[2] = (char)(announced & 0xff);
	memset(body + 3, 0xc0, count);
	return body;
}

/* 64 KiB announcing 65535 elements where a breaker should be, in a file
 * whose header allows its length (16 breakers): every element is there,
 * so only the breaker's own limit stops msgpack-c from spending 1.5 MiB. */
static void test_a_breaker_of_many_elements(void **state)
{
	static const uint8_t kinds[] = {0xdc, 0xde};
	char err[256];
	long long peak;

	for (size_t k = 0; k < sizeof(kinds); k++) {
		size_t len;
		char *body = nils(kinds[k], UINT16_MAX - 1, &len);
		msgpack_sbuffer *buf = hostile(16, body, len);
		free(body);
		assert_true(buf->size <= snapshot_max_bytes(16));
		assert_int_equal(decode_counted(buf, &peak, err, sizeof(err)), SNAPSHOT_TOO_BIG);
		assert_non_null(strstr(err, "breaker 1 at byte"));
		assert_non_null(strstr(err, "longer than the limit of"));
		assert_within_budget(peak);
		msgpack_sbuffer_free(buf);
	}
}

/* The worst a breaker within its limit can be: as many one-byte elements
 * as the limit holds. It reaches msgpack-c, and is what DECODE_BUDGET is
 * for. */
static void test_the_worst_breaker_within_the_limit(void **state)
{
	char err[256];
	long long peak;
	size_t len;
	char *body = nils(0xdc, SNAPSHOT_BREAKER_MAX_BYTES - 3, &len);
	msgpack_sbuffer *buf = hostile(1, body, len);
	free(body);
	assert_int_equal(decode_counted(buf, &peak, err, sizeof(err)), SNAPSHOT_CORRUPT);
	assert_non_null(strstr(err, "not a map"));
	assert_within_budget(peak);
	msgpack_sbuffer_free(buf);
}

/* A header announcing a full table in a file of a few bytes, and a file
 * far longer than its header's one breaker allows: refused before any
 * breaker is read. */
static void test_counts_that_do_not_match_the_file(void **state)
{
	char err[256];
	long long peak;

	msgpack_sbuffer *buf = hostile(BREAKER_TABLE_MAX_ENTRIES, "\x80", 1);
	assert_int_equal(decode_counted(buf, &peak, err, sizeof(err)), SNAPSHOT_CORRUPT);
	assert_within_budget(peak);
	msgpack_sbuffer_free(buf);

	size_t len;
	char *body = nils(0xdc, UINT16_MAX - 1, &len);
	buf = hostile(1, body, len);
	free(body);
	assert_int_equal(decode_counted(buf, &peak, err, sizeof(err)), SNAPSHOT_TOO_BIG);
	assert_non_null(strstr(err, "over the limit of 4608 for the 1 breaker(s)"));
	assert_within_budget(peak);
	msgpack_sbuffer_free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_breaker_of_many_elements),
		cmocka_unit_test(test_the_worst_breaker_within_the_limit),
		cmocka_unit_test(test_counts_that_do_not_match_the_file),
	};
	if (!COUNTING)
		printf("(a sanitizer build: the memory is not counted)\n");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
