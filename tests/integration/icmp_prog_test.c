// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bpf/icmp.bpf.c on crafted frames through bpf_prog_test_run_opts (root: it loads
 * BPF). Each case builds an Ethernet frame, runs the egress or ingress program on it
 * and checks the peer's statistics and the ignore counters. Driven by
 * tests/integration/test_peer.sh. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>
#include "icmp_event.h"
#include "icmp.skel.h"
#include "agent/prober.h"
#include "kern/icmp_watch.h"

#define ECHO_ID	      0x1234
#define PEER	      "198.18.0.2"
#define SELF	      "198.18.0.1"
#define TC_ACT_UNSPEC (-1)

struct frame_spec {
	const char *src, *dst;
	int ihl;       /* 5 without options */
	uint16_t frag; /* frag_off, host order */
	uint8_t proto; /* default ICMP */
	uint8_t type, code;
	uint16_t id, seq;
	int ip_cut;   /* if > 0: only this many bytes of the IP header */
	int icmp_cut; /* if > 0: only this many bytes of the ICMP header */
	uint16_t ethertype;
	uint16_t tot_len; /* if > 0: the IPv4 total length field */
	uint8_t fill;	  /* every byte of the 16-byte echo data (the probe's random bytes) */
	int data_cut;	  /* if > 0: only this many bytes of the echo data */
};

static struct fl_icmp *skel;

/* Ethernet + IPv4 (+ NOP options) + ICMP echo header + 16 bytes of payload. */
static size_t build(uint8_t *buf, const struct frame_spec *f)
{
	int ihl = f->ihl ? f->ihl : 5, hlen = ihl * 4;
	uint8_t *ip = buf + 14, *icmp = ip + hlen;
	size_t icmp_len = 8 + 16, len;
	uint32_t a;

	memset(buf, 0, 256);
	memcpy(buf, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
	buf[12] = (f->ethertype ? f->ethertype : 0x0800) >> 8;
	buf[13] = (f->ethertype ? f->ethertype : 0x0800) & 0xff;
	ip[0] = 0x40 | (ihl & 0xf);
	*(uint16_t *)(ip + 2) = htons((ihl < 5 ? 20 : hlen) + icmp_len);
	if (f->tot_len)
		*(uint16_t *)(ip + 2) = htons(f->tot_len);
	*(uint16_t *)(ip + 6) = htons(f->frag);
	ip[8] = 64;
	ip[9] = f->proto ? f->proto : IPPROTO_ICMP;
	inet_pton(AF_INET, f->src ? f->src : PEER, &a);
	memcpy(ip + 12, &a, 4);
	inet_pton(AF_INET, f->dst ? f->dst : SELF, &a);
	memcpy(ip + 16, &a, 4);
	for (int i = 20; i < hlen; i++)
		ip[i] = 1; /* IPOPT_NOOP */
	*(uint16_t *)(ip + 10) = probe_csum16(ip, hlen < 20 ? 20 : hlen);
	if (ihl < 5)
		icmp = ip + 20;
	icmp[0] = f->type;
	icmp[1] = f->code;
	*(uint16_t *)(icmp + 4) = htons(f->id);
	*(uint16_t *)(icmp + 6) = htons(f->seq);
	memset(icmp + 8, f->fill, 16);
	*(uint16_t *)(icmp + 2) = probe_csum16(icmp, icmp_len);
	len = (icmp - buf) + icmp_len;
	if (f->data_cut)
		len = (icmp - buf) + 8 + f->data_cut;
	if (f->ip_cut)
		len = 14 + f->ip_cut;
	else if (f->icmp_cut)
		len = (icmp - buf) + f->icmp_cut;
	return len;
}

/* Runs prog on the len bytes of a frame at buf (IPv4 or IPv6); the kernel's own
 * refusal (-EINVAL) is returned when may_refuse, any other failure fails the test. */
static int run_buf(struct bpf_program *prog, uint8_t *buf, size_t len, bool may_refuse)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	int err;

	o.data_in = buf;
	o.data_size_in = len;
	o.repeat = 1;
	err = bpf_prog_test_run_opts(bpf_program__fd(prog), &o);
	if (may_refuse && err == -EINVAL)
		return err;
	assert_int_equal(err, 0);
	/* Monitoring only: never decide a packet's fate. */
	assert_int_equal((int)o.retval, TC_ACT_UNSPEC);
	return 0;
}

