/*
 * snapshot.h - the state snapshot's format, encoded and decoded with
 * msgpack-c (snapshot_codec.c). Pure: no I/O, no clock; the file is
 * snapshot_file.c's, the timing state_store.c's.
 *
 * A snapshot is a sequence of msgpack objects:
 *   1. a header map: magic "spoa-breaker/state", format, agent (version),
 *      written_at (wall clock, ms), count (breakers that follow);
 *   2. `count` breaker maps: be, srv, state (0 closed, 1 open, 2
 *      half_open), streak, since (wall clock, ms), trips, policy (a
 *      fingerprint), optionally trips_in_a_row, window_failures,
 *      window_volume and trip_rule (all four or none), haproxy (an array of {socket, drained, limited,
 *      own_known, own}), agent_check ({drained, limited, own_known, own}),
 *      optionally endpoint (the worker "ADDRESS:PORT" its history is about).
 * Keys a reader does not know are skipped, so a later agent may add some
 * without a new format number.
 */
#ifndef SPOA_SNAPSHOT_H
#define SPOA_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "state/snapshot-t.h"

/* Append the header, then each breaker, to out. False when msgpack-c
 * could not grow the buffer (out is then incomplete: drop it). */
bool snapshot_encode_header(msgpack_sbuffer *out, const struct snapshot_header *h);
bool snapshot_encode_breaker(msgpack_sbuffer *out, const struct snapshot_breaker *b);

/* Told each breaker read; false stops the decoding (SNAPSHOT_OK is still
 * returned: the caller chose to stop). */
typedef bool (*snapshot_breaker_fn)(void *ctx, const struct snapshot_breaker *b);

/*
 * Reads a snapshot from buf[0..len) (not NUL-terminated; any bytes):
 * fills *h, calls fn for each breaker in order, and returns SNAPSHOT_OK;
 * otherwise the status and, in err, what was wrong and where ("breaker 3
 * at byte 1204: state is 7 (expected 0, 1 or 2)"). Breakers already given
 * to fn before a problem stay given: the caller decides whether to keep
 * them (the agent keeps none: a snapshot is used whole or not at all).
 * Container sizes are checked against the bytes left before msgpack-c
 * allocates anything for them, so a few hostile bytes cannot ask for
 * gigabytes; a file longer than its count allows (snapshot_check_size), a
 * header over SNAPSHOT_HEADER_MAX_BYTES or a breaker over
 * SNAPSHOT_BREAKER_MAX_BYTES is SNAPSHOT_TOO_BIG before msgpack-c reads
 * it, so the decoding costs a bounded memory whatever buf holds. Never
 * reads outside buf.
 */
enum snapshot_status snapshot_decode(const char *buf, size_t len, struct snapshot_header *h,
				     snapshot_breaker_fn fn, void *ctx, char *err, size_t err_size);

/* The most bytes a snapshot of `breakers` breakers can take: its header
 * and each breaker at SNAPSHOT_BREAKER_MAX_BYTES, and never more than
 * SNAPSHOT_MAX_BYTES. For max_breakers, the limit of a table's file. */
static inline uint64_t snapshot_max_bytes(uint64_t breakers)
{
	uint64_t max = SNAPSHOT_HEADER_MAX_BYTES + breakers * SNAPSHOT_BREAKER_MAX_BYTES;
	return breakers > SNAPSHOT_MAX_BYTES / SNAPSHOT_BREAKER_MAX_BYTES || max > SNAPSHOT_MAX_BYTES
		       ? SNAPSHOT_MAX_BYTES
		       : max;
}

/*
 * Whether a file of file_size bytes whose first bytes are head[0..head_len)
 * is within snapshot_max_bytes() of the count its header announces: the
 * check to make before reading the rest (SNAPSHOT_HEADER_MAX_BYTES of head
 * are enough). SNAPSHOT_TOO_BIG with err set ("1048700 bytes, over the
 * limit of 4608 for the 1 breaker(s) its header announces"); SNAPSHOT_OK
 * when it is within, or when head holds no header of ours (snapshot_decode
 * then says what is wrong with it).
 */
enum snapshot_status snapshot_check_size(const char *head, size_t head_len, uint64_t file_size,
					 char *err, size_t err_size);

/* "ok", "empty", "too big", "truncated", "corrupt", "foreign", "newer". */
const char *snapshot_status_name(enum snapshot_status status);

/* A fingerprint of the rules a breaker follows: equal policies, equal
 * fingerprints (FNV-1a over the fields). */
uint64_t snapshot_policy_fingerprint(const struct breaker_policy *p);

#endif /* SPOA_SNAPSHOT_H */
