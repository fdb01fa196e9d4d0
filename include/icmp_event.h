/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Peer probing in the kernel (bpf/icmp.bpf.c): the keys and values of its maps.
 * Shared by BPF (after vmlinux.h) and userspace (after <linux/types.h>).
 *
 * IPv4 and IPv6 peers share the maps: the key holds either family. */
#ifndef FL_ICMP_EVENT_H
#define FL_ICMP_EVENT_H

#define FL_MAX_PEERS 1024  /* entries of fl_peers */
#define FL_MAX_ECHO  16384 /* requests in flight remembered (LRU): peers x window */
/* Bytes of an echo request's data, right after its 8-byte ICMP/ICMPv6 header, that its
 * reply must carry back unchanged to match: the prober fills them at random for each
 * probe, so only a host that received the request can answer it. */
#define FL_ECHO_PAYLOAD 16
/* fl_peer_key.family: the socket API's values (BTF does not carry them). */
#define FL_AF_INET  2
#define FL_AF_INET6 10

/* Key of fl_peers: the peer's address, bytes in network order, so that
 * `bpftool map dump` prints an IPv4 one as "addr": [198,18,0,2] and an IPv6 one
 * as "addr6": [253,0,...]. Bytes past an IPv4 address are zero. */
struct fl_peer_key {
	union {
		__u8 addr[4];	/* family FL_AF_INET */
		__u8 addr6[16]; /* family FL_AF_INET6 */
	};
	__u32 family; /* FL_AF_INET or FL_AF_INET6 */
};

/* Key of fl_echo_reqs: one echo request that left toward a peer (address as in
 * fl_peer_key). id and seq as on the wire (network order). Value: struct
 * fl_echo_req. */
struct fl_echo_key {
	__u8 addr[16];
	__u32 family;
	__u16 id;
	__u16 seq;
};

/* Value of fl_echo_reqs: when the request left (bpf_ktime_get_ns() at tc egress) and
 * the first FL_ECHO_PAYLOAD bytes of its data, which the reply must echo. */
struct fl_echo_req {
	__u64 sent_ns;
	__u8 payload[FL_ECHO_PAYLOAD];
};

/* Value of fl_peers, per peer. The agent inserts a zeroed entry for each peer it
 * probes; the programs only update entries that exist (unknown hosts are ignored).
 * Times are bpf_ktime_get_ns() (CLOCK_MONOTONIC); 0 means never. Counters are
 * updated atomically; the RTT fields by whichever CPU saw the reply (one probe per
 * interval per peer, so two replies racing for one peer are rare and harmless). */
struct fl_peer_stats {
	__u64 last_reply_ns; /* last echo reply matched to a request of ours */
	__u64 last_rx_ns;    /* last IP packet of any kind from the peer (passive liveness) */
	__u64 last_tx_ns;    /* last echo request to the peer seen at tc egress */
	__u64 sent;	     /* echo requests that reached tc egress: left this host */
	__u64 replied;	     /* echo replies matched to a request */
	__u64 rx_packets;    /* IP packets of any kind from the peer */
	__u64 unmatched;     /* replies with our id that matched no request (late, duplicate) */
	__u64 rtt_last_ns;   /* RTT of the last matched reply, egress to ingress */
	__u64 rtt_min_ns;
	__u64 rtt_max_ns;
	__u64 rtt_srtt_ns; /* smoothed: srtt += (rtt - srtt) / 8, as TCP's (RFC 6298) */
	__u32 last_seq;	   /* sequence number (host order) of the last matched reply */
	__u32 pad;
};

/* Index of fl_icmp_cnt (per-CPU array): packets ignored, by why. Packets from hosts
 * that are not peers, and frames that are neither IPv4 nor IPv6, are not counted
 * (they are most traffic). */
enum fl_icmp_counter {
	FL_IC_MALFORMED = 0, /* truncated IPv4/IPv6 header, IHL < 5, total length < IHL,
			      * IP version not the EtherType's */
	FL_IC_FRAGMENT = 1,  /* a fragment from a peer: liveness only, not parsed */
	FL_IC_OTHER = 2,     /* ICMP/ICMPv6 from a peer that is not an echo reply */
	FL_IC_FOREIGN = 3,   /* an echo reply from a peer with another id (someone's ping) */
	FL_IC_UNMATCHED = 4, /* an echo reply with our id matching no request */
	FL_IC_TRUNCATED = 5, /* from a peer, cut short before its echo header (in the ICMP
			      * header or in an IPv6 extension header): liveness only */
	FL_IC_EXT_LIMIT = 6, /* from a peer, more than FL_IPV6_MAX_EXT (bpf/parse.h) IPv6 extension
			      * headers: liveness only */
	FL_IC_FORGED = 7,    /* an echo reply with our id and the seq of a request in flight
			      * whose data is not the request's (shorter, or other bytes):
			      * not an answer to it (spoofed, or corrupted); liveness only */
	FL_IC_MAX = 8,
};

#ifndef __bpf__
_Static_assert(sizeof(struct fl_peer_key) == 20, "fl_peer_key layout");
_Static_assert(sizeof(struct fl_echo_key) == 24, "fl_echo_key layout");
_Static_assert(sizeof(struct fl_echo_req) == 8 + FL_ECHO_PAYLOAD, "fl_echo_req layout");
_Static_assert(sizeof(struct fl_peer_stats) == 96, "fl_peer_stats layout");
#endif

#endif
