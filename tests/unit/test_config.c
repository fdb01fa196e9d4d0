// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "common/config.h"

static const char good[] = "[cluster]\n"
			   "name = demo\n"
			   "; agents authenticate with the secret\n"
			   "secret = change-me-to-32-random\n"
			   "\n"
			   "[agent]\n"
			   "ping_interval_ms = 50\n"
			   "hung_after = 3\n"
			   "event_log = /tmp/ev.jsonl\n"
			   "self_fence = no\n"
			   "stop_grace_ms = 0\n"
			   "busy_max_ms = 8000\n"
			   "metrics_listen = [::1]:9433\n"
			   "[controller]\n"
			   "listen = 127.0.0.1:26400\n"
			   "[redis]\n"
			   "user =\n"
			   "password = pw\n"
			   "[dns]\n"
			   "server = 127.0.0.1:5353\n"
			   "zone = ha.example.\n"
			   "tsig_name = flatline\n"
			   "tsig_algorithm = hmac-sha512\n"
			   "tsig_secret = c2VjcmV0c2VjcmV0c2VjcmV0\n"
			   "ttl = 5\n"
			   "[node \"n1\"]\n"
			   "address = 10.77.0.1\n"
			   "redis = 10.77.0.1:6379\n"
			   "priority = 10\n"
			   "[node \"n2\"]\n"
			   "address = fd00::2\n"
			   "redis = unix:/run/redis/redis.sock\n"
			   "[node \"n3\"]\n"
			   "address = 10.77.0.3\n"
			   "redis = [fd00::3]:6380\n"
			   "priority = 0\n"
			   "[shard \"cache\"]\n"
			   "nodes = n1 n2 n3\n"
			   "dns_name = cache.ha.example.\n";

static void test_good_file(void **state)
{
	struct cfg *c = NULL;
	char err[512] = "";

	(void)state;
	assert_int_equal(cfg_load_string("c.conf", good, &c, err, sizeof(err)), 0);
	assert_string_equal(c->name, "demo");
	assert_string_equal(c->secret, "change-me-to-32-random");
	assert_int_equal(c->agent.ping_interval_ms, 50);
	assert_int_equal(c->agent.hung_after, 3);
	assert_int_equal(c->agent.probe_interval_ms, 25);   /* default */
	assert_int_equal(c->agent.peer_down_after_ms, 250); /* default: 10 x probe_interval_ms */
	assert_int_equal(c->agent.self_fence, 0);
	assert_int_equal(c->agent.self_fence_after_ms, 500); /* 2 x peer_down_after_ms */
	assert_string_equal(c->agent.event_log, "/tmp/ev.jsonl");
	assert_int_equal(c->agent.stop_grace_ms, 0); /* 0 = hung as soon as stopped */
	assert_int_equal(c->agent.busy_max_ms, 8000);
	assert_string_equal(c->controller.listen.host, "127.0.0.1");
	assert_int_equal(c->controller.listen.port, 26400);
	/* No address: agents and clients connect where it listens. */
	assert_string_equal(c->controller.address.host, "127.0.0.1");
	assert_int_equal(c->controller.address.port, 26400);
	assert_string_equal(c->agent.metrics_listen.host, "::1");
	assert_int_equal(c->agent.metrics_listen.port, 9433);
	assert_string_equal(c->controller.metrics_listen.host, ""); /* default: off */
	assert_string_equal(c->redis.user, "");
	assert_string_equal(c->redis.password, "pw");
	assert_true(c->dns.enabled);
	assert_int_equal(c->dns.server.port, 5353);
	assert_string_equal(c->dns.tsig_algorithm, "hmac-sha512");
	assert_int_equal(c->dns.ttl, 5);
	assert_int_equal(c->nnodes, 3);
	assert_int_equal(c->nodes[0].priority, 10);
	assert_int_equal(c->nodes[1].priority, 100); /* default */
	assert_string_equal(c->nodes[1].redis.unix_path, "/run/redis/redis.sock");
	assert_string_equal(c->nodes[2].redis.host, "fd00::3");
	assert_int_equal(c->nodes[2].redis.port, 6380);
	assert_int_equal(c->nodes[0].redis.port, 6379);
	assert_int_equal(c->nshards, 1);
	assert_int_equal(c->shards[0].nnodes, 3);
	assert_int_equal(c->nodes[2].shard, 0);
	assert_string_equal(c->shards[0].dns_name, "cache.ha.example.");
	assert_false(c->shards[0].cluster); /* default: mode = replication */
	assert_non_null(cfg_find_node(c, "n2"));
	assert_null(cfg_find_node(c, "n4"));
	cfg_free(c);
}

