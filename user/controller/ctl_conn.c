// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A connection to the controller's socket, for every handler (ctl_conn.h): its
 * end, a fatal error, reading on and off and on again after a deferred answer,
 * the reply types that differ between RESP2 and RESP3, and the output buffer
 * limits per client class (Redis's client-output-buffer-limit). What a
 * connection is besides a client (an agent, a subscriber ...) is released by the
 * module that made it so, through the releases registered once per role. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"

/* The module's state: one per controller. */
struct ctl_conn_mod {
	void (*release[CTL_NROLES])(struct ctl_conn *k);
	void (*read)(struct ctl_conn *k); /* the dispatcher's (ctl_listen.c) */
	struct timeval plain;		  /* ctl_common_timeout() out of common ones */
	/* An agent's read timeout as a libevent common timeout, per length. */
	int silent_ms;
	const struct timeval *silent_tv;
	size_t anon_out; /* output held for anonymous clients, in all */
	int n;		 /* the connections in c->conns */
	/* Answers held for the connection being read (ctl_conn_answer), sent with one
	 * send() at the end of its read callback: direct_len bytes of direct_buf. */
	struct ctl_conn *direct;
	size_t direct_len;
	char direct_buf[CTL_DIRECT_MAX];
};

int ctl_conn_init(struct ctl *c)
{
	c->conn = calloc(1, sizeof(*c->conn));
	return c->conn ? 0 : -ENOMEM;
}

void ctl_conn_fini(struct ctl *c)
{
	free(c->conn);
	c->conn = NULL;
}

void ctl_conn_set_reader(struct ctl *c, void (*read)(struct ctl_conn *k))
{
	c->conn->read = read;
}

void ctl_conn_role_register(struct ctl *c, enum ctl_role role, void (*release)(struct ctl_conn *k))
{
	c->conn->release[role] = release;
}

void ctl_conn_role(struct ctl_conn *k, enum ctl_role role, bool on)
{
	if (on)
		k->roles |= 1u << role;
	else
		k->roles &= ~(1u << role);
}

void ctl_conn_add(struct ctl_conn *k)
{
	struct ctl *c = k->ctl;

	k->prev = NULL;
	k->next = c->conns;
	if (c->conns)
		c->conns->prev = k;
	c->conns = k;
	c->conn->n++;
}

int ctl_conn_count(const struct ctl *c)
{
	return c->conn ? c->conn->n : 0;
}

void ctl_conn_free(struct ctl_conn *k)
{
	struct ctl *c = k->ctl;

	/* A release may publish (an agent's end judges its node): publishing skips a
	 * closing connection, so an agent that also subscribed and is over its
	 * limit is not freed again from inside its own release. */
	k->flags |= CTL_C_CLOSING;
	if (c->conn->direct == k)
		c->conn->direct = NULL;
	for (int r = 0; r < CTL_NROLES; r++)
		if ((k->roles & (1u << r)) && c->conn->release[r])
			c->conn->release[r](k);
	if (k->prev)
		k->prev->next = k->next;
	else
		c->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	if (k->resume)
		event_free(k->resume);
	if (k->deadline)
		event_free(k->deadline);
	if (k->login_deadline)
		event_free(k->login_deadline);
	if (k->rev)
		event_free(k->rev);
	c->conn->n--;
	if (k->out_cb) {
		evbuffer_remove_cb_entry(bufferevent_get_output(k->bev), k->out_cb);
		c->conn->anon_out -= k->out_counted;
	}
	bufferevent_free(k->bev);
	resp_reader_free(k->rd);
	free(k);
}

/* Answers err and closes once it is sent (or after CTL_CLOSE_FLUSH_MS if the
 * client does not read it). */
void ctl_conn_fatal(struct ctl_conn *k, const char *err)
{
	struct timeval tv = fl_ms_tv(CTL_CLOSE_FLUSH_MS);

	k->ctl->m.rejected++;
	ctl_conn_direct_flush(k);
	resp_error_reply(bufferevent_get_output(k->bev), err);
	k->flags |= CTL_C_CLOSING;
	ctl_conn_reading(k, false);
	bufferevent_set_timeouts(k->bev, NULL, &tv);
}

/* Reads on or off: with the connection's own read event once it has one, else
 * with its bufferevent. */
void ctl_conn_reading(struct ctl_conn *k, bool on)
{
	if (k->rev) {
		if (on)
			event_add(k->rev, ctl_agent_silent_tv(k->ctl));
		else
			event_del(k->rev);
	} else if (on) {
		bufferevent_enable(k->bev, EV_READ);
	} else {
		bufferevent_disable(k->bev, EV_READ);
	}
}

void ctl_conn_on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_conn *k = arg;

	(void)fd;
	(void)what;
	if (k->flags & CTL_C_PENALTY) {
		k->flags &= ~(CTL_C_PENALTY | CTL_C_WAITING);
		ctl_conn_reading(k, true);
		bufferevent_enable(k->bev, EV_WRITE);
	}
	if (k->flags & CTL_C_YIELD) { /* its next turn (ctl_listen.c's conn_yield) */
		k->flags &= ~CTL_C_YIELD;
		if (!(k->flags & (CTL_C_CLOSING | CTL_C_WAITING)))
			ctl_conn_reading(k, true);
	}
	if (k->ctl->conn->read)
		k->ctl->conn->read(k);
}

