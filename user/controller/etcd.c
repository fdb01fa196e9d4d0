// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* etcd v3 through its JSON gateway: libcurl multi driven by libevent (the socket and
 * timer callbacks of curl's "multi_socket" API), json-c for the bodies. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <openssl/evp.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/etcd.h"

#define ETCD_AUTH_MIN_MS 2000 /* an authentication's bound, whatever timeout_ms */

struct etcd_req;

struct etcd {
	struct event_base *base;
	CURLM *multi;
	struct event *timer; /* curl's timeout */
	struct etcd_opts o;
	int cur;	 /* endpoint in use */
	char token[512]; /* etcd auth token, "" = none yet */
	bool auth_in_flight;
	struct etcd_req *waiting; /* calls waiting for the token */
	struct etcd_req *live;	  /* every request curl holds (for etcd_free) */
};

/* A socket curl asked us to watch. */
struct etcd_sock {
	struct etcd *e;
	struct event *ev;
};

struct etcd_req {
	struct etcd *e;
	CURL *h;
	struct curl_slist *hdrs;
	char *body; /* the request, owned */
	char *buf;  /* the answer so far */
	size_t len, cap;
	int ep; /* endpoint index it went to */
	int timeout_ms;
	char path[64];
	char errbuf[CURL_ERROR_SIZE];
	etcd_cb cb;
	void *ctx;
	bool is_auth; /* the internal authenticate call */
	struct etcd_watch *watch;
	struct etcd_req *next, **pprev; /* in live or waiting */
};

struct etcd_watch {
	struct etcd_req *r;
	etcd_watch_fn on_events;
	etcd_watch_end_fn on_end;
	void *ctx;
};

static void check_done(struct etcd *e);

/* ---- lists ---- */

static void list_add(struct etcd_req **head, struct etcd_req *r)
{
	r->next = *head;
	if (r->next)
		r->next->pprev = &r->next;
	r->pprev = head;
	*head = r;
}

static void list_del(struct etcd_req *r)
{
	if (!r->pprev)
		return;
	*r->pprev = r->next;
	if (r->next)
		r->next->pprev = r->pprev;
	r->next = NULL;
	r->pprev = NULL;
}

/* Empties a list, returning its first element; the elements are unlinked. */
static struct etcd_req *list_take(struct etcd_req **head)
{
	struct etcd_req *first = *head;

	*head = NULL;
	for (struct etcd_req *r = first; r; r = r->next)
		r->pprev = NULL;
	return first;
}

/* ---- curl on libevent ---- */

static void on_sock_event(evutil_socket_t fd, short what, void *arg)
{
	struct etcd *e = ((struct etcd_sock *)arg)->e; /* arg may be freed below */
	int running, flags = 0;

	if (what & EV_READ)
		flags |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(e->multi, fd, flags, &running);
	check_done(e);
}

static int on_curl_socket(CURL *h, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct etcd *e = userp;
	struct etcd_sock *es = socketp;
	short kind = EV_PERSIST;

	(void)h;
	if (what == CURL_POLL_REMOVE) {
		if (es) {
			event_free(es->ev);
			free(es);
			curl_multi_assign(e->multi, s, NULL);
		}
		return 0;
	}
	if (what & CURL_POLL_IN)
		kind |= EV_READ;
	if (what & CURL_POLL_OUT)
		kind |= EV_WRITE;
	if (!es) {
		es = calloc(1, sizeof(*es));
		if (!es)
			return -1;
		es->e = e;
		curl_multi_assign(e->multi, s, es);
	} else {
		event_free(es->ev);
	}
	es->ev = event_new(e->base, s, kind, on_sock_event, es);
	if (!es->ev || event_add(es->ev, NULL) < 0)
		return -1;
	return 0;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct etcd *e = arg;
	int running;

	(void)fd;
	(void)what;
	curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(e);
}

static int on_curl_timer(CURLM *m, long timeout_ms, void *userp)
{
	struct etcd *e = userp;
	struct timeval tv;

	(void)m;
	if (timeout_ms < 0) {
		evtimer_del(e->timer);
		return 0;
	}
	tv = fl_ms_tv(timeout_ms);
	evtimer_add(e->timer, &tv);
	return 0;
}

/* ---- requests ---- */

static void req_free(struct etcd_req *r)
{
	list_del(r);
	if (r->h)
		curl_easy_cleanup(r->h);
	curl_slist_free_all(r->hdrs);
	free(r->body);
	free(r->buf);
	free(r);
}

