// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The wait for the old primary's write lease: see lease_wait.h. */
#include <stdio.h>
#include "controller/lease_wait.h"
#include "controller/lease_admit.h"

static long long span_of(long long ms)
{
	return ms + ms / FO_LEASE_DRIFT_DIV + 1;
}

long long fo_lease_span_ms(const struct fo_cluster *c)
{
	return span_of(c->lease_ms);
}

int fo_node_lease_ms(const struct fo_cluster *c, const struct fo_node *n, long long now)
{
	int ms = c->lease_ms;

	/* Its agent's own length when it said it, else the longest the file has had. */
	if ((n->flags & FO_N_REPORTED) && n->rep.lease_len_ms >= 0) {
		if (n->rep.lease_len_ms > ms)
			ms = n->rep.lease_len_ms;
	} else if (c->lease_ms_max > ms) {
		ms = c->lease_ms_max;
	}
	if (n->lease_hold_ms > ms && now < n->lease_hold_until_ms)
		ms = n->lease_hold_ms;
	return ms;
}

void fo_lease_note_report(struct fo_cluster *c, struct fo_node *n, const struct fo_report *rep,
			  long long now)
{
	int was = (n->flags & FO_N_REPORTED) ? n->rep.lease_len_ms : -1;

	(void)c;
	/* Shorter than before (or no longer said): a lease the agent took under the old
	 * length, at the latest when it sent this report, lasts until now + that span. */
	if (was > 0 && rep->lease_len_ms < was) {
		long long until = now + span_of(was);

		if (was >= n->lease_hold_ms || now >= n->lease_hold_until_ms) {
			n->lease_hold_ms = was;
			n->lease_hold_until_ms = until;
		}
	}
}

static bool fresh(const struct fo_cluster *c, const struct fo_node *n, long long now)
{
	return (n->flags & FO_N_REPORTED) && now - n->last_report_ms <= fo_fresh_ms(c, n);
}

long long fo_lease_end_ms(const struct fo_cluster *c, const struct fo_shard *s,
			  const struct fo_node *p, enum fo_verdict v,
			  const struct fo_node **blocker)
{
	long long now = c->now_ms(c->ctx), end = 0;
	int lease_ms = fo_node_lease_ms(c, p, now);
	long long span = span_of(lease_ms);

	*blocker = NULL;
	/* Shadow mode: no agent runs a write lease (parked, or disarmed in the kernel with
	 * the answer that said shadow) and nothing is promoted, so the judgement is active
	 * mode's with the lease off. The rules below would wait for a lease none holds:
	 * for a hung server on a live host, for ever (its peers still hear it). Leaving
	 * shadow mode is refused while a failover runs and forgets a would_failover
	 * (fo_shadow_set): an active controller judges again, with the whole wait. */
	if (!lease_ms || v == FO_V_PROC_DOWN || c->shadow)
		return 0;
	/* Revoked, and nothing heard from p since: its kernel deadline was 0 before it sent
	 * that report, no answer to it or to an earlier one renews it, nor a peer, and this
	 * controller names p in no answer while it says so (fo_answer_primary). Only another
	 * controller (the HA leader before this one, or this one's previous process) may
	 * have granted it from a later report: before this one acted, so within a span of
	 * that. A report that went stale counts as lapsed (the agent may have said more). */
	if ((p->flags & FO_N_REPORTED) && p->rep.lease == FO_LEASE_REVOKED && fresh(c, p, now))
		return c->others_answered_until_ms + span > now ? c->others_answered_until_ms + span
								: 0;
	/* Its agent has a lease length but runs no lease (still parked from shadow mode:
	 * not armed yet after the switch to active), or runs one that guards nothing yet (its
	 * server's sockets unmarked: an agent just started beside a server that does not
	 * answer): nothing fences its replies, so no wait ends it; it is blocked until the
	 * agent says more. */
	if ((p->flags & FO_N_REPORTED) &&
	    ((p->rep.lease == FO_LEASE_UNKNOWN && p->rep.lease_len_ms > 0) ||
	     p->rep.lease == FO_LEASE_UNGUARDED)) {
		*blocker = p;
		return FO_LEASE_NEVER;
	}
	if (p->named_primary_ms)
		end = p->named_primary_ms + span;
	/* Another controller's answers (a deposed leader's, a previous process's), whatever
	 * lease_ms: each went out before this one could act, so renewed until at most then
	 * + the span. */
	if (c->others_answered_until_ms && c->others_answered_until_ms + span > end)
		end = c->others_answered_until_ms + span;
	/* Given up (hung, or anything that made it say lapsed): peers cannot revive it.
	 * Unless an answer named it primary since that report (the answer to it, say: an
	 * agent that had not taken its lease yet): an answer takes a lapsed lease again
	 * (agent/lease.c), and from then on the peers' echoes keep it, with no later
	 * report to say so if p was cut off from here right then. Revoked: no answer
	 * names it while it says so (fo_answer_primary). */
	if ((p->flags & FO_N_REPORTED) &&
	    (p->rep.lease == FO_LEASE_REVOKED ||
	     (p->rep.lease == FO_LEASE_LAPSED && p->named_primary_ms < p->last_report_ms)))
		return end;
	/* A peer removed at runtime that p's agent still probes (its last report names
	 * it, or named it before the removal): the agent, started with it, still takes
	 * its echo replies, and it reports to no controller now: no bound. */
	for (int i = 0; i < p->rep.npeers + p->rep.nremoved; i++) {
		int k = i < p->rep.npeers ? p->rep.peer_node[i]
					  : p->rep.removed_node[i - p->rep.npeers];

		if ((p->flags & FO_N_REPORTED) && k >= 0 && k < c->nnodes &&
		    (c->nodes[k].flags & FO_N_REMOVED)) {
			if (fo_admit_confirmed(c, p, &c->nodes[k])) {
				/* Left out of p's grants, and p said so: see below. */
				if (p->last_report_ms + span > end)
					end = p->last_report_ms + span;
				continue;
			}
			*blocker = &c->nodes[k];
			return FO_LEASE_NEVER;
		}
	}
	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *q = &c->nodes[s->nodes[i]];
		long long t;

		if (q == p)
			continue;
		/* Declared down or lost, left out of p's grants, and p's agent said it runs
		 * with such a grant (lease_admit.h): it counted no echo of q since it sent
		 * its last report, so q renewed p's lease until that report at the latest,
		 * however silent q is now. */
		if (fo_admit_confirmed(c, p, q)) {
			if (p->last_report_ms + span > end)
				end = p->last_report_ms + span;
			continue;
		}
		if (!fresh(c, q, now)) {
			*blocker = q;
			return FO_LEASE_NEVER;
		}
		if (fo_report_peer_age(&q->rep, p->idx) < 0)
			continue; /* nothing ever came from p: no echo of p was answered */
		t = q->last_report_ms - fo_report_peer_age(&q->rep, p->idx) + span;
		if (t > q->last_report_ms) {
			/* The lease could still run through q when q last reported (and
			 * q may answer p's echoes since): no bound until q reports again
			 * after t, however long down-after lets q stay "fresh". */
			*blocker = q;
			return FO_LEASE_NEVER;
		}
		if (t > end)
			end = t;
	}
	return end;
}

