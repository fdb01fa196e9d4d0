// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* flatline controller: agents report here (HELLO, REPORT), Sentinel-aware clients
 * query and subscribe here, on one listen address; the servers are driven through
 * hiredis async on the same libevent loop. Decisions are failover.c's: this file
 * is the I/O behind struct fo_ops. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fnmatch.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libevent.h>
#include "cmds.h"
#include "common/config.h"
#include "controller/controller.h"
#include "controller/dns.h"
#include "common/event_log.h"
#include "controller/failover.h"
#include "common/info.h"
#include "common/log.h"
#include "common/resp.h"

#define CTL_TICK_MS 100         /* TILT check */
#define CTL_DNS_FIRST_CHECK_MS 1500 /* after the start-up INFO round (at most 1 s) */
#define CTL_DISCOVER_MS 1000    /* the first INFO round at start */
#define CTL_RETRY_MIN_MS 100    /* reconnecting to a server */
#define CTL_RETRY_MAX_MS 1000
#define CTL_PROTO_VERSION "1"
#define CTL_MAX_SUBS 64
#define CTL_PUBSUB_MAX_OUT (8u << 20) /* bytes a subscriber may leave unread */

enum ctl_req_kind { REQ_INFO, REQ_DISCOVER, REQ_PING, REQ_PAUSE, REQ_UNPAUSE, REQ_PROMOTE,
		    REQ_PROMOTE_PLAIN, REQ_REPLICAOF };

struct ctl;

/* Our connection to one node's server. */
struct ctl_link {
	struct ctl *ctl;
	int node;
	redisAsyncContext *ac;
	bool connected;
	int retry_ms;
	struct event *retry; /* reconnect timer */
};

/* One request to a server: answered by hiredis or by its timer, whichever first. */
struct ctl_req {
	struct ctl_link *l;
	enum ctl_req_kind kind;
	struct event *timer;
	bool in_hiredis; /* hiredis holds it: its callback frees it */
	bool finished;   /* delivered (reply, error or timeout) */
	char err[160];   /* set when it failed before reaching the server */
};

/* A client or agent connection. */
struct ctl_conn {
	struct ctl *ctl;
	struct bufferevent *bev;
	struct resp_reader *rd;
	char peer[80];
	unsigned flags;
#define CTL_C_AGENT (1u << 0)   /* HELLO flatline accepted: node is set */
#define CTL_C_AUTH (1u << 1)    /* AUTH with the cluster secret: may change state */
#define CTL_C_PUBSUB (1u << 2)  /* subscribed to a channel or a pattern */
#define CTL_C_CLOSING (1u << 3) /* closes once its output is flushed */
#define CTL_C_WAITING (1u << 4) /* a FLATLINE FAILOVER answer is deferred */
	int node;
	long long seq;
	struct event *resume; /* reads on after a deferred answer */
	char *subs[CTL_MAX_SUBS];
	int nsubs;
	char *psubs[CTL_MAX_SUBS];
	int npsubs;
	struct ctl_conn *next, *prev;
};

struct ctl {
	struct cfg *cfg;
	struct fo_cluster fo;
	struct event_base *base;
	struct evconnlistener *lis;
	struct evlog *log;
	char event_log[256];
	char state_file[256];
	char listen_str[300];
	char myid[41];
	long long start_ms;
	struct ctl_conn *conns;
	struct ctl_link links[FO_MAX_NODES];
	struct event *node_timer[FO_MAX_NODES]; /* heartbeat deadline */
	struct event **shard_timer;
	struct ctl_conn **waiter; /* per shard: the client waiting for FLATLINE FAILOVER */
	struct event *tick, *sigint, *sigterm;
	int discover_pending;
	struct event *discover_timer;
	char reject_last[FO_MAX_NODES + 1][160]; /* last rejection logged per node (+unknown) */
	struct dns_updater *dns;
	struct ctl_dns *dnss;     /* per shard: what DNS says and why we last wrote it */
	struct event *dns_check;  /* the drift check, every [dns] check_ms */
};

/* The DNS record of one shard as the controller knows it. */
struct ctl_dns {
	int agrees;               /* the record is exactly the primary: 1, 0, -1 unknown */
	bool repair;              /* the queued update is a repair (dns_repaired) */
	char seen[DNS_ADDR_MAX];  /* what the last query found ("" none) */
	long long cfg_err_ms;     /* last configuration error (REFUSED, BADKEY …) */
	char cfg_err[DNS_ERR_MAX]; /* its text, printed once per change */
};

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long clk_mono(void *ctx)
{
	(void)ctx;
	return mono_ms();
}

static long long clk_wall(void *ctx)
{
	(void)ctx;
	return wall_ms();
}

static void ctl_log(struct ctl *c, struct evrec *r)
{
	int err;

	if (!c->log)
		return;
	err = evlog_write(c->log, r);
	if (err)
		pr_warn("failed to write event log %s: %s\n", c->event_log, strerror(-err));
}

static struct timeval tv_ms(long ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	return tv;
}

/* ------------------------------------------------------------------------- */
/* Pub/sub */

static void conn_send_message(struct ctl_conn *k, const char *pattern, const char *channel,
			      const char *msg)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);

	if (pattern) {
		resp_array(out, 4);
		resp_str(out, "pmessage");
		resp_str(out, pattern);
	} else {
		resp_array(out, 3);
		resp_str(out, "message");
	}
	resp_str(out, channel);
	resp_str(out, msg);
}

static void conn_fatal(struct ctl_conn *k, const char *err);

static void publish(struct ctl *c, const char *channel, const char *msg)
{
	for (struct ctl_conn *k = c->conns; k; k = k->next) {
		if (!(k->flags & CTL_C_PUBSUB) || (k->flags & CTL_C_CLOSING))
			continue;
		/* A subscriber that does not read: dropped, as Redis's pubsub output limit. */
		if (evbuffer_get_length(bufferevent_get_output(k->bev)) > CTL_PUBSUB_MAX_OUT) {
			pr_warn("dropping subscriber %s: %d bytes unread\n", k->peer,
				(int)evbuffer_get_length(bufferevent_get_output(k->bev)));
			conn_fatal(k, "ERR output buffer limit reached");
			continue;
		}
		for (int i = 0; i < k->nsubs; i++)
			if (!strcmp(k->subs[i], channel))
				conn_send_message(k, NULL, channel, msg);
		for (int i = 0; i < k->npsubs; i++)
			if (!fnmatch(k->psubs[i], channel, 0))
				conn_send_message(k, k->psubs[i], channel, msg);
	}
}

/* ------------------------------------------------------------------------- */
/* Links to the servers (hiredis async) */

static void link_connect(struct ctl_link *l);

static void on_link_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	link_connect(arg);
}

