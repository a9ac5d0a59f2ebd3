/*
 * snapshot_codec.c - the state snapshot to and from msgpack (see
 * snapshot.h), through msgpack-c.
 *
 * Reading trusts nothing: each top-level object is first skimmed (its
 * container sizes checked against the bytes left, its depth bounded, its
 * length within the limit of a header or a breaker) before msgpack-c sees
 * it, because msgpack-c's C API allocates what a container header
 * announces, tens of bytes for each byte of the object; then every field
 * is checked for its type and range.
 */
#include <stdio.h>
#include <string.h>

#include "state/snapshot.h"
#include "util/errmsg.h"
#include "util/names.h"

/* ---- encoding ---- */

static bool pack_str(msgpack_packer *pk, const char *s)
{
	size_t len = strlen(s);
	return msgpack_pack_str(pk, len) == 0 && msgpack_pack_str_body(pk, s, len) == 0;
}

static bool pack_key(msgpack_packer *pk, const char *key)
{
	return pack_str(pk, key);
}

static bool pack_memory(msgpack_packer *pk, const struct enforce_memory *m, const char *address)
{
	bool ok = msgpack_pack_map(pk, address ? 5 : 4) == 0;
	if (address)
		ok = ok && pack_key(pk, "socket") && pack_str(pk, address);
	ok = ok && pack_key(pk, "drained") &&
	     (m->drained_by_us ? msgpack_pack_true(pk) : msgpack_pack_false(pk)) == 0;
	ok = ok && pack_key(pk, "limited") &&
	     (m->maxconn_by_us ? msgpack_pack_true(pk) : msgpack_pack_false(pk)) == 0;
	ok = ok && pack_key(pk, "own_known") &&
	     (m->own_maxconn_known ? msgpack_pack_true(pk) : msgpack_pack_false(pk)) == 0;
	ok = ok && pack_key(pk, "own") && msgpack_pack_uint32(pk, m->own_maxconn) == 0;
	return ok;
}

bool snapshot_encode_header(msgpack_sbuffer *out, const struct snapshot_header *h)
{
	msgpack_packer pk;
	msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
	return msgpack_pack_map(&pk, 5) == 0 && pack_key(&pk, "magic") &&
	       pack_str(&pk, SNAPSHOT_MAGIC) && pack_key(&pk, "format") &&
	       msgpack_pack_uint32(&pk, h->format) == 0 && pack_key(&pk, "agent") &&
	       pack_str(&pk, h->agent_version) && pack_key(&pk, "written_at") &&
	       msgpack_pack_int64(&pk, h->written_at_ms) == 0 && pack_key(&pk, "count") &&
	       msgpack_pack_uint32(&pk, h->count) == 0;
}

bool snapshot_encode_breaker(msgpack_sbuffer *out, const struct snapshot_breaker *b)
{
	msgpack_packer pk;
	msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
	unsigned keys = 8 + (b->has_agent_check ? 1 : 0) + (b->has_history ? 4 : 0) +
			(b->endpoint[0] ? 1 : 0);
	bool ok = msgpack_pack_map(&pk, keys) == 0 && pack_key(&pk, "be") &&
		  pack_str(&pk, b->backend) && pack_key(&pk, "srv") && pack_str(&pk, b->server) &&
		  /* Skipped by a reader that does not know it: no new format. */
		  (!b->endpoint[0] || (pack_key(&pk, "endpoint") && pack_str(&pk, b->endpoint))) &&
		  pack_key(&pk, "state") && msgpack_pack_uint8(&pk, (uint8_t)b->state) == 0 &&
		  pack_key(&pk, "streak") && msgpack_pack_uint32(&pk, b->failure_streak) == 0 &&
		  pack_key(&pk, "since") && msgpack_pack_int64(&pk, b->since_wall_ms) == 0 &&
		  pack_key(&pk, "trips") && msgpack_pack_uint32(&pk, b->trips) == 0 &&
		  (!b->has_history ||
		   (pack_key(&pk, "trips_in_a_row") &&
		    msgpack_pack_uint32(&pk, b->trips_in_a_row) == 0 &&
		    pack_key(&pk, "window_failures") &&
		    msgpack_pack_uint64(&pk, b->window_failures) == 0 &&
		    pack_key(&pk, "window_volume") &&
		    msgpack_pack_uint32(&pk, b->window_volume) == 0 &&
		    pack_key(&pk, "trip_rule") &&
		    msgpack_pack_uint8(&pk, (uint8_t)b->last_trip_rule) == 0)) &&
		  pack_key(&pk, "policy") && msgpack_pack_uint64(&pk, b->policy_fingerprint) == 0 &&
		  pack_key(&pk, "haproxy") && msgpack_pack_array(&pk, b->nb_haproxy) == 0;
	for (unsigned i = 0; ok && i < b->nb_haproxy; i++)
		ok = pack_memory(&pk, &b->haproxy[i].mem, b->haproxy[i].address);
	if (ok && b->has_agent_check)
		ok = pack_key(&pk, "agent_check") && pack_memory(&pk, &b->agent_check, NULL);
	return ok;
}

