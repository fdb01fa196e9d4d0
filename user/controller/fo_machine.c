// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failover state machine of one shard (docs/controller.md, "Failover state
 * machine"). Every change of s->fo.state is made by fo_transition(), checked
 * against the table fo_tsm[from][to] (as keepalived's VRRP_TSM); every change
 * of a shard's primary or epoch by fo_set_primary(). Each state owns its
 * timeout (fo_on_timer) and its replies (fo_on_pause, fo_on_promote; INFO and
 * REPLICAOF through the evaluator: fo_machine_info, fo_machine_replicaof), as
 * sentinel.c's sentinelFailoverStateMachine does. The machine asks the rules
 * (fo_rules.c) and never calls the evaluator (fo_eval.c) above it.
 *
 *                fo_start()
 *  +------+ ------------------> +--------+  planned   +-------+  paused   +-------------+
 *  | NONE |                     | SELECT | ---------> | PAUSE | --------> | WAIT_OFFSET |
 *  +------+ <------------------ +--------+            +-------+           +-------------+
 *   ^  ^  ^  abort:                 |                     |                  |       |
 *   |  |  |  no_good_replica        | not planned         | abort: pause     |       |
 *   |  |  +-------------------------|---------------------+ failed or timed  |       |
 *   |  |                            v                       out              |       |
 *   |  |   abort: every        +---------+ <----- the target reached the ----+       |
 *   |  +---------------------- | PROMOTE | --+    paused offset                      |
 *   |      candidate failed    +---------+   | refused or timed out:                 |
 *   |                               |  ^-----+ the next candidate                    |
 *   |                               | accepted: fo_set_primary(new, epoch + 1)       |
 *   |                               v                                                |
 *   |   every REPLICAOF        +---------+                                           |
 *   +------------------------- | REPOINT |                                           |
 *   |   answered or timed out  +---------+                                           |
 *   +--------------------------------------------------------------------------------+
 *                          abort: the offset not reached in time
 *
 * PROMOTE, where ops->record is set (HA mode), first records "the candidate at the
 * next epoch" (fo_on_record) and sends the promotion only once that is written; a
 * record that fails or times out aborts the failover (nothing was promoted).
 *
 * On the promotion (PROMOTE -> REPOINT), in this order: fo_set_primary(), the
 * `promoted` event, ops->promoted (the state saved, DNS), `switch_master` and
 * Sentinel's +switch-master, then the REPLICAOFs. From REPOINT on the shard's
 * primary is settled (fo_primary_settled): clients are answered with the new one
 * while the repoints run.
 *
 * In NONE, fo_set_primary() is also how discovery at start (fo_discover), the
 * state file (fo_state_parse) and, on a follower controller, the leader's word
 * (fo_adopt) set the primary and epoch. Nothing else writes them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "controller/fo_internal.h"
#include "controller/lease_wait.h"

/* The transitions: a name for each allowed one, NULL for the others. */
static const char *const fo_tsm[FO_ST_COUNT][FO_ST_COUNT] = {
    [FO_ST_NONE][FO_ST_SELECT] = "start",
    [FO_ST_SELECT][FO_ST_NONE] = "abort: no good replica",
    [FO_ST_SELECT][FO_ST_PAUSE] = "selected, planned: pause writes",
    [FO_ST_SELECT][FO_ST_PROMOTE] = "selected",
    [FO_ST_PAUSE][FO_ST_NONE] = "abort: pause failed",
    [FO_ST_PAUSE][FO_ST_WAIT_OFFSET] = "paused",
    [FO_ST_WAIT_OFFSET][FO_ST_NONE] = "abort: offset not reached",
    [FO_ST_WAIT_OFFSET][FO_ST_PROMOTE] = "offset reached",
    [FO_ST_PROMOTE][FO_ST_NONE] = "abort: every candidate failed",
    [FO_ST_PROMOTE][FO_ST_PROMOTE] = "next candidate",
    [FO_ST_PROMOTE][FO_ST_REPOINT] = "promoted",
    [FO_ST_REPOINT][FO_ST_NONE] = "end",
};

bool fo_transition_allowed(enum fo_state from, enum fo_state to)
{
	return (unsigned)from < FO_ST_COUNT && (unsigned)to < FO_ST_COUNT && fo_tsm[from][to];
}

/* How long each state may wait for its replies (-1: no timeout of its own). */
static int state_timeout_ms(const struct fo_cluster *c, enum fo_state st)
{
	switch (st) {
	case FO_ST_SELECT:
		return c->info_timeout_ms + 50;
	case FO_ST_PAUSE:
	case FO_ST_PROMOTE:
		return c->promote_timeout_ms + 50;
	case FO_ST_REPOINT:
		return c->repoint_timeout_ms + 50;
	default: /* NONE; WAIT_OFFSET polls on its own timer */
		return -1;
	}
}

int fo_transition(struct fo_cluster *c, struct fo_shard *s, enum fo_state to, const char *result)
{
	struct fo_failover *f = &s->fo;

	if (!fo_transition_allowed(f->state, to))
		return -EINVAL;
	f->state = to;
	f->pending = 0;
	if (to != FO_ST_NONE)
		f->state_since_ms = fo_now(c);
	if (c->ops->timer)
		c->ops->timer(c->ctx, s->idx, state_timeout_ms(c, to));
	if (to != FO_ST_NONE)
		return 0;
	snprintf(f->result, sizeof(f->result), "%s", result ? result : "");
	f->end_wall_ms = c->wall_ms(c->ctx);
	s->last = *f;
	s->have_last = true;
	if (c->ops->done)
		c->ops->done(c->ctx, s->idx, f->result);
	return 0;
}

static void abort_failover(struct fo_cluster *c, struct fo_shard *s, const char *reason)
{
	struct fo_failover *f = &s->fo;

	if (f->paused) {
		c->ops->unpause(c->ctx, f->from);
		f->paused = false;
	}
	if (!strcmp(reason, "no_good_replica") && !(s->flags & FO_S_RETRY_SELECT))
		s->flags |= FO_S_NO_GOOD_REPLICA;
	s->flags &= ~FO_S_RETRY_SELECT;
	fo_say_failover_abort(c, s, reason);
	fo_transition(c, s, FO_ST_NONE, reason);
}

static void st_select(struct fo_cluster *c, struct fo_shard *s);
static void promote_reply(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok,
			  const char *err);
static void st_promote(struct fo_cluster *c, struct fo_shard *s);
static void st_repoint(struct fo_cluster *c, struct fo_shard *s);
static void st_repoint_done(struct fo_cluster *c, struct fo_shard *s);

/* A failover asked for (an operator's, or the evaluation's once it waited) of a
 * primary that may still hold its write lease: refused, saying why (invariant 1 holds
 * for an operator too; the evaluation starts it by itself once the lease ran out). */
static bool operator_before_lease(const struct fo_cluster *c, const struct fo_shard *s,
				  const struct fo_node *p, enum fo_verdict v, char *why,
				  size_t whylen)
{
	const struct fo_node *blocker = NULL;
	long long end = fo_lease_end_ms(c, s, p, v, &blocker), now = fo_now(c);
	size_t n;

	if (end <= now)
		return false;
	fo_lease_wait_why(p, blocker, why, whylen);
	n = strlen(why);
	if (!blocker && n < whylen)
		snprintf(why + n, whylen - n, " (%lld ms left): no promotion before then",
			 end - now);
	return true;
}

int fo_start(struct fo_cluster *c, struct fo_shard *s, bool planned, int target, const char *reason,
	     char *why, size_t whylen)
{
	struct fo_failover *f = &s->fo;
	struct fo_node *p;
	enum fo_verdict v;

	if (s->primary < 0) {
		snprintf(why, whylen, "no primary known for %s", s->name);
		return -ENOENT;
	}
	p = &c->nodes[s->primary];
	v = fo_judge(c, p, fo_now(c));
	if (s->flags & FO_S_EMPTY_RESTART)
		v = FO_V_PROC_DOWN; /* its data died with it: as if it were still down */
	if (planned && (p->flags & FO_N_SDOWN))
		planned = false; /* nothing to pause: a failover, not a switchover */
	if (!fo_may_failover(c, s, v, planned, why, whylen))
		return s->fo.state != FO_ST_NONE ? -EBUSY : -EAGAIN;
	if (!planned && operator_before_lease(c, s, p, v, why, whylen))
		return -EAGAIN;
	if (target >= 0) {
		struct fo_node *t = &c->nodes[target];

		if (t->shard != s->idx || target == s->primary) {
			snprintf(why, whylen, "%s is not a replica in shard %s", t->id, s->name);
			return -EINVAL;
		}
		if (t->priority <= 0) {
			snprintf(why, whylen, "%s has priority 0 (never promoted)", t->id);
			return -EINVAL;
		}
		if (t->flags & FO_N_UNPROMOTABLE) {
			snprintf(why, whylen,
				 "%s was just attached: not promotable until synced and steady",
				 t->id);
			return -EINVAL;
		}
		if (fo_latest(t) && fo_latest(t)->sync_in_progress) {
			snprintf(why, whylen, "%s is in a full sync: not promotable until it ends",
				 t->id);
			return -EINVAL;
		}
	}
	memset(f, 0, sizeof(*f)); /* state NONE, as fo_may_failover checked */
	f->planned = planned;
	f->start_ms = fo_now(c);
	f->start_wall_ms = c->wall_ms(c->ctx);
	f->from = s->primary;
	f->to = -1;
	f->target = target;
	f->pause_offset = -1;
	snprintf(f->reason, sizeof(f->reason), "%s", reason);
	s->flags &= ~FO_S_NO_GOOD_REPLICA;
	fo_say_failover_start(c, s);
	st_select(c, s);
	return 0;
}

/* SELECT: fresh INFO replication from every candidate, in parallel. */
static void st_select(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	int ask[FO_MAX_SHARD_NODES], nask = 0;

	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];

		if (n->idx == f->from || n->priority <= 0 ||
		    (n->flags & (FO_N_SDOWN | FO_N_UNPROMOTABLE)))
			continue;
		if (f->target >= 0 && n->idx != f->target)
			continue;
		n->info_ok = 0;
		f->asked |= 1ULL << n->spos;
		ask[nask++] = n->idx;
	}
	if (fo_transition(c, s, FO_ST_SELECT, NULL))
		return;
	f->pending = nask;
	if (!nask) {
		abort_failover(c, s, "no_good_replica");
		return;
	}
	for (int i = 0; i < nask; i++)
		c->ops->info(c->ctx, ask[i], c->info_timeout_ms);
}

