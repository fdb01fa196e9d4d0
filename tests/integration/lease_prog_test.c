// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bpf/lease.bpf.c on crafted frames through bpf_prog_test_run_opts (root: it loads
 * BPF). Each case builds an Ethernet frame carrying a TCP segment of the server (or
 * not), sets the lease and runs the egress program: TC_ACT_SHOT only for data from
 * the server's port past the deadline toward a connection that is not allowed.
 * Driven by tests/integration/test_lease.sh. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_tun.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>
#include "lease_map.h"
#include "lease.skel.h"

#define PORT	      6379
#define CLIENT	      "198.18.0.9"
#define SERVER	      "198.18.0.1"
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_SHOT   2

struct seg {
	bool v6;
	uint16_t sport, dport; /* host order; sport default PORT */
	int payload;	       /* bytes of data after the TCP header */
	uint16_t frag;	       /* IPv4 frag_off, host order */
	uint16_t ethertype;    /* default by v6 */
	uint8_t proto;	       /* default TCP */
	int cut;	       /* if > 0: the frame is cut to this many bytes */
	int doff;	       /* TCP data offset in words, default 5 (ZERO: 0) */
	int ihl;	       /* IPv4 header length in words, default 5 (options: NOPs; ZERO: 0) */
	const char *vlan;      /* VLAN tags after the MAC addresses: 'q' 802.1Q, 'a' 802.1AD */
	const char *ext;       /* IPv6 extension headers in order: 'H' hop-by-hop, 'D'
				* destination options, 'R' routing, 'A' AH, 'F' fragment header
				* of a first fragment (offset 0, M), 'L' of a later one */
	bool len0;	       /* the IP length field 0 (BIG TCP) */
	int version;	       /* if > 0: the IP version field */
};

#define ZERO (-1) /* a doff or ihl of 0, not the default */

static struct fl_lease *skel;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Bytes of an IPv6 extension header of the spec, its next-header value in *type. */
static size_t ext_hdr(uint8_t *pos, char c, uint8_t *type)
{
	switch (c) {
	case 'H':
	case 'D':
	case 'R':
		*type = c == 'H' ? 0 : c == 'D' ? 60 : 43;
		pos[1] = 1; /* (1 + 1) * 8 bytes */
		return 16;
	case 'A':
		*type = 51;
		pos[1] = 4; /* (4 + 2) * 4 bytes: a 12-byte ICV */
		return 24;
	case 'F':
	case 'L':
		*type = 44;
		*(uint16_t *)(pos + 2) = htons(c == 'F' ? 0x0001 : 0x0080);
		return 8;
	}
	fail_msg("unknown extension header '%c'", c);
	return 0;
}

/* Ethernet (+ VLAN tags) + IPv4 (+ NOP options) or IPv6 (+ extension headers) + TCP +
 * payload; the lengths in the IP header say what is there before any cut. */
