// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Peer probing timed in the kernel, ICMP echo over IPv4 and ICMPv6 echo over IPv6
 * (frames parsed by bpf/parse.h: VLAN tags, IPv4 options, IPv6 extension headers). At
 * tc egress: the time each echo request of this agent leaves toward a peer, and its random
 * data. At tc ingress: the matching echo reply (same id, seq AND data: a reply forged
 * without the request carries other bytes), its RTT, and the time any packet at all last
 * came from the peer (passive liveness). An agent that is itself stalled still gets true times.
 * Loaded by user/kern/icmp_watch.c.
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
#include "parse.h"

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

/* Echo requests in flight: (peer, id, seq) -> egress time and data. A lost request's
 * entry stays until the LRU pushes it out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FL_MAX_ECHO);
	__type(key, struct fl_echo_key);
	__type(value, struct fl_echo_req);
} fl_echo_reqs SEC(".maps");

/* Packets ignored, by enum fl_icmp_counter. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FL_IC_MAX);
	__type(key, __u32);
	__type(value, __u64);
} fl_icmp_cnt SEC(".maps");

/* The fields of an ICMP or ICMPv6 echo header that matter here (id and seq as on the
 * wire, network order). */
struct echo {
	__u8 type;
	__u8 code;
	__be16 id;
	__be16 seq;
};

static __always_inline void count(__u32 why)
{
	__u64 *n = bpf_map_lookup_elem(&fl_icmp_cnt, &why);

	if (n)
		*n += 1;
}

/* Up to the upper-layer header of an IPv4 or IPv6 Ethernet frame (bpf/parse.h);
 * PARSE_NONE for anything else. */
static __always_inline enum parse_res parse_frame(struct __sk_buff *skb, struct cursor *c,
						  struct fl_ip *p)
{
	__be16 proto;

	c->pos = (void *)(long)skb->data;
	c->end = (void *)(long)skb->data_end;
	if (parse_eth(c, &proto) != PARSE_OK)
		return PARSE_NONE;
	return parse_ip(c, proto, p);
}

/* The echo fields of the ICMP (IPv4) or ICMPv6 header at the cursor; false if cut short. */
static __always_inline bool parse_echo(struct cursor *c, const struct fl_ip *p, struct echo *e)
{
	struct icmp6hdr *h6;
	struct icmphdr *h;

	if (p->family == FL_AF_INET) {
		if (parse_icmp(c, &h) != PARSE_OK)
			return false;
		e->type = h->type;
		e->code = h->code;
		e->id = h->un.echo.id;
		e->seq = h->un.echo.sequence;
		return true;
	}
	if (parse_icmp6(c, &h6) != PARSE_OK)
		return false;
	e->type = h6->icmp6_type;
	e->code = h6->icmp6_code;
	e->id = h6->icmp6_dataun.u_echo.identifier;
	e->seq = h6->icmp6_dataun.u_echo.sequence;
	return true;
}

/* The fl_peers key of an address in the packet. */
static __always_inline void make_key(struct fl_peer_key *key, const struct fl_ip *p, void *addr)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->family = p->family;
	if (p->family == FL_AF_INET)
		__builtin_memcpy(key->addr, addr, 4);
	else
		__builtin_memcpy(key->addr6, addr, 16);
}

static __always_inline void make_req(struct fl_echo_key *req, const struct fl_peer_key *key,
				     const struct echo *h)
{
	__builtin_memcpy(req->addr, key->addr6, sizeof(req->addr));
	req->family = key->family;
	req->id = h->id;
	req->seq = h->seq;
}

/* Is the packet an echo of the family (request or reply)? */
static __always_inline bool is_echo(const struct fl_ip *p, const struct echo *h, bool request)
{
	if (h->code != 0)
		return false;
	if (p->family == FL_AF_INET)
		return h->type == (request ? ICMP_ECHO : ICMP_ECHOREPLY);
	return h->type == (request ? ICMPV6_ECHO_REQUEST : ICMPV6_ECHO_REPLY);
}

/* The first FL_ECHO_PAYLOAD bytes of the echo's data, after its 8-byte header (the
 * cursor is past it), wherever the skb holds them (linear or not); false if the echo
 * carries fewer. */
