// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The controller's requests to the Redis servers: one hiredis async link per node,
 * kept warm, each request answered by its reply or by its timeout. The I/O behind
 * struct fo_ops (ping, info, pause, unpause, promote, replicaof). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libevent.h>
#include "common/clock.h"
#include "common/info.h"
#include "common/log.h"
#include "controller/ctl.h"

enum ctl_req_kind { REQ_INFO, REQ_DISCOVER, REQ_PING, REQ_PAUSE, REQ_UNPAUSE, REQ_PROMOTE,
		    REQ_PROMOTE_PLAIN, REQ_REPLICAOF };

/* One request to a server: answered by hiredis or by its timer, whichever first. */
struct ctl_req {
	struct ctl_link *l;
	enum ctl_req_kind kind;
	struct event *timer;
	bool in_hiredis; /* hiredis holds it: its callback frees it */
	bool finished;   /* delivered (reply, error or timeout) */
	char err[160];   /* set when it failed before reaching the server */
};

static void link_connect(struct ctl_link *l);

static void on_link_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	link_connect(arg);
}

static void link_schedule_retry(struct ctl_link *l)
{
	struct timeval tv = fl_ms_tv(l->retry_ms);

	evtimer_add(l->retry, &tv);
	l->retry_ms = l->retry_ms * 2 > CTL_RETRY_MAX_MS ? CTL_RETRY_MAX_MS : l->retry_ms * 2;
}

static void on_link_connect(const redisAsyncContext *ac, int status)
{
	struct ctl_link *l = ac->data;

	if (status != REDIS_OK) {
		pr_debug("failed to connect to %s: %s\n", l->ctl->fo.nodes[l->node].id, ac->errstr);
		if (l->ac != ac)
			return; /* an old context, already replaced */
		l->ac = NULL; /* hiredis frees it */
		l->connected = false;
		link_schedule_retry(l); /* the disconnect callback is not called */
		return;
	}
	l->connected = true;
	l->retry_ms = CTL_RETRY_MIN_MS;
}

static void on_link_disconnect(const redisAsyncContext *ac, int status)
{
	struct ctl_link *l = ac->data;

	(void)status;
	if (l->ac != ac)
		return; /* dropped by link_reset, maybe already replaced */
	l->ac = NULL;
	l->connected = false;
	link_schedule_retry(l); /* kept warm: a promotion never waits for a connect */
}

static void link_connect(struct ctl_link *l)
{
	struct ctl *c = l->ctl;
	const struct cfg_node *cn = &c->cfg->nodes[l->node];
	redisAsyncContext *ac;

	if (l->ac)
		return;
	if (cn->redis.unix_path[0])
		ac = redisAsyncConnectUnix(cn->redis.unix_path);
	else
		ac = redisAsyncConnect(cn->redis.host, cn->redis.port);
	if (!ac)
		return;
	if (ac->err) {
		pr_debug("failed to connect to %s: %s\n", cn->id, ac->errstr);
		redisAsyncFree(ac);
		return;
	}
	ac->data = l;
	if (redisLibeventAttach(ac, c->base) != REDIS_OK) {
		redisAsyncFree(ac);
		return;
	}
	redisAsyncSetConnectCallback(ac, on_link_connect);
	redisAsyncSetDisconnectCallback(ac, on_link_disconnect);
	l->ac = ac;
	if (c->cfg->redis.password[0]) {
		if (c->cfg->redis.user[0])
			redisAsyncCommand(ac, NULL, NULL, "AUTH %s %s", c->cfg->redis.user,
					  c->cfg->redis.password);
		else
			redisAsyncCommand(ac, NULL, NULL, "AUTH %s", c->cfg->redis.password);
	}
	redisAsyncCommand(ac, NULL, NULL, "CLIENT SETNAME flatline-controller");
}

/* The link went bad (a request timed out): drop it, pending requests fail. */
static void link_reset(struct ctl_link *l)
{
	redisAsyncContext *ac = l->ac;

	if (!ac)
		return;
	/* Detached first: callbacks run by the free may already send on a new one. */
	l->ac = NULL;
	l->connected = false;
	redisAsyncFree(ac); /* calls every pending callback with a NULL reply */
	if (!l->ac && l->retry && l->ctl->base)
		link_schedule_retry(l);
}

static void req_deliver(struct ctl_req *q, redisReply *rep, const char *err);

static void req_free(struct ctl_req *q)
{
	if (q->timer)
		event_free(q->timer);
	free(q);
}

