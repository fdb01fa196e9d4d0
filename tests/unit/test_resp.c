// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The controller's RESP command reader: framing, limits, inline commands. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include "common/resp.h"

static struct resp_reader *R;

static int setup(void **s)
{
	(void)s;
	R = resp_reader_new();
	return R ? 0 : -1;
}

static int teardown(void **s)
{
	(void)s;
	resp_reader_free(R);
	return 0;
}

static int feed(const char *s)
{
	return resp_feed(R, s, strlen(s));
}

static void expect_cmd(int argc, ...)
{
	struct resp_cmd c;
	va_list ap;

	assert_int_equal(resp_next(R, &c), 1);
	assert_int_equal(c.argc, argc);
	va_start(ap, argc);
	for (int i = 0; i < argc; i++)
		assert_string_equal(c.argv[i], va_arg(ap, const char *));
	va_end(ap);
	resp_cmd_free(&c);
}

static void expect_err(int rc, const char *words)
{
	struct resp_cmd c;

	assert_int_equal(resp_next(R, &c), rc);
	assert_non_null(strstr(resp_error(R), words));
}

static void expect_more(void)
{
	struct resp_cmd c;

	assert_int_equal(resp_next(R, &c), 0);
}

static void test_array(void **s)
{
	(void)s;
	feed("*2\r\n$4\r\nPING\r\n$5\r\nhello\r\n*1\r\n$4\r\nINFO\r\n");
	expect_cmd(2, "PING", "hello");
	expect_cmd(1, "INFO");
	expect_more();
	assert_int_equal(resp_pending(R), 0);
}

static void test_byte_by_byte(void **s)
{
	const char *f = "*3\r\n$8\r\nSENTINEL\r\n$23\r\nget-master-addr-by-name\r\n$0\r\n\r\n";

	(void)s;
	for (const char *p = f; p[1]; p++) {
		resp_feed(R, p, 1);
		expect_more();
	}
	resp_feed(R, f + strlen(f) - 1, 1);
	expect_cmd(3, "SENTINEL", "get-master-addr-by-name", "");
}

static void test_binary_arg(void **s)
{
	struct resp_cmd c;

	(void)s;
	resp_feed(R, "*1\r\n$3\r\na\0b\r\n", 13);
	assert_int_equal(resp_next(R, &c), 1);
	assert_int_equal(c.lens[0], 3);
	assert_memory_equal(c.argv[0], "a\0b", 3);
	resp_cmd_free(&c);
}

static void test_inline(void **s)
{
	(void)s;
	feed("PING\r\n\r\n  SENTINEL   masters \nping");
	expect_cmd(1, "PING");
	expect_cmd(2, "SENTINEL", "masters");
	expect_more();
	feed("\r\n");
	expect_cmd(1, "ping");
}

static void test_empty_arrays_skipped(void **s)
{
	(void)s;
	feed("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n");
	expect_cmd(1, "PING");
}

static void test_max_args(void **s)
{
	char hdr[32];

	(void)s;
	snprintf(hdr, sizeof(hdr), "*%d\r\n", RESP_MAX_ARGS);
	feed(hdr);
	for (int i = 0; i < RESP_MAX_ARGS; i++)
		feed("$1\r\nx\r\n");
	{
		struct resp_cmd c;

		assert_int_equal(resp_next(R, &c), 1);
		assert_int_equal(c.argc, RESP_MAX_ARGS);
		resp_cmd_free(&c);
	}
	snprintf(hdr, sizeof(hdr), "*%d\r\n", RESP_MAX_ARGS + 1);
	feed(hdr);
	expect_err(-EMSGSIZE, "too many arguments");
}

static void test_oversized_bulk_refused_early(void **s)
{
	(void)s;
	/* Refused on the header: nothing of the 2 MiB is waited for. */
	feed("*1\r\n$2097152\r\n");
	expect_err(-EMSGSIZE, "frame larger");
}

