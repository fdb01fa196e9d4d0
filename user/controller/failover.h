/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Failure rules, replica ranking and the failover state machine of the
 * controller ("Replica selection" in docs/controller.md), in the fo_*.c modules
 * that fo_internal.h lists. Pure logic: every I/O
 * (INFO, CLIENT PAUSE, promotion, REPLICAOF, timers, events) goes through
 * struct fo_ops, and time through an injected clock, so the unit tests drive it
 * without sockets. The controller (controller.c) implements the ops and feeds
 * the replies back with fo_on_*(). */
#ifndef FL_FAILOVER_H
#define FL_FAILOVER_H

#include <stdbool.h>
#include <stddef.h>
#include "common/config.h"
#include "common/event_log.h"
#include "common/info.h"

/* The cluster has no fixed node limit (the model is allocated for the cluster file);
 * a shard has at most FO_MAX_SHARD_NODES nodes, and a report carries at most
 * FO_MAX_PEERS peer verdicts (more are ignored: an agent probes its own shard and its
 * --peer flags). */
#define FO_MAX_SHARD_NODES 64
#define FO_MAX_PEERS	   64
#define FO_TIMELINE_MAX	   24
#define FO_TILT_TRIGGER_MS 2000 /* a loop stall or clock jump larger than this enters TILT */

/* What an agent says about its server's process (protocol.md, key `proc`). */
enum fo_proc {
	FO_PROC_UNKNOWN = 0,
	FO_PROC_UP,
	FO_PROC_DOWN,
	FO_PROC_HUNG,
	FO_PROC_BUSY,
	FO_PROC_LOADING
};
/* An agent's ICMP verdict on a peer (key `peer.<id>`). */
enum fo_peer { FO_PEER_UNKNOWN = 0, FO_PEER_UP, FO_PEER_DOWN };

/* An agent's latest REPORT: its whole state, never a delta. */
struct fo_report {
	enum fo_proc proc;
	long pid;
	long long proc_change_ms; /* wall clock */
	char exit[32];		  /* "SIGKILL", "status:N", "oom"; "" if none */
	int core_dumped;
	int fenced;
	char auth_error[128];
	/* With proc hung or busy: why, as the agent's scheduler state says. */
	char cause[16];	       /* "stopped", "busy", "throttled", "blocked", "unresponsive"… */
	char thread_state[12]; /* "running", "stopped"…; "" if none */
	long long state_ms, window_ms, run_ms, wait_ms;
	long long throttled_ms; /* -1: not reported */
	struct info_repl repl;	/* role, master, link, replid, offset, priority, server */
	int lease;		/* enum fo_lease_report: the agent's write lease */
	int lease_len_ms;	/* key lease_ms: the agent's lease length; -1: not reported */
	int heartbeat_ms;	/* key heartbeat_ms: its next report within this; 0: not said */
	/* Keys admit_term and admit_grant: the lease admission grant its agent runs with
	 * (controller/lease_admit.h); 0: none said (an older agent, or none applied). */
	long long admit_term, admit_grant;
	/* The arrays last, each read only below its count: a report is cleared up to
	 * them and copied only as far as they are used (fo_report_copy), not 1.8 KB
	 * each per REPORT. Peer verdicts (key peer.<id>): peer_v[i] (enum fo_peer) on
	 * node peer_node[i], and peer.<id>.packet_age_ms in peer_packet_age_ms[i] (-1 =
	 * none). Peers it still reports that were removed at runtime (its agent, started
	 * with them, still probes them and takes their echo replies for its lease):
	 * removed_node[]. */
	int npeers;
	int nremoved;
	int peer_node[FO_MAX_PEERS];
	unsigned char peer_v[FO_MAX_PEERS];
	long long peer_packet_age_ms[FO_MAX_PEERS];
	int removed_node[FO_MAX_PEERS];
};

/* *dst = *src, as far as src's arrays are used. */
void fo_report_copy(struct fo_report *dst, const struct fo_report *src);

