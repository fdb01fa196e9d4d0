// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failover's durable state file and REPORT parsing (with the REPORT key table
 * the agent's builder shares), on the harness of fo_harness.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>
#include "common/report_keys.h"
#include "fo_harness.h"

/* ---- the state file ---- */

static void test_state_round_trip(void **state)
{
	char path[] = "/tmp/fl-state-XXXXXX", err[512];
	struct fo_shard *s = fo_find_shard(&C, "s");
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	s->primary = N("n3")->idx;
	s->epoch = 42;
	assert_int_equal(fo_state_save(&C, path, err, sizeof(err)), 0);
	s->primary = -1;
	s->epoch = 0;
	assert_int_equal(fo_state_load(&C, path, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(s->primary, N("n3")->idx);
	assert_int_equal(s->epoch, 42);
	unlink(path);
	assert_int_equal(fo_state_load(&C, path, err, sizeof(err)), -ENOENT);
}

static void test_state_corruption(void **state)
{
	char good[] = "flatline-state 1\nshard s epoch 7 primary n2\n";
	char text[256], err[512];
	unsigned long crc = crc32(0, (const unsigned char *)good, strlen(good));

	(void)state;
	snprintf(text, sizeof(text), "%send 1 %08lx\n", good, crc);
	assert_int_equal(fo_state_parse(&C, text, strlen(text), "st", err, sizeof(err)), 0);
	assert_int_equal(fo_find_shard(&C, "s")->epoch, 7);
	/* One flipped digit: the checksum says so. */
	text[31] = '8';
	assert_int_equal(fo_state_parse(&C, text, strlen(text), "st", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "checksum mismatch"));
	assert_non_null(strstr(err, "failed to load state file st"));
	text[31] = '7';
	/* Truncated: no end line, or a cut line. */
	assert_int_equal(fo_state_parse(&C, good, strlen(good), "st", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(fo_state_parse(&C, text, strlen(text) - 3, "st", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "truncated"));
	/* Not ours. */
	assert_int_equal(fo_state_parse(&C, "hello\n", 6, "st", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a flatline state file"));
	/* Garbage line, NUL byte. */
	snprintf(text, sizeof(text), "flatline-state 1\nshard s epoch x primary n2\nend 1 0\n");
	assert_int_equal(fo_state_parse(&C, text, strlen(text), "st", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 2"));
	assert_int_equal(fo_state_parse(&C, "flatline-state 1\n\0", 18, "st", err, sizeof(err)),
			 -EINVAL);
	/* A shard no longer configured: a warning, not an error. */
	{
		char g2[] = "flatline-state 1\nshard gone epoch 3 primary n9\n";

		crc = crc32(0, (const unsigned char *)g2, strlen(g2));
		snprintf(text, sizeof(text), "%send 1 %08lx\n", g2, crc);
		assert_int_equal(fo_state_parse(&C, text, strlen(text), "st", err, sizeof(err)), 0);
		assert_non_null(strstr(err, "no longer in the cluster file"));
	}
}

/* A crash between writing the state file and renaming it: fo_state_write writes
 * <path>.tmp, fsyncs it, renames it over <path> and fsyncs the directory, so what
 * a crash leaves is the whole previous file beside a torn or empty .tmp, which is
 * never read; and a torn or empty file (every prefix of a real one) is refused,
 * never trusted. The next write replaces the leftover .tmp. */
static void test_state_crash_before_rename(void **state)
{
	char path[] = "/tmp/fl-state-XXXXXX", tmp[64], err[512], text[4096];
	struct fo_shard *s = fo_find_shard(&C, "s");
	int fd = mkstemp(path);
	ssize_t len;
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	s->primary = N("n2")->idx;
	s->epoch = 42;
	assert_int_equal(fo_state_save(&C, path, err, sizeof(err)), 0);
	assert_int_equal(access(tmp, F_OK), -1); /* renamed, nothing left over */
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	len = read(fd, text, sizeof(text));
	close(fd);
	assert_true(len > 0);
	/* Every torn length of it, the empty file too, is refused. */
	for (ssize_t n = 0; n < len; n++)
		assert_int_equal(fo_state_parse(&C, text, n, "st", err, sizeof(err)), -EINVAL);
	/* The crash: half of the next state in the .tmp, the rename never done. */
	f = fopen(tmp, "w");
	assert_non_null(f);
	fwrite("flatline-state 1\nshard s epoch 43 prim", 1, 38, f);
	fclose(f);
	s->primary = -1;
	s->epoch = 0;
	assert_int_equal(fo_state_load(&C, path, err, sizeof(err)), 0);
	assert_int_equal(s->epoch, 42);
	assert_int_equal(s->primary, N("n2")->idx);
	/* The next write replaces the leftover. */
	s->primary = N("n3")->idx;
	s->epoch = 43;
	assert_int_equal(fo_state_save(&C, path, err, sizeof(err)), 0);
	assert_int_equal(access(tmp, F_OK), -1);
	s->epoch = 0;
	assert_int_equal(fo_state_load(&C, path, err, sizeof(err)), 0);
	assert_int_equal(s->epoch, 43);
	assert_int_equal(s->primary, N("n3")->idx);
	unlink(path);
}

/* ---- REPORT parsing ---- */

static void test_report_parse(void **state)
{
	const char *argv[] = {"proc",
			      "down",
			      "exit",
			      "SIGKILL",
			      "role",
			      "slave",
			      "master_host",
			      "10.0.0.1",
			      "master_port",
			      "6379",
			      "master_link_status",
			      "up",
			      "repl_offset",
			      "123",
			      "peer.n1",
			      "down",
			      "peer.n9",
			      "up",
			      "future_key",
			      "whatever",
			      "peer.n2.rtt_us",
			      "55",
			      "lease",
			      "lapsed",
			      "peer.n1.packet_age_ms",
			      "42",
			      "peer.zz.packet_age_ms",
			      "7",
			      "cause",
			      "throttled",
			      "thread_state",
			      "runnable",
			      "wait_ms",
			      "480",
			      "throttled_ms",
			      "470"};
	size_t lens[sizeof(argv) / sizeof(argv[0])];
	int argc = sizeof(argv) / sizeof(argv[0]);
	struct fo_report r;
	char why[128];

	(void)state;
	for (int i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	assert_int_equal(fo_report_parse(&C, &r, argc, argv, lens, why, sizeof(why)), 0);
	assert_int_equal(r.proc, FO_PROC_DOWN);
	assert_string_equal(r.exit, "SIGKILL");
	assert_int_equal(r.repl.role, INFO_ROLE_SLAVE);
	assert_int_equal(r.repl.master_port, 6379);
	assert_int_equal(r.repl.link_up, 1);
	assert_int_equal(r.repl.offset, 123);
	assert_int_equal(fo_report_peer(&r, N("n1")->idx), FO_PEER_DOWN);
	assert_int_equal(fo_report_peer(&r, N("n2")->idx), FO_PEER_UNKNOWN);
	assert_int_equal(r.lease, FO_LEASE_LAPSED);
	assert_int_equal(fo_report_peer_age(&r, N("n1")->idx), 42);
	assert_int_equal(fo_report_peer_age(&r, N("n2")->idx), -1);
	assert_string_equal(r.cause, "throttled");
	assert_string_equal(r.thread_state, "runnable");
	assert_int_equal(r.wait_ms, 480);
	assert_int_equal(r.throttled_ms, 470);
	assert_int_equal(r.run_ms, 0);
	/* The lease words; anything else (a newer agent's) is unknown. */
	for (int i = 0; i < argc; i += 2)
		if (!strcmp(argv[i], "lease")) {
			static const char *const w[] = {"revoked", "held", "soon"};
			static const int want[] = {FO_LEASE_REVOKED, FO_LEASE_HELD,
						   FO_LEASE_UNKNOWN};

			for (int j = 0; j < 3; j++) {
				argv[i + 1] = w[j];
				lens[i + 1] = strlen(w[j]);
				assert_int_equal(
				    fo_report_parse(&C, &r, argc, argv, lens, why, sizeof(why)), 0);
				assert_int_equal(r.lease, want[j]);
			}
			argv[i + 1] = "lapsed";
			lens[i + 1] = strlen("lapsed");
		}
	assert_int_equal(fo_report_parse(&C, &r, argc - 1, argv, lens, why, sizeof(why)), -EINVAL);
	argv[13] = "12x";
	lens[13] = 3;
	assert_int_equal(fo_report_parse(&C, &r, argc, argv, lens, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "repl_offset"));
	argv[13] = "12";
	lens[13] = 3; /* an embedded NUL */
	assert_int_equal(fo_report_parse(&C, &r, argc, argv, lens, why, sizeof(why)), -EINVAL);
	/* Numbers as strtoll reads them (the parser's own fast path up to 18 digits). */
	{
		static const struct {
			const char *v;
			int rc;
			long long n;
		} nums[] = {
		    {"-5", 0, -5},
		    {"007", 0, 7},
		    {"999999999999999999", 0, 999999999999999999LL},
		    {"9223372036854775807", 0, 9223372036854775807LL},
		    {"-9223372036854775808", 0, -9223372036854775807LL - 1},
		    {"9223372036854775808", -EINVAL, 0},
		    {" 42", 0, 42},
		    {"-", -EINVAL, 0},
		    {"", -EINVAL, 0},
		    {"1-", -EINVAL, 0},
		};

		for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
			argv[13] = nums[i].v;
			lens[13] = strlen(nums[i].v);
			assert_int_equal(
			    fo_report_parse(&C, &r, argc, argv, lens, why, sizeof(why)),
			    nums[i].rc);
			if (!nums[i].rc)
				assert_true(r.repl.offset == nums[i].n);
		}
		argv[13] = "123";
		lens[13] = 3;
	}
	/* A string longer than its field is cut to fit, as before. */
	{
		char host[300];

		memset(host, 'h', sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		argv[7] = host;
		lens[7] = strlen(host);
		assert_int_equal(fo_report_parse(&C, &r, argc, argv, lens, why, sizeof(why)), 0);
		assert_int_equal(strlen(r.repl.master_host), sizeof(r.repl.master_host) - 1);
		assert_int_equal(r.repl.master_host[0], 'h');
		argv[7] = "10.0.0.1";
		lens[7] = 8;
	}
}

/* Every key of the table reads back as itself; per-peer keys carry the node id. */
static void test_report_keys(void **state)
{
	const char *peer = NULL;
	size_t plen = 0;
	char key[128];

	(void)state;
	for (int k = 0; k < RK_COUNT; k++) {
		bool per_peer = report_keys[k].suffix != NULL;

		assert_non_null(report_keys[k].name);
		assert_non_null(report_keys[k].meaning);
		report_key_str(k, per_peer ? "n2" : NULL, key, sizeof(key));
		peer = NULL;
		assert_int_equal(report_key_lookup(key, &peer, &plen), k);
		if (per_peer) {
			assert_int_equal(plen, 2);
			assert_memory_equal(peer, "n2", 2);
		}
	}
	assert_string_equal(report_key_str(RK_PEER_RTT_US, "n7", key, sizeof(key)),
			    "peer.n7.rtt_us");
	assert_string_equal(report_key_str(RK_MASTER_LAST_IO_S, NULL, key, sizeof(key)),
			    "master_last_io_seconds_ago");
	assert_int_equal(report_key_lookup("future_key", &peer, &plen), -1);
	assert_int_equal(report_key_lookup("peer.", &peer, &plen), -1);
	assert_int_equal(report_key_lookup("peer.n1.future", &peer, &plen), -1);
	/* The words of `proc`, both ways. */
	for (int p = 0; p < REPORT_PROC_WORDS; p++)
		assert_int_equal(report_proc_parse(report_proc_word(p)), p);
	assert_string_equal(report_proc_word(FO_PROC_HUNG), "hung");
	assert_string_equal(report_proc_word(99), "unknown");
	assert_int_equal(report_proc_parse("sleepy"), FO_PROC_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_state_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_corruption, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_crash_before_rename, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_parse, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_keys, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