static int run_frame(struct bpf_program *prog, const struct frame_spec *f, bool may_refuse)
{
	uint8_t buf[256];

	return run_buf(prog, buf, build(buf, f), may_refuse);
}

static int run(struct bpf_program *prog, const struct frame_spec *f)
{
	return run_frame(prog, f, false);
}

static void egress(const struct frame_spec *f)
{
	run(skel->progs.fl_icmp_egress, f);
}

static void ingress(const struct frame_spec *f)
{
	run(skel->progs.fl_icmp_ingress, f);
}

/* An IPv4 or IPv6 address as a fl_peers key, as the agent makes it. */
static struct fl_peer_key peer_key(const char *addr)
{
	struct fl_peer_key k;

	assert_int_equal(icmp_watch_key_parse(addr, &k), 0);
	return k;
}

/* The peer's row in fl_peers (it must have one). */
static struct fl_peer_stats stats_of(const char *addr)
{
	struct fl_peer_key k = peer_key(addr);
	struct fl_peer_stats st;

	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.fl_peers), &k, &st), 0);
	return st;
}

static struct fl_peer_stats stats(void)
{
	return stats_of(PEER);
}

/* A row for the peer at addr, zeroed, as icmp_watch_add_peer() makes it. */
static int add_peer(const char *addr)
{
	struct fl_peer_key k = peer_key(addr);
	struct fl_peer_stats zero = {};

	return bpf_map_update_elem(bpf_map__fd(skel->maps.fl_peers), &k, &zero, BPF_NOEXIST);
}

static uint64_t counter(enum fl_icmp_counter c)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t v[ncpu > 0 ? ncpu : 1], sum = 0;
	__u32 key = c;

	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.fl_icmp_cnt), &key, v), 0);
	for (int i = 0; i < ncpu; i++)
		sum += v[i];
	return sum;
}

static int setup(void **state)
{
	(void)state;
	skel = fl_icmp__open();
	if (!skel)
		return -1;
	skel->rodata->targ_echo_id = ECHO_ID;
	if (fl_icmp__load(skel))
		return -1;
	return add_peer(PEER);
}

static int teardown(void **state)
{
	(void)state;
	fl_icmp__destroy(skel);
	skel = NULL;
	return 0;
}

/* Defaults first, then the case's own fields override them. */
#pragma GCC diagnostic ignored "-Woverride-init"
#define REQ(...)                                                                                   \
	((struct frame_spec){.src = SELF, .dst = PEER, .type = 8, .id = ECHO_ID, __VA_ARGS__})
#define REPLY(...)                                                                                 \
	((struct frame_spec){.src = PEER, .dst = SELF, .type = 0, .id = ECHO_ID, __VA_ARGS__})

static void test_request_reply(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress(&REQ(.seq = 1));
	st = stats();
	assert_int_equal(st.sent, 1);
	assert_true(st.last_tx_ns > 0);
	assert_int_equal(st.replied, 0);
	usleep(2000);
	ingress(&REPLY(.seq = 1));
	st = stats();
	assert_int_equal(st.replied, 1);
	assert_int_equal(st.rx_packets, 1);
	assert_int_equal(st.last_seq, 1);
	assert_true(st.last_reply_ns >= st.last_tx_ns + 2000000);
	assert_int_equal(st.last_rx_ns, st.last_reply_ns);
	assert_true(st.rtt_last_ns >= 2000000 && st.rtt_last_ns < 1000000000);
	assert_int_equal(st.rtt_min_ns, st.rtt_last_ns);
	assert_int_equal(st.rtt_max_ns, st.rtt_last_ns);
	assert_int_equal(st.rtt_srtt_ns, st.rtt_last_ns);
	/* The same reply again (a duplicate) matches nothing now. */
	ingress(&REPLY(.seq = 1));
	st = stats();
	assert_int_equal(st.replied, 1);
	assert_int_equal(st.unmatched, 1);
	assert_int_equal(counter(FL_IC_UNMATCHED), 1);
	/* A second round: min/max/srtt follow. */
	egress(&REQ(.seq = 2));
	ingress(&REPLY(.seq = 2));
	st = stats();
	assert_int_equal(st.sent, 2);
	assert_int_equal(st.replied, 2);
	assert_true(st.rtt_min_ns <= st.rtt_last_ns && st.rtt_max_ns >= 2000000);
	assert_true(st.rtt_srtt_ns < st.rtt_max_ns && st.rtt_srtt_ns > st.rtt_min_ns);
}

