/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader for bpf/proc.bpf.c: watched processes and cgroups, their events. */
#ifndef FL_PROC_WATCH_H
#define FL_PROC_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "proc_event.h"

#include "kern/loader.h" /* FL_PIN_ROOT and the helpers every loader shares */

struct proc_watch;

typedef void (*proc_watch_event_fn)(void *ctx, const struct fl_proc_event *e);

struct proc_watch_opts {
	const char *node; /* pins go under FL_PIN_ROOT/<node>/ */
	bool cgroups;	  /* load with the cgroup filter on */
	proc_watch_event_fn cb;
	void *ctx;
};

/* Checks the kernel (BTF, ring buffer), mounts bpffs if needed, loads,
 * attaches and pins. Stale pins of a dead agent for the same node are
 * replaced: the caller must hold the node's lock. -errno, with a message. */
int proc_watch_open(struct proc_watch **out, const struct proc_watch_opts *opts);
int proc_watch_watch_pid(struct proc_watch *pw, pid_t pid, __u32 how);
int proc_watch_unwatch_pid(struct proc_watch *pw, pid_t pid);
/* path must be a cgroup v2 directory; its id is returned in *cgid. */
int proc_watch_watch_cgroup(struct proc_watch *pw, const char *path, uint64_t *cgid);
int proc_watch_epoll_fd(const struct proc_watch *pw);
/* Handles every event waiting in the ring buffer; count or -errno. */
int proc_watch_consume(struct proc_watch *pw);
/* Ring buffer reservations that failed, summed over CPUs. */
uint64_t proc_watch_drops(const struct proc_watch *pw);
const char *proc_watch_pin_dir(const struct proc_watch *pw);
/* Detaches, and removes the pins and the node's pin directory. NULL is fine. */
void proc_watch_close(struct proc_watch *pw);

#endif
