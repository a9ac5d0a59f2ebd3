/*
 * operator_hand.h - the operator's word over the breakers (operator_hand.c):
 * holds on single servers, paused backends, the agent released. Pure: no
 * I/O, no clock; times are handed in.
 *
 * The breaker keeps judging under every one of them - its failures are
 * counted and logged, its state moves - and only what HAProxy is made to
 * hold changes (enforce_wanted_state()):
 *   hold out   the server is drained as an open breaker's, no probe, until
 *              the hold ends or is lifted; the ejection cap still applies
 *              unless the hold was forced;
 *   hold in    the server serves as a closed breaker's, never drained;
 *   paused     (a backend) observe only: the agent lifts what it holds
 *              there and does nothing new;
 *   released   every backend paused, and the agent's records in HAProxy's
 *              maps removed: the first step of a removal or a rollback.
 * A pause or a release wins over a hold: the hold is kept and applies
 * again once resumed.
 *
 * Two halves: the breaker's own fields (struct breaker: hold, hold_forced,
 * hold_until_s, observe_only), which the link and the timer read; and the
 * record of what the operator said (struct operator_hand), which outlives
 * any breaker - a hold on a server no HAProxy lists yet waits for it - and
 * is what the agent writes to disk (operator_hand_format()) so that a
 * restart keeps it. operator_hand_apply() brings a breaker in line with
 * the record.
 */
#ifndef SPOA_OPERATOR_HAND_H
#define SPOA_OPERATOR_HAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/breaker-t.h"
#include "util/strbuf.h"

/* ---- one breaker's fields ---- */

/* Holds a breaker out or in until until_ms (monotonic; 0: until lifted);
 * NONE lifts it. */
void breaker_hold_set(struct breaker *b, enum breaker_hold hold, uint64_t until_ms, bool forced);
/* When the hold ends, on the monotonic clock (to the second); 0: no
 * hold, or until lifted. */
uint64_t breaker_hold_until_ms(const struct breaker *b);
/* Ends a hold whose time ran out; true when it did. */
bool breaker_hold_tick(struct breaker *b, uint64_t now_ms);
/* The hold's time left, 0 when none or until lifted. */
uint64_t breaker_hold_left_ms(const struct breaker *b, uint64_t now_ms);
/* A clean CLOSED breaker under the same policy, as if just created: its
 * trips (for the record) kept; any hold lifted, observe_only kept (it is
 * the backend's, not the breaker's). */
void breaker_reset(struct breaker *b, uint64_t now_ms);
/* The operator's fields of `from` onto `to`: the operator's word is about
 * the server, whatever worker its breaker is about (a breaker replaced
 * when HAProxy points the server elsewhere keeps it). */
void breaker_keep_operator(struct breaker *to, const struct breaker *from);
/* "out", "in", "none". */
const char *breaker_hold_name(enum breaker_hold hold);

/* ---- the operator's record ---- */

/* At most this many holds and paused backends are kept: each is a
 * command an operator typed, and the record is rewritten whole on each. */
#define OPERATOR_HAND_MAX_HOLDS 4096
#define OPERATOR_HAND_MAX_PAUSED 1024
/* The record's text is refused past this many bytes unread. */
#define OPERATOR_HAND_MAX_TEXT (2u * 1024 * 1024)

struct operator_hold {
	char backend[BREAKER_NAME_MAX + 1];
	char server[BREAKER_NAME_MAX + 1];
	enum breaker_hold hold;    /* OUT or IN */
	bool forced;               /* OUT past the ejection cap */
	int64_t until_wall_ms;     /* wall clock; 0: until lifted */
	int64_t since_wall_ms;     /* when it was asked for */
	long uid;                  /* who asked (-1: unknown) */
};

struct operator_pause {
	char backend[BREAKER_NAME_MAX + 1];
	int64_t since_wall_ms;
	long uid;
};

struct operator_hand {
	struct operator_hold *holds;
	uint32_t nb_holds, cap_holds;
	struct operator_pause *paused;
	uint32_t nb_paused, cap_paused;
	bool released;
	int64_t released_since_wall_ms;
	long released_uid;
	/* Bumped on every change: what the writer compares with what it wrote. */
	uint64_t generation;
};

void operator_hand_init(struct operator_hand *h);
void operator_hand_free(struct operator_hand *h);

/* Records a hold (replacing one on the same server); false with err set
 * when the record is full or a name is not one HAProxy accepts. */
bool operator_hand_hold(struct operator_hand *h, const struct operator_hold *hold, char *err,
			size_t err_size);
/* Lifts a server's hold; false when it had none. */
bool operator_hand_unhold(struct operator_hand *h, const char *backend, const char *server);
const struct operator_hold *operator_hand_find_hold(const struct operator_hand *h,
						    const char *backend, const char *server);
/* Pauses, resumes a backend; false when it already was so (pause: or
 * the record is full, err says which). */
bool operator_hand_pause(struct operator_hand *h, const char *backend, int64_t now_wall_ms,
			 long uid, char *err, size_t err_size);
bool operator_hand_resume(struct operator_hand *h, const char *backend);
const struct operator_pause *operator_hand_find_pause(const struct operator_hand *h,
						      const char *backend);
/* Releases, resumes all: false when it already was so. resume_all lifts
 * the release and every pause, and keeps the holds. */
bool operator_hand_release(struct operator_hand *h, int64_t now_wall_ms, long uid);
bool operator_hand_resume_all(struct operator_hand *h);
/* Whether the agent only observes backend: released, or it is paused. */
bool operator_hand_observe_only(const struct operator_hand *h, const char *backend);
/* Drops holds whose time ran out by now_wall_ms; how many. */
uint32_t operator_hand_expire(struct operator_hand *h, int64_t now_wall_ms);

/*
 * Brings one breaker in line with the record: its hold (the until on the
 * breaker's monotonic clock, from the two clocks' now) and observe_only.
 * Returns true when something HAProxy should hold for it changed.
 */
bool operator_hand_apply(const struct operator_hand *h, const char *backend, const char *server,
			 struct breaker *b, uint64_t now_ms, int64_t now_wall_ms);

/*
 * The record as text, one line each, a format of its own (docs/control.md):
 *   spoa-breaker operator 1
 *   released SINCE UID
 *   pause BACKEND SINCE UID
 *   hold out|in BACKEND/SERVER UNTIL SINCE UID [force]
 * times in wall-clock milliseconds (UNTIL 0: until lifted). Parsing it
 * replaces *h whole, or leaves it untouched and says in err which line
 * was wrong and why.
 */
void operator_hand_format(const struct operator_hand *h, struct strbuf *out);
bool operator_hand_parse(struct operator_hand *h, const char *text, size_t len, char *err,
			 size_t err_size);

#endif /* SPOA_OPERATOR_HAND_H */
