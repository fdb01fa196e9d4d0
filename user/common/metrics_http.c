// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The metrics endpoint's HTTP server: GET /metrics, one answer per connection
 * (Connection: close), on the daemon's own loop. Its own listener rather than
 * libevent 2.1's evhttp, which cannot bound its connections: a peer opening
 * thousands of them took every descriptor the daemon had (its agents' and
 * clients' sockets then failed with EMFILE) and evhttp's listener spun on the
 * error. Here:
 *   - at most METRICS_MAX_CONNS connections, METRICS_MAX_PER_ADDR from one address
 *     (an IPv6 address is its /64); past either, the oldest connection that has
 *     not sent its whole request yet, of the new one's address, or else of the
 *     address holding the most, is closed for the new one: a flood from a few
 *     addresses never holds out a scraper from another;
 *   - each connection has METRICS_TIMEOUT_MS from its accept to its answer's last
 *     byte, and METRICS_MAX_HEADER bytes of request;
 *   - accept() failing (EMFILE, ENFILE, ENOMEM) pauses the listener for
 *     METRICS_ACCEPT_PAUSE_MS (the pending connection would make it fire again at
 *     once), with one message per 10 s, as the controller's client socket does;
 *   - the body is filled at most every METRICS_CACHE_MS and sent from that copy in
 *     between: a loop of GETs costs the daemon's loop (the failover's) one fill per
 *     period, not one per request. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/metrics.h"

#define METRICS_MAX_CONNS	64
#define METRICS_MAX_PER_ADDR	8
#define METRICS_KEY		9 /* addr_key */
#define METRICS_TIMEOUT_MS	5000
#define METRICS_MAX_HEADER	8192
#define METRICS_ACCEPT_PAUSE_MS 100
#define METRICS_CACHE_MS	100

struct metrics_conn {
	struct metrics *m;
	struct bufferevent *bev;
	struct event *deadline;
	evutil_socket_t fd;
	unsigned char addr[METRICS_KEY];  /* addr_key: IPv4, or an IPv6 /64 */
	struct metrics_conn *prev, *next; /* oldest first */
	bool answered;			  /* writing its answer; closed once written */
};

struct metrics {
	struct event_base *base;
	struct evconnlistener *lis;
	struct event *resume; /* the listener paused after an accept error */
	metrics_fill_fn fill;
	void *ctx;
	uint64_t scrapes;
	uint64_t fills;
	struct evbuffer *cache; /* the last body filled, at cache_ms; NULL: none yet */
	int64_t cache_ms;	/* monotonic */
	struct metrics_conn *head, *tail;
	int nconns;
	int64_t err_ms;	  /* last accept error or eviction logged */
	unsigned errs;	  /* accept errors since */
	unsigned evicted; /* connections closed for a newer one, since */
};

static void conn_free(struct metrics_conn *k)
{
	struct metrics *m = k->m;

	if (k->prev)
		k->prev->next = k->next;
	else
		m->head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		m->tail = k->prev;
	m->nconns--;
	/* Closed here, not by the bufferevent: libevent 2.1 closes on its deferred
	 * finalisation, after a burst of accepts, so the descriptors an eviction frees
	 * would pile up past the cap (bufferevent_free has taken the socket's events
	 * off the loop). */
	bufferevent_free(k->bev);
	close(k->fd);
	event_free(k->deadline);
	free(k);
}

static void reply(struct metrics_conn *k, int code, const char *reason, struct evbuffer *body,
		  bool head)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	size_t len = body ? evbuffer_get_length(body) : strlen(reason) + 1;

	evbuffer_add_printf(
	    out,
	    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n",
	    code, reason,
	    body ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8", len);
	if (!head) {
		if (body)
			evbuffer_add_buffer(out, body);
		else
			evbuffer_add_printf(out, "%s\n", reason);
	}
	k->answered = true;
	bufferevent_disable(k->bev, EV_READ);
}

/* The body into out: the copy filled within METRICS_CACHE_MS, or a new one. */
static int body_of(struct metrics *m, struct evbuffer *out)
{
	int64_t now = fl_mono_ms();
	size_t len;

	if (!m->cache || now - m->cache_ms >= METRICS_CACHE_MS) {
		if (!m->cache)
			m->cache = evbuffer_new();
		if (!m->cache)
			return -ENOMEM;
		evbuffer_drain(m->cache, evbuffer_get_length(m->cache));
		m->fill(m->ctx, m->cache);
		m->fills++;
		m->cache_ms = now;
	}
	len = evbuffer_get_length(m->cache);
	return len ? evbuffer_add(out, evbuffer_pullup(m->cache, -1), len) : 0;
}

