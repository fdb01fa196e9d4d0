// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What the failover machine (controller/fo_machine.c) does at the promotion, in
 * order: the primary and epoch set, the state saved and DNS driven (ops->promoted),
 * +switch-master published, clients answered with the new primary
 * (fo_primary_settled) — and only then the REPLICAOFs, whose answers (or the
 * timeout of a stopped old primary) delay none of that. And after it, an old primary's
 * demotion that never gets an answer (withheld: the HA leader between keep-alives) is
 * sent again. With the four-node shard of fo_harness.h. */
#include "controller/fo_internal.h" /* FO_FIX_COOLDOWN_MS */
#include "fo_harness.h"

/* SIGSTOP of the primary: hung (stopped), failed over; its REPLICAOF never answers. */
static void test_stopped_primary_named_at_promotion(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl i2 = slave_info("n1", 0, 990), i3 = slave_info("n1", 0, 1000),
			 i4 = slave_info("n1", 0, 995);
	struct fo_report r;

	(void)state;
	C.lease_ms = 0; /* the order at the promotion, not the lease wait (test_fo_lease.c) */
	healthy();
	R.mono += 10;
	mkrep(&r, FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	snprintf(r.cause, sizeof(r.cause), "stopped");
	fo_on_report(&C, N("n1"), &r);
	assert_true(evented("failover_start"));
	assert_false(fo_primary_settled(s));
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_info(&C, N("n3"), true, &i3, NULL);
	fo_on_info(&C, N("n4"), true, &i4, NULL);
	assert_int_equal(s->fo.state, FO_ST_PROMOTE);
	assert_true(called("promote n3"));
	assert_false(fo_primary_settled(s)); /* promotion sent, not accepted yet */
	assert_int_equal(s->primary, N("n1")->idx);
	clear_rec();
	R.mono += 2;
	fo_on_promote(&C, N("n3"), true, NULL);
	/* At once, before any REPLICAOF is answered: */
	assert_int_equal(s->fo.state, FO_ST_REPOINT);
	assert_true(fo_primary_settled(s));
	assert_int_equal(s->primary, N("n3")->idx);
	assert_int_equal(s->epoch, 1);
	assert_int_equal(R.promoted, 1); /* the state saved and DNS driven */
	assert_true(evented("promoted") && evented("switch_master"));
	assert_true(published("+switch-master s 10.0.0.1 6379 10.0.0.3 6379"));
	assert_true(R.promoted_npubs <= pub_index("+switch-master"));
	assert_false(published("+failover-end"));
	assert_false(evented("failover_end"));
	assert_int_equal(R.done, 0);
	/* The events: promoted, then switch_master; the repoints after both. */
	{
		int ip = -1, is = -1;

		for (int i = 0; i < R.nevents; i++) {
			if (!strcmp(R.events[i], "promoted") && ip < 0)
				ip = i;
			if (!strcmp(R.events[i], "switch_master") && is < 0)
				is = i;
		}
		assert_true(ip >= 0 && ip < is);
	}
	/* The stopped old primary may still run the REPLICAOF once resumed: sent too. */
	assert_true(called("replicaof n1 n3") && called("replicaof n2 n3") &&
		    called("replicaof n4 n3"));
	/* The replicas answer; the old primary does not: the failover waits for it
	 * (REPOINT's timeout), the shard's primary named all along. */
	fo_on_replicaof(&C, N("n2"), true, NULL);
	fo_on_replicaof(&C, N("n4"), true, NULL);
	assert_int_equal(s->fo.state, FO_ST_REPOINT);
	assert_true(fo_primary_settled(s));
	assert_int_equal(R.done, 0);
	R.mono += 1050;
	fo_on_timer(&C, s);
	assert_int_equal(s->fo.state, FO_ST_NONE);
	assert_true(fo_primary_settled(s));
	assert_int_equal(R.done, 1);
	assert_string_equal(R.done_result, "ok");
	assert_true(evented("replicas_repointed") && evented("failover_end"));
	assert_true(pub_index("+switch-master") < pub_index("+failover-end"));
	/* Published once: at the promotion, not again at the end. */
	{
		int n = 0;

		for (int i = 0; i < R.npubs; i++)
			n += !strncmp(R.pubs[i], "+switch-master ", 15);
		assert_int_equal(n, 1);
	}
}

/* An aborted failover (no candidate answers): the old primary stays, never settled
 * while it is down; no +switch-master. */
static void test_abort_names_nobody_new(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	C.lease_ms = 0;
	healthy();
	R.mono += 10;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_int_equal(s->fo.state, FO_ST_SELECT);
	R.mono += 300;
	fo_on_timer(&C, s); /* nobody answered INFO */
	assert_int_equal(s->fo.state, FO_ST_NONE);
	assert_true(evented("failover_abort"));
	assert_false(published("+switch-master"));
	assert_int_equal(s->primary, N("n1")->idx);
	/* Known, and no failover running: settled by the machine; the Sentinel API also
	 * holds questions while the primary is down (ODOWN, s_down). */
	assert_true(fo_primary_settled(s));
	assert_true(s->flags & FO_S_ODOWN);
}

/* A repair (the old primary back as a master) that is never answered — the controller
 * withheld it, as an HA leader does between keep-alives — is given up once its
 * request's timeout has passed (repair_failed) and sent again: the node is not left
 * "being fixed" for ever. */
static void test_unanswered_repair_sent_again(void **state)
{
	(void)state;
	healthy();
	report("n2", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 990);
	assert_true(called("replicaof n2 n1"));
	clear_rec(); /* no answer, ever */
	R.mono += C.repoint_timeout_ms;
	report("n2", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 990);
	assert_false(called("replicaof n2 n1")); /* its request may still answer */
	assert_false(evented("repair_failed"));
	R.mono += FO_FIX_COOLDOWN_MS + 1;
	report("n2", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 990);
	assert_true(evented("repair_failed"));
	assert_true(called("replicaof n2 n1"));
	fo_on_replicaof(&C, N("n2"), true, NULL);
	assert_true(evented("old_primary_demoted"));
	clear_rec();
	R.mono += 10 * (C.repoint_timeout_ms + FO_FIX_COOLDOWN_MS);
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	assert_false(called("replicaof n2 n1") || evented("repair_failed"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_stopped_primary_named_at_promotion, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_abort_names_nobody_new, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unanswered_repair_sent_again, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
