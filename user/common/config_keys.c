// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The cluster file's keys, section by section ([cluster], [agent],
 * [controller], [redis], [dns], [etcd], [ctl], [node], [shard], [include]), and
 * the value setters they use (int, bool, string, secret, path, endpoint, IP, DNS
 * name): each one range-checked, with a file:line message on error. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/acl.h"
#include "common/config_internal.h"

static bool set_int(struct parser *p, const char *key, const char *v, int lo, int hi, int *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (!*v || *end || errno) {
		perr(p, p->line, key, "not a number: '%s'", v);
		return false;
	}
	if (x < lo || x > hi) {
		perr(p, p->line, key, "%ld is out of range (%d to %d)", x, lo, hi);
		return false;
	}
	*out = x;
	return true;
}

static bool set_bool(struct parser *p, const char *key, const char *v, bool *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false",
										    "off", "0"};
	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return (*out = true);
		if (!strcasecmp(v, no[i]))
			return !(*out = false);
	}
	perr(p, p->line, key, "not a boolean (yes/no): '%s'", v);
	return false;
}

static bool set_str(struct parser *p, const char *key, const char *v, char *out, size_t len)
{
	if (strlen(v) >= len) {
		perr(p, p->line, key, "longer than %zu characters", len - 1);
		return false;
	}
	memcpy(out, v, strlen(v) + 1);
	return true;
}

/* A key flatline itself checks (HMAC): at least CFG_MIN_SECRET bytes. */
static bool set_secret(struct parser *p, const char *key, const char *v, char *out, size_t len)
{
	if (!v[0]) {
		perr(p, p->line, key,
		     "empty: a secret of at least %d bytes is required "
		     "(e.g. openssl rand -base64 24)",
		     CFG_MIN_SECRET);
		return false;
	}
	if (strlen(v) < CFG_MIN_SECRET) {
		perr(p, p->line, key,
		     "too short (%zu bytes): at least %d are required "
		     "(e.g. openssl rand -base64 24)",
		     strlen(v), CFG_MIN_SECRET);
		return false;
	}
	return set_str(p, key, v, out, len);
}

static bool set_path(struct parser *p, const char *key, const char *v, char *out, size_t len)
{
	if (v[0] != '/') {
		perr(p, p->line, key, "not an absolute path: '%s'", v);
		return false;
	}
	return set_str(p, key, v, out, len);
}

static bool set_endpoint(struct parser *p, const char *key, const char *v, struct cfg_endpoint *ep,
			 int default_port)
{
	if (cfg_parse_endpoint(v, ep, default_port)) {
		perr(p, p->line, key, "not host:port, [v6]:port or unix:/path: '%s'", v);
		return false;
	}
	return true;
}

/* host:port for the metrics HTTP server; empty = off. No unix sockets: Prometheus
 * scrapes TCP. */
static bool set_metrics(struct parser *p, const char *key, const char *v, struct cfg_endpoint *ep)
{
	if (!*v) {
		memset(ep, 0, sizeof(*ep));
		return true;
	}
	if (cfg_parse_endpoint(v, ep, 0) || ep->unix_path[0] || !ep->port) {
		perr(p, p->line, key, "not host:port or [v6]:port: '%s'", v);
		return false;
	}
	return true;
}

static bool set_ip(struct parser *p, const char *key, const char *v, char *out, size_t len)
{
	unsigned char buf[16];

	if (inet_pton(AF_INET, v, buf) != 1 && inet_pton(AF_INET6, v, buf) != 1) {
		perr(p, p->line, key, "not an IPv4 or IPv6 address: '%s'", v);
		return false;
	}
	return set_str(p, key, v, out, len);
}

static bool set_dns_name(struct parser *p, const char *key, const char *v, char *out, size_t len)
{
	size_t n = strlen(v);

	if (n < 2 || v[n - 1] != '.' || strstr(v, "..") || v[0] == '.') {
		perr(p, p->line, key, "not an absolute domain name ending in '.': '%s'", v);
		return false;
	}
	for (const char *s = v; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '.' && *s != '_') {
			perr(p, p->line, key, "invalid character in domain name: '%s'", v);
			return false;
		}
	return set_str(p, key, v, out, len);
}

#define KEY(k) (!strcmp(name, (k)))
#define MS_MAX 86400000