/* ---- skimming: sizes checked before msgpack-c allocates ---- */

#define SKIM_MAX_DEPTH 8

enum skim_result { SKIM_OK, SKIM_SHORT, SKIM_BAD };

static uint64_t read_be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

/* How one object's head reads: its own bytes (head and payload), and how
 * many objects follow inside it (containers). */
struct head {
	size_t bytes;      /* head plus payload */
	uint64_t children; /* contained objects (a map's pairs count twice) */
};

static enum skim_result read_head(const uint8_t *p, size_t left, struct head *h)
{
	uint8_t t = p[0];
	static const uint8_t fixed[] = {
		/* 0xc0..0xdf: payload bytes after the type byte, or 0xff */
		[0x00] = 0,    /* c0 nil */
		[0x01] = 0xff, /* c1 never used */
		[0x02] = 0,    [0x03] = 0,           /* bool */
		[0x0a] = 4,    [0x0b] = 8,           /* float32, float64 */
		[0x0c] = 1,    [0x0d] = 2, [0x0e] = 4, [0x0f] = 8, /* uint */
		[0x10] = 1,    [0x11] = 2, [0x12] = 4, [0x13] = 8, /* int */
		[0x14] = 2,    [0x15] = 3, [0x16] = 5, [0x17] = 9, [0x18] = 17, /* fixext + type */
	};
	h->children = 0;
	if (t <= 0x7f || t >= 0xe0) { /* fixints */
		h->bytes = 1;
		return SKIM_OK;
	}
	if (t <= 0x8f || (t >= 0x90 && t <= 0x9f)) { /* fixmap, fixarray */
		h->children = (uint64_t)(t & 0x0f) * (t <= 0x8f ? 2 : 1);
		h->bytes = 1;
		return SKIM_OK;
	}
	if (t <= 0xbf) { /* fixstr */
		h->bytes = 1 + (size_t)(t & 0x1f);
		return SKIM_OK;
	}
	unsigned width;
	switch (t) {
	case 0xc4: case 0xd9: width = 1; goto sized; /* bin8, str8 */
	case 0xc5: case 0xda: width = 2; goto sized;
	case 0xc6: case 0xdb: width = 4; goto sized;
	case 0xc7: width = 1; goto ext;
	case 0xc8: width = 2; goto ext;
	case 0xc9: width = 4; goto ext;
	case 0xdc: case 0xde: width = 2; goto container;
	case 0xdd: case 0xdf: width = 4; goto container;
	default:
		if (fixed[t - 0xc0] == 0xff)
			return SKIM_BAD;
		h->bytes = 1 + fixed[t - 0xc0];
		return SKIM_OK;
	}
sized:
	if (left < 1 + width)
		return SKIM_SHORT;
	h->bytes = 1 + width + read_be(p + 1, width);
	return SKIM_OK;
ext:
	if (left < 1 + width)
		return SKIM_SHORT;
	h->bytes = 1 + width + 1 + read_be(p + 1, width);
	return SKIM_OK;
container:
	if (left < 1 + width)
		return SKIM_SHORT;
	h->children = read_be(p + 1, width) * (t == 0xde || t == 0xdf ? 2 : 1);
	h->bytes = 1 + width;
	return SKIM_OK;
}

/* Walks one object at buf[*off..len), moving *off past it. Every object
 * takes at least one byte, so a container announcing more children than
 * bytes are left is a lie, whatever the file's length. */
