// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failover model at scale: no fixed node limit, node look-up by id,
 * and a REPORT judged against its own shard (and the shards of the peers it names),
 * not against the whole cluster. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "controller/failover.h"
#include "controller/fo_internal.h"

#define SHARDS 1200

static struct cfg *cfg;
static struct fo_cluster C;
static long long mono = 1000000, wall = 1796032800000LL;
static int n_agent_lost, n_node_down, n_failover_start;

static void op_event(void *ctx, const char *kind, struct evrec *r)
{
	(void)ctx, (void)r;
	n_agent_lost += !strcmp(kind, "agent_lost");
	n_node_down += !strcmp(kind, "node_down");
	n_failover_start += !strcmp(kind, "failover_start");
}
static void op_info(void *ctx, int n, int t)
{
	(void)ctx, (void)n, (void)t;
}
static void op_ping(void *ctx, int n, int t)
{
	(void)ctx, (void)n, (void)t;
}
static void op_timer(void *ctx, int s, int ms)
{
	(void)ctx, (void)s, (void)ms;
}
static void op_publish(void *ctx, const char *ch, const char *msg)
{
	(void)ctx, (void)ch, (void)msg;
}
static long long clk_mono(void *ctx)
{
	(void)ctx;
	return mono;
}
static long long clk_wall(void *ctx)
{
	(void)ctx;
	return wall;
}
static const struct fo_ops ops = {
    .event = op_event, .info = op_info, .ping = op_ping, .timer = op_timer, .publish = op_publish};

/* A cluster file of `shards` shards of `per` nodes each. */
static char *cluster_text(int shards, int per)
{
	size_t cap = (size_t)shards * per * 128 + 4096, off = 0;
	char *t = malloc(cap);

	assert_non_null(t);
	off += snprintf(t + off, cap - off,
			"[cluster]\nname = big\nsecret = s3cret-s3cret-s3cret\n"
			"[controller]\nnode_down_after_ms = 1000\n");
	for (int s = 1; s <= shards; s++) {
		for (int k = 1; k <= per; k++)
			off += snprintf(t + off, cap - off,
					"[node \"s%04dn%d\"]\naddress = 10.%d.%d.%d\nredis = "
					"10.%d.%d.%d:6379\n",
					s, k, s / 250, s % 250, k, s / 250, s % 250, k);
		off += snprintf(t + off, cap - off, "[shard \"s%04d\"]\nnodes =", s);
		for (int k = 1; k <= per; k++)
			off += snprintf(t + off, cap - off, " s%04dn%d", s, k);
		off += snprintf(t + off, cap - off, "\n");
	}
	return t;
}

