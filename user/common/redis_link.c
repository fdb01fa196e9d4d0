// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One RESP link to a peer that may be hostile: our own request queue on a
 * libevent bufferevent, replies read by reply_reader (limits enforced while
 * reading). A reply nobody asked for, a malformed or oversized one, or one that
 * does not finish in time closes this link with a message; it never aborts the
 * process (hiredis 0.14's async layer assert()s on an unsolicited reply, which
 * is why it is not used). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/redis_link.h"
#include "common/reply_reader.h"
#include "common/tls.h"

#define REDIS_LINK_MAX_IN_FLIGHT 64
#define REDIS_LINK_READ_CHUNK	 65536
/* libevent stops reading past this much unparsed input; we drain it in chunks. */
#define REDIS_LINK_INPUT_HIWAT (1u << 20)

/* A command (redis_link_command: fn), a request (redis_link_request: rfn, always
 * answered once, with a deadline) or a send (neither: its reply is read and
 * dropped). Every one is on l->all until freed. */
struct redis_link_req {
	struct redis_link *l;
	redis_link_reply_fn fn;
	redis_link_result_fn rfn;
	void *priv;
	int64_t sent_ms;
	unsigned read_seq; /* l->reads when sent: what was read by then cannot answer it */
	struct redis_link_req *next; /* in flight, oldest first */
	/* redis_link_request and redis_link_send only: */
	struct event *timer; /* the deadline; fired at once to fail from the loop */
	char *cmd;	     /* formatted, until sent */
	long long cmdlen;
	bool held;		      /* waits for the connection */
	bool in_flight;		      /* on the in-flight queue: its reply or the drop frees it */
	bool finished;		      /* answered (reply, error or timeout) */
	char err[256];		      /* why it failed before reaching the server */
	struct redis_link_req *hnext; /* held, in order */
	struct redis_link_req *aprev, *anext; /* every one alive */
};

struct redis_link {
	struct event_base *base;
	struct cfg_endpoint ep;
	char name[64];
	int timeout_ms;
	int reply_timeout_ms;
	struct redis_link_ops ops;
	void *ctx;

	SSL_CTX *tls;		 /* TLS (redis_link_set_tls), NULL: plain */
	char tls_host[256];	 /* the name or IP its certificate must carry */
	bool tls_up;		 /* bev is the TLS one (handshake under way or done) */
	struct bufferevent *bev; /* NULL while down */
	struct reply_reader *rd; /* this connection's replies */
	bool connected;		 /* connect completed */
	struct event *retry;	 /* reconnect after backoff */
	struct event *conn_to;	 /* connect timeout */
	struct event *reply_to;	 /* a reply begun and not finished in time */
	struct backoff bo;
	struct redis_link_req *head, *tail; /* in flight, oldest first */
	int in_flight;
	struct redis_link_req *held_head, *held_tail; /* until connected */
	struct redis_link_req *all;		      /* every request alive */
	unsigned gen;	   /* bumped by every drop: a callback may drop the link */
	unsigned reads;	   /* on_read() calls */
	int in_callback;   /* depth of owner callbacks running */
	bool free_pending; /* redis_link_free() called from a callback */
	bool freeing;
};

static void arm(struct event *ev, int ms)
{
	struct timeval tv = fl_ms_tv(ms);

	event_add(ev, &tv);
}

