// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What clients see of the controller: the Sentinel API (SENTINEL, INFO, ROLE) and
 * FLATLINE STATUS/FAILOVER; which SENTINEL questions wait while a primary changes
 * (ctl_hold.c holds them). Pub/sub is ctl_pubsub.c's, the events ctl_event.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include "common/auth.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/daemon.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"

/* The module's state (c->sentinel). */
struct ctl_sentinel {
	/* Per shard: the client waiting for FLATLINE FAILOVER, NULL none */
	struct ctl_conn **waiter;
};

void ctl_failover_done(void *ctx, int shard, const char *result)
{
	struct ctl *c = ctx;
	struct ctl_conn *w = c->sentinel->waiter[shard];
	struct fo_shard *s = &c->fo.shards[shard];

	pr_info("failover of %s: %s\n", s->name, result);
	ctl_metrics_failover_done(c, s, result);
	ctl_cluster_check(c, shard); /* the cluster's view after it */
	daemon_notify_status("last failover: %s %s -> %s, %s", s->name,
			     s->last.from >= 0 ? c->fo.nodes[s->last.from].id : "?",
			     s->last.to >= 0 ? c->fo.nodes[s->last.to].id : "?", result);
	if (!w)
		return;
	c->sentinel->waiter[shard] = NULL;
	ctl_conn_resume(w);
	if (!strcmp(result, "ok")) {
		struct evbuffer *t = evbuffer_new();

		if (t) {
			ctl_print_timeline(t, s, &s->last, &c->fo);
			resp_bulk(bufferevent_get_output(w->bev),
				  (const char *)evbuffer_pullup(t, -1), evbuffer_get_length(t));
			evbuffer_free(t);
		}
	} else {
		char e[200];

		snprintf(e, sizeof(e), "ERR failover aborted: %s", result);
		resp_error_reply(bufferevent_get_output(w->bev), e);
	}
}

static void kv_str(struct evbuffer *o, const char *k, const char *v)
{
	resp_str(o, k);
	resp_str(o, v);
}

static void kv_int(struct evbuffer *o, const char *k, long long v)
{
	char b[32];

	snprintf(b, sizeof(b), "%lld", v);
	kv_str(o, k, b);
}

/* The server's run_id: from INFO server on our link, else what the agent saw; a
 * server that has none (Dragonfly) or not reached yet: "" as Sentinel before its
 * first INFO. */
static const char *node_runid(const struct ctl *c, const struct fo_node *n)
{
	const struct info_repl *r = n->info_ok ? &n->info : &n->rep.repl;
	const char *id = ctl_server_runid(c, n->idx);

	return id[0] ? id : r->run_id;
}

/* HA mode: a controller's Sentinel id, the same seen from every controller and over
 * restarts: the first 40 hex digits of HMAC-SHA256(etcd prefix, "controller-myid:" id)
 * (nothing secret: the prefix is the key). */
static void ha_runid(const struct ctl *c, const char *id, char out[41])
{
	uint8_t k[AUTH_KEY_LEN];
	char name[160], hex[2 * AUTH_KEY_LEN + 1];
	const char *prefix = c->cfg->etcd.prefix;

	snprintf(name, sizeof(name), "controller-myid:%s", id);
	if (auth_node_key(prefix, strlen(prefix), name, k)) {
		snprintf(out, 41, "%040d", 0);
		return;
	}
	auth_hex(k, 20, hex);
	memcpy(out, hex, 41);
}

void ctl_myid_persist(struct ctl *c)
{
	char path[sizeof(c->state_file) + 8], tmp[sizeof(path) + 8], buf[64];
	FILE *f;
	size_t n;

	if (c->cfg->etcd.enabled && c->id[0]) {
		ha_runid(c, c->id, c->myid);
		return;
	}
	if (!c->state_file[0])
		return;
	snprintf(path, sizeof(path), "%s.myid", c->state_file);
	f = fopen(path, "re");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		buf[strcspn(buf, "\r\n")] = '\0';
		if (strlen(buf) == 40 && strspn(buf, "0123456789abcdef") == 40) {
			memcpy(c->myid, buf, 41);
			return;
		}
		pr_warn("%s: not a Sentinel id (40 hex digits): a new one written\n", path);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f || fprintf(f, "%s\n", c->myid) < 0 || fflush(f) || fsync(fileno(f))) {
		pr_warn("failed to write %s: %s (the id changes at the next start)\n", tmp,
			strerror(errno));
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	if (rename(tmp, path))
		pr_warn("failed to rename %s: %s\n", tmp, strerror(errno));
}

