// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>
#include <openssl/crypto.h>
#include "common/auth.h"
#include "common/clock.h"
#include "common/log.h"
#include "agent/reporter.h"
#include "common/redis_link.h"

enum rep_state {
	REP_DOWN,  /* not connected */
	REP_HELLO, /* HELLO sent, no challenge yet */
	REP_PROVE, /* the controller proved itself, our PROVE sent, no answer yet */
	REP_READY, /* accepted: reports flow */
};

struct reporter {
	struct reporter_opts o;
	char node[CFG_ID_MAX + 1], where[300];
	uint8_t key[AUTH_KEY_LEN];     /* this node's key */
	uint8_t nonce[AUTH_NONCE_LEN]; /* ours, fresh per connection */
	struct reporter_ops ops;
	void *ctx;
	struct redis_link *link;
	struct event *hb_ev;
	enum rep_state state;
	unsigned long long seq;
	long long last_sent_ms, last_answer_ms;
	/* The heartbeat_ms the last REPORT said (0: none): the controller judges the agent
	 * lost past three of it, so the next REPORT goes within it even when the interval
	 * has grown since (a replica gone quiet says the longer one in that REPORT). */
	int announced_ms;
	/* CLOCK_MONOTONIC ns each REPORT left at, by seq % REP_SENT_RING (at most 64
	 * requests are in flight): an answer renews the lease from its question's time. */
	uint64_t sent_ns[REP_SENT_RING];
	char last_problem[640]; /* the last problem printed: once per change */
	bool lost_logged;	/* controller_lost written since the last connect */
};

static void rep_vadd(struct rep_msg *m, const char *key, const char *fmt, va_list ap)
{
	size_t room = sizeof(m->buf) - m->used, klen = strlen(key) + 1;
	char *k = m->buf + m->used, *v;
	int n;

	if (m->overflow || m->argc + 2 > REP_MAX_ARGS || klen >= room) {
		m->overflow = true;
		return;
	}
	memcpy(k, key, klen);
	v = k + klen;
	n = vsnprintf(v, room - klen, fmt, ap);
	if (n < 0 || (size_t)n >= room - klen) {
		m->overflow = true;
		return;
	}
	m->used += klen + n + 1;
	m->argv[m->argc++] = k;
	m->argv[m->argc++] = v;
}

void rep_add(struct rep_msg *m, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rep_vadd(m, key, fmt, ap);
	va_end(ap);
}

void rep_add_key(struct rep_msg *m, enum report_key k, const char *peer, const char *fmt, ...)
{
	char key[160];
	va_list ap;

	va_start(ap, fmt);
	rep_vadd(m, report_key_str(k, peer, key, sizeof(key)), fmt, ap);
	va_end(ap);
}

/* Log a problem or a recovery once per change. */
static void note(struct reporter *r, const char *kind, const char *detail)
{
	if (!strcmp(r->last_problem, detail))
		return;
	snprintf(r->last_problem, sizeof(r->last_problem), "%s", detail);
	if (r->ops.event)
		r->ops.event(r->ctx, kind, detail);
}

static void on_report_reply(void *ctx, redisReply *rep, void *priv)
{
	struct reporter *r = ctx;
	const uint64_t *sent_ns = priv; /* this REPORT's slot of r->sent_ns */
	int shadow = -1;

	if (!rep)
		return;
	if (rep->type == REDIS_REPLY_ERROR) {
		char esc[LOG_ESC_MAX];

		pr_warn("controller %s refused a report: %s\n", r->where,
			log_esc(rep->str, esc, sizeof(esc)));
		redis_link_drop(r->link, "report refused");
		return;
	}
	/* protocol.md: OK, the epoch, the primary. Anything else is not a
	 * controller speaking this protocol: close the link. */
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 3 ||
	    rep->element[1]->type != REDIS_REPLY_INTEGER ||
	    (rep->element[2]->type != REDIS_REPLY_STRING &&
	     rep->element[2]->type != REDIS_REPLY_STATUS)) {
		redis_link_drop(r->link, "protocol error: unexpected answer to REPORT");
		return;
	}
	/* A follower controller (HA mode: a 4th element "follower") answers, but only the
	 * leader's word counts for fencing. */
	if (rep->elements >= 4 && rep->element[3]->type == REDIS_REPLY_STRING &&
	    !strcmp(rep->element[3]->str, "follower"))
		return;
	r->last_answer_ms = fl_wall_ms();
	/* The 5th: the controller's mode, "shadow" or "active" (absent: an older one). */
	if (rep->elements >= 5 && rep->element[4]->type == REDIS_REPLY_STRING)
		shadow = !strcmp(rep->element[4]->str, "shadow")   ? 1
			 : !strcmp(rep->element[4]->str, "active") ? 0
								   : -1;
	/* The 6th to 8th: the lease admission grant (absent: an older controller). Before
	 * the answer's lease renewal: a peer it withdraws renews nothing from then on. */
	if (r->ops.admit && rep->elements >= 8 && rep->element[5]->type == REDIS_REPLY_INTEGER &&
	    rep->element[6]->type == REDIS_REPLY_INTEGER &&
	    rep->element[7]->type == REDIS_REPLY_STRING)
		r->ops.admit(r->ctx, rep->element[5]->integer, rep->element[6]->integer,
			     rep->element[7]->str);
	else if (r->ops.admit)
		r->ops.admit(r->ctx, 0, 0, NULL); /* none: an older controller */
	if (r->ops.answer)
		r->ops.answer(r->ctx, rep->element[1]->integer, rep->element[2]->str, *sent_ns,
			      shadow);
}