static bool buf_append(struct etcd_req *r, const char *p, size_t n)
{
	if (r->len + n + 1 > ETCD_MAX_BODY)
		return false;
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		char *nb;

		while (cap < r->len + n + 1)
			cap *= 2;
		nb = realloc(r->buf, cap);
		if (!nb)
			return false;
		r->buf = nb;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, p, n);
	r->len += n;
	r->buf[r->len] = '\0';
	return true;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct etcd_req *r = arg;

	return buf_append(r, p, size * n) ? size * n : 0;
}

/* A watch answer is a stream of JSON messages, one per line. */
static size_t on_watch_data(char *p, size_t size, size_t n, void *arg)
{
	struct etcd_req *r = arg;
	struct etcd_watch *w = r->watch;
	char *line, *nl;

	if (!buf_append(r, p, size * n))
		return 0;
	line = r->buf;
	while ((nl = memchr(line, '\n', r->len - (size_t)(line - r->buf)))) {
		struct json_object *msg, *res;

		*nl = '\0';
		msg = json_tokener_parse(line);
		if (msg && json_object_object_get_ex(msg, "result", &res))
			w->on_events(w->ctx, res);
		json_object_put(msg);
		line = nl + 1;
	}
	r->len -= (size_t)(line - r->buf);
	memmove(r->buf, line, r->len + 1);
	return size * n;
}

static int curl_errno(CURLcode rc)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_WRITE_ERROR:
		return -EMSGSIZE;
	default:
		return -EIO;
	}
}

/* The message an error answer carries ({"error":..,"message":..,"code":..}). */
static const char *answer_error(struct json_object *j)
{
	struct json_object *m;

	if (j && (json_object_object_get_ex(j, "message", &m) ||
		  json_object_object_get_ex(j, "error", &m)))
		return json_object_get_string(m);
	return NULL;
}

static int req_launch(struct etcd_req *r);

static void auth_done(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct etcd *e = ctx;
	struct json_object *tok;
	struct etcd_req *r, *next;

	e->auth_in_flight = false;
	if (!err && json_object_object_get_ex(resp, "token", &tok))
		snprintf(e->token, sizeof(e->token), "%s", json_object_get_string(tok));
	else if (!err)
		err = -EPROTO, msg = "no token in the answer";
	for (r = list_take(&e->waiting); r; r = next) {
		next = r->next;
		r->next = NULL;
		if (err) {
			char why[256];

			snprintf(why, sizeof(why), "failed to authenticate to etcd: %s", msg);
			r->cb(r->ctx, err, why, NULL);
			req_free(r);
		} else if (req_launch(r) < 0) {
			r->cb(r->ctx, -ENOMEM, "failed to start an etcd request", NULL);
			req_free(r);
		}
	}
}

static void req_finish(struct etcd_req *r, CURLcode rc)
{
	struct etcd *e = r->e;
	long status = 0;
	struct json_object *j = NULL;
	char msg[CURL_ERROR_SIZE + 128];
	int err = 0;

	list_del(r);
	curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK) {
		err = curl_errno(rc);
		snprintf(msg, sizeof(msg), "%s: %s", e->o.endpoints[r->ep],
			 rc == CURLE_WRITE_ERROR ? "answer too large"
			 : r->errbuf[0]		 ? r->errbuf
						 : curl_easy_strerror(rc));
		/* Unreachable or silent: the next call tries the next endpoint. */
		if (e->cur == r->ep && rc != CURLE_WRITE_ERROR)
			e->cur = (e->cur + 1) % e->o.n_endpoints;
	} else if (r->watch) {
		snprintf(msg, sizeof(msg), "%s: watch stream ended (HTTP %ld)",
			 e->o.endpoints[r->ep], status);
	} else {
		j = r->buf ? json_tokener_parse(r->buf) : NULL;
		if (status != 200) {
			const char *m = answer_error(j);

			err = -EIO;
			snprintf(msg, sizeof(msg), "%s: HTTP %ld: %s", e->o.endpoints[r->ep],
				 status, m ? m : "no message");
			if (m && strstr(m, "invalid auth token"))
				e->token[0] = '\0'; /* expired: the next call authenticates again */
		} else if (!j || !json_object_is_type(j, json_type_object)) {
			err = -EPROTO;
			snprintf(msg, sizeof(msg), "%s: unreadable answer", e->o.endpoints[r->ep]);
		} else {
			msg[0] = '\0';
		}
	}
	if (r->watch)
		r->watch->on_end(r->watch->ctx, msg);
	else
		r->cb(r->ctx, err, msg, err ? NULL : j);
	json_object_put(j);
	if (r->watch)
		r->watch->r = NULL;
	req_free(r);
}

