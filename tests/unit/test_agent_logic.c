// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The hung state machine (injected clock), the verdict with a cause from the
 * scheduler state, and reconnect backoff. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include "common/backoff.h"
#include "agent/srvmon.h"

/* Ticks every 100 ms; PING never answered from t=0: hung after 5 intervals. */
static void test_hung_after_n_intervals(void **state)
{
	struct hung_sm sm = {.interval_ms = 100, .hung_after = 5};
	int64_t t = 1000;

	(void)state;
	assert_int_equal(hung_tick(&sm, t), HUNG_SEND);
	hung_sent(&sm, t);
	for (int i = 1; i < 5; i++)
		assert_int_equal(hung_tick(&sm, t + i * 100), HUNG_WAIT);
	assert_int_equal(hung_tick(&sm, t + 500), HUNG_NOW_HUNG);
	/* Once per change. */
	assert_int_equal(hung_tick(&sm, t + 600), HUNG_WAIT);
	assert_true(hung_reply(&sm));
	assert_int_equal(hung_tick(&sm, t + 700), HUNG_SEND);
	assert_false(hung_reply(&sm));
}

/* A slow answer (DEBUG SLEEP 0.3 with a 500 ms threshold) is not hung. */
static void test_slow_answer_not_hung(void **state)
{
	struct hung_sm sm = {.interval_ms = 100, .hung_after = 5};

	(void)state;
	assert_int_equal(hung_tick(&sm, 0), HUNG_SEND);
	hung_sent(&sm, 0);
	for (int t = 100; t <= 400; t += 100)
		assert_int_equal(hung_tick(&sm, t), HUNG_WAIT);
	assert_false(hung_reply(&sm));
	assert_int_equal(hung_tick(&sm, 500), HUNG_SEND);
}

/* The agent itself stopped for 3 s: the gap is not the server's fault. */
static void test_own_stall_restarts_window(void **state)
{
	struct hung_sm sm = {.interval_ms = 100, .hung_after = 5};

	(void)state;
	hung_tick(&sm, 0);
	hung_sent(&sm, 0);
	assert_int_equal(hung_tick(&sm, 100), HUNG_WAIT);
	assert_int_equal(hung_tick(&sm, 3100), HUNG_WAIT); /* late tick */
	for (int t = 3200; t <= 3500; t += 100)
		assert_int_equal(hung_tick(&sm, t), HUNG_WAIT);
	/* Still silent a full threshold after we resumed: now it is hung. */
	assert_int_equal(hung_tick(&sm, 3600), HUNG_NOW_HUNG);
}

static void test_hung_reset(void **state)
{
	struct hung_sm sm = {.interval_ms = 10, .hung_after = 1};

	(void)state;
	hung_tick(&sm, 0);
	hung_sent(&sm, 0);
	assert_int_equal(hung_tick(&sm, 10), HUNG_NOW_HUNG);
	hung_reset(&sm);
	assert_int_equal(hung_tick(&sm, 1000), HUNG_SEND);
}

static void test_backoff(void **state)
{
	struct backoff b = {.base_ms = 100, .max_ms = 5000, .seed = 1};
	int prev_cap = 100;

	(void)state;
	for (int i = 0; i < 20; i++) {
		int cap = i == 0 ? 100 : prev_cap;
		int d = backoff_next(&b);

		assert_true(d >= cap / 2 && d <= cap);
		prev_cap = cap * 2 > 5000 ? 5000 : cap * 2;
	}
	/* Capped, with jitter, for good. */
	for (int i = 0; i < 50; i++) {
		int d = backoff_next(&b);

		assert_true(d >= 2500 && d <= 5000);
	}
	backoff_reset(&b);
	assert_true(backoff_next(&b) <= 100);
}

#define MS 1000000ull

/* A thread sample at t ms: run and wait in ms, state since since_ms. */
static struct sched_sample at(uint64_t t, uint32_t state, uint64_t since, uint64_t run,
			      uint64_t wait)
{
	return (struct sched_sample){.now_ns = t * MS,
				     .since_ns = since * MS,
				     .run_ns = run * MS,
				     .wait_ns = wait * MS,
				     .state = state,
				     .syscall_nr = FL_SCHED_NO_SYSCALL};
}

/* On a CPU for the whole 500 ms window (a Lua loop, KEYS *): busy. */
static void test_judge_busy(void **state)
{
	struct sched_sample b = at(1000, FL_TS_RUNNING, 900, 100, 0);
	struct sched_sample c = at(1500, FL_TS_RUNNING, 900, 600, 0);
	struct srv_evidence ev;

	(void)state;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_BUSY);
	assert_int_equal(ev.window_ms, 500);
	assert_int_equal(ev.run_ms, 500);
	assert_int_equal(ev.state_ms, 600);
	/* Sharing a crowded CPU (25 %), runnable at this instant: still working. */
	c = at(1500, FL_TS_RUNNABLE, 1490, 225, 375);
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_BUSY);
	/* Just below the share: not busy. */
	c = at(1500, FL_TS_RUNNABLE, 1490, 100 + 49, 0 + 451);
	assert_int_not_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_BUSY);
}

