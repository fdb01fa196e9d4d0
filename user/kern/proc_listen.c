// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Is a process the server on a port? The listening sockets of its network namespace
 * on that port (/proc/PID/net/tcp, tcp6: state 0A, the inode) against the sockets it
 * holds (/proc/PID/fd links socket:[INODE]). Needs what reading another process's fd
 * table needs (its uid, or CAP_SYS_PTRACE), as the lease's socket scan does. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kern/loader.h"
#include "kern/proc_listen.h"

/* A table larger than this is read only so far: the kernel lists the listening
 * sockets first, so only established ones are cut off. */
#define TABLE_MAX (4 << 20)

int proc_listen_inodes(const char *text, size_t len, uint16_t port, unsigned long *out, int max)
{
	const char *p = text, *end = text + len;
	int n = 0;

	while (p < end && n < max) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[512], local[64], remote[64], st[8];
		unsigned long inode;
		unsigned int lport;
		char *colon;

		if (l < sizeof(line)) {
			memcpy(line, p, l);
			line[l] = '\0';
			/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
			if (sscanf(line, " %*s %63s %63s %7s %*s %*s %*s %*s %*s %lu", local,
				   remote, st, &inode) == 4 &&
			    !strcmp(st, "0A") && (colon = strrchr(local, ':')) &&
			    sscanf(colon + 1, "%x", &lport) == 1 && lport == port && inode)
				out[n++] = inode;
		}
		p = nl ? nl + 1 : end;
	}
	return n;
}

/* The listening inodes on port of one table of pid's namespace; -errno if unreadable. */
static int table(pid_t pid, const char *name, uint16_t port, unsigned long *out, int max)
{
	char path[64], *buf;
	size_t len = 0;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, name);
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT && strcmp(name, "tcp") ? 0 : -errno; /* no IPv6 */
	buf = malloc(TABLE_MAX);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	len = fread(buf, 1, TABLE_MAX, f);
	fclose(f);
	n = proc_listen_inodes(buf, len, port, out, max);
	free(buf);
	return n;
}

int proc_pid_listens(pid_t pid, uint16_t port)
{
	unsigned long ino[PROC_LISTEN_MAX];
	char dir[64], path[PATH_MAX], link[64];
	struct dirent *e;
	int n, m, found = 0;
	DIR *d;

	n = table(pid, "tcp", port, ino, PROC_LISTEN_MAX);
	if (n < 0)
		return n;
	m = table(pid, "tcp6", port, ino + n, PROC_LISTEN_MAX - n);
	if (m < 0)
		return m;
	n += m;
	if (!n)
		return 0; /* nobody listens on port where pid lives */
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return -errno;
	while (!found && (e = readdir(d))) {
		unsigned long inode;
		ssize_t l;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%.200s", dir, e->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = '\0';
		if (sscanf(link, "socket:[%lu]", &inode) != 1)
			continue;
		for (int i = 0; i < n && !found; i++)
			found = ino[i] == inode;
	}
	closedir(d);
	return found;
}

const char *proc_server_pid(long pid, long tcp_port)
{
	static __thread char why[96];

	if (pid <= 0 || pid > INT32_MAX || !fl_pid_alive((pid_t)pid))
		return "which is not a process on this host";
	if (tcp_port <= 0 || tcp_port > 65535)
		return NULL; /* no port to check it by (a UNIX socket only): as before */
	if (proc_pid_listens((pid_t)pid, (uint16_t)tcp_port))
		return NULL; /* it does, or its sockets cannot be read: taken on trust */
	snprintf(why, sizeof(why),
		 "but that process here does not listen on its tcp_port %ld (another pid "
		 "namespace?)",
		 tcp_port);
	return why;
}