/* A deferred answer has been written: reads on, and the commands that came behind
 * it run from the loop, not from inside the caller. */
void ctl_conn_resume(struct ctl_conn *k)
{
	k->flags &= ~CTL_C_WAITING;
	ctl_conn_reading(k, true);
	if (resp_pending(k->rd)) {
		if (!k->resume)
			k->resume = evtimer_new(k->ctl->base, ctl_conn_on_resume, k);
		if (k->resume)
			event_active(k->resume, EV_TIMEOUT, 0);
	}
}

void ctl_reply_map(const struct ctl_conn *k, struct evbuffer *o, long npairs)
{
	if (k->flags & CTL_C_RESP3)
		evbuffer_add_printf(o, "%%%ld\r\n", npairs);
	else
		resp_array(o, 2 * npairs);
}

void ctl_reply_null(const struct ctl_conn *k, struct evbuffer *o, bool array)
{
	if (k->flags & CTL_C_RESP3)
		evbuffer_add(o, "_\r\n", 3);
	else if (array)
		resp_null_array(o);
	else
		resp_nil(o);
}

void ctl_reply_push(const struct ctl_conn *k, struct evbuffer *o, long n)
{
	if (k->flags & CTL_C_RESP3)
		evbuffer_add_printf(o, ">%ld\r\n", n);
	else
		resp_array(o, n);
}

/* ---- answers held for one send ---- */

/* An answer goes through the output evbuffer: every evbuffer_add runs the buffer's
 * callbacks (the bufferevent's and the output count's, deferred to the loop), and
 * the send makes it contiguous and drains it again. A connection read with its
 * writes direct (ctl_listen.c) holds short answers here instead, while nothing is
 * in its evbuffer: its answers stay in order, as anything written to the evbuffer
 * moves what is held there first (ctl_conn_direct_flush). */
void ctl_conn_direct_open(struct ctl_conn *k)
{
	k->ctl->conn->direct = k;
	k->ctl->conn->direct_len = 0;
}

const char *ctl_conn_direct_held(const struct ctl_conn *k, size_t *len)
{
	const struct ctl_conn_mod *m = k->ctl->conn;

	*len = m->direct == k ? m->direct_len : 0;
	return m->direct_buf;
}

void ctl_conn_direct_close(struct ctl_conn *k, size_t sent)
{
	struct ctl_conn_mod *m = k->ctl->conn;

	struct evbuffer *out;

	if (m->direct != k)
		return;
	out = bufferevent_get_output(k->bev);
	if (sent < m->direct_len && !evbuffer_get_length(out)) {
		evbuffer_add(out, m->direct_buf + sent, m->direct_len - sent);
	} else if (sent < m->direct_len) {
		/* Written to the evbuffer without a flush first: what is held came
		 * before it. A socket bufferevent keeps its output's start frozen. */
		evbuffer_unfreeze(out, 1);
		evbuffer_prepend(out, m->direct_buf + sent, m->direct_len - sent);
		evbuffer_freeze(out, 1);
	}
	m->direct = NULL;
	m->direct_len = 0;
}

void ctl_conn_direct_flush(struct ctl_conn *k)
{
	struct ctl_conn_mod *m = k->ctl->conn;

	if (m->direct != k || !m->direct_len)
		return;
	evbuffer_add(bufferevent_get_output(k->bev), m->direct_buf, m->direct_len);
	m->direct_len = 0;
}

void ctl_conn_answer(struct ctl_conn *k, const char *buf, size_t len)
{
	struct ctl_conn_mod *m = k->ctl->conn;
	struct evbuffer *out = bufferevent_get_output(k->bev);

	if (m->direct == k && m->direct_len + len <= sizeof(m->direct_buf) &&
	    !evbuffer_get_length(out)) {
		memcpy(m->direct_buf + m->direct_len, buf, len);
		m->direct_len += len;
		return;
	}
	ctl_conn_direct_flush(k);
	evbuffer_add(out, buf, len);
}

/* ---- output buffer limits ---- */

/* client-output-buffer-limit: closed past hard, or past soft for soft_s. */
struct ctl_out_limit {
	const char *class;
	size_t hard, soft;
	int soft_s;
};
static const struct ctl_out_limit ctl_out_normal = {"normal", 16u << 20, 4u << 20, 10};
static const struct ctl_out_limit ctl_out_pubsub = {"pubsub", CTL_PUBSUB_MAX_OUT, 2u << 20, 60};
/* Client authentication on, not logged in (nor an agent): its answers are NOAUTH
 * errors and handshake replies; one that does not read them is closed early. */
