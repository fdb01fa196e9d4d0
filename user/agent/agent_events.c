// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The agent's events: what the kernel (process exits, OOM kills, scheduler
 * state), the server monitor, the controller links and the ICMP prober report,
 * written to the event log, counted for metrics, and built into the report sent
 * to the controllers. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>
#include "common/clock.h"
#include "agent/exit_code.h"
#include "common/log.h"
#include "common/daemon.h"
#include "agent/agent_internal.h"

/* flatline_agent_events_total{kind}: the kind as evrec_begin() wrote it. */
static void count_event(struct agent *a, const struct evrec *r)
{
	const char *k = strstr(r->buf, "\"kind\":\""), *end;
	size_t n;
	int i;

	if (!k)
		return;
	k += 8;
	end = strchr(k, '"');
	n = end ? (size_t)(end - k) : 0;
	if (!n || n >= sizeof(a->ev_counts[0].kind))
		return;
	for (i = 0; i < a->nev_kinds; i++)
		if (!strncmp(a->ev_counts[i].kind, k, n) && !a->ev_counts[i].kind[n])
			break;
	if (i == a->nev_kinds) {
		if (i == (int)(sizeof(a->ev_counts) / sizeof(a->ev_counts[0])))
			return;
		memcpy(a->ev_counts[i].kind, k, n);
		a->ev_counts[i].kind[n] = '\0';
		a->nev_kinds++;
	}
	a->ev_counts[i].n++;
}

void agent_log(struct agent *a, struct evrec *r)
{
	daemon_log_event(a->log, a->event_log, r);
	count_event(a, r);
}

static const char *watched_cgroup(const struct agent *a, uint64_t cgid)
{
	for (int i = 0; i < a->ncgroups; i++)
		if (a->cgroup_ids[i] == cgid)
			return a->cgroups[i];
	return NULL;
}

static void add_cause(struct evrec *r, uint32_t exit_code)
{
	struct exit_cause c;
	char buf[16];
	const char *name;

	exit_code_decode(exit_code, &c);
	if (c.signal) {
		name = exit_code_signame(c.signal, buf, sizeof(buf));
		if (name)
			evrec_str(r, "signal", name);
		else
			evrec_int(r, "signal_number", c.signal);
		evrec_bool(r, "core_dumped", c.core_dumped);
	} else {
		evrec_int(r, "exit_status", c.status);
	}
}

static void add_oom(struct evrec *r, const struct fl_oom_info *o)
{
	/* Before Linux 6.8 mark_victim carried only the pid: no figures then. */
	if (!o->total_vm_kb && !o->anon_rss_kb && !o->file_rss_kb)
		return;
	evrec_uint(r, "total_vm_kb", o->total_vm_kb);
	evrec_uint(r, "anon_rss_kb", o->anon_rss_kb);
	evrec_uint(r, "file_rss_kb", o->file_rss_kb);
	evrec_uint(r, "shmem_rss_kb", o->shmem_rss_kb);
	evrec_uint(r, "pgtables_kb", o->pgtables_kb);
	evrec_int(r, "oom_score_adj", o->oom_score_adj);
}

void on_proc_event(void *ctx, const struct fl_proc_event *e)
{
	struct agent *a = ctx;
	uint64_t now = fl_clock_ns(CLOCK_MONOTONIC);
	char comm[FL_COMM_LEN + 1];
	const char *kind, *cg;
	struct evrec r;

	switch (e->kind) {
	case FL_EV_PROC_EXIT:
		kind = "proc_exit";
		break;
	case FL_EV_OOM_VICTIM:
		kind = "oom_kill";
		break;
	case FL_EV_PROC_START:
		kind = "proc_start";
		break;
	default:
		pr_warn("ignoring BPF event of unknown kind %u\n", e->kind);
		return;
	}
	memcpy(comm, e->comm, FL_COMM_LEN);
	comm[FL_COMM_LEN] = '\0';

	evrec_begin(&r, NULL, a->node, kind);
	evrec_int(&r, "pid", e->pid);
	if (e->kind != FL_EV_OOM_VICTIM) {
		evrec_int(&r, "ppid", e->ppid);
		evrec_str(&r, "comm", comm);
	}
	if (e->kind == FL_EV_PROC_EXIT) {
		add_cause(&r, e->exit_code);
		evrec_bool(&r, "oom", e->oom);
	}
	if (e->oom)
		add_oom(&r, &e->oom_info);
	if (e->watch & FL_WATCH_CGROUP) {
		cg = watched_cgroup(a, e->cgroup_id);
		if (cg)
			evrec_str(&r, "cgroup", cg);
		evrec_uint(&r, "cgroup_id", e->cgroup_id);
	}
	/* From the kernel's event to this line: the detection delay in userspace. */
	evrec_uint(&r, "delay_us", now > e->ts_ns ? (now - e->ts_ns) / 1000 : 0);
	agent_log(a, &r);
	if (e->kind == FL_EV_PROC_EXIT && a->srv && e->pid == (__u32)a->srv_pid) {
		struct exit_cause c;
		char cause[32], sig[16];
		const char *name;

		exit_code_decode(e->exit_code, &c);
		name = c.signal ? exit_code_signame(c.signal, sig, sizeof(sig)) : NULL;
		if (c.signal)
			snprintf(cause, sizeof(cause), "%s", name ? name : "signal");
		else
			snprintf(cause, sizeof(cause), "status:%d", c.status);
		if (a->sw)
			sched_watch_remove(a->sw, a->srv_pid);
		a->srv_pid = 0; /* the kernel dropped it from the watched set */
		srvmon_exited(a->srv, e->pid, cause, c.core_dumped, e->oom);
	}
}

