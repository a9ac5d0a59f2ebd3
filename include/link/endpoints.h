/*
 * endpoints.h - a breaker belongs to the endpoint a server points at, not
 * to the server's name (endpoints.c, pure).
 *
 * HAProxy's servers are slots: DNS (`server-template` + `resolvers`), the
 * Runtime API (`set server B/S addr A port P`) and ingress controllers
 * re-point them at other workers while the name stays. What a breaker
 * learnt is about the worker behind the address, so:
 *   - when a slot's address changes, its breaker starts clean (or as the
 *     new address's own history, below), and the old address's breaker is
 *     remembered;
 *   - an address that left its slot while its breaker held something (open,
 *     a failure streak, trips in a row) is remembered per backend for a
 *     while (ENDPOINT_RECALL_MAX of them, each until its open time is over
 *     and healthy_for after it was left); the slot that takes that address
 *     next takes its breaker, so a failing worker moved to another slot is
 *     still drained, not paid the threshold again (ejection is per host).
 */
#ifndef SPOA_ENDPOINTS_H
#define SPOA_ENDPOINTS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/breaker.h"
#include "hapi/runtime_api.h"
#include "link/enforce-t.h"

enum endpoint_reading {
	ENDPOINT_UNREPORTED, /* the reply has no address column: nothing known */
	ENDPOINT_NONE,       /* no address: a server-template slot DNS has not filled */
	ENDPOINT_SET,
};

/* What a `show servers state` row's srv_addr and srv_port say. "-", an
 * empty field, 0.0.0.0 and :: are no address. */
enum endpoint_reading endpoint_read(struct endpoint *out, struct runtime_api_str addr,
				    struct runtime_api_str port);

static inline bool endpoint_known(const struct endpoint *e)
{
	return e->text[0] != '\0';
}

bool endpoint_equal(const struct endpoint *a, const struct endpoint *b);

/* ---- addresses recently left by a breaker that held something ---- */

#define ENDPOINT_RECALL_MAX 256

struct endpoint_recollection {
	char backend[BREAKER_NAME_MAX + 1];
	struct endpoint where;
	struct breaker breaker; /* its policy is not kept: the slot's is used */
	uint64_t until_ms;      /* 0: a free place */
};

struct endpoint_recall {
	struct endpoint_recollection items[ENDPOINT_RECALL_MAX];
};

/* Whether a breaker holds anything a fresh one would not: only those are
 * remembered. */
bool endpoint_recall_worth(const struct breaker *b);

/* Remembers b as the breaker of `where` in `backend` (replacing what was
 * remembered of it). Full: the recollection that would be forgotten first
 * makes room. */
void endpoint_recall_put(struct endpoint_recall *r, const char *backend,
			 const struct endpoint *where, const struct breaker *b, uint64_t now_ms);

/* Takes (and forgets) what is remembered of `where` in `backend`, unless
 * it expired: true with *out set. */
bool endpoint_recall_take(struct endpoint_recall *r, const char *backend,
			  const struct endpoint *where, uint64_t now_ms, struct breaker *out);

/* Whether something is remembered of `where` in `backend` at now_ms. */
bool endpoint_recall_has(const struct endpoint_recall *r, const char *backend,
			 const struct endpoint *where, uint64_t now_ms);


/*
 * The slot of `backend` whose breaker is b moved from `from` (may be
 * unknown) to `to`: b's history is remembered as `from`'s when worth it,
 * and b becomes what was remembered of `to` (*recalled true) or a clean
 * breaker, under its own policy. Returns what changed, as a record would
 * (from and to states, dirty change, and the trip rule of an open one), so
 * that the enforcement converges on it like on any transition.
 */
struct breaker_event endpoint_move(struct breaker *b, const char *backend,
				   const struct endpoint *from, const struct endpoint *to,
				   struct endpoint_recall *r, uint64_t now_ms, bool *recalled);

#endif /* SPOA_ENDPOINTS_H */
