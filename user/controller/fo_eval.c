// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The evaluator, the failover core's entry: reports, agent connections, the
 * servers' replies and the TILT tick are applied to the model here. Each node's
 * flags from its verdict (said only when they change), each shard's primary
 * checked in state NONE (ODOWN, a failover started through the state machine),
 * repairs outside a failover (an old primary back as a master, stray replicas),
 * and TILT entered and left. It asks the rules (fo_rules.c) and drives the machine
 * (fo_machine.c), which never call back up. */
#include <stdio.h>
#include <string.h>
#include "controller/fo_internal.h"
#include "controller/lease_wait.h"

/* Applies the verdict to n's flags; says only the changes. */
static void update_node(struct fo_cluster *c, struct fo_node *n, long long now)
{
	enum fo_verdict v = fo_judge(c, n, now);
	unsigned old = n->flags, nf = old & ~(FO_N_PROC_DOWN | FO_N_PROC_HUNG | FO_N_HOST_DOWN |
					      FO_N_AGENT_LOST | FO_N_SDOWN);

	switch (v) {
	case FO_V_PROC_DOWN:
		nf |= FO_N_PROC_DOWN | FO_N_SDOWN;
		break;
	case FO_V_PROC_HUNG:
		nf |= FO_N_PROC_HUNG | FO_N_SDOWN;
		break;
	case FO_V_HOST_DOWN:
		nf |= FO_N_HOST_DOWN | FO_N_SDOWN;
		break;
	case FO_V_AGENT_LOST:
		nf |= FO_N_AGENT_LOST;
		break;
	default:
		break;
	}
	if (nf == old)
		goto ping;
	n->flags = nf;
	if ((nf & FO_N_PROC_DOWN) && !(old & FO_N_PROC_DOWN))
		n->down_since_ms = now;
	if ((nf & FO_N_PROC_HUNG) && !(old & FO_N_PROC_HUNG))
		n->hung_since_ms = now;
	if ((nf & FO_N_HOST_DOWN) && !(old & FO_N_HOST_DOWN))
		n->host_down_since_ms = now;
	if ((nf & FO_N_AGENT_LOST) && !(old & FO_N_AGENT_LOST)) {
		n->agent_lost_since_ms = now;
		n->ping_ms = 0;
		fo_say_agent_lost(c, n, now);
	} else if (!(nf & FO_N_AGENT_LOST) && (old & FO_N_AGENT_LOST)) {
		fo_say_agent_back(c, n, now);
	}
	if ((nf & FO_N_SDOWN) && !(old & FO_N_SDOWN)) {
		n->sdown_since_ms = now;
		fo_say_node_down(c, n, v, now);
	} else if (!(nf & FO_N_SDOWN) && (old & FO_N_SDOWN)) {
		fo_say_node_up(c, n, now);
	}
ping:
	/* The agent is lost but peers reach the host: see for ourselves. */
	if ((n->flags & FO_N_AGENT_LOST) && c->ops && c->ops->ping &&
	    (!n->ping_ms || now - n->ping_ms >= FO_PING_EVERY_MS)) {
		n->ping_ms = now;
		c->ops->ping(c->ctx, n->idx, c->info_timeout_ms);
	}
}

void fo_on_reach(struct fo_cluster *c, struct fo_node *n, bool ok)
{
	long long now = fo_now(c);

	if (n->flags & FO_N_REMOVED)
		return; /* an answer for a node removed at runtime meanwhile */
	if (ok == !(n->flags & FO_N_UNREACH))
		return;
	if (!ok) {
		n->flags |= FO_N_UNREACH;
		n->unreach_since_ms = now;
	} else {
		n->flags &= ~FO_N_UNREACH;
	}
	fo_say_reach(c, n, ok, now);
}

/* ------------------------------------------------------------------------- */
/* Repairs outside a failover */

/* A repair sent longer ago than its request's timeout allows and still unanswered:
 * the REPLICAOF never went out (withheld while this controller may not act: HA, the
 * leader between keep-alives) or its answer is lost. Without this the node would
 * never be repaired again. */
static bool fix_lost(const struct fo_cluster *c, const struct fo_node *n, long long now)
{
	return n->fix_ms && now - n->fix_ms > (long long)c->repoint_timeout_ms + FO_FIX_COOLDOWN_MS;
}