/* Stopped or frozen wins over everything, however much it ran before. */
static void test_judge_stopped(void **state)
{
	struct sched_sample b = at(1000, FL_TS_RUNNING, 900, 100, 0);
	struct sched_sample c = at(1500, FL_TS_STOPPED, 1440, 540, 0);
	struct srv_evidence ev;

	(void)state;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_STOPPED);
	assert_int_equal(ev.state_ms, 60);
	assert_int_equal(ev.thread_state, FL_TS_STOPPED);
	c.state = FL_TS_FROZEN;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_STOPPED);
}

/* Runnable and hardly running (cpu.max at 1 %): throttled. */
static void test_judge_throttled(void **state)
{
	struct sched_sample b = at(1000, FL_TS_RUNNABLE, 990, 100, 50);
	struct sched_sample c = at(1500, FL_TS_RUNNABLE, 1480, 105, 545);
	struct srv_evidence ev;

	(void)state;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_THROTTLED);
	assert_int_equal(ev.wait_ms, 495);
	/* Asleep at this instant, but it waited for a CPU most of the window. */
	c.state = FL_TS_SLEEPING;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_THROTTLED);
	/* On a CPU right now after a long wait: still throttled, not busy. */
	c.state = FL_TS_RUNNING;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_THROTTLED);
}

/* Asleep in a timed sleep (DEBUG SLEEP: nanosleep in the command thread) is a
 * command at work, busy; asleep anywhere else (a futex, epoll_wait) is not. */
static void test_judge_timed_sleep_busy(void **state)
{
	struct sched_sample b = at(1000, FL_TS_SLEEPING, 950, 100, 0);
	struct sched_sample c = at(1500, FL_TS_SLEEPING, 950, 100, 0);
	struct srv_evidence ev;

	(void)state;
	c.syscall_nr = SYS_clock_nanosleep;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_BUSY);
	assert_string_equal(ev.sleep_call, "clock_nanosleep");
	assert_int_equal(ev.thread_state, FL_TS_SLEEPING);
	c.syscall_nr = SYS_nanosleep;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_BUSY);
	assert_string_equal(ev.sleep_call, "nanosleep");
	c.syscall_nr = SYS_futex;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_UNRESPONSIVE);
	assert_null(ev.sleep_call);
	c.syscall_nr = SYS_epoll_wait;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_UNRESPONSIVE);
	/* Blocked (D) in it, or stopped: the sleep it began does not count. */
	c.syscall_nr = SYS_clock_nanosleep;
	c.state = FL_TS_BLOCKED;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_BLOCKED);
	c.state = FL_TS_STOPPED;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_STOPPED);
	assert_null(srv_sleep_call(FL_SCHED_NO_SYSCALL));
}

/* Asleep (a deadlock) or in D state, with no runtime gained. */
static void test_judge_asleep_and_blocked(void **state)
{
	struct sched_sample b = at(1000, FL_TS_SLEEPING, 950, 100, 0);
	struct sched_sample c = at(1500, FL_TS_SLEEPING, 950, 100, 0);
	struct srv_evidence ev;

	(void)state;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_UNRESPONSIVE);
	assert_int_equal(ev.run_ms, 0);
	c.state = FL_TS_BLOCKED;
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_BLOCKED);
	/* A thread that is mostly working but caught in a page fault is busy. */
	c = at(1500, FL_TS_BLOCKED, 1499, 400, 0);
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_BUSY);
}

/* No window yet (one sample): running counts as busy; counters that went
 * backwards (a restarted thread entry) count as nothing. */
static void test_judge_edges(void **state)
{
	struct sched_sample b = at(1000, FL_TS_RUNNING, 990, 100, 0);
	struct srv_evidence ev;

	(void)state;
	assert_int_equal(srv_judge(&b, &b, &ev), SRV_CAUSE_BUSY);
	b.state = FL_TS_SLEEPING;
	assert_int_equal(srv_judge(&b, &b, &ev), SRV_CAUSE_UNRESPONSIVE);
	struct sched_sample c = at(1500, FL_TS_SLEEPING, 1200, 10, 0);
	assert_int_equal(srv_judge(&b, &c, &ev), SRV_CAUSE_UNRESPONSIVE);
	assert_int_equal(ev.run_ms, 0);
	assert_string_equal(srv_cause_name(SRV_CAUSE_THROTTLED), "throttled");
	assert_string_equal(srv_cause_name(99), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hung_after_n_intervals),
	    cmocka_unit_test(test_slow_answer_not_hung),
	    cmocka_unit_test(test_own_stall_restarts_window),
	    cmocka_unit_test(test_hung_reset),
	    cmocka_unit_test(test_backoff),
	    cmocka_unit_test(test_judge_busy),
	    cmocka_unit_test(test_judge_stopped),
	    cmocka_unit_test(test_judge_throttled),
	    cmocka_unit_test(test_judge_timed_sleep_busy),
	    cmocka_unit_test(test_judge_asleep_and_blocked),
	    cmocka_unit_test(test_judge_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
