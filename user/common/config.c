// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The cluster file, read with inih through our own line reader so that every
 * message carries the line number and section headers are seen even when a
 * section has no keys. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ini.h>
#include "common/acl.h"
#include "common/config.h"

#define CFG_MAX_LINE 1024
#define CFG_MAX_NODES 4096
#define CFG_MAX_SHARDS 2048

enum sect { S_NONE, S_CLUSTER, S_AGENT, S_CONTROLLER, S_REDIS, S_DNS, S_ETCD, S_NODE, S_SHARD, S_CTL,
	    S_INCLUDE, S_USER };

#define CFG_MIN_SECRET 16   /* bytes: as ssh-keygen refuses short keys */
#define CFG_MAX_INCLUDE 4   /* nested [include]s */
#define CFG_MAX_SECT_KEYS 16 /* distinct keys in one section */
#define CFG_MAX_USERS 256   /* [user "name"] sections */

struct parser {
	struct cfg *c;
	const char *name; /* file name for messages */
	/* input: a FILE or a string */
	FILE *f;
	const char *s;
	int line;
	enum sect sect;
	char sect_text[CFG_ID_MAX + 32]; /* as written, for messages */
	int cur;                         /* node or shard index */
	int dns_line;                    /* line of the [dns] header */
	int listen_line;                 /* line of [controller] listen */
	int etcd_line;                   /* line of the [etcd] header */
	char **shard_nodes;              /* per shard: "nodes" as written */
	int *shard_nodes_line;
	char *err;
	size_t errlen;
	bool failed;
	unsigned plain_seen;  /* 1 << enum sect of [cluster] … [dns] seen, in any file */
	char keys_seen[CFG_MAX_SECT_KEYS][32]; /* in the current section */
	int nkeys_seen;
	int depth;            /* of [include]s */
	bool holds_secret;    /* this file sets a secret: its mode matters */
	int secret_line;
	int cluster_line;     /* of the [cluster] header */
};

