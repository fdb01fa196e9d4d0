// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The peer verdict (user/agent/peer_verdict.c) on an injected clock: a simulated peer
 * answers, falls silent, talks without answering; the agent probes on schedule,
 * stalls, or probes too rarely. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "agent/peer_verdict.h"

#define MS(x) ((uint64_t)(x)*1000000ull)

enum {
	LEFT = 1,   /* this round's probe left the host */
	REPLY = 2,  /* a reply (to the previous probe) arrived 1 ms before the round */
	PKT = 4,    /* some other packet from the peer arrived 1 ms before the round */
	NOPROBE = 8 /* the agent sent no probe this round */
};

struct sim {
	struct verdict_config c;
	struct verdict_peer p;
	struct verdict_obs o;
	int changes;
};

static void sim_init(struct sim *s, uint64_t interval, uint64_t down_after)
{
	*s = (struct sim){.c = {.interval_ns = interval, .down_after_ns = down_after}};
	s->o.now_ns = MS(1000000); /* any clock, far from zero */
	assert_int_equal(verdict_init(&s->p, &s->c), 0);
}

/* One round dt after the previous; true when the state changed. */
static bool step(struct sim *s, uint64_t dt, unsigned int what)
{
	bool changed;

	s->o.now_ns += dt;
	if (!(what & NOPROBE))
		s->o.probes++;
	if (what & LEFT)
		s->o.left++;
	if (what & REPLY) {
		s->o.replied++;
		s->o.last_reply_ns = s->o.now_ns - MS(1);
		s->o.last_rx_ns = s->o.last_reply_ns;
		s->o.rtt_ns = MS(1);
		s->o.srtt_ns = MS(1);
	}
	if (what & PKT)
		s->o.last_rx_ns = s->o.now_ns - MS(1);
	changed = verdict_round(&s->p, &s->c, &s->o);
	s->changes += changed;
	return changed;
}

/* n rounds at the configured interval; returns the index of the first change, -1 if none. */
static int steps(struct sim *s, int n, unsigned int what)
{
	int first = -1;

	for (int i = 0; i < n; i++)
		if (step(s, s->c.interval_ns, what) && first < 0)
			first = i;
	return first;
}

static void sim_up(struct sim *s)
{
	steps(s, 20, LEFT | REPLY);
	assert_int_equal(s->p.state, VERDICT_UP);
}

static void test_config(void **state)
{
	struct verdict_config c = {.interval_ns = MS(100), .down_after_ns = MS(299)};

	(void)state;
	assert_int_equal(verdict_check_config(&c), -EINVAL);
	c.down_after_ns = MS(300);
	assert_int_equal(verdict_check_config(&c), 0);
	c.interval_ns = 0;
	assert_int_equal(verdict_check_config(&c), -EINVAL);
	assert_int_equal(verdict_default_stall(MS(10)), MS(60));
	assert_int_equal(verdict_default_stall(MS(1000)), MS(2000));
}

static void test_up_at_first_reply(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, MS(100), MS(1000));
	assert_int_equal(steps(&s, 3, LEFT), -1);
	assert_int_equal(s.p.state, VERDICT_UNKNOWN);
	assert_int_equal(s.p.ev.reply_age_ns, VERDICT_NEVER);
	assert_true(step(&s, MS(100), LEFT | REPLY));
	assert_int_equal(s.p.ev.state, VERDICT_UP);
	assert_int_equal(s.p.ev.prev, VERDICT_UNKNOWN);
	assert_int_equal(s.p.ev.reply_age_ns, MS(1));
	assert_int_equal(s.p.ev.since_ns, s.o.now_ns);
	verdict_free(&s.p);
}