static enum skim_result skim(const uint8_t *buf, size_t len, size_t *off, int depth)
{
	struct head h;

	if (*off >= len)
		return SKIM_SHORT;
	if (depth > SKIM_MAX_DEPTH)
		return SKIM_BAD;
	enum skim_result r = read_head(buf + *off, len - *off, &h);
	if (r != SKIM_OK)
		return r;
	if (h.bytes > len - *off)
		return SKIM_SHORT;
	*off += h.bytes;
	if (h.children > len - *off) /* a cut file, or a lie about the size */
		return h.children < (uint64_t)SNAPSHOT_MAX_BYTES ? SKIM_SHORT : SKIM_BAD;
	for (uint64_t i = 0; i < h.children; i++) {
		r = skim(buf, len, off, depth + 1);
		if (r != SKIM_OK)
			return r;
	}
	return SKIM_OK;
}

/* ---- decoding ---- */

struct reader {
	const char *buf;
	size_t len;
	size_t off;
	char *err;
	size_t err_size;
	char where[64]; /* "header at byte 0", "breaker 3 at byte 120" */
};

static enum snapshot_status fail(struct reader *r, enum snapshot_status st, const char *what)
{
	errmsg_set(r->err, r->err_size, "%s: %s", r->where, what);
	return st;
}

static bool key_is(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);
	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
	       memcmp(k->via.str.ptr, name, n) == 0;
}

static const msgpack_object *find(const msgpack_object *map, const char *name)
{
	for (uint32_t i = 0; i < map->via.map.size; i++)
		if (key_is(&map->via.map.ptr[i].key, name))
			return &map->via.map.ptr[i].val;
	return NULL;
}

static bool get_uint(const msgpack_object *map, const char *name, uint64_t max, uint64_t *out)
{
	const msgpack_object *v = find(map, name);
	if (!v || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 > max)
		return false;
	*out = v->via.u64;
	return true;
}

static bool get_int(const msgpack_object *map, const char *name, int64_t *out)
{
	const msgpack_object *v = find(map, name);
	if (v && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= INT64_MAX) {
		*out = (int64_t)v->via.u64;
		return true;
	}
	if (v && v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*out = v->via.i64;
		return true;
	}
	return false;
}

/* A string field into out (size bytes, NUL-terminated); false if missing,
 * not a string, too long, or holding a NUL. */
static bool get_str(const msgpack_object *map, const char *name, char *out, size_t size)
{
	const msgpack_object *v = find(map, name);
	if (!v || v->type != MSGPACK_OBJECT_STR || v->via.str.size >= size ||
	    memchr(v->via.str.ptr, '\0', v->via.str.size))
		return false;
	memcpy(out, v->via.str.ptr, v->via.str.size);
	out[v->via.str.size] = '\0';
	return true;
}

static bool get_bool(const msgpack_object *map, const char *name, bool *out)
{
	const msgpack_object *v = find(map, name);
	if (!v || v->type != MSGPACK_OBJECT_BOOLEAN)
		return false;
	*out = v->via.boolean;
	return true;
}

static bool get_memory(const msgpack_object *map, struct enforce_memory *m)
{
	uint64_t own;
	if (map->type != MSGPACK_OBJECT_MAP || !get_bool(map, "drained", &m->drained_by_us) ||
	    !get_bool(map, "limited", &m->maxconn_by_us) ||
	    !get_bool(map, "own_known", &m->own_maxconn_known) ||
	    !get_uint(map, "own", UINT32_MAX, &own))
		return false;
	m->own_maxconn = (uint32_t)own;
	return true;
}

/* Skims then unpacks the next top-level object into *u, refusing it unread
 * when it is longer than limit bytes: what msgpack-c allocates for it is
 * then bounded by the limit, not by the file. */
