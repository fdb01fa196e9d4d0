// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report_cost: the controller's failover core's cost of one REPORT, in µs, at a
 * given cluster size: fo_report_parse of the key/value arguments an agent
 * sends (built from the shared key table, as loadgen builds them; a replica says it
 * reports every 500 ms, as a quiet one does) and fo_on_report
 * (store, judge, check the shard), round-robin over every node of SHARDS shards of
 * three, single thread, no I/O. The network side of a report (read, RESP parsing,
 * reply) is in bench/scale.sh's steady-state figure, not here.
 *
 * usage: report_cost [SHARDS [REPORTS]]   (default 1000 shards, 300000 reports)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/report_keys.h"
#include "controller/failover.h"

static long long mono_ms_v = 1000000;

static long long clk_mono(void *ctx)
{
	(void)ctx;
	return mono_ms_v;
}

static long long clk_wall(void *ctx)
{
	(void)ctx;
	return 1796032800000LL;
}

static void op_event(void *ctx, const char *kind, struct evrec *r)
{
	(void)ctx, (void)kind, (void)r;
}

static void op_noop_node(void *ctx, int n, int t)
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

static void op_replicaof(void *ctx, int n, int m, int t)
{
	(void)ctx, (void)n, (void)m, (void)t;
}

static const struct fo_ops ops = {.event = op_event,
				  .info = op_noop_node,
				  .ping = op_noop_node,
				  .timer = op_timer,
				  .publish = op_publish,
				  .replicaof = op_replicaof};

struct args {
	int argc;
	const char *argv[48];
	size_t lens[48];
	char buf[1024];
	size_t used;
};

static void kv(struct args *a, enum report_key k, const char *peer, const char *v)
{
	char key[96];
	int n;

	report_key_str(k, peer, key, sizeof(key));
	n = snprintf(a->buf + a->used, sizeof(a->buf) - a->used, "%s", key);
	a->argv[a->argc] = a->buf + a->used;
	a->lens[a->argc++] = n;
	a->used += n + 1;
	n = snprintf(a->buf + a->used, sizeof(a->buf) - a->used, "%s", v);
	a->argv[a->argc] = a->buf + a->used;
	a->lens[a->argc++] = n;
	a->used += n + 1;
}

/* What an agent of a healthy node sends (agent_report.c's agent_report_build), with ICMP
 * verdicts on the two other nodes of its shard. */
static void build(const struct fo_cluster *c, const struct fo_node *n, struct args *a)
{
	const struct fo_shard *s = &c->shards[n->shard];
	const struct fo_node *p = &c->nodes[s->nodes[0]];
	char port[16];

	memset(a, 0, sizeof(*a));
	kv(a, RK_PROC, NULL, "up");
	kv(a, RK_PID, NULL, "4242");
	kv(a, RK_PROC_CHANGE_MS, NULL, "1796032700000");
	kv(a, RK_HEARTBEAT, NULL, n == p ? "100" : "500"); /* a quiet replica's */
	kv(a, RK_SERVER, NULL, "redis");
	kv(a, RK_VERSION, NULL, "7.0.15");
	kv(a, RK_ROLE, NULL, n == p ? "master" : "slave");
	if (n != p) {
		snprintf(port, sizeof(port), "%d", p->port);
		kv(a, RK_MASTER_HOST, NULL, p->host);
		kv(a, RK_MASTER_PORT, NULL, port);
		kv(a, RK_MASTER_LINK_STATUS, NULL, "up");
		kv(a, RK_MASTER_LAST_IO_S, NULL, "0");
		kv(a, RK_MASTER_SYNC_IN_PROGRESS, NULL, "0");
	}
	kv(a, RK_MASTER_REPLID, NULL, "8f1c0c5bc1c1e1d2f3a4b5c6d7e8f9a0b1c2d3e4");
	kv(a, RK_REPL_OFFSET, NULL, "123456789");
	kv(a, RK_SLAVE_PRIORITY, NULL, "100");
	kv(a, RK_CONNECTED_SLAVES, NULL, n == p ? "2" : "0");
	kv(a, RK_RUN_ID, NULL, "0123456789abcdef0123456789abcdef01234567");
	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *q = &c->nodes[s->nodes[i]];

		if (q == n)
			continue;
		kv(a, RK_PEER, q->id, "up");
		kv(a, RK_PEER_RTT_US, q->id, "42");
	}
}

