// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failover's wording: protocol words, event records (docs/controller.md),
 * Sentinel's pub/sub messages and the failover timeline's steps. The decisions
 * (fo_rules.c, fo_eval.c, fo_machine.c) call these once a state has changed. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "common/report_keys.h"
#include "controller/fo_internal.h"
#include "controller/lease_wait.h"

/* ------------------------------------------------------------------------- */
/* Protocol words */

enum fo_proc fo_proc_parse(const char *s)
{
	return (enum fo_proc)report_proc_parse(s);
}

const char *fo_proc_name(enum fo_proc p)
{
	return report_proc_word(p);
}

const char *fo_verdict_name(enum fo_verdict v)
{
	static const char *const names[] = {"unknown",	 "ok",	      "proc_down",
					    "proc_hung", "host_down", "agent_lost"};

	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}

const char *fo_state_name(enum fo_state s)
{
	static const char *const names[FO_ST_COUNT] = {
	    "none", "select_replica", "pause_writes", "wait_offset", "promote", "repoint"};

	return (unsigned)s < FO_ST_COUNT ? names[s] : "?";
}

void fo_instance_str(const struct fo_cluster *c, const struct fo_node *n, char *buf, size_t len)
{
	char hp[300];
	const struct fo_shard *s = n->shard >= 0 ? &c->shards[n->shard] : NULL;
	const struct fo_node *m = s && s->primary >= 0 ? &c->nodes[s->primary] : NULL;

	if (!s)
		snprintf(buf, len, "node %s %s %d", n->id, n->host, n->port);
	else if (m == n || !m)
		snprintf(buf, len, "master %s %s %d", s->name, n->host, n->port);
	else
		/* A replica's name is its address as anetFormatAddr writes it: [v6]:port. */
		snprintf(buf, len, "slave %s %s %d @ %s %s %d",
			 cfg_hostport(hp, sizeof(hp), n->host, n->port), n->host, n->port, s->name,
			 m->host, m->port);
}

/* A replica as Sentinel names it while it belongs to the master at node m (during a
 * failover, the old one): "slave <ip>:<port> <ip> <port> @ <name> <mip> <mport>". */
static void slave_str(const struct fo_cluster *c, const struct fo_shard *s, const struct fo_node *n,
		      int m, char *buf, size_t len)
{
	const struct fo_node *mn = m >= 0 ? &c->nodes[m] : NULL;

	if (snprintf(buf, len, "slave %s:%d %s %d @ %s %s %d", n->host, n->port, n->host, n->port,
		     s->name, mn ? mn->host : "?", mn ? mn->port : 0) < 0)
		buf[0] = '\0';
}

void fo_master_str(const struct fo_cluster *c, const struct fo_shard *s, int node, char *buf,
		   size_t len)
{
	const struct fo_node *m = node >= 0 ? &c->nodes[node] : NULL;

	snprintf(buf, len, "master %s %s %d", s->name, m ? m->host : "?", m ? m->port : 0);
}

const char *fo_down_reason(const struct fo_node *n, enum fo_verdict v, char *buf, size_t len)
{
	switch (v) {
	case FO_V_PROC_DOWN:
		if (!strcmp(n->rep.exit, "oom"))
			snprintf(buf, len, "oom_kill");
		else
			snprintf(buf, len, "proc_exit%s%s", n->rep.exit[0] ? " " : "", n->rep.exit);
		break;
	case FO_V_PROC_HUNG:
		/* With the scheduler's cause: "proc_hung stopped". */
		snprintf(buf, len, "proc_hung%s%.16s", n->rep.cause[0] ? " " : "", n->rep.cause);
		break;
	case FO_V_HOST_DOWN:
		snprintf(buf, len, "host_down");
		break;
	default:
		snprintf(buf, len, "%s", fo_verdict_name(v));
	}
	return buf;
}

void fo_list_add(char *buf, size_t len, size_t *off, const char *id)
{
	if (*off < len)
		*off += snprintf(buf + *off, len - *off, "%s%s", *off ? " " : "", id);
}

