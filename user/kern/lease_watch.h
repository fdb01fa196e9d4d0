/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader for bpf/lease.bpf.c, the write lease in the kernel (lease_watch.c), and the
 * lease's sockets (lease_sock.c).
 *
 * The programs are attached (links, multi) at the root of the cgroup v2 hierarchy:
 * every socket of the host passes them, and the marks on the server's sockets say which
 * are judged, so no interface, port or cgroup of the server needs to be known. Unlike
 * the watch programs, the lease outlives the agent on purpose: its maps and links are
 * pinned under FL_PIN_ROOT/<node>/lease/ and stay when the agent exits, is killed or
 * stopped, so that a server whose agent is gone stops acknowledging writes when the
 * lease runs out. A new agent reuses the pinned maps (the lease held stays held, the
 * marks stay on the sockets) and swaps its programs into the pinned links; an older
 * agent's per-interface tcx links are removed once ours are in place. Removing the
 * directory (rm -r) detaches everything. */
#ifndef FL_LEASE_WATCH_H
#define FL_LEASE_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <linux/types.h>
#include "lease_map.h"

struct lease_watch;

/* Loads the programs, reusing the pinned maps if any, and attaches them at the root of
 * the cgroup v2 hierarchy; arms the lease for port ([node] redis; 0: left as pinned,
 * disarmed if new). No server written yet (new maps), server_port (0: none) is: the bind
 * hooks mark what binds it. -errno with a message. */
int lease_watch_open(struct lease_watch **out, const char *node, uint16_t port,
		     uint16_t server_port);
/* Whether a previous agent left this node's lease pinned (it may still be armed). */
bool lease_watch_pinned(const char *node);
/* Removes a node's pinned lease (programs detached, maps freed): the lease is off. */
int lease_watch_unpin(const char *node);
int lease_watch_read(struct lease_watch *lw, struct fl_lease_state *l);
/* Whether a server's namespace and ports were written (lease_watch_set_server), by this
 * agent or a previous one; *tgid: the process written with them (0: none). */
bool lease_watch_server_known(struct lease_watch *lw, uint32_t *tgid);
int lease_watch_write(struct lease_watch *lw, const struct fl_lease_state *l);
/* Replaces the allowed sockets (by cookie) with these n. */
int lease_watch_set_allow(struct lease_watch *lw, const __u64 *cookie, const __u32 *kind, int n);
/* Which sockets the bind hooks mark: those bound in this network namespace by tgid, or
 * to one of ports[0..n) (replacing the earlier ports); never those bound to bus_port
 * (the server's cluster bus; 0: none). */
int lease_watch_set_server(struct lease_watch *lw, uint32_t tgid, const uint16_t *ports, int n,
			   uint16_t bus_port);
/* Marks one socket (a descriptor of ours) as the server's; unmark takes the mark off
 * (none is fine). */
int lease_watch_mark(struct lease_watch *lw, int sock_fd);
int lease_watch_unmark(struct lease_watch *lw, int sock_fd);
int lease_watch_marks_fd(const struct lease_watch *lw);
uint64_t lease_watch_count(const struct lease_watch *lw, enum fl_lease_counter c);
const char *lease_watch_pin_dir(const struct lease_watch *lw);
/* Closes the file descriptors; the pins stay (see above). NULL is fine. */
void lease_watch_close(struct lease_watch *lw);

/* ---- lease_sock.c ---- */

/* An address and port (network order) as an fl_lease_conn. */
void lease_conn_make(struct fl_lease_conn *k, const struct sockaddr *sa);
/* "a.b.c.d" or an IPv6 address, and a port in host order; -EINVAL if not one. */
int lease_conn_parse(struct fl_lease_conn *k, const char *addr, uint16_t port);
/* The cookie of this namespace's TCP socket with these local and remote ends
 * (sock_diag); -ENOENT if there is none. */
int lease_conn_cookie(const struct fl_lease_conn *local, const struct fl_lease_conn *remote,
		      __u64 *cookie);

#define LEASE_SCAN_MAX_PORTS 8
#define LEASE_SCAN_MAX_CONNS 256 /* descriptors held at once while scanning */
/* What lease_scan_pid found among a process's descriptors. */
struct lease_scan {
	uint16_t bus_port; /* the server's cluster bus port (0: none): its sockets unmarked */
	int marked;	   /* TCP sockets marked */
	int bus_socks;	   /* cluster bus sockets found, left (or made) unmarked */
	int nports;	   /* TCP ports it listens on */
	uint16_t ports[LEASE_SCAN_MAX_PORTS];
	char unix_path[108]; /* a UNIX socket it listens on ("" if none) */
	int nconn;	     /* (while scanning: connections to judge) */
	int conn[LEASE_SCAN_MAX_CONNS];
};
/* Marks every TCP listener of process pid and every connection accepted on one (a copy
 * of each descriptor, pidfd_getfd: Linux 5.6, CAP_SYS_PTRACE) and says what it listens
 * on; but a socket on bus_port (the cluster bus listener, the bus connections it
 * accepted; 0: none) is left unmarked, its mark taken off if it had one. 0 or -errno. */
int lease_scan_pid(struct lease_watch *lw, pid_t pid, uint16_t bus_port, struct lease_scan *sc);
/* Destroys (SOCK_DESTROY) every marked TCP connection of this namespace whose cookie is
 * not in keep[0..n), however many: their queued replies die with them. The number
 * destroyed, or -errno. */
int lease_kill_conns(const struct lease_watch *lw, const __u64 *keep, int n);

#endif
