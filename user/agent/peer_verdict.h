/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The verdict on one peer: pure logic, fed once per probe
 * round with what the kernel measured, on an injected clock.
 *
 * A peer is DOWN when, for down_after, no reply and no other packet arrived from it
 * while this agent kept probing on schedule: at least VERDICT_MIN_PROBES probes sent in
 * that window and no stall of the agent's own loop in it (a round later than
 * stall_after after the previous one). An agent that was stopped or starved judges
 * nothing until it has probed on schedule for a whole window again. The peer is UP
 * again at the first reply. A peer that answers no echo but whose other traffic
 * (replication) keeps arriving is PASSIVE: alive, and the evidence says why. A
 * peer silent while this host has no route to it or no carrier on the route's
 * interface is LOCAL_FAULT, not DOWN: we cannot tell. Probes held back for another
 * reason (an unresolved neighbour: what a dead peer on the same link looks like
 * once its ARP/ND entry fails) leave the peer DOWN, with local_fault in the evidence.
 *
 * The silence that makes a peer DOWN accounts for loss: the agent keeps the share of
 * its rounds in which nothing at all came from the peer (gap_ratio, a moving average
 * over about VERDICT_GAP_ALPHA_INV rounds, fed only by runs of silence that ended in a
 * packet, so a dead peer does not widen its own threshold), and a run of k silent
 * rounds is taken for a death only when gap_ratio^k, the chance that loss alone made
 * it, is below VERDICT_FALSE_TARGET. The silence needed (need_ns) is that k rounds, at
 * least down_after and at most down_after_max: down_after on a clean link. */
#ifndef FL_PEER_VERDICT_H
#define FL_PEER_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

#define VERDICT_MIN_PROBES    3
#define VERDICT_NEVER	      UINT64_MAX /* an age when the thing never happened */
#define VERDICT_FALSE_TARGET  1e-6	 /* gap_ratio^k below this: k silent rounds = down */
#define VERDICT_GAP_ALPHA_INV 64	 /* gap_ratio's moving average: 1/64 per round */
#define VERDICT_WIDEN_MAX     4		 /* down_after_max defaults to 4 x down_after */

enum verdict_state {
	VERDICT_UNKNOWN = 0, /* not judged yet: just started, or not enough on-schedule probing */
	VERDICT_UP = 1,	     /* echo replies arrive */
	VERDICT_PASSIVE = 2, /* no echo reply for down_after, but other packets from it do arrive */
	VERDICT_DOWN = 3,    /* silent for down_after while we probed on schedule */
	VERDICT_LOCAL_FAULT = 4, /* silent for down_after while this host has no route to it
				  * or no carrier on the route's interface: not evidence
				  * against the peer */
};

struct verdict_config {
	uint64_t interval_ns;	    /* probe_interval_ms */
	uint64_t down_after_ns;	    /* peer_down_after_ms; at least VERDICT_MIN_PROBES intervals */
	uint64_t stall_after_ns;    /* a round this late after the previous one = our loop stalled;
				     * 0 = verdict_default_stall() */
	uint64_t down_after_max_ns; /* the most loss may widen the silence needed to;
				     * 0 = VERDICT_WIDEN_MAX x down_after */
};

/* What is known at one probe round. Times on one clock (CLOCK_MONOTONIC, which is
 * what bpf_ktime_get_ns() reads); 0 = never. Counters are totals since the peer was
 * added. */
struct verdict_obs {
	uint64_t now_ns;
	uint64_t last_reply_ns; /* kernel: last matched echo reply */
	uint64_t last_rx_ns;	/* kernel: last packet of any kind from the peer */
	uint64_t probes;	/* probes this agent sent (tried to send), this round's included */
	uint64_t left;		/* kernel: requests seen at tc egress (left the host) */
	uint64_t replied;	/* kernel: replies matched */
	uint64_t rtt_ns;	/* kernel: last RTT */
	uint64_t srtt_ns;	/* kernel: smoothed RTT */
	bool no_carrier;	/* the peer's route goes out of an interface without carrier */
	bool no_route;		/* there is no route to the peer at all */
};

/* Why the state is what it is, as of the last round. */
struct verdict_evidence {
	enum verdict_state state;
	enum verdict_state prev;    /* state before the last change */
	uint64_t since_ns;	    /* when the state was entered */
	uint64_t reply_age_ns;	    /* VERDICT_NEVER if no reply ever */
	uint64_t packet_age_ns;	    /* VERDICT_NEVER if no packet ever */
	uint64_t window_ns;	    /* span the counts below cover (down_after, or less early on) */
	uint64_t probes_in_window;  /* probes this agent sent in the window */
	uint64_t left_in_window;    /* of those, how many the kernel saw leave */
	uint64_t replied_in_window; /* replies matched in the window */
	double loss_ratio;	    /* 1 - replied / left over the window; 0 when none left */
	double gap_ratio;	    /* share of recent rounds with nothing from the peer */
	uint64_t need_ns;	    /* silence that makes it DOWN now (down_after, widened) */
	uint64_t rtt_ns, srtt_ns;
	bool judged;	  /* the window was probed on schedule: a verdict could be reached */
	bool stalled;	  /* this round came late: our own loop was stopped or starved */
	bool local_fault; /* silent, but the probes did not leave this host (no carrier,
			   * unresolved neighbour, no route): the fault may be ours */
};

struct verdict_sample {
	uint64_t t_ns, probes, left, replied;
};

struct verdict_peer {
	enum verdict_state state;
	uint64_t since_ns;	    /* state entered */
	uint64_t last_round_ns;	    /* previous round, 0 before the first */
	uint64_t resumed_ns;	    /* first round after the last stall (or the first round) */
	struct verdict_evidence ev; /* as of the last round */
	bool local_cause;	    /* this round: no route or no carrier (LOCAL_FAULT, not DOWN) */
	uint64_t prev_rx_ns;	    /* last_rx_ns at the previous round */
	unsigned int gap_run;	    /* rounds in a row with nothing from the peer, so far */
	double gap_ratio;	    /* see above; 0 until measured */
	struct verdict_sample *hist; /* ring of past rounds, oldest overwritten */
	unsigned int cap, head, n;
};

uint64_t verdict_default_stall(uint64_t interval_ns);
/* The silence that makes a peer down when a share gap_ratio of rounds is silent:
 * the fewest rounds k with gap_ratio^k < VERDICT_FALSE_TARGET, bounded by
 * [down_after, down_after_max] (also what the docs' table is computed from). */
uint64_t verdict_need_ns(const struct verdict_config *c, double gap_ratio);
/* -EINVAL if down_after is shorter than VERDICT_MIN_PROBES intervals. */
int verdict_check_config(const struct verdict_config *c);
int verdict_init(struct verdict_peer *p, const struct verdict_config *c);
void verdict_free(struct verdict_peer *p);
/* One probe round, after this round's probe was sent. Updates p->ev; returns true
 * when the state changed (p->ev.prev is the old state). */
bool verdict_round(struct verdict_peer *p, const struct verdict_config *c,
		   const struct verdict_obs *o);
const char *verdict_state_name(enum verdict_state s);
/* "reply", "passive" or "none": what keeps the peer up. */
const char *verdict_liveness(enum verdict_state s);

#endif