static void link_schedule_retry(struct ctl_link *l)
{
	struct timeval tv = tv_ms(l->retry_ms);

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
	struct timeval tv = tv_ms(timeout_ms);

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

static void discover_one_done(struct ctl *c);
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
			discover_one_done(c);
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

/* ------------------------------------------------------------------------- */
/* fo_ops */

static void op_ping(void *ctx, int node, int timeout_ms)
{
	const char *argv[] = { "PING" };

	req_send(req_new(ctx, node, REQ_PING, timeout_ms), 1, argv);
}

static void op_info(void *ctx, int node, int timeout_ms)
{
	const char *argv[] = { "INFO", "replication" };

	req_send(req_new(ctx, node, REQ_INFO, timeout_ms), 2, argv);
}

static void op_pause(void *ctx, int node, int pause_ms, int timeout_ms)
{
	char ms[24];
	const char *argv[] = { "CLIENT", "PAUSE", ms, "WRITE" };

	snprintf(ms, sizeof(ms), "%d", pause_ms);
	req_send(req_new(ctx, node, REQ_PAUSE, timeout_ms), 4, argv);
}

static void op_unpause(void *ctx, int node)
{
	const char *argv[] = { "CLIENT", "UNPAUSE" };

	send_fire_and_forget(ctx, node, 2, argv);
}

static void op_promote(void *ctx, int node, int timeout_ms)
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

static void op_replicaof(void *ctx, int node, int master, int timeout_ms)
{
	struct ctl *c = ctx;
	const struct fo_node *m = &c->fo.nodes[master];
	char port[16];
	const char *argv[] = { "REPLICAOF", m->host, port };

	snprintf(port, sizeof(port), "%d", m->port);
	req_send(req_new(c, node, REQ_REPLICAOF, timeout_ms), 3, argv);
}

struct shard_timer_arg {
	struct ctl *c;
	int shard;
};

static void on_shard_timer(evutil_socket_t fd, short what, void *arg)
{
	struct shard_timer_arg *a = arg;

	(void)fd;
	(void)what;
	fo_on_timer(&a->c->fo, &a->c->fo.shards[a->shard]);
}

static void op_timer(void *ctx, int shard, int ms)
{
	struct ctl *c = ctx;
	struct timeval tv = tv_ms(ms < 0 ? 0 : ms);

	if (ms < 0)
		evtimer_del(c->shard_timer[shard]);
	else
		evtimer_add(c->shard_timer[shard], &tv);
}

static void op_event(void *ctx, const char *kind, struct evrec *r)
{
	struct ctl *c = ctx;
	char chan[64], line[EVREC_MAX];
	size_t n;

	evrec_end(r);
	snprintf(line, sizeof(line), "%s", r->buf);
	n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	if (log_verbosity >= LOG_LVL_DEBUG)
		pr_debug("event %s\n", line);
	ctl_log(c, r);
	snprintf(chan, sizeof(chan), "flatline.%.50s", kind);
	publish(c, chan, line);
}

static void op_publish(void *ctx, const char *channel, const char *msg)
{
	publish(ctx, channel, msg);
}

static void op_promoted(void *ctx, int shard)
{
	struct ctl *c = ctx;
	struct fo_shard *s = &c->fo.shards[shard];
	char err[512];
	int rc = fo_state_save(&c->fo, c->state_file, err, sizeof(err));

	if (rc)
		pr_warn("%s\n", err);
	if (s->primary >= 0)
		ctl_dns_promoted(c, shard, c->fo.nodes[s->primary].host);
}

static void print_timeline(struct evbuffer *b, const struct fo_shard *s, const struct fo_failover *f,
			   const struct fo_cluster *fo);
static void on_conn_resume(evutil_socket_t fd, short what, void *arg);

static void op_done(void *ctx, int shard, const char *result)
{
	struct ctl *c = ctx;
	struct ctl_conn *w = c->waiter[shard];
	struct fo_shard *s = &c->fo.shards[shard];

	pr_info("failover of %s: %s\n", s->name, result);
	if (!w)
		return;
	c->waiter[shard] = NULL;
	w->flags &= ~CTL_C_WAITING;
	bufferevent_enable(w->bev, EV_READ);
	if (resp_pending(w->rd)) {
		/* Commands that came behind it: from the loop, not from inside the failover. */
		if (!w->resume)
			w->resume = evtimer_new(c->base, on_conn_resume, w);
		if (w->resume)
			event_active(w->resume, EV_TIMEOUT, 0);
	}
	if (!strcmp(result, "ok")) {
		struct evbuffer *t = evbuffer_new();

		if (t) {
			print_timeline(t, s, &s->last, &c->fo);
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

static void on_conn_read(struct bufferevent *bev, void *arg);

static void on_conn_resume(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_conn *k = arg;

	(void)fd;
	(void)what;
	on_conn_read(k->bev, k);
}

static const struct fo_ops ctl_ops = {
	.ping = op_ping,
	.info = op_info,
	.pause = op_pause,
	.unpause = op_unpause,
	.promote = op_promote,
	.replicaof = op_replicaof,
	.timer = op_timer,
	.event = op_event,
	.publish = op_publish,
	.promoted = op_promoted,
	.done = op_done,
};

/* ------------------------------------------------------------------------- */
/* DNS: the one place it is driven from */

static int dns_shard(const struct ctl *c, const char *name)
{
	for (int i = 0; i < c->cfg->nshards; i++)
		if (!strcasecmp(c->cfg->shards[i].dns_name, name))
			return i;
	return -1;
}

/* A configuration error (REFUSED, NOTAUTH, BADKEY …) is printed once per change
 * and holds back repairs for a while: no retry storm against a server that will
 * keep saying no. */
#define CTL_DNS_CFG_HOLD_MS 60000

static bool dns_held(const struct ctl *c, const struct ctl_dns *d)
{
	long long hold = c->cfg->dns.check_ms > CTL_DNS_CFG_HOLD_MS ? c->cfg->dns.check_ms
								   : CTL_DNS_CFG_HOLD_MS;

	return d->cfg_err_ms && mono_ms() - d->cfg_err_ms < hold;
}

static void on_dns_done(const struct dns_result *res, void *ctx)
{
	struct ctl *c = ctx;
	int i = dns_shard(c, res->name);
	struct ctl_dns *d;
	struct fo_shard *s;
	const char *want, *kind;
	struct evrec r;

	if (i < 0 || res->status == DNS_SUPERSEDED)
		return;
	d = &c->dnss[i];
	s = &c->fo.shards[i];
	want = s->primary >= 0 ? c->fo.nodes[s->primary].host : NULL;
	if (res->config_error) {
		if (strcmp(d->cfg_err, res->error))
			pr_warn("DNS %s of %s: %s\n", res->op == DNS_OP_UPDATE ? "update" : "query",
				res->name, res->error);
		snprintf(d->cfg_err, sizeof(d->cfg_err), "%s", res->error);
		d->cfg_err_ms = mono_ms();
	} else if (res->status == DNS_OK && res->op == DNS_OP_UPDATE) {
		/* Only a successful update shows the server takes our updates again. */
		d->cfg_err[0] = '\0';
		d->cfg_err_ms = 0;
	}
	if (res->op == DNS_OP_QUERY) {
		d->agrees = res->status != DNS_OK ? -1 : res->match;
		snprintf(d->seen, sizeof(d->seen), "%s", res->naddrs ? res->addrs[0] : "");
		/* Drifted (or missing): point it at the primary, unless the server
		 * refuses us anyway or an update is on its way. */
		if (res->status == DNS_OK && !res->match && want && !strcmp(res->addr, want) &&
		    !dns_held(c, d) && !dns_update_pending(c->dns, res->name)) {
			d->repair = true;
			if (dns_update(c->dns, res->name, want))
				d->repair = false;
		}
		return;
	}
	d->agrees = res->status == DNS_OK ? (want && !strcmp(res->addr, want)) : -1;
	if (d->agrees == 1)
		snprintf(d->seen, sizeof(d->seen), "%s", res->addr);
	kind = res->status != DNS_OK ? "dns_failed" : d->repair ? "dns_repaired" : "dns_updated";
	evrec_begin(&r, NULL, "controller", kind);
	evrec_str(&r, "shard", s->name);
	evrec_uint(&r, "epoch", s->epoch);
	evrec_str(&r, "name", res->name);
	evrec_str(&r, "addr", res->addr);
	evrec_str(&r, "rcode", res->rcode_name);
	evrec_uint(&r, "attempts", res->attempts);
	evrec_double(&r, "elapsed_ms", res->elapsed_ms, 3);
	if (res->status != DNS_OK) {
		evrec_str(&r, "reason", res->error);
		evrec_bool(&r, "config_error", res->config_error);
	}
	op_event(c, kind, &r);
	d->repair = false;
}

/* At start and every [dns] check_ms: does each name point at its primary? */
static void on_dns_check(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;
	struct timeval tv = tv_ms(c->cfg->dns.check_ms);

	(void)fd;
	(void)what;
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		const char *name = c->cfg->shards[i].dns_name;

		if (!name[0] || s->primary < 0 || c->fo.starting ||
		    dns_update_pending(c->dns, name))
			continue;
		if (dns_query(c->dns, name, c->fo.nodes[s->primary].host))
			c->dnss[i].agrees = -1;
	}
	if (c->cfg->dns.check_ms > 0)
		event_add(c->dns_check, &tv);
}

static int dns_start(struct ctl *c)
{
	const struct cfg *cf = c->cfg;
	struct dns_cfg d;
	char err[DNS_ERR_MAX], hp[300];
	int rc;

	if (!cf->dns.enabled)
		return 0;
	dns_cfg_init(&d);
	snprintf(hp, sizeof(hp), "%s:%d", cf->dns.server.host, cf->dns.server.port);
	if (dns_cfg_set_server(&d, hp)) {
		pr_warn("failed to configure DNS: server %s is not an IP address\n", hp);
		return -EINVAL;
	}
	snprintf(d.zone, sizeof(d.zone), "%s", cf->dns.zone);
	snprintf(d.tsig_name, sizeof(d.tsig_name), "%s", cf->dns.tsig_name);
	snprintf(d.tsig_algorithm, sizeof(d.tsig_algorithm), "%s", cf->dns.tsig_algorithm);
	snprintf(d.tsig_secret, sizeof(d.tsig_secret), "%s", cf->dns.tsig_secret);
	d.ttl_s = cf->dns.ttl;
	if (dns_cfg_validate(&d, err, sizeof(err))) {
		pr_warn("failed to configure DNS: %s\n", err);
		return -EINVAL;
	}
	for (int i = 0; i < cf->nshards; i++) {
		if (cf->shards[i].dns_name[0] &&
		    dns_name_validate(&d, cf->shards[i].dns_name, err, sizeof(err))) {
			pr_warn("failed to configure DNS for shard %s: %s\n", cf->shards[i].name, err);
			return -EINVAL;
		}
	}
	c->dnss = calloc(cf->nshards, sizeof(*c->dnss));
	c->dns_check = evtimer_new(c->base, on_dns_check, c);
	if (!c->dnss || !c->dns_check)
		return -ENOMEM;
	for (int i = 0; i < cf->nshards; i++)
		c->dnss[i].agrees = -1;
	rc = dns_updater_new(&c->dns, c->base, &d, on_dns_done, c);
	if (rc) {
		pr_warn("failed to start the DNS updater: %s\n", strerror(-rc));
		return rc;
	}
	/* The first check once the start-up INFO round has named the primaries. */
	{
		struct timeval first = tv_ms(CTL_DNS_FIRST_CHECK_MS);

		event_add(c->dns_check, &first);
	}
	return 0;
}

void ctl_dns_promoted(struct ctl *c, int shard, const char *host)
{
	const struct cfg_shard *cs = &c->cfg->shards[shard];
	int rc;

	if (!c->dns || !cs->dns_name[0])
		return;
	c->dnss[shard].repair = false;
	c->dnss[shard].agrees = -1;
	/* A failover is a reason to try again even after a configuration error. */
	rc = dns_update(c->dns, cs->dns_name, host);
	if (rc)
		pr_warn("failed to queue the DNS update of %s: %s\n", cs->dns_name, strerror(-rc));
}

/* ------------------------------------------------------------------------- */
/* Connections */

static void conn_free(struct ctl_conn *k)
{
	struct ctl *c = k->ctl;

	if (k->flags & CTL_C_AGENT) {
		struct fo_node *n = &c->fo.nodes[k->node];
		bool other = false;

		for (struct ctl_conn *o = c->conns; o; o = o->next)
			if (o != k && (o->flags & CTL_C_AGENT) && o->node == k->node)
				other = true;
		if (!other) {
			struct evrec r;

			evrec_begin(&r, NULL, "controller", "agent_disconnected");
			evrec_str(&r, "instance", n->id);
			evrec_str(&r, "peer", k->peer);
			ctl_log(c, &r);
			fo_on_agent(&c->fo, n, false);
		}
	}
	for (int i = 0; i < c->cfg->nshards; i++)
		if (c->waiter[i] == k)
			c->waiter[i] = NULL;
	if (k->prev)
		k->prev->next = k->next;
	else
		c->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	if (k->resume)
		event_free(k->resume);
	for (int i = 0; i < k->nsubs; i++)
		free(k->subs[i]);
	for (int i = 0; i < k->npsubs; i++)
		free(k->psubs[i]);
	bufferevent_free(k->bev);
	resp_reader_free(k->rd);
	free(k);
}

/* Answers err and closes once it is sent. */
static void conn_fatal(struct ctl_conn *k, const char *err)
{
	resp_error_reply(bufferevent_get_output(k->bev), err);
	k->flags |= CTL_C_CLOSING;
	bufferevent_disable(k->bev, EV_READ);
}

static void reject_log(struct ctl *c, int node, const char *node_id, const char *peer,
		       const char *why)
{
	char key[160];
	int slot = node >= 0 ? node : FO_MAX_NODES;
	struct evrec r;

	snprintf(key, sizeof(key), "%s|%s", node_id, why);
	if (!strcmp(c->reject_last[slot], key))
		return; /* once per change */
	snprintf(c->reject_last[slot], sizeof(c->reject_last[slot]), "%s", key);
	pr_warn("rejected agent %s from %s: %s\n", node_id, peer, why);
	evrec_begin(&r, NULL, "controller", "agent_rejected");
	evrec_str(&r, "instance", node_id);
	evrec_str(&r, "peer", peer);
	evrec_str(&r, "reason", why);
	ctl_log(c, &r);
}

static bool secret_eq(const char *a, const char *b, size_t blen)
{
	size_t alen = strlen(a);
	unsigned char d = alen != blen;

	/* Constant time over the configured secret's length. */
	for (size_t i = 0; i < alen; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)(i < blen ? b[i] : 0);
	return !d;
}

#define ARG_IS(i, s) (!strcasecmp(cmd->argv[i], s))

static void cmd_hello(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct fo_node *n;
	struct evrec r;
	char why[200];

	if (cmd->argc < 2 || strcasecmp(cmd->argv[1], "flatline")) {
		/* Redis's own HELLO [protover]: RESP2 only. */
		if (cmd->argc >= 2 && strcmp(cmd->argv[1], "2")) {
			resp_error_reply(out, "NOPROTO sorry, this protocol version is not supported");
			return;
		}
		resp_array(out, 14);
		resp_str(out, "server");
		resp_str(out, "flatline");
		resp_str(out, "version");
		resp_str(out, CTL_REDIS_VERSION);
		resp_str(out, "proto");
		resp_int(out, 2);
		resp_str(out, "id");
		resp_int(out, (long long)(intptr_t)k & 0xffffff);
		resp_str(out, "mode");
		resp_str(out, "sentinel");
		resp_str(out, "role");
		resp_str(out, "sentinel");
		resp_str(out, "modules");
		resp_array(out, 0);
		return;
	}
	if (k->flags & CTL_C_AGENT) {
		conn_fatal(k, "ERR HELLO already received on this connection");
		return;
	}
	if (cmd->argc != 5) {
		conn_fatal(k, "ERR wrong number of arguments for HELLO flatline <version> <node> <secret>");
		return;
	}
	if (strcmp(cmd->argv[2], CTL_PROTO_VERSION)) {
		snprintf(why, sizeof(why), "VERSION protocol version %.20s not supported (want %s)",
			 cmd->argv[2], CTL_PROTO_VERSION);
		reject_log(c, -1, cmd->argv[3], k->peer, why + 8);
		resp_error_reply(out, why);
		return;
	}
	n = fo_find_node(&c->fo, cmd->argv[3]);
	if (!n) {
		snprintf(why, sizeof(why), "NODE no [node \"%.64s\"] in the cluster file",
			 cmd->argv[3]);
		reject_log(c, -1, cmd->argv[3], k->peer, "unknown node");
		resp_error_reply(out, why);
		return;
	}
	if (!secret_eq(c->cfg->secret, cmd->argv[4], cmd->lens[4])) {
		reject_log(c, n->idx, n->id, k->peer, "wrong secret");
		resp_error_reply(out, "AUTH wrong secret");
		return;
	}
	c->reject_last[n->idx][0] = '\0';
	k->flags |= CTL_C_AGENT | CTL_C_AUTH;
	k->node = n->idx;
	k->seq = 0;
	/* Silent for 10 heartbeats: closed (protocol.md, Limits). */
	{
		struct timeval tv = tv_ms(10L * c->cfg->agent.heartbeat_ms);

		bufferevent_set_timeouts(k->bev, &tv, NULL);
	}
	evrec_begin(&r, NULL, "controller", "agent_connected");
	evrec_str(&r, "instance", n->id);
	evrec_str(&r, "peer", k->peer);
	ctl_log(c, &r);
	resp_status(out, "OK flatline " CTL_VERSION);
	fo_on_agent(&c->fo, n, true);
}

static void on_node_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;

	(void)fd;
	(void)what;
	fo_evaluate(&c->fo);
}

static void cmd_report(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct fo_report rep;
	struct fo_node *n;
	struct fo_shard *s;
	long long seq;
	char *end, why[160], e[200];
	struct timeval tv;

	if (!(k->flags & CTL_C_AGENT)) {
		conn_fatal(k, "ERR REPORT before HELLO");
		return;
	}
	if (cmd->argc < 2) {
		conn_fatal(k, "ERR wrong number of arguments for 'report' command");
		return;
	}
	errno = 0;
	seq = strtoll(cmd->argv[1], &end, 10);
	if (errno || *end || !cmd->argv[1][0] || seq < 1) {
		conn_fatal(k, "ERR REPORT: seq is not a positive integer");
		return;
	}
	if (fo_report_parse(&c->fo, &rep, cmd->argc - 2, (const char **)cmd->argv + 2,
			    cmd->lens + 2, why, sizeof(why))) {
		snprintf(e, sizeof(e), "ERR REPORT: %s", why);
		conn_fatal(k, e);
		return;
	}
	k->seq = seq;
	n = &c->fo.nodes[k->node];
	fo_on_report(&c->fo, n, &rep);
	/* The heartbeat deadline: judged again when it passes without a report. */
	tv = tv_ms(c->fo.node_down_after_ms + 1);
	evtimer_add(c->node_timer[n->idx], &tv);
	s = n->shard >= 0 ? &c->fo.shards[n->shard] : NULL;
	resp_array(out, 3);
	resp_status(out, "OK");
	resp_int(out, s ? (long long)s->epoch : 0);
	resp_str(out, s && s->primary >= 0 ? c->fo.nodes[s->primary].id : "");
}

static void cmd_auth(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	int pi = cmd->argc == 3 ? 2 : 1;

	if (cmd->argc != 2 && cmd->argc != 3) {
		resp_error_reply(out, "ERR wrong number of arguments for 'auth' command");
		return;
	}
	if (cmd->argc == 3 && strcmp(cmd->argv[1], "default")) {
		resp_error_reply(out, "WRONGPASS invalid username-password pair or user is disabled.");
		return;
	}
	if (!secret_eq(k->ctl->cfg->secret, cmd->argv[pi], cmd->lens[pi])) {
		resp_error_reply(out, "WRONGPASS invalid username-password pair or user is disabled.");
		return;
	}
	k->flags |= CTL_C_AUTH;
	resp_status(out, "OK");
}

/* ---- Sentinel replies ---- */

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

static const char *node_runid(const struct fo_node *n)
{
	const struct info_repl *r = n->info_ok ? &n->info : &n->rep.repl;

	return r->run_id[0] ? r->run_id : "0000000000000000000000000000000000000000";
}

static long long age_ms(long long since)
{
	return since ? mono_ms() - since : 0;
}

static void reply_master(struct ctl *c, struct evbuffer *o, const struct fo_shard *s)
{
	const struct fo_node *m = s->primary >= 0 ? &c->fo.nodes[s->primary] :
						    &c->fo.nodes[s->nodes[0]];
	char flags[96];

	snprintf(flags, sizeof(flags), "master%s%s%s", (m->flags & FO_N_SDOWN) ? ",s_down" : "",
		 (s->flags & FO_S_ODOWN) || s->primary < 0 ? ",o_down" : "",
		 s->fo.state != FO_ST_NONE ? ",failover_in_progress" : "");
	resp_array(o, 40);
	kv_str(o, "name", s->name);
	kv_str(o, "ip", m->host);
	kv_int(o, "port", m->port);
	kv_str(o, "runid", node_runid(m));
	kv_str(o, "flags", flags);
	kv_int(o, "link-pending-commands", 0);
	kv_int(o, "link-refcount", 1);
	kv_int(o, "last-ping-sent", 0);
	kv_int(o, "last-ok-ping-reply", age_ms(m->last_report_ms));
	kv_int(o, "last-ping-reply", age_ms(m->last_report_ms));
	kv_int(o, "down-after-milliseconds", c->fo.node_down_after_ms);
	kv_int(o, "info-refresh", age_ms(m->last_report_ms));
	kv_str(o, "role-reported", "master");
	kv_int(o, "role-reported-time", age_ms(c->start_ms));
	kv_int(o, "config-epoch", s->epoch);
	kv_int(o, "num-slaves", s->nnodes - 1);
	kv_int(o, "num-other-sentinels", 0);
	kv_int(o, "quorum", 1);
	kv_int(o, "failover-timeout", c->fo.failover_block_ms);
	kv_int(o, "parallel-syncs", s->nnodes);
}

static void reply_replica(struct ctl *c, struct evbuffer *o, const struct fo_shard *s,
			  const struct fo_node *n)
{
	const struct fo_node *m = s->primary >= 0 ? &c->fo.nodes[s->primary] : NULL;
	const struct info_repl *r = n->info_ok && n->info_ms >= n->last_report_ms ? &n->info :
										     &n->rep.repl;
	char name[300], flags[96];
	bool link = r->link_up == 1;

	snprintf(name, sizeof(name), "%s:%d", n->host, n->port);
	snprintf(flags, sizeof(flags), "slave%s%s", (n->flags & FO_N_SDOWN) ? ",s_down" : "",
		 (n->flags & (FO_N_REPORTED | FO_N_UNREACH)) == FO_N_REPORTED || n->info_ok ?
			 "" :
			 ",disconnected");
	resp_array(o, 40);
	kv_str(o, "name", name);
	kv_str(o, "ip", n->host);
	kv_int(o, "port", n->port);
	kv_str(o, "runid", node_runid(n));
	kv_str(o, "flags", flags);
	kv_int(o, "link-pending-commands", 0);
	kv_int(o, "link-refcount", 1);
	kv_int(o, "last-ping-sent", 0);
	kv_int(o, "last-ok-ping-reply", age_ms(n->last_report_ms));
	kv_int(o, "last-ping-reply", age_ms(n->last_report_ms));
	kv_int(o, "down-after-milliseconds", c->fo.node_down_after_ms);
	kv_int(o, "info-refresh", age_ms(n->last_report_ms));
	kv_str(o, "role-reported", r->role == INFO_ROLE_MASTER ? "master" : "slave");
	kv_int(o, "role-reported-time", age_ms(c->start_ms));
	kv_int(o, "master-link-down-time", 0);
	kv_str(o, "master-link-status", link ? "ok" : "err");
	kv_str(o, "master-host", r->master_host[0] ? r->master_host : (m ? m->host : "?"));
	kv_int(o, "master-port", r->master_port ? r->master_port : (m ? m->port : 0));
	kv_int(o, "slave-priority", n->priority);
	kv_int(o, "slave-repl-offset", r->offset < 0 ? 0 : r->offset);
}

static struct fo_shard *shard_arg(struct ctl_conn *k, const char *name)
{
	struct fo_shard *s = fo_find_shard(&k->ctl->fo, name);

	if (!s)
		resp_error_reply(bufferevent_get_output(k->bev), "ERR No such master with that name");
	return s;
}

static int start_failover(struct ctl_conn *k, const char *shard, const char *to, bool wait)
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
	if (to) {
		t = fo_find_node(&c->fo, to);
		if (!t) {
			resp_error_reply(out, "ERR no such node");
			return -ENOENT;
		}
	}
	snprintf(reason, sizeof(reason), "operator (%s from %.40s)", wait ? "flatline failover" :
									   "SENTINEL failover", k->peer);
	if (wait) {
		c->waiter[s->idx] = k; /* set first: a failover may finish at once */
		k->flags |= CTL_C_WAITING;
	}
	rc = fo_start(&c->fo, s, true, t ? t->idx : -1, reason, why, sizeof(why));
	if (rc) {
		if (wait) {
			c->waiter[s->idx] = NULL;
			k->flags &= ~CTL_C_WAITING;
		}
		snprintf(e, sizeof(e), "%s %s", rc == -EBUSY ? "INPROG" : rc == -EAGAIN ? "BLOCKED" :
							"ERR", why);
		resp_error_reply(out, e);
		return rc;
	}
	if (!wait)
		resp_status(out, "OK");
	return 0;
}

static void cmd_sentinel(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct fo_shard *s;
	const char *sub = cmd->argc > 1 ? cmd->argv[1] : "";
	char e[200];

	if (cmd->argc < 2) {
		resp_error_reply(out, "ERR wrong number of arguments for 'sentinel' command");
		return;
	}
	if (!strcasecmp(sub, "get-master-addr-by-name") && cmd->argc == 3) {
		char port[16];

		s = fo_find_shard(&c->fo, cmd->argv[2]);
		if (!s || s->primary < 0) {
			resp_null_array(out);
			return;
		}
		snprintf(port, sizeof(port), "%d", c->fo.nodes[s->primary].port);
		resp_array(out, 2);
		resp_str(out, c->fo.nodes[s->primary].host);
		resp_str(out, port);
	} else if (!strcasecmp(sub, "masters") && cmd->argc == 2) {
		resp_array(out, c->fo.nshards);
		for (int i = 0; i < c->fo.nshards; i++)
			reply_master(c, out, &c->fo.shards[i]);
	} else if (!strcasecmp(sub, "master") && cmd->argc == 3) {
		if ((s = shard_arg(k, cmd->argv[2])))
			reply_master(c, out, s);
	} else if ((!strcasecmp(sub, "replicas") || !strcasecmp(sub, "slaves")) &&
		   cmd->argc == 3) {
		int n = 0;

		if (!(s = shard_arg(k, cmd->argv[2])))
			return;
		for (int i = 0; i < s->nnodes; i++)
			n += s->nodes[i] != s->primary;
		resp_array(out, n);
		for (int i = 0; i < s->nnodes; i++)
			if (s->nodes[i] != s->primary)
				reply_replica(c, out, s, &c->fo.nodes[s->nodes[i]]);
	} else if (!strcasecmp(sub, "sentinels") && cmd->argc == 3) {
		if (shard_arg(k, cmd->argv[2]))
			resp_array(out, 0); /* one controller, no peers */
	} else if (!strcasecmp(sub, "myid") && cmd->argc == 2) {
		resp_str(out, c->myid);
	} else if (!strcasecmp(sub, "failover") && cmd->argc == 3) {
		start_failover(k, cmd->argv[2], NULL, false);
	} else if (!strcasecmp(sub, "ckquorum") && cmd->argc == 3) {
		if (shard_arg(k, cmd->argv[2]))
			resp_status(out, "OK 1 usable Sentinels. Quorum and failover authorization "
					 "can be reached");
	} else if (!strcasecmp(sub, "flushconfig") && cmd->argc == 2) {
		resp_status(out, "OK");
	} else if (!strcasecmp(sub, "is-master-down-by-addr") ||
		   !strcasecmp(sub, "monitor") || !strcasecmp(sub, "remove") ||
		   !strcasecmp(sub, "set") || !strcasecmp(sub, "reset") ||
		   !strcasecmp(sub, "config") || !strcasecmp(sub, "simulate-failure")) {
		snprintf(e, sizeof(e), "ERR SENTINEL %.40s is not supported by flatline: the cluster "
				       "file is the configuration", sub);
		resp_error_reply(out, e);
	} else {
		snprintf(e, sizeof(e), "ERR unknown subcommand or wrong number of arguments for "
				       "'%.40s'. Try SENTINEL HELP.", sub);
		resp_error_reply(out, e);
	}
}

static void cmd_info(struct ctl_conn *k)
{
	struct ctl *c = k->ctl;
	struct evbuffer *t = evbuffer_new(), *out = bufferevent_get_output(k->bev);

	if (!t)
		return;
	evbuffer_add_printf(t, "# Server\r\nredis_version:%s\r\nredis_mode:sentinel\r\n"
			       "flatline_version:%s\r\nprocess_id:%d\r\nrun_id:%s\r\n"
			       "tcp_port:%d\r\nuptime_in_seconds:%lld\r\n\r\n",
			    CTL_REDIS_VERSION, CTL_VERSION, getpid(), c->myid,
			    c->cfg->controller.listen.port, age_ms(c->start_ms) / 1000);
	evbuffer_add_printf(t, "# Sentinel\r\nsentinel_masters:%d\r\nsentinel_tilt:%d\r\n"
			       "sentinel_running_scripts:0\r\nsentinel_scripts_queue_length:0\r\n"
			       "sentinel_simulate_failure_flags:0\r\n",
			    c->fo.nshards, c->fo.tilt);
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		struct fo_node *m = s->primary >= 0 ? &c->fo.nodes[s->primary] : NULL;

		evbuffer_add_printf(t, "master%d:name=%s,status=%s,address=%s:%d,slaves=%d,"
				       "sentinels=1\r\n",
				    i, s->name, !m || (m->flags & FO_N_SDOWN) ? "odown" : "ok",
				    m ? m->host : "?", m ? m->port : 0, s->nnodes - 1);
	}
	resp_bulk(out, (const char *)evbuffer_pullup(t, -1), evbuffer_get_length(t));
	evbuffer_free(t);
}

