/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The agent's link to the controller (docs/protocol.md): HELLO, then a REPORT
 * at once on every change and at least every heartbeat_ms (or the longer interval
 * ops->interval_ms gives), never later than the heartbeat_ms key of the last REPORT
 * said (the controller judges the agent lost past three of those: an interval grown
 * since waits for one more REPORT, which says it). A heartbeat does not queue behind unanswered
 * REPORTs (one, or ops->in_flight_max): a controller that is late gets fewer reports, not more. */
#ifndef FL_REPORTER_H
#define FL_REPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/config.h"
#include "common/report_keys.h"

struct event_base;

#define REP_PROTO_VERSION "2" /* common/auth.h's handshake */
#define REP_MAX_ARGS	  512
#define REP_SENT_RING	  128

/* One REPORT being built: key/value pairs after "REPORT <seq>". */
struct rep_msg {
	int argc;
	const char *argv[REP_MAX_ARGS];
	char buf[16384];
	size_t used;
	bool overflow;
};
void rep_add(struct rep_msg *m, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a key of the table (common/report_keys.h); peer: the node id of a
 * per-peer key, NULL otherwise. */
void rep_add_key(struct rep_msg *m, enum report_key k, const char *peer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

struct reporter_ops {
	/* Fill m with the agent's whole current state. */
	void (*build)(void *ctx, struct rep_msg *m);
	/* controller_connected / controller_lost / controller_rejected /
	 * controller_unproven (it could not prove it holds our node key), once per
	 * change; detail is readable. */
	void (*event)(void *ctx, const char *kind, const char *detail);
	/* The controller's answer to a REPORT: the shard's epoch and primary, and when
	 * (CLOCK_MONOTONIC ns) that REPORT was sent. */
	void (*answer)(void *ctx, long long epoch, const char *primary, uint64_t sent_ns,
		       int shadow);
	/* The lease admission grant of that answer (elements 6-8; a leader's only): the
	 * controller's term, the grant number and the admitted peers, space-separated;
	 * list NULL when the answer has none (an older controller). */
	void (*admit)(void *ctx, long long term, long long grant, const char *list);
	/* How long a REPORT may wait now when nothing changes (ms; NULL or <= 0:
	 * heartbeat_ms). Asked at every heartbeat tick. */
	int (*interval_ms)(void *ctx);
	/* How many REPORTs may be unanswered before a heartbeat waits (NULL or < 1: one):
	 * a lease holder keeps a few in flight, so that a slow answer does not let its
	 * lease run out between round trips. */
	int (*in_flight_max)(void *ctx);
};

struct reporter_opts {
	struct cfg_endpoint ep;
	const char *node;
	const char *secret;  /* the cluster secret: the node key is derived from it ... */
	const char *key_hex; /* ... unless the node's own key is given (hex, or "") */
	int heartbeat_ms;
	struct ssl_ctx_st *tls; /* TLS to the controller (common/tls.h), NULL: plain */
};

struct reporter;
struct ssl_ctx_st;
struct reporter *reporter_new(struct event_base *base, const struct reporter_opts *o,
			      const struct reporter_ops *ops, void *ctx);
void reporter_start(struct reporter *r);
/* Something changed: report now (if connected; else the state goes out on
 * reconnect). */
void reporter_kick(struct reporter *r);
bool reporter_ready(const struct reporter *r);
/* A reload (agent.c): report at least every ms from now on. */
void reporter_set_heartbeat(struct reporter *r, int ms);
/* A reload: the node key (key_hex, else derived from secret) the next connection
 * proves; the current one stays proven. -EINVAL (the old key kept) if unusable. */
int reporter_set_key(struct reporter *r, const char *secret, const char *key_hex);
/* Wall-clock ms of the last reply from the controller, 0 if never. */
long long reporter_last_answer_ms(const struct reporter *r);
void reporter_free(struct reporter *r);

#endif
