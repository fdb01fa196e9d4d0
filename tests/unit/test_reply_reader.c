// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The reply reader every link to a server or to the controller reads through:
 * limits enforced while the bytes arrive, malformed replies refused. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "common/reply_reader.h"

static struct reply_reader *R;

static int setup(void **s)
{
	(void)s;
	R = reply_reader_new();
	return R ? 0 : -1;
}

static int teardown(void **s)
{
	(void)s;
	reply_reader_free(R);
	return 0;
}

static void feed(const char *s)
{
	assert_int_equal(reply_reader_feed(R, s, strlen(s)), 0);
}

static redisReply *expect_reply(int type)
{
	static redisReply *last;
	redisReply *rep;

	if (last)
		freeReplyObject(last);
	assert_int_equal(reply_reader_next(R, &rep), 1);
	assert_non_null(rep);
	assert_int_equal(rep->type, type);
	last = rep;
	return rep;
}

static void expect_more(void)
{
	redisReply *rep;

	assert_int_equal(reply_reader_next(R, &rep), 0);
	assert_null(rep);
}

static void expect_err(int rc, const char *words)
{
	redisReply *rep;

	assert_int_equal(reply_reader_next(R, &rep), rc);
	assert_null(rep);
	assert_non_null(strstr(reply_reader_error(R), words));
	/* Final: the link is to be closed. */
	feed("+OK\r\n");
	assert_int_equal(reply_reader_next(R, &rep), rc);
}

static void test_scalars(void **s)
{
	(void)s;
	feed("+OK\r\n-ERR no\r\n:42\r\n:-7\r\n$3\r\nabc\r\n$-1\r\n$0\r\n\r\n*-1\r\n*0\r\n");
	assert_string_equal(expect_reply(REDIS_REPLY_STATUS)->str, "OK");
	assert_string_equal(expect_reply(REDIS_REPLY_ERROR)->str, "ERR no");
	assert_int_equal(expect_reply(REDIS_REPLY_INTEGER)->integer, 42);
	assert_int_equal(expect_reply(REDIS_REPLY_INTEGER)->integer, -7);
	assert_string_equal(expect_reply(REDIS_REPLY_STRING)->str, "abc");
	expect_reply(REDIS_REPLY_NIL);
	assert_int_equal(expect_reply(REDIS_REPLY_STRING)->len, 0);
	expect_reply(REDIS_REPLY_NIL);
	assert_int_equal(expect_reply(REDIS_REPLY_ARRAY)->elements, 0);
	expect_more();
	assert_int_equal(reply_reader_pending(R), 0);
}

static void test_nested_split_anywhere(void **s)
{
	const char *msg = "*3\r\n:1\r\n*2\r\n$2\r\nhi\r\n*1\r\n+x\r\n$-1\r\n";
	redisReply *rep;

	(void)s;
	for (size_t i = 0; msg[i]; i++) {
		assert_int_equal(reply_reader_feed(R, msg + i, 1), 0);
		if (msg[i + 1])
			expect_more();
	}
	rep = expect_reply(REDIS_REPLY_ARRAY);
	assert_int_equal(rep->elements, 3);
	assert_int_equal(rep->element[1]->elements, 2);
	assert_string_equal(rep->element[1]->element[0]->str, "hi");
	assert_string_equal(rep->element[1]->element[1]->element[0]->str, "x");
	assert_int_equal(rep->element[2]->type, REDIS_REPLY_NIL);
}

/* A huge bulk length is refused from its header, before any of its bytes. */
static void test_huge_bulk_refused_at_header(void **s)
{
	(void)s;
	feed("$4294967296\r\n");
	expect_err(-EMSGSIZE, "bulk string of 4294967296 bytes");
}

static void test_bulk_just_over_limit(void **s)
{
	char hdr[32];

	(void)s;
	snprintf(hdr, sizeof(hdr), "$%u\r\n", REPLY_MAX_BYTES - 6);
	feed(hdr);
	expect_err(-EMSGSIZE, "limit");
}

static void test_bulk_at_limit_accepted(void **s)
{
	size_t n = REPLY_MAX_BYTES - 12; /* "$4194292\r\n" + data + CRLF = limit */
	char *buf = malloc(n + 16);
	int h;

	(void)s;
	h = sprintf(buf, "$%zu\r\n", n);
	assert_int_equal((size_t)h + n + 2, REPLY_MAX_BYTES);
	memset(buf + h, 'a', n);
	memcpy(buf + h + n, "\r\n", 2);
	assert_int_equal(reply_reader_feed(R, buf, h + n + 1), 0);
	expect_more();
	assert_int_equal(reply_reader_feed(R, "\n", 1), 0);
	assert_int_equal(expect_reply(REDIS_REPLY_STRING)->len, n);
	free(buf);
}

static void test_elements_limit(void **s)
{
	(void)s;
	feed("*65537\r\n");
	expect_err(-EMSGSIZE, "more than 65536 array elements");
}

static void test_elements_limit_across_levels(void **s)
{
	(void)s;
	feed("*2\r\n*40000\r\n");
	expect_more();
	for (int i = 0; i < 40000; i++)
		feed(":1\r\n");
	feed("*40000\r\n");
	expect_err(-EMSGSIZE, "array elements");
}

static void test_depth_limit(void **s)
{
	(void)s;
	for (int i = 0; i < REPLY_MAX_DEPTH; i++)
		feed("*1\r\n");
	expect_more();
	feed("*1\r\n");
	expect_err(-EMSGSIZE, "nested deeper than 7");
}

static void test_depth_at_limit_accepted(void **s)
{
	(void)s;
	for (int i = 0; i < REPLY_MAX_DEPTH; i++)
		feed("*1\r\n");
	feed(":5\r\n");
	expect_reply(REDIS_REPLY_ARRAY);
}

static void test_long_line_refused_while_arriving(void **s)
{
	char *buf = malloc(REPLY_MAX_LINE + 2);

	(void)s;
	buf[0] = '+';
	memset(buf + 1, 'x', REPLY_MAX_LINE + 1);
	assert_int_equal(reply_reader_feed(R, buf, REPLY_MAX_LINE + 2), 0);
	expect_err(-EMSGSIZE, "line longer than");
	free(buf);
}

static void test_malformed(void **s)
{
	static const char *bad[] = {
	    "!oops\r\n", "$abc\r\n",	"$-2\r\n",
	    "*-5\r\n",	 "$3\r\nabcde", "+OK\n",
	    ":12a\r\n",	 ":\r\n",	"$1234567890123456\r\n",
	    "%2\r\n",	 "_\r\n",
	};

	(void)s;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct reply_reader *r = reply_reader_new();
		redisReply *rep;
		int rc;

		assert_non_null(r);
		assert_int_equal(reply_reader_feed(r, bad[i], strlen(bad[i])), 0);
		rc = reply_reader_next(r, &rep);
		if (rc >= 0)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_true(reply_reader_error(r)[0]);
		reply_reader_free(r);
	}
}

static void test_header_without_end(void **s)
{
	(void)s;
	feed("*1111111111111111111111111");
	expect_err(-EPROTO, "multibulk length");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_scalars, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nested_split_anywhere, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_huge_bulk_refused_at_header, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bulk_just_over_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bulk_at_limit_accepted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_elements_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_elements_limit_across_levels, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_depth_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_depth_at_limit_accepted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_long_line_refused_while_arriving, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_header_without_end, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
