/*
 * fuzz_snapshot.c - libFuzzer target: the input is a state snapshot file.
 *
 * Whatever the bytes, snapshot_decode() must return without reading
 * outside them (ASan watches), and every breaker it accepts must hold what
 * the format allows: valid HAProxy names, a state that exists, at most
 * ENFORCE_MAX_HAPROXY sockets. A snapshot it accepts whole is encoded
 * again with msgpack-c and must read back to the same breakers: what the
 * agent writes, it can read.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "state/snapshot.h"
#include "util/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEEP 64 /* breakers compared after the round trip */

struct kept {
	struct snapshot_breaker b[KEEP];
	unsigned n;
	unsigned seen;
};

static bool check_and_keep(void *ctx, const struct snapshot_breaker *b)
{
	struct kept *k = ctx;
	if (!name_is_valid(b->backend, strlen(b->backend)) ||
	    !name_is_valid(b->server, strlen(b->server)) || (unsigned)b->state > BREAKER_HALF_OPEN ||
	    b->nb_haproxy > ENFORCE_MAX_HAPROXY || b->window_volume > BREAKER_MAX_WINDOW ||
	    (unsigned)b->last_trip_rule >= BREAKER_NB_TRIP_RULES)
		__builtin_trap();
	for (unsigned i = 0; i < b->nb_haproxy; i++)
		if (strnlen(b->haproxy[i].address, sizeof(b->haproxy[i].address)) ==
		    sizeof(b->haproxy[i].address))
			__builtin_trap();
	if (k->n < KEEP)
		k->b[k->n++] = *b;
	k->seen++;
	return true;
}

static struct kept first, second;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot_header h, h2;
	char err[256];

	memset(&first, 0, sizeof(first));
	if (snapshot_decode((const char *)data, size, &h, check_and_keep, &first, err, sizeof(err)) !=
	    SNAPSHOT_OK)
		return 0;
	if (first.seen != h.count || first.n > KEEP || h.count > KEEP)
		return 0; /* large ones are checked above, not round-tripped */

	msgpack_sbuffer *buf = msgpack_sbuffer_new();
	if (!buf || !snapshot_encode_header(buf, &h))
		__builtin_trap();
	for (unsigned i = 0; i < first.n; i++)
		if (!snapshot_encode_breaker(buf, &first.b[i]))
			__builtin_trap();
	memset(&second, 0, sizeof(second));
	if (snapshot_decode(buf->data, buf->size, &h2, check_and_keep, &second, err, sizeof(err)) !=
		    SNAPSHOT_OK ||
	    second.n != first.n || h2.count != h.count ||
	    memcmp(second.b, first.b, first.n * sizeof(first.b[0])) != 0)
		__builtin_trap();
	msgpack_sbuffer_free(buf);
	return 0;
}