static enum snapshot_status next_object(struct reader *r, msgpack_unpacked *u, size_t limit)
{
	size_t end = r->off;
	/* The skim sees only the first limit bytes: an object running past
	 * them is too big, however many bytes the file still has. */
	size_t window = r->len - r->off > limit ? r->off + limit : r->len;
	switch (skim((const uint8_t *)r->buf, window, &end, 0)) {
	case SKIM_OK:
		break;
	case SKIM_SHORT:
		if (window < r->len) {
			char detail[80];
			snprintf(detail, sizeof(detail), "longer than the limit of %zu bytes", limit);
			return fail(r, SNAPSHOT_TOO_BIG, detail);
		}
		return fail(r, SNAPSHOT_TRUNCATED, "the file ends inside it");
	case SKIM_BAD:
		return fail(r, SNAPSHOT_CORRUPT, "not msgpack, or sizes larger than the file");
	}
	size_t off = r->off;
	msgpack_unpack_return ret = msgpack_unpack_next(u, r->buf, end, &off);
	if ((ret != MSGPACK_UNPACK_SUCCESS && ret != MSGPACK_UNPACK_EXTRA_BYTES) || off != end)
		return fail(r, SNAPSHOT_CORRUPT, "msgpack-c could not read it");
	r->off = end;
	return SNAPSHOT_OK;
}

static enum snapshot_status read_header(struct reader *r, struct snapshot_header *h)
{
	msgpack_unpacked u;
	char magic[32];
	uint64_t v;

	snprintf(r->where, sizeof(r->where), "header at byte 0");
	msgpack_unpacked_init(&u);
	enum snapshot_status st = next_object(r, &u, SNAPSHOT_HEADER_MAX_BYTES);
	if (st != SNAPSHOT_OK) {
		/* Not even one object: most likely not a snapshot at all. */
		msgpack_unpacked_destroy(&u);
		return st == SNAPSHOT_CORRUPT ? fail(r, SNAPSHOT_FOREIGN, "not a snapshot") : st;
	}
	const msgpack_object *o = &u.data;
	if (o->type != MSGPACK_OBJECT_MAP || !get_str(o, "magic", magic, sizeof(magic)) ||
	    strcmp(magic, SNAPSHOT_MAGIC) != 0)
		st = fail(r, SNAPSHOT_FOREIGN, "no \"" SNAPSHOT_MAGIC "\" magic: not a snapshot");
	else if (!get_uint(o, "format", UINT32_MAX, &v))
		st = fail(r, SNAPSHOT_CORRUPT, "no format number");
	else if (v > SNAPSHOT_FORMAT) {
		char detail[80];
		snprintf(detail, sizeof(detail), "format %llu (this agent reads %d)",
			 (unsigned long long)v, SNAPSHOT_FORMAT);
		st = fail(r, SNAPSHOT_NEWER, detail);
	} else if (v < 1) {
		st = fail(r, SNAPSHOT_CORRUPT, "format 0");
	} else {
		h->format = (uint32_t)v;
		if (!get_str(o, "agent", h->agent_version, sizeof(h->agent_version)))
			snprintf(h->agent_version, sizeof(h->agent_version), "unknown");
		if (!get_int(o, "written_at", &h->written_at_ms))
			h->written_at_ms = 0;
		if (!get_uint(o, "count", BREAKER_TABLE_MAX_ENTRIES, &v))
			st = fail(r, SNAPSHOT_CORRUPT, "no breaker count, or more than the table holds");
		else
			h->count = (uint32_t)v;
	}
	msgpack_unpacked_destroy(&u);
	return st;
}

static enum snapshot_status read_breaker(struct reader *r, struct snapshot_breaker *b)
{
	msgpack_unpacked u;
	uint64_t v;
	enum snapshot_status st;

