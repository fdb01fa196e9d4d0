// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failure rules (controller/fo_rules.c) are pure: the model and the time in, a
 * verdict out. Each test asks a rule and checks its verdict, and that nothing in the
 * model changed and no op (I/O, event, publish) was called. With the four-node shard
 * of fo_harness.h. */
#include <stdlib.h>
#include "fo_harness.h"
#include "controller/fo_internal.h"

/* ---- the model before a rule is asked, to compare with after ---- */

struct snap {
	struct fo_node *nodes;
	struct fo_shard *shards;
	struct fo_cluster c;
	int ncalls, nevents, npubs, promoted, done, timer_ms;
};

static void snap_take(struct snap *sn)
{
	sn->nodes = malloc(sizeof(*C.nodes) * C.nnodes);
	sn->shards = malloc(sizeof(*C.shards) * C.nshards);
	assert_non_null(sn->nodes);
	assert_non_null(sn->shards);
	memcpy(sn->nodes, C.nodes, sizeof(*C.nodes) * C.nnodes);
	memcpy(sn->shards, C.shards, sizeof(*C.shards) * C.nshards);
	sn->c = C;
	sn->ncalls = R.ncalls;
	sn->nevents = R.nevents;
	sn->npubs = R.npubs;
	sn->promoted = R.promoted;
	sn->done = R.done;
	sn->timer_ms = R.timer_ms;
}

/* Nothing changed since snap_take, and no op was called. */
static void snap_same(struct snap *sn)
{
	assert_memory_equal(sn->nodes, C.nodes, sizeof(*C.nodes) * C.nnodes);
	assert_memory_equal(sn->shards, C.shards, sizeof(*C.shards) * C.nshards);
	assert_memory_equal(&sn->c, &C, sizeof(C));
	assert_int_equal(sn->ncalls, R.ncalls);
	assert_int_equal(sn->nevents, R.nevents);
	assert_int_equal(sn->npubs, R.npubs);
	assert_int_equal(sn->promoted, R.promoted);
	assert_int_equal(sn->done, R.done);
	assert_int_equal(sn->timer_ms, R.timer_ms);
	free(sn->nodes);
	free(sn->shards);
}

/* ---- TILT ---- */

static enum fo_tilt_step tilt_at(long long mono, long long wall, long long *stall, long long *jump)
{
	struct snap sn;
	enum fo_tilt_step v;

	snap_take(&sn);
	v = fo_tilt_judge(&C, mono, wall, stall, jump);
	snap_same(&sn);
	return v;
}

static void test_tilt_judge(void **state)
{
	long long stall, jump, m = R.mono, w = R.wall;

	(void)state;
	C.tilt_ms = 5000;
	/* The first tick has nothing to compare with. */
	assert_int_equal(tilt_at(m + 60000, w, &stall, &jump), FO_TILT_NONE);
	C.last_tick_mono_ms = m;
	C.last_tick_wall_ms = w;
	assert_int_equal(tilt_at(m + 100, w + 100, &stall, &jump), FO_TILT_NONE);
	assert_int_equal(stall, 100);
	assert_int_equal(jump, 0);
	/* A stall of the loop, the wall clock stepped back, and forward. */
	assert_int_equal(tilt_at(m + 3000, w + 3000, &stall, &jump), FO_TILT_ENTER);
	assert_int_equal(stall, 3000);
	assert_int_equal(tilt_at(m + 100, w - 60000, &stall, &jump), FO_TILT_ENTER);
	assert_int_equal(jump, -60100);
	assert_int_equal(tilt_at(m + 100, w + 10000, &stall, &jump), FO_TILT_ENTER);
	/* Exactly the trigger is not a stall. */
	assert_int_equal(tilt_at(m + FO_TILT_TRIGGER_MS, w + FO_TILT_TRIGGER_MS, &stall, &jump),
			 FO_TILT_NONE);
	/* In TILT: again, stay, leave at tilt_until_ms. */
	C.tilt = true;
	C.tilt_since_ms = m;
	C.tilt_until_ms = m + 5000;
	assert_int_equal(tilt_at(m + 3000, w + 3000, &stall, &jump), FO_TILT_AGAIN);
	assert_int_equal(tilt_at(m + 100, w + 100, &stall, &jump), FO_TILT_STAY);
	C.last_tick_mono_ms = m + 4900;
	C.last_tick_wall_ms = w + 4900;
	assert_int_equal(tilt_at(m + 4999, w + 4999, &stall, &jump), FO_TILT_STAY);
	assert_int_equal(tilt_at(m + 5000, w + 5000, &stall, &jump), FO_TILT_LEAVE);
	/* tilt_ms 0: TILT off, whatever the stall. */
	C.tilt = false;
	C.tilt_ms = 0;
	assert_int_equal(tilt_at(m + 600000, w + 600000, &stall, &jump), FO_TILT_NONE);
}

/* ---- a node's verdict, the block window ---- */

