// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Shadow mode ([controller] mode = shadow; docs/sentinel.md, "Shadow mode"): the
 * failover core judges as always and a failover runs up to its promotion (the
 * SELECT round asks INFO only); there fo_shadow_would() says what would have been
 * done and the machine ends the failover (result "shadow") without changing the
 * shard's primary. Another system (Sentinel) makes the failovers: the primary
 * follows the servers' roles (fo_shadow_follow), as discovery at start does. The
 * commands themselves are withheld by the controller (controller.c, may_send). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "controller/fo_internal.h"

void fo_shadow_would(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	const struct fo_node *p = &c->nodes[f->from], *n = &c->nodes[f->cand[0]];
	char timeline[FO_TIMELINE_MAX * 64], ranking[256] = "";
	size_t off = 0, ro = 0;
	struct fo_event e;

	timeline[0] = '\0';
	for (int i = 0; i < f->nsteps && off < sizeof(timeline) - 1; i++) {
		int w = snprintf(timeline + off, sizeof(timeline) - off, "%s+%lld ms %s",
				 i ? "; " : "", f->steps[i].at_ms, f->steps[i].text);

		off += w > 0 ? (size_t)w : 0;
	}
	for (int i = 0; i < f->ncand; i++)
		fo_list_add(ranking, sizeof(ranking), &ro, c->nodes[f->cand[i]].id);
	fo_ev_begin(&e, "would_failover", s);
	evrec_str(&e.r, "from", p->id);
	evrec_str(&e.r, "reason", f->reason);
	evrec_bool(&e.r, "planned", f->planned);
	evrec_int(&e.r, "started_ms", f->start_wall_ms);
	evrec_int(&e.r, "down_ms",
		  (p->flags & FO_N_SDOWN) && p->sdown_since_ms ? f->start_ms - p->sdown_since_ms
							       : -1);
	evrec_int(&e.r, "elapsed_ms", fo_now(c) - f->start_ms);
	evrec_str(&e.r, "timeline", timeline);
	fo_emit(c, &e);
	fo_ev_begin(&e, "would_promote", s);
	evrec_str(&e.r, "instance", n->id);
	evrec_str(&e.r, "from", p->id);
	evrec_str(&e.r, "ranking", ranking);
	evrec_int(&e.r, "offset", n->info.offset);
	fo_emit(c, &e);
	fo_step(c, s, "would_promote %s (shadow mode: not sent)", n->id);
	s->flags |= FO_S_SHADOWED;
}

/* A node the servers say is a master now: its freshest view says so and it is up. */
static bool says_master(const struct fo_cluster *c, const struct fo_node *n, long long now)
{
	const struct info_repl *r = fo_latest(n);

	if (!r || r->role != INFO_ROLE_MASTER || (n->flags & FO_N_SDOWN))
		return false;
	if (r == &n->rep.repl)
		return fo_fresh(c, n, now) && n->rep.proc == FO_PROC_UP;
	return true;
}

bool fo_shadow_follow(struct fo_cluster *c, struct fo_shard *s, long long now)
{
	struct fo_node *p, *m = NULL;
	const struct info_repl *pr, *mr;
	int nm = 0, from = s->primary;
	struct fo_event e;
	char why[160];

	if (s->primary < 0 || s->fo.state != FO_ST_NONE || c->starting)
		return false;
	p = &c->nodes[s->primary];
	if (!(p->flags & FO_N_SDOWN))
		s->flags &= ~FO_S_SHADOWED;
	pr = fo_latest(p);
	/* The primary is still the primary while it is up and says master. */
	if (!(p->flags & FO_N_SDOWN) && pr && pr->role == INFO_ROLE_MASTER)
		return false;
	/* A cluster shard's primary up and not saying master: only the controller's own
	 * INFO, read since it became the primary, may say so. Its agent's report can carry
	 * the role of before the promotion (its INFO is up to a heartbeat old), and the old
	 * primary, resumed, says master until the cluster bus reaches it: followed back, it
	 * would be named primary and its write lease renewed while the promoted replica
	 * serves its slots (writes acknowledged there, lost). */
	if (s->cluster && !(p->flags & FO_N_SDOWN) &&
	    (pr != &p->info || p->info_ms <= s->primary_since_ms)) {
		if (c->ops && c->ops->info &&
		    (!p->info_asked_ms || now - p->info_asked_ms >= c->info_timeout_ms)) {
			p->info_asked_ms = now;
			c->ops->info(c->ctx, p->idx, c->info_timeout_ms);
		}
		return false;
	}
	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];

		if (n != p && says_master(c, n, now)) {
			m = n;
			nm++;
		}
	}
	if (nm != 1)
		return false; /* none yet, or several: wait for the servers to agree */
	snprintf(why, sizeof(why), "the servers' roles: %s is the only master, %s %s", m->id, p->id,
		 (p->flags & FO_N_SDOWN) ? "is down" : "is a replica");
	if (s->flags & FO_S_ODOWN) {
		s->flags &= ~FO_S_ODOWN;
		fo_say_odown(c, s, false);
	}
	if (fo_set_primary(c, s, m->idx, s->epoch + 1))
		return false;
	mr = fo_latest(m);
	snprintf(s->primary_replid, sizeof(s->primary_replid), "%s", mr->master_replid);
	s->flags &=
	    ~(FO_S_PRIMARY_DIED | FO_S_EMPTY_RESTART | FO_S_SHADOWED | FO_S_NO_GOOD_REPLICA);
	fo_ev_begin(&e, "primary_followed", s);
	evrec_str(&e.r, "instance", m->id);
	evrec_str(&e.r, "from", c->nodes[from].id);
	evrec_str(&e.r, "reason", why);
	fo_emit(c, &e);
	/* Sentinel clients of this controller follow, as a Sentinel that learns a new
	 * configuration from another does. */
	fo_publish(c, "+switch-master", "%s %s %d %s %d", s->name, p->host, p->port, m->host,
		   m->port);
	if (c->ops->promoted)
		c->ops->promoted(c->ctx, s->idx);
	return true;
}

