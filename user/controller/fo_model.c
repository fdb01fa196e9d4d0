// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failover model: the cluster's nodes and shards built from the cluster
 * file, and the look-ups every other fo_*.c module uses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "controller/fo_internal.h"

int fo_cluster_init(struct fo_cluster *c, const struct cfg *cfg, const struct fo_ops *ops,
		    void *ctx)
{
	if (cfg->nnodes > FO_MAX_NODES)
		return -E2BIG;
	memset(c, 0, sizeof(*c));
	c->cfg = cfg;
	c->ops = ops;
	c->ctx = ctx;
	c->node_down_after_ms = cfg->controller.node_down_after_ms;
	c->lease_ms = cfg->agent.lease_ms;
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
	}
	c->shards = calloc(cfg->nshards ? cfg->nshards : 1, sizeof(*c->shards));
	if (!c->shards)
		return -ENOMEM;
	c->nshards = cfg->nshards;
	for (int i = 0; i < cfg->nshards; i++) {
		struct fo_shard *s = &c->shards[i];

		s->name = cfg->shards[i].name;
		s->idx = i;
		s->nodes = cfg->shards[i].nodes;
		s->nnodes = cfg->shards[i].nnodes;
		s->primary = -1;
		s->fo.to = s->fo.from = s->fo.target = -1;
	}
	return 0;
}

void fo_cluster_free(struct fo_cluster *c)
{
	free(c->shards);
	c->shards = NULL;
	c->nshards = 0;
}

struct fo_node *fo_find_node(struct fo_cluster *c, const char *id)
{
	for (int i = 0; i < c->nnodes; i++)
		if (!strcmp(c->nodes[i].id, id))
			return &c->nodes[i];
	return NULL;
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

struct fo_node *fo_node_by_addr(struct fo_cluster *c, const char *host, int port)
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
