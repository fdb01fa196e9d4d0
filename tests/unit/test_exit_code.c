// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "agent/exit_code.h"

static void test_decode_table(void **state)
{
	static const struct {
		uint32_t code;
		int signal, core, status;
	} cases[] = {
	    {0x0000, 0, 0, 0},	 /* exit(0) */
	    {0x0300, 0, 0, 3},	 /* exit(3) */
	    {0xff00, 0, 0, 255}, /* exit(-1) */
	    {0x0009, 9, 0, 0},	 /* SIGKILL */
	    {0x008b, 11, 1, 0},	 /* SIGSEGV, core dumped */
	    {0x000b, 11, 0, 0},	 /* SIGSEGV, no core (ulimit -c 0) */
	    {0x0086, 6, 1, 0},	 /* SIGABRT, core dumped */
	    {0x000f, 15, 0, 0},	 /* SIGTERM */
	    {0x0040, 64, 0, 0},	 /* SIGRTMAX */
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct exit_cause c;

		exit_code_decode(cases[i].code, &c);
		assert_int_equal(c.signal, cases[i].signal);
		assert_int_equal(c.core_dumped, cases[i].core);
		assert_int_equal(c.status, cases[i].status);
	}
}

static void test_signal_names(void **state)
{
	char buf[16];

	(void)state;
	assert_string_equal(exit_code_signame(9, buf, sizeof(buf)), "SIGKILL");
	assert_string_equal(exit_code_signame(11, buf, sizeof(buf)), "SIGSEGV");
	assert_string_equal(exit_code_signame(6, buf, sizeof(buf)), "SIGABRT");
	assert_string_equal(exit_code_signame(1, buf, sizeof(buf)), "SIGHUP");
	assert_string_equal(exit_code_signame(31, buf, sizeof(buf)), "SIGSYS");
	assert_string_equal(exit_code_signame(32, buf, sizeof(buf)), "SIGRTMIN");
	assert_string_equal(exit_code_signame(35, buf, sizeof(buf)), "SIGRTMIN+3");
	assert_null(exit_code_signame(0, buf, sizeof(buf)));
	assert_null(exit_code_signame(65, buf, sizeof(buf)));
	assert_null(exit_code_signame(-1, buf, sizeof(buf)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_table),
	    cmocka_unit_test(test_signal_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
