// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The hung state machine (injected clock) and reconnect backoff. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "common/backoff.h"
#include "agent/srvmon.h"

/* Ticks every 100 ms; PING never answered from t=0: hung after 5 intervals. */
static void test_hung_after_n_intervals(void **state)
{
	struct hung_sm sm = { .interval_ms = 100, .hung_after = 5 };
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
	struct hung_sm sm = { .interval_ms = 100, .hung_after = 5 };

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
	struct hung_sm sm = { .interval_ms = 100, .hung_after = 5 };

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
	struct hung_sm sm = { .interval_ms = 10, .hung_after = 1 };

	(void)state;
	hung_tick(&sm, 0);
	hung_sent(&sm, 0);
	assert_int_equal(hung_tick(&sm, 10), HUNG_NOW_HUNG);
	hung_reset(&sm);
	assert_int_equal(hung_tick(&sm, 1000), HUNG_SEND);
}

static void test_backoff(void **state)
{
	struct backoff b = { .base_ms = 100, .max_ms = 5000, .seed = 1 };
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hung_after_n_intervals),
		cmocka_unit_test(test_slow_answer_not_hung),
		cmocka_unit_test(test_own_stall_restarts_window),
		cmocka_unit_test(test_hung_reset),
		cmocka_unit_test(test_backoff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
