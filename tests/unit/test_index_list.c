/*
 * test_index_list.c - the growable list of table indices: pushes keep
 * their order across growths, a zeroed list is empty, a freed one is
 * empty again and usable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/index_list.h"

static void test_pushes_kept_in_order_across_growths(void **state)
{
	(void)state;
	struct index_list l = {0};
	assert_int_equal(l.nb, 0);
	for (uint32_t i = 0; i < 1000; i++)
		assert_true(index_list_push(&l, 7 * i));
	assert_int_equal(l.nb, 1000);
	assert_true(l.allocated >= 1000);
	for (uint32_t i = 0; i < 1000; i++)
		assert_int_equal(l.at[i], 7 * i);
	/* Emptied by its user (nb = 0), it is filled again from the start. */
	l.nb = 0;
	uint32_t kept = l.allocated;
	assert_true(index_list_push(&l, 42));
	assert_int_equal(l.at[0], 42);
	assert_int_equal(l.allocated, kept);
	index_list_free(&l);
	assert_null(l.at);
	assert_int_equal(l.nb, 0);
	assert_int_equal(l.allocated, 0);
	assert_true(index_list_push(&l, 3));
	assert_int_equal(l.nb, 1);
	index_list_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pushes_kept_in_order_across_growths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