static void test_truncated_ip(void **state)
{
	struct fl_peer_stats before, after;
	int ran = 0;

	(void)state;
	before = stats();
	/* Shorter than 20 bytes: Linux 6.x refuses such an IPv4 frame in test runs
	 * (the real path may still hand one to tc), so it counts only where it ran. */
	ran += !run_frame(skel->progs.fl_icmp_ingress, &REPLY(.seq = 7, .ip_cut = 19), true);
	ran += !run_frame(skel->progs.fl_icmp_ingress, &REPLY(.seq = 7, .ip_cut = 1), true);
	run_frame(skel->progs.fl_icmp_egress, &REQ(.seq = 7, .ip_cut = 10), true);
	/* 20 bytes there, but IHL says 24 (options cut off), or the total length is
	 * shorter than the header. */
	ingress(&REPLY(.seq = 7, .ihl = 6, .ip_cut = 20));
	ingress(&REPLY(.seq = 7, .ihl = 15, .ip_cut = 59));
	egress(&REQ(.seq = 7, .ihl = 6, .ip_cut = 20));
	ingress(&REPLY(.seq = 7, .tot_len = 19));
	after = stats();
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(counter(FL_IC_MALFORMED), 3 + ran); /* egress does not count */
}

static void test_ihl_below_5(void **state)
{
	struct fl_peer_stats before, after;

	(void)state;
	egress(&REQ(.seq = 8, .ihl = 4));
	egress(&REQ(.seq = 9));
	before = stats();
	assert_int_equal(before.sent, 1);
	ingress(&REPLY(.seq = 9, .ihl = 4));
	ingress(&REPLY(.seq = 9, .ihl = 1));
	after = stats();
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(counter(FL_IC_MALFORMED), 2);
}

/* The ICMP header is found after the options, through IHL. */
static void test_ip_options(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress(&REQ(.seq = 10, .ihl = 6));
	ingress(&REPLY(.seq = 10, .ihl = 15));
	st = stats();
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.replied, 1);
	assert_int_equal(st.last_seq, 10);
	/* Options that claim more than the frame holds. */
	ingress(&REPLY(.seq = 10, .ihl = 15, .ip_cut = 40));
	assert_int_equal(stats().rx_packets, 1);
	assert_int_equal(counter(FL_IC_MALFORMED), 1);
}

/* A fragment proves the peer alive but is never parsed as ICMP. */
static void test_fragments(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress(&REQ(.seq = 11, .frag = 0x2000)); /* first fragment, MF */
	assert_int_equal(stats().sent, 0);
	egress(&REQ(.seq = 11));
	ingress(&REPLY(.seq = 11, .frag = 0x2000));
	ingress(&REPLY(.seq = 11, .frag = 0x0010)); /* offset 128, last */
	st = stats();
	assert_int_equal(st.replied, 0);
	assert_int_equal(st.rx_packets, 2);
	assert_true(st.last_rx_ns > 0);
	assert_int_equal(st.last_reply_ns, 0);
	assert_int_equal(counter(FL_IC_FRAGMENT), 2);
	/* The unfragmented reply still matches. */
	ingress(&REPLY(.seq = 11));
	assert_int_equal(stats().replied, 1);
}

static void test_other_icmp_types(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress(&REQ(.seq = 12));
	ingress(&REPLY(.seq = 12, .type = 3, .code = 1)); /* host unreachable */
	ingress(&REPLY(.seq = 12, .type = 8));		  /* the peer pinging us */
	ingress(&REPLY(.seq = 12, .type = 0, .code = 1)); /* a reply with a bogus code */
	egress(&REQ(.seq = 13, .type = 0));		  /* we answering the peer */
	egress(&REQ(.seq = 14, .type = 13));		  /* timestamp request */
	st = stats();
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.replied, 0);
	assert_int_equal(st.rx_packets, 3);
	assert_int_equal(counter(FL_IC_OTHER), 3);
	/* UDP from the peer: liveness, nothing else. */
	ingress(&REPLY(.seq = 12, .proto = 17));
	st = stats();
	assert_int_equal(st.rx_packets, 4);
	assert_int_equal(st.replied, 0);
}

