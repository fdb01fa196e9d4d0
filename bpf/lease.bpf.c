// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The write lease, enforced at tc egress (tcx) on every interface of the server's
 * host, loopback included: a TCP segment with data from the server's port leaves only while
 * the lease in fl_lease runs, or toward an allowed connection (fl_lease_allow: the
 * agent, the replicas, the controller). Past the deadline a client gets no reply,
 * so no write is acknowledged, whatever the agent or the server do meanwhile: the
 * agent may be dead or stopped, the server hung and resumed. Loaded by
 * user/kern/lease_watch.c; the maps and links are pinned and outlive the agent.
 *
 * Frames are read by bpf/parse.h (VLAN tags, IPv4 options, IPv6 extension headers). A
 * packet whose TCP header cannot be read (an L3 device, a tunnel or IPsec, a later
 * fragment, a chain past FL_IPV6_MAX_EXT) fails closed when its socket is the server's:
 * judged as a reply. Not covered: the server's other ports and UNIX sockets, and a
 * packet that has lost its socket before some device's egress.
 *
 * The only program of flatline that drops (TC_ACT_SHOT); everything else returns
 * TC_ACT_UNSPEC so that the next program in the chain decides. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "bpf_consts.h"
#include "lease_map.h"
#include "parse.h"

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

/* The server's TCP header in the frame, parsed by bpf/parse.h: *tcp set when the fixed
 * TCP header is within data_end (it may be malformed: doff < 5, options cut), k->addr
 * the destination as an fl_lease_conn address and *len the IP payload length from the
 * TCP header on (FL_LEN_UNKNOWN: not in the IP header). Anything else, *tcp NULL:
 * another protocol, a non-first fragment, a header the linear data does not hold. The
 * result is that of the last layer parsed. */
static __always_inline enum parse_res parse_seg(struct __sk_buff *skb, struct tcphdr **tcp,
						struct fl_lease_conn *k, __u32 *len)
{
	struct fl_ip p = {};
	struct cursor c;
	enum parse_res res;
	__be16 proto;

	*tcp = NULL;
	c.pos = (void *)(long)skb->data;
	c.end = (void *)(long)skb->data_end;
	res = parse_eth(&c, &proto);
	if (res != PARSE_OK)
		return res;
	res = parse_ip(&c, proto, &p);
	if (res != PARSE_OK)
		return res;
	if (p.proto != IPPROTO_TCP)
		return PARSE_NONE;
	res = parse_tcp(&c, tcp);
	if (!*tcp)
		return res;
	*len = p.l4_len;
	if (p.family == FL_AF_INET) {
		k->addr[10] = 0xff;
		k->addr[11] = 0xff;
		__builtin_memcpy(&k->addr[12], p.daddr, 4);
	} else {
		__builtin_memcpy(k->addr, p.daddr, 16);
	}
	return res;
}

/* Is the socket that sent the packet the server's, a TCP socket bound to its port?
 * skb->sk is the sending socket for what this host's sockets send (NULL when forwarded;
 * a request or time-wait socket, for a SYN-ACK or a RST, is not a full one). If so, k
 * is its far end as an fl_lease_conn. */
static __always_inline bool server_sock(struct __sk_buff *skb, __u32 port, struct fl_lease_conn *k)
{
	struct bpf_sock *sk = skb->sk;
	__u32 family;

	if (!sk)
		return false;
	sk = bpf_sk_fullsock(sk);
	if (!sk || sk->protocol != IPPROTO_TCP || sk->src_port != port)
		return false;
	/* Each field read at its constant offset: the verifier refuses arithmetic on a
	 * socket pointer. */
	family = sk->family;
	k->port = sk->dst_port;
	if (family == FL_AF_INET) {
		__u32 ip4 = sk->dst_ip4;

		k->addr[10] = 0xff;
		k->addr[11] = 0xff;
		__builtin_memcpy(&k->addr[12], &ip4, 4);
		return true;
	}
	if (family == FL_AF_INET6) {
		__u32 w[4] = {sk->dst_ip6[0], sk->dst_ip6[1], sk->dst_ip6[2], sk->dst_ip6[3]};

		__builtin_memcpy(k->addr, w, 16);
		return true;
	}
	return false;
}

/* Past the deadline, and not toward an allowed connection: TC_ACT_SHOT. */
static __always_inline int judge(const struct fl_lease_state *l, const struct fl_lease_conn *k)
{
	if (bpf_ktime_get_ns() < l->deadline_ns) {
		count(FL_LC_HELD);
		return TC_ACT_UNSPEC;
	}
	if (bpf_map_lookup_elem(&fl_lease_allow, k)) {
		count(FL_LC_ALLOWED);
		return TC_ACT_UNSPEC;
	}
	count(FL_LC_DROPPED);
	return TC_ACT_SHOT;
}

/* A packet whose TCP header the parser cannot see (see parse_seg): judged as a reply
 * (fail closed) when the socket that sent it is the server's, else let through. */
static __always_inline int judge_unparsed(struct __sk_buff *skb, const struct fl_lease_state *l,
					  __u32 port)
{
	struct fl_lease_conn k = {};

	if (!server_sock(skb, port, &k))
		return TC_ACT_UNSPEC;
	return judge(l, &k);
}

SEC("tc")
int fl_lease_egress(struct __sk_buff *skb)
{
	struct fl_lease_conn k = {};
	struct fl_lease_state *l;
	struct tcphdr *tcp;
	__u32 zero = 0, len = 0, port;

	l = bpf_map_lookup_elem(&fl_lease, &zero);
	if (!l || !l->port)
		return TC_ACT_UNSPEC;
	port = l->port;
	/* A header past the linear data (a packet rebuilt on the way, never what the
	 * server's TCP sends) is not pulled in: the socket judges it as one unparsed. */
	parse_seg(skb, &tcp, &k, &len);
	if (!tcp)
		return judge_unparsed(skb, l, port);
	if (tcp->source == bpf_htons((__u16)port)) {
		k.port = tcp->dest;
	} else {
		/* Another source port, from the server's socket: its reply with the port
		 * rewritten (NAT); judged, toward the socket's far end. */
		__builtin_memset(&k, 0, sizeof(k));
		if (!server_sock(skb, port, &k))
			return TC_ACT_UNSPEC;
	}
	/* Handshakes, bare ACKs, FIN and RST carry no reply: only data can acknowledge
	 * a write (a truncated or lying length counts as data). */
	if (len <= (__u32)tcp->doff * 4 && len >= sizeof(*tcp))
		return TC_ACT_UNSPEC;
	return judge(l, &k);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
