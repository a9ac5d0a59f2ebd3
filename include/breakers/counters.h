/*
 * counters.h - what the metrics endpoint counts per server: responses by
 * outcome and transitions by (from, to), kept in each table entry's
 * struct breaker_counters by a breaker subscriber; in steady-state mode,
 * the successes only HAProxy's counters saw, kept by the HAProxy link.
 */
#ifndef SPOA_COUNTERS_H
#define SPOA_COUNTERS_H

#include "breakers/bus.h"

struct breaker_subscriber counters_subscriber(void);

/*
 * Steady-state mode: HAProxy notifies a clean server's successes no more,
 * and its own counters know them all. `delta` is the 1xx-3xx responses
 * one HAProxy counted for c's server since its previous look; baseline
 * false when that delta means nothing (no previous look, a restarted
 * HAProxy, counters cleared) or when that HAProxy is not in steady-state
 * mode. Adds to c->counted_successes the part of delta SPOP was not told
 * of: the delta includes every notified success too, so the successes
 * notified since the last delta (outcomes[SUCCESS] beyond
 * successes_matched) are matched against it first and not counted twice.
 * The match is per server, over all HAProxies: exact in sum, whichever
 * HAProxy's look comes first. No baseline forgets the unmatched ones: they
 * are older than the delta that would hold them.
 */
void counters_note_counted_successes(struct breaker_counters *c, uint64_t delta, bool baseline);

#endif /* SPOA_COUNTERS_H */