int main(int argc, char **argv)
{
	int shards = argc > 1 ? atoi(argv[1]) : 1000;
	long reports = argc > 2 ? atol(argv[2]) : 300000;
	size_t cap = (size_t)shards * 3 * 128 + 4096, off = 0;
	char *text = malloc(cap), err[256], why[160];
	struct cfg *cfg;
	struct fo_cluster c;
	struct args *a;
	struct fo_report rep;
	struct timespec t0, t1;
	double us, rate;

	if (!text || shards < 1 || shards > 20000 || reports < 1)
		return 2;
	off +=
	    snprintf(text + off, cap - off, "[cluster]\nname = c\nsecret = s3cret-s3cret-s3cret\n");
	for (int s = 1; s <= shards; s++) {
		for (int k = 1; k <= 3; k++)
			off +=
			    snprintf(text + off, cap - off,
				     "[node \"s%05dn%d\"]\naddress = ::1\nredis = 127.0.0.1:%d\n",
				     s, k, 10000 + (s * 3 + k) % 50000);
		off += snprintf(text + off, cap - off,
				"[shard \"s%05d\"]\nnodes = s%05dn1 s%05dn2 s%05dn3\n", s, s, s, s);
	}
	if (cfg_load_string("report_cost.conf", text, &cfg, err, sizeof(err))) {
		fprintf(stderr, "report_cost: %s\n", err);
		return 1;
	}
	free(text);
	if (fo_cluster_init(&c, cfg, &ops, NULL))
		return 1;
	c.now_ms = clk_mono;
	c.wall_ms = clk_wall;
	for (int i = 0; i < c.nshards; i++) {
		c.shards[i].primary = c.shards[i].nodes[0];
		c.shards[i].epoch = 1;
	}
	a = calloc(c.nnodes, sizeof(*a));
	if (!a)
		return 1;
	for (int i = 0; i < c.nnodes; i++)
		build(&c, &c.nodes[i], &a[i]);
	/* Every node reports once (first reports are "changes"), then the timed rounds. */
	for (int i = 0; i < c.nnodes; i++) {
		if (fo_report_parse(&c, &rep, a[i].argc, a[i].argv, a[i].lens, why, sizeof(why))) {
			fprintf(stderr, "report_cost: %s\n", why);
			return 1;
		}
		fo_on_report(&c, &c.nodes[i], &rep);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long r = 0; r < reports; r++) {
		int i = (int)(r % c.nnodes);

		if (!i)
			mono_ms_v += 100; /* a heartbeat per round */
		fo_report_parse(&c, &rep, a[i].argc, a[i].argv, a[i].lens, why, sizeof(why));
		fo_on_report(&c, &c.nodes[i], &rep);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / reports;
	/* At the defaults: primaries every 100 ms, quiet replicas every 500 ms. */
	rate = c.nshards * 10.0 + (c.nnodes - c.nshards) * 2.0;
	printf("report_cost: %d shards (%d nodes), %ld reports: %.2f us per REPORT (parse %d "
	       "arguments + fo_on_report); at the default cadence (%.0f REPORTs/s: primaries "
	       "10 Hz, quiet replicas 2 Hz): %.1f %% of one core; at 10 Hz from every node: "
	       "%.1f %%\n",
	       shards, c.nnodes, reports, us, a[0].argc, rate, us * rate / 1e4,
	       us * c.nnodes * 10 / 1e4);
	free(a);
	fo_cluster_free(&c);
	cfg_free(cfg);
	return 0;
}
