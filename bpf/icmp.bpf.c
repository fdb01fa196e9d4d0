// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Peer probing timed in the kernel, ICMP echo over IPv4 and ICMPv6 echo over IPv6
 * (extension headers walked up to FL_IPV6_MAX_EXT). At tc egress: the time each echo request of
 * this agent leaves toward a peer. At tc ingress: the matching echo reply, its RTT,
 * and the time any packet at all last came from the peer (passive liveness). An
 * agent that is itself stalled still gets true times. Loaded by user/kern/icmp_watch.c.
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

/* Set between open and load: the ICMP/ICMPv6 echo id of this agent's probes. Requests and
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
	IP_NONE = 1,	  /* neither IPv4 nor IPv6 */
	IP_MALFORMED = 2, /* truncated IP header, IHL < 5, total length < IHL, bad version */
	IP_FRAGMENT = 3,  /* a fragment: addresses valid, no transport header to read */
	IP_TRUNCATED = 4, /* IPv6: addresses valid, extension header chain cut short */
	IP_EXT_LIMIT = 5, /* IPv6: addresses valid, more than FL_IPV6_MAX_EXT ext headers */
};

/* One parsed IP packet: its family, addresses (in the packet) and upper protocol. */
struct ip_pkt {
	__u32 family; /* FL_AF_INET or FL_AF_INET6 */
	void *saddr;  /* 4 or 16 bytes */
	void *daddr;
	__u8 proto; /* IPPROTO_ICMP, IPPROTO_ICMPV6, ... after extension headers */
};

/* ICMP and ICMPv6 echo share this layout (RFC 792, RFC 4443 4.1). */
struct echo_hdr {
	__u8 type;
	__u8 code;
	__u16 csum;
	__be16 id;
	__be16 seq;
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
static __always_inline enum ip_parse parse_ipv4(struct cursor *c, struct ip_pkt *p)
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
	p->family = FL_AF_INET;
	p->saddr = &ip->saddr;
	p->daddr = &ip->daddr;
	p->proto = ip->protocol;
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return IP_FRAGMENT;
	return IP_OK;
}

/* IPv6 and its extension headers, at most FL_IPV6_MAX_EXT of them (a bounded loop).
 * The cursor ends at the upper-layer header; p->proto names it. A fragment header
 * anywhere makes it a fragment, as IPv4's MF or offset does. */
static __always_inline enum ip_parse parse_ipv6(struct cursor *c, struct ip_pkt *p)
{
	struct ipv6hdr *ip6 = c->pos;
	struct ipv6_opt_hdr *ext;
	__u8 next;

	if ((void *)(ip6 + 1) > c->end)
		return IP_MALFORMED;
	if (ip6->version != 6)
		return IP_MALFORMED;
	c->pos = ip6 + 1;
	p->family = FL_AF_INET6;
	p->saddr = &ip6->saddr;
	p->daddr = &ip6->daddr;
	next = ip6->nexthdr;
	for (int i = 0; i < FL_IPV6_MAX_EXT; i++) {
		switch (next) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
		case IPPROTO_MH:
			ext = c->pos;
			if ((void *)(ext + 1) > c->end)
				return IP_TRUNCATED;
			next = ext->nexthdr;
			c->pos += ((__u32)ext->hdrlen + 1) * 8;
			break;
		case IPPROTO_AH:
			ext = c->pos;
			if ((void *)(ext + 1) > c->end)
				return IP_TRUNCATED;
			next = ext->nexthdr;
			c->pos += ((__u32)ext->hdrlen + 2) * 4;
			break;
		case IPPROTO_FRAGMENT:
			p->proto = next;
			return IP_FRAGMENT;
		default:
			p->proto = next;
			return IP_OK;
		}
	}
	switch (next) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_MH:
	case IPPROTO_AH:
		return IP_EXT_LIMIT;
	case IPPROTO_FRAGMENT:
		p->proto = next;
		return IP_FRAGMENT;
	}
	p->proto = next;
	return IP_OK;
}

static __always_inline struct echo_hdr *parse_echo(struct cursor *c)
{
	struct echo_hdr *h = c->pos;

	if ((void *)(h + 1) > c->end)
		return NULL;
	c->pos = h + 1;
	return h;
}

