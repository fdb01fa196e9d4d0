// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The write lease, enforced at tc egress (tcx) on every interface of the server's
 * host, loopback included: a TCP segment with data from the server's port leaves only while
 * the lease in fl_lease runs, or toward an allowed connection (fl_lease_allow: the
 * agent, the replicas, the controller). Past the deadline a client gets no reply,
 * so no write is acknowledged, whatever the agent or the server do meanwhile: the
 * agent may be dead or stopped, the server hung and resumed. Loaded by
 * user/kern/lease_watch.c; the maps and links are pinned and outlive the agent.
 *
 * The only program of flatline that drops (TC_ACT_SHOT); everything else returns
 * TC_ACT_UNSPEC so that the next program in the chain decides. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "bpf_consts.h"
#include "lease_map.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fl_lease_state);
} fl_lease SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FL_LEASE_MAX_ALLOW);
	__type(key, struct fl_lease_conn);
	__type(value, __u32);
} fl_lease_allow SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FL_LC_MAX);
	__type(key, __u32);
	__type(value, __u64);
} fl_lease_cnt SEC(".maps");

static __always_inline void count(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&fl_lease_cnt, &what);

	if (n)
		*n += 1;
}

/* The TCP header of an Ethernet frame carrying IPv4 or IPv6 (no extension
 * headers), the destination as an fl_lease_conn address and the IP payload length
 * (TCP header included) in *len; NULL for anything else, or a truncated or
 * malformed frame, or a non-first fragment. */
static __always_inline struct tcphdr *parse_tcp(struct __sk_buff *skb, struct fl_lease_conn *k,
						__u32 *len)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct tcphdr *tcp;

	if ((void *)(eth + 1) > end)
		return NULL;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 hlen;

		if ((void *)(ip + 1) > end || ip->version != 4 || ip->protocol != IPPROTO_TCP)
			return NULL;
		hlen = ip->ihl * 4;
		if (hlen < sizeof(*ip) || bpf_ntohs(ip->tot_len) < hlen ||
		    (ip->frag_off & bpf_htons(IP_OFFSET)))
			return NULL;
		*len = bpf_ntohs(ip->tot_len) - hlen;
		tcp = (void *)ip + hlen;
		k->addr[10] = 0xff;
		k->addr[11] = 0xff;
		__builtin_memcpy(&k->addr[12], &ip->daddr, 4);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return NULL;
		tcp = (void *)(ip6 + 1);
		*len = bpf_ntohs(ip6->payload_len);
		__builtin_memcpy(k->addr, &ip6->daddr, 16);
	} else {
		return NULL;
	}
	if ((void *)(tcp + 1) > end)
		return NULL;
	return tcp;
}

SEC("tc")
int fl_lease_egress(struct __sk_buff *skb)
{
	struct fl_lease_conn k = {};
	struct fl_lease_state *l;
	struct tcphdr *tcp;
	__u32 zero = 0, len = 0;

	l = bpf_map_lookup_elem(&fl_lease, &zero);
	if (!l || !l->port)
		return TC_ACT_UNSPEC;
	tcp = parse_tcp(skb, &k, &len);
	if (!tcp || tcp->source != bpf_htons((__u16)l->port))
		return TC_ACT_UNSPEC;
	/* Handshakes, bare ACKs, FIN and RST carry no reply: only data can acknowledge
	 * a write (a truncated or lying length counts as data). */
	if (len <= (__u32)tcp->doff * 4 && len >= sizeof(*tcp))
		return TC_ACT_UNSPEC;
	if (bpf_ktime_get_ns() < l->deadline_ns) {
		count(FL_LC_HELD);
		return TC_ACT_UNSPEC;
	}
	k.port = tcp->dest;
	if (bpf_map_lookup_elem(&fl_lease_allow, &k)) {
		count(FL_LC_ALLOWED);
		return TC_ACT_UNSPEC;
	}
	count(FL_LC_DROPPED);
	return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
