// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Runtime configuration through Sentinel's commands: SENTINEL SET, CONFIG GET|SET,
 * DEBUG, FLUSHCONFIG, RESET, SIMULATE-FAILURE, INFO-CACHE, PENDING-SCRIPTS, HELP,
 * IS-MASTER-DOWN-BY-ADDR, and MONITOR/REMOVE (the topology stays the cluster
 * file's). SET values are per master (shard), as Sentinel's. What is set is kept in
 * <state_file>.runtime (write, fsync, rename), or in HA mode in etcd
 * (<prefix>runtime/<master or *>/<key>, applied by every controller, a new leader
 * included), and applied again at start over the cluster file's values: the runtime
 * value wins until it is set again or the file (key) removed; `flatline status` lists
 * it. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"

/* A setting: its Sentinel name, where it lives, and its bounds. SET ones are per
 * master (shard), as Sentinel's; DEBUG and CONFIG ones are the controller's. */
enum rt_kind { RT_INT, RT_STR, RT_SECRET };
enum rt_scope { RT_MASTER, RT_DEBUG, RT_CONFIG };
struct rt_key {
	const char *name;
	enum rt_kind kind;
	int min, max;
	enum rt_scope scope;
};

static const struct rt_key keys[] = {
    /* SENTINEL SET <master> ... */
    {"down-after-milliseconds", RT_INT, 1, 3600000, RT_MASTER},
    {"failover-timeout", RT_INT, 1, 86400000, RT_MASTER},
    {"quorum", RT_INT, 1, 1, RT_MASTER},
    {"parallel-syncs", RT_INT, 1, 1000000, RT_MASTER},
    {"auth-pass", RT_SECRET, 0, 0, RT_MASTER},
    {"auth-user", RT_STR, 0, 0, RT_MASTER},
    /* SENTINEL DEBUG */
    {"tilt-period", RT_INT, 0, 3600000, RT_DEBUG},
    {"slave-reconf-timeout", RT_INT, 1, 600000, RT_DEBUG},
    {"script-max-runtime", RT_INT, 1, 3600000, RT_DEBUG},
    {"script-retry-delay", RT_INT, 0, 3600000, RT_DEBUG},
    /* SENTINEL CONFIG */
    {"resolve-hostnames", RT_STR, 0, 0, RT_CONFIG},
    {"announce-hostnames", RT_STR, 0, 0, RT_CONFIG},
    {"announce-ip", RT_STR, 0, 0, RT_CONFIG},
    {"announce-port", RT_INT, 0, 65535, RT_CONFIG},
    {"loglevel", RT_STR, 0, 0, RT_CONFIG},
    {"sentinel-user", RT_STR, 0, 0, RT_CONFIG},
    {"sentinel-pass", RT_SECRET, 0, 0, RT_CONFIG},
};
#define NKEYS	   (int)(sizeof(keys) / sizeof(keys[0]))
#define RT_VAL_MAX 256

typedef char rt_vals[NKEYS][RT_VAL_MAX]; /* "" = not set at runtime */
static rt_vals values;			 /* DEBUG and CONFIG */
static rt_vals *mvalues;		 /* SET, one set per shard (fo.shards order) */
static int nmvalues;
static unsigned simulate_flags; /* SIMULATE-FAILURE */
#define SIM_CRASH_AFTER_ELECTION  (1u << 0)
#define SIM_CRASH_AFTER_PROMOTION (1u << 1)

static int key_idx(const char *name)
{
	for (int i = 0; i < NKEYS; i++)
		if (!strcasecmp(keys[i].name, name))
			return i;
	return -1;
}

static int ensure_mvalues(const struct ctl *c)
{
	if (mvalues && nmvalues == c->fo.nshards)
		return 0;
	free(mvalues);
	nmvalues = 0;
	mvalues = calloc(c->fo.nshards ? c->fo.nshards : 1, sizeof(*mvalues));
	if (!mvalues)
		return -ENOMEM;
	nmvalues = c->fo.nshards;
	return 0;
}

/* The value set at runtime for key i (of shard for a SET key), "" if none. */
static const char *set_value(int shard, int i)
{
	if (keys[i].scope != RT_MASTER)
		return values[i];
	return mvalues && shard >= 0 && shard < nmvalues ? mvalues[shard][i] : "";
}

void ctl_runtime_auth(const struct ctl *c, int shard, const char **user, const char **pass)
{
	const char *u = set_value(shard, key_idx("auth-user"));
	const char *p = set_value(shard, key_idx("auth-pass"));

	*user = u[0] ? u : c->cfg->redis.user;
	*pass = p[0] ? p : c->cfg->redis.password;
}

/* The value in effect, as text (shard: for a SET key). */
static void current(struct ctl *c, int shard, int i, char *buf, size_t len)
{
	const char *n = keys[i].name, *u, *p;

	if (!strcmp(n, "down-after-milliseconds"))
		snprintf(buf, len, "%d", fo_down_after_ms(&c->fo, shard));
	else if (!strcmp(n, "failover-timeout"))
		snprintf(buf, len, "%d",
			 shard >= 0 ? fo_block_ms(&c->fo, &c->fo.shards[shard])
				    : c->fo.failover_block_ms);
	else if (!strcmp(n, "tilt-period"))
		snprintf(buf, len, "%d", c->fo.tilt_ms);
	else if (!strcmp(n, "slave-reconf-timeout"))
		snprintf(buf, len, "%d", c->fo.repoint_timeout_ms);
	else if (!strcmp(n, "script-max-runtime"))
		snprintf(buf, len, "%d", ctl_hooks_max_runtime_ms());
	else if (!strcmp(n, "script-retry-delay"))
		snprintf(buf, len, "%d", ctl_hooks_retry_delay_ms());
	else if (!strcmp(n, "auth-user") || !strcmp(n, "auth-pass")) {
		ctl_runtime_auth(c, shard, &u, &p);
		snprintf(buf, len, "%s", !strcmp(n, "auth-user") ? u : p);
	} else if (set_value(shard, i)[0])
		snprintf(buf, len, "%s", set_value(shard, i));
	else if (!strcmp(n, "quorum") || !strcmp(n, "parallel-syncs"))
		snprintf(buf, len, "1");
	else if (!strcmp(n, "resolve-hostnames") || !strcmp(n, "announce-hostnames"))
		snprintf(buf, len, "no");
	else if (!strcmp(n, "announce-port"))
		snprintf(buf, len, "0");
	else if (!strcmp(n, "loglevel"))
		snprintf(buf, len, "notice");
	else
		buf[0] = '\0';
}

/* Checks one value; -EINVAL with why. */
static int check(int i, const char *v, long long *num, char *why, size_t whylen)
{
	const struct rt_key *k = &keys[i];

	*num = 0;
	if (strlen(v) >= RT_VAL_MAX || strpbrk(v, "\r\n")) {
		snprintf(why, whylen, "Invalid argument '%.40s' for SENTINEL SET '%s'", v, k->name);
		return -EINVAL;
	}
	if (k->kind == RT_INT) {
		char *end;

		*num = strtoll(v, &end, 10);
		if (!*v || *end || *num < k->min || *num > k->max) {
			snprintf(why, whylen,
				 "Invalid argument '%.40s' for SENTINEL SET '%s' "
				 "(%d to %d)",
				 v, k->name, k->min, k->max);
			return -EINVAL;
		}
	}
	if ((!strcmp(k->name, "resolve-hostnames") || !strcmp(k->name, "announce-hostnames")) &&
	    strcasecmp(v, "yes") && strcasecmp(v, "no")) {
		snprintf(why, whylen, "argument must be 'yes' or 'no'");
		return -EINVAL;
	}
	if (!strcmp(k->name, "loglevel") && strcasecmp(v, "debug") && strcasecmp(v, "verbose") &&
	    strcasecmp(v, "notice") && strcasecmp(v, "warning") && strcasecmp(v, "nothing")) {
		snprintf(why, whylen,
			 "argument(s) must be one of the following: debug, verbose, "
			 "notice, warning, nothing");
		return -EINVAL;
	}
	return 0;
}

/* Checks and applies one value: a SET key to shard (-1: every shard, a line of an
 * older runtime file), the others to the controller. -EINVAL with why. */
static int apply(struct ctl *c, int shard, int i, const char *v, char *why, size_t whylen)
{
	const struct rt_key *k = &keys[i];
	long long n;

	if (check(i, v, &n, why, whylen))
		return -EINVAL;
	if (k->scope == RT_MASTER) {
		if (ensure_mvalues(c)) {
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		for (int j = 0; j < c->fo.nshards; j++) {
			if (shard >= 0 && j != shard)
				continue;
			if (!strcmp(k->name, "down-after-milliseconds"))
				c->fo.shards[j].down_after_ms = (int)n;
			else if (!strcmp(k->name, "failover-timeout"))
				c->fo.shards[j].block_ms = (int)n;
			/* auth-pass/auth-user: from the shard's servers' next connect on */
			snprintf(mvalues[j][i], RT_VAL_MAX, "%s", v);
		}
		return 0;
	}
	if (!strcmp(k->name, "tilt-period"))
		c->fo.tilt_ms = (int)n;
	else if (!strcmp(k->name, "slave-reconf-timeout"))
		c->fo.repoint_timeout_ms = (int)n;
	else if (!strcmp(k->name, "script-max-runtime"))
		ctl_hooks_set_times((int)n, -1);
	else if (!strcmp(k->name, "script-retry-delay"))
		ctl_hooks_set_times(-1, (int)n);
	snprintf(values[i], RT_VAL_MAX, "%s", v);
	return 0;
}

static void rt_path(const struct ctl *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s.runtime", c->state_file);
}

/* Every runtime value, a line each: "master <name> <key> <value>" or "<key> <value>". */
static void write_lines(const struct ctl *c, FILE *f)
{
	for (int i = 0; i < NKEYS; i++)
		if (keys[i].scope != RT_MASTER && values[i][0])
			fprintf(f, "%s %s\n", keys[i].name, values[i]);
	for (int j = 0; j < nmvalues && j < c->fo.nshards; j++)
		for (int i = 0; i < NKEYS; i++)
			if (mvalues[j][i][0])
				fprintf(f, "master %s %s %s\n", c->fo.shards[j].name, keys[i].name,
					mvalues[j][i]);
}

/* Writes every runtime value: write (0600), fsync, rename, fsync of the directory. */
static int flush(struct ctl *c, char *why, size_t whylen)
{
	char path[300], tmp[310];
	FILE *f = NULL;
	int rc = 0, fd;

	if (!c->state_file[0]) {
		snprintf(why, whylen, "no state_file: runtime changes are not kept");
		return -ENOENT;
	}
	rt_path(c, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* It holds passwords (auth-pass, sentinel-pass): 0600 whatever the umask,
	 * also when a .tmp was left with another mode (issue 25). */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fchmod(fd, 0600) || !(f = fdopen(fd, "w"))) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		errno = err;
		goto fail;
	}
	fprintf(f, "# flatline controller: set at runtime (SENTINEL SET/CONFIG SET/DEBUG); "
		   "wins over the cluster file\n");
	write_lines(c, f);
	if (fflush(f) || fsync(fileno(f)))
		goto fail;
	fclose(f);
	f = NULL;
	if (rename(tmp, path))
		goto fail;
	/* The rename itself lasts only once the directory is on disk too. */
	snprintf(tmp, sizeof(tmp), "%s", path);
	fd = open(dirname(tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd)) {
		rc = -errno;
		snprintf(why, whylen, "failed to sync the directory of %.180s: %s", path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	close(fd);
	return 0;
fail:
	rc = -errno;
	snprintf(why, whylen, "failed to write %.180s: %s", tmp, strerror(errno));
	if (f)
		fclose(f);
	return rc;
}

/* One line of the runtime file, or one etcd key's "scope key" and value: applied.
 * -EINVAL with why. */
static int apply_line(struct ctl *c, char *line, const char **shown, char *why, size_t whylen)
{
	char *v, *name = line;
	int i, shard = -1;

	if (!strncmp(line, "master ", 7)) {
		char *sp = strchr(line + 7, ' ');
		struct fo_shard *s;

		if (!sp) {
			snprintf(why, whylen, "no setting");
			return -EINVAL;
		}
		*sp = '\0';
		s = fo_find_shard(&c->fo, line + 7);
		if (!s) {
			snprintf(why, whylen, "no shard '%.60s' in the cluster file", line + 7);
			return -ENOENT;
		}
		shard = s->idx;
		name = sp + 1;
	}
	v = strchr(name, ' ');
	if (v)
		*v++ = '\0';
	i = key_idx(name);
	if (i < 0 || !v) {
		snprintf(why, whylen, "%s", i < 0 ? "unknown setting" : "no value");
		return -EINVAL;
	}
	if (shard >= 0 && keys[i].scope != RT_MASTER) {
		snprintf(why, whylen, "'%s' is not a per-master setting", name);
		return -EINVAL;
	}
	*shown = keys[i].kind == RT_SECRET ? "(secret)" : v;
	return apply(c, shard, i, v, why, whylen);
}

int ctl_runtime_load(struct ctl *c)
{
	char path[300], line[600], why[200];
	const char *shown;
	FILE *f;
	int ln = 0, n = 0;

	if (!c->state_file[0])
		return 0;
	rt_path(c, path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		char copy[600];

		ln++;
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		snprintf(copy, sizeof(copy), "%s", line);
		if (apply_line(c, line, &shown, why, sizeof(why))) {
			pr_warn("%s:%d: failed to apply '%.80s': %s\n", path, ln, copy, why);
			continue;
		}
		pr_info("%s: %s (set at runtime, over the cluster file)\n", path,
			strstr(copy, "pass") ? "a password" : copy);
		n++;
	}
	fclose(f);
	return n;
}

/* HA mode: one setting from etcd (<prefix>runtime/<scope>/<key>, scope "*" or the
 * shard), at start and whenever any controller sets one. */
void ctl_runtime_from_etcd(struct ctl *c, const char *rel, const char *val)
{
	char line[600], why[200];
	const char *slash = strchr(rel, '/'), *shown;

	if (!slash || !val)
		return;
	if (slash - rel == 1 && rel[0] == '*')
		snprintf(line, sizeof(line), "%s %s", slash + 1, val);
	else
		snprintf(line, sizeof(line), "master %.*s %s %s", (int)(slash - rel), rel,
			 slash + 1, val);
	if (apply_line(c, line, &shown, why, sizeof(why)))
		pr_warn("failed to apply runtime/%s from etcd: %s\n", rel, why);
	else
		pr_info("etcd: runtime/%s = %s (set at runtime, over the cluster file)\n", rel,
			shown);
}

void ctl_runtime_status(struct ctl *c, struct evbuffer *b)
{
	bool any = false;

	for (int j = -1; j < nmvalues && j < c->fo.nshards; j++) {
		for (int i = 0; i < NKEYS; i++) {
			const char *v =
			    j < 0 ? (keys[i].scope == RT_MASTER ? "" : values[i]) : mvalues[j][i];

			if (!v[0])
				continue;
			if (!any) {
				if (c->ha)
					evbuffer_add_printf(
					    b,
					    "\nset at runtime (etcd %sruntime/, wins "
					    "over the cluster file):",
					    c->cfg->etcd.prefix);
				else
					evbuffer_add_printf(
					    b,
					    "\nset at runtime (%s.runtime, wins over "
					    "the cluster file):",
					    c->state_file);
			}
			any = true;
			evbuffer_add_printf(b, " %s%s%s=%s", j < 0 ? "" : c->fo.shards[j].name,
					    j < 0 ? "" : ":", keys[i].name,
					    keys[i].kind == RT_SECRET ? "(secret)" : v);
		}
	}
	if (any)
		evbuffer_add_printf(b, "\n");
}

void ctl_runtime_event(struct ctl *c, const char *kind)
{
	(void)c;
	if (((simulate_flags & SIM_CRASH_AFTER_ELECTION) && !strcmp(kind, "failover_start")) ||
	    ((simulate_flags & SIM_CRASH_AFTER_PROMOTION) && !strcmp(kind, "promoted"))) {
		pr_warn("SIMULATE-FAILURE: exiting after %s\n", kind);
		_exit(99);
	}
}

unsigned ctl_runtime_simulate_flags(void)
{
	return simulate_flags;
}

static void kv(struct evbuffer *o, const char *k, const char *v)
{
	resp_str(o, k);
	resp_str(o, v);
}

/* HA mode: a SET answered once etcd has every value (or one failed). */
struct rt_put {
	struct ctl *c;
	unsigned long long conn;
	int left, err;
	char msg[160];
};

static struct ctl_conn *conn_by_id(struct ctl *c, unsigned long long id)
{
	for (struct ctl_conn *k = c->conns; k; k = k->next)
		if (k->id == id)
			return k;
	return NULL;
}

static void on_rt_put(void *ctx, int err, const char *msg)
{
	struct rt_put *p = ctx;
	struct ctl_conn *k;

	if (err && !p->err) {
		p->err = err;
		snprintf(p->msg, sizeof(p->msg), "%s", msg ? msg : strerror(-err));
	}
	if (--p->left > 0)
		return;
	k = conn_by_id(p->c, p->conn);
	if (k) {
		struct evbuffer *out = bufferevent_get_output(k->bev);

		if (p->err) {
			char e[240];

			snprintf(e, sizeof(e), "ERR failed to write the setting to etcd: %s",
				 p->msg);
			resp_error_reply(out, e);
		} else {
			resp_status(out, "OK");
		}
		ctl_conn_resume(k);
	}
	free(p);
}

/* SENTINEL SET <master> k v ..., SENTINEL CONFIG SET k v ..., SENTINEL DEBUG k v ...:
 * every pair checked first, then applied and kept — in <state_file>.runtime, or in
 * HA mode in etcd (<prefix>runtime/<master or *>/<key>), from where every controller
 * applies it (ctl_runtime_from_etcd); the answer waits for etcd. */
static void rt_set(struct ctl_conn *k, struct resp_cmd *cmd, enum rt_scope scope)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	int first = scope == RT_DEBUG ? 2 : 3, shard = -1;
	const char *what = scope == RT_MASTER ? "SET" : scope == RT_CONFIG ? "CONFIG SET" : "DEBUG";
	char why[240], e[260], was[NKEYS][RT_VAL_MAX];
	struct rt_put *p = NULL;
	long long num;

	if (scope == RT_MASTER) {
		struct fo_shard *s = fo_find_shard(&c->fo, cmd->argv[2]);

		if (!s) {
			resp_error_reply(out, "ERR No such master with that name");
			return;
		}
		shard = s->idx;
	}
	if (cmd->argc < first + 2 || (cmd->argc - first) % 2) {
		snprintf(e, sizeof(e), "ERR wrong number of arguments for 'sentinel %s' command",
			 what);
		resp_error_reply(out, e);
		return;
	}
	for (int a = first; a + 1 < cmd->argc; a += 2) {
		int i = key_idx(cmd->argv[a]);

		if (scope == RT_MASTER && (!strcasecmp(cmd->argv[a], "notification-script") ||
					   !strcasecmp(cmd->argv[a], "client-reconfig-script"))) {
			/* Sentinel's default (sentinel deny-scripts-reconfig yes). */
			resp_error_reply(out, "ERR Reconfiguration of scripts path is denied for "
					      "security reasons. Check the deny-scripts-reconfig "
					      "configuration directive in your config file.");
			return;
		}
		if (i < 0 || keys[i].scope != scope) {
			snprintf(e, sizeof(e), "ERR Invalid argument '%.60s' to SENTINEL %s",
				 cmd->argv[a], what);
			resp_error_reply(out, e);
			return;
		}
		if (check(i, cmd->argv[a + 1], &num, why, sizeof(why))) {
			snprintf(e, sizeof(e), "ERR %s", why);
			resp_error_reply(out, e);
			return;
		}
	}
	if (c->ha) {
		p = calloc(1, sizeof(*p));
		if (!p) {
			resp_error_reply(out, "ERR out of memory");
			return;
		}
		p->c = c;
		p->conn = k->id;
		p->left = 1; /* until every put is sent */
	}
	for (int a = first; a + 1 < cmd->argc; a += 2) {
		int i = key_idx(cmd->argv[a]);

		current(c, shard, i, was[i], sizeof(was[i]));
		if (apply(c, shard, i, cmd->argv[a + 1], why, sizeof(why))) {
			if (p) {
				/* Puts of earlier pairs may be in flight with p: the
				 * answer (this error) waits for them; p is freed by
				 * the last on_rt_put, never here. */
				k->flags |= CTL_C_WAITING;
				on_rt_put(p, -EINVAL, why);
				return;
			}
			snprintf(e, sizeof(e), "ERR %s", why);
			resp_error_reply(out, e);
			return;
		}
		if (p) {
			char rel[300];
			int rc;

			snprintf(rel, sizeof(rel), "runtime/%s/%s",
				 shard >= 0 ? c->fo.shards[shard].name : "*", keys[i].name);
			p->left++;
			rc = ctl_ha_put_plain(c, rel, cmd->argv[a + 1], on_rt_put, p);
			if (rc)
				on_rt_put(p, rc, "etcd not reachable");
		}
	}
	for (int a = first; a + 1 < cmd->argc; a += 2) {
		struct evrec r;
		int i = key_idx(cmd->argv[a]);
		char now[RT_VAL_MAX];

		current(c, shard, i, now, sizeof(now));
		evrec_begin(&r, NULL, "controller", "config_set");
		if (shard >= 0)
			evrec_str(&r, "shard", c->fo.shards[shard].name);
		evrec_str(&r, "setting", keys[i].name);
		evrec_str(&r, "value", keys[i].kind == RT_SECRET ? "(secret)" : now);
		evrec_str(&r, "was", keys[i].kind == RT_SECRET ? "(secret)" : was[i]);
		evrec_str(&r, "by", k->peer);
		ctl_log(c, &r);
	}
	if (p) {
		k->flags |= CTL_C_WAITING;
		on_rt_put(p, 0, NULL); /* the "until sent" count: answers if all are done */
		return;
	}
	if (flush(c, why, sizeof(why))) {
		if (scope == RT_DEBUG) { /* Sentinel keeps none of them: applied all the same */
			pr_warn("SENTINEL DEBUG: %s\n", why);
			resp_status(out, "OK");
			return;
		}
		snprintf(e, sizeof(e), "ERR %s", why);
		resp_error_reply(out, e);
		return;
	}
	resp_status(out, "OK");
}

/* SENTINEL CONFIG GET: a password (sentinel-pass) only to an admin (the cluster
 * secret's AUTH, or a user with the admin category); to anyone else it is not
 * there at all (issue 25: read users were given it). */
static void rt_config_get(struct ctl_conn *k, const char *pattern)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	bool admin = (k->flags & CTL_C_LOGIN) && (k->perms & ACL_ADMIN);
	int n = 0;
	char v[RT_VAL_MAX];

#define SHOWN(i)                                                                                   \
	(keys[i].scope == RT_CONFIG && (admin || keys[i].kind != RT_SECRET) &&                     \
	 !fnmatch(pattern, keys[i].name, FNM_CASEFOLD))
	for (int i = 0; i < NKEYS; i++)
		n += SHOWN(i);
	ctl_reply_map(k, out, n);
	for (int i = 0; i < NKEYS; i++) {
		if (!SHOWN(i))
			continue;
		current(c, -1, i, v, sizeof(v));
		kv(out, keys[i].name, v);
	}
#undef SHOWN
}

static void rt_debug(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	int n = 0;
	char v[RT_VAL_MAX], b[32];

	if (cmd->argc > 2) {
		rt_set(k, cmd, RT_DEBUG);
		return;
	}
	for (int i = 0; i < NKEYS; i++)
		n += keys[i].scope == RT_DEBUG;
	ctl_reply_map(k, out, n + 2);
	for (int i = 0; i < NKEYS; i++) {
		if (keys[i].scope != RT_DEBUG)
			continue;
		current(c, -1, i, v, sizeof(v));
		kv(out, keys[i].name, v);
	}
	snprintf(b, sizeof(b), "%d", c->fo.node_down_after_ms);
	kv(out, "default-down-after", b);
	snprintf(b, sizeof(b), "%d", c->fo.failover_block_ms);
	kv(out, "default-failover-timeout", b);
}

/* SENTINEL INFO-CACHE <master> ...: per master, [name, [[age ms, INFO text]...]]
 * with the replication section flatline keeps for each node. */
static void rt_info_cache(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	int n = 0;

	for (int i = 0; i < c->fo.nshards; i++) {
		bool want = cmd->argc == 2;

		for (int a = 2; a < cmd->argc; a++)
			want |= !strcmp(cmd->argv[a], c->fo.shards[i].name);
		n += want;
	}
	resp_array(out, 2L * n);
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		bool want = cmd->argc == 2;

		for (int a = 2; a < cmd->argc; a++)
			want |= !strcmp(cmd->argv[a], s->name);
		if (!want)
			continue;
		resp_str(out, s->name);
		resp_array(out, s->nnodes);
		for (int j = 0; j < s->nnodes; j++) {
			const struct fo_node *nd = &c->fo.nodes[s->nodes[j]];
			const struct info_repl *r = nd->info_ok ? &nd->info : &nd->rep.repl;
			long long at = nd->info_ok ? nd->info_ms : nd->last_report_ms;
			char t[512];

			resp_array(out, 2);
			resp_int(out, at ? fl_mono_ms() - at : 0);
			snprintf(t, sizeof(t),
				 "# Replication\r\nrole:%s\r\nmaster_host:%s\r\n"
				 "master_port:%d\r\nmaster_link_status:%s\r\n"
				 "master_replid:%s\r\nmaster_repl_offset:%lld\r\n",
				 r->role == INFO_ROLE_MASTER ? "master" : "slave", r->master_host,
				 r->master_port, r->link_up == 1 ? "up" : "down", r->master_replid,
				 r->offset);
			resp_str(out, t);
		}
	}
}