static __always_inline bool echo_payload(struct __sk_buff *skb, const struct cursor *c, __u8 *out)
{
	long off = (long)c->pos - (long)skb->data;

	if (off < 0 || off > 0xffff)
		return false;
	return !bpf_skb_load_bytes(skb, (__u32)off, out, FL_ECHO_PAYLOAD);
}

static __always_inline bool same_payload(const __u8 *a, const __u8 *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1];
}

static __always_inline bool is_icmp(const struct fl_ip *p)
{
	return p->proto == (p->family == FL_AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6);
}

SEC("tc")
int fl_icmp_egress(struct __sk_buff *skb)
{
	struct fl_echo_req val = {};
	struct fl_peer_stats *st;
	struct fl_peer_key key;
	struct fl_echo_key req;
	struct echo h;
	struct fl_ip p = {};
	struct cursor c;

	if (!targ_echo_id)
		return TC_ACT_UNSPEC;
	if (parse_frame(skb, &c, &p) != PARSE_OK || p.frag || !is_icmp(&p))
		return TC_ACT_UNSPEC;
	make_key(&key, &p, p.daddr);
	st = bpf_map_lookup_elem(&fl_peers, &key);
	if (!st)
		return TC_ACT_UNSPEC;
	if (!parse_echo(&c, &p, &h) || !is_echo(&p, &h, true) || h.id != bpf_htons(targ_echo_id))
		return TC_ACT_UNSPEC;
	/* Not a probe of ours without its data: nothing a reply could be checked against. */
	if (!echo_payload(skb, &c, val.payload))
		return TC_ACT_UNSPEC;

	val.sent_ns = bpf_ktime_get_ns();
	make_req(&req, &key, &h);
	bpf_map_update_elem(&fl_echo_reqs, &req, &val, BPF_ANY);
	__sync_fetch_and_add(&st->sent, 1);
	st->last_tx_ns = val.sent_ns;
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
	__u64 payload[FL_ECHO_PAYLOAD / 8]; /* 8-byte words: the stack's accesses are aligned */
	struct fl_peer_stats *st;
	struct fl_echo_req *sent;
	struct fl_peer_key key;
	struct fl_echo_key req;
	struct echo h;
	struct fl_ip p = {};
	enum parse_res res;
	struct cursor c;
	__u64 now;

	res = parse_frame(skb, &c, &p);
	if (res == PARSE_NONE)
		return TC_ACT_UNSPEC;
	/* No usable IP header: impossible fields, or the IP header itself cut short. */
	if (res == PARSE_MALFORMED || (res == PARSE_TRUNCATED && !p.family)) {
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
	if (res == PARSE_FRAGMENT || p.frag) {
		count(FL_IC_FRAGMENT);
		return TC_ACT_UNSPEC;
	}
	if (res == PARSE_TRUNCATED) {
		count(FL_IC_TRUNCATED);
		return TC_ACT_UNSPEC;
	}
	if (res == PARSE_EXT_LIMIT) {
		count(FL_IC_EXT_LIMIT);
		return TC_ACT_UNSPEC;
	}
	if (!is_icmp(&p) || !targ_echo_id)
		return TC_ACT_UNSPEC;
	if (!parse_echo(&c, &p, &h)) {
		count(FL_IC_TRUNCATED);
		return TC_ACT_UNSPEC;
	}
	if (!is_echo(&p, &h, false)) {
		count(FL_IC_OTHER);
		return TC_ACT_UNSPEC;
	}
	if (h.id != bpf_htons(targ_echo_id)) {
		count(FL_IC_FOREIGN);
		return TC_ACT_UNSPEC;
	}
	make_req(&req, &key, &h);
	sent = bpf_map_lookup_elem(&fl_echo_reqs, &req);
	if (!sent) {
		__sync_fetch_and_add(&st->unmatched, 1);
		count(FL_IC_UNMATCHED);
		return TC_ACT_UNSPEC;
	}
	/* The request's random data, echoed: only a host that got the request knows it. A
	 * forged reply leaves the request in flight for the true one. */
	if (!echo_payload(skb, &c, (__u8 *)payload) ||
	    !same_payload((__u8 *)payload, sent->payload)) {
		count(FL_IC_FORGED);
		return TC_ACT_UNSPEC;
	}
	record_rtt(st, now > sent->sent_ns ? now - sent->sent_ns : 0, now, req.seq);
	/* A duplicate of this reply will not match again. */
	bpf_map_delete_elem(&fl_echo_reqs, &req);
	return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