int fo_shadow_set(struct fo_cluster *c, bool shadow)
{
	if (c->shadow == shadow)
		return 0;
	for (int i = 0; i < c->nshards; i++)
		if (c->shards[i].fo.state != FO_ST_NONE)
			return -EBUSY;
	c->shadow = shadow;
	/* A would_failover said in shadow mode is no failover owed: an active controller
	 * judges the shard again from what it sees now. */
	for (int i = 0; !shadow && i < c->nshards; i++)
		c->shards[i].flags &= ~FO_S_SHADOWED;
	return 0;
}

/* One reason, formatted, to say(); counts it. */
static void reason(int *n, void (*say)(void *ctx, const char *why), void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reason(int *n, void (*say)(void *ctx, const char *why), void *ctx, const char *fmt, ...)
{
	char why[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	(*n)++;
	if (say)
		say(ctx, why);
}

/* Each node of s against the shard's primary as the model has it. */
static void check_nodes(const struct fo_cluster *c, const struct fo_shard *s, long long now, int *n,
			void (*say)(void *ctx, const char *why), void *ctx)
{
	const struct fo_node *p = s->primary >= 0 ? &c->nodes[s->primary] : NULL;

	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *d = &c->nodes[s->nodes[i]];
		const struct info_repl *r = &d->rep.repl;

		if (!(d->flags & FO_N_REPORTED) || !(d->flags & FO_N_AGENT)) {
			reason(n, say, ctx, "%s %s: its agent is not connected", s->name, d->id);
			continue;
		}
		if (!fo_fresh(c, d, now)) {
			reason(n, say, ctx, "%s %s: its agent's last report is %lld ms old",
			       s->name, d->id, now - d->last_report_ms);
			continue;
		}
		if (d->flags & (FO_N_SDOWN | FO_N_AGENT_LOST) || d->rep.proc != FO_PROC_UP) {
			reason(n, say, ctx, "%s %s: the server is %s", s->name, d->id,
			       fo_proc_name(d->rep.proc));
			continue;
		}
		if (d->flags & FO_N_FIXING)
			reason(n, say, ctx, "%s %s: a repair (REPLICAOF) is in flight", s->name,
			       d->id);
		if (!p)
			continue;
		if (d == p && r->role != INFO_ROLE_MASTER)
			reason(n, say, ctx, "%s %s: flatline's primary, but the server says %s",
			       s->name, d->id, info_role_name(r->role));
		else if (d != p && r->role == INFO_ROLE_SLAVE && !fo_follows(r, p))
			reason(n, say, ctx, "%s %s: follows %s:%d, flatline's primary is %s",
			       s->name, d->id, r->master_host, r->master_port, p->id);
		else if (d != p && r->role != INFO_ROLE_SLAVE)
			reason(n, say, ctx, "%s %s: says %s, flatline's primary is %s", s->name,
			       d->id, info_role_name(r->role), p->id);
		else if (d != p && r->link_up != 1)
			reason(n, say, ctx, "%s %s: its link to %s is down", s->name, d->id, p->id);
	}
}

int fo_cutover_check(const struct fo_cluster *c, long long now,
		     void (*say)(void *ctx, const char *why), void *ctx)
{
	int n = 0;

	if (c->starting)
		reason(&n, say, ctx, "the controller is still learning the topology");
	if (c->tilt)
		reason(&n, say, ctx, "TILT: no failover until the clock is trusted again");
	for (int i = 0; i < c->nshards; i++) {
		const struct fo_shard *s = &c->shards[i];

		if (s->fo.state != FO_ST_NONE)
			reason(&n, say, ctx, "%s: a failover is in progress (%s)", s->name,
			       fo_state_name(s->fo.state));
		if (s->primary < 0)
			reason(&n, say, ctx, "%s: no primary known", s->name);
		if (s->flags &
		    (FO_S_ODOWN | FO_S_SHADOWED | FO_S_PRIMARY_DIED | FO_S_EMPTY_RESTART))
			reason(&n, say, ctx,
			       "%s: its primary %s is judged failed: an active controller would "
			       "fail over at once",
			       s->name, s->primary >= 0 ? c->nodes[s->primary].id : "-");
		check_nodes(c, s, now, &n, say, ctx);
	}
	return n;
}
