/*
 * operator_hand.c - the operator's holds, pauses and release (see
 * operator_hand.h). Pure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/breaker.h"
#include "core/operator_hand.h"
#include "util/errmsg.h"
#include "util/names.h"

/* ---- one breaker's fields ---- */

void breaker_hold_set(struct breaker *b, enum breaker_hold hold, uint64_t until_ms, bool forced)
{
	b->hold = (uint8_t)hold;
	b->hold_forced = hold == BREAKER_HOLD_OUT && forced;
	b->hold_until_s = hold == BREAKER_HOLD_NONE || until_ms == 0
				  ? 0
				  : (uint32_t)((until_ms + 999) / 1000);
}

uint64_t breaker_hold_until_ms(const struct breaker *b)
{
	return b->hold == BREAKER_HOLD_NONE || b->hold_until_s == 0
		       ? 0
		       : (uint64_t)b->hold_until_s * 1000;
}

bool breaker_hold_tick(struct breaker *b, uint64_t now_ms)
{
	uint64_t until = breaker_hold_until_ms(b);
	if (until == 0 || now_ms < until)
		return false;
	breaker_hold_set(b, BREAKER_HOLD_NONE, 0, false);
	return true;
}

uint64_t breaker_hold_left_ms(const struct breaker *b, uint64_t now_ms)
{
	uint64_t until = breaker_hold_until_ms(b);
	if (until == 0 || until <= now_ms)
		return 0;
	return until - now_ms;
}

void breaker_reset(struct breaker *b, uint64_t now_ms)
{
	const struct breaker_policy *policy = b->policy;
	uint32_t trips = b->trips;
	bool observe_only = b->observe_only;

	breaker_init(b, policy, now_ms);
	b->trips = trips;
	b->observe_only = observe_only;
}

void breaker_keep_operator(struct breaker *to, const struct breaker *from)
{
	to->hold = from->hold;
	to->hold_forced = from->hold_forced;
	to->hold_until_s = from->hold_until_s;
	to->observe_only = from->observe_only;
}

const char *breaker_hold_name(enum breaker_hold hold)
{
	switch (hold) {
	case BREAKER_HOLD_NONE: return "none";
	case BREAKER_HOLD_OUT: return "out";
	case BREAKER_HOLD_IN: return "in";
	}
	return "none";
}

/* ---- the record ---- */

void operator_hand_init(struct operator_hand *h)
{
	memset(h, 0, sizeof(*h));
	h->released_uid = -1;
}

void operator_hand_free(struct operator_hand *h)
{
	free(h->holds);
	free(h->paused);
	operator_hand_init(h);
}

static bool valid(const char *name)
{
	return name_is_valid(name, strlen(name));
}

static struct operator_hold *find_hold(const struct operator_hand *h, const char *backend,
				       const char *server)
{
	for (uint32_t i = 0; i < h->nb_holds; i++)
		if (strcmp(h->holds[i].backend, backend) == 0 &&
		    strcmp(h->holds[i].server, server) == 0)
			return &h->holds[i];
	return NULL;
}

const struct operator_hold *operator_hand_find_hold(const struct operator_hand *h,
						    const char *backend, const char *server)
{
	return find_hold(h, backend, server);
}

/* Room for one more of an array of `size`-byte items; false when the
 * allocation fails or `max` is reached. */
static bool grow(void **items, uint32_t nb, uint32_t *cap, size_t size, uint32_t max)
{
	if (nb < *cap)
		return true;
	if (nb >= max)
		return false;
	uint32_t want = *cap ? *cap * 2 : 8;
	if (want > max)
		want = max;
	void *p = realloc(*items, (size_t)want * size);
	if (!p)
		return false;
	*items = p;
	*cap = want;
	return true;
}

bool operator_hand_hold(struct operator_hand *h, const struct operator_hold *hold, char *err,
			size_t err_size)
{
	if (!valid(hold->backend) || !valid(hold->server)) {
		errmsg_set(err, err_size, "'%s/%s' is not a server name HAProxy accepts",
			   hold->backend, hold->server);
		return false;
	}
	if (hold->hold != BREAKER_HOLD_OUT && hold->hold != BREAKER_HOLD_IN) {
		errmsg_set(err, err_size, "a hold is out or in");
		return false;
	}
	struct operator_hold *at = find_hold(h, hold->backend, hold->server);
	if (!at) {
		if (!grow((void **)&h->holds, h->nb_holds, &h->cap_holds, sizeof(*h->holds),
			  OPERATOR_HAND_MAX_HOLDS)) {
			errmsg_set(err, err_size, "%u holds already: lift some first",
				   (unsigned)h->nb_holds);
			return false;
		}
		at = &h->holds[h->nb_holds++];
	}
	*at = *hold;
	at->forced = hold->hold == BREAKER_HOLD_OUT && hold->forced;
	h->generation++;
	return true;
}

