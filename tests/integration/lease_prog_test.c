// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bpf/lease.bpf.c on real sockets (root: it loads BPF). The programs are attached to a
 * cgroup of this test's own, the test process moved into it, in a network namespace of
 * its own: each case makes a "server" socket (marked by the bind hooks, by port or by
 * process, or by hand through the map, as the agent's scan does), connects a client to
 * it over loopback, sets the lease and sends: a reply reaches the client only under the
 * lease or from an allowed socket (by cookie). The data test itself (fl_lease_judge, the
 * function the egress program asks) runs on crafted frames through
 * bpf_prog_test_run_opts: IPv4 options, IPv6 extension headers, fragments, truncated
 * headers. Driven by tests/integration/test_lease.sh. */
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
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>
#include "lease_map.h"
#include "lease.skel.h"
#include "kern/lease_watch.h"
#include "kern/loader.h"

#define PORT		  16379 /* the "server's" port in fl_lease_ports */
#define TLS_PORT	  16380 /* another port of the server (its process marks it) */
#define OTHER_PORT	  16381 /* another process's */
#define SO_NETNS_COOKIE_T 71
#define EPH_LO		  32768 /* the ephemeral range the test tells the bind hooks */
#define EPH_HI		  60999
#define EPH_PORT	  40001 /* in it: a connection the server makes, never a listener */

static struct fl_lease *skel;
static struct bpf_link *links[3];
static char cg_path[160];

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
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

/* The bind hooks: this namespace, tgid, and the ports. */
static void set_server(uint32_t tgid, bool this_netns)
{
	struct fl_lease_cfg cfg = {.tgid = tgid, .eph_lo = EPH_LO, .eph_hi = EPH_HI};
	socklen_t len = sizeof(cfg.netns_cookie);
	__u32 zero = 0, port = PORT, one = 1;
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(s >= 0);
	assert_int_equal(getsockopt(s, SOL_SOCKET, SO_NETNS_COOKIE_T, &cfg.netns_cookie, &len), 0);
	close(s);
	if (!this_netns)
		cfg.netns_cookie++;
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.fl_lease_cfg), &zero, &cfg, BPF_ANY), 0);
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.fl_lease_ports), &port, &one, BPF_ANY), 0);
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

/* A connection to a listener on port (IPv6 when v6): *srv the server's end. */
struct conn {
	int lsn, srv, cli;
};

static void conn_open(struct conn *c, uint16_t port, bool v6)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int one = 1;

	if (v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	}
	c->lsn = socket(ss.ss_family, SOCK_STREAM, 0);
	assert_true(c->lsn >= 0);
	setsockopt(c->lsn, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(c->lsn, (struct sockaddr *)&ss, len), 0);
	assert_int_equal(listen(c->lsn, 1024), 0);
	c->cli = socket(ss.ss_family, SOCK_STREAM, 0);
	assert_true(c->cli >= 0);
	assert_int_equal(connect(c->cli, (struct sockaddr *)&ss, len), 0);
	c->srv = accept(c->lsn, NULL, NULL);
	assert_true(c->srv >= 0);
}

static void conn_close(struct conn *c)
{
	close(c->cli);
	close(c->srv);
	close(c->lsn);
}

/* Bytes the client receives within ms after the server sends n. */
static int reply(int from, int to, int ms)
{
	static const char msg[] = "+OK\r\n";
	struct pollfd p = {.fd = to, .events = POLLIN};
	char buf[64];

	assert_int_equal(send(from, msg, 5, 0), 5);
	if (poll(&p, 1, ms) != 1)
		return 0;
	return (int)recv(to, buf, sizeof(buf), MSG_DONTWAIT);
}

static char cg_root[96] = "/sys/fs/cgroup";

/* The cgroup v2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host). */
static void find_cg_root(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024], mnt[96];

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, " - cgroup2 ") && sscanf(line, "%*s %*s %*s %*s %95s", mnt) == 1) {
			snprintf(cg_root, sizeof(cg_root), "%s", mnt);
			break;
		}
	if (f)
		fclose(f);
}