enum fo_lease_report {
	FO_LEASE_UNKNOWN = 0, /* not reported (an older agent, or lease_ms = 0) */
	FO_LEASE_HELD = 1,
	FO_LEASE_LAPSED = 2,
	FO_LEASE_REVOKED = 3, /* given up, deadline 0 in the kernel, no answer to it renews */
	/* Its server's sockets are not marked yet (the agent has not found the process
	 * that listens on its port): a lease running out silences nothing. */
	FO_LEASE_UNGUARDED = 4,
};

/* rep's verdict on node (an index of fo_cluster.nodes): FO_PEER_UNKNOWN if it has none. */
static inline enum fo_peer fo_report_peer(const struct fo_report *rep, int node)
{
	for (int i = 0; i < rep->npeers; i++)
		if (rep->peer_node[i] == node)
			return (enum fo_peer)rep->peer_v[i];
	return FO_PEER_UNKNOWN;
}
/* Sets rep's verdict on node; -ENOSPC past FO_MAX_PEERS peers. */
int fo_report_set_peer(struct fo_report *rep, int node, enum fo_peer v);
/* ms since rep's agent last saw any packet from node (peer.<id>.packet_age_ms), -1 if
 * not reported. */
static inline long long fo_report_peer_age(const struct fo_report *rep, int node)
{
	for (int i = 0; i < rep->npeers; i++)
		if (rep->peer_node[i] == node)
			return rep->peer_packet_age_ms[i];
	return -1;
}
int fo_report_set_peer_age(struct fo_report *rep, int node, long long ms);

/* The verdict of the failure rules on one node (fo_judge). */
enum fo_verdict {
	FO_V_UNKNOWN = 0, /* no report yet: nothing to judge */
	FO_V_OK,
	FO_V_PROC_DOWN,	 /* process path: its agent saw the process exit / OOM-killed */
	FO_V_PROC_HUNG,	 /* process path: alive, not answering PING */
	FO_V_HOST_DOWN,	 /* host path: stale heartbeat, a peer says down, none says up */
	FO_V_AGENT_LOST, /* stale heartbeat not confirmed by peers: alert only */
};

/* Node flags, as sentinel.c keeps them: each condition has a bit and a timestamp. */
#define FO_N_REPORTED	(1u << 0) /* at least one REPORT received */
#define FO_N_AGENT	(1u << 1) /* an authenticated agent connection is open */
#define FO_N_PROC_DOWN	(1u << 2) /* FO_V_PROC_DOWN: down_since_ms */
#define FO_N_PROC_HUNG	(1u << 3) /* FO_V_PROC_HUNG: hung_since_ms */
#define FO_N_HOST_DOWN	(1u << 4) /* FO_V_HOST_DOWN: host_down_since_ms */
#define FO_N_AGENT_LOST (1u << 5) /* FO_V_AGENT_LOST: agent_lost_since_ms */
#define FO_N_SDOWN	(1u << 6) /* any of PROC_DOWN, PROC_HUNG, HOST_DOWN: sdown_since_ms */
#define FO_N_UNREACH	(1u << 7) /* the controller's own PING/INFO fails: unreach_since_ms */
#define FO_N_FIXING	(1u << 8) /* a REPLICAOF to repair this node is in flight */
#define FO_N_ROGUE                                                                                 \
	(1u << 9)		/* reported master, not the primary, and not demoted               \
				 * by us yet: its agent may do it (agent/demote.h) */
#define FO_N_REMOVED (1u << 10) /* removed at runtime: a tombstone, nothing looks it up */
#define FO_N_UNPROMOTABLE                                                                          \
	(1u << 11) /* a spare just attached (controller/ctl_spares.c): no candidate until          \
		    * synced and steady for [shard] promotable_after_ms */

/* A repair outside a failover (REPLICAOF <primary> of a node). */
enum fo_fix {
	FO_FIX_NONE = 0,
	FO_FIX_DEMOTE,	/* a master that is not the shard's primary */
	FO_FIX_REPOINT, /* a replica following another server */
};