static void test_judge_and_fresh_pure(void **state)
{
	struct snap sn;

	(void)state;
	healthy();
	R.mono += 1500; /* n1's heartbeat is stale; n2 says it is down */
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	fo_report_set_peer(&N("n2")->rep, N("n1")->idx, FO_PEER_DOWN);
	clear_rec();
	snap_take(&sn);
	assert_false(fo_fresh(&C, N("n1"), R.mono));
	assert_true(fo_fresh(&C, N("n2"), R.mono));
	assert_int_equal(fo_judge(&C, N("n1"), R.mono), FO_V_HOST_DOWN);
	assert_int_equal(fo_judge(&C, N("n2"), R.mono), FO_V_OK);
	snap_same(&sn);
}

/* One node's key testifies only about its own shard's nodes: n3 (shard t) saying
 * n1 (shard s) is down, or up, is not counted; n2 (shard s) is. */
static void test_judge_counts_own_shard_only(void **state)
{
	static const char two[] = "[cluster]\nname = t\nsecret = s3cret-s3cret-s3cret\n"
				  "[controller]\nnode_down_after_ms = 1000\n"
				  "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
				  "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6379\n"
				  "[node \"n3\"]\naddress = 10.0.0.3\nredis = 10.0.0.3:6379\n"
				  "[node \"n4\"]\naddress = 10.0.0.4\nredis = 10.0.0.4:6379\n"
				  "[shard \"s\"]\nnodes = n1 n2\n[shard \"t\"]\nnodes = n3 n4\n";
	char err[256];

	(void)state;
	fo_cluster_free(&C);
	cfg_free(cfg);
	assert_int_equal(cfg_load_string("two.conf", two, &cfg, err, sizeof(err)), 0);
	assert_int_equal(fo_cluster_init(&C, cfg, &ops, NULL), 0);
	C.now_ms = clk_mono;
	C.wall_ms = clk_wall;
	fo_find_shard(&C, "s")->primary = N("n1")->idx;
	fo_find_shard(&C, "t")->primary = N("n3")->idx;
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	report("n3", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n3", 1, 990);
	R.mono += 1500; /* n1's heartbeat is stale */
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	report("n3", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n3", 1, 990);
	/* Another shard's nodes say n1 is down: not a host failure. */
	fo_report_set_peer(&N("n3")->rep, N("n1")->idx, FO_PEER_DOWN);
	fo_report_set_peer(&N("n4")->rep, N("n1")->idx, FO_PEER_DOWN);
	assert_int_equal(fo_judge(&C, N("n1"), R.mono), FO_V_AGENT_LOST);
	/* Its own shard's node says so: it is; another shard's "up" does not contradict. */
	fo_report_set_peer(&N("n2")->rep, N("n1")->idx, FO_PEER_DOWN);
	fo_report_set_peer(&N("n3")->rep, N("n1")->idx, FO_PEER_UP);
	assert_int_equal(fo_judge(&C, N("n1"), R.mono), FO_V_HOST_DOWN);
}

static void test_may_failover_pure(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct snap sn;
	char why[160];

	(void)state;
	healthy();
	s->last_failover_end_ms = R.mono - 100; /* within the block window */
	snap_take(&sn);
	assert_false(fo_may_failover(&C, s, FO_V_PROC_HUNG, false, why, sizeof(why)));
	assert_non_null(strstr(why, "failover_block_ms"));
	assert_true(fo_may_failover(&C, s, FO_V_PROC_DOWN, false, why, sizeof(why)));
	snap_same(&sn);
	C.tilt = true;
	C.tilt_until_ms = R.mono + 1000;
	snap_take(&sn);
	assert_false(fo_may_failover(&C, s, FO_V_PROC_DOWN, false, why, sizeof(why)));
	assert_non_null(strstr(why, "TILT"));
	snap_same(&sn);
}

/* ---- the restarted-empty check ---- */

static void test_restarted_empty_rule(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;
	struct snap sn;

	(void)state;
	healthy();
	/* Back with the same history: nothing to fear. */
	snap_take(&sn);
	assert_int_equal(fo_restarted_empty(&C, s), -1);
	snap_same(&sn);
	/* Back with another history, shorter than n3's and n4's: n3 has the most. */
	mkrep(&r, FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 10);
	snprintf(r.repl.master_replid, sizeof(r.repl.master_replid), "replid-b");
	N("n1")->rep = r;
	snap_take(&sn);
	assert_int_equal(fo_restarted_empty(&C, s), N("n3")->idx);
	snap_same(&sn);
	/* n3 is down: n4 then. */
	N("n3")->flags |= FO_N_SDOWN;
	assert_int_equal(fo_restarted_empty(&C, s), N("n4")->idx);
	/* A longer history than every replica's: nothing to fear. */
	N("n1")->rep.repl.offset = 5000;
	assert_int_equal(fo_restarted_empty(&C, s), -1);
}

/* ---- discovery's choice ---- */

static struct info_repl master_info(int slaves, long long off)
{
	struct info_repl i;

	memset(&i, 0, sizeof(i));
	i.role = INFO_ROLE_MASTER;
	i.connected_slaves = slaves;
	i.offset = off;
	return i;
}

static int pick(char *why, size_t len, int *nm)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct snap sn;
	int p;

	snap_take(&sn);
	p = fo_discover_pick(&C, s, why, len, nm);
	snap_same(&sn);
	return p;
}

static void test_discover_pick_rule(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	char why[128];
	int nm;

	(void)state;
	s->primary = -1;
	/* The only master. */
	set_info("n1", slave_info("n2", 1, 10));
	set_info("n2", master_info(1, 10));
	set_info("n3", slave_info("n2", 1, 10));
	set_info("n4", slave_info("n2", 1, 10));
	assert_int_equal(pick(why, sizeof(why), &nm), N("n2")->idx);
	assert_int_equal(nm, 1);
	assert_non_null(strstr(why, "only master"));
	/* Two masters: the one with more replicas; then a tie is left to the operator. */
	set_info("n3", master_info(2, 5));
	assert_int_equal(pick(why, sizeof(why), &nm), N("n3")->idx);
	assert_int_equal(nm, 2);
	set_info("n2", master_info(2, 5));
	assert_int_equal(pick(why, sizeof(why), &nm), -1);
	/* The state file's primary, still a master, is kept without a word. */
	s->primary = N("n2")->idx;
	assert_int_equal(pick(why, sizeof(why), &nm), N("n2")->idx);
	assert_string_equal(why, "");
	/* No master answers: the one the replicas follow. */
	s->primary = -1;
	set_info("n1", slave_info("n4", 0, 5));
	set_info("n2", slave_info("n4", 0, 5));
	set_info("n3", slave_info("n4", 0, 5));
	N("n4")->info_ok = 0;
	assert_int_equal(pick(why, sizeof(why), &nm), N("n4")->idx);
	assert_int_equal(nm, 0);
	assert_non_null(strstr(why, "followed by the replicas"));
}

/* An attached spare not yet promotable that still says master (its REPLICAOF lost)
 * is never discovered or adopted as the primary; the recorded primary stays one. */
static void test_discover_skips_unpromotable(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	char why[128];
	int nm;

	(void)state;
	s->primary = -1;
	set_info("n1", slave_info("n2", 1, 10));
	set_info("n2", master_info(2, 10));
	set_info("n3", slave_info("n2", 1, 10));
	set_info("n4", master_info(0, 0));
	N("n4")->flags |= FO_N_UNPROMOTABLE;
	/* Without it, two masters: n2 (more replicas). With it, the only master. */
	assert_int_equal(pick(why, sizeof(why), &nm), N("n2")->idx);
	assert_int_equal(nm, 1);
	assert_non_null(strstr(why, "only master"));
	/* The only master at all: nobody. */
	set_info("n2", slave_info("n4", 0, 10));
	set_info("n1", slave_info("n4", 0, 10));
	set_info("n3", slave_info("n4", 0, 10));
	assert_int_equal(pick(why, sizeof(why), &nm), -1);
	assert_int_equal(nm, 0);
	/* Not adopted over the recorded primary for a "newer history" either. */
	set_info("n2", master_info(1, 10));
	set_info("n4", master_info(3, 500));
	snprintf(N("n4")->info.master_replid, sizeof(N("n4")->info.master_replid), "other");
	s->primary = N("n2")->idx;
	assert_int_equal(pick(why, sizeof(why), &nm), N("n2")->idx);
	assert_string_equal(why, "");
	N("n4")->flags &= ~FO_N_UNPROMOTABLE;
	assert_int_equal(pick(why, sizeof(why), &nm), N("n4")->idx);
	assert_non_null(strstr(why, "newer history"));
	/* The recorded primary flagged (an attached spare promoted since) stays it. */
	N("n2")->flags |= FO_N_UNPROMOTABLE;
	set_info("n4", slave_info("n2", 1, 10));
	assert_int_equal(pick(why, sizeof(why), &nm), N("n2")->idx);
}

/* ---- what a report's change means ---- */

static void test_report_changed_rule(void **state)
{
	struct fo_report a, b;

	(void)state;
	mkrep(&a, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	b = a;
	b.repl.offset = 2000; /* the offset moves all the time: no change */
	assert_false(fo_report_changed(&a, &b));
	b.repl.link_up = 0;
	assert_true(fo_report_changed(&a, &b));
	b = a;
	b.proc = FO_PROC_HUNG;
	assert_true(fo_report_changed(&a, &b));
	b = a;
	fo_report_set_peer(&b, 2, FO_PEER_DOWN);
	assert_true(fo_report_peers_changed(&a, &b));
	assert_true(fo_report_changed(&a, &b));
	fo_report_set_peer(&a, 2, FO_PEER_DOWN);
	assert_false(fo_report_changed(&a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_tilt_judge, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_judge_and_fresh_pure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_judge_counts_own_shard_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_may_failover_pure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restarted_empty_rule, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_discover_pick_rule, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_discover_skips_unpromotable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_changed_rule, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