bool key_cluster(struct parser *p, const char *name, const char *v)
{
	struct cfg *c = p->c;

	if (KEY("name"))
		return set_str(p, name, v, c->name, sizeof(c->name));
	if (KEY("secret"))
		return set_secret(p, name, v, c->secret, sizeof(c->secret));
	perr(p, p->line, name, "unknown key");
	return false;
}

/* TLS keys (common/tls.h), shared by [agent], [controller] and [redis]: tls_cert,
 * tls_key, tls_ca. Only the syntax here: each daemon reads the files it needs when
 * it builds its TLS context, naming this file and line if one cannot be used. */
static bool set_tls_file(struct parser *p, const char *name, const char *v, struct cfg_tls *t)
{
	if (KEY("tls_cert")) {
		t->cert_line = p->line;
		return set_path(p, name, v, t->cert, sizeof(t->cert));
	}
	if (KEY("tls_key")) {
		t->key_line = p->line;
		return set_path(p, name, v, t->key, sizeof(t->key));
	}
	if (KEY("tls_ca")) {
		t->ca_line = p->line;
		return set_path(p, name, v, t->ca, sizeof(t->ca));
	}
	perr(p, p->line, name, "unknown key");
	return false;
}

static bool key_agent_tls(struct parser *p, const char *name, const char *v)
{
	return set_tls_file(p, name, v, &p->c->agent.tls);
}

static bool key_controller_tls(struct parser *p, const char *name, const char *v)
{
	typeof(p->c->controller) *k = &p->c->controller;

	if (KEY("tls_listen")) {
		k->tls = true;
		k->tls_line = p->line;
		if (!set_endpoint(p, name, v, &k->tls_listen, 26379))
			return false;
		if (k->tls_listen.unix_path[0]) {
			perr(p, p->line, name, "host:port or [v6]:port, not a unix socket: '%s'",
			     v);
			return false;
		}
		return true;
	}
	if (KEY("tls_address")) {
		k->have_tls_address = true;
		k->tls_address_line = p->line;
		if (!set_endpoint(p, name, v, &k->tls_address, 26379))
			return false;
		if (k->tls_address.unix_path[0]) {
			perr(p, p->line, name, "host:port or [v6]:port, not a unix socket: '%s'",
			     v);
			return false;
		}
		return true;
	}
	if (KEY("tls_auth_clients")) {
		if (!strcasecmp(v, "yes"))
			k->tls_auth_clients = CFG_TLS_AUTH_YES;
		else if (!strcasecmp(v, "no"))
			k->tls_auth_clients = CFG_TLS_AUTH_NO;
		else if (!strcasecmp(v, "optional"))
			k->tls_auth_clients = CFG_TLS_AUTH_OPTIONAL;
		else {
			perr(p, p->line, name, "not yes, no or optional: '%s'", v);
			return false;
		}
		return true;
	}
	return set_tls_file(p, name, v, &k->tls_files);
}

static bool key_redis_tls(struct parser *p, const char *name, const char *v)
{
	typeof(p->c->redis) *r = &p->c->redis;

	if (KEY("tls")) {
		r->tls_line = p->line;
		return set_bool(p, name, v, &r->tls);
	}
	if (KEY("tls_server_name")) {
		if (!v[0] || strpbrk(v, " \t/")) {
			perr(p, p->line, name, "not a host name or IP address: '%s'", v);
			return false;
		}
		return set_str(p, name, v, r->tls_server_name, sizeof(r->tls_server_name));
	}
	return set_tls_file(p, name, v, &r->tls_files);
}

bool key_agent(struct parser *p, const char *name, const char *v)
{
	typeof(p->c->agent) *a = &p->c->agent;

	if (!strncmp(name, "tls_", 4))
		return key_agent_tls(p, name, v);
	if (KEY("ping_interval_ms"))
		return set_int(p, name, v, 1, MS_MAX, &a->ping_interval_ms);
	if (KEY("hung_after"))
		return set_int(p, name, v, 1, 1000, &a->hung_after);
	if (KEY("probe_interval_ms"))
		return set_int(p, name, v, 1, MS_MAX, &a->probe_interval_ms);
	if (KEY("peer_down_after_ms"))
		return set_int(p, name, v, 1, MS_MAX, &a->peer_down_after_ms);
	if (KEY("heartbeat_ms"))
		return set_int(p, name, v, 1, MS_MAX, &a->heartbeat_ms);
	if (KEY("event_log"))
		return set_path(p, name, v, a->event_log, sizeof(a->event_log));
	if (KEY("self_fence"))
		return set_bool(p, name, v, &a->self_fence);
	if (KEY("self_fence_after_ms"))
		return set_int(p, name, v, 1, MS_MAX, &a->self_fence_after_ms);
	if (KEY("lease_ms"))
		return set_int(p, name, v, 0, MS_MAX, &a->lease_ms);
	if (KEY("stop_grace_ms"))
		return set_int(p, name, v, 0, MS_MAX, &a->stop_grace_ms);
	if (KEY("busy_max_ms"))
		return set_int(p, name, v, 1, MS_MAX, &a->busy_max_ms);
	if (KEY("metrics_listen"))
		return set_metrics(p, name, v, &a->metrics_listen);
	perr(p, p->line, name, "unknown key");
	return false;
}

