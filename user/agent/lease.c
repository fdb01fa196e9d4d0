// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The write lease's rules: see lease.h. No I/O, no clock of its own. */
#include <string.h>
#include "agent/lease.h"

void lease_init(struct lease_sm *sm, const struct fl_lease_state *pinned, uint64_t lease_ns)
{
	memset(sm, 0, sizeof(*sm));
	if (pinned)
		sm->k = *pinned;
	sm->lease_ns = lease_ns;
}

bool lease_held(const struct lease_sm *sm, uint64_t now_ns)
{
	return now_ns < sm->k.deadline_ns;
}

bool lease_revoked(const struct lease_sm *sm)
{
	return sm->retake_from_ns == LEASE_RETAKE_NEVER;
}

/* Evidence sent at sent_ns may count: not while revoked, not from before the agent
 * allowed the lease back (an answer or an echo that was in flight). */
static bool counts(const struct lease_sm *sm, uint64_t sent_ns)
{
	return sent_ns >= sm->retake_from_ns && !lease_revoked(sm);
}

static enum lease_change extend(struct lease_sm *sm, uint64_t now_ns, uint64_t sent_ns,
				__u32 source)
{
	bool was = lease_held(sm, now_ns);
	uint64_t d = sent_ns + sm->lease_ns;

	if (d <= sm->k.deadline_ns)
		return LEASE_SAME;
	sm->k.deadline_ns = d;
	sm->k.renewed_ns = sent_ns;
	sm->k.source = source;
	if (!lease_held(sm, now_ns))
		return LEASE_SAME; /* the answer came too late to matter */
	return was ? LEASE_EXTENDED : LEASE_GRANTED;
}

enum lease_change lease_on_controller(struct lease_sm *sm, uint64_t now_ns, uint64_t sent_ns,
				      long long epoch, const char *primary, const char *me,
				      bool is_replica)
{
	bool current;

	if (!primary || !primary[0])
		return LEASE_SAME;
	current = epoch >= sm->k.epoch;
	if (current)
		sm->k.epoch = epoch; /* the highest epoch any answer naming a primary carried */
	if (!strcmp(primary, me)) {
		if (!current || !counts(sm, sent_ns))
			return LEASE_SAME; /* a controller behind the times, or a grant in flight */
		return extend(sm, now_ns, sent_ns, FL_LEASE_SRC_CONTROLLER);
	}
	if (is_replica)
		return counts(sm, sent_ns) ? extend(sm, now_ns, sent_ns, FL_LEASE_SRC_CONTROLLER)
					   : LEASE_SAME;
	/* Another node is the primary and our server still says master: nothing left to
	 * take away if the deadline is 0 (the epoch now keeps older grants out). */
	if (!sm->k.deadline_ns)
		return LEASE_SAME;
	return lease_give_up(sm);
}

enum lease_change lease_on_peer(struct lease_sm *sm, uint64_t now_ns, uint64_t sent_ns)
{
	if (!lease_held(sm, now_ns) || !counts(sm, sent_ns))
		return LEASE_SAME;
	return extend(sm, now_ns, sent_ns, FL_LEASE_SRC_PEER);
}

enum lease_change lease_give_up(struct lease_sm *sm)
{
	if (!sm->k.deadline_ns && lease_revoked(sm))
		return LEASE_SAME;
	sm->k.deadline_ns = 0;
	sm->k.source = FL_LEASE_SRC_NONE;
	sm->retake_from_ns = LEASE_RETAKE_NEVER;
	return LEASE_REVOKED;
}

void lease_start_over(struct lease_sm *sm, uint64_t from_sent_ns)
{
	sm->k.deadline_ns = 0;
	sm->k.source = FL_LEASE_SRC_NONE;
	sm->retake_from_ns = from_sent_ns;
}

bool lease_allow_retake(struct lease_sm *sm, uint64_t now_ns)
{
	if (!lease_revoked(sm))
		return false;
	sm->retake_from_ns = now_ns + 1;
	return true;
}

const char *lease_source_name(__u32 source)
{
	switch (source) {
	case FL_LEASE_SRC_CONTROLLER:
		return "controller";
	case FL_LEASE_SRC_PEER:
		return "peer";
	default:
		return "none";
	}
}

bool lease_scan_due(int pid, bool bus_known, uint16_t bus, int scanned, uint16_t scanned_bus,
		    uint16_t *scan_bus)
{
	*scan_bus = bus_known ? bus : 0;
	if (pid <= 0)
		return false;
	if (pid != scanned)
		return true;
	/* The same process: again only to leave out a bus port learnt since. */
	return bus_known && bus != scanned_bus;
}