struct fo_node {
	const char *id;
	int idx;
	int shard;    /* index in fo_cluster.shards, -1 if in none */
	int spos;     /* its position in that shard's nodes */
	int priority; /* cluster file; 0 = never promote */
	char host[256];
	int port;
	unsigned flags;
	long long last_report_ms; /* monotonic; the heartbeat */
	long long down_since_ms, hung_since_ms, host_down_since_ms, agent_lost_since_ms;
	long long sdown_since_ms, unreach_since_ms;
	long long link_up_ms; /* last report with the link up to the shard's primary */
	long long ping_ms;    /* last PING of our own while the agent is lost */
	long long fix_ms;     /* last repair (REPLICAOF) sent */
	enum fo_fix fix_kind; /* what the repair in flight (FO_N_FIXING) does */
	int fix_ok;	      /* REPOINT: this node answered OK */
	struct fo_report rep;
	long long named_primary_ms; /* last REPORT answer naming it primary (lease_wait.h) */
	/* The admission grant from which on this controller's answers leave this node out
	 * of every other agent's admitted peers (controller/lease_admit.h); 0: admitted. */
	long long admit_out;
	/* A longer lease length its agent reported before a shorter one: counted until
	 * lease_hold_until_ms (monotonic), when no lease of that length can remain. */
	int lease_hold_ms;
	long long lease_hold_until_ms;
	/* From the controller's own INFO (start, selection, planned switchover). */
	struct info_repl info;
	int info_ok;
	long long info_ms;
	long long info_asked_ms; /* a cluster primary's role asked (fo_shadow_follow) */
};

enum fo_state {
	FO_ST_NONE = 0,
	FO_ST_SELECT,	   /* fresh INFO replication asked from candidates, in parallel */
	FO_ST_PAUSE,	   /* planned: CLIENT PAUSE WRITE sent to the primary */
	FO_ST_WAIT_OFFSET, /* planned: waiting for the target to reach the paused offset */
	FO_ST_PROMOTE,	   /* MULTI; REPLICAOF NO ONE; CONFIG REWRITE; CLIENT KILL…; EXEC */
	FO_ST_REPOINT,	   /* REPLICAOF <new> sent to every other node */
	FO_ST_COUNT
};

struct fo_step {
	long long at_ms; /* since the failover started */
	char text[160];
};

/* One failover, in progress or the last one of the shard. */
struct fo_failover {
	enum fo_state state;
	bool planned;
	long long start_ms, state_since_ms; /* monotonic */
	long long start_wall_ms, end_wall_ms;
	int from;   /* the primary failed over from */
	int to;	    /* the node promoted, -1 until promoted */
	int target; /* planned: the operator's choice, -1 = best */
	int cand[FO_MAX_SHARD_NODES], ncand, cand_next; /* ranked candidates */
	int pending;					/* replies outstanding in this state */
	unsigned long long asked; /* SELECT: INFO asked of the node at this bit (spos) */
	int repointed, repoint_failed;
	long long pause_offset; /* planned: the primary's offset once paused */
	bool paused;
	bool takeover;	/* cluster shard: the operator asked for CLUSTER FAILOVER TAKEOVER */
	bool recording; /* PROMOTE: the decision is being recorded (ops->record) */
	unsigned long long rec_epoch; /* the epoch recorded (or being) for f->to, 0 none */
	unsigned long long epoch;     /* after promotion */
	char reason[96];
	char result[96]; /* "" while running; "ok" or why it aborted */
	struct fo_step steps[FO_TIMELINE_MAX];
	int nsteps;
};

#define FO_S_NO_GOOD_REPLICA                                                                       \
	(1u << 0)	     /* the last attempt found none: retry when a report changes */
#define FO_S_ODOWN (1u << 1) /* the primary is judged failed (published +odown) */
/* Set while a selection aborts because candidates did not answer in time (retry_select_ms) */
#define FO_S_RETRY_SELECT (1u << 12)
#define FO_S_PRIMARY_DIED                                                                          \
	(1u << 2)		     /* the primary was down, no failover since: its history is    \
				      * checked when it returns */
