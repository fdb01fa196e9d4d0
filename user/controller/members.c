// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Runtime membership, the words of it (members.h): lines, arguments, ids, and the
 * replicas listed in INFO. Pure: tests/unit/test_members.c drives it. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include "common/config.h"
#include "controller/failover.h"
#include "controller/members.h"

bool mb_valid_id(const char *id, bool dots)
{
	size_t n = strlen(id);

	if (!n || n > CFG_ID_MAX || id[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)id[i]) && id[i] != '-' && id[i] != '_' &&
		    !(dots && id[i] == '.'))
			return false;
	return true;
}

static bool valid_dns_name(const char *v)
{
	size_t n = strlen(v);

	if (n < 2 || n >= 256 || v[n - 1] != '.' || strstr(v, "..") || v[0] == '.')
		return false;
	for (const char *s = v; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '.' && *s != '_')
			return false;
	return true;
}

int mb_check(const struct mb_entry *e, char *why, size_t whylen)
{
	bool shard = e->kind == MB_SHARD || e->kind == MB_DROP_SHARD;
	struct cfg_endpoint ep;
	unsigned char a[16];
	const char *bad;

	if (!mb_valid_id(e->id, shard)) {
		snprintf(why, whylen, "%s '%.70s': want 1-%d letters, digits, '-' or '_'%s",
			 shard ? "shard" : "node", e->id, CFG_ID_MAX,
			 shard ? " or '.' (not first)" : "");
		return -EINVAL;
	}
	if (e->kind == MB_SHARD && e->dns_name[0] && !valid_dns_name(e->dns_name)) {
		snprintf(why, whylen, "dns name '%.70s': not an absolute domain name ending in '.'",
			 e->dns_name);
		return -EINVAL;
	}
	if (e->kind != MB_NODE && e->kind != MB_ATTACH)
		return 0;
	if (!mb_valid_id(e->shard, true)) {
		snprintf(why, whylen, "shard '%.70s': not a shard name", e->shard);
		return -EINVAL;
	}
	if (e->kind == MB_ATTACH)
		return 0;
	if (inet_pton(AF_INET, e->address, a) != 1 && inet_pton(AF_INET6, e->address, a) != 1) {
		snprintf(why, whylen, "address '%.70s': not an IPv4 or IPv6 address", e->address);
		return -EINVAL;
	}
	bad = cfg_address_unprobeable(e->address);
	if (bad) {
		snprintf(why, whylen, "address %.70s: %s", e->address, bad);
		return -EINVAL;
	}
	if (cfg_parse_endpoint(e->redis, &ep, 6379) || (!ep.unix_path[0] && !ep.port)) {
		snprintf(why, whylen, "redis '%.70s': want HOST:PORT, [V6]:PORT or unix:/PATH",
			 e->redis);
		return -EINVAL;
	}
	if (e->priority < 0 || e->priority > 1000000) {
		snprintf(why, whylen, "priority %d: want 0 to 1000000", e->priority);
		return -EINVAL;
	}
	return 0;
}

int mb_words(char *s, char **w, int max)
{
	char *save = NULL;
	int n = 0;

	for (char *p = strtok_r(s, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
		if (n == max)
			return max + 1;
		w[n++] = p;
	}
	return n;
}

static int copy(char *dst, size_t size, const char *src)
{
	if (strlen(src) >= size)
		return -ENAMETOOLONG;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "0") && strcmp(s, "1"))
		return -EINVAL;
	*out = s[0] == '1';
	return 0;
}

