/*
 * test_snapshot.c - the state snapshot's format: what is written reads
 * back the same; every prefix, a flipped byte, foreign and newer files and
 * sizes that lie are each refused with their status and a place, never
 * read outside the buffer; restoring a breaker, its backoff and its
 * failure-rate window (and an older snapshot without them); the policy
 * fingerprint; the size limits hold what is written, and a file or a
 * breaker over them is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/breaker.h"
#include "state/snapshot.h"
#include "breaker_allows.h"

#define NB(a) (sizeof(a) / sizeof((a)[0]))

static struct snapshot_breaker sample(unsigned i)
{
	struct snapshot_breaker b;
	memset(&b, 0, sizeof(b));
	snprintf(b.backend, sizeof(b.backend), "workers");
	snprintf(b.server, sizeof(b.server), "w%u", i);
	b.state = (enum breaker_state)(i % 3);
	b.failure_streak = 3 + i;
	b.since_wall_ms = 1764500000000LL + i;
	b.trips = i;
	/* Even ones carry the backoff and the window; odd ones are what an
	 * agent before them wrote, and must read back without them. */
	if (i % 2 == 0) {
		b.has_history = true;
		b.trips_in_a_row = 1 + i;
		b.window_failures = UINT64_C(0xa5a5a5a5a5a5a5a5) >> i;
		b.window_volume = 60 + i % 5;
		b.last_trip_rule = (enum breaker_trip_rule)(i % BREAKER_NB_TRIP_RULES);
	}
	b.policy_fingerprint = UINT64_C(0xfedcba9876543210) + i;
	/* The worker it judged: a later, optional key; some carry none. */
	if (i % 3 != 1)
		snprintf(b.endpoint, sizeof(b.endpoint), i % 3 ? "[::1]:80%02u" : "10.0.0.%u:8080", i);
	if (i % 2) {
		b.nb_haproxy = 2;
		snprintf(b.haproxy[0].address, sizeof(b.haproxy[0].address), "unix:/run/a.sock");
		b.haproxy[0].mem = (struct enforce_memory){.drained_by_us = true};
		snprintf(b.haproxy[1].address, sizeof(b.haproxy[1].address), "127.0.0.1:9999");
		b.haproxy[1].mem = (struct enforce_memory){
			.maxconn_by_us = true, .own_maxconn_known = true, .own_maxconn = 50};
	} else {
		b.has_agent_check = true;
		b.agent_check = (struct enforce_memory){.drained_by_us = true};
	}
	return b;
}

/* A snapshot of n sample breakers; the caller frees it. */
static msgpack_sbuffer *make(unsigned n)
{
	msgpack_sbuffer *buf = msgpack_sbuffer_new();
	struct snapshot_header h = {.format = SNAPSHOT_FORMAT, .written_at_ms = 1764500001234LL,
				    .count = n};
	snprintf(h.agent_version, sizeof(h.agent_version), "9.8.7");
	assert_true(snapshot_encode_header(buf, &h));
	for (unsigned i = 0; i < n; i++) {
		struct snapshot_breaker b = sample(i);
		assert_true(snapshot_encode_breaker(buf, &b));
	}
	return buf;
}

struct collected {
	struct snapshot_breaker items[8];
	unsigned n;
};

static bool collect(void *ctx, const struct snapshot_breaker *b)
{
	struct collected *c = ctx;
	if (c->n < NB(c->items))
		c->items[c->n] = *b;
	c->n++;
	return true;
}

static void test_round_trip(void **state)
{
	msgpack_sbuffer *buf = make(5);
	struct snapshot_header h;
	struct collected got = {0};
	char err[256] = "";

	assert_int_equal(snapshot_decode(buf->data, buf->size, &h, collect, &got, err, sizeof(err)),
			 SNAPSHOT_OK);
	assert_int_equal(h.format, SNAPSHOT_FORMAT);
	assert_string_equal(h.agent_version, "9.8.7");
	assert_int_equal(h.written_at_ms, 1764500001234LL);
	assert_int_equal(h.count, 5);
	assert_int_equal(got.n, 5);
	for (unsigned i = 0; i < 5; i++) {
		struct snapshot_breaker want = sample(i);
		assert_memory_equal(&got.items[i], &want, sizeof(want));
	}
	msgpack_sbuffer_free(buf);
}