static int setup(void **state)
{
	char err[256], *text = cluster_text(SHARDS, 3);

	(void)state;
	mono = 1000000;
	n_agent_lost = n_node_down = n_failover_start = 0;
	assert_int_equal(cfg_load_string("big.conf", text, &cfg, err, sizeof(err)), 0);
	free(text);
	assert_int_equal(fo_cluster_init(&C, cfg, &ops, NULL), 0);
	C.now_ms = clk_mono;
	C.wall_ms = clk_wall;
	C.lease_ms = 0; /* which shards a report judges, not the lease wait (test_failover.c) */
	for (int i = 0; i < C.nshards; i++) {
		C.shards[i].primary = C.shards[i].nodes[0];
		C.shards[i].epoch = 1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fo_cluster_free(&C);
	cfg_free(cfg);
	return 0;
}

static void report_of(struct fo_node *n, struct fo_report *r)
{
	const struct fo_node *p = &C.nodes[C.shards[n->shard].primary];

	memset(r, 0, sizeof(*r));
	r->proc = FO_PROC_UP;
	r->repl.server = INFO_SRV_REDIS;
	r->repl.slave_priority = 100;
	r->repl.offset = 1000;
	snprintf(r->repl.master_replid, sizeof(r->repl.master_replid), "%040d", n->shard);
	if (n == p) {
		r->repl.role = INFO_ROLE_MASTER;
		r->repl.link_up = -1;
	} else {
		r->repl.role = INFO_ROLE_SLAVE;
		r->repl.link_up = 1;
		snprintf(r->repl.master_host, sizeof(r->repl.master_host), "%s", p->host);
		r->repl.master_port = p->port;
	}
}

static void all_report(void)
{
	struct fo_report r;

	for (int i = 0; i < C.nnodes; i++) {
		report_of(&C.nodes[i], &r);
		fo_on_report(&C, &C.nodes[i], &r);
	}
}

static void test_no_fixed_limit(void **state)
{
	char id[32];

	(void)state;
	assert_int_equal(C.nnodes, SHARDS * 3);
	assert_int_equal(C.nshards, SHARDS);
	/* Every node found by its id (the look-up is sorted, not the file's order). */
	for (int i = 0; i < C.nnodes; i++)
		assert_ptr_equal(fo_find_node(&C, C.nodes[i].id), &C.nodes[i]);
	snprintf(id, sizeof(id), "s%04dn%d", SHARDS + 1, 1);
	assert_null(fo_find_node(&C, id));
	assert_null(fo_find_node(&C, ""));
	assert_int_equal(C.nodes[C.shards[7].nodes[2]].spos, 2);
}

static void test_report_judges_its_shard(void **state)
{
	struct fo_report r;
	struct fo_node *n = fo_find_node(&C, "s0001n1");

	(void)state;
	all_report();
	assert_int_equal(n_agent_lost, 0);
	mono += 1500; /* every heartbeat stale now */
	report_of(n, &r);
	fo_on_report(&C, n, &r);
	/* Its shard's two other nodes, not the 3,597 nodes of the other shards. */
	assert_int_equal(n_agent_lost, 2);
	assert_true(fo_find_node(&C, "s0001n2")->flags & FO_N_AGENT_LOST);
	assert_false(fo_find_node(&C, "s0002n1")->flags & FO_N_AGENT_LOST);
	/* Their heartbeat deadlines (the controller's timer) judge the others. */
	fo_evaluate(&C);
	assert_int_equal(n_agent_lost, SHARDS * 3 - 1);
}

static void test_peer_verdict_reaches_its_shard(void **state)
{
	struct fo_report r;
	struct fo_node *o = fo_find_node(&C, "s0001n2"), *n = fo_find_node(&C, "s0900n2"),
		       *x = fo_find_node(&C, "s0900n1");

	(void)state;
	all_report();
	mono += 1500;
	/* s0001n2 (fresh again) says s0900n1, in another shard and stale, is down: one
	 * node's key does not testify about another shard's nodes, so nothing changes. */
	report_of(o, &r);
	assert_int_equal(fo_report_set_peer(&r, x->idx, FO_PEER_DOWN), 0);
	fo_on_report(&C, o, &r);
	assert_false(x->flags & FO_N_HOST_DOWN);
	assert_int_equal(n_failover_start, 0);
	/* s0900n2, of its own shard, says so: the host path applies. */
	report_of(n, &r);
	assert_int_equal(fo_report_set_peer(&r, x->idx, FO_PEER_DOWN), 0);
	fo_on_report(&C, n, &r);
	assert_true(x->flags & FO_N_HOST_DOWN);
	assert_int_equal(n_node_down, 1);
	assert_int_equal(n_failover_start, 1);
	assert_int_equal(C.shards[x->shard].fo.state, FO_ST_SELECT);
	/* The verdict withdrawn: judged again, no longer down by the host path. */
	mono += 10;
	report_of(n, &r);
	fo_on_report(&C, n, &r);
	assert_false(x->flags & FO_N_HOST_DOWN);
}

/* A quiet replica says it reports every 500 ms (key heartbeat_ms): it stays fresh
 * for 3 of those, a primary at 100 ms for down-after (1,000 ms); the key is bounded. */
static void test_quiet_replica_fresh(void **state)
{
	const char *argv[] = {"proc", "up", "heartbeat_ms", "500"};
	const char *huge[] = {"heartbeat_ms", "99999999"};
	size_t lens[] = {4, 2, 12, 3}, hlens[] = {12, 8};
	struct fo_report r;
	struct fo_node *p = fo_find_node(&C, "s0001n1"), *q = fo_find_node(&C, "s0001n2");
	char why[128];

	(void)state;
	all_report();
	assert_int_equal(fo_report_parse(&C, &r, 4, argv, lens, why, sizeof(why)), 0);
	assert_int_equal(r.heartbeat_ms, 500);
	assert_int_equal(fo_report_parse(&C, &r, 2, huge, hlens, why, sizeof(why)), 0);
	assert_int_equal(r.heartbeat_ms, 60000);
	report_of(q, &r);
	r.heartbeat_ms = 500;
	fo_on_report(&C, q, &r);
	report_of(p, &r);
	r.heartbeat_ms = 100;
	fo_on_report(&C, p, &r);
	assert_int_equal(fo_fresh_ms(&C, q), 1500);
	assert_int_equal(fo_fresh_ms(&C, p), 1000);
	mono += 1100;
	assert_false(fo_fresh(&C, p, mono));
	assert_true(fo_fresh(&C, q, mono));
	mono += 500;
	assert_false(fo_fresh(&C, q, mono));
}

static void test_peer_table_bounded(void **state)
{
	struct fo_report r;

	(void)state;
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < FO_MAX_PEERS; i++)
		assert_int_equal(fo_report_set_peer(&r, i, FO_PEER_UP), 0);
	assert_int_equal(fo_report_set_peer(&r, FO_MAX_PEERS, FO_PEER_UP), -ENOSPC);
	assert_int_equal(fo_report_set_peer(&r, 3, FO_PEER_DOWN), 0); /* an update fits */
	assert_int_equal(fo_report_peer(&r, 3), FO_PEER_DOWN);
	assert_int_equal(fo_report_peer(&r, FO_MAX_PEERS), FO_PEER_UNKNOWN);
}

