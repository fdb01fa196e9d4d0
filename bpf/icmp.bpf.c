// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Peer probing timed in the kernel. At tc egress: the time each echo request of
 * this agent leaves toward a peer. At tc ingress: the matching echo reply, its RTT,
 * and the time any packet at all last came from the peer (passive liveness). An
 * agent that is itself stalled still gets true times. Loaded by user/icmp_watch.c.
 *
 * Both programs only observe: they return TC_ACT_UNSPEC (TCX_NEXT), so every other
 * tcx program and clsact filter on the device still runs and decides the packet's
 * fate. TC_ACT_OK would end the chain and skip them. Ethernet devices only (tc
 * data starts at the MAC header; loopback has one too). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "bpf_consts.h"
#include "icmp_event.h"

/* Set between open and load: the ICMP echo id of this agent's probes. Requests and
 * replies with another id (someone's ping) are not ours. Zero: passive liveness only. */
const volatile __u16 targ_echo_id = 0;

/* Peers: the agent adds and removes them; pinned, read by `flatline peers`. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FL_MAX_PEERS);
	__type(key, struct fl_peer_key);
	__type(value, struct fl_peer_stats);
} fl_peers SEC(".maps");

/* Echo requests in flight: (peer, id, seq) -> egress time. A lost request's entry
 * stays until the LRU pushes it out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FL_MAX_ECHO);
	__type(key, struct fl_echo_key);
	__type(value, __u64);
} fl_echo_reqs SEC(".maps");

/* Packets ignored, by enum fl_icmp_counter. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FL_IC_MAX);
	__type(key, __u32);
	__type(value, __u64);
} fl_icmp_cnt SEC(".maps");

struct cursor {
	void *pos;
	void *end;
};

enum ip_parse {
	IP_OK = 0,
	IP_NONE = 1,      /* not IPv4 */
	IP_MALFORMED = 2, /* truncated, IHL < 5, total length < IHL */
	IP_FRAGMENT = 3,  /* a fragment: addresses valid, no transport header to read */
};

static __always_inline void count(__u32 why)
{
	__u64 *n = bpf_map_lookup_elem(&fl_icmp_cnt, &why);

	if (n)
		*n += 1;
}

/* Ethernet: the EtherType (network order), or 0 if the frame is too short. */
static __always_inline __u16 parse_eth(struct cursor *c)
{
	struct ethhdr *eth = c->pos;

	if ((void *)(eth + 1) > c->end)
		return 0;
	c->pos = eth + 1;
	return eth->h_proto;
}

/* IPv4, options skipped through IHL. The cursor ends at the transport header. */
static __always_inline enum ip_parse parse_ipv4(struct cursor *c, struct iphdr **out)
{
	struct iphdr *ip = c->pos;
	__u32 hlen;

	if ((void *)(ip + 1) > c->end)
		return IP_MALFORMED;
	if (ip->version != 4)
		return IP_MALFORMED;
	hlen = ip->ihl * 4;
	if (hlen < sizeof(*ip) || bpf_ntohs(ip->tot_len) < hlen)
		return IP_MALFORMED;
	if (c->pos + hlen > c->end)
		return IP_MALFORMED;
	c->pos += hlen;
	*out = ip;
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return IP_FRAGMENT;
	return IP_OK;
}

static __always_inline struct icmphdr *parse_icmp(struct cursor *c)
{
	struct icmphdr *icmp = c->pos;

	if ((void *)(icmp + 1) > c->end)
		return NULL;
	c->pos = icmp + 1;
	return icmp;
}

/* Up to the IPv4 header of an Ethernet frame; IP_NONE for anything else. */
static __always_inline enum ip_parse parse_frame(struct __sk_buff *skb, struct cursor *c,
						 struct iphdr **ip)
{
	c->pos = (void *)(long)skb->data;
	c->end = (void *)(long)skb->data_end;
	if (parse_eth(c) != bpf_htons(ETH_P_IP))
		return IP_NONE;
	return parse_ipv4(c, ip);
}