	memset(b, 0, sizeof(*b));
	msgpack_unpacked_init(&u);
	st = next_object(r, &u, SNAPSHOT_BREAKER_MAX_BYTES);
	if (st != SNAPSHOT_OK)
		goto out;
	const msgpack_object *o = &u.data;
	if (o->type != MSGPACK_OBJECT_MAP) {
		st = fail(r, SNAPSHOT_CORRUPT, "not a map");
		goto out;
	}
	if (!get_str(o, "be", b->backend, sizeof(b->backend)) ||
	    !name_is_valid(b->backend, strlen(b->backend)) ||
	    !get_str(o, "srv", b->server, sizeof(b->server)) ||
	    !name_is_valid(b->server, strlen(b->server))) {
		st = fail(r, SNAPSHOT_CORRUPT, "no valid be/srv names");
		goto out;
	}
	if (!get_uint(o, "state", BREAKER_HALF_OPEN, &v)) {
		st = fail(r, SNAPSHOT_CORRUPT, "state missing or not 0, 1 or 2");
		goto out;
	}
	b->state = (enum breaker_state)v;
	uint64_t streak, trips;
	if (!get_uint(o, "streak", UINT32_MAX, &streak) || !get_int(o, "since", &b->since_wall_ms) ||
	    !get_uint(o, "trips", UINT32_MAX, &trips) ||
	    !get_uint(o, "policy", UINT64_MAX, &b->policy_fingerprint)) {
		st = fail(r, SNAPSHOT_CORRUPT, "streak, since, trips or policy missing or out of range");
		goto out;
	}
	b->failure_streak = (uint32_t)streak;
	b->trips = (uint32_t)trips;
	/* The backoff and the window came later: a snapshot without them
	 * still loads (the breaker then reads them its own way). */
	if (find(o, "trips_in_a_row")) {
		uint64_t in_a_row, volume, rule;
		if (!get_uint(o, "trips_in_a_row", UINT32_MAX, &in_a_row) ||
		    !get_uint(o, "window_failures", UINT64_MAX, &b->window_failures) ||
		    !get_uint(o, "window_volume", BREAKER_MAX_WINDOW, &volume) ||
		    !get_uint(o, "trip_rule", BREAKER_NB_TRIP_RULES - 1, &rule)) {
			st = fail(r, SNAPSHOT_CORRUPT,
				  "trips_in_a_row without window_failures, window_volume (0-64) or "
				  "trip_rule (0-3)");
			goto out;
		}
		b->has_history = true;
		b->trips_in_a_row = (uint32_t)in_a_row;
		b->window_volume = (unsigned)volume;
		b->last_trip_rule = (enum breaker_trip_rule)rule;
	}
	const msgpack_object *hap = find(o, "haproxy");
	if (!hap || hap->type != MSGPACK_OBJECT_ARRAY || hap->via.array.size > ENFORCE_MAX_HAPROXY) {
		st = fail(r, SNAPSHOT_CORRUPT, "haproxy is not an array of at most 8");
		goto out;
	}
	for (uint32_t i = 0; i < hap->via.array.size; i++) {
		const msgpack_object *m = &hap->via.array.ptr[i];
		struct snapshot_haproxy *sh = &b->haproxy[b->nb_haproxy++];
		if (!get_memory(m, &sh->mem) || !get_str(m, "socket", sh->address, sizeof(sh->address))) {
			st = fail(r, SNAPSHOT_CORRUPT, "a haproxy entry lacks a field");
			goto out;
		}
	}
	const msgpack_object *ac = find(o, "agent_check");
	if (ac) {
		if (!get_memory(ac, &b->agent_check)) {
			st = fail(r, SNAPSHOT_CORRUPT, "agent_check lacks a field");
			goto out;
		}
		b->has_agent_check = true;
	}
	if (find(o, "endpoint") &&
	    !get_str(o, "endpoint", b->endpoint, sizeof(b->endpoint))) {
		st = fail(r, SNAPSHOT_CORRUPT, "endpoint is not a string of at most 63 bytes");
		goto out;
	}
out:
	msgpack_unpacked_destroy(&u);
	return st;
}

/* "N bytes, over the limit of M for ...": the file is longer than its
 * header's count allows. */
static bool over_limit(uint64_t file_size, uint32_t count, char *detail, size_t size)
{
	uint64_t max = snapshot_max_bytes(count);
	if (file_size <= max)
		return false;
	snprintf(detail, size, "%llu bytes, over the limit of %llu for the %u breaker(s) its "
		 "header announces", (unsigned long long)file_size, (unsigned long long)max, count);
	return true;
}

enum snapshot_status snapshot_check_size(const char *head, size_t head_len, uint64_t file_size,
					 char *err, size_t err_size)
{
	char scratch[128];
	struct reader r = {.buf = head, .len = head_len, .err = scratch,
			   .err_size = sizeof(scratch)};
	struct snapshot_header h;

	if (head_len == 0 || read_header(&r, &h) != SNAPSHOT_OK)
		return SNAPSHOT_OK; /* no count to judge by: the decoding says why */
	if (over_limit(file_size, h.count, err, err_size))
		return SNAPSHOT_TOO_BIG;
	return SNAPSHOT_OK;
}

