// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Which process here is the server (see proc_listen.h). Exact where its descriptors
 * can be read: the listening sockets of its network namespace on the port
 * (/proc/PID/net/tcp, tcp6: state 0A, the inode) against the sockets it holds
 * (/proc/PID/fd links socket:[INODE]). Reading another process's descriptors needs
 * ptrace access: its uid and no capability it has that we lack, or CAP_SYS_PTRACE,
 * which the agent keeps only with the write lease. Without it, what /proc shows
 * anyone: a listener on the port in its network namespace, its comm, its start time. */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "kern/loader.h"
#include "kern/proc_listen.h"

/* A process started this long before the server's uptime began is still it (exec to
 * the server's start-up, INFO's whole seconds); started later than that, it is not. */
#define START_EARLY_S 10
#define START_LATE_S  2

/* One row of a table: the inode of a socket listening on port, or 0. */
static unsigned long listen_row(char *line, uint16_t port)
{
	char *tok[10], *save = NULL, *colon, *end;
	unsigned long lport, inode;
	int n = 0;

	/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
	for (char *t = strtok_r(line, " \t", &save); t && n < 10; t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	if (n < 10 || strcmp(tok[3], "0A") || !(colon = strrchr(tok[1], ':')))
		return 0;
	lport = strtoul(colon + 1, &end, 16);
	if (*end || end == colon + 1 || lport != port)
		return 0;
	inode = strtoul(tok[9], &end, 10);
	return *end || end == tok[9] ? 0 : inode;
}

int proc_listen_inodes(const char *text, size_t len, uint16_t port, unsigned long *out, int max)
{
	const char *p = text, *end = text + len;
	int n = 0;

	while (p < end && n < max) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[512];
		unsigned long inode;

		if (l < sizeof(line)) {
			memcpy(line, p, l);
			line[l] = '\0';
			inode = listen_row(line, port);
			if (inode)
				out[n++] = inode;
		}
		p = nl ? nl + 1 : end;
	}
	return n;
}

/* The listening inodes on port of one table of pid's namespace; -errno if unreadable. */
static int table(pid_t pid, const char *name, uint16_t port, unsigned long *out, int max)
{
	char path[64], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, name);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT && strcmp(name, "tcp") ? 0 : -errno; /* no IPv6 */
	while (n < max && fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);

		n += proc_listen_inodes(line, l, port, out + n, max - n);
		/* A line longer than the buffer (none is): skip its rest. */
		while (l && line[l - 1] != '\n' && fgets(line, sizeof(line), f))
			l = strlen(line);
	}
	fclose(f);
	return n;
}

/* The inodes of the sockets listening on port in pid's network namespace (IPv4 and
 * IPv6): how many, or -errno. */
static int listeners(pid_t pid, uint16_t port, unsigned long ino[PROC_LISTEN_MAX])
{
	int n = table(pid, "tcp", port, ino, PROC_LISTEN_MAX), m;

	if (n < 0)
		return n;
	m = table(pid, "tcp6", port, ino + n, PROC_LISTEN_MAX - n);
	return m < 0 ? m : n + m;
}

/* pid lives in our network namespace, as told by a listener on port: socket inodes
 * are unique, and /proc/PID/net is anyone's to read (its ns link is not). */
static bool listens_here(pid_t pid, uint16_t port)
{
	unsigned long theirs[PROC_LISTEN_MAX] = {0}, ours[PROC_LISTEN_MAX] = {0};
	int n = listeners(pid, port, theirs), m = listeners(getpid(), port, ours);

	for (int i = 0; i < n; i++)
		for (int k = 0; k < m; k++)
			if (theirs[i] == ours[k])
				return true;
	return false;
}

int proc_pid_listens(pid_t pid, uint16_t port)
{
	unsigned long ino[PROC_LISTEN_MAX] = {0};
	char dir[64], path[PATH_MAX], link[64];
	int n, found = 0, denied = 0;
	struct dirent *e;
	DIR *d;

	n = listeners(pid, port, ino);
	if (n < 0)
		return n;
	if (!n)
		return 0; /* nobody listens on port where pid lives */
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return errno == EPERM ? -EACCES : -errno;
	while (!found && !denied && (e = readdir(d))) {
		unsigned long inode;
		char *end;
		ssize_t l;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%.200s", dir, e->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0) {
			/* The directory lists, the links do not resolve: ptrace access. */
			denied |= errno == EACCES || errno == EPERM;
			continue;
		}
		link[l] = '\0';
		if (strncmp(link, "socket:[", 8))
			continue;
		inode = strtoul(link + 8, &end, 10);
		if (*end != ']')
			continue;
		for (int i = 0; i < n && !found; i++)
			found = ino[i] == inode;
	}
	closedir(d);
	return found ? 1 : denied ? -EACCES : 0;
}

