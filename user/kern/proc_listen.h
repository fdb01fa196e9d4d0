/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Which process here is the server that reports itself in INFO server: the pid it
 * reports (process_id) is its own pid namespace's, so a server in a container says 1,
 * or a number that on this host is another live process. The pid reported is taken
 * only if that process here listens on the server's tcp_port; else the one process of
 * a nested pid namespace whose pid there is the reported one and which does, first
 * among those in our network namespace (each container may have its own, each with a
 * server on the same port). */
#ifndef FLATLINE_KERN_PROC_LISTEN_H
#define FLATLINE_KERN_PROC_LISTEN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_LISTEN_MAX 64 /* listening sockets on one port that are looked for */

/* What a server says of itself (INFO server). */
struct proc_server {
	long pid;	    /* process_id, in the server's pid namespace */
	long tcp_port;	    /* 0: none (a UNIX socket only) */
	long long uptime_s; /* uptime_in_seconds; -1 if absent */
	const char *comm;   /* executable's base name as the kernel's comm (15 bytes); "" */
};

/* The inodes of the TCP sockets listening on port (host order) in text, a
 * /proc/PID/net/tcp or tcp6 table: up to max into out. Returns how many; lines that
 * are not a table row are skipped. */
int proc_listen_inodes(const char *text, size_t len, uint16_t port, unsigned long *out, int max);

/* 1 if pid holds a TCP socket listening on port (in its own network namespace), 0 if
 * it holds none or nobody listens there, -EACCES if its descriptors cannot be read
 * (another uid, or more capabilities than ours, and no CAP_SYS_PTRACE), another
 * -errno if its /proc entries cannot be read at all. */
int proc_pid_listens(pid_t pid, uint16_t port);

/* The pid here of the server *s: s->pid if that process here is it, else the one
 * process of a nested pid namespace whose pid there is s->pid and which is it; 0 if
 * none is, or more than one, with why in why[]. why[] is also set ("" otherwise)
 * when the pid found is not s->pid. "Is it": it listens on s->tcp_port (by its
 * descriptors); where those cannot be read, or with no port, its network namespace
 * has a listener on that port and its comm is s->comm (and, between two alike, it
 * started s->uptime_s ago, give or take). */
pid_t proc_server_find(const struct proc_server *s, char *why, size_t len);

#endif
