/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The controller waits for the old primary's write lease (docs/agent.md, the write lease),
 * not longer: after host_down or a hung server it promotes only once the lease has
 * certainly run out, from the last evidence it and the peers have, with a margin for
 * clock-rate drift. A death the kernel saw (proc_exit, OOM kill) needs no wait.
 *
 * Evidence, each an upper bound of the deadline the old primary may hold:
 *  - every REPORT answer that named it primary could renew it until that REPORT's send
 *    time + lease_ms, so until (the answer's time + lease_ms): fo_answer_primary()
 *    records the time and, once a failover is decided or running, names nobody;
 *  - answers of another controller: in HA mode a deposed leader's (it answers as
 *    leader only before its etcd lease can expire, so before this one won the lead),
 *    and at a start those of this controller's previous process: until
 *    (others_answered_until_ms + lease_ms), for any lease_ms;
 *  - a peer's echo reply could renew it until (the echo's send time + lease_ms); the
 *    echo arrived at the peer no later than the last packet the peer had from the
 *    primary, which its REPORT gives as peer.<id>.packet_age_ms: so until (that
 *    report's arrival - packet_age_ms + lease_ms). Unless the primary's last report
 *    said its lease was lapsed: peers never bring a lapsed lease back.
 *  - a peer whose agent is silent may still be answering the primary's echoes: no
 *    bound, no promotion (failover_blocked says which peer); so is a peer removed at
 *    runtime that the primary's last report still names (its agent, started with it,
 *    still takes its echo replies); unless the primary's agent confirmed that it no
 *    longer counts that peer's echoes (lease_admit.h): then until the primary's last
 *    report + lease_ms;
 *  - an agent that reports a lease length but no lease (parked from shadow mode, not
 *    armed yet after the switch to active): nothing fences the old primary, no bound.
 * In shadow mode there is no wait at all: no agent runs a lease, nothing is promoted,
 * and the judgement is that of active mode with the lease off (docs/sentinel.md).
 * A fresh report saying lease=revoked ends the wait at once: the agent moved the
 * kernel deadline to 0 before sending it and takes the lease back only from an answer
 * to a later REPORT (agent/lease.h), which this controller has not read, and whose
 * answer would not name the node while its last report says revoked. Only a
 * controller before this one (HA leader, previous process) could have granted from a
 * later report, before this one could act: the wait is then until
 * others_answered_until_ms + the lease. A stale revoked report counts as lapsed.
 *
 * The lease length, per node (fo_node_lease_ms): the longest of the controller's
 * [agent] lease_ms, the length the node's agent reports (REPORT key lease_ms, the
 * one it runs with), and a longer one it reported before, for one span of it after
 * its first report of a shorter one. A node that has not said its length is
 * counted with the longest lease_ms the file has had since the controller started:
 * a reload that changes lease_ms waits the longer of the old and new lengths until
 * each agent has said which it runs with. */
#ifndef FL_LEASE_WAIT_H
#define FL_LEASE_WAIT_H

#include <limits.h>
#include "controller/failover.h"

#define FO_LEASE_NEVER LLONG_MAX
/* Clock-rate margin: lease_ms / 16 (6 %), far above what a clock disciplined by NTP
 * (0.05 %) or even a free-running crystal (0.01-0.1 %) drifts over a lease. */
#define FO_LEASE_DRIFT_DIV 16

/* The lease as the controller must count it: lease_ms plus the drift margin. */
long long fo_lease_span_ms(const struct fo_cluster *c);
/* The lease length (ms) to count for node n now; 0: n holds no write lease. */
int fo_node_lease_ms(const struct fo_cluster *c, const struct fo_node *n, long long now);
/* A REPORT from n arrived (before n->rep is replaced by rep): notes a shortened
 * length. */
void fo_lease_note_report(struct fo_cluster *c, struct fo_node *n, const struct fo_report *rep,
			  long long now);
/* When (monotonic ms) p's lease has certainly run out for a failover judged v; 0 when
 * no wait is needed (always in shadow mode); FO_LEASE_NEVER when a silent peer leaves it unbounded
 * (then *blocker is that peer). */
long long fo_lease_end_ms(const struct fo_cluster *c, const struct fo_shard *s,
			  const struct fo_node *p, enum fo_verdict v,
			  const struct fo_node **blocker);
/* Why p's failover waits, as fo_lease_end_ms left it (blocker, or none: a bound not
 * reached yet): the failover_blocked reason, and an operator's refusal (fo_start). */
void fo_lease_wait_why(const struct fo_node *p, const struct fo_node *blocker, char *why,
		       size_t len);
/* The primary to name in the answer to a REPORT from node n of s: "" while a failover
 * of s is decided or running (no lease is renewed then), and to the primary itself
 * while its report says its lease is revoked; else the primary's id; when n is the
 * primary itself (only its own agent renews from the answer), the time is recorded. */
const char *fo_answer_primary(struct fo_cluster *c, struct fo_shard *s, const struct fo_node *n,
			      long long now);
/* The node's write lease as its agent last reported it: "held", "lapsed", "revoked" or
 * "-". */
const char *fo_lease_word(const struct fo_node *n);

#endif
