// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The I/O of cluster shards ([shard] mode = cluster; fo_cluster.c decides): the
 * promotion through the cluster's own election (CLUSTER FAILOVER [FORCE|TAKEOVER] on
 * the replica, then its ROLE polled until it says master: only then is the promotion
 * answered; not in time, the replica's CLUSTER INFO before and after tells why: an
 * election lost and its votes, or none held), and the primary's CLUSTER NODES read
 * every CTL_CLUSTER_CHECK_MS (and at once after a failover) for fo_cluster_check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"

#define CTL_CLUSTER_CHECK_MS 1000 /* CLUSTER NODES of each cluster shard's primary */
#define CTL_CLUSTER_POLL_MS  2	  /* ROLE of a replica asked to take over, this often */
#define CTL_CLUSTER_WHY_MS   30	  /* of the promotion's time, kept for CLUSTER INFO's why */

/* The module's state (c->cluster). */
struct ctl_cluster {
	long long checked_ms; /* monotonic: the last round of CLUSTER NODES */
};

int ctl_cluster_init(struct ctl *c)
{
	c->cluster = calloc(1, sizeof(*c->cluster));
	return c->cluster ? 0 : -ENOMEM;
}

void ctl_cluster_fini(struct ctl *c)
{
	free(c->cluster);
	c->cluster = NULL;
}

/* The replica's election counters, from CLUSTER INFO. */
struct cl_votes {
	bool ok;		      /* read */
	unsigned long long epoch;     /* cluster_current_epoch */
	long long size;		      /* cluster_size: masters serving slots */
	long long req_sent, ack_recv; /* failover auth requests sent, votes received */
};

/* One CLUSTER FAILOVER in flight: its confirmation by ROLE. Referenced by its own
 * requests (refs): the CLUSTER INFO sent ahead of the failover may be answered after
 * the failover was (a timeout), and must find it alive. */
struct cl_failover {
	struct ctl *ctl;
	int node;
	int refs;
	bool answered;	       /* fo_on_promote called */
	bool replica;	       /* ROLE answered: a replica still */
	long long deadline_ms; /* monotonic: ROLE asked until then */
	long long end_ms;      /* monotonic: answered by then (the promotion's timeout) */
	struct event *poll;
	struct cl_votes before, after;
	char err[200];
};

static void cl_unref(struct cl_failover *q)
{
	if (--q->refs > 0)
		return;
	if (q->poll)
		event_free(q->poll);
	free(q);
}

/* The answer to the failover state machine: ok, or why not. */
static void cl_answer(struct cl_failover *q, bool ok, const char *err)
{
	struct ctl *c = q->ctl;
	int node = q->node;

	q->answered = true;
	if (q->poll)
		evtimer_del(q->poll);
	fo_on_promote(&c->fo, &c->fo.nodes[node], ok, err);
	cl_unref(q);
}

/* name:value of an INFO-style text; absent (CLUSTER INFO leaves out a message type
 * never counted): 0. */
static long long cl_info_ll(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, name, n) && l[n] == ':')
			return strtoll(l + n + 1, NULL, 10);
	return 0;
}

static void votes_parse(struct cl_votes *v, const redisReply *rep)
{
	if (!rep || rep->type != REDIS_REPLY_STRING || !strstr(rep->str, "cluster_current_epoch:"))
		return; /* refused (ACL) or not a cluster node: the reason says less */
	v->ok = true;
	v->epoch = (unsigned long long)cl_info_ll(rep->str, "cluster_current_epoch");
	v->size = cl_info_ll(rep->str, "cluster_size");
	v->req_sent = cl_info_ll(rep->str, "cluster_stats_messages_auth-req_sent");
	v->ack_recv = cl_info_ll(rep->str, "cluster_stats_messages_auth-ack_received");
}

/* Why no election was won, from the counters before the request and now. The
 * cluster's rule that matters: a replica whose election failed stands again only
 * 2 x its auth timeout (2 x cluster-node-timeout, at least 2 s) after it began. */
static void votes_why(const struct cl_failover *q, char *why, size_t len)
{
	const struct cl_votes *b = &q->before, *a = &q->after;

	if (!b->ok || !a->ok) {
		snprintf(why, len, "still a replica (no election won in time)");
		return;
	}
	if (a->req_sent > b->req_sent)
		snprintf(why, len,
			 "still a replica: lost the election for epoch %llu (%lld of the %lld "
			 "votes needed in time); the cluster lets it stand again only 4 x "
			 "cluster-node-timeout after it began",
			 a->epoch, a->ack_recv - b->ack_recv, a->size / 2 + 1);
	else
		snprintf(why, len,
			 "still a replica: no election held (one it lost less than 4 x "
			 "cluster-node-timeout ago, or its master not known to it)");
}

static void on_votes_after(void *ctx, redisReply *rep, const char *err, void *priv)
{
	struct cl_failover *q = priv;
	char why[sizeof(q->err)];

	(void)ctx;
	(void)err;
	votes_parse(&q->after, rep);
	votes_why(q, why, sizeof(why));
	cl_answer(q, false, why);
}

/* Not a master by the deadline: CLUSTER INFO once more, then the answer. */
static void cl_lost(struct cl_failover *q)
{
	const char *argv[] = {"CLUSTER", "INFO"};
	long long left = q->end_ms - fl_mono_ms();

	if (!q->before.ok || left <= 0 ||
	    !ctl_server_request(q->ctl, q->node, (int)left, on_votes_after, q, 2, argv))
		cl_answer(q, false, q->err);
}

