// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* flatline agent: loads the process BPF programs, watches the local server by
 * PID and cgroup, and writes what the kernel reports to the event log. One
 * libevent loop: the ring buffer's epoll fd, signals and timers. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <event2/event.h>
#include <bpf/libbpf.h>
#include "common/tls.h"
#include "common/clock.h"
#include "cmds.h"
#include "common/event_log.h"
#include "agent/exit_code.h"
#include "common/log.h"
#include "common/caps.h"
#include "common/config.h"
#include "common/daemon.h"
#include "common/metrics.h"
#include "common/version.h"
#include <event2/buffer.h>
#include "agent/fence.h"
#include "agent/lease.h"
#include "kern/lease_watch.h"
#include "agent/prober.h"
#include "kern/proc_watch.h"
#include "kern/sched_watch.h"
#include "agent/reporter.h"
#include "agent/srvmon.h"

#define AGENT_MAX_WATCH 64

/* Capabilities (flatline(8), CAPABILITIES). To load and attach the process
 * programs: */
#define AGENT_LOAD_CAPS (CAPS_BIT(CAP_BPF) | CAPS_BIT(CAP_PERFMON))
/* and with peers, the raw ICMP socket and the tc programs: */
#define AGENT_PROBE_CAPS (CAPS_BIT(CAP_NET_ADMIN) | CAPS_BIT(CAP_NET_RAW))
/* Once everything is loaded and attached, watching a new pid, the ring buffer,
 * the raw socket and the pins need none (measured on 6.18: tests/integration/
 * test_pkg.sh). With peers it keeps these two, to attach the tc programs to an
 * interface a peer's route moves to later (and, before tcx, to remove its filters): */
#define AGENT_RUN_PROBE_CAPS (CAPS_BIT(CAP_NET_ADMIN) | CAPS_BIT(CAP_BPF))
#define AGENT_SYNC_MS 1000

struct agent {
	const char *node;
	const char *event_log;
	pid_t pids[AGENT_MAX_WATCH];
	int npids;
	const char *cgroups[AGENT_MAX_WATCH];
	uint64_t cgroup_ids[AGENT_MAX_WATCH];
	int ncgroups;

	const char *config;      /* -c FILE */
	bool event_log_flag;     /* --event-log given: it wins over the file */
	struct cfg *cfg;
	struct cfg_node *me;     /* this node in cfg */

	struct event_base *base;
	struct proc_watch *pw;
	struct sched_watch *sw;  /* with a cluster file: the server's scheduler state */
	struct evlog *log;
	const char *peer_ids[AGENT_MAX_WATCH]; /* --peer ID=IP */
	const char *peer_addrs[AGENT_MAX_WATCH];
	int npeers;
	int probe_interval_ms;   /* --probe-interval-ms, else the file's, else default */
	int peer_down_after_ms;  /* --peer-down-after-ms, likewise */
	struct prober *probe;    /* with peers: ICMP probing timed in the kernel */

	struct srvmon *srv;      /* with a cluster file: the local server */
	struct reporter *rep[CFG_MAX_CTLS]; /* with a cluster file: one link per controller */
	int nrep;
	pid_t srv_pid;           /* the server's pid as watched in the kernel */
	/* Self-fencing (user/fence.h): what the controller last said, and the pause. */
	struct fence_sm fence;
	struct event *fence_ev;
	int64_t ctl_answer_ms;   /* last answer (agent start until the first) */
	long long ctl_epoch;
	char ctl_primary[CFG_ID_MAX + 1];
	int lock_fd;
	uint64_t drops_seen; /* ring buffer drops already logged */
	/* The write lease (agent/lease.h), enforced by bpf/lease.bpf.c. */
	struct lease_watch *lw;  /* NULL: lease_ms = 0, or no cluster file */
	struct lease_sm lease;
	bool lease_held;         /* as written to the kernel and logged */
	bool grant_pending;      /* taken back after drops: waits for a fresh CLIENT LIST */
	uint64_t lease_lost_ns;  /* when it was last lost (0: never held by this agent) */
	uint64_t ctl_answer_ns;  /* last controller answer, CLOCK_MONOTONIC */
	/* Connections that flow without the lease: ours, then CLIENT LIST's. */
	struct fl_lease_conn allow[FL_LEASE_MAX_ALLOW];
	__u32 allow_kind[FL_LEASE_MAX_ALLOW];
	int nallow;
	struct fl_lease_conn own; /* the monitor connection's far end as the server sees it */
	bool have_own;
	uint64_t sched_drops_seen;
	uint64_t caps;       /* the effective set once running */

	/* Prometheus metrics (metrics_listen): counters kept here, the rest read at
	 * scrape time from the monitor, the prober and the pinned maps. */
	const char *metrics_flag;          /* --metrics-listen */
	struct metrics *metrics;
	struct metrics_hist ping_hist;     /* PING round trips, seconds */
	struct {
		char kind[32];
		uint64_t n;
	} ev_counts[64];
	int nev_kinds;
};

static const char agent_usage[] =
	"usage: flatline agent [-c FILE] [--node ID] [--watch-pid PID]... [--watch-cgroup PATH]...\n"
	"                      [--event-log PATH] [-v]\n"
	"\n"
	"  -c, --config FILE    the cluster file: watch, ping and report this node's server\n"
	"                       to the controller (without it: only the kernel watch)\n"
	"  --node ID            this node's id (default: the host name); pins go under\n"
	"                       " FL_PIN_ROOT "/ID/\n"
	"  --watch-pid PID      watch this process (repeatable)\n"
	"  --watch-cgroup PATH  watch every process in this cgroup v2 directory and below,\n"
	"                       including ones started later (repeatable)\n"
	"  --event-log PATH     event log (default " EVLOG_DEFAULT_PATH ")\n"
	"  --peer ID=IP         probe this peer with ICMP (repeatable; with -c, the other\n"
	"                       nodes of this node's shard are peers already)\n"
	"  --probe-interval-ms MS, --peer-down-after-ms MS\n"
	"                       override the cluster file's [agent] values\n"
	"  --metrics-listen HOST:PORT\n"
	"                       serve Prometheus metrics there (default [agent] metrics_listen)\n"
	"  -v, --verbose        more messages; twice for libbpf's own\n";

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

