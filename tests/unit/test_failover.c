// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Failure rules, ranking, the failover state machine, TILT, the block window and
 * the state file, with an injected clock and recording ops. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <zlib.h>
#include "controller/failover.h"

static const char cluster_text[] = "[cluster]\nname = t\nsecret = s\n"
				   "[controller]\nnode_down_after_ms = 1000\n"
				   "failover_block_ms = 10000\ntilt_ms = 30000\n"
				   "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
				   "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6379\n"
				   "[node \"n3\"]\naddress = 10.0.0.3\nredis = 10.0.0.3:6379\n"
				   "[node \"n4\"]\naddress = 10.0.0.4\nredis = 10.0.0.4:6379\n"
				   "[shard \"s\"]\nnodes = n1 n2 n3 n4\n";

/* What the ops were asked to do. */
struct rec {
	long long mono, wall;
	char calls[64][96];
	int ncalls;
	char events[64][32];
	int nevents;
	char pubs[64][160];
	int npubs;
	int timer_ms;
	int promoted, done;
	char done_result[128];
};
static struct rec R;
static struct cfg *cfg;
static struct fo_cluster C;

static void call(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void call(const char *fmt, ...)
{
	va_list ap;

	if (R.ncalls >= 64)
		return;
	va_start(ap, fmt);
	vsnprintf(R.calls[R.ncalls++], sizeof(R.calls[0]), fmt, ap);
	va_end(ap);
}

static void op_ping(void *ctx, int n, int t)
{
	(void)ctx, (void)t;
	call("ping %s", C.nodes[n].id);
}
static void op_info(void *ctx, int n, int t)
{
	(void)ctx, (void)t;
	call("info %s", C.nodes[n].id);
}
static void op_pause(void *ctx, int n, int ms, int t)
{
	(void)ctx, (void)t, (void)ms;
	call("pause %s", C.nodes[n].id);
}
static void op_unpause(void *ctx, int n)
{
	(void)ctx;
	call("unpause %s", C.nodes[n].id);
}
static void op_promote(void *ctx, int n, int t)
{
	(void)ctx, (void)t;
	call("promote %s", C.nodes[n].id);
}
static void op_replicaof(void *ctx, int n, int m, int t)
{
	(void)ctx, (void)t;
	call("replicaof %s %s", C.nodes[n].id, C.nodes[m].id);
}
static void op_timer(void *ctx, int s, int ms)
{
	(void)ctx, (void)s;
	R.timer_ms = ms;
}
static void op_event(void *ctx, const char *kind, struct evrec *r)
{
	char want[64];

	(void)ctx;
	/* The kind passed is the one the record carries. */
	snprintf(want, sizeof(want), "\"kind\":\"%s\"", kind);
	assert_non_null(strstr(r->buf, want));
	if (R.nevents < 64)
		snprintf(R.events[R.nevents++], sizeof(R.events[0]), "%s", kind);
}
static void op_publish(void *ctx, const char *ch, const char *msg)
{
	(void)ctx;
	if (R.npubs < 64)
		snprintf(R.pubs[R.npubs++], sizeof(R.pubs[0]), "%s %s", ch, msg);
}
static void op_promoted(void *ctx, int s)
{
	(void)ctx, (void)s;
	R.promoted++;
}
static void op_done(void *ctx, int s, const char *result)
{
	(void)ctx, (void)s;
	R.done++;
	snprintf(R.done_result, sizeof(R.done_result), "%s", result);
}
static long long clk_mono(void *ctx)
{
	(void)ctx;
	return R.mono;
}
static long long clk_wall(void *ctx)
{
	(void)ctx;
	return R.wall;
}

static const struct fo_ops ops = {
	.ping = op_ping, .info = op_info, .pause = op_pause, .unpause = op_unpause,
	.promote = op_promote, .replicaof = op_replicaof, .timer = op_timer,
	.event = op_event, .publish = op_publish, .promoted = op_promoted, .done = op_done,
};

static int setup(void **state)
{
	char err[256];

	(void)state;
	memset(&R, 0, sizeof(R));
	R.mono = 1000000;
	R.wall = 1796032800000LL;
	assert_int_equal(cfg_load_string("t.conf", cluster_text, &cfg, err, sizeof(err)), 0);
	assert_int_equal(fo_cluster_init(&C, cfg, &ops, NULL), 0);
	C.now_ms = clk_mono;
	C.wall_ms = clk_wall;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fo_cluster_free(&C);
	cfg_free(cfg);
	return 0;
}

static struct fo_node *N(const char *id)
{
	struct fo_node *n = fo_find_node(&C, id);

	assert_non_null(n);
	return n;
}

static bool called(const char *what)
{
	for (int i = 0; i < R.ncalls; i++)
		if (!strcmp(R.calls[i], what))
			return true;
	return false;
}

static bool evented(const char *kind)
{
	for (int i = 0; i < R.nevents; i++)
		if (!strcmp(R.events[i], kind))
			return true;
	return false;
}

static bool published(const char *prefix)
{
	for (int i = 0; i < R.npubs; i++)
		if (!strncmp(R.pubs[i], prefix, strlen(prefix)))
			return true;
	return false;
}

static void clear_rec(void)
{
	R.ncalls = R.nevents = R.npubs = 0;
	R.done = R.promoted = 0;
}

/* A report: proc, role, and "following n1 with link up at offset off". */
static void mkrep(struct fo_report *r, enum fo_proc proc, enum info_role role, const char *master,
		  int link, long long off)
{
	memset(r, 0, sizeof(*r));
	r->proc = proc;
	r->repl.role = role;
	r->repl.link_up = link;
	r->repl.offset = off;
	r->repl.slave_priority = 100;
	r->repl.last_io_s = -1;
	snprintf(r->repl.master_replid, sizeof(r->repl.master_replid), "replid-a");
	if (master) {
		struct fo_node *m = N(master);

		snprintf(r->repl.master_host, sizeof(r->repl.master_host), "%s", m->host);
		r->repl.master_port = m->port;
	}
}

static void report(const char *id, enum fo_proc proc, enum info_role role, const char *master,
		   int link, long long off)
{
	struct fo_report r;

	mkrep(&r, proc, role, master, link, off);
	fo_on_report(&C, N(id), &r);
}

/* n1 primary, n2..n4 replicas all linked up. */
static void healthy(void)
{
	fo_find_shard(&C, "s")->primary = N("n1")->idx;
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	report("n3", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 1000);
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 995);
	clear_rec();
}

