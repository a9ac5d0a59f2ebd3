/*
 * ack_hold.h - when an ACK held for an `add map` may go (ack_hold.c, pure).
 *
 * Steady-state mode notifies a success only for a server listed in
 * HAProxy's watched map (watched_map.h). When a response makes a server
 * watched, its ACK is held until HAProxy has the map entry: the client of
 * that response is answered only once every later response of the server
 * is notified, so the order the breaker sees is the order HAProxy served.
 *
 * A hold point is "every command queued so far on each HAProxy link":
 * the counts of queued commands, one per link, when the add was queued.
 * Commands on one link complete in order, so the point has landed when
 * each link's count of completed commands (answered, refused or failed:
 * a dead HAProxy must not hold an ACK for ever) has reached its target.
 * Points are numbered from 1 and land in order: a later point's targets
 * are never below an earlier one's, so `settled` (every point up to it has
 * landed) is one number, and a held ACK waits for `id <= settled`.
 *
 * Bounded: ACK_HOLD_POINTS points wait at most; a further add joins the
 * newest point by raising its targets, which holds that point's ACKs a
 * little longer, never shorter than they need.
 */
#ifndef SPOA_ACK_HOLD_H
#define SPOA_ACK_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "link/enforce-t.h"

#define ACK_HOLD_POINTS 256

struct ack_hold {
	uint64_t issued;  /* the newest point's id; 0: none yet */
	uint64_t settled; /* every point up to this id has landed */
	uint64_t targets[ACK_HOLD_POINTS][ENFORCE_MAX_HAPROXY];
};

/* A new point at `queued` (nb_links counts, at most ENFORCE_MAX_HAPROXY);
 * returns its id. */
uint64_t ack_hold_point(struct ack_hold *h, const uint64_t *queued, unsigned nb_links);

/* Moves `settled` past every point `done` (completed commands per link)
 * has reached; true when it moved. */
bool ack_hold_settle(struct ack_hold *h, const uint64_t *done, unsigned nb_links);

static inline bool ack_hold_passed(const struct ack_hold *h, uint64_t id)
{
	return id <= h->settled;
}

static inline bool ack_hold_waiting(const struct ack_hold *h)
{
	return h->issued > h->settled;
}

#endif /* SPOA_ACK_HOLD_H */
