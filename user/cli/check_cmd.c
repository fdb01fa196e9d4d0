// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `flatline check -c FILE`: validates a cluster file as named-checkconf does and
 * prints what each process will do with it; `flatline version`. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "cmds.h"
#include "common/acl.h"
#include "common/config.h"
#include "common/log.h"
#include "common/tls.h"
#include "common/version.h"

#define CHECK_DEFAULT_CONFIG "/etc/flatline/cluster.conf"

static const char check_usage[] =
    "usage: flatline check [-c FILE] [--node ID] [-q]\n"
    "       flatline check --keys\n"
    "\n"
    "  -c, --config FILE  the cluster file to validate (default " CHECK_DEFAULT_CONFIG ")\n"
    "  --node ID          print only what this node's agent will do\n"
    "  -q, --quiet        print nothing when the file is valid\n"
    "  --keys             print every key the file may hold: section, name, default,\n"
    "                     what a SIGHUP does with a change, meaning\n"
    "\n"
    "Exit status: 0 valid, 1 invalid (one line names file:line), 2 usage.\n";

static void print_ep(FILE *f, const struct cfg_endpoint *ep)
{
	if (ep->unix_path[0])
		fprintf(f, "unix:%s", ep->unix_path);
	else if (strchr(ep->host, ':'))
		fprintf(f, "[%s]:%d", ep->host, ep->port);
	else
		fprintf(f, "%s:%d", ep->host, ep->port);
}

static void print_node(FILE *f, const struct cfg *c, const struct cfg_node *n)
{
	const struct cfg_shard *s = n->shard >= 0 ? &c->shards[n->shard] : NULL;
	int peers = 0;

	fprintf(f, "agent on node %s (%s):\n", n->id, n->address);
	fprintf(f, "  watches %s every %d ms, hung after %d missed PINGs%s%s\n", n->redis_str,
		c->agent.ping_interval_ms, c->agent.hung_after, n->pidfile[0] ? ", pid from " : "",
		n->pidfile);
	fprintf(f, "  reports to the controller%s at ", c->etcd.enabled ? "s" : "");
	for (int i = 0; i < (c->etcd.enabled ? c->nctls : 1); i++) {
		fprintf(f, "%s", i ? ", " : "");
		print_ep(f, tls_ctl_ep(c, i));
	}
	fprintf(f, "%s every %d ms\n", c->controller.tls ? " over TLS" : "", c->agent.heartbeat_ms);
	if (c->redis.tls)
		fprintf(f, "  speaks TLS to its server\n");
	if (s && s->password[0])
		fprintf(f, "  authenticates to its server as %s with shard %s's password\n",
			s->user[0] ? s->user : "the default user", s->name);
	else if (c->redis.password[0])
		fprintf(f, "  authenticates to its server as %s with [redis] password\n",
			c->redis.user[0] ? c->redis.user : "the default user");
	if (!s) {
		fprintf(f, "  in no shard: never promoted, probes no peers\n");
	} else {
		fprintf(f, "  shard %s, priority %d%s\n", s->name, n->priority,
			n->priority ? "" : " (never promoted)");
		fprintf(f, "  probes peers:");
		for (int i = 0; i < s->nnodes; i++) {
			const struct cfg_node *p = &c->nodes[s->nodes[i]];

			if (p == n)
				continue;
			if (!strchr(p->address, '.')) {
				fprintf(f, " (%s: IPv6, not probed)", p->id);
				continue;
			}
			fprintf(f, " %s=%s", p->id, p->address);
			peers++;
		}
		fprintf(f, "%s\n", peers ? "" : " none");
		if (peers)
			fprintf(f, "  every %d ms, peer down after %d ms\n",
				c->agent.probe_interval_ms, c->agent.peer_down_after_ms);
	}
	if (c->agent.self_fence)
		fprintf(f, "  self-fences as an isolated primary after %d ms\n",
			c->agent.self_fence_after_ms);
	else
		fprintf(f, "  self-fencing off\n");
	if (c->agent.metrics_listen.host[0] || c->agent.metrics_listen.unix_path[0]) {
		fprintf(f, "  serves metrics on ");
		print_ep(f, &c->agent.metrics_listen);
		fprintf(f, "\n");
	}
	fprintf(f, "  event log %s\n", c->agent.event_log);
}

