// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `flatline import`: its sources merged into shards and nodes, and the cluster file's
 * text with a comment for every value (where it came from) and for every Sentinel
 * option with nothing to map (why). import.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "cli/import.h"
#include "common/log.h"

/* A comment, wrapped at 92 columns ("; " first), control characters from a hostile
 * file shown as '?'; '\n' in fmt starts a new line. Every line stays far below the
 * cluster file's line limit. */
__attribute__((format(printf, 2, 3))) static void cmt(struct imp *im, const char *fmt, ...)
{
	char text[2048], *p = text;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	for (char *q = text; *q; q++)
		if (((unsigned char)*q < 0x20 && *q != '\n') || *q == 0x7f)
			*q = '?';
	bool item = text[0] == '-', cont = false;

	while (*p) {
		size_t n = strcspn(p, "\n"), cut = n, w = cont && item ? 88 : 90;

		if (n > w) {
			for (cut = w; cut > 20 && p[cut] != ' '; cut--)
				;
			if (p[cut] != ' ')
				cut = w;
		}
		fprintf(im->out, "; %s%.*s\n", cont && item ? "  " : "", (int)cut, p);
		cont = true;
		p += cut;
		while (*p == ' ')
			p++;
		if (*p == '\n' && cut == n)
			p++;
	}
}

/* A value the cluster file holds as it is: inih trims blanks at both ends and cuts
 * at " ;" (a comment), a line holds 197 characters. */
static bool ini_ok(const char *v)
{
	size_t n = strlen(v);

	if (!n || n > 150 || v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f ||
		    (v[i] == ';' && i && (v[i - 1] == ' ' || v[i - 1] == '\t')))
			return false;
	return true;
}

/* "file:12" or "10.0.0.1:26379" for where a value came from. */
static const char *where(char *buf, size_t len, const struct sc_conf *c, int line)
{
	if (line > 0)
		snprintf(buf, len, "%s:%d", c->name, line);
	else
		snprintf(buf, len, "%s", c->name);
	return buf;
}

static struct imp_shard *find_shard(struct imp *im, const char *name)
{
	for (int i = 0; i < im->nshards; i++)
		if (!strcmp(im->shards[i].name, name))
			return &im->shards[i];
	return NULL;
}

static void add_node(struct imp_shard *s, const struct sc_addr *a, bool *full)
{
	for (int i = 0; i < s->nnodes; i++) {
		if (s->nodes[i].port == a->port && !strcasecmp(s->nodes[i].host, a->host)) {
			if (s->nodes[i].priority < 0)
				s->nodes[i].priority = a->priority;
			return;
		}
	}
	if (s->nnodes == IMP_MAX_NODES) {
		*full = true;
		return;
	}
	snprintf(s->nodes[s->nnodes].host, sizeof(s->nodes[0].host), "%s", a->host);
	s->nodes[s->nnodes].port = a->port;
	s->nodes[s->nnodes++].priority = a->priority;
}

/* Replicas in address order, so that every source gives a server the same id. */
static int addr_cmp(const void *pa, const void *pb)
{
	const struct imp_node *a = pa, *b = pb;
	unsigned char x[16] = {0}, y[16] = {0};
	int fx = inet_pton(AF_INET, a->host, x) == 1	? 4
		 : inet_pton(AF_INET6, a->host, x) == 1 ? 6
							: 0;
	int fy = inet_pton(AF_INET, b->host, y) == 1	? 4
		 : inet_pton(AF_INET6, b->host, y) == 1 ? 6
							: 0;
	int c;

	if (fx != fy)
		return fx - fy;
	c = fx ? memcmp(x, y, 16) : strcasecmp(a->host, b->host);
	return c ? c : a->port - b->port;
}

/* A shard name is the master's (clients ask by it): it must be a cluster file id. */
static bool id_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > CFG_ID_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