/* The request line of a whole header: METHOD TARGET HTTP/x.y. */
static void answer(struct metrics_conn *k, char *line)
{
	char *save = NULL, *method = strtok_r(line, " ", &save);
	char *target = strtok_r(NULL, " ", &save), *version = strtok_r(NULL, " ", &save);
	struct evbuffer *body;
	bool head;
	size_t n;

	if (!method || !target || !version || strncmp(version, "HTTP/1.", 7)) {
		reply(k, 400, "Bad Request", NULL, false);
		return;
	}
	head = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") && !head) {
		reply(k, 405, "Method Not Allowed: only GET", NULL, false);
		return;
	}
	if (!strncasecmp(target, "http://", 7)) /* absolute form: its path */
		target = strchr(target + 7, '/') ? strchr(target + 7, '/') : "/";
	n = strcspn(target, "?#");
	if (n != strlen("/metrics") || strncmp(target, "/metrics", n)) {
		reply(k, 404, "Not Found: metrics are at /metrics", NULL, head);
		return;
	}
	body = evbuffer_new();
	if (!body || body_of(k->m, body)) {
		if (body)
			evbuffer_free(body);
		reply(k, 500, "Internal Server Error: out of memory", NULL, head);
		return;
	}
	k->m->scrapes++;
	reply(k, 200, "OK", body, head);
	evbuffer_free(body);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct metrics_conn *k = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	char *line;

	if (k->answered)
		return;
	if (end.pos < 0)
		end = evbuffer_search(in, "\n\n", 2, NULL);
	if (end.pos < 0) {
		if (evbuffer_get_length(in) > METRICS_MAX_HEADER)
			reply(k, 431, "Request Header Fields Too Large", NULL, false);
		return;
	}
	if (end.pos > METRICS_MAX_HEADER) {
		reply(k, 431, "Request Header Fields Too Large", NULL, false);
		return;
	}
	line = evbuffer_readln(in, NULL, EVBUFFER_EOL_CRLF);
	if (!line) {
		reply(k, 500, "Internal Server Error: out of memory", NULL, false);
		return;
	}
	answer(k, line);
	free(line);
}

static void on_write(struct bufferevent *bev, void *arg)
{
	struct metrics_conn *k = arg;

	if (k->answered && !evbuffer_get_length(bufferevent_get_output(bev)))
		conn_free(k);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		conn_free(arg);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_free(arg);
}

/* Said at most once per 10 s: accept errors and evictions with their counts. */
static void say(struct metrics *m, const char *what)
{
	if (fl_mono_ms() - m->err_ms < 10000)
		return;
	pr_warn("metrics: %s (%u accept failures, %u connections closed for newer ones since the "
		"last message; %d open)\n",
		what, m->errs, m->evicted, m->nconns);
	m->err_ms = fl_mono_ms();
	m->errs = 0;
	m->evicted = 0;
}

/* What connections from one address share: IPv4 (an IPv4-mapped IPv6 address as
 * IPv4), or the /64 of an IPv6 address. */
static void addr_key(const struct sockaddr *sa, unsigned char key[METRICS_KEY])
{
	memset(key, 0, METRICS_KEY);
	if (sa->sa_family == AF_INET) {
		memcpy(key, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			memcpy(key, a->s6_addr + 12, 4);
		} else {
			memcpy(key, a->s6_addr, 8);
			key[8] = 6; /* apart from IPv4 */
		}
	}
}

static int addr_count(const struct metrics *m, const unsigned char key[METRICS_KEY])
{
	int n = 0;

	for (const struct metrics_conn *k = m->head; k; k = k->next)
		n += !memcmp(k->addr, key, METRICS_KEY);
	return n;
}

/* The oldest connection from key still reading its request, or NULL. */
static struct metrics_conn *oldest_of(const struct metrics *m, const unsigned char key[METRICS_KEY])
{
	for (struct metrics_conn *k = m->head; k; k = k->next)
		if (!k->answered && !memcmp(k->addr, key, METRICS_KEY))
			return k;
	return NULL;
}

/* Room for one from key: false when there is none to make (the new connection is
 * then closed). */
