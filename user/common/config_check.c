// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The cluster file once read: defaults, the cross-section checks and the probe
 * address warnings. Called by the reader (config_load.c); the defaults are the
 * table's (config_table.c); the endpoint parsing is the model's (config.c). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/config.h"
#include "common/config_internal.h"

int cfg_probe_warning(const struct cfg *c, const struct cfg_node *n, char *buf, size_t len)
{
	unsigned char a[16], b[16];
	int fa = strchr(n->address, ':') ? AF_INET6 : AF_INET;

	if (inet_pton(fa, n->address, a) != 1)
		return 0;
	if ((fa == AF_INET && a[0] == 127) ||
	    (fa == AF_INET6 && !memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16))) {
		snprintf(buf, len,
			 "%s is loopback: every host answers for it, so a dead host "
			 "of node %s cannot be detected by its peers",
			 n->address, n->id);
		return 1;
	}
	if (n->shard < 0)
		return 0;
	for (int i = 0; i < c->shards[n->shard].nnodes; i++) {
		const struct cfg_node *o = &c->nodes[c->shards[n->shard].nodes[i]];

		if (o == n || (strchr(o->address, ':') ? AF_INET6 : AF_INET) != fa ||
		    inet_pton(fa, o->address, b) != 1 || memcmp(a, b, fa == AF_INET ? 4 : 16))
			continue;
		snprintf(buf, len,
			 "%s is also node %s's address: one probe answers for both, so "
			 "the peers cannot tell which host died",
			 n->address, o->id);
		return 1;
	}
	return 0;
}

void set_defaults(struct cfg *c)
{
	cfg_table_defaults(c);
}

/* Cross-section checks, once everything is read. */
/* Cross-key checks of the TLS keys, once everything is read. */
/* ---- the parser's index of node ids ---- */

static unsigned id_hash(const char *id)
{
	unsigned h = 2166136261u; /* FNV-1a */

	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	return h;
}

static void index_put(int *ix, unsigned cap, const struct cfg *c, int i)
{
	unsigned j = id_hash(c->nodes[i].id) & (cap - 1);

	while (ix[j])
		j = (j + 1) & (cap - 1);
	ix[j] = i + 1;
}

/* Node i (its id set) is in the index; out of memory, the index is dropped and
 * lookups search every node, as before. */
void parser_index_add(struct parser *p, int i)
{
	const struct cfg *c = p->c;

	if (!p->node_ix && p->node_ix_cap)
		return; /* dropped */
	if ((unsigned)c->nnodes * 2 > p->node_ix_cap) {
		unsigned cap = p->node_ix_cap ? p->node_ix_cap * 2 : 64;
		int *ix = calloc(cap, sizeof(*ix));

		free(p->node_ix);
		p->node_ix = ix;
		p->node_ix_cap = cap;
		if (!ix)
			return;
		for (int k = 0; k < i; k++)
			index_put(ix, cap, c, k);
	}
	if (p->node_ix)
		index_put(p->node_ix, p->node_ix_cap, c, i);
}

struct cfg_node *parser_find_node(const struct parser *p, const char *id)
{
	const struct cfg *c = p->c;
	unsigned j;

	if (!p->node_ix)
		return cfg_find_node(c, id);
	for (j = id_hash(id) & (p->node_ix_cap - 1); p->node_ix[j];
	     j = (j + 1) & (p->node_ix_cap - 1))
		if (!strcmp(c->nodes[p->node_ix[j] - 1].id, id))
			return &c->nodes[p->node_ix[j] - 1];
	return NULL;
}

void parser_index_free(struct parser *p)
{
	free(p->node_ix);
	p->node_ix = NULL;
	p->node_ix_cap = 0;
}

static void validate_tls_pair(struct parser *p, const char *sect, const struct cfg_tls *t)
{
	if (p->failed || (t->cert[0] != 0) == (t->key[0] != 0))
		return;
	snprintf(p->sect_text, sizeof(p->sect_text), "%s", sect);
	if (t->cert[0])
		perr(p, t->cert_line, "tls_key",
		     "missing (a certificate needs its private key: tls_key = /path)");
	else
		perr(p, t->key_line, "tls_cert",
		     "missing (a private key needs its certificate: tls_cert = /path)");
}

