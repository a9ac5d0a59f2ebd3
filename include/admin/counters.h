/*
 * counters.h - what the metrics endpoint counts per server: responses by
 * outcome and transitions by (from, to), kept in each table entry's
 * struct breaker_counters by a breaker subscriber.
 */
#ifndef SPOA_COUNTERS_H
#define SPOA_COUNTERS_H

#include "daemon/breakers.h"

struct breaker_subscriber counters_subscriber(void);

#endif /* SPOA_COUNTERS_H */