static void agent_log(struct agent *a, struct evrec *r)
{
	int err = evlog_write(a->log, r);

	count_event(a, r);
	if (err)
		pr_warn("failed to write event log %s: %s\n", a->event_log, strerror(-err));
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

static void on_proc_event(void *ctx, const struct fl_proc_event *e)
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
					  cur->cause == SRV_CAUSE_STOPPED ? cur->ev.silent_ms :
					  (long long)a->cfg->agent.hung_after *
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
static void kick_reports(struct agent *a)
{
	for (int i = 0; i < a->nrep; i++)
		reporter_kick(a->rep[i]);
}

static void lease_drop(struct agent *a, const char *why);
static bool kernel_held(const struct agent *a, uint64_t now);

static void on_srv_changed(void *ctx, const struct srv_state *prev, const struct srv_state *cur,
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
	/* Offsets alone ride on the next heartbeat; everything else goes now. */
	if (what & ~SRV_CH_INFO)
		kick_reports(a);
}

static void on_srv_note(void *ctx, const char *kind, const char *detail)
{
	struct agent *a = ctx;
	struct evrec r;

	evrec_begin(&r, NULL, a->node, kind);
	evrec_int(&r, "pid", srvmon_state(a->srv)->pid);
	evrec_str(&r, "server", a->me->redis_str);
	evrec_str(&r, "reply", detail);
	agent_log(a, &r);
}

static void on_sched_event(void *ctx, const struct fl_sched_event *e)
{
	struct agent *a = ctx;

	if (a->srv)
		srvmon_sched_event(a->srv, e);
}

static void report_peers(struct agent *a, struct rep_msg *m);

static void build_report(void *ctx, struct rep_msg *m)
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
			rep_add_key(m, RK_THREAD_STATE, NULL, "%s", sched_state_name(st->ev.thread_state));
			rep_add_key(m, RK_STATE_MS, NULL, "%lld", (long long)st->ev.state_ms);
			rep_add_key(m, RK_RUN_MS, NULL, "%lld", (long long)st->ev.run_ms);
			rep_add_key(m, RK_WAIT_MS, NULL, "%lld", (long long)st->ev.wait_ms);
			rep_add_key(m, RK_WINDOW_MS, NULL, "%lld", (long long)st->ev.window_ms);
			if (st->ev.throttled_ms >= 0)
				rep_add_key(m, RK_THROTTLED_MS, NULL, "%lld", (long long)st->ev.throttled_ms);
		}
	}
	if (st->auth_error[0])
		rep_add_key(m, RK_AUTH_ERROR, NULL, "%s", st->auth_error);
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
			    held ? (unsigned long long)((a->lease.k.deadline_ns - now) / 1000000) : 0ull);
		rep_add_key(m, RK_LEASE_SOURCE, NULL, "%s", lease_source_name(a->lease.k.source));
	}
}

static void on_rep_event(void *ctx, const char *kind, const char *detail)
{
	struct agent *a = ctx;
	struct evrec r;

	evrec_begin(&r, NULL, a->node, kind);
	evrec_str(&r, "detail", detail);
	agent_log(a, &r);
}

static void fence_eval_now(struct agent *a);

static void lease_answer(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns);

static void on_rep_answer(void *ctx, long long epoch, const char *primary, uint64_t sent_ns)
{
	struct agent *a = ctx;

	a->ctl_answer_ms = fl_mono_ms();
	a->ctl_answer_ns = fl_clock_ns(CLOCK_MONOTONIC);
	a->ctl_epoch = epoch;
	snprintf(a->ctl_primary, sizeof(a->ctl_primary), "%s", primary);
	lease_answer(a, epoch, primary, sent_ns);
	if (a->fence.fenced)
		fence_eval_now(a);
}

/* --- ICMP peers ------------------------------------------------------- */

static void on_peer_change(void *ctx, const struct probe_peer_info *peer)
{
	struct agent *a = ctx;
	struct evrec r;

	probe_evrec(&r, a->node, peer);
	agent_log(a, &r);
	kick_reports(a);
	if (a->srv)
		fence_eval_now(a);
}

static void on_peer_route(void *ctx, const struct probe_peer_info *peer, int prev_ifindex)
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

static void on_round_trip(void *ctx, const struct probe_peer_info *peer, uint64_t sent_ns);

/* Peers: --peer flags, and with a cluster file the other nodes of our shard. */
static int start_probe(struct agent *a)
{
	struct probe_opts po = { .base = a->base, .node = a->node, .on_change = on_peer_change,
				 .on_route = on_peer_route, .on_round_trip = on_round_trip, .ctx = a };
	char why[256];
	struct evrec r;
	int err;

	if (a->cfg) {
		po.interval_ms = a->cfg->agent.probe_interval_ms;
		po.down_after_ms = a->cfg->agent.peer_down_after_ms;
	}
	if (a->probe_interval_ms)
		po.interval_ms = a->probe_interval_ms;
	if (a->peer_down_after_ms)
		po.down_after_ms = a->peer_down_after_ms;
	err = probe_open(&a->probe, &po);
	if (err)
		return err;
	for (int i = 0; i < a->npeers; i++) {
		err = probe_add_peer(a->probe, a->peer_ids[i], a->peer_addrs[i]);
		if (err) {
			pr_warn("failed to add peer %s=%s: %s\n", a->peer_ids[i], a->peer_addrs[i],
				strerror(-err));
			return err;
		}
	}
	if (a->cfg && a->me->shard >= 0) {
		const struct cfg_shard *s = &a->cfg->shards[a->me->shard];

		for (int i = 0; i < s->nnodes; i++) {
			const struct cfg_node *n = &a->cfg->nodes[s->nodes[i]];

			if (cfg_probe_warning(a->cfg, n, why, sizeof(why))) {
				pr_warn("%s:%d: [node \"%s\"] address: %s\n", a->cfg->path,
					n->address_line, n->id, why);
				evrec_begin(&r, NULL, a->node, "probe_warning");
				evrec_str(&r, "peer", n->id);
				evrec_str(&r, "addr", n->address);
				evrec_str(&r, "reason", why);
				agent_log(a, &r);
			}
			if (n == a->me)
				continue;
			err = probe_add_peer(a->probe, n->id, n->address);
			if (err && err != -EEXIST) {
				pr_warn("failed to add peer %s=%s: %s\n", n->id, n->address,
					strerror(-err));
				return err;
			}
		}
	}
	return probe_start(a->probe);
}

static bool wants_probe(const struct agent *a)
{
	return a->npeers > 0 || (a->cfg && a->me->shard >= 0 &&
				 a->cfg->shards[a->me->shard].nnodes > 1);
}

/* --- the write lease ------------------------------------------------------ */

static uint64_t now_ns(void)
{
	return fl_clock_ns(CLOCK_MONOTONIC);
}

static void add_ago(struct evrec *r, const char *key, uint64_t now, uint64_t t)
{
	if (!t)
		evrec_str(r, key, NULL);
	else
		evrec_uint(r, key, now > t ? (now - t) / 1000000 : 0);
}

/* The freshest round trip to any peer: when its reply reached us (0: none). */
static uint64_t peer_rt_ns(const struct agent *a)
{
	uint64_t t = 0;

	for (int i = 0; a->probe && i < probe_npeers(a->probe); i++)
		if (probe_peer(a->probe, i)->rt_recv_ns > t)
			t = probe_peer(a->probe, i)->rt_recv_ns;
	return t;
}

/* What the lease rests on: the last renewal and the last round trips. */
static void lease_evidence(struct agent *a, struct evrec *r, uint64_t now)
{
	evrec_str(r, "source", lease_source_name(a->lease.k.source));
	add_ago(r, "renewed_ago_ms", now, a->lease.k.renewed_ns);
	add_ago(r, "controller_answer_ago_ms", now, a->ctl_answer_ns);
	add_ago(r, "peer_round_trip_ago_ms", now, peer_rt_ns(a));
	evrec_int(r, "epoch", a->lease.k.epoch);
	evrec_str(r, "controller_primary", a->ctl_primary);
	evrec_int(r, "lease_ms", a->cfg->agent.lease_ms);
}