static bool wildcard_host(const char *host)
{
	static const char *const any[] = {"::", "0.0.0.0", "0::0", "::0"};

	for (size_t i = 0; i < sizeof(any) / sizeof(any[0]); i++)
		if (!strcmp(host, any[i]))
			return true;
	return false;
}

/* HA mode ([etcd]): tls_listen and tls_address are per [controller "ID"], and
 * every controller has them or none has (an agent reports to all of them, a client
 * may be sent to any: one without TLS would be a hole or unreachable). [controller]
 * keeps the shared files and tls_auth_clients; its own tls_listen is refused.
 * Sets [controller] tls when the controllers have TLS. */
static void validate_ha_tls(struct parser *p)
{
	struct cfg *c = p->c;
	typeof(c->controller) *k = &c->controller;
	const struct cfg_ctl *with = NULL, *without = NULL;

	if (!c->etcd.enabled)
		return;
	snprintf(p->sect_text, sizeof(p->sect_text), "controller");
	if (k->tls || k->have_tls_address) {
		perr(p, k->tls ? k->tls_line : k->tls_address_line,
		     k->tls ? "tls_listen" : "tls_address",
		     "in HA mode ([etcd]) each controller's goes in its [controller \"ID\"] "
		     "section (the certificate keys stay here, shared)");
		return;
	}
	for (int i = 0; i < c->nctls; i++) {
		struct cfg_ctl *t = &c->ctls[i];

		snprintf(p->sect_text, sizeof(p->sect_text), "controller \"%s\"", t->id);
		if (!t->tls && t->have_tls_address) {
			perr(p, t->tls_address_line, "tls_listen",
			     "missing (tls_address is where its tls_listen is reached)");
			return;
		}
		if (t->tls && !t->have_tls_address) {
			if (wildcard_host(t->tls_listen.host)) {
				perr(
				    p, t->tls_line, "tls_address",
				    "missing: tls_listen = %s is every address of the controller's "
				    "host, so agents and clients need the one to connect to "
				    "(tls_address = host:port, the name or IP its certificate "
				    "carries)",
				    t->tls_listen.host);
				return;
			}
			t->tls_address = t->tls_listen;
		}
		if (t->tls && !with)
			with = t;
		if (!t->tls && !without)
			without = t;
	}
	if (with && without) {
		snprintf(p->sect_text, sizeof(p->sect_text), "controller \"%s\"", without->id);
		perr(p, without->line, "tls_listen",
		     "missing: controller %s has tls_listen, and agents and clients speak TLS "
		     "to every controller of an HA cluster or to none",
		     with->id);
		return;
	}
	k->tls = with != NULL;
	k->tls_line = with ? with->tls_line : 0;
}