static long long age_ms(long long since)
{
	return since ? fl_mono_ms() - since : 0;
}

/* The first 14 fields SENTINEL MASTER and SENTINEL REPLICAS answer with. */
static void reply_instance(const struct ctl_conn *k, struct evbuffer *o, int nfields,
			   const char *name, const struct fo_node *n, const char *flags,
			   const char *role)
{
	struct ctl *c = k->ctl;

	ctl_reply_map(k, o, nfields);
	kv_str(o, "name", name);
	kv_str(o, "ip", n->host);
	kv_int(o, "port", n->port);
	kv_str(o, "runid", node_runid(c, n));
	kv_str(o, "flags", flags);
	kv_int(o, "link-pending-commands", 0);
	kv_int(o, "link-refcount", 1);
	kv_int(o, "last-ping-sent", 0);
	kv_int(o, "last-ok-ping-reply", age_ms(n->last_report_ms));
	kv_int(o, "last-ping-reply", age_ms(n->last_report_ms));
	kv_int(o, "down-after-milliseconds", fo_down_after_ms(&c->fo, n->shard));
	kv_int(o, "info-refresh", age_ms(n->last_report_ms));
	kv_str(o, "role-reported", role);
	kv_int(o, "role-reported-time", age_ms(c->start_ms));
}

/* HA mode: the other controllers registered in etcd (ids, "host:port"). */
static int other_controllers(const struct ctl *c, const char **ids, const char **addrs, int max)
{
	const char *i2[CFG_MAX_CTLS * 2], *a2[CFG_MAX_CTLS * 2];
	int n = ctl_ha_controllers(c, i2, a2, CFG_MAX_CTLS * 2), m = 0;

	for (int i = 0; i < n; i++) {
		if (!strcmp(i2[i], c->id))
			continue;
		if (ids && m < max) {
			ids[m] = i2[i];
			addrs[m] = a2[i];
		}
		m++;
	}
	return m;
}

/* Where a client on connection k reaches controller id, registered in etcd at addr:
 * over TLS (k came to tls_listen), that controller's tls_address from the cluster
 * file; else the address it registered. */
static void ctl_addr_for(const struct ctl_conn *k, const char *id, const char *addr,
			 struct cfg_endpoint *ep)
{
	const struct cfg_ctl *t = cfg_find_ctl(k->ctl->cfg, id);

	if ((k->flags & CTL_C_TLS) && t && t->tls)
		*ep = t->tls_address;
	else if (cfg_parse_endpoint(addr, ep, 26379) < 0)
		memset(ep, 0, sizeof(*ep));
}

/* SENTINEL sentinels: each other controller as Sentinel describes a peer. */
static void reply_sentinels(const struct ctl_conn *k, struct evbuffer *o)
{
	struct ctl *c = k->ctl;
	const char *ids[CFG_MAX_CTLS * 2], *addrs[CFG_MAX_CTLS * 2];
	int n = other_controllers(c, ids, addrs, CFG_MAX_CTLS * 2);

	if (n > CFG_MAX_CTLS * 2)
		n = CFG_MAX_CTLS * 2;
	resp_array(o, n);
	for (int i = 0; i < n; i++) {
		struct cfg_endpoint ep;
		char port[16], name[300], runid[41];

		ctl_addr_for(k, ids[i], addrs[i], &ep);
		snprintf(port, sizeof(port), "%d", ep.port);
		ctl_reply_map(k, o, 5);
		kv_str(o, "name", cfg_hostport(name, sizeof(name), ep.host, ep.port));
		kv_str(o, "ip", ep.host);
		kv_str(o, "port", port);
		ha_runid(c, ids[i], runid);
		kv_str(o, "runid", runid);
		kv_str(o, "flags", "sentinel");
	}
}

