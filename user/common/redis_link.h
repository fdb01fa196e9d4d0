/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A RESP connection on a libevent base that keeps itself up: connect timeout,
 * reconnect with capped backoff, and replies read with limits enforced while
 * reading (common/reply_reader.h: size, elements, nesting; and a reply begun
 * must finish within the reply timeout). Anything unexpected from the peer (a
 * reply to no request, a malformed or oversized reply) closes the link with a
 * "protocol error: ..." reason; nothing a peer sends can abort the process.
 * Nothing here blocks the loop. Callbacks may drop, send on, or free the link. */
#ifndef FL_REDIS_LINK_H
#define FL_REDIS_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>
#include "common/backoff.h"
#include "common/config.h"
#include "common/reply_reader.h"

struct event_base;
struct redis_link;
struct ssl_ctx_st;

#define REDIS_LINK_MAX_REPLY	    REPLY_MAX_BYTES /* larger replies are a protocol error */
#define REDIS_LINK_REPLY_TIMEOUT_MS 5000	    /* default: first byte of a reply to its last */

struct redis_link_ops {
	/* Connected (TCP/unix connect done). Send the handshake from here. */
	void (*on_up)(void *ctx);
	/* Lost or failed to connect; why is readable. err is the errno when known
	 * (ECONNREFUSED, ENOENT for a missing unix socket, ETIMEDOUT …), else 0. */
	void (*on_down)(void *ctx, const char *why, int err);
	/* Optional, with TLS: TCP is connected (fd), the handshake not begun. The
	 * agent allows its own connection through the write lease here: the server's
	 * half of the handshake is data the lease would otherwise drop. */
	void (*on_tcp_up)(void *ctx, int fd);
};

/* reply is NULL when the connection went away; it is freed when fn returns. */
typedef void (*redis_link_reply_fn)(void *ctx, redisReply *reply, void *priv);
/* For redis_link_request: reply, or NULL and why ("timed out", "connection lost",
 * "cannot connect to NAME: …"). */
typedef void (*redis_link_result_fn)(void *ctx, redisReply *reply, const char *err, void *priv);

struct redis_link *redis_link_new(struct event_base *base, const struct cfg_endpoint *ep,
				  const char *name, int timeout_ms,
				  const struct redis_link_ops *ops, void *ctx);
/* TLS on every connection from now on (not on a unix socket: Redis has none
 * there): ctx verifies the peer, whose certificate must carry host (a name or
 * IP; NULL or "": the endpoint's host). The link holds a reference to ctx. The
 * handshake is part of connecting: on_up comes after it, within the connect
 * timeout, and a failure reaches on_down as "TLS handshake failed: <why>". */
int redis_link_set_tls(struct redis_link *l, struct ssl_ctx_st *ctx, const char *host);
/* Reconnect delays: from base_ms doubling to max_ms (default 100 ms to 5 s). */
void redis_link_set_backoff(struct redis_link *l, int base_ms, int max_ms);
/* A reply whose first bytes arrived must be whole within ms (a slow drip is a
 * protocol error). */
void redis_link_set_reply_timeout(struct redis_link *l, int ms);
/* Connect now; after a loss, reconnect by itself with backoff. */
void redis_link_start(struct redis_link *l);
/* -ENOTCONN when not connected, -ENOBUFS past 64 requests in flight. */
int redis_link_command(struct redis_link *l, redis_link_reply_fn fn, void *priv, int argc,
		       const char **argv, const size_t *lens);
/* A request that is always answered, once, within timeout_ms: fn gets the reply, or
 * NULL and why. A link that is down connects at once (a request never waits out the
 * backoff); while it connects the request is held and sent after on_up (so the
 * owner's handshake goes first). Past timeout_ms fn gets "timed out" and the link
 * is dropped and reconnected: what is queued behind a request that does not answer
 * will not answer soon either. Failures before the server answers are reported
 * from the loop, never from inside this call. */
void redis_link_request(struct redis_link *l, int timeout_ms, redis_link_result_fn fn, void *priv,
			int argc, const char **argv);
/* Fire and forget, in order with the requests: sent now, held while the link
 * connects, lost when the connection is. Its reply is read (and checked) and
 * dropped. */
void redis_link_send(struct redis_link *l, int argc, const char **argv);
/* Drop the connection (protocol error, garbage …) and reconnect after backoff. */
void redis_link_drop(struct redis_link *l, const char *why);
bool redis_link_connected(const struct redis_link *l);
/* The connection's socket, -1 while down. */
int redis_link_fd(const struct redis_link *l);
int redis_link_in_flight(const struct redis_link *l);
/* Oldest request still unanswered: its age in ms, or 0. */
long redis_link_oldest_ms(const struct redis_link *l);
void redis_link_free(struct redis_link *l);

#endif