static void lease_lost(struct agent *a, const char *reason, uint64_t now)
{
	struct evrec r;

	if (!a->lease_held)
		return;
	a->lease_held = false;
	a->lease_lost_ns = now;
	evrec_begin(&r, NULL, a->node, "lease_lost");
	evrec_str(&r, "reason", reason);
	lease_evidence(a, &r, now);
	evrec_uint(&r, "dropped_total", lease_watch_count(a->lw, FL_LC_DROPPED));
	agent_log(a, &r);
	pr_warn("write lease lost (%s): the server's replies no longer reach clients\n", reason);
}

static void lease_poll_clients(struct agent *a, bool now);

/* The lease as the kernel has it: taken (not waiting for a CLIENT LIST), unexpired. */
static bool kernel_held(const struct agent *a, uint64_t now)
{
	return a->lw && !a->grant_pending && lease_held(&a->lease, now);
}

static void lease_regained(struct agent *a, int killed)
{
	uint64_t now = now_ns();
	struct evrec r;

	a->lease_held = true;
	evrec_begin(&r, NULL, a->node, "lease_regained");
	lease_evidence(a, &r, now);
	add_ago(&r, "without_ms", now, a->lease_lost_ns);
	evrec_int(&r, "connections_closed", killed);
	agent_log(a, &r);
	pr_info("write lease held (from the %s)\n", lease_source_name(a->lease.k.source));
}

/* Takes the lease in the kernel. If the kernel dropped replies since it was last
 * taken, those replies (writes executed, never acknowledged) still wait in their
 * sockets for a retransmission: the server's client connections are destroyed first
 * (SOCK_DESTROY), all but the allowed ones, so that none reaches anyone once a
 * failover may have happened; clients reconnect. */
static void lease_take(struct agent *a)
{
	uint64_t dropped = lease_watch_count(a->lw, FL_LC_DROPPED);
	int killed = 0, err;

	if (dropped != a->lease.k.dropped_mark) {
		killed = lease_kill_conns(a->me->redis.port, a->allow, a->nallow);
		if (killed < 0) {
			pr_warn("failed to close the server's client connections: %s; lease not "
				"taken\n", strerror(-killed));
			return;
		}
	}
	a->lease.k.dropped_mark = dropped;
	err = lease_watch_write(a->lw, &a->lease.k);
	if (err) {
		pr_warn("failed to write the lease map: %s\n", strerror(-err));
		return;
	}
	if (!a->lease_held)
		lease_regained(a, killed);
}

/* Writes a change to the kernel. A lease coming back after drops waits for a fresh
 * CLIENT LIST first, so that a controller or replica connection made while it was
 * out is not taken for a client (lease_take). */
static void lease_apply(struct agent *a, enum lease_change ch, const char *why)
{
	int err;

	if (ch == LEASE_SAME || !a->lw)
		return;
	if (ch == LEASE_REVOKED) {
		a->grant_pending = false;
		err = lease_watch_write(a->lw, &a->lease.k);
		if (err)
			pr_warn("failed to write the lease map: %s\n", strerror(-err));
		lease_lost(a, why, now_ns());
		return;
	}
	if (a->grant_pending)
		return; /* the CLIENT LIST answer takes it, with the latest deadline */
	if (ch == LEASE_GRANTED &&
	    lease_watch_count(a->lw, FL_LC_DROPPED) != a->lease.k.dropped_mark) {
		a->grant_pending = true;
		lease_poll_clients(a, true);
		return;
	}
	lease_take(a);
}

static void lease_drop(struct agent *a, const char *why)
{
	if (a->lw)
		lease_apply(a, lease_give_up(&a->lease), why);
}

/* Once per heartbeat: a lease that ran out unrenewed is lost. */
static void lease_tick(struct agent *a)
{
	uint64_t now = now_ns();

	if (a->lw && a->lease_held && !lease_held(&a->lease, now))
		lease_lost(a, "expired", now);
}

static void sync_allow(struct agent *a, const struct fl_lease_conn *c, const __u32 *kind, int n)
{
	int err;

	a->nallow = 0;
	if (a->have_own) {
		a->allow[0] = a->own;
		a->allow_kind[0] = FL_LEASE_ALLOW_AGENT;
		a->nallow = 1;
	}
	for (int i = 0; i < n && a->nallow < FL_LEASE_MAX_ALLOW; i++) {
		if (a->have_own && !memcmp(&c[i], &a->own, sizeof(a->own)))
			continue;
		a->allow[a->nallow] = c[i];
		a->allow_kind[a->nallow++] = kind[i];
	}
	err = lease_watch_set_allow(a->lw, a->allow, a->allow_kind, a->nallow);
	if (err)
		pr_warn("failed to update the lease's allowed connections: %s\n", strerror(-err));
}