/* Cut anywhere, a snapshot is never read as whole: truncated (or corrupt,
 * when the cut leaves bytes that are no object), and every place says
 * where. */
static void test_every_prefix_is_refused(void **state)
{
	msgpack_sbuffer *buf = make(3);
	struct snapshot_header h;
	char err[256];

	for (size_t len = 0; len < buf->size; len++) {
		err[0] = '\0';
		enum snapshot_status st = snapshot_decode(buf->data, len, &h, NULL, NULL, err,
							  sizeof(err));
		if (st == SNAPSHOT_OK)
			fail_msg("a prefix of %zu of %zu bytes was accepted", len, buf->size);
		assert_true(len == 0 ? st == SNAPSHOT_EMPTY
				     : st == SNAPSHOT_TRUNCATED || st == SNAPSHOT_FOREIGN ||
					       st == SNAPSHOT_CORRUPT);
		assert_true(err[0] != '\0');
	}
	/* One cut at a breaker's boundary says how many were there. */
	struct snapshot_header full;
	struct collected got = {0};
	assert_int_equal(snapshot_decode(buf->data, buf->size, &full, collect, &got, err,
					 sizeof(err)),
			 SNAPSHOT_OK);
	msgpack_sbuffer_free(buf);
	buf = make(1);
	size_t one = buf->size;
	msgpack_sbuffer_free(buf);
	buf = make(3);
	/* make(3) up to the end of its first breaker, announcing 3. */
	assert_int_equal(snapshot_decode(buf->data, one, &h, NULL, NULL, err, sizeof(err)),
			 SNAPSHOT_TRUNCATED);
	assert_non_null(strstr(err, "ends after 1 of 3 breakers"));
	msgpack_sbuffer_free(buf);
}

/* Every single flipped byte: refused or read, but never a crash or a read
 * outside the buffer (ASan watches the latter in the sanitizer build). */
static void test_flipped_bytes(void **state)
{
	msgpack_sbuffer *buf = make(2);
	char copy[4096];
	struct snapshot_header h;
	char err[256];

	assert_true(buf->size <= sizeof(copy));
	for (size_t i = 0; i < buf->size; i++) {
		for (unsigned bit = 0; bit < 8; bit++) {
			memcpy(copy, buf->data, buf->size);
			copy[i] ^= (char)(1u << bit);
			struct collected got = {0};
			snapshot_decode(copy, buf->size, &h, collect, &got, err, sizeof(err));
		}
	}
	msgpack_sbuffer_free(buf);
}

static void test_foreign_and_newer(void **state)
{
	struct snapshot_header h;
	char err[256];

	/* Not msgpack at all: a text file. */
	const char text[] = "threshold = 3\n";
	assert_int_equal(snapshot_decode(text, strlen(text), &h, NULL, NULL, err, sizeof(err)),
			 SNAPSHOT_FOREIGN);
	/* msgpack, but not ours. */
	msgpack_sbuffer *buf = msgpack_sbuffer_new();
	msgpack_packer pk;
	msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_str(&pk, 5);
	msgpack_pack_str_body(&pk, "hello", 5);
	msgpack_pack_int(&pk, 1);
	assert_int_equal(snapshot_decode(buf->data, buf->size, &h, NULL, NULL, err, sizeof(err)),
			 SNAPSHOT_FOREIGN);
	assert_non_null(strstr(err, "header at byte 0"));
	msgpack_sbuffer_free(buf);
	/* Ours, from a later agent. */
	buf = msgpack_sbuffer_new();
	struct snapshot_header later = {.format = SNAPSHOT_FORMAT + 1, .count = 0};
	assert_true(snapshot_encode_header(buf, &later));
	assert_int_equal(snapshot_decode(buf->data, buf->size, &h, NULL, NULL, err, sizeof(err)),
			 SNAPSHOT_NEWER);
	assert_non_null(strstr(err, "format 2 (this agent reads 1)"));
	msgpack_sbuffer_free(buf);
}

/* A container announcing four billion elements in five bytes is refused
 * before anything is allocated for it. */
