// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The wait for the old primary's write lease (controller/lease_wait.c): the peers'
 * last packets bound it, a silent peer blocks, a lapsed lease waits for the last answer
 * that named it, a revoked one or a death the kernel saw needs no wait. With the four-node shard of
 * fo_harness.h. */
#include <errno.h>
#include "fo_harness.h"
#include "controller/lease_wait.h"
#include "controller/lease_admit.h"

/* id removed from shard s at runtime, as ctl_members.c does it: the cfg's list, then
 * the model. */
static void remove_at_runtime(const char *id)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct cfg_shard *cs = &cfg->shards[s->idx];
	int n = N(id)->idx;

	for (int k = 0; k < cs->nnodes; k++)
		if (cs->nodes[k] == n) {
			memmove(&cs->nodes[k], &cs->nodes[k + 1],
				(cs->nnodes - k - 1) * sizeof(int));
			cs->nnodes--;
			break;
		}
	cfg->nodes[n].removed = true;
	fo_node_drop(&C, n);
	fo_shard_sync(&C, s->idx);
}

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

/* An operator's failover (flatline failover, SENTINEL FAILOVER) of a primary gone
 * quiet: not before its lease has run out either, refused with the reason meanwhile;
 * a silent peer refuses it as it blocks the evaluation's. */
static void test_operator_failover_waits_for_lease(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;
	char why[200];

	(void)state;
	healthy();
	(void)fo_answer_primary(&C, s, N("n1"), R.mono);
	R.mono += 1001; /* n1's heartbeat goes stale */
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	fo_report_set_peer_age(&r, N("n1")->idx, 100);
	fo_on_report(&C, N("n2"), &r);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n4"), &r);
	assert_true(evented("node_down"));
	assert_int_equal(fo_start(&C, s, true, -1, "operator", why, sizeof(why)), -EAGAIN);
	/* The failover_blocked reason: the bound not reached (ms left) or a peer whose
	 * figure is not final. */
	assert_non_null(strstr(why, "n1's write lease"));
	assert_true(strstr(why, " ms left): no promotion before then") ||
		    strstr(why, "peer n2 is silent and may still renew it"));
	assert_false(evented("failover_start"));
	assert_false(called("info n2"));
	/* Past the lease, every peer having said so: the evaluation's own failover. */
	R.mono += fo_lease_span_ms(&C) + 100;
	fo_report_set_peer_age(&r, N("n1")->idx, 100 + fo_lease_span_ms(&C) + 100);
	fo_on_report(&C, N("n2"), &r);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n4"), &r);
	assert_true(evented("failover_start"));
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

/* A lapsed report answered naming n1 (its agent had not taken its lease yet, or let it
 * lapse a moment): that answer takes the lease again and the peers' echoes keep it from
 * then on, so n1 cut off from here right after is no lease given up: a silent peer
 * blocks as for a held one. (The shortcut for a lapsed lease once ended the wait at
 * that answer + the span: promoted while n4 could still renew n1's lease.) */
static void test_lease_lapsed_answered_not_given_up(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;

	(void)state;
	healthy();
	R.mono += 10;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	r.lease = FO_LEASE_LAPSED;
	fo_on_report(&C, N("n1"), &r);
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), R.mono), "n1");
	R.mono += 1500; /* n1 cut off since; n4 silent */
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n2"), &r);
	assert_true(evented("node_down"));
	assert_true(evented("failover_blocked"));
	R.mono += 5000;
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n2"), &r);
	assert_false(evented("failover_start"));
	fo_on_report(&C, N("n4"), &r);
	assert_true(evented("failover_start"));
}

/* A peer removed at runtime that the old primary's agent still probes (its last report
 * names it): the agent, started with it, still takes its echo replies, so the removal
 * does not bound the lease; a removed peer the agent does not name is no bound. */