/* The monitor connection is up: allow it before its first command goes out. */
static void on_srv_connected(void *ctx, int fd)
{
	struct agent *a = ctx;
	struct sockaddr_storage ss = { 0 };
	socklen_t len = sizeof(ss);

	if (!a->lw)
		return;
	a->have_own = fd >= 0 && !getsockname(fd, (struct sockaddr *)&ss, &len) &&
		      (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
	if (a->have_own)
		lease_conn_make(&a->own, (struct sockaddr *)&ss);
	/* Keep the others known so far (their kinds are kept with them). */
	sync_allow(a, a->allow + (a->nallow && a->allow_kind[0] == FL_LEASE_ALLOW_AGENT),
		   a->allow_kind + (a->nallow && a->allow_kind[0] == FL_LEASE_ALLOW_AGENT),
		   a->nallow - (a->nallow && a->allow_kind[0] == FL_LEASE_ALLOW_AGENT));
}

/* "addr=1.2.3.4:5678" (or "[::1]:5678") of a CLIENT LIST line into k. */
static bool client_addr(const char *line, struct fl_lease_conn *k)
{
	const char *p = strstr(line, " addr="), *colon, *end;
	char host[64], *pend;
	long port;
	size_t n;

	if (!p)
		return false;
	p += 6;
	end = p + strcspn(p, " \n");
	for (colon = end; colon > p && *colon != ':'; colon--)
		;
	if (colon == p)
		return false;
	n = colon - p;
	if (n && p[0] == '[' && p[n - 1] == ']') {
		p++;
		n -= 2;
	}
	if (n >= sizeof(host))
		return false;
	memcpy(host, p, n);
	host[n] = '\0';
	errno = 0;
	port = strtol(colon + 1, &pend, 10);
	if (errno || pend == colon + 1 || port <= 0 || port > 65535)
		return false;
	return !lease_conn_parse(k, host, (uint16_t)port);
}

static bool client_field(const char *line, const char *key, const char *want, bool word)
{
	const char *p = strstr(line, key);
	size_t n;

	if (!p)
		return false;
	p += strlen(key);
	n = strcspn(p, " \n");
	if (word)
		return n == strlen(want) && !strncmp(p, want, n);
	return memchr(p, want[0], n) != NULL;
}

static void on_client_list(void *ctx, redisReply *r, void *priv)
{
	static struct fl_lease_conn c[FL_LEASE_MAX_ALLOW];
	static __u32 kind[FL_LEASE_MAX_ALLOW];
	struct agent *a = priv; /* ctx is the monitor's (srvmon_send) */
	char line[1024];
	int n = 0;

	(void)ctx;
	if (!r || r->type != REDIS_REPLY_STRING || !a->lw)
		return;
	for (const char *p = r->str; *p && n < FL_LEASE_MAX_ALLOW;) {
		size_t len = strcspn(p, "\n");
		__u32 k = 0;

		/* A leading space: every key is then found as " key=". */
		snprintf(line, sizeof(line), " %.*s", (int)len, p);
		p += len + (p[len] == '\n');
		if (client_field(line, " flags=", "S", false))
			k = FL_LEASE_ALLOW_REPLICA;
		else if (client_field(line, " name=", "flatline-controller", true))
			k = FL_LEASE_ALLOW_CONTROLLER;
		if (k && client_addr(line, &c[n]))
			kind[n++] = k;
	}
	sync_allow(a, c, kind, n);
	if (a->grant_pending) {
		a->grant_pending = false;
		if (lease_held(&a->lease, now_ns()))
			lease_take(a);
	}
}

/* Every heartbeat while the lease is not held (the list then decides who is
 * served), every tenth while it is (so that it is current when the lease runs out);
 * now: at once (a lease waiting to be taken). */
static void lease_poll_clients(struct agent *a, bool now)
{
	static unsigned int n;
	const char *argv[] = { "CLIENT", "LIST" };

	if (a->lw && (now || !kernel_held(a, now_ns()) || n++ % 10 == 0))
		srvmon_send(a->srv, 2, argv, on_client_list, a);
}

static void on_round_trip(void *ctx, const struct probe_peer_info *peer, uint64_t sent_ns)
{
	struct agent *a = ctx;

	(void)peer;
	if (a->lw)
		lease_apply(a, lease_on_peer(&a->lease, now_ns(), sent_ns), "peer");
}

static int start_lease(struct agent *a)
{
	struct fl_lease_state st;
	int err;

	if (!a->cfg->agent.lease_ms)
		return 0;
	if (!a->me->redis.port || a->me->redis.unix_path[0]) {
		pr_warn("the write lease guards TCP only: %s is a unix socket, lease off\n",
			a->me->redis_str);
		return 0;
	}
	err = lease_watch_open(&a->lw, a->node, a->me->redis.port);
	if (err)
		return err;
	err = lease_watch_read(a->lw, &st);
	if (err)
		return err;
	lease_init(&a->lease, &st, (uint64_t)a->cfg->agent.lease_ms * 1000000);
	/* A lease left by a previous agent still runs: kept, renewed as before. */
	a->lease_held = lease_held(&a->lease, now_ns());
	pr_info("write lease for port %d: %s, pins in %s\n", a->me->redis.port,
		a->lease_held ? "held (left by the previous agent)" : "not held",
		lease_watch_pin_dir(a->lw));
	return 0;
}

static void lease_answer(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns)
{
	const struct srv_state *st = srvmon_state(a->srv);
	bool replica = st->have_info && st->info.role == INFO_ROLE_SLAVE;
	uint64_t now = now_ns();

	if (!a->lw)
		return;
	/* A server that is not answering takes no lease: the controller may be failing
	 * over because of it, and this answer may be an old one. */
	if (st->proc != SRV_UP && st->proc != SRV_BUSY && !lease_held(&a->lease, now) &&
	    primary && !strcmp(primary, a->node))
		return;
	lease_apply(a, lease_on_controller(&a->lease, now, sent_ns, epoch, primary, a->node,
					   replica),
		    "revoked: the controller names another primary");
}

/* --- self-fencing --------------------------------------------------------- */

static int fence_pause_ms(const struct agent *a)
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

static void fence_send(struct agent *a, bool pause)
{
	char ms[16];
	const char *p[] = { "CLIENT", "PAUSE", ms, "WRITE" }, *u[] = { "CLIENT", "UNPAUSE" };
	int err;

	snprintf(ms, sizeof(ms), "%d", fence_pause_ms(a));
	err = pause ? srvmon_send(a->srv, 4, p, on_fence_reply, a)
		    : srvmon_send(a->srv, 2, u, on_fence_reply, NULL);
	if (err && err != -ENOTCONN)
		pr_warn("failed to send CLIENT %s: %s\n", pause ? "PAUSE" : "UNPAUSE",
			strerror(-err));
}

static void fence_eval_now(struct agent *a)
{
	const struct srv_state *st = srvmon_state(a->srv);
	struct fence_in in = {
		.now_ms = fl_mono_ms(),
		.after_ms = a->cfg->agent.self_fence_after_ms,
		.is_primary = st->have_info && st->info.role == INFO_ROLE_MASTER,
		.is_replica = st->have_info && st->info.role == INFO_ROLE_SLAVE,
		.have_peers = a->probe && probe_npeers(a->probe) > 0,
		.ctl_answer_ms = a->ctl_answer_ms,
		.ctl_epoch = a->ctl_epoch,
		.ctl_primary = a->ctl_primary,
		.me = a->node,
	};
	struct evrec r;
	int down = 0;

	if (!a->cfg->agent.self_fence)
		return;
	/* Reachable = a round trip within peer_down_after_ms (an echo reply that got all
	 * the way in); packets that merely arrived prove the peer alive, not that we
	 * reach it. A peer not judged yet counts as reachable, as before. */
	for (int i = 0; in.have_peers && i < probe_npeers(a->probe); i++) {
		const struct probe_peer_info *pi = probe_peer(a->probe, i);
		uint64_t now = fl_clock_ns(CLOCK_MONOTONIC);
		bool rt = pi->rt_recv_ns &&
			  now - pi->rt_recv_ns < (uint64_t)a->cfg->agent.peer_down_after_ms * 1000000;

		if (!rt && pi->ev.state != VERDICT_UNKNOWN)
			down++;
	}
	in.any_peer_reachable = in.have_peers && down < probe_npeers(a->probe);
	switch (fence_eval(&a->fence, &in)) {
	case FENCE_NONE:
		return;
	case FENCE_HOLD:
		fence_send(a, true); /* renewed before it lapses */
		return;
	case FENCE_NOW:
		fence_send(a, true);
		evrec_begin(&r, NULL, a->node, "self_fenced");
		evrec_int(&r, "controller_silent_ms", in.now_ms - a->ctl_answer_ms);
		evrec_int(&r, "peers_down", down);
		evrec_int(&r, "epoch", a->ctl_epoch);
		evrec_int(&r, "pause_ms", fence_pause_ms(a));
		agent_log(a, &r);
		pr_warn("isolated primary: writes paused until the controller is reached\n");
		break;
	case FENCE_LIFT_CONFIRMED:
	case FENCE_LIFT_DEMOTED:
		fence_send(a, false);
		evrec_begin(&r, NULL, a->node, "self_fence_lifted");
		evrec_str(&r, "reason", in.is_replica ? "demoted: the server is a replica now"
						      : "the controller confirmed this node as primary");
		evrec_int(&r, "epoch", a->ctl_epoch);
		evrec_str(&r, "primary", a->ctl_primary);
		agent_log(a, &r);
		break;
	}
	kick_reports(a);
}

static void on_fence_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	lease_tick(arg);
	lease_poll_clients(arg, false);
	fence_eval_now(arg);
}

