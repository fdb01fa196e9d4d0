// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Redundancy restored: a shard that has fewer healthy replicas than it should
 * ([shard] replicas, by default its nodes minus one) gets one back.
 *
 *   the deficit (per shard):   have < want  -> replica_deficit
 *                              have >= want -> redundancy_restored (after_ms)
 *   the remedies, in order:    the old primary back and demoted (the evaluator's
 *                              repair: nothing here), then, once the deficit is
 *                              [shard] restore_after_ms old, a spare; with none
 *                              left, [controller] provision_script, once.
 *
 * Attaching one spare, one at a time per shard (so one full sync at a time):
 *
 *   IDLE --pick--> CHECK --ok--> ATTACH --kept--> SYNC --synced--> STEADY --> IDLE
 *                   | refused      | failed        | epoch changed: REPLICAOF the
 *                   v              v               | new primary, SYNC again
 *                  IDLE (spare_refused, the next)  | node down: IDLE (the next)
 *
 * CHECK: INFO of the spare, INFO of the primary. Attached only if it is empty (no
 * keys in any db of its INFO keyspace) or already a replica of the primary's
 * replication id, and its maxmemory (if set) holds the primary's used_memory.
 * ATTACH: the membership change (state file or etcd, as FLATLINE NODE:
 * ctl_members_change), then REPLICAOF the primary. SYNC and STEADY poll INFO
 * replication of the spare and the primary: synced when its link is up to the
 * primary's address, no sync in progress, on the primary's replication id; steady
 * when that held (lag under SP_LAG_MAX bytes) for [shard] promotable_after_ms.
 * SYNC: a spare that still says master is sent REPLICAOF again (once a second); one
 * not syncing from the primary for sync_stall_ms() is spare_sync_failed, the next
 * tried. Until promotable the node carries FO_N_UNPROMOTABLE: no failover picks it.
 * The model sets it on every attached node it sets up (a restart, a new leader, an
 * attach line from etcd); a node outside the current attach earns it back in
 * earn() the same way. A refusal never clears it. Only the controller that may
 * change servers (the leader, not shadow) attaches; a new leader finds an attached
 * node not yet linked and resumes at SYNC.
 * The events are said here, through the outbox (ctl_event). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include "common/clock.h"
#include "common/info.h"
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/ctl_members.h"
#include "controller/spare_sync.h"

#define SP_TICK_MS    250
#define SP_REQ_MS     2000	      /* one request to a server */
#define SP_STEP_MS    10000	      /* CHECK or ATTACH without an answer: given up */
#define SP_LAG_MAX    (1024LL * 1024) /* a steady replica is this close to its primary */
#define SP_REPLID_LEN 48
#define SP_RESEND_MS  1000  /* REPLICAOF again to a spare still a master */
#define SP_STALL_MIN  60000 /* SYNC with no sync under way this long: failed */
#define SP_SYNC_TRIES 3	    /* full syncs of the spare's own seen failing: failed */
#define SP_CONFIRM_MS                                                                              \
	1000 /* fewer replicas this long is a deficit (a link that blinks                          \
	      * is not) */

enum sp_state { SP_IDLE, SP_CHECK, SP_ATTACH, SP_SYNC, SP_STEADY };
static const char *const sp_state_name[] = {"idle", "checking", "attaching", "syncing", "steady"};

/* What the replies of one step said. */
struct sp_seen {
	int answered, failed;
	char err[160];
	long long dbsize;	    /* the spare's keys (INFO keyspace, all dbs), -1 unknown */
	long long maxmemory;	    /* the spare's, 0 = none */
	long long used_memory;	    /* the primary's (CHECK), the spare's (SYNC) */
	struct info_repl spare;	    /* the spare's INFO */
	struct info_repl primary;   /* the primary's INFO */
	long long spare_used;	    /* the spare's used_memory */
	long long sync_full;	    /* the primary's full syncs served (INFO stats), -1 unknown */
	long long repl_in;	    /* the spare's total_net_repl_input_bytes, -1 unknown */
	char replid[SP_REPLID_LEN]; /* the primary's master_replid */
};