static void cmd_subscribe(struct ctl_conn *k, struct resp_cmd *cmd, bool pattern, bool sub)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	char **list = pattern ? k->psubs : k->subs;
	int *n = pattern ? &k->npsubs : &k->nsubs;
	const char *verb = sub ? (pattern ? "psubscribe" : "subscribe") :
				 (pattern ? "punsubscribe" : "unsubscribe");

	if (sub && cmd->argc < 2) {
		char e[96];

		snprintf(e, sizeof(e), "ERR wrong number of arguments for '%s' command", verb);
		resp_error_reply(out, e);
		return;
	}
	if (!sub && cmd->argc == 1) { /* all of them */
		if (!*n) {
			resp_array(out, 3);
			resp_str(out, verb);
			resp_nil(out);
			resp_int(out, k->nsubs + k->npsubs);
		}
		while (*n) {
			char *ch = list[--*n];

			resp_array(out, 3);
			resp_str(out, verb);
			resp_str(out, ch);
			resp_int(out, k->nsubs + k->npsubs);
			free(ch);
		}
	}
	for (int a = 1; a < cmd->argc; a++) {
		int found = -1;

		for (int i = 0; i < *n; i++)
			if (!strcmp(list[i], cmd->argv[a]))
				found = i;
		if (sub && found < 0 && *n < CTL_MAX_SUBS) {
			list[*n] = strdup(cmd->argv[a]);
			if (list[*n])
				++*n;
		} else if (!sub && found >= 0) {
			free(list[found]);
			list[found] = list[--*n];
		}
		resp_array(out, 3);
		resp_str(out, verb);
		resp_str(out, cmd->argv[a]);
		resp_int(out, k->nsubs + k->npsubs);
	}
	if (k->nsubs + k->npsubs)
		k->flags |= CTL_C_PUBSUB;
	else
		k->flags &= ~CTL_C_PUBSUB;
}

