// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failover model: the cluster's nodes and shards built from the cluster
 * file, and the look-ups every other fo_*.c module uses. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "controller/fo_internal.h"

static int by_id_cmp(const void *a, const void *b)
{
	return strcmp((*(struct fo_node *const *)a)->id, (*(struct fo_node *const *)b)->id);
}

static int node_room(const struct cfg *cfg)
{
	return cfg->node_cap > cfg->nnodes ? cfg->node_cap : cfg->nnodes;
}

static int shard_room(const struct cfg *cfg)
{
	return cfg->shard_cap > cfg->nshards ? cfg->shard_cap : cfg->nshards;
}

static void sort_ids(struct fo_cluster *c)
{
	for (int i = 0; i < c->nnodes; i++)
		c->by_id[i] = &c->nodes[i];
	qsort(c->by_id, c->nnodes, sizeof(struct fo_node *), by_id_cmp);
}

int fo_node_setup(struct fo_cluster *c, int i)
{
	const struct cfg_node *cn;
	struct fo_node *n;

	if (i < 0 || i >= c->node_cap || i >= c->cfg->nnodes)
		return -ENOSPC;
	cn = &c->cfg->nodes[i];
	n = &c->nodes[i];
	memset(n, 0, sizeof(*n));
	n->id = cn->id;
	n->idx = i;
	n->shard = cn->removed ? -1 : cn->shard;
	n->priority = cn->priority;
	if (cn->removed)
		n->flags = FO_N_REMOVED;
	else if (cn->attached && cn->shard >= 0)
		n->flags = FO_N_UNPROMOTABLE; /* a spare attached: earns it again (ctl_spares) */
	snprintf(n->host, sizeof(n->host), "%s", cn->redis.host);
	n->port = cn->redis.port;
	if (i >= c->nnodes) {
		c->nnodes = i + 1;
		sort_ids(c);
	}
	return 0;
}

void fo_node_drop(struct fo_cluster *c, int i)
{
	struct fo_node *n = &c->nodes[i];

	n->flags = FO_N_REMOVED;
	n->shard = -1;
	n->spos = 0;
	memset(&n->rep, 0, sizeof(n->rep));
	n->info_ok = 0;
}

static void shard_init(struct fo_cluster *c, int i, unsigned long long epoch)
{
	struct fo_shard *s = &c->shards[i];

	memset(s, 0, sizeof(*s));
	s->name = c->cfg->shards[i].name;
	s->idx = i;
	s->primary = -1;
	s->epoch = epoch;
	s->fo.to = s->fo.from = s->fo.target = -1;
	s->removed = c->cfg->shards[i].removed;
	s->cluster = c->cfg->shards[i].cluster;
	fo_shard_sync(c, i);
}

int fo_shard_setup(struct fo_cluster *c, int i)
{
	if (i < 0 || i >= c->shard_cap || i >= c->cfg->nshards)
		return -ENOSPC;
	shard_init(c, i, i < c->nshards ? c->shards[i].epoch : 0);
	if (i >= c->nshards)
		c->nshards = i + 1;
	return 0;
}

void fo_shard_drop(struct fo_cluster *c, int i)
{
	struct fo_shard *s = &c->shards[i];

	s->removed = true;
	s->primary = -1;
	s->flags = 0;
	s->nodes = NULL;
	s->nnodes = 0;
}

void fo_shard_sync(struct fo_cluster *c, int i)
{
	struct fo_shard *s = &c->shards[i];

	s->nodes = c->cfg->shards[i].nodes;
	s->nnodes = c->cfg->shards[i].nnodes;
	for (int k = 0; k < s->nnodes; k++) {
		struct fo_node *n = &c->nodes[s->nodes[k]];

		/* A spare attached since (the state file's or etcd's attach line): no
		 * candidate until ctl_spares has seen it synced and steady. */
		if (n->shard != i && c->cfg->nodes[s->nodes[k]].attached)
			n->flags |= FO_N_UNPROMOTABLE;
		n->spos = k;
		n->shard = i;
	}
}

int fo_cluster_init(struct fo_cluster *c, const struct cfg *cfg, const struct fo_ops *ops,
		    void *ctx)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < cfg->nshards; i++)
		if (cfg->shards[i].nnodes > FO_MAX_SHARD_NODES)
			return -E2BIG;
	c->node_cap = node_room(cfg);
	c->shard_cap = shard_room(cfg);
	c->nodes = calloc(c->node_cap ? c->node_cap : 1, sizeof(*c->nodes));
	c->by_id = calloc(c->node_cap ? c->node_cap : 1, sizeof(struct fo_node *));
	c->shards = calloc(c->shard_cap ? c->shard_cap : 1, sizeof(*c->shards));
	if (!c->nodes || !c->by_id || !c->shards) {
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
	c->nnodes = cfg->nnodes; /* set up below, sorted once */
	for (int i = 0; i < cfg->nnodes; i++)
		fo_node_setup(c, i);
	sort_ids(c);
	c->nshards = cfg->nshards;
	for (int i = 0; i < cfg->nshards; i++)
		shard_init(c, i, 0);
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
			return c->by_id[mid]->flags & FO_N_REMOVED ? NULL : c->by_id[mid];
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

struct fo_node *fo_find_removed_node(struct fo_cluster *c, const char *id)
{
	for (int i = 0; i < c->nnodes; i++)
		if ((c->nodes[i].flags & FO_N_REMOVED) && !strcmp(c->nodes[i].id, id))
			return &c->nodes[i];
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

void fo_report_copy(struct fo_report *dst, const struct fo_report *src)
{
	int np = src->npeers, nr = src->nremoved;

	memcpy(dst, src, offsetof(struct fo_report, peer_node));
	memcpy(dst->peer_node, src->peer_node, np * sizeof(src->peer_node[0]));
	memcpy(dst->peer_v, src->peer_v, np * sizeof(src->peer_v[0]));
	memcpy(dst->peer_packet_age_ms, src->peer_packet_age_ms,
	       np * sizeof(src->peer_packet_age_ms[0]));
	memcpy(dst->removed_node, src->removed_node, nr * sizeof(src->removed_node[0]));
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
		if (!c->shards[i].removed && !strcmp(c->shards[i].name, name))
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
		if (!(c->nodes[i].flags & FO_N_REMOVED) && c->nodes[i].port == port &&
		    host_eq(c->nodes[i].host, host))
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

int fo_set_primary(struct fo_cluster *c, struct fo_shard *s, int node, unsigned long long epoch)
{
	if ((s->fo.state != FO_ST_NONE && s->fo.state != FO_ST_PROMOTE) || node >= c->nnodes ||
	    (node >= 0 && c->nodes[node].shard != s->idx))
		return -EINVAL;
	if (node != s->primary)
		s->primary_since_ms = fo_now(c);
	s->primary = node;
	s->epoch = epoch;
	return 0;
}

bool fo_primary_settled(const struct fo_shard *s)
{
	return s->primary >= 0 && (s->fo.state == FO_ST_NONE || s->fo.state == FO_ST_REPOINT);
}
