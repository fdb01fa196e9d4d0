/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The bottom of the controller's shell: a connection (ctl_conn.c). What every
 * handler needs of one — answering in RESP2 or RESP3, reading on or off, a fatal
 * error, its end — and nothing about the commands. The roles a connection takes
 * on (an agent, a subscriber, a held SENTINEL question, a FLATLINE FAILOVER
 * waiter) are the modules' own: each registers its release once
 * (ctl_conn_role_register) and marks the connections that play it
 * (ctl_conn_role); ctl_conn_free() calls the releases of the roles a connection
 * has, knowing none of them. Calls nothing of the controller's above it but
 * ctl_limits.c (the rejection log rate). */
#ifndef FL_CTL_CONN_H
#define FL_CTL_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <event2/event.h>
#include "common/acl.h"
#include "common/auth.h"
#include "common/resp.h"

struct ctl;
struct evbuffer;
struct evbuffer_cb_entry;
struct bufferevent;

#define CTL_MAX_SUBS	   64
#define CTL_PUBSUB_MAX_OUT (8u << 20) /* bytes a subscriber may leave unread */
#define CTL_CLOSE_FLUSH_MS 5000	      /* a closing client that does not read: freed */
/* Output held for anonymous clients in all, and what one of them may hold while
 * the total is over it (maxclients x the normal class's 4 MiB was 40 GiB). */
#define CTL_ANON_OUT_MAX   (64u << 20)
#define CTL_ANON_OUT_SHARE (64u << 10)
/* Answers held for one send() at the end of a read callback (ctl_conn_answer). */
#define CTL_DIRECT_MAX 4096

/* What a connection may be besides a client; each module releases its own. */
enum ctl_role {
	CTL_ROLE_AGENT,	     /* ctl_agents.c: the node's session */
	CTL_ROLE_SUBSCRIBER, /* ctl_pubsub.c: channels and patterns */
	CTL_ROLE_HELD,	     /* ctl_hold.c: a SENTINEL question held while the primary changes */
	CTL_ROLE_WAITER,     /* ctl_sentinel.c: a FLATLINE FAILOVER answer deferred */
	CTL_NROLES,
};

/* A client or agent connection. */
struct ctl_conn {
	struct ctl *ctl;
	struct bufferevent *bev;
	struct resp_reader *rd;
	char peer[80];
	unsigned flags;
#define CTL_C_AGENT	 (1u << 0) /* HELLO flatline accepted: node is set */
#define CTL_C_AUTH	 (1u << 1) /* AUTH with the cluster secret: may change state */
#define CTL_C_PUBSUB	 (1u << 2) /* subscribed to a channel or a pattern */
#define CTL_C_CLOSING	 (1u << 3) /* closes once its output is flushed */
#define CTL_C_WAITING	 (1u << 4) /* a FLATLINE FAILOVER answer is deferred */
#define CTL_C_RESP3	 (1u << 5) /* HELLO 3: maps, nulls and push messages */
#define CTL_C_CHALLENGED (1u << 6) /* HELLO flatline answered with CHALLENGE: PROVE next */
#define CTL_C_PENALTY	 (1u << 7) /* a failed AUTH: reading paused (with CTL_C_WAITING) */
#define CTL_C_LOGIN	 (1u << 8) /* logged in as user (client authentication on) */
#define CTL_C_TLS	 (1u << 9) /* came to tls_listen */
/* Its turn of the loop used up (CTL_TURN_BYTES): reading off, the
 * rest runs from its resume timer, after every other connection's turn. */
#define CTL_C_YIELD (1u << 10)
/* A plain socket bufferevent (not TLS): its output may be written to the fd directly. */
#define CTL_C_PLAIN (1u << 12)
/* An agent's answers are written at the end of the read callback, with the
 * bufferevent's EV_WRITE off (no epoll change per REPORT): ctl_listen.c. */
#define CTL_C_WDIRECT (1u << 13)
/* Used up its last turn: its events run at CTL_PRIO_LOW until a turn empties its
 * input (ctl_listen.c's conn_priority). */
#define CTL_C_LOW (1u << 14)
	unsigned roles; /* 1 << enum ctl_role: whose release ctl_conn_free() calls */
	int node;
	/* A plain agent connection reads with its own event, not the bufferevent's
	 * (no FIONREAD ioctl per REPORT): ctl_listen.c, ctl_conn_reading(). */
	struct event *rev;
	uint8_t na[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN]; /* the handshake's nonces */
	uint8_t key[AUTH_KEY_LEN];			/* the challenged node's key */
	long long seq;
	struct event *resume;	      /* reads on after a deferred answer */
	struct event *deadline;	      /* a frame or the agent handshake begun and not finished */
	struct event *login_deadline; /* client authentication on: CTL_LOGIN_MS from accept */
	long long soft_since_ms;      /* output over the soft limit since, 0 if not */
	/* Its unread output counted in the anonymous clients' total (ctl_conn.c) */
	size_t out_counted;
	struct evbuffer_cb_entry *out_cb;
	/* Subscriptions (ctl_pubsub.c) */
	char *subs[CTL_MAX_SUBS];
	int nsubs;
	char *psubs[CTL_MAX_SUBS];
	int npsubs;
	struct ctl_conn *next, *prev;
	/* CLIENT ID/LIST/INFO/GETNAME/SETNAME/KILL (ctl_clients.c) */
	unsigned long long id;
	long long created_ms, last_cmd_ms;
	char name[64];
	char last_cmd[32];
	bool tls_handshake; /* on the TLS socket, handshake not done: CTL_PREAUTH_MS */
	/* Client authentication (ctl_client_auth.c): who, and the ACL_* bits allowed */
	char user[ACL_USER_MAX + 1];
	unsigned perms;
	/* A SENTINEL question held while its shard changes primary (ctl_hold.c) */
	struct resp_cmd held;
	struct event *hold_ev;
	long long hold_until_ms;
};

