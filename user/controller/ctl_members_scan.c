// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Runtime membership's look at the servers: every CTL_MEMBERS_SCAN_MS, INFO
 * replication of every primary; a replica it lists that no shard knows is reported
 * (replica_unknown, once per appearance, and in status) or, in a shard SENTINEL
 * MONITOR made, added as Sentinel adds it (+slave). A shard with no primary known
 * (added at runtime, or its servers down at the start) learns it as at a start
 * (fo_discover) once its nodes' INFO is in, asked every CTL_MEMBERS_TICK_MS. The layer over
 * ctl_members.c: calls it (a replica found, the retry), never called by it but for
 * after_info, registered at the start. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/ctl_members.h"

/* A node's INFO is in: a shard with no primary known learns it as at a start. */
static void after_info(struct ctl *c)
{
	if (c->fo.starting || !ctl_may_act(c)) /* shadow too: as at a start */
		return;
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];

		bool master = false;

		if (s->removed || s->primary >= 0 || !s->nnodes)
			continue;
		for (int k = 0; k < s->nnodes; k++)
			master |= c->fo.nodes[s->nodes[k]].info_ok &&
				  c->fo.nodes[s->nodes[k]].info.role == INFO_ROLE_MASTER;
		if (!master)
			continue; /* asked again on the next tick */
		fo_discover(&c->fo, s);
		if (s->primary >= 0 && c->cfg->shards[i].discover)
			ctl_members_scan_shard(c, i);
	}
}

/* ---- the scan: replicas in a primary's INFO that no shard knows ---- */

struct scan_req {
	struct ctl *c;
	int shard, node;
};

static struct mb_unknown *unknown_find(struct ctl_members *m, int shard, const char *host, int port)
{
	for (int i = 0; i < m->nunknown; i++)
		if (m->unknown[i].shard == shard && m->unknown[i].port == port &&
		    !strcmp(m->unknown[i].host, host))
			return &m->unknown[i];
	return NULL;
}

static void found_replica(struct ctl *c, int shard, const struct mb_addr *a)
{
	struct ctl_members *m = c->members;
	struct fo_shard *s = &c->fo.shards[shard];
	struct mb_unknown *u;
	struct evrec r;

	if (c->cfg->shards[shard].discover && ctl_may_act(c)) {
		/* SENTINEL MONITOR's shard: Sentinel adds what its primary lists. */
		struct mb_entry e = {.kind = MB_NODE, .priority = 100};
		char why[240];

		if (mb_node_id(s->name, a->host, a->port, e.id, sizeof(e.id)))
			return;
		snprintf(e.shard, sizeof(e.shard), "%s", s->name);
		snprintf(e.address, sizeof(e.address), "%.63s", a->host);
		snprintf(e.redis, sizeof(e.redis), strchr(a->host, ':') ? "[%s]:%d" : "%s:%d",
			 a->host, a->port);
		if (ctl_members_change(c, &e, "discovery", NULL, NULL, why, sizeof(why)) ||
		    !fo_find_node(&c->fo, e.id)) {
			if (!c->ha)
				pr_warn("failed to add replica %s:%d of %s: %s\n", a->host, a->port,
					s->name, why);
			return;
		}
		snprintf(why, sizeof(why), "slave %.40s:%d %.40s %d @ %.40s %.40s %d", a->host,
			 a->port, a->host, a->port, s->name, c->fo.nodes[s->primary].host,
			 c->fo.nodes[s->primary].port);
		ctl_event_sentinel(c, "+slave", why);
		return;
	}
	u = unknown_find(m, shard, a->host, a->port);
	if (u) {
		u->seen = true;
		return;
	}
	if (m->nunknown == m->capunknown) {
		int cap = m->capunknown ? m->capunknown * 2 : 16;
		struct mb_unknown *n = realloc(m->unknown, cap * sizeof(*n));

		if (!n)
			return;
		m->unknown = n;
		m->capunknown = cap;
	}
	u = &m->unknown[m->nunknown++];
	memset(u, 0, sizeof(*u));
	u->shard = shard;
	snprintf(u->host, sizeof(u->host), "%.63s", a->host);
	u->port = a->port;
	u->seen = true;
	evrec_begin(&r, NULL, "controller", "replica_unknown");
	evrec_str(&r, "shard", s->name);
	evrec_str(&r, "primary", c->fo.nodes[s->primary].id);
	evrec_str(&r, "replica", a->host);
	evrec_int(&r, "port", a->port);
	evrec_str(&r, "hint",
		  "a replica of the primary in no shard: flatline node add, or "
		  "stop it replicating");
	ctl_event(c, "replica_unknown", &r);
}

