// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `flatline shadow-report`'s parser and grouping (common/shadow_log.c): Sentinel's log
 * lines as redis-sentinel 7 writes them, flatline's controller events, and the faults
 * they make (both systems, Sentinel only, flatline only). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "common/shadow_log.h"

static int utc(void **state)
{
	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	return 0;
}

#define T0 1796125817235LL /* 2026-12-01T11:50:17.235Z */

static void test_sentinel_lines(void **state)
{
	struct sl_event e;

	(void)state;
	assert_int_equal(
	    sl_parse_sentinel(
		"2150:X 01 Dec 2026 11:50:17.235 # +sdown master mymaster 10.0.0.1 6379\n", &e),
	    1);
	assert_int_equal(e.kind, SL_S_SDOWN);
	assert_int_equal(e.ts_ms, T0);
	assert_string_equal(e.master, "mymaster");
	assert_string_equal(e.addr, "10.0.0.1:6379");
	assert_int_equal(
	    sl_parse_sentinel("2150:X 01 Dec 2026 11:50:17.301 # +odown master mymaster "
			      "10.0.0.1 6379 #quorum 2/2",
			      &e),
	    1);
	assert_int_equal(e.kind, SL_S_ODOWN);
	assert_int_equal(e.ts_ms, T0 + 66);
	assert_int_equal(
	    sl_parse_sentinel("2150:X 01 Dec 2026 11:50:18.200 # +promoted-slave slave "
			      "10.0.0.3:6379 10.0.0.3 6379 @ mymaster 10.0.0.1 6379",
			      &e),
	    1);
	assert_int_equal(e.kind, SL_S_PROMOTED);
	assert_string_equal(e.addr, "10.0.0.1:6379");
	assert_string_equal(e.chosen, "10.0.0.3:6379");
	assert_int_equal(sl_parse_sentinel("2150:X 01 Dec 2026 11:50:19.000 # +switch-master "
					   "mymaster 10.0.0.1 6379 10.0.0.3 6379",
					   &e),
			 1);
	assert_int_equal(e.kind, SL_S_SWITCH);
	assert_string_equal(e.addr, "10.0.0.1:6379");
	assert_string_equal(e.chosen, "10.0.0.3:6379");
	assert_int_equal(e.ts_ms, T0 + 1765);
	/* Not a master's failure, or not an event: skipped. */
	assert_int_equal(sl_parse_sentinel("2150:X 01 Dec 2026 11:50:20.000 # +sdown slave "
					   "10.0.0.1:6379 10.0.0.1 6379 @ mymaster 10.0.0.3 6379",
					   &e),
			 0);
	assert_int_equal(sl_parse_sentinel("2150:X 01 Dec 2026 11:50:17.301 # +new-epoch 1", &e),
			 0);
	assert_int_equal(sl_parse_sentinel("2150:X 01 Dec 2026 11:50:17.301 * Sentinel new "
					   "configuration saved on disk",
					   &e),
			 0);
	assert_int_equal(sl_parse_sentinel("garbage", &e), 0);
	assert_int_equal(sl_parse_sentinel("", &e), 0);
	assert_int_equal(sl_parse_sentinel("2150:X 01 Foo 2026 11:50:17.301 # +sdown master m "
					   "10.0.0.1 6379",
					   &e),
			 0);
	assert_int_equal(
	    sl_parse_sentinel("2150:X 01 Dec 2026 11:50:17.301 # +switch-master m", &e), 0);
}

static int fl(const char *line, struct sl_event *e)
{
	return sl_parse_flatline(line, strlen(line), e);
}

static void test_flatline_events(void **state)
{
	struct sl_event e;

	(void)state;
	assert_int_equal(fl("{\"ts\":\"2026-12-01T11:50:16.002000Z\",\"node\":\"controller\","
			    "\"kind\":\"node_down\",\"shard\":\"mymaster\",\"epoch\":0,"
			    "\"instance\":\"n1\",\"verdict\":\"proc_down\"}\n",
			    &e),
			 1);
	assert_int_equal(e.kind, SL_F_DOWN);
	assert_int_equal(e.ts_ms, T0 - 1233);
	assert_string_equal(e.addr, "n1");
	assert_int_equal(fl("{\"ts\":\"2026-12-01T11:50:16.004000Z\",\"node\":\"controller\","
			    "\"kind\":\"would_failover\",\"shard\":\"mymaster\",\"epoch\":0,"
			    "\"from\":\"n1\",\"reason\":\"proc_exit\",\"planned\":false,"
			    "\"timeline\":\"+0 ms failover_start n1: proc_exit\"}",
			    &e),
			 1);
	assert_int_equal(e.kind, SL_F_WOULD_FAILOVER);
	assert_string_equal(e.reason, "proc_exit");
	assert_string_equal(e.master, "mymaster");
	assert_int_equal(fl("{\"ts\":\"2026-12-01T11:50:16.004500Z\",\"node\":\"controller\","
			    "\"kind\":\"would_promote\",\"shard\":\"mymaster\",\"epoch\":0,"
			    "\"instance\":\"n3\",\"from\":\"n1\",\"ranking\":\"n3 n2\"}",
			    &e),
			 1);
	assert_int_equal(e.kind, SL_F_WOULD_PROMOTE);
	assert_string_equal(e.addr, "n1");
	assert_string_equal(e.chosen, "n3");
	assert_int_equal(fl("{\"ts\":\"2026-12-01T11:50:19.100000Z\",\"node\":\"controller\","
			    "\"kind\":\"primary_followed\",\"shard\":\"mymaster\",\"epoch\":1,"
			    "\"instance\":\"n3\",\"from\":\"n1\",\"reason\":\"x\"}",
			    &e),
			 1);
	assert_int_equal(e.kind, SL_F_FOLLOWED);
	/* Other kinds, other lines. */
	assert_int_equal(fl("{\"ts\":\"2026-12-01T11:50:16.004000Z\",\"node\":\"controller\","
			    "\"kind\":\"failover_start\",\"shard\":\"s\",\"from\":\"n1\"}",
			    &e),
			 0);
	assert_int_equal(fl("not json", &e), 0);
	assert_int_equal(fl("{\"kind\":\"would_failover\",\"from\":\"n1\"}", &e), 0); /* no ts */
}