static const struct {
	const char *text, *msg;
} bad[] = {
    {"[cluster]\nname = x\n[node \"n2\"]\naddress = 1.2.3.4\nredis = h:1\npriority = high\n",
     "t.conf:6: [node \"n2\"] priority: not a number: 'high'"},
    {"[agent]\nping_interval_ms = 0\n",
     "t.conf:2: [agent] ping_interval_ms: 0 is out of range (1 to 86400000)"},
    {"[agent]\nhung_after = 5x\n", "t.conf:2: [agent] hung_after: not a number: '5x'"},
    {"[agent]\nbogus = 1\n", "t.conf:2: [agent] bogus: unknown key"},
    {"[agent]\nstop_grace_ms = -1\n",
     "t.conf:2: [agent] stop_grace_ms: -1 is out of range (0 to 86400000)"},
    {"[agent]\nbusy_max_ms = 0\n",
     "t.conf:2: [agent] busy_max_ms: 0 is out of range (1 to 86400000)"},
    {"[agent]\nbusy_max_ms = 5s\n", "t.conf:2: [agent] busy_max_ms: not a number: '5s'"},
    {"[agent]\nself_fence = maybe\n",
     "t.conf:2: [agent] self_fence: not a boolean (yes/no): 'maybe'"},
    {"[agent]\nevent_log = relative.log\n",
     "t.conf:2: [agent] event_log: not an absolute path: 'relative.log'"},
    {"[nope]\n", "t.conf:1: unknown section [nope]"},
    {"[cluster\n", "t.conf:1: section header without ']'"},
    {"name = x\n", "t.conf:1: key 'name' outside any section"},
    {"[cluster]\njust words\n", "t.conf:2: not a 'key = value' line or a [section] header"},
    {"[node \"a b\"]\n", "t.conf:1: [node \"a b\"]: a name is 1-64 letters"},
    {"[node \"n1\"]\naddress = 1.2.3.4\nredis = h:1\n[node \"n1\"]\n",
     "t.conf:4: [node \"n1\"]: node defined twice"},
    {"[node \"n1\"]\naddress = 300.1.1.1\n",
     "t.conf:2: [node \"n1\"] address: not an IPv4 or IPv6 address: '300.1.1.1'"},
    /* Addresses no peer can ever probe: refused, with the reason. */
    {"[node \"n1\"]\naddress = fe80::1\n",
     "t.conf:2: [node \"n1\"] address: fe80::1 cannot be probed by the node's peers: an IPv6 "
     "link-local address needs an interface"},
    {"[node \"n1\"]\naddress = ::ffff:10.0.0.1\n",
     "t.conf:2: [node \"n1\"] address: ::ffff:10.0.0.1 cannot be probed by the node's peers: "
     "an IPv4-mapped IPv6 address is probed as neither; write the IPv4 address"},
    {"[node \"n1\"]\naddress = ::\n", "t.conf:2: [node \"n1\"] address: :: cannot be probed"},
    {"[node \"n1\"]\naddress = 0.0.0.0\n",
     "t.conf:2: [node \"n1\"] address: 0.0.0.0 cannot be probed"},
    {"[node \"n1\"]\naddress = ff02::1\n",
     "t.conf:2: [node \"n1\"] address: ff02::1 cannot be probed by the node's peers: a multicast"},
    {"[node \"n1\"]\naddress = 224.0.0.1\n", "t.conf:2: [node \"n1\"] address: 224.0.0.1 cannot be "
					     "probed by the node's peers: a multicast"},
    {"[node \"n1\"]\naddress = 255.255.255.255\n",
     "t.conf:2: [node \"n1\"] address: 255.255.255.255 cannot be probed by the node's peers: the "
     "broadcast address"},
    {"[node \"n1\"]\naddress = 1.2.3.4\nredis = host:99999\n",
     "t.conf:3: [node \"n1\"] redis: not host:port, [v6]:port or unix:/path: 'host:99999'"},
    {"[node \"n1\"]\naddress = 1.2.3.4\nredis = unix:relative\n",
     "t.conf:3: [node \"n1\"] redis: not host:port"},
    {"[node \"n1\"]\naddress = 1.2.3.4\n",
     "t.conf:1: [node \"n1\"] redis: missing (host:port or unix:/path of its server)"},
    {"[node \"n1\"]\nredis = 1.2.3.4:6379\n",
     "t.conf:1: [node \"n1\"] address: missing (the host's IP address)"},
    {"[node \"n1\"]\naddress = 1.2.3.4\nredis = h:1\n[shard \"s\"]\nnodes = n1 n9\n",
     "t.conf:5: [shard \"s\"] nodes: no [node \"n9\"] in this file"},
    {"[node \"n1\"]\naddress = 1.2.3.4\nredis = h:1\n[shard \"s\"]\nnodes = n1\n"
     "[shard \"t\"]\nnodes = n1\n",
     "t.conf:7: [shard \"t\"] nodes: node n1 is already in shard s"},
    {"[shard \"s\"]\ndns_name = cache.example\n",
     "t.conf:2: [shard \"s\"] dns_name: not an absolute domain name ending in '.'"},
    {"[shard \"s\"]\n", "t.conf:1: [shard \"s\"] nodes: missing"},
    {"[shard \"s\"]\nmode = sharded\n",
     "t.conf:2: [shard \"s\"] mode: not replication or cluster: 'sharded'"},
    {"[node \"n1\"]\naddress = 1.2.3.4\nredis = h:1\n[shard \"s\"]\nnodes = n1\nmode = cluster\n"
     "dns_name = s.example.\n",
     "t.conf:4: [shard \"s\"] dns_name: not with mode = cluster (clients follow the cluster's "
     "redirections)"},
    {"[node \"n1\"]\naddress = 1.2.3.4\nredis = h:1\n[node \"n2\"]\naddress = 1.2.3.5\n"
     "redis = h:1\n[shard \"s\"]\nnodes = n1\nmode = cluster\nspares = n2\n",
     "t.conf:10: [shard \"s\"] spares: not with mode = cluster (a cluster replica joins by "
     "CLUSTER REPLICATE)"},
    {"[dns]\ntsig_algorithm = hmac-sha384\n",
     "t.conf:2: [dns] tsig_algorithm: hmac-sha384 is not supported: ldns 1.8.3 cannot sign"},
    {"[dns]\ntsig_algorithm = md5\n", "t.conf:2: [dns] tsig_algorithm: unknown algorithm 'md5'"},
    {"[dns]\ntsig_secret = not base64!\n", "t.conf:2: [dns] tsig_secret: not base64"},
    {"[dns]\nzone = ha.example.\ntsig_name = k\n", "t.conf:1: [dns] tsig_secret: missing"},
    {"[dns]\nzone = ha.example.\ntsig_name = k\ntsig_secret = c2VjcmV0c2VjcmV0c2VjcmV0\n"
     "[node \"n1\"]\naddress = 1.2.3.4\nredis = h:1\n"
     "[shard \"s\"]\nnodes = n1\ndns_name = cache.other.\n",
     "t.conf:8: [shard \"s\"] dns_name: cache.other. is not inside zone ha.example."},
    {"[controller]\nlisten = 1.2.3.4:x\n", "t.conf:2: [controller] listen: not host:port"},
    {"[controller]\nlisten = [::]:26379\n",
     "t.conf:2: [controller] address: missing: listen = :: is every address of the controller's "
     "host, so agents and clients need the one to connect to (address = host:port)"},
    {"[controller]\nlisten = 0.0.0.0\n",
     "t.conf:2: [controller] address: missing: listen = 0.0.0.0"},
    {"[controller]\naddress = unix:/run/x.sock\n",
     "t.conf:2: [controller] address: a host:port or [v6]:port agents and clients connect to"},
    {"[agent]\nmetrics_listen = 127.0.0.1\n",
     "t.conf:2: [agent] metrics_listen: not host:port or [v6]:port: '127.0.0.1'"},
    {"[controller]\nmetrics_listen = unix:/run/m.sock\n",
     "t.conf:2: [controller] metrics_listen: not host:port"},
    {"[agent]\nping_interval_ms = 100\n  continued\n",
     "t.conf:3: not a 'key = value' line or a [section] header"},
    {"[etcd]\nendpoints = 127.0.0.1:2379\n",
     "t.conf:2: [etcd] endpoints: '127.0.0.1:2379' is not an http:// or https:// URL"},
    {"[etcd]\nendpoints = ,\n", "t.conf:2: [etcd] endpoints: empty"},
    {"[etcd]\nlease_ms = 500\n", "t.conf:2: [etcd] lease_ms: "},
    {"[etcd]\nprefix = flatline\n", "t.conf:2: [etcd] prefix: a key prefix starts and ends"},
    {"[etcd]\nendpoints = http://a:1\n", "t.conf:1: [etcd]: no [controller \"ID\"] section"},
    {"[etcd]\n", "t.conf:1: [etcd] endpoints: missing"},
    {"[etcd]\nendpoints = http://a:1\ncert = /c.pem\n[controller \"c1\"]\nlisten = 1.2.3.4:1\n",
     "t.conf:1: [etcd] key: missing"},
    {"[controller \"c1\"]\nlisten = 1.2.3.4:1\n",
     "t.conf:1: [controller \"c1\"]: several controllers need an [etcd] section"},
    {"[etcd]\nendpoints = http://a:1\n[controller \"c1\"]\n",
     "t.conf:3: [controller \"c1\"] listen: missing"},
    {"[etcd]\nendpoints = http://a:1\n[controller \"c1\"]\nlisten = a:1\n[controller \"c1\"]\n",
     "t.conf:5: [controller \"c1\"]: controller defined twice"},
    {"[etcd]\nendpoints = http://a:1\n[controller \"c1\"]\nport = 1\n",
     "t.conf:4: [controller \"c1\"] port: unknown key"},
    /* Secrets, as ssh handles keys. */
    {"[cluster]\nname = x\n", "t.conf:1: [cluster] secret: missing: agents and clients"},
    {"[agent]\nheartbeat_ms = 100\n", "t.conf:1: [cluster] secret: missing"},
    {"[cluster]\nsecret =\n", "t.conf:2: [cluster] secret: empty: a secret of at least 16 bytes"},
    {"[cluster]\nsecret = abcdefghijklmno\n",
     "t.conf:2: [cluster] secret: too short (15 bytes): at least 16 are required"},
    {"[cluster]\nsecret = abcdefghijklmnopq ;def\n",
     "t.conf:2: [cluster] secret: a ';' after a space starts a comment and would cut the secret"},
    {"[redis]\npassword = pw\t;comment\n", "t.conf:2: [redis] password: a ';' after a space"},
    {"[dns]\ntsig_secret = c2VjcmV0 ;x\n", "t.conf:2: [dns] tsig_secret: a ';' after a space"},
    {"[dns]\ntsig_secret = YWJjZA==\n", "t.conf:2: [dns] tsig_secret: too short: at least 16"},
    {"[redis]\npassword =\n", "t.conf:2: [redis] password: empty"},
    {"[cluster]\nname = a\n[agent]\n[cluster]\n", "t.conf:4: [cluster] defined twice"},
    {"[cluster]\nname = a\nname = b\n", "t.conf:3: [cluster] name: set twice in this section"},
    {"[node \"n1\"]\naddress = 1.2.3.4\naddress = 1.2.3.5\n",
     "t.conf:3: [node \"n1\"] address: set twice"},
    {"[shard \"s\"]\nnodes = a\nnodes = b\n", "t.conf:3: [shard \"s\"] nodes: set twice"},
    {"[include]\npath = relative.conf\n", "t.conf:2: [include] path: not an absolute path"},
    {"[include]\npath = /nonexistent/x.conf\n",
     "t.conf:2: [include] path: failed to include /nonexistent/x.conf: No such file"},
    {"[include]\npath = /dev/zero\n", "t.conf:2: [include] path: failed to include /dev/zero"},
    {"[include]\nfile = /etc/x\n", "t.conf:2: [include] file: unknown key"},
};