static void test_sizes_that_lie(void **state)
{
	struct snapshot_header h;
	char err[256];
	const char huge_array[] = "\xdd\xff\xff\xff\xff\x01";
	const char huge_str[] = "\xdb\xff\xff\xff\xf0";
	const char bad_type[] = "\xc1";

	assert_int_equal(snapshot_decode(huge_array, sizeof(huge_array) - 1, &h, NULL, NULL, err,
					 sizeof(err)),
			 SNAPSHOT_FOREIGN);
	assert_int_not_equal(snapshot_decode(huge_str, sizeof(huge_str) - 1, &h, NULL, NULL, err,
					     sizeof(err)),
			     SNAPSHOT_OK);
	assert_int_not_equal(snapshot_decode(bad_type, 1, &h, NULL, NULL, err, sizeof(err)),
			     SNAPSHOT_OK);
	/* Deeper than any snapshot nests. */
	char deep[64];
	memset(deep, 0x91, sizeof(deep)); /* arrays of one array of one ... */
	assert_int_not_equal(snapshot_decode(deep, sizeof(deep), &h, NULL, NULL, err, sizeof(err)),
			     SNAPSHOT_OK);
	/* A header that announces more breakers than a table can hold. */
	msgpack_sbuffer *buf = msgpack_sbuffer_new();
	struct snapshot_header many = {.format = SNAPSHOT_FORMAT, .count = UINT32_MAX};
	assert_true(snapshot_encode_header(buf, &many));
	assert_int_equal(snapshot_decode(buf->data, buf->size, &h, NULL, NULL, err, sizeof(err)),
			 SNAPSHOT_CORRUPT);
	msgpack_sbuffer_free(buf);
}

/* A breaker with a hostile name is refused: names reach Runtime API
 * commands. Trailing bytes after the last breaker too. */
static void test_bad_fields(void **state)
{
	msgpack_sbuffer *buf = msgpack_sbuffer_new();
	struct snapshot_header hd = {.format = SNAPSHOT_FORMAT, .count = 1};
	struct snapshot_breaker b = sample(1);
	struct snapshot_header h;
	char err[256];

	snprintf(b.server, sizeof(b.server), "w1; shutdown sessions");
	assert_true(snapshot_encode_header(buf, &hd));
	assert_true(snapshot_encode_breaker(buf, &b));
	assert_int_equal(snapshot_decode(buf->data, buf->size, &h, NULL, NULL, err, sizeof(err)),
			 SNAPSHOT_CORRUPT);
	assert_non_null(strstr(err, "breaker 1 at byte"));
	msgpack_sbuffer_free(buf);

	/* The backoff fields out of range. */
	static const struct {
		unsigned volume;
		unsigned rule;
	} bad_history[] = {{BREAKER_MAX_WINDOW + 1, 0}, {0, BREAKER_NB_TRIP_RULES}};
	for (size_t i = 0; i < NB(bad_history); i++) {
		buf = msgpack_sbuffer_new();
		b = sample(0);
		b.window_volume = bad_history[i].volume;
		b.last_trip_rule = (enum breaker_trip_rule)bad_history[i].rule;
		assert_true(snapshot_encode_header(buf, &hd));
		assert_true(snapshot_encode_breaker(buf, &b));
		assert_int_equal(snapshot_decode(buf->data, buf->size, &h, NULL, NULL, err,
						 sizeof(err)),
				 SNAPSHOT_CORRUPT);
		assert_non_null(strstr(err, "trips_in_a_row without"));
		msgpack_sbuffer_free(buf);
	}

	buf = make(1);
	msgpack_sbuffer_write(buf, "\x00", 1);
	assert_int_equal(snapshot_decode(buf->data, buf->size, &h, NULL, NULL, err, sizeof(err)),
			 SNAPSHOT_CORRUPT);
	assert_non_null(strstr(err, "after the last breaker"));
	msgpack_sbuffer_free(buf);
}

