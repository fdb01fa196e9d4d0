// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Runtime configuration through Sentinel's commands: SENTINEL SET, CONFIG GET|SET,
 * DEBUG, FLUSHCONFIG, RESET, SIMULATE-FAILURE, INFO-CACHE, PENDING-SCRIPTS, HELP,
 * IS-MASTER-DOWN-BY-ADDR, and MONITOR/REMOVE (the topology stays the cluster
 * file's). What is set is kept in <state_file>.runtime (write, fsync, rename) and
 * applied again at start over the cluster file's values: the runtime value wins
 * until it is set back or the file removed; `flatline status` lists it. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"

/* A setting: its Sentinel name, where it lives, and its bounds. */
enum rt_kind { RT_INT, RT_STR, RT_SECRET };
struct rt_key {
	const char *name;
	enum rt_kind kind;
	int min, max;
	bool config; /* SENTINEL CONFIG (else SENTINEL SET <master> / DEBUG) */
	bool debug;  /* SENTINEL DEBUG */
};

static const struct rt_key keys[] = {
	/* SENTINEL SET <master> ... (applies to every shard: one controller's rules) */
	{ "down-after-milliseconds", RT_INT, 1, 3600000, false, false },
	{ "failover-timeout", RT_INT, 0, 86400000, false, false },
	{ "quorum", RT_INT, 1, 1, false, false },
	{ "parallel-syncs", RT_INT, 1, 1000000, false, false },
	{ "auth-pass", RT_SECRET, 0, 0, false, false },
	{ "auth-user", RT_STR, 0, 0, false, false },
	/* SENTINEL DEBUG */
	{ "tilt-period", RT_INT, 0, 3600000, false, true },
	{ "slave-reconf-timeout", RT_INT, 1, 600000, false, true },
	{ "script-max-runtime", RT_INT, 1, 3600000, false, true },
	{ "script-retry-delay", RT_INT, 0, 3600000, false, true },
	/* SENTINEL CONFIG */
	{ "resolve-hostnames", RT_STR, 0, 0, true, false },
	{ "announce-hostnames", RT_STR, 0, 0, true, false },
	{ "announce-ip", RT_STR, 0, 0, true, false },
	{ "announce-port", RT_INT, 0, 65535, true, false },
	{ "loglevel", RT_STR, 0, 0, true, false },
	{ "sentinel-user", RT_STR, 0, 0, true, false },
	{ "sentinel-pass", RT_SECRET, 0, 0, true, false },
};
#define NKEYS (int)(sizeof(keys) / sizeof(keys[0]))
#define RT_VAL_MAX 256

static char values[NKEYS][RT_VAL_MAX]; /* "" = not set at runtime */
static unsigned simulate_flags;        /* SIMULATE-FAILURE */
#define SIM_CRASH_AFTER_ELECTION (1u << 0)
#define SIM_CRASH_AFTER_PROMOTION (1u << 1)

static int key_idx(const char *name)
{
	for (int i = 0; i < NKEYS; i++)
		if (!strcasecmp(keys[i].name, name))
			return i;
	return -1;
}

/* The value in effect, as text. */
static void current(struct ctl *c, int i, char *buf, size_t len)
{
	const char *n = keys[i].name;

	if (!strcmp(n, "down-after-milliseconds"))
		snprintf(buf, len, "%d", c->fo.node_down_after_ms);
	else if (!strcmp(n, "failover-timeout"))
		snprintf(buf, len, "%d", c->fo.failover_block_ms);
	else if (!strcmp(n, "tilt-period"))
		snprintf(buf, len, "%d", c->fo.tilt_ms);
	else if (!strcmp(n, "slave-reconf-timeout"))
		snprintf(buf, len, "%d", c->fo.repoint_timeout_ms);
	else if (!strcmp(n, "script-max-runtime"))
		snprintf(buf, len, "%d", ctl_hooks_max_runtime_ms());
	else if (!strcmp(n, "script-retry-delay"))
		snprintf(buf, len, "%d", ctl_hooks_retry_delay_ms());
	else if (!strcmp(n, "auth-user"))
		snprintf(buf, len, "%s", c->cfg->redis.user);
	else if (!strcmp(n, "auth-pass"))
		snprintf(buf, len, "%s", c->cfg->redis.password);
	else if (values[i][0])
		snprintf(buf, len, "%s", values[i]);
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

/* Checks and applies one value; -EINVAL with why. */
static int apply(struct ctl *c, int i, const char *v, char *why, size_t whylen)
{
	const struct rt_key *k = &keys[i];
	long long n = 0;

	if (strlen(v) >= RT_VAL_MAX || strpbrk(v, "\r\n")) {
		snprintf(why, whylen, "Invalid argument '%.40s' for SENTINEL SET '%s'", v, k->name);
		return -EINVAL;
	}
	if (k->kind == RT_INT) {
		char *end;

		n = strtoll(v, &end, 10);
		if (!*v || *end || n < k->min || n > k->max) {
			snprintf(why, whylen, "Invalid argument '%.40s' for SENTINEL SET '%s' "
					      "(%d to %d)", v, k->name, k->min, k->max);
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
		snprintf(why, whylen, "argument(s) must be one of the following: debug, verbose, "
				      "notice, warning, nothing");
		return -EINVAL;
	}
	if (!strcmp(k->name, "down-after-milliseconds"))
		c->fo.node_down_after_ms = (int)n;
	else if (!strcmp(k->name, "failover-timeout"))
		c->fo.failover_block_ms = (int)n;
	else if (!strcmp(k->name, "tilt-period"))
		c->fo.tilt_ms = (int)n;
	else if (!strcmp(k->name, "slave-reconf-timeout"))
		c->fo.repoint_timeout_ms = (int)n;
	else if (!strcmp(k->name, "script-max-runtime"))
		ctl_hooks_set_times((int)n, -1);
	else if (!strcmp(k->name, "script-retry-delay"))
		ctl_hooks_set_times(-1, (int)n);
	else if (!strcmp(k->name, "auth-pass")) /* used from the next connect on */
		snprintf(c->cfg->redis.password, sizeof(c->cfg->redis.password), "%s", v);
	else if (!strcmp(k->name, "auth-user"))
		snprintf(c->cfg->redis.user, sizeof(c->cfg->redis.user), "%s", v);
	snprintf(values[i], RT_VAL_MAX, "%s", v);
	return 0;
}

static void rt_path(const struct ctl *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s.runtime", c->state_file);
}

/* Writes every runtime value: write, fsync, rename. */
static int flush(struct ctl *c, char *why, size_t whylen)
{
	char path[300], tmp[310];
	FILE *f;
	int rc = 0;

	if (!c->state_file[0]) {
		snprintf(why, whylen, "no state_file: runtime changes are not kept");
		return -ENOENT;
	}
	rt_path(c, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		goto fail;
	fprintf(f, "# flatline controller: set at runtime (SENTINEL SET/CONFIG SET/DEBUG); "
		   "wins over the cluster file\n");
	for (int i = 0; i < NKEYS; i++)
		if (values[i][0])
			fprintf(f, "%s %s\n", keys[i].name, values[i]);
	if (fflush(f) || fsync(fileno(f)))
		goto fail;
	fclose(f);
	f = NULL;
	if (rename(tmp, path))
		goto fail;
	return 0;
fail:
	rc = -errno;
	snprintf(why, whylen, "failed to write %.180s: %s", tmp, strerror(errno));
	if (f)
		fclose(f);
	return rc;
}

int ctl_runtime_load(struct ctl *c)
{
	char path[300], line[512], why[200];
	FILE *f;
	int ln = 0, n = 0;

	if (!c->state_file[0])
		return 0;
	rt_path(c, path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		char *v;
		int i;

		ln++;
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		v = strchr(line, ' ');
		if (v)
			*v++ = '\0';
		i = key_idx(line);
		if (i < 0 || !v || apply(c, i, v, why, sizeof(why))) {
			pr_warn("%s:%d: failed to apply '%s': %s\n", path, ln, line,
				i < 0 ? "unknown setting" : !v ? "no value" : why);
			continue;
		}
		pr_info("%s: %s = %s (set at runtime, over the cluster file)\n", path, line,
			keys[i].kind == RT_SECRET ? "(secret)" : v);
		n++;
	}
	fclose(f);
	return n;
}

void ctl_runtime_status(struct ctl *c, struct evbuffer *b)
{
	bool any = false;

	for (int i = 0; i < NKEYS; i++) {
		if (!values[i][0])
			continue;
		if (!any)
			evbuffer_add_printf(b, "\nset at runtime (%s.runtime, wins over the cluster "
					       "file):", c->state_file);
		any = true;
		evbuffer_add_printf(b, " %s=%s", keys[i].name,
				    keys[i].kind == RT_SECRET ? "(secret)" : values[i]);
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

static void rt_set(struct ctl_conn *k, struct resp_cmd *cmd, bool config)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	int first = 3; /* SENTINEL SET <master> k v ... | SENTINEL CONFIG SET k v */
	char why[240], saved[NKEYS][RT_VAL_MAX];

	if (!config && !fo_find_shard(&c->fo, cmd->argv[2])) {
		resp_error_reply(out, "ERR No such master with that name");
		return;
	}
	if (cmd->argc < first + 2 || (cmd->argc - first) % 2) {
		resp_error_reply(out, "ERR wrong number of arguments for 'sentinel set' command");
		return;
	}
	memcpy(saved, values, sizeof(saved));
	for (int a = first; a + 1 < cmd->argc; a += 2) {
		int i = key_idx(cmd->argv[a]);

		if (i >= 0 && (keys[i].config != config || keys[i].debug))
			i = -1;
		if (!config && (!strcasecmp(cmd->argv[a], "notification-script") ||
				!strcasecmp(cmd->argv[a], "client-reconfig-script"))) {
			/* Sentinel's default (sentinel deny-scripts-reconfig yes). */
			resp_error_reply(out, "ERR Reconfiguration of scripts path is denied for "
					      "security reasons. Check the deny-scripts-reconfig "
					      "configuration directive in your config file.");
			return;
		}
		if (i < 0) {
			snprintf(why, sizeof(why), "ERR Invalid argument '%.60s' to SENTINEL %s",
				 cmd->argv[a], config ? "CONFIG SET" : "SET");
			resp_error_reply(out, why);
			return;
		}
		if (apply(c, i, cmd->argv[a + 1], why, sizeof(why))) {
			char e[260];

			snprintf(e, sizeof(e), "ERR %s", why);
			resp_error_reply(out, e);
			return;
		}
	}
	if (flush(c, why, sizeof(why))) {
		char e[260];

		snprintf(e, sizeof(e), "ERR %s", why);
		resp_error_reply(out, e);
		return;
	}
	for (int a = first; a + 1 < cmd->argc; a += 2) {
		struct evrec r;
		int i = key_idx(cmd->argv[a]);

		evrec_begin(&r, NULL, "controller", "config_set");
		evrec_str(&r, "setting", keys[i].name);
		evrec_str(&r, "value", keys[i].kind == RT_SECRET ? "(secret)" : values[i]);
		evrec_str(&r, "was", keys[i].kind == RT_SECRET ? "(secret)" : saved[i]);
		evrec_str(&r, "by", k->peer);
		ctl_log(c, &r);
	}
	resp_status(out, "OK");
}

static void rt_config_get(struct ctl_conn *k, const char *pattern)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	int n = 0;
	char v[RT_VAL_MAX];

	for (int i = 0; i < NKEYS; i++)
		n += keys[i].config && !fnmatch(pattern, keys[i].name, FNM_CASEFOLD);
	ctl_reply_map(k, out, n);
	for (int i = 0; i < NKEYS; i++) {
		if (!keys[i].config || fnmatch(pattern, keys[i].name, FNM_CASEFOLD))
			continue;
		current(c, i, v, sizeof(v));
		kv(out, keys[i].name, v);
	}
}

static void rt_debug(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	static const char *const shown[] = { "tilt-period", "slave-reconf-timeout",
					     "script-max-runtime", "script-retry-delay" };
	char v[RT_VAL_MAX], b[32];

	if (cmd->argc > 2) {
		for (int a = 2; a + 1 < cmd->argc; a += 2) {
			int i = key_idx(cmd->argv[a]);
			char why[200];

			if (i < 0 || !keys[i].debug) {
				snprintf(why, sizeof(why), "ERR Invalid argument '%.60s' to SENTINEL "
							   "DEBUG", cmd->argv[a]);
				resp_error_reply(out, why);
				return;
			}
			if (apply(c, i, cmd->argv[a + 1], why, sizeof(why))) {
				resp_error_reply(out, why);
				return;
			}
		}
		if (flush(c, v, sizeof(v)))
			pr_warn("%s\n", v);
		resp_status(out, "OK");
		return;
	}
	ctl_reply_map(k, out, (int)(sizeof(shown) / sizeof(shown[0])) + 2);
	for (size_t j = 0; j < sizeof(shown) / sizeof(shown[0]); j++) {
		current(c, key_idx(shown[j]), v, sizeof(v));
		kv(out, shown[j], v);
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
			snprintf(t, sizeof(t), "# Replication\r\nrole:%s\r\nmaster_host:%s\r\n"
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
		"CKQUORUM <master-name>", "CONFIG SET <param> <value> | CONFIG GET <param>",
		"DEBUG [<param> <value> ...]", "GET-MASTER-ADDR-BY-NAME <master-name>",
		"FAILOVER <master-name>", "FLUSHCONFIG", "INFO-CACHE <master-name>",
		"IS-MASTER-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
		"MASTER <master-name>", "MASTERS",
		"MONITOR <name> <ip> <port> <quorum> (the cluster file defines shards)",
		"MYID", "PENDING-SCRIPTS", "REMOVE <master-name> (the cluster file defines shards)",
		"REPLICAS <master-name>", "RESET <pattern>", "SENTINELS <master-name>",
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
		rt_set(k, cmd, false);
	} else if (!strcasecmp(sub, "config") && cmd->argc == 4 && ARG_IS(2, "GET")) {
		rt_config_get(k, cmd->argv[3]);
	} else if (!strcasecmp(sub, "config") && cmd->argc >= 5 && ARG_IS(2, "SET")) {
		rt_set(k, cmd, true);
	} else if (!strcasecmp(sub, "flushconfig") && cmd->argc == 2) {
		if (flush(c, why, sizeof(why))) {
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
		struct fo_node *n = fo_node_by_addr(&c->fo, cmd->argv[2],
							   (int)strtol(cmd->argv[3], NULL, 10));
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
			resp_error_reply(out, "ERR flatline's shards are the cluster file's: add or "
					      "remove a [shard] section and restart the controller");
	} else {
		return false;
	}
	return true;
}