static void perr(struct parser *p, int line, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void perr(struct parser *p, int line, const char *key, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (p->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (key)
		snprintf(p->err, p->errlen, "%s:%d: [%s] %s: %s", p->name, line, p->sect_text, key,
			 msg);
	else
		snprintf(p->err, p->errlen, "%s:%d: %s", p->name, line, msg);
	p->failed = true;
}

static bool valid_id(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CFG_ID_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return false;
	return true;
}

/* [user "name"]: a client of the controller (common/acl.h). */
static bool parse_user_header(struct parser *p, const char *id)
{
	struct cfg *c = p->c;
	struct cfg_user *users;

	if (!strcmp(id, "default")) {
		perr(p, p->line, NULL, "[%s]: the default user's password is [controller] requirepass",
		     p->sect_text);
		return false;
	}
	if (cfg_find_user(c, id)) {
		perr(p, p->line, NULL, "[%s]: user defined twice", p->sect_text);
		return false;
	}
	if (c->nusers == CFG_MAX_USERS) {
		perr(p, p->line, NULL, "more than %d users", CFG_MAX_USERS);
		return false;
	}
	users = realloc(c->users, (c->nusers + 1) * sizeof(*users));
	if (!users)
		return false;
	c->users = users;
	p->cur = c->nusers++;
	memset(&users[p->cur], 0, sizeof(users[0]));
	snprintf(users[p->cur].name, sizeof(users[0].name), "%s", id);
	users[p->cur].line = p->line;
	p->sect = S_USER;
	return true;
}

/* [node "n1"] / [shard "cache"] / [cluster] … Returns false on error. */
static bool parse_header(struct parser *p, const char *text)
{
	static const struct {
		const char *name;
		enum sect s;
	} plain[] = { { "cluster", S_CLUSTER }, { "agent", S_AGENT }, { "controller", S_CONTROLLER },
		      { "redis", S_REDIS },	{ "dns", S_DNS }, { "etcd", S_ETCD },
		      { "include", S_INCLUDE } };
	char kind[16], id[CFG_ID_MAX + 2];
	const char *end = strchr(text, ']');
	size_t n;
	struct cfg *c = p->c;

	if (!end) {
		perr(p, p->line, NULL, "section header without ']'");
		return false;
	}
	n = end - text - 1;
	snprintf(p->sect_text, sizeof(p->sect_text), "%.*s", (int)(n < 90 ? n : 90), text + 1);
	p->nkeys_seen = 0;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		if (!strcmp(p->sect_text, plain[i].name)) {
			/* [include] may come back (one file each); others are one block. */
			if (plain[i].s != S_INCLUDE && (p->plain_seen & (1u << plain[i].s))) {
				perr(p, p->line, NULL, "[%s] defined twice", p->sect_text);
				return false;
			}
			p->plain_seen |= 1u << plain[i].s;
			p->sect = plain[i].s;
			if (p->sect == S_CLUSTER)
				p->cluster_line = p->line;
			if (p->sect == S_DNS) {
				c->dns.enabled = true;
				p->dns_line = p->line;
			}
			if (p->sect == S_ETCD) {
				c->etcd.enabled = true;
				p->etcd_line = p->line;
			}
			return true;
		}
	}
	if (sscanf(p->sect_text, "%15s \"%65[^\"]\"", kind, id) != 2 ||
	    strlen(p->sect_text) != strlen(kind) + strlen(id) + 3) {
		perr(p, p->line, NULL, "unknown section [%s]", p->sect_text);
		return false;
	}
	if (!valid_id(id)) {
		perr(p, p->line, NULL,
		     "[%s]: a name is 1-%d letters, digits, '-', '_' or '.' (not first)",
		     p->sect_text, CFG_ID_MAX);
		return false;
	}
	if (!strcmp(kind, "node")) {
		if (strchr(id, '.')) {
			perr(p, p->line, NULL, "[%s]: a node id cannot contain '.' (bpffs refuses it)",
			     p->sect_text);
			return false;
		}
		if (cfg_find_node(c, id)) {
			perr(p, p->line, NULL, "[%s]: node defined twice", p->sect_text);
			return false;
		}
		if (c->nnodes == CFG_MAX_NODES) {
			perr(p, p->line, NULL, "more than %d nodes", CFG_MAX_NODES);
			return false;
		}
		struct cfg_node *nodes = realloc(c->nodes, (c->nnodes + 1) * sizeof(*nodes));
		if (!nodes)
			return false;
		c->nodes = nodes;
		p->cur = c->nnodes++;
		memset(&nodes[p->cur], 0, sizeof(nodes[0]));
		snprintf(nodes[p->cur].id, sizeof(nodes[0].id), "%s", id);
		nodes[p->cur].priority = 100;
		nodes[p->cur].shard = -1;
		nodes[p->cur].line = p->line;
		p->sect = S_NODE;
		return true;
	}
	if (!strcmp(kind, "controller")) {
		struct cfg_ctl *ctls;

		if (cfg_find_ctl(c, id)) {
			perr(p, p->line, NULL, "[%s]: controller defined twice", p->sect_text);
			return false;
		}
		if (c->nctls == CFG_MAX_CTLS) {
			perr(p, p->line, NULL, "more than %d controllers", CFG_MAX_CTLS);
			return false;
		}
		ctls = realloc(c->ctls, (c->nctls + 1) * sizeof(*ctls));
		if (!ctls)
			return false;
		c->ctls = ctls;
		p->cur = c->nctls++;
		memset(&ctls[p->cur], 0, sizeof(ctls[0]));
		snprintf(ctls[p->cur].id, sizeof(ctls[0].id), "%s", id);
		ctls[p->cur].line = p->line;
		p->sect = S_CTL;
		return true;
	}
	if (!strcmp(kind, "user"))
		return parse_user_header(p, id);
	if (!strcmp(kind, "shard")) {
		if (cfg_find_shard(c, id)) {
			perr(p, p->line, NULL, "[%s]: shard defined twice", p->sect_text);
			return false;
		}
		if (c->nshards == CFG_MAX_SHARDS) {
			perr(p, p->line, NULL, "more than %d shards", CFG_MAX_SHARDS);
			return false;
		}
		struct cfg_shard *shards = realloc(c->shards, (c->nshards + 1) * sizeof(*shards));
		char **sn = realloc(p->shard_nodes, (c->nshards + 1) * sizeof(*sn));
		int *snl = realloc(p->shard_nodes_line, (c->nshards + 1) * sizeof(*snl));
		if (shards)
			c->shards = shards;
		if (sn)
			p->shard_nodes = sn;
		if (snl)
			p->shard_nodes_line = snl;
		if (!shards || !sn || !snl)
			return false;
		p->cur = c->nshards++;
		memset(&shards[p->cur], 0, sizeof(shards[0]));
		snprintf(shards[p->cur].name, sizeof(shards[0].name), "%s", id);
		shards[p->cur].line = p->line;
		sn[p->cur] = NULL;
		snl[p->cur] = 0;
		p->sect = S_SHARD;
		return true;
	}
	perr(p, p->line, NULL, "unknown section [%s]", p->sect_text);
	return false;
}

/* The keys whose values are secrets. */
static bool secret_key(enum sect sect, const char *k, size_t n)
{
	return (sect == S_CLUSTER && n == 6 && !strncmp(k, "secret", 6)) ||
	       (sect == S_REDIS && n == 8 && !strncmp(k, "password", 8)) ||
	       (sect == S_DNS && n == 11 && !strncmp(k, "tsig_secret", 11)) ||
	       (sect == S_ETCD && n == 8 && !strncmp(k, "password", 8)) ||
	       (sect == S_NODE && n == 3 && !strncmp(k, "key", 3)) ||
	       (sect == S_CONTROLLER && n == 11 && !strncmp(k, "requirepass", 11)) ||
	       (sect == S_USER && n == 8 && !strncmp(k, "password", 8));
}

/* inih cuts a value at " ;" (an inline comment). In a secret that would cut it
 * silently: refuse it, saying so. */
static bool check_secret_line(struct parser *p, const char *t)
{
	const char *eq = strchr(t, '='), *k_end;

	if (!eq)
		return true;
	for (k_end = eq; k_end > t && (k_end[-1] == ' ' || k_end[-1] == '\t'); k_end--)
		;
	if (!secret_key(p->sect, t, k_end - t))
		return true;
	p->holds_secret = true;
	p->secret_line = p->line;
	for (const char *v = eq + 1; *v; v++) {
		if (*v == ';' && v > eq + 1 && (v[-1] == ' ' || v[-1] == '\t')) {
			perr(p, p->line, NULL,
			     "[%s] %.*s: a ';' after a space starts a comment and would cut the "
			     "secret; remove the space or the comment",
			     p->sect_text, (int)(k_end - t), t);
			return false;
		}
	}
	return true;
}

/* One line from the file, NUL bytes seen (fgets would hide them): its length,
 * 0 at the end, -1 on a NUL byte, line_max + 1 when longer. */
static long file_line(FILE *f, char *line, size_t line_max)
{
	size_t n = 0;
	int ch;

	while ((ch = getc(f)) != EOF) {
		if (ch == '\0')
			return -1;
		if (n < line_max)
			line[n] = (char)ch;
		n++;
		if (ch == '\n')
			break;
	}
	if (n > line_max)
		return (long)line_max + 1;
	line[n] = '\0';
	return (long)n;
}

/* inih's reader: one line at a time, counting lines and catching headers. */
static char *read_line(char *buf, int num, void *stream)
{
	struct parser *p = stream;
	char line[CFG_MAX_LINE + 2] = "";
	const char *t;
	size_t n;

	if (p->failed)
		return NULL;
	if (p->f) {
		long got = file_line(p->f, line, sizeof(line) - 1);

		if (got == 0)
			return NULL;
		p->line++;
		if (got < 0) {
			perr(p, p->line, NULL, "NUL byte in line");
			return NULL;
		}
		if ((size_t)got > sizeof(line) - 1) {
			perr(p, p->line, NULL, "line longer than %d characters",
			     (num < CFG_MAX_LINE ? num : CFG_MAX_LINE) - 3);
			return NULL;
		}
	} else {
		if (!*p->s)
			return NULL;
		n = strcspn(p->s, "\n");
		if (n >= sizeof(line) - 1)
			n = sizeof(line) - 1;
		memcpy(line, p->s, n);
		p->s += n;
		if (*p->s == '\n' && n < sizeof(line) - 1) {
			line[n++] = '\n';
			p->s++;
		}
		line[n] = '\0';
		p->line++;
	}
	n = strlen(line);
	/* inih's own buffer (num) is the real limit: 200 bytes in Debian's build. */
	if ((n == sizeof(line) - 1 && line[n - 1] != '\n') || n + 2 >= (size_t)num) {
		perr(p, p->line, NULL, "line longer than %d characters",
		     (num < CFG_MAX_LINE ? num : CFG_MAX_LINE) - 3);
		return NULL;
	}
	for (t = line; *t == ' ' || *t == '\t'; t++)
		;
	if (*t == '[' && !parse_header(p, t))
		return NULL;
	if (*t != '[' && *t != ';' && *t != '#' && !check_secret_line(p, t))
		return NULL;
	memcpy(buf, line, n + 1);
	return buf;
}

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
	static const char *const yes[] = { "yes", "true", "on", "1" }, *const no[] = { "no", "false",
										     "off", "0" };
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
		perr(p, p->line, key, "empty: a secret of at least %d bytes is required "
				      "(e.g. openssl rand -base64 24)", CFG_MIN_SECRET);
		return false;
	}
	if (strlen(v) < CFG_MIN_SECRET) {
		perr(p, p->line, key, "too short (%zu bytes): at least %d are required "
				      "(e.g. openssl rand -base64 24)", strlen(v), CFG_MIN_SECRET);
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

static bool set_endpoint(struct parser *p, const char *key, const char *v,
			 struct cfg_endpoint *ep, int default_port)
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

const char *cfg_hostport(char *buf, size_t len, const char *host, int port)
{
	snprintf(buf, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
	return buf;
}

const char *cfg_address_unprobeable(const char *address)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const unsigned char zero[16];
	unsigned char a[16];

	if (inet_pton(AF_INET, address, a) == 1) {
		if (!memcmp(a, zero, 4))
			return "0.0.0.0 is no host's address";
		if (a[0] >= 224 && a[0] <= 239)
			return "a multicast address is no host's own";
		if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255)
			return "the broadcast address is no host's own";
		return NULL;
	}
	if (inet_pton(AF_INET6, address, a) != 1)
		return "not an IPv4 or IPv6 address";
	if (!memcmp(a, zero, 16))
		return ":: is no host's address";
	if (a[0] == 0xff)
		return "a multicast address is no host's own";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return "an IPv6 link-local address needs an interface the cluster file cannot "
		       "name; use the host's global or ULA (fd00::/8) address";
	if (!memcmp(a, mapped, 12))
		return "an IPv4-mapped IPv6 address is probed as neither; write the IPv4 address";
	return NULL;
}

