// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The wait for the old primary's write lease (controller/lease_wait.c): the peers'
 * last packets bound it, a silent peer blocks, a lapsed lease or a death the kernel
 * saw needs no wait. With the four-node shard of fo_harness.h. */
#include "fo_harness.h"
#include "controller/lease_wait.h"

/* ---- the write lease (controller/lease_wait.c) ---- */

/* n1 cut off: the peers' last packets from it bound its lease; the failover waits for
 * that bound plus the drift margin, no longer, and answers name nobody meanwhile. */
static void test_lease_wait(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;
	long long span = fo_lease_span_ms(&C), cut;

	(void)state;
	assert_int_equal(C.lease_ms, 500);
	healthy();
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), R.mono), "n1");
	cut = R.mono;
	/* Answers to the others name n1 too, but renew nothing of n1's. */
	assert_string_equal(fo_answer_primary(&C, s, N("n2"), R.mono + 300), "n1");
	assert_int_equal(N("n1")->named_primary_ms, cut);
	R.mono += 1001; /* n1's heartbeat goes stale */
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	/* A peer that had a packet from n1 only 100 ms ago (as if n1 still probed it until
	 * then): n1 may hold a lease until 100 ms ago + span. */
	fo_report_set_peer_age(&r, N("n1")->idx, 100);
	fo_on_report(&C, N("n3"), &r);
	fo_report_set_peer_age(&r, N("n1")->idx, 1001);
	fo_on_report(&C, N("n4"), &r);
	fo_on_report(&C, N("n2"), &r);
	assert_true(evented("node_down"));
	assert_true(evented("lease_wait"));
	assert_true(evented("failover_blocked"));
	assert_false(evented("failover_start"));
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), R.mono), "");
	/* One ms before the bound: still waiting. */
	R.mono = cut + 901 + span - 1;
	fo_on_report(&C, N("n2"), &r);
	assert_false(evented("failover_start"));
	R.mono += 1;
	/* At the bound, n3's figure is not final: the lease could still run through n3
	 * when n3 reported (and n3 may have answered n1's echoes since, if the two were
	 * cut off together). It waits for n3's next report. */
	fo_on_report(&C, N("n2"), &r);
	assert_false(evented("failover_start"));
	fo_report_set_peer_age(&r, N("n1")->idx, 100 + (R.mono - (cut + 1001)));
	fo_on_report(&C, N("n3"), &r);
	assert_true(evented("failover_start"));
	assert_true(called("info n2"));
}

/* A peer whose agent is silent may still answer n1's echoes: no promotion at all. */
static void test_lease_silent_peer_blocks(void **state)
{
	struct fo_report r;

	(void)state;
	healthy();
	R.mono += 1500;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n2"), &r); /* n4 silent */
	assert_true(evented("node_down"));
	assert_true(evented("failover_blocked"));
	assert_false(evented("failover_start"));
	R.mono += 5000;
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n2"), &r);
	assert_false(evented("failover_start"));
	/* n4 reports again (it never heard from n1): the lease is bounded, the failover goes. */
	fo_on_report(&C, N("n4"), &r);
	assert_true(evented("failover_start"));
}

/* A server that gave its lease up (hung, lease lapsed in its report) needs no wait
 * beyond the last answer that named it; a kernel-seen death none at all. */
static void test_lease_given_up_and_proc_down(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;
	long long span = fo_lease_span_ms(&C), named;

	(void)state;
	healthy();
	named = R.mono;
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), named), "n1");
	R.mono += 100;
	mkrep(&r, FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	r.lease = FO_LEASE_LAPSED;
	fo_on_report(&C, N("n1"), &r);
	assert_true(evented("lease_wait"));
	assert_false(evented("failover_start"));
	R.mono = named + span;
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	assert_true(evented("failover_start"));
	do_failover_to("n1", "n3");
}

static void test_lease_proc_down_no_wait(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	healthy();
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), R.mono), "n1");
	R.mono += 10;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_false(evented("lease_wait"));
	assert_true(evented("failover_start"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_lease_wait, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_silent_peer_blocks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_given_up_and_proc_down, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_proc_down_no_wait, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
