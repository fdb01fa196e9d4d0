/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The write lease, as the agent decides it (the kernel enforces it: bpf/lease.bpf.c,
 * user/kern/lease_watch.c). Pure logic on an injected clock; the agent writes the
 * state to the pinned map whenever a function here says it changed.
 *
 * Only round trips count, and the lease runs from when the question was SENT, so
 * that whoever answered knows an upper bound of the deadline:
 *  - the controller's answer to a REPORT naming this node primary, at an epoch at
 *    least the highest one seen: deadline = REPORT sent + lease_ms. This is the only
 *    way to get a lease back once it ran out or was given up.
 *  - an echo reply of a peer delivered to the agent's socket (after the host's
 *    firewall): deadline = echo sent + lease_ms, but only while the lease still runs
 *    (a peer can keep a lease alive, never bring one back: after a failover the
 *    peers answer the old primary's echoes as before).
 * The controller's answer naming ANOTHER node primary takes the lease away at once
 * (revoked), unless the server is a replica: a replica's replies acknowledge no
 * write, so a replica holds its lease on any answer (it keeps serving reads).
 *
 * Given up (revoked): the agent gives the lease up when its server hangs or exits
 * (lease_give_up), and the deadline is 0 in the kernel BEFORE any report says so.
 * From then on NOTHING renews or re-grants it — no peer's echo, no controller answer
 * — until the agent says it may take the lease again (lease_allow_retake: its server
 * answers again), and then only the controller's answer to a REPORT sent after that
 * instant (retake_from_ns), naming this node primary at an epoch >= the highest any
 * answer carried. Every REPORT sent between the two says lease=revoked, so an answer
 * that was in flight (to a REPORT sent before, or while, the lease was revoked) never
 * brings it back, whichever controller sent it. A controller that has read a revoked
 * REPORT and nothing after it from the node therefore knows that the lease is over,
 * and that only its own answer to a later REPORT could bring it back (it sends none
 * naming the node while it says revoked): it needs no wait (lease_wait.h).
 *
 *   NONE --controller names us--> HELD --deadline passes--> LAPSED
 *     ^                            |  ^ peers / controller    |
 *     |                            |  +-- controller names us-+  (REPORT sent
 *     |                 give up    v                         ^    >= retake_from)
 *     +-- (never held) ------- REVOKED --server answers again-+
 *                                    (lease_allow_retake, at a REPORT)
 */
#ifndef FL_AGENT_LEASE_H
#define FL_AGENT_LEASE_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "lease_map.h"

#define LEASE_DEFAULT_MS 500
/* retake_from_ns while revoked: no answer is recent enough. */
#define LEASE_RETAKE_NEVER UINT64_MAX

/* What a lease_on_* call did. */
enum lease_change {
	LEASE_SAME = 0,	    /* nothing to write */
	LEASE_EXTENDED = 1, /* held, and now longer */
	LEASE_GRANTED = 2,  /* was not held, is now: kill the connections first */
	LEASE_REVOKED = 3,  /* given up (or was held or pending, is not now): write it */
};

struct lease_sm {
	struct fl_lease_state k; /* as in the kernel map */
	uint64_t lease_ns;
	/* Only evidence sent at or after this counts (CLOCK_MONOTONIC ns): 0 until the
	 * first revocation, LEASE_RETAKE_NEVER while revoked, then the instant the
	 * agent allowed the lease to be taken again (lease_allow_retake). */
	uint64_t retake_from_ns;
};

void lease_init(struct lease_sm *sm, const struct fl_lease_state *pinned, uint64_t lease_ns);
bool lease_held(const struct lease_sm *sm, uint64_t now_ns);
/* Given up, and not yet allowed back: REPORTs say lease=revoked. */
bool lease_revoked(const struct lease_sm *sm);
/* The controller answered a REPORT sent at sent_ns: epoch and primary of the shard
 * ("" when it does not know). is_replica: the server says role:slave. */
enum lease_change lease_on_controller(struct lease_sm *sm, uint64_t now_ns, uint64_t sent_ns,
				      long long epoch, const char *primary, const char *me,
				      bool is_replica);
/* A peer's echo reply to a request sent at sent_ns reached the agent. */
enum lease_change lease_on_peer(struct lease_sm *sm, uint64_t now_ns, uint64_t sent_ns);
/* The agent gives the lease up (server hung, exited): deadline 0, revoked. LEASE_SAME
 * only when it was revoked already with deadline 0 (nothing to write). */
enum lease_change lease_give_up(struct lease_sm *sm);
/* The server answers again: the lease may be taken back, from answers to REPORTs sent
 * after now_ns (the agent calls this as it builds a REPORT, which then no longer says
 * revoked, and stamps it after). True if it was revoked. */
bool lease_allow_retake(struct lease_sm *sm, uint64_t now_ns);
/* Not held, and not revoked: answers to REPORTs sent from from_sent_ns on may grant it
 * (a lease that was off — shadow mode — armed with a fresh answer). */
void lease_start_over(struct lease_sm *sm, uint64_t from_sent_ns);
const char *lease_source_name(__u32 source);

/* Whether the server process pid (> 0) is scanned now (its sockets marked) and which
 * port the scan leaves unmarked (*scan_bus: a cluster node's bus, 0: none); scanned and
 * scanned_bus: the last scan's. bus_known: its bus port (bus, 0: none) is known; not
 * yet (asked, not answered), the process is scanned at once with every socket marked
 * (its clients guarded from the first scan), and again once the port is known. */
bool lease_scan_due(int pid, bool bus_known, uint16_t bus, int scanned, uint16_t scanned_bus,
		    uint16_t *scan_bus);

#endif
