// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The value setters of the cluster file's keys (int, bool, string, secret, path,
 * endpoint, IP, DNS name), each range-checked with a file:line message on error;
 * the custom setters of the keys that need more (TLS sockets, lists, words); and
 * cfg_set_key(), which sets one key by its row of the table (config_table.c).
 * Below the table, above the model (config.c): an [include] reads its file
 * through p->parse_include, the reader's (config_load.c), not by name. */
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

/* ---- the custom setters (rows of type CFG_T_CUSTOM) ---- */

/* TLS files ([agent], [controller], [redis] tls_cert, tls_key, tls_ca): a path, and
 * its line for the messages of the daemon that reads the file later. field: the
 * path in a struct cfg_tls. */
bool cfg_set_tls_file(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	char *path = field;
	int *line;

	/* The struct cfg_tls the path is in, and its line field for this key. */
	if (!strcmp(k->name, "tls_cert"))
		line = &((struct cfg_tls *)(path - offsetof(struct cfg_tls, cert)))->cert_line;
	else if (!strcmp(k->name, "tls_key"))
		line = &((struct cfg_tls *)(path - offsetof(struct cfg_tls, key)))->key_line;
	else
		line = &((struct cfg_tls *)(path - offsetof(struct cfg_tls, ca)))->ca_line;
	*line = p->line;
	return set_path(p, k->name, v, path, k->size);
}

static bool set_tls_socket(struct parser *p, const char *name, const char *v,
			   struct cfg_endpoint *ep)
{
	if (!set_endpoint(p, name, v, ep, 26379))
		return false;
	if (ep->unix_path[0]) {
		perr(p, p->line, name, "host:port or [v6]:port, not a unix socket: '%s'", v);
		return false;
	}
	return true;
}

/* [controller] tls_listen, tls_address. */
bool cfg_set_ctl_tls_socket(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	typeof(p->c->controller) *c = &p->c->controller;

	if (!strcmp(k->name, "tls_listen")) {
		c->tls = true;
		c->tls_line = p->line;
	} else {
		c->have_tls_address = true;
		c->tls_address_line = p->line;
	}
	return set_tls_socket(p, k->name, v, field);
}

bool cfg_set_tls_auth(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	enum cfg_tls_auth *a = field;

	if (!strcasecmp(v, "yes"))
		*a = CFG_TLS_AUTH_YES;
	else if (!strcasecmp(v, "no"))
		*a = CFG_TLS_AUTH_NO;
	else if (!strcasecmp(v, "optional"))
		*a = CFG_TLS_AUTH_OPTIONAL;
	else {
		perr(p, p->line, k->name, "not yes, no or optional: '%s'", v);
		return false;
	}
	return true;
}

/* [controller] listen and address: the lines and whether they were given. */
bool cfg_set_ctl_addr(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	typeof(p->c->controller) *c = &p->c->controller;

	if (!strcmp(k->name, "listen")) {
		p->listen_line = p->line;
		c->have_listen = true;
	} else {
		c->have_address = true;
		c->address_line = p->line;
	}
	return set_endpoint(p, k->name, v, field, 26379);
}

bool cfg_set_redis_tls(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	p->c->redis.tls_line = p->line;
	return set_bool(p, k->name, v, field);
}

bool cfg_set_tls_server_name(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	if (!v[0] || strpbrk(v, " \t/")) {
		perr(p, p->line, k->name, "not a host name or IP address: '%s'", v);
		return false;
	}
	return set_str(p, k->name, v, field, k->size);
}

