// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The controller's requests to the Redis servers: one redis_link per node (the
 * agent's link: reconnect with backoff, kept warm, each request answered by its
 * reply or by its timeout). The I/O behind struct fo_ops (ping, info, pause,
 * unpause, promote, replicaof). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include "common/auth.h"
#include "common/info.h"
#include "common/log.h"
#include "common/redis_link.h"
#include "common/tls.h"
#include "controller/ctl.h"

#define CTL_CONNECT_TIMEOUT_MS 1000

/* Our connection to one node's server. */
struct ctl_server {
	struct ctl *ctl;
	int node;
	struct redis_link *link;
	char run_id[48];		   /* INFO server's, asked on every connect */
	char last_proto[200];		   /* the last protocol error printed: once per change */
	void (*discovered)(struct ctl *c); /* the start-up round's INFO answered */
};

/* The module's state (c->servers). */
struct ctl_servers {
	struct ctl_server **node; /* one per node slot (ctl_node_room), NULL: no link */
	struct ssl_ctx_st *tls;	  /* [redis] tls: what every link uses, NULL without */
};

static struct fo_node *server_node(const struct ctl_server *s)
{
	return &s->ctl->fo.nodes[s->node];
}

static void on_server_info(void *ctx, redisReply *rep, const char *err, void *priv)
{
	struct ctl_server *s = ctx;
	const char *p;
	size_t n;

	(void)err;
	(void)priv;
	if (!rep || rep->type != REDIS_REPLY_STRING || !(p = strstr(rep->str, "run_id:")))
		return;
	p += 7;
	n = strcspn(p, "\r\n");
	if (n < sizeof(s->run_id))
		snprintf(s->run_id, sizeof(s->run_id), "%.*s", (int)n, p);
}

const char *ctl_server_runid(const struct ctl *c, int node)
{
	if (!c->servers || !c->servers->node || node < 0 || node >= c->nnodes ||
	    !c->servers->node[node])
		return "";
	return c->servers->node[node]->run_id;
}

/* The handshake: before anything held for the connection. */
/* The connection's name: proves to the node's agent that this connection is ours, so
 * that its write lease lets our commands be answered (common/auth.h, auth_conn_name).
 * Plain "flatline-controller" when there is no key or the ends cannot be read. */
static void conn_name(const struct ctl_server *s, char *name, size_t len)
{
	const struct cfg_node *cn = &s->ctl->cfg->nodes[s->node];
	struct sockaddr_storage me = {0}, srv = {0};
	socklen_t ml = sizeof(me), sl = sizeof(srv);
	uint8_t key[AUTH_KEY_LEN];
	int fd = redis_link_fd(s->link);

	snprintf(name, len, "flatline-controller");
	if (fd < 0 || getsockname(fd, (struct sockaddr *)&me, &ml) ||
	    getpeername(fd, (struct sockaddr *)&srv, &sl) ||
	    auth_key_for(cn->key, s->ctl->cfg->secret, cn->id, key))
		return;
	if (auth_conn_name(key, cn->id, (struct sockaddr *)&me, (struct sockaddr *)&srv, name, len))
		snprintf(name, len, "flatline-controller");
}

static void on_server_up(void *ctx)
{
	struct ctl_server *s = ctx;
	char name[AUTH_CONN_NAME_MAX];
	const char *setname[] = {"CLIENT", "SETNAME", name};
	const char *user, *pass;

	conn_name(s, name, sizeof(name));

	/* The cluster file's, or the shard's SENTINEL SET auth-user/auth-pass. */
	ctl_runtime_auth(s->ctl, s->ctl->fo.nodes[s->node].shard, &user, &pass);
	if (pass[0]) {
		const char *auth[] = {"AUTH", user, pass};
		const char *auth_default[] = {"AUTH", pass};

		if (user[0])
			redis_link_send(s->link, 3, auth);
		else
			redis_link_send(s->link, 2, auth_default);
	}
	redis_link_send(s->link, 3, setname);
	s->run_id[0] = '\0'; /* a restart gets another */
	{
		const char *info[] = {"INFO", "server"};

		redis_link_request(s->link, 1000, on_server_info, NULL, 2, info);
	}
}

static void on_server_down(void *ctx, const char *why, int err)
{
	struct ctl_server *s = ctx;

	/* What answers at a server's address may not be Redis: a
	 * protocol error is a warning, once per change; the link dials again. */
	if (err == EPROTO && strcmp(s->last_proto, why)) {
		snprintf(s->last_proto, sizeof(s->last_proto), "%s", why);
		pr_warn("closed the connection to %s's server (%s): %s\n", server_node(s)->id,
			s->ctl->cfg->nodes[s->node].redis_str, why);
		return;
	}
	pr_debug("lost the connection to %s: %s\n", server_node(s)->id, why);
}

