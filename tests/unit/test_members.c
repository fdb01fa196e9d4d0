// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Runtime membership: the lines kept in the state file and etcd, the arguments of
 * FLATLINE NODE/SHARD, SENTINEL MONITOR's node ids, the replicas INFO lists, and a
 * change made in the controller's cfg and read back from a state file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>
#include "controller/ctl.h"
#include "controller/ctl_members.h"
#include "controller/failover.h"
#include "controller/members.h"

static void test_line_round_trip(void **state)
{
	const char *lines[] = {
	    "node n4 shard cache address 10.0.0.4 redis 10.0.0.4:6379 priority 50 spare 0",
	    "node n5 shard cache address fd00::5 redis [fd00::5]:6380 priority 0 spare 1",
	    "node n6 shard cache address 10.0.0.6 redis unix:/run/redis.sock priority 100 spare 0",
	    "shard web dns_name web.ha.example. discover 0",
	    "shard mymaster dns_name - discover 1",
	    "drop node n2",
	    "drop shard old.one",
	    "attach node n3 shard cache",
	};
	char buf[MB_LINE_MAX], why[200];
	struct mb_entry e;

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		assert_int_equal(mb_parse(lines[i], &e, why, sizeof(why)), 0);
		assert_true(mb_format(&e, buf, sizeof(buf)) > 0);
		assert_string_equal(buf, lines[i]);
	}
	assert_int_equal(mb_parse(lines[1], &e, why, sizeof(why)), 0);
	assert_int_equal(e.kind, MB_NODE);
	assert_true(e.spare);
	assert_int_equal(e.priority, 0);
	assert_string_equal(e.shard, "cache");
	assert_int_equal(mb_parse(lines[4], &e, why, sizeof(why)), 0);
	assert_true(e.discover);
	assert_string_equal(e.dns_name, "");
}

static void test_line_refused(void **state)
{
	const char *bad[] = {
	    "",
	    "node n4",
	    "node n4 shard cache address 10.0.0.4 redis 10.0.0.4:6379 priority 50",
	    "node n4 shard cache address 10.0.0.4 redis 10.0.0.4:6379 priority x spare 0",
	    "node n4 shard cache address 10.0.0.4 redis 10.0.0.4:6379 priority 5 spare 2",
	    "node n.4 shard cache address 10.0.0.4 redis 10.0.0.4:6379 priority 5 spare 0",
	    "node n4 shard cache address 0.0.0.0 redis 10.0.0.4:6379 priority 5 spare 0",
	    "node n4 shard cache address host redis 10.0.0.4:6379 priority 5 spare 0",
	    "node n4 shard cache address 10.0.0.4 redis nope:port priority 5 spare 0",
	    "shard web dns_name web.ha.example discover 0",
	    "shard .web dns_name - discover 0",
	    "drop node",
	    "drop thing x",
	    "node n4 shard cache address 10.0.0.4 redis 10.0.0.4:6379 priority 50 spare 0 extra",
	};
	char why[200];
	struct mb_entry e;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		assert_int_equal(mb_parse(bad[i], &e, why, sizeof(why)), -EINVAL);
		assert_true(why[0] != '\0');
	}
}

static void test_node_args(void **state)
{
	const char *ok[] = {"cache",	     "n4",	 "ADDRESS", "10.0.0.4", "redis",
			    "10.0.0.4:6379", "PRIORITY", "7",	    "spare"};
	const char *no_redis[] = {"cache", "n4", "ADDRESS", "10.0.0.4"};
	const char *unknown[] = {"cache", "n4",	 "ADDRESS", "10.0.0.4",
				 "REDIS", "h:1", "COLOR",   "red"};
	const char *no_value[] = {"cache", "n4", "ADDRESS"};
	const char *bad_prio[] = {"cache", "n4",	 "ADDRESS",  "10.0.0.4",
				  "REDIS", "10.0.0.4:1", "PRIORITY", "-1"};
	struct mb_entry e;
	char why[200];

	(void)state;
	assert_int_equal(mb_node_args(9, ok, &e, why, sizeof(why)), 0);
	assert_string_equal(e.id, "n4");
	assert_string_equal(e.shard, "cache");
	assert_string_equal(e.address, "10.0.0.4");
	assert_string_equal(e.redis, "10.0.0.4:6379");
	assert_int_equal(e.priority, 7);
	assert_true(e.spare);
	assert_int_equal(mb_node_args(8, ok, &e, why, sizeof(why)), 0);
	assert_false(e.spare);
	assert_int_equal(mb_node_args(4, no_redis, &e, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "REDIS"));
	assert_int_equal(mb_node_args(8, unknown, &e, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "COLOR"));
	assert_int_equal(mb_node_args(3, no_value, &e, why, sizeof(why)), -EINVAL);
	assert_int_equal(mb_node_args(8, bad_prio, &e, why, sizeof(why)), -EINVAL);
	assert_int_equal(mb_node_args(1, ok, &e, why, sizeof(why)), -EINVAL);
}

