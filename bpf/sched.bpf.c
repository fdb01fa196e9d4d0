// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The scheduler state of watched servers' threads: running, runnable, asleep,
 * blocked (D), stopped or frozen, since when, and their time on a CPU and on
 * the run queue, kept in fl_sched_thr (tid -> struct fl_sched_thread) for the
 * agent to judge a server that does not answer. Loaded by
 * user/kern/sched_watch.c.
 *
 * Cost: every context switch and wake-up on the host runs these programs. An
 * unwatched one tests a bit of tgid_bits for each task (no helper call, no map
 * lookup) and returns; only a thread of a process whose bit is set pays a hash
 * lookup. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "sched_state.h"

/* Task state bits (include/linux/sched.h); macros, so not in BTF. */
#define FL_TASK_INTERRUPTIBLE	0x0001
#define FL_TASK_UNINTERRUPTIBLE 0x0002
#define FL_TASK_STOPPED		0x0004 /* __TASK_STOPPED */
#define FL_TASK_TRACED		0x0008 /* __TASK_TRACED */
#define FL_EXIT_DEAD		0x0010
#define FL_EXIT_ZOMBIE		0x0020
#define FL_TASK_DEAD		0x0080
#define FL_TASK_NOLOAD		0x0400 /* with UNINTERRUPTIBLE: TASK_IDLE, not a blocked task */
/* Linux 6.1 ("freezer,sched: Rewrite core freezer logic") freezes tasks in
 * TASK_FROZEN; the bit was unused before (TASK_STATE_MAX was 0x2000 in 5.15). */
#define FL_TASK_FROZEN 0x8000
/* jobctl: a task trapped by the cgroup v2 freezer (Linux 5.2, "cgroup: cgroup
 * v2 freezer") sleeps interruptibly with this bit set. */
#define FL_JOBCTL_TRAP_FREEZE (1UL << 23)

/* Bit (tgid % FL_SCHED_BITS) set: that tgid may be watched. Written by the
 * agent through the skeleton's .bss: the cheap filter every switch passes. */
__u64 tgid_bits[FL_SCHED_BITS / 64] = {};

/* tid -> state of a watched server's thread; pinned, dumped by bpftool. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FL_SCHED_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct fl_sched_thread);
} fl_sched_thr SEC(".maps");

/* tgid -> 1: the watched servers, whose new threads are added here. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FL_SCHED_MAX_SRV);
	__type(key, __u32);
	__type(value, __u32);
} fl_sched_srv SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096 * 4);
} fl_sched_ev SEC(".maps");

/* Ring buffer reservations that failed, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fl_sched_drops SEC(".maps");

/* Before Linux 5.14 ("sched: Change task_struct::state", 2f064a59a11f) the
 * field was `long state`; since then it is `unsigned int __state`. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u64 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

static __always_inline bool maybe_watched(__u32 tgid)
{
	__u32 b = tgid & (FL_SCHED_BITS - 1);

	return tgid_bits[b / 64] & (1ULL << (b % 64));
}

/* The system call the current task is in, from its saved user registers;
 * FL_SCHED_NO_SYSCALL where this kernel or architecture cannot tell. The
 * helper came in Linux 5.15 ("bpf: Add bpf_task_pt_regs() helper"); on an older
 * kernel the branch is dead and the verifier drops it. */
static __always_inline __u32 current_syscall(void)
{
#if defined(__TARGET_ARCH_x86) || defined(__TARGET_ARCH_arm64)
	struct pt_regs *regs;

	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs))
		return FL_SCHED_NO_SYSCALL;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return FL_SCHED_NO_SYSCALL;
#if defined(__TARGET_ARCH_x86)
	return (__u32)BPF_CORE_READ(regs, orig_ax);
#else
	return (__u32)BPF_CORE_READ(regs, syscallno);
#endif
#else
	return FL_SCHED_NO_SYSCALL;
#endif
}

/* The state of a task leaving a CPU. */
static __always_inline __u32 classify(struct task_struct *t, __u64 raw, bool preempt)
{
	if (preempt || !raw)
		return FL_TS_RUNNABLE;
	if (raw & (FL_EXIT_DEAD | FL_EXIT_ZOMBIE | FL_TASK_DEAD))
		return FL_TS_DEAD;
	if (raw & FL_TASK_FROZEN)
		return FL_TS_FROZEN;
	if (raw & (FL_TASK_STOPPED | FL_TASK_TRACED))
		return FL_TS_STOPPED;
	if ((raw & FL_TASK_UNINTERRUPTIBLE) && !(raw & FL_TASK_NOLOAD))
		return FL_TS_BLOCKED;
	if ((raw & FL_TASK_INTERRUPTIBLE) && (BPF_CORE_READ(t, jobctl) & FL_JOBCTL_TRAP_FREEZE))
		return FL_TS_FROZEN;
	return FL_TS_SLEEPING;
}