static int reply_info(redisReply *rep, struct info_repl *info, char *err, size_t errlen)
{
	if (rep->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "%s", rep->str);
		return -EIO;
	}
	if (rep->type != REDIS_REPLY_STRING) {
		snprintf(err, errlen, "INFO answered with type %d", rep->type);
		return -EPROTO;
	}
	if (info_parse(rep->str, rep->len, info)) {
		snprintf(err, errlen, "failed to parse INFO");
		return -EPROTO;
	}
	return 0;
}

static bool reply_ok(redisReply *rep, char *err, size_t errlen)
{
	if (rep->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "%s", rep->str);
		return false;
	}
	return true;
}

/* The EXEC of a promotion or a repoint: REPLICAOF must say OK; CONFIG REWRITE may fail
 * (no config file, or a server without it); CLIENT KILL results do not matter. */
static bool promote_result(struct ctl *c, int node, redisReply *rep, char *err, size_t errlen)
{
	if (rep->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "%s", rep->str);
		return false;
	}
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1) {
		snprintf(err, errlen, "EXEC answered with type %d", rep->type);
		return false;
	}
	if (rep->element[0]->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "REPLICAOF: %s", rep->element[0]->str);
		return false;
	}
	if (rep->elements > 1 && rep->element[1]->type == REDIS_REPLY_ERROR) {
		struct evrec r;

		evrec_begin(&r, NULL, "controller", "config_rewrite_failed");
		evrec_str(&r, "instance", c->fo.nodes[node].id);
		evrec_str(&r, "reason", rep->element[1]->str);
		evrec_bool(&r, "no_config_file",
			   strstr(rep->element[1]->str, "config file") != NULL);
		ctl_log(c, &r);
	}
	return true;
}

static void on_info_reply(void *ctx, redisReply *rep, const char *err_in, void *priv)
{
	struct ctl_server *s = ctx;
	struct fo_node *n = server_node(s);
	struct info_repl info;
	char err[200] = "";
	bool ok;

	if (!rep)
		snprintf(err, sizeof(err), "%s", err_in);
	ok = rep && !reply_info(rep, &info, err, sizeof(err));
	if (!ok)
		pr_debug("failed to read INFO of %s: %s\n", n->id, err);
	fo_on_info(&s->ctl->fo, n, ok, ok ? &info : NULL, err);
	if (priv && s->discovered) /* the start-up round */
		s->discovered(s->ctl);
}

static void on_ping_reply(void *ctx, redisReply *rep, const char *err, void *priv)
{
	struct ctl_server *s = ctx;

	(void)err;
	(void)priv;
	fo_on_reach(&s->ctl->fo, server_node(s),
		    rep && (rep->type != REDIS_REPLY_ERROR || !strncmp(rep->str, "LOADING", 7) ||
			    !strncmp(rep->str, "BUSY", 4)));
}

/* An answer that is OK, else why not: to fo_on_pause, fo_on_promote or fo_on_replicaof. */
static void answer_ok(void *ctx, redisReply *rep, const char *err_in,
		      void (*done)(struct fo_cluster *c, struct fo_node *n, bool ok,
				   const char *err))
{
	struct ctl_server *s = ctx;
	char err[200] = "";
	bool ok;

	if (!rep)
		snprintf(err, sizeof(err), "%s", err_in);
	ok = rep && reply_ok(rep, err, sizeof(err));
	done(&s->ctl->fo, server_node(s), ok, err);
}

static void on_pause_reply(void *ctx, redisReply *rep, const char *err, void *priv)
{
	(void)priv;
	answer_ok(ctx, rep, err, fo_on_pause);
}

/* REPLICAOF alone, for a server that refused the transaction. */
static void on_replicaof_plain_reply(void *ctx, redisReply *rep, const char *err, void *priv)
{
	(void)priv;
	answer_ok(ctx, rep, err, fo_on_replicaof);
}

/* The repoint's EXEC: REPLICAOF must say OK, as in the promotion. */
static void on_replicaof_reply(void *ctx, redisReply *rep, const char *err_in, void *priv)
{
	struct ctl_server *s = ctx;
	struct ctl *c = s->ctl;
	struct fo_node *n = server_node(s);
	const struct fo_node *m = priv; /* the new master: c->fo.nodes[] stays put */
	char err[200] = "";
	bool ok;

	if (rep && rep->type == REDIS_REPLY_ERROR && strstr(rep->str, "EXECABORT")) {
		char port[16];
		const char *argv[] = {"REPLICAOF", m->host, port};

		snprintf(port, sizeof(port), "%d", m->port);
		pr_info("repoint transaction refused by %s (%s): REPLICAOF alone\n", n->id,
			rep->str);
		redis_link_request(s->link, c->fo.promote_timeout_ms, on_replicaof_plain_reply,
				   NULL, 3, argv);
		return;
	}
	if (!rep)
		snprintf(err, sizeof(err), "%s", err_in);
	ok = rep && promote_result(c, n->idx, rep, err, sizeof(err));
	fo_on_replicaof(&c->fo, n, ok, err);
}

