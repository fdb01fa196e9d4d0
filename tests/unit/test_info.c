// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "common/info.h"

/* redis-server 7.0.15, as `INFO server` + `INFO replication` print them. */
static const char redis_primary[] =
    "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\nprocess_id:4242\r\n"
    "run_id:5e0c5e2b1d1a1ad4b3f2f3a6b0e0f4a4b2c1d0e9\r\ntcp_port:6379\r\n\r\n"
    "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n"
    "slave0:ip=127.0.0.1,port=27002,state=online,offset=50,lag=0\r\n"
    "master_failover_state:no-failover\r\n"
    "master_replid:90ecc8090e967123d401c2bb3630dc55da918cf4\r\n"
    "master_replid2:0000000000000000000000000000000000000000\r\n"
    "master_repl_offset:50\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:1\r\n";

static const char redis_replica[] =
    "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:27001\r\n"
    "master_link_status:up\r\nmaster_last_io_seconds_ago:3\r\nmaster_sync_in_progress:0\r\n"
    "slave_read_repl_offset:1234\r\nslave_repl_offset:1234\r\nslave_priority:50\r\n"
    "slave_read_only:1\r\nreplica_announced:1\r\nconnected_slaves:0\r\n"
    "master_failover_state:no-failover\r\n"
    "master_replid:90ecc8090e967123d401c2bb3630dc55da918cf4\r\n"
    "master_replid2:0000000000000000000000000000000000000000\r\n"
    "master_repl_offset:1234\r\nsecond_repl_offset:-1\r\n";

/* Valkey 8 names itself in server_name and valkey_version. */
static const char valkey_replica[] =
    "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n"
    "process_id:77\r\nrun_id:aa\r\n# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\n"
    "master_port:6379\r\nmaster_link_status:down\r\nmaster_last_io_seconds_ago:-1\r\n"
    "master_sync_in_progress:1\r\nslave_repl_offset:99\r\nreplica_priority:0\r\n"
    "master_replid:abc\r\nmaster_repl_offset:99\r\n";

/* valkey-server 8.0.1 (built from the vendored tarball), verbatim: `INFO server` and
 * `INFO replication` of a primary whose replica is in its initial sync, then the
 * replica's `INFO replication`. redis_version:7.2.4 comes first and must not win. */
static const char valkey801_primary[] =
    "# Server\r\n"
    "redis_version:7.2.4\r\n"
    "server_name:valkey\r\n"
    "valkey_version:8.0.1\r\n"
    "redis_git_sha1:00000000\r\n"
    "redis_git_dirty:1\r\n"
    "redis_build_id:1a06d16eddbd3de2\r\n"
    "server_mode:standalone\r\n"
    "os:Linux 6.18.44-fc-v857 x86_64\r\n"
    "arch_bits:64\r\n"
    "monotonic_clock:POSIX clock_gettime\r\n"
    "multiplexing_api:epoll\r\n"
    "gcc_version:12.2.0\r\n"
    "process_id:5223\r\n"
    "process_supervised:no\r\n"
    "run_id:7544703df85c018d39bef5ae689b69945c2d1c74\r\n"
    "tcp_port:23461\r\n"
    "server_time_usec:1796089521410399\r\n"
    "uptime_in_seconds:2\r\n"
    "uptime_in_days:0\r\n"
    "hz:10\r\n"
    "configured_hz:10\r\n"
    "lru_clock:927409\r\n"
    "executable:/var/cache/flatline/"
    "valkey-c3cd9d307a724fbb0054e67e66a0fb4024a8666df2f2cc191d15b895fa3b3621/bin/valkey-server\r\n"
    "config_file:\r\n"
    "io_threads_active:0\r\n"
    "availability_zone:\r\n"
    "listener0:name=tcp,bind=127.0.0.1,port=23461\r\n"
    "# Replication\r\n"
    "role:master\r\n"
    "connected_slaves:1\r\n"
    "slave0:ip=127.0.0.1,port=23462,state=wait_bgsave,offset=0,lag=0,type=replica\r\n"
    "replicas_waiting_psync:0\r\n"
    "master_failover_state:no-failover\r\n"
    "master_replid:60f94dfa21e89174e19145b232c709c22219a535\r\n"
    "master_replid2:0000000000000000000000000000000000000000\r\n"
    "master_repl_offset:50\r\n"
    "second_repl_offset:-1\r\n"
    "repl_backlog_active:1\r\n"
    "repl_backlog_size:10485760\r\n"
    "repl_backlog_first_byte_offset:1\r\n"
    "repl_backlog_histlen:50\r\n";