static void validate_tls(struct parser *p)
{
	typeof(p->c->controller) *k = &p->c->controller;
	static const char *const any[] = {"::", "0.0.0.0", "0::0", "::0"};

	validate_tls_pair(p, "agent", &p->c->agent.tls);
	validate_tls_pair(p, "controller", &k->tls_files);
	validate_tls_pair(p, "redis", &p->c->redis.tls_files);
	validate_ha_tls(p);
	if (p->failed)
		return;
	snprintf(p->sect_text, sizeof(p->sect_text), "controller");
	if (!k->tls) {
		/* TLS keys without tls_listen would be silently unused. */
		if (k->tls_files.cert[0] || k->tls_files.ca[0] || k->have_tls_address)
			perr(p,
			     k->tls_files.cert[0] ? k->tls_files.cert_line
			     : k->tls_files.ca[0] ? k->tls_files.ca_line
						  : k->tls_address_line,
			     "tls_listen",
			     "missing (the TLS keys of [controller] need the address "
			     "to listen on, e.g. tls_listen = 0.0.0.0:26380)");
	} else if (!k->tls_files.cert[0]) {
		perr(p, k->tls_line, "tls_cert",
		     "missing (the controller's certificate, PEM: tls_cert = /path)");
	} else if (k->tls_auth_clients != CFG_TLS_AUTH_NO && !k->tls_files.ca[0]) {
		perr(p, k->tls_line, "tls_ca",
		     "missing: tls_auth_clients is %s, so client certificates are verified "
		     "against this CA (or set tls_auth_clients = no)",
		     k->tls_auth_clients == CFG_TLS_AUTH_YES ? "yes (the default)" : "optional");
	} else if (p->c->etcd.enabled) {
		/* HA mode: the addresses are each controller's (validate_ha_tls). */
	} else if (!k->have_tls_address) {
		bool wild = false;

		for (size_t i = 0; i < sizeof(any) / sizeof(any[0]); i++)
			wild |= !strcmp(k->tls_listen.host, any[i]);
		if (wild)
			perr(p, k->tls_line, "tls_address",
			     "missing: tls_listen = %s is every address of the controller's host, "
			     "so agents and clients need the one to connect to (tls_address = "
			     "host:port, the name or IP its certificate carries)",
			     k->tls_listen.host);
		else
			k->tls_address = k->tls_listen;
	}
	if (p->failed)
		return;
	snprintf(p->sect_text, sizeof(p->sect_text), "redis");
	if (!p->c->redis.tls && (p->c->redis.tls_files.ca[0] || p->c->redis.tls_files.cert[0] ||
				 p->c->redis.tls_server_name[0]))
		perr(p,
		     p->c->redis.tls_files.ca[0]       ? p->c->redis.tls_files.ca_line
		     : p->c->redis.tls_files.cert_line ? p->c->redis.tls_files.cert_line
						       : p->line,
		     "tls", "not yes: the TLS keys of [redis] would be unused (tls = yes)");
	else if (p->c->redis.tls && !p->c->redis.tls_files.ca[0])
		perr(p, p->c->redis.tls_line, "tls_ca",
		     "missing (the CA that signed the servers' certificates: tls_ca = /path)");
}

/* Every [user] has a password and its commands. */
static void validate_users(struct parser *p)
{
	struct cfg *c = p->c;

	for (int i = 0; i < c->nusers && !p->failed; i++) {
		struct cfg_user *u = &c->users[i];

		snprintf(p->sect_text, sizeof(p->sect_text), "user \"%s\"", u->name);
		if (!u->password[0])
			perr(p, u->line, "password",
			     "missing (at least %d bytes, e.g. openssl rand "
			     "-base64 24)",
			     CFG_MIN_SECRET);
		else if (!u->have_perms)
			perr(p, u->line, "commands", "missing (read, failover, admin or all)");
	}
}

