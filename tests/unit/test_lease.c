// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The write lease's rules (user/agent/lease.c) on an injected clock. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "agent/lease.h"

#define MS    1000000ull
#define LEASE (500 * MS)

static struct lease_sm fresh(void)
{
	struct lease_sm sm;

	lease_init(&sm, NULL, LEASE);
	return sm;
}

/* A fresh lease is not held: only the controller grants it, from the REPORT's send time. */
static void test_controller_grants_from_send_time(void **state)
{
	struct lease_sm sm = fresh();

	(void)state;
	assert_false(lease_held(&sm, 1000 * MS));
	assert_int_equal(lease_on_peer(&sm, 1000 * MS, 990 * MS), LEASE_SAME);
	assert_false(lease_held(&sm, 1000 * MS));
	assert_int_equal(lease_on_controller(&sm, 1010 * MS, 1000 * MS, 4, "n1", "n1", false),
			 LEASE_GRANTED);
	assert_int_equal(sm.k.deadline_ns, 1500 * MS);
	assert_int_equal(sm.k.renewed_ns, 1000 * MS);
	assert_int_equal(sm.k.epoch, 4);
	assert_int_equal(sm.k.source, FL_LEASE_SRC_CONTROLLER);
	assert_true(lease_held(&sm, 1499 * MS));
	assert_false(lease_held(&sm, 1500 * MS));
}

/* Peers keep a running lease alive, from each echo's send time, and never bring back
 * one that ran out. */
static void test_peers_extend_never_revive(void **state)
{
	struct lease_sm sm = fresh();

	(void)state;
	lease_on_controller(&sm, 10 * MS, 0, 1, "n1", "n1", false);
	for (uint64_t t = 100 * MS; t <= 2000 * MS; t += 100 * MS)
		assert_int_equal(lease_on_peer(&sm, t + MS, t), LEASE_EXTENDED);
	assert_int_equal(sm.k.deadline_ns, 2500 * MS);
	assert_int_equal(sm.k.source, FL_LEASE_SRC_PEER);
	/* An older echo answered late does not shorten it. */
	assert_int_equal(lease_on_peer(&sm, 2100 * MS, 1500 * MS), LEASE_SAME);
	assert_int_equal(sm.k.deadline_ns, 2500 * MS);
	/* Run out: a peer's reply (a failover may have happened) does not revive it. */
	assert_int_equal(lease_on_peer(&sm, 2600 * MS, 2550 * MS), LEASE_SAME);
	assert_false(lease_held(&sm, 2600 * MS));
	/* The controller naming us primary does. */
	assert_int_equal(lease_on_controller(&sm, 2700 * MS, 2650 * MS, 1, "n1", "n1", false),
			 LEASE_GRANTED);
}

/* The controller naming another primary takes it away at once, unless our server is a
 * replica (its replies acknowledge no write). */
static void test_other_primary_revokes(void **state)
{
	struct lease_sm sm = fresh();

	(void)state;
	lease_on_controller(&sm, 10 * MS, 0, 1, "n1", "n1", false);
	assert_int_equal(lease_on_controller(&sm, 20 * MS, 15 * MS, 2, "n2", "n1", false),
			 LEASE_REVOKED);
	assert_false(lease_held(&sm, 21 * MS));
	assert_int_equal(lease_on_peer(&sm, 30 * MS, 25 * MS), LEASE_SAME);
	assert_false(lease_held(&sm, 31 * MS));
	/* Demoted: a replica takes the lease on the same answer. */
	assert_int_equal(lease_on_controller(&sm, 40 * MS, 35 * MS, 2, "n2", "n1", true),
			 LEASE_GRANTED);
	/* Unknown primary: nothing. */
	assert_int_equal(lease_on_controller(&sm, 50 * MS, 45 * MS, 2, "", "n1", false),
			 LEASE_SAME);
	assert_true(lease_held(&sm, 50 * MS));
}

/* An answer at an epoch older than one seen (a controller behind the times) counts
 * for nothing. */
static void test_stale_epoch_ignored(void **state)
{
	struct lease_sm sm = fresh();

	(void)state;
	lease_on_controller(&sm, 10 * MS, 0, 7, "n1", "n1", false);
	lease_give_up(&sm);
	assert_int_equal(lease_on_controller(&sm, 20 * MS, 15 * MS, 6, "n1", "n1", false),
			 LEASE_SAME);
	assert_false(lease_held(&sm, 20 * MS));
	assert_int_equal(lease_on_controller(&sm, 30 * MS, 25 * MS, 7, "n1", "n1", false),
			 LEASE_GRANTED);
}

/* Given up: deadline 0, once. An answer that arrives after its own lease would have run
 * out grants nothing. */
static void test_give_up_and_late_answer(void **state)
{
	struct lease_sm sm = fresh();

	(void)state;
	assert_int_equal(lease_give_up(&sm), LEASE_SAME);
	lease_on_controller(&sm, 10 * MS, 0, 1, "n1", "n1", false);
	assert_int_equal(lease_give_up(&sm), LEASE_REVOKED);
	assert_int_equal(sm.k.deadline_ns, 0);
	assert_int_equal(lease_give_up(&sm), LEASE_SAME);
	assert_int_equal(lease_on_controller(&sm, 900 * MS, 300 * MS, 1, "n1", "n1", false),
			 LEASE_SAME);
	assert_false(lease_held(&sm, 900 * MS));
}

/* A pinned lease left by the previous agent is taken over as it is. */
static void test_pinned_taken_over(void **state)
{
	struct fl_lease_state pinned = {
	    .deadline_ns = 800 * MS, .epoch = 5, .port = 6379, .source = FL_LEASE_SRC_PEER};
	struct lease_sm sm;

	(void)state;
	lease_init(&sm, &pinned, LEASE);
	assert_true(lease_held(&sm, 700 * MS));
	assert_int_equal(lease_on_peer(&sm, 710 * MS, 700 * MS), LEASE_EXTENDED);
	assert_int_equal(sm.k.port, 6379);
	assert_int_equal(sm.k.deadline_ns, 1200 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_controller_grants_from_send_time),
	    cmocka_unit_test(test_peers_extend_never_revive),
	    cmocka_unit_test(test_other_primary_revokes),
	    cmocka_unit_test(test_stale_epoch_ignored),
	    cmocka_unit_test(test_give_up_and_late_answer),
	    cmocka_unit_test(test_pinned_taken_over),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