/* Silent from the last reply: down at the first round down_after after it. */
static void test_down_after_threshold(void **state)
{
	struct sim s;
	uint64_t last_reply;

	(void)state;
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	last_reply = s.o.last_reply_ns;
	/* The reply came 1 ms before the round: 9 silent rounds later it is 901 ms old. */
	assert_int_equal(steps(&s, 9, LEFT), -1);
	assert_int_equal(s.p.state, VERDICT_UP);
	assert_true(step(&s, MS(100), LEFT));
	assert_int_equal(s.p.ev.state, VERDICT_DOWN);
	assert_int_equal(s.p.ev.prev, VERDICT_UP);
	assert_int_equal(s.p.ev.reply_age_ns, s.o.now_ns - last_reply);
	assert_int_equal(s.p.ev.packet_age_ns, MS(1001));
	assert_int_equal(s.p.ev.probes_in_window, 10);
	assert_int_equal(s.p.ev.left_in_window, 10);
	assert_int_equal(s.p.ev.replied_in_window, 0);
	assert_true(s.p.ev.loss_ratio > 0.999);
	assert_false(s.p.ev.local_fault);
	assert_true(s.p.ev.judged);
	/* It stays down, with no further change. */
	assert_int_equal(steps(&s, 50, LEFT), -1);
	verdict_free(&s.p);
}

/* The agent stopped for 3 s (SIGSTOP): the peer's silence while we were not
 * probing proves nothing. */
static void test_no_down_while_stalled(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	/* The first round after the stop finds the last reply 3 s old. */
	assert_false(step(&s, MS(3000), LEFT));
	assert_true(s.p.ev.stalled);
	assert_false(s.p.ev.judged);
	/* Probing again, the peer answers: never down. */
	assert_int_equal(steps(&s, 30, LEFT | REPLY), -1);
	assert_int_equal(s.p.state, VERDICT_UP);
	assert_int_equal(s.changes, 1);

	/* Now a stop while the peer really dies: down only after a whole window of
	 * probing on schedule after the stop. */
	assert_false(step(&s, MS(3000), LEFT));
	assert_int_equal(steps(&s, 9, LEFT), -1);
	assert_false(s.p.ev.judged);
	assert_true(step(&s, MS(100), LEFT));
	assert_int_equal(s.p.ev.state, VERDICT_DOWN);
	assert_int_equal(s.p.ev.probes_in_window, 10);
	verdict_free(&s.p);
}

/* A starved loop: rounds late by more than the stall limit now and then. */
static void test_no_down_while_starved(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	for (int i = 0; i < 20; i++) {
		assert_false(step(&s, MS(100), LEFT));
		assert_false(step(&s, MS(100), LEFT));
		assert_false(step(&s, MS(500), LEFT)); /* a 500 ms hiccup every third round */
	}
	assert_int_equal(s.p.state, VERDICT_UP);
	verdict_free(&s.p);
}

/* Fewer than three probes in the window: no verdict, however long the silence. */
static void test_no_down_with_few_probes(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	for (int i = 0; i < 20; i++) {
		/* One probe in five rounds: two per second. */
		assert_false(step(&s, MS(100), LEFT));
		assert_int_equal(steps(&s, 4, NOPROBE), -1);
	}
	assert_int_equal(s.p.state, VERDICT_UP);
	assert_int_equal(s.p.ev.probes_in_window, 2);
	assert_false(s.p.ev.judged);
	/* Probing every round again: down once three probes are in the window. */
	assert_false(step(&s, MS(100), LEFT));
	assert_int_equal(s.p.ev.probes_in_window, 2);
	assert_true(step(&s, MS(100), LEFT));
	assert_int_equal(s.p.ev.state, VERDICT_DOWN);
	assert_int_equal(s.p.ev.probes_in_window, VERDICT_MIN_PROBES);
	verdict_free(&s.p);
}