static void check_done(struct etcd *e)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(e->multi, &left))) {
		struct etcd_req *r = NULL;
		CURLcode rc;

		if (m->msg != CURLMSG_DONE)
			continue;
		rc = m->data.result;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		/* m is invalid after remove_handle: rc and r carry what is needed. */
		curl_multi_remove_handle(e->multi, m->easy_handle);
		req_finish(r, rc);
	}
}

static int req_launch(struct etcd_req *r)
{
	struct etcd *e = r->e;
	char url[512], auth[600];

	r->ep = e->cur;
	snprintf(url, sizeof(url), "%s%s", e->o.endpoints[r->ep], r->path);
	r->h = curl_easy_init();
	if (!r->h)
		return -ENOMEM;
	r->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (e->token[0] && !r->is_auth) {
		snprintf(auth, sizeof(auth), "Authorization: %s", e->token);
		r->hdrs = curl_slist_append(r->hdrs, auth);
	}
	curl_easy_setopt(r->h, CURLOPT_URL, url);
	curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
	curl_easy_setopt(r->h, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(r->h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, (long)r->timeout_ms);
	/* etcd checks a password with bcrypt: on a loaded host one authentication takes
	 * longer than the other calls' bound, and each one timed out and sent again only
	 * adds a bcrypt run (no leader at all on a busy 2-core host). */
	if (r->is_auth)
		curl_easy_setopt(
		    r->h, CURLOPT_TIMEOUT_MS,
		    (long)(r->timeout_ms > ETCD_AUTH_MIN_MS ? r->timeout_ms : ETCD_AUTH_MIN_MS));
	else if (!r->watch)
		curl_easy_setopt(r->h, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
	curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, r->watch ? on_watch_data : on_data);
	curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
	if (e->o.cacert)
		curl_easy_setopt(r->h, CURLOPT_CAINFO, e->o.cacert);
	if (e->o.cert)
		curl_easy_setopt(r->h, CURLOPT_SSLCERT, e->o.cert);
	if (e->o.key)
		curl_easy_setopt(r->h, CURLOPT_SSLKEY, e->o.key);
	if (curl_multi_add_handle(e->multi, r->h) != CURLM_OK)
		return -ENOMEM;
	list_add(&e->live, r);
	return 0;
}

static struct etcd_req *req_new(struct etcd *e, const char *path, struct json_object *body,
				int timeout_ms)
{
	struct etcd_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->e = e;
	r->timeout_ms = timeout_ms > 0 ? timeout_ms : e->o.timeout_ms;
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->body = strdup(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
	if (!r->body) {
		free(r);
		return NULL;
	}
	return r;
}

/* Starts r now, or after the auth token arrives. */
static int req_submit(struct etcd_req *r)
{
	struct etcd *e = r->e;

	if (e->o.user && e->o.user[0] && !e->token[0] && !r->is_auth) {
		list_add(&e->waiting, r);
		if (!e->auth_in_flight) {
			struct json_object *b = json_object_new_object();
			struct etcd_req *a;

			json_object_object_add(b, "name", json_object_new_string(e->o.user));
			json_object_object_add(
			    b, "password",
			    json_object_new_string(e->o.password ? e->o.password : ""));
			a = req_new(e, "/v3/auth/authenticate", b, 0);
			json_object_put(b);
			if (!a)
				return -ENOMEM;
			a->is_auth = true;
			a->cb = auth_done;
			a->ctx = e;
			e->auth_in_flight = true;
			if (req_launch(a) < 0) {
				e->auth_in_flight = false;
				list_del(r);
				req_free(a);
				return -ENOMEM;
			}
		}
		return 0;
	}
	return req_launch(r);
}

int etcd_call(struct etcd *e, const char *path, struct json_object *body, int timeout_ms,
	      etcd_cb cb, void *ctx)
{
	struct etcd_req *r = req_new(e, path, body, timeout_ms);
	int err;

	json_object_put(body);
	if (!r)
		return -ENOMEM;
	r->cb = cb;
	r->ctx = ctx;
	err = req_submit(r);
	if (err)
		req_free(r);
	return err;
}

struct etcd_watch *etcd_watch_start(struct etcd *e, const char *key, size_t key_len,
				    const char *range_end, size_t range_end_len, int64_t start_rev,
				    etcd_watch_fn on_events, etcd_watch_end_fn on_end, void *ctx)
{
	struct json_object *body = json_object_new_object(), *cr = json_object_new_object();
	struct etcd_watch *w = calloc(1, sizeof(*w));
	struct etcd_req *r;

	etcd_json_add_bytes(cr, "key", key, key_len);
	if (range_end)
		etcd_json_add_bytes(cr, "range_end", range_end, range_end_len);
	if (start_rev > 0)
		json_object_object_add(cr, "start_revision", json_object_new_int64(start_rev));
	json_object_object_add(body, "create_request", cr);
	r = w ? req_new(e, "/v3/watch", body, 0) : NULL;
	json_object_put(body);
	if (!r) {
		free(w);
		return NULL;
	}
	w->r = r;
	w->on_events = on_events;
	w->on_end = on_end;
	w->ctx = ctx;
	r->watch = w;
	if (req_submit(r) < 0) {
		req_free(r);
		free(w);
		return NULL;
	}
	return w;
}

void etcd_watch_free(struct etcd_watch *w)
{
	if (!w)
		return;
	if (w->r) {
		if (w->r->h)
			curl_multi_remove_handle(w->r->e->multi, w->r->h);
		req_free(w->r);
	}
	free(w);
}

struct etcd *etcd_new(struct event_base *base, const struct etcd_opts *o)
{
	static bool curl_ready;
	struct etcd *e;

	if (o->n_endpoints < 1 || o->n_endpoints > ETCD_MAX_ENDPOINTS)
		return NULL;
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return NULL;
		curl_ready = true;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->base = base;
	e->o = *o;
	if (e->o.timeout_ms <= 0)
		e->o.timeout_ms = 1000;
	e->multi = curl_multi_init();
	e->timer = evtimer_new(base, on_timer, e);
	if (!e->multi || !e->timer) {
		etcd_free(e);
		return NULL;
	}
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
	return e;
}

void etcd_free(struct etcd *e)
{
	struct etcd_req *r, *next;

	if (!e)
		return;
	for (r = list_take(&e->live); r; r = next) {
		next = r->next;
		if (r->watch)
			r->watch->r = NULL;
		curl_multi_remove_handle(e->multi, r->h);
		req_free(r);
	}
	for (r = list_take(&e->waiting); r; r = next) {
		next = r->next;
		if (r->watch)
			r->watch->r = NULL;
		req_free(r);
	}
	if (e->multi)
		curl_multi_cleanup(e->multi);
	if (e->timer)
		event_free(e->timer);
	free(e);
}

const char *etcd_endpoint(const struct etcd *e)
{
	return e->o.endpoints[e->cur];
}

/* ---- JSON helpers ---- */

void etcd_json_add_bytes(struct json_object *o, const char *field, const void *b, size_t len)
{
	size_t cap = 4 * ((len + 2) / 3) + 1;
	char *out = malloc(cap);

	if (!out)
		return;
	EVP_EncodeBlock((unsigned char *)out, b, (int)len);
	json_object_object_add(o, field, json_object_new_string(out));
	free(out);
}

int etcd_json_get_bytes(struct json_object *o, const char *field, char *buf, size_t size)
{
	struct json_object *v;
	const char *s;
	size_t slen, pad = 0;
	unsigned char *tmp;
	int n;

	if (!json_object_object_get_ex(o, field, &v) || !json_object_is_type(v, json_type_string))
		return -1;
	s = json_object_get_string(v);
	slen = strlen(s);
	if (slen % 4)
		return -1;
	if (slen && s[slen - 1] == '=')
		pad++;
	if (slen > 1 && s[slen - 2] == '=')
		pad++;
	tmp = malloc(slen / 4 * 3 + 1);
	if (!tmp)
		return -1;
	n = EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)slen);
	if (n < 0 || (size_t)n - pad + 1 > size) {
		free(tmp);
		return -1;
	}
	n -= (int)pad;
	memcpy(buf, tmp, (size_t)n);
	buf[n] = '\0';
	free(tmp);
	return n;
}

int64_t etcd_json_get_i64(struct json_object *o, const char *field, int64_t def)
{
	struct json_object *v;
	const char *s;
	char *end;
	long long x;

	if (!o || !json_object_object_get_ex(o, field, &v))
		return def;
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_string))
		return def;
	s = json_object_get_string(v);
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return def;
	return x;
}

size_t etcd_prefix_end(const char *prefix, size_t len, char *out, size_t size)
{
	if (len > size)
		len = size;
	memcpy(out, prefix, len);
	while (len > 0) {
		if ((unsigned char)out[len - 1] < 0xff) {
			out[len - 1]++;
			return len;
		}
		len--; /* 0xff: carry into the byte before */
	}
	out[0] = '\0'; /* every key: etcd's "\0" range end */
	return 1;
}