static void test_etcd(void **state)
{
	static const char text[] =
	    "[cluster]\nname = prod\nsecret = 0123456789abcdef\n"
	    "[etcd]\nendpoints = http://10.0.0.1:2379, http://10.0.0.2:2379\n"
	    "lease_ms = 3000\n"
	    "[controller \"c1\"]\nlisten = 10.0.0.1:26379\n"
	    "[controller \"c2\"]\nlisten = [fd00::2]:26380\n";
	struct cfg *c = NULL;
	char err[512] = "";

	(void)state;
	assert_int_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	assert_true(c->etcd.enabled);
	assert_int_equal(c->etcd.nendpoints, 2);
	assert_string_equal(c->etcd.endpoints[1], "http://10.0.0.2:2379");
	assert_string_equal(c->etcd.prefix, "/flatline/prod/");
	assert_int_equal(c->etcd.lease_ms, 3000);
	assert_int_equal(c->etcd.timeout_ms, 500);
	assert_int_equal(c->nctls, 2);
	assert_non_null(cfg_find_ctl(c, "c2"));
	assert_int_equal(cfg_find_ctl(c, "c2")->listen.port, 26380);
	assert_string_equal(cfg_find_ctl(c, "c2")->listen.host, "fd00::2");
	assert_null(cfg_find_ctl(c, "c3"));
	cfg_free(c);
}

