/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `flatline import`: its sources (sentinel.conf files, common/sentinel_conf.h, and
 * live Sentinels, import_live.c) and the cluster file it writes (import_cmd.c). */
#ifndef FL_IMPORT_H
#define FL_IMPORT_H

#include <stddef.h>
#include "common/sentinel_conf.h"

/* Asks the Sentinel at hostport (host:port, [v6]:port; port 26379 if left out) for
 * SENTINEL MASTERS, and REPLICAS and SENTINELS of each, into c (c->live set; a value
 * is set when its line is -1). Each connect and each reply within timeout_ms. 0, or
 * -errno with `failed to import from HOST:PORT: reason` in err. */
int import_live(struct sc_conf *c, const char *hostport, int timeout_ms, const char *user,
		const char *pass, char *err, size_t errlen);

#endif
