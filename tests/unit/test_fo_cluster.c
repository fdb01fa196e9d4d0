// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Cluster shards (fo_cluster.c): CLUSTER NODES read and checked against the shard, and
 * the failover through the cluster's election (FORCE, plain for a planned move,
 * TAKEOVER only when asked; a replica the cluster elected itself taken as it is; no
 * repoint), on the harness's four-node shard made a cluster one. */
#include <errno.h>
#include <stdlib.h>
#include "fo_harness.h"

/* n1 master with slots, n2..n4 its replicas, and another shard's master. */
static const char nodes_ok[] =
    "aaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-5460\n"
    "bbb 10.0.0.2:6379@16379 slave aaa 0 1 1 connected\n"
    "ccc 10.0.0.3:6379@16379,host3 slave aaa 0 1 1 connected\n"
    "ddd 10.0.0.4:6379@16379 slave aaa 0 1 1 connected\n"
    "eee 10.0.0.9:6379@16379 master,fail? - 0 1 2 connected 5461-16383\n";

static void cluster_shard(void)
{
	fo_find_shard(&C, "s")->cluster = true;
	healthy();
}

static bool stepped(const char *text)
{
	const struct fo_failover *f = &fo_find_shard(&C, "s")->fo;

	for (int i = 0; i < f->nsteps; i++)
		if (strstr(f->steps[i].text, text))
			return true;
	return false;
}

static void test_nodes_parse(void **state)
{
	struct fo_cl_node v[8];

	(void)state;
	assert_int_equal(fo_cluster_nodes_parse(nodes_ok, strlen(nodes_ok), v, 8), 5);
	assert_true(v[0].myself && v[0].master && v[0].has_slots);
	assert_string_equal(v[0].host, "10.0.0.1");
	assert_int_equal(v[0].port, 6379);
	assert_string_equal(v[1].master_id, "aaa");
	assert_false(v[1].master || v[1].has_slots);
	assert_string_equal(v[2].host, "10.0.0.3"); /* ",hostname" cut with the bus port */
	assert_true(v[4].pfail && !v[4].fail);
	assert_int_equal(fo_cluster_nodes_parse(nodes_ok, strlen(nodes_ok), v, 4), -E2BIG);
	assert_int_equal(fo_cluster_nodes_parse("aaa 10.0.0.1 master\n", 20, v, 8), -EINVAL);
	assert_int_equal(fo_cluster_nodes_parse("", 0, v, 8), 0);
}

static void test_nodes_check(void **state)
{
	const char *moved = "aaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-5460\n"
			    "bbb 10.0.0.2:6379@16379 slave aaa 0 1 1 connected\n"
			    "ccc 10.0.0.3:6379@16379 slave eee 0 1 1 connected\n"
			    "ddd 10.0.0.4:6379@16379 slave aaa 0 1 1 connected\n";
	const char *extra = "aaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-5460\n"
			    "bbb 10.0.0.2:6379@16379 slave aaa 0 1 1 connected\n"
			    "ccc 10.0.0.3:6379@16379 slave aaa 0 1 1 connected\n"
			    "ddd 10.0.0.4:6379@16379 slave aaa 0 1 1 connected\n"
			    "fff 10.0.0.8:6379@16379 slave aaa 0 1 1 connected\n";
	const char *noslots = "aaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected\n";
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	cluster_shard();
	fo_cluster_check(&C, s, N("n1"), nodes_ok, strlen(nodes_ok));
	assert_true(evented("cluster_consistent"));
	clear_rec();
	fo_cluster_check(&C, s, N("n1"), nodes_ok, strlen(nodes_ok));
	assert_int_equal(R.nevents, 0); /* said once */
	fo_cluster_check(&C, s, N("n1"), moved, strlen(moved));
	assert_true(evented("cluster_mismatch"));
	assert_non_null(strstr(s->cluster_why, "n3 (10.0.0.3:6379) is not a replica of n1"));
	fo_cluster_check(&C, s, N("n1"), extra, strlen(extra));
	assert_non_null(strstr(s->cluster_why, "replica 10.0.0.8:6379 of n1 is not in"));
	fo_cluster_check(&C, s, N("n1"), noslots, strlen(noslots));
	assert_non_null(strstr(s->cluster_why, "a master serving no slots"));
	fo_cluster_check(&C, s, N("n1"), "garbage", 7);
	assert_non_null(strstr(s->cluster_why, "failed to parse"));
	/* A replica's view is not the shard's: only the primary's is judged. */
	clear_rec();
	fo_cluster_check(&C, s, N("n2"), nodes_ok, strlen(nodes_ok));
	assert_int_equal(R.nevents, 0);
	/* Replication shards are never judged. */
	s->cluster = false;
	fo_cluster_check(&C, s, N("n1"), nodes_ok, strlen(nodes_ok));
	assert_int_equal(R.nevents, 0);
}

