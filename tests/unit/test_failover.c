// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Failure rules, the failover state machine (its transition table, the whole
 * failover, planned and not), TILT and the block window, with an
 * injected clock and recording ops (fo_harness.h). Replica ranking: test_fo_rank.c;
 * the lease wait: test_fo_lease.c;
 * the state file and REPORT parsing: test_fo_state.c. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "fo_harness.h"
#include "controller/lease_wait.h"

/* ---- the failure rules, as a table ---- */

struct rule_case {
	const char *name;
	int reported;	     /* n1 has reported */
	enum fo_proc proc;   /* n1's process */
	int stale;	     /* n1's heartbeat is older than node_down_after_ms */
	enum fo_peer p2, p3; /* what n2 and n3 say of n1 */
	int stale2, stale3;  /* n2 / n3 themselves stale */
	enum fo_verdict want;
};

static const struct rule_case rules[] = {
    {"no report yet", 0, FO_PROC_UP, 0, 0, 0, 0, 0, FO_V_UNKNOWN},
    {"fresh, up", 1, FO_PROC_UP, 0, 0, 0, 0, 0, FO_V_OK},
    {"fresh, busy", 1, FO_PROC_BUSY, 0, 0, 0, 0, 0, FO_V_OK},
    {"fresh, loading", 1, FO_PROC_LOADING, 0, 0, 0, 0, 0, FO_V_OK},
    {"process path: exit", 1, FO_PROC_DOWN, 0, 0, 0, 0, 0, FO_V_PROC_DOWN},
    {"process path: exit, then silence", 1, FO_PROC_DOWN, 1, FO_PEER_UP, 0, 0, 0, FO_V_PROC_DOWN},
    {"process path: hung", 1, FO_PROC_HUNG, 0, 0, 0, 0, 0, FO_V_PROC_HUNG},
    {"host path: one peer down", 1, FO_PROC_UP, 1, FO_PEER_DOWN, 0, 0, 0, FO_V_HOST_DOWN},
    {"host path: two peers down", 1, FO_PROC_UP, 1, FO_PEER_DOWN, FO_PEER_DOWN, 0, 0,
     FO_V_HOST_DOWN},
    {"contradiction: one down, one up", 1, FO_PROC_UP, 1, FO_PEER_DOWN, FO_PEER_UP, 0, 0,
     FO_V_AGENT_LOST},
    {"agent lost: peers reach it", 1, FO_PROC_UP, 1, FO_PEER_UP, FO_PEER_UP, 0, 0, FO_V_AGENT_LOST},
    {"agent lost: no peer has a view", 1, FO_PROC_UP, 1, 0, 0, 0, 0, FO_V_AGENT_LOST},
    {"a stale peer's down does not count", 1, FO_PROC_UP, 1, FO_PEER_DOWN, 0, 1, 0,
     FO_V_AGENT_LOST},
    {"a stale peer's up does not contradict", 1, FO_PROC_UP, 1, FO_PEER_DOWN, FO_PEER_UP, 0, 1,
     FO_V_HOST_DOWN},
    {"hung but stale: host rules", 1, FO_PROC_HUNG, 1, FO_PEER_DOWN, 0, 0, 0, FO_V_HOST_DOWN},
};

static void test_rules_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct rule_case *t = &rules[i];
		struct fo_node *n1 = N("n1"), *n2 = N("n2"), *n3 = N("n3");
		long long now = R.mono;

		for (int k = 0; k < C.nnodes; k++) {
			C.nodes[k].flags = 0;
			memset(&C.nodes[k].rep, 0, sizeof(C.nodes[k].rep));
		}
		if (t->reported) {
			n1->flags |= FO_N_REPORTED;
			n1->rep.proc = t->proc;
			n1->last_report_ms = t->stale ? now - 1500 : now - 50;
		}
		n2->flags |= FO_N_REPORTED;
		n2->rep.proc = FO_PROC_UP;
		n2->last_report_ms = t->stale2 ? now - 5000 : now - 10;
		fo_report_set_peer(&n2->rep, n1->idx, t->p2);
		n3->flags |= FO_N_REPORTED;
		n3->rep.proc = FO_PROC_UP;
		n3->last_report_ms = t->stale3 ? now - 5000 : now - 10;
		fo_report_set_peer(&n3->rep, n1->idx, t->p3);
		if (fo_judge(&C, n1, now) != t->want)
			fail_msg("rule '%s': got %s, want %s", t->name,
				 fo_verdict_name(fo_judge(&C, n1, now)), fo_verdict_name(t->want));
	}
}