/* SENTINEL ckquorum: one controller alone always can; in HA mode, etcd decides. */
static void reply_ckquorum(struct ctl *c, struct evbuffer *o)
{
	struct ctl_ha_view v;
	char msg[400];

	ctl_ha_status(c, &v);
	if (!v.enabled) {
		resp_status(o, "OK 1 usable Sentinels. Quorum and failover authorization can be "
			       "reached");
		return;
	}
	if (!v.etcd_ok) {
		snprintf(msg, sizeof(msg),
			 "NOQUORUM etcd does not answer (%s): no failover can be "
			 "authorized",
			 v.etcd_why);
		resp_error_reply(o, msg);
		return;
	}
	snprintf(msg, sizeof(msg),
		 "OK %d usable Sentinels. Quorum and failover authorization "
		 "can be reached (etcd; leader %s)",
		 other_controllers(c, NULL, NULL, 0) + 1, v.leader[0] ? v.leader : "none yet");
	resp_status(o, msg);
}

static void reply_master(const struct ctl_conn *k, struct evbuffer *o, const struct fo_shard *s)
{
	struct ctl *c = k->ctl;
	const struct fo_node *m =
	    s->primary >= 0 ? &c->fo.nodes[s->primary] : &c->fo.nodes[s->nodes[0]];
	char flags[96];

	snprintf(flags, sizeof(flags), "master%s%s%s", (m->flags & FO_N_SDOWN) ? ",s_down" : "",
		 (s->flags & FO_S_ODOWN) || s->primary < 0 ? ",o_down" : "",
		 s->fo.state != FO_ST_NONE ? ",failover_in_progress" : "");
	reply_instance(k, o, 20, s->name, m, flags, "master");
	kv_int(o, "config-epoch", s->epoch);
	kv_int(o, "num-slaves", s->nnodes - 1);
	kv_int(o, "num-other-sentinels", other_controllers(c, NULL, NULL, 0));
	kv_int(o, "quorum", 1);
	kv_int(o, "failover-timeout", fo_block_ms(&c->fo, s));
	kv_int(o, "parallel-syncs", s->nnodes);
}

static void reply_replica(const struct ctl_conn *k, struct evbuffer *o, const struct fo_shard *s,
			  const struct fo_node *n)
{
	struct ctl *c = k->ctl;
	const struct fo_node *m = s->primary >= 0 ? &c->fo.nodes[s->primary] : NULL;
	const struct info_repl *r =
	    n->info_ok && n->info_ms >= n->last_report_ms ? &n->info : &n->rep.repl;
	char name[300], flags[96];
	bool link = r->link_up == 1, reached, serving, repointing, promoting;

	cfg_hostport(name, sizeof(name), n->host, n->port); /* [v6]:port, as Sentinel names it */
	/* "disconnected" (ioredis skips it, as a replica Sentinel has no link to): not
	 * reached, or not serving yet — still a master (an old primary not converted
	 * yet), being repointed, or fenced by its agent (write lease lapsed: its traffic
	 * is dropped and the connections made meanwhile are closed when it comes back).
	 * s_down as well (redis-py skips only s_down/o_down replicas, and when none is
	 * left reads from the primary, for good: nothing moves that connection again):
	 * not reached, fenced, still a master, or the replica being promoted (its
	 * clients, killed by the promotion, must not come back to it). Not one being
	 * repointed (a replica, or the paused old primary of a switchover): it answers,
	 * a connection made before its REPLICAOF applies is killed with it, and without
	 * it a reader cut off by the failover finds no replica and stays on the new
	 * primary. The +sdown events stay the server's health. */
	reached = ((n->flags & (FO_N_REPORTED | FO_N_UNREACH)) == FO_N_REPORTED || n->info_ok) &&
		  n->rep.lease != FO_LEASE_LAPSED && n->rep.lease != FO_LEASE_REVOKED;
	serving = reached && r->role != INFO_ROLE_MASTER && !(n->flags & FO_N_FIXING);
	repointing = reached && (n->flags & FO_N_FIXING) &&
		     (r->role != INFO_ROLE_MASTER ||
		      (s->fo.state == FO_ST_REPOINT && s->fo.planned && n->idx == s->fo.from));
	promoting = s->fo.state == FO_ST_PROMOTE && n->idx == s->fo.to;

	snprintf(flags, sizeof(flags), "slave%s%s",
		 (n->flags & FO_N_SDOWN) || promoting || !(serving || repointing) ? ",s_down" : "",
		 serving ? "" : ",disconnected");
	reply_instance(k, o, 21, name, n, flags, r->role == INFO_ROLE_MASTER ? "master" : "slave");
	kv_int(o, "master-link-down-time", 0);
	kv_str(o, "master-link-status", link ? "ok" : "err");
	kv_str(o, "master-host", r->master_host[0] ? r->master_host : (m ? m->host : "?"));
	kv_int(o, "master-port", r->master_port ? r->master_port : (m ? m->port : 0));
	kv_int(o, "slave-priority", n->priority);
	kv_int(o, "slave-repl-offset", r->offset < 0 ? 0 : r->offset);
	kv_int(o, "replica-announced", 1); /* every node is in the cluster file */
}