/* [controller] mode: active by default, shadow, nothing else. */
static void test_mode(void **state)
{
	static const char head[] = "[cluster]\nname = p\nsecret = 0123456789abcdef\n";
	struct cfg *c = NULL;
	char text[256], err[512] = "";

	(void)state;
	assert_int_equal(cfg_load_string("t.conf", head, &c, err, sizeof(err)), 0);
	assert_false(c->controller.shadow);
	cfg_free(c);
	snprintf(text, sizeof(text), "%s[controller]\nmode = shadow\n", head);
	assert_int_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	assert_true(c->controller.shadow);
	cfg_free(c);
	snprintf(text, sizeof(text), "%s[controller]\nmode = Active\n", head);
	assert_int_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	assert_false(c->controller.shadow);
	cfg_free(c);
	c = NULL;
	snprintf(text, sizeof(text), "%s[controller]\nmode = watch\n", head);
	assert_int_not_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "t.conf:5: [controller] mode: not active or shadow: 'watch'"));
	cfg_free(c);
}

/* [shard] user and password: the shard's pair for its servers, else [redis]'s; a
 * user without a password refused with file:line. */
static void test_shard_auth(void **state)
{
	static const char head[] = "[cluster]\nname = p\nsecret = 0123456789abcdef\n"
				   "[redis]\nuser = ru\npassword = rp\n"
				   "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
				   "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6379\n"
				   "[shard \"a\"]\nnodes = n1\n";
	struct cfg *c = NULL;
	char text[512], err[512] = "";
	const char *u, *p;

	(void)state;
	snprintf(text, sizeof(text), "%s[shard \"b\"]\nnodes = n2\nuser = bu\npassword = bp\n",
		 head);
	assert_int_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	cfg_server_auth(c, 0, &u, &p);
	assert_string_equal(u, "ru");
	assert_string_equal(p, "rp");
	cfg_server_auth(c, 1, &u, &p);
	assert_string_equal(u, "bu");
	assert_string_equal(p, "bp");
	cfg_server_auth(c, -1, &u, &p);
	assert_string_equal(p, "rp");
	cfg_free(c);
	/* A password alone: the default user, not [redis]'s. */
	snprintf(text, sizeof(text), "%s[shard \"b\"]\nnodes = n2\npassword = bp\n", head);
	assert_int_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	cfg_server_auth(c, 1, &u, &p);
	assert_string_equal(u, "");
	assert_string_equal(p, "bp");
	cfg_free(c);
	c = NULL;
	snprintf(text, sizeof(text), "%s[shard \"b\"]\nnodes = n2\nuser = bu\n", head);
	assert_int_not_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "t.conf:15: [shard \"b\"] password: missing"));
	cfg_free(c);
}

/* [shard] replicas, spares, restore_after_ms, promotable_after_ms: defaults, the
 * spare nodes marked, and each refusal with its file:line. */