static void test_local_fault(void **state)
{
	struct sim s;

	(void)state;
	/* Probes held back (unresolved neighbour, no route): none left. */
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	assert_int_equal(steps(&s, 10, 0), 9);
	/* Down all the same: a dead peer on our link looks so once its neighbour entry
	 * has failed. The evidence says the probes did not leave. */
	assert_int_equal(s.p.state, VERDICT_DOWN);
	assert_true(s.p.ev.local_fault);
	assert_int_equal(s.p.ev.left_in_window, 0);
	assert_int_equal(s.p.ev.probes_in_window, 10);
	assert_true(s.p.ev.loss_ratio == 0);
	verdict_free(&s.p);

	/* No route at all: nothing can be told about the peer. */
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	s.o.no_route = true;
	assert_int_equal(steps(&s, 10, 0), 9);
	assert_int_equal(s.p.state, VERDICT_LOCAL_FAULT); /* not DOWN: we cannot tell */
	assert_int_equal(s.p.ev.prev, VERDICT_UP);
	assert_true(s.p.ev.local_fault);
	/* The route back, the peer still silent: now it is down. */
	s.o.no_route = false;
	assert_int_equal(steps(&s, 10, LEFT), 0);
	assert_int_equal(s.p.state, VERDICT_DOWN);
	assert_int_equal(s.p.ev.prev, VERDICT_LOCAL_FAULT);
	verdict_free(&s.p);

	/* They left (tc egress saw them) but the interface has no carrier. */
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	s.o.no_carrier = true;
	assert_int_equal(steps(&s, 10, LEFT), 9);
	assert_int_equal(s.p.state, VERDICT_LOCAL_FAULT);
	assert_true(s.p.ev.local_fault);
	assert_int_equal(s.p.ev.left_in_window, 10);
	/* The carrier back, still silent: now it is the peer. */
	s.o.no_carrier = false;
	assert_int_equal(steps(&s, 10, LEFT), 0);
	assert_int_equal(s.p.state, VERDICT_DOWN);
	assert_int_equal(s.p.ev.prev, VERDICT_LOCAL_FAULT);
	assert_false(s.p.ev.local_fault);
	verdict_free(&s.p);

	/* Some left, carrier fine: the peer's fault. */
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	assert_int_equal(steps(&s, 10, LEFT), 9);
	assert_int_equal(s.p.state, VERDICT_DOWN);
	assert_false(s.p.ev.local_fault);
	verdict_free(&s.p);
}

/* Replies stop, replication-like traffic goes on: passive, never down; when the
 * traffic stops too, down; a packet then: passive again; a reply: up. */
static void test_passive_keeps_up(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	assert_int_equal(steps(&s, 10, LEFT | PKT), 9);
	assert_int_equal(s.p.ev.state, VERDICT_PASSIVE);
	assert_int_equal(s.p.ev.prev, VERDICT_UP);
	assert_int_equal(s.p.ev.packet_age_ns, MS(1));
	assert_true(s.p.ev.reply_age_ns >= MS(1000));
	assert_int_equal(steps(&s, 100, LEFT | PKT), -1);
	assert_int_equal(steps(&s, 10, LEFT), 9);
	assert_int_equal(s.p.ev.state, VERDICT_DOWN);
	assert_int_equal(s.p.ev.prev, VERDICT_PASSIVE);
	assert_true(step(&s, MS(100), LEFT | PKT));
	assert_int_equal(s.p.ev.state, VERDICT_PASSIVE);
	assert_int_equal(s.p.ev.prev, VERDICT_DOWN);
	assert_true(step(&s, MS(100), LEFT | REPLY));
	assert_int_equal(s.p.ev.state, VERDICT_UP);
	verdict_free(&s.p);
}

/* Passive only after a judged window: not right after a stall. */
static void test_no_passive_after_stall(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	assert_false(step(&s, MS(3000), LEFT | PKT));
	assert_int_equal(s.p.state, VERDICT_UP);
	assert_int_equal(steps(&s, 9, LEFT | PKT), -1);
	assert_true(step(&s, MS(100), LEFT | PKT));
	assert_int_equal(s.p.ev.state, VERDICT_PASSIVE);
	verdict_free(&s.p);
}

static void test_down_then_up_at_first_reply(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	assert_int_equal(steps(&s, 10, LEFT), 9);
	assert_int_equal(steps(&s, 30, LEFT), -1);
	assert_true(step(&s, MS(100), LEFT | REPLY));
	assert_int_equal(s.p.ev.state, VERDICT_UP);
	assert_int_equal(s.p.ev.prev, VERDICT_DOWN);
	assert_int_equal(s.p.ev.reply_age_ns, MS(1));
	assert_int_equal(s.changes, 3);
	verdict_free(&s.p);
}

/* A peer that is dead when the agent starts: down after the first whole window. */
static void test_dead_from_start(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, MS(100), MS(1000));
	assert_int_equal(steps(&s, 11, LEFT), 10);
	assert_int_equal(s.p.ev.state, VERDICT_DOWN);
	assert_int_equal(s.p.ev.prev, VERDICT_UNKNOWN);
	assert_int_equal(s.p.ev.reply_age_ns, VERDICT_NEVER);
	assert_int_equal(s.p.ev.packet_age_ns, VERDICT_NEVER);
	verdict_free(&s.p);
}

