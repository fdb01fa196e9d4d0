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
	/* Revoked: not even a replica takes it from an answer to a REPORT sent before the
	 * agent allowed it back. */
	assert_true(lease_revoked(&sm));
	assert_int_equal(lease_on_controller(&sm, 32 * MS, 31 * MS, 2, "n2", "n1", true),
			 LEASE_SAME);
	assert_true(lease_allow_retake(&sm, 33 * MS)); /* a REPORT built at 33: server up */
	assert_false(lease_revoked(&sm));
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
	lease_allow_retake(&sm, 12 * MS);
	assert_int_equal(lease_on_controller(&sm, 20 * MS, 15 * MS, 6, "n1", "n1", false),
			 LEASE_SAME);
	assert_false(lease_held(&sm, 20 * MS));
	assert_int_equal(lease_on_controller(&sm, 30 * MS, 25 * MS, 7, "n1", "n1", false),
			 LEASE_GRANTED);
}

/* Given up: deadline 0, once. A lease never held is given up too (a grant in flight
 * must not arm it afterwards). An answer that arrives after its own lease would have
 * run out grants nothing. */
static void test_give_up_and_late_answer(void **state)
{
	struct lease_sm sm = fresh();

	(void)state;
	assert_int_equal(lease_give_up(&sm), LEASE_REVOKED);
	assert_int_equal(lease_give_up(&sm), LEASE_SAME);
	assert_int_equal(lease_on_controller(&sm, 10 * MS, 0, 1, "n1", "n1", false), LEASE_SAME);
	lease_allow_retake(&sm, 1 * MS);
	assert_int_equal(lease_on_controller(&sm, 10 * MS, 2 * MS, 1, "n1", "n1", false),
			 LEASE_GRANTED);
	assert_int_equal(lease_give_up(&sm), LEASE_REVOKED);
	assert_int_equal(sm.k.deadline_ns, 0);
	assert_int_equal(lease_give_up(&sm), LEASE_SAME);
	lease_allow_retake(&sm, 200 * MS);
	assert_int_equal(lease_on_controller(&sm, 900 * MS, 300 * MS, 1, "n1", "n1", false),
			 LEASE_SAME);
	assert_false(lease_held(&sm, 900 * MS));
}

/* Revoked: neither an answer to a REPORT sent before the revocation (in flight), nor
 * one to a REPORT sent while revoked (they said lease=revoked), nor one to a REPORT
 * sent before the agent allowed it back brings it back, at any epoch. Only the answer
 * to a REPORT sent after lease_allow_retake does. */
static void test_revoke_ignores_grant_in_flight(void **state)
{
	struct lease_sm sm = fresh();

	(void)state;
	lease_on_controller(&sm, 10 * MS, 0, 3, "n1", "n1", false);
	assert_true(lease_held(&sm, 100 * MS));
	assert_int_equal(lease_give_up(&sm), LEASE_REVOKED); /* server hung at 100 */
	assert_true(lease_revoked(&sm));
	assert_int_equal(sm.k.deadline_ns, 0);
	/* The answer to the REPORT of 90 arrives at 110. */
	assert_int_equal(lease_on_controller(&sm, 110 * MS, 90 * MS, 3, "n1", "n1", false),
			 LEASE_SAME);
	/* Answers to REPORTs sent while revoked, even at a higher epoch. */
	assert_int_equal(lease_on_controller(&sm, 160 * MS, 150 * MS, 4, "n1", "n1", false),
			 LEASE_SAME);
	assert_false(lease_held(&sm, 160 * MS));
	/* The server answers again; a REPORT is built at 200 (no longer says revoked). */
	assert_true(lease_allow_retake(&sm, 200 * MS));
	assert_false(lease_allow_retake(&sm, 201 * MS)); /* once */
	/* A REPORT sent at 190 (before it: it said revoked) answered at 210. */
	assert_int_equal(lease_on_controller(&sm, 210 * MS, 190 * MS, 4, "n1", "n1", false),
			 LEASE_SAME);
	/* The one stamped at 200, in the same instant as the build that allowed it, does
	 * not count either (only REPORTs sent after it). */
	assert_int_equal(lease_on_controller(&sm, 210 * MS, 200 * MS, 4, "n1", "n1", false),
			 LEASE_SAME);
	/* Below the highest epoch seen (4): a controller behind the times. */
	assert_int_equal(lease_on_controller(&sm, 230 * MS, 220 * MS, 3, "n1", "n1", false),
			 LEASE_SAME);
	assert_int_equal(lease_on_controller(&sm, 230 * MS, 220 * MS, 4, "n1", "n1", false),
			 LEASE_GRANTED);
	assert_int_equal(sm.k.deadline_ns, 720 * MS);
	assert_false(lease_revoked(&sm));
}

/* A revoked lease is not renewed by the peers either: not by an echo sent before the
 * revocation, nor after it, nor after the agent allowed it back (the lease is not
 * held until the controller grants it). Once re-taken, echoes sent since renew it. */
