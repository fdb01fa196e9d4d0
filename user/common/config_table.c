// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The table of the cluster file's keys (config.h, "The table of keys"): one row
 * per key with its section, type, bounds, default, field, who reads it, who applies
 * a change on SIGHUP, and one line of description; as Redis's static_configs[].
 * The reader (config_load.c, through cfg_set_key), the defaults, cfg_diff(), both
 * daemons' reloads, `flatline check` and tests/unit/test_config_table.c (against
 * docs/man/flatline.conf.5.md) walk it. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "common/config.h"
#include "common/config_internal.h"

#define MS_MAX 86400000

/* [controller] mode: active (acts) or shadow (docs/sentinel.md, "Shadow mode"). */
static bool set_mode(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	bool *shadow = field;

	if (!strcasecmp(v, "active"))
		*shadow = false;
	else if (!strcasecmp(v, "shadow"))
		*shadow = true;
	else {
		perr(p, p->line, k->name, "not active or shadow: '%s'", v);
		return false;
	}
	return true;
}

/* [shard] mode: replication (a primary and its replicas) or cluster (one primary of a
 * Redis/Valkey Cluster and its replicas, docs/cluster.md). */
static bool set_shard_mode(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	bool *cluster = field;

	if (!strcasecmp(v, "replication"))
		*cluster = false;
	else if (!strcasecmp(v, "cluster"))
		*cluster = true;
	else {
		perr(p, p->line, k->name, "not replication or cluster: '%s'", v);
		return false;
	}
	return true;
}

#define A  CFG_P_AGENT
#define C  CFG_P_CONTROLLER
#define L  CFG_P_CLI
#define AC (A | C)

#define F(fld)	  .off = offsetof(struct cfg, fld), .size = sizeof(((struct cfg *)0)->fld)
#define FN(fld)	  .off = offsetof(struct cfg_node, fld), .size = sizeof(((struct cfg_node *)0)->fld)
#define FS(fld)	  .off = offsetof(struct cfg_shard, fld), .size = sizeof(((struct cfg_shard *)0)->fld)
#define FU(fld)	  .off = offsetof(struct cfg_user, fld), .size = sizeof(((struct cfg_user *)0)->fld)
#define FC(fld)	  .off = offsetof(struct cfg_ctl, fld), .size = sizeof(((struct cfg_ctl *)0)->fld)
#define INT(l, h) .type = CFG_T_INT, .lo = (l), .hi = (h)
#define CUSTOM(f) .type = CFG_T_CUSTOM, .set = (f)

static bool eq_etcd_endpoints(const struct cfg *ca, const void *a, const struct cfg *cb,
			      const void *b, const struct cfg_key *k)
{
	(void)a;
	(void)b;
	(void)k;
	if (ca->etcd.nendpoints != cb->etcd.nendpoints)
		return false;
	for (int i = 0; i < ca->etcd.nendpoints; i++)
		if (strcmp(ca->etcd.endpoints[i], cb->etcd.endpoints[i]))
			return false;
	return true;
}

static bool eq_shard_nodes(const struct cfg *ca, const void *a, const struct cfg *cb, const void *b,
			   const struct cfg_key *k)
{
	const struct cfg_shard *x = a, *y = b;

	(void)k;
	if (x->nnodes != y->nnodes)
		return false;
	for (int j = 0; j < x->nnodes; j++)
		if (strcmp(ca->nodes[x->nodes[j]].id, cb->nodes[y->nodes[j]].id))
			return false;
	return true;
}

static bool eq_ctls_listen(const struct cfg *ca, const void *a, const struct cfg *cb, const void *b,
			   const struct cfg_key *k)
{
	(void)ca;
	(void)cb;
	(void)k;
	return !strcmp(((const struct cfg_ctl *)a)->listen_str,
		       ((const struct cfg_ctl *)b)->listen_str);
}

static bool eq_node_redis(const struct cfg *ca, const void *a, const struct cfg *cb, const void *b,
			  const struct cfg_key *k)
{
	(void)ca;
	(void)cb;
	(void)k;
	return !strcmp(((const struct cfg_node *)a)->redis_str,
		       ((const struct cfg_node *)b)->redis_str);
}

