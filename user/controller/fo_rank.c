// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Replica ranking (docs/controller.md, "Replica selection"), apart from the state
 * machine as Sentinel's sentinelSelectSlave/compareSlavesForPromotion are:
 * connected to the failed primary and on its history first (highest offset,
 * then priority), then the others by priority, offset, id. A replica in a full
 * sync (master_sync_in_progress) is no candidate at all: its data is not whole. */
#include <string.h>
#include "controller/fo_internal.h"

/* Ranked in this order of tiers, then within a tier (rank_cmp). */
enum rank_tier {
	RANK_CONNECTED = 0, /* link to the failed primary up, on its history, offset known */
	RANK_OTHER,	    /* the rest: by priority, offset, id, as Sentinel does */
};

struct rank_key {
	int node;
	enum rank_tier tier;
	int replid_ok;
	long long offset;
	int priority;
	const char *id;
};

static int rank_cmp(const struct rank_key *a, const struct rank_key *b)
{
	if (a->tier != b->tier)
		return (int)a->tier - (int)b->tier;
	if (a->tier == RANK_CONNECTED) {
		if (a->offset != b->offset)
			return a->offset > b->offset ? -1 : 1;
		if (a->priority != b->priority)
			return a->priority - b->priority;
	} else {
		/* Sentinel's order when nobody was connected: priority, offset, id. */
		if (a->priority != b->priority)
			return a->priority - b->priority;
		if (a->replid_ok != b->replid_ok)
			return b->replid_ok - a->replid_ok;
		if (a->replid_ok && a->offset != b->offset)
			return a->offset > b->offset ? -1 : 1;
	}
	return strcmp(a->id, b->id);
}

int fo_rank(const struct fo_cluster *c, const struct fo_shard *s, int from, const char *ref_replid,
	    long long since_ms, int *out, int max)
{
	struct rank_key keys[FO_MAX_SHARD_NODES];
	const struct fo_node *old = from >= 0 ? &c->nodes[from] : NULL;
	int n = 0;

	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *nd = &c->nodes[s->nodes[i]];
		const struct info_repl *r;
		struct rank_key *k;
		bool connected;

		if (nd->idx == from || nd->priority <= 0 ||
		    (nd->flags & (FO_N_SDOWN | FO_N_UNPROMOTABLE)))
			continue;
		r = nd->info_ok ? &nd->info : (nd->flags & FO_N_REPORTED) ? &nd->rep.repl : NULL;
		if (!r || r->role != INFO_ROLE_SLAVE || r->slave_priority == 0 || r->loading ||
		    r->sync_in_progress)
			continue;
		k = &keys[n++];
		k->node = nd->idx;
		k->id = nd->id;
		k->priority = nd->priority; /* the cluster file is the operator's word */
		k->offset = r->offset;
		k->replid_ok = !ref_replid || !ref_replid[0] || !r->master_replid[0] ||
			       !strcmp(ref_replid, r->master_replid);
		connected = (r->link_up == 1 && (!old || fo_follows(r, old))) ||
			    (nd->link_up_ms && nd->link_up_ms >= since_ms);
		if (connected && k->replid_ok && r->offset >= 0)
			k->tier = RANK_CONNECTED;
		else
			k->tier = RANK_OTHER;
	}
	/* Insertion sort: a handful of nodes. */
	for (int i = 1; i < n; i++) {
		struct rank_key k = keys[i];
		int j = i - 1;

		while (j >= 0 && rank_cmp(&keys[j], &k) > 0) {
			keys[j + 1] = keys[j];
			j--;
		}
		keys[j + 1] = k;
	}
	for (int i = 0; i < n && i < max; i++)
		out[i] = keys[i].node;
	return n < max ? n : max;
}