/* ---- status ---- */

static void json_str(struct evbuffer *b, const char *s)
{
	evbuffer_add(b, "\"", 1);
	for (; *s; s++) {
		unsigned char ch = *s;

		if (ch == '"' || ch == '\\')
			evbuffer_add_printf(b, "\\%c", ch);
		else if (ch < 0x20)
			evbuffer_add_printf(b, "\\u%04x", ch);
		else
			evbuffer_add(b, s, 1);
	}
	evbuffer_add(b, "\"", 1);
}

static const char *node_health(const struct fo_node *n)
{
	if (n->flags & FO_N_PROC_DOWN)
		return "proc_down";
	if (n->flags & FO_N_PROC_HUNG)
		return "proc_hung";
	if (n->flags & FO_N_HOST_DOWN)
		return "host_down";
	if (n->flags & FO_N_AGENT_LOST)
		return (n->flags & FO_N_UNREACH) ? "agent_lost,unreachable" : "agent_lost";
	if (!(n->flags & FO_N_REPORTED))
		return n->info_ok ? "no_agent" : "unknown";
	if (n->rep.proc == FO_PROC_BUSY || n->rep.proc == FO_PROC_LOADING)
		return fo_proc_name(n->rep.proc);
	return "ok";
}

static const struct info_repl *node_repl(const struct fo_node *n)
{
	if (n->info_ok && (!(n->flags & FO_N_REPORTED) || n->info_ms >= n->last_report_ms))
		return &n->info;
	return (n->flags & FO_N_REPORTED) ? &n->rep.repl : NULL;
}

