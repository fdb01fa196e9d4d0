// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Runtime settings (ctl_runtime.c) through Sentinel's commands on a fake
 * connection: SENTINEL SET, CONFIG GET|SET, DEBUG, SIMULATE-FAILURE; every pair
 * checked before any is applied; kept in <state_file>.runtime and read back; a
 * setting from etcd. */
#include "ctl_harness.h"

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void test_set_needs_auth(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");

	(void)state;
	th_run(k, ctl_on_sentinel, "SENTINEL SET s down-after-milliseconds 5000");
	assert_string_equal(th_out(k),
			    "-NOAUTH Authentication required (AUTH <cluster secret>).\r\n");
	assert_int_equal(fo_down_after_ms(&C->fo, 0), 1000);
	/* Reading needs none. */
	th_run(k, ctl_on_sentinel, "SENTINEL CONFIG GET loglevel");
	assert_string_equal(th_out(k), "*2\r\n$8\r\nloglevel\r\n$6\r\nnotice\r\n");
}

static void test_set_applies_and_keeps(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");
	char path[300], text[1024];

	(void)state;
	k->flags |= CTL_C_AUTH;
	th_run(k, ctl_on_sentinel,
	       "SENTINEL SET s down-after-milliseconds 5000 failover-timeout 7000");
	assert_string_equal(th_out(k), "+OK\r\n");
	assert_int_equal(fo_down_after_ms(&C->fo, 0), 5000);
	assert_int_equal(fo_block_ms(&C->fo, &C->fo.shards[0]), 7000);
	snprintf(path, sizeof(path), "%s.runtime", C->state_file);
	read_file(path, text, sizeof(text));
	assert_non_null(strstr(text, "master s down-after-milliseconds 5000\n"));
	assert_non_null(strstr(text, "master s failover-timeout 7000\n"));
	th_primary(C, "n1");
	th_run(k, ctl_on_sentinel, "SENTINEL master s");
	assert_non_null(strstr(th_out(k), "$23\r\ndown-after-milliseconds\r\n$4\r\n5000\r\n"));

	/* Read back by a controller started on the same state file. */
	{
		struct ctl *d = th_new(th_cluster);
		char dpath[300], cmd[700];

		snprintf(dpath, sizeof(dpath), "%s.runtime", d->state_file);
		snprintf(cmd, sizeof(cmd), "cp %s %s", path, dpath);
		assert_int_equal(system(cmd), 0);
		assert_int_equal(ctl_runtime_load(d), 2);
		assert_int_equal(fo_down_after_ms(&d->fo, 0), 5000);
		assert_int_equal(fo_block_ms(&d->fo, &d->fo.shards[0]), 7000);
		th_free(d);
	}
}

static void test_set_checks_every_pair_first(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");

	(void)state;
	k->flags |= CTL_C_AUTH;
	th_run(k, ctl_on_sentinel,
	       "SENTINEL SET s down-after-milliseconds 2000 failover-timeout 0");
	assert_string_equal(th_out(k), "-ERR Invalid argument '0' for SENTINEL SET "
				       "'failover-timeout' (1 to 86400000)\r\n");
	assert_int_equal(fo_down_after_ms(&C->fo, 0), 1000); /* not applied either */
	th_run(k, ctl_on_sentinel, "SENTINEL SET s made-up 1");
	assert_string_equal(th_out(k), "-ERR Invalid argument 'made-up' to SENTINEL SET\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL SET s quorum");
	assert_string_equal(th_out(k),
			    "-ERR wrong number of arguments for 'sentinel SET' command\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL SET nope quorum 1");
	assert_string_equal(th_out(k), "-ERR No such master with that name\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL SET s quorum 2");
	assert_string_equal(th_out(k),
			    "-ERR Invalid argument '2' for SENTINEL SET 'quorum' (1 to 1)\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL SET s notification-script /bin/sh");
	assert_memory_equal(th_out(k), "-ERR Reconfiguration of scripts path is denied", 46);
	/* A CONFIG key is no SET key, and the other way round. */
	th_run(k, ctl_on_sentinel, "SENTINEL SET s loglevel debug");
	assert_string_equal(th_out(k), "-ERR Invalid argument 'loglevel' to SENTINEL SET\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL CONFIG SET quorum 1");
	assert_string_equal(th_out(k), "-ERR Invalid argument 'quorum' to SENTINEL CONFIG SET\r\n");
}