bool key_controller(struct parser *p, const char *name, const char *v)
{
	typeof(p->c->controller) *k = &p->c->controller;

	if (!strncmp(name, "tls_", 4))
		return key_controller_tls(p, name, v);
	if (KEY("listen")) {
		p->listen_line = p->line;
		k->have_listen = true;
		return set_endpoint(p, name, v, &k->listen, 26379);
	}
	if (KEY("address")) {
		k->have_address = true;
		k->address_line = p->line;
		return set_endpoint(p, name, v, &k->address, 26379);
	}
	if (KEY("node_down_after_ms"))
		return set_int(p, name, v, 1, MS_MAX, &k->node_down_after_ms);
	if (KEY("state_file"))
		return set_path(p, name, v, k->state_file, sizeof(k->state_file));
	if (KEY("event_log"))
		return set_path(p, name, v, k->event_log, sizeof(k->event_log));
	if (KEY("notification_script"))
		return set_path(p, name, v, k->notification_script, sizeof(k->notification_script));
	if (KEY("client_reconfig_script"))
		return set_path(p, name, v, k->client_reconfig_script,
				sizeof(k->client_reconfig_script));
	if (KEY("failover_block_ms"))
		return set_int(p, name, v, 0, MS_MAX, &k->failover_block_ms);
	if (KEY("tilt_ms"))
		return set_int(p, name, v, 0, MS_MAX, &k->tilt_ms);
	if (KEY("metrics_listen"))
		return set_metrics(p, name, v, &k->metrics_listen);
	if (KEY("requirepass"))
		return set_secret(p, name, v, k->requirepass, sizeof(k->requirepass));
	if (KEY("agent_address_check"))
		return set_bool(p, name, v, &k->agent_address_check);
	perr(p, p->line, name, "unknown key");
	return false;
}

bool key_redis(struct parser *p, const char *name, const char *v)
{
	if (!strncmp(name, "tls", 3))
		return key_redis_tls(p, name, v);
	if (KEY("user"))
		return set_str(p, name, v, p->c->redis.user, sizeof(p->c->redis.user));
	if (KEY("password")) {
		/* The servers' password, chosen for Redis: only an empty one is refused. */
		if (!v[0]) {
			perr(p, p->line, name,
			     "empty (leave the key out when the servers have none)");
			return false;
		}
		return set_str(p, name, v, p->c->redis.password, sizeof(p->c->redis.password));
	}
	perr(p, p->line, name, "unknown key");
	return false;
}

static bool valid_base64(const char *s)
{
	size_t n = strlen(s), pad = 0;

	if (n == 0 || n % 4)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '=') {
			if (++pad > 2 || i < n - 2)
				return false;
		} else if (pad || !(isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '/')) {
			return false;
		}
	}
	return true;
}