static struct info_repl slave_info(const char *master, int link, long long off)
{
	struct fo_report r;

	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, master, link, off);
	return r.repl;
}

/* ---- the failure rules, as a table ---- */

struct rule_case {
	const char *name;
	int reported;          /* n1 has reported */
	enum fo_proc proc;     /* n1's process */
	int stale;             /* n1's heartbeat is older than node_down_after_ms */
	enum fo_peer p2, p3;   /* what n2 and n3 say of n1 */
	int stale2, stale3;    /* n2 / n3 themselves stale */
	enum fo_verdict want;
};

static const struct rule_case rules[] = {
	{ "no report yet", 0, FO_PROC_UP, 0, 0, 0, 0, 0, FO_V_UNKNOWN },
	{ "fresh, up", 1, FO_PROC_UP, 0, 0, 0, 0, 0, FO_V_OK },
	{ "fresh, busy", 1, FO_PROC_BUSY, 0, 0, 0, 0, 0, FO_V_OK },
	{ "fresh, loading", 1, FO_PROC_LOADING, 0, 0, 0, 0, 0, FO_V_OK },
	{ "process path: exit", 1, FO_PROC_DOWN, 0, 0, 0, 0, 0, FO_V_PROC_DOWN },
	{ "process path: exit, then silence", 1, FO_PROC_DOWN, 1, FO_PEER_UP, 0, 0, 0,
	  FO_V_PROC_DOWN },
	{ "process path: hung", 1, FO_PROC_HUNG, 0, 0, 0, 0, 0, FO_V_PROC_HUNG },
	{ "host path: one peer down", 1, FO_PROC_UP, 1, FO_PEER_DOWN, 0, 0, 0, FO_V_HOST_DOWN },
	{ "host path: two peers down", 1, FO_PROC_UP, 1, FO_PEER_DOWN, FO_PEER_DOWN, 0, 0,
	  FO_V_HOST_DOWN },
	{ "contradiction: one down, one up", 1, FO_PROC_UP, 1, FO_PEER_DOWN, FO_PEER_UP, 0, 0,
	  FO_V_AGENT_LOST },
	{ "agent lost: peers reach it", 1, FO_PROC_UP, 1, FO_PEER_UP, FO_PEER_UP, 0, 0,
	  FO_V_AGENT_LOST },
	{ "agent lost: no peer has a view", 1, FO_PROC_UP, 1, 0, 0, 0, 0, FO_V_AGENT_LOST },
	{ "a stale peer's down does not count", 1, FO_PROC_UP, 1, FO_PEER_DOWN, 0, 1, 0,
	  FO_V_AGENT_LOST },
	{ "a stale peer's up does not contradict", 1, FO_PROC_UP, 1, FO_PEER_DOWN, FO_PEER_UP, 0,
	  1, FO_V_HOST_DOWN },
	{ "hung but stale: host rules", 1, FO_PROC_HUNG, 1, FO_PEER_DOWN, 0, 0, 0,
	  FO_V_HOST_DOWN },
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
		n2->rep.peer[n1->idx] = t->p2;
		n3->flags |= FO_N_REPORTED;
		n3->rep.proc = FO_PROC_UP;
		n3->last_report_ms = t->stale3 ? now - 5000 : now - 10;
		n3->rep.peer[n1->idx] = t->p3;
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
	assert_true(published("+switch-master s 10.0.0.1 6379 10.0.0.3 6379"));
	assert_true(called("replicaof n2 n3") && called("replicaof n4 n3"));
	assert_false(called("replicaof n1 n3")); /* dead: demoted when it returns */
	fo_on_replicaof(&C, N("n2"), true, NULL);
	assert_int_equal(R.done, 0);
	fo_on_replicaof(&C, N("n4"), true, NULL);
	assert_int_equal(R.done, 1);
	assert_string_equal(R.done_result, "ok");
	assert_true(evented("replicas_repointed") && evented("failover_end"));
	assert_true(published("+failover-end"));
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

/* ---- ranking ---- */

static int rank(int *out)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	return fo_rank(&C, s, N("n1")->idx, "replid-a", R.mono - 1000, out, FO_MAX_NODES);
}