/* Every source's masters into shards, their nodes and node ids. */
int import_merge(struct imp *im)
{
	for (int k = 0; k < im->nsrcs; k++) {
		struct sc_conf *c = im->srcs[k];

		for (int i = 0; i < c->nmasters; i++) {
			const struct sc_master *m = &c->masters[i];
			struct imp_shard *s = find_shard(im, m->name);
			int j;

			if (!s) {
				if (!id_ok(m->name)) {
					pr_warn(
					    "import: %s: master '%.80s' cannot be a "
					    "shard's name (1-%d letters, digits, '-', '_', '.', "
					    "not first), and clients ask by it\n",
					    c->name, m->name, CFG_ID_MAX);
					return -EINVAL;
				}
				if (im->nshards == SC_MAX_MASTERS) {
					pr_warn("import: more than %d masters\n", SC_MAX_MASTERS);
					return -E2BIG;
				}
				s = &im->shards[im->nshards++];
				snprintf(s->name, sizeof(s->name), "%s", m->name);
			}
			if (s->nsrc == IMP_MAX_SOURCES)
				continue;
			/* Keep them ordered by config-epoch, highest first (stable). */
			for (j = s->nsrc;
			     j > 0 && s->src[j - 1]->config_epoch.v < m->config_epoch.v; j--) {
				s->src[j] = s->src[j - 1];
				s->conf[j] = s->conf[j - 1];
			}
			s->src[j] = m;
			s->conf[j] = c;
			s->nsrc++;
		}
	}
	for (int i = 0; i < im->nshards; i++) {
		struct imp_shard *s = &im->shards[i];
		bool full = false;

		add_node(s, &s->src[0]->addr, &full);
		for (int k = 0; k < s->nsrc; k++)
			for (int j = 0; j < s->src[k]->nreplicas; j++)
				add_node(s, &s->src[k]->replicas[j], &full);
		/* An older view's primary is a server of the shard too. */
		for (int k = 1; k < s->nsrc; k++)
			add_node(s, &s->src[k]->addr, &full);
		if (s->nnodes > 2)
			qsort(s->nodes + 1, s->nnodes - 1, sizeof(s->nodes[0]), addr_cmp);
		if (full) {
			pr_warn("import: master %s: more than %d servers\n", s->name,
				IMP_MAX_NODES);
			return -E2BIG;
		}
		for (int j = 0; j < s->nnodes; j++) {
			snprintf(s->ids[j], sizeof(s->ids[0]), "%.*s-%d", CFG_ID_MAX - 4, s->name,
				 (j + 1) % 100);
			for (char *p = s->ids[j]; *p; p++)
				if (*p == '.')
					*p = '_'; /* a node id cannot hold '.' (bpffs) */
			for (int o = 0; o <= i; o++)
				for (int q = 0; q < (o == i ? j : im->shards[o].nnodes); q++)
					if (!strcmp(im->shards[o].ids[q], s->ids[j])) {
						pr_warn("import: node id %s would name "
							"servers of %s and %s: rename a master\n",
							s->ids[j], im->shards[o].name, s->name);
						return -EINVAL;
					}
		}
	}
	return 0;
}