static void repair_shard(struct fo_cluster *c, struct fo_shard *s, long long now)
{
	struct fo_node *p = &c->nodes[s->primary];

	if (p->flags & FO_N_SDOWN)
		return;
	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];
		const struct info_repl *r = fo_latest(n);
		bool report = r == &n->rep.repl;
		enum fo_fix kind;

		if ((n->flags & FO_N_FIXING) && fix_lost(c, n, now)) {
			/* Withheld (the leader between keep-alives) or lost: nothing
			 * answers it, so it fails here and is sent again. */
			n->flags &= ~FO_N_FIXING; /* its cooldown is over too */
			fo_say_repair(c, s, n, p, false, "no answer in time (not sent or lost)");
		}
		if (n == p || !r || (n->flags & (FO_N_FIXING | FO_N_SDOWN)))
			continue;
		if (report && (!fo_fresh(c, n, now) || n->rep.proc != FO_PROC_UP))
			continue;
		if (r->role == INFO_ROLE_SLAVE && (n->flags & FO_N_ROGUE)) {
			/* A master we did not demote is a replica now: its agent did it
			 * (docs/security.md, TLS). Said as our own demotion is. */
			n->flags &= ~FO_N_ROGUE;
			if (fo_follows(r, p))
				fo_say_self_demoted(c, s, n, p);
		}
		if (r->role == INFO_ROLE_MASTER)
			kind =
			    FO_FIX_DEMOTE; /* before anything else: it may have restarted empty */
		else if (r->role == INFO_ROLE_SLAVE && !fo_follows(r, p))
			kind = FO_FIX_REPOINT;
		else
			continue;
		if (n->fix_ms && now - n->fix_ms < FO_FIX_COOLDOWN_MS)
			continue; /* (a report sent before our REPLICAOF still says master) */
		if (kind == FO_FIX_DEMOTE)
			n->flags |= FO_N_ROGUE;
		n->flags |= FO_N_FIXING;
		n->fix_kind = kind;
		n->fix_ms = now;
		c->ops->replicaof(c->ctx, n->idx, p->idx, c->repoint_timeout_ms);
	}
}

static void repair_reply(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err)
{
	struct fo_shard *s = fo_shard_of(c, n);
	struct fo_node *p = s && s->primary >= 0 ? &c->nodes[s->primary] : NULL;
	struct info_repl *ri = &n->info;

	if (!(n->flags & FO_N_FIXING))
		return;
	n->flags &= ~FO_N_FIXING;
	n->fix_ms = fo_now(c);
	if (ok)
		n->flags &= ~FO_N_ROGUE; /* demoted (or repointed) by us: said so here */
	fo_say_repair(c, s, n, p, ok, err);
	/* Until its next report says otherwise, it follows p. */
	if (!ok || !p || (!n->info_ok && !(n->flags & FO_N_REPORTED)))
		return;
	if (!n->info_ok)
		*ri = n->rep.repl;
	ri->role = INFO_ROLE_SLAVE;
	snprintf(ri->master_host, sizeof(ri->master_host), "%s", p->host);
	ri->master_port = p->port;
	n->info_ok = 1;
	n->info_ms = fo_now(c);
}

/* ------------------------------------------------------------------------- */
/* Evaluation */

/* The primary is up: ODOWN lifted, a return without a failover checked, repairs. */
static void primary_up(struct fo_cluster *c, struct fo_shard *s, long long now)
{
	struct fo_node *p = &c->nodes[s->primary];
	char why[160];

	if (s->flags & FO_S_ODOWN) {
		s->flags &= ~FO_S_ODOWN;
		fo_say_odown(c, s, false);
	}
	if (s->flags & FO_S_PRIMARY_DIED) {
		const struct info_repl *pr = fo_latest(p);
		int b = fo_restarted_empty(c, s);

		if (c->tilt || c->starting)
			return; /* observe only; and no repair before this is settled */
		if (b >= 0 && !(s->flags & FO_S_NO_GOOD_REPLICA)) {
			fo_say_restarted_empty(c, s, &c->nodes[b]);
			s->flags |= FO_S_EMPTY_RESTART;
			fo_start(c, s, false, -1, "primary_restarted_empty", why, sizeof(why));
			return;
		}
		if (pr && pr->role == INFO_ROLE_MASTER && pr->offset >= 0 && pr->master_replid[0])
			s->flags &=
			    ~(FO_S_PRIMARY_DIED | FO_S_EMPTY_RESTART); /* its history holds */
	}
	if (!c->tilt && !c->starting && !c->shadow && !s->cluster) /* a cluster repairs itself */
		repair_shard(c, s, now);
}

/* The failover is decided: has the old primary's write lease run out (lease_wait.h)?
 * While it runs, REPORT answers name nobody (fo_answer_primary), and the wait is logged
 * once (lease_wait), its reason as failover_blocked. */
static bool lease_run_out(struct fo_cluster *c, struct fo_shard *s, struct fo_node *p,
			  enum fo_verdict v, long long now)
{
	const struct fo_node *blocker;
	long long end = fo_lease_end_ms(c, s, p, v, &blocker);
	char why[160];