static void test_lease_removed_peer_blocks(void **state)
{
	struct fo_report r;
	int n4 = N("n4")->idx;

	(void)state;
	healthy();
	mkrep(&r, FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	fo_report_set_peer(&r, n4, FO_PEER_DOWN);
	fo_report_set_peer_age(&r, n4, 60000);
	fo_on_report(&C, N("n1"), &r);
	remove_at_runtime("n4");
	R.mono += 1500;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	fo_report_set_peer_age(&r, N("n1")->idx, 1500);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n2"), &r);
	assert_true(evented("node_down"));
	assert_true(evented("failover_blocked"));
	assert_false(evented("failover_start"));
	R.mono += 5000;
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n2"), &r);
	assert_false(evented("failover_start"));
}

/* The same removal, n1's agent not naming n4: the remaining peers bound the lease. */
static void test_lease_removed_unnamed_peer(void **state)
{
	struct fo_report r;

	(void)state;
	healthy();
	remove_at_runtime("n4");
	R.mono += 1500;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	fo_report_set_peer_age(&r, N("n1")->idx, 1500);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n2"), &r);
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

/* A hung server whose agent says its lease is revoked: no wait at all (the kernel
 * deadline was 0 before the report left, no answer to it or before it renews it), and
 * n1's own answers name nobody while it says revoked. */
static void test_lease_revoked_ends_wait(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;
	long long named;

	(void)state;
	healthy();
	C.others_answered_until_ms = R.mono - 10000;
	named = R.mono;
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), named), "n1");
	R.mono += 50;
	mkrep(&r, FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	r.lease = FO_LEASE_REVOKED;
	fo_on_report(&C, N("n1"), &r);
	assert_false(evented("lease_wait"));
	assert_true(evented("failover_start"));
	assert_int_equal(s->lease_waited_ms, 0);
	assert_string_equal(fo_lease_word(N("n1")), "revoked");
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), R.mono), "");
	assert_int_equal(N("n1")->named_primary_ms, named);
	do_failover_to("n1", "n3");
}

/* Revoked but up (given up a moment ago, no failover decided): n1's answer names no
 * primary and no grant is recorded; the next report (lapsed) is answered as usual. */
static void test_lease_revoked_no_grant(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;
	long long named;

	(void)state;
	healthy();
	named = R.mono;
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), named), "n1");
	R.mono += 20;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	r.lease = FO_LEASE_REVOKED;
	fo_on_report(&C, N("n1"), &r);
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), R.mono), "");
	assert_string_equal(fo_answer_primary(&C, s, N("n2"), R.mono), "n1");
	assert_int_equal(N("n1")->named_primary_ms, named);
	R.mono += 20;
	r.lease = FO_LEASE_LAPSED;
	fo_on_report(&C, N("n1"), &r);
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), R.mono), "n1");
	assert_int_equal(N("n1")->named_primary_ms, R.mono);
	assert_false(evented("failover_start"));
}

/* A revoked report that went stale (n1 then cut off, node_down_after_ms shorter than
 * the lease here) does not end the wait: counted as lapsed, from the last answer that
 * named n1. */
static void test_lease_revoked_stale_waits(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;
	long long span = fo_lease_span_ms(&C), named;

	(void)state;
	C.node_down_after_ms = 100;
	healthy();
	C.others_answered_until_ms = R.mono - 10000;
	named = R.mono;
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), named), "n1");
	R.mono += 10;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	r.lease = FO_LEASE_REVOKED;
	fo_on_report(&C, N("n1"), &r);
	R.mono += 150; /* n1 silent since: stale */
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	fo_report_set_peer_age(&r, N("n1")->idx, 150);
	fo_on_report(&C, N("n2"), &r);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n4"), &r);
	assert_true(evented("node_down"));
	assert_true(evented("lease_wait"));
	assert_false(evented("failover_start"));
	R.mono = named + span - 1;
	fo_on_report(&C, N("n2"), &r);
	assert_false(evented("failover_start"));
	R.mono = named + span;
	fo_on_report(&C, N("n2"), &r);
	assert_true(evented("failover_start"));
}

/* Right after this controller began to act (an HA takeover, a restart), a revoked
 * report ends the wait only once a lease another controller granted before it could
 * have run out: others_answered_until_ms + the lease. */
