// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failure rules (docs/controller.md, "When it fails over"): pure judgements.
 * Each takes the model (read only) and the time, and returns a verdict; none
 * changes state, does I/O or calls the evaluator or the machine above it (the
 * evaluator, fo_eval.c, and the machine, fo_machine.c, apply the verdicts).
 * fo_judge (a node's verdict), TILT (fo_tilt_judge) and the block window
 * (fo_may_failover), the restarted-empty check, and discovery's choice of a
 * primary at start. */
#include <stdio.h>
#include <string.h>
#include "controller/fo_internal.h"

bool fo_fresh(const struct fo_cluster *c, const struct fo_node *n, long long now)
{
	return (n->flags & FO_N_REPORTED) && now - n->last_report_ms <= fo_fresh_ms(c, n);
}

enum fo_verdict fo_judge(const struct fo_cluster *c, const struct fo_node *n, long long now)
{
	int ups = 0, downs = 0;

	if (!(n->flags & FO_N_REPORTED))
		return FO_V_UNKNOWN;
	/* The process path: the kernel saw it die. Stands even if the agent went
	 * silent afterwards (the host may have followed its server). */
	if (n->rep.proc == FO_PROC_DOWN)
		return FO_V_PROC_DOWN;
	if (fo_fresh(c, n, now))
		return n->rep.proc == FO_PROC_HUNG ? FO_V_PROC_HUNG : FO_V_OK;
	/* The host path: only peers of its own shard whose own heartbeat is fresh have
	 * a say (this runs only for a node whose heartbeat is stale). A report may name
	 * any node (an agent's --peer extras), but one node's key does not testify
	 * about another shard's nodes: whoever holds it could fail them over. */
	if (n->shard < 0)
		return FO_V_AGENT_LOST;
	const struct fo_shard *s = &c->shards[n->shard];

	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *p = &c->nodes[s->nodes[i]];

		if (p == n || !fo_fresh(c, p, now))
			continue;
		enum fo_peer v = p->rep.npeers ? fo_report_peer(&p->rep, n->idx) : FO_PEER_UNKNOWN;

		if (v == FO_PEER_DOWN)
			downs++;
		else if (v == FO_PEER_UP)
			ups++;
	}
	return downs > 0 && ups == 0 ? FO_V_HOST_DOWN : FO_V_AGENT_LOST;
}

/* Fields whose change may turn "no good replica" into a good one. */
bool fo_report_changed(const struct fo_report *a, const struct fo_report *b)
{
	return a->proc != b->proc || a->repl.role != b->repl.role ||
	       a->repl.link_up != b->repl.link_up || a->repl.master_port != b->repl.master_port ||
	       strcmp(a->repl.master_host, b->repl.master_host) ||
	       a->repl.slave_priority != b->repl.slave_priority ||
	       a->repl.sync_in_progress != b->repl.sync_in_progress ||
	       a->repl.loading != b->repl.loading || fo_report_peers_changed(a, b);
}

bool fo_report_peers_changed(const struct fo_report *a, const struct fo_report *b)
{
	if (a->npeers != b->npeers)
		return true;
	for (int i = 0; i < a->npeers; i++)
		if (fo_report_peer(b, a->peer_node[i]) != a->peer_v[i])
			return true;
	return false;
}

/* ------------------------------------------------------------------------- */
/* TILT and the block window */

enum fo_tilt_step fo_tilt_judge(const struct fo_cluster *c, long long mono_ms, long long wall_ms,
				long long *stall_ms, long long *jump_ms)
{
	long long dm = mono_ms - c->last_tick_mono_ms, dw = wall_ms - c->last_tick_wall_ms;
	bool first = !c->last_tick_mono_ms && !c->last_tick_wall_ms;

	*stall_ms = dm;
	*jump_ms = dw - dm;
	if (!first && c->tilt_ms > 0 &&
	    (dm > FO_TILT_TRIGGER_MS || dw - dm > FO_TILT_TRIGGER_MS ||
	     dm - dw > FO_TILT_TRIGGER_MS))
		return c->tilt ? FO_TILT_AGAIN : FO_TILT_ENTER;
	if (c->tilt)
		return mono_ms >= c->tilt_until_ms ? FO_TILT_LEAVE : FO_TILT_STAY;
	return FO_TILT_NONE;
}

bool fo_may_failover(const struct fo_cluster *c, const struct fo_shard *s, enum fo_verdict v,
		     bool planned, char *why, size_t whylen)
{
	long long now = c->now_ms(c->ctx), since;

	if (c->tilt) {
		snprintf(why, whylen, "TILT: observing only for %lld ms more",
			 c->tilt_until_ms - now);
		return false;
	}
	if (s->fo.state != FO_ST_NONE) {
		snprintf(why, whylen, "a failover of %s is in progress (%s)", s->name,
			 fo_state_name(s->fo.state));
		return false;
	}
	since = now - s->last_failover_end_ms;
	if (s->last_failover_end_ms && since < fo_block_ms(c, s)) {
		/* Unless the new primary also dies: the process or the host is gone. */
		if (!planned && (v == FO_V_PROC_DOWN || v == FO_V_HOST_DOWN))
			return true;
		snprintf(why, whylen,
			 "failover_block_ms: the last failover of %s ended %lld ms ago", s->name,
			 since);
		return false;
	}
	return true;
}

