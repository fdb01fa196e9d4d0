// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sentinel.conf as Sentinel reads it (common/sentinel_conf.c): Redis's argument
 * splitting (sdssplitargs), every `sentinel` directive a running Sentinel writes or
 * reads, their order (a master's options before its monitor), and errors with the
 * line number. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "common/sentinel_conf.h"

static int split(const char *line, char **argv, char *buf, size_t buflen)
{
	return sc_split(line, argv, SC_MAX_ARGS, buf, buflen);
}

static void test_split_plain_and_quotes(void **state)
{
	char buf[256], *argv[SC_MAX_ARGS];

	(void)state;
	assert_int_equal(split("  sentinel  monitor\tm 10.0.0.1 6379 2 ", argv, buf, sizeof(buf)),
			 6);
	assert_string_equal(argv[0], "sentinel");
	assert_string_equal(argv[2], "m");
	assert_string_equal(argv[5], "2");
	/* double quotes: escapes as sdssplitargs */
	assert_int_equal(split("a \"x y\\n\\t\\\"\\\\\\x41\\q\" b", argv, buf, sizeof(buf)), 3);
	assert_string_equal(argv[1], "x y\n\t\"\\Aq");
	assert_string_equal(argv[2], "b");
	/* single quotes: only \' */
	assert_int_equal(split("'it\\'s \\n' z", argv, buf, sizeof(buf)), 2);
	assert_string_equal(argv[0], "it's \\n");
	/* a quote inside a word opens there; an empty argument */
	assert_int_equal(split("ab\"c d\" \"\" e", argv, buf, sizeof(buf)), 3);
	assert_string_equal(argv[0], "abc d");
	assert_string_equal(argv[1], "");
	assert_string_equal(argv[2], "e");
	/* \x with one hex digit is kept as x and the digit */
	assert_int_equal(split("\"\\x4\"", argv, buf, sizeof(buf)), 1);
	assert_string_equal(argv[0], "x4");
	assert_int_equal(split("", argv, buf, sizeof(buf)), 0);
	assert_int_equal(split("   \t ", argv, buf, sizeof(buf)), 0);
}

static void test_split_errors(void **state)
{
	char buf[64], *argv[SC_MAX_ARGS];

	(void)state;
	assert_int_equal(split("a \"b", argv, buf, sizeof(buf)), -EINVAL); /* unterminated */
	assert_int_equal(split("a 'b", argv, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(split("\"ab\"c", argv, buf, sizeof(buf)), -EINVAL); /* no blank after */
	assert_int_equal(split("'ab'c", argv, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(split("\"a\\x00b\"", argv, buf, sizeof(buf)), -EINVAL); /* NUL */
	assert_int_equal(split("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17", argv, buf, sizeof(buf)),
			 -E2BIG);
	assert_int_equal(sc_split("aaaaaaaaaa", argv, SC_MAX_ARGS, buf, 8), -E2BIG);
}

/* What a Sentinel 7 writes after CONFIG REWRITE, and the options it reads. */
static const char rewritten[] =
    "# sentinel.conf\r\n"
    "port 26380\n"
    "bind 10.0.0.9 127.0.0.1\n"
    "daemonize no\n"
    "requirepass \"0123456789abcdefXYZ\"\n"
    "  # an indented comment\n"
    "sentinel resolve-hostnames no\n"
    "sentinel announce-hostnames no\n"
    "SENTINEL MONITOR cache 10.0.0.1 6379 2\n"
    "sentinel down-after-milliseconds cache 5000\n"
    "sentinel failover-timeout cache 60000\n"
    "sentinel parallel-syncs cache 3\n"
    "sentinel auth-pass cache \"pa ss\\\"word\"\n"
    "sentinel auth-user cache app\n"
    "sentinel notification-script cache /usr/local/bin/notify.sh\n"
    "sentinel client-reconfig-script cache /usr/local/bin/reconf.sh\n"
    "sentinel master-reboot-down-after-period cache 1000\n"
    "sentinel rename-command cache CONFIG XCONFIG\n"
    "sentinel rename-command cache REPLICAOF XREPLICAOF\n"
    "sentinel myid 1c2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c\n"
    "sentinel deny-scripts-reconfig yes\n"
    "sentinel monitor other 10.0.1.1 6380 1\n"
    "sentinel config-epoch cache 7\n"
    "sentinel leader-epoch cache 8\n"
    "sentinel known-replica cache 10.0.0.2 6379\n"
    "sentinel known-slave cache 10.0.0.3 6379\n"
    "sentinel known-sentinel cache 10.0.0.8 26379 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
    "sentinel known-sentinel cache 10.0.0.7 26379\n" /* old form: ignored */
    "sentinel known-replica other fd00::2 6380\n"
    "sentinel current-epoch 8\n"
    "sentinel announce-ip \"10.0.0.9\"\n"
    "sentinel announce-port 26390\n"
    "sentinel sentinel-user sent\n"
    "sentinel sentinel-pass sentpass\n"
    "sentinel\n"
    "latency-tracking-info-percentiles 50 99 99.9";

static void test_parse_rewritten(void **state)
{
	struct sc_conf *c = malloc(sizeof(*c));
	const struct sc_master *m, *o;
	char err[300];

	(void)state;
	assert_int_equal(sc_parse(c, "s.conf", rewritten, strlen(rewritten), err, sizeof(err)), 0);
	assert_int_equal(c->nmasters, 2);
	m = sc_find_master(c, "cache");
	o = sc_find_master(c, "other");
	assert_non_null(m);
	assert_non_null(o);
	assert_string_equal(m->addr.host, "10.0.0.1");
	assert_int_equal(m->addr.port, 6379);
	assert_int_equal(m->line, 9);
	assert_int_equal(m->quorum, 2);
	assert_int_equal(m->down_after_ms.v, 5000);
	assert_int_equal(m->down_after_ms.line, 10);
	assert_int_equal(m->failover_timeout_ms.v, 60000);
	assert_int_equal(m->parallel_syncs.v, 3);
	assert_string_equal(m->auth_pass.v, "pa ss\"word");
	assert_int_equal(m->auth_pass.line, 13);
	assert_string_equal(m->auth_user.v, "app");
	assert_string_equal(m->notification_script.v, "/usr/local/bin/notify.sh");
	assert_string_equal(m->client_reconfig_script.v, "/usr/local/bin/reconf.sh");
	assert_int_equal(m->reboot_down_after_ms.v, 1000);
	assert_int_equal(m->nrenamed, 2);
	assert_int_equal(m->renamed_line, 18);
	assert_string_equal(m->renamed, "CONFIG->XCONFIG REPLICAOF->XREPLICAOF");
	assert_int_equal(m->config_epoch.v, 7);
	assert_int_equal(m->leader_epoch.v, 8);
	assert_int_equal(m->nreplicas, 2);
	assert_string_equal(m->replicas[0].host, "10.0.0.2");
	assert_string_equal(m->replicas[1].host, "10.0.0.3");
	assert_int_equal(m->replicas[1].priority, -1); /* a file says no priority */
	assert_int_equal(m->nsentinels, 1);
	assert_string_equal(m->sentinels[0].runid, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	assert_int_equal(o->nreplicas, 1);
	assert_string_equal(o->replicas[0].host, "fd00::2");
	assert_int_equal(o->down_after_ms.line, 0); /* not set */
	assert_string_equal(c->myid, "1c2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c");
	assert_int_equal(c->current_epoch.v, 8);
	assert_string_equal(c->announce_ip.v, "10.0.0.9");
	assert_int_equal(c->announce_port.v, 26390);
	assert_int_equal(c->port.v, 26380);
	assert_string_equal(c->bind.v, "10.0.0.9");
	assert_string_equal(c->requirepass.v, "0123456789abcdefXYZ");
	assert_string_equal(c->sentinel_user.v, "sent");
	assert_string_equal(c->sentinel_pass.v, "sentpass");
	assert_int_equal(c->resolve_hostnames, 0);
	assert_int_equal(c->announce_hostnames, 0);
	assert_int_equal(c->deny_scripts_reconfig, 1);
	/* kept for the report: daemonize, the latency option, myid, epochs, ... */
	bool daemonize = false, latency = false, myid = false;
	for (int i = 0; i < c->nnotes; i++) {
		daemonize |= !strcmp(c->notes[i].what, "daemonize") && c->notes[i].line == 4;
		latency |= !strcmp(c->notes[i].what, "latency-tracking-info-percentiles") &&
			   c->notes[i].line == 36;
		myid |= !strcmp(c->notes[i].what, "sentinel myid") && c->notes[i].line == 20;
	}
	assert_true(daemonize && latency && myid);
	free(c);
}

/* A master's options before its monitor line: Sentinel queues them. */
static void test_parse_order_and_hostnames(void **state)
{
	static const char text[] = "sentinel known-replica m h2.example 6379\n"
				   "sentinel down-after-milliseconds m 700\n"
				   "sentinel monitor m h1.example 6379 1\n"
				   "sentinel resolve-hostnames yes\n";
	struct sc_conf *c = malloc(sizeof(*c));
	char err[300];

	(void)state;
	assert_int_equal(sc_parse(c, "o.conf", text, strlen(text), err, sizeof(err)), 0);
	assert_int_equal(c->nmasters, 1);
	assert_string_equal(c->masters[0].addr.host, "h1.example");
	assert_int_equal(c->masters[0].down_after_ms.v, 700);
	assert_string_equal(c->masters[0].replicas[0].host, "h2.example");
	/* the same without resolve-hostnames: Sentinel would not resolve them */
	assert_int_equal(sc_parse(c, "o.conf", text, strlen(text) - 31, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "o.conf:3: sentinel monitor: 'h1.example' is not an IP"));
	free(c);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {"port 1\nsentinel monitor m 10.0.0.1 6379\n", "f:2: sentinel monitor: wrong number"},
	    {"sentinel monitor m 10.0.0.1 6379 0\n", "f:1: sentinel monitor: Quorum must be 1"},
	    {"sentinel monitor m 10.0.0.1 70000 2\n", "f:1: sentinel monitor: bad port"},
	    {"sentinel monitor m 10.0.0.1 6379 2\nsentinel monitor m 10.0.0.2 6379 2\n",
	     "f:2: sentinel monitor: Duplicate master name"},
	    {"\n\nsentinel down-after-milliseconds nope 100\n",
	     "f:3: sentinel down-after-milliseconds: No such master"},
	    {"sentinel monitor m 10.0.0.1 6379 2\nsentinel down-after-milliseconds m 0\n",
	     "f:2: sentinel down-after-milliseconds: not a number"},
	    {"sentinel monitor m 10.0.0.1 6379 2\nsentinel failover-timeout m 10s\n",
	     "f:2: sentinel failover-timeout: not a number"},
	    {"sentinel monitor m 10.0.0.1 6379 2\nsentinel parallel-syncs m\n",
	     "f:2: sentinel parallel-syncs: wrong number"},
	    {"sentinel monitor m 10.0.0.1 6379 2\nsentinel known-replica m 10.0.0.2 6379\n"
	     "sentinel known-slave m 10.0.0.2 6379\n",
	     "f:3: sentinel known-slave: Duplicate hostname and port"},
	    {"sentinel monitor m 10.0.0.1 6379 2\nsentinel known-sentinel m 10.0.0.2 26379 a\n"
	     "sentinel known-sentinel m 10.0.0.3 26379 a\n",
	     "f:3: sentinel known-sentinel: Duplicate runid"},
	    {"sentinel myid abc\n", "f:1: sentinel myid: Malformed"},
	    {"sentinel resolve-hostnames maybe\n",
	     "f:1: sentinel resolve-hostnames: Please specify"},
	    {"sentinel announce-port 99999\n", "f:1: sentinel announce-port: not a number"},
	    {"sentinel current-epoch\n", "f:1: sentinel current-epoch: wrong number"},
	    {"sentinel monitor m 10.0.0.1 6379 2\nsentinel frobnicate m 1\n",
	     "f:2: sentinel frobnicate: Unrecognized sentinel configuration statement"},
	    {"port 1\nbind \"10.0.0.1\nsentinel monitor m 10.0.0.1 6379 2\n",
	     "f:2: Unbalanced quotes"},
	    {"sentinel auth-pass m 'x'y\n", "f:1: Unbalanced quotes"},
	    {"port 1\nport\0 2\n", "f:2: NUL byte"},
	    {"sentinel monitor m 10.0.0.1 6379 2\nsentinel known-replica m ::zz 6379\n",
	     "f:2: sentinel known-replica: '::zz' is not an IP"},
	};
	struct sc_conf *c = malloc(sizeof(*c));
	char err[300];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = strlen(cases[i].text);

		if (strstr(cases[i].want, "NUL"))
			len = 14;
		assert_int_equal(sc_parse(c, "f", cases[i].text, len, err, sizeof(err)), -EINVAL);
		if (!strstr(err, cases[i].want))
			fail_msg("case %zu: got '%s', want '%s'", i, err, cases[i].want);
	}
	free(c);
}

static void test_parse_limits(void **state)
{
	struct sc_conf *c = malloc(sizeof(*c));
	char err[300], *text = malloc(SC_MAX_LINE + 64);

	(void)state;
	memset(text, 'a', SC_MAX_LINE + 10);
	memcpy(text, "port 1\n", 7);
	text[SC_MAX_LINE + 10] = '\0';
	assert_int_equal(sc_parse(c, "f", text, strlen(text), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "f:2: line longer than"));
	/* an empty file and one of comments: nothing, no error */
	assert_int_equal(sc_parse(c, "f", "", 0, err, sizeof(err)), 0);
	assert_int_equal(sc_parse(c, "f", "# x\n\n   \n", 9, err, sizeof(err)), 0);
	assert_int_equal(c->nmasters, 0);
	free(text);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_split_plain_and_quotes),
	    cmocka_unit_test(test_split_errors),
	    cmocka_unit_test(test_parse_rewritten),
	    cmocka_unit_test(test_parse_order_and_hostnames),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_parse_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
