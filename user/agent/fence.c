// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "agent/fence.h"

enum fence_act fence_eval(struct fence_sm *sm, const struct fence_in *in)
{
	int64_t last_ok;

	if (in->any_peer_reachable || !in->have_peers || !sm->started) {
		sm->last_peer_ok_ms = in->now_ms;
		sm->started = true;
	}
	if (sm->fenced) {
		if (in->is_replica) {
			sm->fenced = false;
			return FENCE_LIFT_DEMOTED;
		}
		/* Only a word from the controller given after we fenced counts. */
		if (in->ctl_answer_ms > sm->fenced_at_ms && in->ctl_primary &&
		    !strcmp(in->ctl_primary, in->me) && in->ctl_epoch >= sm->epoch_at_fence) {
			sm->fenced = false;
			return FENCE_LIFT_CONFIRMED;
		}
		return FENCE_HOLD;
	}
	if (!in->is_primary || !in->have_peers)
		return FENCE_NONE;
	/* Reached neither the controller nor any peer for after_ms. */
	last_ok = in->ctl_answer_ms > sm->last_peer_ok_ms ? in->ctl_answer_ms : sm->last_peer_ok_ms;
	if (in->now_ms - last_ok < in->after_ms)
		return FENCE_NONE;
	sm->fenced = true;
	sm->fenced_at_ms = in->now_ms;
	sm->epoch_at_fence = in->ctl_epoch;
	return FENCE_NOW;
}