static struct redis_link_req *req_alloc(struct redis_link *l)
{
	struct redis_link_req *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->l = l;
	q->anext = l->all;
	if (l->all)
		l->all->aprev = q;
	l->all = q;
	return q;
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

/* Answers a request once: its rfn runs with the reply, or with NULL and err. */
static void req_finish(struct redis_link_req *q, redisReply *reply, const char *err)
{
	struct redis_link *l = q->l;

	if (q->finished)
		return;
	q->finished = true;
	if (q->timer)
		event_del(q->timer);
	if (l->freeing || l->free_pending)
		return;
	l->in_callback++;
	q->rfn(l->ctx, reply, reply ? NULL : err, q->priv);
	l->in_callback--;
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

/* Close the connection; every request still in flight is answered with NULL. */
static void close_conn(struct redis_link *l)
{
	struct redis_link_req *q = l->head;

	if (l->bev) {
		bufferevent_free(l->bev); /* BEV_OPT_CLOSE_ON_FREE */
		l->bev = NULL;
	}
	reply_reader_free(l->rd);
	l->rd = NULL;
	l->connected = false;
	l->tls_up = false;
	l->gen++;
	event_del(l->conn_to);
	event_del(l->reply_to);
	l->head = l->tail = NULL;
	l->in_flight = 0;
	l->in_callback++;
	while (q) {
		struct redis_link_req *next = q->next;

		q->in_flight = false;
		if (q->rfn)
			req_finish(q, NULL, "connection lost");
		else if (q->fn)
			q->fn(l->ctx, NULL, q->priv); /* even when freeing: it may own priv */
		req_free(q);
		q = next;
	}
	l->in_callback--;
}

/* The connection is gone: tell the owner once, schedule the reconnect. */
static void went_down(struct redis_link *l, const char *why, int err)
{
	bool connecting = !l->connected;

	close_conn(l);
	if (l->freeing || l->free_pending)
		return;
	/* Held while it connected: they waited for this connection. Held since
	 * it went down (sent from the callbacks of a drop): for the next one. */
	if (connecting)
		fail_held(l, why);
	arm(l->retry, l->held_head ? 0 : backoff_next(&l->bo));
	if (l->ops.on_down) {
		l->in_callback++;
		l->ops.on_down(l->ctx, why, err);
		l->in_callback--;
	}
}

static void protocol_error(struct redis_link *l, const char *what)
{
	char why[240];

	/* The owner's on_down says it, once per change of reason. */
	snprintf(why, sizeof(why), "protocol error: %s", what);
	went_down(l, why, EPROTO);
}

/* Runs the owner's callback for the oldest request. false: the link was dropped
 * or freed meanwhile, stop touching it. */
static bool deliver(struct redis_link *l, redisReply *rep)
{
	struct redis_link_req *q = l->head;
	unsigned gen = l->gen;

	l->head = q->next;
	if (!l->head)
		l->tail = NULL;
	l->in_flight--;
	q->in_flight = false;
	if (q->rfn) {
		req_finish(q, rep, NULL);
	} else if (q->fn) {
		l->in_callback++;
		q->fn(l->ctx, rep, q->priv);
		l->in_callback--;
	}
	req_free(q);
	freeReplyObject(rep);
	return l->gen == gen && l->bev;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct redis_link *l = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	char chunk[4096];

	/* Every byte in `in` was received before this call: a request sent from a
	 * callback below cannot be answered by them (a peer sending "+OK\r\n+OK\r\n"
	 * to one HELLO must not have its second +OK taken as the first REPORT's
	 * answer). */
	l->reads++;
	while (evbuffer_get_length(in)) {
		size_t n = evbuffer_remove(in, chunk, sizeof(chunk));
		redisReply *rep;
		int rc;

		if (!l->head || l->head->read_seq == l->reads) {
			protocol_error(l, "a reply to no request");
			return;
		}
		if (reply_reader_feed(l->rd, chunk, n)) {
			protocol_error(l, "out of memory");
			return;
		}
		while ((rc = reply_reader_next(l->rd, &rep)) == 1) {
			if (!l->head || l->head->read_seq == l->reads) {
				freeReplyObject(rep);
				protocol_error(l, "a reply to no request");
				return;
			}
			if (!deliver(l, rep))
				return;
		}
		if (rc < 0) {
			char what[200];

			snprintf(what, sizeof(what), "%s", reply_reader_error(l->rd));
			protocol_error(l, what);
			return;
		}
	}
	/* Part of a reply is here: the rest must follow within the reply timeout. */
	if (reply_reader_pending(l->rd)) {
		if (!evtimer_pending(l->reply_to, NULL))
			arm(l->reply_to, l->reply_timeout_ms);
	} else {
		event_del(l->reply_to);
	}
}

static void send_held(struct redis_link *l);

static void on_event(struct bufferevent *bev, short what, void *arg);

/* TCP is up: the same socket continues in a TLS bufferevent, which reports
 * BEV_EVENT_CONNECTED once the handshake is done (within the connect timeout). */
static void start_tls(struct redis_link *l)
{
	int fd = fcntl((int)bufferevent_getfd(l->bev), F_DUPFD_CLOEXEC, 0);
	SSL *ssl = tls_client_ssl(l->tls, l->tls_host);
	struct bufferevent *bev = NULL;

	if (fd >= 0 && ssl) {
		bev = bufferevent_openssl_socket_new(l->base, fd, ssl, BUFFEREVENT_SSL_CONNECTING,
						     BEV_OPT_CLOSE_ON_FREE);
		ssl = NULL; /* on failure libevent 2.1 has freed it (BEV_OPT_CLOSE_ON_FREE) */
	}
	if (!bev) {
		if (ssl)
			SSL_free(ssl);
		if (fd >= 0)
			close(fd);
		went_down(l, "failed to start TLS: out of memory", ENOMEM);
		return;
	}
	bufferevent_free(l->bev); /* closes the original descriptor, not the socket */
	l->bev = bev;
	l->tls_up = true;
	bufferevent_openssl_set_allow_dirty_shutdown(bev,
						     1); /* Redis closes without close_notify */
	bufferevent_setcb(bev, on_read, NULL, on_event, l);
	bufferevent_setwatermark(bev, EV_READ, 0, REDIS_LINK_INPUT_HIWAT);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct redis_link *l = arg;
	int err = EVUTIL_SOCKET_ERROR();
	char why[240], tw[200];

	if ((what & BEV_EVENT_CONNECTED) && l->tls && !l->tls_up) {
		if (l->ops.on_tcp_up) {
			unsigned gen = l->gen;

			l->in_callback++;
			l->ops.on_tcp_up(l->ctx, (int)bufferevent_getfd(bev));
			l->in_callback--;
			if (gen != l->gen)
				return; /* dropped or freed by on_tcp_up */
		}
		start_tls(l);
		return;
	}
	if (l->tls_up && !l->connected && (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF))) {
		snprintf(why, sizeof(why), "TLS handshake failed: %s",
			 tls_bev_error(bev, (what & BEV_EVENT_ERROR) ? err : 0, tw, sizeof(tw)));
		went_down(l, why, EPROTO);
		return;
	}
	if (what & BEV_EVENT_CONNECTED) {
		event_del(l->conn_to);
		l->connected = true;
		backoff_reset(&l->bo);
		if (l->ops.on_up) {
			unsigned gen = l->gen;

			l->in_callback++;
			l->ops.on_up(l->ctx);
			l->in_callback--;
			if (gen != l->gen)
				return; /* dropped or freed by on_up */
		}
		send_held(l); /* after the owner's handshake */
		return;
	}
	if (what & BEV_EVENT_EOF) {
		went_down(l, "closed", 0);
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		if (l->tls_up && !err)
			snprintf(why, sizeof(why), "TLS: %s",
				 tls_bev_error(bev, 0, tw, sizeof(tw)));
		else
			snprintf(why, sizeof(why), "%s", err ? strerror(err) : "connection lost");
		went_down(l, why, err);
		return;
	}
}

static int open_socket(struct redis_link *l, int *fdp)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	const struct sockaddr *sa;
	socklen_t salen;
	char port[16];
	int fd, rc, one = 1;

