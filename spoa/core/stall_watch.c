/*
 * stall_watch.c - the stalled rule: a hung worker (it accepts requests and
 * never answers) found from HAProxy's looks, before `timeout server`
 * expires on it. Pure: no clock, no I/O; the HAProxy link looks and calls
 * in.
 *
 * The failure rules learn of a hung worker only from its first timeouts,
 * `timeout server` after it hung; every request sent there meanwhile is
 * lost. What shows sooner is the shape of its traffic: requests sent and
 * none answered, while its neighbours answer theirs.
 *
 * Two forms. The counted one (stalled_requests, on by default) compares a
 * worker with its neighbours request for request, and so needs no bound
 * on how long an answer may take: below; fewer requests than
 * stalled_requests are weighed by how unlikely their silence is for a
 * healthy worker (silence_odds.c). The timed one (stalled_after,
 * off by default) says "requests in flight this long and no response",
 * which only a fleet whose responses have a known upper bound can name: a
 * worker generating text for tens of seconds is legitimately "in flight,
 * unanswered" all that time. Both always relative to the neighbours: when
 * the whole backend stops answering (a shared dependency down, a global
 * overload), no one worker is at fault, and draining them one by one
 * would only make the outage total.
 */
#include "core/breaker.h"
#include "core/silence_odds.h"

/* ---- the counted rule ---- */

/*
 * The moment. A worker's watch starts at the last look before its first
 * request since it last answered: every request counted in `sent` left
 * HAProxy for it after that look, and it has answered nothing since - not
 * these, not older ones. Any sign of life moves the moment to the look
 * that saw it, and so does every look at which it was sent nothing yet: a
 * worker back from an idle stretch or a drain is compared from its first
 * new request on, never with neighbours answering requests it was never
 * sent. Without a baseline (the first look, a restarted HAProxy) nothing
 * can be counted, and the moment is that look.
 *
 * The neighbours' side, from the same looks: nb_sent requests sent to them
 * after the moment; nb_answered answers they gave since, of which at most
 * nb_pending_then (their requests in flight at the moment still awaiting
 * a head) may be for requests sent before it. So at least
 * nb_answered - nb_pending_then of their requests sent after the moment
 * were answered: a lower bound, never a guess, whatever their answer
 * times. Streams count from their head: a neighbour streaming for a minute
 * holds no head back, and a stalled worker's neighbours' long streams do
 * not hide it.
 */
static void stall_restart(struct stall_watch *w, const struct stall_look *l)
{
	w->from_ms = l->now_ms != 0 ? l->now_ms : 1; /* 0 means "none yet" */
	w->sent = 0;
	w->nb_sent = 0;
	w->nb_answered = 0;
	w->nb_pending_then = l->nb_pending;
}

/*
 * An answer after a silence: the worker was silent that long and alive (a
 * slower worker than its neighbours, a long completion not streamed). The
 * silence is the longer of the moment's (requests sent since, none
 * answered) and the timed watch's (requests in flight at every look since
 * since_ms, nothing answered; called before stall_watch_look() ends it).
 * The second covers requests sent before the moment: a worker opened
 * before its first answer has its requests answered while it is open or
 * half-open, its watch started again by the new state with nothing sent
 * since - and without it, a worker answering whole after 10 s among
 * streaming ones would be opened again after each probe, its next silence
 * read as a hang.
 */
static void stall_note_proof(struct stall_watch *w, const struct stall_look *l)
{
	if (!l->baseline || !l->answered)
		return;
	if (w->from_ms != 0 && w->sent > 0 && l->now_ms > w->from_ms &&
	    l->now_ms - w->from_ms > w->proven_silence_ms)
		w->proven_silence_ms = l->now_ms - w->from_ms;
	if (w->since_ms != 0 && l->now_ms > w->since_ms &&
	    l->now_ms - w->since_ms > w->proven_silence_ms)
		w->proven_silence_ms = l->now_ms - w->since_ms;
}

void stall_count_look(struct stall_watch *w, const struct stall_look *l)
{
	stall_note_proof(w, l);
	if (!l->baseline || l->answered || w->from_ms == 0 || (w->sent == 0 && l->sent == 0)) {
		stall_restart(w, l);
		return;
	}
	w->sent += l->sent;
	w->nb_sent += l->nb_sent;
	w->nb_answered += l->nb_answered;
}