struct sp_shard {
	long long low_since_ms; /* fewer than wanted since (monotonic), 0 = not */
	bool deficit;
	long long deficit_since_ms; /* monotonic */
	bool provisioned;	    /* the script was asked this deficit */
	int have, want;
	enum sp_state st;
	long long st_since_ms;
	int node;     /* the spare in CHECK … STEADY */
	unsigned gen; /* replies of an older step are dropped */
	int pending;  /* replies outstanding */
	struct sp_seen seen;
	unsigned long long epoch; /* the shard's when the sync (re)started */
	long long sync_start_ms;
	long long steady_since_ms;
	long long progress_ms;	 /* SYNC: last seen syncing from (or linked to) the primary */
	long long replicaof_ms;	 /* SYNC: the last REPLICAOF sent */
	struct spare_sync tries; /* SYNC: the spare's own full syncs seen failing */
	bool *tried;		 /* per node: refused or failed in this deficit */
};

struct ctl_spares {
	struct event *tick;
	long long since_ms; /* this controller may change servers since (monotonic), 0 not */
	struct sp_shard *sh;
	int nsh, node_cap;
	long long *earn_ms; /* per node: FO_N_UNPROMOTABLE, steady since (0 = not) */
};

struct sp_req {
	struct ctl *c;
	int shard;
	unsigned gen;
	int what; /* SP_R_* */
};
enum { SP_R_SPARE_INFO, SP_R_PRIMARY_INFO };

/* ---- counting ---- */

static int desired(const struct ctl *c, int shard)
{
	const struct cfg_shard *cs = &c->cfg->shards[shard];
	int n = 0;

	if (cs->replicas >= 0)
		return cs->replicas;
	for (int k = 0; k < cs->nnodes; k++) /* its nodes, the spares it took aside */
		n += !c->cfg->nodes[cs->nodes[k]].attached;
	return n > 0 ? n - 1 : 0;
}

/* A replica that counts: judged well, following the primary with its link up, not
 * the spare being attached (it counts once synced). */
static bool healthy(const struct ctl *c, const struct sp_shard *sp, const struct fo_shard *s,
		    const struct fo_node *n, long long now)
{
	const struct info_repl *r = fo_latest(n);

	if (n->idx == s->primary || (n->flags & FO_N_REMOVED))
		return false;
	if (n->idx == sp->node && sp->st != SP_IDLE && sp->st != SP_STEADY)
		return false;
	return fo_judge(&c->fo, n, now) == FO_V_OK && r && r->link_up == 1 &&
	       !r->sync_in_progress && fo_follows(r, &c->fo.nodes[s->primary]);
}

static void say(struct ctl *c, const char *kind, const struct fo_shard *s,
		const struct sp_shard *sp, const char *node, const char *reason)
{
	struct evrec r;

	evrec_begin(&r, NULL, "controller", kind);
	evrec_str(&r, "shard", s->name);
	if (node)
		evrec_str(&r, "instance", node);
	evrec_int(&r, "replicas", sp->have);
	evrec_int(&r, "desired", sp->want);
	evrec_uint(&r, "epoch", s->epoch);
	if (s->primary >= 0)
		evrec_str(&r, "primary", c->fo.nodes[s->primary].id);
	if (!strcmp(kind, "redundancy_restored"))
		evrec_int(&r, "after_ms", fl_mono_ms() - sp->deficit_since_ms);
	if (!strcmp(kind, "replica_synced")) {
		evrec_int(&r, "duration_ms", fl_mono_ms() - sp->sync_start_ms);
		evrec_int(&r, "bytes", sp->seen.spare_used);
	}
	if (reason)
		evrec_str(&r, "reason", reason);
	ctl_event(c, kind, &r);
}

static void set_state(struct sp_shard *sp, enum sp_state st)
{
	sp->st = st;
	sp->st_since_ms = fl_mono_ms();
	sp->gen++;
	sp->pending = 0;
	if (st == SP_IDLE)
		sp->node = -1;
}

/* ---- requests ---- */

static void step_done(struct ctl *c, int shard);