/* id is a word of the space-separated list. */
static bool list_has(const char *list, const char *id)
{
	size_t len = strlen(id);

	for (const char *p = list; (p = strstr(p, id)); p += len)
		if ((p == list || p[-1] == ' ') && (p[len] == ' ' || !p[len]))
			return true;
	return false;
}

/* A node that said master made a replica of the shard's primary: Sentinel's
 * mismatch (-role-change) and its fix (+convert-to-slave). */
static void say_converted(struct fo_cluster *c, const char *inst)
{
	fo_publish(c, "-role-change", "%s new reported role is master", inst);
	fo_publish(c, "+convert-to-slave", "%s", inst);
}

static bool peer_says(const struct fo_node *p, const struct fo_node *n, enum fo_peer what)
{
	return p != n && p->shard == n->shard && (p->flags & FO_N_REPORTED) &&
	       fo_report_peer(&p->rep, n->idx) == what;
}

/* The nodes of n's shard whose last report says what of n, in node order. Only
 * the shard's own nodes are asked (the list names no other), not every node of
 * the cluster: a storm of late heartbeats at thousands of nodes says agent_lost
 * for each. */
static void peers_saying(const struct fo_cluster *c, const struct fo_node *n, enum fo_peer what,
			 char *buf, size_t len)
{
	const struct fo_shard *s = n->shard >= 0 ? &c->shards[n->shard] : NULL;
	int m[FO_MAX_SHARD_NODES], nm = 0;
	size_t off = 0;

	buf[0] = '\0';
	if (!s || s->nnodes > FO_MAX_SHARD_NODES) {
		for (int i = 0; i < c->nnodes; i++)
			if (peer_says(&c->nodes[i], n, what))
				fo_list_add(buf, len, &off, c->nodes[i].id);
		return;
	}
	for (int i = 0; i < s->nnodes; i++) {
		int j = nm, x = s->nodes[i];

		if (!peer_says(&c->nodes[x], n, what))
			continue;
		for (; j > 0 && m[j - 1] > x; j--) /* in node order, as the whole scan was */
			m[j] = m[j - 1];
		m[j] = x;
		nm++;
	}
	for (int i = 0; i < nm; i++)
		fo_list_add(buf, len, &off, c->nodes[m[i]].id);
}

/* ------------------------------------------------------------------------- */
/* Events, messages, steps */

void fo_ev_begin(struct fo_event *e, const char *kind, const struct fo_shard *s)
{
	e->kind = kind;
	evrec_begin(&e->r, NULL, "controller", kind);
	if (s) {
		evrec_str(&e->r, "shard", s->name);
		evrec_uint(&e->r, "epoch", s->epoch);
	}
}

void fo_emit(struct fo_cluster *c, struct fo_event *e)
{
	if (c->ops && c->ops->event)
		c->ops->event(c->ctx, e->kind, &e->r);
}

void fo_publish(struct fo_cluster *c, const char *channel, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!c->ops || !c->ops->publish)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->ops->publish(c->ctx, channel, msg);
}

void fo_step(struct fo_cluster *c, struct fo_shard *s, const char *fmt, ...)
{
	struct fo_failover *f = &s->fo;
	struct fo_step *st;
	va_list ap;

	if (f->nsteps >= FO_TIMELINE_MAX)
		return;
	st = &f->steps[f->nsteps++];
	st->at_ms = fo_now(c) - f->start_ms;
	va_start(ap, fmt);
	vsnprintf(st->text, sizeof(st->text), fmt, ap);
	va_end(ap);
}

/* An event about one node: kind, shard, epoch, instance. */
static void node_event(struct fo_event *e, struct fo_cluster *c, const char *kind,
		       const struct fo_node *n)
{
	fo_ev_begin(e, kind, fo_shard_of(c, n));
	evrec_str(&e->r, "instance", n->id);
}

/* A command to node n failed: "<kind>" with the reason (and a timeline step
 * while a failover runs). */
static void node_failed(struct fo_cluster *c, const char *kind, struct fo_node *n, const char *err,
			bool step)
{
	struct fo_event e;

	node_event(&e, c, kind, n);
	evrec_str(&e.r, "reason", err ? err : "?");
	fo_emit(c, &e);
	if (step)
		fo_step(c, fo_shard_of(c, n), "%s %s: %s", kind, n->id, err ? err : "?");
}

