/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Peer probing in the kernel (bpf/icmp.bpf.c): the keys and values of its maps.
 * Shared by BPF (after vmlinux.h) and userspace (after <linux/types.h>).
 *
 * IPv4 only for now. IPv6 would add fl_peers6 and fl_echo_reqs6 keyed by a 16-byte
 * address, with the same value types (struct fl_peer_stats, __u64), and ICMPv6 echo
 * parsing next to the IPv4 path; nothing below depends on the address size. */
#ifndef FL_ICMP_EVENT_H
#define FL_ICMP_EVENT_H

#define FL_MAX_PEERS 1024  /* entries of fl_peers */
#define FL_MAX_ECHO 16384  /* requests in flight remembered (LRU): peers x window */

/* Key of fl_peers: the peer's IPv4 address, bytes in network order, so that
 * `bpftool map dump` prints it as "addr": [198,18,0,2]. */
struct fl_peer_key {
	__u8 addr[4];
};

/* Key of fl_echo_reqs: one echo request that left toward a peer. id and seq as on
 * the wire (network order). Value: bpf_ktime_get_ns() at tc egress. */
struct fl_echo_key {
	__u8 addr[4];
	__u16 id;
	__u16 seq;
};

/* Value of fl_peers, per peer. The agent inserts a zeroed entry for each peer it
 * probes; the programs only update entries that exist (unknown hosts are ignored).
 * Times are bpf_ktime_get_ns() (CLOCK_MONOTONIC); 0 means never. Counters are
 * updated atomically; the RTT fields by whichever CPU saw the reply (one probe per
 * interval per peer, so two replies racing for one peer are rare and harmless). */
struct fl_peer_stats {
	__u64 last_reply_ns; /* last echo reply matched to a request of ours */
	__u64 last_rx_ns;    /* last IPv4 packet of any kind from the peer (passive liveness) */
	__u64 last_tx_ns;    /* last echo request to the peer seen at tc egress */
	__u64 sent;          /* echo requests that reached tc egress: left this host */
	__u64 replied;       /* echo replies matched to a request */
	__u64 rx_packets;    /* IPv4 packets of any kind from the peer */
	__u64 unmatched;     /* replies with our id that matched no request (late, duplicate) */
	__u64 rtt_last_ns;   /* RTT of the last matched reply, egress to ingress */
	__u64 rtt_min_ns;
	__u64 rtt_max_ns;
	__u64 rtt_srtt_ns;   /* smoothed: srtt += (rtt - srtt) / 8, as TCP's (RFC 6298) */
	__u32 last_seq;      /* sequence number (host order) of the last matched reply */
	__u32 pad;
};

/* Index of fl_icmp_cnt (per-CPU array): packets ignored, by why. Packets from hosts
 * that are not peers, and non-IPv4 frames, are not counted (they are most traffic). */
enum fl_icmp_counter {
	FL_IC_MALFORMED = 0, /* truncated IPv4 header, IHL < 5, total length < IHL */
	FL_IC_FRAGMENT = 1,  /* a fragment from a peer: liveness only, not parsed */
	FL_IC_OTHER = 2,     /* ICMP from a peer that is not an echo reply */
	FL_IC_FOREIGN = 3,   /* an echo reply from a peer with another id (someone's ping) */
	FL_IC_UNMATCHED = 4, /* an echo reply with our id matching no request */
	FL_IC_TRUNCATED = 5, /* ICMP from a peer cut short before its echo header */
	FL_IC_MAX = 6,
};

#ifndef __bpf__
_Static_assert(sizeof(struct fl_peer_key) == 4, "fl_peer_key layout");
_Static_assert(sizeof(struct fl_echo_key) == 8, "fl_echo_key layout");
_Static_assert(sizeof(struct fl_peer_stats) == 96, "fl_peer_stats layout");
#endif

#endif