/* Random loss of 30 % at 10 probes per window: no down over a long run. */
static void test_loss_no_down(void **state)
{
	struct sim s;
	uint32_t x = 12345;

	(void)state;
	sim_init(&s, MS(100), MS(1000));
	sim_up(&s);
	for (int i = 0; i < 6000; i++) {
		x = x * 1103515245 + 12345;
		step(&s, MS(100), LEFT | ((x >> 16) % 100 < 30 ? 0 : REPLY));
		assert_int_not_equal(s.p.state, VERDICT_DOWN);
	}
	assert_true(s.p.ev.loss_ratio < 0.9);
	verdict_free(&s.p);
}

/* The silence needed, from the share of silent rounds (the docs' table): down_after
 * on a clean link, the fewest rounds k with ratio^k < 1e-6 under loss, capped. */
static void test_need_widens_with_loss(void **state)
{
	struct verdict_config c = {.interval_ns = MS(25), .down_after_ns = MS(250)};

	(void)state;
	assert_int_equal(verdict_need_ns(&c, 0), MS(250));
	assert_int_equal(verdict_need_ns(&c, 0.0975), MS(250)); /* 5 %: k = 7 */
	assert_int_equal(verdict_need_ns(&c, 0.36), MS(350));	/* 20 %: k = 14 */
	assert_int_equal(verdict_need_ns(&c, 0.64), MS(775));	/* 40 %: k = 31 */
	assert_int_equal(verdict_need_ns(&c, 0.9), MS(1000));	/* capped: 4 x down_after */
	c.down_after_max_ns = MS(600);
	assert_int_equal(verdict_need_ns(&c, 0.64), MS(600));
}

/* A link silent in 36 % of the rounds (20 % loss each way, replies only): a silence a
 * little longer than down_after is not taken for a death; a real one is, once the
 * widened silence has passed, and the dead peer does not widen it further. */
static void test_lossy_link_widens(void **state)
{
	struct sim s;
	uint32_t x = 7;
	uint64_t need;
	int at;

	(void)state;
	sim_init(&s, MS(25), MS(250));
	sim_up(&s);
	for (int i = 0; i < 4000; i++) {
		x = x * 1103515245 + 12345;
		step(&s, MS(25), LEFT | ((x >> 16) % 100 < 36 ? 0 : REPLY));
	}
	assert_true(s.p.ev.gap_ratio > 0.25 && s.p.ev.gap_ratio < 0.47);
	need = s.p.ev.need_ns;
	assert_true(need >= MS(300) && need <= MS(500));
	step(&s, MS(25), LEFT | REPLY);
	/* 12 silent rounds (300 ms): beyond down_after, within what this loss makes. */
	assert_int_equal(steps(&s, 11, LEFT), -1);
	assert_int_equal(s.p.state, VERDICT_UP);
	step(&s, MS(25), LEFT | REPLY);
	need = s.p.ev.need_ns;
	/* Dead: down at the first round the reply is need old (it came 1 ms before). */
	at = steps(&s, 60, LEFT);
	assert_int_equal(s.p.state, VERDICT_DOWN);
	assert_int_equal(s.p.ev.need_ns, need);
	assert_int_equal((uint64_t)(at + 1) * MS(25), need);
	/* Back after the outage: that silence was no loss, the threshold stays. */
	step(&s, MS(25), LEFT | REPLY);
	assert_int_equal(s.p.state, VERDICT_UP);
	assert_true(s.p.ev.need_ns <= need);
	verdict_free(&s.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config),
	    cmocka_unit_test(test_up_at_first_reply),
	    cmocka_unit_test(test_down_after_threshold),
	    cmocka_unit_test(test_no_down_while_stalled),
	    cmocka_unit_test(test_no_down_while_starved),
	    cmocka_unit_test(test_no_down_with_few_probes),
	    cmocka_unit_test(test_local_fault),
	    cmocka_unit_test(test_passive_keeps_up),
	    cmocka_unit_test(test_no_passive_after_stall),
	    cmocka_unit_test(test_down_then_up_at_first_reply),
	    cmocka_unit_test(test_dead_from_start),
	    cmocka_unit_test(test_loss_no_down),
	    cmocka_unit_test(test_need_widens_with_loss),
	    cmocka_unit_test(test_lossy_link_widens),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