/* The host's IP for [node] address: itself, or what it resolves to. */
static int node_address(const char *host, char *buf, size_t len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	unsigned char a[16];
	int rc;

	if (inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1) {
		snprintf(buf, len, "%s", host);
		return 0;
	}
	rc = getaddrinfo(host, NULL, &hints, &ai);
	if (rc) {
		pr_warn("import: failed to resolve %s (a node's address must be an IP): "
			"%s\n",
			host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	rc = getnameinfo(ai->ai_addr, ai->ai_addrlen, buf, len, NULL, 0, NI_NUMERICHOST);
	freeaddrinfo(ai);
	return rc ? -EINVAL : 0;
}

/* offsetof-addressed values of a master, for settings read the same way. */
#define NUM_AT(m, off) ((const struct sc_num *)((const char *)(m) + (off)))
#define STR_AT(m, off) ((const struct sc_str *)((const char *)(m) + (off)))

/* A shard's value of a number setting: the first source (by epoch) that set it to
 * something else than Sentinel's default dflt; -1 when none did. */
static long long shard_num(const struct imp_shard *s, size_t off, long long dflt, int *k_out)
{
	for (int k = 0; k < s->nsrc; k++) {
		const struct sc_num *n = NUM_AT(s->src[k], off);

		if (n->line && n->v != dflt) {
			*k_out = k;
			return n->v;
		}
	}
	*k_out = -1;
	return -1;
}

static const char *shard_str(const struct imp_shard *s, size_t off, int *k_out)
{
	for (int k = 0; k < s->nsrc; k++) {
		const struct sc_str *v = STR_AT(s->src[k], off);

		if (v->line) {
			*k_out = k;
			return v->v;
		}
	}
	*k_out = -1;
	return "";
}

/* The index of the shard whose value most shards share (ties: the first). */
static int mode_of(int n, bool (*same)(const struct imp *, int, int, const void *),
		   const struct imp *im, const void *arg)
{
	int best = 0, best_n = 0;

	for (int i = 0; i < n; i++) {
		int c = 0;

		for (int j = 0; j < n; j++)
			c += same(im, i, j, arg);
		if (c > best_n) {
			best = i;
			best_n = c;
		}
	}
	return best;
}

static bool same_num(const struct imp *im, int a, int b, const void *arg)
{
	size_t off = ((const size_t *)arg)[0];
	long long dflt = (long long)((const size_t *)arg)[1];
	int k;

	return shard_num(&im->shards[a], off, dflt, &k) == shard_num(&im->shards[b], off, dflt, &k);
}

/* A timing setting: the [controller] key (when most masters set it), and the
 * SENTINEL SET for the masters that differ. */
static void emit_timing(struct imp *im, const char *opt, size_t off, long long dflt,
			const char *key, const char *meaning)
{
	size_t arg[2] = {off, (size_t)dflt};
	int m = mode_of(im->nshards, same_num, im, arg), k;
	long long v = shard_num(&im->shards[m], off, dflt, &k);
	char at[300];

	if (v < 0) {
		cmt(im, "%s: Sentinel's default (%lld); flatline's default %s applies (%s)", opt,
		    dflt, key, meaning);
	} else {
		cmt(im, "%s %lld (%s): %s", opt, v,
		    where(at, sizeof(at), im->shards[m].conf[k],
			  NUM_AT(im->shards[m].src[k], off)->line),
		    meaning);
		fprintf(im->out, "%s = %lld\n", key, v);
	}
	for (int i = 0; i < im->nshards; i++) {
		long long w = shard_num(&im->shards[i], off, dflt, &k);

		if (w == v)
			continue;
		cmt(im,
		    "- master %s has %s %lld%s: the cluster file holds one value; set it on the "
		    "controller (kept in <state_file>.runtime):",
		    im->shards[i].name, opt, w < 0 ? dflt : w,
		    w < 0 ? " (Sentinel's default)" : "");
		fprintf(im->out, ";   SENTINEL SET %s %s %lld\n", im->shards[i].name, opt,
			w < 0 ? dflt : w);
	}
}

static bool same_cred(const struct imp *im, int a, int b, const void *arg)
{
	int k;

	(void)arg;
	return !strcmp(shard_str(&im->shards[a], offsetof(struct sc_master, auth_user), &k),
		       shard_str(&im->shards[b], offsetof(struct sc_master, auth_user), &k)) &&
	       !strcmp(shard_str(&im->shards[a], offsetof(struct sc_master, auth_pass), &k),
		       shard_str(&im->shards[b], offsetof(struct sc_master, auth_pass), &k));
}

static bool any_source(const struct imp *im, bool live)
{
	for (int k = 0; k < im->nsrcs; k++)
		if (im->srcs[k]->live == live)
			return true;
	return false;
}

/* Shard i's credentials can be its [shard] user and password: it has a password (a
 * shard cannot say "none" where [redis] has one) and both fit a line. */
static bool own_cred_ok(const struct imp *im, int i)
{
	int k;
	const char *user = shard_str(&im->shards[i], offsetof(struct sc_master, auth_user), &k);
	const char *pass = shard_str(&im->shards[i], offsetof(struct sc_master, auth_pass), &k);

	return pass[0] && ini_ok(pass) && (!user[0] || ini_ok(user));
}

/* auth-pass / auth-user as [redis] user / password: the most masters' pair; a master
 * with another pair gets it as its [shard] user and password (emit_shard). */
static void emit_redis(struct imp *im)
{
	int m = mode_of(im->nshards, same_cred, im, NULL), k, ndiff = 0, nbad = 0;
	const char *user = shard_str(&im->shards[m], offsetof(struct sc_master, auth_user), &k);
	const char *pass = shard_str(&im->shards[m], offsetof(struct sc_master, auth_pass), &k);
	char list[1024] = "", bad[1024] = "";
	size_t off = 0, boff = 0;

	im->cred_mode = m;
	for (int i = 0; i < im->nshards; i++) {
		if (same_cred(im, i, m, NULL))
			continue;
		ndiff++;
		if (own_cred_ok(im, i)) {
			off += snprintf(list + off, off < sizeof(list) ? sizeof(list) - off : 0,
					" %s", im->shards[i].name);
		} else {
			nbad++;
			boff += snprintf(bad + boff, boff < sizeof(bad) ? sizeof(bad) - boff : 0,
					 " %s", im->shards[i].name);
		}
	}
	if (!user[0] && !pass[0] && !ndiff) {
		if (any_source(im, true) && !any_source(im, false))
			cmt(im,
			    "[redis]: a live Sentinel does not tell its auth-pass/auth-user: if "
			    "the servers need a password, add [redis] user and password (or "
			    "import the sentinel.conf files too)");
		fputc('\n', im->out);
		return;
	}
	fprintf(im->out, "[redis]\n");
	if (!user[0] && !pass[0])
		cmt(im, "most masters (%s first) have no auth-user / auth-pass",
		    im->shards[m].name);
	else
		cmt(im, "sentinel auth-user / auth-pass of master %s%s", im->shards[m].name,
		    ndiff ? " (and the masters that have the same)" : "");
	if ((user[0] && !ini_ok(user)) || (pass[0] && !ini_ok(pass))) {
		im->decision = true;
		cmt(im,
		    "- NEEDS A DECISION: the user or password of master %s cannot be written "
		    "here as it is (blanks at an end, ' ;', a control character, or longer "
		    "than 150): set [redis] user and password by hand",
		    im->shards[m].name);
	} else {
		if (user[0])
			fprintf(im->out, "user = %s\n", user);
		if (pass[0])
			fprintf(im->out, "password = %s\n", pass);
	}
	if (ndiff > nbad)
		cmt(im,
		    "masters with other credentials:%s: their own, in their [shard] user and "
		    "password",
		    list);
	if (nbad) {
		im->decision = true;
		cmt(im,
		    "- NEEDS A DECISION: masters whose credentials cannot be their [shard] user "
		    "and password:%s (no auth-pass where [redis] has one, or one that cannot "
		    "be written as it is): give their servers a password, or set it by hand.",
		    bad);
	}
	fputc('\n', im->out);
}

static bool same_str(const struct imp *im, int a, int b, const void *arg)
{
	size_t off = *(const size_t *)arg;
	int k;

	return !strcmp(shard_str(&im->shards[a], off, &k), shard_str(&im->shards[b], off, &k));
}

/* notification-script / client-reconfig-script as the [controller] keys. */
static void emit_script(struct imp *im, const char *opt, size_t off, const char *key)
{
	int m = mode_of(im->nshards, same_str, im, &off), k;
	const char *v = shard_str(&im->shards[m], off, &k);

	if (v[0] && (v[0] != '/' || !ini_ok(v))) {
		cmt(im,
		    "%s %s: not mapped, %s must be an absolute path the cluster file can "
		    "hold: set it by hand",
		    opt, v, key);
	} else if (v[0]) {
		cmt(im, "%s: run as Sentinel runs it (same arguments, retries and timeout)", opt);
		fprintf(im->out, "%s = %s\n", key, v);
	}
	for (int i = 0; i < im->nshards; i++)
		if (!same_str(im, i, m, &off))
			cmt(im,
			    "master %s has another %s ('%s'): the controller runs one for every "
			    "shard (the shard is an argument)",
			    im->shards[i].name, opt, shard_str(&im->shards[i], off, &k));
}

static void emit_controller(struct imp *im)
{
	fprintf(im->out, "[controller]\n");
	cmt(im, "listen: flatline's default (127.0.0.1:26379) applies; beside a running Sentinel "
		"on this host, choose another address or port");
	emit_timing(im, "down-after-milliseconds", offsetof(struct sc_master, down_after_ms),
		    SC_DEFAULT_DOWN_AFTER_MS, "node_down_after_ms",
		    "a node whose agent has not reported for this long is stale, the host-failure "
		    "path; a dead or hung server is seen by its agent without this timer");
	emit_timing(im, "failover-timeout", offsetof(struct sc_master, failover_timeout_ms),
		    SC_DEFAULT_FAILOVER_MS, "failover_block_ms",
		    "no second automatic failover of a shard within this window");
	emit_script(im, "notification-script", offsetof(struct sc_master, notification_script),
		    "notification_script");
	emit_script(im, "client-reconfig-script",
		    offsetof(struct sc_master, client_reconfig_script), "client_reconfig_script");
	for (int k = 0; k < im->nsrcs; k++) {
		const struct sc_str *rp = &im->srcs[k]->requirepass;

		if (!rp->line)
			continue;
		if (strlen(rp->v) >= 16 && ini_ok(rp->v) && !strchr(rp->v, ';')) {
			cmt(im,
			    "requirepass of the Sentinel (%s): the password clients give the "
			    "Sentinel API",
			    im->srcs[k]->name);
			fprintf(im->out, "requirepass = %s\n", rp->v);
		} else {
			cmt(im,
			    "requirepass of the Sentinel (%s) not mapped: [controller] "
			    "requirepass needs at least 16 bytes (no ';'): choose one and give "
			    "it to the clients",
			    im->srcs[k]->name);
		}
		break;
	}
	fputc('\n', im->out);
}

static int emit_shard(struct imp *im, int i)
{
	const struct imp_shard *s = &im->shards[i];
	const struct sc_master *b = s->src[0];
	bool unknown_prio = false;
	char at[300], addr[64];

	for (int j = 0; j < s->nnodes; j++) {
		const struct imp_node *n = &s->nodes[j];

		if (node_address(n->host, addr, sizeof(addr)))
			return -EINVAL;
		fprintf(im->out, "[node \"%s\"]\n", s->ids[j]);
		if (j == 0)
			cmt(im, "the primary as %s sees it (config-epoch %lld)",
			    where(at, sizeof(at), s->conf[0], b->line), b->config_epoch.v);
		fprintf(im->out, "address = %s\n", addr);
		fprintf(im->out, strchr(n->host, ':') ? "redis = [%s]:%d\n" : "redis = %s:%d\n",
			n->host, n->port);
		if (n->priority >= 0)
			fprintf(im->out, "priority = %d\n", n->priority);
		else
			unknown_prio = true;
		fputc('\n', im->out);
	}
	fprintf(im->out, "[shard \"%s\"]\n", s->name);
	cmt(im,
	    "sentinel monitor %s (%s), the servers as Sentinel reports them (announced: "
	    "replica-announce-ip/port)",
	    s->name, where(at, sizeof(at), s->conf[0], b->line));
	if (unknown_prio)
		cmt(im,
		    "priority: %s; the default (100) applies, and a server's own "
		    "replica-priority 0 still keeps it from being promoted",
		    any_source(im, false) ? "sentinel.conf's monitor and known-replica lines "
					    "carry no replica-priority"
					  : "SENTINEL MASTERS does not report the primary's "
					    "replica-priority");
	fprintf(im->out, "nodes =");
	for (int j = 0; j < s->nnodes; j++)
		fprintf(im->out, " %s", s->ids[j]);
	fputc('\n', im->out);
	if (i != im->cred_mode && !same_cred(im, i, im->cred_mode, NULL) && own_cred_ok(im, i)) {
		int k;
		const char *user = shard_str(s, offsetof(struct sc_master, auth_user), &k);

		cmt(im, "sentinel auth-user / auth-pass of master %s (not [redis]'s)", s->name);
		if (user[0])
			fprintf(im->out, "user = %s\n", user);
		fprintf(im->out, "password = %s\n",
			shard_str(s, offsetof(struct sc_master, auth_pass), &k));
	}
	fputc('\n', im->out);
	return 0;
}

/* Why a directive of a sentinel.conf is not mapped; NULL: the Sentinel process's own. */
static const char *reason(const char *what)
{
	static const struct {
		const char *what, *why;
	} r[] = {
	    {"sentinel myid", "the Sentinel's identity; the controller has its own "
			      "(<state_file>.myid)"},
	    {"sentinel current-epoch", "Sentinel's epoch; the controller keeps its own epochs in "
				       "its state file"},
	    {"sentinel sentinel-user", "how Sentinels log in to each other; controllers do not "
				       "talk to Sentinels"},
	    {"sentinel sentinel-pass", "how Sentinels log in to each other; controllers do not "
				       "talk to Sentinels"},
	    {"sentinel announce-hostnames", "the controller answers clients with the host its "
					    "[node] redis key names"},
	    {"sentinel deny-scripts-reconfig", "the controller always refuses SENTINEL SET of a "
					       "script (Sentinel's default)"},
	    {"include", "not followed: give the included file as another FILE"},
	    {"user", "the Sentinel's ACL users: write [user \"NAME\"] sections for the clients "
		     "that log in (flatline.conf(5))"},
	    {"rename-command", "renames the Sentinel's own commands; the controller's names are "
			       "Sentinel's"},
	};

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (!strcmp(r[i].what, what))
			return r[i].why;
	if (!strncmp(what, "tls", 3))
		return "the Sentinel's TLS: [controller] tls_listen, tls_cert, tls_key, tls_ca";
	return NULL;
}

static void emit_sentinels(struct imp *im)
{
	char list[2048] = "", one[300];
	size_t off = 0;

	for (int k = 0; k < im->nsrcs; k++) {
		const struct sc_conf *c = im->srcs[k];
		const char *host = c->announce_ip.line ? c->announce_ip.v
				   : c->bind.line      ? c->bind.v
						       : "(its host)";
		long long port = c->announce_port.line && c->announce_port.v ? c->announce_port.v
				 : c->port.line				     ? c->port.v
									     : 26379;

		snprintf(one, sizeof(one), strchr(host, ':') ? " [%s]:%lld" : " %s:%lld", host,
			 port);
		if (!strstr(list, one) && off < sizeof(list))
			off += snprintf(list + off, sizeof(list) - off, "%s", one);
		for (int i = 0; i < c->nmasters; i++)
			for (int j = 0; j < c->masters[i].nsentinels; j++) {
				const struct sc_addr *a = &c->masters[i].sentinels[j];

				snprintf(one, sizeof(one),
					 strchr(a->host, ':') ? " [%s]:%d" : " %s:%d", a->host,
					 a->port);
				if (!strstr(list, one) && off < sizeof(list))
					off += snprintf(list + off, sizeof(list) - off, "%s", one);
			}
	}
	cmt(im,
	    "The Sentinels (sentinel announce-ip/announce-port, known-sentinel, SENTINEL "
	    "SENTINELS):%s. flatline's controllers replace them: clients that know these "
	    "addresses keep working when a controller serves one of them, or when the "
	    "controller's [controller] listen is added to their list (docs/sentinel.md).",
	    list);
}

static void emit_unmapped(struct imp *im)
{
	char gen[1024] = "", at[300];
	size_t goff = 0;

	cmt(im, "Not mapped, and why:");
	for (int i = 0; i < im->nshards; i++) {
		const struct imp_shard *s = &im->shards[i];
		int k;
		long long v;

		if (s->src[0]->quorum)
			cmt(im,
			    "- quorum %d of %s: flatline's rules differ: the kernel sees a "
			    "process die, and a host is down when its agent is silent, a peer "
			    "says it is unreachable and none contradicts (the agents are the "
			    "quorum)",
			    s->src[0]->quorum, s->name);
		v = shard_num(s, offsetof(struct sc_master, parallel_syncs), SC_DEFAULT_PARALLEL,
			      &k);
		if (v >= 0)
			cmt(im,
			    "- parallel-syncs %lld of %s: no cluster-file key; the controller "
			    "repoints every replica at once after a promotion (SENTINEL SET %s "
			    "parallel-syncs %lld keeps and shows it)",
			    v, s->name, s->name, v);
		v = shard_num(s, offsetof(struct sc_master, reboot_down_after_ms), 0, &k);
		if (v >= 0)
			cmt(im,
			    "- master-reboot-down-after-period %lld of %s: the agent sees a "
			    "restart in the kernel (proc_exit), and the shard fails over on the "
			    "exit",
			    v, s->name);
		for (k = 0; k < s->nsrc; k++) {
			if (!s->src[k]->nrenamed)
				continue;
			im->decision = true;
			cmt(im,
			    "- NEEDS A DECISION: sentinel rename-command of %s (%s: %s): flatline "
			    "sends INFO, ROLE, REPLICAOF, CONFIG, CLIENT, MULTI/EXEC under their "
			    "own names; the servers must accept them",
			    s->name, where(at, sizeof(at), s->conf[k], s->src[k]->renamed_line),
			    s->src[k]->renamed);
			break;
		}
	}
	cmt(im, "- config-epoch, leader-epoch: Sentinel's state; the controller keeps its own "
		"epochs in its state file and learns the primary from the servers");
	/* Each directive once, where it is first, and how many other lines have it. */
	for (int k = 0; k < im->nsrcs; k++) {
		const struct sc_conf *c = im->srcs[k];

		for (int i = 0; i < c->nnotes; i++) {
			const char *what = c->notes[i].what, *why = reason(what);
			char more[32] = "";
			bool seen = false;
			int n = 0;

			for (int k2 = 0; k2 <= k && !seen; k2++)
				for (int i2 = 0; i2 < (k2 == k ? i : im->srcs[k2]->nnotes); i2++)
					seen |= !strcmp(im->srcs[k2]->notes[i2].what, what);
			if (seen)
				continue;
			for (int k2 = k; k2 < im->nsrcs; k2++)
				for (int i2 = k2 == k ? i + 1 : 0; i2 < im->srcs[k2]->nnotes; i2++)
					n += !strcmp(im->srcs[k2]->notes[i2].what, what);
			if (n)
				snprintf(more, sizeof(more), " and %d more", n);
			where(at, sizeof(at), c, c->notes[i].line);
			if (why)
				cmt(im, "- %s (%s%s): %s", what, at, more, why);
			else if (goff < sizeof(gen))
				goff += snprintf(gen + goff, sizeof(gen) - goff, " %s (%s%s)", what,
						 at, more);
		}
		if (c->notes_dropped)
			cmt(im, "- and %d more lines of %s", c->notes_dropped, c->name);
	}
	if (gen[0])
		cmt(im,
		    "- options of the Sentinel process itself (logging, daemon, files), "
		    "nothing to map:%s",
		    gen);
	emit_sentinels(im);
}

int import_emit(struct imp *im, const char *secret, char **text, size_t *len)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int rc = 0;

	im->out = open_memstream(text, len);
	if (!im->out)
		return -ENOMEM;
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	cmt(im, "flatline cluster file written by `flatline import` at %s from:", stamp);
	for (int k = 0; k < im->nsrcs; k++)
		cmt(im, "  %s%s", im->srcs[k]->name, im->srcs[k]->live ? " (a live Sentinel)" : "");
	cmt(im, "Review it (the comments say what was mapped and what was not), then "
		"`flatline check -c FILE`.\n");
	fprintf(im->out, "[cluster]\nname = %s\n",
		im->nshards == 1 ? im->shards[0].name : "imported");
	cmt(im, "a fresh secret (getrandom): node keys derive from it; keep the file mode 0600");
	fprintf(im->out, "secret = %s\n\n", secret);
	emit_controller(im);
	emit_redis(im);
	for (int i = 0; i < im->nshards && !rc; i++)
		rc = emit_shard(im, i);
	if (!rc)
		emit_unmapped(im);
	if (fclose(im->out) && !rc)
		rc = -ENOMEM;
	im->out = NULL;
	return rc;
}