static void test_restore_and_fingerprint(void **state)
{
	struct breaker_policy p, q;
	struct breaker b;

	breaker_policy_defaults(&p);
	q = p;
	assert_true(snapshot_policy_fingerprint(&p) == snapshot_policy_fingerprint(&q));
	q.threshold = 4;
	assert_true(snapshot_policy_fingerprint(&p) != snapshot_policy_fingerprint(&q));

	breaker_init(&b, &p, 100000);
	assert_true(breaker_restore(&b, BREAKER_OPEN, 3, 1000, 7));
	assert_int_equal(b.state, BREAKER_OPEN);
	assert_int_equal(b.trips, 7);
	/* Its cool-down ran out while the agent was away: the next tick. */
	assert_int_equal(breaker_next_deadline(&b), 1000 + p.cooldown_ms);
	struct breaker_event ev = breaker_tick(&b, 100000);
	assert_string_equal(breaker_transition_name(&ev), "open->half_open");
	assert_false(breaker_restore(&b, (enum breaker_state)7, 0, 0, 0));
	assert_int_equal(b.state, BREAKER_HALF_OPEN);
	/* Trips count each opening. */
	breaker_record_failure(&b, 100001);
	assert_int_equal(b.trips, 8);

	/* The backoff and failure-rate fields are part of a policy; left at
	 * their defaults they leave the fingerprint as it was before them. */
	struct breaker_policy r = p;
	r.max_cooldown_ms++;
	assert_true(snapshot_policy_fingerprint(&p) != snapshot_policy_fingerprint(&r));
	r = p;
	r.healthy_for_ms++;
	assert_true(snapshot_policy_fingerprint(&p) != snapshot_policy_fingerprint(&r));
	r = p;
	r.failure_rate_threshold = 50;
	assert_true(snapshot_policy_fingerprint(&p) != snapshot_policy_fingerprint(&r));
	r = p;
	r.window = 10;
	assert_true(snapshot_policy_fingerprint(&p) != snapshot_policy_fingerprint(&r));
	r = p;
	r.minimum_volume = 10;
	assert_true(snapshot_policy_fingerprint(&p) != snapshot_policy_fingerprint(&r));
}

/* What the agent writes, the next one restores: a breaker backed off and
 * with failures in its window comes back with both, and a breaker from a
 * snapshot without them gets the open time it had then. */
static void test_history_survives_a_round_trip(void **state)
{
	struct breaker_policy p;
	struct breaker live, back;
	breaker_policy_defaults(&p);
	p.cooldown_ms = 1000;
	p.failure_rate_threshold = 50;
	breaker_init(&live, &p, 5000);
	/* Three trips in a row: a trip, two failed probes. */
	for (unsigned n = 0; n < 100 && breaker_would_allow(&live); n++)
		breaker_record_failure(&live, 5000);
	for (int probe = 0; probe < 2; probe++) {
		uint64_t now = breaker_next_deadline(&live);
		breaker_tick(&live, now);
		breaker_record_failure(&live, now);
	}
	assert_int_equal(live.trips_in_a_row, 3);

	struct snapshot_breaker sb;
	memset(&sb, 0, sizeof(sb));
	snprintf(sb.backend, sizeof(sb.backend), "be");
	snprintf(sb.server, sizeof(sb.server), "w1");
	sb.state = live.state;
	sb.failure_streak = live.failure_streak;
	sb.trips = live.trips;
	sb.has_history = true;
	sb.trips_in_a_row = live.trips_in_a_row;
	sb.window_failures = live.window_failures;
	sb.window_volume = live.window_volume;
	sb.last_trip_rule = (enum breaker_trip_rule)live.last_trip_rule;
	msgpack_sbuffer *buf = msgpack_sbuffer_new();
	struct snapshot_header hd = {.format = SNAPSHOT_FORMAT, .count = 1};
	assert_true(snapshot_encode_header(buf, &hd));
	assert_true(snapshot_encode_breaker(buf, &sb));
	struct snapshot_header h;
	struct collected got = {0};
	char err[256];
	assert_int_equal(snapshot_decode(buf->data, buf->size, &h, collect, &got, err, sizeof(err)),
			 SNAPSHOT_OK);
	msgpack_sbuffer_free(buf);
	const struct snapshot_breaker *r = &got.items[0];
	assert_true(r->has_history);

	breaker_init(&back, &p, 9000);
	assert_true(breaker_restore(&back, r->state, r->failure_streak, live.state_since_ms,
				    r->trips));
	breaker_restore_history(&back, r->trips_in_a_row, r->window_failures, r->window_volume,
				r->last_trip_rule);
	assert_int_equal(back.trips_in_a_row, 3);
	assert_int_equal(breaker_open_duration_ms(&back), breaker_open_duration_ms(&live));
	assert_int_equal(breaker_next_deadline(&back), breaker_next_deadline(&live));
	assert_int_equal(breaker_window_volume(&back), breaker_window_volume(&live));
	assert_int_equal(breaker_window_failures(&back), breaker_window_failures(&live));
	assert_int_equal(back.last_trip_rule, BREAKER_TRIP_PROBE_FAILED);
}