static void test_lease_revoked_after_takeover(void **state)
{
	struct fo_report r;
	long long span = fo_lease_span_ms(&C);

	(void)state;
	healthy();
	C.others_answered_until_ms = R.mono - 100;
	R.mono += 50;
	mkrep(&r, FO_PROC_HUNG, INFO_ROLE_MASTER, NULL, -1, 1000);
	r.lease = FO_LEASE_REVOKED;
	fo_on_report(&C, N("n1"), &r);
	assert_true(evented("lease_wait"));
	assert_false(evented("failover_start"));
	R.mono = C.others_answered_until_ms + span - 1;
	fo_on_report(&C, N("n1"), &r);
	assert_false(evented("failover_start"));
	R.mono = C.others_answered_until_ms + span;
	fo_on_report(&C, N("n1"), &r);
	assert_true(evented("failover_start"));
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

static void rep_len(const char *id, int lease_len_ms)
{
	struct fo_report r;

	mkrep(&r, FO_PROC_UP, strcmp(id, "n1") ? INFO_ROLE_SLAVE : INFO_ROLE_MASTER,
	      strcmp(id, "n1") ? "n1" : NULL, strcmp(id, "n1") ? 1 : -1, 1000);
	r.lease_len_ms = lease_len_ms;
	/* A running lease says so (an agent with a length and no lease key runs none). */
	r.lease = strcmp(id, "n1") ? FO_LEASE_LAPSED : FO_LEASE_HELD;
	fo_on_report(&C, N(id), &r);
}

/* n1, primary, reports lease word before (and length len): nothing fences it, so a
 * cut-off n1 is not promoted over, however long, and failover_blocked names n1 itself;
 * then after: bounded again. */
static struct fo_report self_blocked_then_bounded(int len, int before, int after)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	const struct fo_node *blocker;
	struct fo_report r;

	healthy();
	mkrep(&r, FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	r.lease_len_ms = len;
	r.lease = before;
	fo_on_report(&C, N("n1"), &r);
	R.mono += 100000;
	assert_int_equal(fo_lease_end_ms(&C, s, N("n1"), FO_V_HOST_DOWN, &blocker), FO_LEASE_NEVER);
	assert_ptr_equal(blocker, N("n1"));
	r.lease = after;
	fo_on_report(&C, N("n1"), &r);
	R.mono += 100000;
	(void)fo_lease_end_ms(&C, s, N("n1"), FO_V_HOST_DOWN, &blocker);
	assert_ptr_not_equal(blocker, N("n1"));
	return r;
}

/* n1's agent has a lease length but runs no lease (parked: shadow mode heard, or
 * not armed yet after the switch to active); armed, it is bounded again. */
static void test_lease_parked_primary_blocks(void **state)
{
	(void)state;
	self_blocked_then_bounded(200, FO_LEASE_UNKNOWN, FO_LEASE_HELD);
}

/* n1's agent runs a lease but has not marked its server's sockets yet (just started
 * beside a server that does not answer INFO): "lapsed" would be no proof, and
 * "unguarded" blocks like a parked lease, even when it says so with no length; "lapsed"
 * once marked bounds it again. */
static void test_lease_unguarded_primary_blocks(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	const struct fo_node *blocker;
	struct fo_report r;

	(void)state;
	r = self_blocked_then_bounded(0, FO_LEASE_UNGUARDED, FO_LEASE_LAPSED);
	/* A death the kernel saw needs no wait, marked or not. */
	r.lease = FO_LEASE_UNGUARDED;
	fo_on_report(&C, N("n1"), &r);
	assert_string_equal(fo_lease_word(N("n1")), "unguarded");
	assert_int_equal(fo_lease_end_ms(&C, s, N("n1"), FO_V_PROC_DOWN, &blocker), 0);
}

/* The lease length per node (a reload of lease_ms, in either order): the longest of
 * the controller's, the agent's reported one, a longer one it reported before (for a
 * span of it), and for a node that never said, the longest the file has had. */
static void test_lease_length_per_node(void **state)
{
	struct fo_node *n1 = N("n1");
	long long t;

	(void)state;
	C.lease_ms = C.lease_ms_max = 500;
	assert_int_equal(fo_node_lease_ms(&C, n1, R.mono), 500); /* never reported */
	rep_len("n1", 500);
	assert_int_equal(fo_node_lease_ms(&C, n1, R.mono), 500);
	/* The controller reloaded to 3000 first; the agent still runs with 500. */
	C.lease_ms = C.lease_ms_max = 3000;
	assert_int_equal(fo_node_lease_ms(&C, n1, R.mono), 3000);
	/* The agents first (restarted with 3000), the controller still at 500. */
	C.lease_ms = 500;
	rep_len("n1", 3000);
	assert_int_equal(fo_node_lease_ms(&C, n1, R.mono), 3000);
	/* Back to 500 on the agent: its last 3000 lease may run one span more. */
	R.mono += 100;
	t = R.mono;
	rep_len("n1", 500);
	assert_int_equal(fo_node_lease_ms(&C, n1, R.mono), 3000);
	assert_int_equal(fo_node_lease_ms(&C, n1, t + 3000 + 3000 / 16), 3000);
	assert_int_equal(fo_node_lease_ms(&C, n1, t + 3000 + 3000 / 16 + 1), 500);
	/* A node that has not said its length: the longest the file has had (3000). */
	assert_int_equal(fo_node_lease_ms(&C, N("n2"), R.mono), 3000);
	/* Lease off in the controller's file: an agent that runs one is still waited for. */
	C.lease_ms = 0;
	rep_len("n2", 500);
	assert_int_equal(fo_node_lease_ms(&C, N("n2"), R.mono), 500);
	rep_len("n2", 0);
	R.mono += 600;
	assert_int_equal(fo_node_lease_ms(&C, N("n2"), R.mono), 0);
}

/* Raised to 3000 on the controller only (the brief's reload): n1 cut off right after
 * an answer named it primary; no promotion before the 3000 ms lease has run out,
 * although n1's agent still says 500. */
static void test_lease_reload_raise_waits_new(void **state)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;
	long long named;

	(void)state;
	healthy();
	rep_len("n1", 500);
	C.lease_ms_max = C.lease_ms = 3000;
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), R.mono), "n1");
	named = R.mono;
	R.mono += 1001;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	fo_report_set_peer_age(&r, N("n1")->idx, 1001);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n4"), &r);
	fo_on_report(&C, N("n2"), &r);
	assert_true(evented("lease_wait"));
	assert_false(evented("failover_start"));
	R.mono = named + 532 + 10; /* the old 500 ms lease's span: not enough */
	fo_on_report(&C, N("n2"), &r);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n4"), &r);
	assert_false(evented("failover_start"));
	R.mono = named + 3000 + 3000 / 16 + 1;
	fo_report_set_peer_age(&r, N("n1")->idx, R.mono - named);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n4"), &r);
	fo_on_report(&C, N("n2"), &r);
	assert_true(evented("failover_start"));
}

