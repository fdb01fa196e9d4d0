// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The REPORT sent to the controllers (keys: common/report_keys.c, docs/protocol.md):
 * the peers' verdicts, the local server's state as the monitor has it, and what the
 * fencing and lease glue say of themselves (agent_fence_report, agent_lease_report).
 * bench/loadgen.c and bench/report_cost.c build the same keys for a healthy node. */
#include <string.h>
#include "common/clock.h"
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

/* A primary, a server that is not up, anything the controller may have to act on
 * reports every heartbeat_ms: the host path judges a silent node by it. A healthy
 * replica with nothing new reports every replica_heartbeat_ms (a change still goes at
 * once: its link to the primary going down, a new role), unless its lease is half
 * gone (the peers' echoes keep it running; once they stop, only the controller's
 * answer can renew it before it runs out). */
int agent_report_interval_ms(void *ctx)
{
	const struct agent *a = ctx;
	const struct srv_state *st = srvmon_state(a->srv);
	int hb = a->cfg->agent.heartbeat_ms, idle = a->cfg->agent.replica_heartbeat_ms;
	int lease_ms = a->cfg->agent.lease_ms, quick = lease_ms / 4 < 10 ? 10 : lease_ms / 4;
	uint64_t now = fl_clock_ns(CLOCK_MONOTONIC);
	long long left = agent_lease_ms_left(a, now);

	/* A lease held and half gone (the peers' echoes stopped renewing it): only an
	 * answer renews it now, so a REPORT every quarter of it (not slower than
	 * heartbeat_ms) leaves three chances before it runs out, whatever a kick did
	 * to the heartbeat's phase. */
	if (agent_lease_held(a, now) && left * 2 < lease_ms)
		return quick < hb ? quick : hb;
	if (idle <= hb || st->proc != SRV_UP || !st->have_info ||
	    st->info.role != INFO_ROLE_SLAVE || st->info.link_up <= 0 || st->auth_error[0])
		return hb;
	/* A peer gone quiet (no echo reply for three probes, or not judged up): the
	 * controller may be judging that peer's host now, and waits for reports from
	 * after the peer's lease could run out. */
	for (int i = 0; a->probe && i < probe_npeers(a->probe); i++) {
		const struct probe_peer_info *pi = probe_peer(a->probe, i);

		if (strcmp(probe_report_state(pi->ev.state), "up") ||
		    pi->ev.reply_age_ns == VERDICT_NEVER ||
		    pi->ev.reply_age_ns > 3ULL * a->cfg->agent.probe_interval_ms * 1000000)
			return hb;
	}
	if (left >= 0 && left * 2 < lease_ms)
		return hb; /* the peers' echoes stopped renewing it */
	return idle;
}

/* A lease holder renews its lease from answers (the peers' echoes only keep it): with
 * three heartbeats in flight a controller that answers up to 3 heartbeats late still
 * renews it every heartbeat. Everyone else waits for the answer. */
int agent_report_in_flight_max(void *ctx)
{
	const struct agent *a = ctx;

	return agent_lease_held(a, fl_clock_ns(CLOCK_MONOTONIC)) ? 3 : 1;
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
	rep_add_key(m, RK_HEARTBEAT, NULL, "%d", agent_report_interval_ms(a));
	if (a->admit.have) {
		char csv[ADMIT_LIST_MAX + 2];

		rep_add_key(m, RK_ADMIT_TERM, NULL, "%lld", a->admit.term);
		rep_add_key(m, RK_ADMIT_GRANT, NULL, "%lld", a->admit.grant);
		if (strlen(admit_csv(&a->admit, csv, sizeof(csv))) < 1024)
			rep_add_key(m, RK_ADMITTED, NULL, "%s", csv);
	}
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