static void test_unknown_host(void **state)
{
	struct fl_peer_key k = peer_key("198.18.0.99");
	struct fl_peer_stats before, after, st;

	(void)state;
	before = stats();
	egress(&REQ(.seq = 15, .dst = "198.18.0.99"));
	ingress(&REPLY(.seq = 15, .src = "198.18.0.99"));
	ingress(&REPLY(.seq = 15, .src = "198.18.0.99", .type = 3));
	after = stats();
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.fl_peers), &k, &st), -ENOENT);
	for (int c = 0; c < FL_IC_MAX; c++)
		assert_int_equal(counter(c), 0);
}

static void test_foreign_id(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress(&REQ(.seq = 16, .id = 0x9999)); /* someone's ping to the peer */
	assert_int_equal(stats().sent, 0);
	egress(&REQ(.seq = 16));
	ingress(&REPLY(.seq = 16, .id = 0x9999));
	st = stats();
	assert_int_equal(st.replied, 0);
	assert_int_equal(st.unmatched, 0);
	assert_int_equal(st.rx_packets, 1);
	assert_int_equal(counter(FL_IC_FOREIGN), 1);
	ingress(&REPLY(.seq = 16));
	assert_int_equal(stats().replied, 1);
}

static void test_truncated_icmp(void **state)
{
	(void)state;
	egress(&REQ(.seq = 17, .icmp_cut = 4));
	assert_int_equal(stats().sent, 0);
	egress(&REQ(.seq = 17));
	ingress(&REPLY(.seq = 17, .icmp_cut = 7));
	assert_int_equal(stats().replied, 0);
	assert_int_equal(stats().rx_packets, 1);
	assert_int_equal(counter(FL_IC_TRUNCATED), 1);
}

/* ARP is not IP: ignored, not counted. IPv4 bytes under the IPv6 EtherType are a
 * malformed IPv6 packet: counted (ingress), nothing else. */
static void test_not_ip(void **state)
{
	struct fl_peer_stats before, after;

	(void)state;
	before = stats();
	ingress(&REPLY(.seq = 18, .ethertype = 0x0806)); /* ARP */
	egress(&REQ(.seq = 18, .ethertype = 0x0806));
	for (int c = 0; c < FL_IC_MAX; c++)
		assert_int_equal(counter(c), 0);
	ingress(&REPLY(.seq = 18, .ethertype = 0x86dd));
	egress(&REQ(.seq = 18, .ethertype = 0x86dd));
	after = stats();
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(counter(FL_IC_MALFORMED), 1);
	for (int c = 1; c < FL_IC_MAX; c++)
		assert_int_equal(counter(c), 0);
}

/* A reply counts only when it echoes the request's data (the prober's random bytes): one
 * forged with the right id and seq but other data, or cut short, matches nothing and
 * leaves the request in flight for the true reply. */
static void test_forged_payload(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress(&REQ(.seq = 30, .fill = 0xa5));
	ingress(&REPLY(.seq = 30, .fill = 0x5a));		  /* other bytes */
	ingress(&REPLY(.seq = 30, .fill = 0xa5, .data_cut = 15)); /* one byte short */
	ingress(&REPLY(.seq = 30, .fill = 0xa5, .data_cut = 1));
	st = stats();
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.replied, 0);
	assert_int_equal(st.last_reply_ns, 0);
	assert_int_equal(st.rx_packets, 3); /* alive, never reachable */
	assert_int_equal(counter(FL_IC_FORGED), 3);
	assert_int_equal(counter(FL_IC_UNMATCHED), 0);
	/* The true reply still matches. */
	ingress(&REPLY(.seq = 30, .fill = 0xa5));
	st = stats();
	assert_int_equal(st.replied, 1);
	assert_int_equal(st.last_seq, 30);
	/* A request without its 16 bytes of data is no probe of ours: not in flight. */
	egress(&REQ(.seq = 31, .data_cut = 8));
	assert_int_equal(stats().sent, 1);
	ingress(&REPLY(.seq = 31, .data_cut = 8));
	assert_int_equal(stats().replied, 1);
	assert_int_equal(counter(FL_IC_UNMATCHED), 1);
}

/* ---- IPv6 ---- */

#define PEER6	"fd00:f1::2"
#define SELF6	"fd00:f1::1"
#define MAX_EXT 12

struct ext_spec {
	uint8_t set;  /* 1: there is this header (the list ends at the first 0) */
	uint8_t type; /* 0 hop-by-hop, 43 routing, 44 fragment, 51 AH, 60 dest. options */
	uint8_t len;  /* the header's length field */
};

