/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A hiredis async connection on a libevent base that keeps itself up: connect
 * timeout, reconnect with capped backoff, per-request deadline, and a bound on
 * reply size. Nothing here blocks the loop. */
#ifndef FL_RLINK_H
#define FL_RLINK_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include "backoff.h"
#include "config.h"

struct event_base;
struct rlink;

#define RL_MAX_REPLY (4u << 20) /* larger replies are treated as a protocol error */

struct rlink_ops {
	/* Connected (TCP/unix connect done). Send the handshake from here. */
	void (*on_up)(void *ctx);
	/* Lost or failed to connect; why is readable. err is the errno when known
	 * (ECONNREFUSED, ENOENT for a missing unix socket, ETIMEDOUT …), else 0. */
	void (*on_down)(void *ctx, const char *why, int err);
};

/* reply is NULL when the connection went away or the request timed out. */
typedef void (*rl_reply_fn)(void *ctx, redisReply *reply, void *priv);

struct rlink *rl_new(struct event_base *base, const struct cfg_endpoint *ep, const char *name,
		     int timeout_ms, const struct rlink_ops *ops, void *ctx);
/* Reconnect delays: from base_ms doubling to max_ms (default 100 ms to 5 s). */
void rl_set_backoff(struct rlink *l, int base_ms, int max_ms);
/* Connect now; after a loss, reconnect by itself with backoff. */
void rl_start(struct rlink *l);
/* -ENOTCONN when not connected, -ENOBUFS past 64 requests in flight. */
int rl_command(struct rlink *l, rl_reply_fn fn, void *priv, int argc, const char **argv,
	       const size_t *lens);
/* Drop the connection (protocol error, garbage …) and reconnect after backoff. */
void rl_drop(struct rlink *l, const char *why);
bool rl_connected(const struct rlink *l);
int rl_in_flight(const struct rlink *l);
/* Oldest request still unanswered: its age in ms, or 0. */
long rl_oldest_ms(const struct rlink *l);
void rl_free(struct rlink *l);

#endif