static void on_ping_rtt(void *ctx, int64_t rtt_ns)
{
	struct agent *a = ctx;

	metrics_hist_observe(&a->ping_hist, rtt_ns / 1e9);
}

/* TLS contexts from the cluster file (common/tls.h): to the controller when it has
 * tls_listen, to the server with [redis] tls = yes; NULL when plain. */
static int agent_tls(const struct cfg *c, SSL_CTX **ctl, SSL_CTX **srv)
{
	char err[600];

	*ctl = *srv = NULL;
	if (c->controller.tls) {
		*ctl = tls_client_ctx(c, "agent", &c->agent.tls, &c->controller.tls_files, err,
				      sizeof(err));
		if (!*ctl) {
			pr_warn("failed to set up TLS to the controller: %s\n", err);
			return -EINVAL;
		}
	}
	if (c->redis.tls) {
		*srv = tls_client_ctx(c, "redis", &c->redis.tls_files, NULL, err, sizeof(err));
		if (!*srv) {
			pr_warn("failed to set up TLS to the server: %s\n", err);
			SSL_CTX_free(*ctl);
			*ctl = NULL;
			return -EINVAL;
		}
	}
	return 0;
}

/* With a cluster file: the server monitor and the controller link. */
static int start_cluster(struct agent *a)
{
	static const struct srvmon_ops sops = { .changed = on_srv_changed,
						.connected = on_srv_connected,
						.note = on_srv_note,
						.ping = on_ping_rtt };
	static const struct reporter_ops rops = { .build = build_report,
						  .event = on_rep_event,
						  .answer = on_rep_answer };
	const struct cfg *c = a->cfg;
	struct srvmon_opts so = {
		.ep = a->me->redis,
		.user = c->redis.user,
		.password = c->redis.password,
		.pidfile = a->me->pidfile,
		.ping_interval_ms = c->agent.ping_interval_ms,
		.hung_after = c->agent.hung_after,
		.info_interval_ms = c->agent.heartbeat_ms,
		.stop_grace_ms = c->agent.stop_grace_ms,
		.busy_max_ms = c->agent.busy_max_ms,
		.sched = a->sw,
	};
	struct reporter_opts ro = {
		.ep = *tls_controller_ep(c),
		.node = a->node,
		.secret = c->secret,
		.key_hex = a->me->key,
		.heartbeat_ms = c->agent.heartbeat_ms,
	};
	/* HA mode: every controller gets the reports (followers stay warm). */
	int nctl = c->etcd.enabled ? c->nctls : 1;

	struct timeval tick = fl_ms_tv(c->agent.heartbeat_ms);
	int err;

	err = agent_tls(c, &ro.tls, &so.tls);
	if (err)
		return err;
	so.tls_host = c->redis.tls_server_name;
	a->srv = srvmon_new(a->base, &so, &sops, a);
	for (a->nrep = 0; a->nrep < nctl; a->nrep++) {
		if (c->etcd.enabled)
			ro.ep = c->ctls[a->nrep].listen;
		a->rep[a->nrep] = reporter_new(a->base, &ro, &rops, a);
		if (!a->rep[a->nrep])
			break;
	}
	SSL_CTX_free(ro.tls); /* the links hold their references */
	SSL_CTX_free(so.tls);
	if (a->nrep < nctl)
		return -ENOMEM;
	a->fence_ev = event_new(a->base, -1, EV_PERSIST, on_fence_tick, a);
	if (!a->srv || !a->fence_ev)
		return -ENOMEM;
	a->ctl_answer_ms = fl_mono_ms(); /* isolation is counted from start at the earliest */
	err = start_lease(a);
	if (err)
		return err;
	srvmon_start(a->srv);
	for (int i = 0; i < a->nrep; i++)
		reporter_start(a->rep[i]);
	return event_add(a->fence_ev, &tick);
}

static void on_ringbuf(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	int n;

	(void)fd;
	(void)what;
	n = proc_watch_consume(a->pw);
	if (n < 0)
		pr_warn("failed to read ring buffer: %s\n", strerror(-n));
}

static void on_sched_ringbuf(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	int n;

	(void)fd;
	(void)what;
	n = sched_watch_consume(a->sw);
	if (n < 0)
		pr_warn("failed to read ring buffer: %s\n", strerror(-n));
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct agent *a = arg;

	(void)what;
	pr_info("received %s, stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	event_base_loopbreak(a->base);
}

struct reload_ctx {
	char restart[512]; /* the changed keys that need a restart */
	size_t len;
};

/* What the agent applies while running: only self-fencing's switch and delay, read
 * at each evaluation. Everything else it was started with stays until a restart. */
static void on_changed_key(void *ctx, const char *section, const char *key)
{
	struct reload_ctx *rc = ctx;

	if (!strcmp(section, "[agent]") &&
	    (!strcmp(key, "self_fence") || !strcmp(key, "self_fence_after_ms")))
		return;
	/* Other processes' sections and other nodes do not concern this agent. */
	if (strcmp(section, "[agent]") && strcmp(section, "[redis]") && strcmp(section, "[cluster]") &&
	    strncmp(section, "[controller", 11) && strncmp(section, "[node", 5) &&
	    strncmp(section, "[shard", 6))
		return;
	if (!strcmp(section, "[controller]") && strcmp(key, "listen") && strcmp(key, "address"))
		return;
	if (rc->len < sizeof(rc->restart))
		rc->len += snprintf(rc->restart + rc->len, sizeof(rc->restart) - rc->len, "%s%s %s",
				    rc->len ? ", " : "", section, key);
}

static void agent_reload(struct agent *a)
{
	struct reload_ctx rc = { .len = 0 };
	struct cfg *n = NULL;
	struct evrec r;
	char err[512];
	int changed;

	if (!a->cfg) {
		pr_info("received SIGHUP: no cluster file to reload (started without -c)\n");
		return;
	}
	if (cfg_load(a->config, &n, err, sizeof(err))) {
		pr_warn("failed to reload the cluster file: %s; keeping the running configuration\n",
			err);
		evrec_begin(&r, NULL, a->node, "config_rejected");
		evrec_str(&r, "error", err);
		agent_log(a, &r);
		return;
	}
	if (!cfg_find_node(n, a->node)) {
		pr_warn("failed to reload the cluster file: node %s is no longer in %s; keeping the "
			"running configuration\n",
			a->node, a->config);
		cfg_free(n);
		return;
	}
	rc.restart[0] = '\0';
	changed = cfg_diff(a->cfg, n, on_changed_key, &rc);
	a->cfg->agent.self_fence = n->agent.self_fence;
	a->cfg->agent.self_fence_after_ms = n->agent.self_fence_after_ms;
	evrec_begin(&r, NULL, a->node, "config_reloaded");
	evrec_int(&r, "changed", changed);
	evrec_str(&r, "needs_restart", rc.restart);
	agent_log(a, &r);
	if (rc.len)
		pr_warn("reloaded %s: %d key(s) changed; these need a restart of the agent: %s\n",
			a->config, changed, rc.restart);
	else
		pr_info("reloaded %s: %d key(s) changed, all applied\n", a->config, changed);
	cfg_free(n);
}

static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	agent_reload(arg);
}