bool key_dns(struct parser *p, const char *name, const char *v)
{
	typeof(p->c->dns) *d = &p->c->dns;

	if (KEY("server"))
		return set_endpoint(p, name, v, &d->server, 53);
	if (KEY("zone"))
		return set_dns_name(p, name, v, d->zone, sizeof(d->zone));
	if (KEY("tsig_name")) {
		if (!valid_id(v)) {
			perr(p, p->line, name,
			     "not a key name (letters, digits, '-', '_', '.'): '%s'", v);
			return false;
		}
		return set_str(p, name, v, d->tsig_name, sizeof(d->tsig_name));
	}
	if (KEY("tsig_algorithm")) {
		if (!strcmp(v, "hmac-sha384")) {
			perr(p, p->line, name,
			     "hmac-sha384 is not supported: ldns 1.8.3 cannot sign with it; use "
			     "hmac-sha256 or hmac-sha512");
			return false;
		}
		if (strcmp(v, "hmac-sha256") && strcmp(v, "hmac-sha512") &&
		    strcmp(v, "hmac-sha1")) {
			perr(p, p->line, name,
			     "unknown algorithm '%s' (hmac-sha256, hmac-sha512 or hmac-sha1)", v);
			return false;
		}
		return set_str(p, name, v, d->tsig_algorithm, sizeof(d->tsig_algorithm));
	}
	if (KEY("tsig_secret")) {
		if (!valid_base64(v)) {
			perr(p, p->line, name, "not base64 (as tsig-keygen prints it)");
			return false;
		}
		if (strlen(v) / 4 * 3 - (v[strlen(v) - 1] == '=') - (v[strlen(v) - 2] == '=') <
		    CFG_MIN_SECRET) {
			perr(p, p->line, name,
			     "too short: at least %d bytes are required "
			     "(tsig-keygen makes 32)",
			     CFG_MIN_SECRET);
			return false;
		}
		return set_str(p, name, v, d->tsig_secret, sizeof(d->tsig_secret));
	}
	if (KEY("ttl"))
		return set_int(p, name, v, 0, 86400, &d->ttl);
	if (KEY("check_ms") || KEY("dns_check_ms"))
		return set_int(p, name, v, 0, MS_MAX, &d->check_ms);
	perr(p, p->line, name, "unknown key");
	return false;
}