static void print_controller(FILE *f, const struct cfg *c)
{
	const typeof(c->controller) *k = &c->controller;

	fprintf(f, "controller:\n");
	for (int i = 0; c->etcd.enabled && i < c->nctls; i++) {
		const struct cfg_ctl *t = &c->ctls[i];

		fprintf(f, "  controller %s (HA, etcd)", t->id);
		if (t->listen_str[0]) {
			fprintf(f, " listens on ");
			print_ep(f, &t->listen);
		}
		if (t->tls) {
			fprintf(f, "%s with TLS on ", t->listen_str[0] ? "," : " listens");
			print_ep(f, &t->tls_listen);
			fprintf(f, ", reached at ");
			print_ep(f, &t->tls_address);
		}
		fprintf(f, "\n");
	}
	if (c->etcd.enabled && k->tls)
		fprintf(f, "  TLS client certificates: %s\n",
			k->tls_auth_clients == CFG_TLS_AUTH_YES	 ? "required"
			: k->tls_auth_clients == CFG_TLS_AUTH_NO ? "not asked for"
								 : "verified if sent");
	if (!c->etcd.enabled && (!k->tls || k->have_listen)) {
		fprintf(f, "  listens on ");
		print_ep(f, &k->listen);
		fprintf(f, " (agents, Sentinel clients, flatline status)\n");
	}
	if (k->tls && !c->etcd.enabled) {
		fprintf(f, "  listens with TLS on ");
		print_ep(f, &k->tls_listen);
		fprintf(f, ", reached at ");
		print_ep(f, &k->tls_address);
		fprintf(f, "; client certificates: %s\n",
			k->tls_auth_clients == CFG_TLS_AUTH_YES	 ? "required"
			: k->tls_auth_clients == CFG_TLS_AUTH_NO ? "not asked for"
								 : "verified if sent");
	}
	if (c->redis.tls)
		fprintf(f, "  speaks TLS to the servers\n");
	fprintf(f,
		"  node down after %d ms without a heartbeat; failover block %d ms; tilt %d ms\n",
		k->node_down_after_ms, k->failover_block_ms, k->tilt_ms);
	fprintf(f, "  state file %s, event log %s\n", k->state_file, k->event_log);
	if (k->requirepass[0] || c->nusers) {
		char words[64];

		fprintf(f, "  clients log in (NOAUTH before):%s",
			k->requirepass[0] ? " default (requirepass): all;" : "");
		for (int i = 0; i < c->nusers; i++)
			fprintf(f, " %s: %s;", c->users[i].name,
				acl_perms_str(c->users[i].perms, words, sizeof(words)));
		fprintf(f, " the cluster secret is no client password\n");
	} else {
		fprintf(f, "  clients: reads open; AUTH with the cluster secret to fail over or "
			   "change settings\n");
	}
	if (k->agent_address_check)
		fprintf(f, "  agents must connect from their node's address\n");
	if (k->metrics_listen.host[0] || k->metrics_listen.unix_path[0]) {
		fprintf(f, "  serves metrics on ");
		print_ep(f, &k->metrics_listen);
		fprintf(f, "\n");
	}
	for (int i = 0; i < c->nshards; i++) {
		const struct cfg_shard *s = &c->shards[i];

		fprintf(f, "  shard %s:", s->name);
		for (int j = 0; j < s->nnodes; j++)
			fprintf(f, " %s", c->nodes[s->nodes[j]].id);
		if (s->dns_name[0] && c->dns.enabled)
			fprintf(f, "; DNS %s", s->dns_name);
		fprintf(f, "\n");
	}
	if (c->dns.enabled) {
		fprintf(f, "  DNS UPDATE to ");
		print_ep(f, &c->dns.server);
		fprintf(f, " zone %s, key %s (%s), ttl %d, checked every %d ms\n", c->dns.zone,
			c->dns.tsig_name, c->dns.tsig_algorithm, c->dns.ttl, c->dns.check_ms);
	}
}

/* Every TLS context this host's role builds, built now: a file that cannot be read,
 * a key that does not match its certificate, a CA that is not PEM is named with its
 * line. node: an agent's host (not the controller's files). */
static int check_tls(const struct cfg *c, bool agent_only)
{
	SSL_CTX *ctx;
	char err[600];

	if (c->controller.tls && !agent_only) {
		ctx = tls_server_ctx(c, err, sizeof(err));
		if (!ctx)
			goto fail;
		SSL_CTX_free(ctx);
	}
	if (c->controller.tls && (agent_only || c->agent.tls.cert[0] || c->agent.tls.ca[0])) {
		ctx = tls_client_ctx(c, "agent", &c->agent.tls, &c->controller.tls_files, err,
				     sizeof(err));
		if (!ctx)
			goto fail;
		SSL_CTX_free(ctx);
	}
	if (c->redis.tls) {
		ctx = tls_client_ctx(c, "redis", &c->redis.tls_files, NULL, err, sizeof(err));
		if (!ctx)
			goto fail;
		SSL_CTX_free(ctx);
	}
	return 0;
fail:
	fprintf(stderr, "%s\n", err);
	return -EINVAL;
}