/* No candidate because a ranked one did not answer its INFO in time: not "no good
 * replica" until a report changes (a loaded machine answers late, and nothing in the
 * reports would change), but a retry after a wait that doubles. */
static void unanswered_retry(struct fo_cluster *c, struct fo_shard *s, const int *ranked, int n)
{
	struct fo_failover *f = &s->fo;
	int w = s->retry_select_wait_ms;

	for (int i = 0; i < n; i++) {
		const struct fo_node *nd = &c->nodes[ranked[i]];

		if (!(f->asked & (1ULL << nd->spos)) || (nd->info_ok && nd->info_ms >= f->start_ms))
			continue;
		w = w ? (w * 2 > 4000 ? 4000 : w * 2) : 250;
		s->retry_select_wait_ms = w;
		s->retry_select_ms = fo_now(c) + w;
		s->flags |= FO_S_RETRY_SELECT;
		return;
	}
}

static void select_done(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	int ranked[FO_MAX_SHARD_NODES], n;
	long long since = f->start_ms - fo_down_after_ms(c, s->idx);
	char list[256] = "";
	size_t off = 0;

	n = fo_rank(c, s, f->from, s->primary_replid, since, ranked, FO_MAX_SHARD_NODES);
	f->ncand = 0;
	for (int i = 0; i < n; i++) {
		struct fo_node *nd = &c->nodes[ranked[i]];

		if (!(f->asked & (1ULL << nd->spos)) || !nd->info_ok || nd->info_ms < f->start_ms)
			continue; /* not asked, or did not answer INFO in time: not reachable */
		f->cand[f->ncand++] = nd->idx;
		fo_list_add(list, sizeof(list), &off, nd->id);
	}
	if (s->cluster && !f->planned && !c->shadow && (n = fo_cluster_elected(c, s)) >= 0) {
		/* The cluster's own election made it already: no second one. */
		fo_step(c, s, "the cluster elected %s itself", c->nodes[n].id);
		if (fo_transition(c, s, FO_ST_PROMOTE, NULL))
			return;
		f->to = n;
		f->pending = 1;
		promote_reply(c, s, &c->nodes[n], true, NULL);
		return;
	}
	if (!f->ncand) {
		unanswered_retry(c, s, ranked, n);
		abort_failover(c, s, "no_good_replica");
		return;
	}
	fo_say_replica_selected(c, s, since, list);
	/* A cluster pauses for a planned move itself, but not for TAKEOVER (no handshake
	 * with the primary): writes paused on it and the offset waited for, as here. */
	if (!f->planned || (s->cluster && !f->takeover)) {
		st_promote(c, s);
		return;
	}
	if (fo_transition(c, s, FO_ST_PAUSE, NULL))
		return;
	f->pending = 1;
	/* Long enough for the whole switchover; expires if we die meanwhile. */
	c->ops->pause(c->ctx, f->from,
		      c->offset_wait_ms + c->promote_timeout_ms + c->repoint_timeout_ms + 2000,
		      c->promote_timeout_ms);
}

