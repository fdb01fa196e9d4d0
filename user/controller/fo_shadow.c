// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Shadow mode ([controller] mode = shadow; docs/sentinel.md, "Shadow mode"): the
 * failover core judges as always and a failover runs up to its promotion (the
 * SELECT round asks INFO only); there fo_shadow_would() says what would have been
 * done and the machine ends the failover (result "shadow") without changing the
 * shard's primary. Another system (Sentinel) makes the failovers: the primary
 * follows the servers' roles (fo_shadow_follow), as discovery at start does. The
 * commands themselves are withheld by the controller (controller.c, may_send). */
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