static size_t build(uint8_t *buf, const struct seg *s)
{
	uint16_t et = s->ethertype ? s->ethertype : s->v6 ? 0x86dd : 0x0800;
	int doff = s->doff == ZERO ? 0 : s->doff ? s->doff : 5;
	int ihl = s->ihl == ZERO ? 0 : s->ihl ? s->ihl : 5;
	int ntag = s->vlan ? (int)strlen(s->vlan) : 0;
	uint8_t *ip = buf + 14 + 4 * ntag, *tcp;
	size_t len;

	memset(buf, 0, 512);
	memcpy(buf, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
	for (int i = 0; i < ntag; i++) {
		uint8_t *tag = buf + 12 + 4 * i;

		tag[0] = s->vlan[i] == 'a' ? 0x88 : 0x81;
		tag[1] = s->vlan[i] == 'a' ? 0xa8 : 0x00;
		tag[3] = 100 + i; /* VLAN id */
	}
	ip[-2] = et >> 8;
	ip[-1] = et & 0xff;
	if (s->v6) {
		uint8_t *nextp = ip + 6, type = 0;

		ip[0] = (s->version ? s->version : 6) << 4;
		ip[7] = 64;
		inet_pton(AF_INET6, "2001:db8::1", ip + 8);
		inet_pton(AF_INET6, "2001:db8::9", ip + 24);
		tcp = ip + 40;
		for (const char *e = s->ext; e && *e; e++) {
			size_t n = ext_hdr(tcp, *e, &type);

			*nextp = type;
			nextp = tcp;
			tcp += n;
		}
		*nextp = s->proto ? s->proto : 6;
		if (!s->len0)
			*(uint16_t *)(ip + 4) = htons((tcp - ip - 40) + 20 + s->payload);
	} else {
		ip[0] = (s->version ? s->version : 4) << 4 | ihl;
		if (!s->len0)
			*(uint16_t *)(ip + 2) = htons(ihl * 4 + 20 + s->payload);
		*(uint16_t *)(ip + 6) = htons(s->frag);
		ip[8] = 64;
		ip[9] = s->proto ? s->proto : 6;
		inet_pton(AF_INET, SERVER, ip + 12);
		inet_pton(AF_INET, CLIENT, ip + 16);
		memset(ip + 20, 1, ihl > 5 ? ihl * 4 - 20 : 0); /* IPOPT_NOOP */
		tcp = ip + (ihl > 5 ? ihl * 4 : 20);
	}
	*(uint16_t *)tcp = htons(s->sport ? s->sport : PORT);
	*(uint16_t *)(tcp + 2) = htons(s->dport ? s->dport : 40000);
	tcp[12] = doff << 4;
	tcp[13] = 0x18; /* PSH ACK */
	memset(tcp + 20, '+', s->payload);
	len = (tcp - buf) + 20 + s->payload;
	assert_true(len <= 512);
	return s->cut ? (size_t)s->cut : len;
}

static int run(const struct seg *s)
{
	uint8_t buf[512];
	LIBBPF_OPTS(bpf_test_run_opts, o);
	int err;

	o.data_in = buf;
	o.data_size_in = build(buf, s);
	o.repeat = 1;
	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.fl_lease_egress), &o);
	/* The kernel refuses a frame without a whole IP header (it pulls one before the
	 * run): such a frame never reaches a tc program either. Anything longer runs. */
	if (err == -EINVAL && o.data_size_in < 14u + (s->v6 ? 40 : 20))
		return TC_ACT_UNSPEC;
	assert_int_equal(err, 0);
	return (int)o.retval;
}

static void set_lease(uint32_t port, int64_t deadline_from_now_ns)
{
	struct fl_lease_state l = {.port = port};
	__u32 zero = 0;

	if (deadline_from_now_ns)
		l.deadline_ns = mono_ns() + deadline_from_now_ns;
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.fl_lease), &zero, &l, BPF_ANY),
			 0);
}

static uint64_t counter(enum fl_lease_counter c)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t v[ncpu > 0 ? ncpu : 1], sum = 0;
	__u32 key = c;

	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.fl_lease_cnt), &key, v), 0);
	for (int i = 0; i < ncpu; i++)
		sum += v[i];
	return sum;
}

static int setup(void **state)
{
	(void)state;
	skel = fl_lease__open_and_load();
	return skel ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	fl_lease__destroy(skel);
	skel = NULL;
	return 0;
}

/* Defaults first, then the case's own fields override them. */
#pragma GCC diagnostic ignored "-Woverride-init"
#define DATA(...) (&(struct seg){.payload = 32, __VA_ARGS__})

/* Port 0: not armed, everything passes, even past any deadline. */
static void test_unarmed_passes(void **state)
{
	(void)state;
	set_lease(0, 0);
	assert_int_equal(run(DATA()), TC_ACT_UNSPEC);
	assert_int_equal(counter(FL_LC_DROPPED), 0);
}

static void test_held_passes(void **state)
{
	uint64_t held = counter(FL_LC_HELD);

	(void)state;
	set_lease(PORT, 1000000000);
	assert_int_equal(run(DATA()), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.v6 = true)), TC_ACT_UNSPEC);
	assert_int_equal(counter(FL_LC_HELD), held + 2);
}

/* Past the deadline: the server's data is dropped, IPv4 and IPv6; a deadline of 0
 * (given up) likewise. */
static void test_lapsed_drops_data(void **state)
{
	uint64_t dropped = counter(FL_LC_DROPPED);

	(void)state;
	set_lease(PORT, -1);
	assert_int_equal(run(DATA()), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.v6 = true)), TC_ACT_SHOT);
	set_lease(PORT, 0);
	assert_int_equal(run(DATA(.payload = 1)), TC_ACT_SHOT);
	/* A first fragment carries the TCP header: judged like any segment. */
	assert_int_equal(run(DATA(.frag = 0x2000)), TC_ACT_SHOT);
	/* A data offset shorter than a TCP header is malformed: treated as data. */
	assert_int_equal(run(DATA(.payload = 0, .doff = 2)), TC_ACT_SHOT);
	assert_int_equal(counter(FL_LC_DROPPED), dropped + 5);
}