struct frame6_spec {
	const char *src, *dst;
	struct ext_spec ext[MAX_EXT];
	int next; /* if > 0 the upper protocol; default ICMPv6 (58) */
	uint8_t type, code;
	uint16_t id, seq;
	int cut;       /* if > 0: the frame is cut to this many bytes */
	int version;   /* if > 0: the IP version field */
	uint16_t frag; /* a fragment header's offset/flags field, host order */
	uint8_t fill;  /* every byte of the 16-byte echo data */
};

/* Ethernet + IPv6 + the extension headers (each its length's worth of PadN-like
 * zero bytes) + ICMPv6 echo header + 16 bytes of payload. The ICMPv6 checksum is
 * left 0: the programs do not check it (the stack does, later). */
static size_t build6(uint8_t *buf, const struct frame6_spec *f, size_t cap)
{
	uint8_t *ip = buf + 14, *pos = ip + 40, *nextp = ip + 6;
	size_t len;

	memset(buf, 0, cap);
	memcpy(buf, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x86\xdd", 14);
	ip[0] = (f->version ? f->version : 6) << 4;
	ip[7] = 64;
	inet_pton(AF_INET6, f->src ? f->src : PEER6, ip + 8);
	inet_pton(AF_INET6, f->dst ? f->dst : SELF6, ip + 24);
	for (int i = 0; i < MAX_EXT && f->ext[i].set; i++) {
		const struct ext_spec *e = &f->ext[i];
		size_t elen = e->type == 51   ? (e->len + 2) * 4u
			      : e->type == 44 ? 8u
					      : (e->len + 1) * 8u;

		assert_true(pos + elen + 8 + 16 <= buf + cap);
		*nextp = e->type;
		nextp = pos;
		pos[1] = e->type == 44 ? 0 : e->len;
		if (e->type == 44)
			*(uint16_t *)(pos + 2) = htons(f->frag);
		pos += elen;
	}
	*nextp = f->next > 0 ? f->next : 58;
	pos[0] = f->type;
	pos[1] = f->code;
	*(uint16_t *)(pos + 4) = htons(f->id);
	*(uint16_t *)(pos + 6) = htons(f->seq);
	memset(pos + 8, f->fill, 16);
	pos += 8 + 16;
	*(uint16_t *)(ip + 4) = htons(pos - ip - 40);
	len = pos - buf;
	if (f->cut > 0 && (size_t)f->cut < len)
		len = f->cut;
	assert_true(len <= cap);
	return len;
}

static int run6_frame(struct bpf_program *prog, const struct frame6_spec *f, bool may_refuse)
{
	uint8_t buf[4096];

	return run_buf(prog, buf, build6(buf, f, sizeof(buf)), may_refuse);
}

static void egress6(const struct frame6_spec *f)
{
	run6_frame(skel->progs.fl_icmp_egress, f, false);
}

static void ingress6(const struct frame6_spec *f)
{
	run6_frame(skel->progs.fl_icmp_ingress, f, false);
}

static struct fl_peer_stats stats6(void)
{
	return stats_of(PEER6);
}

/* Both an IPv4 and an IPv6 peer in the one table. */
static int setup6(void **state)
{
	if (setup(state))
		return -1;
	return add_peer(PEER6);
}

#define REQ6(...)                                                                                  \
	((struct frame6_spec){.src = SELF6, .dst = PEER6, .type = 128, .id = ECHO_ID, __VA_ARGS__})
#define REPLY6(...)                                                                                \
	((struct frame6_spec){.src = PEER6, .dst = SELF6, .type = 129, .id = ECHO_ID, __VA_ARGS__})
#define HOP(l)                                                                                     \
	{                                                                                          \
		1, 0, (l)                                                                          \
	}
#define DOPT(l)                                                                                    \
	{                                                                                          \
		1, 60, (l)                                                                         \
	}
#define RTG(l)                                                                                     \
	{                                                                                          \
		1, 43, (l)                                                                         \
	}
#define AUTH(l)                                                                                    \
	{                                                                                          \
		1, 51, (l)                                                                         \
	}
#define FRAG                                                                                       \
	{                                                                                          \
		1, 44, 0                                                                           \
	}

static void test6_request_reply(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress6(&REQ6(.seq = 1));
	st = stats6();
	assert_int_equal(st.sent, 1);
	assert_true(st.last_tx_ns > 0);
	usleep(2000);
	ingress6(&REPLY6(.seq = 1));
	st = stats6();
	assert_int_equal(st.replied, 1);
	assert_int_equal(st.rx_packets, 1);
	assert_int_equal(st.last_seq, 1);
	assert_true(st.rtt_last_ns >= 2000000 && st.rtt_last_ns < 1000000000);
	assert_int_equal(st.last_rx_ns, st.last_reply_ns);
	/* A duplicate matches nothing. */
	ingress6(&REPLY6(.seq = 1));
	assert_int_equal(stats6().unmatched, 1);
	assert_int_equal(counter(FL_IC_UNMATCHED), 1);
	/* The IPv4 peer's entry is untouched. */
	assert_int_equal(stats().sent, 0);
	assert_int_equal(stats().rx_packets, 0);
}

static void test6_forged_payload(void **state)
{
	(void)state;
	egress6(&REQ6(.seq = 5, .fill = 0x11));
	ingress6(&REPLY6(.seq = 5, .fill = 0x12));
	ingress6(&REPLY6(.seq = 5, .ext = {HOP(0)}, .fill = 0x10));
	assert_int_equal(stats6().replied, 0);
	assert_int_equal(counter(FL_IC_FORGED), 2);
	ingress6(&REPLY6(.seq = 5, .ext = {DOPT(1)}, .fill = 0x11));
	assert_int_equal(stats6().replied, 1);
}

/* Requests and replies of one family never match the other's, whatever the bytes. */
static void test6_families_apart(void **state)
{
	(void)state;
	egress(&REQ(.seq = 3));
	ingress6(&REPLY6(.seq = 3));
	assert_int_equal(stats6().replied, 0);
	assert_int_equal(stats6().unmatched, 1);
	egress6(&REQ6(.seq = 4));
	ingress(&REPLY(.seq = 4));
	assert_int_equal(stats().replied, 0);
	assert_int_equal(stats().unmatched, 1);
	/* An ICMP (v4) echo type inside IPv6 is not an echo: 0 and 8 mean nothing in ICMPv6. */
	ingress6(&REPLY6(.seq = 4, .type = 0));
	assert_int_equal(stats6().replied, 0);
	assert_int_equal(counter(FL_IC_OTHER), 1);
}

/* The echo is found after hop-by-hop, routing, destination options and AH headers. */
static void test6_ext_headers(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress6(&REQ6(.seq = 5, .ext = {HOP(0), DOPT(2)}));
	ingress6(&REPLY6(.seq = 5, .ext = {HOP(1), RTG(2), AUTH(4), DOPT(0)}));
	st = stats6();
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.replied, 1);
	assert_int_equal(st.last_seq, 5);
	/* Exactly FL_IPV6_MAX_EXT of them: still parsed. */
	egress6(&REQ6(.seq = 6, .ext = {DOPT(0), DOPT(0), DOPT(0), DOPT(0), DOPT(0), DOPT(0),
					DOPT(0), DOPT(0)}));
	ingress6(&REPLY6(.seq = 6, .ext = {HOP(0), DOPT(0), RTG(0), DOPT(0), AUTH(1), DOPT(0),
					   DOPT(0), DOPT(0)}));
	st = stats6();
	assert_int_equal(st.sent, 2);
	assert_int_equal(st.replied, 2);
	for (int c = 0; c < FL_IC_MAX; c++)
		assert_int_equal(counter(c), 0);
}