bool key_etcd(struct parser *p, const char *name, const char *v)
{
	typeof(p->c->etcd) *e = &p->c->etcd;

	if (KEY("endpoints")) {
		char buf[CFG_MAX_LINE + 1], *tok, *save = NULL;

		snprintf(buf, sizeof(buf), "%s", v);
		e->nendpoints = 0;
		for (tok = strtok_r(buf, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
			if (strncmp(tok, "http://", 7) && strncmp(tok, "https://", 8)) {
				perr(p, p->line, name, "'%s' is not an http:// or https:// URL",
				     tok);
				return false;
			}
			if (strlen(tok) >= sizeof(e->endpoints[0]) ||
			    e->nendpoints == CFG_MAX_ETCD) {
				perr(p, p->line, name,
				     "at most %d endpoints of at most %zu characters", CFG_MAX_ETCD,
				     sizeof(e->endpoints[0]) - 1);
				return false;
			}
			snprintf(e->endpoints[e->nendpoints++], sizeof(e->endpoints[0]), "%s", tok);
		}
		if (!e->nendpoints) {
			perr(p, p->line, name, "empty (http://IP:2379,...)");
			return false;
		}
		return true;
	}
	if (KEY("prefix")) {
		if (v[0] != '/' || v[strlen(v) - 1] != '/') {
			perr(p, p->line, name, "a key prefix starts and ends with '/': '%s'", v);
			return false;
		}
		return set_str(p, name, v, e->prefix, sizeof(e->prefix));
	}
	if (KEY("lease_ms"))
		return set_int(p, name, v, 1000, 60000, &e->lease_ms);
	if (KEY("timeout_ms"))
		return set_int(p, name, v, 10, 60000, &e->timeout_ms);
	if (KEY("user"))
		return set_str(p, name, v, e->user, sizeof(e->user));
	if (KEY("password"))
		return set_str(p, name, v, e->password, sizeof(e->password));
	if (KEY("cacert"))
		return set_path(p, name, v, e->cacert, sizeof(e->cacert));
	if (KEY("cert"))
		return set_path(p, name, v, e->cert, sizeof(e->cert));
	if (KEY("key"))
		return set_path(p, name, v, e->key, sizeof(e->key));
	perr(p, p->line, name, "unknown key");
	return false;
}

bool key_ctl(struct parser *p, const char *name, const char *v)
{
	struct cfg_ctl *k = &p->c->ctls[p->cur];

	if (KEY("listen"))
		return set_endpoint(p, name, v, &k->listen, 26379) &&
		       set_str(p, name, v, k->listen_str, sizeof(k->listen_str));
	if (KEY("tls_listen") || KEY("tls_address")) {
		bool l = KEY("tls_listen");
		struct cfg_endpoint *ep = l ? &k->tls_listen : &k->tls_address;

		if (!set_endpoint(p, name, v, ep, 26379))
			return false;
		if (ep->unix_path[0]) {
			perr(p, p->line, name, "host:port or [v6]:port, not a unix socket: '%s'",
			     v);
			return false;
		}
		if (l) {
			k->tls = true;
			k->tls_line = p->line;
		} else {
			k->have_tls_address = true;
			k->tls_address_line = p->line;
		}
		return true;
	}
	perr(p, p->line, name, "unknown key");
	return false;
}

bool key_node(struct parser *p, const char *name, const char *v)
{
	struct cfg_node *n = &p->c->nodes[p->cur];

	if (KEY("address")) {
		const char *why;

		if (!set_ip(p, name, v, n->address, sizeof(n->address)))
			return false;
		n->address_line = p->line;
		why = cfg_address_unprobeable(v);
		if (why) {
			perr(p, p->line, name, "%s cannot be probed by the node's peers: %s", v,
			     why);
			return false;
		}
		return true;
	}
	if (KEY("redis"))
		return set_endpoint(p, name, v, &n->redis, 6379) &&
		       set_str(p, name, v, n->redis_str, sizeof(n->redis_str));
	if (KEY("priority"))
		return set_int(p, name, v, 0, 1000000, &n->priority);
	if (KEY("pidfile"))
		return set_path(p, name, v, n->pidfile, sizeof(n->pidfile));
	if (KEY("key")) {
		size_t i, len = strlen(v);

		for (i = 0; i < len && isxdigit((unsigned char)v[i]); i++)
			;
		if (len != sizeof(n->key) - 1 || i != len) {
			perr(p, p->line, name,
			     "not a node key (%zu hex digits: flatline node-key prints it)",
			     sizeof(n->key) - 1);
			return false;
		}
		return set_str(p, name, v, n->key, sizeof(n->key));
	}
	perr(p, p->line, name, "unknown key");
	return false;
}

bool key_shard(struct parser *p, const char *name, const char *v)
{
	struct cfg_shard *s = &p->c->shards[p->cur];

	if (KEY("nodes")) {
		free(p->shard_nodes[p->cur]);
		p->shard_nodes[p->cur] = strdup(v);
		p->shard_nodes_line[p->cur] = p->line;
		return p->shard_nodes[p->cur] != NULL;
	}
	if (KEY("dns_name"))
		return set_dns_name(p, name, v, s->dns_name, sizeof(s->dns_name));
	perr(p, p->line, name, "unknown key");
	return false;
}

/* [include] path = /abs/file: read there and then, as part of this file. */
bool key_include(struct parser *p, const char *name, const char *v)
{
	struct parser q;
	int rc;

	if (!KEY("path")) {
		perr(p, p->line, name, "unknown key");
		return false;
	}
	if (v[0] != '/') {
		perr(p, p->line, name, "not an absolute path: '%s'", v);
		return false;
	}
	if (p->depth >= CFG_MAX_INCLUDE) {
		perr(p, p->line, name, "includes nested deeper than %d", CFG_MAX_INCLUDE);
		return false;
	}
	q = *p;
	q.f = NULL;
	q.s = NULL;
	q.line = 0;
	q.sect = S_NONE;
	q.nkeys_seen = 0;
	q.depth = p->depth + 1;
	q.holds_secret = false;
	rc = parse_file(&q, v);
	/* What the included file added is ours. */
	p->shard_nodes = q.shard_nodes;
	p->shard_nodes_line = q.shard_nodes_line;
	p->plain_seen = q.plain_seen;
	p->failed = q.failed;
	if (q.c->dns.enabled && !p->dns_line)
		p->dns_line = q.dns_line;
	if (q.c->etcd.enabled && !p->etcd_line)
		p->etcd_line = q.etcd_line;
	if (rc && !p->failed)
		perr(p, p->line, name, "failed to include %s: %s", v, strerror(-rc));
	return !p->failed;
}

/* [user "name"]: password (a secret) and commands (common/acl.h). */
bool key_user(struct parser *p, const char *name, const char *v)
{
	struct cfg_user *u = &p->c->users[p->cur];
	char why[160];

	if (KEY("password"))
		return set_secret(p, name, v, u->password, sizeof(u->password));
	if (KEY("commands")) {
		if (acl_perms_parse(v, &u->perms, why, sizeof(why))) {
			perr(p, p->line, name, "%s", why);
			return false;
		}
		u->have_perms = true;
		return true;
	}
	perr(p, p->line, name, "unknown key");
	return false;
}
