// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A spare's own failed full syncs: see spare_sync.h. */
#include "controller/spare_sync.h"

void spare_sync_begin(struct spare_sync *s)
{
	*s = (struct spare_sync){.in_bytes = -1, .full0 = -1};
}

/* A try ended, unlinked, since the last poll. */
static bool try_failed(const struct spare_sync *s, const struct spare_sync_seen *p)
{
	if (p->syncing || p->linked)
		return false;
	if (s->was_syncing)
		return true;
	/* Its RDB's bytes came in while it was never seen linked (the stream's bytes
	 * come only over a link that was up). */
	return !s->was_linked && s->in_bytes >= 0 && p->in_bytes > s->in_bytes;
}

int spare_sync_poll(struct spare_sync *s, const struct spare_sync_seen *p)
{
	if (!s->polled) {
		s->polled = true;
		s->full0 = p->primary_full;
		s->first_syncing = p->syncing;
	} else if (try_failed(s, p)) {
		/* Each a full sync the primary began: no more than it says it began. */
		long long most = p->primary_full >= 0 && s->full0 >= 0
				     ? p->primary_full - s->full0 + s->first_syncing
				     : -1;

		if (most < 0 || s->failed < most)
			s->failed++;
	}
	s->was_syncing = p->syncing;
	s->was_linked = p->linked;
	s->in_bytes = p->in_bytes;
	return s->failed;
}