static const struct ctl_out_limit ctl_out_prelogin = {"unauthenticated", 64u << 10, 64u << 10, 0};

static bool anonymous(const struct ctl_conn *k)
{
	return !(k->flags & (CTL_C_AGENT | CTL_C_AUTH | CTL_C_LOGIN));
}

/* Every change of an anonymous client's output, in the total; once it is not
 * one any more, its part leaves the total and the callback is off. */
static void on_output(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct ctl_conn *k = arg;
	struct ctl_conn_mod *m = k->ctl->conn;
	size_t len = info->orig_size + info->n_added - info->n_deleted;

	m->anon_out -= k->out_counted;
	k->out_counted = 0;
	if (anonymous(k)) {
		k->out_counted = len;
		m->anon_out += len;
	} else {
		/* Off for good (set_flags would add to the flags, not replace them). */
		evbuffer_cb_clear_flags(buf, k->out_cb, EVBUFFER_CB_ENABLED);
	}
}

void ctl_conn_count_output(struct ctl_conn *k)
{
	k->out_cb = evbuffer_add_cb(bufferevent_get_output(k->bev), on_output, k);
}

/* Past its output buffer limit (its class's hard limit, or the soft one for
 * soft_s), or an anonymous client over its share of a full total: true, and the
 * caller frees it at once (a client that does not read would never take an
 * error reply). */
bool ctl_conn_over_limit(struct ctl_conn *k)
{
	const struct ctl_out_limit *lim =
	    (k->flags & CTL_C_PUBSUB) ? &ctl_out_pubsub : &ctl_out_normal;
	size_t len = evbuffer_get_length(bufferevent_get_output(k->bev));
	long long now;

	if (len > ctl_out_prelogin.hard && !(k->flags & (CTL_C_LOGIN | CTL_C_AGENT)) &&
	    ctl_client_auth_on(k->ctl))
		lim = &ctl_out_prelogin;
	unsigned supp = 0;

	if (len > CTL_ANON_OUT_SHARE && k->ctl->conn->anon_out > CTL_ANON_OUT_MAX && anonymous(k)) {
		if (ctl_log_allowed(k->ctl, k->peer, &supp))
			pr_warn("closing client %s: %zu bytes unread, and anonymous clients hold "
				"%zu bytes in all (at most %u)%s\n",
				k->peer, len, k->ctl->conn->anon_out, CTL_ANON_OUT_MAX,
				supp ? " (and others from there, not logged)" : "");
		return true;
	}
	if (len <= lim->soft) {
		k->soft_since_ms = 0;
		return false;
	}
	now = fl_mono_ms(); /* not read per REPORT */
	if (len <= lim->hard) {
		if (!k->soft_since_ms)
			k->soft_since_ms = now;
		if (now - k->soft_since_ms <= lim->soft_s * 1000LL)
			return false;
	}
	if (ctl_log_allowed(k->ctl, k->peer, &supp))
		pr_warn("closing client %s: output buffer limit of class %s reached (%zu bytes "
			"unread; hard %zu, soft %zu for %d s)%s\n",
			k->peer, lim->class, len, lim->hard, lim->soft, lim->soft_s,
			supp ? " (and others from there, not logged)" : "");
	return true;
}

/* ---- read timeouts ---- */

/* A timeout of ms as a libevent common timeout (the last length asked for kept in
 * *ms_at, *tv_at; libevent keeps one queue per length, up to 256 lengths): thousands
 * of agents re-arm the same length at every report, and a common timeout is a queue
 * append where a plain one is a heap operation. Shards with their own
 * down-after-milliseconds each have their length's queue. */
const struct timeval *ctl_common_timeout(struct ctl *c, int *ms_at, const struct timeval **tv_at,
					 int ms)
{
	struct timeval tv = fl_ms_tv(ms);
	const struct timeval *ct;

	if (*ms_at != ms || !*tv_at) {
		ct = event_base_init_common_timeout(c->base, &tv);
		if (!ct) { /* 256 lengths in use: a plain timeout */
			c->conn->plain = tv;
			return &c->conn->plain;
		}
		*ms_at = ms;
		*tv_at = ct;
	}
	return *tv_at;
}

/* How long an agent may be silent before its connection is closed: 10 heartbeats
 * (protocol.md, Limits), as a common timeout. */
const struct timeval *ctl_agent_silent_tv(struct ctl *c)
{
	return ctl_common_timeout(c, &c->conn->silent_ms, &c->conn->silent_tv,
				  10 * ctl_agent_heartbeat_ms(c));
}