#define FO_S_EMPTY_RESTART (1u << 3) /* it returned with another, shorter history: failing over */
#define FO_S_SHADOWED                                                                              \
	(1u << 4) /* shadow mode: would_failover said for this primary's failure; nothing          \
		   * more until it is up again or the servers name another (fo_shadow.c) */

struct fo_shard {
	const char *name;
	int idx;
	int *nodes;
	int nnodes;
	int primary;		    /* node index, -1 unknown */
	long long primary_since_ms; /* monotonic: when it was made (fo_set_primary) */
	unsigned long long epoch;
	/* The highest epoch the record (HA: etcd) is known to hold: a promotion takes the
	 * next epoch above both (a record write that timed out may have been applied). */
	unsigned long long epoch_floor;
	unsigned flags;
	long long last_failover_end_ms; /* monotonic, 0 = never */
	char primary_replid[48];	/* the primary's replication id, as last seen */
	struct fo_failover fo;		/* in progress (state != NONE) */
	struct fo_failover last;	/* the last finished or aborted one */
	bool have_last;
	/* SENTINEL SET <shard> down-after-milliseconds / failover-timeout (ctl_runtime.c);
	 * 0: the controller's node_down_after_ms / failover_block_ms. */
	int down_after_ms, block_ms;
	char blocked_why[160]; /* last "failover_blocked" reason logged */
	int unknown_said;      /* 1 + the masters count primary_unknown last said, 0 not said */
	long long lease_wait_since_ms; /* a failover decided, waiting for the old lease */
	/* A selection that failed because candidates did not answer INFO in time (a
	 * loaded host, a backlog): retried from retry_select_ms (monotonic), the wait
	 * doubling from 250 ms to 4 s; 0 after a failover ends. */
	long long retry_select_ms;
	int retry_select_wait_ms;
	long long lease_waited_ms; /* how long the failover starting now waited */
	bool removed;		   /* removed at runtime: a tombstone (fo_find_shard skips) */
	/* [shard] mode = cluster (fo_cluster.c): promoted by the cluster's election. */
	bool cluster;
	int cluster_checked;   /* 1 + the primary whose CLUSTER NODES was judged last, 0 none */
	char cluster_why[160]; /* the last judgement's mismatch, "" consistent */
};

struct fo_ops {
	/* PING of our own (agent lost); answer with fo_on_reach(). */
	void (*ping)(void *ctx, int node, int timeout_ms);
	/* Asks INFO replication of node; answer with fo_on_info(). */
	void (*info)(void *ctx, int node, int timeout_ms);
	/* CLIENT PAUSE pause_ms WRITE; answer with fo_on_pause(). */
	void (*pause)(void *ctx, int node, int pause_ms, int timeout_ms);
	/* CLIENT UNPAUSE; no answer expected. */
	void (*unpause)(void *ctx, int node);
	/* The promotion transaction; answer with fo_on_promote(). */
	void (*promote)(void *ctx, int node, int timeout_ms);
	/* Optional (HA mode): records the decision "node is the shard's primary at epoch"
	 * where a successor reads it, BEFORE the promotion is sent; answer with
	 * fo_on_record(). Returns 0 (started: the answer follows), > 0 (nothing to record
	 * here: promote at once) or < 0 (cannot even start: the failover aborts). NULL: as
	 * > 0 (the state file is written after the promotion, ops->promoted). */
	int (*record)(void *ctx, int shard, int node, unsigned long long epoch);
	/* Cluster shards: CLUSTER FAILOVER [option] on node ("FORCE", "TAKEOVER" or ""),
	 * answered with fo_on_promote() once the node's ROLE says master (or not in time). */
	void (*cluster_failover)(void *ctx, int node, const char *option, int timeout_ms);
	/* REPLICAOF host port of master; answer with fo_on_replicaof(). */
	void (*replicaof)(void *ctx, int node, int master, int timeout_ms);
	/* Calls fo_on_timer(shard) after ms (replaces the shard's previous timer); ms < 0 cancels.
	 */
	void (*timer)(void *ctx, int shard, int ms);
	/* An event for the log and the flatline.<kind> channel; kind is the one r was begun with.
	 */
	void (*event)(void *ctx, const char *kind, struct evrec *r);
	/* A Sentinel-format message on channel. */
	void (*publish)(void *ctx, const char *channel, const char *msg);
	/* The shard has a new primary (promotion accepted): persist the state, update DNS. */
	void (*promoted)(void *ctx, int shard);
	/* A failover ended (ok or aborted); r is "ok" or the reason. */
	void (*done)(void *ctx, int shard, const char *result);
};