/* ------------------------------------------------------------------------- */
/* Node conditions */

void fo_say_agent_lost(struct fo_cluster *c, struct fo_node *n, long long now)
{
	char inst[400], peers[256];
	struct fo_event e;

	peers_saying(c, n, FO_PEER_UP, peers, sizeof(peers));
	node_event(&e, c, "agent_lost", n);
	evrec_int(&e.r, "heartbeat_age_ms", now - n->last_report_ms);
	evrec_str(&e.r, "peers_up", peers);
	evrec_str(&e.r, "reason",
		  peers[0] ? "stale heartbeat, peers still reach the host"
			   : "stale heartbeat, no peer confirms");
	fo_emit(c, &e);
	fo_instance_str(c, n, inst, sizeof(inst));
	fo_publish(c, "flatline.agent_lost", "%s", inst);
}

void fo_say_agent_back(struct fo_cluster *c, struct fo_node *n, long long now)
{
	struct fo_event e;

	node_event(&e, c, "agent_back", n);
	evrec_int(&e.r, "lost_ms", now - n->agent_lost_since_ms);
	fo_emit(c, &e);
}

void fo_say_node_down(struct fo_cluster *c, struct fo_node *n, enum fo_verdict v, long long now)
{
	struct fo_shard *s = fo_shard_of(c, n);
	char inst[400], why[64], peers[256];
	struct fo_event e;

	node_event(&e, c, "node_down", n);
	evrec_str(&e.r, "role", s && s->primary == n->idx ? "primary" : "replica");
	evrec_str(&e.r, "reason", fo_down_reason(n, v, why, sizeof(why)));
	if (v == FO_V_PROC_DOWN && n->rep.exit[0])
		evrec_str(&e.r, "exit", n->rep.exit);
	if (v == FO_V_PROC_HUNG && n->rep.cause[0]) {
		evrec_str(&e.r, "cause", n->rep.cause);
		if (n->rep.thread_state[0]) {
			evrec_str(&e.r, "thread_state", n->rep.thread_state);
			evrec_int(&e.r, "state_ms", n->rep.state_ms);
			evrec_int(&e.r, "run_ms", n->rep.run_ms);
			evrec_int(&e.r, "wait_ms", n->rep.wait_ms);
			if (n->rep.throttled_ms >= 0)
				evrec_int(&e.r, "throttled_ms", n->rep.throttled_ms);
		}
	}
	if (v == FO_V_HOST_DOWN) {
		peers_saying(c, n, FO_PEER_DOWN, peers, sizeof(peers));
		evrec_str(&e.r, "peers_down", peers);
		evrec_int(&e.r, "heartbeat_age_ms", now - n->last_report_ms);
	}
	fo_emit(c, &e);
	fo_instance_str(c, n, inst, sizeof(inst));
	/* Sentinel's own messages carry extras after '#' (+odown's "#quorum"). */
	fo_publish(c, "+sdown", "%s #%s", inst, why);
}

void fo_say_node_busy(struct fo_cluster *c, struct fo_node *n)
{
	struct fo_shard *s = fo_shard_of(c, n);
	struct fo_event e;

	node_event(&e, c, "node_busy", n);
	evrec_str(&e.r, "role", s && s->primary == n->idx ? "primary" : "replica");
	if (n->rep.cause[0])
		evrec_str(&e.r, "cause", n->rep.cause);
	if (n->rep.thread_state[0]) {
		evrec_str(&e.r, "thread_state", n->rep.thread_state);
		evrec_int(&e.r, "run_ms", n->rep.run_ms);
		evrec_int(&e.r, "window_ms", n->rep.window_ms);
	}
	fo_emit(c, &e); /* published as JSON on flatline.node_busy too */
}

void fo_say_node_up(struct fo_cluster *c, struct fo_node *n, long long now)
{
	char inst[400];
	struct fo_event e;

	node_event(&e, c, "node_up", n);
	evrec_int(&e.r, "down_ms", now - n->sdown_since_ms);
	fo_emit(c, &e);
	fo_instance_str(c, n, inst, sizeof(inst));
	fo_publish(c, "-sdown", "%s", inst);
}

