// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The promotion recorded first (HA mode, ops->record): nothing is promoted until the
 * record is written; a record that fails or times out aborts the failover; every
 * candidate and every retry takes an epoch above any the record may hold. And what a
 * new leader's discovery makes of a record that is behind (a newer master adopted) or
 * ahead (a recorded primary never promoted). */
#include "fo_harness.h"

static struct fo_ops rec_ops;
static int record_ret; /* what op_record returns */
static unsigned long long recorded_epoch;

static int op_record(void *ctx, int shard, int node, unsigned long long epoch)
{
	(void)ctx, (void)shard;
	call("record %s %llu", C.nodes[node].id, epoch);
	recorded_epoch = epoch;
	return record_ret;
}

static int setup_rec(void **state)
{
	setup(state);
	rec_ops = ops;
	rec_ops.record = op_record;
	C.ops = &rec_ops;
	C.record_first = true;
	record_ret = 0;
	recorded_epoch = 0;
	return 0;
}

/* n1 dies; n2..n4 answer INFO (n3 the furthest): the failover reaches PROMOTE (and
 * waits there for the record, when op_record starts one). */
static struct fo_shard *to_promote(void)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct info_repl i2 = slave_info("n1", 0, 990), i3 = slave_info("n1", 0, 1000),
			 i4 = slave_info("n1", 0, 995);

	healthy();
	R.mono += 10;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_int_equal(s->fo.state, FO_ST_SELECT);
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_info(&C, N("n4"), true, &i4, NULL);
	fo_on_info(&C, N("n3"), true, &i3, NULL);
	assert_int_equal(s->fo.state, record_ret ? s->fo.state : FO_ST_PROMOTE);
	return s;
}

static void test_recorded_before_promotion(void **state)
{
	struct fo_shard *s;

	(void)state;
	s = to_promote();
	assert_true(called("record n3 1"));
	assert_false(called("promote n3")); /* not before the record is written */
	assert_int_equal(R.promoted, 0);
	assert_int_equal(s->primary, N("n1")->idx);
	fo_on_record(&C, s, N("n3")->idx, 2, true, NULL); /* not the one asked: ignored */
	fo_on_record(&C, s, N("n2")->idx, 1, true, NULL);
	assert_false(called("promote n3"));
	fo_on_record(&C, s, N("n3")->idx, 1, true, NULL);
	assert_true(called("promote n3"));
	assert_int_equal(R.timer_ms, C.promote_timeout_ms + 50); /* its own time again */
	fo_on_promote(&C, N("n3"), true, NULL);
	assert_int_equal(s->primary, N("n3")->idx);
	assert_int_equal(s->epoch, 1);
	assert_int_equal(R.promoted, 1);
	assert_true(called("replicaof n2 n3") && called("replicaof n4 n3"));
}

static void test_record_fails_aborts(void **state)
{
	struct fo_shard *s;

	(void)state;
	s = to_promote();
	assert_true(called("record n3 1"));
	fo_on_record(&C, s, N("n3")->idx, 1, false, "etcd timed out");
	assert_int_equal(s->fo.state, FO_ST_NONE);
	assert_true(evented("failover_abort"));
	assert_non_null(strstr(R.done_result, "failed to record n3 at epoch 1"));
	assert_false(called("promote n3"));
	assert_false(called("promote n2") || called("promote n4"));
	assert_int_equal(s->primary, N("n1")->idx);
	assert_int_equal(s->epoch, 0);
	assert_int_equal(R.promoted, 0);
	/* A late success of that write changes nothing here. */
	fo_on_record(&C, s, N("n3")->idx, 1, true, NULL);
	assert_false(called("promote n3"));
	/* The write may have been applied: the record holds epoch 1 (read again), so
	 * the retry takes epoch 2. */
	s->epoch_floor = 1;
	clear_rec();
	R.mono += 200;
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 990);
	assert_int_equal(s->fo.state, FO_ST_SELECT);
	{
		struct info_repl i3 = slave_info("n1", 0, 1000);

		fo_on_info(&C, N("n3"), true, &i3, NULL);
		fo_on_timer(&C, s); /* the others did not answer in time */
	}
	assert_true(called("record n3 2"));
	fo_on_record(&C, s, N("n3")->idx, 2, true, NULL);
	fo_on_promote(&C, N("n3"), true, NULL);
	assert_int_equal(s->epoch, 2);
}

static void test_record_timeout_and_refusal(void **state)
{
	struct fo_shard *s;

	(void)state;
	/* The state's timer while recording: aborted, nothing promoted. */
	s = to_promote();
	fo_on_timer(&C, s);
	assert_int_equal(s->fo.state, FO_ST_NONE);
	assert_non_null(strstr(R.done_result, "timed out"));
	assert_false(called("promote n3"));
	teardown(state);
	/* ops->record refuses at once (not the leader): aborted. */
	setup_rec(state);
	record_ret = -1;
	s = to_promote();
	assert_int_equal(s->fo.state, FO_ST_NONE);
	assert_string_equal(R.done_result, "the promotion could not be recorded");
	assert_false(called("promote n3"));
	teardown(state);
	/* > 0: nothing to record (one controller): promoted at once, at epoch + 1. */
	setup_rec(state);
	record_ret = 1;
	s = to_promote();
	assert_true(called("promote n3"));
	fo_on_promote(&C, N("n3"), true, NULL);
	assert_int_equal(s->epoch, 1);
}

