// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Lease admission, the controller's side: see lease_admit.h. */
#include <errno.h>
#include <string.h>
#include "controller/lease_admit.h"

void fo_admit_set_term(struct fo_cluster *c, long long term)
{
	c->admit_term = term;
	if (!c->admit_grant)
		c->admit_grant = 1;
}

bool fo_admit_out_now(const struct fo_node *q)
{
	return q->flags & (FO_N_HOST_DOWN | FO_N_AGENT_LOST | FO_N_REMOVED);
}

/* q's withdrawal as it is now; each change takes a new grant number. */
static void sync_node(struct fo_cluster *c, struct fo_node *q)
{
	bool out = fo_admit_out_now(q);

	if (out == (q->admit_out != 0))
		return;
	c->admit_grant++;
	q->admit_out = out ? c->admit_grant : 0;
}

int fo_admit_answer(struct fo_cluster *c, const struct fo_node *p, char *buf, size_t len)
{
	const struct fo_shard *s = p->shard >= 0 ? &c->shards[p->shard] : NULL;
	size_t used = 0;

	if (!len)
		return -ENOSPC;
	buf[0] = '\0';
	if (!c->admit_grant)
		c->admit_grant = 1;
	/* Removed peers its agent still names: left out from the removal on. */
	for (int i = 0; i < p->rep.npeers + p->rep.nremoved; i++) {
		int k = i < p->rep.npeers ? p->rep.peer_node[i]
					  : p->rep.removed_node[i - p->rep.npeers];

		if (k >= 0 && k < c->nnodes && (c->nodes[k].flags & FO_N_REMOVED))
			sync_node(c, &c->nodes[k]);
	}
	for (int i = 0; s && i < s->nnodes; i++) {
		struct fo_node *q = &c->nodes[s->nodes[i]];
		size_t n;

		if (q == p)
			continue;
		sync_node(c, q);
		if (q->admit_out)
			continue;
		n = strlen(q->id);
		if (used + n + 2 > len) {
			buf[0] = '\0';
			return -ENOSPC;
		}
		if (used)
			buf[used++] = ' ';
		memcpy(buf + used, q->id, n);
		used += n;
		buf[used] = '\0';
	}
	return 0;
}

bool fo_admit_confirmed(const struct fo_cluster *c, const struct fo_node *p,
			const struct fo_node *q)
{
	return c->admit_term && q->admit_out && (p->flags & FO_N_REPORTED) &&
	       p->rep.admit_term == c->admit_term && p->rep.admit_grant >= q->admit_out;
}
