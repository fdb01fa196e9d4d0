// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Whole-process exit, OOM victim and exec of watched processes, filtered in the
 * kernel, written to one ring buffer. Loaded by user/kern/proc_watch.c. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "proc_event.h"

#define FL_MAX_WATCH 4096

/* Set between open and load; zero means off. */
const volatile __u32 targ_cgroups = 0; /* fl_watch_cgrps may hold entries: check it */

/* Bit n set: some watched cgroup sits at level n of the hierarchy. Written by
 * the agent through the skeleton's .bss, so an exit looks up only the
 * ancestors that can match. */
__u32 cgroup_levels = 0;

/* tgid -> enum fl_watch_flags; pinned, changed at run time by the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FL_MAX_WATCH);
	__type(key, __u32);
	__type(value, __u32);
} fl_watch_pids SEC(".maps");

/* cgroup v2 id -> 1; every process in the cgroup or below it is watched. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u32);
} fl_watch_cgrps SEC(".maps");

/* pid chosen by the OOM killer -> what mark_victim said, until it exits. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct fl_oom_info);
} fl_oom_info SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} fl_events SEC(".maps");

/* Ring buffer reservations that failed, per CPU: events the agent never saw. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fl_drops SEC(".maps");

static __always_inline void count_drop(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&fl_drops, &zero);

	if (n)
		*n += 1;
}

/* A zeroed event of this kind in the ring buffer, or NULL (a drop, counted). */
static __always_inline struct fl_proc_event *new_event(__u32 kind)
{
	struct fl_proc_event *e = bpf_ringbuf_reserve(&fl_events, sizeof(*e), 0);

	if (!e) {
		count_drop();
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = kind;
	return e;
}

/* Is the current task in a watched cgroup, or below one? Returns its cgroup id.
 * Only called from tp_btf programs: task is a trusted pointer, read directly. */
static __always_inline bool in_watched_cgroup(struct task_struct *task, __u64 *cgid)
{
	__u32 levels;
	int level;

	*cgid = bpf_get_current_cgroup_id();
	if (!targ_cgroups)
		return false;
	if (bpf_map_lookup_elem(&fl_watch_cgrps, cgid))
		return true;
	levels = cgroup_levels & ~1u; /* the root is never watched */
	if (!levels)
		return false;
	level = task->cgroups->dfl_cgrp->level;
	for (int i = 1; i < FL_MAX_CGROUP_DEPTH; i++) {
		__u64 anc;

		if (i >= level)
			break;
		if (!(levels & (1u << i)))
			continue;
		anc = bpf_get_current_ancestor_cgroup_id(i);
		if (bpf_map_lookup_elem(&fl_watch_cgrps, &anc))
			return true;
	}
	return false;
}

static __always_inline __u32 watched(struct task_struct *task, __u32 tgid, __u64 *cgid)
{
	__u32 *how = bpf_map_lookup_elem(&fl_watch_pids, &tgid);

	if (in_watched_cgroup(task, cgid))
		return FL_WATCH_CGROUP | (how ? *how : 0);
	return how ? *how : 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(fl_proc_exit, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct fl_oom_info *oom;
	struct fl_proc_event *e;
	__u64 cgid;
	__u32 how;

	how = watched(task, tgid, &cgid);
	if (!how)
		return 0;
	/* Only the last thread ends the process: do_exit() decrements
	 * signal->live before this tracepoint fires. */
	if (task->signal->live.counter != 0) {
		/* The OOM killer may have named a thread other than the leader. */
		if (tid != tgid) {
			oom = bpf_map_lookup_elem(&fl_oom_info, &tid);
			if (oom) {
				bpf_map_update_elem(&fl_oom_info, &tgid, oom, BPF_ANY);
				bpf_map_delete_elem(&fl_oom_info, &tid);
			}
		}
		return 0;
	}
	bpf_map_delete_elem(&fl_watch_pids, &tgid);

	e = bpf_ringbuf_reserve(&fl_events, sizeof(*e), 0);
	if (!e) {
		count_drop();
		return 0;
	}
	e->kind = FL_EV_PROC_EXIT;
	e->pid = tgid;
	e->ts_ns = bpf_ktime_get_ns();
	e->cgroup_id = cgid;
	e->ppid = task->real_parent->tgid;
	e->exit_code = task->exit_code;
	e->watch = how;
	oom = bpf_map_lookup_elem(&fl_oom_info, &tgid);
	if (!oom)
		oom = bpf_map_lookup_elem(&fl_oom_info, &tid);
	if (oom) {
		e->oom = 1;
		e->oom_info = *oom;
		bpf_map_delete_elem(&fl_oom_info, &tgid);
	} else {
		e->oom = 0;
		__builtin_memset(&e->oom_info, 0, sizeof(e->oom_info));
	}
	/* The last thread may be a helper ("bio_close_file"): name the process. */
	BPF_CORE_READ_STR_INTO(&e->comm, task, group_leader, comm);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* The OOM killer chose a victim. Remember it for the exit that follows, and
 * tell the agent at once when the victim is a watched process. */
SEC("tracepoint/oom/mark_victim")
int fl_oom_victim(struct trace_event_raw_mark_victim *ctx)
{
	struct fl_oom_info info = {};
	struct fl_proc_event *e;
	__u32 pid = ctx->pid;
	__u32 *how;

	info.ts_ns = bpf_ktime_get_ns();
	/* Linux 6.8 ("mm, oom: add more fields to the mark_victim tracepoint")
	 * added the memory figures; older kernels carry only the pid. */
	if (bpf_core_field_exists(ctx->total_vm)) {
		info.total_vm_kb = BPF_CORE_READ(ctx, total_vm);
		info.anon_rss_kb = BPF_CORE_READ(ctx, anon_rss);
		info.file_rss_kb = BPF_CORE_READ(ctx, file_rss);
		info.shmem_rss_kb = BPF_CORE_READ(ctx, shmem_rss);
		info.pgtables_kb = BPF_CORE_READ(ctx, pgtables);
		info.uid = BPF_CORE_READ(ctx, uid);
		info.oom_score_adj = BPF_CORE_READ(ctx, oom_score_adj);
	}
	bpf_map_update_elem(&fl_oom_info, &pid, &info, BPF_ANY);

	/* Only a watched pid can be recognised here: the tracepoint runs in the
	 * context of the task that hit the limit, not the victim's. A victim
	 * watched through its cgroup is reported by its exit, with oom set. */
	how = bpf_map_lookup_elem(&fl_watch_pids, &pid);
	if (!how)
		return 0;
	e = new_event(FL_EV_OOM_VICTIM);
	if (!e)
		return 0;
	e->pid = pid;
	e->ts_ns = info.ts_ns;
	e->oom = 1;
	e->oom_info = info;
	e->watch = *how;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* A new program started inside a watched cgroup: a restarted server. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(fl_proc_exec, struct task_struct *task, pid_t old_pid)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct fl_proc_event *e;
	__u64 cgid;

	if (!in_watched_cgroup(task, &cgid))
		return 0;
	e = new_event(FL_EV_PROC_START);
	if (!e)
		return 0;
	e->pid = tgid;
	e->ts_ns = bpf_ktime_get_ns();
	e->cgroup_id = cgid;
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->watch = FL_WATCH_CGROUP;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
