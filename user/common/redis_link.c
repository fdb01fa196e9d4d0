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
	redis_link_reply_fn fn;   /* redis_link_command */
	redis_link_result_fn rfn; /* redis_link_request; neither: redis_link_send */
	void *priv;
	int64_t sent_ms;
	struct redis_link_req *next; /* in flight, oldest first */
	/* redis_link_request and redis_link_send only: */
	struct event *timer;     /* the deadline; fired at once to fail from the loop */
	char *cmd;               /* formatted, until sent */
	int cmdlen;
	bool held;               /* waits for the connection */
	bool in_hiredis;         /* hiredis holds it: on_reply() frees it */
	bool finished;           /* answered (reply, error or timeout) */
	char err[256];           /* why it failed before reaching the server */
	struct redis_link_req *hnext;       /* held, in order */
	struct redis_link_req *aprev, *anext; /* every one alive, for redis_link_free() */
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
	struct redis_link_req *held_head, *held_tail; /* until connected */
	struct redis_link_req *all; /* requests and sends alive */
	bool freeing;
};

static void arm(struct event *ev, int ms)
{
	struct timeval tv = fl_ms_tv(ms);

	event_add(ev, &tv);
}

static void req_free(struct redis_link_req *q)
{
	struct redis_link *l = q->l;

	if (q->aprev)
		q->aprev->anext = q->anext;
	else
		l->all = q->anext;
	if (q->anext)
		q->anext->aprev = q->aprev;
	if (q->timer)
		event_free(q->timer);
	free(q->cmd);
	free(q);
}

/* Answers a request once: its fn runs with the reply, or with NULL and err. */
static void req_finish(struct redis_link_req *q, redisReply *reply, const char *err)
{
	if (q->finished)
		return;
	q->finished = true;
	event_del(q->timer);
	if (!q->l->freeing)
		q->rfn(q->l->ctx, reply, reply ? NULL : err, q->priv);
}

/* Fails a request from the loop, never from inside its caller. */
static void req_fail_later(struct redis_link_req *q, const char *err)
{
	snprintf(q->err, sizeof(q->err), "%s", err);
	event_active(q->timer, EV_TIMEOUT, 0);
}

static struct redis_link_req *unhold_first(struct redis_link *l)
{
	struct redis_link_req *q = l->held_head;

	if (q) {
		l->held_head = q->hnext;
		if (!l->held_head)
			l->held_tail = NULL;
		q->hnext = NULL;
		q->held = false;
	}
	return q;
}

/* The connection those held waited for failed: requests fail, sends are lost. */
static void fail_held(struct redis_link *l, const char *why)
{
	struct redis_link_req *q;
	char err[256];

	snprintf(err, sizeof(err), "cannot connect to %.64s: %.120s", l->name, why);
	while ((q = unhold_first(l))) {
		if (q->rfn)
			req_fail_later(q, err);
		else
			req_free(q);
	}
}

/* The connection is gone: tell the owner once, schedule the reconnect (at once
 * when requests wait for it). */
static void went_down(struct redis_link *l, const char *why, int err)
{
	bool connecting = !l->connected;

	l->connected = false;
	event_del(l->conn_to);
	if (l->freeing)
		return;
	/* Held while it connected: they waited for this connection. Held since
	 * it went down (sent from the callbacks of a drop): for the next one. */
	if (connecting)
		fail_held(l, why);
	arm(l->retry, l->held_head ? 0 : backoff_next(&l->bo));
	if (l->ops.on_down)
		l->ops.on_down(l->ctx, why, err);
}

static void send_held(struct redis_link *l);

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
	send_held(l); /* after the owner's handshake */
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

	bool big = reply && reply_size(reply, 0) > REDIS_LINK_MAX_REPLY;

	(void)ac;
	/* Replies come in order: this is the oldest request. */
	if (l->head == q) {
		l->head = q->next;
		if (!l->head)
			l->tail = NULL;
	}
	l->in_flight--;
	if (q->rfn) {
		q->in_hiredis = false;
		req_finish(q, big ? NULL : reply, big ? "reply larger than 4 MiB" : "connection lost");
		req_free(q);
	} else {
		q->fn(l->ctx, big ? NULL : reply, q->priv);
		free(q);
	}
	if (big)
		redis_link_drop(l, "reply larger than 4 MiB");
}