static const char valkey801_replica[] =
    "# Replication\r\n"
    "role:slave\r\n"
    "master_host:127.0.0.1\r\n"
    "master_port:23461\r\n"
    "master_link_status:down\r\n"
    "master_last_io_seconds_ago:-1\r\n"
    "master_sync_in_progress:0\r\n"
    "slave_read_repl_offset:1\r\n"
    "slave_repl_offset:1\r\n"
    "replicas_repl_buffer_size:0\r\n"
    "replicas_repl_buffer_peak:0\r\n"
    "master_link_down_since_seconds:-1\r\n"
    "slave_priority:50\r\n"
    "slave_read_only:1\r\n"
    "replica_announced:1\r\n"
    "connected_slaves:0\r\n"
    "replicas_waiting_psync:0\r\n"
    "master_failover_state:no-failover\r\n"
    "master_replid:1e250bd871ee3b37258e7586beb7de635872d300\r\n"
    "master_replid2:0000000000000000000000000000000000000000\r\n"
    "master_repl_offset:0\r\n"
    "second_repl_offset:-1\r\n"
    "repl_backlog_active:0\r\n"
    "repl_backlog_size:10485760\r\n"
    "repl_backlog_first_byte_offset:0\r\n"
    "repl_backlog_histlen:0\r\n";

/* Dragonfly (not run here: these follow the INFO code of its server_family.cc, field
 * by field): no process_id and no run_id (the agent needs the node's pidfile, from
 * dragonfly --pidfile), no master_repl_offset on a primary, slave_repl_offset only
 * after the full sync, role "replica" (or "slave" with
 * --info_replication_valkey_compatible, which also adds master_replid). */
static const char dragonfly_primary[] =
    "# Server\r\nredis_version:7.2.0\r\ndragonfly_version:df-v1.21.2\r\nredis_mode:standalone\r\n"
    "arch_bits:64\r\nmultiplexing_api:epoll\r\ntcp_port:6379\r\nuptime_in_seconds:12\r\n"
    "uptime_in_days:0\r\n\r\n# Replication\r\nrole:master\r\nconnected_slaves:1\r\n"
    "slave0:ip=10.0.0.2,port=6379,state=online,lag=0\r\nmaster_replid:dfreplid\r\n";
static const char dragonfly_replica_synced[] =
    "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\n"
    "master_link_status:up\r\nmaster_last_io_seconds_ago:0\r\nmaster_sync_in_progress:0\r\n"
    "master_replid:dfreplid\r\nslave_repl_offset:4711\r\nslave_priority:100\r\n"
    "slave_read_only:1\r\n";
static const char dragonfly_replica_syncing[] =
    "# Server\r\ndragonfly_version:df-v1.21.2\r\n# Replication\r\nrole:replica\r\n"
    "master_host:10.0.0.1\r\nmaster_port:6379\r\nmaster_link_status:up\r\n"
    "master_last_io_seconds_ago:0\r\nmaster_sync_in_progress:1\r\nslave_priority:100\r\n"
    "slave_read_only:1\r\n";

static void test_redis(void **state)
{
	struct info_repl r;

	(void)state;
	assert_int_equal(info_parse(redis_primary, strlen(redis_primary), &r), 0);
	assert_int_equal(r.server, INFO_SRV_REDIS);
	assert_string_equal(r.version, "7.0.15");
	assert_int_equal(r.role, INFO_ROLE_MASTER);
	assert_int_equal(r.pid, 4242);
	assert_int_equal(r.tcp_port, 6379);
	assert_int_equal(r.uptime_s, -1); /* absent: unknown, not 0 */
	assert_string_equal(r.exe_comm, "");
	assert_string_equal(r.run_id, "5e0c5e2b1d1a1ad4b3f2f3a6b0e0f4a4b2c1d0e9");
	assert_string_equal(r.master_replid, "90ecc8090e967123d401c2bb3630dc55da918cf4");
	assert_int_equal(r.offset, 50);
	assert_int_equal(r.connected_slaves, 1);
	assert_int_equal(r.link_up, -1);
	assert_int_equal(r.slave_priority, 100);

	assert_int_equal(info_parse(redis_replica, strlen(redis_replica), &r), 0);
	assert_int_equal(r.role, INFO_ROLE_SLAVE);
	assert_string_equal(r.master_host, "127.0.0.1");
	assert_int_equal(r.master_port, 27001);
	assert_int_equal(r.link_up, 1);
	assert_int_equal(r.last_io_s, 3);
	assert_int_equal(r.offset, 1234);
	assert_int_equal(r.slave_priority, 50);
	assert_int_equal(r.pid, 0);
}

static void test_valkey(void **state)
{
	struct info_repl r;

	(void)state;
	assert_int_equal(info_parse(valkey_replica, strlen(valkey_replica), &r), 0);
	assert_int_equal(r.server, INFO_SRV_VALKEY);
	assert_string_equal(r.version, "8.0.1");
	assert_int_equal(r.link_up, 0);
	assert_int_equal(r.last_io_s, -1);
	assert_int_equal(r.sync_in_progress, 1);
	assert_int_equal(r.slave_priority, 0);
	assert_int_equal(r.offset, 99);
}