/* Without data nothing is acknowledged: handshakes, ACKs, FIN, RST pass. */
static void test_lapsed_passes_no_data(void **state)
{
	(void)state;
	set_lease(PORT, 0);
	assert_int_equal(run(DATA(.payload = 0)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.payload = 0, .v6 = true)), TC_ACT_UNSPEC);
	/* Options (doff 8) and no data: still no data. */
	assert_int_equal(run(DATA(.payload = 12, .doff = 8)), TC_ACT_UNSPEC);
}

/* Not the server's: another source port, UDP, ARP, a later fragment. */
static void test_lapsed_ignores_others(void **state)
{
	(void)state;
	set_lease(PORT, 0);
	assert_int_equal(run(DATA(.sport = 6380)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.sport = 40000, .dport = PORT)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.proto = 17)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.v6 = true, .proto = 17)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.ethertype = 0x0806)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.frag = 0x0010)), TC_ACT_UNSPEC);
}

/* Cut short anywhere: never read past the end, never dropped. */
static void test_truncated(void **state)
{
	(void)state;
	set_lease(PORT, 0);
	for (int cut = 14; cut < 14 + 20 + 20; cut++)
		assert_int_equal(run(DATA(.cut = cut)), TC_ACT_UNSPEC);
	for (int cut = 14; cut < 14 + 40 + 20; cut++)
		assert_int_equal(run(DATA(.cut = cut, .v6 = true)), TC_ACT_UNSPEC);
}

/* An allowed connection (agent, replica, controller) flows without the lease. */
static void test_allowed_flows(void **state)
{
	struct fl_lease_conn k = {.port = htons(40000)};
	uint64_t allowed = counter(FL_LC_ALLOWED);
	__u32 kind = FL_LEASE_ALLOW_REPLICA;

	(void)state;
	k.addr[10] = k.addr[11] = 0xff;
	inet_pton(AF_INET, CLIENT, &k.addr[12]);
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.fl_lease_allow), &k, &kind, BPF_ANY), 0);
	set_lease(PORT, 0);
	assert_int_equal(run(DATA()), TC_ACT_UNSPEC);
	assert_int_equal(counter(FL_LC_ALLOWED), allowed + 1);
	/* Same host, another port: a client, dropped. */
	assert_int_equal(run(DATA(.dport = 40001)), TC_ACT_SHOT);
	inet_pton(AF_INET6, "2001:db8::9", k.addr);
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.fl_lease_allow), &k, &kind, BPF_ANY), 0);
	assert_int_equal(run(DATA(.v6 = true)), TC_ACT_UNSPEC);
	/* Gone again for the cases after this one. */
	assert_int_equal(bpf_map_delete_elem(bpf_map__fd(skel->maps.fl_lease_allow), &k), 0);
	memset(k.addr, 0, sizeof(k.addr));
	k.addr[10] = k.addr[11] = 0xff;
	inet_pton(AF_INET, CLIENT, &k.addr[12]);
	assert_int_equal(bpf_map_delete_elem(bpf_map__fd(skel->maps.fl_lease_allow), &k), 0);
	assert_int_equal(run(DATA()), TC_ACT_SHOT);
}

/* VLAN tags in the data (802.1Q, QinQ with an 802.1AD outer tag): judged as untagged. */
static void test_vlan(void **state)
{
	uint64_t dropped = counter(FL_LC_DROPPED), held = counter(FL_LC_HELD);

	(void)state;
	set_lease(PORT, 0);
	assert_int_equal(run(DATA(.vlan = "q")), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.vlan = "aq")), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.vlan = "qq", .v6 = true)), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.vlan = "a", .v6 = true, .ext = "HD")), TC_ACT_SHOT);
	assert_int_equal(counter(FL_LC_DROPPED), dropped + 4);
	/* No data, another port, not IP: as untagged. */
	assert_int_equal(run(DATA(.vlan = "aq", .payload = 0)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.vlan = "q", .sport = 6380)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.vlan = "q", .ethertype = 0x0806)), TC_ACT_UNSPEC);
	/* A third tag is beyond the parser (FL_MAX_VLAN); nothing sends one. */
	assert_int_equal(run(DATA(.vlan = "aqq")), TC_ACT_UNSPEC);
	/* Cut inside a tag or the IP header behind it. */
	for (int cut = 14; cut < 14 + 8 + 20; cut++)
		assert_int_equal(run(DATA(.vlan = "aq", .cut = cut)), TC_ACT_UNSPEC);
	set_lease(PORT, 1000000000);
	assert_int_equal(run(DATA(.vlan = "aq")), TC_ACT_UNSPEC);
	assert_int_equal(counter(FL_LC_HELD), held + 1);
}