void fo_say_reach(struct fo_cluster *c, struct fo_node *n, bool ok, long long now)
{
	struct fo_event e;

	node_event(&e, c, ok ? "node_reachable" : "node_unreachable", n);
	evrec_str(&e.r, "by", "controller");
	if (ok)
		evrec_int(&e.r, "unreachable_ms", now - n->unreach_since_ms);
	fo_emit(c, &e);
}

void fo_say_tilt_start(struct fo_cluster *c, long long stall_ms, long long jump_ms, bool entering)
{
	struct fo_event e;

	fo_ev_begin(&e, "tilt_start", NULL);
	evrec_str(&e.r, "reason",
		  stall_ms > FO_TILT_TRIGGER_MS ? "event loop stalled" : "wall clock jumped");
	evrec_int(&e.r, "stall_ms", stall_ms);
	evrec_int(&e.r, "clock_jump_ms", jump_ms);
	evrec_int(&e.r, "tilt_ms", c->tilt_ms);
	fo_emit(c, &e);
	if (entering)
		fo_publish(c, "+tilt", "#tilt mode entered");
}

void fo_say_tilt_end(struct fo_cluster *c, long long tilt_ms)
{
	struct fo_event e;

	fo_ev_begin(&e, "tilt_end", NULL);
	evrec_int(&e.r, "tilt_ms", tilt_ms);
	fo_emit(c, &e);
	fo_publish(c, "-tilt", "#tilt mode exited");
}

/* ------------------------------------------------------------------------- */
/* Shard conditions */

void fo_say_odown(struct fo_cluster *c, struct fo_shard *s, bool odown)
{
	char m[400];

	fo_master_str(c, s, s->primary, m, sizeof(m));
	if (odown)
		fo_publish(c, "+odown", "%s #quorum 1/1", m);
	else
		fo_publish(c, "-odown", "%s", m);
}

void fo_say_failover_blocked(struct fo_cluster *c, struct fo_shard *s, const char *why)
{
	struct fo_event e;

	fo_ev_begin(&e, "failover_blocked", s);
	evrec_str(&e.r, "from", c->nodes[s->primary].id);
	evrec_str(&e.r, "reason", why);
	fo_emit(c, &e);
}

void fo_say_lease_wait(struct fo_cluster *c, struct fo_shard *s, const struct fo_node *blocker,
		       long long wait_ms)
{
	struct fo_event e;

	fo_ev_begin(&e, "lease_wait", s);
	evrec_str(&e.r, "from", c->nodes[s->primary].id);
	if (blocker)
		evrec_str(&e.r, "silent_peer", blocker->id);
	else
		evrec_int(&e.r, "wait_ms", wait_ms);
	evrec_int(&e.r, "lease_ms", fo_node_lease_ms(c, &c->nodes[s->primary], fo_now(c)));
	fo_emit(c, &e);
}

void fo_say_restarted_empty(struct fo_cluster *c, struct fo_shard *s, const struct fo_node *b)
{
	const struct fo_node *p = &c->nodes[s->primary];
	const struct info_repl *pr = fo_latest(p);
	struct fo_event e;

	fo_ev_begin(&e, "primary_restarted_empty", s);
	evrec_str(&e.r, "instance", p->id);
	evrec_int(&e.r, "offset", pr->offset);
	evrec_str(&e.r, "replid", pr->master_replid);
	evrec_str(&e.r, "replica", b->id);
	evrec_int(&e.r, "replica_offset", fo_latest(b)->offset);
	evrec_str(&e.r, "reason",
		  "another, shorter history than its replicas: "
		  "following it would wipe them");
	fo_emit(c, &e);
}

void fo_say_repair(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n,
		   const struct fo_node *p, bool ok, const char *err)
{
	bool demote = n->fix_kind == FO_FIX_DEMOTE;
	struct fo_event e;

	if (!ok) {
		node_failed(c, "repair_failed", n, err, false);
		return;
	}
	fo_ev_begin(&e, demote ? "old_primary_demoted" : "replica_repointed", s);
	evrec_str(&e.r, "instance", n->id);
	evrec_str(&e.r, "primary", p ? p->id : "");
	evrec_str(&e.r, "reason",
		  demote ? "reported as a master, not the shard's primary"
			 : "replicating from another server");
	fo_emit(c, &e);
	if (demote && p) {
		char inst[400];

		fo_instance_str(c, n, inst, sizeof(inst));
		say_converted(c, inst);
	}
}

