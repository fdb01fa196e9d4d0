// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Runtime configuration: the settings Sentinel's commands change (SENTINEL SET,
 * CONFIG SET, DEBUG: ctl_runtime_cmd.c), their bounds, and where they are kept.
 * SET values are per master (shard), as Sentinel's. What is set is kept in
 * <state_file>.runtime (write, fsync, rename), or in HA mode in etcd
 * (<prefix>runtime/<master or *>/<key>, applied by every controller, a new leader
 * included), and applied again at start over the cluster file's values: the runtime
 * value wins until it is set again or the file (key) removed; `flatline status` lists
 * it. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include <event2/buffer.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/ctl_runtime.h"

const struct rt_key ctl_rt_keys[] = {
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
_Static_assert(sizeof(ctl_rt_keys) / sizeof(ctl_rt_keys[0]) == CTL_RT_NKEYS, "CTL_RT_NKEYS");

typedef char rt_vals[CTL_RT_NKEYS][RT_VAL_MAX]; /* "" = not set at runtime */

/* The module's state (c->runtime): what was set at runtime. */
struct ctl_runtime {
	rt_vals values;	  /* DEBUG and CONFIG */
	rt_vals *mvalues; /* SET, one set per shard (fo.shards order) */
	int nmvalues;
};

int ctl_runtime_init(struct ctl *c)
{
	c->runtime = calloc(1, sizeof(*c->runtime));
	return c->runtime ? 0 : -ENOMEM;
}

void ctl_runtime_fini(struct ctl *c)
{
	if (!c->runtime)
		return;
	free(c->runtime->mvalues);
	free(c->runtime);
	c->runtime = NULL;
}

int ctl_rt_key(const char *name)
{
	for (int i = 0; i < CTL_RT_NKEYS; i++)
		if (!strcasecmp(ctl_rt_keys[i].name, name))
			return i;
	return -1;
}

static int ensure_mvalues(const struct ctl *c)
{
	/* A slot for every shard, added at runtime too (those never move). */
	if (c->runtime->mvalues)
		return 0;
	c->runtime->mvalues = calloc(ctl_shard_room(c) + 1, sizeof(*c->runtime->mvalues));
	if (!c->runtime->mvalues)
		return -ENOMEM;
	c->runtime->nmvalues = ctl_shard_room(c);
	return 0;
}

/* The value set at runtime for key i (of shard for a SET key), "" if none. */
static const char *set_value(const struct ctl *c, int shard, int i)
{
	if (ctl_rt_keys[i].scope != RT_MASTER)
		return c->runtime->values[i];
	return c->runtime->mvalues && shard >= 0 && shard < c->runtime->nmvalues
		   ? c->runtime->mvalues[shard][i]
		   : "";
}

void ctl_runtime_auth(const struct ctl *c, int shard, const char **user, const char **pass)
{
	const char *u = set_value(c, shard, ctl_rt_key("auth-user"));
	const char *p = set_value(c, shard, ctl_rt_key("auth-pass"));
	const char *fu, *fp;

	/* SENTINEL SET's, else the file's: the shard's, else [redis]'s. */
	cfg_server_auth(c->cfg, shard, &fu, &fp);
	*user = u[0] ? u : fu;
	*pass = p[0] ? p : fp;
}

/* The value in effect, as text (shard: for a SET key). */
void ctl_rt_current(struct ctl *c, int shard, int i, char *buf, size_t len)
{
	const char *n = ctl_rt_keys[i].name, *u, *p;

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
		snprintf(buf, len, "%d", ctl_hooks_max_runtime_ms(c));
	else if (!strcmp(n, "script-retry-delay"))
		snprintf(buf, len, "%d", ctl_hooks_retry_delay_ms(c));
	else if (!strcmp(n, "auth-user") || !strcmp(n, "auth-pass")) {
		ctl_runtime_auth(c, shard, &u, &p);
		snprintf(buf, len, "%s", !strcmp(n, "auth-user") ? u : p);
	} else if (set_value(c, shard, i)[0])
		snprintf(buf, len, "%s", set_value(c, shard, i));
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
int ctl_rt_check(int i, const char *v, long long *num, char *why, size_t whylen)
{
	const struct rt_key *k = &ctl_rt_keys[i];

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
int ctl_rt_apply(struct ctl *c, int shard, int i, const char *v, char *why, size_t whylen)
{
	const struct rt_key *k = &ctl_rt_keys[i];
	long long n;

	if (ctl_rt_check(i, v, &n, why, whylen))
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
			snprintf(c->runtime->mvalues[j][i], RT_VAL_MAX, "%s", v);
		}
		return 0;
	}
	if (!strcmp(k->name, "tilt-period"))
		c->fo.tilt_ms = (int)n;
	else if (!strcmp(k->name, "slave-reconf-timeout"))
		c->fo.repoint_timeout_ms = (int)n;
	else if (!strcmp(k->name, "script-max-runtime"))
		ctl_hooks_set_times(c, (int)n, -1);
	else if (!strcmp(k->name, "script-retry-delay"))
		ctl_hooks_set_times(c, -1, (int)n);
	snprintf(c->runtime->values[i], RT_VAL_MAX, "%s", v);
	return 0;
}

static void rt_path(const struct ctl *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s.runtime", c->state_file);
}

/* Every runtime value, a line each: "master <name> <key> <value>" or "<key> <value>". */
static void write_lines(const struct ctl *c, FILE *f)
{
	for (int i = 0; i < CTL_RT_NKEYS; i++)
		if (ctl_rt_keys[i].scope != RT_MASTER && c->runtime->values[i][0])
			fprintf(f, "%s %s\n", ctl_rt_keys[i].name, c->runtime->values[i]);
	for (int j = 0; j < c->runtime->nmvalues && j < c->fo.nshards; j++)
		for (int i = 0; i < CTL_RT_NKEYS; i++)
			if (c->runtime->mvalues[j][i][0])
				fprintf(f, "master %s %s %s\n", c->fo.shards[j].name,
					ctl_rt_keys[i].name, c->runtime->mvalues[j][i]);
}

/* Writes every runtime value: write (0600), fsync, rename, fsync of the directory. */
int ctl_rt_flush(struct ctl *c, char *why, size_t whylen)
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
	 * also when a .tmp was left with another mode. */
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
	i = ctl_rt_key(name);
	if (i < 0 || !v) {
		snprintf(why, whylen, "%s", i < 0 ? "unknown setting" : "no value");
		return -EINVAL;
	}
	if (shard >= 0 && ctl_rt_keys[i].scope != RT_MASTER) {
		snprintf(why, whylen, "'%s' is not a per-master setting", name);
		return -EINVAL;
	}
	*shown = ctl_rt_keys[i].kind == RT_SECRET ? "(secret)" : v;
	return ctl_rt_apply(c, shard, i, v, why, whylen);
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

	for (int j = -1; j < c->runtime->nmvalues && j < c->fo.nshards; j++) {
		for (int i = 0; i < CTL_RT_NKEYS; i++) {
			const char *v =
			    j < 0 ? (ctl_rt_keys[i].scope == RT_MASTER ? "" : c->runtime->values[i])
				  : c->runtime->mvalues[j][i];

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
					    j < 0 ? "" : ":", ctl_rt_keys[i].name,
					    ctl_rt_keys[i].kind == RT_SECRET ? "(secret)" : v);
		}
	}
	if (any)
		evbuffer_add_printf(b, "\n");
}