bool operator_hand_unhold(struct operator_hand *h, const char *backend, const char *server)
{
	struct operator_hold *at = find_hold(h, backend, server);
	if (!at)
		return false;
	*at = h->holds[--h->nb_holds];
	h->generation++;
	return true;
}

const struct operator_pause *operator_hand_find_pause(const struct operator_hand *h,
						      const char *backend)
{
	for (uint32_t i = 0; i < h->nb_paused; i++)
		if (strcmp(h->paused[i].backend, backend) == 0)
			return &h->paused[i];
	return NULL;
}

bool operator_hand_pause(struct operator_hand *h, const char *backend, int64_t now_wall_ms,
			 long uid, char *err, size_t err_size)
{
	if (!valid(backend)) {
		errmsg_set(err, err_size, "'%s' is not a backend name HAProxy accepts", backend);
		return false;
	}
	if (operator_hand_find_pause(h, backend)) {
		errmsg_set(err, err_size, "backend %s is paused already", backend);
		return false;
	}
	if (!grow((void **)&h->paused, h->nb_paused, &h->cap_paused, sizeof(*h->paused),
		  OPERATOR_HAND_MAX_PAUSED)) {
		errmsg_set(err, err_size, "%u backends paused already: resume some first",
			   (unsigned)h->nb_paused);
		return false;
	}
	struct operator_pause *p = &h->paused[h->nb_paused++];
	memset(p, 0, sizeof(*p));
	snprintf(p->backend, sizeof(p->backend), "%s", backend);
	p->since_wall_ms = now_wall_ms;
	p->uid = uid;
	h->generation++;
	return true;
}

bool operator_hand_resume(struct operator_hand *h, const char *backend)
{
	for (uint32_t i = 0; i < h->nb_paused; i++) {
		if (strcmp(h->paused[i].backend, backend) == 0) {
			h->paused[i] = h->paused[--h->nb_paused];
			h->generation++;
			return true;
		}
	}
	return false;
}

bool operator_hand_release(struct operator_hand *h, int64_t now_wall_ms, long uid)
{
	if (h->released)
		return false;
	h->released = true;
	h->released_since_wall_ms = now_wall_ms;
	h->released_uid = uid;
	h->generation++;
	return true;
}

bool operator_hand_resume_all(struct operator_hand *h)
{
	if (!h->released && h->nb_paused == 0)
		return false;
	h->released = false;
	h->released_since_wall_ms = 0;
	h->released_uid = -1;
	h->nb_paused = 0;
	h->generation++;
	return true;
}

bool operator_hand_observe_only(const struct operator_hand *h, const char *backend)
{
	return h->released || operator_hand_find_pause(h, backend) != NULL;
}

uint32_t operator_hand_expire(struct operator_hand *h, int64_t now_wall_ms)
{
	uint32_t dropped = 0;
	for (uint32_t i = 0; i < h->nb_holds;) {
		if (h->holds[i].until_wall_ms != 0 && h->holds[i].until_wall_ms <= now_wall_ms) {
			h->holds[i] = h->holds[--h->nb_holds];
			dropped++;
		} else {
			i++;
		}
	}
	if (dropped)
		h->generation++;
	return dropped;
}

bool operator_hand_apply(const struct operator_hand *h, const char *backend, const char *server,
			 struct breaker *b, uint64_t now_ms, int64_t now_wall_ms)
{
	bool was_observing = b->observe_only;
	uint8_t was_hold = b->hold;
	bool was_forced = b->hold_forced;
	const struct operator_hold *hold = find_hold(h, backend, server);

	b->observe_only = operator_hand_observe_only(h, backend);
	if (!hold) {
		breaker_hold_set(b, BREAKER_HOLD_NONE, 0, false);
	} else {
		/* The wall-clock end on this process's clock; one already
		 * past ends at the next tick. */
		uint64_t until = 0;
		if (hold->until_wall_ms != 0) {
			int64_t left = hold->until_wall_ms - now_wall_ms;
			until = left > 0 ? now_ms + (uint64_t)left : (now_ms ? now_ms : 1);
		}
		breaker_hold_set(b, hold->hold, until, hold->forced);
	}
	return b->observe_only != was_observing || b->hold != was_hold ||
	       b->hold_forced != was_forced;
}

/* ---- the record as text ---- */

#define OPERATOR_HAND_HEADER "spoa-breaker operator 1"

void operator_hand_format(const struct operator_hand *h, struct strbuf *out)
{
	strbuf_puts(out, OPERATOR_HAND_HEADER "\n");
	if (h->released)
		strbuf_printf(out, "released %" PRId64 " %ld\n", h->released_since_wall_ms,
			      h->released_uid);
	for (uint32_t i = 0; i < h->nb_paused; i++)
		strbuf_printf(out, "pause %s %" PRId64 " %ld\n", h->paused[i].backend,
			      h->paused[i].since_wall_ms, h->paused[i].uid);
	for (uint32_t i = 0; i < h->nb_holds; i++) {
		const struct operator_hold *o = &h->holds[i];
		strbuf_printf(out, "hold %s %s/%s %" PRId64 " %" PRId64 " %ld%s\n",
			      breaker_hold_name(o->hold), o->backend, o->server, o->until_wall_ms,
			      o->since_wall_ms, o->uid, o->forced ? " force" : "");
	}
}

