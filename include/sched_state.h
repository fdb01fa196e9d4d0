/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The scheduler state of a watched server's threads, kept by bpf/sched.bpf.c
 * in the pinned map fl_sched_thr (tid -> struct fl_sched_thread), and its
 * events. Shared by BPF (after vmlinux.h) and userspace (after <linux/types.h>). */
#ifndef FL_SCHED_STATE_H
#define FL_SCHED_STATE_H

#define FL_SCHED_MAX_THREADS 4096 /* threads of watched servers, all servers together */
#define FL_SCHED_MAX_SRV     64	  /* watched server processes */
#define FL_SCHED_BITS	     4096 /* size of the tgid pre-filter bitmap, a power of two */

/* What a thread is doing, as its last scheduler event said. */
enum fl_sched_state {
	FL_TS_UNKNOWN = 0,  /* seeded from /proc and not switched since, state unknown */
	FL_TS_RUNNING = 1,  /* on a CPU */
	FL_TS_RUNNABLE = 2, /* preempted or woken: on a run queue, waiting for a CPU */
	FL_TS_SLEEPING = 3, /* asleep and interruptible (S): epoll_wait, a futex, nanosleep */
	FL_TS_BLOCKED = 4,  /* uninterruptible (D): disk, NFS, memory reclaim */
	FL_TS_STOPPED = 5,  /* SIGSTOP/SIGTSTP, or stopped by a tracer (T, t) */
	FL_TS_FROZEN = 6,   /* the cgroup freezer */
	FL_TS_DEAD = 7,	    /* exiting */
};

/* Events on the sched ring buffer: only for the thread the agent judges. */
enum fl_sched_event_kind {
	FL_EV_SCHED_STOP = 16, /* the judged thread went off CPU stopped or frozen */
	FL_EV_SCHED_CONT = 17, /* ... and ran again */
};

/* Value of fl_sched_thr. Times are bpf_ktime_get_ns() (CLOCK_MONOTONIC). The
 * counters run up to since_ns: a thread RUNNING now has also run since then,
 * a RUNNABLE one has also waited since then. */
struct fl_sched_thread {
	__u64 since_ns;	 /* when the current state began */
	__u64 run_ns;	 /* time on a CPU, up to since_ns */
	__u64 wait_ns;	 /* time runnable but not running (run queue, CPU throttling) */
	__u64 nr_switch; /* times switched onto a CPU */
	__u64 raw_state; /* the task's __state when it last left a CPU */
	__u32 tgid;
	__u32 state;   /* enum fl_sched_state */
	__u32 judged;  /* 1: the thread that serves commands; its stops are events */
	__u32 nr_stop; /* times it went off CPU stopped or frozen */
	/* The system call it went to sleep in (S or D), this architecture's number;
	 * FL_SCHED_NO_SYSCALL when it is not asleep or the kernel cannot say. */
	__u32 syscall_nr;
	__u32 pad;
};

#define FL_SCHED_NO_SYSCALL 0xffffffffu

struct fl_sched_event {
	__u32 kind; /* enum fl_sched_event_kind */
	__u32 pid;  /* tgid */
	__u64 ts_ns;
	__u32 tid;
	__u32 state; /* enum fl_sched_state: the new one */
};

#ifndef __bpf__
_Static_assert(sizeof(struct fl_sched_thread) == 64, "fl_sched_thread layout");
_Static_assert(sizeof(struct fl_sched_event) == 24, "fl_sched_event layout");
#endif

#endif