static void test_shard_args(void **state)
{
	const char *ok[] = {"web", "DNS-NAME", "web.ha.example."};
	const char *bad[] = {"web", "DNS-NAME", "web"};
	const char *odd[] = {"web", "DNS-NAME"};
	struct mb_entry e;
	char why[200];

	(void)state;
	assert_int_equal(mb_shard_args(1, ok, &e, why, sizeof(why)), 0);
	assert_string_equal(e.dns_name, "");
	assert_int_equal(mb_shard_args(3, ok, &e, why, sizeof(why)), 0);
	assert_string_equal(e.dns_name, "web.ha.example.");
	assert_int_equal(mb_shard_args(3, bad, &e, why, sizeof(why)), -EINVAL);
	assert_int_equal(mb_shard_args(2, odd, &e, why, sizeof(why)), -EINVAL);
}

static void test_node_id_and_slaves(void **state)
{
	static const char info[] = "# Replication\r\nrole:master\r\nconnected_slaves:3\r\n"
				   "slave0:ip=10.0.0.2,port=6379,state=online,offset=42,lag=0\r\n"
				   "slave1:ip=fd00::3,port=6380,state=online,offset=42,lag=1\r\n"
				   "slave2:ip=10.0.0.9,port=99999,state=online\r\n"
				   "slaveX:ip=1.2.3.4,port=1\r\n"
				   "master_replid:abc\r\n";
	struct mb_addr a[4];
	char id[CFG_ID_MAX + 1];

	(void)state;
	assert_int_equal(mb_node_id("mymaster", "10.0.0.2", 6379, id, sizeof(id)), 0);
	assert_string_equal(id, "mymaster-10_0_0_2-6379");
	assert_int_equal(mb_node_id("a.b", "fd00::3", 1, id, sizeof(id)), 0);
	assert_string_equal(id, "a_b-fd00__3-1");
	assert_true(mb_valid_id(id, false));
	assert_int_equal(mb_node_id("a-very-long-shard-name-that-goes-on-and-on-and-on",
				    "10.100.200.250", 65535, id, sizeof(id)),
			 -ENAMETOOLONG);
	assert_int_equal(mb_info_slaves(info, strlen(info), a, 4), 2);
	assert_string_equal(a[0].host, "10.0.0.2");
	assert_int_equal(a[0].port, 6379);
	assert_string_equal(a[1].host, "fd00::3");
	assert_int_equal(a[1].port, 6380);
	assert_int_equal(mb_info_slaves(info, strlen(info), a, 1), 1);
}

static const char conf[] = "[cluster]\nname = t\nsecret = 0123456789abcdef01\n"
			   "[controller]\nlisten = 127.0.0.1:26379\n"
			   "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
			   "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6379\n"
			   "[shard \"cache\"]\nnodes = n1 n2\n";

