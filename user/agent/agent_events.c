// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The agent's events: what the kernel (process exits, OOM kills, scheduler
 * state), the server monitor, the controller links and the ICMP prober report,
 * written to the event log (agent_out.c) and handed to the lease, fencing and
 * demotion glue. The layer above the glue: nothing below calls back into it. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>
#include "common/clock.h"
#include "agent/exit_code.h"
#include "common/log.h"
#include "common/daemon.h"
#include "agent/agent_layers.h"

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

void agent_on_proc_event(void *ctx, const struct fl_proc_event *e)
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
	agent_out_log(a, &r);
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
	if (ev->sleep_call)
		evrec_str(r, "syscall", ev->sleep_call);
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
			agent_out_log(a, &r);
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
		agent_out_log(a, &r);
	}
}

void agent_on_srv_changed(void *ctx, const struct srv_state *prev, const struct srv_state *cur,
			  unsigned what)
{
	struct agent *a = ctx;

	/* Given up before anyone hears of it: the controller may fail over at once. */
	if (what & SRV_CH_PROC && prev->proc != cur->proc &&
	    (cur->proc == SRV_HUNG || cur->proc == SRV_DOWN))
		agent_lease_drop(a, cur->proc == SRV_HUNG ? "given_up: server hung"
							  : "given_up: server down");
	if (cur->pid != a->srv_pid && cur->proc != SRV_DOWN)
		follow_pid(a, cur->pid);
	/* A server process just known: its sockets marked now, before its PONG can
	 * bring a lease (not at the next heartbeat). */
	if (cur->pid != prev->pid && cur->pid > 0)
		agent_lease_rescan(a);
	log_srv_change(a, prev, cur, what);
	agent_demote_on_srv(a, cur);
	/* Offsets alone ride on the next heartbeat; everything else goes now. */
	if (what & ~SRV_CH_INFO)
		agent_out_kick(a);
}

void agent_on_srv_note(void *ctx, const char *kind, const char *detail)
{
	struct agent *a = ctx;
	struct evrec r;

	evrec_begin(&r, NULL, a->node, kind);
	evrec_int(&r, "pid", srvmon_state(a->srv)->pid);
	evrec_str(&r, "server", a->me->redis_str);
	if (!strcmp(kind, "server_pid")) {
		/* The pid watched (0: none) is not the one the server reports. */
		evrec_int(&r, "process_id", srvmon_state(a->srv)->info.pid);
		evrec_str(&r, "detail", detail);
	} else {
		evrec_str(&r, "reply", detail);
	}
	agent_out_log(a, &r);
}

void agent_on_sched_event(void *ctx, const struct fl_sched_event *e)
{
	struct agent *a = ctx;

	if (a->srv)
		srvmon_sched_event(a->srv, e);
}

void agent_on_rep_event(void *ctx, const char *kind, const char *detail)
{
	struct agent *a = ctx;
	struct evrec r;

	evrec_begin(&r, NULL, a->node, kind);
	evrec_str(&r, "detail", detail);
	agent_out_log(a, &r);
}

void agent_mode_apply(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns)
{
	bool shadow = a->ctl_shadow >= 0 ? a->ctl_shadow : a->cfg->controller.shadow;
	struct evrec r;
	int err;

	if (shadow == a->shadow)
		return;
	a->shadow = shadow;
	evrec_begin(&r, NULL, a->node, "mode_changed");
	evrec_str(&r, "mode", shadow ? "shadow" : "active");
	evrec_str(&r, "by", a->ctl_shadow >= 0 ? "controller" : "reload");
	agent_out_log(a, &r);
	pr_info("mode %s (%s)\n", shadow ? "shadow" : "active",
		a->ctl_shadow >= 0 ? "the controller's answer" : "[controller] mode");
	srvmon_set_no_script_kill(a->srv, shadow);
	if (shadow)
		agent_fence_eval(a); /* lifts a self-fence: nothing is paused in shadow mode */
	err = agent_lease_set_shadow(a, shadow, epoch, primary, sent_ns);
	if (err)
		pr_warn("failed to open the write lease: %s; running without it\n", strerror(-err));
	agent_out_kick(a);
}

void agent_on_rep_answer(void *ctx, long long epoch, const char *primary, uint64_t sent_ns,
			 int shadow)
{
	struct agent *a = ctx;
	bool held;

	a->ctl.ms = fl_mono_ms();
	a->ctl.ns = fl_clock_ns(CLOCK_MONOTONIC);
	a->ctl.epoch = epoch;
	snprintf(a->ctl.primary, sizeof(a->ctl.primary), "%s", primary);
	if (shadow >= 0) {
		a->ctl_shadow = shadow;
		agent_mode_apply(a, epoch, primary, sent_ns);
	}
	held = agent_lease_held(a, fl_clock_ns(CLOCK_MONOTONIC));
	agent_lease_answer(a, epoch, primary, sent_ns);
	agent_demote_answer(a, epoch, primary, sent_ns, held);
	if (agent_fence_fenced(a))
		agent_fence_eval(a);
}

void agent_on_rep_admit(void *ctx, long long term, long long grant, const char *list)
{
	struct agent *a = ctx;
	char csv[ADMIT_LIST_MAX + 2];
	struct evrec r;

	if (!list) {
		if (admit_no_grant(&a->admit))
			pr_info("write lease: the controller sends no admission grant (an older "
				"one): every peer of the shard renews it\n");
		return;
	}
	if (admit_apply(&a->admit, term, grant, list) != ADMIT_CHANGED)
		return;
	admit_csv(&a->admit, csv, sizeof(csv));
	evrec_begin(&r, NULL, a->node, "lease_admission");
	evrec_str(&r, "admitted", csv);
	evrec_int(&r, "term", term);
	evrec_int(&r, "grant", grant);
	agent_out_log(a, &r);
	pr_info("write lease: echo replies of %s renew it (grant %lld of term %lld)\n",
		a->admit.ids[0] ? csv : "no peer", grant, term);
	agent_out_kick(a); /* the controller waits for this report to count it */
}

/* --- ICMP peers ------------------------------------------------------- */

void agent_on_peer_change(void *ctx, const struct probe_peer_info *peer)
{
	struct agent *a = ctx;
	struct evrec r;

	probe_evrec(&r, a->node, peer);
	agent_out_log(a, &r);
	agent_out_kick(a);
	if (a->srv)
		agent_fence_eval(a);
}

void agent_on_peer_route(void *ctx, const struct probe_peer_info *peer, int prev_ifindex)
{
	struct agent *a = ctx;
	struct evrec r;

	probe_route_evrec(&r, a->node, peer, prev_ifindex);
	agent_out_log(a, &r);
}
