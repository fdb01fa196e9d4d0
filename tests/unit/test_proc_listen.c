// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kern/proc_listen.c: the listening sockets of a /proc/net/tcp table, and whether a
 * pid (a server's INFO process_id) is the process listening on its port, or which
 * process of a nested pid namespace is, on this kernel's real /proc. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "common/caps.h"
#include "kern/proc_listen.h"

/* /proc/net/tcp as Linux 6.x prints it: a listener on 6379 (0x18EB) on all
 * addresses, one on 127.0.0.1:6380, a connection to 6379 (state 01), a header. */
static const char tcp_table[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode\n"
    "   0: 00000000:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000   "
    "0        0 41234 1 0000000000000000 100 0 0 10 0\n"
    "   1: 0100007F:18EC 00000000:0000 0A 00000000:00000000 00:00000000 00000000   "
    "0        0 41235 1 0000000000000000 100 0 0 10 0\n"
    "   2: 0100007F:18EB 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000   "
    "0        0 41299 1 0000000000000000 20 4 30 10 -1\n"
    "garbage line\n";

static void test_table(void **state)
{
	unsigned long ino[4];

	(void)state;
	assert_int_equal(proc_listen_inodes(tcp_table, strlen(tcp_table), 6379, ino, 4), 1);
	assert_int_equal(ino[0], 41234);
	assert_int_equal(proc_listen_inodes(tcp_table, strlen(tcp_table), 6380, ino, 4), 1);
	assert_int_equal(ino[0], 41235);
	assert_int_equal(proc_listen_inodes(tcp_table, strlen(tcp_table), 6381, ino, 4), 0);
	/* a table cut mid-line and an empty one */
	assert_int_equal(proc_listen_inodes(tcp_table, 100, 6379, ino, 4), 0);
	assert_int_equal(proc_listen_inodes("", 0, 6379, ino, 4), 0);
}

static int listener(uint16_t *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static const char *comm_self(char comm[16])
{
	FILE *f = fopen("/proc/self/comm", "r");

	assert_non_null(f);
	assert_non_null(fgets(comm, 16, f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	return comm;
}

/* This process listens on its port; a child forked before (holding no socket) does
 * not: the pid a containerised server would report for another process. */
static void test_real_pids(void **state)
{
	char why[256], comm[16];
	struct proc_server s = {.uptime_s = -1, .comm = ""};
	uint16_t port;
	pid_t child;
	int fd, st;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		pause();
		_exit(0);
	}
	fd = listener(&port);
	assert_int_equal(proc_pid_listens(getpid(), port), 1);
	assert_int_equal(proc_pid_listens(child, port), 0);
	s.pid = getpid();
	s.tcp_port = port;
	assert_int_equal(proc_server_find(&s, why, sizeof(why)), getpid());
	assert_string_equal(why, "");
	s.comm = comm_self(comm);
	assert_int_equal(proc_server_find(&s, why, sizeof(why)), getpid());
	s.pid = child;
	assert_int_equal(proc_server_find(&s, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "not listening on tcp_port"));
	assert_non_null(strstr(why, "no process of another pid namespace"));
	/* no port to check by: its comm and start time */
	s.tcp_port = 0;
	assert_int_equal(proc_server_find(&s, why, sizeof(why)), child);
	s.pid = 1;
	s.comm = "no-such-server";
	assert_int_equal(proc_server_find(&s, why, sizeof(why)), 0);
	assert_non_null(strstr(why, ", not no-such-server"));
	s.pid = child;
	s.tcp_port = port;
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	assert_int_equal(proc_server_find(&s, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "not a process on this host"));
	close(fd);
	assert_int_equal(proc_pid_listens(getpid(), port), 0);
}

/* What a process without capabilities finds for s (run in a child): the pid, or -1. */
static pid_t find_without_caps(const struct proc_server *s)
{
	int p[2], st;
	pid_t c, found = -1;
	char why[256];

	assert_int_equal(pipe(p), 0);
	c = fork();
	assert_true(c >= 0);
	if (!c) {
		pid_t r = -1;

		close(p[0]);
		if (!caps_keep(0))
			r = proc_server_find(s, why, sizeof(why));
		if (write(p[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &found, sizeof(found)), sizeof(found));
	close(p[0]);
	waitpid(c, &st, 0);
	return found;
}

/* A server in a new pid namespace (pid 1 there, as in a container): it reports 1,
 * and here it is another pid; this host's pid 1 is not it. Found by its descriptors,
 * and without a capability to read them, by what anyone reads of it. */
static void test_other_pid_namespace(void **state)
{
	int to_port[2], to_pid[2], st;
	char why[256], comm[16];
	struct proc_server s = {.pid = 1, .uptime_s = 0};
	uint16_t port = 0, port2;
	pid_t outer, inner = 0;
	int fd2;

	(void)state;
	assert_int_equal(pipe(to_port), 0);
	assert_int_equal(pipe(to_pid), 0);
	outer = fork();
	assert_true(outer >= 0);
	if (!outer) {
		pid_t in;

		if (unshare(CLONE_NEWPID))
			_exit(77);
		in = fork();
		if (!in) {
			int fd = listener(&port);

			if (getpid() != 1 || write(to_port[1], &port, sizeof(port)) != sizeof(port))
				_exit(1);
			pause();
			close(fd);
			_exit(0);
		}
		if (in < 0 || write(to_pid[1], &in, sizeof(in)) != sizeof(in))
			_exit(1);
		waitpid(in, &st, 0);
		_exit(0);
	}
	close(to_port[1]);
	close(to_pid[1]);
	if (read(to_pid[0], &inner, sizeof(inner)) != sizeof(inner)) {
		waitpid(outer, &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
			skip(); /* no CLONE_NEWPID: not root */
		fail_msg("no pid from the new pid namespace");
	}
	assert_int_equal(read(to_port[0], &port, sizeof(port)), sizeof(port));
	close(to_port[0]);
	close(to_pid[0]);
	assert_true(inner > 1);
	s.tcp_port = port;
	s.comm = comm_self(comm);
	assert_int_equal(proc_server_find(&s, why, sizeof(why)), inner);
	assert_non_null(strstr(why, "own pid namespace"));
	assert_int_equal(find_without_caps(&s), inner);
	/* Said to have started an hour ago: not the one that started now. */
	s.uptime_s = 3600;
	assert_int_equal(find_without_caps(&s), inner); /* one alike: by port and comm */
	/* A host process (this one, with more capabilities than the looker): its
	 * descriptors are not readable, its comm and listener are. */
	fd2 = listener(&port2);
	s.pid = getpid();
	s.tcp_port = port2;
	s.uptime_s = -1;
	assert_int_equal(find_without_caps(&s), getpid());
	s.comm = "no-such-server";
	assert_int_equal(find_without_caps(&s), 0);
	close(fd2);
	kill(inner, SIGKILL);
	waitpid(outer, &st, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_real_pids),
	    cmocka_unit_test(test_other_pid_namespace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