/* WAIT_OFFSET: the primary's offset once paused, then the target's until it is reached. */
static void wait_offset_poll(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;

	f->pending = 1;
	c->ops->info(c->ctx, f->pause_offset < 0 ? f->from : f->cand[0], c->info_timeout_ms);
}

static void wait_offset_reply(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok)
{
	struct fo_failover *f = &s->fo;
	long long waited = fo_now(c) - f->state_since_ms;

	f->pending = 0;
	if (ok && n->idx == f->from && f->pause_offset < 0) {
		f->pause_offset = n->info.offset;
		fo_step(c, s, "writes paused on %s at offset %lld", n->id, f->pause_offset);
		if (f->pause_offset < 0) {
			/* The server does not tell its offset (Dragonfly): trust the link. */
			st_promote(c, s);
			return;
		}
		wait_offset_poll(c, s);
		return;
	}
	if (ok && n->idx == f->cand[0] && f->pause_offset >= 0 &&
	    n->info.offset >= f->pause_offset) {
		fo_step(c, s, "%s reached offset %lld after %lld ms", n->id, n->info.offset,
			waited);
		st_promote(c, s);
		return;
	}
	if (waited >= c->offset_wait_ms) {
		char why[128];

		snprintf(why, sizeof(why), "%s did not reach offset %lld within %d ms (at %lld)",
			 c->nodes[f->cand[0]].id, f->pause_offset, c->offset_wait_ms,
			 c->nodes[f->cand[0]].info.offset);
		abort_failover(c, s, why);
		return;
	}
	c->ops->timer(c->ctx, s->idx, c->offset_poll_ms);
}

