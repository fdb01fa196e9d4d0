// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failover model: the cluster's nodes and shards built from the cluster
 * file, and the look-ups every other fo_*.c module uses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "controller/fo_internal.h"

static int by_id_cmp(const void *a, const void *b)
{
	return strcmp((*(struct fo_node *const *)a)->id, (*(struct fo_node *const *)b)->id);
}

int fo_cluster_init(struct fo_cluster *c, const struct cfg *cfg, const struct fo_ops *ops,
		    void *ctx)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < cfg->nshards; i++)
		if (cfg->shards[i].nnodes > FO_MAX_SHARD_NODES)
			return -E2BIG;
	c->nodes = calloc(cfg->nnodes ? cfg->nnodes : 1, sizeof(*c->nodes));
	c->by_id = calloc(cfg->nnodes ? cfg->nnodes : 1, sizeof(struct fo_node *));
	if (!c->nodes || !c->by_id) {
		fo_cluster_free(c);
		return -ENOMEM;
	}
	c->cfg = cfg;
	c->ops = ops;
	c->ctx = ctx;
	c->node_down_after_ms = cfg->controller.node_down_after_ms;
	c->lease_ms = c->lease_ms_max = cfg->agent.lease_ms;
	c->failover_block_ms = cfg->controller.failover_block_ms;
	c->tilt_ms = cfg->controller.tilt_ms;
	c->info_timeout_ms = 250;
	c->promote_timeout_ms = 1000;
	c->repoint_timeout_ms = 1000;
	c->offset_wait_ms = 5000;
	c->offset_poll_ms = 5;
	c->nnodes = cfg->nnodes;
	for (int i = 0; i < cfg->nnodes; i++) {
		struct fo_node *n = &c->nodes[i];
		const struct cfg_node *cn = &cfg->nodes[i];

		n->id = cn->id;
		n->idx = i;
		n->shard = cn->shard;
		n->priority = cn->priority;
		snprintf(n->host, sizeof(n->host), "%s", cn->redis.host);
		n->port = cn->redis.port;
		c->by_id[i] = n;
	}
	qsort(c->by_id, c->nnodes, sizeof(struct fo_node *), by_id_cmp);
	c->shards = calloc(cfg->nshards ? cfg->nshards : 1, sizeof(*c->shards));
	if (!c->shards) {
		fo_cluster_free(c);
		return -ENOMEM;
	}
	c->nshards = cfg->nshards;
	for (int i = 0; i < cfg->nshards; i++) {
		struct fo_shard *s = &c->shards[i];

		s->name = cfg->shards[i].name;
		s->idx = i;
		s->nodes = cfg->shards[i].nodes;
		s->nnodes = cfg->shards[i].nnodes;
		s->primary = -1;
		s->fo.to = s->fo.from = s->fo.target = -1;
		for (int k = 0; k < s->nnodes; k++)
			c->nodes[s->nodes[k]].spos = k;
	}
	return 0;
}

void fo_cluster_free(struct fo_cluster *c)
{
	free(c->shards);
	free(c->nodes);
	free(c->by_id);
	c->shards = NULL;
	c->nodes = NULL;
	c->by_id = NULL;
	c->nshards = c->nnodes = 0;
}

struct fo_node *fo_find_node(struct fo_cluster *c, const char *id)
{
	int lo = 0, hi = c->nnodes - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2, d = strcmp(c->by_id[mid]->id, id);

		if (!d)
			return c->by_id[mid];
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/* rep's entry for node, added (verdict unknown, no packet age) if it has none; -1 when
 * the table is full. */
static int peer_slot(struct fo_report *rep, int node)
{
	for (int i = 0; i < rep->npeers; i++)
		if (rep->peer_node[i] == node)
			return i;
	if (rep->npeers == FO_MAX_PEERS)
		return -1;
	rep->peer_node[rep->npeers] = node;
	rep->peer_v[rep->npeers] = FO_PEER_UNKNOWN;
	rep->peer_packet_age_ms[rep->npeers] = -1;
	return rep->npeers++;
}

int fo_report_set_peer(struct fo_report *rep, int node, enum fo_peer v)
{
	int i = peer_slot(rep, node);

	if (i < 0)
		return -ENOSPC;
	rep->peer_v[i] = v;
	return 0;
}

int fo_report_set_peer_age(struct fo_report *rep, int node, long long ms)
{
	int i = peer_slot(rep, node);

	if (i < 0)
		return -ENOSPC;
	rep->peer_packet_age_ms[i] = ms;
	return 0;
}

struct fo_shard *fo_find_shard(struct fo_cluster *c, const char *name)
{
	for (int i = 0; i < c->nshards; i++)
		if (!strcmp(c->shards[i].name, name))
			return &c->shards[i];
	return NULL;
}

static bool host_eq(const char *a, const char *b)
{
	/* "localhost" and 127.0.0.1 are the same server to a replica. */
	if (!strcasecmp(a, b))
		return true;
	return (!strcmp(a, "localhost") && !strcmp(b, "127.0.0.1")) ||
	       (!strcmp(b, "localhost") && !strcmp(a, "127.0.0.1"));
}

struct fo_node *fo_node_by_addr(const struct fo_cluster *c, const char *host, int port)
{
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i].port == port && host_eq(c->nodes[i].host, host))
			return &c->nodes[i];
	return NULL;
}

bool fo_follows(const struct info_repl *r, const struct fo_node *m)
{
	return r->role == INFO_ROLE_SLAVE && m && r->master_port == m->port &&
	       host_eq(r->master_host, m->host);
}

const struct info_repl *fo_latest(const struct fo_node *n)
{
	bool rep = n->flags & FO_N_REPORTED;

	if (n->info_ok && (!rep || n->info_ms >= n->last_report_ms))
		return &n->info;
	return rep ? &n->rep.repl : NULL;
}