static int setup(void **state)
{
	char procs[200], pid[32];
	int cg, fd;

	(void)state;
	if (unshare(CLONE_NEWNET) || system("ip link set lo up"))
		return -1;
	find_cg_root();
	snprintf(cg_path, sizeof(cg_path), "%s/fl-lease-test-%d", cg_root, (int)getpid());
	if (mkdir(cg_path, 0755) && errno != EEXIST)
		return -1;
	skel = fl_lease__open();
	if (!skel)
		return -1;
	/* The judge is not the agent's to load: the test loads it (and the verifier
	 * checks it with the rest). */
	if (bpf_program__set_autoload(skel->progs.fl_lease_judge, true) || fl_lease__load(skel))
		return -1;
	cg = open(cg_path, O_RDONLY | O_DIRECTORY);
	if (cg < 0)
		return -1;
	links[0] = bpf_program__attach_cgroup(skel->progs.fl_lease_egress, cg);
	links[1] = bpf_program__attach_cgroup(skel->progs.fl_lease_bind4, cg);
	links[2] = bpf_program__attach_cgroup(skel->progs.fl_lease_bind6, cg);
	close(cg);
	for (int i = 0; i < 3; i++)
		if (!links[i])
			return -1;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg_path);
	fd = open(procs, O_WRONLY);
	if (fd < 0)
		return -1;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (write(fd, pid, strlen(pid)) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	char parent[160], pid[32];
	int fd;

	(void)state;
	snprintf(parent, sizeof(parent), "%s/cgroup.procs", cg_root);
	fd = open(parent, O_WRONLY);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (fd >= 0) {
		if (write(fd, pid, strlen(pid)) < 0)
			fprintf(stderr, "failed to leave %s\n", cg_path);
		close(fd);
	}
	for (int i = 0; i < 3; i++)
		bpf_link__destroy(links[i]);
	fl_lease__destroy(skel);
	rmdir(cg_path);
	return 0;
}

/* Port 0 in fl_lease: not armed, everything passes, even past any deadline. */
static void test_unarmed_passes(void **state)
{
	struct conn c;

	(void)state;
	set_server(1, true);
	set_lease(0, 0);
	conn_open(&c, PORT, false);
	assert_int_equal(reply(c.srv, c.cli, 1000), 5);
	conn_close(&c);
	assert_int_equal(counter(FL_LC_DROPPED), 0);
}

/* Held: the server's replies leave, IPv4 and IPv6; lapsed: dropped, and their
 * retransmissions too; the client's requests (an unmarked socket) always pass. */
static void test_held_then_lapsed(void **state)
{
	uint64_t held = counter(FL_LC_HELD), dropped = counter(FL_LC_DROPPED);
	struct conn c4, c6;

	(void)state;
	set_server(1, true);
	set_lease(PORT, 10000000000);
	conn_open(&c4, PORT, false);
	conn_open(&c6, PORT, true);
	assert_int_equal(reply(c4.srv, c4.cli, 1000), 5);
	assert_int_equal(reply(c6.srv, c6.cli, 1000), 5);
	assert_true(counter(FL_LC_HELD) >= held + 2);
	set_lease(PORT, -1);
	assert_int_equal(reply(c4.srv, c4.cli, 500), 0);
	assert_int_equal(reply(c6.srv, c6.cli, 500), 0);
	assert_true(counter(FL_LC_DROPPED) >= dropped + 2);
	/* Requests of the client (not the server's socket) flow. */
	assert_int_equal(reply(c4.cli, c4.srv, 1000), 5);
	/* A deadline of 0 (given up) likewise drops. */
	set_lease(PORT, 0);
	assert_int_equal(reply(c4.srv, c4.cli, 300), 0);
	conn_close(&c4);
	conn_close(&c6);
}

/* Handshakes, ACKs and FIN carry no reply: a connection is accepted and closed past the
 * deadline (the client sees the end of the stream), with nothing dropped. */
