// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What the server monitor (srvmon.c) decides without I/O, unit-tested in
 * tests/unit/test_agent_logic.c: the names of process states and causes, the cause
 * of a silence from the scheduler samples (srv_judge), and the hung state machine
 * (hung_tick, hung_sent, hung_reply, hung_reset). */
#include <stdint.h>
#include <sys/syscall.h>
#include "common/report_keys.h"
#include "agent/srvmon.h"

const char *srv_proc_name(enum srv_proc p)
{
	return report_proc_word(p);
}

const char *srv_cause_name(enum srv_cause c)
{
	static const char *const names[] = {"none",    "stopped",      "busy",	 "throttled",
					    "blocked", "unresponsive", "unknown"};

	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "unknown";
}

const char *srv_sleep_call(uint32_t nr)
{
	if (nr == FL_SCHED_NO_SYSCALL)
		return NULL;
#ifdef SYS_nanosleep
	if (nr == SYS_nanosleep)
		return "nanosleep";
#endif
#ifdef SYS_clock_nanosleep
	if (nr == SYS_clock_nanosleep)
		return "clock_nanosleep";
#endif
#ifdef SYS_clock_nanosleep_time64
	if (nr == SYS_clock_nanosleep_time64)
		return "clock_nanosleep";
#endif
	return NULL;
}

static uint64_t delta(uint64_t to, uint64_t from)
{
	return to > from ? to - from : 0;
}

enum srv_cause srv_judge(const struct sched_sample *base, const struct sched_sample *cur,
			 struct srv_evidence *ev)
{
	uint64_t window = delta(cur->now_ns, base->now_ns);
	uint64_t run = delta(cur->run_ns, base->run_ns);
	uint64_t wait = delta(cur->wait_ns, base->wait_ns);

	ev->thread_state = cur->state;
	ev->state_ms = delta(cur->now_ns, cur->since_ns) / 1000000;
	ev->window_ms = window / 1000000;
	ev->run_ms = run / 1000000;
	ev->wait_ms = wait / 1000000;
	ev->throttled_ms = -1;
	ev->sleep_call = NULL;
	if (cur->state == FL_TS_STOPPED || cur->state == FL_TS_FROZEN)
		return SRV_CAUSE_STOPPED;
	/* Working: on a CPU now with no window yet, or a real share of it. */
	if (window ? run * 100 >= window * SRV_BUSY_MIN_SHARE_PCT : cur->state == FL_TS_RUNNING)
		return SRV_CAUSE_BUSY;
	/* Asleep by its own choice, in a command (DEBUG SLEEP, a module's sleep): it
	 * wakes when its timer does, so it is alive, as one on a CPU is, up to
	 * busy_max_ms. A deadlock sleeps on a futex or in epoll_wait instead. */
	if (cur->state == FL_TS_SLEEPING && (ev->sleep_call = srv_sleep_call(cur->syscall_nr)))
		return SRV_CAUSE_BUSY;
	/* Runnable and not getting a CPU: now, or for most of the window. */
	if (cur->state == FL_TS_RUNNING || cur->state == FL_TS_RUNNABLE ||
	    (window && wait * 2 >= window))
		return SRV_CAUSE_THROTTLED;
	if (cur->state == FL_TS_BLOCKED)
		return SRV_CAUSE_BLOCKED;
	return SRV_CAUSE_UNRESPONSIVE;
}

enum hung_act hung_tick(struct hung_sm *sm, int64_t now)
{
	bool late = sm->last_tick_ms && now - sm->last_tick_ms > 2 * (int64_t)sm->interval_ms;

	sm->last_tick_ms = now;
	if (!sm->waiting)
		return HUNG_SEND;
	if (late) {
		/* We were stopped or starved ourselves: judge nothing from that gap. */
		sm->sent_ms = now;
		return HUNG_WAIT;
	}
	if (!sm->hung && now - sm->sent_ms >= (int64_t)sm->hung_after * sm->interval_ms) {
		sm->hung = true;
		return HUNG_NOW_HUNG;
	}
	return HUNG_WAIT;
}

void hung_sent(struct hung_sm *sm, int64_t now)
{
	sm->waiting = true;
	sm->sent_ms = now;
}

bool hung_reply(struct hung_sm *sm)
{
	bool was = sm->hung;

	sm->waiting = false;
	sm->hung = false;
	return was;
}

void hung_reset(struct hung_sm *sm)
{
	sm->waiting = false;
	sm->hung = false;
	sm->last_tick_ms = 0;
}
