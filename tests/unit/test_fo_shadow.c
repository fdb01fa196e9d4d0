// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Shadow mode in the failover core (controller/fo_shadow.c): a failover is judged and
 * runs its selection, then says would_failover and would_promote and ends ("shadow")
 * with no promotion, no REPLICAOF, no pause and the primary unchanged; when the
 * servers name another primary (Sentinel failed over), the core follows them. With
 * the four-node shard of fo_harness.h. */
#include <errno.h>
#include "fo_harness.h"
#include "controller/lease_wait.h"

static char ev_would_failover[4096], ev_would_promote[4096], ev_followed[4096];
static struct fo_ops sops;

static void shadow_event(void *ctx, const char *kind, struct evrec *r)
{
	if (!strcmp(kind, "would_failover"))
		snprintf(ev_would_failover, sizeof(ev_would_failover), "%.*s", (int)r->len, r->buf);
	else if (!strcmp(kind, "would_promote"))
		snprintf(ev_would_promote, sizeof(ev_would_promote), "%.*s", (int)r->len, r->buf);
	else if (!strcmp(kind, "primary_followed"))
		snprintf(ev_followed, sizeof(ev_followed), "%.*s", (int)r->len, r->buf);
	op_event(ctx, kind, r);
}

static int shadow_setup(void **state)
{
	int rc = setup(state);

	sops = ops;
	sops.event = shadow_event;
	C.ops = &sops;
	C.shadow = true;
	ev_would_failover[0] = ev_would_promote[0] = ev_followed[0] = '\0';
	return rc;
}

/* Nothing that changes a server was asked of the ops. */
static void assert_no_action(void)
{
	for (int i = 0; i < R.ncalls; i++)
		if (!strncmp(R.calls[i], "promote", 7) || !strncmp(R.calls[i], "replicaof", 9) ||
		    !strncmp(R.calls[i], "pause", 5) || !strncmp(R.calls[i], "unpause", 7))
			fail_msg("shadow mode asked for \"%s\"", R.calls[i]);
}

static void kill_primary(void)
{
	struct info_repl i2 = slave_info("n1", 0, 990), i3 = slave_info("n1", 0, 1000),
			 i4 = slave_info("n1", 0, 995);

	healthy();
	R.mono += 10;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("node_down") && evented("failover_start"));
	assert_true(called("info n2") && called("info n3") && called("info n4"));
	R.mono += 3;
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_info(&C, N("n4"), true, &i4, NULL);
	fo_on_info(&C, N("n3"), true, &i3, NULL);
}

static void test_shadow_would_not_does(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	kill_primary();
	assert_true(evented("replica_selected"));
	assert_true(evented("would_failover") && evented("would_promote"));
	assert_true(evented("failover_abort"));
	assert_no_action();
	assert_int_equal(R.promoted, 0);
	assert_int_equal(s->primary, N("n1")->idx);
	assert_int_equal(s->epoch, 0);
	assert_int_equal(s->fo.state, FO_ST_NONE);
	assert_int_equal(R.done, 1);
	assert_string_equal(R.done_result, "shadow");
	/* The events' fields: what, from whom, why, the ranking, the timeline. */
	assert_non_null(strstr(ev_would_failover, "\"shard\":\"s\""));
	assert_non_null(strstr(ev_would_failover, "\"from\":\"n1\""));
	assert_non_null(strstr(ev_would_failover, "\"reason\":\"proc_exit\""));
	assert_non_null(strstr(ev_would_failover, "\"started_ms\":1796032800000"));
	assert_non_null(strstr(ev_would_failover, "\"elapsed_ms\":3"));
	assert_non_null(strstr(ev_would_failover, "\"down_ms\":0,"));
	assert_non_null(strstr(ev_would_failover, "+0 ms failover_start n1: proc_exit"));
	assert_non_null(strstr(ev_would_failover, "; +3 ms replica_selected n3"));
	assert_non_null(strstr(ev_would_promote, "\"instance\":\"n3\""));
	assert_non_null(strstr(ev_would_promote, "\"ranking\":\"n3 n4 n2\""));
	/* Sentinel's words for a failover in progress are the controller's to withhold;
	 * the core still says +sdown/+odown, never +switch-master for a promotion. */
	assert_true(published("+odown master s 10.0.0.1 6379"));
	assert_false(published("+switch-master"));
	/* Said once: more reports of the dead primary start nothing. */
	clear_rec();
	R.mono += 100;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 990);
	R.mono += 20000; /* past the block window */
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_false(evented("failover_start"));
	assert_false(evented("would_failover"));
	assert_no_action();
	/* It returns (restarted by hand): up again, nothing repaired, nothing sent. */
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("node_up"));
	assert_no_action();
	assert_int_equal(s->primary, N("n1")->idx);
	/* The next failure is judged again. */
	clear_rec();
	R.mono += 10;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_true(evented("failover_start"));
}

