/*
 * transition_log.c - the transition log subscriber (see transition_log.h).
 *
 *   breaker be/w1: closed -> open (failure, status 500, failure streak 3):
 *     the failure streak reached the threshold of 3; trip 1 in a row, open for 30000 ms
 *   breaker be/w1: open -> half_open (cool-down of 30000 ms elapsed): trip 1 in a row
 *   breaker be/w1: worker resting for 2000 ms (Retry-After on a 503): drained until
 *     then, within the ejection cap; the breaker stays closed
 */
#include <stdio.h>

#include "daemon/transition_log.h"
#include "link/faults-t.h"
#include "util/log.h"

/* What kind of thing caused it, as the JSON log's "cause" says it: one
 * word per enum breaker_cause_kind, stable for whoever filters on it. */
static const char *cause_name(enum breaker_cause_kind kind)
{
	switch (kind) {
	case BREAKER_CAUSE_RESPONSE:
		return "response";
	case BREAKER_CAUSE_COUNTERS:
		return "haproxy_counters";
	case BREAKER_CAUSE_COOLDOWN:
		return "cooldown";
	case BREAKER_CAUSE_CAPACITY_RETRY:
		return "capacity_retry";
	case BREAKER_CAUSE_PEER:
		return "peer";
	case BREAKER_CAUSE_IN_FLIGHT:
		return "in_flight";
	case BREAKER_CAUSE_ENDPOINT:
		return "endpoint";
	case BREAKER_CAUSE_REST_OVER:
		return "rest_over";
	case BREAKER_CAUSE_REST_WORD:
		return "rest_word";
	case BREAKER_CAUSE_OPERATOR:
		return "operator";
	}
	return "unknown";
}

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
			 "%llu redispatched (wredis), %llu bodies aborted after the head (srv_abrt), "
			 "%llu held unanswered then retried elsewhere (wredis with wretr)",
			 (unsigned long long)d->connect_errors, (unsigned long long)d->response_errors,
			 (unsigned long long)d->redispatches, (unsigned long long)d->aborted_bodies,
			 (unsigned long long)d->held_retries);
		return;
	case BREAKER_CAUSE_CAPACITY_RETRY:
		snprintf(buf, size,
			 "backpressure, HAProxy counters: %llu capacity statuses retried on another "
			 "worker (wredis with wretr)",
			 (unsigned long long)d->capacity_retries);
		return;
	case BREAKER_CAUSE_PEER:
		if (e->breaker.state == BREAKER_CLOSED)
			snprintf(buf, size, "node %u closed it", cause->node);
		else
			snprintf(buf, size,
				 "node %u holds it open: that node probes, this one waits for "
				 "its verdict",
				 cause->node);
		return;
	case BREAKER_CAUSE_IN_FLIGHT:
		if (cause->stall && e->breaker.policy->stalled_after_ms == 0)
			snprintf(buf, size,
				 "HAProxy looks: %llu requests sent (stot) since it last answered, "
				 "none answered, %llu in flight (scur); its backend's other servers "
				 "answered %llu (less %llu older ones in flight) of %llu sent to them "
				 "since",
				 (unsigned long long)cause->stall->sent,
				 (unsigned long long)cause->in_flight,
				 (unsigned long long)cause->stall->nb_answered,
				 (unsigned long long)cause->stall->nb_pending_then,
				 (unsigned long long)cause->stall->nb_sent);
		else
			snprintf(buf, size, "HAProxy look: %llu requests in flight (scur), no response",
				 (unsigned long long)cause->in_flight);
		return;
	case BREAKER_CAUSE_ENDPOINT:
		if (cause->recalled)
			snprintf(buf, size,
				 "HAProxy points it at %s now, a worker whose breaker was %s when "
				 "it left another server",
				 cause->endpoint, breaker_state_name(e->breaker.state));
		else
			snprintf(buf, size, "HAProxy points it at %s now: a new worker, a clean breaker",
				 cause->endpoint);
		return;
	case BREAKER_CAUSE_REST_OVER:
		snprintf(buf, size, "the worker's rest ended");
		return;
	case BREAKER_CAUSE_REST_WORD:
		snprintf(buf, size, "the worker answered nothing but capacity statuses");
		return;
	case BREAKER_CAUSE_OPERATOR:
		snprintf(buf, size, "the operator's hand");
		return;
	case BREAKER_CAUSE_COOLDOWN:
		/* Opened on another node's verdict alone (no trip of its own):
		 * what ended is that verdict's renewal, not a cool-down. */
		if (e->breaker.state == BREAKER_HALF_OPEN &&
		    e->breaker.last_trip_rule == BREAKER_TRIP_NONE) {
			snprintf(buf, size,
				 "another node's verdict was no longer renewed: this node probes");
			return;
		}
		/* The open time that elapsed: the backed-off one of this trip. */
		snprintf(buf, size, "cool-down of %llu ms elapsed",
			 (unsigned long long)breaker_backoff_ms(e->breaker.policy,
							       e->breaker.trips_in_a_row));
		return;
	}
	snprintf(buf, size, "unknown cause");
}