/* HA: this controller took the lead at `lead`; the deposed leader answered n1 as leader
 * until then (never after: it stops before its etcd lease can expire), and with
 * lease_ms 3000 each answer renewed n1 for 3 s. n1 is cut off right then, and the peers'
 * figures bound nothing later: still no promotion before lead + the span. A previous
 * process of a lone controller is counted the same way from its start. */
static void test_lease_deposed_leader(void **state)
{
	struct fo_report r;
	long long span, lead;

	(void)state;
	C.lease_ms = C.lease_ms_max = 3000;
	span = fo_lease_span_ms(&C);
	healthy();
	lead = R.mono;
	C.others_answered_until_ms = lead;
	R.mono += 1001; /* n1's heartbeat goes stale */
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	/* Nothing from n1 for longer than a span: the peers renewed nothing since. */
	fo_report_set_peer_age(&r, N("n1")->idx, span + 1);
	fo_on_report(&C, N("n2"), &r);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n4"), &r);
	assert_true(evented("node_down"));
	assert_true(evented("lease_wait"));
	assert_false(evented("failover_start"));
	R.mono = lead + span - 1;
	fo_on_report(&C, N("n2"), &r);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n4"), &r);
	assert_false(evented("failover_start"));
	R.mono = lead + span;
	fo_on_report(&C, N("n2"), &r);
	assert_true(evented("failover_start"));
}

/* ---- lease admission (controller/lease_admit.c) ---- */