int cfg_probe_warning(const struct cfg *c, const struct cfg_node *n, char *buf, size_t len)
{
	unsigned char a[16], b[16];
	int fa = strchr(n->address, ':') ? AF_INET6 : AF_INET;

	if (inet_pton(fa, n->address, a) != 1)
		return 0;
	if ((fa == AF_INET && a[0] == 127) ||
	    (fa == AF_INET6 && !memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16))) {
		snprintf(buf, len, "%s is loopback: every host answers for it, so a dead host "
			 "of node %s cannot be detected by its peers", n->address, n->id);
		return 1;
	}
	if (n->shard < 0)
		return 0;
	for (int i = 0; i < c->shards[n->shard].nnodes; i++) {
		const struct cfg_node *o = &c->nodes[c->shards[n->shard].nodes[i]];

		if (o == n || (strchr(o->address, ':') ? AF_INET6 : AF_INET) != fa ||
		    inet_pton(fa, o->address, b) != 1 || memcmp(a, b, fa == AF_INET ? 4 : 16))
			continue;
		snprintf(buf, len, "%s is also node %s's address: one probe answers for both, so "
			 "the peers cannot tell which host died", n->address, o->id);
		return 1;
	}
	return 0;
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

static bool key_cluster(struct parser *p, const char *name, const char *v)
{
	struct cfg *c = p->c;

	if (KEY("name"))
		return set_str(p, name, v, c->name, sizeof(c->name));
	if (KEY("secret"))
		return set_secret(p, name, v, c->secret, sizeof(c->secret));
	perr(p, p->line, name, "unknown key");
	return false;
}