static bool eq_tls_listen(const struct cfg *ca, const void *a, const struct cfg *cb, const void *b,
			  const struct cfg_key *k)
{
	(void)ca;
	(void)cb;
	(void)k;
	if (k->sect == CFG_S_CTL &&
	    ((const struct cfg_ctl *)a)->tls != ((const struct cfg_ctl *)b)->tls)
		return false;
	return !memcmp((const char *)a + k->off, (const char *)b + k->off, k->size);
}

const struct cfg_key cfg_keys[] = {
    /* [cluster] */
    {CFG_S_CLUSTER, "name", .type = CFG_T_STR, F(name), .reads = C | L, .live = 0,
     .doc = "the cluster's name, in messages and the default etcd prefix"},
    {CFG_S_CLUSTER, "secret", .type = CFG_T_SECRET, F(secret), .reads = AC | L, .live = AC,
     .doc = "the shared secret the node keys derive from"},
    /* [agent] */
    {CFG_S_AGENT, "ping_interval_ms", INT(1, MS_MAX), "100", F(agent.ping_interval_ms), A, 0,
     .doc = "PING to the local server this often"},
    {CFG_S_AGENT, "hung_after", INT(1, 1000), "5", F(agent.hung_after), A, A,
     .doc = "missed PINGs in a row that make a running server hung"},
    {CFG_S_AGENT, "probe_interval_ms", INT(1, MS_MAX), "25", F(agent.probe_interval_ms), A, 0,
     .doc = "one ICMP echo to each peer this often"},
    {CFG_S_AGENT, "peer_down_after_ms", INT(1, MS_MAX), NULL, F(agent.peer_down_after_ms), A, 0,
     .doc = "nothing from a peer for this long makes it down (default 10 x probe_interval_ms: "
	    "250; widened under loss)"},
    {CFG_S_AGENT, "heartbeat_ms", INT(1, MS_MAX), "100", F(agent.heartbeat_ms), AC, AC,
     .doc = "report to the controller at least this often (also the INFO interval)"},
    {CFG_S_AGENT, "replica_heartbeat_ms", INT(1, MS_MAX), "500", F(agent.replica_heartbeat_ms), AC,
     AC, .doc = "a healthy replica with nothing new reports this often (changes go at once)"},
    {CFG_S_AGENT, "event_log", .type = CFG_T_PATH, .def = "/var/log/flatline/events.jsonl",
     F(agent.event_log), A, 0, .doc = "the agent's event log"},
    {CFG_S_AGENT, "self_fence", .type = CFG_T_BOOL, .def = "yes", F(agent.self_fence), A, A,
     .doc = "pause writes on a primary that reaches neither controller nor peers"},
    {CFG_S_AGENT, "self_fence_after_ms", INT(1, MS_MAX), NULL, F(agent.self_fence_after_ms), A, A,
     .doc = "isolated this long before self-fencing (default 2 x peer_down_after_ms)"},
    {CFG_S_AGENT, "lease_ms", INT(0, MS_MAX), "200", F(agent.lease_ms), AC, C,
     .doc = "the write lease (0 = none); the controller waits for it before promoting"},
    {CFG_S_AGENT, "stop_grace_ms", INT(0, MS_MAX), "50", F(agent.stop_grace_ms), A, A,
     .doc = "a server stopped or frozen this long is hung"},
    {CFG_S_AGENT, "busy_max_ms", INT(1, MS_MAX), "5000", F(agent.busy_max_ms), A, A,
     .doc = "a server busy on a CPU (or in a timed sleep) is alive this long"},
    {CFG_S_AGENT, "metrics_listen", .type = CFG_T_METRICS, .def = NULL, F(agent.metrics_listen), A,
     0, .doc = "host:port of the agent's Prometheus metrics (empty: off)"},
    {CFG_S_AGENT, "tls_cert", CUSTOM(cfg_set_tls_file), F(agent.tls.cert), A | L, 0,
     .doc = "the client certificate presented to the controller"},
    {CFG_S_AGENT, "tls_key", CUSTOM(cfg_set_tls_file), F(agent.tls.key), A | L, 0,
     .doc = "its private key"},
    {CFG_S_AGENT, "tls_ca", CUSTOM(cfg_set_tls_file), F(agent.tls.ca), A | L, 0,
     .doc = "the CA of the controller's certificate (default [controller] tls_ca)"},
    /* [controller] */
    {CFG_S_CONTROLLER, "listen", CUSTOM(cfg_set_ctl_addr), .def = "127.0.0.1:26379",
     F(controller.listen), AC | L, 0, .doc = "where agents report and clients query"},
    {CFG_S_CONTROLLER, "address", CUSTOM(cfg_set_ctl_addr), .def = NULL, F(controller.address),
     A | L, 0, .doc = "where agents and clients connect (default listen)"},
    {CFG_S_CONTROLLER, "node_down_after_ms", INT(1, MS_MAX), "300",
     F(controller.node_down_after_ms), C, C,
     .doc = "an agent silent this long is stale (the host-failure path)"},
    {CFG_S_CONTROLLER, "state_file", .type = CFG_T_PATH, .def = "/var/lib/flatline/state",
     F(controller.state_file), C, 0, .doc = "epochs and primaries"},
    {CFG_S_CONTROLLER, "event_log", .type = CFG_T_PATH, .def = "/var/log/flatline/controller.jsonl",
     F(controller.event_log), C, 0, .doc = "the controller's event log"},
    {CFG_S_CONTROLLER, "notification_script", .type = CFG_T_PATH, .def = NULL,
     F(controller.notification_script), C, 0, .doc = "Sentinel's notification-script"},
    {CFG_S_CONTROLLER, "client_reconfig_script", .type = CFG_T_PATH, .def = NULL,
     F(controller.client_reconfig_script), C, 0, .doc = "Sentinel's client-reconfig-script"},
    {CFG_S_CONTROLLER, "provision_script", .type = CFG_T_PATH, .def = NULL,
     F(controller.provision_script), C, 0,
     .doc = "run when a shard lacks a replica and no spare is left"},
    {CFG_S_CONTROLLER, "failover_block_ms", INT(0, MS_MAX), "10000",
     F(controller.failover_block_ms), C, C,
     .doc = "no second automatic failover of a shard within this window"},
    {CFG_S_CONTROLLER, "tilt_ms", INT(0, MS_MAX), "30000", F(controller.tilt_ms), C, C,
     .doc = "no failover this long after a clock jump or stall (TILT)"},
    {CFG_S_CONTROLLER, "metrics_listen", .type = CFG_T_METRICS, .def = NULL,
     F(controller.metrics_listen), C, 0,
     .doc = "host:port of the controller's Prometheus metrics (empty: off)"},
    {CFG_S_CONTROLLER, "tls_listen", CUSTOM(cfg_set_ctl_tls_socket), .def = NULL,
     F(controller.tls_listen), AC | L, 0, .eq = eq_tls_listen,
     .doc = "host:port of the TLS socket"},
    {CFG_S_CONTROLLER, "tls_address", CUSTOM(cfg_set_ctl_tls_socket), .def = NULL,
     F(controller.tls_address), A | L, 0, .doc = "where the TLS socket is dialled"},
    {CFG_S_CONTROLLER, "tls_cert", CUSTOM(cfg_set_tls_file), F(controller.tls_files.cert), C, 0,
     .doc = "the controller's certificate"},
    {CFG_S_CONTROLLER, "tls_key", CUSTOM(cfg_set_tls_file), F(controller.tls_files.key), C, 0,
     .doc = "its private key"},
    {CFG_S_CONTROLLER, "tls_ca", CUSTOM(cfg_set_tls_file), F(controller.tls_files.ca), AC | L, 0,
     .doc = "the CA of client certificates (the agents' default CA)"},
    {CFG_S_CONTROLLER, "tls_auth_clients", CUSTOM(cfg_set_tls_auth), .def = "yes",
     F(controller.tls_auth_clients), C, 0, .doc = "yes, optional or no: client certificates"},
    {CFG_S_CONTROLLER, "requirepass", .type = CFG_T_SECRET, .def = NULL, F(controller.requirepass),
     C | L, 0, .doc = "the default client user's password"},
    {CFG_S_CONTROLLER, "mode", CUSTOM(set_mode), .def = "active", F(controller.shadow), AC, AC,
     .doc = "active, or shadow: judge and log what would be done, change nothing"},
    {CFG_S_CONTROLLER, "agent_address_check", .type = CFG_T_BOOL, .def = "no",
     F(controller.agent_address_check), C, C,
     .doc = "an agent must connect from its node's address"},
    /* [redis] */
    {CFG_S_REDIS, "user", .type = CFG_T_STR, F(redis.user), AC, 0,
     .doc = "the ACL user for every server"},
    {CFG_S_REDIS, "password", CUSTOM(cfg_set_redis_password), F(redis.password), AC, 0,
     .doc = "its password"},
    {CFG_S_REDIS, "tls", CUSTOM(cfg_set_redis_tls), .def = "no", F(redis.tls), AC, 0,
     .doc = "TLS to every server"},
    {CFG_S_REDIS, "tls_ca", CUSTOM(cfg_set_tls_file), F(redis.tls_files.ca), AC, 0,
     .doc = "the CA of the servers' certificates"},
    {CFG_S_REDIS, "tls_cert", CUSTOM(cfg_set_tls_file), F(redis.tls_files.cert), AC, 0,
     .doc = "the client certificate presented to the servers"},
    {CFG_S_REDIS, "tls_key", CUSTOM(cfg_set_tls_file), F(redis.tls_files.key), AC, 0,
     .doc = "its private key"},
    {CFG_S_REDIS, "tls_server_name", CUSTOM(cfg_set_tls_server_name), F(redis.tls_server_name), AC,
     0, .doc = "the name every server's certificate carries"},
    /* [dns] */
    {CFG_S_DNS, "server", .type = CFG_T_ENDPOINT, .lo = 53, .def = "127.0.0.1:53", F(dns.server), C,
     0, .doc = "the zone's primary DNS server"},
    {CFG_S_DNS, "zone", .type = CFG_T_DNS_NAME, F(dns.zone), C, 0, .doc = "the zone"},
    {CFG_S_DNS, "tsig_name", CUSTOM(cfg_set_tsig_name), F(dns.tsig_name), C, 0,
     .doc = "the TSIG key's name"},
    {CFG_S_DNS, "tsig_algorithm", CUSTOM(cfg_set_tsig_algorithm), .def = "hmac-sha256",
     F(dns.tsig_algorithm), C, 0, .doc = "hmac-sha256, hmac-sha512 or hmac-sha1"},
    {CFG_S_DNS, "tsig_secret", CUSTOM(cfg_set_tsig_secret), F(dns.tsig_secret), C, 0,
     .doc = "the key's base64 secret"},
    {CFG_S_DNS, "ttl", INT(0, 86400), "1", F(dns.ttl), C, 0, .doc = "TTL of the records (s)"},
    {CFG_S_DNS, "check_ms", INT(0, MS_MAX), "10000", F(dns.check_ms), C, C, .alias = "dns_check_ms",
     .doc = "compare DNS with the primaries this often"},
    /* [etcd] */
    {CFG_S_ETCD, "endpoints", CUSTOM(cfg_set_etcd_endpoints), F(etcd.endpoints), C, 0,
     .eq = eq_etcd_endpoints, .doc = "the etcd members' URLs"},
    {CFG_S_ETCD, "prefix", CUSTOM(cfg_set_etcd_prefix), F(etcd.prefix), C, 0,
     .doc = "key prefix in etcd (default /flatline/NAME/)"},
    {CFG_S_ETCD, "lease_ms", INT(1000, 60000), "2000", F(etcd.lease_ms), C, 0,
     .doc = "the leader lease's TTL"},
    {CFG_S_ETCD, "timeout_ms", INT(10, 60000), "500", F(etcd.timeout_ms), C, 0,
     .doc = "one etcd request"},
    {CFG_S_ETCD, "user", .type = CFG_T_STR, F(etcd.user), C, 0, .doc = "etcd authentication"},
    {CFG_S_ETCD, "password", .type = CFG_T_STR, F(etcd.password), C, 0, .doc = "its password"},
    {CFG_S_ETCD, "cacert", .type = CFG_T_PATH, F(etcd.cacert), C, 0, .doc = "etcd's CA"},
    {CFG_S_ETCD, "cert", .type = CFG_T_PATH, F(etcd.cert), C, 0,
     .doc = "the client certificate for etcd"},
    {CFG_S_ETCD, "key", .type = CFG_T_PATH, F(etcd.key), C, 0, .doc = "its key"},
    /* [include] */
    {CFG_S_INCLUDE, "path", CUSTOM(cfg_set_include), .reads = AC | L, .live = 0,
     .doc = "another cluster file read in its place (a change is the keys it changes)"},
    /* [controller "ID"] */
    {CFG_S_CTL, "listen", CUSTOM(cfg_set_ctls_listen), FC(listen), AC | L, 0, .eq = eq_ctls_listen,
     .doc = "that controller's plain address"},
    {CFG_S_CTL, "tls_listen", CUSTOM(cfg_set_ctls_tls_socket), FC(tls_listen), AC | L, 0,
     .eq = eq_tls_listen, .doc = "that controller's TLS socket"},
    {CFG_S_CTL, "tls_address", CUSTOM(cfg_set_ctls_tls_socket), FC(tls_address), AC | L, 0,
     .doc = "where that controller's TLS socket is dialled"},
    /* [node "ID"] */
    {CFG_S_NODE, "address", CUSTOM(cfg_set_node_address), FN(address), AC, 0,
     .doc = "the host's IP, probed by its peers"},
    {CFG_S_NODE, "redis", CUSTOM(cfg_set_node_redis), FN(redis), AC, 0, .eq = eq_node_redis,
     .doc = "the server: host:port or unix:/path"},
    {CFG_S_NODE, "priority", INT(0, 1000000), "100", FN(priority), C, 0,
     .doc = "replica preference, 0 = never promote"},
    {CFG_S_NODE, "pidfile", .type = CFG_T_PATH, FN(pidfile), A, 0,
     .doc = "where the server writes its pid"},
    {CFG_S_NODE, "key", CUSTOM(cfg_set_node_key), FN(key), AC, AC,
     .doc = "the node's own key (hex), instead of one derived from the secret"},
    /* [shard "NAME"] */
    {CFG_S_SHARD, "nodes", CUSTOM(cfg_set_shard_nodes), FS(nodes), AC, 0, .eq = eq_shard_nodes,
     .doc = "the ids of its nodes"},
    {CFG_S_SHARD, "dns_name", .type = CFG_T_DNS_NAME, FS(dns_name), C, 0,
     .doc = "the name that follows its primary"},
    {CFG_S_SHARD, "replicas", INT(0, 63), .def = NULL, FS(replicas), C, 0,
     .doc = "the replicas it should have (default: its nodes minus one)"},
    {CFG_S_SHARD, "spares", CUSTOM(cfg_set_shard_spares), FS(spares), C, 0,
     .doc = "standby nodes attached when it lacks replicas"},
    {CFG_S_SHARD, "restore_after_ms", INT(0, MS_MAX), "30000", FS(restore_after_ms), C, 0,
     .doc = "a replica missing this long: a spare is attached (0: at once)"},
    {CFG_S_SHARD, "promotable_after_ms", INT(0, MS_MAX), "5000", FS(promotable_after_ms), C, 0,
     .doc = "a new replica synced and steady this long may be promoted"},
    {CFG_S_SHARD, "user", .type = CFG_T_STR, FS(user), AC, 0,
     .doc = "the ACL user for its servers, instead of [redis] user"},
    {CFG_S_SHARD, "password", CUSTOM(cfg_set_redis_password), FS(password), AC, 0,
     .doc = "its servers' password, instead of [redis] password"},
    {CFG_S_SHARD, "mode", CUSTOM(set_shard_mode), .def = "replication", FS(cluster), C, 0,
     .doc = "replication, or cluster: a Redis/Valkey Cluster primary and its replicas"},
    /* [user "NAME"] */
    {CFG_S_USER, "password", .type = CFG_T_SECRET, FU(password), C | L, 0,
     .doc = "the user's password"},
    {CFG_S_USER, "commands", CUSTOM(cfg_set_user_commands), FU(perms), C | L, 0,
     .doc = "read, failover, admin or all"},
};

