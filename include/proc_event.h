/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Events from bpf/proc.bpf.c to the agent, and the keys of its maps.
 * Shared by BPF (after vmlinux.h) and userspace (after <linux/types.h>). */
#ifndef FL_PROC_EVENT_H
#define FL_PROC_EVENT_H

#define FL_COMM_LEN	    16
#define FL_MAX_CGROUP_DEPTH 16 /* watched cgroups deeper than this are refused */

enum fl_event_kind {
	FL_EV_PROC_EXIT = 1,  /* the last thread of a watched process exited */
	FL_EV_PROC_START = 2, /* a process exec'd inside a watched cgroup */
	FL_EV_OOM_VICTIM = 3, /* the OOM killer chose a watched process (oom/mark_victim) */
};

/* Why a process is in fl_watch_pids (value of the map). */
enum fl_watch_flags {
	FL_WATCH_PID = 1,    /* named by --watch-pid or found by the agent */
	FL_WATCH_CGROUP = 2, /* started inside a watched cgroup (proc_start) */
};

/* OOM details from oom/mark_victim, all in KiB; zero where the kernel's
 * tracepoint does not carry them (before Linux 6.8 it had only the pid). */
struct fl_oom_info {
	__u64 total_vm_kb;
	__u64 anon_rss_kb;
	__u64 file_rss_kb;
	__u64 shmem_rss_kb;
	__u64 pgtables_kb;
	__u64 ts_ns; /* bpf_ktime_get_ns() at mark_victim */
	__s32 oom_score_adj;
	__u32 uid;
};

struct fl_proc_event {
	__u32 kind;		     /* enum fl_event_kind */
	__u32 pid;		     /* tgid of the process */
	__u64 ts_ns;		     /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 cgroup_id;	     /* cgroup v2 id of the process */
	struct fl_oom_info oom_info; /* set when oom != 0 */
	__u32 ppid;
	__u32 exit_code; /* task->exit_code: wait(2) status (signal | 0x80 core | status << 8) */
	__u32 oom;	 /* 1 when oom/mark_victim chose this process before it exited */
	__u32 watch;	 /* enum fl_watch_flags that matched */
	char comm[FL_COMM_LEN];
};

#ifndef __bpf__
_Static_assert(sizeof(struct fl_oom_info) == 56, "fl_oom_info layout");
_Static_assert(sizeof(struct fl_proc_event) == 112, "fl_proc_event layout");
#endif

#endif