static void fmt_wall(long long ms, char *buf, size_t len)
{
	time_t t = ms / 1000;
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", (tm.tm_year + 1900) % 10000,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static void print_timeline(struct evbuffer *b, const struct fo_shard *s, const struct fo_failover *f,
			   const struct fo_cluster *fo)
{
	char ts[40];

	fmt_wall(f->start_wall_ms, ts, sizeof(ts));
	evbuffer_add_printf(b, "failover of %s at %s: %s -> %s (%s)%s, %s in %lld ms, epoch %llu\n",
			    s->name, ts, f->from >= 0 ? fo->nodes[f->from].id : "?",
			    f->to >= 0 ? fo->nodes[f->to].id : "-", f->reason,
			    f->planned ? " planned" : "", f->result,
			    f->end_wall_ms - f->start_wall_ms, f->epoch ? f->epoch : s->epoch);
	for (int i = 0; i < f->nsteps; i++)
		evbuffer_add_printf(b, "  %+6lld ms  %s\n", f->steps[i].at_ms, f->steps[i].text);
}

static void status_json(struct ctl *c, struct evbuffer *b)
{
	long long now = mono_ms();

	evbuffer_add_printf(b, "{\"cluster\":");
	json_str(b, c->cfg->name);
	evbuffer_add_printf(b, ",\"controller\":{\"listen\":");
	json_str(b, c->listen_str);
	evbuffer_add_printf(b, ",\"myid\":\"%s\",\"pid\":%d,\"uptime_ms\":%lld,\"tilt\":%s,"
			       "\"starting\":%s},\"shards\":[",
			    c->myid, getpid(), now - c->start_ms, c->fo.tilt ? "true" : "false",
			    c->fo.starting ? "true" : "false");
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];

		evbuffer_add_printf(b, "%s{\"name\":", i ? "," : "");
		json_str(b, s->name);
		evbuffer_add_printf(b, ",\"primary\":");
		if (s->primary >= 0)
			json_str(b, c->fo.nodes[s->primary].id);
		else
			evbuffer_add_printf(b, "null");
		evbuffer_add_printf(b, ",\"epoch\":%llu,\"failover\":\"%s\",\"dns_name\":", s->epoch,
				    fo_state_name(s->fo.state));
		json_str(b, c->cfg->shards[i].dns_name);
		if (c->dnss && c->cfg->shards[i].dns_name[0]) {
			const struct ctl_dns *d = &c->dnss[i];

			evbuffer_add_printf(b, ",\"dns_want\":");
			json_str(b, s->primary >= 0 ? c->fo.nodes[s->primary].host : "");
			evbuffer_add_printf(b, ",\"dns_seen\":");
			json_str(b, d->seen);
			evbuffer_add_printf(b, ",\"dns_agrees\":%s",
					    d->agrees < 0 ? "null" : d->agrees ? "true" : "false");
			if (d->cfg_err[0]) {
				evbuffer_add_printf(b, ",\"dns_error\":");
				json_str(b, d->cfg_err);
			}
		}
		evbuffer_add_printf(b, ",\"nodes\":[");
		for (int j = 0; j < s->nnodes; j++) {
			struct fo_node *n = &c->fo.nodes[s->nodes[j]];
			const struct info_repl *r = node_repl(n);

			evbuffer_add_printf(b, "%s{\"id\":", j ? "," : "");
			json_str(b, n->id);
			evbuffer_add_printf(b, ",\"role\":\"%s\",\"addr\":",
					    n->idx == s->primary ? "primary" : "replica");
			json_str(b, c->cfg->nodes[n->idx].redis_str);
			evbuffer_add_printf(b, ",\"health\":\"%s\",\"agent\":%s,\"proc\":\"%s\","
					       "\"heartbeat_age_ms\":%lld,\"priority\":%d",
					    node_health(n), (n->flags & FO_N_AGENT) ? "true" : "false",
					    fo_proc_name(n->rep.proc),
					    (n->flags & FO_N_REPORTED) ? now - n->last_report_ms : -1,
					    n->priority);
			if (r)
				evbuffer_add_printf(b, ",\"server_role\":\"%s\",\"offset\":%lld,"
						       "\"link\":\"%s\"",
						    info_role_name(r->role), r->offset,
						    r->link_up == 1 ? "up" : r->link_up == 0 ? "down" :
											 "-");
			evbuffer_add_printf(b, "}");
		}
		evbuffer_add_printf(b, "]");
		if (s->have_last) {
			const struct fo_failover *f = &s->last;
			char ts[40];

			fmt_wall(f->start_wall_ms, ts, sizeof(ts));
			evbuffer_add_printf(b, ",\"last_failover\":{\"start\":\"%s\",\"from\":", ts);
			json_str(b, f->from >= 0 ? c->fo.nodes[f->from].id : "");
			evbuffer_add_printf(b, ",\"to\":");
			json_str(b, f->to >= 0 ? c->fo.nodes[f->to].id : "");
			evbuffer_add_printf(b, ",\"reason\":");
			json_str(b, f->reason);
			evbuffer_add_printf(b, ",\"planned\":%s,\"result\":",
					    f->planned ? "true" : "false");
			json_str(b, f->result);
			evbuffer_add_printf(b, ",\"duration_ms\":%lld,\"steps\":[",
					    f->end_wall_ms - f->start_wall_ms);
			for (int j = 0; j < f->nsteps; j++) {
				evbuffer_add_printf(b, "%s{\"at_ms\":%lld,\"what\":", j ? "," : "",
						    f->steps[j].at_ms);
				json_str(b, f->steps[j].text);
				evbuffer_add_printf(b, "}");
			}
			evbuffer_add_printf(b, "]}");
		}
		evbuffer_add_printf(b, "}");
	}
	evbuffer_add_printf(b, "]}\n");
}