static void on_scan(void *ctx, struct redisReply *rep, const char *err, void *priv)
{
	struct scan_req *q = priv;
	struct ctl *c = q->c;
	struct mb_addr a[FO_MAX_SHARD_NODES * 2];
	int n, w = 0;

	(void)ctx;
	(void)err;
	if (!c->members || q->shard >= c->fo.nshards || c->fo.shards[q->shard].removed ||
	    c->fo.shards[q->shard].primary != q->node || !rep || rep->type != REDIS_REPLY_STRING) {
		free(q);
		return;
	}
	n = mb_info_slaves(rep->str, rep->len, a, sizeof(a) / sizeof(a[0]));
	for (int i = 0; i < c->members->nunknown; i++)
		if (c->members->unknown[i].shard == q->shard)
			c->members->unknown[i].seen = false;
	for (int i = 0; i < n; i++)
		if (!fo_node_by_addr(&c->fo, a[i].host, a[i].port))
			found_replica(c, q->shard, &a[i]);
	/* Gone from INFO (or known now): a later appearance is reported again. */
	for (int i = 0; i < c->members->nunknown; i++) {
		struct mb_unknown *u = &c->members->unknown[i];

		if (u->shard == q->shard && (!u->seen || fo_node_by_addr(&c->fo, u->host, u->port)))
			continue;
		c->members->unknown[w++] = *u;
	}
	c->members->nunknown = w;
	free(q);
}

void ctl_members_scan_shard(struct ctl *c, int shard)
{
	const char *argv[] = {"INFO", "replication"};
	struct fo_shard *s = &c->fo.shards[shard];
	struct scan_req *q;

	if (s->removed || s->primary < 0 || !fo_primary_settled(s))
		return;
	q = calloc(1, sizeof(*q));
	if (!q)
		return;
	*q = (struct scan_req){c, shard, s->primary};
	if (!ctl_server_request(c, s->primary, 1000, on_scan, q, 2, argv))
		free(q);
}

static void on_tick(int fd, short what, void *arg)
{
	struct ctl *c = arg;
	bool scan = ++c->members->ticks % (CTL_MEMBERS_SCAN_MS / CTL_MEMBERS_TICK_MS) == 0;

	(void)fd;
	(void)what;
	ctl_members_retry(c);
	/* Starting: nothing known yet — but an HA follower stays "starting" (it observes,
	 * the leader discovers) and its status should name unknown replicas too. */
	if (c->fo.starting && !(c->ha && !ctl_may_act(c)))
		return;
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];

		if (scan)
			ctl_members_scan_shard(c, i);
		/* A shard with no primary known yet (added at runtime, or whose servers
		 * were down when this controller started): its nodes' INFO again, then
		 * discovery (after_info). */
		if (!s->removed && s->primary < 0 && s->nnodes && ctl_may_act(c))
			for (int k = 0; k < s->nnodes; k++)
				ctl_server_discover(c, s->nodes[k], 900, after_info);
	}
}

int ctl_members_scan_start(struct ctl *c)
{
	struct ctl_members *m = c->members;
	struct timeval tv = fl_ms_tv(CTL_MEMBERS_TICK_MS);

	m->after_info = after_info;
	m->scan = event_new(c->base, -1, EV_PERSIST, on_tick, c);
	if (!m->scan)
		return -ENOMEM;
	event_add(m->scan, &tv);
	return 0;
}

void ctl_members_unknown(const struct ctl *c, int shard, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; c->members && i < c->members->nunknown && off < len; i++) {
		const struct mb_unknown *u = &c->members->unknown[i];

		if (u->shard == shard)
			off += snprintf(buf + off, len - off, "%s%s:%d", off ? " " : "", u->host,
					u->port);
	}
}