	if (end <= now) {
		s->lease_waited_ms = s->lease_wait_since_ms ? now - s->lease_wait_since_ms : 0;
		s->lease_wait_since_ms = 0;
		return true;
	}
	if (!s->lease_wait_since_ms) {
		s->lease_wait_since_ms = now;
		fo_say_lease_wait(c, s, blocker, blocker ? -1 : end - now);
	}
	fo_lease_wait_why(p, blocker, why, sizeof(why));
	if (strcmp(why, s->blocked_why)) {
		snprintf(s->blocked_why, sizeof(s->blocked_why), "%s", why);
		fo_say_failover_blocked(c, s, why);
	}
	return false;
}

/* The primary of s in state NONE: ODOWN, failover start, repairs. */
static void check_shard(struct fo_cluster *c, struct fo_shard *s, long long now)
{
	struct fo_node *p;
	enum fo_verdict v;
	char why[160], reason[64];

	if (s->primary < 0 || s->fo.state != FO_ST_NONE)
		return;
	if ((c->shadow || s->cluster) && fo_shadow_follow(c, s, now))
		return; /* the servers (or the cluster's election) named another primary */
	p = &c->nodes[s->primary];
	v = fo_judge(c, p, now);
	if (!(p->flags & FO_N_SDOWN)) {
		s->lease_wait_since_ms = 0; /* back before its lease ran out: no failover */
		s->retry_select_ms = 0;
		s->retry_select_wait_ms = 0;
		primary_up(c, s, now);
		return;
	}
	s->flags |= FO_S_PRIMARY_DIED;
	if (!(s->flags & FO_S_ODOWN)) {
		s->flags |= FO_S_ODOWN;
		fo_say_odown(c, s, true);
	}
	if (s->flags & (FO_S_NO_GOOD_REPLICA | FO_S_SHADOWED) || c->starting)
		return; /* retried when a report changes; nothing before the topology is known */
	if (s->retry_select_ms && now < s->retry_select_ms)
		return; /* candidates that did not answer in time: asked again after a wait */
	if (!fo_may_failover(c, s, v, false, why, sizeof(why))) {
		s->lease_wait_since_ms = 0;
		if (strcmp(why, s->blocked_why)) {
			snprintf(s->blocked_why, sizeof(s->blocked_why), "%s", why);
			fo_say_failover_blocked(c, s, why);
		}
		return;
	}
	if (!lease_run_out(c, s, p, v, now))
		return;
	s->blocked_why[0] = '\0';
	fo_start(c, s, false, -1, fo_down_reason(p, v, reason, sizeof(reason)), why, sizeof(why));
	s->lease_waited_ms = 0;
}

void fo_evaluate(struct fo_cluster *c)
{
	long long now = fo_now(c);

	for (int i = 0; i < c->nnodes; i++)
		if (!(c->nodes[i].flags & FO_N_REMOVED))
			update_node(c, &c->nodes[i], now);
	for (int i = 0; i < c->nshards; i++)
		if (!c->shards[i].removed)
			check_shard(c, &c->shards[i], now);
}

static void evaluate_shard(struct fo_cluster *c, struct fo_shard *s, long long now)
{
	for (int i = 0; i < s->nnodes; i++)
		update_node(c, &c->nodes[s->nodes[i]], now);
	check_shard(c, s, now);
}

void fo_evaluate_node(struct fo_cluster *c, struct fo_node *n)
{
	struct fo_shard *s = fo_shard_of(c, n);
	long long now = fo_now(c);

	if (n->flags & FO_N_REMOVED)
		return;
	if (s)
		evaluate_shard(c, s, now);
	else
		update_node(c, n, now);
}

/* The nodes whose verdict from n changed between reports a and b (at most
 * 2 * FO_MAX_PEERS): their shards are judged again too, since a peer's word decides
 * a node whose own heartbeat is stale (the host path). */
static int peers_touched(const struct fo_report *a, const struct fo_report *b, int *out)
{
	int n = 0;

	for (int i = 0; i < a->npeers; i++)
		if (fo_report_peer(b, a->peer_node[i]) != a->peer_v[i])
			out[n++] = a->peer_node[i];
	for (int i = 0; i < b->npeers; i++)
		if (fo_report_peer(a, b->peer_node[i]) != b->peer_v[i] &&
		    fo_report_peer(a, b->peer_node[i]) == FO_PEER_UNKNOWN)
			out[n++] = b->peer_node[i];
	return n;
}