static void test_cluster_failover_force(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl i2 = slave_info("n1", 0, 990), i3 = slave_info("n1", 0, 1000),
			 i4 = slave_info("n1", 0, 995);

	(void)state;
	cluster_shard();
	R.mono += 10;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("failover_start"));
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_info(&C, N("n4"), true, &i4, NULL);
	fo_on_info(&C, N("n3"), true, &i3, NULL);
	/* The cluster's election on the best replica, not the transaction. */
	assert_true(stepped("CLUSTER FAILOVER FORCE to n3"));
	assert_false(called("promote n3"));
	assert_int_equal(s->fo.state, FO_ST_PROMOTE);
	fo_on_promote(&C, N("n3"), true, NULL);
	assert_int_equal(s->primary, N("n3")->idx);
	assert_int_equal(s->epoch, 1);
	assert_true(evented("promoted"));
	/* Nobody repointed: the cluster does it. */
	assert_false(called("replicaof n2 n3") || called("replicaof n4 n3"));
	assert_int_equal(s->fo.state, FO_ST_NONE);
	assert_string_equal(R.done_result, "ok");
	/* The old primary back as a master (before the cluster demotes it): not demoted
	 * by flatline either. */
	clear_rec();
	R.mono += 20000;
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 0);
	assert_false(called("replicaof n1 n3"));
}

/* After flatline's promotion, the promoted replica's agent may still report the role
 * of before (its INFO is up to a heartbeat old) while the old primary, resumed, says
 * master until the cluster bus reaches it: the primary is not followed back on that;
 * only the controller's own INFO of the primary read since its promotion may say it is
 * a replica now. */
static void test_cluster_no_follow_back(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl i2 = slave_info("n1", 0, 990), i3 = slave_info("n1", 0, 1000),
			 i4 = slave_info("n1", 0, 995), m3 = slave_info(NULL, -1, 1000),
			 r3 = slave_info("n1", 1, 1000);

	(void)state;
	cluster_shard();
	m3.role = INFO_ROLE_MASTER;
	R.mono += 10;
	report("n1", FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	R.mono += 1000; /* its lease over */
	report("n1", FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_info(&C, N("n4"), true, &i4, NULL);
	fo_on_info(&C, N("n3"), true, &i3, NULL);
	assert_true(stepped("CLUSTER FAILOVER FORCE to n3"));
	fo_on_promote(&C, N("n3"), true, NULL);
	assert_int_equal(s->primary, N("n3")->idx);
	clear_rec();
	R.mono += 20;
	report("n3", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 1000); /* read before the election */
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_int_equal(s->primary, N("n3")->idx);
	assert_false(evented("primary_followed"));
	assert_true(called("info n3")); /* asked itself */
	fo_on_info(&C, N("n3"), true, &m3, NULL);
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_int_equal(s->primary, N("n3")->idx);
	/* The controller's own INFO since the promotion says replica (the cluster moved
	 * the slots back): followed. */
	R.mono += 20;
	fo_on_info(&C, N("n3"), true, &r3, NULL);
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("primary_followed"));
	assert_int_equal(s->primary, N("n1")->idx);
}

static void test_cluster_elected_itself(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl i2 = slave_info("n1", 0, 990), i3 = slave_info(NULL, -1, 1000),
			 i4 = slave_info("n1", 0, 995);

	(void)state;
	cluster_shard();
	i3.role = INFO_ROLE_MASTER; /* the cluster's own election won already */
	R.mono += 10;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_info(&C, N("n3"), true, &i3, NULL);
	fo_on_info(&C, N("n4"), true, &i4, NULL);
	assert_true(stepped("the cluster elected n3 itself"));
	assert_false(stepped("CLUSTER FAILOVER"));
	assert_int_equal(s->primary, N("n3")->idx);
	assert_string_equal(R.done_result, "ok");
}

static void test_cluster_planned_and_takeover(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl t = slave_info("n1", 1, 1000);
	char why[160];

	(void)state;
	cluster_shard();
	assert_int_equal(fo_start(&C, s, true, N("n2")->idx, "operator", why, sizeof(why)), 0);
	fo_on_info(&C, N("n2"), true, &t, NULL);
	/* The cluster pauses and waits for the offset itself: no CLIENT PAUSE. */
	assert_false(called("pause n1"));
	assert_true(stepped("CLUSTER FAILOVER to n2"));
	assert_false(stepped("FORCE") || stepped("TAKEOVER"));
	fo_on_promote(&C, N("n2"), true, NULL);
	assert_int_equal(s->primary, N("n2")->idx);
	/* TAKEOVER only when the operator asks for it, and fenced: no handshake with the
	 * primary, so its writes are paused and the target's offset waited for first. */
	s->last_failover_end_ms = 0;
	clear_rec();
	assert_int_equal(fo_start(&C, s, true, N("n3")->idx, "operator", why, sizeof(why)), 0);
	s->fo.takeover = true;
	t = slave_info("n2", 1, 1000);
	fo_on_info(&C, N("n3"), true, &t, NULL);
	assert_true(called("pause n2"));
	assert_false(stepped("CLUSTER FAILOVER"));
	fo_on_pause(&C, N("n2"), true, NULL);
	/* The paused primary's offset, then the target's reaching it. */
	{
		struct info_repl m = slave_info(NULL, -1, 1500);

		m.role = INFO_ROLE_MASTER;
		fo_on_info(&C, N("n2"), true, &m, NULL);
		assert_false(stepped("CLUSTER FAILOVER"));
		t = slave_info("n2", 1, 1500);
		fo_on_info(&C, N("n3"), true, &t, NULL);
	}
	assert_true(stepped("CLUSTER FAILOVER TAKEOVER to n3"));
	fo_on_promote(&C, N("n3"), true, NULL);
	assert_int_equal(s->primary, N("n3")->idx);
	assert_true(called("unpause n2"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nodes_parse),
	    cmocka_unit_test_setup_teardown(test_nodes_check, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cluster_failover_force, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cluster_no_follow_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cluster_elected_itself, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cluster_planned_and_takeover, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
