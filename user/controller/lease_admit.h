/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Lease admission: which peers' echo replies an agent may count for its write lease
 * (docs/agent.md, "Lease admission").
 *
 * Every answer to a REPORT carries a grant: this controller's term, a grant number and
 * the admitted peers of the agent (the other nodes of its shard, less every node this
 * controller has declared down or lost: host_down, agent_lost, or removed at runtime).
 * The agent counts a peer's echoes only while the newest grant it applied admits it
 * (agent/admit.h: newest by term, then grant number; an older one is ignored) and
 * says in each REPORT which grant it runs with (keys admit_term, admit_grant).
 *
 * A node's withdrawal (admit_out) is the grant number of the first answer that left
 * it out; a re-admission clears it. Each change takes a new grant number, so every
 * grant numbered from admit_out on leaves the node out while admit_out stays set.
 * Once p's agent reports this controller's term and a grant >= q's admit_out, p
 * counted no echo of q since before it sent that report: q's renewals of p's lease end
 * by that report's arrival + the lease's span, and q no longer blocks p's failover
 * however silent q is (lease_wait.c). Until then q counts as before: p may be cut off
 * and never have heard the withdrawal.
 *
 * Terms: a controller's process takes the wall-clock ms at its start; in HA mode the
 * leader takes FO_ADMIT_HA_TERM + the create revision of its leader key, higher than
 * any single controller's and than any leader's before it (a follower answers with no
 * grant: 0). An agent never goes back to an older term, so a confirmation to this
 * controller cannot be undone by an answer of a controller before it (a deposed
 * leader, a previous process). */
#ifndef FL_LEASE_ADMIT_H
#define FL_LEASE_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include "controller/failover.h"

/* Above any wall-clock ms until the year 2109. */
#define FO_ADMIT_HA_TERM (1LL << 42)
/* The admitted list of one answer: a shard's nodes' ids, space-separated. */
#define FO_ADMIT_LIST_MAX (FO_MAX_SHARD_NODES * 66)

/* A new term (0: answer without grants, a follower): grants go on numbering. */
void fo_admit_set_term(struct fo_cluster *c, long long term);
/* Declared down or lost, or removed: left out of every other agent's grant. */
bool fo_admit_out_now(const struct fo_node *q);
/* The grant for the answer to node p: brings the withdrawals of p's shard's nodes (and
 * of removed peers p's last report names) up to date, and writes p's admitted peers.
 * 0, or -ENOSPC (buf too small: nothing admitted written). */
int fo_admit_answer(struct fo_cluster *c, const struct fo_node *p, char *buf, size_t len);
/* p's agent confirmed to this controller that it no longer counts q's echoes. */
bool fo_admit_confirmed(const struct fo_cluster *c, const struct fo_node *p,
			const struct fo_node *q);

#endif
