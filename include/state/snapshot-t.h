/*
 * snapshot-t.h - what a state snapshot holds (snapshot.h): every breaker
 * as it stood, and what the agent had done to each HAProxy server.
 */
#ifndef SPOA_SNAPSHOT_T_H
#define SPOA_SNAPSHOT_T_H

#include <stdbool.h>
#include <stdint.h>

#include "core/breaker-t.h"
#include "link/enforce-t.h"

/* "spoa-breaker/state": no other file starts its first map with it. */
#define SNAPSHOT_MAGIC "spoa-breaker/state"
/* Bumped when a reader of an older format could not read the new one. */
#define SNAPSHOT_FORMAT 1
/*
 * The memory a snapshot may cost, fixed before a byte of it is parsed.
 * A breaker at its largest (127-byte names, a 63-byte endpoint, eight
 * HAProxy sockets of 127 bytes, every number at its widest, the agent
 * check) encodes to about 1.9 KiB (test_snapshot.c pins it under half of
 * SNAPSHOT_BREAKER_MAX_BYTES); the other half is room for keys a later
 * agent adds, which this one skips. The header takes about 110 bytes.
 * Each object is skimmed within its limit before msgpack-c sees it, since
 * msgpack-c spends tens of bytes per byte it reads: a file is decoded
 * for the memory of one breaker at a time, however big it is.
 */
#define SNAPSHOT_HEADER_MAX_BYTES 512u
#define SNAPSHOT_BREAKER_MAX_BYTES 4096u
/* A file larger than this is refused unread, whatever its header says: the
 * file is read whole, so this is the most memory a snapshot can take. A
 * breaker of typical names and two HAProxy sockets takes ~200 bytes, so a
 * full table (BREAKER_TABLE_MAX_ENTRIES) fits, as do 250,000 breakers at
 * their largest. snapshot_max_bytes() is the limit for a given number. */
#define SNAPSHOT_MAX_BYTES (512u * 1024 * 1024)
/* Longest Runtime API address kept (config's CONFIG_LISTEN_MAX_LEN). */
#define SNAPSHOT_ADDRESS_MAX 127
#define SNAPSHOT_VERSION_MAX 31

struct snapshot_header {
	uint32_t format;                         /* SNAPSHOT_FORMAT */
	char agent_version[SNAPSHOT_VERSION_MAX + 1];
	int64_t written_at_ms;                   /* wall clock, ms since the epoch */
	uint32_t count;                          /* breakers that follow */
};

/* What the agent had done to one server in one HAProxy. */
struct snapshot_haproxy {
	char address[SNAPSHOT_ADDRESS_MAX + 1]; /* the runtime_api socket */
	struct enforce_memory mem;
};

/* One breaker. Times are on the wall clock: the monotonic clock of a
 * process means nothing to the next one. */
struct snapshot_breaker {
	char backend[BREAKER_NAME_MAX + 1];
	char server[BREAKER_NAME_MAX + 1];
	enum breaker_state state;
	uint32_t failure_streak;
	int64_t since_wall_ms;     /* when the state began (OPEN: the trip) */
	uint32_t trips;            /* times it opened */
	/* The backoff and the failure-rate window (struct breaker). Optional
	 * keys: has_history is false for a snapshot written before them. */
	bool has_history;
	uint32_t trips_in_a_row;
	uint64_t window_failures;
	unsigned window_volume;    /* 0..BREAKER_MAX_WINDOW */
	enum breaker_trip_rule last_trip_rule;
	uint64_t policy_fingerprint; /* of the effective policy it followed */
	/* The worker its history is about ("ADDRESS:PORT", link/endpoints.h);
	 * an optional key: "" for a snapshot written before it, or before a
	 * look said. */
	char endpoint[ENDPOINT_TEXT_MAX];
	struct snapshot_haproxy haproxy[ENFORCE_MAX_HAPROXY];
	unsigned nb_haproxy;
	bool has_agent_check;      /* agent-check mode: what its answers did */
	struct enforce_memory agent_check;
};

/* Why a snapshot was refused. */
enum snapshot_status {
	SNAPSHOT_OK,
	SNAPSHOT_EMPTY,     /* a file of zero bytes */
	SNAPSHOT_TOO_BIG,   /* over snapshot_max_bytes(count), or an object over its limit */
	SNAPSHOT_TRUNCATED, /* ends inside an object, or fewer breakers than announced */
	SNAPSHOT_CORRUPT,   /* not msgpack, or not the shape of a snapshot */
	SNAPSHOT_FOREIGN,   /* msgpack, but not ours (no magic) */
	SNAPSHOT_NEWER,     /* a format this agent cannot read */
};

#endif /* SPOA_SNAPSHOT_T_H */