/* One more than the bound: liveness only, counted, never an unbounded walk. */
static void test6_ext_limit(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress6(&REQ6(.seq = 7));
	egress6(&REQ6(.seq = 8, .ext = {DOPT(0), DOPT(0), DOPT(0), DOPT(0), DOPT(0), DOPT(0),
					DOPT(0), DOPT(0), DOPT(0)}));
	assert_int_equal(stats6().sent, 1);
	ingress6(&REPLY6(.seq = 7, .ext = {DOPT(0), DOPT(0), DOPT(0), DOPT(0), DOPT(0), DOPT(0),
					   DOPT(0), DOPT(0), DOPT(0)}));
	ingress6(&REPLY6(.seq = 7, .ext = {HOP(0), HOP(0), HOP(0), HOP(0), HOP(0), HOP(0), HOP(0),
					   HOP(0), HOP(0), HOP(0), HOP(0), HOP(0)}));
	st = stats6();
	assert_int_equal(st.replied, 0);
	assert_int_equal(st.rx_packets, 2);
	assert_int_equal(counter(FL_IC_EXT_LIMIT), 2);
	ingress6(&REPLY6(.seq = 7));
	assert_int_equal(stats6().replied, 1);
}

/* Chains cut short: an extension header that runs past the frame, one whose first
 * two bytes are missing, the ICMPv6 header cut after an extension header. */