/* IPv6 extension headers (the old parser let every such reply through): the TCP
 * header is found after them and the data measured without them. */
static void test_ipv6_ext(void **state)
{
	uint64_t dropped = counter(FL_LC_DROPPED);

	(void)state;
	set_lease(PORT, 0);
	assert_int_equal(run(DATA(.v6 = true, .ext = "HDF")), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.v6 = true, .ext = "HRAD")), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.v6 = true, .ext = "F", .payload = 1)), TC_ACT_SHOT);
	/* FL_IPV6_MAX_EXT (8) of them: still judged. */
	assert_int_equal(run(DATA(.v6 = true, .ext = "HDDDDDDD")), TC_ACT_SHOT);
	assert_int_equal(counter(FL_LC_DROPPED), dropped + 4);
	/* No data after them (the headers' bytes are not data), options and no data. */
	assert_int_equal(run(DATA(.v6 = true, .ext = "HDF", .payload = 0)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.v6 = true, .ext = "HRAD", .payload = 0)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.v6 = true, .ext = "D", .payload = 12, .doff = 8)),
			 TC_ACT_UNSPEC);
	/* Another port or protocol after them. */
	assert_int_equal(run(DATA(.v6 = true, .ext = "HDF", .sport = 6380)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.v6 = true, .ext = "HD", .proto = 17)), TC_ACT_UNSPEC);
	/* A later fragment has no TCP header; its first fragment was judged. */
	assert_int_equal(run(DATA(.v6 = true, .ext = "HL")), TC_ACT_UNSPEC);
	/* Past the bound the TCP header is not looked for: no host sends nine. */
	assert_int_equal(run(DATA(.v6 = true, .ext = "HDDDDDDDD")), TC_ACT_UNSPEC);
	/* Held: passes. */
	set_lease(PORT, 1000000000);
	assert_int_equal(run(DATA(.v6 = true, .ext = "HDF")), TC_ACT_UNSPEC);
}

/* IPv4 options: the TCP header is found through IHL. IHL below 5, a version that is not
 * the EtherType's: no receiver takes such a packet, nothing to judge. */
static void test_ipv4_header(void **state)
{
	(void)state;
	set_lease(PORT, 0);
	assert_int_equal(run(DATA(.ihl = 6)), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.ihl = 15)), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.ihl = 15, .payload = 0)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.ihl = 15, .sport = 6380)), TC_ACT_UNSPEC);
	for (int ihl = 1; ihl < 5; ihl++)
		assert_int_equal(run(DATA(.ihl = ihl)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.ihl = ZERO)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.version = 6)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.v6 = true, .version = 4)), TC_ACT_UNSPEC);
	/* Options cut short by the frame's end. */
	for (int cut = 14 + 20; cut < 14 + 60; cut++)
		assert_int_equal(run(DATA(.ihl = 15, .cut = cut)), TC_ACT_UNSPEC);
}

/* IPv4 fragments: the first (MF, offset 0) carries the TCP header and is judged; later
 * ones (an offset, with or without MF) carry none. */
static void test_ipv4_fragments(void **state)
{
	(void)state;
	set_lease(PORT, 0);
	assert_int_equal(run(DATA(.frag = 0x2000)), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.frag = 0x2000, .ihl = 8)), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.frag = 0x2000, .payload = 0)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.frag = 0x4000)), TC_ACT_SHOT); /* DF alone: not a fragment */
	assert_int_equal(run(DATA(.frag = 0x0001)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.frag = 0x2010)), TC_ACT_UNSPEC);
	assert_int_equal(run(DATA(.frag = 0x1fff)), TC_ACT_UNSPEC);
}

/* Cut short at every layer after Ethernet: a packet without its whole IP and TCP header
 * reaches no receiver's TCP, so it acknowledges nothing and passes; once the fixed TCP
 * header is there (the port is known), a segment whose options are cut is judged. */
