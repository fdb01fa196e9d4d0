/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The full syncs a spare tried and failed while it is attached (ctl_spares.c's SYNC),
 * counted from the polls of its INFO and its primary's: its own tries, not the other
 * replicas' (the primary's sync_full counts every replica's full syncs, and a healthy
 * spare must not fail because another replica resynced).
 *
 * No INFO field counts a replica's tries, so a try is seen as it ends: a poll that
 * finds the spare neither syncing nor linked, when the poll before found it syncing
 * (master_sync_in_progress:1), or found it unlinked too and its replication input
 * (total_net_repl_input_bytes, Redis 7.0, Valkey) grew since (a try that began and
 * failed between two polls: its RDB's bytes). Never more than the full syncs the
 * primary began since the first poll (one more if a try was under way at that poll),
 * when the primary says sync_full. Pure: the caller polls. */
#ifndef FL_SPARE_SYNC_H
#define FL_SPARE_SYNC_H

#include <stdbool.h>

struct spare_sync {
	bool polled;	    /* a poll seen since spare_sync_begin */
	bool was_syncing;   /* the last poll: syncing from the primary */
	bool was_linked;    /* the last poll: its link up */
	bool first_syncing; /* the first poll found a try under way */
	long long in_bytes; /* the spare's replication input at the last poll, -1 unknown */
	long long full0;    /* the primary's sync_full at the first poll, -1 unknown */
	int failed;	    /* tries seen failing */
};

/* What one poll said. */
struct spare_sync_seen {
	bool syncing;		/* the spare: master_sync_in_progress:1, from the primary */
	bool linked;		/* the spare: master_link_status:up */
	long long in_bytes;	/* the spare's total_net_repl_input_bytes, -1 unknown */
	long long primary_full; /* the primary's sync_full, -1 unknown */
};

/* A sync (re)started: nothing counted. */
void spare_sync_begin(struct spare_sync *s);
/* One poll; the tries seen failing so far. */
int spare_sync_poll(struct spare_sync *s, const struct spare_sync_seen *p);

#endif