static void test6_ext_truncated(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress6(&REQ6(.seq = 9));
	/* Hop-by-hop claiming 2048 bytes in a short frame: the echo is past the end. */
	ingress6(&REPLY6(.seq = 9, .ext = {HOP(255)}, .cut = 14 + 40 + 64));
	/* Two extension headers, the frame ends inside the first. */
	ingress6(&REPLY6(.seq = 9, .ext = {DOPT(1), RTG(0)}, .cut = 14 + 40 + 9));
	/* The frame ends right after the fixed header, which names an extension. */
	ingress6(&REPLY6(.seq = 9, .ext = {HOP(0)}, .cut = 14 + 40));
	/* The ICMPv6 header cut to 7 bytes after two extension headers. */
	ingress6(&REPLY6(.seq = 9, .ext = {HOP(0), DOPT(0)}, .cut = 14 + 40 + 16 + 7));
	egress6(&REQ6(.seq = 10, .ext = {HOP(0), DOPT(0)}, .cut = 14 + 40 + 16 + 7));
	egress6(&REQ6(.seq = 10, .ext = {HOP(200)}, .cut = 14 + 40 + 8));
	st = stats6();
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.replied, 0);
	assert_int_equal(st.rx_packets, 4);
	assert_int_equal(counter(FL_IC_TRUNCATED), 4);
	assert_int_equal(counter(FL_IC_MALFORMED), 0);
	ingress6(&REPLY6(.seq = 9));
	assert_int_equal(stats6().replied, 1);
}

/* The fixed header itself bad: not counted as the peer's (the source is not known). */
static void test6_malformed(void **state)
{
	struct fl_peer_stats before, after;
	int ran = 0;

	(void)state;
	before = stats6();
	ingress6(&REPLY6(.seq = 11, .version = 4));
	ingress6(&REPLY6(.seq = 11, .version = 15));
	egress6(&REQ6(.seq = 11, .version = 4));
	/* Shorter than 40 bytes: the kernel may refuse it in a test run. */
	ran += !run6_frame(skel->progs.fl_icmp_ingress, &REPLY6(.seq = 11, .cut = 14 + 39), true);
	ran += !run6_frame(skel->progs.fl_icmp_ingress, &REPLY6(.seq = 11, .cut = 14 + 1), true);
	after = stats6();
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(counter(FL_IC_MALFORMED), 2 + ran);
}

/* A fragment header anywhere in the chain: liveness, never parsed as ICMPv6. */
static void test6_fragments(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress6(&REQ6(.seq = 12, .ext = {FRAG}, .frag = 0x0001)); /* first, M */
	assert_int_equal(stats6().sent, 0);
	egress6(&REQ6(.seq = 12));
	ingress6(&REPLY6(.seq = 12, .ext = {FRAG}, .frag = 0x0001));
	ingress6(&REPLY6(.seq = 12, .ext = {HOP(0), FRAG}, .frag = 0x0080));
	st = stats6();
	assert_int_equal(st.replied, 0);
	assert_int_equal(st.rx_packets, 2);
	assert_int_equal(counter(FL_IC_FRAGMENT), 2);
	ingress6(&REPLY6(.seq = 12));
	assert_int_equal(stats6().replied, 1);
}

/* Other ICMPv6 (neighbour solicitation, the peer's own echo request, a reply with a
 * bogus code, someone else's echo id) and other protocols: liveness only. */
static void test6_other(void **state)
{
	struct fl_peer_stats st;

	(void)state;
	egress6(&REQ6(.seq = 13));
	ingress6(&REPLY6(.seq = 13, .type = 135));
	ingress6(&REPLY6(.seq = 13, .type = 128));
	ingress6(&REPLY6(.seq = 13, .code = 1));
	ingress6(&REPLY6(.seq = 13, .id = 0x9999));
	ingress6(&REPLY6(.seq = 13, .next = 17)); /* UDP */
	ingress6(&REPLY6(.seq = 13, .next = 59)); /* no next header */
	egress6(&REQ6(.seq = 14, .type = 129));	  /* we answering the peer */
	egress6(&REQ6(.seq = 14, .id = 0x9999));  /* someone's ping to the peer */
	egress6(&REQ6(.seq = 14, .dst = "fd00:f1::99"));
	ingress6(&REPLY6(.seq = 13, .src = "fd00:f1::99"));
	st = stats6();
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.replied, 0);
	assert_int_equal(st.rx_packets, 6);
	assert_int_equal(counter(FL_IC_OTHER), 3);
	assert_int_equal(counter(FL_IC_FOREIGN), 1);
	ingress6(&REPLY6(.seq = 13));
	assert_int_equal(stats6().replied, 1);
}