/* comm and start time (clock ticks after boot) from /proc/PID/stat, which anyone reads. */
static int pid_stat(pid_t pid, char comm[16], unsigned long long *start)
{
	char path[64], buf[1024], *l, *r, *tok, *save = NULL;
	size_t n;
	FILE *f;
	int field = 3; /* the first after "(comm)": state */

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	l = strchr(buf, '(');
	r = strrchr(buf, ')');
	if (!l || !r || r < l)
		return -EINVAL;
	n = (size_t)(r - l - 1) < 15 ? (size_t)(r - l - 1) : 15;
	memcpy(comm, l + 1, n);
	comm[n] = '\0';
	/* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
	 * stime cutime cstime priority nice num_threads itrealvalue starttime (22) */
	for (tok = strtok_r(r + 1, " ", &save); tok && field < 22; field++)
		tok = strtok_r(NULL, " ", &save);
	if (!tok)
		return -EINVAL;
	*start = strtoull(tok, NULL, 10);
	return 0;
}

/* pid's pid in the innermost pid namespace it is in, and how deep that is below the
 * one /proc shows (1: the same), from NSpid in /proc/PID/status (Linux 4.1). */
static int pid_nspid(pid_t pid, long *own, int *depth)
{
	char path[64], line[256];
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		*depth = 0;
		for (long v = strtol(p, &end, 10); end != p; v = strtol(p, &end, 10)) {
			*own = v;
			++*depth;
			p = end;
		}
		err = *depth ? 0 : -EINVAL;
		break;
	}
	fclose(f);
	return err;
}

/* Seconds since pid started, -1 if unknown. */
static long long pid_age_s(unsigned long long start_ticks)
{
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec ts;

	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts))
		return -1;
	return (long long)ts.tv_sec - (long long)(start_ticks / (unsigned long long)hz);
}

/* 1 if pid is the server *s, 0 if not (why says), -errno if that cannot be told. With
 * by_age, its start time must match the server's uptime too. */
static int is_server(pid_t pid, const struct proc_server *s, bool by_age, char *why, size_t len)
{
	unsigned long long start;
	char comm[16];
	int r = 0;

	if (!fl_pid_alive(pid)) {
		snprintf(why, len, "not a process on this host");
		return 0;
	}
	if (s->tcp_port > 0 && s->tcp_port <= 65535) {
		r = proc_pid_listens(pid, (uint16_t)s->tcp_port);
		if (r == 1)
			return 1;
		if (!r) {
			snprintf(why, len, "not listening on tcp_port %ld", s->tcp_port);
			return 0;
		}
		if (r != -EACCES)
			return r;
	}
	/* No port to check it by, or its descriptors are not ours to read. */
	r = pid_stat(pid, comm, &start);
	if (r)
		return r;
	if (s->comm && s->comm[0] && strcmp(comm, s->comm)) {
		snprintf(why, len, "%s, not %s", comm, s->comm);
		return 0;
	}
	if (by_age && s->uptime_s >= 0) {
		long long d = pid_age_s(start) - s->uptime_s;

		if (d < -START_LATE_S || d > START_EARLY_S) {
			snprintf(why, len, "started %lld s ago, not %lld s", d + s->uptime_s,
				 s->uptime_s);
			return 0;
		}
	}
	return 1;
}

/* The processes of nested pid namespaces whose pid there is s->pid and that are the
 * server (with here, in our network namespace, where we reach it): how many, the last
 * into *found. */
static int nested(const struct proc_server *s, bool by_age, bool here, pid_t *found)
{
	struct dirent *e;
	char why[96];
	int count = 0;
	DIR *d = opendir("/proc");

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10), own = 0;
		int depth = 0;

		if (*end || end == e->d_name || pid <= 0 || pid > INT32_MAX || pid == s->pid)
			continue;
		if (pid_nspid((pid_t)pid, &own, &depth) || depth < 2 || own != s->pid)
			continue;
		if (here && !(s->tcp_port > 0 && s->tcp_port <= 65535 &&
			      listens_here((pid_t)pid, (uint16_t)s->tcp_port)))
			continue;
		if (is_server((pid_t)pid, s, by_age, why, sizeof(why)) == 1) {
			*found = (pid_t)pid;
			count++;
		}
	}
	closedir(d);
	return count;
}

pid_t proc_server_find(const struct proc_server *s, char *why, size_t len)
{
	char no[96] = "";
	pid_t found = 0;
	int n;

	why[0] = '\0';
	if (s->pid <= 0 || s->pid > INT32_MAX) {
		snprintf(why, len, "no process_id");
		return 0;
	}
	/* It is, or that cannot be told (its /proc unreadable): taken, as always. */
	if (is_server((pid_t)s->pid, s, false, no, sizeof(no)))
		return (pid_t)s->pid;
	/* A container's server: its pid there is s->pid; here another. The one in our
	 * network namespace (containers each with its own, the same port in each); else
	 * any; two alike: the one that started when it says. */
	for (int here = 1; here >= 0; here--) {
		n = nested(s, false, here, &found);
		if (!n)
			continue;
		if (n > 1)
			n = nested(s, true, here, &found);
		break;
	}
	if (n == 1) {
		snprintf(why, len,
			 "process_id %ld is its own pid namespace's; here the server is pid %d",
			 s->pid, (int)found);
		return found;
	}
	snprintf(why, len,
		 "process_id %ld here is %s, and %s: not watching it in the kernel (give "
		 "--watch-pid or --watch-cgroup)",
		 s->pid, no,
		 n ? "more than one process of another pid namespace could be the server"
		   : "no process of another pid namespace is the server");
	return 0;
}