struct fo_cluster {
	struct fo_node *nodes; /* nnodes of them, as the cluster file lists them, then
				* those added at runtime (room for node_cap) */
	int nnodes, node_cap;
	struct fo_node **by_id; /* the same, sorted by id (fo_find_node) */
	struct fo_shard *shards;
	int nshards, shard_cap;
	const struct cfg *cfg;
	/* Settings (from the cluster file, or tests). */
	int node_down_after_ms;
	int lease_ms;	  /* the agents' [agent] lease_ms: the failover waits for it */
	int lease_ms_max; /* the longest lease_ms of the file since start (reloads) */
	int failover_block_ms;
	int tilt_ms;
	int info_timeout_ms;	/* fresh INFO during selection */
	int promote_timeout_ms; /* one candidate's promotion */
	int repoint_timeout_ms; /* REPLICAOF on the others */
	int offset_wait_ms;	/* planned: how long the target may take to catch up */
	int offset_poll_ms;	/* planned: INFO of the target this often while waiting */
	bool starting;		/* topology not learned yet: observe only (set by the controller) */
	/* Shadow mode ([controller] mode = shadow): judge, say what would be done
	 * (would_failover, would_promote), change nothing; the primary follows the
	 * servers' roles (fo_shadow.c). */
	bool shadow;
	bool record_first; /* HA: a promotion is recorded (ops->record) before it is made */
	/* REPORT answers naming a primary may have come from another controller until this
	 * time (monotonic ms): a previous process of this one (set at start), or in HA mode
	 * a leader deposed when this one took the lead (set then). A lease they renewed runs
	 * until at most this + the lease's span (lease_wait.c). 0: only our own answers. */
	long long others_answered_until_ms;
	/* Lease admission (controller/lease_admit.h): this controller's term (ordered
	 * across its processes and, in HA mode, across leaders) and its last grant. */
	long long admit_term, admit_grant;
	/* TILT */
	bool tilt;
	long long tilt_since_ms, tilt_until_ms;
	long long last_tick_mono_ms, last_tick_wall_ms;
	/* The injected clocks (monotonic and wall, ms). */
	long long (*now_ms)(void *ctx);
	long long (*wall_ms)(void *ctx);
	const struct fo_ops *ops;
	void *ctx;
};

/* Builds nodes and shards from a loaded cluster file. -E2BIG: a shard of more than
 * FO_MAX_SHARD_NODES nodes. */
int fo_cluster_init(struct fo_cluster *c, const struct cfg *cfg, const struct fo_ops *ops,
		    void *ctx);
void fo_cluster_free(struct fo_cluster *c);
/* Runtime membership (controller/ctl_members.c changes the cfg first, then these):
 * node i of cfg (new, at cfg->nnodes - 1, or a tombstone revived) set up afresh, or
 * made a tombstone; shard i of cfg set up (a revived one keeps its epoch) or made one;
 * a shard's node list taken again from cfg (positions renumbered). -ENOSPC past the
 * capacity the cluster was made with. */