/* REPLICAOF NO ONE alone, for a server that refused the transaction. */
static void on_promote_plain_reply(void *ctx, redisReply *rep, const char *err, void *priv)
{
	(void)priv;
	answer_ok(ctx, rep, err, fo_on_promote);
}

static void on_promote_reply(void *ctx, redisReply *rep, const char *err_in, void *priv)
{
	struct ctl_server *s = ctx;
	struct ctl *c = s->ctl;
	struct fo_node *n = server_node(s);
	char err[200] = "";
	bool ok;

	(void)priv;
	if (rep && rep->type == REDIS_REPLY_ERROR && strstr(rep->str, "EXECABORT")) {
		const char *argv[] = {"REPLICAOF", "NO", "ONE"};

		/* A server that refuses part of the transaction (Dragonfly): the
		 * promotion alone, without the optional commands. */
		pr_info("promotion transaction refused by %s (%s): REPLICAOF NO ONE alone\n", n->id,
			rep->str);
		redis_link_request(s->link, c->fo.promote_timeout_ms, on_promote_plain_reply, NULL,
				   3, argv);
		return;
	}
	if (!rep)
		snprintf(err, sizeof(err), "%s", err_in);
	ok = rep && promote_result(c, n->idx, rep, err, sizeof(err));
	fo_on_promote(&c->fo, n, ok, err);
}

static struct redis_link *link_of(void *ctx, int node)
{
	struct ctl *c = ctx;

	return c->servers->node[node]->link;
}

/* ---- the fo_ops ---- */

void ctl_op_ping(void *ctx, int node, int timeout_ms)
{
	const char *argv[] = {"PING"};

	redis_link_request(link_of(ctx, node), timeout_ms, on_ping_reply, NULL, 1, argv);
}

void ctl_op_info(void *ctx, int node, int timeout_ms)
{
	const char *argv[] = {"INFO", "replication"};

	redis_link_request(link_of(ctx, node), timeout_ms, on_info_reply, NULL, 2, argv);
}

void ctl_op_pause(void *ctx, int node, int pause_ms, int timeout_ms)
{
	char ms[24];
	const char *argv[] = {"CLIENT", "PAUSE", ms, "WRITE"};

	snprintf(ms, sizeof(ms), "%d", pause_ms);
	redis_link_request(link_of(ctx, node), timeout_ms, on_pause_reply, NULL, 4, argv);
}

void ctl_op_unpause(void *ctx, int node)
{
	const char *argv[] = {"CLIENT", "UNPAUSE"};

	redis_link_send(link_of(ctx, node), 2, argv);
}

/* One transaction: REPLICAOF NO ONE, CONFIG REWRITE and the client kills. */
void ctl_op_promote(void *ctx, int node, int timeout_ms)
{
	struct redis_link *l = link_of(ctx, node);
	static const char *const cmds[][4] = {
	    {"MULTI"},
	    {"REPLICAOF", "NO", "ONE"},
	    {"CONFIG", "REWRITE"},
	    {"CLIENT", "KILL", "TYPE", "normal"},
	    {"CLIENT", "KILL", "TYPE", "pubsub"},
	};
	static const int argcs[] = {1, 3, 2, 4, 4};
	const char *exec[] = {"EXEC"};

	for (size_t i = 0; i < sizeof(argcs) / sizeof(argcs[0]); i++)
		redis_link_send(l, argcs[i], (const char **)cmds[i]);
	redis_link_request(l, timeout_ms, on_promote_reply, NULL, 1, exec);
}

/* As Sentinel reconfigures an instance (sentinelSendSlaveOf): REPLICAOF, CONFIG
 * REWRITE and the kill of every normal and pub/sub client, in one transaction, so
 * that clients connected to a demoted or repointed server reconnect and ask the
 * Sentinel API again instead of meeting READONLY. Our own link is spared (CLIENT
 * KILL skips the caller); the agent's reconnects. */