/* The promotion itself: the transaction, or a cluster's election (fo_cluster.c). */
static void send_promotion(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n)
{
	if (!s->cluster) {
		c->ops->promote(c->ctx, n->idx, c->promote_timeout_ms);
		return;
	}
	fo_step(c, s, "CLUSTER FAILOVER%s%s to %s", fo_cluster_option(&s->fo)[0] ? " " : "",
		fo_cluster_option(&s->fo), n->id);
	if (c->ops->cluster_failover)
		c->ops->cluster_failover(c->ctx, n->idx, fo_cluster_option(&s->fo),
					 c->promote_timeout_ms);
}

/* PROMOTE: the next candidate in rank order. */
static void st_promote(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	struct fo_node *n;

	if (c->shadow) { /* shadow mode: said, not done (fo_shadow.c) */
		fo_shadow_would(c, s);
		abort_failover(c, s, "shadow");
		return;
	}
	if (f->cand_next >= f->ncand) {
		abort_failover(c, s, "every candidate refused or timed out on promotion");
		return;
	}
	if (fo_transition(c, s, FO_ST_PROMOTE, NULL))
		return;
	n = &c->nodes[f->cand[f->cand_next++]];
	f->pending = 1;
	f->to = n->idx;
	if (c->ops->record) {
		/* The decision first, where a successor reads it (HA: etcd, fenced by the
		 * leader's key): a leader that cannot record it does not promote. A new
		 * epoch for every candidate, above any the record may already hold. */
		unsigned long long e = s->epoch > s->epoch_floor ? s->epoch : s->epoch_floor;
		int r;

		if (f->rec_epoch > e)
			e = f->rec_epoch;
		f->rec_epoch = e + 1;
		f->recording = true;
		r = c->ops->record(c->ctx, s->idx, n->idx, f->rec_epoch);
		if (!r)
			return; /* fo_on_record */
		f->recording = false;
		if (r < 0) {
			abort_failover(c, s, "the promotion could not be recorded");
			return;
		}
	}
	send_promotion(c, s, n);
}