static bool key_agent(struct parser *p, const char *name, const char *v)
{
	typeof(p->c->agent) *a = &p->c->agent;

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

static bool key_controller(struct parser *p, const char *name, const char *v)
{
	typeof(p->c->controller) *k = &p->c->controller;

	if (KEY("listen")) {
		p->listen_line = p->line;
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

/* [user "name"]: password (a secret) and commands (common/acl.h). */
static bool key_user(struct parser *p, const char *name, const char *v)
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

static bool key_redis(struct parser *p, const char *name, const char *v)
{
	if (KEY("user"))
		return set_str(p, name, v, p->c->redis.user, sizeof(p->c->redis.user));
	if (KEY("password")) {
		/* The servers' password, chosen for Redis: only an empty one is refused. */
		if (!v[0]) {
			perr(p, p->line, name, "empty (leave the key out when the servers have none)");
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

static bool key_dns(struct parser *p, const char *name, const char *v)
{
	typeof(p->c->dns) *d = &p->c->dns;

	if (KEY("server"))
		return set_endpoint(p, name, v, &d->server, 53);
	if (KEY("zone"))
		return set_dns_name(p, name, v, d->zone, sizeof(d->zone));
	if (KEY("tsig_name")) {
		if (!valid_id(v)) {
			perr(p, p->line, name, "not a key name (letters, digits, '-', '_', '.'): '%s'",
			     v);
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
		if (strcmp(v, "hmac-sha256") && strcmp(v, "hmac-sha512") && strcmp(v, "hmac-sha1")) {
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
			perr(p, p->line, name, "too short: at least %d bytes are required "
					      "(tsig-keygen makes 32)", CFG_MIN_SECRET);
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

static bool key_etcd(struct parser *p, const char *name, const char *v)
{
	typeof(p->c->etcd) *e = &p->c->etcd;

	if (KEY("endpoints")) {
		char buf[CFG_MAX_LINE + 1], *tok, *save = NULL;

		snprintf(buf, sizeof(buf), "%s", v);
		e->nendpoints = 0;
		for (tok = strtok_r(buf, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
			if (strncmp(tok, "http://", 7) && strncmp(tok, "https://", 8)) {
				perr(p, p->line, name, "'%s' is not an http:// or https:// URL", tok);
				return false;
			}
			if (strlen(tok) >= sizeof(e->endpoints[0]) || e->nendpoints == CFG_MAX_ETCD) {
				perr(p, p->line, name, "at most %d endpoints of at most %zu characters",
				     CFG_MAX_ETCD, sizeof(e->endpoints[0]) - 1);
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

static bool key_ctl(struct parser *p, const char *name, const char *v)
{
	struct cfg_ctl *k = &p->c->ctls[p->cur];

	if (KEY("listen"))
		return set_endpoint(p, name, v, &k->listen, 26379) &&
		       set_str(p, name, v, k->listen_str, sizeof(k->listen_str));
	perr(p, p->line, name, "unknown key");
	return false;
}

static bool key_node(struct parser *p, const char *name, const char *v)
{
	struct cfg_node *n = &p->c->nodes[p->cur];

	if (KEY("address")) {
		const char *why;

		if (!set_ip(p, name, v, n->address, sizeof(n->address)))
			return false;
		n->address_line = p->line;
		why = cfg_address_unprobeable(v);
		if (why) {
			perr(p, p->line, name, "%s cannot be probed by the node's peers: %s", v, why);
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

static bool key_shard(struct parser *p, const char *name, const char *v)
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

static int parse_file(struct parser *p, const char *path);

/* [include] path = /abs/file: read there and then, as part of this file. */
static bool key_include(struct parser *p, const char *name, const char *v)
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

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;

	(void)section; /* parse_header() has seen it, with its line */
	if (p->failed)
		return 0;
	if (p->sect != S_NONE) {
		for (int i = 0; i < p->nkeys_seen; i++) {
			if (!strcmp(p->keys_seen[i], name)) {
				perr(p, p->line, name, "set twice in this section");
				return 0;
			}
		}
		if (p->nkeys_seen < CFG_MAX_SECT_KEYS && strlen(name) < sizeof(p->keys_seen[0]))
			snprintf(p->keys_seen[p->nkeys_seen++], sizeof(p->keys_seen[0]), "%s", name);
	}
	switch (p->sect) {
	case S_INCLUDE:
		return key_include(p, name, value);
	case S_CLUSTER:
		return key_cluster(p, name, value);
	case S_AGENT:
		return key_agent(p, name, value);
	case S_CONTROLLER:
		return key_controller(p, name, value);
	case S_REDIS:
		return key_redis(p, name, value);
	case S_DNS:
		return key_dns(p, name, value);
	case S_ETCD:
		return key_etcd(p, name, value);
	case S_CTL:
		return key_ctl(p, name, value);
	case S_NODE:
		return key_node(p, name, value);
	case S_SHARD:
		return key_shard(p, name, value);
	case S_USER:
		return key_user(p, name, value);
	case S_NONE:
		break;
	}
	perr(p, p->line, NULL, "key '%s' outside any section", name);
	return 0;
}

static void set_defaults(struct cfg *c)
{
	c->agent.ping_interval_ms = 100;
	c->agent.hung_after = 5;
	c->agent.probe_interval_ms = 100;
	c->agent.peer_down_after_ms = 1000;
	c->agent.heartbeat_ms = 100;
	c->agent.self_fence = true;
	c->agent.lease_ms = 500;
	c->agent.stop_grace_ms = 50;
	c->agent.busy_max_ms = 5000; /* Redis's own busy-reply-threshold */
	snprintf(c->agent.event_log, sizeof(c->agent.event_log), "/var/log/flatline/events.jsonl");
	cfg_parse_endpoint("127.0.0.1:26379", &c->controller.listen, 26379);
	c->controller.node_down_after_ms = 1000;
	c->controller.failover_block_ms = 10000;
	c->controller.tilt_ms = 30000;
	snprintf(c->controller.state_file, sizeof(c->controller.state_file),
		 "/var/lib/flatline/state");
	snprintf(c->controller.event_log, sizeof(c->controller.event_log),
		 "/var/log/flatline/controller.jsonl");
	cfg_parse_endpoint("127.0.0.1:53", &c->dns.server, 53);
	snprintf(c->dns.tsig_algorithm, sizeof(c->dns.tsig_algorithm), "hmac-sha256");
	c->dns.ttl = 1;
	c->dns.check_ms = 10000;
	c->etcd.lease_ms = 2000;
	c->etcd.timeout_ms = 500;
}

/* Every [user] has a password and its commands. */
static void validate_users(struct parser *p)
{
	struct cfg *c = p->c;

	for (int i = 0; i < c->nusers && !p->failed; i++) {
		struct cfg_user *u = &c->users[i];

		snprintf(p->sect_text, sizeof(p->sect_text), "user \"%s\"", u->name);
		if (!u->password[0])
			perr(p, u->line, "password", "missing (at least %d bytes, e.g. openssl rand "
						     "-base64 24)", CFG_MIN_SECRET);
		else if (!u->have_perms)
			perr(p, u->line, "commands", "missing (read, failover, admin or all)");
	}
}

/* Cross-section checks, once everything is read. */
static void validate(struct parser *p)
{
	struct cfg *c = p->c;

	validate_users(p);

	for (int i = 0; i < c->nnodes && !p->failed; i++) {
		struct cfg_node *n = &c->nodes[i];

		snprintf(p->sect_text, sizeof(p->sect_text), "node \"%s\"", n->id);
		if (!n->redis_str[0])
			perr(p, n->line, "redis", "missing (host:port or unix:/path of its server)");
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
		for (tok = strtok_r(list, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
			struct cfg_node *n = cfg_find_node(c, tok);
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
	if (p->failed)
		return;
	if (c->dns.enabled) {
		snprintf(p->sect_text, sizeof(p->sect_text), "dns");
		if (!c->dns.zone[0])
			perr(p, p->dns_line, "zone", "missing");
		else if (!c->dns.tsig_name[0])
			perr(p, p->dns_line, "tsig_name", "missing (the TSIG key's name, e.g. flatline)");
		else if (!c->dns.tsig_secret[0])
			perr(p, p->dns_line, "tsig_secret", "missing (the key's base64 secret)");
		for (int i = 0; i < c->nshards && !p->failed; i++) {
			const char *dn = c->shards[i].dns_name, *z = c->dns.zone;
			size_t ln = strlen(dn), lz = strlen(z);

			if (dn[0] && !(ln > lz && !strcasecmp(dn + ln - lz, z) && dn[ln - lz - 1] == '.')) {
				snprintf(p->sect_text, sizeof(p->sect_text), "shard \"%s\"",
					 c->shards[i].name);
				perr(p, c->shards[i].line, "dns_name", "%s is not inside zone %s", dn, z);
			}
		}
	}
	for (int i = 0; i < c->nctls && !p->failed; i++) {
		snprintf(p->sect_text, sizeof(p->sect_text), "controller \"%s\"", c->ctls[i].id);
		if (!c->ctls[i].listen_str[0])
			perr(p, c->ctls[i].line, "listen", "missing (host:port of this controller)");
		else if (!c->etcd.enabled)
			perr(p, c->ctls[i].line, NULL,
			     "[%s]: several controllers need an [etcd] section (one leader, the state in "
			     "etcd)", p->sect_text);
	}
	if (c->etcd.enabled && !p->failed) {
		snprintf(p->sect_text, sizeof(p->sect_text), "etcd");
		if (!c->etcd.nendpoints)
			perr(p, p->etcd_line, "endpoints", "missing (http://IP:2379,...)");
		else if (!c->nctls)
			perr(p, p->etcd_line, NULL,
			     "[etcd]: no [controller \"ID\"] section: name each controller and its listen "
			     "address");
		else if ((c->etcd.cert[0] != 0) != (c->etcd.key[0] != 0))
			perr(p, p->etcd_line, c->etcd.cert[0] ? "key" : "cert",
			     "missing (a client certificate needs its key and the key its certificate)");
		if (!c->etcd.prefix[0])
			snprintf(c->etcd.prefix, sizeof(c->etcd.prefix), "/flatline/%s/",
				 c->name[0] ? c->name : "default");
	}
	if (!p->failed) {
		static const char *const any[] = { "::", "0.0.0.0", "0::0", "::0" };
		bool wild = false;

		for (size_t i = 0; i < sizeof(any) / sizeof(any[0]); i++)
			wild |= !strcmp(c->controller.listen.host, any[i]);
		snprintf(p->sect_text, sizeof(p->sect_text), "controller");
		if (c->controller.have_address && !c->controller.address.host[0])
			perr(p, c->controller.address_line, "address",
			     "a host:port or [v6]:port agents and clients connect to, not a unix socket");
		else if (!c->controller.have_address && wild)
			perr(p, p->listen_line, "address",
			     "missing: listen = %s is every address of the controller's host, so "
			     "agents and clients need the one to connect to (address = host:port)",
			     c->controller.listen.host);
		else if (!c->controller.have_address)
			c->controller.address = c->controller.listen;
	}
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
		     "openssl rand -base64 24)", CFG_MIN_SECRET);
	}
}

static void parse_stream(struct parser *p)
{
	int rc;

	ini_allow_multiline = false; /* a continuation line would hide a typo */
	rc = ini_parse_stream(read_line, p, on_key, p);
	if (!p->failed && rc > 0)
		perr(p, rc, NULL, "not a 'key = value' line or a [section] header");
	else if (!p->failed && rc < 0)
		perr(p, 0, NULL, "failed to read: out of memory");
}

/* Reads the file at path into p->c. -errno when it cannot be opened (nothing
 * written to p->err), 0 otherwise (p->failed on a parse error). A file that
 * holds a secret must not be open to group or others, as ssh wants of keys. */
static int parse_file(struct parser *p, const char *path)
{
	struct stat st;
	int fd, rc;

	p->name = path;
	fd = open(path, O_RDONLY | O_CLOEXEC | (p->depth ? O_NONBLOCK : 0));
	if (fd < 0)
		return -errno;
	/* An include is a regular file (not a FIFO, not /dev/zero). */
	if (fstat(fd, &st)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (p->depth && !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	p->f = fdopen(fd, "r");
	if (!p->f) {
		rc = -errno;
		close(fd);
		return rc;
	}
	parse_stream(p);
	if (!p->failed && p->holds_secret && (st.st_mode & 077))
		perr(p, p->secret_line, NULL,
		     "holds a secret and group or others have access to the file (mode %04o): "
		     "chmod 600 %s, owned by the user the daemon runs as",
		     (unsigned)(st.st_mode & 07777), path);
	fclose(p->f);
	p->f = NULL;
	return 0;
}

static struct cfg *new_cfg(struct parser *p)
{
	struct cfg *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	p->c = c;
	snprintf(c->path, sizeof(c->path), "%s", p->name);
	set_defaults(c);
	return c;
}

static int finish(struct parser *p, struct cfg **out)
{
	struct cfg *c = p->c;

	if (!p->failed)
		validate(p);
	for (int i = 0; i < c->nshards; i++)
		free(p->shard_nodes[i]);
	free(p->shard_nodes);
	free(p->shard_nodes_line);
	if (p->failed) {
		cfg_free(c);
		return -EINVAL;
	}
	*out = c;
	return 0;
}

int cfg_load(const char *path, struct cfg **out, char *err, size_t errlen)
{
	struct parser p = { .name = path, .err = err, .errlen = errlen };
	int rc;

	if (!new_cfg(&p))
		return -ENOMEM;
	rc = parse_file(&p, path);
	if (rc) {
		snprintf(err, errlen, "failed to open cluster file %s: %s", path, strerror(-rc));
		cfg_free(p.c);
		return rc;
	}
	p.name = path;
	return finish(&p, out);
}

int cfg_load_string(const char *name, const char *text, struct cfg **out, char *err,
		    size_t errlen)
{
	struct parser p = { .name = name, .s = text, .err = err, .errlen = errlen };

	if (!new_cfg(&p))
		return -ENOMEM;
	parse_stream(&p);
	return finish(&p, out);
}

void cfg_free(struct cfg *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->nshards; i++)
		free(c->shards[i].nodes);
	free(c->shards);
	free(c->nodes);
	free(c->ctls);
	free(c->users);
	free(c);
}

struct cfg_node *cfg_find_node(const struct cfg *c, const char *id)
{
	for (int i = 0; i < c->nnodes; i++)
		if (!strcmp(c->nodes[i].id, id))
			return &c->nodes[i];
	return NULL;
}

struct cfg_shard *cfg_find_shard(const struct cfg *c, const char *name)
{
	for (int i = 0; i < c->nshards; i++)
		if (!strcmp(c->shards[i].name, name))
			return &c->shards[i];
	return NULL;
}

struct cfg_user *cfg_find_user(const struct cfg *c, const char *name)
{
	for (int i = 0; i < c->nusers; i++)
		if (!strcmp(c->users[i].name, name))
			return &c->users[i];
	return NULL;
}

struct cfg_ctl *cfg_find_ctl(const struct cfg *c, const char *id)
{
	for (int i = 0; i < c->nctls; i++)
		if (!strcmp(c->ctls[i].id, id))
			return &c->ctls[i];
	return NULL;
}

int cfg_parse_endpoint(const char *s, struct cfg_endpoint *ep, int default_port)
{
	const char *colon, *host = s;
	size_t hlen;
	char *end;
	long port;
	unsigned char buf[16];

	memset(ep, 0, sizeof(*ep));
	if (!strncmp(s, "unix:", 5)) {
		if (s[5] != '/' || strlen(s + 5) >= sizeof(ep->unix_path))
			return -EINVAL;
		memcpy(ep->unix_path, s + 5, strlen(s + 5) + 1);
		return 0;
	}
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb)
			return -EINVAL;
		host = s + 1;
		hlen = rb - host;
		colon = rb[1] == ':' ? rb + 1 : NULL;
		if (rb[1] && !colon)
			return -EINVAL;
	} else {
		colon = strrchr(s, ':');
		if (colon && strchr(s, ':') != colon)
			return -EINVAL; /* bare IPv6 needs brackets */
		hlen = colon ? (size_t)(colon - s) : strlen(s);
	}
	if (hlen == 0 || hlen >= sizeof(ep->host))
		return -EINVAL;
	memcpy(ep->host, host, hlen);
	ep->host[hlen] = '\0';
	for (const char *h = ep->host; *h; h++)
		if (!isalnum((unsigned char)*h) && !strchr(".-_:", *h))
			return -EINVAL;
	if (s[0] == '[' && inet_pton(AF_INET6, ep->host, buf) != 1)
		return -EINVAL;
	ep->port = default_port;
	if (colon) {
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (!colon[1] || *end || errno || port <= 0 || port > 65535)
			return -EINVAL;
		ep->port = port;
	}
	return 0;
}

static bool ep_eq(const struct cfg_endpoint *x, const struct cfg_endpoint *y)
{
	return !strcmp(x->host, y->host) && x->port == y->port && !strcmp(x->unix_path, y->unix_path);
}

int cfg_diff(const struct cfg *a, const struct cfg *b, cfg_diff_fn fn, void *ctx)
{
	char sect[CFG_ID_MAX + 16];
	int n = 0;

#define DIFF(cond, section, key)               \
	do {                                   \
		if (cond) {                    \
			fn(ctx, section, key); \
			n++;                   \
		}                              \
	} while (0)
#define DINT(f, section, key) DIFF(a->f != b->f, section, key)
#define DSTR(f, section, key) DIFF(strcmp(a->f, b->f), section, key)
#define DEP(f, section, key) DIFF(!ep_eq(&a->f, &b->f), section, key)
	DSTR(name, "[cluster]", "name");
	DSTR(secret, "[cluster]", "secret");
	DINT(agent.ping_interval_ms, "[agent]", "ping_interval_ms");
	DINT(agent.hung_after, "[agent]", "hung_after");
	DINT(agent.probe_interval_ms, "[agent]", "probe_interval_ms");
	DINT(agent.peer_down_after_ms, "[agent]", "peer_down_after_ms");
	DINT(agent.heartbeat_ms, "[agent]", "heartbeat_ms");
	DSTR(agent.event_log, "[agent]", "event_log");
	DINT(agent.self_fence, "[agent]", "self_fence");
	DINT(agent.self_fence_after_ms, "[agent]", "self_fence_after_ms");
	DEP(agent.metrics_listen, "[agent]", "metrics_listen");
	DINT(agent.lease_ms, "[agent]", "lease_ms");
	DSTR(controller.notification_script, "[controller]", "notification_script");
	DSTR(controller.client_reconfig_script, "[controller]", "client_reconfig_script");
	DEP(controller.listen, "[controller]", "listen");
	DEP(controller.address, "[controller]", "address");
	DINT(controller.node_down_after_ms, "[controller]", "node_down_after_ms");
	DSTR(controller.state_file, "[controller]", "state_file");
	DSTR(controller.event_log, "[controller]", "event_log");
	DINT(controller.failover_block_ms, "[controller]", "failover_block_ms");
	DINT(controller.tilt_ms, "[controller]", "tilt_ms");
	DEP(controller.metrics_listen, "[controller]", "metrics_listen");
	DSTR(controller.requirepass, "[controller]", "requirepass");
	DINT(controller.agent_address_check, "[controller]", "agent_address_check");
	DIFF(a->nusers != b->nusers ||
		     (a->nusers && memcmp(a->users, b->users, a->nusers * sizeof(*a->users))),
	     "[user]", "*");
	DSTR(redis.user, "[redis]", "user");
	DSTR(redis.password, "[redis]", "password");
	DINT(dns.enabled, "[dns]", "*");
	DEP(dns.server, "[dns]", "server");
	DSTR(dns.zone, "[dns]", "zone");
	DSTR(dns.tsig_name, "[dns]", "tsig_name");
	DSTR(dns.tsig_algorithm, "[dns]", "tsig_algorithm");
	DSTR(dns.tsig_secret, "[dns]", "tsig_secret");
	DINT(dns.ttl, "[dns]", "ttl");
	DINT(dns.check_ms, "[dns]", "check_ms");
	DINT(etcd.enabled, "[etcd]", "*");
	DIFF(a->etcd.nendpoints != b->etcd.nendpoints ||
		     memcmp(a->etcd.endpoints, b->etcd.endpoints, sizeof(a->etcd.endpoints)),
	     "[etcd]", "endpoints");
	DSTR(etcd.prefix, "[etcd]", "prefix");
	DINT(etcd.lease_ms, "[etcd]", "lease_ms");
	DINT(etcd.timeout_ms, "[etcd]", "timeout_ms");
	DSTR(etcd.user, "[etcd]", "user");
	DSTR(etcd.password, "[etcd]", "password");
	DSTR(etcd.cacert, "[etcd]", "cacert");
	DSTR(etcd.cert, "[etcd]", "cert");
	DSTR(etcd.key, "[etcd]", "key");
	DIFF(a->nctls != b->nctls, "[controller \"*\"]", "*");
	for (int i = 0; i < a->nctls && i < b->nctls; i++) {
		snprintf(sect, sizeof(sect), "[controller \"%s\"]", a->ctls[i].id);
		DIFF(strcmp(a->ctls[i].id, b->ctls[i].id) ||
			     strcmp(a->ctls[i].listen_str, b->ctls[i].listen_str),
		     sect, "listen");
	}
#undef DINT
#undef DSTR
#undef DEP
	for (int i = 0; i < a->nnodes; i++) {
		const struct cfg_node *x = &a->nodes[i], *y = cfg_find_node(b, x->id);

		snprintf(sect, sizeof(sect), "[node \"%s\"]", x->id);
		if (!y) {
			DIFF(true, sect, "*");
			continue;
		}
		DIFF(strcmp(x->address, y->address), sect, "address");
		DIFF(strcmp(x->redis_str, y->redis_str), sect, "redis");
		DIFF(x->priority != y->priority, sect, "priority");
		DIFF(strcmp(x->pidfile, y->pidfile), sect, "pidfile");
	}
	for (int i = 0; i < b->nnodes; i++) {
		snprintf(sect, sizeof(sect), "[node \"%s\"]", b->nodes[i].id);
		DIFF(!cfg_find_node(a, b->nodes[i].id), sect, "*");
	}
	for (int i = 0; i < a->nshards; i++) {
		const struct cfg_shard *x = &a->shards[i], *y = cfg_find_shard(b, x->name);
		bool same;

		snprintf(sect, sizeof(sect), "[shard \"%s\"]", x->name);
		if (!y) {
			DIFF(true, sect, "*");
			continue;
		}
		same = x->nnodes == y->nnodes;
		for (int j = 0; same && j < x->nnodes; j++)
			same = !strcmp(a->nodes[x->nodes[j]].id, b->nodes[y->nodes[j]].id);
		DIFF(!same, sect, "nodes");
		DIFF(strcmp(x->dns_name, y->dns_name), sect, "dns_name");
	}
	for (int i = 0; i < b->nshards; i++) {
		snprintf(sect, sizeof(sect), "[shard \"%s\"]", b->shards[i].name);
		DIFF(!cfg_find_shard(a, b->shards[i].name), sect, "*");
	}
#undef DIFF
	return n;
}
