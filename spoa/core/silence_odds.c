/*
 * silence_odds.c - how unlikely a worker's silence is, had it behaved like
 * its neighbours: the evidence the stalled rule weighs (stall_watch.c),
 * scaled to what the looks have seen instead of a fixed count. Pure
 * arithmetic; no libm (the pure core links none), so its own logarithm.
 *
 * The survival reading. Each request sent to the worker since it last
 * answered, at s_i, has waited now - s_i with no head. Had the worker
 * behaved like its neighbours - the same law F of time-to-head, a head at
 * the first token of a stream, at the end of a whole answer - each would
 * still be waiting with probability 1 - F(now - s_i), and all k of them
 * with the product of those survival probabilities.
 *
 * What the agent can read of F. HAProxy's counters per look (stot, the
 * hrsp_* heads, scur, econ, wredis) give, per look interval, requests sent
 * and heads given, never which request a head answered: a stream's head at
 * once and a whole answer's after a minute are the same +1. So F at a
 * given age is not known; HAProxy's rtime is one mean over its last 1024
 * answers, and a mean bounds a survival probability only by Markov's
 * F(a) >= 1 - mean/a, far too weak (a third of a request's survival at
 * three mean times). Per-request times would need HAProxy to say them:
 * res.timer.hdr in the SPOE message (HAProxy 2.8 and later, one more
 * argument per response; steady-state mode sends no message for a
 * success at all), or `show sess` at each look (one line per stream, its
 * age and whether its response began: a cost that grows with the
 * traffic, per look). What the counters do give is a share: of the
 * neighbours' requests sent over the worker's stretch, how many were
 * answered by now - at least their heads since the stretch began less
 * the heads they still owed from before it (stall_watch.c).
 *
 * The bound. With f the mean of F over the worker's k ages, the product
 * of the k survival probabilities is at most (1 - f)^k (the arithmetic-
 * geometric mean inequality): the law need not be known, only f. The
 * neighbours' m requests of the same stretch have, on average, the same
 * ages, hence the same mean f; the number answered is a sum of
 * independent Bernoulli draws of mean f, whose upper tail is bounded by
 * Hoeffding's form of the Chernoff bound, whatever their individual
 * chances: P(at least n of m) <= exp(-m D(n/m || f)) for f <= n/m, D the
 * Kullback-Leibler divergence of two Bernoulli laws. The worker and its
 * neighbours answer independently, so the chance that a healthy worker
 * shows what the looks show is at most, for the unknown f,
 *
 *	g(f) = (1 - f)^k exp(-m D(n/m || f))
 *	     = (1 - f)^(m + k - n) f^n / ((n/m)^n ((m - n)/m)^(m - n)),
 *
 * largest at f = n / (m + k) (which is below n/m; for f above n/m the
 * tail is at most 1 and (1 - f)^k at most g(n/m)), so
 *
 *	ln P <= n ln(m / (m + k)) + (m + k - n) ln((m + k - n) / (m + k))
 *	        - (m - n) ln((m - n) / m),        with 0 ln 0 = 0.
 *
 * The rule opens when that is below ln 5e-9, the bound the counted rule
 * keeps (stall_watch.c); the Chernoff step costs a factor of about four
 * against the exact binomial sum there (2.1e-8 at 16 requests and 26 of
 * 32 answered, where the exact figure is 5.1e-9), so the counted rule
 * stays, for the shapes it already finds. What the reading adds is
 * scale: with all of the neighbours' requests of the stretch answered, it
 * takes 12 silent requests against 16 answers, 6 against 64, 4 against
 * 200, 3 against 1000 - a worker among busy neighbours is found from a few
 * of its own requests, however few clients it swallows.
 *
 * Known well enough: the draws are independent only in the mean. A
 * batching engine answers several requests at once, and a handful of
 * neighbours' answers may all belong to one batch; below 16 answers of
 * theirs over the stretch (SILENCE_MIN_NB_ANSWERS: two batches of eight)
 * their share is not trusted, and the counted rule alone speaks. Silent
 * neighbours (a backend stalled as a whole) give n = 0: a chance of 1,
 * never an opening.
 *
 * What it gives, with the counted rule beside it. In fleet.bats, a hung
 * worker among 40 clients of long streams is opened about 5 s after its
 * first request, from 10 requests (the 5 s floor, SILENCE_MIN_WATCH_MS,
 * is what holds it). Behind 12 closed-loop clients over three workers
 * (hung_closed_loop.bats: half the answers streamed, four in ten whole
 * after 1-6 s, one in ten after 20 s) under `timeout server 5m`, at 40-58 s
 * from 11 requests, where the counted rule alone waits for the timeouts;
 * under `timeout server 30s` the 25 s before the first timeout give it 9
 * or 10 requests against about 20 answered, 1.6e-8 to 5.1e-9: the best
 * this bound allows is at the timeouts. The unit tables
 * (test_stall_closed_loop.c) find it after 100 s with 4 clients, 38 s with
 * 12 (30 s under 5 min), 5 s with 48.
 */
#include "core/silence_odds.h"

/* ln x for x > 0, to about 1e-15: x = y 2^e with y in [1, 2), then
 * ln y = 2 atanh((y - 1) / (y + 1)), whose series gains a factor of nine
 * per term. */
static double ln_positive(double x)
{
	static const double ln2 = 0.69314718055994530942;
	int e = 0;

	while (x >= 2.0) {
		x /= 2.0;
		e++;
	}
	while (x < 1.0) {
		x *= 2.0;
		e--;
	}
	double z = (x - 1.0) / (x + 1.0), z2 = z * z, term = z, sum = 0.0;
	for (int i = 1; i < 40; i += 2) {
		sum += term / i;
		term *= z2;
	}
	return 2.0 * sum + e * ln2;
}

/* a ln(b / c), 0 when a is 0 (the limit of x ln x). */
static double weighted_ln(double a, double b, double c)
{
	return a == 0.0 ? 0.0 : a * ln_positive(b / c);
}

double silence_odds_log(uint64_t sent, uint64_t nb_sent, uint64_t nb_answered)
{
	if (nb_answered > nb_sent)
		nb_answered = nb_sent;
	if (sent == 0 || nb_sent == 0 || nb_answered == 0)
		return 0.0;
	double k = (double)sent, m = (double)nb_sent, n = (double)nb_answered;
	double log_odds = weighted_ln(n, m, m + k) + weighted_ln(m + k - n, m + k - n, m + k) -
			  weighted_ln(m - n, m - n, m);
	return log_odds < 0.0 ? log_odds : 0.0;
}

bool silence_is_unlikely(uint64_t sent, uint64_t nb_sent, uint64_t nb_answered)
{
	static const double ln_bound = -19.113827924512311; /* ln 5e-9 */

	if (nb_answered > nb_sent)
		nb_answered = nb_sent;
	return nb_answered >= SILENCE_MIN_NB_ANSWERS &&
	       silence_odds_log(sent, nb_sent, nb_answered) < ln_bound;
}