static void test_peer_echo_after_revoke_ignored(void **state)
{
	struct lease_sm sm = fresh();

	(void)state;
	lease_on_controller(&sm, 10 * MS, 0, 1, "n1", "n1", false);
	assert_int_equal(lease_on_peer(&sm, 60 * MS, 50 * MS), LEASE_EXTENDED);
	lease_give_up(&sm); /* at 100 */
	assert_int_equal(lease_on_peer(&sm, 105 * MS, 95 * MS), LEASE_SAME);
	assert_int_equal(lease_on_peer(&sm, 160 * MS, 150 * MS), LEASE_SAME);
	assert_false(lease_held(&sm, 160 * MS));
	lease_allow_retake(&sm, 200 * MS);
	assert_int_equal(lease_on_peer(&sm, 260 * MS, 250 * MS), LEASE_SAME);
	assert_false(lease_held(&sm, 260 * MS));
	assert_int_equal(lease_on_controller(&sm, 310 * MS, 300 * MS, 1, "n1", "n1", false),
			 LEASE_GRANTED);
	/* An echo sent before the agent allowed it back, answered late: nothing. */
	assert_int_equal(lease_on_peer(&sm, 320 * MS, 199 * MS), LEASE_SAME);
	assert_int_equal(sm.k.deadline_ns, 800 * MS);
	assert_int_equal(lease_on_peer(&sm, 410 * MS, 400 * MS), LEASE_EXTENDED);
	assert_int_equal(sm.k.deadline_ns, 900 * MS);
}

/* The controller naming another node at a higher epoch raises the epoch seen: an old
 * leader's grant at the old epoch counts for nothing afterwards. With the lease already
 * at 0 the answer takes nothing away (no revocation: the epoch guards). */
static void test_other_primary_raises_epoch(void **state)
{
	struct lease_sm sm = fresh();

	(void)state;
	lease_on_controller(&sm, 10 * MS, 0, 7, "n1", "n1", false);
	assert_int_equal(lease_on_controller(&sm, 30 * MS, 20 * MS, 8, "n2", "n1", false),
			 LEASE_REVOKED);
	assert_int_equal(sm.k.epoch, 8);
	lease_allow_retake(&sm, 40 * MS);
	assert_int_equal(lease_on_controller(&sm, 60 * MS, 50 * MS, 7, "n1", "n1", false),
			 LEASE_SAME);
	assert_false(lease_held(&sm, 60 * MS));
	/* Lapsed and not revoked: another primary named again changes nothing. */
	assert_int_equal(lease_on_controller(&sm, 80 * MS, 70 * MS, 8, "n2", "n1", false),
			 LEASE_SAME);
	assert_false(lease_revoked(&sm));
	/* Named primary at epoch 9 (failed back): granted. */
	assert_int_equal(lease_on_controller(&sm, 100 * MS, 90 * MS, 9, "n1", "n1", false),
			 LEASE_GRANTED);
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

/* Which scans mark the server's sockets. A cluster node whose bus port is still asked
 * (CONFIG GET out) is scanned at once, every socket marked: no client connection waits
 * unguarded for the answer; scanned again, the bus left out, once the port is known. */
static void test_scan_due(void **state)
{
	uint16_t bus = 7;

	(void)state;
	assert_false(lease_scan_due(0, true, 0, 0, 0, &bus)); /* no process known */
	/* Not a cluster node (known, no bus): once per process. */
	assert_true(lease_scan_due(42, true, 0, 0, 0, &bus));
	assert_int_equal(bus, 0);
	assert_false(lease_scan_due(42, true, 0, 42, 0, &bus));
	/* A cluster node, its bus port asked: scanned now, nothing left out. */
	bus = 7;
	assert_true(lease_scan_due(42, false, 0, 0, 0, &bus));
	assert_int_equal(bus, 0);
	assert_false(lease_scan_due(42, false, 0, 42, 0, &bus)); /* still asked: marks kept */
	/* The answer: scanned again, the bus left out; then not again. */
	assert_true(lease_scan_due(42, true, 17000, 42, 0, &bus));
	assert_int_equal(bus, 17000);
	assert_false(lease_scan_due(42, true, 17000, 42, 17000, &bus));
	/* Neither CONFIG GET nor CLUSTER NODES told it (0): the marks stay as they are. */
	assert_false(lease_scan_due(42, true, 0, 42, 0, &bus));
	/* A new process (restarted), its bus asked again: scanned at once, all marked. */
	assert_true(lease_scan_due(43, false, 0, 42, 17000, &bus));
	assert_int_equal(bus, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_controller_grants_from_send_time),
	    cmocka_unit_test(test_peers_extend_never_revive),
	    cmocka_unit_test(test_other_primary_revokes),
	    cmocka_unit_test(test_stale_epoch_ignored),
	    cmocka_unit_test(test_give_up_and_late_answer),
	    cmocka_unit_test(test_revoke_ignores_grant_in_flight),
	    cmocka_unit_test(test_peer_echo_after_revoke_ignored),
	    cmocka_unit_test(test_other_primary_raises_epoch),
	    cmocka_unit_test(test_pinned_taken_over),
	    cmocka_unit_test(test_scan_due),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
