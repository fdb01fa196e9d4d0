// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A spare's own failed full syncs (user/controller/spare_sync.c), from polls of its INFO
 * and its primary's: the other replicas' full syncs, which the primary's sync_full
 * counts with the spare's, never fail a healthy spare. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "controller/spare_sync.h"

#define SP_SYNC_TRIES 3 /* ctl_spares.c's */

static int poll(struct spare_sync *s, bool syncing, bool linked, long long in, long long full)
{
	struct spare_sync_seen p = {syncing, linked, in, full};

	return spare_sync_poll(s, &p);
}

/* One long full sync of the spare (a big data set) while the other replicas of the
 * primary resync again and again (their sync_full rises by 6): none of them is the
 * spare's, none failed (the primary's count alone said 6 >= 3: spare_sync_failed). */
static void test_other_replicas_resync(void **state)
{
	struct spare_sync s;
	long long full = 10;

	(void)state;
	spare_sync_begin(&s);
	for (int i = 0; i < 6; i++)
		assert_int_equal(poll(&s, true, false, 1000 * i, full++), 0);
	assert_true(full - 10 >= SP_SYNC_TRIES);
	/* Synced (linked, the stream's bytes): still none failed. */
	assert_int_equal(poll(&s, false, true, 9000, full++), 0);
	assert_int_equal(poll(&s, false, true, 9100, full++), 0);
	/* Its link dropped once (the stream's bytes came over a link that was up): no
	 * full sync of its own failed either. */
	assert_int_equal(poll(&s, false, false, 9200, full++), 0);
	assert_int_equal(poll(&s, false, false, 9200, full++), 0);
}

/* Before it is attached for good the spare waits, unlinked, while other replicas sync:
 * no bytes of its own come in, nothing failed. */
static void test_waiting_spare(void **state)
{
	struct spare_sync s;

	(void)state;
	spare_sync_begin(&s);
	for (int i = 0; i < 10; i++)
		assert_int_equal(poll(&s, false, false, 0, 100 + i), 0);
}

/* A spare whose disk is full: each try syncs, fails, and it retries a second later.
 * Seen failing whether a poll caught it syncing or only its RDB's bytes came in
 * between two polls; failed after SP_SYNC_TRIES. */
static void test_own_tries_fail(void **state)
{
	struct spare_sync s;

	(void)state;
	spare_sync_begin(&s);
	assert_int_equal(poll(&s, true, false, 100, 5), 0); /* the first try, under way */
	assert_int_equal(poll(&s, false, false, 1100, 5), 1);
	assert_int_equal(poll(&s, false, false, 1100, 5), 1); /* waiting to retry */
	/* The second try began and failed between two polls: its bytes came in. */
	assert_int_equal(poll(&s, false, false, 2100, 6), 2);
	assert_int_equal(poll(&s, true, false, 2200, 7), 2);
	assert_int_equal(poll(&s, true, false, 2600, 7), 2);
	assert_int_equal(poll(&s, false, false, 3100, 7), SP_SYNC_TRIES);
}

/* No more than the primary says it began (plus one under way at the first poll). */
static void test_bounded_by_the_primary(void **state)
{
	struct spare_sync s;

	(void)state;
	spare_sync_begin(&s);
	assert_int_equal(poll(&s, true, false, 0, 7), 0);
	assert_int_equal(poll(&s, false, false, 10, 7), 1);
	assert_int_equal(poll(&s, true, false, 20, 7), 1);
	assert_int_equal(poll(&s, false, false, 30, 7), 1); /* the primary began none */
	assert_int_equal(poll(&s, true, false, 40, 8), 1);
	assert_int_equal(poll(&s, false, false, 50, 8), 2);
	/* A primary that says no sync_full (-1): the spare's own count alone. */
	spare_sync_begin(&s);
	assert_int_equal(poll(&s, false, false, -1, -1), 0);
	assert_int_equal(poll(&s, true, false, -1, -1), 0);
	assert_int_equal(poll(&s, false, false, -1, -1), 1);
	/* Neither field (a server without total_net_repl_input_bytes): tries a poll
	 * caught syncing. */
	assert_int_equal(poll(&s, false, false, -1, -1), 1);
	assert_int_equal(poll(&s, true, false, -1, -1), 1);
	assert_int_equal(poll(&s, false, false, -1, -1), 2);
	/* A sync restarted (a new epoch): counted from nothing. */
	spare_sync_begin(&s);
	assert_int_equal(poll(&s, false, false, 500, 9), 0);
	assert_int_equal(poll(&s, false, false, 600, 10), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_other_replicas_resync),
	    cmocka_unit_test(test_waiting_spare),
	    cmocka_unit_test(test_own_tries_fail),
	    cmocka_unit_test(test_bounded_by_the_primary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