/* ---- the whole failover, process path ---- */

static void test_process_path_failover(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl i2 = slave_info("n1", 0, 990), i3 = slave_info("n1", 0, 1000),
			 i4 = slave_info("n1", 0, 995);

	(void)state;
	healthy();
	R.mono += 10;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("node_down"));
	assert_true(evented("failover_start"));
	assert_true(published("+sdown master s 10.0.0.1 6379"));
	assert_true(published("+odown master s 10.0.0.1 6379"));
	assert_true(called("info n2") && called("info n3") && called("info n4"));
	assert_false(called("info n1"));
	assert_int_equal(s->fo.state, FO_ST_SELECT);
	assert_false(fo_primary_settled(s)); /* the old primary is down, none promoted yet */
	/* A second report in conflict never starts a second failover. */
	report("n1", FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_int_equal(s->fo.state, FO_ST_SELECT);
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_info(&C, N("n4"), true, &i4, NULL);
	fo_on_info(&C, N("n3"), true, &i3, NULL);
	/* Links are down now, but they were up at the last reports: highest offset wins. */
	assert_true(called("promote n3"));
	assert_true(evented("replica_selected"));
	fo_on_promote(&C, N("n3"), true, NULL);
	assert_int_equal(s->primary, N("n3")->idx);
	assert_int_equal(s->epoch, 1);
	assert_int_equal(R.promoted, 1);
	assert_true(
	    published("+promoted-slave slave 10.0.0.3:6379 10.0.0.3 6379 @ s 10.0.0.1 6379"));
	/* Clients learn the new primary at the promotion: +switch-master now, after the
	 * state was saved (ops->promoted), before any replica answered; held questions
	 * are answered from here on (fo_primary_settled). */
	assert_true(published("+switch-master s 10.0.0.1 6379 10.0.0.3 6379"));
	assert_true(pub_index("+promoted-slave") < pub_index("+switch-master") &&
		    pub_index("+failover-state-reconf-slaves") < pub_index("+switch-master"));
	assert_true(R.promoted_npubs <= pub_index("+switch-master"));
	assert_false(published("+failover-end"));
	assert_int_equal(s->fo.state, FO_ST_REPOINT);
	assert_true(fo_primary_settled(s));
	assert_true(called("replicaof n2 n3") && called("replicaof n4 n3"));
	assert_false(called("replicaof n1 n3")); /* dead: demoted when it returns */
	fo_on_replicaof(&C, N("n2"), true, NULL);
	assert_int_equal(R.done, 0);
	fo_on_replicaof(&C, N("n4"), true, NULL);
	assert_int_equal(R.done, 1);
	assert_string_equal(R.done_result, "ok");
	assert_true(evented("replicas_repointed") && evented("failover_end"));
	assert_true(published("+failover-end master s 10.0.0.1 6379"));
	assert_true(published("+switch-master s 10.0.0.1 6379 10.0.0.3 6379"));
	assert_true(pub_index("+switch-master") <
			pub_index("+slave-reconf-sent slave 10.0.0.2:6379 10.0.0.2 6379 @ s") &&
		    pub_index("-odown master s 10.0.0.1 6379") < pub_index("+failover-end") &&
		    pub_index("+failover-end") <
			pub_index("+slave slave 10.0.0.2:6379 10.0.0.2 6379 @ s 10.0.0.3 6379"));
	assert_true(
	    pub_index("+new-epoch 1") < pub_index("+try-failover") &&
	    pub_index("+try-failover") < pub_index("+elected-leader") &&
	    pub_index("+elected-leader") < pub_index("+failover-state-select-slave") &&
	    pub_index("+selected-slave") < pub_index("+failover-state-send-slaveof-noone") &&
	    pub_index("+failover-state-wait-promotion") < pub_index("+promoted-slave") &&
	    pub_index("+slave-reconf-sent slave 10.0.0.2:6379 10.0.0.2 6379 @ s 10.0.0.1 6379") <
		pub_index("+slave-reconf-done slave 10.0.0.2:6379"));
	assert_int_equal(s->fo.state, FO_ST_NONE);
	assert_true(s->have_last);
	assert_true(s->last.nsteps >= 5);

	/* The old primary comes back as an (empty) master: demoted before anything else. */
	clear_rec();
	R.mono += 100;
	report("n3", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1100);
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 0);
	assert_true(called("replicaof n1 n3"));
	assert_false(evented("failover_start"));
	fo_on_replicaof(&C, N("n1"), true, NULL);
	assert_true(evented("old_primary_demoted"));
	/* Its next report still says master (sent before): no second REPLICAOF at once. */
	clear_rec();
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 0);
	assert_false(called("replicaof n1 n3"));
}