/* Sentinel promoted n3 after the kill: the servers' roles are the truth. */
static void test_shadow_follows_the_servers(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	kill_primary();
	assert_true(evented("would_promote"));
	clear_rec();
	R.mono += 1500;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	report("n3", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1200);
	assert_true(evented("primary_followed"));
	assert_int_equal(s->primary, N("n3")->idx);
	assert_int_equal(s->epoch, 1);
	assert_int_equal(R.promoted, 1); /* the state saved (DNS is the controller's gate) */
	assert_true(published("+switch-master s 10.0.0.1 6379 10.0.0.3 6379"));
	assert_non_null(strstr(ev_followed, "\"instance\":\"n3\""));
	assert_non_null(strstr(ev_followed, "\"from\":\"n1\""));
	/* The others follow n3 by Sentinel's hand; the old primary returns as a master
	 * Sentinel will demote: nothing is repaired here. */
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n3", 1, 1200);
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n3", 1, 1200);
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 0);
	assert_no_action();
	assert_int_equal(s->primary, N("n3")->idx);
	assert_false(evented("failover_start"));
}

/* A switchover by Sentinel (SENTINEL FAILOVER): the primary, up, becomes a replica of
 * another master; two masters at once are left until the servers agree. */
static void test_shadow_follows_a_switchover(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	healthy();
	R.mono += 10;
	report("n2", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_int_equal(s->primary, N("n1")->idx); /* n1 still says master */
	assert_false(evented("primary_followed"));
	report("n1", FO_PROC_UP, INFO_ROLE_SLAVE, "n2", 1, 1000);
	assert_true(evented("primary_followed"));
	assert_int_equal(s->primary, N("n2")->idx);
	assert_no_action();
	assert_false(evented("failover_start"));
}

/* The fleet as its agents report it in shadow mode: every agent has a lease length
 * but runs no lease (disarmed), the primary's agent still probes its peers (each had a
 * packet from it 20 ms ago), and an answer to the primary's report named it. */
static void disarmed_fleet(void)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	static const char *const ids[] = {"n1", "n2", "n3", "n4"};
	struct fo_report r;

	healthy();
	for (int i = 0; i < 4; i++) {
		bool p = !strcmp(ids[i], "n1");

		mkrep(&r, FO_PROC_UP, p ? INFO_ROLE_MASTER : INFO_ROLE_SLAVE, p ? NULL : "n1",
		      p ? -1 : 1, 1000);
		r.lease_len_ms = 500;
		r.lease = FO_LEASE_UNKNOWN;
		if (!p) {
			fo_report_set_peer(&r, N("n1")->idx, FO_PEER_UP);
			fo_report_set_peer_age(&r, N("n1")->idx, 20);
		}
		fo_on_report(&C, N(ids[i]), &r);
	}
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), R.mono), "n1");
	clear_rec();
}

/* n1's server hung (stopped, or busy past busy_max_ms), its host alive: n1 reports
 * proc hung, its lease word unknown (disarmed). */