static __always_inline bool is_stop(__u32 s)
{
	return s == FL_TS_STOPPED || s == FL_TS_FROZEN;
}

static __always_inline void emit(struct fl_sched_thread *t, __u32 tid, __u32 kind, __u64 now)
{
	struct fl_sched_event *e;

	e = bpf_ringbuf_reserve(&fl_sched_ev, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&fl_sched_drops, &zero);

		if (n)
			*n += 1;
		return;
	}
	e->kind = kind;
	e->pid = t->tgid;
	e->ts_ns = now;
	e->tid = tid;
	e->state = t->state;
	bpf_ringbuf_submit(e, 0);
}

/* Moves t to state s at now, adding the time spent in the old state to its
 * counter; the judged thread's stops and resumptions are events. */
static __always_inline void set_state(struct fl_sched_thread *t, __u32 tid, __u32 s, __u64 now)
{
	__u32 was = t->state;

	if (was == FL_TS_RUNNING)
		t->run_ns += now - t->since_ns;
	else if (was == FL_TS_RUNNABLE)
		t->wait_ns += now - t->since_ns;
	t->state = s;
	t->since_ns = now;
	if (s != FL_TS_SLEEPING && s != FL_TS_BLOCKED)
		t->syscall_nr = FL_SCHED_NO_SYSCALL;
	if (is_stop(s) && !is_stop(was)) {
		t->nr_stop++;
		if (t->judged)
			emit(t, tid, FL_EV_SCHED_STOP, now);
	} else if (!is_stop(s) && is_stop(was) && t->judged) {
		emit(t, tid, FL_EV_SCHED_CONT, now);
	}
}

/* The arguments common to every kernel: prev_state was added in 5.18, and
 * task_state() reads it from the task instead. */
SEC("tp_btf/sched_switch")
int BPF_PROG(fl_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct fl_sched_thread *t;
	__u32 tid;
	__u64 raw;

	if (maybe_watched(prev->tgid)) {
		tid = prev->pid;
		t = bpf_map_lookup_elem(&fl_sched_thr, &tid);
		if (t) {
			__u32 s;

			raw = task_state(prev);
			t->raw_state = raw;
			s = classify(prev, raw, preempt);
			set_state(t, tid, s, bpf_ktime_get_ns());
			/* prev is the task running this program: going to sleep, it
			 * is in the system call it sleeps in (nanosleep: its own
			 * choice; epoll_wait, a futex: waiting on others). */
			if (s == FL_TS_SLEEPING || s == FL_TS_BLOCKED)
				t->syscall_nr = current_syscall();
		}
	}
	if (maybe_watched(next->tgid)) {
		tid = next->pid;
		t = bpf_map_lookup_elem(&fl_sched_thr, &tid);
		if (t) {
			set_state(t, tid, FL_TS_RUNNING, bpf_ktime_get_ns());
			t->nr_switch++;
		}
	}
	return 0;
}

/* A sleeping, blocked or stopped thread was woken: it waits for a CPU now
 * (for long if its cgroup is throttled). */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(fl_sched_wakeup, struct task_struct *p)
{
	struct fl_sched_thread *t;
	__u32 tid;

	if (!maybe_watched(p->tgid))
		return 0;
	tid = p->pid;
	t = bpf_map_lookup_elem(&fl_sched_thr, &tid);
	if (t && t->state != FL_TS_RUNNING && t->state != FL_TS_RUNNABLE)
		set_state(t, tid, FL_TS_RUNNABLE, bpf_ktime_get_ns());
	return 0;
}

/* A new thread of a watched server (io-threads, bio threads started later). */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(fl_sched_new, struct task_struct *p)
{
	struct fl_sched_thread t = {};
	__u32 tgid = p->tgid, tid = p->pid;

	if (!maybe_watched(tgid) || !bpf_map_lookup_elem(&fl_sched_srv, &tgid))
		return 0;
	t.tgid = tgid;
	t.state = FL_TS_RUNNABLE;
	t.since_ns = bpf_ktime_get_ns();
	t.syscall_nr = FL_SCHED_NO_SYSCALL;
	bpf_map_update_elem(&fl_sched_thr, &tid, &t, BPF_NOEXIST);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(fl_sched_exit, struct task_struct *p)
{
	__u32 tid = p->pid;

	if (maybe_watched(p->tgid))
		bpf_map_delete_elem(&fl_sched_thr, &tid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