static void status_text(struct ctl *c, struct evbuffer *b)
{
	long long now = mono_ms();

	evbuffer_add_printf(b, "cluster %s  controller %s  pid %d  up %llds%s%s\n", c->cfg->name,
			    c->listen_str, getpid(), (now - c->start_ms) / 1000,
			    c->fo.tilt ? "  TILT" : "", c->fo.starting ? "  (starting)" : "");
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		struct fo_node *p = s->primary >= 0 ? &c->fo.nodes[s->primary] : NULL;

		evbuffer_add_printf(b, "\nshard %s  primary %s (%s)  epoch %llu%s%s\n", s->name,
				    p ? p->id : "unknown", p ? c->cfg->nodes[p->idx].redis_str : "-",
				    s->epoch, s->fo.state != FO_ST_NONE ? "  failover: " : "",
				    s->fo.state != FO_ST_NONE ? fo_state_name(s->fo.state) : "");
		if (c->dnss && c->cfg->shards[i].dns_name[0]) {
			const struct ctl_dns *d = &c->dnss[i];

			evbuffer_add_printf(b, "  dns %s -> %s: %s%s%s\n", c->cfg->shards[i].dns_name,
					    p ? p->host : "?",
					    d->agrees < 0 ? "not checked yet"
					    : d->agrees ? "agrees"
							: "DIFFERS",
					    d->agrees == 0 ? (d->seen[0] ? ", has " : ", no record") : "",
					    d->agrees == 0 ? d->seen : "");
			if (d->cfg_err[0])
				evbuffer_add_printf(b, "  dns error: %s\n", d->cfg_err);
		}
		evbuffer_add_printf(b, "  %-12s %-8s %-22s %-12s %-6s %-10s %-8s %-12s %s\n", "node",
				    "role", "server", "health", "agent", "heartbeat", "srv_role",
				    "offset", "link");
		for (int j = 0; j < s->nnodes; j++) {
			struct fo_node *n = &c->fo.nodes[s->nodes[j]];
			const struct info_repl *r = node_repl(n);
			char hb[32] = "-", off[32] = "-";

			if (n->flags & FO_N_REPORTED)
				snprintf(hb, sizeof(hb), "%lld ms", now - n->last_report_ms);
			if (r && r->offset >= 0)
				snprintf(off, sizeof(off), "%lld", r->offset);
			evbuffer_add_printf(b, "  %-12s %-8s %-22s %-12s %-6s %-10s %-8s %-12s %s\n",
					    n->id, n->idx == s->primary ? "primary" : "replica",
					    c->cfg->nodes[n->idx].redis_str, node_health(n),
					    (n->flags & FO_N_AGENT) ? "yes" : "no", hb,
					    r ? info_role_name(r->role) : "-", off,
					    !r || r->link_up < 0 ? "-" : r->link_up ? "up" : "down");
		}
		if (s->have_last) {
			evbuffer_add_printf(b, "  last ");
			print_timeline(b, s, &s->last, &c->fo);
		}
	}
}

static void cmd_flatline(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev), *t;

	if (cmd->argc >= 2 && ARG_IS(1, "STATUS") && cmd->argc <= 3) {
		bool json = cmd->argc == 3 && ARG_IS(2, "JSON");

		t = evbuffer_new();
		if (!t)
			return;
		if (json)
			status_json(c, t);
		else
			status_text(c, t);
		resp_bulk(out, (const char *)evbuffer_pullup(t, -1), evbuffer_get_length(t));
		evbuffer_free(t);
	} else if (cmd->argc >= 3 && cmd->argc <= 4 && ARG_IS(1, "FAILOVER")) {
		start_failover(k, cmd->argv[2], cmd->argc == 4 ? cmd->argv[3] : NULL, true);
	} else {
		resp_error_reply(out, "ERR usage: FLATLINE STATUS [JSON|TEXT] | FLATLINE FAILOVER "
				      "<shard> [<node>]");
	}
}

static void unknown_command(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *t = evbuffer_new();

	if (!t)
		return;
	/* As Redis 7 words it. */
	evbuffer_add_printf(t, "ERR unknown command '%.128s', with args beginning with: ",
			    cmd->argv[0]);
	for (int i = 1; i < cmd->argc && evbuffer_get_length(t) < 400; i++)
		evbuffer_add_printf(t, "'%.128s' ", cmd->argv[i]);
	evbuffer_add(t, "", 1);
	resp_error_reply(bufferevent_get_output(k->bev), (const char *)evbuffer_pullup(t, -1));
	evbuffer_free(t);
}

