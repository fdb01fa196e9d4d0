/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `flatline import`: its sources (sentinel.conf files, common/sentinel_conf.h, and
 * live Sentinels, import_live.c) and the cluster file it writes (import_cmd.c). */
#ifndef FL_IMPORT_H
#define FL_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "common/config.h"
#include "common/sentinel_conf.h"

#define IMP_MAX_SOURCES 32
#define IMP_MAX_NODES	64

struct imp_node {
	char host[SC_HOST_MAX];
	int port, priority; /* -1: not known */
};

struct imp_shard {
	char name[SC_NAME_MAX];
	const struct sc_master *src[IMP_MAX_SOURCES]; /* best (highest config-epoch) first */
	const struct sc_conf *conf[IMP_MAX_SOURCES];
	int nsrc;
	struct imp_node nodes[IMP_MAX_NODES]; /* the primary first */
	int nnodes;
	char ids[IMP_MAX_NODES][CFG_ID_MAX + 1];
};

struct imp {
	struct sc_conf *srcs[IMP_MAX_SOURCES];
	int nsrcs;
	struct imp_shard shards[SC_MAX_MASTERS];
	int nshards;
	bool force, decision;
	int cred_mode; /* the shard whose credentials are [redis]'s (import_emit.c) */
	FILE *out;     /* the text being written */
};

/* Asks the Sentinel at hostport (host:port, [v6]:port; port 26379 if left out) for
 * SENTINEL MASTERS, and REPLICAS and SENTINELS of each, into c (c->live set; a value
 * is set when its line is -1). Each connect and each reply within timeout_ms. 0, or
 * -errno with `failed to import from HOST:PORT: reason` in err. */
int import_live(struct sc_conf *c, const char *hostport, int timeout_ms, const char *user,
		const char *pass, char *err, size_t errlen);

/* Every source's masters into im->shards: their servers (the primary of the source
 * with the highest config-epoch first, then the replicas of all by address) and node
 * ids. 0, or -errno with a message on stderr. */
int import_merge(struct imp *im);
/* The cluster file's text (malloc'd, *len bytes); sets im->decision. 0 or -errno. */
int import_emit(struct imp *im, const char *secret, char **text, size_t *len);

#endif
