// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The cluster file's model, at the bottom of its reader: what every layer above
 * uses. perr() and valid_id() for the reader's messages and names, the pure
 * parsing helpers (cfg_parse_endpoint, cfg_hostport, cfg_address_unprobeable),
 * cfg_free() and the cfg_find_*() look-ups; the types are config.h's.
 *
 * The reader, top down, each file calling only the ones below it:
 * config_load.c (lines, headers, [include]s, cfg_load) -> config_check.c
 * (defaults, cross-section checks) -> config_table.c (the rows) -> config_keys.c
 * (the setters) -> this file. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/config.h"
#include "common/config_internal.h"

void perr(struct parser *p, int line, const char *key, const char *fmt, ...)
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

bool valid_id(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CFG_ID_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return false;
	return true;
}

const char *cfg_hostport(char *buf, size_t len, const char *host, int port)
{
	snprintf(buf, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
	return buf;
}

const char *cfg_address_unprobeable(const char *address)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
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

void cfg_server_auth(const struct cfg *c, int shard, const char **user, const char **pass)
{
	const struct cfg_shard *s = shard >= 0 && shard < c->nshards ? &c->shards[shard] : NULL;

	if (s && s->password[0]) {
		*user = s->user;
		*pass = s->password;
	} else {
		*user = c->redis.user;
		*pass = c->redis.password;
	}
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