/* A master that is not the primary and that we fail to demote (over TLS the lease
 * drops our handshake) becomes a replica of the primary by its agent: said as our
 * own demotion (old_primary_demoted, -role-change, +convert-to-slave), once; a
 * demotion of ours is said once too, not again when its report follows. */
static void test_self_demoted_said_once(void **state)
{
	int n = 0;

	(void)state;
	healthy();
	report("n2", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 990);
	assert_true(called("replicaof n2 n1"));
	fo_on_replicaof(&C, N("n2"), false, "TLS handshake failed");
	assert_true(evented("repair_failed"));
	assert_false(evented("old_primary_demoted"));
	clear_rec();
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	assert_true(evented("old_primary_demoted"));
	assert_true(published("-role-change slave 10.0.0.2:6379 10.0.0.2 6379 @ s 10.0.0.1 6379"));
	assert_true(
	    published("+convert-to-slave slave 10.0.0.2:6379 10.0.0.2 6379 @ s 10.0.0.1 6379"));
	assert_false(called("replicaof n2 n1"));
	clear_rec();
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 995);
	assert_false(evented("old_primary_demoted"));
	/* Demoted by us: said on our REPLICAOF's answer, not again. */
	R.mono += 10000;
	report("n3", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(called("replicaof n3 n1"));
	fo_on_replicaof(&C, N("n3"), true, NULL);
	for (int i = 0; i < R.nevents; i++)
		n += !strcmp(R.events[i], "old_primary_demoted");
	assert_int_equal(n, 1);
	clear_rec();
	/* A report sent before our REPLICAOF still says master, then the next a replica. */
	R.mono += 1;
	report("n3", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_false(called("replicaof n3 n1"));
	report("n3", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 1000);
	assert_false(evented("old_primary_demoted"));
	assert_false(published("+convert-to-slave"));
}

static void test_promote_refused_next_candidate(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl i2 = slave_info("n1", 0, 990), i3 = slave_info("n1", 0, 1000),
			 i4 = slave_info("n1", 0, 995);

	(void)state;
	healthy();
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_info(&C, N("n3"), true, &i3, NULL);
	fo_on_info(&C, N("n4"), true, &i4, NULL);
	assert_true(called("promote n3"));
	fo_on_promote(&C, N("n3"), false, "ERR refused");
	assert_true(evented("promote_failed"));
	assert_true(called("promote n4"));
	fo_on_timer(&C, s); /* n4 times out */
	assert_true(called("promote n2"));
	fo_on_promote(&C, N("n2"), false, "ERR no");
	assert_true(evented("failover_abort"));
	assert_int_equal(s->primary, N("n1")->idx);
	assert_int_equal(s->epoch, 0);
	assert_int_equal(R.done, 1);
}

static void test_no_good_replica_retry(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl i2 = slave_info("n1", 0, 990);

	(void)state;
	healthy();
	report("n3", FO_PROC_DOWN, INFO_ROLE_SLAVE, "n1", 0, 0);
	report("n4", FO_PROC_DOWN, INFO_ROLE_SLAVE, "n1", 0, 0);
	assert_false(evented("failover_start")); /* replica failures never promote */
	N("n2")->priority = 0;
	clear_rec();
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("failover_abort"));
	assert_true(published("-failover-abort-no-good-slave master s 10.0.0.1 6379"));
	assert_true(s->flags & FO_S_NO_GOOD_REPLICA);
	/* The same report again: no retry. */
	clear_rec();
	report("n4", FO_PROC_DOWN, INFO_ROLE_SLAVE, "n1", 0, 0);
	assert_false(evented("failover_start"));
	/* A report that changes: retried. */
	N("n2")->priority = 100;
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 0);
	assert_true(evented("failover_start"));
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_timer(&C, s); /* n4 did not answer INFO */
	assert_true(called("promote n2"));
}

