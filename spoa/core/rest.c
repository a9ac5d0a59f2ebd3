/*
 * rest.c - a worker's own Retry-After: how long its server rests, and
 * when the rest ends (see breaker.h, "A worker's own Retry-After"). Pure.
 */
#include <string.h>

#include "core/breaker.h"
#include "core/operator_hand.h"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* An HTTP-date, in any of its three forms, opens with a day's name:
 * "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 ...", "Sun Nov  6
 * ...", and the first two end in GMT - all that is left of one that
 * res.hdr() cut at its comma. That is enough to count it apart: it is
 * refused either way. */
static bool looks_like_date(const char *p, size_t len)
{
	static const char days[][4] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
	if (len < 3)
		return false;
	for (size_t i = 0; i < sizeof(days) / sizeof(days[0]); i++)
		if (memcmp(p, days[i], 3) == 0)
			return true;
	return memcmp(p + len - 3, "GMT", 3) == 0;
}

/* Seconds saturate here: any value past it is bounded by retry_after_max
 * all the same, and milliseconds of it never overflow. */
#define SECONDS_CAP (UINT64_MAX / 1000 / 2)

enum retry_after_kind retry_after_parse(const char *text, size_t len, uint64_t *seconds)
{
	while (len > 0 && is_blank(text[0])) {
		text++;
		len--;
	}
	while (len > 0 && is_blank(text[len - 1]))
		len--;
	*seconds = 0;
	if (len == 0)
		return RETRY_AFTER_ABSENT;
	if (looks_like_date(text, len))
		return RETRY_AFTER_DATE;
	/* delta-seconds is 1*DIGIT: no sign, no fraction, no unit. */
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (!is_digit(text[i]))
			return RETRY_AFTER_INVALID;
		v = v > SECONDS_CAP / 10 ? SECONDS_CAP : v * 10 + (uint64_t)(text[i] - '0');
	}
	*seconds = v > SECONDS_CAP ? SECONDS_CAP : v;
	return RETRY_AFTER_SECONDS;
}

uint64_t breaker_rest_wanted_ms(const struct breaker_policy *policy, enum breaker_outcome outcome,
				uint64_t retry_after_s)
{
	/* Only "alive and busy" asks for a rest: a failure status's
	 * Retry-After (a 503 the operator made a failure) is the failure
	 * rules' business, and a success's means nothing to routing. */
	if (!policy || outcome != BREAKER_OUTCOME_BACKPRESSURE || policy->retry_after_max_ms == 0)
		return 0;
	uint64_t want = retry_after_s > SECONDS_CAP ? SECONDS_CAP * 1000 : retry_after_s * 1000;
	return want < policy->retry_after_max_ms ? want : policy->retry_after_max_ms;
}

enum breaker_rest_change breaker_rest_on_response(struct breaker *b, enum breaker_outcome outcome,
						  uint64_t retry_after_s, uint64_t now_ms)
{
	uint64_t want = breaker_rest_wanted_ms(b->policy, outcome, retry_after_s);
	if (want == 0)
		return BREAKER_REST_UNCHANGED;
	/* want is at most retry_after_max (an hour, once validated): no
	 * overflow on a monotonic clock; rest_ms saturates. */
	uint64_t until = now_ms + want;
	if (!breaker_is_resting(b)) {
		b->rest_until_ms = until;
		b->rest_ms = (uint32_t)want;
		if (b->rests < UINT32_MAX)
			b->rests++;
		return BREAKER_REST_STARTED;
	}
	if (until <= b->rest_until_ms)
		return BREAKER_REST_UNCHANGED; /* the longer word stands */
	uint64_t longer = (uint64_t)b->rest_ms + (until - b->rest_until_ms);
	b->rest_ms = longer > UINT32_MAX ? UINT32_MAX : (uint32_t)longer;
	b->rest_until_ms = until;
	return BREAKER_REST_EXTENDED;
}

enum breaker_rest_change breaker_rest_word(struct breaker *b, enum breaker_outcome outcome,
					   uint64_t retry_after_s, uint64_t now_ms)
{
	if (breaker_is_resting(b))
		return breaker_rest_on_response(b, outcome, retry_after_s, now_ms);
	uint64_t want = breaker_rest_wanted_ms(b->policy, outcome, retry_after_s);
	if (want == 0)
		return BREAKER_REST_UNCHANGED;
	/* The longer word stands, as for a rest. */
	if (now_ms + want > b->rest_until_ms)
		b->rest_until_ms = now_ms + want;
	return BREAKER_REST_ASKED;
}

enum breaker_rest_change breaker_rest_answered(struct breaker *b)
{
	if (breaker_rest_word_kept(b)) {
		b->rest_until_ms = 0;
		return BREAKER_REST_DROPPED;
	}
	if (!breaker_is_resting(b))
		return BREAKER_REST_UNCHANGED;
	/* Resting, and it answers: a rest the ejection cap held back (its
	 * server still in rotation), or requests let in before the drain
	 * landed. Either way it is not refusing everything any more, and a
	 * rest still waiting for room would drain a worker that serves. */
	b->rest_until_ms = 0;
	b->rest_ms = 0;
	return BREAKER_REST_ENDED;
}

enum breaker_rest_change breaker_rest_confirm(struct breaker *b, uint64_t now_ms)
{
	if (!breaker_rest_word_kept(b))
		return BREAKER_REST_UNCHANGED;
	if (now_ms >= b->rest_until_ms) {
		/* Its time is over: a late rest would drain a worker that
		 * said it would be serving again by now. */
		b->rest_until_ms = 0;
		return BREAKER_REST_DROPPED;
	}
	/* Until the end the word asked for, not a full word from now: the
	 * verdict took a look's time, which the worker did not ask for. */
	uint64_t left = b->rest_until_ms - now_ms;
	b->rest_ms = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
	if (b->rests < UINT32_MAX)
		b->rests++;
	return BREAKER_REST_STARTED;
}

enum breaker_rest_change breaker_rest_tick(struct breaker *b, uint64_t now_ms)
{
	if (b->rest_until_ms == 0 || now_ms < b->rest_until_ms)
		return BREAKER_REST_UNCHANGED;
	bool was_resting = breaker_is_resting(b);
	b->rest_until_ms = 0;
	b->rest_ms = 0;
	/* A word that never became a rest ends with nothing to undo. */
	return was_resting ? BREAKER_REST_ENDED : BREAKER_REST_UNCHANGED;
}

uint64_t breaker_wake_deadline(const struct breaker *b)
{
	uint64_t state = breaker_next_deadline(b);
	/* A kept word's end too: it is dropped then. */
	if (b->rest_until_ms != 0 && b->rest_until_ms < state)
		state = b->rest_until_ms;
	/* An operator's hold for a time ends on time too. */
	uint64_t hold_until = breaker_hold_until_ms(b);
	if (hold_until != 0 && hold_until < state)
		state = hold_until;
	return state;
}

uint64_t breaker_rest_left_ms(const struct breaker *b, uint64_t now_ms)
{
	if (!breaker_is_resting(b) || b->rest_until_ms <= now_ms)
		return 0;
	return b->rest_until_ms - now_ms;
}

const char *breaker_rest_change_name(enum breaker_rest_change change)
{
	switch (change) {
	case BREAKER_REST_UNCHANGED: return NULL;
	case BREAKER_REST_STARTED: return "started";
	case BREAKER_REST_EXTENDED: return "extended";
	case BREAKER_REST_ENDED: return "ended";
	case BREAKER_REST_ASKED: return "asked";
	case BREAKER_REST_DROPPED: return "dropped";
	}
	return NULL;
}