static void test_truncated_layers(void **state)
{
	(void)state;
	set_lease(PORT, 0);
	/* In an IPv6 extension header (each byte of hop-by-hop, fragment, AH) and in the
	 * TCP header behind them. */
	for (int cut = 14 + 40; cut < 14 + 40 + 16 + 8 + 24 + 20; cut++)
		assert_int_equal(run(DATA(.v6 = true, .ext = "HFA", .cut = cut)), TC_ACT_UNSPEC);
	/* Behind IPv4 options. */
	for (int cut = 14 + 24; cut < 14 + 24 + 20; cut++)
		assert_int_equal(run(DATA(.ihl = 6, .cut = cut)), TC_ACT_UNSPEC);
	/* TCP options cut: the ports are there, the lengths say data. */
	assert_int_equal(run(DATA(.doff = 15, .payload = 64, .cut = 14 + 20 + 20)), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.doff = 8, .cut = 14 + 20 + 30)), TC_ACT_SHOT);
	assert_int_equal(
	    run(DATA(.v6 = true, .ext = "D", .doff = 15, .payload = 64, .cut = 14 + 40 + 16 + 20)),
	    TC_ACT_SHOT);
	/* ... and no data: passes as before. */
	assert_int_equal(run(DATA(.doff = 15, .payload = 40, .cut = 14 + 20 + 20)), TC_ACT_UNSPEC);
	/* A data offset below 5 is malformed: treated as data, with or without payload. */
	for (int doff = 1; doff < 5; doff++) {
		assert_int_equal(run(DATA(.doff = doff, .payload = 0)), TC_ACT_SHOT);
		assert_int_equal(run(DATA(.doff = doff, .v6 = true, .ext = "H")), TC_ACT_SHOT);
	}
	assert_int_equal(run(DATA(.doff = ZERO, .payload = 0)), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.doff = ZERO, .vlan = "q", .v6 = true)), TC_ACT_SHOT);
}

/* BIG TCP: above 64 KiB the kernel leaves the IP length field 0 (IPv4 total length,
 * IPv6 payload length); such a segment is all data. */
static void test_big_tcp(void **state)
{
	(void)state;
	set_lease(PORT, 0);
	assert_int_equal(run(DATA(.len0 = true)), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.len0 = true, .v6 = true)), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.len0 = true, .v6 = true, .ext = "H")), TC_ACT_SHOT);
	assert_int_equal(run(DATA(.len0 = true, .sport = 6380)), TC_ACT_UNSPEC);
}

/* ---- Real packets on an L3 device (no Ethernet header): judged by their socket ---- */

#define TUN_SELF	 "10.200.0.1"
#define TUN_PEER	 "10.200.0.2"
#define TUN_PORT	 6390
#define TUN_PEER_PORT	 40000
#define BPF_TCX_EGRESS_T 47 /* BPF_TCX_EGRESS (Linux 6.6), which older headers lack */

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* Writes a bare TCP segment of the peer into the tun device: the host receives it. */
static void tun_send(int fd, uint32_t seq, uint32_t ack, uint8_t flags)
{
	uint8_t p[40] = {0x45}, *tcp = p + 20;
	uint32_t sum;

	*(uint16_t *)(p + 2) = htons(40);
	p[8] = 64;
	p[9] = 6;
	inet_pton(AF_INET, TUN_PEER, p + 12);
	inet_pton(AF_INET, TUN_SELF, p + 16);
	*(uint16_t *)(p + 10) = fold(sum16(p, 20, 0));
	*(uint16_t *)tcp = htons(TUN_PEER_PORT);
	*(uint16_t *)(tcp + 2) = htons(TUN_PORT);
	*(uint32_t *)(tcp + 4) = htonl(seq);
	*(uint32_t *)(tcp + 8) = htonl(ack);
	tcp[12] = 5 << 4;
	tcp[13] = flags;
	*(uint16_t *)(tcp + 14) = htons(65535);
	sum = sum16(p + 12, 8, 6 + 20); /* pseudo header: addresses, protocol, length */
	*(uint16_t *)(tcp + 16) = fold(sum16(tcp, 20, sum));
	assert_int_equal(write(fd, p, sizeof(p)), (ssize_t)sizeof(p));
}

/* The next IPv4 TCP segment the host sends into the tun device within ms; its TCP
 * payload length in *data, its flags, or -1 if none came. */
static int tun_recv(int fd, int ms, uint8_t *buf, size_t cap, int *data)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	ssize_t n;

	while (poll(&pfd, 1, ms) == 1) {
		n = read(fd, buf, cap);
		if (n < 40 || buf[0] != 0x45 || buf[9] != 6)
			continue;
		*data = (int)n - 20 - (buf[32] >> 4) * 4;
		return buf[33];
	}
	return -1;
}