const int cfg_nkeys = sizeof(cfg_keys) / sizeof(cfg_keys[0]);

const char *cfg_sect_name(enum cfg_sect s)
{
	static const char *const names[CFG_S_COUNT] = {
	    [CFG_S_NONE] = "",		 [CFG_S_CLUSTER] = "cluster",
	    [CFG_S_AGENT] = "agent",	 [CFG_S_CONTROLLER] = "controller",
	    [CFG_S_REDIS] = "redis",	 [CFG_S_DNS] = "dns",
	    [CFG_S_ETCD] = "etcd",	 [CFG_S_NODE] = "node",
	    [CFG_S_SHARD] = "shard",	 [CFG_S_CTL] = "controller",
	    [CFG_S_INCLUDE] = "include", [CFG_S_USER] = "user"};

	return s >= 0 && s < CFG_S_COUNT ? names[s] : "";
}

const struct cfg_key *cfg_key_find(enum cfg_sect s, const char *name)
{
	for (int i = 0; i < cfg_nkeys; i++)
		if (cfg_keys[i].sect == s &&
		    (!strcmp(cfg_keys[i].name, name) ||
		     (cfg_keys[i].alias && !strcmp(cfg_keys[i].alias, name))))
			return &cfg_keys[i];
	return NULL;
}