static void on_req_timer(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_req *q = arg;
	struct ctl_link *l = q->l;

	(void)fd;
	(void)what;
	if (q->finished)
		return;
	q->finished = true;
	req_deliver(q, NULL, q->err[0] ? q->err : "timed out");
	if (!q->in_hiredis) {
		req_free(q);
		return;
	}
	/* Nothing else queued on this link can be trusted to answer soon either. */
	link_reset(l);
}

static void on_req_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct ctl_req *q = privdata;

	(void)ac;
	q->in_hiredis = false;
	if (!q->finished) {
		q->finished = true;
		evtimer_del(q->timer);
		req_deliver(q, reply, reply ? NULL : "connection lost");
	}
	req_free(q);
}

/* Sends argv to node's server as request kind, answered within timeout_ms. */
static struct ctl_req *req_new(struct ctl *c, int node, enum ctl_req_kind kind, int timeout_ms)
{
	struct ctl_link *l = &c->links[node];
	struct ctl_req *q = calloc(1, sizeof(*q));
	struct timeval tv = fl_ms_tv(timeout_ms);

	if (!q)
		return NULL;
	q->l = l;
	q->kind = kind;
	q->timer = evtimer_new(c->base, on_req_timer, q);
	if (!q->timer) {
		free(q);
		return NULL;
	}
	evtimer_add(q->timer, &tv);
	link_connect(l);
	if (!l->ac) {
		/* Fails from the loop, never from inside the caller. */
		snprintf(q->err, sizeof(q->err), "cannot connect to %.120s", c->cfg->nodes[node].redis_str);
		event_active(q->timer, EV_TIMEOUT, 0);
		return NULL;
	}
	return q;
}

static void req_send(struct ctl_req *q, int argc, const char **argv)
{
	if (!q)
		return;
	if (redisAsyncCommandArgv(q->l->ac, on_req_reply, q, argc, argv, NULL) != REDIS_OK) {
		snprintf(q->err, sizeof(q->err), "failed to send the command");
		event_active(q->timer, EV_TIMEOUT, 0);
		return;
	}
	q->in_hiredis = true;
}

static void send_fire_and_forget(struct ctl *c, int node, int argc, const char **argv)
{
	struct ctl_link *l = &c->links[node];

	link_connect(l);
	if (l->ac)
		redisAsyncCommandArgv(l->ac, NULL, NULL, argc, argv, NULL);
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

static void promote_plain(struct ctl *c, int node);

/* The promotion's EXEC: REPLICAOF NO ONE must say OK; CONFIG REWRITE may fail
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
		snprintf(err, errlen, "REPLICAOF NO ONE: %s", rep->element[0]->str);
		return false;
	}
	if (rep->elements > 1 && rep->element[1]->type == REDIS_REPLY_ERROR) {
		struct evrec r;

		evrec_begin(&r, NULL, "controller", "config_rewrite_failed");
		evrec_str(&r, "instance", c->fo.nodes[node].id);
		evrec_str(&r, "reason", rep->element[1]->str);
		evrec_bool(&r, "no_config_file", strstr(rep->element[1]->str, "config file") != NULL);
		ctl_log(c, &r);
	}
	return true;
}

static void req_deliver(struct ctl_req *q, redisReply *rep, const char *err_in)
{
	struct ctl *c = q->l->ctl;
	struct fo_node *n = &c->fo.nodes[q->l->node];
	struct info_repl info;
	char err[200] = "";
	bool ok;

	if (!rep)
		snprintf(err, sizeof(err), "%s", err_in ? err_in : "no reply");
	switch (q->kind) {
	case REQ_INFO:
	case REQ_DISCOVER:
		ok = rep && !reply_info(rep, &info, err, sizeof(err));
		if (!ok)
			pr_debug("failed to read INFO of %s: %s\n", n->id, err);
		fo_on_info(&c->fo, n, ok, ok ? &info : NULL, err);
		if (q->kind == REQ_DISCOVER)
			ctl_discover_one_done(c);
		break;
	case REQ_PING:
		fo_on_reach(&c->fo, n, rep && (rep->type != REDIS_REPLY_ERROR ||
					       !strncmp(rep->str, "LOADING", 7) ||
					       !strncmp(rep->str, "BUSY", 4)));
		break;
	case REQ_PAUSE:
		ok = rep && reply_ok(rep, err, sizeof(err));
		fo_on_pause(&c->fo, n, ok, err);
		break;
	case REQ_UNPAUSE:
		break;
	case REQ_PROMOTE:
		if (rep && rep->type == REDIS_REPLY_ERROR && strstr(rep->str, "EXECABORT")) {
			/* A server that refuses part of the transaction (Dragonfly): the
			 * promotion alone, without the optional commands. */
			pr_info("promotion transaction refused by %s (%s): REPLICAOF NO ONE alone\n",
				n->id, rep->str);
			promote_plain(c, n->idx);
			break;
		}
		ok = rep && promote_result(c, n->idx, rep, err, sizeof(err));
		fo_on_promote(&c->fo, n, ok, err);
		break;
	case REQ_PROMOTE_PLAIN:
		ok = rep && reply_ok(rep, err, sizeof(err));
		fo_on_promote(&c->fo, n, ok, err);
		break;
	case REQ_REPLICAOF:
		ok = rep && reply_ok(rep, err, sizeof(err));
		fo_on_replicaof(&c->fo, n, ok, err);
		break;
	}
}