	if (l->ep.unix_path[0]) {
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", l->ep.unix_path);
		sa = (const struct sockaddr *)&sun;
		salen = sizeof(sun);
	} else {
		/* As hiredis does: IPv4 first, then IPv6. */
		snprintf(port, sizeof(port), "%d", l->ep.port);
		hints.ai_family = AF_INET;
		rc = getaddrinfo(l->ep.host, port, &hints, &ai);
		if (rc) {
			hints.ai_family = AF_INET6;
			rc = getaddrinfo(l->ep.host, port, &hints, &ai);
		}
		if (rc)
			return rc == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
		sa = ai->ai_addr;
		salen = ai->ai_addrlen;
	}
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto cleanup;
	}
	if (sa->sa_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, sa, salen) && errno != EINPROGRESS) {
		rc = -errno;
		close(fd);
		goto cleanup;
	}
	*fdp = fd;
	rc = 0;
cleanup:
	if (ai)
		freeaddrinfo(ai);
	return rc;
}

static void connect_now(struct redis_link *l)
{
	int fd = -1, rc;

	rc = open_socket(l, &fd);
	if (rc) {
		went_down(l, strerror(-rc), -rc);
		return;
	}
	l->rd = reply_reader_new();
	l->bev = bufferevent_socket_new(l->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!l->bev || !l->rd) {
		if (!l->bev)
			close(fd);
		went_down(l, "out of memory", ENOMEM);
		return;
	}
	bufferevent_setcb(l->bev, on_read, NULL, on_event, l);
	bufferevent_setwatermark(l->bev, EV_READ, 0, REDIS_LINK_INPUT_HIWAT);
	/* fd is connecting: libevent reports BEV_EVENT_CONNECTED or the error. */
	if (bufferevent_socket_connect(l->bev, NULL, 0)) {
		went_down(l, "failed to start connecting", errno);
		return;
	}
	bufferevent_enable(l->bev, EV_READ | EV_WRITE);
	arm(l->conn_to, l->timeout_ms);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct redis_link *l = arg;

	(void)fd;
	(void)what;
	if (!l->free_pending)
		connect_now(l);
}