/* On a tun device the program sees no Ethernet header: the parser finds no TCP, and the
 * sending socket tells the server's segments. Held: they leave; lapsed: dropped; toward an
 * allowed connection: they leave. The old program let every one through. */
static void test_l3_device_by_socket(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(TUN_PORT)};
	struct fl_lease_conn k = {.port = htons(TUN_PEER_PORT)};
	uint64_t dropped = counter(FL_LC_DROPPED), allowed = counter(FL_LC_ALLOWED);
	struct ifreq ifr = {.ifr_flags = IFF_TUN | IFF_NO_PI};
	int tun, lsn, conn, one = 1, link, flags, data, got;
	__u32 kind = FL_LEASE_ALLOW_AGENT;
	uint32_t srv_seq;
	uint8_t buf[2048];

	(void)state;
	/* A network namespace of our own (the process keeps it: this case runs last). */
	assert_int_equal(unshare(CLONE_NEWNET), 0);
	tun = open("/dev/net/tun", O_RDWR);
	assert_true(tun >= 0);
	strcpy(ifr.ifr_name, "fltun0");
	assert_int_equal(ioctl(tun, TUNSETIFF, &ifr), 0);
	assert_int_equal(system("ip link set lo up && ip addr add " TUN_SELF "/24 dev fltun0 && "
				"ip link set fltun0 up"),
			 0);
	link = bpf_link_create(bpf_program__fd(skel->progs.fl_lease_egress),
			       (int)if_nametoindex("fltun0"),
			       (enum bpf_attach_type)BPF_TCX_EGRESS_T, NULL);
	assert_true(link >= 0);
	lsn = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lsn >= 0);
	setsockopt(lsn, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	inet_pton(AF_INET, TUN_SELF, &a.sin_addr);
	assert_int_equal(bind(lsn, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lsn, 4), 0);

	/* Held: the handshake and a reply pass. */
	set_lease(TUN_PORT, 10000000000);
	tun_send(tun, 1000, 0, 0x02); /* SYN */
	flags = tun_recv(tun, 1000, buf, sizeof(buf), &data);
	assert_int_equal(flags, 0x12); /* SYN ACK */
	srv_seq = ntohl(*(uint32_t *)(buf + 24));
	tun_send(tun, 1001, srv_seq + 1, 0x10);
	conn = accept(lsn, NULL, NULL);
	assert_true(conn >= 0);
	assert_int_equal(send(conn, "+held\r\n", 7, 0), 7);
	got = tun_recv(tun, 1000, buf, sizeof(buf), &data);
	assert_true(got >= 0 && data == 7);
	tun_send(tun, 1001, srv_seq + 1 + 7, 0x10);

	/* Lapsed: the reply (and its retransmissions) never leave. */
	set_lease(TUN_PORT, 0);
	assert_int_equal(send(conn, "+lapsed\r\n", 9, 0), 9);
	got = tun_recv(tun, 700, buf, sizeof(buf), &data);
	assert_true(got < 0 || data == 0);
	assert_true(counter(FL_LC_DROPPED) > dropped);

	/* Allowed, by the socket's far end: a retransmission of it leaves. */
	k.addr[10] = k.addr[11] = 0xff;
	inet_pton(AF_INET, TUN_PEER, &k.addr[12]);
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.fl_lease_allow), &k, &kind, BPF_ANY), 0);
	do
		got = tun_recv(tun, 3000, buf, sizeof(buf), &data);
	while (got >= 0 && data == 0);
	assert_true(got >= 0 && data == 9);
	assert_true(counter(FL_LC_ALLOWED) > allowed);
	close(conn);
	close(lsn);
	close(link);
	close(tun);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unarmed_passes),
	    cmocka_unit_test(test_held_passes),
	    cmocka_unit_test(test_lapsed_drops_data),
	    cmocka_unit_test(test_lapsed_passes_no_data),
	    cmocka_unit_test(test_lapsed_ignores_others),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_allowed_flows),
	    cmocka_unit_test(test_vlan),
	    cmocka_unit_test(test_ipv6_ext),
	    cmocka_unit_test(test_ipv4_header),
	    cmocka_unit_test(test_ipv4_fragments),
	    cmocka_unit_test(test_truncated_layers),
	    cmocka_unit_test(test_big_tcp),
	    cmocka_unit_test(test_l3_device_by_socket),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