/* Once a second: flush the log to disk and report new ring buffer drops. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	uint64_t drops = proc_watch_drops(a->pw);
	struct evrec r;

	(void)fd;
	(void)what;
	if (a->sw && sched_watch_drops(a->sw) != a->sched_drops_seen) {
		a->sched_drops_seen = sched_watch_drops(a->sw);
		pr_warn("sched ring buffer full: %llu stop events lost in all\n",
			(unsigned long long)a->sched_drops_seen);
	}
	if (drops != a->drops_seen) {
		evrec_begin(&r, NULL, a->node, "events_dropped");
		evrec_uint(&r, "dropped", drops - a->drops_seen);
		evrec_uint(&r, "total", drops);
		agent_log(a, &r);
		pr_warn("ring buffer full: %llu events lost\n",
			(unsigned long long)(drops - a->drops_seen));
		a->drops_seen = drops;
	}
	if (a->lw && lease_watch_rescan(a->lw) > 0)
		pr_info("write lease attached to new interfaces\n");
	evlog_sync(a->log);
}

static int parse_pid(const char *s, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*pid = v;
	return 0;
}

static int parse_args(struct agent *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "node", required_argument, NULL, 'n' },
		{ "watch-pid", required_argument, NULL, 'p' },
		{ "watch-cgroup", required_argument, NULL, 'g' },
		{ "event-log", required_argument, NULL, 'l' },
		{ "peer", required_argument, NULL, 'P' },
		{ "probe-interval-ms", required_argument, NULL, 'I' },
		{ "peer-down-after-ms", required_argument, NULL, 'D' },
		{ "metrics-listen", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	static char host[HOST_NAME_MAX + 1];
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 'n':
			a->node = optarg;
			break;
		case 'p':
			if (a->npids == AGENT_MAX_WATCH) {
				pr_warn("too many --watch-pid (at most %d)\n", AGENT_MAX_WATCH);
				return 2;
			}
			if (parse_pid(optarg, &a->pids[a->npids])) {
				pr_warn("--watch-pid %s: not a process id\n", optarg);
				return 2;
			}
			a->npids++;
			break;
		case 'g':
			if (a->ncgroups == AGENT_MAX_WATCH) {
				pr_warn("too many --watch-cgroup (at most %d)\n", AGENT_MAX_WATCH);
				return 2;
			}
			a->cgroups[a->ncgroups++] = optarg;
			break;
		case 'l':
			a->event_log = optarg;
			a->event_log_flag = true;
			break;
		case 'P': {
			char *eq = strchr(optarg, '=');

			if (a->npeers == AGENT_MAX_WATCH || !eq || eq == optarg || !eq[1]) {
				pr_warn("--peer %s: want ID=IPV4 (at most %d)\n", optarg,
					AGENT_MAX_WATCH);
				return 2;
			}
			*eq = '\0';
			a->peer_ids[a->npeers] = optarg;
			a->peer_addrs[a->npeers++] = eq + 1;
			break;
		}
		case 'I':
			if (daemon_parse_ms("--probe-interval-ms", optarg, 3600000, &a->probe_interval_ms))
				return 2;
			break;
		case 'D':
			if (daemon_parse_ms("--peer-down-after-ms", optarg, 3600000,
					 &a->peer_down_after_ms))
				return 2;
			break;
		case 'M':
			a->metrics_flag = optarg;
			break;
		case 'v':
			log_verbosity++;
			break;
		case 'h':
			fputs(agent_usage, stdout);
			return -1;
		default:
			fputs(agent_usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		pr_warn("unexpected argument '%s'\n", argv[optind]);
		fputs(agent_usage, stderr);
		return 2;
	}
	if (!a->node) {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "localhost");
		host[strcspn(host, ".")] = '\0';
		a->node = host;
	}
	if (fl_valid_node_id(a->node)) {
		pr_warn("--node %s: a node id is 1-64 letters, digits, '-' or '_'\n", a->node);
		return 2;
	}
	return 0;
}

static int load_config(struct agent *a)
{
	char err[512];

	if (cfg_load(a->config, &a->cfg, err, sizeof(err))) {
		pr_warn("%s\n", err);
		return -EINVAL;
	}
	a->me = cfg_find_node(a->cfg, a->node);
	if (!a->me) {
		pr_warn("node %s is not in %s: give the id of a [node \"...\"] with --node\n",
			a->node, a->config);
		return -ENOENT;
	}
	if (!a->me->key[0] && !a->cfg->secret[0]) {
		pr_warn("%s: node %s has no key: set [node \"%s\"] key (flatline node-key prints "
			"it) or [cluster] secret\n", a->config, a->node, a->node);
		return -ENOKEY;
	}
	if (!a->event_log_flag)
		a->event_log = a->cfg->agent.event_log;
	return 0;
}

/* What the agent watches, checked before anything is loaded. */
static int check_targets(struct agent *a)
{
	for (int i = 0; i < a->npids; i++) {
		if (!fl_pid_alive(a->pids[i])) {
			pr_warn("failed to watch pid %d: no such process\n", (int)a->pids[i]);
			return -ESRCH;
		}
	}
	for (int i = 0; i < a->ncgroups; i++) {
		int err = fl_cgroup_id(a->cgroups[i], &a->cgroup_ids[i]);

		if (err)
			return err;
	}
	return 0;
}

static int arm_watches(struct agent *a)
{
	struct evrec r;
	int err;

	for (int i = 0; i < a->ncgroups; i++) {
		err = proc_watch_watch_cgroup(a->pw, a->cgroups[i], &a->cgroup_ids[i]);
		if (err) {
			pr_warn("failed to watch cgroup %s: %s\n", a->cgroups[i], strerror(-err));
			return err;
		}
	}
	for (int i = 0; i < a->npids; i++) {
		err = proc_watch_watch_pid(a->pw, a->pids[i], FL_WATCH_PID);
		if (err) {
			pr_warn("failed to watch pid %d: %s\n", (int)a->pids[i], strerror(-err));
			return err;
		}
		/* It may have died between the check and the map update, unseen. */
		if (!fl_pid_alive(a->pids[i])) {
			proc_watch_unwatch_pid(a->pw, a->pids[i]);
			evrec_begin(&r, NULL, a->node, "proc_exit");
			evrec_int(&r, "pid", a->pids[i]);
			evrec_str(&r, "cause", "unknown: exited while the watch was being set up");
			agent_log(a, &r);
		}
	}
	return 0;
}