static struct fo_shard *shard_arg(struct ctl_conn *k, const char *name)
{
	struct fo_shard *s = fo_find_shard(&k->ctl->fo, name);

	if (!s)
		resp_error_reply(bufferevent_get_output(k->bev),
				 "ERR No such master with that name");
	return s;
}

static int start_failover(struct ctl_conn *k, const char *shard, const char *to, bool wait,
			  bool takeover)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct fo_shard *s = shard_arg(k, shard);
	struct fo_node *t = NULL;
	char why[200], e[240], reason[96];
	int rc;

	if (!s)
		return -ENOENT;
	if (!(k->flags & CTL_C_AUTH)) {
		resp_error_reply(out, "NOAUTH Authentication required (AUTH <cluster secret>).");
		return -EACCES;
	}
	if (c->fo.shadow) {
		resp_error_reply(out, "ERR shadow mode: this controller changes no server "
				      "([controller] mode = shadow)");
		return -EPERM;
	}
	if (takeover && !s->cluster) {
		resp_error_reply(out,
				 "ERR TAKEOVER is for a cluster shard ([shard] mode = cluster)");
		return -EINVAL;
	}
	if (to) {
		t = fo_find_node(&c->fo, to);
		if (!t) {
			resp_error_reply(out, "ERR no such node");
			return -ENOENT;
		}
	}
	if (c->ha && !ctl_may_act(c)) {
		struct ctl_ha_view v;
		struct cfg_endpoint ep = {0};
		char at[300] = "";

		ctl_ha_status(c, &v);
		for (int i = 0; v.leader[0] && i < v.nctls && !at[0]; i++) {
			if (strcmp(v.ctl_ids[i], v.leader))
				continue;
			ctl_addr_for(k, v.ctl_ids[i], v.ctl_addrs[i], &ep);
			if (ep.host[0])
				cfg_hostport(at, sizeof(at), ep.host, ep.port);
		}
		snprintf(e, sizeof(e), "NOTLEADER this controller follows; the leader is %s%s%s",
			 v.leader[0] ? v.leader : "not known (no quorum in etcd?)",
			 at[0] ? " at " : "", at);
		resp_error_reply(out, e);
		return -EAGAIN;
	}
	snprintf(reason, sizeof(reason), "operator (%s from %.40s)",
		 wait ? "flatline failover" : "SENTINEL failover", k->peer);
	if (wait && c->sentinel->waiter[s->idx] && c->sentinel->waiter[s->idx] != k) {
		/* One caller waits per shard: the first keeps its answer (a
		 * second one used to take its place and strand it). */
		resp_error_reply(out,
				 "INPROG a flatline failover of this shard is already running");
		return -EBUSY;
	}
	if (wait) {
		c->sentinel->waiter[s->idx] = k; /* set first: a failover may finish at once */
		k->flags |= CTL_C_WAITING;
		ctl_conn_role(k, CTL_ROLE_WAITER, true);
	}
	rc = fo_start(&c->fo, s, true, t ? t->idx : -1, reason, why, sizeof(why));
	if (!rc && takeover) /* read at the promotion, after the INFO round (fo_cluster.c) */
		s->fo.takeover = true;
	if (rc) {
		if (wait) {
			c->sentinel->waiter[s->idx] = NULL;
			k->flags &= ~CTL_C_WAITING;
		}
		snprintf(e, sizeof(e), "%s %s",
			 rc == -EBUSY	 ? "INPROG"
			 : rc == -EAGAIN ? "BLOCKED"
					 : "ERR",
			 why);
		resp_error_reply(out, e);
		return rc;
	}
	if (!wait)
		resp_status(out, "OK");
	return 0;
}