static void test_valkey801_verbatim(void **state)
{
	struct info_repl r;

	(void)state;
	assert_int_equal(info_parse(valkey801_primary, strlen(valkey801_primary), &r), 0);
	assert_int_equal(r.server, INFO_SRV_VALKEY);
	assert_string_equal(r.version, "8.0.1");
	assert_int_equal(r.pid, 5223);
	assert_int_equal(r.tcp_port, 23461);
	/* Which process here is the server: its comm and age. */
	assert_int_equal(r.uptime_s, 2);
	assert_string_equal(r.exe_comm, "valkey-server");
	assert_string_equal(r.run_id, "7544703df85c018d39bef5ae689b69945c2d1c74");
	assert_int_equal(r.role, INFO_ROLE_MASTER);
	assert_int_equal(r.connected_slaves, 1);
	assert_string_equal(r.master_replid, "60f94dfa21e89174e19145b232c709c22219a535");
	assert_int_equal(r.offset, 50);
	assert_int_equal(info_parse(valkey801_replica, strlen(valkey801_replica), &r), 0);
	assert_int_equal(r.role, INFO_ROLE_SLAVE);
	assert_string_equal(r.master_host, "127.0.0.1");
	assert_int_equal(r.master_port, 23461);
	assert_int_equal(r.link_up, 0);
	assert_int_equal(r.last_io_s, -1);
	assert_int_equal(r.slave_priority, 50);
	/* slave_repl_offset, not master_repl_offset:0 that follows it */
	assert_int_equal(r.offset, 1);
}

/* The name and version do not depend on the order of the lines. */
static void test_valkey_version_any_order(void **state)
{
	static const char swapped[] = "valkey_version:8.0.1\r\nserver_name:valkey\r\n"
				      "redis_version:7.2.4\r\n";
	struct info_repl r;

	(void)state;
	assert_int_equal(info_parse(swapped, strlen(swapped), &r), 0);
	assert_int_equal(r.server, INFO_SRV_VALKEY);
	assert_string_equal(r.version, "8.0.1");
}

static void test_dragonfly(void **state)
{
	struct info_repl r;

	(void)state;
	assert_int_equal(info_parse(dragonfly_primary, strlen(dragonfly_primary), &r), 0);
	assert_int_equal(r.server, INFO_SRV_DRAGONFLY);
	assert_string_equal(r.version, "df-v1.21.2");
	assert_int_equal(r.role, INFO_ROLE_MASTER);
	assert_int_equal(r.offset, -1);
	assert_string_equal(r.run_id, "");
	assert_int_equal(r.pid, 0); /* not in its INFO: the pidfile tells */
	assert_int_equal(r.tcp_port, 6379);
	assert_int_equal(r.connected_slaves, 1);
	assert_int_equal(
	    info_parse(dragonfly_replica_syncing, strlen(dragonfly_replica_syncing), &r), 0);
	assert_int_equal(r.role, INFO_ROLE_SLAVE);
	assert_int_equal(r.offset, -1);
	assert_int_equal(r.link_up, 1);
	assert_int_equal(r.sync_in_progress, 1);
	assert_int_equal(info_parse(dragonfly_replica_synced, strlen(dragonfly_replica_synced), &r),
			 0);
	assert_int_equal(r.role, INFO_ROLE_SLAVE);
	assert_int_equal(r.offset, 4711);
	assert_int_equal(r.link_up, 1);
	assert_int_equal(r.master_port, 6379);
	assert_string_equal(r.master_replid, "dfreplid");
}

/* A cluster node's bare INFO (redis-server 7.0.15 --cluster-enabled yes, cut): the
 * "# Cluster" section says so; a standalone server's says 0. */
static const char redis_cluster_node[] =
    "# Server\r\nredis_version:7.0.15\r\nredis_mode:cluster\r\nprocess_id:31\r\n"
    "tcp_port:7000\r\n\r\n# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
    "master_repl_offset:0\r\n\r\n# Cluster\r\ncluster_enabled:1\r\n\r\n"
    "# Keyspace\r\n";

