/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The agent's own files in layers: struct agent, which they share, and the functions
 * one file calls in another. Not an interface: only user/agent/agent*.c include it.
 *
 * The files in layers, each calling only down (and into the modules below them:
 * srvmon, reporter, prober, the pure lease/fence/demote, common/, kern/):
 *
 *   agent.c              options, start-up, the loop; registers every callback
 *   agent_config.c       agent_config_*: the cluster file, at start and on SIGHUP
 *   agent_events.c       agent_on_*: what the kernel, the server monitor, the controller
 *                        links and the prober report, routed to the glue and the outputs
 *   agent_report.c       agent_report_build: the REPORT, asking each glue for its keys
 *   agent_metrics.c      agent_metrics_*: Prometheus, asking the others for their figures
 *   agent_demote.c       agent_demote_*: self-demotion glue (demote.c decides)
 *   agent_fence.c        agent_fence_*: self-fencing glue (fence.c decides)
 *   agent_lease.c        agent_lease_*: the write lease glue (lease.c decides)
 *   agent_bus.c          agent_bus_*: the server's cluster bus port, which the lease
 *                        leaves unmarked
 *   agent_out.c          agent_out_*: the outputs: event log lines, their counters, and
 *                        report kicks
 *
 * The glue files own their state (struct agent_lease, agent_fence, agent_demote, each
 * defined in its .c, reached through one pointer here); the pure modules keep their
 * prefixes (lease_*, fence_*, demote_*), the glue says agent_<module>_*. */
#ifndef FL_AGENT_LAYERS_H
#define FL_AGENT_LAYERS_H

#include "agent/admit.h"
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include "common/caps.h"
#include "common/config.h"
#include "common/event_log.h"
#include "agent/prober.h"
#include "agent/reporter.h"
#include "agent/srvmon.h"
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
/* The write lease also copies the server's socket descriptors (pidfd_getfd). */
#define AGENT_RUN_LEASE_CAPS (AGENT_RUN_PROBE_CAPS | CAPS_BIT(CAP_SYS_PTRACE))
#define AGENT_SYNC_MS	     1000

/* What the controller last said (the leader's answer to a REPORT): written by
 * agent_on_rep_answer() alone (and ms at start), read by the glue and the metrics. */
struct agent_ctl_answer {
	int64_t ms;  /* last answer, CLOCK_MONOTONIC ms (agent start until the first) */
	uint64_t ns; /* the same in ns (0 until the first) */
	long long epoch;
	char primary[CFG_ID_MAX + 1];
};

/* The server's cluster bus port as agent_bus.c learnt it (CONFIG GET cluster-port,
 * else CLUSTER NODES). */
struct agent_bus {
	pid_t pid;     /* the server process it was learnt for (0: none yet) */
	pid_t asked;   /* CONFIG GET or CLUSTER NODES is out for this process (0: none) */
	uint16_t port; /* its bus port (0: not learnt, every socket marked) */
	bool warned;   /* neither answering said once */
	char err[128]; /* why CONFIG GET did not tell it (for that warning) */
};

struct agent_out;
struct agent_lease;
struct agent_fence;
struct agent_demote;
struct agent_metrics;

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
	/* --address, --redis: a node added at runtime (flatline node add), not in the
	 * cluster file: its part is made from these */
	const char *rt_address, *rt_redis;
	const char *rt_key_file; /* --key-file: its key (hex), for a file without the secret */
	struct cfg *cfg;
	struct cfg_node *me; /* this node in cfg */

	struct event_base *base;
	int fatal; /* -errno: a layer stopped the loop for good (the agent exits 1) */
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
	struct agent_ctl_answer ctl;
	/* Shadow mode: the controller's word in its answers (1 shadow, 0 active, -1 not
	 * heard yet), and what is in effect (that word, else [controller] mode). */
	int ctl_shadow;
	bool shadow;
	/* The lease admission grant in force (agent/admit.h): whose echoes renew it. */
	struct admit_set admit;
	struct event *heartbeat_ev; /* with a cluster file: the lease's and fencing's tick */
	int lock_fd;
	uint64_t drops_seen; /* ring buffer drops already logged */
	uint64_t sched_drops_seen;
	uint64_t caps;		  /* the effective set once running */
	const char *metrics_flag; /* --metrics-listen */

	/* Each layer's own state (agent_out.c, agent_lease.c, ...); NULL: not started. */
	struct agent_out *out;
	struct agent_lease *lease; /* NULL also when off: lease_ms = 0, a unix socket */
	struct agent_fence *fence;
	struct agent_demote *demote;
	struct agent_metrics *metrics; /* NULL without metrics_listen */
	struct agent_bus bus;	       /* agent_bus.c */
};