const char *fo_answer_primary(struct fo_cluster *c, struct fo_shard *s, const struct fo_node *n,
			      long long now)
{
	struct fo_node *p;

	if (!s || s->primary < 0 || s->fo.state != FO_ST_NONE || s->lease_wait_since_ms)
		return "";
	p = &c->nodes[s->primary];
	if (n == p && (p->flags & FO_N_REPORTED) && p->rep.lease == FO_LEASE_REVOKED)
		return ""; /* no grant while it says revoked: the wait relies on it */
	if (n == p)
		p->named_primary_ms = now;
	return p->id;
}

void fo_lease_wait_why(const struct fo_node *p, const struct fo_node *blocker, char *why,
		       size_t len)
{
	if (blocker == p && p->rep.lease == FO_LEASE_UNGUARDED)
		snprintf(why, len,
			 "%s's agent has not marked its server's sockets yet (no pid: the "
			 "server has not answered since the agent started): its replies are "
			 "not fenced",
			 p->id);
	else if (blocker == p)
		snprintf(why, len,
			 "%s's agent runs no write lease (parked or not armed yet): its "
			 "replies are not fenced",
			 p->id);
	else if (blocker)
		snprintf(why, len,
			 "%s's write lease: peer %s is silent and may still renew it "
			 "(no report from it since the lease could last run through it)",
			 p->id, blocker->id);
	else
		snprintf(why, len, "waiting for %s's write lease to run out", p->id);
}

const char *fo_lease_word(const struct fo_node *n)
{
	if (!(n->flags & FO_N_REPORTED))
		return "-";
	return n->rep.lease == FO_LEASE_HELD	    ? "held"
	       : n->rep.lease == FO_LEASE_LAPSED    ? "lapsed"
	       : n->rep.lease == FO_LEASE_REVOKED   ? "revoked"
	       : n->rep.lease == FO_LEASE_UNGUARDED ? "unguarded"
						    : "-";
}