/* The heartbeat_ms key of a REPORT built (0: none, or not a number). */
static int announced_of(const struct rep_msg *m)
{
	const char *key = report_keys[RK_HEARTBEAT].name;

	for (int i = 2; i + 1 < m->argc; i += 2) {
		char *end;
		long v;

		if (strcmp(m->argv[i], key))
			continue;
		errno = 0;
		v = strtol(m->argv[i + 1], &end, 10);
		return errno || *end || v <= 0 || v > 86400000 ? 0 : (int)v;
	}
	return 0;
}

static void send_report(struct reporter *r)
{
	struct rep_msg *m = calloc(1, sizeof(*m));
	char seq[24];
	int err, announced;

	if (!m)
		return;
	snprintf(seq, sizeof(seq), "%llu", ++r->seq);
	m->argv[m->argc++] = "REPORT";
	m->argv[m->argc++] = seq;
	r->ops.build(r->ctx, m);
	if (m->overflow)
		pr_warn("report too large: some keys left out\n");
	r->sent_ns[r->seq % REP_SENT_RING] = fl_clock_ns(CLOCK_MONOTONIC);
	err = redis_link_command(r->link, on_report_reply, &r->sent_ns[r->seq % REP_SENT_RING],
				 m->argc, m->argv, NULL);
	announced = announced_of(m);
	free(m);
	if (err) {
		pr_debug("failed to send report: %s\n", strerror(-err));
		if (err == -ENOBUFS)
			redis_link_drop(r->link, "controller not reading reports");
		return;
	}
	r->last_sent_ms = fl_wall_ms();
	r->announced_ms = announced;
}

/* A -ERR/-AUTH/-VERSION/-NODE answer to HELLO or PROVE. */
static void rejected(struct reporter *r, const char *what, const char *text)
{
	char detail[640], esc[LOG_ESC_MAX];

	snprintf(detail, sizeof(detail), "controller %s rejected %s: %s", r->where, what,
		 log_esc(text, esc, sizeof(esc)));
	if (strcmp(r->last_problem, detail))
		pr_warn("%s\n", detail);
	note(r, "controller_rejected", detail);
	redis_link_drop(r->link, "rejected");
}

static void on_accepted(void *ctx, redisReply *rep, void *priv)
{
	struct reporter *r = ctx;
	char detail[640];

	(void)priv;
	if (!rep)
		return;
	if (rep->type == REDIS_REPLY_ERROR) {
		rejected(r, "our proof", rep->str);
		return;
	}
	if (rep->type != REDIS_REPLY_STATUS || strncmp(rep->str, "OK", 2)) {
		redis_link_drop(r->link, "protocol error: unexpected answer to PROVE");
		return;
	}
	r->state = REP_READY;
	r->last_answer_ms = fl_wall_ms();
	r->lost_logged = false;
	snprintf(detail, sizeof(detail), "connected to controller %s", r->where);
	note(r, "controller_connected", detail);
	/* Only the latest state, never a backlog. */
	send_report(r);
}

static bool is_str(const redisReply *e)
{
	return e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS;
}

