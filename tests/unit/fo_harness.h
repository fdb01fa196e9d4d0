/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the failover unit tests share: a four-node shard, an injected clock and
 * ops that record what they were asked to do. Included by test_failover.c,
 * test_fo_rank.c, test_fo_rules.c, test_fo_state.c and the others (one program each). */
#ifndef FL_TEST_FO_HARNESS_H
#define FL_TEST_FO_HARNESS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "controller/failover.h"

static const char cluster_text[] = "[cluster]\nname = t\nsecret = s3cret-s3cret-s3cret\n"
				   "[agent]\nlease_ms = 500\n" /* the cases' figures */
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
	int promoted_npubs; /* messages published when ops->promoted was last called */
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
	R.promoted_npubs = R.npubs;
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
    .ping = op_ping,
    .info = op_info,
    .pause = op_pause,
    .unpause = op_unpause,
    .promote = op_promote,
    .replicaof = op_replicaof,
    .timer = op_timer,
    .event = op_event,
    .publish = op_publish,
    .promoted = op_promoted,
    .done = op_done,
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

static __attribute__((unused)) struct fo_node *N(const char *id)
{
	struct fo_node *n = fo_find_node(&C, id);

	assert_non_null(n);
	return n;
}

/* As if node id had just answered INFO replication with i. */
static __attribute__((unused)) void set_info(const char *id, struct info_repl i)
{
	N(id)->info = i;
	N(id)->info_ok = 1;
}

static __attribute__((unused)) bool called(const char *what)
{
	for (int i = 0; i < R.ncalls; i++)
		if (!strcmp(R.calls[i], what))
			return true;
	return false;
}

static __attribute__((unused)) bool evented(const char *kind)
{
	for (int i = 0; i < R.nevents; i++)
		if (!strcmp(R.events[i], kind))
			return true;
	return false;
}

static __attribute__((unused)) bool published(const char *prefix)
{
	for (int i = 0; i < R.npubs; i++)
		if (!strncmp(R.pubs[i], prefix, strlen(prefix)))
			return true;
	return false;
}

/* The index of the first message with that prefix, or a large number (absent). */
static __attribute__((unused)) int pub_index(const char *prefix)
{
	for (int i = 0; i < R.npubs; i++)
		if (!strncmp(R.pubs[i], prefix, strlen(prefix)))
			return i;
	return 1 << 20;
}

static __attribute__((unused)) void clear_rec(void)
{
	R.ncalls = R.nevents = R.npubs = 0;
	R.done = R.promoted = 0;
}

/* A report: proc, role, and "following n1 with link up at offset off". */
static __attribute__((unused)) void mkrep(struct fo_report *r, enum fo_proc proc,
					  enum info_role role, const char *master, int link,
					  long long off)
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

static __attribute__((unused)) void report(const char *id, enum fo_proc proc, enum info_role role,
					   const char *master, int link, long long off)
{
	struct fo_report r;

	mkrep(&r, proc, role, master, link, off);
	fo_on_report(&C, N(id), &r);
}

/* n1 primary, n2..n4 replicas all linked up. */
static __attribute__((unused)) void healthy(void)
{
	fo_find_shard(&C, "s")->primary = N("n1")->idx;
	report("n1", FO_PROC_UP, INFO_ROLE_MASTER, NULL, -1, 1000);
	report("n2", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 990);
	report("n3", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 1000);
	report("n4", FO_PROC_UP, INFO_ROLE_SLAVE, "n1", 1, 995);
	clear_rec();
}

static __attribute__((unused)) struct info_repl slave_info(const char *master, int link,
							   long long off)
{
	struct fo_report r;

	mkrep(&r, FO_PROC_UP, INFO_ROLE_SLAVE, master, link, off);
	return r.repl;
}

/* The failover's INFO round answered by every node but from. */
static __attribute__((unused)) void do_failover_to(const char *from, const char *to)
{
	struct fo_shard *s = fo_find_shard(&C, "s");

	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &C.nodes[s->nodes[i]];

		if (strcmp(n->id, from))
			fo_on_info(&C, n, true, &(struct info_repl){0}, NULL);
	}
	(void)to;
}

#endif