int mb_parse(const char *line, struct mb_entry *e, char *why, size_t whylen)
{
	char buf[MB_LINE_MAX], *w[16];
	int n;

	memset(e, 0, sizeof(*e));
	if (strlen(line) >= sizeof(buf)) {
		snprintf(why, whylen, "line too long");
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", line);
	n = mb_words(buf, w, 16);
	if (n == 3 && !strcmp(w[0], "drop") && (!strcmp(w[1], "node") || !strcmp(w[1], "shard"))) {
		e->kind = !strcmp(w[1], "node") ? MB_DROP_NODE : MB_DROP_SHARD;
		if (copy(e->id, sizeof(e->id), w[2]))
			goto bad;
	} else if (n == 5 && !strcmp(w[0], "attach") && !strcmp(w[1], "node") &&
		   !strcmp(w[3], "shard")) {
		e->kind = MB_ATTACH;
		if (copy(e->id, sizeof(e->id), w[2]) || copy(e->shard, sizeof(e->shard), w[4]))
			goto bad;
	} else if (n == 6 && !strcmp(w[0], "shard") && !strcmp(w[2], "dns_name") &&
		   !strcmp(w[4], "discover")) {
		e->kind = MB_SHARD;
		if (copy(e->id, sizeof(e->id), w[1]) ||
		    copy(e->dns_name, sizeof(e->dns_name), strcmp(w[3], "-") ? w[3] : "") ||
		    parse_bool(w[5], &e->discover))
			goto bad;
	} else if (n == 12 && !strcmp(w[0], "node") && !strcmp(w[2], "shard") &&
		   !strcmp(w[4], "address") && !strcmp(w[6], "redis") &&
		   !strcmp(w[8], "priority") && !strcmp(w[10], "spare")) {
		e->kind = MB_NODE;
		if (copy(e->id, sizeof(e->id), w[1]) || copy(e->shard, sizeof(e->shard), w[3]) ||
		    copy(e->address, sizeof(e->address), w[5]) ||
		    copy(e->redis, sizeof(e->redis), w[7]) ||
		    parse_int(w[9], 0, 1000000, &e->priority) || parse_bool(w[11], &e->spare))
			goto bad;
	} else {
		goto bad;
	}
	return mb_check(e, why, whylen);
bad:
	snprintf(why, whylen, "cannot parse '%.80s'", line);
	return -EINVAL;
}

int mb_format(const struct mb_entry *e, char *buf, size_t len)
{
	int n;

	switch (e->kind) {
	case MB_NODE:
		n = snprintf(buf, len, "node %s shard %s address %s redis %s priority %d spare %d",
			     e->id, e->shard, e->address, e->redis, e->priority, e->spare);
		break;
	case MB_SHARD:
		n = snprintf(buf, len, "shard %s dns_name %s discover %d", e->id,
			     e->dns_name[0] ? e->dns_name : "-", e->discover);
		break;
	case MB_ATTACH:
		n = snprintf(buf, len, "attach node %s shard %s", e->id, e->shard);
		break;
	case MB_DROP_NODE:
	case MB_DROP_SHARD:
		n = snprintf(buf, len, "drop %s %s", e->kind == MB_DROP_NODE ? "node" : "shard",
			     e->id);
		break;
	default:
		return -EINVAL;
	}
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

int mb_node_args(int argc, const char *const *argv, struct mb_entry *e, char *why, size_t whylen)
{
	bool have_addr = false, have_redis = false;

	memset(e, 0, sizeof(*e));
	e->kind = MB_NODE;
	e->priority = 100;
	if (argc < 2) {
		snprintf(why, whylen,
			 "want SHARD NODE ADDRESS IP REDIS HOST:PORT [PRIORITY N] [SPARE]");
		return -EINVAL;
	}
	if (copy(e->shard, sizeof(e->shard), argv[0]) || copy(e->id, sizeof(e->id), argv[1])) {
		snprintf(why, whylen, "a name longer than %d characters", CFG_ID_MAX);
		return -EINVAL;
	}
	for (int i = 2; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcasecmp(k, "spare")) {
			e->spare = true;
			continue;
		}
		if (!v) {
			snprintf(why, whylen, "%.40s: no value", k);
			return -EINVAL;
		}
		if (!strcasecmp(k, "address")) {
			if (copy(e->address, sizeof(e->address), v))
				goto long_value;
			have_addr = true;
		} else if (!strcasecmp(k, "redis")) {
			if (copy(e->redis, sizeof(e->redis), v))
				goto long_value;
			have_redis = true;
		} else if (!strcasecmp(k, "priority")) {
			if (parse_int(v, 0, 1000000, &e->priority)) {
				snprintf(why, whylen, "priority '%.40s': want 0 to 1000000", v);
				return -EINVAL;
			}
		} else {
			snprintf(why, whylen,
				 "unknown option '%.40s' (ADDRESS, REDIS, PRIORITY, SPARE)", k);
			return -EINVAL;
		}
		i++;
	}
	if (!have_addr || !have_redis) {
		snprintf(why, whylen, "%s missing", !have_addr ? "ADDRESS IP" : "REDIS HOST:PORT");
		return -EINVAL;
	}
	return mb_check(e, why, whylen);
long_value:
	snprintf(why, whylen, "a value too long");
	return -EINVAL;
}

int mb_shard_args(int argc, const char *const *argv, struct mb_entry *e, char *why, size_t whylen)
{
	memset(e, 0, sizeof(*e));
	e->kind = MB_SHARD;
	if (argc != 1 && !(argc == 3 && !strcasecmp(argv[1], "dns-name"))) {
		snprintf(why, whylen, "want NAME [DNS-NAME NAME]");
		return -EINVAL;
	}
	if (copy(e->id, sizeof(e->id), argv[0]) ||
	    (argc == 3 && copy(e->dns_name, sizeof(e->dns_name), argv[2]))) {
		snprintf(why, whylen, "a name too long");
		return -EINVAL;
	}
	return mb_check(e, why, whylen);
}

int mb_node_id(const char *shard, const char *host, int port, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s-%s-%d", shard, host, port);

	if (n < 0 || (size_t)n >= len || n > CFG_ID_MAX)
		return -ENAMETOOLONG;
	for (char *p = buf; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			*p = '_';
	return 0;
}

int mb_info_slaves(const char *text, size_t len, struct mb_addr *out, int max)
{
	const char *p = text, *end = text + len;
	int n = 0;

	while (p < end && n < max) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end;
		char line[512], *ip, *port;
		size_t l = le - p;

		if (l && p[l - 1] == '\r')
			l--;
		if (l < sizeof(line) && l > 5 && !strncmp(p, "slave", 5) &&
		    isdigit((unsigned char)p[5])) {
			memcpy(line, p, l);
			line[l] = '\0';
			ip = strstr(line, ":ip=");
			port = strstr(line, ",port=");
			if (ip && port && port > ip) {
				int v;
				char *pe;

				*port = '\0';
				port += 6;
				pe = port + strcspn(port, ",");
				*pe = '\0';
				ip += 4;
				if (!parse_int(port, 1, 65535, &v) &&
				    strlen(ip) < sizeof(out[n].host) && ip[0]) {
					snprintf(out[n].host, sizeof(out[n].host), "%s", ip);
					out[n].port = v;
					n++;
				}
			}
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return n;
}

/* The entry of shard i, if it differs from the file. */
static bool shard_entry(const struct cfg *c, int i, struct mb_entry *e)
{
	const struct cfg_shard *s = &c->shards[i];

	if (s->runtime == s->removed)
		return false; /* the file's and kept, or added and removed again */
	memset(e, 0, sizeof(*e));
	e->kind = s->runtime ? MB_SHARD : MB_DROP_SHARD;
	snprintf(e->id, sizeof(e->id), "%s", s->name);
	snprintf(e->dns_name, sizeof(e->dns_name), "%s", s->dns_name);
	e->discover = s->discover;
	return true;
}

static bool node_entry(const struct cfg *c, int i, struct mb_entry *e)
{
	const struct cfg_node *n = &c->nodes[i];

	if (!n->runtime && !n->removed && n->attached && n->shard >= 0) {
		memset(e, 0, sizeof(*e));
		e->kind = MB_ATTACH;
		snprintf(e->id, sizeof(e->id), "%s", n->id);
		snprintf(e->shard, sizeof(e->shard), "%s", c->shards[n->shard].name);
		return true;
	}
	if (n->runtime == n->removed)
		return false;
	memset(e, 0, sizeof(*e));
	e->kind = n->runtime ? MB_NODE : MB_DROP_NODE;
	snprintf(e->id, sizeof(e->id), "%s", n->id);
	if (n->runtime) {
		snprintf(e->shard, sizeof(e->shard), "%s",
			 n->spare	 ? n->spare_for
			 : n->shard >= 0 ? c->shards[n->shard].name
					 : "");
		snprintf(e->address, sizeof(e->address), "%s", n->address);
		snprintf(e->redis, sizeof(e->redis), "%s", n->redis_str);
		e->priority = n->priority;
		e->spare = n->spare;
	}
	return true;
}

int mb_walk_cfg(const struct cfg *c, int (*fn)(void *ctx, const struct mb_entry *e), void *ctx)
{
	/* In an order that applies: the drops of nodes, of shards, then the shards
	 * added, then the nodes (which name them), then the spares attached. */
	static const enum mb_kind order[] = {MB_DROP_NODE, MB_DROP_SHARD, MB_SHARD, MB_NODE,
					     MB_ATTACH};
	struct mb_entry e;
	int rc;

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		bool shards = order[k] == MB_SHARD || order[k] == MB_DROP_SHARD;
		int n = shards ? c->nshards : c->nnodes;

		for (int i = 0; i < n; i++) {
			if (!(shards ? shard_entry(c, i, &e) : node_entry(c, i, &e)) ||
			    e.kind != order[k])
				continue;
			rc = fn(ctx, &e);
			if (rc)
				return rc;
		}
	}
	return 0;
}

struct fmt_ctx {
	char *buf;
	size_t cap, *len;
};

static int fmt_one(void *ctx, const struct mb_entry *e)
{
	struct fmt_ctx *f = ctx;
	char line[MB_LINE_MAX];
	int n = mb_format(e, line, sizeof(line));

	if (n < 0)
		return n;
	if (*f->len + strlen(MB_PREFIX) + n + 2 > f->cap)
		return -ENOSPC;
	*f->len += snprintf(f->buf + *f->len, f->cap - *f->len, MB_PREFIX "%s\n", line);
	return 0;
}

int mb_format_cfg(const struct cfg *c, char *buf, size_t cap, size_t *len)
{
	struct fmt_ctx f = {buf, cap, len};

	return mb_walk_cfg(c, fmt_one, &f);
}

/* ---- a spare made a member of its shard (MB_ATTACH), in the cfg ---- */

void mb_shard_defaults(struct cfg_shard *s)
{
	const struct cfg_key *r = cfg_key_find(CFG_S_SHARD, "restore_after_ms");
	const struct cfg_key *p = cfg_key_find(CFG_S_SHARD, "promotable_after_ms");

	s->replicas = -1;
	s->restore_after_ms = r && r->def ? (int)strtol(r->def, NULL, 10) : 30000;
	s->promotable_after_ms = p && p->def ? (int)strtol(p->def, NULL, 10) : 5000;
}

/* n is a spare of shard, neither removed; -errno and why if not. */
static int spare_of(const struct cfg_node *n, const struct cfg_shard *s, const struct mb_entry *e,
		    char *why, size_t whylen)
{
	if (!n || n->removed || !s || s->removed) {
		snprintf(why, whylen, "no node %s or no shard %s", e->id, e->shard);
		return -ENOENT;
	}
	if (!n->spare || strcmp(n->spare_for, e->shard)) {
		snprintf(why, whylen, "node %s is not a spare of shard %s", e->id, e->shard);
		return -EINVAL;
	}
	return 0;
}

int mb_cfg_attach_check(const struct cfg *cfg, const struct mb_entry *e, char *why, size_t whylen)
{
	return spare_of(cfg_find_node(cfg, e->id), cfg_find_shard(cfg, e->shard), e, why, whylen);
}

int mb_cfg_attach(struct cfg *cfg, const struct mb_entry *e, char *why, size_t whylen)
{
	struct cfg_node *n = cfg_find_node(cfg, e->id);
	struct cfg_shard *cs = cfg_find_shard(cfg, e->shard);
	int rc = spare_of(n, cs, e, why, whylen), *l;

	if (rc)
		return rc;
	if (cs->nnodes >= FO_MAX_SHARD_NODES) {
		snprintf(why, whylen, "shard %s has %d nodes, the most a shard may have", e->shard,
			 FO_MAX_SHARD_NODES);
		return -E2BIG;
	}
	l = realloc(cs->nodes, (cs->nnodes + 1) * sizeof(*l));
	if (!l) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	cs->nodes = l;
	cs->nodes[cs->nnodes++] = (int)(n - cfg->nodes);
	n->spare = false;
	n->attached = true;
	n->shard = (int)(cs - cfg->shards);
	return (int)(n - cfg->nodes);
}

void mb_cfg_detach(struct cfg_node *n)
{
	n->spare = true;
	n->attached = false;
	n->shard = -1;
}
