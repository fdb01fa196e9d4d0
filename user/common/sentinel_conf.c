// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sentinel.conf, read as a Sentinel reads it (sentinel_conf.h). Three passes over the
 * text, as Sentinel's three queues: the global `sentinel` options (and every line's
 * syntax, and the Sentinel process's own Redis options), then the `monitor` lines,
 * then the options of each master. */
#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/sentinel_conf.h"

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

int sc_split(const char *line, char **argv, int max, char *buf, size_t buflen)
{
	const char *p = line;
	size_t off = 0;
	int argc = 0;

	for (;;) {
		bool inq = false, insq = false, done = false;

		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			return argc;
		if (argc == max)
			return -E2BIG;
		argv[argc++] = buf + off;
		while (!done) {
			char ch = *p;

			if (inq) {
				if (ch == '\\' && p[1] == 'x' && hexval(p[2]) >= 0 &&
				    hexval(p[3]) >= 0) {
					ch = (char)(hexval(p[2]) * 16 + hexval(p[3]));
					if (!ch)
						return -EINVAL; /* a NUL byte in an argument */
					p += 3;
				} else if (ch == '\\' && p[1]) {
					p++;
					switch (*p) {
					case 'n':
						ch = '\n';
						break;
					case 'r':
						ch = '\r';
						break;
					case 't':
						ch = '\t';
						break;
					case 'b':
						ch = '\b';
						break;
					case 'a':
						ch = '\a';
						break;
					default:
						ch = *p;
					}
				} else if (ch == '"') {
					if (p[1] && !isspace((unsigned char)p[1]))
						return -EINVAL;
					done = true;
					ch = 0;
				} else if (!ch) {
					return -EINVAL; /* unterminated */
				}
			} else if (insq) {
				if (ch == '\\' && p[1] == '\'') {
					p++;
					ch = '\'';
				} else if (ch == '\'') {
					if (p[1] && !isspace((unsigned char)p[1]))
						return -EINVAL;
					done = true;
					ch = 0;
				} else if (!ch) {
					return -EINVAL;
				}
			} else if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t' || !ch) {
				done = true;
				ch = 0;
			} else if (ch == '"' || ch == '\'') {
				inq = ch == '"';
				insq = ch == '\'';
				p++; /* ch is a quote, not the end */
				continue;
			}
			if (ch) {
				if (off + 2 > buflen)
					return -E2BIG;
				buf[off++] = ch;
			}
			if (*p)
				p++;
		}
		if (off + 1 > buflen)
			return -E2BIG;
		buf[off++] = '\0';
	}
}

struct sc_parser {
	struct sc_conf *c;
	char *err;
	size_t errlen;
	int line;
	bool failed;
};

__attribute__((format(printf, 2, 3))) static int fail(struct sc_parser *p, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!p->failed)
		snprintf(p->err, p->errlen, "%s:%d: %s", p->c->name, p->line, msg);
	p->failed = true;
	return -EINVAL;
}

static void note(struct sc_parser *p, const char *what)
{
	struct sc_conf *c = p->c;

	if (c->nnotes == SC_MAX_NOTES) {
		c->notes_dropped++;
		return;
	}
	snprintf(c->notes[c->nnotes].what, sizeof(c->notes[0].what), "%s", what);
	c->notes[c->nnotes++].line = p->line;
}

/* A decimal number in [min, max], nothing else. */
static bool num(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!isdigit((unsigned char)s[0]) && !(s[0] == '-' && isdigit((unsigned char)s[1])))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static int yesno(const char *s)
{
	if (!strcasecmp(s, "yes"))
		return 1;
	if (!strcasecmp(s, "no"))
		return 0;
	return -1;
}