static void log_agent_start(struct agent *a)
{
	char caps[256];
	struct utsname u;
	struct evrec r;

	uname(&u);
	evrec_begin(&r, NULL, a->node, "agent_start");
	evrec_int(&r, "agent_pid", getpid());
	evrec_str(&r, "kernel", u.release);
	evrec_int(&r, "watch_pids", a->npids);
	evrec_int(&r, "watch_cgroups", a->ncgroups);
	evrec_str(&r, "pins", proc_watch_pin_dir(a->pw));
	if (a->cfg)
		evrec_bool(&r, "sched_state", a->sw != NULL);
	evrec_str(&r, "caps", caps_names(a->caps, caps, sizeof(caps)));
	agent_log(a, &r);
	evlog_sync(a->log);
}

static void fill_metrics(void *ctx, struct evbuffer *b)
{
	static const enum srv_proc states[] = { SRV_UNKNOWN, SRV_UP,	  SRV_DOWN,
						SRV_HUNG,    SRV_BUSY, SRV_LOADING };
	struct agent *a = ctx;

	metrics_head(b, "flatline_build_info", "gauge", "flatline's version, and which process.");
	metrics_sample(b, "flatline_build_info", 1, "version", fl_version, "process", "agent",
		       "node", a->node, METRICS_END);
	metrics_head(b, "flatline_agent_events_total", "counter",
		     "Events written to the event log, by kind.");
	for (int i = 0; i < a->nev_kinds; i++)
		metrics_sample_u64(b, "flatline_agent_events_total", a->ev_counts[i].n, "kind",
				   a->ev_counts[i].kind, METRICS_END);
	metrics_head(b, "flatline_agent_ringbuf_drops_total", "counter",
		     "Kernel events lost because the ring buffer was full.");
	metrics_sample_u64(b, "flatline_agent_ringbuf_drops_total", proc_watch_drops(a->pw), METRICS_END);
	metrics_head(b, "flatline_agent_capabilities", "gauge",
		     "The agent's effective capability set once running, as a bit mask.");
	metrics_sample_u64(b, "flatline_agent_capabilities", a->caps, METRICS_END);
	if (a->srv) {
		const struct srv_state *st = srvmon_state(a->srv);

		metrics_head(b, "flatline_agent_ping_duration_seconds", "histogram",
			     "PING round trips to the local server.");
		metrics_hist_write(b, "flatline_agent_ping_duration_seconds", &a->ping_hist, NULL,
				   NULL);
		metrics_head(b, "flatline_agent_server_state", "gauge",
			     "1 for the local server's current state.");
		for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
			metrics_sample(b, "flatline_agent_server_state", st->proc == states[i],
				       "state", srv_proc_name(states[i]), METRICS_END);
		metrics_head(b, "flatline_agent_server_primary", "gauge",
			     "1 when the local server says it is a primary.");
		metrics_sample(b, "flatline_agent_server_primary",
			       st->have_info && st->info.role == INFO_ROLE_MASTER, METRICS_END);
		metrics_head(b, "flatline_agent_fenced", "gauge",
			     "1 while self-fencing pauses this primary's writes.");
		metrics_sample(b, "flatline_agent_fenced", a->fence.fenced, METRICS_END);
		metrics_head(b, "flatline_agent_controller_last_answer_seconds", "gauge",
			     "Time since the controller last answered (the lease's age).");
		metrics_sample(b, "flatline_agent_controller_last_answer_seconds",
			       (fl_mono_ms() - a->ctl_answer_ms) / 1e3, METRICS_END);
		metrics_head(b, "flatline_agent_controller_epoch", "gauge",
			     "The epoch in the controller's last answer.");
		metrics_sample(b, "flatline_agent_controller_epoch", (double)a->ctl_epoch, METRICS_END);
	}
	if (!a->probe)
		return;
	metrics_head(b, "flatline_agent_peer_up", "gauge",
		     "1 when the peer is up or passive, 0 when down or unknown.");
	for (int i = 0; i < probe_npeers(a->probe); i++) {
		const struct probe_peer_info *pi = probe_peer(a->probe, i);

		metrics_sample(b, "flatline_agent_peer_up",
			       pi->ev.state == VERDICT_UP || pi->ev.state == VERDICT_PASSIVE,
			       "peer", pi->id, METRICS_END);
	}
	metrics_head(b, "flatline_agent_peer_rtt_seconds", "gauge",
		     "The last echo round trip to the peer, timed in the kernel (tc egress to ingress).");
	for (int i = 0; i < probe_npeers(a->probe); i++) {
		const struct probe_peer_info *pi = probe_peer(a->probe, i);

		if (pi->st.replied)
			metrics_sample(b, "flatline_agent_peer_rtt_seconds", pi->st.rtt_last_ns / 1e9,
				       "peer", pi->id, METRICS_END);
	}
	metrics_head(b, "flatline_agent_peer_probes_sent_total", "counter",
		     "Echo requests that left this host toward the peer (seen at tc egress).");
	for (int i = 0; i < probe_npeers(a->probe); i++)
		metrics_sample_u64(b, "flatline_agent_peer_probes_sent_total",
				   probe_peer(a->probe, i)->st.sent, "peer", probe_peer(a->probe, i)->id,
				   METRICS_END);
	metrics_head(b, "flatline_agent_peer_probes_replied_total", "counter",
		     "Echo replies from the peer matched to a request.");
	for (int i = 0; i < probe_npeers(a->probe); i++)
		metrics_sample_u64(b, "flatline_agent_peer_probes_replied_total",
				   probe_peer(a->probe, i)->st.replied, "peer",
				   probe_peer(a->probe, i)->id, METRICS_END);
}

static int start_metrics(struct agent *a)
{
	struct cfg_endpoint ep = { 0 };

	if (a->metrics_flag) {
		if (cfg_parse_endpoint(a->metrics_flag, &ep, 0) || ep.unix_path[0] || !ep.port) {
			pr_warn("--metrics-listen %s: not host:port\n", a->metrics_flag);
			return -EINVAL;
		}
	} else if (a->cfg) {
		ep = a->cfg->agent.metrics_listen;
	}
	if (!ep.host[0])
		return 0;
	metrics_hist_init(&a->ping_hist, metrics_latency_bounds, metrics_latency_nbounds);
	return metrics_open(&a->metrics, a->base, &ep, fill_metrics, a);
}

