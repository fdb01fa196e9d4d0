// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Sentinel's commands over the runtime settings (ctl_runtime.c): SENTINEL SET,
 * CONFIG GET|SET, DEBUG, FLUSHCONFIG, RESET, SIMULATE-FAILURE, INFO-CACHE,
 * PENDING-SCRIPTS, HELP, IS-MASTER-DOWN-BY-ADDR (MONITOR, REMOVE and RESET are
 * ctl_members_cmd.c's). Every pair of a SET is checked before any is applied;
 * in HA mode the answer waits until etcd has every value. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"
#include "controller/ctl_runtime.h"
#include "controller/etcd.h"

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

/* The first error is the one answered. */
static void rt_put_error(struct rt_put *p, int err, const char *msg)
{
	if (err && !p->err) {
		p->err = err;
		snprintf(p->msg, sizeof(p->msg), "%s", msg ? msg : strerror(-err));
	}
}

static void on_rt_put(void *ctx, int err, const char *msg)
{
	struct rt_put *p = ctx;
	struct ctl_conn *k;

	rt_put_error(p, err, msg);
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
	char why[240], e[260], was[CTL_RT_NKEYS][RT_VAL_MAX];
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
		int i = ctl_rt_key(cmd->argv[a]);

		if (scope == RT_MASTER && (!strcasecmp(cmd->argv[a], "notification-script") ||
					   !strcasecmp(cmd->argv[a], "client-reconfig-script"))) {
			/* Sentinel's default (sentinel deny-scripts-reconfig yes). */
			resp_error_reply(out, "ERR Reconfiguration of scripts path is denied for "
					      "security reasons. Check the deny-scripts-reconfig "
					      "configuration directive in your config file.");
			return;
		}
		if (i < 0 || ctl_rt_keys[i].scope != scope) {
			snprintf(e, sizeof(e), "ERR Invalid argument '%.60s' to SENTINEL %s",
				 cmd->argv[a], what);
			resp_error_reply(out, e);
			return;
		}
		if (ctl_rt_check(i, cmd->argv[a + 1], &num, why, sizeof(why))) {
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
		int i = ctl_rt_key(cmd->argv[a]);

		ctl_rt_current(c, shard, i, was[i], sizeof(was[i]));
		if (ctl_rt_apply(c, shard, i, cmd->argv[a + 1], why, sizeof(why))) {
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
				 shard >= 0 ? c->fo.shards[shard].name : "*", ctl_rt_keys[i].name);
			/* A put that was not sent never calls back: its count is taken
			 * back here (rt_set holds the "until sent" count, so p lives on). */
			p->left++;
			rc = ctl_rt_put_plain(c, rel, cmd->argv[a + 1], on_rt_put, p);
			if (rc) {
				rt_put_error(p, rc, "etcd not reachable");
				p->left--;
			}
		}
	}
	for (int a = first; a + 1 < cmd->argc; a += 2) {
		struct evrec r;
		int i = ctl_rt_key(cmd->argv[a]);
		char now[RT_VAL_MAX];

		ctl_rt_current(c, shard, i, now, sizeof(now));
		evrec_begin(&r, NULL, "controller", "config_set");
		if (shard >= 0)
			evrec_str(&r, "shard", c->fo.shards[shard].name);
		evrec_str(&r, "setting", ctl_rt_keys[i].name);
		evrec_str(&r, "value", ctl_rt_keys[i].kind == RT_SECRET ? "(secret)" : now);
		evrec_str(&r, "was", ctl_rt_keys[i].kind == RT_SECRET ? "(secret)" : was[i]);
		evrec_str(&r, "by", k->peer);
		ctl_log(c, &r);
	}
	if (p) {
		k->flags |= CTL_C_WAITING;
		on_rt_put(p, 0, NULL); /* the "until sent" count: answers if all are done */
		return;
	}
	if (ctl_rt_flush(c, why, sizeof(why))) {
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
 * there at all. */
static void rt_config_get(struct ctl_conn *k, const char *pattern)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	bool admin = (k->flags & CTL_C_LOGIN) && (k->perms & ACL_ADMIN);
	int n = 0;
	char v[RT_VAL_MAX];

#define SHOWN(i)                                                                                   \
	(ctl_rt_keys[i].scope == RT_CONFIG && (admin || ctl_rt_keys[i].kind != RT_SECRET) &&       \
	 !fnmatch(pattern, ctl_rt_keys[i].name, FNM_CASEFOLD))
	for (int i = 0; i < CTL_RT_NKEYS; i++)
		n += SHOWN(i);
	ctl_reply_map(k, out, n);
	for (int i = 0; i < CTL_RT_NKEYS; i++) {
		if (!SHOWN(i))
			continue;
		ctl_rt_current(c, -1, i, v, sizeof(v));
		kv(out, ctl_rt_keys[i].name, v);
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
	for (int i = 0; i < CTL_RT_NKEYS; i++)
		n += ctl_rt_keys[i].scope == RT_DEBUG;
	ctl_reply_map(k, out, n + 2);
	for (int i = 0; i < CTL_RT_NKEYS; i++) {
		if (ctl_rt_keys[i].scope != RT_DEBUG)
			continue;
		ctl_rt_current(c, -1, i, v, sizeof(v));
		kv(out, ctl_rt_keys[i].name, v);
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
	    "MONITOR <name> <ip> <port> <quorum>",
	    "MYID",
	    "PENDING-SCRIPTS",
	    "REMOVE <master-name>",
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
		if (!c->ha && ctl_rt_flush(c, why, sizeof(why))) {
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
	} else if (!strcasecmp(sub, "simulate-failure") && cmd->argc >= 3) {
		unsigned f = 0;

		for (int a = 2; a < cmd->argc; a++) {
			if (!strcasecmp(cmd->argv[a], "crash-after-election")) {
				f |= CTL_SIM_CRASH_AFTER_ELECTION;
			} else if (!strcasecmp(cmd->argv[a], "crash-after-promotion")) {
				f |= CTL_SIM_CRASH_AFTER_PROMOTION;
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
		ctl_event_simulate(c, f);
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
	} else {
		return false;
	}
	return true;
}
