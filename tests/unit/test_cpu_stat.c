// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The cgroup throttling figure (agent/cpu_stat.c): cgroup v2's throttled_usec, v1's
 * throttled_time in ns, neither, a bad number; and this process's own cgroup found. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "agent/cpu_stat.h"

static char path[64];

static const char *file(const char *text)
{
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/fl-cpustat.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void test_figures(void **state)
{
	(void)state;
	assert_int_equal(cpu_stat_throttled_us(file("usage_usec 10\nnr_throttled 2\n"
						    "throttled_usec 1234\n")),
			 1234);
	unlink(path);
	/* v1: nanoseconds. */
	assert_int_equal(cpu_stat_throttled_us(file("nr_periods 5\nnr_throttled 1\n"
						    "throttled_time 7000999\n")),
			 7000);
	unlink(path);
	/* v2 without the cpu controller: no throttling figure. */
	assert_int_equal(cpu_stat_throttled_us(file("usage_usec 10\nuser_usec 5\n")), -1);
	unlink(path);
	assert_int_equal(cpu_stat_throttled_us(file("throttled_usec -5\nthrottled_usec x\n")), -1);
	unlink(path);
	assert_int_equal(cpu_stat_throttled_us(""), -1);
	assert_int_equal(cpu_stat_throttled_us("/nonexistent/cpu.stat"), -1);
}

/* Whatever this machine's cgroups: either no file, or one whose figure reads. */
static void test_own_cgroup(void **state)
{
	char out[300];

	(void)state;
	cpu_stat_find(getpid(), out, sizeof(out));
	if (out[0])
		assert_true(cpu_stat_throttled_us(out) >= 0);
	cpu_stat_find(-1, out, sizeof(out));
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_figures),
	    cmocka_unit_test(test_own_cgroup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