/* Inserts VLAN tags ('q' 802.1Q, 'a' 802.1AD) after the MAC addresses of the len-byte
 * frame at buf; its new length. */
static size_t add_tags(uint8_t *buf, size_t len, const char *vlan)
{
	size_t n = strlen(vlan);

	memmove(buf + 12 + 4 * n, buf + 12, len - 12);
	for (size_t i = 0; i < n; i++) {
		uint8_t *tag = buf + 12 + 4 * i;

		tag[0] = vlan[i] == 'a' ? 0x88 : 0x81;
		tag[1] = vlan[i] == 'a' ? 0xa8 : 0x00;
		tag[2] = 0;
		tag[3] = 100 + i; /* VLAN id */
	}
	return len + 4 * n;
}

static void tagged(struct bpf_program *prog, const struct frame_spec *f, const char *vlan)
{
	uint8_t buf[256];

	run_buf(prog, buf, add_tags(buf, build(buf, f), vlan), false);
}

static void tagged6(struct bpf_program *prog, const struct frame6_spec *f, const char *vlan)
{
	uint8_t buf[4096];

	run_buf(prog, buf, add_tags(buf, build6(buf, f, sizeof(buf) - 16), vlan), false);
}

/* VLAN tags in the data (802.1Q; QinQ: 802.1AD, then 802.1Q) are walked: timed as if
 * untagged. A third tag is beyond the parser, a tag cut short is nothing: neither
 * gives even liveness. */
static void test_vlan(void **state)
{
	uint8_t buf[256];
	struct fl_peer_stats st;

	(void)state;
	tagged(skel->progs.fl_icmp_egress, &REQ(.seq = 20), "q");
	tagged(skel->progs.fl_icmp_ingress, &REPLY(.seq = 20, .ihl = 6), "aq");
	tagged6(skel->progs.fl_icmp_egress, &REQ6(.seq = 21), "a");
	tagged6(skel->progs.fl_icmp_ingress, &REPLY6(.seq = 21, .ext = {HOP(0)}), "qq");
	st = stats();
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.replied, 1);
	assert_int_equal(st.last_seq, 20);
	st = stats6();
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.replied, 1);
	assert_int_equal(st.last_seq, 21);
	tagged(skel->progs.fl_icmp_ingress, &REPLY(.seq = 22), "aqq");
	/* Cut after 14 + 4 + 2 bytes: the MAC header, the first tag and half the second. */
	add_tags(buf, build(buf, &REPLY(.seq = 22)), "aq");
	run_buf(skel->progs.fl_icmp_ingress, buf, 14 + 4 + 2, false);
	assert_int_equal(stats().rx_packets, 1);
	for (int c = 0; c < FL_IC_MAX; c++)
		assert_int_equal(counter(c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_request_reply, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_truncated_ip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ihl_below_5, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ip_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fragments, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_other_icmp_types, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unknown_host, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_id, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_truncated_icmp, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_ip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_forged_payload, setup, teardown),
	    cmocka_unit_test_setup_teardown(test6_request_reply, setup6, teardown),
	    cmocka_unit_test_setup_teardown(test6_forged_payload, setup6, teardown),
	    cmocka_unit_test_setup_teardown(test6_families_apart, setup6, teardown),
	    cmocka_unit_test_setup_teardown(test6_ext_headers, setup6, teardown),
	    cmocka_unit_test_setup_teardown(test6_ext_limit, setup6, teardown),
	    cmocka_unit_test_setup_teardown(test6_ext_truncated, setup6, teardown),
	    cmocka_unit_test_setup_teardown(test6_malformed, setup6, teardown),
	    cmocka_unit_test_setup_teardown(test6_fragments, setup6, teardown),
	    cmocka_unit_test_setup_teardown(test6_other, setup6, teardown),
	    cmocka_unit_test_setup_teardown(test_vlan, setup6, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
