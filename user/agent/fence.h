/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Self-fencing: an isolated primary must not take writes that a failover
 * elsewhere will discard. Pure logic, time injected; the agent does the I/O
 * (CLIENT PAUSE ... WRITE, renewed; CLIENT UNPAUSE). */
#ifndef FL_FENCE_H
#define FL_FENCE_H

#include <stdbool.h>
#include <stdint.h>

struct fence_in {
	int64_t now_ms;
	int after_ms;		 /* self_fence_after_ms */
	bool is_primary;	 /* the local server's role is master */
	bool is_replica;	 /* ... is slave */
	bool have_peers;	 /* without peers there is no failover to fear */
	bool any_peer_reachable; /* some peer not judged down (unknown counts as reachable) */
	int64_t ctl_answer_ms;	 /* last answer from the controller (or agent start) */
	long long ctl_epoch;	 /* the shard's epoch in that answer */
	const char *ctl_primary; /* the shard's primary in that answer ("" unknown) */
	const char *me;		 /* this node's id */
};

enum fence_act {
	FENCE_NONE,	      /* nothing to do */
	FENCE_NOW,	      /* isolated primary: pause writes */
	FENCE_HOLD,	      /* stay fenced: renew the pause */
	FENCE_LIFT_CONFIRMED, /* the controller says we are still the primary at its epoch */
	FENCE_LIFT_DEMOTED,   /* the server became a replica: the demotion took over */
};

struct fence_sm {
	bool started; /* evaluated at least once */
	bool fenced;
	int64_t fenced_at_ms;
	int64_t last_peer_ok_ms; /* last time some peer was reachable */
	long long epoch_at_fence;
};

enum fence_act fence_eval(struct fence_sm *sm, const struct fence_in *in);

#endif
