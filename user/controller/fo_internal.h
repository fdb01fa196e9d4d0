/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the failover modules share among themselves (not the controller's API,
 * which is failover.h):
 *   fo_model.c      the cluster's nodes and shards, set-up and look-ups
 *   fo_report.c     REPORT parsing (keys from common/report_keys.h)
 *   fo_eval.c       the evaluator, the core's entry: reports, agents, replies and
 *                   the TILT tick applied to the model (node flags, shard checks,
 *                   repairs); starts failovers and hands their replies down to
 *   fo_machine.c    the failover state machine: every transition, every change of
 *                   a shard's primary or epoch; asks the rules, never the evaluator
 *   fo_rules.c      the pure failure rules, TILT, the block window, discovery's
 *                   choice: the model in, a verdict out, nothing changed
 *   fo_rank.c       replica ranking
 * Calls run one way: fo_eval -> fo_machine -> fo_rules (each may also use the
 * model, ranking and wording below them).
 *   fo_words.c      the wording: events, Sentinel messages, timeline steps
 *   fo_state_file.c the durable state file */
#ifndef FL_FO_INTERNAL_H
#define FL_FO_INTERNAL_H

#include "controller/failover.h"

#define FO_PING_EVERY_MS   1000 /* the controller's own PING of a node whose agent is lost */
#define FO_FIX_COOLDOWN_MS 1000 /* a repaired node is not repaired again sooner */

static inline long long fo_now(const struct fo_cluster *c)
{
	return c->now_ms(c->ctx);
}

static inline struct fo_shard *fo_shard_of(struct fo_cluster *c, const struct fo_node *n)
{
	return n->shard >= 0 ? &c->shards[n->shard] : NULL;
}

/* fo_rules.c */
/* n reported within node_down_after_ms. */
bool fo_fresh(const struct fo_cluster *c, const struct fo_node *n, long long now);
/* The primary of s returned after dying, with another, shorter history than a
 * replica: that replica's node index (following the primary would wipe it), else -1. */
int fo_restarted_empty(const struct fo_cluster *c, const struct fo_shard *s);
/* Discovery's choice of s's primary from the nodes' INFO: a node index, or -1
 * (why says how it was chosen, *nmasters how many masters answered). */
int fo_discover_pick(const struct fo_cluster *c, const struct fo_shard *s, char *why, size_t whylen,
		     int *nmasters);
/* Fields of a report whose change may turn "no good replica" into a good one. */
bool fo_report_changed(const struct fo_report *a, const struct fo_report *b);
/* The peer verdicts of a and b differ. */
bool fo_report_peers_changed(const struct fo_report *a, const struct fo_report *b);

/* fo_machine.c: the replies that belong to a failover in progress, handed down by
 * the evaluator (fo_on_info, fo_on_replicaof in fo_eval.c) once it has stored what
 * they say about the node. */
/* INFO of n (stored already): counts it in SELECT, reads the offset in WAIT_OFFSET. */
void fo_machine_info(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok);
/* REPLICAOF's answer: true if the failover in REPOINT sent it (taken), false if it
 * is a repair's (the evaluator's). */
bool fo_machine_replicaof(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok,
			  const char *err);

/* fo_words.c: events (kind passed to ops->event with the record) */
struct fo_event {
	struct evrec r;
	const char *kind;
};
void fo_ev_begin(struct fo_event *e, const char *kind, const struct fo_shard *s);
void fo_emit(struct fo_cluster *c, struct fo_event *e);
void fo_publish(struct fo_cluster *c, const char *channel, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fo_step(struct fo_cluster *c, struct fo_shard *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sentinel's "master <name> <ip> <port>" for node (-1: "?"). */
void fo_master_str(const struct fo_cluster *c, const struct fo_shard *s, int node, char *buf,
		   size_t len);
/* The reason word of a down verdict: "proc_exit SIGKILL", "oom_kill", "host_down" … */
const char *fo_down_reason(const struct fo_node *n, enum fo_verdict v, char *buf, size_t len);
/* Appends id to the space-separated list buf (off: its length so far). */
void fo_list_add(char *buf, size_t len, size_t *off, const char *id);

/* Node conditions (fo_eval.c decides, these say it). */
void fo_say_agent_lost(struct fo_cluster *c, struct fo_node *n, long long now);
void fo_say_agent_back(struct fo_cluster *c, struct fo_node *n, long long now);
void fo_say_node_down(struct fo_cluster *c, struct fo_node *n, enum fo_verdict v, long long now);
void fo_say_node_up(struct fo_cluster *c, struct fo_node *n, long long now);
/* Its agent reports it busy (working on a CPU, or -BUSY): alive; node_busy, once. */
void fo_say_node_busy(struct fo_cluster *c, struct fo_node *n);
void fo_say_reach(struct fo_cluster *c, struct fo_node *n, bool ok, long long now);
void fo_say_tilt_start(struct fo_cluster *c, long long stall_ms, long long jump_ms, bool entering);
void fo_say_tilt_end(struct fo_cluster *c, long long tilt_ms);
/* Shard conditions. */
void fo_say_odown(struct fo_cluster *c, struct fo_shard *s, bool odown);
void fo_say_failover_blocked(struct fo_cluster *c, struct fo_shard *s, const char *why);
/* lease_wait: waiting for the old primary's write lease (wait_ms), or blocked by a
 * silent peer that may still renew it (blocker). */
void fo_say_lease_wait(struct fo_cluster *c, struct fo_shard *s, const struct fo_node *blocker,
		       long long wait_ms);
void fo_say_restarted_empty(struct fo_cluster *c, struct fo_shard *s, const struct fo_node *b);
void fo_say_self_demoted(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n,
			 const struct fo_node *p);
void fo_say_repair(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n,
		   const struct fo_node *p, bool ok, const char *err);
void fo_say_primary_unknown(struct fo_cluster *c, struct fo_shard *s, int nmasters);
void fo_say_primary_adopted(struct fo_cluster *c, struct fo_shard *s, int from);
void fo_say_primary_discovered(struct fo_cluster *c, struct fo_shard *s, int spi, const char *why);
/* A failover's steps (fo_machine.c decides, these say it). */
void fo_say_failover_start(struct fo_cluster *c, struct fo_shard *s);
void fo_say_failover_abort(struct fo_cluster *c, struct fo_shard *s, const char *reason);
void fo_say_replica_selected(struct fo_cluster *c, struct fo_shard *s, long long since,
			     const char *list);
void fo_say_promote_failed(struct fo_cluster *c, struct fo_node *n, const char *err);
void fo_say_promoted(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, int from);
void fo_say_switch_master(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, int from);
void fo_say_repoint_reply(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok,
			  const char *err);
void fo_say_failover_end(struct fo_cluster *c, struct fo_shard *s, const char *ok, const char *bad);

/* fo_shadow.c (shadow mode) */
/* The failover of s got to its promotion: says would_failover and would_promote
 * (the first candidate, the ranking) and marks the shard FO_S_SHADOWED; the
 * machine then ends the failover without promoting. */
void fo_shadow_would(struct fo_cluster *c, struct fo_shard *s);
/* In state NONE: the servers' roles name another primary than s's (a failover
 * someone else made): takes it, as discovery does (primary_followed, +switch-master).
 * Clears FO_S_SHADOWED once the primary is up. True if the primary changed. */
bool fo_shadow_follow(struct fo_cluster *c, struct fo_shard *s, long long now);

#endif