/* Candidates that did not answer INFO in time (a loaded machine): the failover is
 * retried after a wait that doubles, not left until a report changes. */
static void test_select_timeout_retried(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl i2 = slave_info("n1", 1, 990);

	(void)state;
	healthy();
	clear_rec();
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("failover_start"));
	fo_on_timer(&C, s); /* nobody answered INFO */
	assert_true(evented("failover_abort"));
	assert_false(s->flags & FO_S_NO_GOOD_REPLICA);
	assert_int_equal(s->retry_select_wait_ms, 250);
	/* Within the wait: the same reports start nothing. */
	clear_rec();
	R.mono += 100;
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 990);
	assert_false(evented("failover_start"));
	/* After it: asked again; a second timeout doubles the wait. */
	R.mono += 200;
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 990);
	assert_true(evented("failover_start"));
	fo_on_timer(&C, s);
	assert_int_equal(s->retry_select_wait_ms, 500);
	clear_rec();
	R.mono += 600;
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 990);
	assert_true(evented("failover_start"));
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_timer(&C, s); /* n3, n4 did not answer: n2 did */
	assert_true(called("promote n2"));
}

/* ---- agent lost, host path ---- */

static void test_agent_lost_no_failover(void **state)
{
	struct fo_report r;

	(void)state;
	healthy();
	R.mono += 1500;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_UP);
	fo_on_report(&C, N("n2"), &r);
	assert_true(evented("agent_lost"));
	assert_false(evented("failover_start"));
	assert_true(called("ping n1"));
	assert_true(N("n1")->flags & FO_N_AGENT_LOST);
}

static void test_host_path_failover(void **state)
{
	struct fo_report r;

	(void)state;
	healthy();
	R.mono += 1500;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	/* Every peer has a say on the old primary's lease: n3 and n4 report too. */
	r.repl.offset = 1000;
	fo_on_report(&C, N("n3"), &r);
	r.repl.offset = 995;
	fo_on_report(&C, N("n4"), &r);
	r.repl.offset = 1000;
	fo_on_report(&C, N("n2"), &r);
	assert_true(evented("node_down"));
	assert_true(evented("failover_start"));
	/* n3, n4 are stale too (no report since): not candidates through INFO alone? They
	 * are asked; only those answering are promoted. */
	assert_true(called("info n2"));
}

/* ---- TILT and the block window ---- */

static void test_tilt(void **state)
{
	(void)state;
	healthy();
	C.tilt_ms = 5000;
	assert_false(fo_tilt_tick(&C));
	R.mono += 100, R.wall += 100;
	assert_false(fo_tilt_tick(&C));
	/* The loop stalled 3 s. */
	R.mono += 3000, R.wall += 3000;
	assert_true(fo_tilt_tick(&C));
	assert_true(evented("tilt_start"));
	assert_true(published("+tilt"));
	/* Observe, do not act. */
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("node_down"));
	assert_false(evented("failover_start"));
	for (int i = 0; i < 49; i++) {
		R.mono += 100, R.wall += 100;
		assert_true(fo_tilt_tick(&C));
	}
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_false(evented("failover_start"));
	R.mono += 100, R.wall += 100;
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 990);
	assert_false(fo_tilt_tick(&C));
	assert_true(evented("tilt_end"));
	assert_true(evented("failover_start")); /* acts once TILT is over */
}

static void test_tilt_clock_jump(void **state)
{
	(void)state;
	C.tilt_ms = 5000;
	fo_tilt_tick(&C);
	R.mono += 100, R.wall += 100;
	assert_false(fo_tilt_tick(&C));
	R.mono += 100, R.wall -= 60000; /* the wall clock stepped back a minute */
	assert_true(fo_tilt_tick(&C));
	C.tilt = false;
	R.mono += 100, R.wall += 100;
	assert_false(fo_tilt_tick(&C));
	R.mono += 100, R.wall += 10000; /* and forward */
	assert_true(fo_tilt_tick(&C));
	/* tilt_ms 0: TILT off. */
	C.tilt = false;
	C.tilt_ms = 0;
	R.mono += 10000, R.wall += 10000;
	assert_false(fo_tilt_tick(&C));
}

