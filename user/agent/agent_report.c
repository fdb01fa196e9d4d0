// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The REPORT sent to the controllers (keys: common/report_keys.c, docs/protocol.md):
 * the peers' verdicts, the local server's state as the monitor has it, and what the
 * fencing and lease glue say of themselves (agent_fence_report, agent_lease_report).
 * bench/loadgen.c and bench/report_cost.c build the same keys for a healthy node. */
#include "agent/agent_layers.h"

static void report_peers(const struct agent *a, struct rep_msg *m)
{
	for (int i = 0; a->probe && i < probe_npeers(a->probe); i++) {
		const struct probe_peer_info *pi = probe_peer(a->probe, i);

		rep_add_key(m, RK_PEER, pi->id, "%s", probe_report_state(pi->ev.state));
		if (pi->st.replied)
			rep_add_key(m, RK_PEER_RTT_US, pi->id, "%llu",
				    (unsigned long long)(pi->st.rtt_last_ns / 1000));
		if (pi->ev.reply_age_ns != VERDICT_NEVER)
			rep_add_key(m, RK_PEER_REPLY_AGE_MS, pi->id, "%llu",
				    (unsigned long long)(pi->ev.reply_age_ns / 1000000));
		if (pi->ev.packet_age_ns != VERDICT_NEVER)
			rep_add_key(m, RK_PEER_PACKET_AGE_MS, pi->id, "%llu",
				    (unsigned long long)(pi->ev.packet_age_ns / 1000000));
	}
}

void agent_report_build(void *ctx, struct rep_msg *m)
{
	struct agent *a = ctx;
	const struct srv_state *st = srvmon_state(a->srv);
	const struct info_repl *i = &st->info;

	report_peers(a, m);
	rep_add_key(m, RK_PROC, NULL, "%s", srv_proc_name(st->proc));
	rep_add_key(m, RK_PID, NULL, "%d", (int)st->pid);
	rep_add_key(m, RK_PROC_CHANGE_MS, NULL, "%lld", (long long)st->proc_change_ms);
	if (st->proc == SRV_DOWN && st->exit_cause[0]) {
		rep_add_key(m, RK_EXIT, NULL, "%s", st->oom ? "oom" : st->exit_cause);
		rep_add_key(m, RK_CORE_DUMPED, NULL, "%d", st->core_dumped);
	}
	if ((st->proc == SRV_HUNG || st->proc == SRV_BUSY) && st->cause != SRV_CAUSE_NONE) {
		rep_add_key(m, RK_CAUSE, NULL, "%s", srv_cause_name(st->cause));
		if (st->cause != SRV_CAUSE_UNKNOWN) {
			rep_add_key(m, RK_THREAD_STATE, NULL, "%s",
				    sched_state_name(st->ev.thread_state));
			rep_add_key(m, RK_STATE_MS, NULL, "%lld", (long long)st->ev.state_ms);
			rep_add_key(m, RK_RUN_MS, NULL, "%lld", (long long)st->ev.run_ms);
			rep_add_key(m, RK_WAIT_MS, NULL, "%lld", (long long)st->ev.wait_ms);
			rep_add_key(m, RK_WINDOW_MS, NULL, "%lld", (long long)st->ev.window_ms);
			if (st->ev.throttled_ms >= 0)
				rep_add_key(m, RK_THROTTLED_MS, NULL, "%lld",
					    (long long)st->ev.throttled_ms);
		}
	}
	if (st->auth_error[0])
		rep_add_key(m, RK_AUTH_ERROR, NULL, "%s", st->auth_error);
	rep_add_key(m, RK_LEASE_LEN, NULL, "%d", a->cfg->agent.lease_ms);
	/* Whether INFO is known or not: a revoked lease is news at once. */
	agent_lease_report(a, m);
	if (!st->have_info)
		return;
	if (i->server != INFO_SRV_UNKNOWN)
		rep_add_key(m, RK_SERVER, NULL, "%s", info_server_name(i->server));
	if (i->version[0])
		rep_add_key(m, RK_VERSION, NULL, "%s", i->version);
	rep_add_key(m, RK_ROLE, NULL, "%s", info_role_name(i->role));
	if (i->role == INFO_ROLE_SLAVE) {
		rep_add_key(m, RK_MASTER_HOST, NULL, "%s", i->master_host);
		rep_add_key(m, RK_MASTER_PORT, NULL, "%d", i->master_port);
		rep_add_key(m, RK_MASTER_LINK_STATUS, NULL, "%s", i->link_up > 0 ? "up" : "down");
		rep_add_key(m, RK_MASTER_LAST_IO_S, NULL, "%lld", i->last_io_s);
		rep_add_key(m, RK_MASTER_SYNC_IN_PROGRESS, NULL, "%d", i->sync_in_progress);
	}
	if (i->master_replid[0])
		rep_add_key(m, RK_MASTER_REPLID, NULL, "%s", i->master_replid);
	if (i->offset >= 0)
		rep_add_key(m, RK_REPL_OFFSET, NULL, "%lld", i->offset);
	rep_add_key(m, RK_SLAVE_PRIORITY, NULL, "%d", i->slave_priority);
	rep_add_key(m, RK_CONNECTED_SLAVES, NULL, "%d", i->connected_slaves);
	if (i->run_id[0])
		rep_add_key(m, RK_RUN_ID, NULL, "%s", i->run_id);
	agent_fence_report(a, m);
}
