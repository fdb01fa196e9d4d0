// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bpf/lease.bpf.c on real sockets (root: it loads BPF). The programs are attached to a
 * cgroup of this test's own, the test process moved into it, in a network namespace of
 * its own: each case makes a "server" socket (marked by the bind hooks, by port or by
 * process, or by hand through the map, as the agent's scan does), connects a client to
 * it over loopback, sets the lease and sends: a reply reaches the client only under the
 * lease or from an allowed socket (by cookie). Driven by tests/integration/test_lease.sh. */
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
	skel = fl_lease__open_and_load();
	if (!skel)
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
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
