/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Runtime membership (ctl_members.c) as its commands (ctl_members_cmd.c) see it.
 * Private to those two files and controller.c. */
#ifndef FL_CTL_MEMBERS_H
#define FL_CTL_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include "controller/members.h"

struct ctl;
struct ctl_conn;
struct cfg;

/* Nodes (and a quarter as many shards) that may be added at runtime before a
 * restart makes room for more. */
#define CTL_MEMBERS_ROOM 256
/* INFO replication of every primary this often: replicas no shard knows. */
#define CTL_MEMBERS_SCAN_MS 10000
#define CTL_MEMBERS_TICK_MS 1000 /* a shard without a primary: its nodes asked again */

/* The module's state (c->members), shared by ctl_members.c and ctl_members_scan.c.
 * Calls go one way: ctl_members_scan.c (the tick, the scan, discovery) over
 * ctl_members.c (the changes); the one way back is after_info, registered once. */
struct mb_unknown {
	int shard;
	char host[64];
	int port;
	bool seen; /* in the last scan of its shard */
};

struct ctl_members {
	struct event *scan; /* the tick (ctl_members_scan.c) */
	/* A node added: its INFO is asked with this as what runs once it is in
	 * (ctl_members_scan.c's discovery of a runtime shard's primary). */
	void (*after_info)(struct ctl *c);
	/* the cluster file's topology (HA: every change is made again over it) */
	int file_nodes, file_shards;
	int **file_lists, *file_nlists;
	struct mb_unknown *unknown;
	int nunknown, capunknown;
	unsigned long ticks;
	char *pending;	    /* HA: membership from etcd not applied yet (a failover ran) */
	bool postponed;	    /* the removal of a primary waits (said once) */
	long long rev_seen; /* HA: the revision of this controller's last membership write */
};
/* ctl_members.c: HA mode's membership that waited, tried again (every tick). */
void ctl_members_retry(struct ctl *c);

int ctl_members_reserve(struct cfg *cfg);
int ctl_members_cfg_node(const struct cfg *cfg, const char *id);
int ctl_members_cfg_shard(const struct cfg *cfg, const char *name);
int ctl_members_cfg_apply(struct cfg *cfg, const struct mb_entry *e, char *why, size_t whylen);

/* Is the change e allowed now (the node not primary, no failover running, the id
 * free…)? -errno and why (as the error to answer, without "ERR "). */
int ctl_members_check(struct ctl *c, const struct mb_entry *e, char *why, size_t whylen);
/* Makes the change e: kept (state file, or etcd: answered later), then applied.
 * done(ctx, err, why) runs once it is (at once with one controller); by: who asked
 * (for the events). Returns 0 (done will run) or -errno (it will not; why). */
typedef void (*ctl_members_done_fn)(struct ctl *c, void *ctx, int err, const char *why);
int ctl_members_change(struct ctl *c, const struct mb_entry *e, const char *by,
		       ctl_members_done_fn done, void *ctx, char *why, size_t whylen);
/* The replicas of shard's primary again now (SENTINEL RESET, MONITOR). */
void ctl_members_scan_shard(struct ctl *c, int shard);
/* What status shows: the replicas no shard knows, as "host:port(shard) …". */
void ctl_members_unknown(const struct ctl *c, int shard, char *buf, size_t len);

#endif