/* The controller's CHALLENGE: its nonce and its proof that it holds our key.
 * Only then do we prove ourselves; a controller that cannot is never believed
 * (no report, no epoch, no fencing answer). */
static void on_challenge(void *ctx, redisReply *rep, void *priv)
{
	struct reporter *r = ctx;
	uint8_t nc[AUTH_NONCE_LEN], proof[AUTH_MAC_LEN];
	char hex[AUTH_HEX_LEN + 1], detail[640];
	const char *argv[2] = {"PROVE", hex};

	(void)priv;
	if (!rep)
		return;
	if (rep->type == REDIS_REPLY_ERROR) {
		rejected(r, "HELLO", rep->str);
		return;
	}
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 || !is_str(rep->element[0]) ||
	    strcmp(rep->element[0]->str, "CHALLENGE") || !is_str(rep->element[1]) ||
	    !is_str(rep->element[2]) ||
	    auth_unhex(rep->element[1]->str, rep->element[1]->len, nc, sizeof(nc))) {
		redis_link_drop(r->link, "protocol error: unexpected answer to HELLO");
		return;
	}
	if (!auth_check(r->key, AUTH_CONTROLLER, r->node, r->nonce, nc, rep->element[2]->str,
			rep->element[2]->len)) {
		snprintf(detail, sizeof(detail),
			 "controller %s failed to prove it holds node %s's key: not trusting it",
			 r->where, r->node);
		if (strcmp(r->last_problem, detail))
			pr_warn("%s\n", detail);
		note(r, "controller_unproven", detail);
		redis_link_drop(r->link, "rejected");
		return;
	}
	if (auth_proof(r->key, AUTH_AGENT, r->node, r->nonce, nc, proof)) {
		redis_link_drop(r->link, "failed to compute our proof");
		return;
	}
	auth_hex(proof, sizeof(proof), hex);
	if (!redis_link_command(r->link, on_accepted, NULL, 2, argv, NULL))
		r->state = REP_PROVE;
}

static void on_up(void *ctx)
{
	struct reporter *r = ctx;
	char nonce[AUTH_HEX_LEN + 1];
	const char *argv[] = {"HELLO", "flatline", REP_PROTO_VERSION, r->node, nonce};

	r->seq = 0;
	r->announced_ms = 0;
	if (auth_nonce(r->nonce)) {
		redis_link_drop(r->link, "failed to draw a nonce");
		return;
	}
	auth_hex(r->nonce, sizeof(r->nonce), nonce);
	if (!redis_link_command(r->link, on_challenge, NULL, 5, argv, NULL))
		r->state = REP_HELLO;
}

static void on_down(void *ctx, const char *why, int err)
{
	struct reporter *r = ctx;
	char detail[640];

	(void)err;
	r->state = REP_DOWN;
	if (!strcmp(why, "rejected"))
		return; /* already logged as controller_rejected */
	snprintf(detail, sizeof(detail), "controller %s: %s", r->where, why);
	if (strcmp(r->last_problem, detail))
		pr_warn("%s\n", detail);
	/* One controller_lost per loss, whatever the reasons of the retries. */
	if (!r->lost_logged) {
		r->lost_logged = true;
		snprintf(r->last_problem, sizeof(r->last_problem), "%s", detail);
		if (r->ops.event)
			r->ops.event(r->ctx, "controller_lost", detail);
	} else {
		snprintf(r->last_problem, sizeof(r->last_problem), "%s", detail);
	}
}

#define REP_UNANSWERED_MIN_MS 1500

static long unanswered_limit_ms(const struct reporter *r)
{
	long ms = 2L * r->o.heartbeat_ms;

	return ms < REP_UNANSWERED_MIN_MS ? REP_UNANSWERED_MIN_MS : ms;
}

static int interval_ms(const struct reporter *r)
{
	int ms = r->ops.interval_ms ? r->ops.interval_ms(r->ctx) : 0;

	return ms > 0 ? ms : r->o.heartbeat_ms;
}

/* The heartbeat timer ticks four times per heartbeat: a REPORT goes out within a
 * quarter of one after its interval, whatever a kick (a change sent at once) did to
 * the phase — with one tick per heartbeat, a kick just after a tick put the next
 * REPORT two heartbeats after the last. */
static struct timeval tick_tv(int heartbeat_ms)
{
	return fl_ms_tv(heartbeat_ms / 4 < 5 ? 5 : heartbeat_ms / 4);
}

