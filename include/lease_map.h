/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The write lease in the kernel (bpf/lease.bpf.c): the keys and values of its maps.
 * Shared by BPF (after vmlinux.h) and userspace (after <linux/types.h>).
 *
 * The server's sockets carry a mark (fl_lease_srv, socket storage that accepted sockets
 * inherit from their listener); the agent writes the lease; the program, at cgroup
 * egress of the whole cgroup v2 hierarchy, drops every packet with data of a marked
 * socket once the deadline has passed, unless the socket's cookie is allowed (the
 * agent's own connection, the replicas', the controller's). A reply that never leaves
 * its socket acknowledges nothing. */
#ifndef FL_LEASE_MAP_H
#define FL_LEASE_MAP_H

#define FL_LEASE_MAX_ALLOW 1024 /* entries of fl_lease_ok */
#define FL_LEASE_MAX_PORTS 16	/* entries of fl_lease_ports */

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
	__u32 port;	    /* the server's TCP port ([node] redis), host order; 0 = not
			     * armed: every packet passes */
};

/* Value of fl_lease_cfg (an array of one, key 0), written by the agent: which sockets
 * the bind hooks mark as the server's. A TCP socket bound in the server's network
 * namespace by the server's process, or to one of the ports in fl_lease_ports (the
 * ports the server listened on: a server restarted while its agent is away is marked
 * again by its port); never one bound to a FL_LEASE_PORT_BUS port. */
struct fl_lease_cfg {
	__u64 netns_cookie; /* the server's network namespace (SO_NETNS_COOKIE); 0: mark none */
	__u32 tgid; /* the server's process (as the agent's pid namespace sees it); 0: none */
	/* The namespace's ephemeral ports (ip_local_port_range), host order: a socket the
	 * server's process binds to one is a connection it makes (a replica's link to its
	 * primary), not a listener; not marked (it acknowledges no client's write). */
	__u16 eph_lo, eph_hi;
};

enum fl_lease_source {
	FL_LEASE_SRC_NONE = 0,	     /* never held, or given up */
	FL_LEASE_SRC_CONTROLLER = 1, /* the controller's answer to a REPORT */
	FL_LEASE_SRC_PEER = 2,	     /* an echo reply of a peer, delivered to the agent */
};

/* fl_lease_ok: key a socket cookie (SO_COOKIE, never reused while the host runs) of a
 * server's socket that keeps flowing without the lease; value enum fl_lease_allow_kind.
 * fl_lease_srv: socket storage (BPF_F_CLONE), value FL_LEASE_MARK on the server's
 * sockets. fl_lease_ports: key a TCP port (host order, __u32), value enum
 * fl_lease_port_kind. */
#define FL_LEASE_MARK 1

enum fl_lease_port_kind {
	FL_LEASE_PORT_SERVER = 1, /* a port the server serves clients on: marked */
	FL_LEASE_PORT_BUS = 2,	  /* its cluster bus (cluster-port, port + 10000): never
				   * marked, the listener nor what it accepts */
};

/* A connection by its addresses, as the agent's CLIENT LIST and sock_diag see them
 * (userspace only): IPv4 as ::ffff:a.b.c.d, port in network order. */
struct fl_lease_conn {
	__u8 addr[16];
	__u16 port;
	__u16 pad;
};

enum fl_lease_allow_kind {
	FL_LEASE_ALLOW_AGENT = 1,      /* this node's agent (PING, INFO, CLIENT PAUSE) */
	FL_LEASE_ALLOW_REPLICA = 2,    /* a replica's link (flags S in CLIENT LIST) */
	FL_LEASE_ALLOW_CONTROLLER = 3, /* the controller (its name proves the connection) */
};

/* Index of fl_lease_cnt (per-CPU array of __u64). */
enum fl_lease_counter {
	FL_LC_DROPPED = 0, /* packets of the server dropped: lease run out */
	FL_LC_ALLOWED = 1, /* packets let through without the lease: allowed connection */
	FL_LC_HELD = 2,	   /* packets of the server that left under the lease */
	FL_LC_MAX = 3,
};

#ifndef __bpf__
_Static_assert(sizeof(struct fl_lease_state) == 40, "fl_lease layout");
_Static_assert(sizeof(struct fl_lease_conn) == 20, "fl_lease_conn layout");
_Static_assert(sizeof(struct fl_lease_cfg) == 16, "fl_lease_cfg layout");
#endif

#endif