void fo_on_record(struct fo_cluster *c, struct fo_shard *s, int node, unsigned long long epoch,
		  bool ok, const char *err)
{
	struct fo_failover *f = &s->fo;
	struct fo_node *n;
	char why[160];

	if (f->state != FO_ST_PROMOTE || !f->recording || epoch != f->rec_epoch || f->to < 0 ||
	    node != f->to)
		return; /* a late answer (of an aborted attempt) */
	f->recording = false;
	n = &c->nodes[f->to];
	if (!ok) {
		/* Not the next candidate: the record is what failed, not the server. */
		snprintf(why, sizeof(why), "failed to record %s at epoch %llu: %s", n->id, epoch,
			 err ? err : "?");
		abort_failover(c, s, why);
		return;
	}
	fo_step(c, s, "recorded %s at epoch %llu", n->id, epoch);
	if (c->ops->timer) /* the promotion's own time, from now */
		c->ops->timer(c->ctx, s->idx, state_timeout_ms(c, FO_ST_PROMOTE));
	send_promotion(c, s, n);
}

static void promote_reply(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok,
			  const char *err)
{
	struct fo_failover *f = &s->fo;

	f->pending = 0;
	if (!ok) {
		fo_say_promote_failed(c, n, err);
		f->to = -1;
		st_promote(c, s);
		return;
	}
	if (fo_set_primary(c, s, n->idx, f->rec_epoch ? f->rec_epoch : s->epoch + 1))
		return;
	f->epoch = s->epoch;
	s->primary_replid[0] = '\0';
	s->flags &= ~(FO_S_ODOWN | FO_S_NO_GOOD_REPLICA | FO_S_PRIMARY_DIED | FO_S_EMPTY_RESTART);
	fo_say_promoted(c, s, n, f->from);
	if (c->ops->promoted)
		c->ops->promoted(c->ctx, s->idx);
	fo_say_switch_master(c, s, n, f->from);
	st_repoint(c, s);
}

