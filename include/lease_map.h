/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The write lease in the kernel (bpf/lease.bpf.c): the keys and values of its maps.
 * Shared by BPF (after vmlinux.h) and userspace (after <linux/types.h>).
 *
 * The agent writes the lease; the program reads it for every TCP segment the local
 * server sends (source port = the server's port) on every interface, loopback
 * included, and drops the segment once the deadline has passed unless its
 * destination is an allowed connection (the agent's own, the replicas', the
 * controller's). A reply that never leaves the host acknowledges nothing. */
#ifndef FL_LEASE_MAP_H
#define FL_LEASE_MAP_H

#define FL_LEASE_MAX_ALLOW 1024 /* entries of fl_lease_allow */

/* Value of fl_lease (an array of one, key 0). Times are bpf_ktime_get_ns()
 * (CLOCK_MONOTONIC). port 0: the program lets everything through (not armed).
 * deadline_ns 0: given up (the agent writes it before it tells anyone that the lease
 * is revoked, user/agent/lease.h) or never held. */
struct fl_lease_state {
	__u64 deadline_ns;  /* the server's replies reach clients while now < deadline_ns */
	__u64 renewed_ns;   /* when the evidence that set deadline_ns was sent (lease start) */
	__s64 epoch;	    /* the highest epoch of a controller answer naming a primary (this
			     * node or another): a grant at a lower one counts for nothing */
	__u64 dropped_mark; /* fl_lease_cnt[FL_LC_DROPPED] when the lease was last taken: a
			     * lease taken back after drops first closes the connections */
	__u32 source;	    /* enum fl_lease_source of the last renewal */
	__u32 port;	    /* the server's TCP port, host order; 0 = not armed */
};

enum fl_lease_source {
	FL_LEASE_SRC_NONE = 0,	     /* never held, or given up */
	FL_LEASE_SRC_CONTROLLER = 1, /* the controller's answer to a REPORT */
	FL_LEASE_SRC_PEER = 2,	     /* an echo reply of a peer, delivered to the agent */
};

/* Key of fl_lease_allow: a connection of the server that keeps flowing without the
 * lease, by its far end as the server sees it. IPv4 as ::ffff:a.b.c.d, so that
 * `bpftool map dump` prints the bytes. port in network order. Value: enum
 * fl_lease_allow_kind. */
struct fl_lease_conn {
	__u8 addr[16];
	__u16 port;
	__u16 pad;
};

enum fl_lease_allow_kind {
	FL_LEASE_ALLOW_AGENT = 1,      /* this node's agent (PING, INFO, CLIENT PAUSE) */
	FL_LEASE_ALLOW_REPLICA = 2,    /* a replica's link (flags S in CLIENT LIST) */
	FL_LEASE_ALLOW_CONTROLLER = 3, /* the controller (name flatline-controller) */
};

/* Index of fl_lease_cnt (per-CPU array of __u64). */
enum fl_lease_counter {
	FL_LC_DROPPED = 0, /* segments of the server dropped: lease run out */
	FL_LC_ALLOWED = 1, /* segments let through without the lease: allowed connection */
	FL_LC_HELD = 2,	   /* segments of the server that left under the lease */
	FL_LC_MAX = 3,
};

#ifndef __bpf__
_Static_assert(sizeof(struct fl_lease_state) == 40, "fl_lease layout");
_Static_assert(sizeof(struct fl_lease_conn) == 20, "fl_lease_conn layout");
#endif

#endif