static bool is_ip(const char *s)
{
	unsigned char a[16];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

static int set_str(struct sc_parser *p, struct sc_str *d, const char *what, const char *v)
{
	if (strlen(v) >= sizeof(d->v))
		return fail(p, "%s: longer than %zu bytes", what, sizeof(d->v) - 1);
	snprintf(d->v, sizeof(d->v), "%s", v);
	d->line = p->line;
	return 0;
}

static int set_num(struct sc_parser *p, struct sc_num *d, const char *what, const char *v,
		   long long min, long long max)
{
	if (!num(v, min, max, &d->v))
		return fail(p, "%s: not a number from %lld to %lld: '%.60s'", what, min, max, v);
	d->line = p->line;
	return 0;
}

/* host and port of monitor / known-replica / known-sentinel. */
static int set_addr(struct sc_parser *p, struct sc_addr *a, const char *what, const char *host,
		    const char *port)
{
	long long n;

	if (!host[0] || strlen(host) >= sizeof(a->host))
		return fail(p, "%s: bad host '%.60s'", what, host);
	if (!is_ip(host) && p->c->resolve_hostnames != 1)
		return fail(p,
			    "%s: '%.60s' is not an IP address and 'sentinel resolve-hostnames' "
			    "is not yes (Sentinel would not resolve it)",
			    what, host);
	if (!num(port, 1, 65535, &n))
		return fail(p, "%s: bad port '%.20s'", what, port);
	snprintf(a->host, sizeof(a->host), "%s", host);
	a->port = (int)n;
	a->priority = -1;
	return 0;
}

static bool same_addr(const struct sc_addr *a, const struct sc_addr *b)
{
	return a->port == b->port && !strcasecmp(a->host, b->host);
}

struct sc_master *sc_find_master(struct sc_conf *c, const char *name)
{
	for (int i = 0; i < c->nmasters; i++)
		if (!strcmp(c->masters[i].name, name))
			return &c->masters[i];
	return NULL;
}

/* Options before the masters: global ones. 1 = handled, 0 = not a global one. */
static int global_opt(struct sc_parser *p, int argc, char **argv)
{
	struct sc_conf *c = p->c;
	const char *o = argv[0];
	int yn;

	if (!strcasecmp(o, "myid") && argc == 2) {
		if (strlen(argv[1]) != 40)
			return fail(p, "sentinel myid: Malformed Sentinel id (40 characters)");
		snprintf(c->myid, sizeof(c->myid), "%s", argv[1]);
		note(p, "sentinel myid");
	} else if (!strcasecmp(o, "current-epoch") && argc == 2) {
		if (set_num(p, &c->current_epoch, "sentinel current-epoch", argv[1], 0, LLONG_MAX))
			return -EINVAL;
		note(p, "sentinel current-epoch");
	} else if (!strcasecmp(o, "announce-ip") && argc == 2) {
		if (set_str(p, &c->announce_ip, "sentinel announce-ip", argv[1]))
			return -EINVAL;
	} else if (!strcasecmp(o, "announce-port") && argc == 2) {
		if (set_num(p, &c->announce_port, "sentinel announce-port", argv[1], 0, 65535))
			return -EINVAL;
	} else if (!strcasecmp(o, "sentinel-user") && argc == 2) {
		if (set_str(p, &c->sentinel_user, "sentinel sentinel-user", argv[1]))
			return -EINVAL;
		note(p, "sentinel sentinel-user");
	} else if (!strcasecmp(o, "sentinel-pass") && argc == 2) {
		if (set_str(p, &c->sentinel_pass, "sentinel sentinel-pass", argv[1]))
			return -EINVAL;
		note(p, "sentinel sentinel-pass");
	} else if ((!strcasecmp(o, "resolve-hostnames") || !strcasecmp(o, "announce-hostnames") ||
		    !strcasecmp(o, "deny-scripts-reconfig")) &&
		   argc == 2) {
		yn = yesno(argv[1]);
		if (yn < 0)
			return fail(p, "sentinel %s: Please specify yes or no", o);
		if (!strcasecmp(o, "resolve-hostnames"))
			c->resolve_hostnames = yn;
		else if (!strcasecmp(o, "announce-hostnames"))
			c->announce_hostnames = yn;
		else
			c->deny_scripts_reconfig = yn;
		if (strcasecmp(o, "resolve-hostnames")) {
			char what[64];

			snprintf(what, sizeof(what), "sentinel %s", o);
			note(p, what);
		}
	} else {
		return 0;
	}
	return 1;
}

static bool is_global(const char *o)
{
	static const char *const g[] = {"myid",
					"current-epoch",
					"announce-ip",
					"announce-port",
					"sentinel-user",
					"sentinel-pass",
					"resolve-hostnames",
					"announce-hostnames",
					"deny-scripts-reconfig"};

	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		if (!strcasecmp(o, g[i]))
			return true;
	return false;
}

static int monitor(struct sc_parser *p, int argc, char **argv)
{
	struct sc_conf *c = p->c;
	struct sc_master *m;
	long long q;

	if (argc != 5)
		return fail(p, "sentinel monitor: wrong number of arguments (name host port "
			       "quorum)");
	if (!argv[1][0] || strlen(argv[1]) >= sizeof(m->name))
		return fail(p, "sentinel monitor: bad master name");
	if (sc_find_master(c, argv[1]))
		return fail(p, "sentinel monitor: Duplicate master name '%.60s'", argv[1]);
	if (!num(argv[4], 1, 1000000, &q))
		return fail(p, "sentinel monitor: Quorum must be 1 or greater ('%.20s')", argv[4]);
	if (c->nmasters == SC_MAX_MASTERS)
		return fail(p, "sentinel monitor: more than %d masters", SC_MAX_MASTERS);
	m = &c->masters[c->nmasters];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", argv[1]);
	m->line = p->line;
	m->quorum = (int)q;
	if (set_addr(p, &m->addr, "sentinel monitor", argv[2], argv[3]))
		return -EINVAL;
	c->nmasters++;
	return 0;
}

static int add_member(struct sc_parser *p, struct sc_master *m, bool sentinel, const char *what,
		      char **argv)
{
	struct sc_addr a = {0}, *list = sentinel ? m->sentinels : m->replicas;
	int *n = sentinel ? &m->nsentinels : &m->nreplicas;
	int max = sentinel ? SC_MAX_SENTINELS : SC_MAX_REPLICAS;

	if (set_addr(p, &a, what, argv[2], argv[3]))
		return -EINVAL;
	if (sentinel) {
		if (strlen(argv[4]) >= sizeof(a.runid))
			return fail(p, "%s: bad runid", what);
		snprintf(a.runid, sizeof(a.runid), "%s", argv[4]);
	}
	for (int i = 0; i < *n; i++) {
		if (sentinel && !strcmp(list[i].runid, a.runid))
			return fail(p, "%s: Duplicate runid for sentinel", what);
		if (!sentinel && same_addr(&list[i], &a))
			return fail(p, "%s: Duplicate hostname and port for replica", what);
	}
	if (*n == max)
		return fail(p, "%s: more than %d for master '%.60s'", what, max, m->name);
	list[(*n)++] = a;
	return 0;
}

/* sentinel <option> <master> ...: after every monitor is known. */
static int master_opt(struct sc_parser *p, int argc, char **argv)
{
	const char *o = argv[0];
	struct sc_master *m;
	char what[64];

	snprintf(what, sizeof(what), "sentinel %.40s", o);
	if (argc < 2)
		return fail(p, "%s: Unrecognized sentinel configuration statement", what);
	m = sc_find_master(p->c, argv[1]);
#define NEED(n)                                                                                    \
	do {                                                                                       \
		if (argc != (n))                                                                   \
			return fail(p, "%s: wrong number of arguments", what);                     \
		if (!m)                                                                            \
			return fail(p, "%s: No such master with specified name '%.60s'", what,     \
				    argv[1]);                                                      \
	} while (0)
	if (!strcasecmp(o, "down-after-milliseconds")) {
		NEED(3);
		return set_num(p, &m->down_after_ms, what, argv[2], 1, INT32_MAX);
	} else if (!strcasecmp(o, "failover-timeout")) {
		NEED(3);
		return set_num(p, &m->failover_timeout_ms, what, argv[2], 1, INT32_MAX);
	} else if (!strcasecmp(o, "parallel-syncs")) {
		NEED(3);
		return set_num(p, &m->parallel_syncs, what, argv[2], 0, INT32_MAX);
	} else if (!strcasecmp(o, "master-reboot-down-after-period")) {
		NEED(3);
		return set_num(p, &m->reboot_down_after_ms, what, argv[2], 0, INT32_MAX);
	} else if (!strcasecmp(o, "config-epoch")) {
		NEED(3);
		return set_num(p, &m->config_epoch, what, argv[2], 0, LLONG_MAX);
	} else if (!strcasecmp(o, "leader-epoch")) {
		NEED(3);
		return set_num(p, &m->leader_epoch, what, argv[2], 0, LLONG_MAX);
	} else if (!strcasecmp(o, "notification-script")) {
		NEED(3);
		return set_str(p, &m->notification_script, what, argv[2]);
	} else if (!strcasecmp(o, "client-reconfig-script")) {
		NEED(3);
		return set_str(p, &m->client_reconfig_script, what, argv[2]);
	} else if (!strcasecmp(o, "auth-pass")) {
		NEED(3);
		return set_str(p, &m->auth_pass, what, argv[2]);
	} else if (!strcasecmp(o, "auth-user")) {
		NEED(3);
		return set_str(p, &m->auth_user, what, argv[2]);
	} else if (!strcasecmp(o, "known-replica") || !strcasecmp(o, "known-slave")) {
		NEED(4);
		return add_member(p, m, false, what, argv);
	} else if (!strcasecmp(o, "known-sentinel")) {
		if (argc == 4)
			return 0; /* the old form without a runid: Sentinel ignores it too */
		NEED(5);
		return add_member(p, m, true, what, argv);
	} else if (!strcasecmp(o, "rename-command")) {
		size_t off = strlen(m ? m->renamed : "");

		NEED(4);
		if (m->nrenamed++ == 0)
			m->renamed_line = p->line;
		snprintf(m->renamed + off, sizeof(m->renamed) - off, "%s%.40s->%.40s",
			 off ? " " : "", argv[2], argv[3]);
		return 0;
	}
#undef NEED
	return fail(p, "%s: Unrecognized sentinel configuration statement", what);
}

/* A directive of the Sentinel process itself (not `sentinel ...`). */
static int process_opt(struct sc_parser *p, int argc, char **argv)
{
	struct sc_conf *c = p->c;
	char what[64];

	if (!strcasecmp(argv[0], "port") && argc == 2)
		return set_num(p, &c->port, "port", argv[1], 0, 65535);
	if (!strcasecmp(argv[0], "bind") && argc >= 2)
		return set_str(p, &c->bind, "bind", argv[1]);
	if (!strcasecmp(argv[0], "requirepass") && argc == 2)
		return set_str(p, &c->requirepass, "requirepass", argv[1]);
	snprintf(what, sizeof(what), "%.60s", argv[0]);
	for (char *s = what; *s; s++)
		*s = (char)tolower((unsigned char)*s);
	note(p, what);
	return 0;
}

/* One pass over every line: 0 the syntax, process options and global sentinel
 * options; 1 the monitors; 2 the masters' options. */
static int run_pass(struct sc_parser *p, const char *text, size_t len, int pass)
{
	char line[SC_MAX_LINE + 1], buf[SC_MAX_LINE + 1], *argv[SC_MAX_ARGS];
	size_t pos = 0;

	p->line = 0;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos, b = 0, e = n;
		int argc, rc = 0;

		p->line++;
		if (memchr(text + pos, '\0', n))
			return fail(p, "NUL byte in line");
		while (b < e && strchr(" \t\r\n", text[pos + b]))
			b++;
		while (e > b && strchr(" \t\r\n", text[pos + e - 1]))
			e--;
		if (e - b > SC_MAX_LINE)
			return fail(p, "line longer than %d characters", SC_MAX_LINE);
		memcpy(line, text + pos + b, e - b);
		line[e - b] = '\0';
		pos += n + (nl ? 1 : 0);
		if (!line[0] || line[0] == '#')
			continue;
		argc = sc_split(line, argv, SC_MAX_ARGS, buf, sizeof(buf));
		if (argc == -E2BIG)
			return fail(p, "more than %d arguments", SC_MAX_ARGS);
		if (argc < 0)
			return fail(p, "Unbalanced quotes in configuration line");
		if (argc == 0)
			continue;
		if (strcasecmp(argv[0], "sentinel")) {
			if (pass == 0)
				rc = process_opt(p, argc, argv);
		} else if (argc == 1) {
			continue; /* `sentinel` alone: Sentinel mode */
		} else if (pass == 0 && is_global(argv[1])) {
			rc = global_opt(p, argc - 1, argv + 1);
			if (rc == 0)
				rc = fail(p, "sentinel %.40s: wrong number of arguments", argv[1]);
		} else if (pass == 1 && !strcasecmp(argv[1], "monitor")) {
			rc = monitor(p, argc - 1, argv + 1);
		} else if (pass == 2 && !is_global(argv[1]) && strcasecmp(argv[1], "monitor")) {
			rc = master_opt(p, argc - 1, argv + 1);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int sc_parse(struct sc_conf *c, const char *name, const char *text, size_t len, char *err,
	     size_t errlen)
{
	struct sc_parser p = {.c = c, .err = err, .errlen = errlen};

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->resolve_hostnames = c->announce_hostnames = c->deny_scripts_reconfig = -1;
	if (errlen)
		err[0] = '\0';
	for (int pass = 0; pass < 3; pass++)
		if (run_pass(&p, text, len, pass))
			return -EINVAL;
	return 0;
}

int sc_parse_file(struct sc_conf *c, const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		rc = -errno;
		snprintf(err, errlen, "failed to read %s: %s", path, strerror(errno));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > 4 << 20) {
		rc = -EINVAL;
		snprintf(err, errlen, "failed to read %s: %s", path,
			 S_ISREG(st.st_mode) ? "larger than 4 MiB" : "not a regular file");
		goto cleanup;
	}
	text = malloc(st.st_size + 1);
	if (!text) {
		rc = -ENOMEM;
		snprintf(err, errlen, "failed to read %s: out of memory", path);
		goto cleanup;
	}
	while (len < (size_t)st.st_size && (n = read(fd, text + len, st.st_size - len)) > 0)
		len += n;
	rc = sc_parse(c, path, text, len, err, errlen);
cleanup:
	free(text);
	if (fd >= 0)
		close(fd);
	return rc;
}