/* REPOINT: REPLICAOF <new> on every other node, the old primary included when it
 * may still answer (planned, hung); a dead one is demoted when it returns. The new
 * primary is named to clients from here on (fo_primary_settled): a stopped old
 * primary's REPLICAOF waits out its timeout without holding anyone. */
static void st_repoint(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	int send[FO_MAX_SHARD_NODES], nsend = 0;

	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];

		if (n->idx == f->to || s->cluster) /* a cluster repoints its replicas itself */
			continue;
		if (n->idx == f->from && (n->flags & (FO_N_PROC_DOWN | FO_N_HOST_DOWN)))
			continue;
		n->flags |= FO_N_FIXING;
		send[nsend++] = n->idx;
	}
	if (fo_transition(c, s, FO_ST_REPOINT, NULL))
		return;
	f->pending = nsend;
	for (int i = 0; i < nsend; i++)
		c->ops->replicaof(c->ctx, send[i], f->to, c->repoint_timeout_ms);
	if (!nsend)
		st_repoint_done(c, s);
}

static void st_repoint_done(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	char ok[256] = "", bad[256] = "";
	size_t oo = 0, ob = 0;

	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];

		if (n->idx == f->to)
			continue;
		if (n->flags & FO_N_FIXING) { /* no answer in time */
			n->flags &= ~FO_N_FIXING;
			fo_list_add(bad, sizeof(bad), &ob, n->id);
		} else if (n->fix_ok) {
			fo_list_add(ok, sizeof(ok), &oo, n->id);
		}
		n->fix_ok = 0;
	}
	if (f->paused) {
		c->ops->unpause(c->ctx, f->from);
		f->paused = false;
		fo_step(c, s, "writes unpaused on %s", c->nodes[f->from].id);
	}
	fo_say_failover_end(c, s, ok, bad);
	s->last_failover_end_ms = fo_now(c);
	s->retry_select_ms = 0;
	s->retry_select_wait_ms = 0;
	fo_transition(c, s, FO_ST_NONE, "ok");
}

static void repoint_reply(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok,
			  const char *err)
{
	struct fo_failover *f = &s->fo;

	if (!(n->flags & FO_N_FIXING))
		return; /* a late answer */
	n->flags &= ~FO_N_FIXING;
	n->fix_ms = fo_now(c);
	if (ok) {
		n->fix_ok = 1;
		n->flags &= ~FO_N_ROGUE; /* repointed by the failover: said there */
		f->repointed++;
	} else {
		f->repoint_failed++;
	}
	fo_say_repoint_reply(c, s, n, ok, err);
	if (--f->pending <= 0)
		st_repoint_done(c, s);
}

/* ------------------------------------------------------------------------- */
/* Replies from the I/O layer (INFO and REPLICAOF through the evaluator, which
 * stores what they say of the node first), and each state's timeout */

void fo_machine_info(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok)
{
	switch (s->fo.state) {
	case FO_ST_SELECT:
		if (n->idx == s->fo.from || s->fo.pending <= 0)
			return;
		if (--s->fo.pending == 0)
			select_done(c, s);
		return;
	case FO_ST_WAIT_OFFSET:
		if (s->fo.pending && (n->idx == s->fo.from || n->idx == s->fo.cand[0]))
			wait_offset_reply(c, s, n, ok);
		return;
	default:
		return;
	}
}

void fo_on_pause(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err)
{
	struct fo_shard *s = fo_shard_of(c, n);
	char why[160];

	if (!s || s->fo.state != FO_ST_PAUSE || n->idx != s->fo.from)
		return;
	if (!ok) {
		snprintf(why, sizeof(why), "failed to pause writes on %s: %s", n->id,
			 err ? err : "?");
		abort_failover(c, s, why);
		return;
	}
	s->fo.paused = true;
	if (!fo_transition(c, s, FO_ST_WAIT_OFFSET, NULL))
		wait_offset_poll(c, s);
}

