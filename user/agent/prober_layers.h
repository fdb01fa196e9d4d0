/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The prober's own files in layers: struct prober and struct probe_peer, which they
 * share, and what prober.c calls in prober_route.c. Not an interface (that is
 * prober.h): only prober.c and prober_route.c include it.
 *
 *   prober.c        peers, rounds (send, read the kernel's table, judge), replies, the
 *                   raw sockets; open, start, close
 *   prober_route.c  probe_find_route, probe_reroute, probe_follow_routes: each peer's
 *                   route, followed as routes and links change; calls nothing above it
 *
 * (prober_events.c, the prober's words and event records, needs neither.) */
#ifndef FL_PROBER_LAYERS_H
#define FL_PROBER_LAYERS_H

#include <stdbool.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <linux/icmp.h>
#include "agent/prober.h"

/* Random bytes per probe (getrandom): a reply counts only when it echoes them, so a host
 * that did not receive the request cannot forge its answer (bpf/icmp.bpf.c checks the
 * same bytes for the kernel's figures). */
#define PROBE_PAYLOAD	FL_ECHO_PAYLOAD
#define PROBE_SENT_RING 64 /* send times of the last probes, by seq: late replies count */

struct probe_peer {
	char id[65];
	char addr_str[INET6_ADDRSTRLEN];
	struct fl_peer_key key; /* its address, as the kernel's table is keyed */
	int ifindex;		/* route's interface; 0 = no route (yet) */
	uint64_t next_route_ns; /* when to look for a route again */
	uint16_t seq;		/* of the last probe sent */
	uint64_t probes;	/* probes sent (tried) */
	uint64_t last_send_ns;	/* CLOCK_MONOTONIC before the last sendmmsg */
	struct {
		uint16_t seq;
		uint64_t ns; /* 0: answered, or not a probe a reply can match */
		uint8_t payload[PROBE_PAYLOAD];
	} sent[PROBE_SENT_RING]; /* by seq % RING */
	int last_errno;		 /* of the last failed send, 0 after a good one */
	bool round_read;	 /* its stats were in this round's table read */
	struct verdict_peer pv;
	struct probe_peer_info info;
};

struct prober {
	struct probe_opts o;
	struct verdict_config cfg;
	struct icmp_watch *iw;
	int fd;		  /* raw ICMP socket */
	int fd6;	  /* raw ICMPv6 socket, opened with the first IPv6 peer; -1 before */
	uint16_t echo_id; /* the ICMP id of all our probes */
	bool rand_warned; /* getrandom failed once (said once) */
	struct event *ev_round, *ev_read, *ev_read6, *ev_nl;
	int nl_fd; /* route and link notifications; -1 if none */
	struct probe_peer **peers;
	int npeers, cap;
	/* Per round: scratch for sendmmsg and the carrier of each interface. */
	struct mmsghdr *msgs;
	struct iovec *iov;
	struct sockaddr_in6 *dst; /* room for either family */
	uint8_t (*pkt)[sizeof(struct icmphdr) + PROBE_PAYLOAD];
	struct {
		int ifindex, carrier;
	} carrier[ICMP_WATCH_MAX_IFACES];
	int ncarrier;
	/* The kernel's table, read at once each round, and the peers sorted by
	 * address to find their rows. */
	struct fl_peer_key *keys;
	struct fl_peer_stats *vals;
	struct probe_peer **byaddr;
	struct probe_peer **sendq; /* the peer of each sendmmsg slot */
};

/* --- prober_route.c: routes and links --------------------------------- */
/* Looks up pp's route and attaches there (no route: looked up again in a second). */
void probe_find_route(struct prober *p, struct probe_peer *pp, uint64_t now);
/* The route to pp now: attached where it goes; a change reported (on_route) and an
 * interface left that no peer is routed through any more. */
void probe_reroute(struct prober *p, struct probe_peer *pp, uint64_t now);
/* Follows route and link notifications on p's event base (without them: only
 * logged, a peer without a route is looked up each second). 0 or -ENOMEM. */
int probe_follow_routes(struct prober *p);

#endif