/* Every node but from reports that from is down (no packet for a long time). */
static void others_say_down(const char *from, const char *master, const char *skip)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	struct fo_report r;

	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &C.nodes[s->nodes[i]];

		if (!strcmp(n->id, from) || (skip && !strcmp(n->id, skip)))
			continue;
		mkrep(&r, FO_PROC_UP, strcmp(n->id, master) ? INFO_ROLE_SLAVE : INFO_ROLE_MASTER,
		      strcmp(n->id, master) ? master : NULL, 1, 1000);
		fo_report_set_peer(&r, N(from)->idx, FO_PEER_DOWN);
		fo_report_set_peer_age(&r, N(from)->idx, 60000);
		if (skip) {
			fo_report_set_peer(&r, N(skip)->idx, FO_PEER_DOWN);
			fo_report_set_peer_age(&r, N(skip)->idx, 60000);
		}
		fo_on_report(&C, n, &r);
	}
}

/* n1 (the primary) reports, running with the grant (term, grant). */
static void primary_reports(long long term, long long grant)
{
	struct fo_report r;

	mkrep(&r, FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	fo_report_set_peer(&r, N("n4")->idx, FO_PEER_DOWN);
	fo_report_set_peer_age(&r, N("n4")->idx, 60000);
	r.admit_term = term;
	r.admit_grant = grant;
	fo_on_report(&C, N("n1"), &r);
}

/* n4's host is declared down while n1 is primary: the next answer to n1 leaves n4 out,
 * under a new grant number; a re-admission takes another. */
static void test_admit_withdraws_down_node(void **state)
{
	char buf[FO_ADMIT_LIST_MAX];
	long long g;

	(void)state;
	fo_admit_set_term(&C, 777);
	healthy();
	assert_int_equal(fo_admit_answer(&C, N("n1"), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "n2 n3 n4");
	assert_int_equal(fo_admit_answer(&C, N("n2"), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "n1 n3 n4");
	g = C.admit_grant;
	R.mono += 1500;
	others_say_down("n4", "n1", NULL);
	assert_true(evented("node_down"));
	assert_true(fo_admit_out_now(N("n4")));
	assert_int_equal(fo_admit_answer(&C, N("n1"), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "n2 n3");
	assert_true(C.admit_grant > g);
	assert_int_equal(N("n4")->admit_out, C.admit_grant);
	g = C.admit_grant;
	/* The same state: the same grant number. */
	assert_int_equal(fo_admit_answer(&C, N("n3"), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "n1 n2");
	assert_int_equal(C.admit_grant, g);
	/* Confirmed only by this term's grant from the withdrawal on. */
	primary_reports(777, g - 1);
	assert_false(fo_admit_confirmed(&C, N("n1"), N("n4")));
	primary_reports(776, g);
	assert_false(fo_admit_confirmed(&C, N("n1"), N("n4")));
	primary_reports(0, 0); /* an older agent: says no grant */
	assert_false(fo_admit_confirmed(&C, N("n1"), N("n4")));
	primary_reports(777, g);
	assert_true(fo_admit_confirmed(&C, N("n1"), N("n4")));
	/* n4 back: admitted again at a new number, the old confirmation worth nothing. */
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 995);
	assert_false(fo_admit_out_now(N("n4")));
	assert_int_equal(fo_admit_answer(&C, N("n1"), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "n2 n3 n4");
	assert_int_equal(N("n4")->admit_out, 0);
	assert_false(fo_admit_confirmed(&C, N("n1"), N("n4")));
	/* Down again: a withdrawal above the grant n1 confirmed before. */
	R.mono += 1500;
	others_say_down("n4", "n1", NULL);
	assert_int_equal(fo_admit_answer(&C, N("n1"), buf, sizeof(buf)), 0);
	assert_true(N("n4")->admit_out > g);
	assert_false(fo_admit_confirmed(&C, N("n1"), N("n4")));
	/* No term (a follower): nothing is ever confirmed. */
	primary_reports(777, C.admit_grant);
	assert_true(fo_admit_confirmed(&C, N("n1"), N("n4")));
	fo_admit_set_term(&C, 0);
	assert_false(fo_admit_confirmed(&C, N("n1"), N("n4")));
	/* Too small a buffer: an error, nothing admitted written. */
	fo_admit_set_term(&C, 777);
	assert_int_equal(fo_admit_answer(&C, N("n1"), buf, 4), -ENOSPC);
	assert_string_equal(buf, "");
}

/* The second host kill: n4 was declared down before; then n1's host dies. Without n1's
 * confirmation that it no longer counts n4's echoes, silent n4 blocks the failover (n1
 * and n4 may be cut off together, n4 answering n1's echoes); with it, n4 bounds the
 * lease at n1's last report + the span, and the failover goes once n1 is judged down. */
static void second_kill(bool confirmed)
{
	struct fo_shard *s = fo_find_shard(&C, "s");
	char buf[FO_ADMIT_LIST_MAX];
	const struct fo_node *blocker;
	long long span = fo_lease_span_ms(&C), last, end;

	fo_admit_set_term(&C, 777);
	healthy();
	R.mono += 1500;
	others_say_down("n4", "n1", NULL);
	assert_true(evented("node_down"));
	assert_false(evented("failover_start")); /* a replica */
	assert_string_equal(fo_answer_primary(&C, s, N("n1"), R.mono), "n1");
	assert_int_equal(fo_admit_answer(&C, N("n1"), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "n2 n3");
	/* n1's agent applied it, or never heard it (cut off). */
	primary_reports(confirmed ? 777 : 0, confirmed ? C.admit_grant : 0);
	last = N("n1")->last_report_ms;
	clear_rec();
	R.mono += 1500;
	others_say_down("n1", "n1", "n4");
	end = fo_lease_end_ms(&C, s, N("n1"), FO_V_HOST_DOWN, &blocker);
	if (!confirmed) {
		assert_true(evented("lease_wait"));
		assert_int_equal(end, FO_LEASE_NEVER);
		assert_ptr_equal(blocker, N("n4"));
		assert_true(evented("failover_blocked"));
		R.mono += 60000;
		others_say_down("n1", "n1", "n4");
		assert_false(evented("failover_start"));
		return;
	}
	/* Bounded (by then past: the span is shorter than down-after): promoted. */
	assert_null(blocker);
	assert_int_equal(end, last + span);
	assert_true(evented("failover_start"));
	assert_true(called("info n2"));
}

static void test_admit_second_kill(void **state)
{
	(void)state;
	second_kill(true);
}

static void test_admit_unconfirmed_blocks(void **state)
{
	(void)state;
	second_kill(false);
}

/* A peer removed at runtime that n1's agent still names: left out of n1's grants from
 * the removal on; once n1 confirmed, the removal no longer blocks n1's failover. */
static void test_admit_removed_peer_confirmed(void **state)
{
	char buf[FO_ADMIT_LIST_MAX];
	struct fo_report r;
	int n4 = N("n4")->idx;

	(void)state;
	fo_admit_set_term(&C, 777);
	healthy();
	remove_at_runtime("n4");
	mkrep(&r, FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	fo_report_set_peer(&r, n4, FO_PEER_DOWN); /* still names n4 */
	fo_report_set_peer_age(&r, n4, 60000);
	fo_on_report(&C, N("n1"), &r);
	assert_int_equal(fo_admit_answer(&C, N("n1"), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "n2 n3");
	assert_int_equal(C.nodes[n4].admit_out, C.admit_grant);
	/* Not confirmed yet: blocked as before the admission. */
	assert_false(fo_admit_confirmed(&C, N("n1"), &C.nodes[n4]));
	r.admit_term = 777;
	r.admit_grant = C.admit_grant;
	fo_on_report(&C, N("n1"), &r);
	assert_true(fo_admit_confirmed(&C, N("n1"), &C.nodes[n4]));
	R.mono += 1500;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 0, 1000);
	fo_report_set_peer(&r, N("n1")->idx, FO_PEER_DOWN);
	fo_report_set_peer_age(&r, N("n1")->idx, 1500);
	fo_on_report(&C, N("n3"), &r);
	fo_on_report(&C, N("n2"), &r);
	assert_true(evented("node_down"));
	assert_true(evented("failover_start"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_lease_wait, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_operator_failover_waits_for_lease, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_lease_silent_peer_blocks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_given_up_and_proc_down, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_lapsed_answered_not_given_up, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_lease_revoked_ends_wait, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_revoked_no_grant, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_revoked_stale_waits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_revoked_after_takeover, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_proc_down_no_wait, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_length_per_node, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_reload_raise_waits_new, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_parked_primary_blocks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_unguarded_primary_blocks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_deposed_leader, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_removed_peer_blocks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lease_removed_unnamed_peer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_admit_withdraws_down_node, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_admit_second_kill, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_admit_unconfirmed_blocks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_admit_removed_peer_confirmed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