/* A master that its agent made a replica of p (agent/demote.h): the agent logs
 * self_demoted; here it is old_primary_demoted and Sentinel's -role-change and
 * +convert-to-slave, as when we demote it. */
void fo_say_self_demoted(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n,
			 const struct fo_node *p)
{
	struct fo_event e;
	char inst[400];

	fo_ev_begin(&e, "old_primary_demoted", s);
	evrec_str(&e.r, "instance", n->id);
	evrec_str(&e.r, "primary", p->id);
	evrec_str(&e.r, "reason", "made a replica by its agent (self_demoted) or by hand");
	fo_emit(c, &e);
	fo_instance_str(c, n, inst, sizeof(inst));
	say_converted(c, inst);
}

void fo_say_primary_unknown(struct fo_cluster *c, struct fo_shard *s, int nmasters)
{
	struct fo_event e;

	fo_ev_begin(&e, "primary_unknown", s);
	evrec_int(&e.r, "masters", nmasters);
	evrec_str(&e.r, "reason",
		  nmasters > 1 ? "several masters, none preferable" : "no node answered");
	fo_emit(c, &e);
}

void fo_say_primary_discovered(struct fo_cluster *c, struct fo_shard *s, int spi, const char *why)
{
	struct fo_event e;

	fo_ev_begin(&e, "primary_discovered", s);
	evrec_str(&e.r, "instance", c->nodes[s->primary].id);
	evrec_str(&e.r, "state_file_primary", spi >= 0 ? c->nodes[spi].id : "");
	evrec_str(&e.r, "reason", why);
	fo_emit(c, &e);
}

void fo_say_primary_adopted(struct fo_cluster *c, struct fo_shard *s, int from)
{
	struct fo_event e;

	fo_ev_begin(&e, "primary_adopted", s);
	evrec_str(&e.r, "instance", c->nodes[s->primary].id);
	evrec_str(&e.r, "from", from >= 0 ? c->nodes[from].id : "");
	evrec_str(&e.r, "reason", "the leader's word, from etcd");
	fo_emit(c, &e);
	/* As a Sentinel that learns a new configuration from another: +switch-master. */
	if (from >= 0 && from != s->primary) {
		const struct fo_node *o = &c->nodes[from], *n = &c->nodes[s->primary];

		fo_publish(c, "+switch-master", "%s %s %d %s %d", s->name, o->host, o->port,
			   n->host, n->port);
	}
}

/* ------------------------------------------------------------------------- */
/* A failover's steps */

void fo_say_failover_start(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	const struct fo_node *p = &c->nodes[f->from];
	char m[400];
	struct fo_event e;

	fo_ev_begin(&e, "failover_start", s);
	evrec_str(&e.r, "from", p->id);
	evrec_str(&e.r, "reason", f->reason);
	evrec_bool(&e.r, "planned", f->planned);
	if (f->target >= 0)
		evrec_str(&e.r, "target", c->nodes[f->target].id);
	if (!f->planned && c->lease_ms)
		evrec_int(&e.r, "lease_wait_ms", s->lease_waited_ms);
	if (c->shadow)
		evrec_bool(&e.r, "shadow", true); /* judged only: ends in would_failover */
	fo_emit(c, &e);
	fo_step(c, s, "failover_start %s: %s%s", p->id, f->reason, f->planned ? " (planned)" : "");
	/* Sentinel's order (sentinelStartFailover, sentinelFailoverWaitStart): the
	 * epoch this failover will carry, then the attempt, its leader (the one
	 * controller, or the HA leader) and the first state. */
	fo_publish(c, "+new-epoch", "%llu", (unsigned long long)s->epoch + 1);
	fo_master_str(c, s, f->from, m, sizeof(m));
	fo_publish(c, "+try-failover", "%s", m);
	fo_publish(c, "+elected-leader", "%s", m);
	fo_publish(c, "+failover-state-select-slave", "%s", m);
}

