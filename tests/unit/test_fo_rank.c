// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Replica ranking (controller/fo_rank.c): offset, then priority, never a replica
 * that is down, a master, on another history or priority 0; the fallbacks when the
 * links are down, and Dragonfly's offsets. With the four-node shard of fo_harness.h. */
#include "fo_harness.h"

/* ---- ranking ---- */

static int rank(int *out)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	return fo_rank(&C, s, N("n1")->idx, "replid-a", R.mono - 1000, out, FO_MAX_SHARD_NODES);
}

static void test_rank_offset_then_priority(void **state)
{
	int out[FO_MAX_SHARD_NODES];

	(void)state;
	healthy();
	set_info("n2", slave_info("n1", 1, 500));
	set_info("n3", slave_info("n1", 1, 700));
	set_info("n4", slave_info("n1", 1, 700));
	N("n4")->priority = 10; /* same offset: lower priority value wins */
	assert_int_equal(rank(out), 3);
	assert_string_equal(C.nodes[out[0]].id, "n4");
	assert_string_equal(C.nodes[out[1]].id, "n3");
	assert_string_equal(C.nodes[out[2]].id, "n2");
}

/* A spare just attached (FO_N_UNPROMOTABLE) is no candidate, the best one though. */
static void test_rank_unpromotable(void **state)
{
	int out[FO_MAX_SHARD_NODES];

	(void)state;
	healthy();
	set_info("n2", slave_info("n1", 1, 500));
	set_info("n3", slave_info("n1", 1, 700));
	set_info("n4", slave_info("n1", 1, 900));
	N("n4")->flags |= FO_N_UNPROMOTABLE;
	assert_int_equal(rank(out), 2);
	assert_string_equal(C.nodes[out[0]].id, "n3");
	assert_string_equal(C.nodes[out[1]].id, "n2");
	N("n4")->flags &= ~FO_N_UNPROMOTABLE;
	assert_int_equal(rank(out), 3);
	assert_string_equal(C.nodes[out[0]].id, "n4");
}

static void test_rank_priority_zero(void **state)
{
	int out[FO_MAX_SHARD_NODES];
	struct info_repl i4 = slave_info("n1", 1, 9999);

	(void)state;
	healthy();
	set_info("n2", slave_info("n1", 1, 500));
	set_info("n3", slave_info("n1", 1, 700));
	N("n3")->priority = 0; /* cluster file: never */
	i4.slave_priority = 0; /* the server's replica-priority 0: never */
	set_info("n4", i4);
	assert_int_equal(rank(out), 1);
	assert_string_equal(C.nodes[out[0]].id, "n2");
}

static void test_rank_replid_mismatch(void **state)
{
	int out[FO_MAX_SHARD_NODES];
	struct info_repl i3 = slave_info("n1", 1, 900000);

	(void)state;
	healthy();
	snprintf(i3.master_replid, sizeof(i3.master_replid), "replid-other");
	set_info("n2", slave_info("n1", 1, 500));
	set_info("n3", i3); /* a huge offset on another history does not compare */
	set_info("n4", slave_info("n1", 1, 400));
	assert_int_equal(rank(out), 3);
	assert_string_equal(C.nodes[out[0]].id, "n2");
	assert_string_equal(C.nodes[out[1]].id, "n4");
	assert_string_equal(C.nodes[out[2]].id, "n3");
}

static void test_rank_disconnected_fallback(void **state)
{
	int out[FO_MAX_SHARD_NODES];

	(void)state;
	/* Nobody was connected (a partition): priority, then offset, then id. */
	fo_find_shard(&C, "s")->primary = N("n1")->idx;
	set_info("n2", slave_info("n1", 0, 900));
	set_info("n3", slave_info("n1", 0, 100));
	set_info("n4", slave_info("n1", 0, 100));
	N("n3")->priority = 5;
	N("n4")->priority = 5;
	assert_int_equal(rank(out), 3);
	assert_string_equal(C.nodes[out[0]].id, "n3");
	assert_string_equal(C.nodes[out[1]].id, "n4");
	assert_string_equal(C.nodes[out[2]].id, "n2");
	/* One connected replica beats every disconnected one. */
	set_info("n2", slave_info("n1", 1, 50));
	assert_int_equal(rank(out), 3);
	assert_string_equal(C.nodes[out[0]].id, "n2");
}

