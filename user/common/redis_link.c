// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/redis_link.h"

#define REDIS_LINK_MAX_IN_FLIGHT 64

struct redis_link_req {
	struct redis_link *l;
	redis_link_reply_fn fn;
	void *priv;
	int64_t sent_ms;
	struct redis_link_req *next;
};

struct redis_link {
	struct event_base *base;
	struct cfg_endpoint ep;
	char name[64];
	int timeout_ms;
	struct redis_link_ops ops;
	void *ctx;

	redisAsyncContext *ac; /* NULL while down */
	bool connected;        /* connect completed */
	struct event *retry;   /* reconnect after backoff */
	struct event *conn_to; /* connect timeout */
	struct backoff bo;
	struct redis_link_req *head, *tail; /* in flight, oldest first */
	int in_flight;
	bool freeing;
};

static void arm(struct event *ev, int ms)
{
	struct timeval tv = fl_ms_tv(ms);

	event_add(ev, &tv);
}

/* The connection is gone: tell the owner once, schedule the reconnect. */
static void went_down(struct redis_link *l, const char *why, int err)
{
	l->connected = false;
	event_del(l->conn_to);
	if (l->freeing)
		return;
	arm(l->retry, backoff_next(&l->bo));
	if (l->ops.on_down)
		l->ops.on_down(l->ctx, why, err);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct redis_link *l = ac->data;
	char why[160];

	if (!l || l->ac != ac)
		return; /* dropped on purpose: redis_link_drop() has reported it */
	l->ac = NULL;
	snprintf(why, sizeof(why), "%s", status == REDIS_OK ? "closed" :
					     ac->errstr[0] ? ac->errstr : "connection lost");
	went_down(l, why, 0);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct redis_link *l = ac->data;
	int err = errno;
	char why[160];

	if (!l || l->ac != ac)
		return;
	if (status != REDIS_OK) {
		/* hiredis frees the context after this callback. */
		l->ac = NULL;
		snprintf(why, sizeof(why), "%s", ac->errstr[0] ? ac->errstr : "connect failed");
		went_down(l, why, err);
		return;
	}
	event_del(l->conn_to);
	l->connected = true;
	backoff_reset(&l->bo);
	if (l->ops.on_up)
		l->ops.on_up(l->ctx);
}

static void connect_now(struct redis_link *l)
{
	redisAsyncContext *ac;
	char why[160];
	int err;

	errno = 0;
	if (l->ep.unix_path[0])
		ac = redisAsyncConnectUnix(l->ep.unix_path);
	else
		ac = redisAsyncConnect(l->ep.host, l->ep.port);
	err = errno;
	if (!ac || ac->err) {
		snprintf(why, sizeof(why), "%s", ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		went_down(l, why, err);
		return;
	}
	ac->data = l;
	l->ac = ac;
	redisLibeventAttach(ac, l->base);
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	arm(l->conn_to, l->timeout_ms);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	connect_now(arg);
}

static void on_connect_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	redis_link_drop(arg, "connect timed out");
}

struct redis_link *redis_link_new(struct event_base *base, const struct cfg_endpoint *ep, const char *name,
		     int timeout_ms, const struct redis_link_ops *ops, void *ctx)
{
	struct redis_link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->base = base;
	l->ep = *ep;
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->timeout_ms = timeout_ms;
	l->ops = *ops;
	l->ctx = ctx;
	l->bo = (struct backoff){ .base_ms = 100, .max_ms = 5000, .seed = (unsigned)(uintptr_t)l };
	l->retry = evtimer_new(base, on_retry, l);
	l->conn_to = evtimer_new(base, on_connect_timeout, l);
	if (!l->retry || !l->conn_to) {
		redis_link_free(l);
		return NULL;
	}
	return l;
}

void redis_link_set_backoff(struct redis_link *l, int base_ms, int max_ms)
{
	l->bo.base_ms = base_ms;
	l->bo.max_ms = max_ms;
	backoff_reset(&l->bo);
}

void redis_link_start(struct redis_link *l)
{
	if (!l->ac && !evtimer_pending(l->retry, NULL))
		connect_now(l);
}

static size_t reply_size(const redisReply *r, int depth) // NOLINT(misc-no-recursion): depth <= 8
{
	size_t n = 16;

	if (depth > 8)
		return REDIS_LINK_MAX_REPLY + 1;
	if (r->type == REDIS_REPLY_ARRAY)
		for (size_t i = 0; i < r->elements && n <= REDIS_LINK_MAX_REPLY; i++)
			n += reply_size(r->element[i], depth + 1);
	else
		n += r->len;
	return n;
}

static void on_reply(redisAsyncContext *ac, void *r, void *priv)
{
	struct redis_link_req *q = priv;
	struct redis_link *l = q->l;
	redisReply *reply = r;

	(void)ac;
	/* Replies come in order: this is the oldest request. */
	if (l->head == q) {
		l->head = q->next;
		if (!l->head)
			l->tail = NULL;
	}
	l->in_flight--;
	if (reply && reply_size(reply, 0) > REDIS_LINK_MAX_REPLY) {
		q->fn(l->ctx, NULL, q->priv);
		free(q);
		redis_link_drop(l, "reply larger than 4 MiB");
		return;
	}
	q->fn(l->ctx, reply, q->priv);
	free(q);
}

int redis_link_command(struct redis_link *l, redis_link_reply_fn fn, void *priv, int argc, const char **argv,
	       const size_t *lens)
{
	struct redis_link_req *q;

	if (!l->ac || !l->connected)
		return -ENOTCONN;
	if (l->in_flight >= REDIS_LINK_MAX_IN_FLIGHT)
		return -ENOBUFS;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	*q = (struct redis_link_req){ .l = l, .fn = fn, .priv = priv, .sent_ms = fl_mono_ms() };
	if (redisAsyncCommandArgv(l->ac, on_reply, q, argc, argv, lens) != REDIS_OK) {
		free(q);
		return -EIO;
	}
	if (l->tail)
		l->tail->next = q;
	else
		l->head = q;
	l->tail = q;
	l->in_flight++;
	return 0;
}

void redis_link_drop(struct redis_link *l, const char *why)
{
	redisAsyncContext *ac = l->ac;

	if (!ac)
		return;
	l->ac = NULL; /* on_disconnect() now ignores it */
	/* Pending callbacks run now with a NULL reply. */
	l->head = l->tail = NULL;
	redisAsyncFree(ac);
	went_down(l, why, 0);
}

bool redis_link_connected(const struct redis_link *l)
{
	return l->ac && l->connected;
}

int redis_link_in_flight(const struct redis_link *l)
{
	return l->in_flight;
}

long redis_link_oldest_ms(const struct redis_link *l)
{
	return l->head ? (long)(fl_mono_ms() - l->head->sent_ms) : 0;
}

void redis_link_free(struct redis_link *l)
{
	if (!l)
		return;
	l->freeing = true;
	if (l->ac) {
		redisAsyncContext *ac = l->ac;

		l->ac = NULL;
		redisAsyncFree(ac);
	}
	if (l->retry)
		event_free(l->retry);
	if (l->conn_to)
		event_free(l->conn_to);
	free(l);
}