static void test_cluster_enabled(void **state)
{
	static const char standalone[] = "# Server\r\nprocess_id:1\r\n# Cluster\r\n"
					 "cluster_enabled:0\r\n";
	struct info_repl r;

	(void)state;
	assert_int_equal(info_parse(redis_cluster_node, strlen(redis_cluster_node), &r), 0);
	assert_int_equal(r.cluster_enabled, 1);
	assert_int_equal(r.tcp_port, 7000);
	assert_int_equal(r.pid, 31);
	assert_int_equal(info_parse(standalone, strlen(standalone), &r), 0);
	assert_int_equal(r.cluster_enabled, 0);
	assert_int_equal(info_parse(redis_primary, strlen(redis_primary), &r), 0);
	assert_int_equal(r.cluster_enabled, 0);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
	    "role:master\r\nno colon here\r\n",
	    "master_repl_offset:12x\r\n",
	    "master_port:\r\n",
	    "process_id:99999999999999999999999\r\n",
	};
	struct info_repl r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(info_parse(bad[i], strlen(bad[i]), &r), -EINVAL);
	/* Not NUL-terminated: the length is authoritative. */
	assert_int_equal(info_parse("role:master", 7, &r), 0);
	assert_int_equal(r.role, INFO_ROLE_UNKNOWN);
	assert_int_equal(info_parse("", 0, &r), 0);
}

/* The numbers the spares' checks read: a key at a line's start only (not a longer
 * key, not mid-line), the keyspace summed over every db, bounded by the length. */
static void test_numbers(void **state)
{
	static const char info[] = "# Memory\r\nused_memory_human:1.5M\r\nused_memory:1572864\r\n"
				   "xmaxmemory:7\r\nmaxmemory:0\r\n# Keyspace\r\n"
				   "db0:keys=5,expires=0,avg_ttl=0\r\ndb12:keys=7,expires=1\r\n";
	static const char nokeys[] = "# Server\r\nredis_version:7.0.15\r\n# Keyspace\r\n";

	(void)state;
	assert_int_equal(info_ll(info, strlen(info), "used_memory"), 1572864);
	assert_int_equal(info_ll(info, strlen(info), "maxmemory"), 0);
	assert_int_equal(info_ll(info, strlen(info), "used_memory_peak"), -1);
	assert_int_equal(info_keyspace_keys(info, strlen(info)), 12);
	assert_int_equal(info_keyspace_keys(nokeys, strlen(nokeys)), 0);
	assert_int_equal(info_keyspace_keys(nokeys, 20), -1); /* no keyspace section */
	/* Cut inside a number: only the digits inside the length count. */
	assert_int_equal(info_ll("maxmemory:12345", 12, "maxmemory"), 12);
	assert_int_equal(info_ll("maxmemory:", 10, "maxmemory"), -1);
	assert_int_equal(info_keyspace_keys("# Keyspace\r\ndb0:keys=", 21), 0);
}

/* Hostile or broken counts (a server, or something in its place, that says more keys
 * than a long long holds): every number read whole, LLONG_MAX past it, the sum over
 * the dbs saturating, never wrapped negative ("empty") or cut into a small one. */
static void test_numbers_hostile(void **state)
{
	static const char big[] = "# Keyspace\r\ndb0:keys=99999999999999999999999999,expires=0\r\n";
	static const char two[] = "# Keyspace\r\ndb0:keys=9223372036854775000\r\n"
				  "db1:keys=9223372036854775000\r\n";
	static const char edge[] = "# Keyspace\r\ndb0:keys=9223372036854775806\r\ndb1:keys=1\r\n";
	static const char mem[] = "used_memory:92233720368547758070\r\n";
	static const char exact[] = "used_memory:9223372036854775807\r\n";
	static const char ok[] = "used_memory:922337203685477580\r\n";
	/* A "keys=-5" or "keys=x" is no number: nothing added. */
	static const char neg[] = "# Keyspace\r\ndb0:keys=-5\r\ndb1:keys=x\r\ndb2:keys=3\r\n";
	char info[2048];
	size_t n;

	(void)state;
	n = (size_t)snprintf(info, sizeof(info), "# Keyspace\r\n");
	for (int db = 0; db < 12; db++)
		n += (size_t)snprintf(info + n, sizeof(info) - n,
				      "db%d:keys=9223372036854775807,expires=0\r\n", db);
	assert_int_equal(info_keyspace_keys(info, n), LLONG_MAX);
	assert_int_equal(info_keyspace_keys(big, strlen(big)), LLONG_MAX);
	assert_int_equal(info_keyspace_keys(two, strlen(two)), LLONG_MAX);
	assert_int_equal(info_keyspace_keys(edge, strlen(edge)), LLONG_MAX);
	assert_int_equal(info_ll(mem, strlen(mem), "used_memory"), LLONG_MAX);
	assert_int_equal(info_ll(exact, strlen(exact), "used_memory"), LLONG_MAX);
	assert_int_equal(info_ll(ok, strlen(ok), "used_memory"), 922337203685477580LL);
	assert_int_equal(info_keyspace_keys(neg, strlen(neg)), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_redis),
	    cmocka_unit_test(test_valkey),
	    cmocka_unit_test(test_valkey801_verbatim),
	    cmocka_unit_test(test_valkey_version_any_order),
	    cmocka_unit_test(test_dragonfly),
	    cmocka_unit_test(test_cluster_enabled),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_numbers),
	    cmocka_unit_test(test_numbers_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
