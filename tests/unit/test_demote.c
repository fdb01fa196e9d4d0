// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "agent/demote.h"

/* n1's agent: its server says master, no lease, the controller names n2 at epoch 4. */
static struct demote_in base(int64_t now)
{
	struct demote_in in = {.now_ms = now,
			       .epoch = 4,
			       .primary = "n2",
			       .me = "n1",
			       .same_shard = true,
			       .lease_held = false,
			       .master_before = true};
	return in;
}

static void test_demotes_once_per_epoch(void **state)
{
	struct demote_sm sm;
	struct demote_in in = base(1000);

	(void)state;
	demote_init(&sm);
	assert_true(demote_on_answer(&sm, &in));
	in.now_ms = 1100;
	assert_false(demote_on_answer(&sm, &in)); /* in flight */
	demote_done(&sm, 1200, true);
	in.now_ms = 20000;
	assert_false(demote_on_answer(&sm, &in)); /* done at this epoch */
	in.episode = 1; /* restarted as a master again (its config not rewritten) */
	assert_true(demote_on_answer(&sm, &in));
	demote_done(&sm, 20100, true);
	assert_false(demote_on_answer(&sm, &in));
	in.epoch = 5;
	assert_true(demote_on_answer(&sm, &in)); /* a new failover: again */
}

static void test_never_without_every_condition(void **state)
{
	struct demote_sm sm;
	struct demote_in in;

	(void)state;
	demote_init(&sm);
	in = base(1000);
	in.primary = "n1"; /* names us */
	assert_false(demote_on_answer(&sm, &in));
	in = base(1000);
	in.primary = ""; /* names nobody (a failover running) */
	assert_false(demote_on_answer(&sm, &in));
	in = base(1000);
	in.same_shard = false;
	assert_false(demote_on_answer(&sm, &in));
	in = base(1000);
	in.lease_held = true; /* still counted on, or a replica just promoted */
	assert_false(demote_on_answer(&sm, &in));
	in = base(1000);
	in.master_before = false; /* promoted after the REPORT was sent: an old answer */
	assert_false(demote_on_answer(&sm, &in));
	in = base(1000);
	assert_true(demote_on_answer(&sm, &in)); /* all of them: yes */
}

static void test_older_epoch_never(void **state)
{
	struct demote_sm sm;
	struct demote_in in = base(1000);

	(void)state;
	demote_init(&sm);
	in.primary = "n1";
	in.epoch = 7; /* seen: epoch 7 names us */
	assert_false(demote_on_answer(&sm, &in));
	in = base(1100); /* epoch 4 names n2: behind the times */
	assert_false(demote_on_answer(&sm, &in));
	in.epoch = 7;
	assert_true(demote_on_answer(&sm, &in));
}

static void test_failure_backs_off(void **state)
{
	struct demote_sm sm;
	struct demote_in in = base(1000);

	(void)state;
	demote_init(&sm);
	assert_true(demote_on_answer(&sm, &in));
	demote_done(&sm, 1000, false);
	in.now_ms = 1999;
	assert_false(demote_on_answer(&sm, &in));
	in.now_ms = 2000;
	assert_true(demote_on_answer(&sm, &in));
	demote_done(&sm, 2000, false); /* 2 s now */
	in.now_ms = 3999;
	assert_false(demote_on_answer(&sm, &in));
	in.now_ms = 4000;
	assert_true(demote_on_answer(&sm, &in));
	for (int i = 0; i < 10; i++)
		demote_done(&sm, in.now_ms, false), sm.in_flight = true;
	sm.in_flight = false;
	assert_int_equal(sm.backoff_ms, DEMOTE_BACKOFF_MAX_MS);
	in.epoch = 5; /* a new epoch starts from the minimum */
	in.now_ms = sm.next_try_ms;
	assert_true(demote_on_answer(&sm, &in));
	assert_int_equal(sm.backoff_ms, DEMOTE_BACKOFF_MIN_MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_demotes_once_per_epoch),
	    cmocka_unit_test(test_never_without_every_condition),
	    cmocka_unit_test(test_older_epoch_never),
	    cmocka_unit_test(test_failure_backs_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