/* The module's state (connections' role releases, the reader) for c; at start. */
int ctl_conn_init(struct ctl *c);
void ctl_conn_fini(struct ctl *c);
/* The dispatcher's: runs what k has buffered (after a deferred answer). */
void ctl_conn_set_reader(struct ctl *c, void (*read)(struct ctl_conn *k));
/* Once per role, at start: what ends it when a connection playing it is freed. */
void ctl_conn_role_register(struct ctl *c, enum ctl_role role, void (*release)(struct ctl_conn *k));
/* k plays role (on) or no longer does. */
void ctl_conn_role(struct ctl_conn *k, enum ctl_role role, bool on);

/* k (k->ctl set) joins c->conns, counted (ctl_conn_count); ctl_conn_free takes it out. */
void ctl_conn_add(struct ctl_conn *k);
int ctl_conn_count(const struct ctl *c);
void ctl_conn_free(struct ctl_conn *k);
/* Answers err and closes once it is sent (or after CTL_CLOSE_FLUSH_MS). */
void ctl_conn_fatal(struct ctl_conn *k, const char *err);
void ctl_conn_reading(struct ctl_conn *k, bool on);
/* A deferred answer has been written: reads on, what came behind it runs. */
void ctl_conn_resume(struct ctl_conn *k);
/* The event behind k->resume: reads on (after a deferred answer or a penalty). */
void ctl_conn_on_resume(evutil_socket_t fd, short what, void *arg);

/* Answers held for one send() (ctl_conn.c): while k is read with its writes
 * direct (ctl_listen.c opens and closes), ctl_conn_answer() keeps an answer in one
 * buffer of the controller's, as long as k's output evbuffer is empty; otherwise,
 * or once it is full, the answer goes to the evbuffer after what is held. Anything
 * else that writes to k's evbuffer while it is open calls ctl_conn_direct_flush()
 * first (ctl_conn_fatal and the dispatcher do). */
void ctl_conn_answer(struct ctl_conn *k, const char *buf, size_t len);
void ctl_conn_direct_flush(struct ctl_conn *k);
void ctl_conn_direct_open(struct ctl_conn *k);
/* What is held for k (*len bytes, 0 if none). */
const char *ctl_conn_direct_held(const struct ctl_conn *k, size_t *len);
/* Sent bytes of it went out: the rest into k's evbuffer, and closed. */
void ctl_conn_direct_close(struct ctl_conn *k, size_t sent);

/* Reply types that differ with the protocol (RESP2 / RESP3 after HELLO 3). */
void ctl_reply_map(const struct ctl_conn *k, struct evbuffer *o, long npairs);
void ctl_reply_null(const struct ctl_conn *k, struct evbuffer *o, bool array);
void ctl_reply_push(const struct ctl_conn *k, struct evbuffer *o, long n);

/* Past its class's output buffer limit, or an anonymous client holding more than
 * CTL_ANON_OUT_SHARE while all of them hold more than CTL_ANON_OUT_MAX: the caller
 * frees it at once. Checked after every command. */
bool ctl_conn_over_limit(struct ctl_conn *k);
/* At accept: k's output counts in the anonymous clients' total while it is one
 * (not an agent, not logged in, no AUTH). */
void ctl_conn_count_output(struct ctl_conn *k);

/* A timeout of ms as a libevent common timeout (the last length asked for kept in
 * *ms_at, *tv_at). */
const struct timeval *ctl_common_timeout(struct ctl *c, int *ms_at, const struct timeval **tv_at,
					 int ms);
/* How long an agent may be silent before its connection is closed (10 heartbeats). */
const struct timeval *ctl_agent_silent_tv(struct ctl *c);

#endif
