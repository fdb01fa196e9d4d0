// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The cluster bus port as the agent reads it: CONFIG GET cluster-port's answer (RESP2's
 * array, RESP3's map), else CLUSTER NODES' "@cport" of the line flagged myself; no
 * guess when neither tells it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>
#include "agent/agent_layers.h"

static redisReply str(const char *s)
{
	return (redisReply){.type = REDIS_REPLY_STRING, .str = (char *)s, .len = strlen(s)};
}

/* CONFIG GET cluster-port answered [cluster-port, VALUE] by a server on port 7000. */
static int config(int type, const char *value, uint16_t *bus)
{
	redisReply k = str("cluster-port"), v = str(value), *el[] = {&k, &v};
	redisReply r = {.type = type, .elements = 2, .element = el};

	return agent_bus_config_port(&r, 7000, bus);
}

static void test_config_array(void **state)
{
	redisReply err = {.type = REDIS_REPLY_ERROR, .str = "ERR unknown command 'CONFIG'"};
	redisReply empty = {.type = REDIS_REPLY_ARRAY}; /* a server without cluster-port */
	uint16_t bus = 1;

	(void)state;
	assert_int_equal(config(REDIS_REPLY_ARRAY, "17100", &bus), 0);
	assert_int_equal(bus, 17100);
	/* 0: the servers' own rule, port + 10000 (not a guess: what it binds). */
	assert_int_equal(config(REDIS_REPLY_ARRAY, "0", &bus), 0);
	assert_int_equal(bus, 17000);
	/* Refused or unreadable: no port, the caller asks CLUSTER NODES. */
	assert_int_equal(agent_bus_config_port(&err, 7000, &bus), -EINVAL);
	assert_int_equal(bus, 0);
	assert_int_equal(agent_bus_config_port(&empty, 7000, &bus), -EINVAL);
	assert_int_equal(agent_bus_config_port(NULL, 7000, &bus), -EINVAL);
	assert_int_equal(config(REDIS_REPLY_ARRAY, "", &bus), -EINVAL);
	assert_int_equal(config(REDIS_REPLY_ARRAY, "17x", &bus), -EINVAL);
	assert_int_equal(config(REDIS_REPLY_ARRAY, "-1", &bus), -EINVAL);
	assert_int_equal(config(REDIS_REPLY_ARRAY, "65536", &bus), -EINVAL);
	assert_int_equal(config(REDIS_REPLY_ARRAY, "99999999999999999999", &bus), -EINVAL);
	/* The client port itself is never the bus: it would leave the clients out. */
	assert_int_equal(config(REDIS_REPLY_ARRAY, "7000", &bus), -EINVAL);
	assert_int_equal(bus, 0);
	/* A server on 60000: + 10000 is no port. */
	{
		redisReply k = str("cluster-port"), v = str("0"), *el[] = {&k, &v};
		redisReply r = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = el};

		assert_int_equal(agent_bus_config_port(&r, 60000, &bus), -EINVAL);
	}
}

#ifdef REDIS_REPLY_MAP
/* A RESP3 connection (HELLO 3) answers a map. Built only with a hiredis that has RESP3
 * (1.0 and later); Debian 12's 0.14 has none, and the agent never asks for RESP3. */
static void test_config_map(void **state)
{
	uint16_t bus = 0;

	(void)state;
	assert_int_equal(config(REDIS_REPLY_MAP, "17100", &bus), 0);
	assert_int_equal(bus, 17100);
	assert_int_equal(config(REDIS_REPLY_MAP, "0", &bus), 0);
	assert_int_equal(bus, 17000);
}
#endif

static int nodes(const char *text, uint16_t *bus)
{
	return agent_bus_nodes_port(text, strlen(text), 7000, bus);
}

static void test_cluster_nodes(void **state)
{
	static const char redis7[] =
	    "9a5e0c8 127.0.0.1:7001@17001 master - 0 1700000000000 2 connected 5461-10922\n"
	    "07c37df 127.0.0.1:7000@17100 myself,master - 0 1700000000000 1 connected 0-5460\n"
	    "e7d1eec 127.0.0.1:7002@17002 master - 0 1700000000000 3 connected 10923-16383\n";
	static const char hostname[] =
	    "07c37df 10.0.0.1:7000@17200,host-a.example myself,slave 9a5e0c8 0 0 1 connected\n";
	static const char first[] = "07c37df :7000@17300 myself,master - 0 0 0 connected\n";
	uint16_t bus = 1;

	(void)state;
	assert_int_equal(nodes(redis7, &bus), 0);
	assert_int_equal(bus, 17100);
	assert_int_equal(nodes(hostname, &bus), 0);
	assert_int_equal(bus, 17200);
	assert_int_equal(nodes(first, &bus), 0); /* its address not learnt yet */
	assert_int_equal(bus, 17300);
	/* Cut before the myself line: the length is authoritative. */
	assert_int_equal(agent_bus_nodes_port(redis7, 80, 7000, &bus), -ENOENT);
	assert_int_equal(bus, 0);
	/* Nothing that says it: no port (every socket marked), never a guess. */
	assert_int_equal(nodes("", &bus), -ENOENT);
	assert_int_equal(nodes("9a5e0c8 127.0.0.1:7001@17001 master - 0 0 2 connected\n", &bus),
			 -ENOENT);
	assert_int_equal(nodes("07c37df 127.0.0.1:7000 myself,master - 0 0 1 connected\n", &bus),
			 -ENOENT); /* before Redis 4: no @cport */
	assert_int_equal(nodes("07c37df 127.0.0.1:7000@17001 notmyself,master - 0\n", &bus),
			 -ENOENT);
	assert_int_equal(nodes("07c37df 127.0.0.1:7000@17001\n", &bus), -ENOENT);
	assert_int_equal(nodes("07c37df 127.0.0.1:7000@0 myself,master - 0\n", &bus), -EINVAL);
	assert_int_equal(nodes("07c37df 127.0.0.1:7000@ myself,master - 0\n", &bus), -EINVAL);
	assert_int_equal(nodes("07c37df 127.0.0.1:7000@1x7 myself,master - 0\n", &bus), -EINVAL);
	assert_int_equal(nodes("07c37df 127.0.0.1:7000@99999999999 myself,master\n", &bus),
			 -EINVAL);
	assert_int_equal(nodes("07c37df 127.0.0.1:7000@7000 myself,master - 0\n", &bus), -EINVAL);
	assert_int_equal(bus, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_array),
#ifdef REDIS_REPLY_MAP
	    cmocka_unit_test(test_config_map),
#endif
	    cmocka_unit_test(test_cluster_nodes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