/* ---- a question held while the primary changes ----
 *
 * A client that asks where the primary is while its shard is between two primaries
 * (the primary down, or a failover before its promotion) is answered when the shard
 * has one again (fo_primary_settled: at the promotion, not after the repoints),
 * CTL_HOLD_MAX_MS at most, instead of at once with the old address or a master
 * flagged s_down/o_down: redis-py's default raises MasterNotFoundError on the latter
 * and ioredis connects to a dead server. The failover lasts milliseconds; the
 * question waits that long and gets the new primary. Only GET-MASTER-ADDR-BY-NAME,
 * MASTER and MASTERS are held; the connection reads nothing behind the held one.
 * Nothing polls: every event the controller logs (a failover's steps, node_up …)
 * wakes the held questions (ctl_event.c's ctl_changed: ctl_hold_wake) on the next
 * loop turn, when the change is whole; each also has one timer for CTL_HOLD_MAX_MS
 * (ctl_hold.c). */

static bool shard_unsettled(const struct ctl *c, const struct fo_shard *s)
{
	if (c->ha && !ctl_may_act(c) && ctl_ha_etcd_why(c)[0])
		return false; /* a follower cut off from etcd answers at once (no master) */
	return !fo_primary_settled(s) || (s->flags & FO_S_ODOWN) ||
	       (c->fo.nodes[s->primary].flags & FO_N_SDOWN);
}

static bool hold_wanted(struct ctl *c, const struct resp_cmd *cmd)
{
	const char *sub = cmd->argc > 1 ? cmd->argv[1] : "";
	const struct fo_shard *s;

	if (!strcasecmp(sub, "masters") && cmd->argc == 2) {
		for (int i = 0; i < c->fo.nshards; i++)
			if (shard_unsettled(c, &c->fo.shards[i]))
				return true;
		return false;
	}
	if ((strcasecmp(sub, "get-master-addr-by-name") && strcasecmp(sub, "master")) ||
	    cmd->argc != 3)
		return false;
	s = fo_find_shard(&c->fo, cmd->argv[2]);
	return s && shard_unsettled(c, s);
}

static void answer_sentinel(struct ctl_conn *k, struct resp_cmd *cmd);

void ctl_on_sentinel(struct ctl_conn *k, struct resp_cmd *cmd)
{
	if (hold_wanted(k->ctl, cmd) && ctl_hold(k, cmd))
		return;
	answer_sentinel(k, cmd);
}

/* The waiter role's end (ctl_conn_free): its shard waits for nobody now. */
static void waiter_release(struct ctl_conn *k)
{
	struct ctl *c = k->ctl;

	for (int i = 0; i < c->cfg->nshards; i++)
		if (c->sentinel->waiter[i] == k)
			c->sentinel->waiter[i] = NULL;
}

int ctl_sentinel_init(struct ctl *c)
{
	c->sentinel = calloc(1, sizeof(*c->sentinel));
	if (!c->sentinel)
		return -ENOMEM;
	// NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
	c->sentinel->waiter = calloc(ctl_shard_room(c) + 1, sizeof(*c->sentinel->waiter));
	if (!c->sentinel->waiter)
		return -ENOMEM;
	ctl_conn_role_register(c, CTL_ROLE_WAITER, waiter_release);
	return ctl_hold_init(c, hold_wanted, answer_sentinel);
}

void ctl_sentinel_fini(struct ctl *c)
{
	ctl_hold_fini(c);
	if (c->sentinel)
		free(c->sentinel->waiter);
	free(c->sentinel);
	c->sentinel = NULL;
}