/* Up to the upper-layer header of an IPv4 or IPv6 Ethernet frame; IP_NONE for
 * anything else. */
static __always_inline enum ip_parse parse_frame(struct __sk_buff *skb, struct cursor *c,
						 struct ip_pkt *p)
{
	__u16 proto;

	c->pos = (void *)(long)skb->data;
	c->end = (void *)(long)skb->data_end;
	proto = parse_eth(c);
	if (proto == bpf_htons(ETH_P_IP))
		return parse_ipv4(c, p);
	if (proto == bpf_htons(ETH_P_IPV6))
		return parse_ipv6(c, p);
	return IP_NONE;
}

/* The fl_peers key of an address in the packet. */
static __always_inline void make_key(struct fl_peer_key *key, const struct ip_pkt *p, void *addr)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->family = p->family;
	if (p->family == FL_AF_INET)
		__builtin_memcpy(key->addr, addr, 4);
	else
		__builtin_memcpy(key->addr6, addr, 16);
}

static __always_inline void make_req(struct fl_echo_key *req, const struct fl_peer_key *key,
				     const struct echo_hdr *h)
{
	__builtin_memcpy(req->addr, key->addr6, sizeof(req->addr));
	req->family = key->family;
	req->id = h->id;
	req->seq = h->seq;
}

/* Is the packet an echo of the family (request or reply)? */
static __always_inline bool is_echo(const struct ip_pkt *p, const struct echo_hdr *h, bool request)
{
	if (h->code != 0)
		return false;
	if (p->family == FL_AF_INET)
		return h->type == (request ? ICMP_ECHO : ICMP_ECHOREPLY);
	return h->type == (request ? ICMPV6_ECHO_REQUEST : ICMPV6_ECHO_REPLY);
}

static __always_inline bool is_icmp(const struct ip_pkt *p)
{
	return p->proto == (p->family == FL_AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6);
}

SEC("tc")
int fl_icmp_egress(struct __sk_buff *skb)
{
	struct fl_peer_stats *st;
	struct fl_peer_key key;
	struct fl_echo_key req;
	struct echo_hdr *h;
	struct ip_pkt p = {};
	struct cursor c;
	__u64 now;

	if (!targ_echo_id)
		return TC_ACT_UNSPEC;
	if (parse_frame(skb, &c, &p) != IP_OK || !is_icmp(&p))
		return TC_ACT_UNSPEC;
	make_key(&key, &p, p.daddr);
	st = bpf_map_lookup_elem(&fl_peers, &key);
	if (!st)
		return TC_ACT_UNSPEC;
	h = parse_echo(&c);
	if (!h || !is_echo(&p, h, true) || h->id != bpf_htons(targ_echo_id))
		return TC_ACT_UNSPEC;

	now = bpf_ktime_get_ns();
	make_req(&req, &key, h);
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
	struct echo_hdr *h;
	struct ip_pkt p = {};
	enum ip_parse res;
	struct cursor c;
	__u64 now, *sent;

	res = parse_frame(skb, &c, &p);
	if (res == IP_NONE)
		return TC_ACT_UNSPEC;
	if (res == IP_MALFORMED) {
		count(FL_IC_MALFORMED);
		return TC_ACT_UNSPEC;
	}
	make_key(&key, &p, p.saddr);
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
	if (res == IP_TRUNCATED) {
		count(FL_IC_TRUNCATED);
		return TC_ACT_UNSPEC;
	}
	if (res == IP_EXT_LIMIT) {
		count(FL_IC_EXT_LIMIT);
		return TC_ACT_UNSPEC;
	}
	if (!is_icmp(&p) || !targ_echo_id)
		return TC_ACT_UNSPEC;
	h = parse_echo(&c);
	if (!h) {
		count(FL_IC_TRUNCATED);
		return TC_ACT_UNSPEC;
	}
	if (!is_echo(&p, h, false)) {
		count(FL_IC_OTHER);
		return TC_ACT_UNSPEC;
	}
	if (h->id != bpf_htons(targ_echo_id)) {
		count(FL_IC_FOREIGN);
		return TC_ACT_UNSPEC;
	}
	make_req(&req, &key, h);
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
