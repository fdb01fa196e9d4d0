/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Runtime membership, the words of it (pure, no I/O): one line per change to the
 * cluster file's topology, as the state file (one controller) and etcd (several)
 * keep it, the arguments of FLATLINE NODE/SHARD, the node ids SENTINEL MONITOR
 * makes, and the replicas a primary's INFO lists. ctl_members.c applies them. */
#ifndef FL_MEMBERS_H
#define FL_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include "common/config.h"

/* What one line says:
 *   node ID shard SHARD address IP redis HOST:PORT priority N spare 0|1
 *   shard NAME dns_name NAME|- discover 0|1
 *   drop node ID          (a node of the cluster file, removed at runtime)
 *   drop shard NAME       (the same for a shard)
 *   attach node ID shard SHARD  (a spare of the cluster file made a member of SHARD;
 *                         a spare added at runtime is a node line with spare 0) */
enum mb_kind { MB_NODE = 1, MB_SHARD, MB_DROP_NODE, MB_DROP_SHARD, MB_ATTACH };

struct mb_entry {
	enum mb_kind kind;
	char id[CFG_ID_MAX + 1];    /* the node's id or the shard's name */
	char shard[CFG_ID_MAX + 1]; /* MB_NODE: its shard (a spare's: the one it stands by for) */
	char address[64];	    /* MB_NODE: the host's IP, probed by its peers */
	char redis[300];	    /* MB_NODE: host:port, [v6]:port or unix:/path */
	int priority;		    /* MB_NODE: 0 = never promote */
	bool spare;		    /* MB_NODE: a standby in no shard's quorum */
	char dns_name[256];	    /* MB_SHARD: "" = none */
	bool discover;		    /* MB_SHARD: replicas found in the primary's INFO are added */
};

#define MB_PREFIX   "member " /* the state file's lines: "member " + the line */
#define MB_LINE_MAX 768

/* Splits s (modified) at spaces into at most max words; the count, or max + 1. */
int mb_words(char *s, char **w, int max);
/* Parses one line (without MB_PREFIX); -EINVAL with why. */
int mb_parse(const char *line, struct mb_entry *e, char *why, size_t whylen);
/* Writes e as one line (no newline); its length, or -ENOSPC. */
int mb_format(const struct mb_entry *e, char *buf, size_t len);
/* Checks what every entry must be (ids, address, redis endpoint, dns name). */
int mb_check(const struct mb_entry *e, char *why, size_t whylen);

/* FLATLINE NODE ADD's arguments after ADD: SHARD NODE ADDRESS IP REDIS HOST:PORT
 * [PRIORITY N] [SPARE] (the words case-insensitive). -EINVAL with why. */
int mb_node_args(int argc, const char *const *argv, struct mb_entry *e, char *why, size_t whylen);
/* FLATLINE SHARD ADD's after ADD: NAME [DNS-NAME NAME]. */
int mb_shard_args(int argc, const char *const *argv, struct mb_entry *e, char *why, size_t whylen);

/* The id SENTINEL MONITOR and replica discovery give the server host:port of
 * shard: "<shard>-<host>-<port>" with every character a node id may not hold as
 * '_'; -ENAMETOOLONG past CFG_ID_MAX. */
int mb_node_id(const char *shard, const char *host, int port, char *buf, size_t len);

/* The replicas INFO replication lists (slaveN:ip=…,port=…), at most max; how many. */
struct mb_addr {
	char host[64];
	int port;
};
int mb_info_slaves(const char *text, size_t len, struct mb_addr *out, int max);

/* A node id: 1-CFG_ID_MAX letters, digits, '-', '_' (the agent's pins are named
 * after it); a shard name (dots: true) may also hold '.', not first. */
bool mb_valid_id(const char *id, bool dots);

/* The entries that say how cfg (the controller's, with its runtime changes) differs
 * from its cluster file: a node or shard added at runtime, a file's one removed.
 * Calls fn for each; stops at (and returns) a non-zero return. */
int mb_walk_cfg(const struct cfg *c, int (*fn)(void *ctx, const struct mb_entry *e), void *ctx);
/* The same as "member <line>\n" lines appended to buf (cap bytes, at *len so far);
 * -ENOSPC if they do not fit. */
int mb_format_cfg(const struct cfg *c, char *buf, size_t cap, size_t *len);

/* A spare made a member of its shard in the cfg (MB_ATTACH; controller/ctl_spares.c
 * asks it): the node's index, or -errno and why (not a spare of that shard, the shard
 * full). _check: only whether it could be. mb_cfg_detach: a file's spare made a
 * spare again (HA mode rebuilds the membership over the file's). */
int mb_cfg_attach(struct cfg *cfg, const struct mb_entry *e, char *why, size_t whylen);
int mb_cfg_attach_check(const struct cfg *cfg, const struct mb_entry *e, char *why, size_t whylen);
void mb_cfg_detach(struct cfg_node *n);
/* A shard added at runtime: the file's defaults of its redundancy keys. */
void mb_shard_defaults(struct cfg_shard *s);

#endif