static void test_block_window(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	char why[200];

	(void)state;
	healthy();
	s->last_failover_end_ms = R.mono - 2000; /* a failover ended 2 s ago */
	assert_false(fo_may_failover(&C, s, FO_V_PROC_HUNG, false, why, sizeof(why)));
	assert_non_null(strstr(why, "failover_block_ms"));
	assert_false(fo_may_failover(&C, s, FO_V_OK, true, why, sizeof(why)));
	/* Unless the new primary also dies. */
	assert_true(fo_may_failover(&C, s, FO_V_PROC_DOWN, false, why, sizeof(why)));
	assert_true(fo_may_failover(&C, s, FO_V_HOST_DOWN, false, why, sizeof(why)));
	/* A hung primary within the window: blocked, logged once. */
	report("n1", FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("failover_blocked"));
	assert_false(evented("failover_start"));
	clear_rec();
	report("n1", FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_false(evented("failover_blocked"));
	/* Past the window: acts (the peers still report: they have a say on the lease). */
	R.mono += 8001;
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	report("n3", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 1000);
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 995);
	report("n1", FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("failover_start"));
	do_failover_to("n1", "n3");
}

/* ---- planned switchover ---- */

static void test_planned_switchover(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl m = slave_info(NULL, -1, 5000), t = slave_info("n1", 1, 4990);
	char why[160];

	(void)state;
	healthy();
	m.role = INFO_ROLE_MASTER;
	assert_int_equal(fo_start(&C, s, true, N("n2")->idx, "operator", why, sizeof(why)), 0);
	assert_true(called("info n2"));
	assert_false(called("info n3"));
	fo_on_info(&C, N("n2"), true, &t, NULL);
	assert_true(called("pause n1"));
	assert_false(called("promote n2"));
	fo_on_pause(&C, N("n1"), true, NULL);
	assert_true(called("info n1"));
	fo_on_info(&C, N("n1"), true, &m, NULL);
	/* The target is behind: polled again on the timer. */
	fo_on_info(&C, N("n2"), true, &t, NULL);
	assert_false(called("promote n2"));
	assert_int_equal(R.timer_ms, C.offset_poll_ms);
	R.mono += 5;
	fo_on_timer(&C, s);
	t.offset = 5000;
	fo_on_info(&C, N("n2"), true, &t, NULL);
	assert_true(called("promote n2"));
	fo_on_promote(&C, N("n2"), true, NULL);
	/* Everyone repointed, the old primary included, then writes unpaused. */
	assert_true(called("replicaof n1 n2") && called("replicaof n3 n2") &&
		    called("replicaof n4 n2"));
	assert_false(called("unpause n1"));
	fo_on_replicaof(&C, N("n1"), true, NULL);
	fo_on_replicaof(&C, N("n3"), true, NULL);
	fo_on_replicaof(&C, N("n4"), false, "timeout");
	assert_true(called("unpause n1"));
	assert_true(evented("old_primary_demoted"));
	assert_true(evented("repoint_failed"));
	assert_string_equal(R.done_result, "ok");
	assert_int_equal(s->primary, N("n2")->idx);
}

static void test_planned_offset_timeout_unpauses(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl m = slave_info(NULL, -1, 5000), t = slave_info("n1", 1, 10);
	char why[160];

	(void)state;
	healthy();
	m.role = INFO_ROLE_MASTER;
	assert_int_equal(fo_start(&C, s, true, -1, "operator", why, sizeof(why)), 0);
	/* Best of n2..n4 by offset: n3 (1000). */
	fo_on_info(&C, N("n2"), true, &t, NULL);
	fo_on_info(&C, N("n3"), true, &t, NULL);
	fo_on_info(&C, N("n4"), true, &t, NULL);
	fo_on_pause(&C, N("n1"), true, NULL);
	fo_on_info(&C, N("n1"), true, &m, NULL);
	R.mono += C.offset_wait_ms + 1;
	fo_on_info(&C, s->fo.cand[0] == N("n2")->idx ? N("n2") : &C.nodes[s->fo.cand[0]], true, &t,
		   NULL);
	assert_true(evented("failover_abort"));
	assert_true(called("unpause n1"));
	assert_int_equal(s->primary, N("n1")->idx);
	/* Bad targets. */
	assert_int_equal(fo_start(&C, s, true, N("n1")->idx, "x", why, sizeof(why)), -EINVAL);
	N("n4")->priority = 0;
	assert_int_equal(fo_start(&C, s, true, N("n4")->idx, "x", why, sizeof(why)), -EINVAL);
	/* A replica in a full sync: no target (nor any candidate, fo_rank). */
	t = slave_info("n1", 1, 0);
	t.sync_in_progress = 1;
	set_info("n3", t);
	assert_int_equal(fo_start(&C, s, true, N("n3")->idx, "x", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "full sync"));
}