void fo_on_report(struct fo_cluster *c, struct fo_node *n, const struct fo_report *rep)
{
	struct fo_shard *s = fo_shard_of(c, n);
	long long now = fo_now(c);
	bool changed = !(n->flags & FO_N_REPORTED) || fo_report_changed(&n->rep, rep);
	int touched[2 * FO_MAX_PEERS] = {0}, ntouched = 0;
	static const struct fo_report none; /* not 1.8 KB zeroed per report */
	bool busy = rep->proc == FO_PROC_BUSY &&
		    (!(n->flags & FO_N_REPORTED) || n->rep.proc != FO_PROC_BUSY);

	if (n->flags & FO_N_REMOVED)
		return;

	if (rep->npeers || n->rep.npeers)
		ntouched =
		    peers_touched((n->flags & FO_N_REPORTED) ? &n->rep : &none, rep, touched);

	fo_lease_note_report(c, n, rep, now);
	fo_report_copy(&n->rep, rep);
	n->last_report_ms = now;
	n->flags |= FO_N_REPORTED;
	if (s && s->primary >= 0) {
		struct fo_node *p = &c->nodes[s->primary];

		if (rep->repl.link_up == 1 && fo_follows(&rep->repl, p))
			n->link_up_ms = now;
		if (n == p && rep->repl.role == INFO_ROLE_MASTER && rep->repl.master_replid[0] &&
		    !(s->flags & FO_S_PRIMARY_DIED)) /* keep the history it had before dying */
			snprintf(s->primary_replid, sizeof(s->primary_replid), "%s",
				 rep->repl.master_replid);
	}
	/* A change may turn "no good replica" into a good one: in this shard, or in a
	 * shard whose node this report now judges otherwise. */
	if (changed && s)
		s->flags &= ~FO_S_NO_GOOD_REPLICA;
	fo_evaluate_node(c, n);
	for (int i = 0; i < ntouched; i++) {
		struct fo_node *p = &c->nodes[touched[i]];
		struct fo_shard *ps = fo_shard_of(c, p);
		bool done = p->shard == n->shard && ps;

		for (int j = 0; j < i && !done; j++)
			done = ps && c->nodes[touched[j]].shard == p->shard;
		if (done)
			continue; /* that shard was judged already */
		if (ps)
			ps->flags &= ~FO_S_NO_GOOD_REPLICA;
		fo_evaluate_node(c, p);
	}
	if (busy)
		fo_say_node_busy(c, n);
}

void fo_on_agent(struct fo_cluster *c, struct fo_node *n, bool connected)
{
	if (connected)
		n->flags |= FO_N_AGENT;
	else
		n->flags &= ~FO_N_AGENT;
	fo_evaluate_node(c, n);
}

/* ------------------------------------------------------------------------- */
/* Replies from the I/O layer: what they say of the node, then the machine's part */

void fo_on_info(struct fo_cluster *c, struct fo_node *n, bool ok, const struct info_repl *info,
		const char *err)
{
	struct fo_shard *s = fo_shard_of(c, n);

	if (n->flags & FO_N_REMOVED)
		return; /* an answer for a node removed at runtime meanwhile */
	(void)err;
	if (ok) {
		n->info = *info;
		n->info_ok = 1;
		n->info_ms = fo_now(c);
		if (s && s->primary == n->idx && info->role == INFO_ROLE_MASTER &&
		    info->master_replid[0] && !(s->flags & FO_S_PRIMARY_DIED))
			snprintf(s->primary_replid, sizeof(s->primary_replid), "%s",
				 info->master_replid);
		if (s && s->primary >= 0 && info->link_up == 1 &&
		    fo_follows(info, &c->nodes[s->primary]))
			n->link_up_ms = n->info_ms;
	}
	fo_on_reach(c, n, ok);
	if (s)
		fo_machine_info(c, s, n, ok);
}

void fo_on_replicaof(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err)
{
	struct fo_shard *s = fo_shard_of(c, n);

	if (!s || !fo_machine_replicaof(c, s, n, ok, err))
		repair_reply(c, n, ok, err);
}

/* ------------------------------------------------------------------------- */
/* TILT: the rule judges the tick (fo_tilt_judge), this applies it */

bool fo_tilt_tick(struct fo_cluster *c)
{
	long long mono = c->now_ms(c->ctx), wall = c->wall_ms(c->ctx), stall, jump;
	enum fo_tilt_step step = fo_tilt_judge(c, mono, wall, &stall, &jump);

	c->last_tick_mono_ms = mono;
	c->last_tick_wall_ms = wall;
	switch (step) {
	case FO_TILT_ENTER:
		c->tilt_since_ms = mono;
		/* fall through */
	case FO_TILT_AGAIN:
		fo_say_tilt_start(c, stall, jump, step == FO_TILT_ENTER);
		c->tilt = true;
		c->tilt_until_ms = mono + c->tilt_ms;
		return true;
	case FO_TILT_LEAVE:
		c->tilt = false;
		fo_say_tilt_end(c, mono - c->tilt_since_ms);
		fo_evaluate(c);
		return false;
	case FO_TILT_STAY:
		return true;
	default:
		return false;
	}
}