/* The server's pid changed (found, or restarted): watch the new one. */
static void follow_pid(struct agent *a, pid_t pid)
{
	int err;

	if (pid == a->srv_pid)
		return;
	if (a->srv_pid) {
		proc_watch_unwatch_pid(a->pw, a->srv_pid);
		if (a->sw)
			sched_watch_remove(a->sw, a->srv_pid);
	}
	a->srv_pid = 0;
	if (!pid)
		return;
	/* Its main thread serves commands (Redis, Valkey: io-threads only
	 * read and write for it): that is the thread judged. */
	if (a->sw && (err = sched_watch_add(a->sw, pid, pid)))
		pr_warn("failed to watch the scheduler state of server pid %d: %s\n", (int)pid,
			strerror(-err));
	err = proc_watch_watch_pid(a->pw, pid, FL_WATCH_PID);
	if (err) {
		pr_warn("failed to watch server pid %d: %s\n", (int)pid, strerror(-err));
		return;
	}
	a->srv_pid = pid;
	/* It may have died before the map update: then no event will come. */
	if (!fl_pid_alive(pid)) {
		proc_watch_unwatch_pid(a->pw, pid);
		a->srv_pid = 0;
		srvmon_exited(a->srv, pid, "unknown", false, false);
	}
}

/* Why a server is hung or busy, and what its command thread did. */
static void add_srv_cause(struct evrec *r, const struct srv_state *st)
{
	const struct srv_evidence *ev = &st->ev;

	evrec_str(r, "cause", srv_cause_name(st->cause));
	if (st->proc == SRV_BUSY)
		evrec_str(r, "by", st->busy_reply ? "reply" : "kernel");
	if (st->busy_detail[0])
		evrec_str(r, "detail", st->busy_detail);
	if (st->cause == SRV_CAUSE_UNKNOWN || (st->busy_reply && !ev->window_ms))
		return;
	evrec_str(r, "thread_state", sched_state_name(ev->thread_state));
	evrec_int(r, "state_ms", ev->state_ms);
	evrec_int(r, "window_ms", ev->window_ms);
	evrec_int(r, "run_ms", ev->run_ms);
	evrec_int(r, "wait_ms", ev->wait_ms);
	if (ev->throttled_ms >= 0)
		evrec_int(r, "throttled_ms", ev->throttled_ms);
}

static void log_srv_change(struct agent *a, const struct srv_state *prev,
			   const struct srv_state *cur, unsigned what)
{
	const struct info_repl *i = &cur->info;
	struct evrec r;

	if (what & SRV_CH_PROC && prev->proc != cur->proc) {
		const char *kind = NULL;

		switch (cur->proc) {
		case SRV_HUNG:
			kind = "proc_hung";
			break;
		case SRV_UP:
			kind = "proc_up";
			break;
		case SRV_BUSY:
			kind = "proc_busy";
			break;
		case SRV_LOADING:
			kind = "proc_loading";
			break;
		case SRV_DOWN:
			/* A death seen by BPF is logged as proc_exit already. */
			kind = cur->exit_cause[0] ? NULL : "proc_down";
			break;
		case SRV_UNKNOWN:
			break;
		}
		if (kind) {
			evrec_begin(&r, NULL, a->node, kind);
			evrec_int(&r, "pid", cur->pid);
			evrec_str(&r, "was", srv_proc_name(prev->proc));
			evrec_str(&r, "server", a->me->redis_str);
			if (cur->proc == SRV_HUNG)
				evrec_int(&r, "silent_ms",
					  cur->cause == SRV_CAUSE_STOPPED
					      ? cur->ev.silent_ms
					      : (long long)a->cfg->agent.hung_after *
						    a->cfg->agent.ping_interval_ms);
			if (cur->proc == SRV_HUNG || cur->proc == SRV_BUSY)
				add_srv_cause(&r, cur);
			agent_log(a, &r);
		}
	}
	if (what & SRV_CH_ROLE && cur->have_info && i->role != INFO_ROLE_UNKNOWN &&
	    (prev->info.role != i->role || i->role == INFO_ROLE_SLAVE)) {
		evrec_begin(&r, NULL, a->node, "role_change");
		evrec_str(&r, "role", info_role_name(i->role));
		evrec_str(&r, "was", info_role_name(prev->info.role));
		if (i->role == INFO_ROLE_SLAVE) {
			evrec_str(&r, "master_host", i->master_host);
			evrec_int(&r, "master_port", i->master_port);
		}
		agent_log(a, &r);
	}
}

