/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Whether a process is the server listening on a port: the check that a pid a server
 * reports (INFO process_id) is this host's process and not a number from another pid
 * namespace (a container's server reports its own namespace's pid, often 1). */
#ifndef FLATLINE_KERN_PROC_LISTEN_H
#define FLATLINE_KERN_PROC_LISTEN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_LISTEN_MAX 64 /* listening sockets on one port that are looked for */

/* The inodes of the TCP sockets listening on port (host order) in text, a
 * /proc/PID/net/tcp or tcp6 table: up to max into out. Returns how many; lines that
 * are not a table row are skipped. */
int proc_listen_inodes(const char *text, size_t len, uint16_t port, unsigned long *out, int max);

/* 1 if pid holds a TCP socket listening on port (in its own network namespace), 0 if
 * it holds none, -errno if that cannot be told (its /proc entries not readable). */
int proc_pid_listens(pid_t pid, uint16_t port);

/* NULL if pid, as a server reports it (INFO process_id, tcp_port), is a process here
 * that listens on that port, or one whose sockets cannot be read (taken on trust);
 * else why it is not watched: "which is not a process on this host", "but that
 * process here does not listen on its tcp_port N (another pid namespace?)". */
const char *proc_server_pid(long pid, long tcp_port);

#endif