static int in_flight_max(const struct reporter *r)
{
	int n = r->ops.in_flight_max ? r->ops.in_flight_max(r->ctx) : 1;

	return n < 1 ? 1 : n;
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
	struct reporter *r = arg;
	int wait;

	(void)fd;
	(void)what;
	if (r->state == REP_DOWN)
		return;
	/* A controller that leaves a request unanswered for two heartbeats (and at
	 * least REP_UNANSWERED_MIN_MS: on a lossy link TCP's retransmissions alone
	 * take 200 ms and more) is gone. */
	if (redis_link_oldest_ms(r->link) > unanswered_limit_ms(r)) {
		redis_link_drop(r->link, "controller stopped answering");
		return;
	}
	wait = interval_ms(r);
	if (r->announced_ms > 0 && r->announced_ms < wait)
		wait = r->announced_ms; /* grown since the last REPORT said it: not yet */
	if (r->state != REP_READY || fl_wall_ms() - r->last_sent_ms < wait - 1)
		return;
	/* REPORTs still unanswered: the controller is behind (or the link is slow).
	 * Another heartbeat would only queue behind them; the answer, when it comes,
	 * renews from its REPORT's time, and a change still goes at once. */
	if (redis_link_in_flight(r->link) >= in_flight_max(r))
		return;
	send_report(r);
}

struct reporter *reporter_new(struct event_base *base, const struct reporter_opts *o,
			      const struct reporter_ops *ops, void *ctx)
{
	static const struct redis_link_ops lops = {.on_up = on_up, .on_down = on_down};
	struct reporter *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->o = *o;
	snprintf(r->node, sizeof(r->node), "%s", o->node);
	if (o->key_hex && o->key_hex[0]) {
		if (auth_unhex(o->key_hex, strlen(o->key_hex), r->key, sizeof(r->key))) {
			free(r);
			return NULL;
		}
	} else if (!o->secret || !o->secret[0] ||
		   auth_node_key(o->secret, strlen(o->secret), r->node, r->key)) {
		free(r);
		return NULL;
	}
	if (o->ep.unix_path[0])
		snprintf(r->where, sizeof(r->where), "unix:%s", o->ep.unix_path);
	else
		cfg_hostport(r->where, sizeof(r->where), o->ep.host, o->ep.port);
	r->ops = *ops;
	r->ctx = ctx;
	r->link = redis_link_new(base, &o->ep, "controller", 1000, &lops, r);
	r->hb_ev = event_new(base, -1, EV_PERSIST, on_heartbeat, r);
	if (!r->link || !r->hb_ev || (o->tls && redis_link_set_tls(r->link, o->tls, NULL))) {
		reporter_free(r);
		return NULL;
	}
	return r;
}

void reporter_start(struct reporter *r)
{
	struct timeval tv = tick_tv(r->o.heartbeat_ms);

	event_add(r->hb_ev, &tv);
	redis_link_start(r->link);
}

void reporter_kick(struct reporter *r)
{
	if (r->state == REP_READY)
		send_report(r);
}

void reporter_set_heartbeat(struct reporter *r, int ms)
{
	struct timeval tv = tick_tv(ms);

	if (r->o.heartbeat_ms == ms)
		return;
	r->o.heartbeat_ms = ms;
	if (event_pending(r->hb_ev, EV_TIMEOUT, NULL))
		event_add(r->hb_ev, &tv);
}

int reporter_set_key(struct reporter *r, const char *secret, const char *key_hex)
{
	uint8_t key[AUTH_KEY_LEN];

	if (key_hex && key_hex[0]
		? auth_unhex(key_hex, strlen(key_hex), key, sizeof(key))
		: !secret || !secret[0] || auth_node_key(secret, strlen(secret), r->node, key))
		return -EINVAL;
	memcpy(r->key, key, sizeof(key));
	OPENSSL_cleanse(key, sizeof(key));
	return 0;
}

bool reporter_ready(const struct reporter *r)
{
	return r->state == REP_READY;
}

long long reporter_last_answer_ms(const struct reporter *r)
{
	return r->last_answer_ms;
}

void reporter_free(struct reporter *r)
{
	if (!r)
		return;
	OPENSSL_cleanse(r->key, sizeof(r->key));
	redis_link_free(r->link);
	if (r->hb_ev)
		event_free(r->hb_ev);
	free(r);
}