static void test_rank_dragonfly(void **state)
{
	int out[FO_MAX_SHARD_NODES];
	struct info_repl i2 = slave_info("n1", 1, -1), i3 = slave_info("n1", 1, 300),
			 i4 = slave_info("n1", 1, -1);

	(void)state;
	healthy();
	/* Dragonfly: no replid, no offset until the full sync is over. */
	i2.server = i3.server = i4.server = INFO_SRV_DRAGONFLY;
	i2.master_replid[0] = i3.master_replid[0] = i4.master_replid[0] = '\0';
	i4.sync_in_progress = 1;
	set_info("n2", i2);
	set_info("n3", i3);
	set_info("n4", i4);
	assert_int_equal(rank(out), 2);
	assert_string_equal(C.nodes[out[0]].id, "n3"); /* known offset, stable sync */
	assert_string_equal(C.nodes[out[1]].id, "n2"); /* offset unknown */
						       /* n4, mid full sync: no candidate at all */
}

/* The model flags an attached spare it sets up (a restart's, a new leader's) and one
 * an attach line moves into a shard; a shard's node list made again keeps a flag
 * earned since cleared. */
static void test_attached_unpromotable_at_setup(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	int i = N("n4")->idx;

	(void)state;
	cfg->nodes[i].attached = true;
	assert_int_equal(fo_node_setup(&C, i), 0);
	assert_true(C.nodes[i].flags & FO_N_UNPROMOTABLE);
	cfg->nodes[i].attached = false;
	assert_int_equal(fo_node_setup(&C, i), 0);
	assert_false(C.nodes[i].flags & FO_N_UNPROMOTABLE);
	/* A spare (no shard yet) attached by a line from the state file or etcd. */
	C.nodes[i].shard = -1;
	cfg->nodes[i].attached = true;
	fo_shard_sync(&C, s->idx);
	assert_true(C.nodes[i].flags & FO_N_UNPROMOTABLE);
	assert_int_equal(C.nodes[i].shard, s->idx);
	C.nodes[i].flags &= ~FO_N_UNPROMOTABLE; /* earned */
	fo_shard_sync(&C, s->idx);
	assert_false(C.nodes[i].flags & FO_N_UNPROMOTABLE);
	cfg->nodes[i].attached = false;
}

/* A replica in a full sync is never a candidate, however far ahead it says it is;
 * once the sync ends it is one again. */
static void test_rank_syncing_never(void **state)
{
	int out[FO_MAX_SHARD_NODES];
	struct info_repl i4 = slave_info("n1", 1, 9000);

	(void)state;
	healthy();
	set_info("n2", slave_info("n1", 1, 500));
	set_info("n3", slave_info("n1", 1, 700));
	i4.sync_in_progress = 1;
	set_info("n4", i4);
	assert_int_equal(rank(out), 2);
	assert_string_equal(C.nodes[out[0]].id, "n3");
	assert_string_equal(C.nodes[out[1]].id, "n2");
	/* The only replica left, still syncing: nobody. */
	N("n2")->flags |= FO_N_UNPROMOTABLE;
	N("n3")->flags |= FO_N_UNPROMOTABLE;
	assert_int_equal(rank(out), 0);
	N("n2")->flags &= ~FO_N_UNPROMOTABLE;
	N("n3")->flags &= ~FO_N_UNPROMOTABLE;
	i4.sync_in_progress = 0;
	set_info("n4", i4);
	assert_int_equal(rank(out), 3);
	assert_string_equal(C.nodes[out[0]].id, "n4");
}

static void test_rank_skips_down_and_masters(void **state)
{
	int out[FO_MAX_SHARD_NODES];
	struct info_repl m = slave_info(NULL, -1, 5000);

	(void)state;
	healthy();
	m.role = INFO_ROLE_MASTER;
	set_info("n2", m);
	set_info("n3", slave_info("n1", 1, 700));
	set_info("n4", slave_info("n1", 1, 800));
	report("n4", FO_PROC_HUNG, INFO_ROLE_SLAVE, "n1", 1, 800);
	assert_int_equal(rank(out), 1);
	assert_string_equal(C.nodes[out[0]].id, "n3");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_rank_offset_then_priority, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rank_priority_zero, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rank_unpromotable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rank_syncing_never, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_attached_unpromotable_at_setup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rank_replid_mismatch, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rank_disconnected_fallback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rank_dragonfly, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rank_skips_down_and_masters, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
