/*
 * test_silence_odds.c - the silence reading (silence_odds.c) as a table:
 * a worker's requests of a stretch, none answered, against its
 * neighbours' requests of the same stretch and how many they answered ->
 * whether a healthy worker shows that with a chance below 5e-9, and the
 * chance itself where the derivation quotes it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/silence_odds.h"

struct row {
	uint64_t sent, nb_sent, nb_answered;
	bool unlikely;
};

static void test_table(void **state)
{
	(void)state;
	static const struct row rows[] = {
		/* All of the neighbours' requests answered: the fewest
		 * silent requests past the bound, by how many answers. */
		{11, 16, 16, false},
		{12, 16, 16, true},
		{7, 32, 32, false},
		{8, 32, 32, true},
		{5, 64, 64, false},
		{6, 64, 64, true},
		{3, 200, 200, false},
		{4, 200, 200, true},
		{2, 1000, 1000, false},
		{3, 1000, 1000, true},
		/* A lower share wants more: 16 against 26 of 32 is the
		 * counted rule's threshold, above this bound (2.1e-8). */
		{16, 32, 26, false},
		{16, 32, 28, true},
		/* The closed-loop scene at 25 s: 9 or 10 to the hung worker,
		 * about 20 answered by its neighbours - at the bound. */
		{9, 20, 20, false},
		{10, 20, 20, false},
		{11, 20, 20, true},
		/* Fewer than 16 answers of theirs: not trusted, however
		 * long the silence. */
		{1000, 15, 15, false},
		{1000, 16, 16, true},
		/* Silent neighbours (a backend stalled as a whole), a worker
		 * sent nothing, neighbours sent nothing. */
		{100, 100, 0, false},
		{0, 100, 100, false},
		{100, 0, 0, false},
		/* More answers than requests (older ones) count as all. */
		{12, 16, 40, true},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		print_message("%llu silent against %llu of %llu: e^%.2f\n",
			      (unsigned long long)r->sent, (unsigned long long)r->nb_answered,
			      (unsigned long long)r->nb_sent,
			      silence_odds_log(r->sent, r->nb_sent, r->nb_answered));
		assert_int_equal(silence_is_unlikely(r->sent, r->nb_sent, r->nb_answered),
				 r->unlikely);
	}
}

/* The chance quoted in the derivation, and its limits. */
static void test_values(void **state)
{
	(void)state;
	/* 16 silent, 26 of 32 answered: ln 2.136e-8 */
	double v = silence_odds_log(16, 32, 26);
	assert_true(v > -17.6626 && v < -17.6616);
	/* n = m: (m/(m+k))^m (k/(m+k))^k; 16 and 16: 2^-32 */
	v = silence_odds_log(16, 16, 16);
	assert_true(v > -22.1808 && v < -22.1806);
	/* Never above a chance of 1. */
	assert_true(silence_odds_log(1, 100, 1) <= 0.0);
	assert_true(silence_odds_log(0, 10, 10) == 0.0);
	/* Large counts, no overflow: a million answers, 3 silent. */
	v = silence_odds_log(3, 1000000, 1000000);
	assert_true(v < -40.0 && v > -50.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
