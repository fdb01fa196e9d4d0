// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Self-demotion's rules: see demote.h. No I/O, no clock of its own. */
#include <string.h>
#include "agent/demote.h"

void demote_init(struct demote_sm *sm)
{
	memset(sm, 0, sizeof(*sm));
	sm->max_epoch = -1;
	sm->done_epoch = -1;
	sm->try_epoch = -1;
	sm->backoff_ms = DEMOTE_BACKOFF_MIN_MS;
}

bool demote_on_answer(struct demote_sm *sm, const struct demote_in *in)
{
	if (in->epoch < sm->max_epoch)
		return false; /* a controller behind the times */
	sm->max_epoch = in->epoch;
	if (!in->primary || !in->primary[0] || !strcmp(in->primary, in->me) || !in->same_shard)
		return false;
	if (in->lease_held || !in->master_before || sm->in_flight)
		return false;
	if (sm->done_epoch == in->epoch && sm->done_episode == in->episode)
		return false;
	if (sm->try_epoch == in->epoch && in->now_ms < sm->next_try_ms)
		return false;
	if (sm->try_epoch != in->epoch)
		sm->backoff_ms = DEMOTE_BACKOFF_MIN_MS;
	sm->try_epoch = in->epoch;
	sm->try_episode = in->episode;
	sm->in_flight = true;
	return true;
}

void demote_done(struct demote_sm *sm, int64_t now_ms, bool ok)
{
	if (!sm->in_flight)
		return;
	sm->in_flight = false;
	if (ok) {
		sm->done_epoch = sm->try_epoch;
		sm->done_episode = sm->try_episode;
		sm->backoff_ms = DEMOTE_BACKOFF_MIN_MS;
		return;
	}
	sm->next_try_ms = now_ms + sm->backoff_ms;
	sm->backoff_ms *= 2;
	if (sm->backoff_ms > DEMOTE_BACKOFF_MAX_MS)
		sm->backoff_ms = DEMOTE_BACKOFF_MAX_MS;
}