static void set_info(const char *id, struct info_repl i)
{
	N(id)->info = i;
	N(id)->info_ok = 1;
}

static void test_rank_offset_then_priority(void **state)
{
	int out[FO_MAX_NODES];

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

static void test_rank_priority_zero(void **state)
{
	int out[FO_MAX_NODES];
	struct info_repl i4 = slave_info("n1", 1, 9999);

	(void)state;
	healthy();
	set_info("n2", slave_info("n1", 1, 500));
	set_info("n3", slave_info("n1", 1, 700));
	N("n3")->priority = 0;       /* cluster file: never */
	i4.slave_priority = 0;       /* the server's replica-priority 0: never */
	set_info("n4", i4);
	assert_int_equal(rank(out), 1);
	assert_string_equal(C.nodes[out[0]].id, "n2");
}

static void test_rank_replid_mismatch(void **state)
{
	int out[FO_MAX_NODES];
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
	int out[FO_MAX_NODES];

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
	int out[FO_MAX_NODES];
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
	assert_int_equal(rank(out), 3);
	assert_string_equal(C.nodes[out[0]].id, "n3"); /* known offset, stable sync */
	assert_string_equal(C.nodes[out[1]].id, "n2"); /* offset unknown */
	assert_string_equal(C.nodes[out[2]].id, "n4"); /* mid full sync: last resort */
}

static void test_rank_skips_down_and_masters(void **state)
{
	int out[FO_MAX_NODES];
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

/* ---- agent lost, host path ---- */

static void test_agent_lost_no_failover(void **state)
{
	struct fo_report r;

	(void)state;
	healthy();
	R.mono += 1500;
	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 1000);
	r.peer[N("n1")->idx] = FO_PEER_UP;
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
	r.peer[N("n1")->idx] = FO_PEER_DOWN;
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

static void do_failover_to(const char *from, const char *to)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &C.nodes[s->nodes[i]];

		if (strcmp(n->id, from))
			fo_on_info(&C, n, true, &(struct info_repl){ 0 }, NULL);
	}
	(void)to;
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
	/* Past the window: acts. */
	R.mono += 8001;
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
	fo_on_info(&C, s->fo.cand[0] == N("n2")->idx ? N("n2") : &C.nodes[s->fo.cand[0]], true,
		   &t, NULL);
	assert_true(evented("failover_abort"));
	assert_true(called("unpause n1"));
	assert_int_equal(s->primary, N("n1")->idx);
	/* Bad targets. */
	assert_int_equal(fo_start(&C, s, true, N("n1")->idx, "x", why, sizeof(why)), -EINVAL);
	N("n4")->priority = 0;
	assert_int_equal(fo_start(&C, s, true, N("n4")->idx, "x", why, sizeof(why)), -EINVAL);
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

/* ---- the state file ---- */

static void test_state_round_trip(void **state)
{
	char path[] = "/tmp/fl-state-XXXXXX", err[512];
	struct fo_shard *s = fo_find_shard(&C, "s");
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	s->primary = N("n3")->idx;
	s->epoch = 42;
	assert_int_equal(fo_state_save(&C, path, err, sizeof(err)), 0);
	s->primary = -1;
	s->epoch = 0;
	assert_int_equal(fo_state_load(&C, path, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(s->primary, N("n3")->idx);
	assert_int_equal(s->epoch, 42);
	unlink(path);
	assert_int_equal(fo_state_load(&C, path, err, sizeof(err)), -ENOENT);
}

static void test_state_corruption(void **state)
{
	char good[] = "flatline-state 1\nshard s epoch 7 primary n2\n";
	char text[256], err[512];
	unsigned long crc = crc32(0, (const unsigned char *)good, strlen(good));

	(void)state;
	snprintf(text, sizeof(text), "%send 1 %08lx\n", good, crc);
	assert_int_equal(fo_state_parse(&C, text, strlen(text), "st", err, sizeof(err)), 0);
	assert_int_equal(fo_find_shard(&C, "s")->epoch, 7);
	/* One flipped digit: the checksum says so. */
	text[31] = '8';
	assert_int_equal(fo_state_parse(&C, text, strlen(text), "st", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "checksum mismatch"));
	assert_non_null(strstr(err, "failed to load state file st"));
	text[31] = '7';
	/* Truncated: no end line, or a cut line. */
	assert_int_equal(fo_state_parse(&C, good, strlen(good), "st", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(fo_state_parse(&C, text, strlen(text) - 3, "st", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "truncated"));
	/* Not ours. */
	assert_int_equal(fo_state_parse(&C, "hello\n", 6, "st", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a flatline state file"));
	/* Garbage line, NUL byte. */
	snprintf(text, sizeof(text), "flatline-state 1\nshard s epoch x primary n2\nend 1 0\n");
	assert_int_equal(fo_state_parse(&C, text, strlen(text), "st", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 2"));
	assert_int_equal(fo_state_parse(&C, "flatline-state 1\n\0", 18, "st", err, sizeof(err)),
			 -EINVAL);
	/* A shard no longer configured: a warning, not an error. */
	{
		char g2[] = "flatline-state 1\nshard gone epoch 3 primary n9\n";

		crc = crc32(0, (const unsigned char *)g2, strlen(g2));
		snprintf(text, sizeof(text), "%send 1 %08lx\n", g2, crc);
		assert_int_equal(fo_state_parse(&C, text, strlen(text), "st", err, sizeof(err)),
				 0);
		assert_non_null(strstr(err, "no longer in the cluster file"));
	}
}

/* ---- REPORT parsing ---- */

static void test_report_parse(void **state)
{
	const char *argv[] = { "proc",	      "down",	    "exit",	 "SIGKILL", "role",
			       "slave",	      "master_host", "10.0.0.1", "master_port",
			       "6379",	      "master_link_status", "up", "repl_offset", "123",
			       "peer.n1",     "down",	    "peer.n9",	 "up",	    "future_key",
			       "whatever",    "peer.n2.rtt_us", "55" };
	size_t lens[sizeof(argv) / sizeof(argv[0])];
	int argc = sizeof(argv) / sizeof(argv[0]);
	struct fo_report r;
	char why[128];

	(void)state;
	for (int i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	assert_int_equal(fo_report_parse(&C, &r, argc, argv, lens, why, sizeof(why)), 0);
	assert_int_equal(r.proc, FO_PROC_DOWN);
	assert_string_equal(r.exit, "SIGKILL");
	assert_int_equal(r.repl.role, INFO_ROLE_SLAVE);
	assert_int_equal(r.repl.master_port, 6379);
	assert_int_equal(r.repl.link_up, 1);
	assert_int_equal(r.repl.offset, 123);
	assert_int_equal(r.peer[N("n1")->idx], FO_PEER_DOWN);
	assert_int_equal(r.peer[N("n2")->idx], FO_PEER_UNKNOWN);
	assert_int_equal(fo_report_parse(&C, &r, argc - 1, argv, lens, why, sizeof(why)), -EINVAL);
	argv[13] = "12x";
	lens[13] = 3;
	assert_int_equal(fo_report_parse(&C, &r, argc, argv, lens, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "repl_offset"));
	argv[13] = "12";
	lens[13] = 3; /* an embedded NUL */
	assert_int_equal(fo_report_parse(&C, &r, argc, argv, lens, why, sizeof(why)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rules_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_process_path_failover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_promote_refused_next_candidate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_good_replica_retry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_offset_then_priority, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_priority_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_replid_mismatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_disconnected_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_dragonfly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_skips_down_and_masters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_lost_no_failover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_path_failover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tilt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tilt_clock_jump, setup, teardown),
		cmocka_unit_test_setup_teardown(test_block_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_planned_switchover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_planned_offset_timeout_unpauses, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_restarted_empty_primary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restarted_with_its_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_corruption, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_parse, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