/* A change in the cfg, kept in a state file, read back into a fresh cfg. */
static void test_cfg_state_round_trip(void **state)
{
	struct cfg *a, *b;
	struct fo_cluster fo;
	struct mb_entry e;
	char err[512], path[] = "/tmp/fl-members-XXXXXX";
	int fd = mkstemp(path), i;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(cfg_load_string("t.conf", conf, &a, err, sizeof(err)), 0);
	assert_int_equal(ctl_members_reserve(a), 0);
	assert_true(a->node_cap >= a->nnodes + CTL_MEMBERS_ROOM);
	/* node n3 into cache, shard web, n2 removed */
	assert_int_equal(mb_parse("node n3 shard cache address 10.0.0.3 redis 10.0.0.3:6379 "
				  "priority 10 spare 0",
				  &e, err, sizeof(err)),
			 0);
	assert_int_equal(ctl_members_cfg_apply(a, &e, err, sizeof(err)), 2);
	assert_int_equal(ctl_members_cfg_apply(a, &e, err, sizeof(err)), -EEXIST);
	assert_int_equal(mb_parse("shard web dns_name - discover 0", &e, err, sizeof(err)), 0);
	assert_int_equal(ctl_members_cfg_apply(a, &e, err, sizeof(err)), 1);
	assert_int_equal(mb_parse("drop node n2", &e, err, sizeof(err)), 0);
	assert_int_equal(ctl_members_cfg_apply(a, &e, err, sizeof(err)), 1);
	assert_int_equal(a->shards[0].nnodes, 2); /* n1 n3 */
	assert_int_equal(mb_parse("node n9 shard nope address 10.0.0.9 redis 10.0.0.9:1 "
				  "priority 1 spare 0",
				  &e, err, sizeof(err)),
			 0);
	assert_int_equal(ctl_members_cfg_apply(a, &e, err, sizeof(err)), -ENOENT);
	assert_int_equal(fo_cluster_init(&fo, a, NULL, NULL), 0);
	assert_int_equal(fo.node_cap, a->node_cap);
	assert_null(fo_find_node(&fo, "n2")); /* a tombstone */
	assert_true(fo.nodes[1].flags & FO_N_REMOVED);
	assert_null(fo_node_by_addr(&fo, "10.0.0.2", 6379));
	{ /* a late answer for it changes nothing */
		struct info_repl r = {.role = INFO_ROLE_MASTER};

		fo_on_info(&fo, &fo.nodes[1], true, &r, "");
		assert_int_equal(fo.nodes[1].info_ok, 0);
	}
	assert_non_null(fo_find_node(&fo, "n3"));
	assert_int_equal(fo_state_save(&fo, path, err, sizeof(err)), 0);
	fo_cluster_free(&fo);
	/* Read back over the same file's cfg. */
	assert_int_equal(cfg_load_string("t.conf", conf, &b, err, sizeof(err)), 0);
	assert_int_equal(ctl_members_prepare(b, path, err, sizeof(err)), 0);
	i = ctl_members_cfg_node(b, "n3");
	assert_true(i >= 0);
	assert_true(b->nodes[i].runtime);
	assert_int_equal(b->nodes[i].priority, 10);
	assert_string_equal(b->nodes[i].redis_str, "10.0.0.3:6379");
	assert_true(b->nodes[ctl_members_cfg_node(b, "n2")].removed);
	assert_true(ctl_members_cfg_shard(b, "web") >= 0);
	assert_int_equal(b->shards[0].nnodes, 2);
	/* The whole shard dropped (with n1, a file's node, and n3, a runtime one): read
	 * back in an order that applies (the node drops, then the shard's). */
	{
		struct cfg *d;
		char text[4096];
		size_t len = 0;

		assert_int_equal(mb_parse("drop shard cache", &e, err, sizeof(err)), 0);
		assert_int_equal(ctl_members_cfg_apply(b, &e, err, sizeof(err)), 0);
		assert_int_equal(mb_format_cfg(b, text, sizeof(text), &len), 0);
		text[len] = '\0';
		assert_non_null(strstr(text, "member drop node n1\nmember drop node n2\n"
					     "member drop shard cache\nmember shard web"));
		assert_null(strstr(text, "n3"));
		assert_int_equal(fo_cluster_init(&fo, b, NULL, NULL), 0);
		assert_int_equal(fo_state_save(&fo, path, err, sizeof(err)), 0);
		fo_cluster_free(&fo);
		assert_int_equal(cfg_load_string("t.conf", conf, &d, err, sizeof(err)), 0);
		assert_int_equal(ctl_members_prepare(d, path, err, sizeof(err)), 0);
		assert_true(d->shards[0].removed);
		assert_true(d->nodes[0].removed && d->nodes[1].removed);
		cfg_free(d);
	}
	/* A damaged file is refused before anything is applied. */
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	cfg_free(a);
	assert_int_equal(cfg_load_string("t.conf", conf, &a, err, sizeof(err)), 0);
	assert_int_not_equal(ctl_members_prepare(a, path, err, sizeof(err)), 0);
	assert_int_equal(ctl_members_cfg_node(a, "n3"), -1);
	cfg_free(a);
	cfg_free(b);
	unlink(path);
}

/* A spare of the file attached: kept as an attach line, read back a member; a spare
 * added at runtime attached: its node line says spare 0. */
