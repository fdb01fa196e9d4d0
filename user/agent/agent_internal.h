/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the agent's files share (agent.c, agent_events.c, agent_lease.c,
 * agent_fence.c, agent_metrics.c): the agent's state and the functions one file
 * calls in another. Not an interface: only user/agent/agent*.c include it. */
#ifndef FL_AGENT_INTERNAL_H
#define FL_AGENT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <event2/event.h>
#include "common/caps.h"
#include "common/config.h"
#include "common/event_log.h"
#include "common/metrics.h"
#include "agent/demote.h"
#include "agent/fence.h"
#include "agent/lease.h"
#include "agent/prober.h"
#include "agent/reporter.h"
#include "agent/srvmon.h"
#include "kern/lease_watch.h"
#include "kern/proc_watch.h"
#include "kern/sched_watch.h"

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
#define AGENT_SYNC_MS	     1000

struct agent {
	const char *node;
	const char *event_log;
	pid_t pids[AGENT_MAX_WATCH];
	int npids;
	const char *cgroups[AGENT_MAX_WATCH];
	uint64_t cgroup_ids[AGENT_MAX_WATCH];
	int ncgroups;

	const char *config;  /* -c FILE */
	bool event_log_flag; /* --event-log given: it wins over the file */
	struct cfg *cfg;
	struct cfg_node *me; /* this node in cfg */

	struct event_base *base;
	struct proc_watch *pw;
	struct sched_watch *sw; /* with a cluster file: the server's scheduler state */
	struct evlog *log;
	const char *peer_ids[AGENT_MAX_WATCH]; /* --peer ID=IP */
	const char *peer_addrs[AGENT_MAX_WATCH];
	int npeers;
	int probe_interval_ms;	/* --probe-interval-ms, else the file's, else default */
	int peer_down_after_ms; /* --peer-down-after-ms, likewise */
	struct prober *probe;	/* with peers: ICMP probing timed in the kernel */

	struct srvmon *srv;		    /* with a cluster file: the local server */
	struct reporter *rep[CFG_MAX_CTLS]; /* with a cluster file: one link per controller */
	int nrep;
	pid_t srv_pid; /* the server's pid as watched in the kernel */
	/* Self-fencing (user/agent/fence.h): what the controller last said, and the pause. */
	struct fence_sm fence;
	struct event *fence_ev;
	int64_t ctl_answer_ms; /* last answer (agent start until the first) */
	long long ctl_epoch;
	char ctl_primary[CFG_ID_MAX + 1];
	int lock_fd;
	uint64_t drops_seen; /* ring buffer drops already logged */
	/* The write lease (agent/lease.h), enforced by bpf/lease.bpf.c. */
	struct lease_watch *lw; /* NULL: lease_ms = 0, or no cluster file */
	struct lease_sm lease;
	bool lease_held;	/* as written to the kernel and logged */
	bool grant_pending;	/* taken back after drops: waits for a fresh CLIENT LIST */
	uint64_t lease_lost_ns; /* when it was last lost (0: never held by this agent) */
	uint64_t ctl_answer_ns; /* last controller answer, CLOCK_MONOTONIC */
	/* Connections that flow without the lease: ours, then CLIENT LIST's. */
	struct fl_lease_conn allow[FL_LEASE_MAX_ALLOW];
	__u32 allow_kind[FL_LEASE_MAX_ALLOW];
	int nallow;
	struct fl_lease_conn own; /* the monitor connection's far end as the server sees it */
	bool have_own;
	/* Self-demotion (agent/demote.h, [redis] tls = yes with the lease). */
	struct demote_sm demote;
	uint64_t master_since_ns; /* the server says master since (0: it does not) */
	uint64_t master_episode;  /* times it turned master (seen by this agent) */
	uint64_t sched_drops_seen;
	uint64_t caps; /* the effective set once running */

	/* Prometheus metrics (metrics_listen): counters kept here, the rest read at
	 * scrape time from the monitor, the prober and the pinned maps. */
	const char *metrics_flag; /* --metrics-listen */
	struct metrics *metrics;
	struct metrics_hist ping_hist; /* PING round trips, seconds */
	struct {
		char kind[32];
		uint64_t n;
	} ev_counts[64];
	int nev_kinds;
};

/* agent_events.c */
void agent_log(struct agent *a, struct evrec *r);
void on_proc_event(void *ctx, const struct fl_proc_event *e);
void kick_reports(struct agent *a);
void on_srv_changed(void *ctx, const struct srv_state *prev, const struct srv_state *cur,
		    unsigned what);
void on_srv_note(void *ctx, const char *kind, const char *detail);
void on_sched_event(void *ctx, const struct fl_sched_event *e);
void build_report(void *ctx, struct rep_msg *m);
void on_rep_event(void *ctx, const char *kind, const char *detail);
void on_rep_answer(void *ctx, long long epoch, const char *primary, uint64_t sent_ns);
void on_peer_change(void *ctx, const struct probe_peer_info *peer);
void on_peer_route(void *ctx, const struct probe_peer_info *peer, int prev_ifindex);

/* agent_lease.c */
bool kernel_held(const struct agent *a, uint64_t now);
void lease_drop(struct agent *a, const char *why);
void lease_tick(struct agent *a);
void on_srv_connected(void *ctx, int fd);
void lease_poll_clients(struct agent *a, bool now);
void on_round_trip(void *ctx, const struct probe_peer_info *peer, uint64_t sent_ns);
int start_lease(struct agent *a);
void lease_answer(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns);

/* agent_demote.c */
void demote_answer(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns,
		   bool lease_was_held);
void demote_on_srv(struct agent *a, const struct srv_state *cur);

/* agent_fence.c */
void fence_eval_now(struct agent *a);

/* agent_metrics.c */
void on_ping_rtt(void *ctx, int64_t rtt_ns);
int start_metrics(struct agent *a);

#endif