static void on_votes_before(void *ctx, redisReply *rep, const char *err, void *priv)
{
	struct cl_failover *q = priv;

	(void)ctx;
	(void)err;
	if (!q->answered)
		votes_parse(&q->before, rep);
	cl_unref(q);
}

static void cl_poll(evutil_socket_t fd, short what, void *arg);

static void on_role(void *ctx, redisReply *rep, const char *err, void *priv)
{
	struct cl_failover *q = priv;
	struct timeval tv = fl_ms_tv(CTL_CLUSTER_POLL_MS);

	(void)ctx;
	if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
	    rep->element[0]->type == REDIS_REPLY_STRING &&
	    !strcmp(rep->element[0]->str, "master")) {
		cl_answer(q, true, NULL);
		return;
	}
	/* A ROLE that failed (the last one's deadline is short) leaves what an earlier one
	 * said: a replica still. */
	if (rep && rep->type == REDIS_REPLY_ARRAY) {
		q->replica = true;
		snprintf(q->err, sizeof(q->err), "still a replica (no election won in time)");
	} else if (!q->replica) {
		snprintf(q->err, sizeof(q->err), "ROLE: %s",
			 !rep				  ? (err ? err : "?")
			 : rep->type == REDIS_REPLY_ERROR ? rep->str
							  : "unexpected reply");
	}
	if (fl_mono_ms() >= q->deadline_ms) {
		if (q->replica)
			cl_lost(q); /* why */
		else
			cl_answer(q, false, q->err);
		return;
	}
	evtimer_add(q->poll, &tv);
}

static void cl_poll(evutil_socket_t fd, short what, void *arg)
{
	struct cl_failover *q = arg;
	const char *argv[] = {"ROLE"};
	long long left = q->deadline_ms - fl_mono_ms();

	(void)fd;
	(void)what;
	if (left <= 0 && q->replica)
		cl_lost(q);
	else if (left <= 0 || !ctl_server_request(q->ctl, q->node, (int)left, on_role, q, 1, argv))
		cl_answer(q, false, q->err[0] ? q->err : "timed out");
}

static void on_failover(void *ctx, redisReply *rep, const char *err, void *priv)
{
	struct cl_failover *q = priv;

	(void)ctx;
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		char why[240];

		snprintf(why, sizeof(why), "CLUSTER FAILOVER: %s",
			 rep ? rep->str : (err ? err : "?"));
		cl_answer(q, false, why);
		return;
	}
	cl_poll(-1, 0, q);
}

void ctl_op_cluster_failover(void *ctx, int node, const char *option, int timeout_ms)
{
	struct ctl *c = ctx;
	struct cl_failover *q = calloc(1, sizeof(*q));
	const char *argv[] = {"CLUSTER", "FAILOVER", option};
	const char *info[] = {"CLUSTER", "INFO"};
	int argc = option && option[0] ? 3 : 2;

	if (!q) {
		fo_on_promote(&c->fo, &c->fo.nodes[node], false, "out of memory");
		return;
	}
	q->ctl = c;
	q->node = node;
	q->refs = 1;
	q->end_ms = fl_mono_ms() + timeout_ms;
	q->deadline_ms = q->end_ms - (timeout_ms > 4 * CTL_CLUSTER_WHY_MS ? CTL_CLUSTER_WHY_MS : 0);
	q->poll = evtimer_new(c->base, cl_poll, q);
	if (!q->poll) {
		cl_answer(q, false, "out of memory");
		return;
	}
	/* The election counters first, on the same link: answered before the failover
	 * is, and no round trip added ahead of it. */
	q->refs++;
	if (!ctl_server_request(c, node, timeout_ms, on_votes_before, q, 2, info))
		q->refs--;
	if (!ctl_server_request(c, node, timeout_ms, on_failover, q, argc, argv))
		cl_answer(q, false, "no link to the server");
}

/* ---- CLUSTER NODES of the primaries ---- */

struct cl_check {
	struct ctl *ctl;
	int shard, node;
};

static void on_nodes(void *ctx, redisReply *rep, const char *err, void *priv)
{
	struct cl_check *q = priv;
	struct ctl *c = q->ctl;
	struct fo_shard *s = &c->fo.shards[q->shard];
	bool ok = rep && rep->type == REDIS_REPLY_STRING;

	(void)ctx;
	if (!ok)
		pr_debug("failed to read CLUSTER NODES of %s: %s\n", c->fo.nodes[q->node].id,
			 rep && rep->type == REDIS_REPLY_ERROR ? rep->str : (err ? err : "?"));
	/* Unreachable or refused: the failure rules see to the node, nothing to judge. */
	if (ok && !s->removed && q->node < c->fo.nnodes)
		fo_cluster_check(&c->fo, s, &c->fo.nodes[q->node], rep->str, rep->len);
	free(q);
}

void ctl_cluster_check(struct ctl *c, int shard)
{
	const struct fo_shard *s = &c->fo.shards[shard];
	const char *argv[] = {"CLUSTER", "NODES"};
	struct cl_check *q;

	if (s->removed || !s->cluster || s->primary < 0 || s->fo.state != FO_ST_NONE)
		return;
	q = calloc(1, sizeof(*q));
	if (!q)
		return;
	*q = (struct cl_check){c, shard, s->primary};
	if (!ctl_server_request(c, s->primary, 1000, on_nodes, q, 2, argv))
		free(q);
}

void ctl_cluster_tick(struct ctl *c)
{
	struct ctl_cluster *m = c->cluster;
	long long now = fl_mono_ms();

	if (!m || now - m->checked_ms < CTL_CLUSTER_CHECK_MS || c->fo.starting)
		return;
	m->checked_ms = now;
	for (int i = 0; i < c->fo.nshards; i++)
		ctl_cluster_check(c, i);
}
