// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Client authentication's pure parts (common/acl.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "common/acl.h"

static const struct {
	const char *word;
	unsigned perms;
} acl_words[] = {
    {"read", ACL_READ}, {"failover", ACL_FAILOVER}, {"admin", ACL_ADMIN},
    {"all", ACL_ALL},	{"+@all", ACL_ALL},	    {"+@read", ACL_READ},
};

int acl_perms_parse(const char *s, unsigned *perms, char *why, size_t whylen)
{
	unsigned p = 0;
	int nwords = 0;

	for (;;) {
		size_t n;
		bool found = false;

		s += strspn(s, " \t,|");
		if (!*s)
			break;
		n = strcspn(s, " \t,|");
		for (size_t i = 0; i < sizeof(acl_words) / sizeof(acl_words[0]); i++) {
			if (strlen(acl_words[i].word) == n &&
			    !strncasecmp(s, acl_words[i].word, n)) {
				p |= acl_words[i].perms;
				found = true;
			}
		}
		if (!found) {
			snprintf(why, whylen,
				 "unknown command category '%.*s' (read, failover, admin "
				 "or all)",
				 (int)(n > 32 ? 32 : n), s);
			return -EINVAL;
		}
		nwords++;
		s += n;
	}
	if (!nwords) {
		snprintf(why, whylen, "empty (read, failover, admin or all)");
		return -EINVAL;
	}
	*perms = p;
	return 0;
}

const char *acl_perms_str(unsigned perms, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	if ((perms & ACL_ALL) == ACL_ALL) {
		snprintf(buf, len, "all");
		return buf;
	}
	for (int i = 0; i < 3; i++)
		if ((perms & acl_words[i].perms) && used < len)
			used += snprintf(buf + used, len - used, "%s%s", used ? " " : "",
					 acl_words[i].word);
	if (!buf[0])
		snprintf(buf, len, "none");
	return buf;
}

static bool is(const char *a, const char *b)
{
	return !strcasecmp(a, b);
}

static void lower_name(char *name, size_t len, const char *a, const char *b)
{
	size_t i;

	snprintf(name, len, b ? "%.40s|%.40s" : "%.40s", a, b ? b : "");
	for (i = 0; name[i]; i++)
		name[i] = (char)tolower((unsigned char)name[i]);
}

/* SENTINEL's subcommands that only read. */
static unsigned sentinel_needs(int argc, const char *const *argv)
{
	static const char *const read[] = {"get-master-addr-by-name",
					   "masters",
					   "master",
					   "replicas",
					   "slaves",
					   "sentinels",
					   "myid",
					   "ckquorum",
					   "info-cache",
					   "pending-scripts",
					   "help",
					   "is-master-down-by-addr"};
	const char *sub = argv[1];

	if (is(sub, "failover"))
		return ACL_FAILOVER;
	for (size_t i = 0; i < sizeof(read) / sizeof(read[0]); i++)
		if (is(sub, read[i]))
			return ACL_READ;
	if (is(sub, "config") && argc > 2 && is(argv[2], "get"))
		return ACL_READ;
	if (is(sub, "debug") && argc == 2)
		return ACL_READ;
	return ACL_ADMIN;
}

unsigned acl_command_needs(int argc, const char *const *argv, char *name, size_t namelen)
{
	static const char *const open[] = {"auth", "hello", "quit", "prove", "report"};
	static const char *const read[] = {"ping",	  "info",	 "role",
					   "command",	  "subscribe",	 "psubscribe",
					   "unsubscribe", "punsubscribe"};
	const char *c = argc > 0 ? argv[0] : "";
	const char *sub = argc > 1 ? argv[1] : NULL;

	lower_name(name, namelen, c, NULL);
	for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++)
		if (is(c, open[i]))
			return 0;
	for (size_t i = 0; i < sizeof(read) / sizeof(read[0]); i++)
		if (is(c, read[i]))
			return ACL_READ;
	if (!sub)
		return ACL_READ; /* a container without its subcommand: only an error */
	lower_name(name, namelen, c, sub);
	if (is(c, "sentinel"))
		return sentinel_needs(argc, argv);
	if (is(c, "flatline") && is(sub, "prove"))
		return 0; /* the controller's proof, asked before logging in */
	if (is(c, "flatline"))
		return is(sub, "failover")			 ? ACL_FAILOVER
		       : is(sub, "status") || is(sub, "cutover") ? ACL_READ
		       : is(sub, "mode") && argc == 2		 ? ACL_READ
								 : ACL_ADMIN;
	if (is(c, "client"))
		return is(sub, "id") || is(sub, "getname") || is(sub, "setname") ||
			       is(sub, "setinfo") || is(sub, "info") || is(sub, "help")
			   ? ACL_READ
			   : ACL_ADMIN;
	lower_name(name, namelen, c, NULL);
	return ACL_ADMIN;
}

