// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Self-demotion glue (agent/demote.h decides): with [redis] tls = yes and the write
 * lease on, an old primary turns its own server into a replica of the primary the
 * controller names, over the agent's own (always allowed) connection, as the
 * controller would (ctl_op_replicaof): MULTI, REPLICAOF, CONFIG REWRITE, CLIENT KILL
 * TYPE normal and pubsub (ours is spared: CLIENT KILL skips the caller), EXEC. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/clock.h"
#include "common/log.h"
#include "agent/demote.h"
#include "agent/agent_layers.h"

/* Self-demotion's glue state. */
struct agent_demote {
	struct demote_sm sm;	  /* the pure decision (agent/demote.h) */
	uint64_t master_since_ns; /* the server says master since (0: it does not) */
	uint64_t master_episode;  /* times it turned master (seen by this agent) */
	/* What the transaction in flight is about, for its EXEC's answer. */
	struct {
		long long epoch;
		char primary[CFG_ID_MAX + 1];
		char addr[300];
	} job;
};

int agent_demote_start(struct agent *a)
{
	a->demote = calloc(1, sizeof(*a->demote));
	if (!a->demote)
		return -ENOMEM;
	demote_init(&a->demote->sm);
	return 0;
}

void agent_demote_free(struct agent *a)
{
	free(a->demote);
	a->demote = NULL;
}

static void job_failed(struct agent *a, const char *why)
{
	struct agent_demote *d = a->demote;

	pr_warn("failed to demote the server to a replica of %s (epoch %lld): %s; again in "
		"%d ms\n",
		d->job.primary, d->job.epoch, why, d->sm.backoff_ms);
	demote_done(&d->sm, fl_mono_ms(), false);
}

static void on_demote_exec(void *ctx, redisReply *r, void *priv)
{
	struct agent *a = priv; /* ctx is the monitor's (srvmon_send) */
	struct agent_demote *d = a->demote;
	char esc[LOG_ESC_MAX], why[300];
	const char *rewrite = "ok";
	struct evrec ev;

	(void)ctx;
	if (!r) {
		job_failed(a, "connection lost");
		return;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		job_failed(a, log_esc(r->str, esc, sizeof(esc)));
		return;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
		snprintf(why, sizeof(why), "EXEC answered with type %d", r->type);
		job_failed(a, why);
		return;
	}
	if (r->element[0]->type == REDIS_REPLY_ERROR) {
		snprintf(why, sizeof(why), "REPLICAOF: %s",
			 log_esc(r->element[0]->str, esc, sizeof(esc)));
		job_failed(a, why);
		return;
	}
	/* CONFIG REWRITE fails without a config file: the demotion holds until the
	 * server restarts; restarted as a master, it is demoted again (demote.h). */
	if (r->element[1]->type == REDIS_REPLY_ERROR) {
		rewrite = log_esc(r->element[1]->str, esc, sizeof(esc));
		pr_warn("self-demotion: CONFIG REWRITE failed: %s\n", rewrite);
	}
	demote_done(&d->sm, fl_mono_ms(), true);
	evrec_begin(&ev, NULL, a->node, "self_demoted");
	evrec_int(&ev, "epoch", d->job.epoch);
	evrec_str(&ev, "primary", d->job.primary);
	evrec_str(&ev, "primary_addr", d->job.addr);
	evrec_str(&ev, "reason",
		  "the controller names another primary; the server said "
		  "master without the write lease");
	evrec_str(&ev, "config_rewrite", rewrite);
	agent_out_log(a, &ev);
	pr_warn("demoted the server: now a replica of %s (%s), epoch %lld\n", d->job.primary,
		d->job.addr, d->job.epoch);
	agent_out_kick(a);
}

static void send_job(struct agent *a, const struct cfg_node *p)
{
	char port[16];
	const char *multi[] = {"MULTI"}, *discard[] = {"DISCARD"}, *exec[] = {"EXEC"};
	const char *replicaof[] = {"REPLICAOF", p->redis.host, port};
	const char *rewrite[] = {"CONFIG", "REWRITE"};
	const char *kill_normal[] = {"CLIENT", "KILL", "TYPE", "normal"};
	const char *kill_pubsub[] = {"CLIENT", "KILL", "TYPE", "pubsub"};
	int err;

	snprintf(port, sizeof(port), "%d", p->redis.port);
	err = srvmon_send(a->srv, 1, multi, NULL, NULL);
	if (err) {
		job_failed(a, strerror(-err));
		return;
	}
	if ((err = srvmon_send(a->srv, 3, replicaof, NULL, NULL)) ||
	    (err = srvmon_send(a->srv, 2, rewrite, NULL, NULL)) ||
	    (err = srvmon_send(a->srv, 4, kill_normal, NULL, NULL)) ||
	    (err = srvmon_send(a->srv, 4, kill_pubsub, NULL, NULL)) ||
	    (err = srvmon_send(a->srv, 1, exec, on_demote_exec, a))) {
		/* Not a transaction left open for the monitor's next PING. */
		srvmon_send(a->srv, 1, discard, NULL, NULL);
		job_failed(a, strerror(-err));
	}
}

void agent_demote_answer(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns,
			 bool lease_was_held)
{
	struct agent_demote *d = a->demote;
	const struct srv_state *st = srvmon_state(a->srv);
	const struct cfg_node *p = primary && primary[0] ? cfg_find_node(a->cfg, primary) : NULL;
	struct demote_in in = {
	    .now_ms = fl_mono_ms(),
	    .epoch = epoch,
	    .primary = primary,
	    .me = a->node,
	    .same_shard = p && p->shard == a->me->shard && p->shard >= 0 && p->redis.port &&
			  !p->redis.unix_path[0],
	    .lease_held = lease_was_held,
	    .master_before = d && d->master_since_ns && d->master_since_ns < sent_ns &&
			     st->proc == SRV_UP && st->have_info &&
			     st->info.role == INFO_ROLE_MASTER,
	    .episode = d ? d->master_episode : 0,
	};

	/* [redis] tls = yes only: over plain TCP the controller's connection names
	 * itself before the server says a byte, and the controller demotes (docs/security.md, TLS).
	 */
	if (!d || !agent_lease_on(a) || !a->srv || !a->cfg->redis.tls)
		return;
	if (!demote_on_answer(&d->sm, &in))
		return;
	if (!p) { /* never: same_shard says it is a node of the file */
		demote_done(&d->sm, in.now_ms, false);
		return;
	}
	d->job.epoch = epoch;
	snprintf(d->job.primary, sizeof(d->job.primary), "%s", primary);
	snprintf(d->job.addr, sizeof(d->job.addr), "%s:%d", p->redis.host, p->redis.port);
	pr_info("the controller names %s primary (epoch %lld) and the server, without the "
		"write lease, says master: demoting it\n",
		primary, epoch);
	send_job(a, p);
}

/* Since when it says master (0: it does not; a server that exited is a new one when
 * it is back). */
void agent_demote_on_srv(struct agent *a, const struct srv_state *cur)
{
	struct agent_demote *d = a->demote;

	if (!d)
		return;
	if (cur->proc == SRV_DOWN)
		d->master_since_ns = 0;
	if (!cur->have_info || cur->proc != SRV_UP)
		return; /* keeps what it knew */
	if (cur->info.role != INFO_ROLE_MASTER)
		d->master_since_ns = 0;
	else if (!d->master_since_ns) {
		d->master_since_ns = fl_clock_ns(CLOCK_MONOTONIC);
		d->master_episode++;
	}
}