/* --- agent_config.c: the cluster file --------------------------------- */
/* Reads -c FILE (with a runtime node's section) into a->cfg, finds a->me, and takes
 * the event log path and the mode from it; -errno with a message. */
int agent_config_load(struct agent *a);
/* SIGHUP: reads the file again and applies what may change live (config_rejected or
 * config_reloaded in the event log); a file that fails keeps the running one. */
void agent_config_reload(struct agent *a);

/* --- agent_events.c: what the agent hears ----------------------------- */
void agent_on_proc_event(void *ctx, const struct fl_proc_event *e);
void agent_on_srv_changed(void *ctx, const struct srv_state *prev, const struct srv_state *cur,
			  unsigned what);
void agent_on_srv_note(void *ctx, const char *kind, const char *detail);
void agent_on_sched_event(void *ctx, const struct fl_sched_event *e);
void agent_on_rep_event(void *ctx, const char *kind, const char *detail);
void agent_on_rep_answer(void *ctx, long long epoch, const char *primary, uint64_t sent_ns,
			 int shadow);
/* A lease admission grant in an answer (agent/admit.h): applied, said, reported. */
void agent_on_rep_admit(void *ctx, long long term, long long grant, const char *list);
/* Shadow mode in effect: the controller's last word, else [controller] mode; a
 * change gives up or takes the write lease (the answer that said it: epoch,
 * primary, sent_ns; -1, NULL, 0 from a reload) and logs mode_changed. */
void agent_mode_apply(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns);
void agent_on_peer_change(void *ctx, const struct probe_peer_info *peer);
void agent_on_peer_route(void *ctx, const struct probe_peer_info *peer, int prev_ifindex);

/* --- agent_report.c: the REPORT --------------------------------------- */
void agent_report_build(void *ctx, struct rep_msg *m);
/* How long the REPORTs may wait when nothing changes: [agent] heartbeat_ms, or
 * replica_heartbeat_ms for a healthy replica whose lease (if any) is not running short. */
int agent_report_interval_ms(void *ctx);
/* REPORTs a heartbeat may follow unanswered: 3 while a write lease is held, else 1. */
int agent_report_in_flight_max(void *ctx);

/* --- agent_metrics.c: Prometheus (metrics_listen) --------------------- */
int agent_metrics_start(struct agent *a);
void agent_metrics_on_ping(void *ctx, int64_t rtt_ns);
void agent_metrics_close(struct agent *a);

/* --- agent_demote.c: self-demotion ------------------------------------ */
int agent_demote_start(struct agent *a);
/* A controller answer (the leader's), after agent_lease_answer; lease_was_held: before it. */
void agent_demote_answer(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns,
			 bool lease_was_held);
/* Every change of the server: since when it says master. */
void agent_demote_on_srv(struct agent *a, const struct srv_state *cur);
void agent_demote_free(struct agent *a);