static void test_next_candidate_new_epoch(void **state)
{
	struct fo_shard *s;

	(void)state;
	s = to_promote();
	fo_on_record(&C, s, N("n3")->idx, 1, true, NULL);
	fo_on_promote(&C, N("n3"), false, "ERR refused");
	/* The next candidate is recorded at its own epoch, not the refused one's. */
	assert_true(called("record n4 2"));
	fo_on_record(&C, s, N("n4")->idx, 2, true, NULL);
	assert_true(called("promote n4"));
	fo_on_promote(&C, N("n4"), true, NULL);
	assert_int_equal(s->primary, N("n4")->idx);
	assert_int_equal(s->epoch, 2);
}

static struct info_repl master_info(long long off, int nrepl, const char *replid)
{
	struct info_repl i = slave_info("n1", 0, off);

	i.role = INFO_ROLE_MASTER;
	i.master_host[0] = '\0';
	i.master_port = 0;
	i.connected_slaves = nrepl;
	snprintf(i.master_replid, sizeof(i.master_replid), "%s", replid);
	return i;
}

/* A new leader's INFO round: the recorded primary n1 restarted empty, n2 is a master
 * its predecessor promoted without recording it, n3 and n4 follow n2. n2 is adopted
 * (at the next epoch), not overwritten by a fresh promotion. */
static void test_discover_adopts_newer_master(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	s->primary = N("n1")->idx;
	s->epoch = 0;
	set_info("n1", master_info(0, 0, "replid-empty"));
	set_info("n2", master_info(90000, 2, "replid-n2"));
	set_info("n3", slave_info("n2", 1, 90000));
	set_info("n4", slave_info("n2", 1, 89990));
	fo_discover(&C, s);
	assert_int_equal(s->primary, N("n2")->idx);
	assert_int_equal(s->epoch, 1);
	assert_int_equal(R.promoted, 1); /* recorded */
	assert_true(evented("primary_discovered"));
	assert_false(called("promote n3") || called("promote n4"));
	/* The recorded primary with its history intact stays, another master or not. */
	teardown(state);
	setup_rec(state);
	s = fo_find_shard(&C, "s");
	s->primary = N("n1")->idx;
	set_info("n1", master_info(5000, 2, "replid-a"));
	set_info("n2", master_info(4000, 1, "replid-b"));
	fo_discover(&C, s);
	assert_int_equal(s->primary, N("n1")->idx);
	assert_int_equal(R.promoted, 0);
}

/* The record names n2, never promoted (its leader stopped in between): n2 still
 * follows n1, which does not answer. The primary is n1 (not a replica) at the epoch
 * before the record's, and the promotion takes the recorded epoch. */
static void test_discover_recorded_not_promoted(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	s->primary = N("n2")->idx;
	s->epoch = 1;
	set_info("n2", slave_info("n1", 0, 1000));
	set_info("n3", slave_info("n1", 0, 1000));
	fo_discover(&C, s);
	assert_int_equal(s->primary, N("n1")->idx);
	assert_int_equal(s->epoch, 0);
	assert_int_equal(R.promoted, 0);
	assert_true(evented("primary_discovered"));
	/* n1's failure: the promotion takes the recorded epoch, nothing was promoted at it. */
	clear_rec();
	{
		struct info_repl i2 = slave_info("n1", 0, 1000), i3 = slave_info("n1", 0, 990);

		R.mono += 10;
		report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
		assert_int_equal(s->fo.state, FO_ST_SELECT);
		fo_on_info(&C, N("n2"), true, &i2, NULL);
		fo_on_info(&C, N("n3"), true, &i3, NULL);
		fo_on_timer(&C, s);
	}
	assert_true(called("record n2 1"));
	fo_on_record(&C, s, N("n2")->idx, 1, true, NULL);
	fo_on_promote(&C, N("n2"), true, NULL);
	assert_int_equal(s->primary, N("n2")->idx);
	assert_int_equal(s->epoch, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_recorded_before_promotion, setup_rec, teardown),
	    cmocka_unit_test_setup_teardown(test_record_fails_aborts, setup_rec, teardown),
	    cmocka_unit_test_setup_teardown(test_record_timeout_and_refusal, setup_rec, teardown),
	    cmocka_unit_test_setup_teardown(test_next_candidate_new_epoch, setup_rec, teardown),
	    cmocka_unit_test_setup_teardown(test_discover_adopts_newer_master, setup_rec, teardown),
	    cmocka_unit_test_setup_teardown(test_discover_recorded_not_promoted, setup_rec,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