static void test_spares(void **state)
{
	static const char head[] = "[cluster]\nname = p\nsecret = 0123456789abcdef\n"
				   "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
				   "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6379\n"
				   "[node \"n3\"]\naddress = 10.0.0.3\nredis = 10.0.0.3:6379\n"
				   "[node \"n4\"]\naddress = 10.0.0.4\nredis = 10.0.0.4:6379\n";
	static const struct {
		const char *tail, *msg;
	} bad[] = {
	    {"[shard \"s\"]\nnodes = n1 n2\nspares = n9\n",
	     "t.conf:18: [shard \"s\"] spares: no [node \"n9\"] in this file"},
	    {"[shard \"s\"]\nnodes = n1 n2\nspares = n3 n2\n",
	     "t.conf:18: [shard \"s\"] spares: node n2 is in shard s's nodes"},
	    {"[shard \"s\"]\nnodes = n1\nspares = n3\n[shard \"t\"]\nnodes = n2\nspares = n3\n",
	     "t.conf:21: [shard \"t\"] spares: node n3 is already a spare of shard s"},
	    {"[shard \"s\"]\nnodes = n1 n2\nreplicas = 64\n", "t.conf:18: [shard \"s\"] replicas"},
	    {"[shard \"s\"]\nnodes = n1 n2\nrestore_after_ms = -1\n",
	     "t.conf:18: [shard \"s\"] restore_after_ms"},
	};
	struct cfg *c = NULL;
	char text[1024], err[512] = "";

	(void)state;
	snprintf(text, sizeof(text), "%s[shard \"s\"]\nnodes = n1 n2\n", head);
	assert_int_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	assert_int_equal(c->shards[0].replicas, -1);
	assert_int_equal(c->shards[0].restore_after_ms, 30000);
	assert_int_equal(c->shards[0].promotable_after_ms, 5000);
	assert_false(c->nodes[2].spare);
	assert_string_equal(c->controller.provision_script, "");
	cfg_free(c);
	snprintf(text, sizeof(text),
		 "%s[controller]\nprovision_script = /usr/local/bin/prov\n[shard \"s\"]\n"
		 "nodes = n1 n2\nspares = n3, n4\nreplicas = 2\nrestore_after_ms = 0\n"
		 "promotable_after_ms = 100\n",
		 head);
	assert_int_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	assert_int_equal(c->shards[0].replicas, 2);
	assert_int_equal(c->shards[0].restore_after_ms, 0);
	assert_int_equal(c->shards[0].promotable_after_ms, 100);
	assert_true(c->nodes[2].spare && c->nodes[3].spare);
	assert_string_equal(c->nodes[3].spare_for, "s");
	assert_int_equal(c->nodes[3].shard, -1);
	assert_int_equal(c->shards[0].nnodes, 2);
	assert_string_equal(c->controller.provision_script, "/usr/local/bin/prov");
	cfg_free(c);
	snprintf(text, sizeof(text), "%s[controller]\nprovision_script = prov\n", head);
	c = NULL;
	assert_int_not_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "t.conf:17: [controller] provision_script"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%s%s", head, bad[i].tail);
		c = NULL;
		if (!cfg_load_string("t.conf", text, &c, err, sizeof(err)) ||
		    strncmp(err, bad[i].msg, strlen(bad[i].msg))) {
			print_error("case %zu: '%s', want a prefix '%s'\n", i, err, bad[i].msg);
			fail();
		}
		assert_null(c);
	}
}

/* The TLS keys (docs/security.md, TLS): defaults, tls_address from
 * tls_listen, and each cross-check with its file:line message. */
static void test_tls_keys(void **state)
{
	static const char base[] = "[cluster]\nsecret = 0123456789abcdef\n"
				   "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6380\n"
				   "[shard \"s\"]\nnodes = n1\n";
	static const struct {
		const char *text, *msg; /* msg NULL: valid */
	} cases[] = {
	    {"[controller]\ntls_listen = 10.0.0.9:26380\ntls_cert = /c\ntls_key = /k\n"
	     "tls_ca = /ca\n",
	     NULL},
	    {"[controller]\ntls_listen = 10.0.0.9:26380\ntls_cert = /c\ntls_key = /k\n",
	     "t.conf:9: [controller] tls_ca: missing: tls_auth_clients is yes (the default)"},
	    {"[controller]\ntls_listen = 10.0.0.9:26380\ntls_cert = /c\ntls_key = /k\n"
	     "tls_auth_clients = no\n",
	     NULL},
	    {"[controller]\ntls_listen = 0.0.0.0:26380\ntls_cert = /c\ntls_key = /k\n"
	     "tls_auth_clients = no\n",
	     "t.conf:9: [controller] tls_address: missing: tls_listen = 0.0.0.0"},
	    {"[controller]\ntls_listen = 10.0.0.9:26380\ntls_cert = /c\n",
	     "t.conf:10: [controller] tls_key: missing (a certificate needs its private key"},
	    {"[controller]\ntls_listen = 10.0.0.9:26380\n",
	     "t.conf:9: [controller] tls_cert: missing (the controller's certificate"},
	    {"[controller]\ntls_cert = /c\ntls_key = /k\n",
	     "t.conf:9: [controller] tls_listen: missing"},
	    {"[controller]\ntls_auth_clients = sometimes\n",
	     "t.conf:9: [controller] tls_auth_clients: not yes, no or optional: 'sometimes'"},
	    {"[controller]\ntls_listen = unix:/run/x\n",
	     "t.conf:9: [controller] tls_listen: host:port or [v6]:port, not a unix socket"},
	    {"[agent]\ntls_ca = relative.pem\n",
	     "t.conf:9: [agent] tls_ca: not an absolute path: 'relative.pem'"},
	    {"[agent]\ntls_key = /k\n", "t.conf:9: [agent] tls_cert: missing"},
	    {"[redis]\ntls = yes\n", "t.conf:9: [redis] tls_ca: missing"},
	    {"[redis]\ntls = maybe\n", "t.conf:9: [redis] tls: not a boolean"},
	    {"[redis]\ntls_ca = /ca\n", "t.conf:9: [redis] tls: not yes"},
	    {"[redis]\ntls = yes\ntls_ca = /ca\ntls_server_name = r.example\n", NULL},
	    {"[redis]\ntls_sni = x\n", "t.conf:9: [redis] tls_sni: unknown key"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024], err[512] = "";
		struct cfg *c = NULL;
		int rc;

		snprintf(text, sizeof(text), "%s%s", base, cases[i].text);
		rc = cfg_load_string("t.conf", text, &c, err, sizeof(err));
		if (cases[i].msg ? (rc == 0 || strncmp(err, cases[i].msg, strlen(cases[i].msg)))
				 : rc) {
			print_error("case %zu: rc %d, message\n  '%s'\nwant %s\n  '%s'\n", i, rc,
				    err, cases[i].msg ? "a prefix of" : "success",
				    cases[i].msg ? cases[i].msg : "");
			fail();
		}
		if (i == 0) {
			assert_true(c->controller.tls);
			assert_false(c->controller.have_listen); /* TLS only */
			assert_string_equal(c->controller.tls_address.host, "10.0.0.9");
			assert_int_equal(c->controller.tls_address.port, 26380);
			assert_int_equal(c->controller.tls_auth_clients, CFG_TLS_AUTH_YES);
		}
		cfg_free(c);
	}
}