static struct sl_event ev(enum sl_kind k, long long ts, const char *addr, const char *chosen)
{
	struct sl_event e = {.kind = k, .ts_ms = ts};

	snprintf(e.addr, sizeof(e.addr), "%s", addr);
	snprintf(e.chosen, sizeof(e.chosen), "%s", chosen);
	snprintf(e.master, sizeof(e.master), "m");
	return e;
}

static void test_faults(void **state)
{
	const char *p = "10.0.0.1:6379", *r3 = "10.0.0.3:6379", *r2 = "10.0.0.2:6379";
	struct sl_event e[] = {
	    /* Fault 1 (both, out of order): three Sentinels' +sdown, one +odown, the
	     * leader's +promoted-slave, every Sentinel's +switch-master. */
	    ev(SL_S_SWITCH, T0 + 2000, p, r3),
	    ev(SL_S_SDOWN, T0 + 1000, p, ""),
	    ev(SL_S_SDOWN, T0 + 1010, p, ""),
	    ev(SL_S_ODOWN, T0 + 1050, p, ""),
	    ev(SL_S_PROMOTED, T0 + 1900, p, r3),
	    ev(SL_S_SWITCH, T0 + 2010, p, r3),
	    ev(SL_F_DOWN, T0 + 2, p, ""),
	    ev(SL_F_WOULD_FAILOVER, T0 + 4, p, ""),
	    ev(SL_F_WOULD_PROMOTE, T0 + 5, p, r2),
	    ev(SL_F_FOLLOWED, T0 + 2100, p, r3),
	    /* A replica's node_down alone is no fault. */
	    ev(SL_F_DOWN, T0 + 60000, r2, ""),
	    /* Fault 2, a minute later: flatline only (a hung primary Sentinel missed). */
	    ev(SL_F_DOWN, T0 + 120000, r3, ""),
	    ev(SL_F_WOULD_FAILOVER, T0 + 120500, r3, ""),
	    ev(SL_F_WOULD_PROMOTE, T0 + 120501, r3, r2),
	    /* Fault 3: Sentinel only. */
	    ev(SL_S_SDOWN, T0 + 300000, r3, ""),
	    ev(SL_S_ODOWN, T0 + 300010, r3, ""),
	    ev(SL_S_SWITCH, T0 + 301000, r3, r2),
	};
	struct sl_fault f[8];
	int n = sl_faults(e, sizeof(e) / sizeof(e[0]), 30000, f, 8);

	(void)state;
	assert_int_equal(n, 3);
	assert_string_equal(f[0].addr, p);
	assert_int_equal(f[0].s_sdown_ms, T0 + 1000);
	assert_int_equal(f[0].s_odown_ms, T0 + 1050);
	assert_int_equal(f[0].s_switch_ms, T0 + 2000);
	assert_string_equal(f[0].s_chosen, r3);
	assert_int_equal(f[0].f_down_ms, T0 + 2);
	assert_int_equal(f[0].f_would_ms, T0 + 4);
	assert_int_equal(f[0].f_promote_ms, T0 + 5);
	assert_string_equal(f[0].f_chosen, r2);
	assert_int_equal(f[0].f_followed_ms, T0 + 2100);
	assert_string_equal(f[0].f_followed, r3);
	assert_string_equal(f[1].addr, r3);
	assert_int_equal(f[1].f_down_ms, T0 + 120000);
	assert_int_equal(f[1].f_would_ms, T0 + 120500);
	assert_int_equal(f[1].s_switch_ms, 0);
	assert_int_equal(f[1].s_sdown_ms, 0);
	assert_string_equal(f[2].addr, r3);
	assert_int_equal(f[2].s_switch_ms, T0 + 301000);
	assert_string_equal(f[2].s_chosen, r2);
	assert_int_equal(f[2].f_would_ms, 0);
	assert_int_equal(f[2].f_down_ms, 0);
	/* At most max faults. */
	assert_int_equal(sl_faults(e, sizeof(e) / sizeof(e[0]), 30000, f, 2), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sentinel_lines),
	    cmocka_unit_test(test_flatline_events),
	    cmocka_unit_test(test_faults),
	};

	return cmocka_run_group_tests(tests, utc, NULL);
}
