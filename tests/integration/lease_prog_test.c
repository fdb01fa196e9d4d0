// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bpf/lease.bpf.c on crafted frames through bpf_prog_test_run_opts (root: it loads
 * BPF). Each case builds an Ethernet frame carrying a TCP segment of the server (or
 * not), sets the lease and runs the egress program: TC_ACT_SHOT only for data from
 * the server's port past the deadline toward a connection that is not allowed.
 * Driven by tests/integration/test_lease.sh. */
#include <errno.h>
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
	int doff;	       /* TCP data offset in words, default 5 */
};

static struct fl_lease *skel;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static size_t build(uint8_t *buf, const struct seg *s)
{
	uint16_t et = s->ethertype ? s->ethertype : s->v6 ? 0x86dd : 0x0800;
	int doff = s->doff ? s->doff : 5;
	uint8_t *ip = buf + 14, *tcp;
	size_t len;

	memset(buf, 0, 512);
	memcpy(buf, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
	buf[12] = et >> 8;
	buf[13] = et & 0xff;
	if (s->v6) {
		ip[0] = 0x60;
		*(uint16_t *)(ip + 4) = htons(20 + s->payload);
		ip[6] = s->proto ? s->proto : 6;
		ip[7] = 64;
		inet_pton(AF_INET6, "2001:db8::1", ip + 8);
		inet_pton(AF_INET6, "2001:db8::9", ip + 24);
		tcp = ip + 40;
	} else {
		ip[0] = 0x45;
		*(uint16_t *)(ip + 2) = htons(20 + 20 + s->payload);
		*(uint16_t *)(ip + 6) = htons(s->frag);
		ip[8] = 64;
		ip[9] = s->proto ? s->proto : 6;
		inet_pton(AF_INET, SERVER, ip + 12);
		inet_pton(AF_INET, CLIENT, ip + 16);
		tcp = ip + 20;
	}
	*(uint16_t *)tcp = htons(s->sport ? s->sport : PORT);
	*(uint16_t *)(tcp + 2) = htons(s->dport ? s->dport : 40000);
	tcp[12] = doff << 4;
	tcp[13] = 0x18; /* PSH ACK */
	memset(tcp + 20, '+', s->payload);
	len = (tcp - buf) + 20 + s->payload;
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
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