/* TLS in HA mode: tls_listen/tls_address per [controller "ID"], all or none, the
 * files shared in [controller]; each refusal with its file:line. */
static void test_ha_tls_keys(void **state)
{
	static const char base[] = "[cluster]\nsecret = 0123456789abcdef\n"
				   "[etcd]\nendpoints = http://10.0.0.1:2379\n"
				   "[controller]\ntls_cert = /c\ntls_key = /k\ntls_ca = /ca\n";
	static const struct {
		const char *text, *msg; /* msg NULL: valid */
	} cases[] = {
	    {"[controller \"c1\"]\ntls_listen = 10.0.0.1:26380\n"
	     "[controller \"c2\"]\nlisten = 10.0.0.2:26379\ntls_listen = 0.0.0.0:26380\n"
	     "tls_address = ctl2.example:26380\n",
	     NULL},
	    {"[controller \"c1\"]\ntls_listen = 10.0.0.1:26380\n"
	     "[controller \"c2\"]\nlisten = 10.0.0.2:26379\n",
	     "t.conf:11: [controller \"c2\"] tls_listen: missing: controller c1 has tls_listen"},
	    {"[controller \"c1\"]\ntls_listen = 0.0.0.0:26380\n",
	     "t.conf:10: [controller \"c1\"] tls_address: missing: tls_listen = 0.0.0.0"},
	    {"[controller \"c1\"]\nlisten = 10.0.0.1:26379\ntls_address = 10.0.0.1:26380\n",
	     "t.conf:11: [controller \"c1\"] tls_listen: missing (tls_address is where"},
	    {"[controller \"c1\"]\ntls_listen = unix:/run/x\n",
	     "t.conf:10: [controller \"c1\"] tls_listen: host:port or [v6]:port, not a unix "
	     "socket"},
	    {"[controller \"c1\"]\n", "t.conf:9: [controller \"c1\"] listen: missing"},
	    {"tls_listen = 10.0.0.1:26380\n[controller \"c1\"]\ntls_listen = 10.0.0.1:26380\n",
	     "t.conf:9: [controller] tls_listen: in HA mode ([etcd]) each controller's goes in"},
	    {"[controller \"c1\"]\nlisten = 10.0.0.1:26379\n",
	     "t.conf:6: [controller] tls_listen: missing (the TLS keys of [controller]"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024], err[512] = "";
		struct cfg *c = NULL;
		int rc;

		snprintf(text, sizeof(text), "%s%s", base, cases[i].text);
		rc = cfg_load_string("t.conf", text, &c, err, sizeof(err));
		if (cases[i].msg ? (rc == 0 || strncmp(err, cases[i].msg, strlen(cases[i].msg)))
				 : rc) {
			print_error("case %zu: rc %d, message\n  '%s'\nwant %s\n  '%s'\n", i, rc,
				    err, cases[i].msg ? "a prefix of" : "success",
				    cases[i].msg ? cases[i].msg : "");
			fail();
		}
		if (i == 0) {
			const struct cfg_ctl *c1 = cfg_find_ctl(c, "c1"),
					     *c2 = cfg_find_ctl(c, "c2");

			assert_true(c->controller.tls);
			assert_true(c1->tls && c2->tls);
			assert_string_equal(c1->listen_str, ""); /* TLS only */
			assert_string_equal(c1->tls_address.host, "10.0.0.1");
			assert_int_equal(c1->tls_address.port, 26380);
			assert_string_equal(c2->tls_address.host, "ctl2.example");
			assert_string_equal(c2->listen.host, "10.0.0.2");
		}
		cfg_free(c);
	}
}

