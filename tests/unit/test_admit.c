// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Lease admission grants as the agent applies them (agent/admit.c): every peer before a
 * grant, the newest grant by term then number in force, an older or malformed one
 * ignored, and what its REPORT says. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "agent/admit.h"

static struct admit_set S;

static int setup(void **state)
{
	(void)state;
	memset(&S, 0, sizeof(S));
	return 0;
}

/* Before the first answer (a restarted agent does not know what it confirmed before)
 * no peer counts; an answer without a grant (an older controller): every peer counts,
 * until a grant comes; a later answer without one does not undo a grant. */
static void test_admit_before_any_grant(void **state)
{
	char csv[64];

	(void)state;
	assert_false(S.have);
	assert_false(admit_has(&S, "n1"));
	assert_string_equal(admit_csv(&S, csv, sizeof(csv)), "-");
	assert_true(admit_no_grant(&S));
	assert_false(admit_no_grant(&S));
	assert_true(admit_has(&S, "n1"));
	assert_true(admit_has(&S, "anything"));
	assert_string_equal(admit_csv(&S, csv, sizeof(csv)), "*");
	assert_int_equal(admit_apply(&S, 100, 1, "n2"), ADMIT_CHANGED);
	assert_false(admit_has(&S, "n1"));
	assert_false(admit_no_grant(&S));
	assert_false(admit_has(&S, "n1"));
	assert_true(admit_has(&S, "n2"));
}

/* A grant admits exactly its ids (no prefix matches); a withdrawal takes effect at once. */
static void test_admit_grant_and_withdrawal(void **state)
{
	char csv[64];

	(void)state;
	assert_int_equal(admit_apply(&S, 100, 1, "n1 n3 n10"), ADMIT_CHANGED);
	assert_true(admit_has(&S, "n1"));
	assert_true(admit_has(&S, "n3"));
	assert_true(admit_has(&S, "n10"));
	assert_false(admit_has(&S, "n2"));
	assert_false(admit_has(&S, "n"));
	assert_false(admit_has(&S, "n1 "));
	assert_string_equal(admit_csv(&S, csv, sizeof(csv)), "n1,n3,n10");
	assert_int_equal(admit_apply(&S, 100, 2, "n1 n3 n10"), ADMIT_SAME);
	assert_int_equal(S.grant, 2);
	assert_int_equal(admit_apply(&S, 100, 3, "n3 n10"), ADMIT_CHANGED);
	assert_false(admit_has(&S, "n1"));
	assert_int_equal(admit_apply(&S, 100, 4, ""), ADMIT_CHANGED);
	assert_false(admit_has(&S, "n3"));
	assert_string_equal(admit_csv(&S, csv, sizeof(csv)), "-");
}

/* An older grant (a deposed leader's answer arriving late, a previous process's) never
 * undoes a newer one: by term first, then number. A newer term wins whatever its number. */
static void test_admit_older_ignored(void **state)
{
	(void)state;
	assert_int_equal(admit_apply(&S, 200, 50, "n2"), ADMIT_CHANGED);
	assert_int_equal(admit_apply(&S, 200, 49, "n1 n2"), ADMIT_IGNORED);
	assert_int_equal(admit_apply(&S, 199, 1000, "n1 n2"), ADMIT_IGNORED);
	assert_false(admit_has(&S, "n1"));
	assert_int_equal(S.term, 200);
	assert_int_equal(S.grant, 50);
	assert_int_equal(admit_apply(&S, 201, 1, "n1 n2"), ADMIT_CHANGED);
	assert_true(admit_has(&S, "n1"));
	assert_int_equal(S.term, 201);
	assert_int_equal(S.grant, 1);
}

/* Malformed grants change nothing: no term, no number, bad ids or separators, too long. */
static void test_admit_malformed_ignored(void **state)
{
	static char big[ADMIT_LIST_MAX + 8];

	(void)state;
	assert_int_equal(admit_apply(&S, 0, 1, "n1"), ADMIT_IGNORED);
	assert_int_equal(admit_apply(&S, 1, 0, "n1"), ADMIT_IGNORED);
	assert_int_equal(admit_apply(&S, 1, 1, NULL), ADMIT_IGNORED);
	assert_int_equal(admit_apply(&S, 1, 1, "n1  n2"), ADMIT_IGNORED);
	assert_int_equal(admit_apply(&S, 1, 1, " n1"), ADMIT_IGNORED);
	assert_int_equal(admit_apply(&S, 1, 1, "n1 "), ADMIT_IGNORED);
	assert_int_equal(admit_apply(&S, 1, 1, "n1,n2"), ADMIT_IGNORED);
	assert_int_equal(admit_apply(&S, 1, 1, "n\n1"), ADMIT_IGNORED);
	memset(big, 'a', sizeof(big) - 1);
	assert_int_equal(admit_apply(&S, 1, 1, big), ADMIT_IGNORED);
	assert_false(S.have);
	assert_false(admit_has(&S, "n1"));
	assert_int_equal(admit_apply(&S, 5, 5, "n1"), ADMIT_CHANGED);
	assert_int_equal(admit_apply(&S, 6, 1, "n1 bad!"), ADMIT_IGNORED);
	assert_true(admit_has(&S, "n1"));
	assert_int_equal(S.term, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_admit_before_any_grant, setup),
	    cmocka_unit_test_setup(test_admit_grant_and_withdrawal, setup),
	    cmocka_unit_test_setup(test_admit_older_ignored, setup),
	    cmocka_unit_test_setup(test_admit_malformed_ignored, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