const char *cfg_key_apply_word(const struct cfg_key *k, unsigned proc)
{
	if (!(k->reads & proc))
		return NULL;
	return (k->live & proc) ? "live" : "restart";
}

static void procs(char *buf, size_t len, unsigned set)
{
	snprintf(buf, len, "%s%s%s", (set & A) ? "agent" : "", (set & A) && (set & C) ? ", " : "",
		 (set & C) ? "controller" : "");
}

const char *cfg_key_reload_text(const struct cfg_key *k, char *buf, size_t len)
{
	unsigned live = k->reads & k->live & AC, restart = k->reads & ~k->live & AC;
	char l[32], r[32];

	if (!k->size) {
		snprintf(buf, len, "as each key the file it names holds");
		return buf;
	}
	procs(l, sizeof(l), live);
	procs(r, sizeof(r), restart);
	if (live && restart)
		snprintf(buf, len, "live (%s); needs a restart (%s)", l, r);
	else if (live)
		snprintf(buf, len, "live (%s)", l);
	else if (restart)
		snprintf(buf, len, "needs a restart (%s)", r);
	else
		snprintf(buf, len, "nothing (read by each command)");
	return buf;
}

/* The defaults, parsed from the rows' text by the same setters as the file. */
static void defaults(enum cfg_sect s, void *base, struct cfg *c)
{
	struct parser p = {.c = c, .name = "(defaults)"};
	char err[256];

	p.err = err;
	p.errlen = sizeof(err);
	for (int i = 0; i < cfg_nkeys; i++)
		if (cfg_keys[i].sect == s && cfg_keys[i].def)
			cfg_set_key(&p, &cfg_keys[i], cfg_keys[i].def, base);
}