static void test_bad_files(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cfg *c = NULL;
		char err[512] = "";
		int rc = cfg_load_string("t.conf", bad[i].text, &c, err, sizeof(err));

		if (rc == 0 || strncmp(err, bad[i].msg, strlen(bad[i].msg))) {
			print_error("case %zu: rc %d, message\n  '%s'\nwant a prefix of\n  '%s'\n",
				    i, rc, err, bad[i].msg);
			fail();
		}
		assert_null(c);
	}
}

static void test_long_line_and_missing_file(void **state)
{
	char *text = malloc(3000), err[512];
	struct cfg *c = NULL;

	(void)state;
	memset(text, 'a', 2999);
	memcpy(text, "[cluster]\nname = ", 17);
	text[2999] = '\0';
	assert_int_not_equal(cfg_load_string("t.conf", text, &c, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "t.conf:2: line longer than"));
	free(text);
	assert_int_not_equal(cfg_load("/nonexistent/cluster.conf", &c, err, sizeof(err)), 0);
	assert_string_equal(err, "failed to open cluster file /nonexistent/cluster.conf: No such "
				 "file or directory");
}

/* Valid files whose probing cannot tell a dead host: the agent warns with these. */
static void test_probe_warnings(void **state)
{
	static const char text[] = "[cluster]\nsecret = 0123456789abcdef\n"
				   "[node \"a\"]\naddress = fd00:f1::1\nredis = h:1\n"
				   "[node \"b\"]\naddress = fd00:f1::2\nredis = h:2\n"
				   "[node \"c\"]\naddress = fd00:f1:0::2\nredis = h:3\n"
				   "[node \"d\"]\naddress = 127.0.0.1\nredis = h:4\n"
				   "[node \"e\"]\naddress = ::1\nredis = h:5\n"
				   "[node \"f\"]\naddress = 10.0.0.1\nredis = h:6\n"
				   "[node \"g\"]\naddress = 10.0.0.1\nredis = h:7\n"
				   "[shard \"s\"]\nnodes = a b c d e f\n"
				   "[shard \"t\"]\nnodes = g\n";
	struct cfg *c = NULL;
	char err[512] = "", why[256];

	(void)state;
	assert_int_equal(cfg_load_string("w.conf", text, &c, err, sizeof(err)), 0);
	assert_int_equal(cfg_find_node(c, "b")->address_line, 7);
	assert_int_equal(cfg_probe_warning(c, cfg_find_node(c, "a"), why, sizeof(why)), 0);
	/* fd00:f1::2 and fd00:f1:0::2 are one address written two ways. */
	assert_int_equal(cfg_probe_warning(c, cfg_find_node(c, "b"), why, sizeof(why)), 1);
	assert_string_equal(why, "fd00:f1::2 is also node c's address: one probe answers for "
				 "both, so the peers cannot tell which host died");
	assert_int_equal(cfg_probe_warning(c, cfg_find_node(c, "d"), why, sizeof(why)), 1);
	assert_string_equal(why, "127.0.0.1 is loopback: every host answers for it, so a dead "
				 "host of node d cannot be detected by its peers");
	assert_int_equal(cfg_probe_warning(c, cfg_find_node(c, "e"), why, sizeof(why)), 1);
	assert_non_null(strstr(why, "::1 is loopback"));
	/* f and g share 10.0.0.1 but not a shard: nobody probes the one for the other. */
	assert_int_equal(cfg_probe_warning(c, cfg_find_node(c, "f"), why, sizeof(why)), 0);
	assert_int_equal(cfg_probe_warning(c, cfg_find_node(c, "g"), why, sizeof(why)), 0);
	assert_null(cfg_address_unprobeable("fd00::2"));
	assert_null(cfg_address_unprobeable("2001:db8::1"));
	assert_null(cfg_address_unprobeable("198.18.0.2"));
	cfg_free(c);
}

/* The controller on every address ([::]: IPv6 and IPv4), reached at one of them. */
static void test_controller_any(void **state)
{
	static const char text[] = "[cluster]\nsecret = 0123456789abcdef\n"
				   "[controller]\nlisten = [::]:26400\naddress = [fd00:77::fe]\n";
	struct cfg *c = NULL;
	char err[512] = "";

	(void)state;
	assert_int_equal(cfg_load_string("a.conf", text, &c, err, sizeof(err)), 0);
	assert_string_equal(c->controller.listen.host, "::");
	assert_string_equal(c->controller.address.host, "fd00:77::fe");
	assert_int_equal(c->controller.address.port, 26379);
	cfg_free(c);
}

/* The hung causes' defaults: a short grace for a stopped server, Redis's own
 * busy-reply-threshold for a busy one. */
static void test_hung_cause_defaults(void **state)
{
	struct cfg *c = NULL;
	char err[512] = "";

	(void)state;
	assert_int_equal(
	    cfg_load_string("t.conf",
			    "[cluster]\nsecret = 0123456789abcdef\n[agent]\nhung_after = 5\n", &c,
			    err, sizeof(err)),
	    0);
	assert_int_equal(c->agent.stop_grace_ms, 50);
	assert_true(c->agent.stop_grace_ms < c->agent.hung_after * c->agent.ping_interval_ms);
	assert_int_equal(c->agent.busy_max_ms, 5000);
	cfg_free(c);
}