/* Valid but probably not meant: said, not refused. */
static int print_warnings(FILE *f, const struct cfg *c)
{
	int n = 0;

	if (!c->secret[0] || !strncmp(c->secret, "change-me", 9)) {
		fprintf(f, "warning: %s: [cluster] secret is %s: any host can report as any node\n",
			c->path, c->secret[0] ? "the example's 'change-me'" : "empty");
		n++;
	}
	for (int i = 0; i < c->nnodes; i++) {
		if (c->nodes[i].shard < 0) {
			fprintf(f, "warning: %s:%d: node %s is in no shard\n", c->path,
				c->nodes[i].line, c->nodes[i].id);
			n++;
		}
	}
	for (int i = 0; i < c->nshards; i++) {
		if (c->shards[i].nnodes < 2) {
			fprintf(f,
				"warning: %s:%d: shard %s has one node: nothing to fail over to\n",
				c->path, c->shards[i].line, c->shards[i].name);
			n++;
		}
	}
	if (c->agent.heartbeat_ms >= c->controller.node_down_after_ms) {
		fprintf(f,
			"warning: %s: [agent] heartbeat_ms %d is not below [controller] "
			"node_down_after_ms %d: agents look stale between reports (a reload to "
			"such values is refused)\n",
			c->path, c->agent.heartbeat_ms, c->controller.node_down_after_ms);
		n++;
	}
	if (c->agent.self_fence && c->agent.self_fence_after_ms <= c->agent.peer_down_after_ms) {
		fprintf(f,
			"warning: %s: [agent] self_fence_after_ms %d is not above "
			"peer_down_after_ms %d\n",
			c->path, c->agent.self_fence_after_ms, c->agent.peer_down_after_ms);
		n++;
	}
	return n;
}

/* --keys: the table of keys (common/config_table.c), one line each. */
static void print_keys(FILE *f)
{
	static const char *const sect[CFG_S_COUNT] = {[CFG_S_CTL] = "controller \"ID\"",
						      [CFG_S_NODE] = "node \"ID\"",
						      [CFG_S_SHARD] = "shard \"NAME\"",
						      [CFG_S_USER] = "user \"NAME\""};
	char name[64], on[96];

	for (int i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_keys[i];

		snprintf(name, sizeof(name), "[%s] %s",
			 sect[k->sect] ? sect[k->sect] : cfg_sect_name(k->sect), k->name);
		fprintf(f, "%-40s %-22s on SIGHUP: %-52s %s\n", name, k->def ? k->def : "-",
			cfg_key_reload_text(k, on, sizeof(on)), k->doc);
	}
}

int cmd_check(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"config", required_argument, NULL, 'c'}, {"node", required_argument, NULL, 'n'},
	    {"quiet", no_argument, NULL, 'q'},	      {"keys", no_argument, NULL, 'k'},
	    {"help", no_argument, NULL, 'h'},	      {0},
	};
	const char *path = CHECK_DEFAULT_CONFIG, *node = NULL;
	const struct cfg_node *only = NULL;
	bool quiet = false;
	struct cfg *cfg;
	char err[512];
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:qh", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'n':
			node = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'k':
			print_keys(stdout);
			return 0;
		case 'h':
			fputs(check_usage, stdout);
			return 0;
		default:
			fputs(check_usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		pr_warn("unexpected argument '%s'\n", argv[optind]);
		fputs(check_usage, stderr);
		return 2;
	}
	if (cfg_load(path, &cfg, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (node) {
		only = cfg_find_node(cfg, node);
		if (!only) {
			fprintf(stderr, "%s: no [node \"%s\"]\n", path, node);
			cfg_free(cfg);
			return 1;
		}
	}
	if (check_tls(cfg, only != NULL)) {
		cfg_free(cfg);
		return 1;
	}
	if (!quiet) {
		printf("%s: valid: cluster %s, %d node(s), %d shard(s)%s\n", path,
		       cfg->name[0] ? cfg->name : "(unnamed)", cfg->nnodes, cfg->nshards,
		       cfg->dns.enabled ? ", DNS" : "");
		print_warnings(stdout, cfg);
		if (!only)
			print_controller(stdout, cfg);
		for (int i = 0; i < cfg->nnodes; i++)
			if (!only || only == &cfg->nodes[i])
				print_node(stdout, cfg, &cfg->nodes[i]);
	}
	cfg_free(cfg);
	return 0;
}

int cmd_version(int argc, char **argv)
{
	(void)argv;
	if (argc > 1) {
		fputs("usage: flatline version\n", stderr);
		return 2;
	}
	printf("flatline %s (libbpf %s)\n", fl_version, libbpf_version_string());
	return 0;
}