static void answer_sentinel(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct fo_shard *s;
	const char *sub = cmd->argc > 1 ? cmd->argv[1] : "";
	char e[400];

	if (cmd->argc < 2) {
		resp_error_reply(out, "ERR wrong number of arguments for 'sentinel' command");
		return;
	}
	if (!strcasecmp(sub, "get-master-addr-by-name") && cmd->argc == 3) {
		char port[16];

		s = fo_find_shard(&c->fo, cmd->argv[2]);
		/* HA mode: a follower that cannot reach etcd may hold a stale primary; it
		 * answers as a Sentinel that knows no master, so clients ask the next one. */
		if (!s || s->primary < 0 || (c->ha && ctl_ha_etcd_why(c)[0] && !ctl_may_act(c))) {
			ctl_reply_null(k, out, true);
			return;
		}
		snprintf(port, sizeof(port), "%d", c->fo.nodes[s->primary].port);
		resp_array(out, 2);
		resp_str(out, c->fo.nodes[s->primary].host);
		resp_str(out, port);
	} else if (!strcasecmp(sub, "masters") && cmd->argc == 2) {
		resp_array(out, fo_live_shards(&c->fo));
		for (int i = 0; i < c->fo.nshards; i++)
			if (!c->fo.shards[i].removed)
				reply_master(k, out, &c->fo.shards[i]);
	} else if (!strcasecmp(sub, "master") && cmd->argc == 3) {
		if ((s = shard_arg(k, cmd->argv[2])))
			reply_master(k, out, s);
	} else if ((!strcasecmp(sub, "replicas") || !strcasecmp(sub, "slaves")) && cmd->argc == 3) {
		int n = 0;

		if (!(s = shard_arg(k, cmd->argv[2])))
			return;
		for (int i = 0; i < s->nnodes; i++)
			n += s->nodes[i] != s->primary;
		resp_array(out, n);
		for (int i = 0; i < s->nnodes; i++)
			if (s->nodes[i] != s->primary)
				reply_replica(k, out, s, &c->fo.nodes[s->nodes[i]]);
	} else if (!strcasecmp(sub, "sentinels") && cmd->argc == 3) {
		if (shard_arg(k, cmd->argv[2]))
			reply_sentinels(k, out); /* HA: the other controllers; else none */
	} else if (!strcasecmp(sub, "myid") && cmd->argc == 2) {
		resp_str(out, c->myid);
	} else if (!strcasecmp(sub, "failover") && cmd->argc == 3) {
		start_failover(k, cmd->argv[2], NULL, false, false);
	} else if (!strcasecmp(sub, "ckquorum") && cmd->argc == 3) {
		if (shard_arg(k, cmd->argv[2]))
			reply_ckquorum(c, out);
	} else if (ctl_members_sentinel(k, cmd) || ctl_runtime_sentinel(k, cmd)) {
		return;
	} else {
		snprintf(e, sizeof(e),
			 "ERR unknown subcommand or wrong number of arguments for "
			 "'%.40s'. Try SENTINEL HELP.",
			 sub);
		resp_error_reply(out, e);
	}
}

/* INFO [section ...]: Sentinel's sections (Server, Clients, CPU, Stats, Sentinel);
 * "default", "all", "everything" or none: all of them; an unknown one: nothing,
 * as Redis. */
static bool info_wants(struct resp_cmd *cmd, const char *section)
{
	if (cmd->argc == 1)
		return true;
	for (int a = 1; a < cmd->argc; a++)
		if (!strcasecmp(cmd->argv[a], section) || !strcasecmp(cmd->argv[a], "default") ||
		    !strcasecmp(cmd->argv[a], "all") || !strcasecmp(cmd->argv[a], "everything"))
			return true;
	return false;
}