/* ---- a primary back without a failover in between ---- */

static void restart_without_failover(const char *replid, long long off)
{
	struct fo_report r;

	healthy();
	C.tilt = true; /* no failover possible while it is down */
	C.tilt_until_ms = R.mono + 100000;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_false(evented("failover_start"));
	mkrep(&r, FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, off);
	snprintf(r.repl.master_replid, sizeof(r.repl.master_replid), "%s", replid);
	fo_on_report(&C, N("n1"), &r);
	assert_false(evented("failover_start")); /* TILT: observe only */
	assert_false(called("replicaof n2 n1"));
	C.tilt = false;
	fo_evaluate(&C);
}

static void test_restarted_empty_primary(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl i2 = slave_info("n1", 0, 990), i3 = slave_info("n1", 0, 1000),
			 i4 = slave_info("n1", 0, 995);

	(void)state;
	/* Back with a new history at offset 0: its replicas must not follow it. */
	restart_without_failover("replid-new", 0);
	assert_true(evented("primary_restarted_empty"));
	assert_true(evented("failover_start"));
	assert_true(s->flags & FO_S_EMPTY_RESTART);
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_info(&C, N("n3"), true, &i3, NULL);
	fo_on_info(&C, N("n4"), true, &i4, NULL);
	assert_true(called("promote n3"));
	fo_on_promote(&C, N("n3"), true, NULL);
	/* The restarted one answers: demoted in the same round. */
	assert_true(called("replicaof n1 n3"));
	assert_false(s->flags & (FO_S_EMPTY_RESTART | FO_S_PRIMARY_DIED));
}

static void test_restarted_with_its_data(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	/* Back with its own history (persistence): followed again, no failover. */
	restart_without_failover("replid-a", 1000);
	assert_false(evented("primary_restarted_empty"));
	assert_false(evented("failover_start"));
	assert_false(s->flags & FO_S_PRIMARY_DIED);
	assert_int_equal(s->primary, N("n1")->idx);
}

/* ---- discovery at start ---- */

static void test_discover(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl m = slave_info(NULL, -1, 5000);

	(void)state;
	m.role = INFO_ROLE_MASTER;
	/* The state file says n1 at epoch 4, but n1 is gone and n2 is a master:
	 * promoted just before a crash. Adopted, no second promotion. */
	s->primary = N("n1")->idx;
	s->epoch = 4;
	set_info("n2", m);
	set_info("n3", slave_info("n1", 0, 10));
	fo_discover(&C, s);
	assert_int_equal(s->primary, N("n2")->idx);
	assert_int_equal(s->epoch, 5);
	assert_int_equal(R.promoted, 1);
	assert_true(evented("primary_discovered"));
	/* The state file and the server agree: nothing changes. */
	clear_rec();
	fo_discover(&C, s);
	assert_int_equal(R.promoted, 0);
	assert_int_equal(s->epoch, 5);
	/* Then n3, following n1, is repaired. */
	fo_evaluate(&C);
	assert_true(called("replicaof n3 n2"));
}

static int nevented(const char *kind)
{
	int n = 0;

	for (int i = 0; i < R.nevents; i++)
		n += !strcmp(R.events[i], kind);
	return n;
}

/* No primary known and none to choose (discovery runs again every second): said once
 * per count of masters, then the one master that appears is the primary. */
static void test_discover_unknown_said_once(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl m = slave_info(NULL, -1, 5000);

	(void)state;
	m.role = INFO_ROLE_MASTER;
	s->primary = -1; /* and no node answered */
	for (int i = 0; i < 3; i++)
		fo_discover(&C, s);
	assert_int_equal(nevented("primary_unknown"), 1);
	set_info("n1", m);
	set_info("n2", m); /* two masters alike: none preferable, said once more */
	fo_discover(&C, s);
	fo_discover(&C, s);
	assert_int_equal(nevented("primary_unknown"), 2);
	assert_int_equal(s->primary, -1);
	set_info("n2", slave_info("n1", 0, 10));
	fo_discover(&C, s);
	assert_int_equal(s->primary, N("n1")->idx);
	assert_true(evented("primary_discovered"));
	assert_int_equal(R.promoted, 1);
}