/* [shard] spares: nodes of this file in no shard's nodes nor another's spares. */
static void validate_spares(struct parser *p, struct cfg_shard *s)
{
	struct cfg *c = p->c;
	char list[sizeof(s->spares)], *tok, *save = NULL;

	snprintf(p->sect_text, sizeof(p->sect_text), "shard \"%s\"", s->name);
	snprintf(list, sizeof(list), "%s", s->spares);
	for (tok = strtok_r(list, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
		struct cfg_node *n = cfg_find_node(c, tok);

		if (!n) {
			perr(p, s->spares_line, "spares", "no [node \"%s\"] in this file", tok);
			return;
		}
		if (n->shard >= 0) {
			perr(p, s->spares_line, "spares",
			     "node %s is in shard %s's nodes: a spare is in no shard", tok,
			     c->shards[n->shard].name);
			return;
		}
		if (n->spare) {
			perr(p, s->spares_line, "spares", "node %s is already a spare of shard %s",
			     tok, n->spare_for);
			return;
		}
		n->spare = true;
		snprintf(n->spare_for, sizeof(n->spare_for), "%s", s->name);
	}
}

void validate(struct parser *p)
{
	struct cfg *c = p->c;

	validate_users(p);
	for (int i = 0; i < c->nnodes && !p->failed; i++) {
		struct cfg_node *n = &c->nodes[i];

		snprintf(p->sect_text, sizeof(p->sect_text), "node \"%s\"", n->id);
		if (!n->redis_str[0])
			perr(p, n->line, "redis",
			     "missing (host:port or unix:/path of its server)");
		else if (!n->address[0])
			perr(p, n->line, "address", "missing (the host's IP address)");
	}
	for (int i = 0; i < c->nshards && !p->failed; i++) {
		struct cfg_shard *s = &c->shards[i];
		char *list = p->shard_nodes[i], *tok, *save = NULL;
		int line = p->shard_nodes_line[i];

		snprintf(p->sect_text, sizeof(p->sect_text), "shard \"%s\"", s->name);
		if (!list) {
			perr(p, s->line, "nodes", "missing (the ids of its nodes)");
			break;
		}
		for (tok = strtok_r(list, " \t,", &save); tok;
		     tok = strtok_r(NULL, " \t,", &save)) {
			struct cfg_node *n = parser_find_node(p, tok);
			int *nodes;

			if (!n) {
				perr(p, line, "nodes", "no [node \"%s\"] in this file", tok);
				return;
			}
			if (n->shard >= 0) {
				perr(p, line, "nodes", "node %s is already in shard %s", tok,
				     c->shards[n->shard].name);
				return;
			}
			nodes = realloc(s->nodes, (s->nnodes + 1) * sizeof(*nodes));
			if (!nodes)
				return;
			s->nodes = nodes;
			n->shard = i;
			s->nodes[s->nnodes++] = n - c->nodes;
		}
		if (s->nnodes == 0)
			perr(p, line, "nodes", "empty");
	}
	for (int i = 0; i < c->nshards && !p->failed; i++)
		validate_spares(p, &c->shards[i]);
	if (p->failed)
		return;
	if (c->dns.enabled) {
		snprintf(p->sect_text, sizeof(p->sect_text), "dns");
		if (!c->dns.zone[0])
			perr(p, p->dns_line, "zone", "missing");
		else if (!c->dns.tsig_name[0])
			perr(p, p->dns_line, "tsig_name",
			     "missing (the TSIG key's name, e.g. flatline)");
		else if (!c->dns.tsig_secret[0])
			perr(p, p->dns_line, "tsig_secret", "missing (the key's base64 secret)");
		for (int i = 0; i < c->nshards && !p->failed; i++) {
			const char *dn = c->shards[i].dns_name, *z = c->dns.zone;
			size_t ln = strlen(dn), lz = strlen(z);

			if (dn[0] &&
			    !(ln > lz && !strcasecmp(dn + ln - lz, z) && dn[ln - lz - 1] == '.')) {
				snprintf(p->sect_text, sizeof(p->sect_text), "shard \"%s\"",
					 c->shards[i].name);
				perr(p, c->shards[i].line, "dns_name", "%s is not inside zone %s",
				     dn, z);
			}
		}
	}
	for (int i = 0; i < c->nshards && !p->failed; i++) {
		if (!c->shards[i].cluster || !c->shards[i].dns_name[0])
			continue;
		/* Cluster clients follow the cluster's own redirections (MOVED, ASK). */
		snprintf(p->sect_text, sizeof(p->sect_text), "shard \"%s\"", c->shards[i].name);
		perr(p, c->shards[i].line, "dns_name",
		     "not with mode = cluster (clients follow the cluster's redirections)");
	}
	for (int i = 0; i < c->nshards && !p->failed; i++) {
		if (!c->shards[i].cluster || !c->shards[i].spares[0])
			continue;
		/* A spare is attached with REPLICAOF: a cluster node joins by CLUSTER
		 * REPLICATE, which the controller does not send. */
		snprintf(p->sect_text, sizeof(p->sect_text), "shard \"%s\"", c->shards[i].name);
		perr(p, c->shards[i].spares_line, "spares",
		     "not with mode = cluster (a cluster replica joins by CLUSTER REPLICATE)");
	}
	for (int i = 0; i < c->nshards && !p->failed; i++) {
		if (!c->shards[i].user[0] || c->shards[i].password[0])
			continue;
		/* A shard's credentials are a pair: a user of its own with [redis]'s
		 * password is more likely a mistake than meant. */
		snprintf(p->sect_text, sizeof(p->sect_text), "shard \"%s\"", c->shards[i].name);
		perr(p, c->shards[i].line, "password",
		     "missing (user is set: the shard's servers take its user and password)");
	}
	for (int i = 0; i < c->nctls && !p->failed; i++) {
		snprintf(p->sect_text, sizeof(p->sect_text), "controller \"%s\"", c->ctls[i].id);
		if (!c->ctls[i].listen_str[0] && !c->ctls[i].tls)
			perr(p, c->ctls[i].line, "listen",
			     "missing (host:port of this controller; or tls_listen for TLS only)");
		else if (!c->etcd.enabled)
			perr(p, c->ctls[i].line, NULL,
			     "[%s]: several controllers need an [etcd] section (one leader, the "
			     "state in "
			     "etcd)",
			     p->sect_text);
	}
	if (c->etcd.enabled && !p->failed) {
		snprintf(p->sect_text, sizeof(p->sect_text), "etcd");
		if (!c->etcd.nendpoints)
			perr(p, p->etcd_line, "endpoints", "missing (http://IP:2379,...)");
		else if (!c->nctls)
			perr(p, p->etcd_line, NULL,
			     "[etcd]: no [controller \"ID\"] section: name each controller and its "
			     "listen "
			     "address");
		else if ((c->etcd.cert[0] != 0) != (c->etcd.key[0] != 0))
			perr(p, p->etcd_line, c->etcd.cert[0] ? "key" : "cert",
			     "missing (a client certificate needs its key and the key its "
			     "certificate)");
		if (!c->etcd.prefix[0])
			snprintf(c->etcd.prefix, sizeof(c->etcd.prefix), "/flatline/%s/",
				 c->name[0] ? c->name : "default");
	}
	if (!p->failed) {
		static const char *const any[] = {"::", "0.0.0.0", "0::0", "::0"};
		bool wild = false;

		for (size_t i = 0; i < sizeof(any) / sizeof(any[0]); i++)
			wild |= !strcmp(c->controller.listen.host, any[i]);
		snprintf(p->sect_text, sizeof(p->sect_text), "controller");
		if (c->controller.have_address && !c->controller.address.host[0])
			perr(p, c->controller.address_line, "address",
			     "a host:port or [v6]:port agents and clients connect to, not a unix "
			     "socket");
		else if (!c->controller.have_address && wild)
			perr(p, p->listen_line, "address",
			     "missing: listen = %s is every address of the controller's host, so "
			     "agents and clients need the one to connect to (address = host:port)",
			     c->controller.listen.host);
		else if (!c->controller.have_address)
			c->controller.address = c->controller.listen;
	}
	if (!p->failed)
		validate_tls(p);
	if (!c->agent.peer_down_after_ms)
		c->agent.peer_down_after_ms = CFG_PEER_DOWN_ROUNDS * c->agent.probe_interval_ms;
	if (!c->agent.self_fence_after_ms)
		c->agent.self_fence_after_ms = 2 * c->agent.peer_down_after_ms;
	bool node_key = false;

	for (int i = 0; i < c->nnodes; i++)
		node_key |= c->nodes[i].key[0] != '\0';
	/* An agent's file may carry its own node key instead of the cluster's. */
	if (!c->secret[0] && !node_key) {
		snprintf(p->sect_text, sizeof(p->sect_text), "cluster");
		perr(p, p->cluster_line ? p->cluster_line : 1, "secret",
		     "missing: agents and clients authenticate with it (at least %d bytes, e.g. "
		     "openssl rand -base64 24)",
		     CFG_MIN_SECRET);
	}
}
