// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Self-fencing glue (agent/fence.h decides): evaluates the controller's last
 * answer and the peers, and pauses or resumes the local server's writes
 * (CLIENT PAUSE WRITE / UNPAUSE). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/clock.h"
#include "common/log.h"
#include "agent/fence.h"
#include "agent/agent_layers.h"

/* Self-fencing's glue state: what fence_eval() keeps between evaluations. */
struct agent_fence {
	struct fence_sm sm;
};

static int pause_ms(const struct agent *a)
{
	int ms = 3 * a->cfg->agent.heartbeat_ms;

	return ms < 1000 ? 1000 : ms;
}

static void on_fence_reply(void *ctx, redisReply *r, void *priv)
{
	struct agent *a = ctx;
	char esc[LOG_ESC_MAX];

	if (r && r->type == REDIS_REPLY_ERROR)
		pr_warn("failed to %s writes on the server: %s\n", priv ? "pause" : "unpause",
			log_esc(r->str, esc, sizeof(esc)));
	(void)a;
}

static void send_pause(struct agent *a, bool pause)
{
	char ms[16];
	const char *p[] = {"CLIENT", "PAUSE", ms, "WRITE"}, *u[] = {"CLIENT", "UNPAUSE"};
	int err;

	snprintf(ms, sizeof(ms), "%d", pause_ms(a));
	err = pause ? srvmon_send(a->srv, 4, p, on_fence_reply, a)
		    : srvmon_send(a->srv, 2, u, on_fence_reply, NULL);
	if (err && err != -ENOTCONN)
		pr_warn("failed to send CLIENT %s: %s\n", pause ? "PAUSE" : "UNPAUSE",
			strerror(-err));
}

int agent_fence_start(struct agent *a)
{
	a->fence = calloc(1, sizeof(*a->fence));
	return a->fence ? 0 : -ENOMEM;
}

bool agent_fence_fenced(const struct agent *a)
{
	return a->fence && a->fence->sm.fenced;
}

void agent_fence_report(const struct agent *a, struct rep_msg *m)
{
	if (agent_fence_fenced(a))
		rep_add_key(m, RK_FENCED, NULL, "1");
}

void agent_fence_free(struct agent *a)
{
	free(a->fence);
	a->fence = NULL;
}

void agent_fence_eval(struct agent *a)
{
	const struct srv_state *st = srvmon_state(a->srv);
	struct fence_in in = {
	    .now_ms = fl_mono_ms(),
	    .after_ms = a->cfg->agent.self_fence_after_ms,
	    .is_primary = st->have_info && st->info.role == INFO_ROLE_MASTER,
	    .is_replica = st->have_info && st->info.role == INFO_ROLE_SLAVE,
	    .have_peers = a->probe && probe_npeers(a->probe) > 0,
	    .ctl_answer_ms = a->ctl.ms,
	    .ctl_epoch = a->ctl.epoch,
	    .ctl_primary = a->ctl.primary,
	    .me = a->node,
	};
	struct evrec r;
	int down = 0;

	if (a->fence && a->fence->sm.fenced && a->shadow) {
		/* Shadow mode heard while fenced: writes resumed, nothing paused. */
		a->fence->sm.fenced = false;
		send_pause(a, false);
		evrec_begin(&r, NULL, a->node, "self_fence_lifted");
		evrec_str(&r, "reason", "shadow mode");
		agent_out_log(a, &r);
		return;
	}
	if (!a->fence || !a->cfg->agent.self_fence || a->shadow)
		return; /* off, or shadow mode ([controller] mode): no CLIENT PAUSE */
	/* Reachable = a round trip within peer_down_after_ms (an echo reply that got all
	 * the way in); packets that merely arrived prove the peer alive, not that we
	 * reach it. A peer not judged yet counts as reachable, as before. */
	for (int i = 0; in.have_peers && i < probe_npeers(a->probe); i++) {
		const struct probe_peer_info *pi = probe_peer(a->probe, i);
		uint64_t now = fl_clock_ns(CLOCK_MONOTONIC);
		bool rt =
		    pi->rt_recv_ns &&
		    now - pi->rt_recv_ns < (uint64_t)a->cfg->agent.peer_down_after_ms * 1000000;

		if (!rt && pi->ev.state != VERDICT_UNKNOWN)
			down++;
	}
	in.any_peer_reachable = in.have_peers && down < probe_npeers(a->probe);
	switch (fence_eval(&a->fence->sm, &in)) {
	case FENCE_NONE:
		return;
	case FENCE_HOLD:
		send_pause(a, true); /* renewed before it lapses */
		return;
	case FENCE_NOW:
		send_pause(a, true);
		evrec_begin(&r, NULL, a->node, "self_fenced");
		evrec_int(&r, "controller_silent_ms", in.now_ms - a->ctl.ms);
		evrec_int(&r, "peers_down", down);
		evrec_int(&r, "epoch", a->ctl.epoch);
		evrec_int(&r, "pause_ms", pause_ms(a));
		agent_out_log(a, &r);
		pr_warn("isolated primary: writes paused until the controller is reached\n");
		break;
	case FENCE_LIFT_CONFIRMED:
	case FENCE_LIFT_DEMOTED:
		send_pause(a, false);
		evrec_begin(&r, NULL, a->node, "self_fence_lifted");
		evrec_str(&r, "reason",
			  in.is_replica ? "demoted: the server is a replica now"
					: "the controller confirmed this node as primary");
		evrec_int(&r, "epoch", a->ctl.epoch);
		evrec_str(&r, "primary", a->ctl.primary);
		agent_out_log(a, &r);
		break;
	}
	agent_out_kick(a);
}
