/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader for bpf/lease.bpf.c, the write lease in the kernel.
 *
 * Unlike the watch programs, the lease outlives the agent on purpose: its maps and
 * its tcx links are pinned under FL_PIN_ROOT/<node>/lease/ and stay when the agent
 * exits, is killed or stopped, so that a server whose agent is gone stops
 * acknowledging writes when the lease runs out. A new agent reuses the pinned maps
 * (the lease held stays held) and swaps its program into the pinned links. Removing
 * the directory (rm -r) detaches everything. */
#ifndef FL_LEASE_WATCH_H
#define FL_LEASE_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <linux/types.h>
#include "lease_map.h"

#define LEASE_WATCH_MAX_IFACES 64

struct lease_watch;

/* Loads the program, reusing the pinned maps if any, and attaches it (tcx egress)
 * to every interface of this network namespace; arms it for port. -errno with a
 * message; tcx needs Linux 6.6. */
int lease_watch_open(struct lease_watch **out, const char *node, uint16_t port);
/* Attaches to interfaces that appeared since; the number newly attached or -errno. */
int lease_watch_rescan(struct lease_watch *lw);
int lease_watch_read(struct lease_watch *lw, struct fl_lease_state *l);
int lease_watch_write(struct lease_watch *lw, const struct fl_lease_state *l);
/* Replaces the allowed connections with these n. */
int lease_watch_set_allow(struct lease_watch *lw, const struct fl_lease_conn *c, const __u32 *kind,
			  int n);
uint64_t lease_watch_count(const struct lease_watch *lw, enum fl_lease_counter c);
const char *lease_watch_pin_dir(const struct lease_watch *lw);
int lease_watch_prog_fd(const struct lease_watch *lw);
/* Closes the file descriptors; the pins stay (see above). NULL is fine. */
void lease_watch_close(struct lease_watch *lw);

/* An address and port (network order) as an fl_lease_conn. */
void lease_conn_make(struct fl_lease_conn *k, const struct sockaddr *sa);
/* "a.b.c.d" or an IPv6 address, and a port in host order; -EINVAL if not one. */
int lease_conn_parse(struct fl_lease_conn *k, const char *addr, uint16_t port);
/* Destroys (SOCK_DESTROY) every TCP socket of this namespace whose local port is
 * port and whose far end is not in keep[0..n): their queued replies die with them.
 * The number destroyed, or -errno. */
int lease_kill_conns(uint16_t port, const struct fl_lease_conn *keep, int n);

#endif