static void on_reply(void *ctx, redisReply *rep, const char *err, void *priv)
{
	struct sp_req *q = priv;
	struct ctl *c = q->c;
	struct sp_shard *sp;
	struct sp_seen *v;

	(void)ctx;
	if (!c->spares || q->shard >= c->spares->nsh || c->spares->sh[q->shard].gen != q->gen) {
		free(q);
		return;
	}
	sp = &c->spares->sh[q->shard];
	v = &sp->seen;
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		v->failed++;
		snprintf(v->err, sizeof(v->err), "%s did not answer: %.100s",
			 q->what == SP_R_PRIMARY_INFO ? "the primary" : "the spare",
			 rep && rep->str ? rep->str
			 : err		 ? err
					 : "no reply");
	} else if (rep->type == REDIS_REPLY_STRING) {
		struct info_repl *r = q->what == SP_R_PRIMARY_INFO ? &v->primary : &v->spare;

		if (info_parse(rep->str, rep->len, r)) {
			v->failed++;
			snprintf(v->err, sizeof(v->err), "unreadable INFO");
		}
		if (q->what == SP_R_PRIMARY_INFO) {
			v->used_memory = info_ll(rep->str, rep->len, "used_memory");
			v->sync_full = info_ll(rep->str, rep->len, "sync_full");
			snprintf(v->replid, sizeof(v->replid), "%s", r->master_replid);
		} else {
			v->maxmemory = info_ll(rep->str, rep->len, "maxmemory");
			v->spare_used = info_ll(rep->str, rep->len, "used_memory");
			v->dbsize = info_keyspace_keys(rep->str, rep->len);
			v->repl_in = info_ll(rep->str, rep->len, "total_net_repl_input_bytes");
		}
	}
	v->answered++;
	free(q);
	if (--sp->pending == 0)
		step_done(c, (int)(sp - c->spares->sh));
}

static bool ask(struct ctl *c, int shard, int node, int what, int argc, const char **argv)
{
	struct sp_shard *sp = &c->spares->sh[shard];
	struct sp_req *q = calloc(1, sizeof(*q));

	if (!q)
		return false;
	*q = (struct sp_req){c, shard, sp->gen, what};
	sp->pending++;
	if (!ctl_server_request(c, node, SP_REQ_MS, on_reply, q, argc, argv)) {
		sp->pending--;
		free(q);
		return false;
	}
	return true;
}

/* The requests of a step: the spare's INFO and the primary's (the default sections:
 * the spare's keyspace, the primary's memory and its full syncs served too). */
static void ask_step(struct ctl *c, int shard)
{
	struct sp_shard *sp = &c->spares->sh[shard];
	const char *info[] = {"INFO"};
	int primary = c->fo.shards[shard].primary;

	sp->gen++;
	sp->pending = 0;
	memset(&sp->seen, 0, sizeof(sp->seen));
	sp->seen.dbsize = -1;
	/* One count for the whole step while it is asked: a reply that comes back at
	 * once cannot end it early. */
	sp->pending++;
	if (!ask(c, shard, sp->node, SP_R_SPARE_INFO, 1, info) ||
	    !ask(c, shard, primary, SP_R_PRIMARY_INFO, 1, info)) {
		sp->seen.failed++;
		snprintf(sp->seen.err, sizeof(sp->seen.err), "no link to its server");
	}
	if (--sp->pending == 0)
		step_done(c, shard);
}

static void on_replicaof(void *ctx, redisReply *rep, const char *err, void *priv)
{
	(void)ctx;
	(void)rep;
	(void)err;
	(void)priv; /* what it did is seen in the INFO the next steps ask */
}

static void replicaof(struct ctl *c, int node, int primary)
{
	const struct fo_node *p = &c->fo.nodes[primary];
	char port[16];
	const char *argv[] = {"REPLICAOF", p->host, port};

	snprintf(port, sizeof(port), "%d", p->port);
	ctl_server_request(c, node, SP_REQ_MS, on_replicaof, NULL, 3, argv);
}

/* ---- the steps ---- */

/* SYNC (re)started: REPLICAOF the primary, the stall clock from now. */
static void sync_begin(struct ctl *c, struct sp_shard *sp, const struct fo_shard *s, long long now)
{
	sp->epoch = s->epoch;
	sp->sync_start_ms = sp->progress_ms = sp->replicaof_ms = now;
	spare_sync_begin(&sp->tries);
	replicaof(c, sp->node, s->primary);
}

/* How long SYNC may see no sync under way from the primary: a minute, or ten times
 * restore_after_ms if that is longer. A sync that runs (however long) resets it. */