static void test_lapsed_passes_no_data(void **state)
{
	uint64_t dropped = counter(FL_LC_DROPPED);
	struct pollfd p;
	struct conn c;
	char b;

	(void)state;
	set_server(1, true);
	set_lease(PORT, 0);
	conn_open(&c, PORT, false);
	close(c.srv);
	p = (struct pollfd){.fd = c.cli, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 1000), 1);
	assert_int_equal(recv(c.cli, &b, 1, MSG_DONTWAIT), 0);
	assert_int_equal(counter(FL_LC_DROPPED), dropped);
	close(c.cli);
	close(c.lsn);
}

/* Another port of the server (a tls-port, a second listener): marked because its
 * process bound it; another process's socket on a port not listed is not marked. */
static void test_server_process_marked(void **state)
{
	struct conn c;

	(void)state;
	set_lease(PORT, 0);
	set_server((uint32_t)getpid(), true);
	conn_open(&c, TLS_PORT, false);
	assert_int_equal(reply(c.srv, c.cli, 500), 0);
	conn_close(&c);
	/* Bound by the server's process to an ephemeral port: a connection it makes (a
	 * replica's link to its primary), not marked. */
	conn_open(&c, EPH_PORT, false);
	assert_int_equal(reply(c.srv, c.cli, 1000), 5);
	conn_close(&c);
	set_server(1, true); /* the server is another process: ours is not it */
	conn_open(&c, OTHER_PORT, true);
	assert_int_equal(reply(c.srv, c.cli, 1000), 5);
	conn_close(&c);
	/* The server's port, but bound in another network namespace: not marked. */
	set_server((uint32_t)getpid(), false);
	conn_open(&c, PORT, false);
	assert_int_equal(reply(c.srv, c.cli, 1000), 5);
	conn_close(&c);
}

/* A socket of the server made before the hooks: marked by hand (as the agent's scan
 * does), its accepted connections inherit the mark. */
static void test_marked_by_hand(void **state)
{
	__u32 mark = FL_LEASE_MARK;
	struct conn c;

	(void)state;
	set_server(1, true);
	set_lease(PORT, 0);
	conn_open(&c, OTHER_PORT, false);
	assert_int_equal(reply(c.srv, c.cli, 1000), 5);
	/* The connection itself. */
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.fl_lease_srv), &c.srv, &mark, BPF_ANY), 0);
	assert_int_equal(reply(c.srv, c.cli, 500), 0);
	close(c.cli);
	close(c.srv);
	/* The listener: what it accepts next is the server's. */
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.fl_lease_srv), &c.lsn, &mark, BPF_ANY), 0);
	{
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(OTHER_PORT)};

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		c.cli = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(c.cli, (struct sockaddr *)&a, sizeof(a)), 0);
		c.srv = accept(c.lsn, NULL, NULL);
		assert_true(c.srv >= 0);
	}
	assert_int_equal(reply(c.srv, c.cli, 500), 0);
	conn_close(&c);
}

/* An allowed socket (by cookie) flows without the lease; its neighbour does not. */
static void test_allowed_cookie(void **state)
{
	uint64_t allowed = counter(FL_LC_ALLOWED);
	__u32 kind = FL_LEASE_ALLOW_AGENT;
	socklen_t len = sizeof(__u64);
	struct conn c, d;
	__u64 ck;

	(void)state;
	set_server(1, true);
	set_lease(PORT, 0);
	conn_open(&c, PORT, false);
	assert_int_equal(getsockopt(c.srv, SOL_SOCKET, SO_COOKIE, &ck, &len), 0);
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.fl_lease_ok), &ck, &kind, BPF_ANY), 0);
	assert_int_equal(reply(c.srv, c.cli, 1000), 5);
	assert_true(counter(FL_LC_ALLOWED) > allowed);
	d.lsn = -1;
	{
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(PORT)};

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		d.cli = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(d.cli, (struct sockaddr *)&a, sizeof(a)), 0);
		d.srv = accept(c.lsn, NULL, NULL);
	}
	assert_int_equal(reply(d.srv, d.cli, 500), 0);
	assert_int_equal(bpf_map_delete_elem(bpf_map__fd(skel->maps.fl_lease_ok), &ck), 0);
	assert_int_equal(reply(c.srv, c.cli, 500), 0);
	close(d.cli);
	close(d.srv);
	conn_close(&c);
}

