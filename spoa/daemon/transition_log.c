/*
 * transition_log.c - the transition log subscriber (see transition_log.h).
 */
#include <stdio.h>

#include "daemon/transition_log.h"
#include "util/log.h"

static void format_reason(char *buf, size_t size, const struct breaker_table_entry *e,
			  const struct breaker_cause *cause)
{
	const struct faults_delta *d = cause->faults;

	switch (cause->kind) {
	case BREAKER_CAUSE_RESPONSE:
		snprintf(buf, size, "%s, status %d, failure streak %u",
			 breaker_outcome_name(cause->outcome), cause->status,
			 e->breaker.failure_streak);
		return;
	case BREAKER_CAUSE_COUNTERS:
		snprintf(buf, size,
			 "HAProxy counters: %llu connect errors (econ), %llu response errors (eresp), "
			 "%llu redispatched (wredis), %llu bodies aborted after the head (srv_abrt)",
			 (unsigned long long)d->connect_errors, (unsigned long long)d->response_errors,
			 (unsigned long long)d->redispatches, (unsigned long long)d->aborted_bodies);
		return;
	case BREAKER_CAUSE_COOLDOWN:
		snprintf(buf, size, "cool-down of %llu ms elapsed",
			 (unsigned long long)e->breaker.policy->cooldown_ms);
		return;
	}
	snprintf(buf, size, "unknown cause");
}

static void log_transition(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
			   const struct breaker_cause *cause)
{
	char reason[256];
	(void)ctx;

	if (!breaker_event_is_transition(ev))
		return;
	format_reason(reason, sizeof(reason), e, cause);
	log_record(LOG_LEVEL_NOTICE, "breaker %s/%s: %s -> %s (%s)", e->backend, e->server,
		   breaker_state_name(ev->from), breaker_state_name(ev->to), reason);
}

struct breaker_subscriber transition_log_subscriber(void)
{
	return (struct breaker_subscriber){.name = "transition log", .recorded = log_transition};
}
