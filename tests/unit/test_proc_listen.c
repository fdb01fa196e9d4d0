// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kern/proc_listen.c: the listening sockets of a /proc/net/tcp table, and whether a
 * pid (a server's INFO process_id) is the process listening on its port, on this
 * kernel's real /proc. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>
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

/* This process listens on its port; a child forked before (holding no socket) does
 * not: the pid a containerised server would report for another process. */
static void test_real_pids(void **state)
{
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
	assert_null(proc_server_pid(getpid(), port));
	assert_int_equal(proc_pid_listens(child, port), 0);
	assert_non_null(strstr(proc_server_pid(child, port), "does not listen on its tcp_port"));
	/* no port to check by: taken on trust; no such process: refused */
	assert_null(proc_server_pid(child, 0));
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	assert_non_null(strstr(proc_server_pid(child, port), "not a process on this host"));
	close(fd);
	assert_int_equal(proc_pid_listens(getpid(), port), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_real_pids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
