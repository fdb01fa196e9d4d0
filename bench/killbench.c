// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* killbench: forks N victims into a cgroup, kills each with SIGKILL and prints
 * "pid kill_realtime_ns" per victim, for bench/detect.sh to join with
 * the agent's event log. With --storm, a second process forks and reaps
 * short-lived unrelated processes (outside the cgroup) the whole time and
 * prints how many it made on stderr.
 *
 * usage: killbench --cgroup PATH [-n N] [--gap-us US] [--storm] */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static long long now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static pid_t start_storm(void)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	signal(SIGTERM, on_term);
	long long n = 0;
	while (!stop) {
		pid_t c = fork();

		if (c == 0)
			_exit(0);
		if (c > 0) {
			waitpid(c, NULL, 0);
			n++;
		}
	}
	fprintf(stderr, "storm: %lld processes\n", n);
	_exit(0);
}

/* A victim: joins the cgroup, tells the parent, waits to be killed. */
static pid_t start_victim(const char *procs)
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(procs, O_WRONLY);

		close(p[0]);
		if (fd < 0 || write(fd, "0", 1) != 1)
			_exit(1);
		close(fd);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &c, 1) != 1) {
		close(p[0]);
		return -1;
	}
	close(p[0]);
	return pid;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"cgroup", required_argument, NULL, 'c'},
	    {"n", required_argument, NULL, 'n'},
	    {"gap-us", required_argument, NULL, 'g'},
	    {"storm", no_argument, NULL, 's'},
	    {},
	};
	const char *cgroup = NULL;
	long n = 1000, gap_us = 3000;
	int storm = 0, c;
	pid_t storm_pid = 0;
	char procs[4096];

	while ((c = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cgroup = optarg;
			break;
		case 'n':
			n = atol(optarg);
			break;
		case 'g':
			gap_us = atol(optarg);
			break;
		case 's':
			storm = 1;
			break;
		default:
			fprintf(stderr,
				"usage: killbench --cgroup PATH [-n N] [--gap-us US] [--storm]\n");
			return 2;
		}
	}
	if (!cgroup || n <= 0) {
		fprintf(stderr, "killbench: --cgroup PATH required\n");
		return 2;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroup);
	if (storm)
		storm_pid = start_storm();
	for (long i = 0; i < n; i++) {
		pid_t v = start_victim(procs);
		struct timespec gap = {gap_us / 1000000, (gap_us % 1000000) * 1000};
		long long t;

		if (v < 0) {
			fprintf(stderr, "killbench: failed to start victim: %s\n", strerror(errno));
			return 1;
		}
		nanosleep(&gap, NULL); /* let the agent go idle before the kill */
		t = now_ns(CLOCK_REALTIME);
		kill(v, SIGKILL);
		waitpid(v, NULL, 0);
		printf("%d %lld\n", (int)v, t);
	}
	if (storm_pid > 0) {
		kill(storm_pid, SIGTERM);
		waitpid(storm_pid, NULL, 0);
	}
	return 0;
}