static long long sync_stall_ms(const struct ctl *c, int shard)
{
	long long r = 10LL * c->cfg->shards[shard].restore_after_ms;

	return r > SP_STALL_MIN ? r : SP_STALL_MIN;
}

static void refuse(struct ctl *c, int shard, const char *kind, const char *why)
{
	struct sp_shard *sp = &c->spares->sh[shard];
	const struct fo_node *n = &c->fo.nodes[sp->node];

	pr_warn("shard %s: spare %s %s: %s\n", c->fo.shards[shard].name, n->id,
		!strcmp(kind, "spare_refused") ? "refused" : "failed", why);
	say(c, kind, &c->fo.shards[shard], sp, n->id, why);
	sp->tried[sp->node] = true;
	/* FO_N_UNPROMOTABLE stays: the server may still be mid-sync. Earned back (earn)
	 * once seen synced and steady. */
	set_state(sp, SP_IDLE);
}

struct attach_ctx {
	int shard;
	int node;
	unsigned gen;
};

/* Sentinel's +slave for a replica the shard gained (as a Sentinel says it when it
 * finds one): its clients learn the new replica. */
static void slave_added(struct ctl *c, const struct fo_shard *s, const struct fo_node *n)
{
	const struct fo_node *p = &c->fo.nodes[s->primary];
	char why[400];

	snprintf(why, sizeof(why), "slave %.60s:%d %.60s %d @ %.60s %.60s %d", n->host, n->port,
		 n->host, n->port, s->name, p->host, p->port);
	ctl_event_sentinel(c, "+slave", why);
}

static void on_attached(struct ctl *c, void *ctx, int err, const char *why)
{
	struct attach_ctx *a = ctx;
	struct sp_shard *sp;
	struct fo_shard *s;

	if (!c->spares || a->shard >= c->spares->nsh || c->spares->sh[a->shard].gen != a->gen) {
		free(a);
		return;
	}
	sp = &c->spares->sh[a->shard];
	s = &c->fo.shards[a->shard];
	free(a);
	if (err) {
		refuse(c, (int)(sp - c->spares->sh), "spare_refused", why);
		return;
	}
	c->fo.nodes[sp->node].flags |= FO_N_UNPROMOTABLE; /* attached: until earned */
	if (s->primary < 0) {
		refuse(c, s->idx, "spare_sync_failed", "the shard has no primary");
		return;
	}
	say(c, "spare_attached", s, sp, c->fo.nodes[sp->node].id, NULL);
	slave_added(c, s, &c->fo.nodes[sp->node]);
	set_state(sp, SP_SYNC);
	sync_begin(c, sp, s, fl_mono_ms());
}

