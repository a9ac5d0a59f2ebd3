/*
 * silence_odds.h - how unlikely a worker's silence is, had it behaved like
 * its neighbours (silence_odds.c). Pure arithmetic on counts.
 */
#ifndef SPOA_CORE_SILENCE_ODDS_H
#define SPOA_CORE_SILENCE_ODDS_H

#include <stdbool.h>
#include <stdint.h>

/* The bound the stalled rule opens under: below this chance, a healthy
 * worker's silence is not believed (stall_watch.c, silence_odds.c). */
#define SILENCE_ODDS_BOUND 5e-9
/* The neighbours' answers, over the stretch, the reading needs before it
 * trusts their share as the law a healthy worker follows. */
#define SILENCE_MIN_NB_ANSWERS 16
/* The shortest silence the reading weighs: the bound holds for a worker
 * that follows its neighbours' law, and a worker that pauses (a collector,
 * a page-in, a long prompt's prefill blocking its batch) does not for that
 * long. Busy neighbours answer a hundred requests in a second, against
 * which five silent requests are already past the bound; the counted rule
 * keeps its own floor (STALL_MIN_WATCH_MS), with its 16 requests. */
#define SILENCE_MIN_WATCH_MS 5000

/*
 * The natural logarithm of an upper bound on the chance that a worker
 * answering like its neighbours leaves all `sent` of its requests of a
 * stretch unanswered while its neighbours answer at least `nb_answered`
 * of their `nb_sent` requests of the same stretch. 0 (a chance of 1) when
 * sent is 0, nb_sent is 0 or nb_answered is 0; nb_answered above nb_sent
 * is read as nb_sent.
 */
double silence_odds_log(uint64_t sent, uint64_t nb_sent, uint64_t nb_answered);

/* Whether that chance is below SILENCE_ODDS_BOUND with at least
 * SILENCE_MIN_NB_ANSWERS answers of the neighbours behind it. */
bool silence_is_unlikely(uint64_t sent, uint64_t nb_sent, uint64_t nb_answered);

#endif