static void dispatch(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	const char *name = cmd->argv[0];

	if (k->flags & CTL_C_PUBSUB) {
		/* Subscribed: as Redis, only these. */
		if (!strcasecmp(name, "subscribe") || !strcasecmp(name, "unsubscribe") ||
		    !strcasecmp(name, "psubscribe") || !strcasecmp(name, "punsubscribe")) {
			/* below */
		} else if (!strcasecmp(name, "ping")) {
			resp_array(out, 2);
			resp_str(out, "pong");
			resp_str(out, cmd->argc > 1 ? cmd->argv[1] : "");
			return;
		} else if (!strcasecmp(name, "quit")) {
			resp_status(out, "OK");
			k->flags |= CTL_C_CLOSING;
			return;
		} else {
			char e[200];

			snprintf(e, sizeof(e), "ERR Can't execute '%.40s': only (P|S)SUBSCRIBE / "
					       "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed "
					       "in this context", name);
			resp_error_reply(out, e);
			return;
		}
	}
	if (!strcasecmp(name, "REPORT")) {
		cmd_report(k, cmd);
	} else if (!strcasecmp(name, "HELLO")) {
		cmd_hello(k, cmd);
	} else if (!strcasecmp(name, "PING")) {
		if (cmd->argc > 1)
			resp_bulk(out, cmd->argv[1], cmd->lens[1]);
		else
			resp_status(out, "PONG");
	} else if (!strcasecmp(name, "AUTH")) {
		cmd_auth(k, cmd);
	} else if (!strcasecmp(name, "SENTINEL")) {
		cmd_sentinel(k, cmd);
	} else if (!strcasecmp(name, "INFO")) {
		cmd_info(k);
	} else if (!strcasecmp(name, "SUBSCRIBE")) {
		cmd_subscribe(k, cmd, false, true);
	} else if (!strcasecmp(name, "PSUBSCRIBE")) {
		cmd_subscribe(k, cmd, true, true);
	} else if (!strcasecmp(name, "UNSUBSCRIBE")) {
		cmd_subscribe(k, cmd, false, false);
	} else if (!strcasecmp(name, "PUNSUBSCRIBE")) {
		cmd_subscribe(k, cmd, true, false);
	} else if (!strcasecmp(name, "FLATLINE")) {
		cmd_flatline(k, cmd);
	} else if (!strcasecmp(name, "ROLE")) {
		resp_array(out, 2);
		resp_str(out, "sentinel");
		resp_array(out, k->ctl->fo.nshards);
		for (int i = 0; i < k->ctl->fo.nshards; i++)
			resp_str(out, k->ctl->fo.shards[i].name);
	} else if (!strcasecmp(name, "CLIENT")) {
		if (cmd->argc >= 2 && ARG_IS(1, "GETNAME"))
			resp_nil(out);
		else
			resp_status(out, "OK"); /* SETNAME and friends: nothing to keep */
	} else if (!strcasecmp(name, "COMMAND")) {
		resp_array(out, 0);
	} else if (!strcasecmp(name, "QUIT")) {
		resp_status(out, "OK");
		k->flags |= CTL_C_CLOSING;
	} else {
		unknown_command(k, cmd);
	}
}

static void on_conn_write(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *k = arg;

	if ((k->flags & CTL_C_CLOSING) && !evbuffer_get_length(bufferevent_get_output(bev)))
		conn_free(k);
}

static void on_conn_read(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *k = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct resp_cmd cmd;
	char e[200];
	int rc;

	for (;;) {
		struct evbuffer_iovec v;

		/* Every whole command buffered, in order; a deferred answer holds the rest. */
		while (!(k->flags & (CTL_C_CLOSING | CTL_C_WAITING))) {
			rc = resp_next(k->rd, &cmd);
			if (rc == 0)
				break;
			if (rc < 0) {
				snprintf(e, sizeof(e), "ERR %s", resp_error(k->rd));
				pr_debug("closing %s: %s\n", k->peer, resp_error(k->rd));
				conn_fatal(k, e);
				break;
			}
			dispatch(k, &cmd);
			resp_cmd_free(&cmd);
		}
		if (k->flags & CTL_C_WAITING) {
			bufferevent_disable(bev, EV_READ); /* op_done() reads on */
			return;
		}
		if (!evbuffer_get_length(in) || (k->flags & CTL_C_CLOSING))
			break;
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		if (resp_feed(k->rd, v.iov_base, v.iov_len)) {
			conn_fatal(k, "ERR out of memory");
			break;
		}
		evbuffer_drain(in, v.iov_len);
	}
	if ((k->flags & CTL_C_CLOSING) && !evbuffer_get_length(bufferevent_get_output(bev)))
		conn_free(k);
}

static void on_conn_event(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_conn *k = arg;

	(void)bev;
	if (what & BEV_EVENT_TIMEOUT && (k->flags & CTL_C_AGENT)) {
		struct evrec r;

		evrec_begin(&r, NULL, "controller", "agent_timeout");
		evrec_str(&r, "instance", k->ctl->fo.nodes[k->node].id);
		evrec_str(&r, "peer", k->peer);
		evrec_int(&r, "silent_ms", 10L * k->ctl->cfg->agent.heartbeat_ms);
		ctl_log(k->ctl, &r);
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		conn_free(k);
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	struct ctl *c = arg;
	struct ctl_conn *k = calloc(1, sizeof(*k));
	int one = 1;

	(void)lis;
	(void)salen;
	if (!k) {
		close(fd);
		return;
	}
	k->ctl = c;
	k->node = -1;
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(k->peer, sizeof(k->peer), "%s:%d", a, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *in = (struct sockaddr_in6 *)sa;
		char a[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, &in->sin6_addr, a, sizeof(a));
		snprintf(k->peer, sizeof(k->peer), "[%s]:%d", a, ntohs(in->sin6_port));
	} else {
		snprintf(k->peer, sizeof(k->peer), "unix");
	}
	if (sa->sa_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	k->rd = resp_reader_new();
	k->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!k->rd || !k->bev) {
		resp_reader_free(k->rd);
		if (k->bev)
			bufferevent_free(k->bev);
		else
			close(fd);
		free(k);
		return;
	}
	bufferevent_setcb(k->bev, on_conn_read, on_conn_write, on_conn_event, k);
	bufferevent_enable(k->bev, EV_READ | EV_WRITE);
	k->next = c->conns;
	if (c->conns)
		c->conns->prev = k;
	c->conns = k;
}

/* ------------------------------------------------------------------------- */
/* Start, discovery, TILT tick, signals */

static void discover_finish(struct ctl *c)
{
	struct evrec r;

	if (!c->fo.starting)
		return;
	evtimer_del(c->discover_timer);
	for (int i = 0; i < c->fo.nshards; i++)
		fo_discover(&c->fo, &c->fo.shards[i]);
	c->fo.starting = false;
	evrec_begin(&r, NULL, "controller", "controller_ready");
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		char k[80];

		snprintf(k, sizeof(k), "primary.%s", s->name);
		evrec_str(&r, k, s->primary >= 0 ? c->fo.nodes[s->primary].id : "");
	}
	ctl_log(c, &r);
	pr_info("ready: %d shard(s), listening on %s\n", c->fo.nshards, c->listen_str);
	fo_evaluate(&c->fo);
}

static void discover_one_done(struct ctl *c)
{
	if (c->discover_pending > 0 && --c->discover_pending == 0)
		discover_finish(c);
}

static void on_discover_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	discover_finish(arg);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;

	(void)fd;
	(void)what;
	fo_tilt_tick(&c->fo);
	if (c->log)
		evlog_sync(c->log);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct ctl *c = arg;

	(void)what;
	pr_info("received %s, stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	event_base_loopbreak(c->base);
}

static int listen_on(struct ctl *c)
{
	const struct cfg_endpoint *ep = &c->cfg->controller.listen;
	unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;
	struct sockaddr_storage ss;
	int len;

	memset(&ss, 0, sizeof(ss));
	if (ep->unix_path[0]) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;

		un->sun_family = AF_UNIX;
		snprintf(un->sun_path, sizeof(un->sun_path), "%s", ep->unix_path);
		unlink(ep->unix_path);
		len = sizeof(*un);
		snprintf(c->listen_str, sizeof(c->listen_str), "unix:%s", ep->unix_path);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		if (inet_pton(AF_INET, ep->host, &in->sin_addr) == 1) {
			in->sin_family = AF_INET;
			in->sin_port = htons(ep->port);
			len = sizeof(*in);
		} else if (inet_pton(AF_INET6, ep->host, &in6->sin6_addr) == 1) {
			in6->sin6_family = AF_INET6;
			in6->sin6_port = htons(ep->port);
			len = sizeof(*in6);
		} else {
			pr_warn("failed to listen on %s: not an IP address\n", ep->host);
			return -EINVAL;
		}
		snprintf(c->listen_str, sizeof(c->listen_str), "%s:%d", ep->host, ep->port);
	}
	c->lis = evconnlistener_new_bind(c->base, on_accept, c, flags, 128, (struct sockaddr *)&ss,
					 len);
	if (!c->lis) {
		int err = errno;

		pr_warn("failed to listen on %s: %s\n", c->listen_str, strerror(err));
		return -err;
	}
	return 0;
}