static void on_connect_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	redis_link_drop(arg, "connect timed out");
}

static void on_reply_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct redis_link *l = arg;
	char what_s[96];

	(void)fd;
	(void)what;
	snprintf(what_s, sizeof(what_s), "a reply begun and not finished within %d ms",
		 l->reply_timeout_ms);
	protocol_error(l, what_s);
}

struct redis_link *redis_link_new(struct event_base *base, const struct cfg_endpoint *ep,
				  const char *name, int timeout_ms,
				  const struct redis_link_ops *ops, void *ctx)
{
	struct redis_link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->base = base;
	l->ep = *ep;
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->timeout_ms = timeout_ms;
	l->reply_timeout_ms = REDIS_LINK_REPLY_TIMEOUT_MS;
	l->ops = *ops;
	l->ctx = ctx;
	l->bo = (struct backoff){.base_ms = 100, .max_ms = 5000, .seed = (unsigned)(uintptr_t)l};
	l->retry = evtimer_new(base, on_retry, l);
	l->conn_to = evtimer_new(base, on_connect_timeout, l);
	l->reply_to = evtimer_new(base, on_reply_timeout, l);
	if (!l->retry || !l->conn_to || !l->reply_to) {
		redis_link_free(l);
		return NULL;
	}
	return l;
}

int redis_link_set_tls(struct redis_link *l, SSL_CTX *ctx, const char *host)
{
	if (l->ep.unix_path[0])
		return 0; /* Redis speaks plain text on its unix socket */
	if (!SSL_CTX_up_ref(ctx))
		return -ENOMEM;
	if (l->tls)
		SSL_CTX_free(l->tls);
	l->tls = ctx;
	snprintf(l->tls_host, sizeof(l->tls_host), "%s", host && host[0] ? host : l->ep.host);
	return 0;
}

void redis_link_set_backoff(struct redis_link *l, int base_ms, int max_ms)
{
	l->bo.base_ms = base_ms;
	l->bo.max_ms = max_ms;
	backoff_reset(&l->bo);
}

void redis_link_set_reply_timeout(struct redis_link *l, int ms)
{
	l->reply_timeout_ms = ms > 0 ? ms : REDIS_LINK_REPLY_TIMEOUT_MS;
}

void redis_link_start(struct redis_link *l)
{
	if (l->free_pending)
		return;
	if (!l->bev && !evtimer_pending(l->retry, NULL))
		connect_now(l);
}

static void track(struct redis_link *l, struct redis_link_req *q)
{
	q->sent_ms = fl_mono_ms();
	q->read_seq = l->reads;
	q->in_flight = true;
	if (l->tail)
		l->tail->next = q;
	else
		l->head = q;
	l->tail = q;
	l->in_flight++;
}