void fo_say_failover_abort(struct fo_cluster *c, struct fo_shard *s, const char *reason)
{
	struct fo_failover *f = &s->fo;
	char m[400];
	struct fo_event e;

	fo_ev_begin(&e, "failover_abort", s);
	evrec_str(&e.r, "from", f->from >= 0 ? c->nodes[f->from].id : "");
	evrec_str(&e.r, "state", fo_state_name(f->state));
	evrec_str(&e.r, "reason", reason);
	evrec_bool(&e.r, "planned", f->planned);
	fo_emit(c, &e);
	fo_step(c, s, "failover_abort in %s: %s", fo_state_name(f->state), reason);
	fo_master_str(c, s, f->from, m, sizeof(m));
	if (!strcmp(reason, "no_good_replica")) {
		fo_publish(c, "-failover-abort-no-good-slave", "%s", m);
		fo_publish(c, "flatline.failover_abort", "%s no_good_replica", s->name);
	} else {
		fo_publish(c, "-failover-abort", "%s %s", m, reason);
	}
}

void fo_say_replica_selected(struct fo_cluster *c, struct fo_shard *s, long long since,
			     const char *list)
{
	struct fo_failover *f = &s->fo;
	struct fo_node *best = &c->nodes[f->cand[0]];
	char inst[400];
	struct fo_event e;

	fo_ev_begin(&e, "replica_selected", s);
	evrec_str(&e.r, "from", c->nodes[f->from].id);
	evrec_str(&e.r, "instance", best->id);
	evrec_int(&e.r, "offset", best->info.offset);
	evrec_bool(&e.r, "link_was_up",
		   best->info.link_up == 1 || (best->link_up_ms && best->link_up_ms >= since));
	evrec_str(&e.r, "candidates", list);
	evrec_str(&e.r, "reason",
		  f->target >= 0 ? "operator's choice" : "ranked: connected, offset, priority, id");
	fo_emit(c, &e);
	fo_step(c, s, "replica_selected %s (offset %lld; candidates %s)", best->id,
		best->info.offset, list);
	slave_str(c, s, best, f->from, inst, sizeof(inst));
	fo_publish(c, "+selected-slave", "%s", inst);
	/* The promotion is sent at once: the two states Sentinel passes through. */
	fo_publish(c, "+failover-state-send-slaveof-noone", "%s", inst);
	fo_publish(c, "+failover-state-wait-promotion", "%s", inst);
}

void fo_say_promote_failed(struct fo_cluster *c, struct fo_node *n, const char *err)
{
	node_failed(c, "promote_failed", n, err, true);
}

void fo_say_promoted(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, int from)
{
	struct fo_failover *f = &s->fo;
	struct fo_event e;

	fo_ev_begin(&e, "promoted", s);
	evrec_str(&e.r, "instance", n->id);
	evrec_str(&e.r, "from", c->nodes[from].id);
	evrec_str(&e.r, "reason", f->reason);
	evrec_int(&e.r, "elapsed_ms", fo_now(c) - f->start_ms);
	fo_emit(c, &e);
	fo_step(c, s, "promoted %s (epoch %llu)", n->id, s->epoch);
}

void fo_say_switch_master(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, int from)
{
	const struct fo_node *o = &c->nodes[from];
	char inst[400], m[400];
	struct fo_event e;

	if (!c->nodes)
		return; /* never: the model is set up (for the analyzer) */
	/* Still named under the old master, as Sentinel does until +switch-master
	 * (published at the end of this function). */
	slave_str(c, s, n, from, inst, sizeof(inst));
	/* As Sentinel sees it: the replica now reports master, then is promoted. */
	fo_publish(c, "-role-change", "%s new reported role is master", inst);
	fo_publish(c, "+promoted-slave", "%s", inst);
	fo_master_str(c, s, from, m, sizeof(m));
	fo_publish(c, "+failover-state-reconf-slaves", "%s", m);
	fo_ev_begin(&e, "switch_master", s);
	evrec_str(&e.r, "from", o->id);
	evrec_str(&e.r, "to", n->id);
	evrec_str(&e.r, "old_addr", o->host);
	evrec_int(&e.r, "old_port", o->port);
	evrec_str(&e.r, "new_addr", n->host);
	evrec_int(&e.r, "new_port", n->port);
	fo_emit(c, &e);
	/* Clients learn the new primary now, not after the repoints (Sentinel publishes
	 * +switch-master after +failover-end, once every replica is reconfigured: a
	 * stopped old primary would hold every client for its REPLICAOF's timeout). */
	fo_publish(c, "+switch-master", "%s %s %d %s %d", s->name, o->host, o->port, n->host,
		   n->port);
	fo_step(c, s, "switch_master %s:%d -> %s:%d", o->host, o->port, n->host, n->port);
}