enum snapshot_status snapshot_decode(const char *buf, size_t len, struct snapshot_header *h,
				     snapshot_breaker_fn fn, void *ctx, char *err, size_t err_size)
{
	struct reader r = {.buf = buf, .len = len, .err = err, .err_size = err_size};
	struct snapshot_breaker b;
	char detail[128];

	memset(h, 0, sizeof(*h));
	snprintf(r.where, sizeof(r.where), "the file");
	if (len == 0)
		return fail(&r, SNAPSHOT_EMPTY, "it is empty");
	if (len > SNAPSHOT_MAX_BYTES) {
		snprintf(detail, sizeof(detail), "%zu bytes, over the limit of %u", len,
			 SNAPSHOT_MAX_BYTES);
		return fail(&r, SNAPSHOT_TOO_BIG, detail);
	}
	enum snapshot_status st = read_header(&r, h);
	if (st != SNAPSHOT_OK)
		return st;
	snprintf(r.where, sizeof(r.where), "the file");
	if (over_limit(len, h->count, detail, sizeof(detail)))
		return fail(&r, SNAPSHOT_TOO_BIG, detail);
	for (uint32_t i = 0; i < h->count; i++) {
		snprintf(r.where, sizeof(r.where), "breaker %u at byte %zu", i + 1, r.off);
		if (r.off >= len) {
			snprintf(detail, sizeof(detail), "the file ends after %u of %u breakers", i,
				 h->count);
			return fail(&r, SNAPSHOT_TRUNCATED, detail);
		}
		st = read_breaker(&r, &b);
		if (st != SNAPSHOT_OK)
			return st;
		if (fn && !fn(ctx, &b))
			return SNAPSHOT_OK;
	}
	if (r.off != len) {
		snprintf(r.where, sizeof(r.where), "byte %zu", r.off);
		return fail(&r, SNAPSHOT_CORRUPT, "bytes after the last breaker");
	}
	return SNAPSHOT_OK;
}

const char *snapshot_status_name(enum snapshot_status status)
{
	switch (status) {
	case SNAPSHOT_OK: return "ok";
	case SNAPSHOT_EMPTY: return "empty";
	case SNAPSHOT_TOO_BIG: return "too big";
	case SNAPSHOT_TRUNCATED: return "truncated";
	case SNAPSHOT_CORRUPT: return "corrupt";
	case SNAPSHOT_FOREIGN: return "foreign";
	case SNAPSHOT_NEWER: return "newer";
	}
	return "unknown";
}

/* ---- fingerprint ---- */

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	return h;
}

uint64_t snapshot_policy_fingerprint(const struct breaker_policy *p)
{
	/* Field by field: padding bytes are not part of a policy. */
	uint64_t h = UINT64_C(14695981039346656037);
	uint32_t words[4] = {p->threshold, p->half_open_probes, (uint32_t)p->half_open_backpressure,
			     (uint32_t)p->open_late_success};
	h = fnv(h, words, sizeof(words));
	h = fnv(h, &p->cooldown_ms, sizeof(p->cooldown_ms));
	h = fnv(h, p->capacity.bits, sizeof(p->capacity.bits));
	h = fnv(h, p->failure.bits, sizeof(p->failure.bits));
	h = fnv(h, p->ignore.bits, sizeof(p->ignore.bits));
	/* The backoff and failure-rate fields only when one differs from its
	 * default: a policy that leaves them alone keeps the fingerprint an
	 * agent without them wrote, so an upgrade reports no policy change. */
	if (p->max_cooldown_ms != BREAKER_DEFAULT_MAX_COOLDOWN_MS ||
	    p->healthy_for_ms != BREAKER_DEFAULT_HEALTHY_FOR_MS || p->failure_rate_threshold != 0 ||
	    p->window != BREAKER_DEFAULT_WINDOW ||
	    p->minimum_volume != BREAKER_DEFAULT_MINIMUM_VOLUME || p->wedged_after_ms != 0) {
		uint64_t fleet[6] = {p->max_cooldown_ms, p->healthy_for_ms, p->failure_rate_threshold,
				     p->window, p->minimum_volume, p->wedged_after_ms};
		h = fnv(h, fleet, sizeof(fleet));
	}
	/* Likewise, a later key: only when on. */
	if (p->stalled_after_ms != 0)
		h = fnv(h, &p->stalled_after_ms, sizeof(p->stalled_after_ms));
	return h;
}