/* ---- the fo_ops ---- */

void ctl_op_ping(void *ctx, int node, int timeout_ms)
{
	const char *argv[] = { "PING" };

	req_send(req_new(ctx, node, REQ_PING, timeout_ms), 1, argv);
}

void ctl_op_info(void *ctx, int node, int timeout_ms)
{
	const char *argv[] = { "INFO", "replication" };

	req_send(req_new(ctx, node, REQ_INFO, timeout_ms), 2, argv);
}

void ctl_op_pause(void *ctx, int node, int pause_ms, int timeout_ms)
{
	char ms[24];
	const char *argv[] = { "CLIENT", "PAUSE", ms, "WRITE" };

	snprintf(ms, sizeof(ms), "%d", pause_ms);
	req_send(req_new(ctx, node, REQ_PAUSE, timeout_ms), 4, argv);
}

void ctl_op_unpause(void *ctx, int node)
{
	const char *argv[] = { "CLIENT", "UNPAUSE" };

	send_fire_and_forget(ctx, node, 2, argv);
}

void ctl_op_promote(void *ctx, int node, int timeout_ms)
{
	struct ctl *c = ctx;
	struct ctl_req *q = req_new(c, node, REQ_PROMOTE, timeout_ms);
	static const char *const cmds[][4] = {
		{ "MULTI" }, { "REPLICAOF", "NO", "ONE" }, { "CONFIG", "REWRITE" },
		{ "CLIENT", "KILL", "TYPE", "normal" }, { "CLIENT", "KILL", "TYPE", "pubsub" },
	};
	static const int argcs[] = { 1, 3, 2, 4, 4 };
	const char *exec[] = { "EXEC" };

	if (!q)
		return;
	for (size_t i = 0; i < sizeof(argcs) / sizeof(argcs[0]); i++)
		redisAsyncCommandArgv(q->l->ac, NULL, NULL, argcs[i], (const char **)cmds[i], NULL);
	req_send(q, 1, exec);
}

static void promote_plain(struct ctl *c, int node)
{
	const char *argv[] = { "REPLICAOF", "NO", "ONE" };

	req_send(req_new(c, node, REQ_PROMOTE_PLAIN, c->fo.promote_timeout_ms), 3, argv);
}

void ctl_op_replicaof(void *ctx, int node, int master, int timeout_ms)
{
	struct ctl *c = ctx;
	const struct fo_node *m = &c->fo.nodes[master];
	char port[16];
	const char *argv[] = { "REPLICAOF", m->host, port };

	snprintf(port, sizeof(port), "%d", m->port);
	req_send(req_new(c, node, REQ_REPLICAOF, timeout_ms), 3, argv);
}

/* The first INFO round at start: answers count down c->discover_pending. */
void ctl_server_discover(struct ctl *c, int node, int timeout_ms)
{
	const char *argv[] = { "INFO", "replication" };

	req_send(req_new(c, node, REQ_DISCOVER, timeout_ms), 2, argv);
}

int ctl_servers_start(struct ctl *c)
{
	for (int i = 0; i < c->cfg->nnodes; i++) {
		struct ctl_link *l = &c->links[i];

		l->ctl = c;
		l->node = i;
		l->retry_ms = CTL_RETRY_MIN_MS;
		l->retry = evtimer_new(c->base, on_link_retry, l);
		if (!l->retry)
			return -ENOMEM;
	}
	return 0;
}

void ctl_servers_free(struct ctl *c)
{
	for (int i = 0; i < FO_MAX_NODES; i++) {
		link_reset(&c->links[i]);
		if (c->links[i].retry)
			event_free(c->links[i].retry);
	}
}