static void hang_primary(void)
{
	struct fo_report r;

	R.mono += 10;
	mkrep(&r, FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	r.lease_len_ms = 500;
	fo_on_report(&C, N("n1"), &r);
}

/* A hung primary in shadow mode: no agent holds a write lease, so the judgement is
 * active mode's with the lease off: failover_start at the hung report, no lease_wait
 * (peers that still hear n1 "may renew" nothing), would_failover after the INFO round. */
static void test_shadow_hung_primary_no_lease_wait(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	const struct fo_node *blocker = NULL;
	struct info_repl i2 = slave_info("n1", 1, 990), i3 = slave_info("n1", 1, 1000),
			 i4 = slave_info("n1", 1, 995);

	(void)state;
	disarmed_fleet();
	hang_primary();
	assert_int_equal(fo_lease_end_ms(&C, s, N("n1"), FO_V_PROC_HUNG, &blocker), 0);
	assert_null(blocker);
	assert_true(evented("node_down"));
	assert_false(evented("lease_wait"));
	assert_false(evented("failover_blocked"));
	assert_true(evented("failover_start"));
	fo_on_info(&C, N("n2"), true, &i2, NULL);
	fo_on_info(&C, N("n4"), true, &i4, NULL);
	fo_on_info(&C, N("n3"), true, &i3, NULL);
	assert_true(evented("would_failover") && evented("would_promote"));
	assert_non_null(strstr(ev_would_failover, "\"from\":\"n1\""));
	assert_non_null(strstr(ev_would_failover, "\"reason\":\"proc_hung"));
	assert_non_null(strstr(ev_would_failover, "\"elapsed_ms\":0"));
	assert_non_null(strstr(ev_would_promote, "\"instance\":\"n3\""));
	assert_no_action();
	assert_int_equal(s->primary, N("n1")->idx);
	/* The same fleet in active mode with the lease off decides the same at once. */
	assert_int_equal(fo_shadow_set(&C, false), 0);
	C.lease_ms = C.lease_ms_max = 0;
	for (int i = 1; i <= 4; i++) {
		char id[4];

		snprintf(id, sizeof(id), "n%d", i);
		N(id)->rep.lease_len_ms = 0;
	}
	assert_int_equal(fo_lease_end_ms(&C, s, N("n1"), FO_V_PROC_HUNG, &blocker), 0);
	assert_null(blocker);
}

/* The control, active mode with the lease on: the same parked agents block the failover
 * (nothing fences n1), and armed ones whose primary still says held are bounded by the
 * peers that hear it: the lease wait is unchanged outside shadow mode. */
static void test_active_hung_primary_waits(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	const struct fo_node *blocker = NULL;

	(void)state;
	disarmed_fleet();
	hang_primary();
	assert_true(evented("failover_blocked"));
	assert_false(evented("failover_start"));
	assert_int_equal(fo_lease_end_ms(&C, s, N("n1"), FO_V_PROC_HUNG, &blocker), FO_LEASE_NEVER);
	assert_ptr_equal(blocker, N("n1"));
	N("n1")->rep.lease = FO_LEASE_HELD;
	assert_int_equal(fo_lease_end_ms(&C, s, N("n1"), FO_V_PROC_HUNG, &blocker), FO_LEASE_NEVER);
	assert_non_null(blocker);
	assert_ptr_not_equal(blocker, N("n1"));
	R.mono += 100000;
	hang_primary();
	assert_false(evented("failover_start"));
	assert_false(evented("would_failover"));
}

/* fo_cutover_check's reasons, one string. */
static char reasons[4096];
static void add_reason(void *ctx, const char *why)
{
	(void)ctx;
	strncat(reasons, why, sizeof(reasons) - strlen(reasons) - 2);
	strcat(reasons, "\n");
}
static int check(void)
{
	reasons[0] = '\0';
	return fo_cutover_check(&C, R.mono, add_reason, NULL);
}
static void all_agents(bool up)
{
	for (int i = 0; i < C.nnodes; i++)
		fo_on_agent(&C, &C.nodes[i], up);
}

/* Safe only when every agent reports, every server has the role the model has and
 * nothing is running or owed; each reason names the node. */
static void test_cutover_check(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	all_agents(true);
	healthy();
	assert_int_equal(check(), 0);
	/* An agent gone. */
	fo_on_agent(&C, N("n3"), false);
	assert_int_equal(check(), 1);
	assert_non_null(strstr(reasons, "s n3: its agent is not connected"));
	fo_on_agent(&C, N("n3"), true);
	report("n3", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 1000);
	assert_int_equal(check(), 0);
	/* A report gone stale. */
	R.mono += 5000;
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 995);
	assert_true(check() >= 1);
	assert_non_null(strstr(reasons, "s n3: its agent's last report is"));
	/* A replica following another server, one with its link down. */
	report("n3", FO_PROC_UP, INFO_ROLE_SLAVE, "n2", 1, 1000);
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 995);
	assert_int_equal(check(), 2);
	assert_non_null(strstr(reasons, "s n3: follows 10.0.0.2:6379, flatline's primary is n1"));
	assert_non_null(strstr(reasons, "s n4: its link to n1 is down"));
	report("n3", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 1000);
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 995);
	assert_int_equal(check(), 0);
	assert_int_equal(fo_cutover_check(&C, R.mono, NULL, NULL), 0);
	/* The primary killed: judged failed (shadow: would_failover said, owed when active). */
	kill_primary();
	assert_true(evented("would_promote"));
	assert_true(check() >= 2);
	assert_non_null(strstr(reasons, "s: its primary n1 is judged failed"));
	assert_non_null(strstr(reasons, "s n1: the server is down"));
	assert_int_equal(s->primary, N("n1")->idx);
}

/* Switching: refused while a failover runs; leaving shadow forgets would_failover. */
static void test_shadow_set(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	(void)state;
	healthy();
	R.mono += 10;
	report("n1", FO_PROC_DOWN, INFO_ROLE_MASTER, NULL, -1, 1000);
	assert_int_equal(s->fo.state, FO_ST_SELECT);
	assert_int_equal(fo_shadow_set(&C, false), -EBUSY);
	assert_true(C.shadow);
	fo_on_info(&C, N("n2"), true, &(struct info_repl){0}, "timeout");
	fo_on_info(&C, N("n3"), true, &(struct info_repl){0}, "timeout");
	fo_on_info(&C, N("n4"), true, &(struct info_repl){0}, "timeout");
	assert_int_equal(s->fo.state, FO_ST_NONE);
	assert_int_equal(fo_shadow_set(&C, true), 0); /* no change: always fine */
	s->flags |= FO_S_SHADOWED;
	assert_int_equal(fo_shadow_set(&C, false), 0);
	assert_false(C.shadow);
	assert_false(s->flags & FO_S_SHADOWED);
	assert_int_equal(fo_shadow_set(&C, true), 0);
	assert_true(C.shadow);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_shadow_would_not_does, shadow_setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shadow_follows_the_servers, shadow_setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_shadow_follows_a_switchover, shadow_setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_shadow_hung_primary_no_lease_wait, shadow_setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_active_hung_primary_waits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cutover_check, shadow_setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shadow_set, shadow_setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