void ctl_op_replicaof(void *ctx, int node, int master, int timeout_ms)
{
	struct ctl *c = ctx;
	struct redis_link *l = link_of(ctx, node);
	const struct fo_node *m = &c->fo.nodes[master];
	char port[16];
	const char *multi[] = {"MULTI"};
	const char *replicaof[] = {"REPLICAOF", m->host, port};
	const char *rewrite[] = {"CONFIG", "REWRITE"};
	const char *kill_normal[] = {"CLIENT", "KILL", "TYPE", "normal"};
	const char *kill_pubsub[] = {"CLIENT", "KILL", "TYPE", "pubsub"};
	const char *exec[] = {"EXEC"};

	snprintf(port, sizeof(port), "%d", m->port);
	redis_link_send(l, 1, multi);
	redis_link_send(l, 3, replicaof);
	redis_link_send(l, 2, rewrite);
	redis_link_send(l, 4, kill_normal);
	redis_link_send(l, 4, kill_pubsub);
	redis_link_request(l, timeout_ms, on_replicaof_reply, (void *)m, 1, exec);
}

/* The first INFO round at start: each answer calls done (ctl_discover.c). */
void ctl_server_discover(struct ctl *c, int node, int timeout_ms, void (*done)(struct ctl *c))
{
	const char *argv[] = {"INFO", "replication"};

	if (!c->servers->node[node]) { /* removed at runtime */
		if (done)
			done(c);
		return;
	}
	c->servers->node[node]->discovered = done;
	redis_link_request(c->servers->node[node]->link, timeout_ms, on_info_reply, c, 2, argv);
}

/* [redis] tls = yes: the context every server link uses (they hold references). */
static int ctl_servers_tls(struct ctl *c)
{
	char err[600];

	if (!c->cfg->redis.tls)
		return 0;
	c->servers->tls =
	    tls_client_ctx(c->cfg, "redis", &c->cfg->redis.tls_files, NULL, err, sizeof(err));
	if (!c->servers->tls) {
		pr_warn("failed to set up TLS to the servers: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

int ctl_servers_start(struct ctl *c)
{
	int rc;

	c->servers = calloc(1, sizeof(*c->servers));
	if (!c->servers)
		return -ENOMEM;
	rc = ctl_servers_tls(c);
	if (rc)
		return rc;
	c->servers->node = calloc(ctl_node_room(c) + 1, sizeof(struct ctl_server *));
	if (!c->servers->node)
		return -ENOMEM;
	for (int i = 0; i < c->cfg->nnodes; i++) {
		rc = c->cfg->nodes[i].removed ? 0 : ctl_server_add(c, i);
		if (rc)
			return rc;
	}
	return 0;
}

int ctl_server_add(struct ctl *c, int node)
{
	static const struct redis_link_ops ops = {.on_up = on_server_up, .on_down = on_server_down};
	const struct cfg_node *cn = &c->cfg->nodes[node];
	struct ctl_server *s;

	ctl_server_drop(c, node);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	c->servers->node[node] = s;
	s->ctl = c;
	s->node = node;
	s->link =
	    redis_link_new(c->base, &cn->redis, cn->redis_str, CTL_CONNECT_TIMEOUT_MS, &ops, s);
	if (!s->link || (c->servers->tls && redis_link_set_tls(s->link, c->servers->tls,
							       c->cfg->redis.tls_server_name)))
		return -ENOMEM;
	/* Kept warm: a promotion never waits for a connect. */
	redis_link_set_backoff(s->link, CTL_RETRY_MIN_MS, CTL_RETRY_MAX_MS);
	return 0;
}

void ctl_server_drop(struct ctl *c, int node)
{
	if (!c->servers || !c->servers->node || !c->servers->node[node])
		return;
	redis_link_free(c->servers->node[node]->link);
	free(c->servers->node[node]);
	c->servers->node[node] = NULL;
}

bool ctl_server_linked(const struct ctl *c, int node)
{
	return c->servers && c->servers->node && node >= 0 && node < ctl_node_room(c) &&
	       c->servers->node[node];
}

bool ctl_server_request(struct ctl *c, int node, int timeout_ms, redis_link_result_fn fn,
			void *priv, int argc, const char **argv)
{
	if (!c->servers || !c->servers->node || node < 0 || node >= c->nnodes ||
	    !c->servers->node[node])
		return false;
	redis_link_request(c->servers->node[node]->link, timeout_ms, fn, priv, argc, argv);
	return true;
}

void ctl_servers_free(struct ctl *c)
{
	if (!c->servers)
		return;
	for (int i = 0; c->servers->node && i < c->nnodes; i++)
		ctl_server_drop(c, i);
	free(c->servers->node);
	if (c->servers->tls)
		SSL_CTX_free(c->servers->tls);
	free(c->servers);
	c->servers = NULL;
}