static void rt_help(struct evbuffer *out)
{
	static const char *const lines[] = {
	    "SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	    "CKQUORUM <master-name>",
	    "CONFIG SET <param> <value> | CONFIG GET <param>",
	    "DEBUG [<param> <value> ...]",
	    "GET-MASTER-ADDR-BY-NAME <master-name>",
	    "FAILOVER <master-name>",
	    "FLUSHCONFIG",
	    "INFO-CACHE <master-name>",
	    "IS-MASTER-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
	    "MASTER <master-name>",
	    "MASTERS",
	    "MONITOR <name> <ip> <port> <quorum> (the cluster file defines shards)",
	    "MYID",
	    "PENDING-SCRIPTS",
	    "REMOVE <master-name> (the cluster file defines shards)",
	    "REPLICAS <master-name>",
	    "RESET <pattern>",
	    "SENTINELS <master-name>",
	    "SET <master-name> <option> <value> [<option> <value> ...]",
	    "SIMULATE-FAILURE [CRASH-AFTER-ELECTION] [CRASH-AFTER-PROMOTION] [HELP]",
	    "HELP",
	};

	resp_array(out, sizeof(lines) / sizeof(lines[0]));
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		resp_status(out, lines[i]);
}

/* The Sentinel subcommands of this file: true when sub was one of them. */
bool ctl_runtime_sentinel(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	const char *sub = cmd->argv[1];
	char why[240];
	bool changes = !strcasecmp(sub, "set") || !strcasecmp(sub, "flushconfig") ||
		       !strcasecmp(sub, "reset") || !strcasecmp(sub, "simulate-failure") ||
		       (!strcasecmp(sub, "config") && cmd->argc > 2 && ARG_IS(2, "SET")) ||
		       (!strcasecmp(sub, "debug") && cmd->argc > 2);

	/* As SENTINEL FAILOVER: what changes the controller needs AUTH <cluster secret>. */
	if (changes && !(k->flags & CTL_C_AUTH)) {
		resp_error_reply(out, "NOAUTH Authentication required (AUTH <cluster secret>).");
		return true;
	}
	if (!strcasecmp(sub, "set") && cmd->argc >= 3) {
		rt_set(k, cmd, RT_MASTER);
	} else if (!strcasecmp(sub, "config") && cmd->argc == 4 && ARG_IS(2, "GET")) {
		rt_config_get(k, cmd->argv[3]);
	} else if (!strcasecmp(sub, "config") && cmd->argc >= 5 && ARG_IS(2, "SET")) {
		rt_set(k, cmd, RT_CONFIG);
	} else if (!strcasecmp(sub, "flushconfig") && cmd->argc == 2) {
		/* In HA mode every value is in etcd once set: nothing to flush. */
		if (!c->ha && flush(c, why, sizeof(why))) {
			char e[260];

			snprintf(e, sizeof(e), "ERR %s", why);
			resp_error_reply(out, e);
		} else {
			resp_status(out, "OK");
		}
	} else if (!strcasecmp(sub, "debug")) {
		rt_debug(k, cmd);
	} else if (!strcasecmp(sub, "info-cache") && cmd->argc >= 2) {
		rt_info_cache(k, cmd);
	} else if (!strcasecmp(sub, "pending-scripts") && cmd->argc == 2) {
		ctl_hooks_pending(k, out);
	} else if (!strcasecmp(sub, "help") && cmd->argc == 2) {
		rt_help(out);
	} else if (!strcasecmp(sub, "reset") && cmd->argc == 3) {
		int n = 0;

		/* Forgets what a failover attempt learnt (no good replica, the last block
		 * reason); the topology is the cluster file's and the servers'. */
		for (int i = 0; i < c->fo.nshards; i++) {
			struct fo_shard *s = &c->fo.shards[i];

			if (fnmatch(cmd->argv[2], s->name, 0))
				continue;
			s->flags &= ~FO_S_NO_GOOD_REPLICA;
			s->blocked_why[0] = '\0';
			n++;
		}
		resp_int(out, n);
	} else if (!strcasecmp(sub, "simulate-failure") && cmd->argc >= 3) {
		unsigned f = 0;

		for (int a = 2; a < cmd->argc; a++) {
			if (!strcasecmp(cmd->argv[a], "crash-after-election")) {
				f |= SIM_CRASH_AFTER_ELECTION;
			} else if (!strcasecmp(cmd->argv[a], "crash-after-promotion")) {
				f |= SIM_CRASH_AFTER_PROMOTION;
			} else if (!strcasecmp(cmd->argv[a], "help")) {
				resp_array(out, 2);
				resp_str(out, "crash-after-election");
				resp_str(out, "crash-after-promotion");
				return true;
			} else {
				resp_error_reply(out, "ERR Unknown failure simulation specified");
				return true;
			}
		}
		simulate_flags = f;
		resp_status(out, "OK");
	} else if (!strcasecmp(sub, "is-master-down-by-addr") && cmd->argc == 6) {
		struct fo_node *n =
		    fo_node_by_addr(&c->fo, cmd->argv[2], (int)strtol(cmd->argv[3], NULL, 10));
		struct fo_shard *s = n && n->shard >= 0 ? &c->fo.shards[n->shard] : NULL;
		bool down = s && s->primary == n->idx && (n->flags & FO_N_SDOWN);

		/* Down as flatline judges it; flatline votes for no other Sentinel. */
		resp_array(out, 3);
		resp_int(out, down);
		resp_str(out, "*");
		resp_int(out, 0);
	} else if (!strcasecmp(sub, "monitor") || !strcasecmp(sub, "remove")) {
		bool exists = cmd->argc >= 3 && fo_find_shard(&c->fo, cmd->argv[2]);

		if (!strcasecmp(sub, "monitor") && exists)
			resp_error_reply(out, "ERR Duplicated master name");
		else if (!strcasecmp(sub, "remove") && !exists)
			resp_error_reply(out, "ERR No such master with that name");
		else
			resp_error_reply(out,
					 "ERR flatline's shards are the cluster file's: add or "
					 "remove a [shard] section and restart the controller");
	} else {
		return false;
	}
	return true;
}
