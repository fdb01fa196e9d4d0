// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The controller's shell on a fake connection (ctl_harness.h): the Sentinel
 * replies in RESP2 and RESP3, a question held while a shard has no primary and
 * answered once the outbox says something changed, and pub/sub fed by the
 * outbox (ctl_event, ctl_event_sentinel) with the subscriber role released when
 * its connection goes. */
#include "ctl_harness.h"

static void test_get_master_addr(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");

	(void)state;
	th_primary(C, "n1");
	th_run(k, ctl_on_sentinel, "SENTINEL get-master-addr-by-name s");
	assert_string_equal(th_out(k), "*2\r\n$8\r\n10.0.0.1\r\n$4\r\n6379\r\n");
	/* No such master: a null array in RESP2, a null in RESP3. */
	th_run(k, ctl_on_sentinel, "SENTINEL get-master-addr-by-name nope");
	assert_string_equal(th_out(k), "*-1\r\n");
	k->flags |= CTL_C_RESP3;
	th_run(k, ctl_on_sentinel, "SENTINEL get-master-addr-by-name nope");
	assert_string_equal(th_out(k), "_\r\n");
	assert_false(k->flags & CTL_C_WAITING);
}

static void test_master_and_masters(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");
	const char *o;

	(void)state;
	th_primary(C, "n2");
	th_run(k, ctl_on_sentinel, "SENTINEL master s");
	o = th_out(k);
	/* 20 fields, as Sentinel's: a flat array of 40 in RESP2. */
	assert_memory_equal(o, "*40\r\n$4\r\nname\r\n$1\r\ns\r\n$2\r\nip\r\n$8\r\n10.0.0.2\r\n",
			    37);
	assert_non_null(strstr(o, "$5\r\nflags\r\n$6\r\nmaster\r\n"));
	assert_non_null(strstr(o, "$10\r\nnum-slaves\r\n$1\r\n2\r\n"));
	assert_non_null(strstr(o, "$6\r\nquorum\r\n$1\r\n1\r\n"));
	k->flags |= CTL_C_RESP3;
	th_run(k, ctl_on_sentinel, "SENTINEL masters");
	o = th_out(k);
	assert_memory_equal(o, "*1\r\n%20\r\n", 9);
	th_run(k, ctl_on_sentinel, "SENTINEL master nope");
	assert_string_equal(th_out(k), "-ERR No such master with that name\r\n");
}

static void test_other_subcommands(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");
	char want[128];

	(void)state;
	th_primary(C, "n1");
	th_run(k, ctl_on_sentinel, "SENTINEL myid");
	snprintf(want, sizeof(want), "$40\r\n%s\r\n", C->myid);
	assert_string_equal(th_out(k), want);
	th_run(k, ctl_on_sentinel, "SENTINEL sentinels s"); /* no HA: no other controller */
	assert_string_equal(th_out(k), "*0\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL ckquorum s");
	assert_string_equal(th_out(k), "+OK 1 usable Sentinels. Quorum and failover "
				       "authorization can be reached\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL");
	assert_string_equal(th_out(k), "-ERR wrong number of arguments for 'sentinel' command\r\n");
	th_run(k, ctl_on_sentinel, "SENTINEL made-up");
	assert_string_equal(th_out(k), "-ERR unknown subcommand or wrong number of arguments for "
				       "'made-up'. Try SENTINEL HELP.\r\n");
	/* A failover needs AUTH (no client authentication: the cluster secret). */
	th_run(k, ctl_on_sentinel, "SENTINEL failover s");
	assert_string_equal(th_out(k),
			    "-NOAUTH Authentication required (AUTH <cluster secret>).\r\n");
	th_run(k, ctl_on_role, "ROLE");
	assert_string_equal(th_out(k), "*2\r\n$8\r\nsentinel\r\n*1\r\n$1\r\ns\r\n");
	th_run(k, ctl_on_info, "INFO sentinel");
	assert_non_null(strstr(th_out(k), "sentinel_masters:1\r\n"));
	th_run(k, ctl_on_flatline, "FLATLINE FAILOVER s");
	assert_string_equal(th_out(k),
			    "-NOAUTH Authentication required (AUTH <cluster secret>).\r\n");
	assert_false(k->flags & CTL_C_WAITING);
}

/* No primary: the question waits, reading nothing behind it, and is answered once
 * something changed and the shard has one. */