/* HA mode: <prefix>rel = val in etcd, from any controller (runtime settings: not
 * the shard state). fn gets 0 or -errno and why; returns 0 or -errno (fn then
 * never runs). */
struct plain_put {
	void (*fn)(void *ctx, int err, const char *msg);
	void *ctx;
};

static void on_plain_put(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct plain_put *p = ctx;

	(void)resp;
	p->fn(p->ctx, err, msg);
	free(p);
}

int ctl_rt_put_plain(struct ctl *c, const char *rel, const char *val,
		     void (*fn)(void *ctx, int err, const char *msg), void *ctx)
{
	struct plain_put *p;
	struct json_object *b;
	char key[512];
	int rc;

	if (!c->ha)
		return -ENOTSUP;
	p = malloc(sizeof(*p));
	b = json_object_new_object();
	if (!p || !b) {
		free(p);
		json_object_put(b);
		return -ENOMEM;
	}
	p->fn = fn;
	p->ctx = ctx;
	snprintf(key, sizeof(key), "%s%s", c->cfg->etcd.prefix, rel);
	etcd_json_add_bytes(b, "key", key, strlen(key));
	etcd_json_add_bytes(b, "value", val, strlen(val));
	rc = etcd_call(ha_etcd(c->ha), "/v3/kv/put", b, 0, on_plain_put, p);
	if (rc)
		free(p);
	return rc;
}