/* A report is copied as far as its arrays are used: every field, every peer's
 * verdict and packet age, every removed node; nothing past the counts is written. */
static void test_report_copy_by_count(void **state)
{
	struct fo_report a, b;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0x5a, sizeof(b));
	a.proc = FO_PROC_UP;
	a.heartbeat_ms = 500;
	snprintf(a.repl.master_host, sizeof(a.repl.master_host), "10.0.0.1");
	assert_int_equal(fo_report_set_peer(&a, 7, FO_PEER_UP), 0);
	assert_int_equal(fo_report_set_peer(&a, 9, FO_PEER_DOWN), 0);
	assert_int_equal(fo_report_set_peer_age(&a, 9, 42), 0);
	a.removed_node[a.nremoved++] = 11;
	fo_report_copy(&b, &a);
	assert_int_equal(b.proc, FO_PROC_UP);
	assert_int_equal(b.heartbeat_ms, 500);
	assert_string_equal(b.repl.master_host, "10.0.0.1");
	assert_int_equal(b.npeers, 2);
	assert_int_equal(fo_report_peer(&b, 7), FO_PEER_UP);
	assert_int_equal(fo_report_peer(&b, 9), FO_PEER_DOWN);
	assert_int_equal(b.peer_packet_age_ms[0], -1);
	assert_int_equal(b.peer_packet_age_ms[1], 42);
	assert_int_equal(b.nremoved, 1);
	assert_int_equal(b.removed_node[0], 11);
	assert_int_equal(b.peer_node[2], 0x5a5a5a5a);
	assert_int_equal(b.removed_node[1], 0x5a5a5a5a);
}

/* A cluster file cannot name 65 nodes in one shard today (inih reads 200-byte lines):
 * the model refuses one anyway, before reading its nodes. */
static void test_shard_too_large(void **state)
{
	char err[256], *text = cluster_text(1, 3);
	struct cfg *wide;
	struct fo_cluster c2;

	(void)state;
	assert_int_equal(cfg_load_string("wide.conf", text, &wide, err, sizeof(err)), 0);
	free(text);
	wide->shards[0].nnodes = FO_MAX_SHARD_NODES + 1;
	assert_int_equal(fo_cluster_init(&c2, wide, &ops, NULL), -E2BIG);
	fo_cluster_free(&c2);
	wide->shards[0].nnodes = 3;
	cfg_free(wide);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_no_fixed_limit, setup, teardown),
	    cmocka_unit_test(test_report_copy_by_count),
	    cmocka_unit_test_setup_teardown(test_report_judges_its_shard, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_peer_verdict_reaches_its_shard, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_peer_table_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_quiet_replica_fresh, setup, teardown),
	    cmocka_unit_test(test_shard_too_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