/* A large reply (many segments, GSO on loopback) is dropped whole; under the lease it
 * arrives whole. */
static void test_large_reply(void **state)
{
	static char big[1 << 20];
	struct pollfd p;
	struct conn c;
	ssize_t n, got = 0;
	char buf[65536];

	(void)state;
	set_server(1, true);
	set_lease(PORT, 0);
	conn_open(&c, PORT, false);
	memset(big, '+', sizeof(big));
	n = send(c.srv, big, sizeof(big), MSG_DONTWAIT);
	assert_true(n > 0);
	p = (struct pollfd){.fd = c.cli, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 500), 0);
	set_lease(PORT, 10000000000);
	while (got < n) {
		p = (struct pollfd){.fd = c.cli, .events = POLLIN};
		if (poll(&p, 1, 5000) != 1)
			break;
		got += recv(c.cli, buf, sizeof(buf), 0);
	}
	assert_int_equal(got, n);
	conn_close(&c);
}

#define EXT_END 0xff /* (hop-by-hop is 0) */

/* A crafted packet for the data test: Ethernet, IPv4 (with NOP options) or IPv6 (with
 * extension headers), TCP (with NOP options), data. */
struct seg {
	bool v6;
	int ihl;	    /* IPv4: 5 without options */
	uint16_t frag;	    /* IPv4 frag_off, host order */
	const uint8_t *ext; /* IPv6: the extension headers, in order, ending in EXT_END */
	uint16_t frag6;	    /* IPv6 fragment header's offset and flags, host order */
	uint8_t proto;	    /* default TCP */
	int doff;	    /* default 5 */
	int data;	    /* payload bytes */
	int tcp_cut;	    /* if > 0: the frame ends this many bytes into the TCP header */
	int len_extra;	    /* added to the IP header's length field */
};

static size_t build_seg(uint8_t *buf, const struct seg *f)
{
	int ihl = f->ihl ? f->ihl : 5, doff = f->doff ? f->doff : 5;
	uint8_t *ip = buf + 14, *l4, next = f->proto ? f->proto : IPPROTO_TCP;
	size_t l4_len;

	memset(buf, 0, 512);
	memcpy(buf, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
	buf[12] = f->v6 ? 0x86 : 0x08;
	buf[13] = f->v6 ? 0xdd : 0x00;
	l4_len = doff * 4 + f->data;
	if (!f->v6) {
		ip[0] = 0x40 | ihl;
		*(uint16_t *)(ip + 6) = htons(f->frag);
		ip[8] = 64;
		ip[9] = next;
		memcpy(ip + 12, "\x7f\0\0\x01\x7f\0\0\x01", 8);
		for (int i = 20; i < ihl * 4; i++)
			ip[i] = 1; /* IPOPT_NOOP */
		l4 = ip + ihl * 4;
		*(uint16_t *)(ip + 2) = htons(ihl * 4 + l4_len + f->len_extra);
	} else {
		int n = 0;
		uint8_t *h;

		while (f->ext && f->ext[n] != EXT_END)
			n++;
		ip[0] = 0x60;
		ip[6] = n ? f->ext[0] : next;
		ip[7] = 64;
		ip[23] = 1; /* ::1 */
		ip[39] = 1;
		h = ip + 40;
		for (int i = 0; i < n; i++, h += 8) {
			h[0] = i + 1 < n ? f->ext[i + 1] : next;
			if (f->ext[i] == IPPROTO_FRAGMENT) {
				*(uint16_t *)(h + 2) = htons(f->frag6);
			} else if (f->ext[i] != IPPROTO_ROUTING) {
				h[2] = 1; /* PadN, 4 bytes */
				h[3] = 4;
			}
		}
		l4 = h;
		*(uint16_t *)(ip + 4) = htons((h - (ip + 40)) + l4_len + f->len_extra);
	}
	*(uint16_t *)(l4 + 0) = htons(PORT);
	*(uint16_t *)(l4 + 2) = htons(40000);
	l4[12] = doff << 4;
	l4[13] = 0x10; /* ACK */
	for (int i = 20; i < doff * 4; i++)
		l4[i] = 1; /* TCPOPT_NOP */
	memset(l4 + doff * 4, '+', f->data);
	if (f->tcp_cut)
		return (l4 - buf) + f->tcp_cut;
	return (l4 - buf) + l4_len;
}

/* fl_lease_judge on the frame: 1 (no data: passes past the deadline) or 0 (dropped). */
static int judge(const struct seg *f)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	uint8_t buf[512];

	o.data_in = buf;
	o.data_size_in = build_seg(buf, f);
	o.repeat = 1;
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.fl_lease_judge), &o),
			 0);
	return (int)o.retval;
}

