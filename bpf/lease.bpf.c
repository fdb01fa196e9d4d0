// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The write lease, enforced per socket: every socket of the server process carries a
 * mark (fl_lease_srv), and a packet with data of a marked socket leaves only while the
 * lease in fl_lease runs, or from an allowed socket (fl_lease_ok, by socket cookie: the
 * agent's connection, the replicas', the controller's). Past the deadline a client gets
 * no reply, so no write is acknowledged, whatever the agent or the server do
 * meanwhile: the agent may be dead or stopped, the server hung and resumed. Loaded by
 * user/kern/lease_watch.c at the root of the cgroup v2 hierarchy (every process, every
 * network namespace: the marks, not the attach point, say which sockets are the
 * server's); the maps and links are pinned and outlive the agent.
 *
 *   fl_lease_bind4/6  cgroup/post_bind: a TCP socket bound in the server's network
 *                     namespace by the server's process (to a port outside the ephemeral
 *                     range: a listener, not a connection it makes), or to a port the
 *                     server listens on (fl_lease_ports: a server restarted without its
 *                     agent), is marked; never one bound to the server's cluster bus port
 *                     (fl_lease_ports value FL_LEASE_PORT_BUS: the cluster's gossip and
 *                     votes, which acknowledge no client's write, keep flowing);
 *                     a listener's mark passes to every socket it accepts (BPF_F_CLONE)
 *   fl_lease_egress   cgroup_skb/egress: judges each packet of a marked socket before any
 *                     device sees it: every port of the server (tls-port too), every
 *                     interface, loopback, tunnels, IPsec and GSO super-packets alike;
 *                     past the deadline, an unmarked connection accepted by a marked
 *                     listener (queued before the agent marked it) is marked there
 *   fl_lease_judge    the data test alone, for tests; never loaded by the agent
 *
 * A marked socket's packet is let through past the deadline only when it is TCP whose
 * headers say it carries no data (a handshake, an ACK, FIN, RST), read by bpf/parse.h
 * (IPv4 options, IPv6 extension headers); anything the program cannot read counts as
 * a reply (fails closed). The agent marks the sockets the server
 * had before the hooks (user/kern/lease_sock.c). UNIX sockets never pass here: the agent
 * refuses a server that has one.
 *
 * The only program of flatline that drops; everything else only observes. */
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
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fl_lease_cfg);
} fl_lease_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FL_LEASE_MAX_ALLOW);
	__type(key, __u64);
	__type(value, __u32);
} fl_lease_ok SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FL_LEASE_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} fl_lease_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC | BPF_F_CLONE);
	__type(key, int);
	__type(value, __u32);
} fl_lease_srv SEC(".maps");

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

/* A TCP socket just bound: the server's if it is in the server's network namespace and
 * its process or port says so. */
static __always_inline int mark(struct bpf_sock *sk)
{
	__u32 zero = 0, port, mark = FL_LEASE_MARK, *kind;
	struct fl_lease_cfg *cfg;

	cfg = bpf_map_lookup_elem(&fl_lease_cfg, &zero);
	if (!cfg || !cfg->netns_cookie || sk->protocol != IPPROTO_TCP)
		return 1;
	if (bpf_get_netns_cookie(sk) != cfg->netns_cookie)
		return 1;
	port = sk->src_port;
	kind = bpf_map_lookup_elem(&fl_lease_ports, &port);
	if (kind && *kind == FL_LEASE_PORT_BUS)
		return 1;
	if (!kind && (!cfg->tgid || (__u32)(bpf_get_current_pid_tgid() >> 32) != cfg->tgid ||
		      (port >= cfg->eph_lo && port <= cfg->eph_hi)))
		return 1;
	bpf_sk_storage_get(&fl_lease_srv, sk, &mark, BPF_SK_STORAGE_GET_F_CREATE);
	return 1;
}

SEC("cgroup/post_bind4")
int fl_lease_bind4(struct bpf_sock *sk)
{
	return mark(sk);
}

SEC("cgroup/post_bind6")
int fl_lease_bind6(struct bpf_sock *sk)
{
	return mark(sk);
}

/* Does this packet carry data? Only a TCP segment whose IP header (IPv4 options, IPv6
 * extension headers walked) and TCP header bpf/parse.h reads whole, not a fragment, and
 * whose lengths say "no payload" does not: skb->len (the whole packet from the IP
 * header on, a GSO super-packet included) and the IP header's own length field each
 * end at the TCP header. Another protocol, a header past the linear data, a length
 * that says more: data (fails closed). */