static void test_config_and_debug(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");
	const char *u, *p;

	(void)state;
	k->flags |= CTL_C_AUTH;
	th_run(k, ctl_on_sentinel, "SENTINEL CONFIG SET loglevel loud");
	assert_string_equal(th_out(k), "-ERR argument(s) must be one of the following: debug, "
				       "verbose, notice, warning, nothing\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL CONFIG SET resolve-hostnames maybe");
	assert_string_equal(th_out(k), "-ERR argument must be 'yes' or 'no'\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL CONFIG SET announce-port 7000 loglevel warning");
	assert_string_equal(th_out(k), "+OK\r\n");
	k->flags |= CTL_C_RESP3;
	th_run(k, ctl_on_sentinel, "SENTINEL CONFIG GET announce-*");
	assert_string_equal(th_out(k), "%3\r\n$18\r\nannounce-hostnames\r\n$2\r\nno\r\n"
				       "$11\r\nannounce-ip\r\n$0\r\n\r\n"
				       "$13\r\nannounce-port\r\n$4\r\n7000\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL DEBUG script-max-runtime 5000 tilt-period 100");
	assert_string_equal(th_out(k), "+OK\r\n");
	assert_int_equal(ctl_hooks_max_runtime_ms(C), 5000);
	assert_int_equal(C->fo.tilt_ms, 100);
	th_run(k, ctl_on_sentinel, "SENTINEL DEBUG script-retry-delay -1");
	assert_memory_equal(th_out(k), "-ERR Invalid argument '-1'", 26);
	assert_int_equal(ctl_hooks_retry_delay_ms(C), 30000);
	/* auth-pass: for the shard's servers from their next connect. */
	th_run(k, ctl_on_sentinel, "SENTINEL SET s auth-user app auth-pass pw-of-the-shard");
	assert_string_equal(th_out(k), "+OK\r\n");
	ctl_runtime_auth(C, 0, &u, &p);
	assert_string_equal(u, "app");
	assert_string_equal(p, "pw-of-the-shard");
}

static void test_simulate_failure(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");

	(void)state;
	k->flags |= CTL_C_AUTH;
	th_run(k, ctl_on_sentinel, "SENTINEL SIMULATE-FAILURE crash-after-promotion");
	assert_string_equal(th_out(k), "+OK\r\n");
	assert_int_equal(ctl_event_simulated(C), CTL_SIM_CRASH_AFTER_PROMOTION);
	th_run(k, ctl_on_sentinel, "SENTINEL SIMULATE-FAILURE crash-sometime");
	assert_string_equal(th_out(k), "-ERR Unknown failure simulation specified\r\n");
	assert_int_equal(ctl_event_simulated(C), CTL_SIM_CRASH_AFTER_PROMOTION);
	th_run(k, ctl_on_sentinel, "SENTINEL SIMULATE-FAILURE help");
	assert_string_equal(
	    th_out(k), "*2\r\n$20\r\ncrash-after-election\r\n$21\r\ncrash-after-promotion\r\n");
}

static void test_load_skips_bad_lines(void **state)
{
	char path[300];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s.runtime", C->state_file);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("# a comment\n"
	      "tilt-period 2500\n"
	      "master s quorum 1\n"
	      "master nope quorum 1\n"	       /* no such shard */
	      "master s loglevel debug\n"      /* not per master */
	      "down-after-milliseconds 0\n"    /* out of bounds */
	      "made-up 3\n"		       /* unknown */
	      "down-after-milliseconds 4000\n" /* an older file's line: every shard */
	      ,
	      f);
	fclose(f);
	assert_int_equal(ctl_runtime_load(C), 3);
	assert_int_equal(C->fo.tilt_ms, 2500);
	assert_int_equal(fo_down_after_ms(&C->fo, 0), 4000);
}

static void test_from_etcd(void **state)
{
	(void)state;
	ctl_runtime_from_etcd(C, "*/tilt-period", "1234");
	assert_int_equal(C->fo.tilt_ms, 1234);
	ctl_runtime_from_etcd(C, "s/down-after-milliseconds", "3000");
	assert_int_equal(fo_down_after_ms(&C->fo, 0), 3000);
	ctl_runtime_from_etcd(C, "s/down-after-milliseconds", "-5"); /* refused */
	assert_int_equal(fo_down_after_ms(&C->fo, 0), 3000);
	ctl_runtime_from_etcd(C, "nope/quorum", "1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_set_needs_auth, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_set_applies_and_keeps, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_set_checks_every_pair_first, th_setup,
					    th_teardown),
	    cmocka_unit_test_setup_teardown(test_config_and_debug, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_simulate_failure, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_load_skips_bad_lines, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_from_etcd, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