void cfg_table_defaults(struct cfg *c)
{
	for (enum cfg_sect s = CFG_S_CLUSTER; s <= CFG_S_ETCD; s++)
		defaults(s, c, c);
	c->controller.have_listen = false; /* a default is not a key given */
}

void cfg_table_sect_defaults(enum cfg_sect s, void *base)
{
	defaults(s, base, NULL);
}

static bool ep_eq(const struct cfg_endpoint *x, const struct cfg_endpoint *y)
{
	return !strcmp(x->host, y->host) && x->port == y->port &&
	       !strcmp(x->unix_path, y->unix_path);
}

static bool same(const struct cfg *ca, const void *a, const struct cfg *cb, const void *b,
		 const struct cfg_key *k)
{
	const char *x = (const char *)a + k->off, *y = (const char *)b + k->off;

	if (k->eq)
		return k->eq(ca, a, cb, b, k);
	switch (k->type) {
	case CFG_T_INT:
		return *(const int *)x == *(const int *)y;
	case CFG_T_BOOL:
		return *(const bool *)x == *(const bool *)y;
	case CFG_T_STR:
	case CFG_T_SECRET:
	case CFG_T_PATH:
	case CFG_T_IP:
	case CFG_T_DNS_NAME:
		return !strcmp(x, y);
	case CFG_T_ENDPOINT:
	case CFG_T_METRICS:
		return ep_eq((const void *)x, (const void *)y);
	case CFG_T_CUSTOM:
		break;
	}
	return !memcmp(x, y, k->size);
}