static void check_done(struct ctl *c, int shard)
{
	struct sp_shard *sp = &c->spares->sh[shard];
	struct fo_shard *s = &c->fo.shards[shard];
	struct sp_seen *v = &sp->seen;
	struct attach_ctx *a;
	struct mb_entry e;
	char why[240];

	if (v->failed) {
		refuse(c, shard, "spare_refused", v->err);
		return;
	}
	if (v->dbsize != 0 && !(v->spare.role == INFO_ROLE_SLAVE && v->replid[0] &&
				!strcmp(v->spare.master_replid, v->replid))) {
		snprintf(why, sizeof(why),
			 "not empty (%lld keys in INFO keyspace) and not a replica of the "
			 "primary's replication id %s",
			 v->dbsize, v->replid);
		refuse(c, shard, "spare_refused", why);
		return;
	}
	if (v->maxmemory > 0 && v->used_memory > 0 && v->maxmemory < v->used_memory) {
		snprintf(why, sizeof(why), "maxmemory %lld is below the primary's used_memory %lld",
			 v->maxmemory, v->used_memory);
		refuse(c, shard, "spare_refused", why);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.kind = MB_ATTACH;
	snprintf(e.id, sizeof(e.id), "%s", c->fo.nodes[sp->node].id);
	snprintf(e.shard, sizeof(e.shard), "%s", s->name);
	a = calloc(1, sizeof(*a));
	if (!a)
		return;
	set_state(sp, SP_ATTACH);
	sp->node = ctl_members_cfg_node(c->cfg, e.id);
	*a = (struct attach_ctx){shard, sp->node, sp->gen};
	if (ctl_members_change(c, &e, "spares", on_attached, a, why, sizeof(why))) {
		free(a);
		refuse(c, shard, "spare_refused", why);
	}
}

/* SYNC and STEADY: what the spare's and the primary's INFO say now. */
static void sync_done(struct ctl *c, int shard)
{
	struct sp_shard *sp = &c->spares->sh[shard];
	struct fo_shard *s = &c->fo.shards[shard];
	struct sp_seen *v = &sp->seen;
	struct fo_node *n = &c->fo.nodes[sp->node];
	long long now = fl_mono_ms(), lag;
	bool ok, follows;

	if (v->failed || s->primary < 0)
		return; /* asked again on the next tick */
	if (v->spare.role == INFO_ROLE_MASTER) {
		/* Its REPLICAOF lost or ignored (a restart, a rename): sent again. */
		if (now - sp->replicaof_ms >= SP_RESEND_MS) {
			sp->replicaof_ms = now;
			replicaof(c, sp->node, s->primary);
		}
		if (sp->st == SP_STEADY) { /* not a replica any more: synced again */
			sp->st = SP_SYNC;
			sp->progress_ms = now;
		}
		return;
	}
	follows =
	    v->spare.role == INFO_ROLE_SLAVE && fo_follows(&v->spare, &c->fo.nodes[s->primary]);
	if (follows && (v->spare.link_up == 1 || v->spare.sync_in_progress))
		sp->progress_ms = now;
	ok = follows && v->spare.link_up == 1 && !v->spare.sync_in_progress && v->replid[0] &&
	     !strcmp(v->spare.master_replid, v->replid);
	if (v->spare.link_up == 1 && !fo_follows(&v->spare, &c->fo.nodes[s->primary])) {
		/* Linked, but to another server than the primary: pointed again. */
		say(c, "spare_sync_aborted", s, sp, n->id, "its link is up to another server");
		replicaof(c, sp->node, s->primary);
		return;
	}
	lag = v->primary.offset - v->spare.offset;
	if (sp->st == SP_SYNC) {
		/* A sync that fails over and over (the spare's disk full, its RDB not loaded,
		 * the primary's replica buffer limit) keeps the stall clock running: failed
		 * once SP_SYNC_TRIES of the spare's own full syncs failed (spare_sync.h). */
		struct spare_sync_seen seen = {v->spare.sync_in_progress == 1 && follows,
					       v->spare.link_up == 1, v->repl_in, v->sync_full};
		int failed = spare_sync_poll(&sp->tries, &seen);

		if (!ok && failed >= SP_SYNC_TRIES) {
			char why[120];

			snprintf(why, sizeof(why), "%d full syncs from the primary failed", failed);
			refuse(c, shard, "spare_sync_failed", why);
			return;
		}
		if (!ok)
			return;
		sp->st = SP_STEADY;
		sp->st_since_ms = sp->steady_since_ms = now;
		say(c, "replica_synced", s, sp, n->id, NULL);
		pr_info("shard %s: spare %s synced in %lld ms\n", s->name, n->id,
			now - sp->sync_start_ms);
		return;
	}
	if (!ok || lag > SP_LAG_MAX) {
		sp->steady_since_ms = now;
		return;
	}
	if (now - sp->steady_since_ms >= c->cfg->shards[shard].promotable_after_ms) {
		n->flags &= ~FO_N_UNPROMOTABLE;
		say(c, "replica_promotable", s, sp, n->id, NULL);
		sp->tried[sp->node] = false;
		set_state(sp, SP_IDLE);
	}
}

static void step_done(struct ctl *c, int shard)
{
	struct sp_shard *sp = &c->spares->sh[shard];

	if (sp->st == SP_CHECK)
		check_done(c, shard);
	else if (sp->st == SP_SYNC || sp->st == SP_STEADY)
		sync_done(c, shard);
}

/* IDLE, the deficit old enough: an attached node not linked yet (a new leader's, or
 * one whose sync another controller began) is resumed; else the next spare. */
static void remedy(struct ctl *c, int shard, long long now)
{
	struct sp_shard *sp = &c->spares->sh[shard];
	struct fo_shard *s = &c->fo.shards[shard];
	const struct cfg *cfg = c->cfg;
	char reason[200], addr[300], epoch[24];

	for (int k = 0; k < s->nnodes; k++) {
		struct fo_node *n = &c->fo.nodes[s->nodes[k]];

		if (!cfg->nodes[n->idx].attached || sp->tried[n->idx] || n->idx == s->primary ||
		    healthy(c, sp, s, n, now) || fo_judge(&c->fo, n, now) != FO_V_OK)
			continue;
		sp->node = n->idx;
		set_state(sp, SP_SYNC);
		sp->node = n->idx;
		n->flags |= FO_N_UNPROMOTABLE;
		pr_info("shard %s: resuming the sync of %s\n", s->name, n->id);
		sync_begin(c, sp, s, now);
		return;
	}
	for (int i = 0; i < c->fo.nnodes; i++) {
		const struct cfg_node *cn = &cfg->nodes[i];

		if (cn->removed || !cn->spare || strcmp(cn->spare_for, s->name) || sp->tried[i] ||
		    !ctl_server_linked(c, i))
			continue;
		set_state(sp, SP_CHECK);
		sp->node = i;
		ask_step(c, shard);
		return;
	}
	if (sp->provisioned)
		return;
	sp->provisioned = true;
	snprintf(reason, sizeof(reason), "replica_deficit: %d of %d replicas, no spare left",
		 sp->have, sp->want);
	say(c, "provision_requested", s, sp, NULL, reason);
	if (cfg->controller.provision_script[0]) {
		const struct fo_node *p = &c->fo.nodes[s->primary];
		const char *args[] = {s->name, addr, epoch, reason};

		cfg_hostport(addr, sizeof(addr), p->host, p->port);
		snprintf(epoch, sizeof(epoch), "%llu", s->epoch);
		ctl_hooks_run(c, cfg->controller.provision_script, 4, args);
	}
}

/* The per-shard state for shards added since: one shard at a time, so a calloc that
 * fails leaves nsh at the shards whose tried[] is there (freed by ctl_spares_fini,
 * kept by the next grow). */
static int grow(struct ctl_spares *S, const struct ctl *c)
{
	struct sp_shard *sh;

	if (S->nsh >= c->fo.nshards)
		return 0;
	sh = realloc(S->sh, c->fo.nshards * sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	S->sh = sh;
	for (; S->nsh < c->fo.nshards; S->nsh++) {
		memset(&sh[S->nsh], 0, sizeof(*sh));
		sh[S->nsh].node = -1;
		sh[S->nsh].tried = calloc(S->node_cap, sizeof(bool));
		if (!sh[S->nsh].tried)
			return -ENOMEM;
	}
	return 0;
}

static void shard_tick(struct ctl *c, int i, long long now)
{
	struct sp_shard *sp = &c->spares->sh[i];
	struct fo_shard *s = &c->fo.shards[i];

	/* A cluster shard's replicas join by CLUSTER REPLICATE: not attached here. */
	if (s->removed || s->cluster || s->primary < 0 || s->fo.state != FO_ST_NONE ||
	    !fo_primary_settled(s))
		return;
	sp->want = desired(c, i);
	sp->have = 0;
	for (int k = 0; k < s->nnodes; k++)
		sp->have += healthy(c, sp, s, &c->fo.nodes[s->nodes[k]], now);
	if (sp->have >= sp->want)
		sp->low_since_ms = 0;
	else if (!sp->low_since_ms)
		sp->low_since_ms = now;
	if (!sp->deficit && sp->low_since_ms && now - sp->low_since_ms >= SP_CONFIRM_MS) {
		sp->deficit = true;
		sp->deficit_since_ms = now; /* restore_after_ms counts from here */
		sp->provisioned = false;
		pr_warn("shard %s: %d of %d replicas\n", s->name, sp->have, sp->want);
		say(c, "replica_deficit", s, sp, NULL, NULL);
	} else if (sp->deficit && sp->have >= sp->want && sp->st != SP_SYNC &&
		   sp->st != SP_STEADY) { /* the spare counts once promotable */
		sp->deficit = false;
		pr_info("shard %s: redundancy restored (%d of %d replicas)\n", s->name, sp->have,
			sp->want);
		say(c, "redundancy_restored", s, sp, NULL, NULL);
		memset(sp->tried, 0, c->spares->node_cap * sizeof(bool));
	}
	switch (sp->st) {
	case SP_IDLE:
		if (sp->deficit && now - sp->deficit_since_ms >= c->cfg->shards[i].restore_after_ms)
			remedy(c, i, now);
		break;
	case SP_CHECK:
	case SP_ATTACH:
		if (now - sp->st_since_ms > SP_STEP_MS)
			refuse(c, i, "spare_refused", "no answer in time");
		break;
	case SP_SYNC:
	case SP_STEADY:
		if (sp->node < 0 || (c->fo.nodes[sp->node].flags & FO_N_REMOVED) ||
		    c->fo.nodes[sp->node].shard != i) {
			set_state(sp, SP_IDLE);
			break;
		}
		if (fo_judge(&c->fo, &c->fo.nodes[sp->node], now) != FO_V_OK &&
		    fo_judge(&c->fo, &c->fo.nodes[sp->node], now) != FO_V_UNKNOWN) {
			refuse(c, i, "spare_sync_failed", "its node is down");
			break;
		}
		if (s->epoch != sp->epoch) {
			char why[120];

			snprintf(why, sizeof(why), "the epoch changed (%llu to %llu)", sp->epoch,
				 s->epoch);
			say(c, "spare_sync_aborted", s, sp, c->fo.nodes[sp->node].id, why);
			sp->st = SP_SYNC;
			c->fo.nodes[sp->node].flags |= FO_N_UNPROMOTABLE;
			sync_begin(c, sp, s, now);
			break;
		}
		if (sp->st == SP_SYNC && now - sp->progress_ms > sync_stall_ms(c, i)) {
			char why[120];

			snprintf(why, sizeof(why),
				 "timeout: not syncing from the primary for %lld ms",
				 now - sp->progress_ms);
			refuse(c, i, "spare_sync_failed", why);
			break;
		}
		if (!sp->pending)
			ask_step(c, i);
		break;
	}
}

/* A node n carrying FO_N_UNPROMOTABLE, outside the current attach, is steady now:
 * judged well, a replica linked to its shard's primary, no sync in progress, on the
 * primary's replication id, within SP_LAG_MAX of its offset. */
static bool earn_ok(const struct ctl *c, const struct fo_node *n, long long now)
{
	const struct fo_shard *s;
	const struct info_repl *r = fo_latest(n), *pr;

	if (n->shard < 0 || (n->flags & FO_N_REMOVED) || !r)
		return false;
	s = &c->fo.shards[n->shard];
	if (s->removed || s->primary < 0 || s->primary == n->idx || s->fo.state != FO_ST_NONE)
		return false;
	pr = fo_latest(&c->fo.nodes[s->primary]);
	if (fo_judge(&c->fo, n, now) != FO_V_OK || r->role != INFO_ROLE_SLAVE || r->link_up != 1 ||
	    r->sync_in_progress || r->loading || !fo_follows(r, &c->fo.nodes[s->primary]))
		return false;
	if (pr && pr->master_replid[0] && r->master_replid[0] &&
	    strcmp(pr->master_replid, r->master_replid))
		return false;
	return !pr || pr->offset < 0 || r->offset < 0 || pr->offset - r->offset <= SP_LAG_MAX;
}

/* Every node with FO_N_UNPROMOTABLE that no attach step is handling (a restart's, a
 * new leader's, one refused mid-sync): cleared once earn_ok held for the shard's
 * promotable_after_ms. */
static void earn(struct ctl *c, long long now)
{
	struct ctl_spares *S = c->spares;

	for (int i = 0; i < c->fo.nnodes && i < S->node_cap; i++) {
		struct fo_node *n = &c->fo.nodes[i];
		const struct sp_shard *sp;

		if (!(n->flags & FO_N_UNPROMOTABLE) || n->shard < 0 || n->shard >= S->nsh) {
			S->earn_ms[i] = 0;
			continue;
		}
		sp = &S->sh[n->shard];
		if ((sp->st != SP_IDLE && sp->node == i) || !earn_ok(c, n, now)) {
			S->earn_ms[i] = 0; /* the attach step's own, or not steady now */
			continue;
		}
		if (!S->earn_ms[i])
			S->earn_ms[i] = now;
		if (now - S->earn_ms[i] < c->cfg->shards[n->shard].promotable_after_ms)
			continue;
		n->flags &= ~FO_N_UNPROMOTABLE;
		S->earn_ms[i] = 0;
		pr_info("shard %s: %s promotable again (synced and steady for %d ms)\n",
			c->fo.shards[n->shard].name, n->id,
			c->cfg->shards[n->shard].promotable_after_ms);
		if (ctl_may_change(c))
			say(c, "replica_promotable", &c->fo.shards[n->shard], sp, n->id, NULL);
	}
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;
	long long now = fl_mono_ms();

	(void)fd;
	(void)what;
	if (grow(c->spares, c)) {
		c->spares->since_ms = 0;
		return;
	}
	/* Not ours to attach (a follower, shadow): an attach this controller began as
	 * leader is the next leader's to resume; its node is earned below. */
	for (int i = 0; !ctl_may_change(c) && i < c->spares->nsh; i++)
		if (c->spares->sh[i].st != SP_IDLE)
			set_state(&c->spares->sh[i], SP_IDLE);
	/* Every controller, a follower (always observing: fo.starting) too: what it sees
	 * decides its own failovers, and a new leader goes on with the wait it counted. */
	earn(c, now);
	if (c->fo.starting || !ctl_may_change(c)) {
		c->spares->since_ms = 0;
		return;
	}
	/* Just started or just leader: every agent reports (and a replica's link is up)
	 * before a missing replica is counted. */
	if (!c->spares->since_ms)
		c->spares->since_ms = now;
	if (now - c->spares->since_ms < c->fo.node_down_after_ms + 2 * ctl_agent_heartbeat_ms(c))
		return;
	for (int i = 0; i < c->fo.nshards; i++)
		shard_tick(c, i, now);
}

/* ---- the module ---- */

int ctl_spares_start(struct ctl *c)
{
	struct ctl_spares *S = calloc(1, sizeof(*S));
	struct timeval tv = fl_ms_tv(SP_TICK_MS);

	if (!S)
		return -ENOMEM;
	c->spares = S;
	S->node_cap = c->cfg->node_cap > c->cfg->nnodes ? c->cfg->node_cap : c->cfg->nnodes;
	if (S->node_cap < 1)
		S->node_cap = 1;
	S->earn_ms = calloc(S->node_cap, sizeof(*S->earn_ms));
	if (!S->earn_ms || grow(S, c))
		return -ENOMEM;
	S->tick = event_new(c->base, -1, EV_PERSIST, on_tick, c);
	if (!S->tick)
		return -ENOMEM;
	event_add(S->tick, &tv);
	return 0;
}

void ctl_spares_fini(struct ctl *c)
{
	struct ctl_spares *S = c->spares;

	if (!S)
		return;
	if (S->tick)
		event_free(S->tick);
	for (int i = 0; i < S->nsh; i++)
		free(S->sh[i].tried);
	free(S->sh);
	free(S->earn_ms);
	free(S);
	c->spares = NULL;
}

void ctl_spares_view(const struct ctl *c, int shard, struct ctl_spares_view *v)
{
	const struct sp_shard *sp;
	long long now = fl_mono_ms();

	memset(v, 0, sizeof(*v));
	v->state = "idle";
	v->desired = desired(c, shard);
	if (!c->spares || shard >= c->spares->nsh) {
		v->replicas = -1;
		return;
	}
	sp = &c->spares->sh[shard];
	v->replicas = 0; /* counted now: a follower does not tick */
	if (c->fo.shards[shard].primary >= 0)
		for (int k = 0; k < c->fo.shards[shard].nnodes; k++)
			v->replicas += healthy(c, sp, &c->fo.shards[shard],
					       &c->fo.nodes[c->fo.shards[shard].nodes[k]], now);
	v->deficit_ms = sp->deficit ? now - sp->deficit_since_ms : 0;
	v->state = sp_state_name[sp->st];
	v->node = sp->node >= 0 && sp->st != SP_IDLE ? c->fo.nodes[sp->node].id : NULL;
	v->state_ms = sp->st != SP_IDLE ? now - sp->st_since_ms : 0;
}