/* The primary returned without a failover in between. If its replication history is
 * not the one its replicas carry, and shorter (a restart without persistence, or from
 * an old file), following it would wipe them: returns the replica that has more (its
 * node index), else -1. */
int fo_restarted_empty(const struct fo_cluster *c, const struct fo_shard *s)
{
	const struct fo_node *p = &c->nodes[s->primary], *best = NULL;
	const struct info_repl *pr = fo_latest(p);
	long long best_off = -1;

	if (!pr || pr->role != INFO_ROLE_MASTER || pr->offset < 0 || !pr->master_replid[0])
		return -1;
	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *n = &c->nodes[s->nodes[i]];
		const struct info_repl *r = fo_latest(n);

		if (n == p || !r || (n->flags & FO_N_SDOWN) || r->role != INFO_ROLE_SLAVE ||
		    !r->master_replid[0] || !strcmp(r->master_replid, pr->master_replid) ||
		    r->offset <= pr->offset)
			continue;
		if (r->offset > best_off) {
			best = n;
			best_off = r->offset;
		}
	}
	return best ? best->idx : -1;
}

/* ------------------------------------------------------------------------- */
/* Discovery's choice at start */

int fo_discover_pick(const struct fo_cluster *c, const struct fo_shard *s, char *why, size_t whylen,
		     int *nmasters)
{
	int masters[FO_MAX_SHARD_NODES], nm = 0, pick = -1;
	const int spi = s->primary; /* the state file's word, -1 if none */

	why[0] = '\0';
	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *n = &c->nodes[s->nodes[i]];

		/* An attached spare not yet promotable that says master (its REPLICAOF
		 * lost) is no primary to discover or adopt; the recorded one stays. */
		if (n->info_ok && n->info.role == INFO_ROLE_MASTER &&
		    (n->idx == spi || !(n->flags & FO_N_UNPROMOTABLE)))
			masters[nm++] = n->idx;
	}
	*nmasters = nm;
	if (spi >= 0 && c->nodes[spi].info_ok && c->nodes[spi].info.role == INFO_ROLE_MASTER) {
		const struct info_repl *sr = &c->nodes[spi].info;

		pick = spi; /* the state file and the server agree */
		/* Unless another master carries a newer history, its replicas attached: a
		 * promotion our predecessor made but did not record (the recorded one
		 * restarted empty). Adopted, not overwritten by a fresh promotion. */
		for (int i = 0; i < nm; i++) {
			const struct fo_node *m = &c->nodes[masters[i]];

			if (m->idx == spi || m->info.connected_slaves <= sr->connected_slaves ||
			    m->info.offset <= sr->offset ||
			    !strcmp(m->info.master_replid, sr->master_replid))
				continue;
			if (pick != spi && m->info.offset <= c->nodes[pick].info.offset)
				continue;
			pick = m->idx;
			snprintf(why, whylen,
				 "a master with a newer history than the recorded primary %s "
				 "(offset %lld, %d replica(s); it has %lld, %d)",
				 c->nodes[spi].id, m->info.offset, m->info.connected_slaves,
				 sr->offset, sr->connected_slaves);
		}
	} else if (nm == 1) {
		pick = masters[0];
		snprintf(why, whylen, "the only master among the reachable nodes");
	} else if (nm > 1) {
		/* Most replicas connected, then the highest offset; a tie is left to the operator.
		 */
		int best = -1, tie = 0;

		for (int i = 0; i < nm; i++) {
			const struct fo_node *n = &c->nodes[masters[i]];
			const struct fo_node *b = best >= 0 ? &c->nodes[best] : NULL;

			if (!b || n->info.connected_slaves > b->info.connected_slaves ||
			    (n->info.connected_slaves == b->info.connected_slaves &&
			     n->info.offset > b->info.offset)) {
				best = n->idx;
				tie = 0;
			} else if (n->info.connected_slaves == b->info.connected_slaves &&
				   n->info.offset == b->info.offset) {
				tie = 1;
			}
		}
		if (!tie) {
			pick = best;
			snprintf(why, whylen, "most replicas and highest offset of %d masters", nm);
		}
	} else if (spi < 0) {
		/* No master answers: the one the replicas follow. */
		for (int i = 0; i < s->nnodes && pick < 0; i++) {
			const struct fo_node *n = &c->nodes[s->nodes[i]], *m;

			if (!n->info_ok || n->info.role != INFO_ROLE_SLAVE)
				continue;
			m = fo_node_by_addr(c, n->info.master_host, n->info.master_port);
			if (m && m->shard == s->idx && !(m->flags & FO_N_UNPROMOTABLE))
				pick = m->idx;
		}
		if (pick >= 0)
			snprintf(why, whylen, "followed by the replicas (not reachable)");
	}
	return pick;
}