/* The keys of section s that differ between a and b. */
static int diff_sect(const struct cfg *ca, const void *a, const struct cfg *cb, const void *b,
		     enum cfg_sect s, const char *sect, cfg_diff_fn fn, void *ctx)
{
	int n = 0;

	for (int i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_keys[i];

		if (k->sect != s || !k->size || same(ca, a, cb, b, k))
			continue;
		fn(ctx, s, sect, k->name, k);
		n++;
	}
	return n;
}

/* A named section: id at offset 0 of each element of size sz. */
static int diff_named(const struct cfg *a, const void *xa, int na, const struct cfg *b,
		      const void *xb, int nb, size_t sz, enum cfg_sect s, cfg_diff_fn fn, void *ctx)
{
	char sect[CFG_ID_MAX + 24];
	int n = 0;

	for (int i = 0; i < na; i++) {
		const char *id = (const char *)xa + i * sz;
		const void *y = NULL;

		for (int j = 0; j < nb && !y; j++)
			if (!strcmp(id, (const char *)xb + j * sz))
				y = (const char *)xb + j * sz;
		snprintf(sect, sizeof(sect), "[%s \"%s\"]", cfg_sect_name(s), id);
		if (!y) {
			fn(ctx, s, sect, "*", NULL);
			n++;
			continue;
		}
		n += diff_sect(a, id, b, y, s, sect, fn, ctx);
	}
	for (int j = 0; j < nb; j++) {
		const char *id = (const char *)xb + j * sz;
		bool found = false;

		for (int i = 0; i < na && !found; i++)
			found = !strcmp(id, (const char *)xa + i * sz);
		if (found)
			continue;
		snprintf(sect, sizeof(sect), "[%s \"%s\"]", cfg_sect_name(s), id);
		fn(ctx, s, sect, "*", NULL);
		n++;
	}
	return n;
}