int fo_node_setup(struct fo_cluster *c, int i);
void fo_node_drop(struct fo_cluster *c, int i);
int fo_shard_setup(struct fo_cluster *c, int i);
void fo_shard_drop(struct fo_cluster *c, int i);
void fo_shard_sync(struct fo_cluster *c, int i);
struct fo_node *fo_find_node(struct fo_cluster *c, const char *id);
/* The node of that id removed at runtime (a tombstone), else NULL. */
struct fo_node *fo_find_removed_node(struct fo_cluster *c, const char *id);
struct fo_shard *fo_find_shard(struct fo_cluster *c, const char *name);
/* The shard's down-after and failover block (SENTINEL SET), else the controller's. */
static inline int fo_down_after_ms(const struct fo_cluster *c, int shard)
{
	return shard >= 0 && c->shards[shard].down_after_ms ? c->shards[shard].down_after_ms
							    : c->node_down_after_ms;
}
/* How long a node's last REPORT keeps it fresh: the shard's down-after, or three of
 * the heartbeats its agent said it reports at (a quiet replica's) if longer. */
static inline int fo_fresh_ms(const struct fo_cluster *c, const struct fo_node *n)
{
	int ms = fo_down_after_ms(c, n->shard);

	return 3 * n->rep.heartbeat_ms > ms ? 3 * n->rep.heartbeat_ms : ms;
}
static inline int fo_block_ms(const struct fo_cluster *c, const struct fo_shard *s)
{
	return s->block_ms ? s->block_ms : c->failover_block_ms;
}
/* The shards not removed at runtime. */
static inline int fo_live_shards(const struct fo_cluster *c)
{
	int n = 0;

	for (int i = 0; i < c->nshards; i++)
		n += !c->shards[i].removed;
	return n;
}
/* The node whose replication address is host:port, or NULL. */
struct fo_node *fo_node_by_addr(const struct fo_cluster *c, const char *host, int port);

/* Shadow mode on or off (fo_shadow.c): -EBUSY while a failover runs (it would end
 * in the other mode). Leaving shadow mode forgets the would_failover marks: the
 * shard is judged again as it is. */
int fo_shadow_set(struct fo_cluster *c, bool shadow);
/* Whether shadow mode may become active now without acting at once (`flatline
 * cutover`): the topology learned, no TILT, per shard a primary, no failover running
 * or owed, every node's agent connected and fresh, every server up and in the role
 * the model has (replicas following the primary with their link up). Each reason
 * to say() (may be NULL); the number of reasons, 0 = safe. */
int fo_cutover_check(const struct fo_cluster *c, long long now,
		     void (*say)(void *ctx, const char *why), void *ctx);

/* Protocol words. */
enum fo_proc fo_proc_parse(const char *s);
const char *fo_proc_name(enum fo_proc p);
const char *fo_verdict_name(enum fo_verdict v);
const char *fo_state_name(enum fo_state s);

/* Fills *rep from a REPORT's key/value arguments (argv[i] key, argv[i+1] value).
 * Unknown keys are ignored; -EINVAL (and a reason) for a malformed value. */
int fo_report_parse(struct fo_cluster *c, struct fo_report *rep, int argc, const char **argv,
		    const size_t *lens, char *why, size_t whylen);

/* r replicates from m (by address; fo_model.c). */
bool fo_follows(const struct info_repl *r, const struct fo_node *m);
/* The freshest replication view of n: the agent's report or our own INFO; NULL if none. */
const struct info_repl *fo_latest(const struct fo_node *n);

/* The failure rules. */
enum fo_verdict fo_judge(const struct fo_cluster *c, const struct fo_node *n, long long now_ms);

/* A new REPORT from node's agent: stores it, re-judges its shard (and the shards
 * of the peers whose verdict in it changed), starts a failover or repairs a stray
 * node where the rules say so. Its cost is the shard's, not the cluster's. */
void fo_on_report(struct fo_cluster *c, struct fo_node *n, const struct fo_report *rep);
/* The agent connection of node opened (1) or closed (0). */
void fo_on_agent(struct fo_cluster *c, struct fo_node *n, bool connected);
/* Re-judges every node and shard (heartbeat deadlines, end of TILT). */
void fo_evaluate(struct fo_cluster *c);
/* Re-judges n's shard (its nodes and its primary), or n alone outside any shard. */
void fo_evaluate_node(struct fo_cluster *c, struct fo_node *n);
/* The controller's own reachability check of node (PING/INFO) succeeded or failed. */
void fo_on_reach(struct fo_cluster *c, struct fo_node *n, bool ok);