SEC("tc")
int fl_icmp_egress(struct __sk_buff *skb)
{
	struct fl_peer_stats *st;
	struct fl_peer_key key;
	struct fl_echo_key req;
	struct icmphdr *icmp;
	struct iphdr *ip;
	struct cursor c;
	__u64 now;

	if (!targ_echo_id)
		return TC_ACT_UNSPEC;
	if (parse_frame(skb, &c, &ip) != IP_OK || ip->protocol != IPPROTO_ICMP)
		return TC_ACT_UNSPEC;
	__builtin_memcpy(key.addr, &ip->daddr, sizeof(key.addr));
	st = bpf_map_lookup_elem(&fl_peers, &key);
	if (!st)
		return TC_ACT_UNSPEC;
	icmp = parse_icmp(&c);
	if (!icmp || icmp->type != ICMP_ECHO || icmp->code != 0 ||
	    icmp->un.echo.id != bpf_htons(targ_echo_id))
		return TC_ACT_UNSPEC;

	now = bpf_ktime_get_ns();
	__builtin_memcpy(req.addr, key.addr, sizeof(req.addr));
	req.id = icmp->un.echo.id;
	req.seq = icmp->un.echo.sequence;
	bpf_map_update_elem(&fl_echo_reqs, &req, &now, BPF_ANY);
	__sync_fetch_and_add(&st->sent, 1);
	st->last_tx_ns = now;
	return TC_ACT_UNSPEC;
}

static __always_inline void record_rtt(struct fl_peer_stats *st, __u64 rtt, __u64 now, __u16 seq)
{
	__s64 d;

	st->rtt_last_ns = rtt;
	if (!st->rtt_min_ns || rtt < st->rtt_min_ns)
		st->rtt_min_ns = rtt;
	if (rtt > st->rtt_max_ns)
		st->rtt_max_ns = rtt;
	if (!st->rtt_srtt_ns) {
		st->rtt_srtt_ns = rtt;
	} else {
		/* No signed division before -mcpu=v4: an arithmetic shift does it. */
		d = (__s64)rtt - (__s64)st->rtt_srtt_ns;
		st->rtt_srtt_ns = (__u64)((__s64)st->rtt_srtt_ns + (d >> 3));
	}
	st->last_seq = bpf_ntohs(seq);
	st->last_reply_ns = now;
	__sync_fetch_and_add(&st->replied, 1);
}

SEC("tc")
int fl_icmp_ingress(struct __sk_buff *skb)
{
	struct fl_peer_stats *st;
	struct fl_peer_key key;
	struct fl_echo_key req;
	struct icmphdr *icmp;
	enum ip_parse res;
	struct iphdr *ip;
	struct cursor c;
	__u64 now, *sent;

	res = parse_frame(skb, &c, &ip);
	if (res == IP_NONE)
		return TC_ACT_UNSPEC;
	if (res == IP_MALFORMED) {
		count(FL_IC_MALFORMED);
		return TC_ACT_UNSPEC;
	}
	__builtin_memcpy(key.addr, &ip->saddr, sizeof(key.addr));
	st = bpf_map_lookup_elem(&fl_peers, &key);
	if (!st)
		return TC_ACT_UNSPEC;

	/* Whatever it is (replication, a fragment, an error), the peer is alive. */
	now = bpf_ktime_get_ns();
	st->last_rx_ns = now;
	__sync_fetch_and_add(&st->rx_packets, 1);
	if (res == IP_FRAGMENT) {
		count(FL_IC_FRAGMENT);
		return TC_ACT_UNSPEC;
	}
	if (ip->protocol != IPPROTO_ICMP || !targ_echo_id)
		return TC_ACT_UNSPEC;
	icmp = parse_icmp(&c);
	if (!icmp) {
		count(FL_IC_TRUNCATED);
		return TC_ACT_UNSPEC;
	}
	if (icmp->type != ICMP_ECHOREPLY || icmp->code != 0) {
		count(FL_IC_OTHER);
		return TC_ACT_UNSPEC;
	}
	if (icmp->un.echo.id != bpf_htons(targ_echo_id)) {
		count(FL_IC_FOREIGN);
		return TC_ACT_UNSPEC;
	}
	__builtin_memcpy(req.addr, key.addr, sizeof(req.addr));
	req.id = icmp->un.echo.id;
	req.seq = icmp->un.echo.sequence;
	sent = bpf_map_lookup_elem(&fl_echo_reqs, &req);
	if (!sent) {
		__sync_fetch_and_add(&st->unmatched, 1);
		count(FL_IC_UNMATCHED);
		return TC_ACT_UNSPEC;
	}
	record_rtt(st, now > *sent ? now - *sent : 0, now, req.seq);
	/* A duplicate of this reply will not match again. */
	bpf_map_delete_elem(&fl_echo_reqs, &req);
	return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