int cfg_diff(const struct cfg *a, const struct cfg *b, cfg_diff_fn fn, void *ctx)
{
	char sect[32];
	int n = 0;

	for (enum cfg_sect s = CFG_S_CLUSTER; s <= CFG_S_ETCD; s++) {
		snprintf(sect, sizeof(sect), "[%s]", cfg_sect_name(s));
		/* A whole optional section added or removed */
		if ((s == CFG_S_DNS && a->dns.enabled != b->dns.enabled) ||
		    (s == CFG_S_ETCD && a->etcd.enabled != b->etcd.enabled)) {
			fn(ctx, s, sect, "*", NULL);
			n++;
		}
		n += diff_sect(a, a, b, b, s, sect, fn, ctx);
	}
	n += diff_named(a, a->ctls, a->nctls, b, b->ctls, b->nctls, sizeof(*a->ctls), CFG_S_CTL, fn,
			ctx);
	n += diff_named(a, a->nodes, a->nnodes, b, b->nodes, b->nnodes, sizeof(*a->nodes),
			CFG_S_NODE, fn, ctx);
	n += diff_named(a, a->shards, a->nshards, b, b->shards, b->nshards, sizeof(*a->shards),
			CFG_S_SHARD, fn, ctx);
	n += diff_named(a, a->users, a->nusers, b, b->users, b->nusers, sizeof(*a->users),
			CFG_S_USER, fn, ctx);
	return n;
}