/* Replica ranking: fills out[] with the eligible candidates of shard s (old
 * primary `from` excluded), best first; returns how many. Uses n->info when
 * n->info_ok, else the agent's report. ref_replid: the failed primary's
 * replication id ("" unknown). since_ms: a link up at or after this counts as
 * "still connected to the failed primary". */
int fo_rank(const struct fo_cluster *c, const struct fo_shard *s, int from, const char *ref_replid,
	    long long since_ms, int *out, int max);

/* TILT: called every 100 ms or so with both clocks; a stall or jump larger than
 * FO_TILT_TRIGGER_MS enters TILT for tilt_ms (tilt_start), and its end (tilt_end)
 * judges everything afresh (fo_evaluate). Returns true while in TILT. */
bool fo_tilt_tick(struct fo_cluster *c);
/* The TILT rule (fo_rules.c, pure): what the tick at (mono_ms, wall_ms) means, from
 * the last tick's clocks and the TILT state in c; *stall_ms and *jump_ms say the gap
 * of the monotonic clock and how far the wall clock moved apart from it. */
enum fo_tilt_step {
	FO_TILT_NONE = 0, /* not in TILT, and no stall or jump */
	FO_TILT_ENTER,	  /* a stall or jump: enter TILT */
	FO_TILT_AGAIN,	  /* a stall or jump while in TILT: its end moves later */
	FO_TILT_STAY,	  /* in TILT, not over yet */
	FO_TILT_LEAVE,	  /* in TILT, and its time is over */
};
enum fo_tilt_step fo_tilt_judge(const struct fo_cluster *c, long long mono_ms, long long wall_ms,
				long long *stall_ms, long long *jump_ms);
/* May shard s start a failover now for verdict v (block window, TILT, one at a time)?
 * why says why not. */
bool fo_may_failover(const struct fo_cluster *c, const struct fo_shard *s, enum fo_verdict v,
		     bool planned, char *why, size_t whylen);

/* Starts a failover of shard s. planned: a switchover (pause writes, wait for the
 * target's offset); target -1 = the best replica. -EBUSY, -EAGAIN (blocked/TILT),
 * -ENOENT (no primary known), -EINVAL (target not in shard / priority 0). */
int fo_start(struct fo_cluster *c, struct fo_shard *s, bool planned, int target, const char *reason,
	     char *why, size_t whylen);

/* Replies from the I/O layer. ok false: error or timeout, err says which. */
void fo_on_info(struct fo_cluster *c, struct fo_node *n, bool ok, const struct info_repl *info,
		const char *err);
void fo_on_pause(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err);
void fo_on_promote(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err);
/* The answer to ops->record for (shard, node, epoch): ok, the promotion goes out;
 * otherwise the failover aborts (and starts again as after any failed step). An
 * answer for another node or epoch than the one being recorded is ignored. */
void fo_on_record(struct fo_cluster *c, struct fo_shard *s, int node, unsigned long long epoch,
		  bool ok, const char *err);
void fo_on_replicaof(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err);
void fo_on_timer(struct fo_cluster *c, struct fo_shard *s);

/* The state machine (fo_machine.c; docs/controller.md, "Failover state machine").
 * Is from -> to a transition of the table? */
bool fo_transition_allowed(enum fo_state from, enum fo_state to);
/* The one place a shard's failover changes state: enters `to` (its timeout
 * armed; NONE: the failover recorded as s->last with result, ops->done called).
 * -EINVAL, nothing changed, for a transition not in the table. */
int fo_transition(struct fo_cluster *c, struct fo_shard *s, enum fo_state to, const char *result);
/* The one place a shard's primary and epoch change: accepted only in state
 * PROMOTE (the promotion) and NONE (discovery, the state file); -EINVAL else. */
int fo_set_primary(struct fo_cluster *c, struct fo_shard *s, int node, unsigned long long epoch);