bool cfg_set_redis_password(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	/* The servers' password, chosen for Redis: only an empty one is refused. */
	if (!v[0]) {
		perr(p, p->line, k->name, "empty (leave the key out when the servers have none)");
		return false;
	}
	return set_str(p, k->name, v, field, k->size);
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

bool cfg_set_tsig_name(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	if (!valid_id(v)) {
		perr(p, p->line, k->name, "not a key name (letters, digits, '-', '_', '.'): '%s'",
		     v);
		return false;
	}
	return set_str(p, k->name, v, field, k->size);
}

bool cfg_set_tsig_algorithm(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	if (!strcmp(v, "hmac-sha384")) {
		perr(p, p->line, k->name,
		     "hmac-sha384 is not supported: ldns 1.8.3 cannot sign with it; use "
		     "hmac-sha256 or hmac-sha512");
		return false;
	}
	if (strcmp(v, "hmac-sha256") && strcmp(v, "hmac-sha512") && strcmp(v, "hmac-sha1")) {
		perr(p, p->line, k->name,
		     "unknown algorithm '%s' (hmac-sha256, hmac-sha512 or hmac-sha1)", v);
		return false;
	}
	return set_str(p, k->name, v, field, k->size);
}

bool cfg_set_tsig_secret(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	if (!valid_base64(v)) {
		perr(p, p->line, k->name, "not base64 (as tsig-keygen prints it)");
		return false;
	}
	if (strlen(v) / 4 * 3 - (v[strlen(v) - 1] == '=') - (v[strlen(v) - 2] == '=') <
	    CFG_MIN_SECRET) {
		perr(p, p->line, k->name,
		     "too short: at least %d bytes are required "
		     "(tsig-keygen makes 32)",
		     CFG_MIN_SECRET);
		return false;
	}
	return set_str(p, k->name, v, field, k->size);
}

bool cfg_set_etcd_endpoints(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	typeof(p->c->etcd) *e = &p->c->etcd;
	char buf[CFG_MAX_LINE + 1], *tok, *save = NULL;

	(void)field;
	snprintf(buf, sizeof(buf), "%s", v);
	e->nendpoints = 0;
	memset(e->endpoints, 0, sizeof(e->endpoints));
	for (tok = strtok_r(buf, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
		if (strncmp(tok, "http://", 7) && strncmp(tok, "https://", 8)) {
			perr(p, p->line, k->name, "'%s' is not an http:// or https:// URL", tok);
			return false;
		}
		if (strlen(tok) >= sizeof(e->endpoints[0]) || e->nendpoints == CFG_MAX_ETCD) {
			perr(p, p->line, k->name, "at most %d endpoints of at most %zu characters",
			     CFG_MAX_ETCD, sizeof(e->endpoints[0]) - 1);
			return false;
		}
		snprintf(e->endpoints[e->nendpoints++], sizeof(e->endpoints[0]), "%s", tok);
	}
	if (!e->nendpoints) {
		perr(p, p->line, k->name, "empty (http://IP:2379,...)");
		return false;
	}
	return true;
}

bool cfg_set_etcd_prefix(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	if (v[0] != '/' || v[strlen(v) - 1] != '/') {
		perr(p, p->line, k->name, "a key prefix starts and ends with '/': '%s'", v);
		return false;
	}
	return set_str(p, k->name, v, field, k->size);
}

/* [controller "ID"] listen: the endpoint and the text as written. */
bool cfg_set_ctls_listen(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	struct cfg_ctl *c = &p->c->ctls[p->cur];

	(void)field;
	return set_endpoint(p, k->name, v, &c->listen, 26379) &&
	       set_str(p, k->name, v, c->listen_str, sizeof(c->listen_str));
}

/* [controller "ID"] tls_listen, tls_address. */
bool cfg_set_ctls_tls_socket(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	struct cfg_ctl *c = &p->c->ctls[p->cur];

	if (!set_tls_socket(p, k->name, v, field))
		return false;
	if (!strcmp(k->name, "tls_listen")) {
		c->tls = true;
		c->tls_line = p->line;
	} else {
		c->have_tls_address = true;
		c->tls_address_line = p->line;
	}
	return true;
}

bool cfg_set_node_address(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	struct cfg_node *n = &p->c->nodes[p->cur];
	const char *why;

	if (!set_ip(p, k->name, v, field, k->size))
		return false;
	n->address_line = p->line;
	why = cfg_address_unprobeable(v);
	if (why) {
		perr(p, p->line, k->name, "%s cannot be probed by the node's peers: %s", v, why);
		return false;
	}
	return true;
}

bool cfg_set_node_redis(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	struct cfg_node *n = &p->c->nodes[p->cur];

	(void)field;
	return set_endpoint(p, k->name, v, &n->redis, 6379) &&
	       set_str(p, k->name, v, n->redis_str, sizeof(n->redis_str));
}

bool cfg_set_node_key(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	size_t i, len = strlen(v);

	for (i = 0; i < len && isxdigit((unsigned char)v[i]); i++)
		;
	if (len != k->size - 1 || i != len) {
		perr(p, p->line, k->name,
		     "not a node key (%zu hex digits: flatline node-key prints it)", k->size - 1);
		return false;
	}
	return set_str(p, k->name, v, field, k->size);
}

/* [shard] nodes: kept as written; validate() resolves the ids once all is read. */
bool cfg_set_shard_nodes(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	(void)k;
	(void)field;
	free(p->shard_nodes[p->cur]);
	p->shard_nodes[p->cur] = strdup(v);
	p->shard_nodes_line[p->cur] = p->line;
	return p->shard_nodes[p->cur] != NULL;
}

/* [shard] spares: kept as written; validate() resolves the ids once all is read. */
bool cfg_set_shard_spares(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	p->c->shards[p->cur].spares_line = p->line;
	return set_str(p, k->name, v, field, k->size);
}

/* [include] path = /abs/file: read there and then, as part of this file. */
bool cfg_set_include(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	const char *name = k->name;
	struct parser q;
	int rc;

	(void)field;
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
	q.sect = CFG_S_NONE;
	q.nkeys_seen = 0;
	q.depth = p->depth + 1;
	q.holds_secret = false;
	rc = p->parse_include(&q, v);
	/* What the included file added is ours. */
	p->shard_nodes = q.shard_nodes;
	p->shard_nodes_line = q.shard_nodes_line;
	p->node_ix = q.node_ix; /* the included file's nodes are in it */
	p->node_ix_cap = q.node_ix_cap;
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

/* [user "name"] commands (common/acl.h). */
bool cfg_set_user_commands(struct parser *p, const struct cfg_key *k, const char *v, void *field)
{
	struct cfg_user *u = &p->c->users[p->cur];
	char why[160];

	if (acl_perms_parse(v, field, why, sizeof(why))) {
		perr(p, p->line, k->name, "%s", why);
		return false;
	}
	u->have_perms = true;
	return true;
}

/* ---- one key by its row ---- */

bool cfg_set_key(struct parser *p, const struct cfg_key *k, const char *v, void *base)
{
	void *f = (char *)base + k->off;
	int x;

	switch (k->type) {
	case CFG_T_INT:
		if (!set_int(p, k->name, v, k->lo, k->hi, &x))
			return false;
		*(int *)f = x;
		return true;
	case CFG_T_BOOL:
		return set_bool(p, k->name, v, f);
	case CFG_T_STR:
		return set_str(p, k->name, v, f, k->size);
	case CFG_T_SECRET:
		return set_secret(p, k->name, v, f, k->size);
	case CFG_T_PATH:
		return set_path(p, k->name, v, f, k->size);
	case CFG_T_ENDPOINT:
		return set_endpoint(p, k->name, v, f, k->lo);
	case CFG_T_METRICS:
		return set_metrics(p, k->name, v, f);
	case CFG_T_IP:
		return set_ip(p, k->name, v, f, k->size);
	case CFG_T_DNS_NAME:
		return set_dns_name(p, k->name, v, f, k->size);
	case CFG_T_CUSTOM:
		return k->set(p, k, v, f);
	}
	return false;
}