static void make_myid(struct ctl *c)
{
	unsigned char b[20];
	FILE *f = fopen("/dev/urandom", "re");

	if (!f || fread(b, 1, sizeof(b), f) != sizeof(b)) {
		unsigned long long x = (unsigned long long)wall_ms() * 6364136223846793005ull ^ getpid();

		for (size_t i = 0; i < sizeof(b); i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[i] = (unsigned char)x;
		}
	}
	if (f)
		fclose(f);
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(c->myid + 2 * i, 3, "%02x", b[i]);
}

int ctl_new(struct ctl **out, struct cfg *cfg, const struct ctl_opts *opts)
{
	struct ctl *c = calloc(1, sizeof(*c));
	struct evlog_opts lo = { 0 };
	char err[1024];
	int rc;

	if (!c)
		return -ENOMEM;
	c->cfg = cfg;
	c->start_ms = mono_ms();
	snprintf(c->event_log, sizeof(c->event_log), "%s",
		 opts && opts->event_log ? opts->event_log : cfg->controller.event_log);
	snprintf(c->state_file, sizeof(c->state_file), "%s",
		 opts && opts->state_file ? opts->state_file : cfg->controller.state_file);
	make_myid(c);
	rc = fo_cluster_init(&c->fo, cfg, &ctl_ops, c);
	if (rc == -E2BIG) {
		pr_warn("failed to set up the cluster: %d nodes in %s, at most %d\n", cfg->nnodes,
			cfg->path, FO_MAX_NODES);
		goto fail;
	} else if (rc) {
		pr_warn("failed to set up the cluster: %s\n", strerror(-rc));
		goto fail;
	}
	c->fo.now_ms = clk_mono;
	c->fo.wall_ms = clk_wall;
	c->fo.starting = true;
	rc = fo_state_load(&c->fo, c->state_file, err, sizeof(err));
	if (rc == -ENOENT) {
		pr_info("no state file %s: a first start, topology from the servers\n",
			c->state_file);
	} else if (rc) {
		pr_warn("%s\n", err);
		pr_warn("refusing to start: move the damaged state file aside to start from the "
			"servers' view\n");
		goto fail;
	} else if (err[0]) {
		pr_warn("%s\n", err);
	}
	c->base = event_base_new();
	if (!c->base) {
		rc = -ENOMEM;
		goto fail;
	}
	lo.path = c->event_log;
	lo.max_bytes = EVLOG_DEFAULT_MAX_BYTES;
	lo.max_segments = EVLOG_DEFAULT_SEGMENTS;
	rc = evlog_open(&c->log, &lo);
	if (rc) {
		pr_warn("failed to open event log %s: %s\n", c->event_log, strerror(-rc));
		goto fail;
	}
	c->shard_timer = calloc(cfg->nshards ? cfg->nshards : 1, sizeof(struct event *));
	c->waiter = calloc(cfg->nshards ? cfg->nshards : 1, sizeof(struct ctl_conn *));
	if (!c->shard_timer || !c->waiter) {
		rc = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < cfg->nshards; i++) {
		struct shard_timer_arg *a = calloc(1, sizeof(*a));

		if (!a) {
			rc = -ENOMEM;
			goto fail;
		}
		a->c = c;
		a->shard = i;
		c->shard_timer[i] = evtimer_new(c->base, on_shard_timer, a);
	}
	for (int i = 0; i < cfg->nnodes; i++) {
		c->links[i].ctl = c;
		c->links[i].node = i;
		c->links[i].retry_ms = CTL_RETRY_MIN_MS;
		c->links[i].retry = evtimer_new(c->base, on_link_retry, &c->links[i]);
		c->node_timer[i] = evtimer_new(c->base, on_node_deadline, c);
	}
	rc = listen_on(c);
	if (rc)
		goto fail;
	rc = dns_start(c);
	if (rc)
		goto fail;
	c->tick = event_new(c->base, -1, EV_PERSIST, on_tick, c);
	c->sigint = evsignal_new(c->base, SIGINT, on_signal, c);
	c->sigterm = evsignal_new(c->base, SIGTERM, on_signal, c);
	c->discover_timer = evtimer_new(c->base, on_discover_timer, c);
	{
		struct timeval tick = tv_ms(CTL_TICK_MS), disc = tv_ms(CTL_DISCOVER_MS);

		event_add(c->tick, &tick);
		event_add(c->sigint, NULL);
		event_add(c->sigterm, NULL);
		evtimer_add(c->discover_timer, &disc);
	}
	*out = c;
	return 0;
fail:
	ctl_free(c);
	return rc;
}

int ctl_run(struct ctl *c)
{
	struct evrec r;
	const char *argv[] = { "INFO", "replication" };

	signal(SIGPIPE, SIG_IGN);
	evrec_begin(&r, NULL, "controller", "controller_start");
	evrec_str(&r, "listen", c->listen_str);
	evrec_int(&r, "pid", getpid());
	evrec_str(&r, "myid", c->myid);
	evrec_str(&r, "state_file", c->state_file);
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		char k[80];

		snprintf(k, sizeof(k), "state.%s", s->name);
		evrec_str(&r, k, s->primary >= 0 ? c->fo.nodes[s->primary].id : "");
	}
	ctl_log(c, &r);
	/* Topology from INFO replication of every node, in parallel. */
	c->discover_pending = c->fo.nnodes;
	for (int i = 0; i < c->fo.nnodes; i++)
		req_send(req_new(c, i, REQ_DISCOVER, CTL_DISCOVER_MS - 100), 2, argv);
	if (!c->fo.nnodes)
		discover_finish(c);
	event_base_dispatch(c->base);
	evrec_begin(&r, NULL, "controller", "controller_stop");
	ctl_log(c, &r);
	return 0;
}

void ctl_free(struct ctl *c)
{
	if (!c)
		return;
	for (struct ctl_conn *k = c->conns, *next; k; k = next) {
		next = k->next;
		conn_free(k);
	}
	for (int i = 0; i < FO_MAX_NODES; i++) {
		link_reset(&c->links[i]);
		if (c->links[i].retry)
			event_free(c->links[i].retry);
		if (c->node_timer[i])
			event_free(c->node_timer[i]);
	}
	for (int i = 0; c->shard_timer && i < c->cfg->nshards; i++) {
		if (c->shard_timer[i]) {
			free(event_get_callback_arg(c->shard_timer[i]));
			event_free(c->shard_timer[i]);
		}
	}
	free(c->shard_timer);
	free(c->waiter);
	dns_updater_free(c->dns);
	if (c->dns_check)
		event_free(c->dns_check);
	free(c->dnss);
	if (c->lis)
		evconnlistener_free(c->lis);
	if (c->tick)
		event_free(c->tick);
	if (c->sigint)
		event_free(c->sigint);
	if (c->sigterm)
		event_free(c->sigterm);
	if (c->discover_timer)
		event_free(c->discover_timer);
	evlog_close(c->log);
	if (c->base)
		event_base_free(c->base);
	fo_cluster_free(&c->fo);
	free(c);
}

/* ------------------------------------------------------------------------- */
/* `flatline controller` */

static const char controller_usage[] =
	"usage: flatline controller -c FILE [--event-log PATH] [--state-file PATH] [-v]\n"
	"\n"
	"  -c, --config FILE    the cluster file\n"
	"  --event-log PATH     event log (default: [controller] event_log)\n"
	"  --state-file PATH    state file (default: [controller] state_file)\n"
	"  -v, --verbose        more messages (twice: every event on stderr)\n";

int cmd_controller(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "event-log", required_argument, NULL, 'e' },
		{ "state-file", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ctl_opts o = { 0 };
	const char *path = NULL;
	struct cfg *cfg = NULL;
	struct ctl *c = NULL;
	char err[512];
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "c:vh", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'e':
			o.event_log = optarg;
			break;
		case 's':
			o.state_file = optarg;
			break;
		case 'v':
			log_verbosity++;
			break;
		case 'h':
			fputs(controller_usage, stdout);
			return 0;
		default:
			fputs(controller_usage, stderr);
			return 2;
		}
	}
	if (!path || optind != argc) {
		fputs(controller_usage, stderr);
		return 2;
	}
	rc = cfg_load(path, &cfg, err, sizeof(err));
	if (rc) {
		pr_warn("%s\n", err);
		return 1;
	}
	rc = ctl_new(&c, cfg, &o);
	if (rc) {
		cfg_free(cfg);
		return 1;
	}
	ctl_run(c);
	ctl_free(c);
	cfg_free(cfg);
	return 0;
}