/* Refuses to start without what loading needs, naming what is missing. */
static int check_caps(const struct agent *a)
{
	uint64_t need = AGENT_LOAD_CAPS | (wants_probe(a) ? AGENT_PROBE_CAPS : 0) |
			(a->cfg && a->cfg->agent.lease_ms ? CAPS_BIT(CAP_NET_ADMIN) : 0),
		 eff;
	char names[256];
	int err = caps_get(&eff, NULL);

	if (err) {
		pr_warn("failed to read capabilities: %s\n", strerror(-err));
		return err;
	}
	if (eff & CAPS_BIT(CAP_SYS_ADMIN))
		eff |= AGENT_LOAD_CAPS; /* before Linux 5.8, CAP_SYS_ADMIN covered both */
	if ((eff & need) != need) {
		pr_warn("failed to start the agent: missing capabilities %s (run it as root or "
			"with them, as flatline-agent@.service does)\n",
			caps_names(need & ~eff, names, sizeof(names)));
		return -EPERM;
	}
	return 0;
}

/* Everything is loaded and attached: keep only what the agent still uses. */
static int drop_caps(struct agent *a)
{
	/* The write lease's tc programs (lease_watch) likewise. */
	uint64_t keep = a->probe || a->lw ? AGENT_RUN_PROBE_CAPS : 0, eff;
	char names[256];
	int err;

	err = caps_keep(keep);
	if (err) {
		pr_warn("failed to drop capabilities: %s\n", strerror(-err));
		return err;
	}
	err = caps_get(&eff, NULL);
	if (err)
		return err;
	a->caps = eff;
	pr_info("capabilities now: %s\n", caps_names(eff, names, sizeof(names)));
	return 0;
}

static int agent_run(struct agent *a)
{
	struct event *ev_rb = NULL, *ev_term = NULL, *ev_int = NULL, *ev_tick = NULL, *ev_hup = NULL;
	struct event *ev_sched = NULL;
	struct timeval tick = fl_ms_tv(AGENT_SYNC_MS);
	int err = -ENOMEM;

	a->base = event_base_new();
	if (!a->base)
		return -ENOMEM;
	ev_rb = event_new(a->base, proc_watch_epoll_fd(a->pw), EV_READ | EV_PERSIST, on_ringbuf, a);
	ev_term = evsignal_new(a->base, SIGTERM, on_signal, a);
	ev_int = evsignal_new(a->base, SIGINT, on_signal, a);
	ev_tick = event_new(a->base, -1, EV_PERSIST, on_tick, a);
	ev_hup = evsignal_new(a->base, SIGHUP, on_sighup, a);
	if (!ev_rb || !ev_term || !ev_int || !ev_tick || !ev_hup || event_add(ev_hup, NULL) ||
	    event_add(ev_rb, NULL) ||
	    event_add(ev_term, NULL) || event_add(ev_int, NULL) || event_add(ev_tick, &tick)) {
		pr_warn("failed to set up the event loop\n");
		goto cleanup;
	}
	if (a->sw) {
		ev_sched = event_new(a->base, sched_watch_epoll_fd(a->sw), EV_READ | EV_PERSIST,
				     on_sched_ringbuf, a);
		if (!ev_sched || event_add(ev_sched, NULL)) {
			pr_warn("failed to set up the event loop\n");
			goto cleanup;
		}
	}
	if (wants_probe(a)) {
		err = start_probe(a);
		if (err)
			goto cleanup;
	}
	if (a->cfg && start_cluster(a)) {
		pr_warn("failed to start the server monitor\n");
		err = -ENOMEM;
		goto cleanup;
	}
	err = start_metrics(a);
	if (err)
		goto cleanup;
	err = drop_caps(a);
	if (err)
		goto cleanup;
	log_agent_start(a);
	pr_info("agent for node %s ready: %d pid(s), %d cgroup(s), pins in %s\n", a->node,
		a->npids, a->ncgroups, proc_watch_pin_dir(a->pw));
	{
		char status[256];

		snprintf(status, sizeof(status), "node %s: programs attached, %d peer(s)%s",
			 a->node, a->probe ? probe_npeers(a->probe) : 0,
			 a->cfg ? ", reporting to the controller" : "");
		err = daemon_notify_ready(a->base, status);
		if (err)
			goto cleanup;
	}
	/* Events that arrived before the loop started. */
	proc_watch_consume(a->pw);
	err = event_base_dispatch(a->base) < 0 ? -EIO : 0;
	daemon_notify_stopping();
cleanup:
	if (ev_rb)
		event_free(ev_rb);
	if (ev_term)
		event_free(ev_term);
	if (ev_int)
		event_free(ev_int);
	if (ev_tick)
		event_free(ev_tick);
	if (ev_sched)
		event_free(ev_sched);
	if (ev_hup)
		event_free(ev_hup);
	if (a->fence_ev)
		event_free(a->fence_ev);
	metrics_close(a->metrics);
	srvmon_free(a->srv);
	for (int i = 0; i < a->nrep; i++)
		reporter_free(a->rep[i]);
	lease_watch_close(a->lw); /* the pins stay: the lease outlives the agent */
	probe_close(a->probe);
	event_base_free(a->base);
	return err;
}

int cmd_agent(int argc, char **argv)
{
	struct agent a = { .event_log = EVLOG_DEFAULT_PATH, .lock_fd = -1 };
	struct evlog_opts lo = { .max_bytes = EVLOG_DEFAULT_MAX_BYTES,
				 .max_segments = EVLOG_DEFAULT_SEGMENTS };
	struct proc_watch_opts po = { .cb = on_proc_event, .ctx = &a };
	struct evrec r;
	int err;

	err = parse_args(&a, argc, argv);
	if (err)
		return err < 0 ? 0 : err;
	daemon_libbpf_messages();
	/* From here on every failure goes through cleanup: a.cfg may be loaded. */
	err = a.config ? load_config(&a) : 0;
	if (err)
		goto cleanup;
	err = check_caps(&a);
	if (err)
		goto cleanup;
	err = check_targets(&a);
	if (err)
		goto cleanup;
	lo.path = a.event_log;
	err = evlog_open(&a.log, &lo);
	if (err) {
		pr_warn("failed to open event log %s: %s\n", a.event_log, strerror(-err));
		goto cleanup;
	}
	a.lock_fd = daemon_lock_node(a.node);
	if (a.lock_fd < 0) {
		err = a.lock_fd;
		goto cleanup;
	}
	po.node = a.node;
	po.cgroups = a.ncgroups > 0;
	err = proc_watch_open(&a.pw, &po);
	if (err)
		goto cleanup;
	if (a.cfg) {
		struct sched_watch_opts so = { .node = a.node, .cb = on_sched_event, .ctx = &a };

		/* Without it a silent server is judged by PING alone (cause unknown). */
		err = sched_watch_open(&a.sw, &so);
		if (err)
			pr_warn("failed to load the scheduler-state programs: %s; a silent server "
				"will be judged by PING alone\n",
				strerror(-err));
	}
	err = arm_watches(&a);
	if (err)
		goto cleanup;
	err = agent_run(&a);
	evrec_begin(&r, NULL, a.node, "agent_stop");
	evrec_str(&r, "reason", err ? "error" : "signal");
	agent_log(&a, &r);
cleanup:
	sched_watch_close(a.sw);
	proc_watch_close(a.pw);
	evlog_close(a.log);
	if (a.lock_fd >= 0)
		close(a.lock_fd);
	cfg_free(a.cfg);
	return err ? 1 : 0;
}