/*
 * Why 16 requests and 80 % of at least 32 of the neighbours', at least a
 * second (STALL_MIN_WATCH_MS).
 *
 * Take a healthy worker whose answer times follow the same law as its
 * neighbours' - any law: a long tail to a minute, a head at the first
 * token of a stream, a fixed minimum of ten seconds. A request sent at t
 * is answered by now with some probability F(now - t); its 16 requests
 * sent after the moment are all unanswered with probability the product
 * of (1 - F) over their ages, which is at most (1 - f)^16 where f is the
 * mean of F over those ages (the arithmetic-geometric mean inequality).
 * Its neighbours' requests were sent over the same stretch, so their
 * answered share estimates that same f; the rule wants it at 80 %, over at
 * least 32 of their requests. The chance that both happen to a healthy
 * worker - its 16 all unanswered, and at least 26 of 32 of theirs answered
 * - is largest when f is about 0.55, and is then 5.1e-9; with 64 requests
 * of theirs it is 1.8e-10. Per request sent, below 3.2e-10: a worker
 * taking 100 requests a second would be opened by chance about once a
 * year of traffic. (90 % over 16 gave 4.2e-9, about the same, but the
 * share of a stretch's requests answered grows as 1 - mean answer time /
 * stretch: 90 % wants ten mean answer times, 80 % five, so a hung worker
 * among long completions is found twice as soon.) Fewer requests or a
 * lower share cost orders of magnitude (75 % over 16: 1.4e-6), more of
 * either only delays the finding.
 *
 * What the bound does not cover, and why the rule stays safe there:
 * - a slower worker: its answers come later than its neighbours', so its
 *   chance is above the bound, by how much depends on how much slower; but
 *   it answers, and a single answer moves the moment: to be opened it must
 *   answer none of 16 requests while its neighbours answered four in five
 *   of theirs sent over the same stretch;
 * - low traffic: 16 requests sent to one worker take as long as they take;
 *   the rule is later, never looser;
 * - a whole backend stalled: its neighbours answer nothing, and no share
 *   is met;
 * - a half-open breaker: HAProxy lets only its probes in (maxconn), never
 *   16; a hung probe ends at `timeout server` as a failure, or as a retry
 *   the HAProxy link reads as one (signals.c).
 * - a pause: the second (STALL_MIN_WATCH_MS) keeps a worker that stops
 *   for less, while its neighbours answer fast, from being opened for it.
 * - a worker much slower than its neighbours (every answer whole after
 *   10 s, theirs streamed from the first half second): until its first
 *   answer it is, by counts, a hung worker, and may be opened once. Its
 *   answer then proves how long it can be silent and alive
 *   (proven_silence_ms, kept across states and watches): a later silence
 *   must last twice that, so it is not opened again for being slow, while
 *   a worker that used to answer fast and hangs is found as soon as ever.
 * How long a hung worker takes to be found follows: 16 requests sent to
 * it, 32 to its neighbours, and their answers to four in five of theirs
 * sent since - at least a second, and about five times their mean head
 * time (seconds with streams, about a minute with completions of 1-60 s not
 * streamed).
 */
/* The neighbours' requests the share is taken over: at least twice the
 * worker's (see the bound above). */
#define STALL_NEIGHBOUR_FACTOR 2

static bool breaker_is_stalled_by_count(const struct breaker_policy *p,
					const struct stall_watch *w, uint64_t now_ms)
{
	if (p->stalled_requests == 0 || w->from_ms == 0 || w->sent == 0 || now_ms < w->from_ms ||
	    now_ms - w->from_ms < STALL_MIN_WATCH_MS ||
	    now_ms - w->from_ms < 2 * w->proven_silence_ms)
		return false;
	uint64_t answered = w->nb_answered > w->nb_pending_then
				    ? w->nb_answered - w->nb_pending_then
				    : 0;
	if (answered > w->nb_sent)
		answered = w->nb_sent;
	/* Both sides are counts of requests: far below 2^57, no overflow. */
	if (w->sent >= p->stalled_requests &&
	    w->nb_sent >= STALL_NEIGHBOUR_FACTOR * (uint64_t)p->stalled_requests &&
	    answered * 100 >= (uint64_t)p->stalled_share * w->nb_sent)
		return true;
	/* Fewer than stalled_requests, or a share below stalled_share: the
	 * same counts weighed by how unlikely they are for a healthy worker
	 * (silence_odds.c) - a hung worker that swallows closed-loop clients
	 * is sent few requests, while its neighbours answer many. */
	return now_ms - w->from_ms >= SILENCE_MIN_WATCH_MS &&
	       silence_is_unlikely(w->sent, w->nb_sent, answered);
}

bool breaker_is_stalled_by_counts(const struct breaker *b, const struct stall_watch *w,
				  uint64_t now_ms)
{
	const struct breaker_policy *p = b->policy;

	/* A state is judged on its own time: the requests of a worker
	 * closed again after its probes are counted from then. */
	if (!p || b->state == BREAKER_OPEN || w->from_ms < b->state_since_ms)
		return false;
	return breaker_is_stalled_by_count(p, w, now_ms);
}

/* ---- the timed rule (stalled_after) ---- */

/*
 * Conservative on both ends. The watch starts at the first look that sees
 * requests in flight with no response since the previous one - the
 * requests may be older, never younger - so a request is in flight at
 * least as long as the watch says, and the rule never fires early. It
 * stops at any response, or a look with nothing in flight: a request
 * after an idle stretch starts a new watch, and a worker that answers now
 * and then, however slowly, is never stalled. Between two looks a request
 * may end without an answer (an error, a client that gave up): that is no
 * sign of life, so the watch goes on.
 */
void stall_watch_look(struct stall_watch *w, bool in_flight, bool answered, uint64_t now_ms)
{
	if (!in_flight || answered)
		w->since_ms = 0;
	else if (w->since_ms == 0)
		w->since_ms = now_ms != 0 ? now_ms : 1; /* 0 means "not watching" */
}

bool breaker_is_stalled(const struct breaker *b, const struct stall_watch *w, uint64_t now_ms,
			uint64_t others_succeeded_ms)
{
	const struct breaker_policy *p = b->policy;

	if (!p || p->stalled_after_ms == 0 || w->since_ms == 0 || b->state == BREAKER_OPEN)
		return false;
	/* A state is judged on its own time: requests hung before a trip
	 * are no verdict on the half-open that follows, however long they
	 * stay until `timeout server` ends them. */
	uint64_t since = w->since_ms > b->state_since_ms ? w->since_ms : b->state_since_ms;
	/* Strictly after: a neighbour's answer stamped at the very look that
	 * started the watch may predate this server's requests. The same
	 * reason a whole backend that hangs at once never trips: its last
	 * answers all come before every watch began. */
	return now_ms >= since && now_ms - since >= p->stalled_after_ms &&
	       others_succeeded_ms > since;
}