/* Before authentication a peer gets small frames (the controller sets 64 KiB). */
static void test_lower_frame_limit(void **s)
{
	(void)s;
	resp_reader_set_max_frame(R, 100);
	feed("*1\r\n$50\r\n");
	feed("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
	expect_cmd(1, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	feed("*1\r\n$200\r\n");
	expect_err(-EMSGSIZE, "frame larger than 100 bytes");
}

static void test_frame_total_limit(void **s)
{
	char *big = malloc(600000);

	(void)s;
	memset(big, 'a', 600000);
	feed("*2\r\n$600000\r\n");
	resp_feed(R, big, 600000);
	feed("\r\n$600000\r\n");
	expect_err(-EMSGSIZE, "frame larger");
	free(big);
}

static void test_malformed(void **s)
{
	static const struct {
		const char *in, *words;
	} cases[] = {
	    {"*1\r\n:1\r\n", "expected '$'"},
	    {"*1\r\n$-5\r\n", "invalid bulk length"},
	    {"*1\r\n$-1\r\n", "invalid bulk length"},
	    {"*1\r\n$3\r\nabcd\r\n", "not followed by CRLF"},
	    {"*x\r\n", "invalid multibulk length"},
	    {"*1\n$1\r\na\r\n", "invalid multibulk length"},
	    {"*1\r\n$99999999999999999999\r\n", "invalid bulk length"},
	    {"*1\r\n$\r\n", "invalid bulk length"},
	    {"*1\r\n*1\r\n$1\r\na\r\n", "expected '$'"},
	    {"*99999999999999999999\r\n", "invalid multibulk length"},
	};

	(void)s;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct resp_reader *r = resp_reader_new();
		struct resp_cmd c;
		int rc;

		resp_feed(r, cases[i].in, strlen(cases[i].in));
		rc = resp_next(r, &c);
		if (rc >= 0 || !strstr(resp_error(r), cases[i].words))
			fail_msg("case %zu '%s': rc %d, error '%s'", i, cases[i].in, rc,
				 resp_error(r));
		resp_reader_free(r);
	}
}

static void test_inline_too_long(void **s)
{
	char *line = malloc(RESP_MAX_INLINE + 2);

	(void)s;
	memset(line, 'a', RESP_MAX_INLINE + 1);
	line[RESP_MAX_INLINE + 1] = '\0';
	feed(line);
	expect_err(-EMSGSIZE, "too big inline request");
	free(line);
}

static void test_replies(void **s)
{
	struct evbuffer *b = evbuffer_new();
	char out[256];
	size_t n;

	(void)s;
	resp_status(b, "OK");
	resp_error_reply(b, "ERR bad\r\nthing");
	resp_int(b, -3);
	resp_str(b, "hi");
	resp_nil(b);
	resp_array(b, 2);
	resp_null_array(b);
	n = evbuffer_remove(b, out, sizeof(out) - 1);
	out[n] = '\0';
	assert_string_equal(out,
			    "+OK\r\n-ERR bad  thing\r\n:-3\r\n$2\r\nhi\r\n$-1\r\n*2\r\n*-1\r\n");
	/* Errors of every length around the copy buffer's (512): one line each. */
	for (size_t len = 505; len <= 1030; len++) {
		char e[1100], want[1200];

		memset(e, 'e', len);
		e[len] = '\0';
		e[len / 2] = '\n';
		e[len - 1] = '\r';
		resp_error_reply(b, e);
		e[len / 2] = e[len - 1] = ' ';
		snprintf(want, sizeof(want), "-%s\r\n", e);
		assert_int_equal(evbuffer_get_length(b), len + 3);
		assert_memory_equal(evbuffer_pullup(b, -1), want, len + 3);
		evbuffer_drain(b, len + 3);
	}
	evbuffer_free(b);
}

/* Numbers and lengths as printf would write them, at the extremes; long bulk
 * strings and statuses take the path past the short buffer. */
static void test_reply_numbers(void **s)
{
	struct evbuffer *b = evbuffer_new();
	char big[600], out[1400], want[1400];
	size_t n;

	(void)s;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	resp_int(b, 0);
	resp_int(b, -9223372036854775807LL - 1);
	resp_int(b, 9223372036854775807LL);
	resp_array(b, 0);
	resp_array(b, 1024);
	resp_bulk(b, "", 0);
	resp_str(b, big);
	resp_status(b, big + 500);
	n = evbuffer_remove(b, out, sizeof(out) - 1);
	out[n] = '\0';
	snprintf(want, sizeof(want),
		 ":0\r\n:-9223372036854775808\r\n:9223372036854775807\r\n*0\r\n*1024\r\n$0\r\n\r\n"
		 "$%zu\r\n%s\r\n+%s\r\n",
		 strlen(big), big, big + 500);
	assert_string_equal(out, want);
	evbuffer_free(b);
}

/* Into a caller's buffer (a REPORT's answer): the same bytes as the evbuffer
 * writers, each within the room its header promises. */
static void test_reply_into_buffer(void **s)
{
	struct evbuffer *b = evbuffer_new();
	char buf[512], want[512], *p = buf;
	size_t n, k;

	(void)s;
	k = resp_fmt_line(p, ':', -9223372036854775807LL - 1);
	assert_true(k <= RESP_LINE_MAX);
	p += k;
	p += resp_fmt_line(p, '*', 5);
	p += resp_fmt_status(p, "OK", 2);
	p += resp_fmt_bulk(p, "s0001n1", 7);
	p += resp_fmt_bulk(p, "", 0);
	resp_int(b, -9223372036854775807LL - 1);
	resp_array(b, 5);
	resp_status(b, "OK");
	resp_str(b, "s0001n1");
	resp_bulk(b, "", 0);
	n = evbuffer_remove(b, want, sizeof(want));
	assert_int_equal((size_t)(p - buf), n);
	assert_memory_equal(buf, want, n);
	evbuffer_free(b);
}

/* A REPORT-sized frame: every argument, its length and its NUL, from one block
 * (argv, lens and the strings), and the next frame left whole behind it. */
static void test_many_args_one_block(void **s)
{
	struct resp_cmd c;
	char frame[4096], arg[32];
	size_t n = 0;

	(void)s;
	n += snprintf(frame + n, sizeof(frame) - n, "*31\r\n$6\r\nREPORT\r\n");
	for (int i = 0; i < 30; i++) {
		snprintf(arg, sizeof(arg), i == 7 ? "" : "k%d=%0*d", i, i, 0);
		n += snprintf(frame + n, sizeof(frame) - n, "$%zu\r\n%s\r\n", strlen(arg), arg);
	}
	n += snprintf(frame + n, sizeof(frame) - n, "*1\r\n$4\r\nPI");
	assert_int_equal(resp_feed(R, frame, n), 0);
	assert_int_equal(resp_next(R, &c), 1);
	assert_int_equal(c.argc, 31);
	assert_string_equal(c.argv[0], "REPORT");
	for (int i = 0; i < 30; i++) {
		snprintf(arg, sizeof(arg), i == 7 ? "" : "k%d=%0*d", i, i, 0);
		assert_string_equal(c.argv[i + 1], arg);
		assert_int_equal(c.lens[i + 1], strlen(arg));
	}
	resp_cmd_free(&c);
	assert_null(c.argv);
	expect_more();
	feed("NG\r\n");
	expect_cmd(1, "PING");
	assert_int_equal(resp_pending(R), 0);
}

/* Frames of 1 to 70 arguments (the guard keeps where the first 64 are; past that
 * the frame is read again), fed a byte at a time behind a frame already begun:
 * every argument whole, binary bytes and lengths kept, the frames in order. */
static void test_args_where_the_guard_saw_them(void **s)
{
	static char frame[8192];
	struct resp_cmd c;
	char arg[32];

	(void)s;
	for (int argc = 1; argc <= 70; argc++) {
		size_t n = 0;

		n += snprintf(frame + n, sizeof(frame) - n, "*%d\r\n", argc);
		for (int i = 0; i < argc; i++) {
			size_t len = (size_t)(i % 5) * 3;

			memset(arg, 'a' + i % 26, len);
			if (len)
				arg[0] = '\r'; /* bytes, not lines */
			n += snprintf(frame + n, sizeof(frame) - n, "$%zu\r\n", len);
			memcpy(frame + n, arg, len);
			n += len;
			memcpy(frame + n, "\r\n", 2);
			n += 2;
		}
		for (size_t i = 0; i < n; i++)
			assert_int_equal(resp_feed(R, frame + i, 1), 0);
		assert_int_equal(resp_next(R, &c), 1);
		assert_int_equal(c.argc, argc);
		for (int i = 0; i < argc; i++) {
			size_t len = (size_t)(i % 5) * 3;

			assert_int_equal(c.lens[i], len);
			assert_int_equal(c.argv[i][len], '\0');
			if (len) {
				assert_int_equal(c.argv[i][0], '\r');
				assert_int_equal(c.argv[i][len - 1], len > 1 ? 'a' + i % 26 : '\r');
			}
		}
		resp_cmd_free(&c);
		assert_int_equal(resp_pending(R), 0);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Each line consumed by moving the rest of the buffer made 16 KiB of
 * "\n" cost ~134 MB of copying. Consuming moves nothing now; what is left of a
 * read moves once, at the next feed. */
static void test_empty_lines_linear(void **s)
{
	static char big[512 << 10], chunk[16384];
	double t0;

	(void)s;
	memset(big, '\n', sizeof(big));
	for (size_t i = 0; i + 1 < sizeof(big); i += 512) /* "\r\n" too */
		big[i] = '\r';
	memcpy(chunk, big, sizeof(chunk));
	/* 512 Ki empty lines in one feed, a PING behind them: quadratic, ~137 GB of
	 * copying (seconds to minutes); linear, well under a millisecond. */
	t0 = now_s();
	assert_int_equal(resp_feed(R, big, sizeof(big)), 0);
	assert_int_equal(feed("PING\r\n"), 0);
	expect_cmd(1, "PING");
	expect_more();
	assert_true(now_s() - t0 < 1.0);
	assert_int_equal(resp_moved(R), 0);
	/* 16 MiB as 1,024 reads of 16 KiB: nothing is left between reads, so
	 * nothing is ever moved. */
	for (int i = 0; i < 1024; i++) {
		assert_int_equal(resp_feed(R, chunk, sizeof(chunk)), 0);
		expect_more();
		assert_int_equal(resp_pending(R), 0);
	}
	assert_int_equal(feed("PI"), 0);
	expect_more();
	assert_int_equal(feed("NG\r\n"), 0);
	expect_cmd(1, "PING");
	assert_int_equal(resp_moved(R), 0); /* the half line was at the start already */
	assert_true(now_s() - t0 < 2.0);
}

/* One read holding many short commands, and one ending mid-command: every
 * command is returned, and only the unfinished tail is moved. */
static void test_many_lines_one_read(void **s)
{
	static char buf[1 << 20];
	const char *line[] = {"PING\n", "x  \r\n", "\t y\n"};
	size_t n = 0, cmds = 0, want = 0;
	struct resp_cmd c;
	double t0;

	(void)s;
	for (int i = 0; n + 8 <= sizeof(buf); i++, want++) {
		memcpy(buf + n, line[i % 3], strlen(line[i % 3]));
		n += strlen(line[i % 3]);
	}
	memcpy(buf + n, "PI", 2); /* half a line */
	n += 2;
	t0 = now_s();
	assert_int_equal(resp_feed(R, buf, n), 0);
	while (resp_next(R, &c) == 1) {
		cmds++;
		resp_cmd_free(&c);
	}
	assert_int_equal(cmds, want);
	assert_int_equal(resp_pending(R), 2);
	assert_int_equal(feed("NG\r\n"), 0);
	expect_cmd(1, "PING");
	assert_true(resp_moved(R) <= 2);
	assert_true(now_s() - t0 < 2.0);
	/* A multibulk frame split over reads, after commands: the same. */
	assert_int_equal(feed("PING\r\n*2\r\n$4\r\nECHO\r\n$3\r\nab"), 0);
	expect_cmd(1, "PING");
	expect_more();
	assert_int_equal(feed("c\r\n"), 0);
	expect_cmd(2, "ECHO", "abc");
	assert_int_equal(resp_pending(R), 0);
}

/* An inline line a byte at a time: found once it ends, its bytes looked at once. */
static void test_inline_byte_by_byte(void **s)
{
	const char *line = "SET   key\tvalue\r\n";

	(void)s;
	for (const char *p = line; p[1]; p++) {
		assert_int_equal(resp_feed(R, p, 1), 0);
		expect_more();
	}
	assert_int_equal(resp_feed(R, "\n", 1), 0);
	expect_cmd(3, "SET", "key", "value");
	/* A lone CR is not an empty line: it is the start of one. */
	assert_int_equal(feed("\r"), 0);
	expect_more();
	assert_int_equal(feed("\nPING\n"), 0);
	expect_cmd(1, "PING");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_array, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_byte_by_byte, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_binary_arg, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_inline, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_empty_arrays_skipped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_max_args, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_oversized_bulk_refused_early, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_frame_total_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lower_frame_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_inline_too_long, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_replies, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reply_numbers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reply_into_buffer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_args_one_block, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_args_where_the_guard_saw_them, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_empty_lines_linear, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_lines_one_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_inline_byte_by_byte, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