int redis_link_command(struct redis_link *l, redis_link_reply_fn fn, void *priv, int argc,
		       const char **argv, const size_t *lens)
{
	struct redis_link_req *q;
	char *cmd = NULL;
	long long n;

	if (!l->bev || !l->connected)
		return -ENOTCONN;
	if (l->in_flight >= REDIS_LINK_MAX_IN_FLIGHT)
		return -ENOBUFS;
	n = redisFormatCommandArgv(&cmd, argc, argv, lens);
	if (n < 0 || bufferevent_write(l->bev, cmd, n)) {
		free(cmd);
		return -EIO;
	}
	free(cmd);
	q = req_alloc(l);
	if (!q) {
		/* Sent: its reply must still be consumed in order. */
		redis_link_drop(l, "out of memory");
		return -ENOMEM;
	}
	q->fn = fn;
	q->priv = priv;
	track(l, q);
	return 0;
}

/* A request or a send, on a connected link. */
static void send_now(struct redis_link *l, struct redis_link_req *q)
{
	if (bufferevent_write(l->bev, q->cmd, q->cmdlen)) {
		if (q->rfn)
			req_fail_later(q, "failed to send the command");
		else
			req_free(q);
		return;
	}
	free(q->cmd);
	q->cmd = NULL;
	track(l, q);
}

static void send_held(struct redis_link *l)
{
	struct redis_link_req *q;

	while (l->bev && l->connected && (q = unhold_first(l)))
		send_now(l, q);
}

static void on_req_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct redis_link_req *q = arg;
	struct redis_link *l = q->l;
	bool timed_out = !q->err[0], in_flight = q->in_flight;

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
	if (!in_flight)
		req_free(q); /* else its reply or the drop below frees it */
	/* Nothing else queued on this link can be trusted to answer soon either. */
	if (timed_out && in_flight && l->bev)
		redis_link_drop(l, "request timed out");
}

/* Sent when connected, else held (and the link connects now, from the loop). */
static struct redis_link_req *req_new(struct redis_link *l, int argc, const char **argv)
{
	struct redis_link_req *q = req_alloc(l);

	if (!q)
		return NULL;
	q->cmdlen = redisFormatCommandArgv(&q->cmd, argc, argv, NULL);
	if (q->cmdlen < 0) {
		q->cmd = NULL;
		req_free(q);
		return NULL;
	}
	return q;
}

static void enqueue(struct redis_link *l, struct redis_link_req *q)
{
	if (l->bev && l->connected) {
		send_now(l, q);
		return;
	}
	q->held = true;
	if (l->held_tail)
		l->held_tail->hnext = q;
	else
		l->held_head = q;
	l->held_tail = q;
	if (!l->bev && !l->free_pending)
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

void redis_link_drop(struct redis_link *l, const char *why)
{
	if (!l->bev)
		return;
	went_down(l, why, 0);
}

bool redis_link_connected(const struct redis_link *l)
{
	return l->bev && l->connected;
}

int redis_link_in_flight(const struct redis_link *l)
{
	return l->in_flight;
}

int redis_link_fd(const struct redis_link *l)
{
	return l->bev ? (int)bufferevent_getfd(l->bev) : -1;
}

long redis_link_oldest_ms(const struct redis_link *l)
{
	return l->head ? (long)(fl_mono_ms() - l->head->sent_ms) : 0;
}

static void really_free(struct redis_link *l)
{
	l->freeing = true;
	close_conn(l);
	/* Held, or failing from the loop: no callbacks now. */
	for (struct redis_link_req *q = l->all, *next; q; q = next) {
		next = q->anext;
		if (q->timer)
			event_free(q->timer);
		free(q->cmd);
		free(q);
	}
	l->all = NULL;
	l->held_head = l->held_tail = NULL;
	if (l->retry)
		event_free(l->retry);
	if (l->conn_to)
		event_free(l->conn_to);
	if (l->reply_to)
		event_free(l->reply_to);
	if (l->tls)
		SSL_CTX_free(l->tls);
	free(l);
}

static void on_deferred_free(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	really_free(arg);
}

void redis_link_free(struct redis_link *l)
{
	if (!l || l->free_pending)
		return;
	if (l->in_callback) {
		/* Freed from one of its own callbacks, which returns into this
		 * file: close now, release the memory from the loop. */
		l->free_pending = true;
		close_conn(l);
		if (!event_base_once(l->base, -1, EV_TIMEOUT, on_deferred_free, l, NULL))
			return;
		/* Cannot defer: leak it rather than touch freed memory. */
		pr_warn("failed to schedule freeing the %s link: leaking it\n", l->name);
		return;
	}
	really_free(l);
}