/* After the cause, what the breaker made of it: which rule opened it and
 * for how long, or which trip's cool-down ended. Empty otherwise. */
static void format_detail(char *buf, size_t size, const struct breaker_table_entry *e,
			  const struct breaker_event *ev)
{
	const struct breaker *b = &e->breaker;
	char rule[160];

	buf[0] = '\0';
	if (ev->to == BREAKER_OPEN) {
		switch (ev->trip_rule) {
		case BREAKER_TRIP_FAILURE_STREAK:
			snprintf(rule, sizeof(rule), "the failure streak reached the threshold of %u",
				 b->policy->threshold);
			break;
		case BREAKER_TRIP_FAILURE_RATE:
			snprintf(rule, sizeof(rule),
				 "the failure rate reached %u%%: %u of the last %u judged requests "
				 "failed (threshold %u%%)",
				 breaker_window_failures(b) * 100 /
					 (breaker_window_volume(b) ? breaker_window_volume(b) : 1),
				 breaker_window_failures(b), breaker_window_volume(b),
				 b->policy->failure_rate_threshold);
			break;
		case BREAKER_TRIP_PROBE_FAILED:
			snprintf(rule, sizeof(rule), "the half-open probe failed");
			break;
		case BREAKER_TRIP_WEDGED:
			if (ev->from == BREAKER_HALF_OPEN)
				snprintf(rule, sizeof(rule),
					 "still wedged: the half-open probe got a capacity status");
			else
				snprintf(rule, sizeof(rule),
					 "wedged: only capacity statuses for %llu ms (at least %u) "
					 "while another server of the backend succeeded",
					 (unsigned long long)b->policy->wedged_after_ms,
					 b->policy->minimum_volume);
			break;
		case BREAKER_TRIP_STALLED:
			if (b->policy->stalled_after_ms == 0)
				snprintf(rule, sizeof(rule),
					 "stalled: at least %u requests sent, none answered, while "
					 "the backend's other servers answered %u%% of theirs, or "
					 "fewer at odds below 5e-9",
					 b->policy->stalled_requests, b->policy->stalled_share);
			else
				snprintf(rule, sizeof(rule),
					 "stalled: requests in flight for %llu ms with no response%s "
					 "while another server of the backend succeeded",
					 (unsigned long long)b->policy->stalled_after_ms,
					 ev->from == BREAKER_HALF_OPEN ? " (the half-open probe's)"
								       : "");
			break;
		case BREAKER_TRIP_NONE:
			snprintf(rule, sizeof(rule), "opened");
			break;
		}
		snprintf(buf, size, ": %s; trip %u in a row, open for %llu ms", rule,
			 b->trips_in_a_row, (unsigned long long)breaker_open_duration_ms(b));
	} else if (ev->from == BREAKER_OPEN && ev->to == BREAKER_HALF_OPEN) {
		snprintf(buf, size, ": trip %u in a row", b->trips_in_a_row);
	}
}

/* One line per rest started: a worker's word, so rate-limited like any
 * line a peer can cause (log_msg); its end only at info. */
