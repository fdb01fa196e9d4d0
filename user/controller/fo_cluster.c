// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Cluster shards ([shard] mode = cluster, docs/cluster.md): one primary of a Redis or
 * Valkey Cluster and its replicas, each node with its agent. The detection, the rules,
 * the lease wait and the state machine are the replication shards'; what differs is
 * decided here, without I/O:
 *   - the promotion is the cluster's own election: CLUSTER FAILOVER FORCE on the best
 *     replica for a failure, plain CLUSTER FAILOVER (lossless: the cluster pauses the
 *     primary and waits for the offset itself) for a planned move, TAKEOVER only when an
 *     operator asks (fo_cluster_option); the I/O layer confirms it from the replica's
 *     ROLE before it answers fo_on_promote;
 *   - a replica the cluster already elected (fresh INFO says master) is taken as the
 *     promotion: flatline does not start a second election (fo_cluster_elected);
 *   - nobody is repointed or demoted (the cluster does it), no DNS;
 *   - the listed nodes are checked against the primary's CLUSTER NODES
 *     (fo_cluster_check): a mismatch is an event, never silent. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "controller/fo_internal.h"

const char *fo_cluster_option(const struct fo_failover *f)
{
	if (f->takeover)
		return "TAKEOVER";
	return f->planned ? "" : "FORCE";
}

/* One line of CLUSTER NODES: "<id> <ip:port@cport[,host]> <flags> <master|-> <ping>
 * <pong> <epoch> <link> <slot>...". Fields point into line (cut with NULs). */
static int parse_line(char *line, struct fo_cl_node *n)
{
	char *f[9], *save = NULL, *at, *colon;
	int k = 0;

	for (char *t = strtok_r(line, " ", &save); t && k < 9; t = strtok_r(NULL, " ", &save))
		f[k++] = t;
	if (k < 8)
		return -EINVAL;
	memset(n, 0, sizeof(*n));
	snprintf(n->id, sizeof(n->id), "%s", f[0]);
	at = strchr(f[1], '@');
	if (at)
		*at = '\0';
	colon = strrchr(f[1], ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	snprintf(n->host, sizeof(n->host), "%s", f[1][0] == '[' ? f[1] + 1 : f[1]);
	if (n->host[0] && n->host[strlen(n->host) - 1] == ']')
		n->host[strlen(n->host) - 1] = '\0';
	{
		char *end;
		long port = strtol(colon + 1, &end, 10);

		if (*end || port <= 0 || port > 65535)
			return -EINVAL;
		n->port = (int)port;
	}
	n->myself = strstr(f[2], "myself") != NULL;
	n->master = strstr(f[2], "master") != NULL;
	n->fail = strstr(f[2], "fail") != NULL && !strstr(f[2], "fail?");
	n->pfail = strstr(f[2], "fail?") != NULL;
	snprintf(n->master_id, sizeof(n->master_id), "%s", f[3]);
	n->has_slots = k == 9;
	return 0;
}

int fo_cluster_nodes_parse(const char *text, size_t len, struct fo_cl_node *out, int max)
{
	char *buf = strndup(text, len), *save = NULL;
	int n = 0;

	if (!buf)
		return -ENOMEM;
	for (char *l = strtok_r(buf, "\r\n", &save); l; l = strtok_r(NULL, "\r\n", &save)) {
		if (n == max) {
			free(buf);
			return -E2BIG;
		}
		if (parse_line(l, &out[n])) {
			free(buf);
			return -EINVAL;
		}
		n++;
	}
	free(buf);
	return n;
}

static bool same_addr(const struct fo_cl_node *cn, const struct fo_node *n)
{
	return cn->port == n->port && !strcmp(cn->host, n->host);
}

int fo_cluster_verify(const struct fo_cluster *c, const struct fo_shard *s,
		      const struct fo_cl_node *v, int nv, char *why, size_t whylen)
{
	const struct fo_node *p = s->primary >= 0 ? &c->nodes[s->primary] : NULL;
	const struct fo_cl_node *me = NULL;

	if (!p) {
		snprintf(why, whylen, "no primary known");
		return -ENOENT;
	}
	for (int i = 0; i < nv; i++)
		if (v[i].myself)
			me = &v[i];
	if (!me) {
		snprintf(why, whylen, "%s's CLUSTER NODES has no myself line", p->id);
		return -EINVAL;
	}
	if (!me->master || !me->has_slots) {
		snprintf(why, whylen, "%s is %s in the cluster", p->id,
			 me->master ? "a master serving no slots" : "no master");
		return -EINVAL;
	}
	/* Every listed node other than the primary is one of its replicas… */
	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *n = &c->nodes[s->nodes[i]];
		bool found = false;

		if (n == p || (n->flags & FO_N_SDOWN))
			continue; /* a node down is said by the failure rules, not here */
		for (int k = 0; k < nv && !found; k++)
			found = same_addr(&v[k], n) && !strcmp(v[k].master_id, me->id);
		if (!found) {
			snprintf(why, whylen, "%s (%s:%d) is not a replica of %s in CLUSTER NODES",
				 n->id, n->host, n->port, p->id);
			return -EINVAL;
		}
	}
	/* …and every replica of the primary is listed. */
	for (int k = 0; k < nv; k++) {
		bool listed = false;

		if (strcmp(v[k].master_id, me->id))
			continue;
		for (int i = 0; i < s->nnodes && !listed; i++)
			listed = same_addr(&v[k], &c->nodes[s->nodes[i]]);
		if (!listed) {
			snprintf(why, whylen, "replica %s:%d of %s is not in the shard's nodes",
				 v[k].host, v[k].port, p->id);
			return -EINVAL;
		}
	}
	why[0] = '\0';
	return 0;
}

void fo_cluster_check(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, const char *text,
		      size_t len)
{
	struct fo_cl_node *v;
	char why[160];
	struct fo_event e;
	int nv;

	if (!s->cluster || n->idx != s->primary || s->fo.state != FO_ST_NONE)
		return; /* only the settled primary's view is judged */
	v = calloc(FO_CL_MAX_NODES, sizeof(*v));
	if (!v)
		return;
	nv = fo_cluster_nodes_parse(text, len, v, FO_CL_MAX_NODES);
	if (nv < 0)
		snprintf(why, sizeof(why), "failed to parse %s's CLUSTER NODES: %s", n->id,
			 nv == -E2BIG ? "too many nodes" : "malformed");
	else
		fo_cluster_verify(c, s, v, nv, why, sizeof(why));
	free(v);
	if (s->cluster_checked == n->idx + 1 && !strcmp(why, s->cluster_why))
		return; /* said already of this primary's view */
	s->cluster_checked = n->idx + 1;
	snprintf(s->cluster_why, sizeof(s->cluster_why), "%s", why);
	fo_ev_begin(&e, why[0] ? "cluster_mismatch" : "cluster_consistent", s);
	evrec_str(&e.r, "instance", n->id);
	evrec_int(&e.r, "replicas", s->nnodes - 1);
	if (why[0])
		evrec_str(&e.r, "reason", why);
	fo_emit(c, &e);
}

int fo_cluster_elected(const struct fo_cluster *c, const struct fo_shard *s)
{
	const struct fo_failover *f = &s->fo;

	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *n = &c->nodes[s->nodes[i]];

		if (n->idx == f->from || !(f->asked & (1ULL << n->spos)) || !n->info_ok ||
		    n->info_ms < f->start_ms)
			continue;
		if (n->info.role == INFO_ROLE_MASTER)
			return n->idx;
	}
	return -1;
}