/* The line's words, at most max of them, split on blanks, in place. */
static unsigned split_words(char *line, char **words, unsigned max)
{
	unsigned n = 0;
	char *save = NULL;
	for (char *w = strtok_r(line, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (n == max)
			return max + 1;
		words[n++] = w;
	}
	return n;
}

static bool parse_int64(const char *text, int64_t *out)
{
	char *end;
	if (!*text)
		return false;
	long long v = strtoll(text, &end, 10);
	if (*end)
		return false;
	*out = v;
	return true;
}

static bool parse_uid(const char *text, long *out)
{
	int64_t v;
	if (!parse_int64(text, &v) || v < -1 || v > INT32_MAX)
		return false;
	*out = (long)v;
	return true;
}

/* One line after the header into h; false with why. */
static bool parse_line(struct operator_hand *h, char *line, char *why, size_t why_size)
{
	char *w[8];
	unsigned n = split_words(line, w, 7);

	if (n == 0)
		return true;
	if (strcmp(w[0], "released") == 0 && n == 3) {
		int64_t since;
		long uid;
		if (!parse_int64(w[1], &since) || !parse_uid(w[2], &uid))
			goto bad_numbers;
		h->released = true;
		h->released_since_wall_ms = since;
		h->released_uid = uid;
		return true;
	}
	if (strcmp(w[0], "pause") == 0 && n == 4) {
		int64_t since;
		long uid;
		if (!parse_int64(w[2], &since) || !parse_uid(w[3], &uid))
			goto bad_numbers;
		return operator_hand_pause(h, w[1], since, uid, why, why_size);
	}
	if (strcmp(w[0], "hold") == 0 && (n == 6 || (n == 7 && strcmp(w[6], "force") == 0))) {
		struct operator_hold o = {0};
		char *slash = strchr(w[2], '/');
		if (strcmp(w[1], "out") == 0)
			o.hold = BREAKER_HOLD_OUT;
		else if (strcmp(w[1], "in") == 0)
			o.hold = BREAKER_HOLD_IN;
		if (o.hold == BREAKER_HOLD_NONE || !slash || slash - w[2] > BREAKER_NAME_MAX ||
		    strlen(slash + 1) > BREAKER_NAME_MAX) {
			errmsg_set(why, why_size, "expected hold out|in BACKEND/SERVER ...");
			return false;
		}
		memcpy(o.backend, w[2], (size_t)(slash - w[2]));
		snprintf(o.server, sizeof(o.server), "%s", slash + 1);
		if (!parse_int64(w[3], &o.until_wall_ms) || !parse_int64(w[4], &o.since_wall_ms) ||
		    !parse_uid(w[5], &o.uid) || o.until_wall_ms < 0)
			goto bad_numbers;
		o.forced = n == 7;
		if (o.forced && o.hold != BREAKER_HOLD_OUT) {
			errmsg_set(why, why_size, "force is for hold out only");
			return false;
		}
		return operator_hand_hold(h, &o, why, why_size);
	}
	errmsg_set(why, why_size, "expected released, pause or hold with their fields");
	return false;
bad_numbers:
	errmsg_set(why, why_size, "a time or a uid is not a number");
	return false;
}

bool operator_hand_parse(struct operator_hand *h, const char *text, size_t len, char *err,
			 size_t err_size)
{
	struct operator_hand parsed;
	char line[1024];
	char why[256];
	size_t pos = 0;
	unsigned lineno = 0;

	if (len > OPERATOR_HAND_MAX_TEXT) {
		errmsg_set(err, err_size, "%zu bytes, over the limit of %u", len,
			   OPERATOR_HAND_MAX_TEXT);
		return false;
	}
	operator_hand_init(&parsed);
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		lineno++;
		if (n >= sizeof(line) || memchr(text + pos, '\0', n)) {
			errmsg_set(err, err_size, "line %u: %s", lineno,
				   n >= sizeof(line) ? "too long" : "holds a NUL byte");
			goto fail;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos += n + (nl ? 1 : 0);
		if (lineno == 1) {
			if (strcmp(line, OPERATOR_HAND_HEADER) != 0) {
				errmsg_set(err, err_size, "line 1: expected \"%s\"",
					   OPERATOR_HAND_HEADER);
				goto fail;
			}
			continue;
		}
		why[0] = '\0';
		if (!parse_line(&parsed, line, why, sizeof(why))) {
			errmsg_set(err, err_size, "line %u: %s", lineno, why);
			goto fail;
		}
	}
	if (lineno == 0) {
		errmsg_set(err, err_size, "empty");
		goto fail;
	}
	parsed.generation = h->generation + 1;
	operator_hand_free(h);
	*h = parsed;
	return true;
fail:
	operator_hand_free(&parsed);
	return false;
}