/* IPv4: an ACK passes, with its options (IP and TCP) too; a byte of data, a length
 * field that says more than the headers, a truncated or impossible TCP header, a
 * fragment, another protocol: dropped. */
static void test_judge_ipv4(void **state)
{
	(void)state;
	assert_int_equal(judge(&(struct seg){0}), 1);
	assert_int_equal(judge(&(struct seg){.data = 1}), 0);
	assert_int_equal(judge(&(struct seg){.ihl = 15}), 1);
	assert_int_equal(judge(&(struct seg){.ihl = 15, .data = 1}), 0);
	assert_int_equal(judge(&(struct seg){.doff = 8}), 1); /* timestamps */
	assert_int_equal(judge(&(struct seg){.doff = 8, .data = 1}), 0);
	assert_int_equal(judge(&(struct seg){.len_extra = 1}), 0);
	assert_int_equal(judge(&(struct seg){.tcp_cut = 12}), 0);
	assert_int_equal(judge(&(struct seg){.doff = 8, .tcp_cut = 24}), 0);
	assert_int_equal(judge(&(struct seg){.doff = 4}), 0);
	assert_int_equal(judge(&(struct seg){.frag = 0x2000}), 0); /* MF: the first */
	assert_int_equal(judge(&(struct seg){.frag = 0x0010}), 0); /* a later one */
	assert_int_equal(judge(&(struct seg){.proto = IPPROTO_UDP}), 0);
	assert_int_equal(judge(&(struct seg){.ihl = 4}), 0);
}

/* IPv6: an ACK passes behind hop-by-hop, routing and destination options headers; the
 * same with a byte of data, truncated, behind a fragment header or a chain longer than
 * the parser walks: dropped. */
static void test_judge_ipv6(void **state)
{
	static const uint8_t hrd[] = {IPPROTO_HOPOPTS, IPPROTO_ROUTING, IPPROTO_DSTOPTS, EXT_END};
	static const uint8_t frag[] = {IPPROTO_HOPOPTS, IPPROTO_FRAGMENT, EXT_END};
	static const uint8_t nine[] = {
	    IPPROTO_HOPOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS,
	    IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, IPPROTO_DSTOPTS, EXT_END};

	(void)state;
	assert_int_equal(judge(&(struct seg){.v6 = true}), 1);
	assert_int_equal(judge(&(struct seg){.v6 = true, .data = 1}), 0);
	assert_int_equal(judge(&(struct seg){.v6 = true, .ext = hrd}), 1);
	assert_int_equal(judge(&(struct seg){.v6 = true, .ext = hrd, .doff = 8}), 1);
	assert_int_equal(judge(&(struct seg){.v6 = true, .ext = hrd, .data = 1}), 0);
	assert_int_equal(judge(&(struct seg){.v6 = true, .ext = hrd, .len_extra = 1}), 0);
	assert_int_equal(judge(&(struct seg){.v6 = true, .ext = hrd, .tcp_cut = 19}), 0);
	assert_int_equal(judge(&(struct seg){.v6 = true, .ext = frag, .frag6 = 1}), 0); /* M */
	assert_int_equal(judge(&(struct seg){.v6 = true, .ext = frag, .frag6 = 8}), 0);
	assert_int_equal(judge(&(struct seg){.v6 = true, .ext = nine}), 0);
	assert_int_equal(judge(&(struct seg){.v6 = true, .ext = hrd, .proto = IPPROTO_UDP}), 0);
}