/* A breaker at its largest: the longest names, endpoint and sockets, the
 * most HAProxys, every number at its widest msgpack encoding. */
static struct snapshot_breaker largest(void)
{
	struct snapshot_breaker b;
	memset(&b, 0, sizeof(b));
	memset(b.backend, 'b', BREAKER_NAME_MAX);
	memset(b.server, 's', BREAKER_NAME_MAX);
	memset(b.endpoint, '1', ENDPOINT_TEXT_MAX - 1);
	b.state = BREAKER_HALF_OPEN;
	b.failure_streak = UINT32_MAX;
	b.since_wall_ms = INT64_MIN;
	b.trips = UINT32_MAX;
	b.has_history = true;
	b.trips_in_a_row = UINT32_MAX;
	b.window_failures = UINT64_MAX;
	b.window_volume = BREAKER_MAX_WINDOW;
	b.last_trip_rule = (enum breaker_trip_rule)(BREAKER_NB_TRIP_RULES - 1);
	b.policy_fingerprint = UINT64_MAX;
	struct enforce_memory all = {.drained_by_us = true, .maxconn_by_us = true,
				     .own_maxconn_known = true, .own_maxconn = UINT32_MAX};
	b.nb_haproxy = ENFORCE_MAX_HAPROXY;
	for (unsigned i = 0; i < ENFORCE_MAX_HAPROXY; i++) {
		memset(b.haproxy[i].address, 'a', SNAPSHOT_ADDRESS_MAX);
		b.haproxy[i].mem = all;
	}
	b.has_agent_check = true;
	b.agent_check = all;
	return b;
}

/* The limits of snapshot-t.h hold what the agent writes: the largest
 * header and breaker in half of theirs (the other half is for keys a
 * later agent adds), a breaker of two HAProxys in the share of
 * SNAPSHOT_MAX_BYTES a full table leaves it. */
static void test_limits_hold_what_is_written(void **state)
{
	msgpack_sbuffer *buf = msgpack_sbuffer_new();
	struct snapshot_header hd = {.format = SNAPSHOT_FORMAT, .written_at_ms = INT64_MIN,
				     .count = BREAKER_TABLE_MAX_ENTRIES};
	memset(hd.agent_version, '9', SNAPSHOT_VERSION_MAX);
	assert_true(snapshot_encode_header(buf, &hd));
	size_t header = buf->size;
	struct snapshot_breaker big = largest();
	assert_true(snapshot_encode_breaker(buf, &big));
	size_t breaker = buf->size - header;
	struct snapshot_breaker two = sample(1);
	assert_true(snapshot_encode_breaker(buf, &two));
	size_t typical = buf->size - header - breaker;
	printf("header %zu bytes, largest breaker %zu, a breaker of two HAProxys %zu\n", header,
	       breaker, typical);
	assert_true(header <= SNAPSHOT_HEADER_MAX_BYTES / 2);
	assert_true(breaker <= SNAPSHOT_BREAKER_MAX_BYTES / 2);
	assert_true(typical <= SNAPSHOT_MAX_BYTES / BREAKER_TABLE_MAX_ENTRIES);
	msgpack_sbuffer_free(buf);

	/* The largest reads back whole. */
	buf = msgpack_sbuffer_new();
	hd.count = 1;
	assert_true(snapshot_encode_header(buf, &hd));
	assert_true(snapshot_encode_breaker(buf, &big));
	struct snapshot_header h;
	struct collected got = {0};
	char err[256];
	assert_int_equal(snapshot_decode(buf->data, buf->size, &h, collect, &got, err, sizeof(err)),
			 SNAPSHOT_OK);
	assert_memory_equal(&got.items[0], &big, sizeof(big));
	msgpack_sbuffer_free(buf);

	assert_int_equal(snapshot_max_bytes(0), SNAPSHOT_HEADER_MAX_BYTES);
	assert_int_equal(snapshot_max_bytes(1), SNAPSHOT_HEADER_MAX_BYTES + SNAPSHOT_BREAKER_MAX_BYTES);
	assert_int_equal(snapshot_max_bytes(BREAKER_TABLE_MAX_ENTRIES), SNAPSHOT_MAX_BYTES);
	assert_int_equal(snapshot_max_bytes(UINT64_MAX), SNAPSHOT_MAX_BYTES);
}