void fo_say_repoint_reply(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok,
			  const char *err)
{
	struct fo_failover *f = &s->fo;
	char inst[400];
	struct fo_event e;

	if (!ok) {
		node_failed(c, "repoint_failed", n, err, true);
		return;
	}
	if (n->idx != f->from) {
		/* The replica accepted REPLICAOF: Sentinel's three steps at once (we do
		 * not wait for its link, see docs/sentinel.md). */
		slave_str(c, s, n, f->from, inst, sizeof(inst));
		fo_publish(c, "+slave-reconf-sent", "%s", inst);
		fo_publish(c, "+slave-reconf-inprog", "%s", inst);
		fo_publish(c, "+slave-reconf-done", "%s", inst);
		return;
	}
	fo_ev_begin(&e, "old_primary_demoted", s);
	evrec_str(&e.r, "instance", n->id);
	evrec_str(&e.r, "primary", c->nodes[f->to].id);
	evrec_str(&e.r, "reason",
		  f->planned ? "planned switchover" : "still answering after failover");
	fo_emit(c, &e);
	fo_step(c, s, "old_primary_demoted %s", n->id);
}

void fo_say_failover_end(struct fo_cluster *c, struct fo_shard *s, const char *ok, const char *bad)
{
	struct fo_failover *f = &s->fo;
	const struct fo_node *to = &c->nodes[f->to];
	char m[400];
	struct fo_event e;

	fo_ev_begin(&e, "replicas_repointed", s);
	evrec_str(&e.r, "primary", to->id);
	evrec_str(&e.r, "nodes", ok);
	if (bad[0] || f->repoint_failed)
		evrec_str(&e.r, "failed", bad);
	fo_emit(c, &e);
	fo_step(c, s, "replicas_repointed to %s: %s%s%s", to->id, ok[0] ? ok : "(none)",
		bad[0] ? "; failed: " : "", bad);
	/* Sentinel's end (sentinelFailoverSwitchToPromotedSlave): -odown of a master
	 * that died, +failover-end under the old master (+switch-master went out at
	 * the promotion: fo_say_switch_master), then every other node as a replica of
	 * the new one; the old primary still down is +sdown as such, the old primary
	 * demoted (planned, hung) is converted. */
	fo_master_str(c, s, f->from, m, sizeof(m));
	if (!f->planned && (c->nodes[f->from].flags & FO_N_SDOWN))
		fo_publish(c, "-odown", "%s", m);
	fo_publish(c, "+failover-end", "%s", m);
	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *n = &c->nodes[s->nodes[i]];
		char inst[400];

		if (n->idx == f->to)
			continue;
		slave_str(c, s, n, f->to, inst, sizeof(inst));
		fo_publish(c, "+slave", "%s", inst);
	}
	{
		const struct fo_node *o = &c->nodes[f->from];
		char inst[400];

		slave_str(c, s, o, f->to, inst, sizeof(inst));
		if (o->flags & FO_N_SDOWN)
			fo_publish(c, "+sdown", "%s", inst);
		else if (list_has(ok, o->id))
			say_converted(c, inst);
	}
	fo_ev_begin(&e, "failover_end", s);
	evrec_str(&e.r, "from", c->nodes[f->from].id);
	evrec_str(&e.r, "to", to->id);
	evrec_bool(&e.r, "planned", f->planned);
	evrec_int(&e.r, "elapsed_ms", fo_now(c) - f->start_ms);
	fo_emit(c, &e);
	fo_step(c, s, "failover_end");
}