/* FL_PIN_ROOT/<node>, empty once its lease is unpinned. */
static void remove_node_dir(const char *node)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", FL_PIN_ROOT, node);
	assert_int_equal(rmdir(path), 0);
}

/* The port PORT's entry in node's pinned fl_lease_ports (0: none), and its lease's
 * armed port. */
static __u32 pinned_port_kind(const char *node, __u16 port, __u32 *armed)
{
	char path[256];
	__u32 kind = 0, zero = 0;
	struct fl_lease_state l = {0};
	int fd;

	snprintf(path, sizeof(path), "%s/%s/lease/fl_lease_ports", FL_PIN_ROOT, node);
	fd = bpf_obj_get(path);
	assert_true(fd >= 0);
	if (bpf_map_lookup_elem(fd, &port, &kind))
		kind = 0;
	close(fd);
	snprintf(path, sizeof(path), "%s/%s/lease/fl_lease", FL_PIN_ROOT, node);
	fd = bpf_obj_get(path);
	assert_true(fd >= 0);
	assert_int_equal(bpf_map_lookup_elem(fd, &zero, &l), 0);
	close(fd);
	*armed = l.port;
	return kind;
}

/* The agent's open (lease_watch_open, pinned at the root of the hierarchy as the agent
 * does, judged in this test's network namespace only): the first agent of a node writes
 * its server's port to fl_lease_ports whether it arms the lease or opens it disarmed
 * (shadow mode), so that a server that binds it before its pid is known is marked as it
 * binds; a later agent keeps what the first wrote. */
static void test_open_writes_server_port(void **state)
{
	char armed_node[64], parked_node[64];
	struct lease_watch *lw;
	uint32_t tgid;
	__u32 armed;

	(void)state;
	/* Fixed names: a run that failed half-way is cleaned up by the next. */
	snprintf(parked_node, sizeof(parked_node), "fl-open-test-p");
	snprintf(armed_node, sizeof(armed_node), "fl-open-test-a");
	lease_watch_unpin(parked_node);
	lease_watch_unpin(armed_node);
	/* Disarmed (port 0): the server's port written all the same, nothing armed. */
	assert_int_equal(lease_watch_open(&lw, parked_node, 0, PORT), 0);
	assert_true(lease_watch_server_known(lw, &tgid));
	assert_int_equal(tgid, 0);
	lease_watch_close(lw);
	assert_int_equal(pinned_port_kind(parked_node, PORT, &armed), FL_LEASE_PORT_SERVER);
	assert_int_equal(armed, 0);
	/* A later agent (another port said): the first one's kept. */
	assert_int_equal(lease_watch_open(&lw, parked_node, 0, OTHER_PORT), 0);
	lease_watch_close(lw);
	assert_int_equal(pinned_port_kind(parked_node, PORT, &armed), FL_LEASE_PORT_SERVER);
	assert_int_equal(pinned_port_kind(parked_node, OTHER_PORT, &armed), 0);
	/* Armed: written, and armed for it. */
	assert_int_equal(lease_watch_open(&lw, armed_node, PORT, PORT), 0);
	lease_watch_close(lw);
	assert_int_equal(pinned_port_kind(armed_node, PORT, &armed), FL_LEASE_PORT_SERVER);
	assert_int_equal(armed, PORT);
	assert_int_equal(lease_watch_unpin(parked_node), 0);
	assert_int_equal(lease_watch_unpin(armed_node), 0);
	remove_node_dir(parked_node);
	remove_node_dir(armed_node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unarmed_passes),
	    cmocka_unit_test(test_held_then_lapsed),
	    cmocka_unit_test(test_lapsed_passes_no_data),
	    cmocka_unit_test(test_server_process_marked),
	    cmocka_unit_test(test_marked_by_hand),
	    cmocka_unit_test(test_allowed_cookie),
	    cmocka_unit_test(test_large_reply),
	    cmocka_unit_test(test_judge_ipv4),
	    cmocka_unit_test(test_judge_ipv6),
	    cmocka_unit_test(test_open_writes_server_port),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