/* ---- the transition table ---- */

/* The allowed transitions, written out here apart from fo_machine.c's table. */
static bool expect_allowed(enum fo_state from, enum fo_state to)
{
	static const enum fo_state allowed[][2] = {
	    {FO_ST_NONE, FO_ST_SELECT},	     {FO_ST_SELECT, FO_ST_NONE},
	    {FO_ST_SELECT, FO_ST_PAUSE},     {FO_ST_SELECT, FO_ST_PROMOTE},
	    {FO_ST_PAUSE, FO_ST_NONE},	     {FO_ST_PAUSE, FO_ST_WAIT_OFFSET},
	    {FO_ST_WAIT_OFFSET, FO_ST_NONE}, {FO_ST_WAIT_OFFSET, FO_ST_PROMOTE},
	    {FO_ST_PROMOTE, FO_ST_NONE},     {FO_ST_PROMOTE, FO_ST_PROMOTE},
	    {FO_ST_PROMOTE, FO_ST_REPOINT},  {FO_ST_REPOINT, FO_ST_NONE},
	};

	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (allowed[i][0] == from && allowed[i][1] == to)
			return true;
	return false;
}

static void test_transition_table(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	int nallowed = 0;

	(void)state;
	for (int from = 0; from < FO_ST_COUNT; from++) {
		for (int to = 0; to < FO_ST_COUNT; to++) {
			bool ok = expect_allowed(from, to);

			memset(&s->fo, 0, sizeof(s->fo));
			s->fo.state = from;
			s->fo.pending = 3;
			s->have_last = false;
			R.timer_ms = 12345;
			R.done = 0;
			R.mono += 10;
			assert_int_equal(fo_transition_allowed(from, to), ok);
			if (!ok) {
				/* Refused: nothing changes, nothing is called. */
				assert_int_equal(fo_transition(&C, s, to, "x"), -EINVAL);
				assert_int_equal(s->fo.state, from);
				assert_int_equal(s->fo.pending, 3);
				assert_int_equal(R.timer_ms, 12345);
				assert_int_equal(R.done, 0);
				assert_false(s->have_last);
				continue;
			}
			nallowed++;
			assert_int_equal(fo_transition(&C, s, to, "why"), 0);
			assert_int_equal(s->fo.state, to);
			assert_int_equal(s->fo.pending, 0);
			if (to == FO_ST_NONE) {
				/* The end of a failover: recorded, timer cancelled, done called. */
				assert_int_equal(R.timer_ms, -1);
				assert_int_equal(R.done, 1);
				assert_string_equal(R.done_result, "why");
				assert_true(s->have_last);
				assert_string_equal(s->last.result, "why");
				continue;
			}
			assert_int_equal(s->fo.state_since_ms, R.mono);
			assert_int_equal(R.done, 0);
			/* Each state's own timeout; WAIT_OFFSET polls on its own timer. */
			assert_int_equal(R.timer_ms,
					 to == FO_ST_SELECT	   ? C.info_timeout_ms + 50
					 : to == FO_ST_REPOINT	   ? C.repoint_timeout_ms + 50
					 : to == FO_ST_WAIT_OFFSET ? -1
								   : C.promote_timeout_ms + 50);
		}
	}
	assert_int_equal(nallowed, 12);
	/* Out of range either way. */
	assert_false(fo_transition_allowed(FO_ST_COUNT, FO_ST_NONE));
	assert_false(fo_transition_allowed(FO_ST_NONE, FO_ST_COUNT));
	assert_false(fo_transition_allowed((enum fo_state) - 1, FO_ST_SELECT));
}

/* A shard's primary and epoch change only in NONE (discovery, the state file) and
 * PROMOTE (the promotion), to a node of the shard. */
