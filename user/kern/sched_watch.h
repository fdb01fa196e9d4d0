/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader for bpf/sched.bpf.c: the scheduler state of watched servers' threads
 * (pinned as fl_sched_thr), and the judged thread's stop/resume events. */
#ifndef FL_SCHED_WATCH_H
#define FL_SCHED_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "sched_state.h"

struct sched_watch;

typedef void (*sched_watch_event_fn)(void *ctx, const struct fl_sched_event *e);

struct sched_watch_opts {
	const char *node; /* pins go under FL_PIN_ROOT/<node>/ */
	sched_watch_event_fn cb;
	void *ctx;
};

/* A thread's state read at now_ns, its counters brought up to now_ns. */
struct sched_sample {
	uint64_t now_ns;   /* CLOCK_MONOTONIC, the BPF programs' clock */
	uint64_t since_ns; /* when the current state began */
	uint64_t run_ns;   /* on a CPU, in total */
	uint64_t wait_ns;  /* runnable and not running, in total */
	uint64_t nr_switch;
	uint32_t state; /* enum fl_sched_state */
	uint32_t
	    syscall_nr; /* asleep in this system call, FL_SCHED_NO_SYSCALL: not asleep, unknown */
};

/* Loads, attaches and pins (the caller holds the node's lock). -errno. */
int sched_watch_open(struct sched_watch **out, const struct sched_watch_opts *opts);
/* Watches every thread of process pid, now and later; judged is the thread
 * whose stops are events (the one that serves commands). */
int sched_watch_add(struct sched_watch *sw, pid_t pid, pid_t judged);
/* Forgets the process and its threads. */
void sched_watch_remove(struct sched_watch *sw, pid_t pid);
/* -ENOENT if tid is not watched. */
int sched_watch_sample(struct sched_watch *sw, pid_t tid, struct sched_sample *out);
int sched_watch_epoll_fd(const struct sched_watch *sw);
int sched_watch_consume(struct sched_watch *sw);
uint64_t sched_watch_drops(const struct sched_watch *sw);
void sched_watch_close(struct sched_watch *sw);

/* "running", "runnable", "sleeping", "blocked", "stopped", "frozen", "dead", "unknown" */
const char *sched_state_name(uint32_t state);

#endif