void ctl_on_info(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *t = evbuffer_new(), *out = bufferevent_get_output(k->bev);
	long long up_s = age_ms(c->start_ms) / 1000;

	if (!t)
		return;
	if (info_wants(cmd, "server"))
		evbuffer_add_printf(
		    t,
		    "# Server\r\nredis_version:%s\r\nredis_mode:sentinel\r\n"
		    "flatline_version:%s\r\nprocess_id:%d\r\nrun_id:%s\r\n"
		    "tcp_port:%d\r\nuptime_in_seconds:%lld\r\n"
		    "uptime_in_days:%lld\r\nexecutable:%s\r\nconfig_file:%s\r\n\r\n",
		    CTL_REDIS_VERSION, CTL_VERSION, getpid(), c->myid,
		    c->cfg->controller.listen.port, up_s, up_s / 86400, "flatline", c->cfg->path);
	if (info_wants(cmd, "clients"))
		evbuffer_add_printf(t, "# Clients\r\nconnected_clients:%d\r\n\r\n",
				    ctl_clients_count(c));
	if (info_wants(cmd, "sentinel")) {
		evbuffer_add_printf(
		    t,
		    "# Sentinel\r\nsentinel_masters:%d\r\nsentinel_tilt:%d\r\n"
		    "sentinel_tilt_since_seconds:%d\r\n"
		    "sentinel_running_scripts:%d\r\nsentinel_scripts_queue_length:%d\r\n"
		    "sentinel_simulate_failure_flags:%u\r\n",
		    fo_live_shards(&c->fo), c->fo.tilt, c->fo.tilt ? 0 : -1, ctl_hooks_running(c),
		    ctl_hooks_queued(c) - ctl_hooks_running(c), ctl_event_simulated(c));
		for (int i = 0; i < c->fo.nshards; i++) {
			struct fo_shard *s = &c->fo.shards[i];
			struct fo_node *m = s->primary >= 0 ? &c->fo.nodes[s->primary] : NULL;

			if (s->removed)
				continue;

			evbuffer_add_printf(t,
					    "master%d:name=%s,status=%s,address=%s:%d,slaves=%d,"
					    "sentinels=1\r\n",
					    i, s->name,
					    !m || (m->flags & FO_N_SDOWN) ? "odown" : "ok",
					    m ? m->host : "?", m ? m->port : 0, s->nnodes - 1);
		}
	}
	resp_bulk(out, (const char *)evbuffer_pullup(t, -1), evbuffer_get_length(t));
	evbuffer_free(t);
}

void ctl_on_flatline(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev), *t;

	if (cmd->argc >= 2 && ARG_IS(1, "STATUS") && cmd->argc <= 3) {
		bool json = cmd->argc == 3 && ARG_IS(2, "JSON");

		t = evbuffer_new();
		if (!t)
			return;
		if (json)
			ctl_status_json(c, t);
		else
			ctl_status_text(c, t);
		resp_bulk(out, (const char *)evbuffer_pullup(t, -1), evbuffer_get_length(t));
		evbuffer_free(t);
	} else if (cmd->argc >= 3 && cmd->argc <= 5 && ARG_IS(1, "FAILOVER")) {
		/* FLATLINE FAILOVER <shard> [<node>] [TAKEOVER] (a node named TAKEOVER wins) */
		bool tk = cmd->argc > 3 && ARG_IS(cmd->argc - 1, "TAKEOVER") &&
			  (cmd->argc == 5 || !fo_find_node(&c->fo, cmd->argv[3]));
		int nargs = cmd->argc - tk;

		if (cmd->argc == 5 && !tk)
			resp_error_reply(
			    out, "ERR usage: FLATLINE FAILOVER <shard> [<node>] [TAKEOVER]");
		else
			start_failover(k, cmd->argv[2], nargs == 4 ? cmd->argv[3] : NULL, true, tk);
	} else if (cmd->argc >= 2 && cmd->argc <= 4 && ARG_IS(1, "MODE")) {
		ctl_on_flatline_mode(k, cmd);
	} else if (cmd->argc == 2 && ARG_IS(1, "CUTOVER")) {
		ctl_on_flatline_cutover(k, cmd);
	} else if (cmd->argc >= 2 && (ARG_IS(1, "NODE") || ARG_IS(1, "SHARD"))) {
		ctl_on_members(k, cmd);
	} else if (ARG_IS(1, "PROVE")) {
		ctl_on_flatline_prove(k, cmd);
	} else {
		resp_error_reply(
		    out, "ERR usage: FLATLINE STATUS [JSON|TEXT] | FLATLINE FAILOVER "
			 "<shard> [<node>] [TAKEOVER] | FLATLINE MODE [active [FORCE]|shadow] | "
			 "FLATLINE CUTOVER | FLATLINE NODE ADD|REMOVE … | FLATLINE "
			 "SHARD ADD|REMOVE … | FLATLINE PROVE <node>|* <nonce>");
	}
}

void ctl_on_role(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);

	(void)cmd;
	resp_array(out, 2);
	resp_str(out, "sentinel");
	resp_array(out, fo_live_shards(&k->ctl->fo));
	for (int i = 0; i < k->ctl->fo.nshards; i++)
		if (!k->ctl->fo.shards[i].removed)
			resp_str(out, k->ctl->fo.shards[i].name);
}