static void track(struct redis_link *l, struct redis_link_req *q)
{
	q->sent_ms = fl_mono_ms();
	if (l->tail)
		l->tail->next = q;
	else
		l->head = q;
	l->tail = q;
	l->in_flight++;
}

/* A request or a send, on a connected link. */
static void send_now(struct redis_link *l, struct redis_link_req *q)
{
	if (redisAsyncFormattedCommand(l->ac, q->rfn ? on_reply : NULL, q->rfn ? q : NULL, q->cmd,
				       (size_t)q->cmdlen) != REDIS_OK) {
		if (q->rfn)
			req_fail_later(q, "failed to send the command");
		else
			req_free(q);
		return;
	}
	if (!q->rfn) {
		req_free(q);
		return;
	}
	free(q->cmd);
	q->cmd = NULL;
	q->in_hiredis = true;
	track(l, q);
}

static void send_held(struct redis_link *l)
{
	struct redis_link_req *q;

	while (l->ac && l->connected && (q = unhold_first(l)))
		send_now(l, q);
}

static void on_req_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct redis_link_req *q = arg;
	struct redis_link *l = q->l;
	bool timed_out = !q->err[0], in_hiredis = q->in_hiredis;

	(void)fd;
	(void)what;
	if (q->held) {
		struct redis_link_req **pp = &l->held_head, *prev = NULL;

		for (; *pp && *pp != q; prev = *pp, pp = &(*pp)->hnext)
			;
		*pp = q->hnext;
		if (l->held_tail == q)
			l->held_tail = prev;
		q->held = false;
	}
	req_finish(q, NULL, timed_out ? "timed out" : q->err);
	if (!in_hiredis)
		req_free(q); /* else on_reply() frees it, from the drop below */
	/* Nothing else queued on this link can be trusted to answer soon either. */
	if (timed_out && l->ac)
		redis_link_drop(l, "request timed out");
}

/* Sent when connected, else held (and the link connects now, from the loop). */
static struct redis_link_req *req_new(struct redis_link *l, int argc, const char **argv)
{
	struct redis_link_req *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->l = l;
	q->cmdlen = redisFormatCommandArgv(&q->cmd, argc, argv, NULL);
	if (q->cmdlen < 0) {
		free(q);
		return NULL;
	}
	q->anext = l->all;
	if (l->all)
		l->all->aprev = q;
	l->all = q;
	return q;
}

static void enqueue(struct redis_link *l, struct redis_link_req *q)
{
	if (l->ac && l->connected) {
		send_now(l, q);
		return;
	}
	q->held = true;
	if (l->held_tail)
		l->held_tail->hnext = q;
	else
		l->held_head = q;
	l->held_tail = q;
	if (!l->ac)
		arm(l->retry, 0); /* a request never waits out the backoff */
}

void redis_link_request(struct redis_link *l, int timeout_ms, redis_link_result_fn fn, void *priv,
			int argc, const char **argv)
{
	struct redis_link_req *q = req_new(l, argc, argv);
	struct timeval tv = fl_ms_tv(timeout_ms < 0 ? 0 : timeout_ms);

	if (!q)
		return;
	q->rfn = fn;
	q->priv = priv;
	q->timer = evtimer_new(l->base, on_req_timeout, q);
	if (!q->timer) {
		req_free(q);
		return;
	}
	evtimer_add(q->timer, &tv);
	if (l->in_flight >= REDIS_LINK_MAX_IN_FLIGHT) {
		req_fail_later(q, "too many requests in flight");
		return;
	}
	enqueue(l, q);
}

void redis_link_send(struct redis_link *l, int argc, const char **argv)
{
	struct redis_link_req *q = req_new(l, argc, argv);

	if (q)
		enqueue(l, q);
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
	*q = (struct redis_link_req){ .l = l, .fn = fn, .priv = priv };
	if (redisAsyncCommandArgv(l->ac, on_reply, q, argc, argv, lens) != REDIS_OK) {
		free(q);
		return -EIO;
	}
	track(l, q);
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

int redis_link_fd(const struct redis_link *l)
{
	return l->ac ? l->ac->c.fd : -1;
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
	/* Held, or failing from the loop: no callbacks now. */
	for (struct redis_link_req *q = l->all, *next; q; q = next) {
		next = q->anext;
		if (q->timer)
			event_free(q->timer);
		free(q->cmd);
		free(q);
	}
	l->all = NULL;
	if (l->retry)
		event_free(l->retry);
	if (l->conn_to)
		event_free(l->conn_to);
	free(l);
}