int acl_hello_parse(int argc, const char *const *argv, const size_t *lens, struct acl_hello *h,
		    char *why, size_t whylen)
{
	char *end;
	long v;

	memset(h, 0, sizeof(*h));
	if (argc < 2)
		return 0;
	errno = 0;
	v = strtol(argv[1], &end, 10);
	if (errno || end == argv[1] || *end || v < 0 || v > 1000000) {
		snprintf(why, whylen, "ERR Protocol version is not an integer or out of range");
		return -EINVAL;
	}
	if (v != 2 && v != 3) {
		snprintf(why, whylen, "NOPROTO unsupported protocol version");
		return -EINVAL;
	}
	h->proto = (int)v;
	for (int i = 2; i < argc; i++) {
		int left = argc - i - 1;

		if (is(argv[i], "AUTH") && left >= 2) {
			h->user = argv[i + 1];
			h->pass = argv[i + 2];
			h->pass_len = lens[i + 2];
			i += 2;
		} else if (is(argv[i], "SETNAME") && left >= 1) {
			h->setname = argv[i + 1];
			i++;
		} else {
			snprintf(why, whylen, "ERR Syntax error in HELLO option '%.64s'", argv[i]);
			return -EINVAL;
		}
	}
	return 0;
}

bool acl_secret_eq(const char *conf, const char *given, size_t given_len)
{
	size_t n = strlen(conf);
	unsigned char d = n != given_len;

	if (!n)
		return false; /* none configured: nothing matches */
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)conf[i] ^ (unsigned char)(i < given_len ? given[i] : 0);
	return !d;
}

static const unsigned char acl_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* "ip:port" or "[v6]:port" into 4 or 16 bytes (a mapped IPv6 as IPv4); false
 * for anything else ("unix"). */
static bool peer_addr(const char *peer, unsigned char p[16], bool *p6)
{
	const char *colon = strrchr(peer, ':');
	char host[64];
	size_t n;

	if (!colon)
		return false; /* unix */
	if (peer[0] == '[') {
		if (colon < peer + 2 || colon[-1] != ']')
			return false;
		n = colon - peer - 2;
		if (n >= sizeof(host))
			return false;
		memcpy(host, peer + 1, n);
	} else {
		n = colon - peer;
		if (n >= sizeof(host))
			return false;
		memcpy(host, peer, n);
	}
	host[n] = '\0';
	if (inet_pton(AF_INET, host, p) == 1)
		*p6 = false;
	else if (inet_pton(AF_INET6, host, p) == 1)
		*p6 = true;
	else
		return false;
	if (*p6 && !memcmp(p, acl_mapped, 12)) { /* ::ffff:a.b.c.d from a dual-stack socket */
		memmove(p, p + 12, 4);
		*p6 = false;
	}
	return true;
}

const char *acl_peer_source(const char *peer, char *buf, size_t len)
{
	unsigned char p[16];
	char a[INET6_ADDRSTRLEN];
	bool p6;

	if (!peer_addr(peer, p, &p6)) {
		snprintf(buf, len, "unix");
		return buf;
	}
	if (p6)
		memset(p + 8, 0, 8);
	inet_ntop(p6 ? AF_INET6 : AF_INET, p, a, sizeof(a));
	snprintf(buf, len, p6 ? "%s/64" : "%s", a);
	return buf;
}

bool acl_peer_is(const char *peer, const char *address)
{
	unsigned char p[16], a[16];
	bool p6;

	if (!peer_addr(peer, p, &p6))
		return false;
	if (inet_pton(AF_INET, address, a) == 1)
		return !p6 && !memcmp(p, a, 4);
	if (inet_pton(AF_INET6, address, a) == 1) {
		if (!memcmp(a, acl_mapped, 12))
			return !p6 && !memcmp(p, a + 12, 4);
		return p6 && !memcmp(p, a, 16);
	}
	return false;
}