/* write_file NAME MODE TEXT (TEXT may hold NUL bytes: len). */
static void write_file(const char *path, mode_t mode, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static const char base[] = "[cluster]\nname = t\nsecret = 0123456789abcdef\n"
			   "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n";

static void test_file_mode_and_nul(void **state)
{
	char dir[] = "/tmp/fl-cfg-XXXXXX", path[64], err[512];
	struct cfg *c = NULL;
	static const char nul[] = "[cluster]\nname = t\nsecret = 0123456789abcdef\0tail\n";

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.conf", dir);
	/* 0644 with a secret: refused, with the reason and the fix. */
	write_file(path, 0644, base, strlen(base));
	assert_int_equal(cfg_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err,
			       ":3: holds a secret and group or others have access to the file "
			       "(mode 0644): chmod 600"));
	assert_null(c);
	write_file(path, 0640, base, strlen(base));
	assert_int_equal(cfg_load(path, &c, err, sizeof(err)), -EINVAL);
	write_file(path, 0600, base, strlen(base));
	assert_int_equal(cfg_load(path, &c, err, sizeof(err)), 0);
	cfg_free(c);
	c = NULL;
	/* A NUL byte in a secret would cut it: refused. */
	write_file(path, 0600, nul, sizeof(nul) - 1);
	assert_int_equal(cfg_load(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "c.conf:3: NUL byte in line"));
	assert_null(c);
	unlink(path);
	rmdir(dir);
}

/* The DNS secret lives in a controller-only file; the agents' file includes
 * it and it is simply not there on their hosts... no: an include must exist.
 * So the controller's file includes the shared one plus its own secrets. */
static void test_include(void **state)
{
	char dir[] = "/tmp/fl-cfg-XXXXXX", shared[64], ctl[64], text[512], err[512];
	struct cfg *c = NULL;
	static const char dns[] = "[dns]\nzone = ha.example.\ntsig_name = k\n"
				  "tsig_secret = c2VjcmV0c2VjcmV0c2VjcmV0\n";

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(shared, sizeof(shared), "%s/cluster.conf", dir);
	snprintf(ctl, sizeof(ctl), "%s/controller.conf", dir);
	write_file(shared, 0600, base, strlen(base));
	snprintf(text, sizeof(text), "[include]\npath = %s\n%s", shared, dns);
	write_file(ctl, 0600, text, strlen(text));
	assert_int_equal(cfg_load(ctl, &c, err, sizeof(err)), 0);
	assert_string_equal(c->secret, "0123456789abcdef");
	assert_int_equal(c->nnodes, 1);
	assert_true(c->dns.enabled);
	assert_string_equal(c->dns.tsig_secret, "c2VjcmV0c2VjcmV0c2VjcmV0");
	cfg_free(c);
	c = NULL;
	/* The included file is held to the same rules, named in the message. */
	write_file(shared, 0644, base, strlen(base));
	assert_int_equal(cfg_load(ctl, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cluster.conf:3: holds a secret"));
	write_file(shared, 0600, "[cluster]\nname = x\nname = y\n", 29);
	assert_int_equal(cfg_load(ctl, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cluster.conf:3: [cluster] name: set twice"));
	/* A section of the including file cannot be repeated in the included one. */
	snprintf(text, sizeof(text), "%s[include]\npath = %s\n", base, ctl);
	write_file(shared, 0600, text, strlen(text));
	snprintf(text, sizeof(text), "[include]\npath = %s\n", shared);
	write_file(ctl, 0600, text, strlen(text));
	assert_int_equal(cfg_load(ctl, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "defined twice"));
	unlink(shared);
	unlink(ctl);
	rmdir(dir);
}

static void test_endpoints(void **state)
{
	struct cfg_endpoint ep;

	(void)state;
	assert_int_equal(cfg_parse_endpoint("localhost", &ep, 6379), 0);
	assert_int_equal(ep.port, 6379);
	assert_int_equal(cfg_parse_endpoint("[::1]:7000", &ep, 6379), 0);
	assert_string_equal(ep.host, "::1");
	assert_int_equal(ep.port, 7000);
	assert_int_not_equal(cfg_parse_endpoint("::1:7000", &ep, 1), 0);
	assert_int_not_equal(cfg_parse_endpoint("h:0", &ep, 1), 0);
	assert_int_not_equal(cfg_parse_endpoint("h:", &ep, 1), 0);
	assert_int_not_equal(cfg_parse_endpoint(":80", &ep, 1), 0);
	assert_int_not_equal(cfg_parse_endpoint("[zz]:80", &ep, 1), 0);
	assert_int_not_equal(cfg_parse_endpoint("a b:80", &ep, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_file),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_long_line_and_missing_file),
	    cmocka_unit_test(test_probe_warnings),
	    cmocka_unit_test(test_controller_any),
	    cmocka_unit_test(test_hung_cause_defaults),
	    cmocka_unit_test(test_endpoints),
	    cmocka_unit_test(test_etcd),
	    cmocka_unit_test(test_mode),
	    cmocka_unit_test(test_spares),
	    cmocka_unit_test(test_shard_auth),
	    cmocka_unit_test(test_tls_keys),
	    cmocka_unit_test(test_ha_tls_keys),
	    cmocka_unit_test(test_file_mode_and_nul),
	    cmocka_unit_test(test_include),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