static void test_cfg_attach(void **state)
{
	static const char sconf[] = "[cluster]\nname = t\nsecret = 0123456789abcdef01\n"
				    "[controller]\nlisten = 127.0.0.1:26379\n"
				    "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
				    "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6379\n"
				    "[node \"n3\"]\naddress = 10.0.0.3\nredis = 10.0.0.3:6379\n"
				    "[shard \"cache\"]\nnodes = n1 n2\nspares = n3\n";
	struct cfg *a, *b;
	struct mb_entry e;
	char err[512], text[4096];
	size_t len = 0;
	struct fo_cluster fo;
	char path[] = "/tmp/fl-members-XXXXXX";
	int fd = mkstemp(path), i;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(cfg_load_string("t.conf", sconf, &a, err, sizeof(err)), 0);
	assert_int_equal(ctl_members_reserve(a), 0);
	assert_int_equal(mb_parse("attach node n2 shard cache", &e, err, sizeof(err)), 0);
	assert_int_equal(ctl_members_cfg_apply(a, &e, err, sizeof(err)), -EINVAL); /* no spare */
	assert_int_equal(mb_parse("attach node n3 shard cache", &e, err, sizeof(err)), 0);
	assert_int_equal(ctl_members_cfg_apply(a, &e, err, sizeof(err)), 2);
	assert_int_equal(a->shards[0].nnodes, 3);
	assert_false(a->nodes[2].spare);
	assert_true(a->nodes[2].attached);
	assert_int_equal(mb_parse("node n5 shard cache address 10.0.0.5 redis 10.0.0.5:6379 "
				  "priority 100 spare 1",
				  &e, err, sizeof(err)),
			 0);
	i = ctl_members_cfg_apply(a, &e, err, sizeof(err));
	assert_true(i >= 3);
	assert_int_equal(mb_parse("attach node n5 shard cache", &e, err, sizeof(err)), 0);
	assert_int_equal(ctl_members_cfg_apply(a, &e, err, sizeof(err)), i);
	assert_int_equal(mb_format_cfg(a, text, sizeof(text), &len), 0);
	text[len] = '\0';
	assert_non_null(strstr(text, "member node n5 shard cache address 10.0.0.5 redis "
				     "10.0.0.5:6379 priority 100 spare 0\n"
				     "member attach node n3 shard cache\n"));
	assert_int_equal(fo_cluster_init(&fo, a, NULL, NULL), 0);
	assert_int_equal(fo.nodes[2].shard, 0);
	assert_int_equal(fo_state_save(&fo, path, err, sizeof(err)), 0);
	fo_cluster_free(&fo);
	assert_int_equal(cfg_load_string("t.conf", sconf, &b, err, sizeof(err)), 0);
	assert_true(b->nodes[2].spare);
	assert_int_equal(ctl_members_prepare(b, path, err, sizeof(err)), 0);
	assert_false(b->nodes[2].spare);
	assert_int_equal(b->nodes[2].shard, 0);
	assert_int_equal(b->shards[0].nnodes, 4); /* n1 n2 n5 n3 */
	i = ctl_members_cfg_node(b, "n5");
	assert_false(b->nodes[i].spare);
	assert_int_equal(b->nodes[i].shard, 0);
	mb_cfg_detach(&b->nodes[2]);
	assert_true(b->nodes[2].spare && !b->nodes[2].attached);
	cfg_free(a);
	cfg_free(b);
	unlink(path);
}

/* The agent of a node added at runtime: its [node] section after the file's lines,
 * its key there when the file has no secret. */
static void test_cfg_extra(void **state)
{
	static const char nosecret[] = "[cluster]\nname = t\n"
				       "[controller]\nlisten = 127.0.0.1:26379\n"
				       "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
				       "[shard \"cache\"]\nnodes = n1\n";
	char path[] = "/tmp/fl-members-cfg-XXXXXX", err[512], extra[256];
	int fd = mkstemp(path);
	struct cfg *c = NULL;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, nosecret, strlen(nosecret)), (int)strlen(nosecret));
	close(fd);
	/* no secret, no key: refused as any file */
	snprintf(extra, sizeof(extra),
		 "\n[node \"n4\"]\naddress = 10.0.0.4\nredis = 10.0.0.4:6379\n");
	assert_int_not_equal(cfg_load_extra(path, extra, &c, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "secret"));
	snprintf(extra, sizeof(extra),
		 "\n[node \"n4\"]\naddress = 10.0.0.4\nredis = 10.0.0.4:6379\nkey = %064d\n", 7);
	assert_int_equal(cfg_load_extra(path, extra, &c, err, sizeof(err)), 0);
	assert_non_null(cfg_find_node(c, "n4"));
	assert_int_equal(cfg_find_node(c, "n4")->shard, -1);
	assert_string_equal(cfg_find_node(c, "n4")->redis_str, "10.0.0.4:6379");
	cfg_free(c);
	/* the file's own node again: refused */
	snprintf(extra, sizeof(extra), "\n[node \"n1\"]\naddress = 10.0.0.4\n");
	assert_int_not_equal(cfg_load_extra(path, extra, &c, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "twice"));
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_line_round_trip),    cmocka_unit_test(test_line_refused),
	    cmocka_unit_test(test_node_args),	       cmocka_unit_test(test_shard_args),
	    cmocka_unit_test(test_node_id_and_slaves), cmocka_unit_test(test_cfg_state_round_trip),
	    cmocka_unit_test(test_cfg_extra),	       cmocka_unit_test(test_cfg_attach),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