static void log_rest(const struct breaker_table_entry *e, const struct breaker_event *ev,
		     const struct breaker_cause *cause)
{
	const struct breaker *b = &e->breaker;

	/* Started at a look (the word kept until the counters said the worker
	 * answers nothing else), or by a second word over SPOP. */
	if (ev->rest == BREAKER_REST_STARTED && cause->kind == BREAKER_CAUSE_RESPONSE)
		log_notice("breaker %s/%s: worker resting for %u ms%s (Retry-After on a %d, "
			   "nothing but capacity statuses since its last word): drained until "
			   "then, within the ejection cap; the breaker stays %s",
			   e->backend, e->server, b->rest_ms,
			   b->rest_ms == b->policy->retry_after_max_ms ? ", bounded by retry_after_max"
								       : "",
			   cause->status, breaker_state_name(b->state));
	else if (ev->rest == BREAKER_REST_STARTED)
		log_notice("breaker %s/%s: worker resting for %u ms (Retry-After, and no success "
			   "since the previous look): drained until then, within the ejection "
			   "cap; the breaker stays %s",
			   e->backend, e->server, b->rest_ms, breaker_state_name(b->state));
	else if (ev->rest == BREAKER_REST_ENDED &&
		 (cause->kind == BREAKER_CAUSE_RESPONSE || cause->kind == BREAKER_CAUSE_REST_WORD))
		log_notice("breaker %s/%s: worker's rest ended early: it answered (a success), so it "
			   "does not refuse everything; back in rotation unless its breaker says "
			   "otherwise (%s)",
			   e->backend, e->server, breaker_state_name(b->state));
	else if (ev->rest == BREAKER_REST_ENDED)
		log_info("breaker %s/%s: worker's rest over, back in rotation unless its breaker "
			 "says otherwise (%s)",
			 e->backend, e->server, breaker_state_name(b->state));
}

static void log_transition(void *ctx, struct breaker_table_entry *e, const struct breaker_event *ev,
			   const struct breaker_cause *cause)
{
	char reason[256], detail[256];
	(void)ctx;

	log_rest(e, ev, cause);
	if (ev->hold_ended)
		log_notice("breaker %s/%s: the operator's hold ran out: back under the breaker's "
			   "judgement (%s)",
			   e->backend, e->server, breaker_state_name(e->breaker.state));
	if (!breaker_event_is_transition(ev))
		return;
	format_reason(reason, sizeof(reason), e, cause);
	format_detail(detail, sizeof(detail), e, ev);
	if (cause->kind == BREAKER_CAUSE_PEER)
		detail[0] = '\0'; /* no trip of its own: the reason says it all */
	/* Judged and logged all the same under the operator's word, which
	 * decides what HAProxy holds (core/operator_hand.h). */
	bool observing = e->breaker.observe_only || e->breaker.policy->observe_only;
	const char *held = observing				    ? "; observe only (paused, released or enforce = none): "
									      "HAProxy is not changed"
			   : e->breaker.hold == BREAKER_HOLD_IN  ? "; held in by the operator: "
									      "HAProxy is not changed"
			   : e->breaker.hold == BREAKER_HOLD_OUT ? "; held out by the operator: it "
									      "stays drained"
								 : "";
	/* The same line, and for a JSON log the fields a reader filters on. */
	const struct log_field fields[] = {
		{"event", "transition"},
		{"backend", e->backend},
		{"server", e->server},
		{"from", breaker_state_name(ev->from)},
		{"to", breaker_state_name(ev->to)},
		{"cause", cause_name(cause->kind)},
	};
	log_record_fields(LOG_LEVEL_NOTICE, fields, sizeof(fields) / sizeof(fields[0]),
			  "breaker %s/%s: %s -> %s (%s)%s%s", e->backend, e->server,
			  breaker_state_name(ev->from), breaker_state_name(ev->to), reason, detail,
			  held);
}

struct breaker_subscriber transition_log_subscriber(void)
{
	return (struct breaker_subscriber){.name = "transition log", .recorded = log_transition};
}
