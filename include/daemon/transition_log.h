/*
 * transition_log.h - one log line per breaker transition, with its reason:
 * the outcome and status that caused it, the HAProxy counters for faults
 * SPOE never sees, or the cool-down.
 */
#ifndef SPOA_TRANSITION_LOG_H
#define SPOA_TRANSITION_LOG_H

#include "breakers/bus.h"

struct breaker_subscriber transition_log_subscriber(void);

#endif /* SPOA_TRANSITION_LOG_H */