/* --- agent_fence.c: self-fencing -------------------------------------- */
int agent_fence_start(struct agent *a);
/* Evaluates the controller's last answer and the peers; pauses or resumes writes. */
void agent_fence_eval(struct agent *a);
bool agent_fence_fenced(const struct agent *a);
/* REPORT's fenced key, while fenced. */
void agent_fence_report(const struct agent *a, struct rep_msg *m);
void agent_fence_free(struct agent *a);

/* --- agent_lease.c: the write lease ----------------------------------- */
/* Opens the lease (lease_ms > 0, a TCP server, not shadow mode): a->lease stays NULL
 * when off. */
int agent_lease_start(struct agent *a);
/* Shadow mode heard: the lease given up and disarmed (nothing dropped); active: armed
 * and taken from that answer at once, or, not open yet (the agent started in shadow
 * mode), opened now and armed by the next answer. 0 or -errno. */
int agent_lease_set_shadow(struct agent *a, bool shadow, long long epoch, const char *primary,
			   uint64_t sent_ns);
bool agent_lease_on(const struct agent *a);
/* The lease as the kernel has it: taken (not waiting for a CLIENT LIST), unexpired. */
bool agent_lease_held(const struct agent *a, uint64_t now_ns);
/* ms until the lease runs out (0: lapsed or given up); -1 without a lease. */
long long agent_lease_ms_left(const struct agent *a, uint64_t now_ns);
void agent_lease_answer(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns);
/* Gives it up at once (the server is hung or down): why is the event's reason. */
void agent_lease_drop(struct agent *a, const char *why);
/* Once per heartbeat: expiry, and the CLIENT LIST poll (now: at once). */
void agent_lease_tick(struct agent *a);
void agent_lease_poll_clients(struct agent *a, bool now);
/* The server monitor's connected hook and the prober's round-trip hook. */
void agent_lease_on_srv_connected(void *ctx, int fd);
void agent_lease_on_round_trip(void *ctx, const struct probe_peer_info *peer, uint64_t sent_ns);
/* REPORT's lease (held, lapsed, revoked), lease_ms_left and lease_source keys, while
 * on; a lease given up may be taken again from this REPORT on if the server answers. */
void agent_lease_report(struct agent *a, struct rep_msg *m);
/* Once a second (and every heartbeat): a new server process's sockets marked. */
void agent_lease_rescan(struct agent *a);

/* --- agent_bus.c: the cluster bus port -------------------------------- */
/* The cluster bus port of server process pid, for the lease's marks: 1 and *port (0:
 * none to leave out: not a cluster node as far as its INFO says, none yet, or neither
 * CONFIG GET nor CLUSTER NODES told it), or 0 and *port 0 while it is asked (now or
 * earlier: the answer calls agent_lease_rescan). */
int agent_bus_port(struct agent *a, pid_t pid, uint16_t *port);
/* CONFIG GET cluster-port's answer, RESP2's [name, value] or RESP3's {name: value},
 * as the bus port of a server listening on port (a value 0: port + 10000). -EINVAL
 * for anything else, or a port that is port itself. */
int agent_bus_config_port(const redisReply *r, long port, uint16_t *bus);
/* The "@cport" of CLUSTER NODES' line flagged myself (text[0..len)): 0, -ENOENT
 * without such a line or field, -EINVAL for a bad number or port itself. */
int agent_bus_nodes_port(const char *text, size_t len, long port, uint16_t *bus);
/* Closes the kernel side; the pins stay (the lease outlives the agent). */
void agent_lease_close(struct agent *a);

/* --- agent_out.c: the outputs ----------------------------------------- */
int agent_out_open(struct agent *a);
/* Writes r to the event log and counts it by r->kind. */
void agent_out_log(struct agent *a, struct evrec *r);
/* Something changed: report to every controller now. */
void agent_out_kick(struct agent *a);
/* flatline_agent_events_total: the i-th kind counted (NULL past the last), its count in *n. */
const char *agent_out_count(const struct agent *a, int i, uint64_t *n);
void agent_out_close(struct agent *a);

#endif