/* A file longer than its header's count allows is refused from its first
 * bytes (snapshot_check_size, before the file layer reads the rest) and by
 * the decoding; so is one breaker longer than a breaker can be, before
 * msgpack-c reads it. Each says the size and the limit. */
static void test_oversized_is_refused(void **state)
{
	struct snapshot_header h;
	char err[256];

	/* One breaker announced, 8000 bytes after it. */
	msgpack_sbuffer *buf = make(1);
	char zeros[8000] = {0};
	msgpack_sbuffer_write(buf, zeros, sizeof(zeros));
	char want[160];
	snprintf(want, sizeof(want), "%zu bytes, over the limit of %u for the 1 breaker(s) its "
		 "header announces", buf->size, SNAPSHOT_HEADER_MAX_BYTES + SNAPSHOT_BREAKER_MAX_BYTES);
	assert_int_equal(snapshot_check_size(buf->data, SNAPSHOT_HEADER_MAX_BYTES, buf->size, err,
					     sizeof(err)),
			 SNAPSHOT_TOO_BIG);
	assert_string_equal(err, want);
	assert_int_equal(snapshot_decode(buf->data, buf->size, &h, NULL, NULL, err, sizeof(err)),
			 SNAPSHOT_TOO_BIG);
	assert_non_null(strstr(err, want));
	/* Within its count, or no header to judge by: the decoding says. */
	assert_int_equal(snapshot_check_size(buf->data, SNAPSHOT_HEADER_MAX_BYTES,
					     snapshot_max_bytes(1), err, sizeof(err)),
			 SNAPSHOT_OK);
	assert_int_equal(snapshot_check_size(zeros, sizeof(zeros), UINT64_MAX, err, sizeof(err)),
			 SNAPSHOT_OK);
	msgpack_sbuffer_free(buf);

	/* Two announced, the first one 5000 bytes long (a key no agent writes). */
	buf = msgpack_sbuffer_new();
	struct snapshot_header hd = {.format = SNAPSHOT_FORMAT, .count = 2};
	assert_true(snapshot_encode_header(buf, &hd));
	size_t at = buf->size;
	msgpack_packer pk;
	msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_str(&pk, 7);
	msgpack_pack_str_body(&pk, "padding", 7);
	char filler[5000];
	memset(filler, 'x', sizeof(filler));
	msgpack_pack_str(&pk, sizeof(filler));
	msgpack_pack_str_body(&pk, filler, sizeof(filler));
	struct snapshot_breaker b = sample(0);
	assert_true(snapshot_encode_breaker(buf, &b));
	assert_true(buf->size <= snapshot_max_bytes(2));
	assert_int_equal(snapshot_decode(buf->data, buf->size, &h, NULL, NULL, err, sizeof(err)),
			 SNAPSHOT_TOO_BIG);
	snprintf(want, sizeof(want), "breaker 1 at byte %zu: longer than the limit of %u bytes", at,
		 SNAPSHOT_BREAKER_MAX_BYTES);
	assert_string_equal(err, want);
	msgpack_sbuffer_free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_every_prefix_is_refused),
		cmocka_unit_test(test_flipped_bytes),
		cmocka_unit_test(test_foreign_and_newer),
		cmocka_unit_test(test_sizes_that_lie),
		cmocka_unit_test(test_bad_fields),
		cmocka_unit_test(test_restore_and_fingerprint),
		cmocka_unit_test(test_history_survives_a_round_trip),
		cmocka_unit_test(test_limits_hold_what_is_written),
		cmocka_unit_test(test_oversized_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