static __always_inline bool carries_data(struct __sk_buff *skb)
{
	struct fl_ip p = {};
	struct tcphdr *th;
	struct cursor c;
	__u32 hdrs;

	if (parse_l3(skb, &c, &p) != PARSE_OK || p.frag || p.proto != IPPROTO_TCP)
		return true;
	if (parse_tcp(&c, &th) != PARSE_OK)
		return true;
	hdrs = (__u32)(c.pos - (void *)(long)skb->data);
	if (skb->len > hdrs)
		return true;
	return p.l4_len != FL_LEN_UNKNOWN && p.l4_len > (__u32)th->doff * 4;
}

/* An unmarked TCP socket whose local port is one the server listens on, with a marked
 * listener on that port and address in the packet's network namespace: a connection
 * the listener accepted, created before the listener was marked (it waited in the
 * accept queue at the agent's first scan, and was accepted after it). Marked now. Only
 * asked once the lease ran out (before, its packets pass either way). */
static __always_inline bool accepted_late(struct __sk_buff *skb, struct bpf_sock *sk)
{
	struct bpf_sock_tuple t = {};
	__u32 port = sk->src_port, mark = FL_LEASE_MARK, *kind;
	struct bpf_sock *ls;
	bool srv;

	if (sk->protocol != IPPROTO_TCP)
		return false;
	kind = bpf_map_lookup_elem(&fl_lease_ports, &port);
	if (!kind || *kind != FL_LEASE_PORT_SERVER)
		return false;
	/* No remote address: only a listener matches, never this connection itself. */
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		t.ipv4.daddr = sk->src_ip4;
		t.ipv4.dport = bpf_htons(port);
		ls = bpf_sk_lookup_tcp(skb, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	} else {
		t.ipv6.daddr[0] = sk->src_ip6[0];
		t.ipv6.daddr[1] = sk->src_ip6[1];
		t.ipv6.daddr[2] = sk->src_ip6[2];
		t.ipv6.daddr[3] = sk->src_ip6[3];
		t.ipv6.dport = bpf_htons(port);
		ls = bpf_sk_lookup_tcp(skb, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
	}
	if (!ls)
		return false;
	srv = ls->state == BPF_TCP_LISTEN && bpf_sk_storage_get(&fl_lease_srv, ls, 0, 0);
	bpf_sk_release(ls);
	if (!srv)
		return false;
	bpf_sk_storage_get(&fl_lease_srv, sk, &mark, BPF_SK_STORAGE_GET_F_CREATE);
	return true;
}

/* Returns 1 (let through) or 0 (drop), as cgroup_skb programs do. */
SEC("cgroup_skb/egress")
int fl_lease_egress(struct __sk_buff *skb)
{
	struct fl_lease_state *l;
	struct bpf_sock *sk;
	__u32 zero = 0;
	__u64 cookie;

	/* A request or time-wait socket (SYN-ACK, RST) is not a full one: no data. */
	sk = skb->sk;
	if (!sk)
		return 1;
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return 1;
	if (!bpf_sk_storage_get(&fl_lease_srv, sk, 0, 0)) {
		l = bpf_map_lookup_elem(&fl_lease, &zero);
		if (!l || !l->port || bpf_ktime_get_ns() < l->deadline_ns ||
		    !accepted_late(skb, sk))
			return 1;
	}
	l = bpf_map_lookup_elem(&fl_lease, &zero);
	if (!l || !l->port || (sk->protocol == IPPROTO_TCP && !carries_data(skb)))
		return 1;
	if (bpf_ktime_get_ns() < l->deadline_ns) {
		count(FL_LC_HELD);
		return 1;
	}
	cookie = bpf_get_socket_cookie(skb);
	if (bpf_map_lookup_elem(&fl_lease_ok, &cookie)) {
		count(FL_LC_ALLOWED);
		return 1;
	}
	count(FL_LC_DROPPED);
	return 0;
}

/* carries_data alone, for the crafted-frame tests (tests/integration/lease_prog_test.c,
 * through BPF_PROG_TEST_RUN, whose socket is never a marked TCP one): 1 (passes) for a
 * packet without data, 0 for one with. The "?" keeps it out of the agent's load. */
SEC("?cgroup_skb/egress")
int fl_lease_judge(struct __sk_buff *skb)
{
	return !carries_data(skb);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