static void test_held_until_changed(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000"), *gone = th_conn(C, "10.1.0.2:5000");
	struct evrec r;

	(void)state;
	assert_int_equal(C->fo.shards[0].primary, -1);
	th_run(k, ctl_on_sentinel, "SENTINEL get-master-addr-by-name s");
	th_run(gone, ctl_on_sentinel, "SENTINEL get-master-addr-by-name s");
	assert_string_equal(th_out(k), "");
	assert_true(k->flags & CTL_C_WAITING);
	assert_true(k->roles & (1u << CTL_ROLE_HELD));
	ctl_conn_free(gone); /* its held question goes with it (the role's release) */
	/* A change that leaves the shard without a primary: still held. */
	evrec_begin(&r, NULL, "controller", "agent_connected");
	ctl_log(C, &r);
	th_loop(C);
	assert_string_equal(th_out(k), "");
	th_primary(C, "n3");
	evrec_begin(&r, NULL, "controller", "agent_connected");
	ctl_log(C, &r);
	th_loop(C);
	assert_string_equal(th_out(k), "*2\r\n$8\r\n10.0.0.3\r\n$4\r\n6381\r\n");
	assert_false(k->flags & CTL_C_WAITING);
}

static void test_pubsub_from_the_outbox(void **state)
{
	struct ctl_conn *a = th_conn(C, "10.1.0.1:5000"), *p = th_conn(C, "10.1.0.2:5000");
	struct ctl_conn *gone = th_conn(C, "10.1.0.3:5000");
	struct evrec r;
	const char *o;

	(void)state;
	th_run(a, ctl_on_subscribe, "SUBSCRIBE flatline.node_up +switch-master");
	assert_string_equal(th_out(a), "*3\r\n$9\r\nsubscribe\r\n$16\r\nflatline.node_up\r\n:1\r\n"
				       "*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:2\r\n");
	assert_true(a->flags & CTL_C_PUBSUB);
	p->flags |= CTL_C_RESP3;
	th_run(p, ctl_on_psubscribe, "PSUBSCRIBE flatline.*");
	assert_string_equal(th_out(p), ">3\r\n$10\r\npsubscribe\r\n$10\r\nflatline.*\r\n:1\r\n");
	th_run(gone, ctl_on_subscribe, "SUBSCRIBE flatline.node_up");
	th_out(gone);
	ctl_conn_free(gone); /* the subscriber role released: nothing sent to it below */

	evrec_begin(&r, NULL, "controller", "node_up");
	evrec_str(&r, "instance", "n1");
	ctl_event(C, "node_up", &r);
	o = th_out(a);
	assert_memory_equal(o, "*3\r\n$7\r\nmessage\r\n$16\r\nflatline.node_up\r\n", 39);
	assert_non_null(strstr(o, "\"instance\":\"n1\""));
	o = th_out(p);
	assert_memory_equal(
	    o, ">4\r\n$8\r\npmessage\r\n$10\r\nflatline.*\r\n$16\r\nflatline.node_up\r\n", 56);
	ctl_event_sentinel(C, "+switch-master", "s 10.0.0.1 6379 10.0.0.2 6380");
	assert_string_equal(th_out(a), "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n"
				       "$29\r\ns 10.0.0.1 6379 10.0.0.2 6380\r\n");
	assert_string_equal(th_out(p), ""); /* not a flatline.* channel */

	th_run(a, ctl_on_unsubscribe, "UNSUBSCRIBE");
	th_out(a);
	assert_false(a->flags & CTL_C_PUBSUB);
	assert_false(a->roles & (1u << CTL_ROLE_SUBSCRIBER));
	ctl_event_sentinel(C, "+switch-master", "x");
	assert_string_equal(th_out(a), "");
}

/* SIMULATE-FAILURE's flags live in the outbox; a crash is not tested here. */
static void test_simulate_flags(void **state)
{
	(void)state;
	assert_int_equal(ctl_event_simulated(C), 0);
	ctl_event_simulate(C, CTL_SIM_CRASH_AFTER_PROMOTION);
	assert_int_equal(ctl_event_simulated(C), CTL_SIM_CRASH_AFTER_PROMOTION);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_get_master_addr, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_master_and_masters, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_other_subcommands, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_held_until_changed, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_pubsub_from_the_outbox, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_simulate_flags, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