void fo_on_promote(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err)
{
	struct fo_shard *s = fo_shard_of(c, n);

	if (!s || s->fo.state != FO_ST_PROMOTE || n->idx != s->fo.to || !s->fo.pending)
		return;
	promote_reply(c, s, n, ok, err);
}

bool fo_machine_replicaof(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok,
			  const char *err)
{
	if (s->fo.state != FO_ST_REPOINT)
		return false;
	repoint_reply(c, s, n, ok, err);
	return true;
}

/* Each state owns its timeout. */
void fo_on_timer(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	char why[160];

	switch (f->state) {
	case FO_ST_SELECT:
		f->pending = 0;
		select_done(c, s); /* with whoever answered */
		break;
	case FO_ST_PAUSE:
		snprintf(why, sizeof(why), "failed to pause writes on %s: timed out",
			 c->nodes[f->from].id);
		abort_failover(c, s, why);
		break;
	case FO_ST_WAIT_OFFSET:
		if (!f->pending)
			wait_offset_poll(c, s);
		break;
	case FO_ST_PROMOTE:
		if (f->recording) {
			fo_on_record(c, s, f->to, f->rec_epoch, false, "timed out");
			break;
		}
		promote_reply(c, s, &c->nodes[f->to], false, "timed out");
		break;
	case FO_ST_REPOINT:
		st_repoint_done(c, s);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------------- */
/* Discovery at start: the rules choose (fo_discover_pick), the machine applies. */

void fo_discover(struct fo_cluster *c, struct fo_shard *s)
{
	const int spi = s->primary; /* the state file's word, -1 if none */
	char why[128];
	int nm, pick = fo_discover_pick(c, s, why, sizeof(why), &nm);

	if (c->record_first && pick < 0 && spi >= 0 && c->nodes[spi].info_ok &&
	    c->nodes[spi].info.role == INFO_ROLE_SLAVE) {
		/* The record names a replica: the promotion was recorded but not made (the
		 * leader stopped in between, or the write timed out and was applied). The
		 * primary is still the one it follows, at the epoch before the record's:
		 * its failure is handled as any, and the promotion takes the recorded
		 * epoch (the same record again when the same replica is chosen), since
		 * nothing was promoted at it. */
		struct fo_node *m = fo_node_by_addr(c, c->nodes[spi].info.master_host,
						    c->nodes[spi].info.master_port);

		if (m && m->shard == s->idx && m->idx != spi &&
		    !fo_set_primary(c, s, m->idx, s->epoch ? s->epoch - 1 : 0)) {
			fo_say_primary_discovered(c, s, spi,
						  "the recorded primary was never promoted: "
						  "the primary is still the one it follows");
		}
		return;
	}
	if (pick < 0) {
		/* Said once per count of masters: discovery runs again while none is known. */
		if (spi < 0 && s->unknown_said != nm + 1) {
			fo_say_primary_unknown(c, s, nm);
			s->unknown_said = nm + 1;
		}
		return;
	}
	s->unknown_said = 0;
	if (pick == s->primary)
		return;
	/* A primary we did not record (first start, or promoted just before a crash):
	 * a new epoch unless there was none. */
	if (fo_set_primary(c, s, pick, spi >= 0 ? s->epoch + 1 : s->epoch))
		return;
	fo_say_primary_discovered(c, s, spi, why);
	if (c->ops->promoted)
		c->ops->promoted(c->ctx, s->idx);
}

int fo_adopt(struct fo_cluster *c, struct fo_shard *s, int node, unsigned long long epoch)
{
	int from = s->primary;

	if (s->fo.state != FO_ST_NONE || node < 0)
		return -EINVAL;
	if (epoch < s->epoch || (node == from && epoch == s->epoch))
		return 0;
	if (fo_set_primary(c, s, node, epoch))
		return -EINVAL;
	fo_say_primary_adopted(c, s, from);
	return 1;
}
