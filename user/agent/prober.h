/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The peer prober: one ICMP (IPv4) or ICMPv6 (IPv6) echo per peer every
 * probe_interval_ms from a raw socket,
 * on a libevent timer of the caller's event_base; the kernel (bpf/icmp.bpf.c through
 * user/kern/icmp_watch.c) times requests and replies; each round feeds the verdict
 * (user/agent/peer_verdict.c) and calls back on every change of a peer's state.
 *
 * Use from the agent:
 *	probe_open(&p, &opts)                once, after the node lock is taken
 *	probe_add_peer(p, "n2", "10.0.0.2")  per peer (route lookup, tc attach)
 *	probe_start(p)                       first round now, then every interval
 *	... on_change(ctx, info): probe_evrec(&r, node, info) and log r ...
 *	probe_close(p)                       on exit (detaches, removes the pins) */
#ifndef FL_PROBER_H
#define FL_PROBER_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <event2/event.h>
#include "common/event_log.h"
#include "icmp_event.h"
#include "kern/icmp_watch.h"
#include "agent/peer_verdict.h"

#define PROBE_DEFAULT_INTERVAL_MS   25
#define PROBE_DOWN_AFTER_ROUNDS	    10 /* the default silence, in probe intervals */
#define PROBE_DEFAULT_DOWN_AFTER_MS (PROBE_DOWN_AFTER_ROUNDS * PROBE_DEFAULT_INTERVAL_MS)
#define PROBE_MAX_PEERS		    FL_MAX_PEERS

/* One peer as of the last round: what callbacks get and reports read. */
struct probe_peer_info {
	const char *id;		    /* node id */
	const char *addr;	    /* IPv4 dotted quad or IPv6 address */
	int ifindex;		    /* the interface the route goes out of, 0 if none */
	struct verdict_evidence ev; /* state and why (peer_verdict.h) */
	struct fl_peer_stats st;    /* the kernel's counters and times */
	uint64_t send_errors;	    /* sendto() failures (no route, link down…) */
	/* Round trips: echo replies that reached the agent's socket, so past the host's
	 * firewall (tc ingress sees packets that netfilter drops later: those say the
	 * peer is alive, never that we can reach it). The lease and self-fencing count
	 * only these. 0 = none yet. */
	uint64_t rt_sent_ns;  /* CLOCK_MONOTONIC send time of the newest answered probe */
	uint64_t rt_recv_ns;  /* when its reply reached the agent */
	uint64_t round_trips; /* replies that reached the agent */
	/* Echo replies with our id and a recent probe's seq but not its random data (forged
	 * without the request, or corrupted): dropped, never a round trip. */
	uint64_t forged;
};

typedef void (*probe_change_fn)(void *ctx, const struct probe_peer_info *peer);
/* Optional: the route to a peer changed interface (prev_ifindex: the one before,
 * 0 if none; peer->ifindex: the new one, 0 if the route is gone). */
typedef void (*probe_route_fn)(void *ctx, const struct probe_peer_info *peer, int prev_ifindex);
/* Optional, for measurements: each echo reply as userspace received it, with
 * sendto -> recvfrom time and the kernel's egress -> ingress RTT of the same probe
 * (0 if the kernel's last reply is another one). */
typedef void (*probe_reply_fn)(void *ctx, const struct probe_peer_info *peer, uint16_t seq,
			       uint64_t user_rtt_ns, uint64_t kernel_rtt_ns);
/* Each round trip, as it reaches the agent: sent_ns is its probe's send time. */
typedef void (*probe_rt_fn)(void *ctx, const struct probe_peer_info *peer, uint64_t sent_ns);

struct probe_opts {
	struct event_base *base;
	const char *node;		 /* pins under FL_PIN_ROOT/<node>/ */
	uint32_t interval_ms;		 /* 0 = PROBE_DEFAULT_INTERVAL_MS */
	uint32_t down_after_ms;		 /* 0 = PROBE_DOWN_AFTER_ROUNDS intervals; >= 3 intervals */
	enum icmp_watch_tc_mode tc_mode; /* ICMP_WATCH_TC_AUTO unless testing */
	const char *src_addr;		 /* the node's address: the echoes' source (NULL:
					  * the routing table's pick) */
	probe_change_fn on_change;	 /* required */
	probe_route_fn on_route;	 /* NULL: route changes are only logged */
	probe_reply_fn on_reply;	 /* optional (measurements) */
	probe_rt_fn on_round_trip;	 /* optional (the write lease) */
	void *ctx;
};

struct prober;

/* Opens the raw ICMP socket (the ICMPv6 one comes with the first IPv6 peer), loads
 * and pins the icmp programs' maps. -errno with a message (-EINVAL for a bad
 * interval / threshold). */
int probe_open(struct prober **out, const struct probe_opts *opts);
/* addr: IPv4 dotted quad or IPv6 address. Finds the route's interface and attaches there (a peer
 * with no route yet is retried every second). -EINVAL bad address, -EEXIST dup. */
int probe_add_peer(struct prober *p, const char *id, const char *addr);
/* Probes once now, then every interval; follows route and link notifications
 * (rtnetlink) from then on: when the route to a peer moves to another interface,
 * or an interface comes back, the programs are attached there at once (and
 * detached from an interface no peer is routed through any more). */
int probe_start(struct prober *p);
int probe_npeers(const struct prober *p);
const struct probe_peer_info *probe_peer(const struct prober *p, int i);
uint16_t probe_echo_id(const struct prober *p);
const char *probe_pin_dir(const struct prober *p);
enum icmp_watch_tc_mode probe_tc_mode(const struct prober *p);
/* Stops the timer, detaches, removes the pins. NULL is fine. */
void probe_close(struct prober *p);

/* REPORT's peer.<node-id> value (docs/protocol.md): "up" (replies, or passive
 * liveness), "down" or "unknown" (also for a local fault). */
const char *probe_report_state(enum verdict_state s);
/* The Internet checksum (RFC 1071) of n bytes, in network byte order: what the
 * prober puts in its echo requests (and tests in the frames they build). */
uint16_t probe_csum16(const void *p, size_t n);
/* "peer_up", "peer_passive", "peer_down" or "peer_local_fault" for the state. */
const char *probe_event_kind(enum verdict_state s);
/* Begins r as a "peer_route" event: peer, addr, ifname, prev_ifname (null: none). */
void probe_route_evrec(struct evrec *r, const char *node, const struct probe_peer_info *peer,
		       int prev_ifindex);
/* Begins r as that event for node, with the evidence: peer, addr, state, prev,
 * liveness, reply_age_ms, packet_age_ms (null if never), window_ms,
 * probes_in_window, left_in_window, replied_in_window, local_fault, loss_ratio,
 * gap_ratio, silence_needed_ms, rtt_us, srtt_us (null before a reply), stalled. The caller may add
 * fields, then evlog_write()s it. */
void probe_evrec(struct evrec *r, const char *node, const struct probe_peer_info *peer);

#endif
