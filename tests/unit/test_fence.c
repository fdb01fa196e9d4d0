// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "agent/fence.h"

static struct fence_in base(int64_t now)
{
	struct fence_in in = {.now_ms = now,
			      .after_ms = 2000,
			      .is_primary = true,
			      .have_peers = true,
			      .any_peer_reachable = true,
			      .ctl_answer_ms = now,
			      .ctl_epoch = 3,
			      .ctl_primary = "n1",
			      .me = "n1"};
	return in;
}

/* Controller and peers lost at t=1000: fenced at t=3000, not before. */
static void test_fences_after_isolation(void **state)
{
	struct fence_sm sm = {0};
	struct fence_in in = base(1000);

	(void)state;
	assert_int_equal(fence_eval(&sm, &in), FENCE_NONE);
	for (int64_t t = 1100; t < 3000; t += 100) {
		in.now_ms = t;
		in.any_peer_reachable = false; /* ctl_answer_ms stays 1000 */
		assert_int_equal(fence_eval(&sm, &in), FENCE_NONE);
	}
	in.now_ms = 3000;
	assert_int_equal(fence_eval(&sm, &in), FENCE_NOW);
	in.now_ms = 3100;
	assert_int_equal(fence_eval(&sm, &in), FENCE_HOLD);
}

/* Either link alone keeps the primary writable. */
static void test_one_link_is_enough(void **state)
{
	struct fence_sm sm = {0};
	struct fence_in in = base(0);

	(void)state;
	fence_eval(&sm, &in);
	in.any_peer_reachable = false;
	for (int64_t t = 100; t < 10000; t += 100) {
		in.now_ms = in.ctl_answer_ms = t; /* the controller still answers */
		assert_int_equal(fence_eval(&sm, &in), FENCE_NONE);
	}
	sm = (struct fence_sm){0};
	in = base(0);
	fence_eval(&sm, &in);
	for (int64_t t = 100; t < 10000; t += 100) {
		in.now_ms = t; /* controller silent, peers up */
		assert_int_equal(fence_eval(&sm, &in), FENCE_NONE);
	}
}

static void test_replica_or_no_peers_never_fence(void **state)
{
	struct fence_sm sm = {0};
	struct fence_in in = base(0);

	(void)state;
	in.is_primary = false;
	in.is_replica = true;
	in.any_peer_reachable = false;
	in.now_ms = 100000;
	assert_int_equal(fence_eval(&sm, &in), FENCE_NONE);
	in = base(0);
	in.have_peers = false;
	in.now_ms = 100000;
	assert_int_equal(fence_eval(&sm, &in), FENCE_NONE);
}

/* Lifted only on the controller's word after the fence: primary = me, epoch not older. */
static void test_lift_only_on_controllers_word(void **state)
{
	struct fence_sm sm = {0};
	struct fence_in in = base(0);

	(void)state;
	fence_eval(&sm, &in);
	in.any_peer_reachable = false;
	in.now_ms = 2000;
	assert_int_equal(fence_eval(&sm, &in), FENCE_NOW);
	/* Peers back, but no answer from the controller yet. */
	in.any_peer_reachable = true;
	in.now_ms = 2500;
	assert_int_equal(fence_eval(&sm, &in), FENCE_HOLD);
	/* The controller names another primary: hold until the demotion. */
	in.ctl_answer_ms = 2600;
	in.ctl_primary = "n2";
	in.ctl_epoch = 4;
	in.now_ms = 2600;
	assert_int_equal(fence_eval(&sm, &in), FENCE_HOLD);
	in.is_primary = false;
	in.is_replica = true;
	assert_int_equal(fence_eval(&sm, &in), FENCE_LIFT_DEMOTED);
	/* Another round: confirmed as primary at the same epoch. */
	sm = (struct fence_sm){0};
	in = base(0);
	fence_eval(&sm, &in);
	in.any_peer_reachable = false;
	in.now_ms = 2000;
	assert_int_equal(fence_eval(&sm, &in), FENCE_NOW);
	in.ctl_answer_ms = 2100;
	in.ctl_epoch = 2; /* an older epoch is no confirmation */
	in.now_ms = 2100;
	assert_int_equal(fence_eval(&sm, &in), FENCE_HOLD);
	in.ctl_epoch = 3;
	in.ctl_answer_ms = 2200;
	in.now_ms = 2200;
	assert_int_equal(fence_eval(&sm, &in), FENCE_LIFT_CONFIRMED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fences_after_isolation),
	    cmocka_unit_test(test_one_link_is_enough),
	    cmocka_unit_test(test_replica_or_no_peers_never_fence),
	    cmocka_unit_test(test_lift_only_on_controllers_word),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