/* The shard's primary is the one to name to clients (the Sentinel API, held
 * questions): one is known and no failover runs, or the failover is past its
 * promotion (REPOINT: the new primary accepts writes, its epoch is set and the
 * state saved; the replicas' repoints and the old primary's demotion go on, each
 * with its own timeout, and delay no answer). */
bool fo_primary_settled(const struct fo_shard *s);

/* At start, once INFO of the shard's nodes is in (n->info_ok): decides the
 * primary from the state file's and the servers' word; repairs follow. */
void fo_discover(struct fo_cluster *c, struct fo_shard *s);

/* A follower controller (HA mode) takes the leader's word, read from etcd: primary
 * node at epoch. Only in NONE and only forward (an older epoch is ignored); logs
 * primary_adopted and publishes +switch-master when the primary changed. Returns 1
 * if anything changed, 0 if not, -EINVAL if it cannot apply. */
int fo_adopt(struct fo_cluster *c, struct fo_shard *s, int node, unsigned long long epoch);

/* The state file: "shard <name> epoch <n> primary <id>" lines, a checksum, written
 * with write, fsync, rename, fsync of the directory. */
int fo_state_save(const struct fo_cluster *c, const char *path, char *err, size_t errlen);
/* The two halves of fo_state_save: the text (malloc'd; NULL if out of memory), and
 * writing a text to path as above (from any thread: it touches nothing else). */
char *fo_state_format(const struct fo_cluster *c, size_t *len);
int fo_state_write(const char *path, const char *buf, size_t len, char *err, size_t errlen);
/* Reads it into the shards (primary, epoch). -ENOENT if absent (a first start),
 * -EINVAL with a clear message when damaged. Shards or nodes no longer in the
 * cluster file are skipped with a warning in err (return 0, err non-empty). */
int fo_state_load(struct fo_cluster *c, const char *path, char *err, size_t errlen);
/* Before the cluster is set up: the membership lines of the state file (after
 * "member "), each passed to member (non-zero: the file is refused), once the file's
 * checksum is good. -ENOENT if absent. */
int fo_state_members(const char *path, int (*member)(void *ctx, const char *line), void *ctx,
		     char *err, size_t errlen);
/* The same from a string (tests, fuzzing). */
int fo_state_parse(struct fo_cluster *c, const char *text, size_t len, const char *name, char *err,
		   size_t errlen);

/* Cluster shards (fo_cluster.c). One line of CLUSTER NODES. */
#define FO_CL_MAX_NODES 1024
struct fo_cl_node {
	char id[48];
	char host[256];
	int port;
	char master_id[48]; /* "-" for a master */
	bool myself, master, fail, pfail, has_slots;
};
/* CLUSTER NODES text into out[]: how many lines, -EINVAL malformed, -E2BIG past max. */
int fo_cluster_nodes_parse(const char *text, size_t len, struct fo_cl_node *out, int max);
/* Whether the primary's view v (its CLUSTER NODES) shows s as listed: the primary a
 * master with slots, each other listed node its replica, each of its replicas listed.
 * 0, or -EINVAL with why. */
int fo_cluster_verify(const struct fo_cluster *c, const struct fo_shard *s,
		      const struct fo_cl_node *v, int nv, char *why, size_t whylen);
/* The answer (text) to CLUSTER NODES asked of node n: judged when n is the settled primary of
 * its cluster shard; cluster_mismatch / cluster_consistent each time the verdict changes. */
void fo_cluster_check(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, const char *text,
		      size_t len);
/* The CLUSTER FAILOVER option of the failover f: FORCE, "" (planned) or TAKEOVER. */
const char *fo_cluster_option(const struct fo_failover *f);
/* In SELECT, a candidate whose fresh INFO says master already (the cluster elected it
 * itself): its node index, else -1. */
int fo_cluster_elected(const struct fo_cluster *c, const struct fo_shard *s);

/* Sentinel's instance format: "<type> <name> <ip> <port> @ <master> <mip> <mport>". */
void fo_instance_str(const struct fo_cluster *c, const struct fo_node *n, char *buf, size_t len);

#endif