static void test_set_primary(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	for (int st = 0; st < FO_ST_COUNT; st++) {
		bool ok = st == FO_ST_NONE || st == FO_ST_PROMOTE;

		s->fo.state = st;
		s->primary = N("n1")->idx;
		s->epoch = 4;
		assert_int_equal(fo_set_primary(&C, s, N("n2")->idx, 5), ok ? 0 : -EINVAL);
		assert_int_equal(s->primary, ok ? N("n2")->idx : N("n1")->idx);
		assert_int_equal(s->epoch, ok ? 5 : 4);
	}
	s->fo.state = FO_ST_NONE;
	assert_int_equal(fo_set_primary(&C, s, -1, 6), 0); /* unknown */
	assert_int_equal(s->primary, -1);
	assert_int_equal(fo_set_primary(&C, s, C.nnodes, 7), -EINVAL);
	assert_int_equal(s->epoch, 6);
}

/* A whole failover goes NONE -> SELECT -> PROMOTE -> REPOINT -> NONE, each step
 * through the table: the timer of each state is armed on entry. */
static void test_failover_path_through_table(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	char why[160];

	(void)state;
	healthy();
	assert_int_equal(fo_start(&C, s, false, -1, "test", why, sizeof(why)), 0);
	assert_int_equal(s->fo.state, FO_ST_SELECT);
	assert_int_equal(R.timer_ms, C.info_timeout_ms + 50);
	assert_int_equal(fo_start(&C, s, false, -1, "test", why, sizeof(why)), -EBUSY);
	for (int i = 2; i <= 4; i++) {
		char id[8];

		snprintf(id, sizeof(id), "n%d", i);
		fo_on_info(&C, N(id), true, &N(id)->rep.repl, NULL);
	}
	assert_int_equal(s->fo.state, FO_ST_PROMOTE);
	assert_int_equal(R.timer_ms, C.promote_timeout_ms + 50);
	assert_int_equal(s->epoch, 0);
	fo_on_promote(&C, &C.nodes[s->fo.to], true, NULL);
	assert_int_equal(s->fo.state, FO_ST_REPOINT);
	assert_int_equal(s->epoch, 1);
	assert_int_equal(s->primary, N("n3")->idx);
	fo_on_timer(&C, s);
	assert_int_equal(s->fo.state, FO_ST_NONE);
	assert_int_equal(R.timer_ms, -1);
	assert_string_equal(s->last.result, "ok");
}

/* A busy primary (its agent: working on a CPU) is alive: node_busy once,
 * never a failover. Hung with a cause: the cause is the reason
 * of node_down and rides on +sdown. */
static void test_busy_alive_hung_with_cause(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;

	(void)state;
	C.lease_ms = 0; /* the cause, not the lease wait (test_lease_*) */
	healthy();
	R.mono += 10;
	mkrep(&r, FO_PROC_BUSY, INFO_ROLE_MASTER, NULL, -1, 1000);
	snprintf(r.cause, sizeof(r.cause), "busy");
	snprintf(r.thread_state, sizeof(r.thread_state), "running");
	r.run_ms = 480;
	r.window_ms = 500;
	fo_on_report(&C, N("n1"), &r);
	assert_true(evented("node_busy"));
	assert_false(evented("node_down"));
	assert_false(evented("failover_start"));
	assert_int_equal(s->fo.state, FO_ST_NONE);
	clear_rec();
	fo_on_report(&C, N("n1"), &r); /* still busy: said once */
	assert_false(evented("node_busy"));
	R.mono += 3000;
	mkrep(&r, FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	snprintf(r.cause, sizeof(r.cause), "stopped");
	snprintf(r.thread_state, sizeof(r.thread_state), "stopped");
	r.state_ms = 51;
	fo_on_report(&C, N("n1"), &r);
	assert_true(evented("node_down"));
	assert_true(published("+sdown master s 10.0.0.1 6379 #proc_hung stopped"));
	assert_true(evented("failover_start"));
	assert_int_equal(s->fo.state, FO_ST_SELECT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_rules_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_process_path_failover, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_busy_alive_hung_with_cause, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_promote_refused_next_candidate, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_good_replica_retry, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_select_timeout_retried, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_agent_lost_no_failover, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_host_path_failover, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tilt, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tilt_clock_jump, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_block_window, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_planned_switchover, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_planned_offset_timeout_unpauses, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restarted_empty_primary, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restarted_with_its_data, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_discover, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_discover_unknown_said_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_transition_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_set_primary, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_self_demoted_said_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failover_path_through_table, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