/* Something changed: report to every controller now. */
void kick_reports(struct agent *a)
{
	for (int i = 0; i < a->nrep; i++)
		reporter_kick(a->rep[i]);
}

void on_srv_changed(void *ctx, const struct srv_state *prev, const struct srv_state *cur,
		    unsigned what)
{
	struct agent *a = ctx;

	/* Given up before anyone hears of it: the controller may fail over at once. */
	if (what & SRV_CH_PROC && prev->proc != cur->proc &&
	    (cur->proc == SRV_HUNG || cur->proc == SRV_DOWN))
		lease_drop(a, cur->proc == SRV_HUNG ? "given_up: server hung"
						    : "given_up: server down");
	if (cur->pid != a->srv_pid && cur->proc != SRV_DOWN)
		follow_pid(a, cur->pid);
	log_srv_change(a, prev, cur, what);
	demote_on_srv(a, cur);
	/* Offsets alone ride on the next heartbeat; everything else goes now. */
	if (what & ~SRV_CH_INFO)
		kick_reports(a);
}

void on_srv_note(void *ctx, const char *kind, const char *detail)
{
	struct agent *a = ctx;
	struct evrec r;

	evrec_begin(&r, NULL, a->node, kind);
	evrec_int(&r, "pid", srvmon_state(a->srv)->pid);
	evrec_str(&r, "server", a->me->redis_str);
	evrec_str(&r, "reply", detail);
	agent_log(a, &r);
}

void on_sched_event(void *ctx, const struct fl_sched_event *e)
{
	struct agent *a = ctx;

	if (a->srv)
		srvmon_sched_event(a->srv, e);
}

static void report_peers(struct agent *a, struct rep_msg *m);

void build_report(void *ctx, struct rep_msg *m)
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
	if (a->fence.fenced)
		rep_add_key(m, RK_FENCED, NULL, "1");
	if (a->lw) {
		uint64_t now = fl_clock_ns(CLOCK_MONOTONIC);
		bool held = kernel_held(a, now);

		rep_add_key(m, RK_LEASE, NULL, "%s", held ? "held" : "lapsed");
		rep_add_key(m, RK_LEASE_MS_LEFT, NULL, "%llu",
			    held ? (unsigned long long)((a->lease.k.deadline_ns - now) / 1000000)
				 : 0ull);
		rep_add_key(m, RK_LEASE_SOURCE, NULL, "%s", lease_source_name(a->lease.k.source));
	}
}

void on_rep_event(void *ctx, const char *kind, const char *detail)
{
	struct agent *a = ctx;
	struct evrec r;

	evrec_begin(&r, NULL, a->node, kind);
	evrec_str(&r, "detail", detail);
	agent_log(a, &r);
}

void on_rep_answer(void *ctx, long long epoch, const char *primary, uint64_t sent_ns)
{
	struct agent *a = ctx;
	bool held = kernel_held(a, fl_clock_ns(CLOCK_MONOTONIC));

	a->ctl_answer_ms = fl_mono_ms();
	a->ctl_answer_ns = fl_clock_ns(CLOCK_MONOTONIC);
	a->ctl_epoch = epoch;
	snprintf(a->ctl_primary, sizeof(a->ctl_primary), "%s", primary);
	lease_answer(a, epoch, primary, sent_ns);
	demote_answer(a, epoch, primary, sent_ns, held);
	if (a->fence.fenced)
		fence_eval_now(a);
}

/* --- ICMP peers ------------------------------------------------------- */

void on_peer_change(void *ctx, const struct probe_peer_info *peer)
{
	struct agent *a = ctx;
	struct evrec r;

	probe_evrec(&r, a->node, peer);
	agent_log(a, &r);
	kick_reports(a);
	if (a->srv)
		fence_eval_now(a);
}

void on_peer_route(void *ctx, const struct probe_peer_info *peer, int prev_ifindex)
{
	struct agent *a = ctx;
	struct evrec r;

	probe_route_evrec(&r, a->node, peer, prev_ifindex);
	agent_log(a, &r);
}

static void report_peers(struct agent *a, struct rep_msg *m)
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