static bool make_room(struct metrics *m, const unsigned char key[METRICS_KEY])
{
	struct metrics_conn *victim = NULL;
	int most = 0;

	if (addr_count(m, key) >= METRICS_MAX_PER_ADDR) {
		victim = oldest_of(m, key);
	} else if (m->nconns >= METRICS_MAX_CONNS) {
		for (struct metrics_conn *k = m->head; k; k = k->next) {
			int n = k->answered ? 0 : addr_count(m, k->addr);

			if (n > most) {
				most = n;
				victim = k;
			}
		}
	} else {
		return true;
	}
	if (!victim)
		return false;
	conn_free(victim);
	m->evicted++;
	say(m, "too many connections: closing the oldest that sent no request");
	return true;
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	struct metrics *m = arg;
	struct metrics_conn *k;
	struct timeval tv = fl_ms_tv(METRICS_TIMEOUT_MS);

	unsigned char key[METRICS_KEY];

	(void)lis;
	(void)salen;
	addr_key(sa, key);
	if (!make_room(m, key)) {
		close(fd); /* every one that could go is being answered */
		return;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		close(fd);
		return;
	}
	k->m = m;
	k->fd = fd;
	memcpy(k->addr, key, METRICS_KEY);
	k->bev = bufferevent_socket_new(m->base, fd, 0);
	k->deadline = evtimer_new(m->base, on_deadline, k);
	if (!k->bev || !k->deadline) {
		if (k->bev)
			bufferevent_free(k->bev);
		close(fd);
		if (k->deadline)
			event_free(k->deadline);
		free(k);
		return;
	}
	bufferevent_setcb(k->bev, on_read, on_write, on_event, k);
	bufferevent_setwatermark(k->bev, EV_READ, 0, METRICS_MAX_HEADER + 1);
	bufferevent_enable(k->bev, EV_READ | EV_WRITE);
	evtimer_add(k->deadline, &tv);
	k->prev = m->tail;
	if (m->tail)
		m->tail->next = k;
	else
		m->head = k;
	m->tail = k;
	m->nconns++;
	/* A scraper's request is most often in already: answered now, it cannot be
	 * closed for a newer connection in this same burst of accepts. */
	if (evbuffer_read(bufferevent_get_input(k->bev), fd, METRICS_MAX_HEADER + 1) > 0)
		on_read(k->bev, k);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct metrics *m = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(m->lis);
}

static void on_accept_error(struct evconnlistener *lis, void *arg)
{
	struct metrics *m = arg;
	int err = EVUTIL_SOCKET_ERROR();
	struct timeval tv = fl_ms_tv(METRICS_ACCEPT_PAUSE_MS);
	char what[160];

	evconnlistener_disable(lis);
	evtimer_add(m->resume, &tv);
	m->errs++;
	snprintf(what, sizeof(what), "failed to accept a connection: %s; pausing accept for %d ms",
		 strerror(err), METRICS_ACCEPT_PAUSE_MS);
	say(m, what);
}

/* ep's host may be a name, as evhttp_bind_socket took it: its first address. */
static struct evconnlistener *bind_ep(struct metrics *m, const struct cfg_endpoint *ep, int *gai)
{
	unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct evconnlistener *lis;
	struct addrinfo *ai = NULL;
	char port[16];

	snprintf(port, sizeof(port), "%d", ep->port);
	*gai = getaddrinfo(ep->host[0] ? ep->host : NULL, port, &hints, &ai);
	if (*gai)
		return NULL;
	lis = evconnlistener_new_bind(m->base, on_accept, m, flags, 128, ai->ai_addr,
				      (int)ai->ai_addrlen);
	freeaddrinfo(ai);
	if (lis)
		evconnlistener_set_error_cb(lis, on_accept_error);
	return lis;
}

int metrics_open(struct metrics **out, struct event_base *base, const struct cfg_endpoint *ep,
		 metrics_fill_fn fill, void *ctx)
{
	struct metrics *m = calloc(1, sizeof(*m));
	const char *b = strchr(ep->host, ':') ? "[" : "", *e = *b ? "]" : "";
	int gai = 0;

	if (!m)
		return -ENOMEM;
	m->base = base;
	m->fill = fill;
	m->ctx = ctx;
	m->err_ms = -10000;
	m->resume = evtimer_new(base, on_resume, m);
	if (!m->resume) {
		free(m);
		return -ENOMEM;
	}
	m->lis = bind_ep(m, ep, &gai);
	if (!m->lis) {
		int err = gai ? -EINVAL : errno ? -errno : -EADDRINUSE;

		pr_warn("failed to listen for metrics on %s%s%s:%d: %s\n", b, ep->host, e, ep->port,
			gai ? gai_strerror(gai) : strerror(-err));
		event_free(m->resume);
		free(m);
		return err;
	}
	pr_info("metrics on http://%s%s%s:%d/metrics\n", b, ep->host, e, ep->port);
	*out = m;
	return 0;
}

void metrics_close(struct metrics *m)
{
	if (!m)
		return;
	for (struct metrics_conn *k = m->head, *next; k; k = next) {
		next = k->next;
		conn_free(k);
	}
	evconnlistener_free(m->lis);
	event_free(m->resume);
	if (m->cache)
		evbuffer_free(m->cache);
	free(m);
}

uint64_t metrics_scrapes(const struct metrics *m)
{
	return m ? m->scrapes : 0;
}

uint64_t metrics_fills(const struct metrics *m)
{
	return m ? m->fills : 0;
}
