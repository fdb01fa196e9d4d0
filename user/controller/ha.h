/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Controller high availability: one leader among the controllers, chosen and fenced
 * by etcd. Every controller
 *   - holds an etcd lease (TTL lease_ms, kept alive every lease_ms / 3) and registers
 *     itself under <prefix>controllers/<id> on that lease (SENTINEL sentinels);
 *   - campaigns for <prefix>leader with a transaction "create it on my lease if it
 *     does not exist"; the winner leads until its lease ends;
 *   - mirrors every key under <prefix> through a watch (followers stay warm).
 * The leader writes shard state only with a transaction conditioned on the leader
 * key still being the one it created (its create revision), so a deposed leader's
 * writes fail. It may act on servers and DNS only while ha_may_act(): its local
 * deadline is the time the last successful keep-alive was SENT plus the TTL etcd
 * granted, less a margin for clock-rate drift, so it stops before etcd can expire
 * the lease and let another controller lead.
 *
 *    start --grant--> REGISTER --put--> CAMPAIGN --won--> LEADER
 *                                          |   ^             |
 *                                       lost   leader key    | deadline passed,
 *                                          v   deleted       | keep-alive refused,
 *                                       FOLLOWER ------------+ write refused
 *                                                 (every failure: grant again)
 */
#ifndef FL_HA_H
#define FL_HA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "controller/etcd.h"

struct event_base;
struct ha;

enum ha_role { HA_STARTING = 0, HA_FOLLOWER, HA_LEADER };

struct ha_opts {
	struct etcd_opts etcd;
	const char *prefix; /* e.g. "/flatline/demo/" (ends with '/') */
	const char *id;	    /* this controller's id */
	const char *listen; /* its client address, published for SENTINEL sentinels */
	int lease_ms;	    /* TTL asked of etcd (rounded up to whole seconds) */
	int margin_ms;	    /* subtracted from the local deadline (default lease_ms / 10) */
};

struct ha_ops {
	/* Leadership changed; why says why in words (for leader_elected / leader_lost). */
	void (*on_role)(void *ctx, enum ha_role role, const char *why);
	/* A key under the prefix changed (rel: the key without the prefix); deleted: val
	 * is NULL. Called for the initial contents too, before the first on_role. */
	void (*on_value)(void *ctx, const char *rel, const char *val, size_t len, bool deleted);
	/* etcd reachable again (ok) or not (why): etcd_unavailable. */
	void (*on_health)(void *ctx, bool ok, const char *why);
};

/* The outcome of ha_put: 0, -ESTALE (not the leader any more: the write was refused),
 * or another -errno (etcd unreachable...). */
typedef void (*ha_put_fn)(void *ctx, int err, const char *msg);

struct ha *ha_new(struct event_base *base, const struct ha_opts *o, const struct ha_ops *ops,
		  void *ctx);
/* Starts the lease, registration, campaign and watch. */
int ha_start(struct ha *h);
/* Clean stop: revokes the lease so another controller takes over at once. The loop
 * must run until done is called (or the timeout passes). */
void ha_stop(struct ha *h, void (*done)(void *ctx), void *ctx);
void ha_free(struct ha *h);

enum ha_role ha_role(const struct ha *h);
/* Leader with a lease surely alive now (monotonic ms): may act on servers and DNS. */
bool ha_may_act(const struct ha *h, long long now_ms);
/* The local deadline (monotonic ms) and the leader's id ("" if none known). */
long long ha_deadline_ms(const struct ha *h);
const char *ha_leader(const struct ha *h);
/* The leader's revision and the last revision seen (lag = what a follower trails by). */
int64_t ha_revision(const struct ha *h);
/* The create revision of our leader key while we lead (higher for each new leader). */
int64_t ha_leader_revision(const struct ha *h);

/* Leader only: writes <prefix>rel = val in a transaction that succeeds only while the
 * leader key is ours. */
int ha_put(struct ha *h, const char *rel, const char *val, size_t len, ha_put_fn fn, void *ctx);

/* Reads <prefix>rel (any role): fn gets its value (NULL: absent) or an error. */
typedef void (*ha_get_fn)(void *ctx, int err, const char *msg, const char *val);
int ha_get(struct ha *h, const char *rel, ha_get_fn fn, void *ctx);

/* The controllers registered (id and listen address), this one included. */
int ha_controllers(const struct ha *h, const char **ids, const char **addrs, int max);

const char *ha_role_name(enum ha_role r);
/* The etcd client (for other calls: member list...). */
struct etcd *ha_etcd(const struct ha *h);

#endif
