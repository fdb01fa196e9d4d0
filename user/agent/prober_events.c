// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The prober's words (prober.h): a peer's state as REPORT says it, the event kinds,
 * and the peer_* event records the agent and `flatline probe` log. */
#include <net/if.h>
#include <linux/icmp.h>
#include <netinet/icmp6.h>
#include <netinet/ip.h>
#include "common/clock.h"
#include "agent/prober.h"

/* A local fault says nothing about the peer: "unknown" to the controller. */
const char *probe_report_state(enum verdict_state s)
{
	return s == VERDICT_UP || s == VERDICT_PASSIVE ? "up"
	       : s == VERDICT_DOWN		       ? "down"
						       : "unknown";
}

const char *probe_event_kind(enum verdict_state s)
{
	switch (s) {
	case VERDICT_UP:
		return "peer_up";
	case VERDICT_PASSIVE:
		return "peer_passive";
	case VERDICT_DOWN:
		return "peer_down";
	case VERDICT_LOCAL_FAULT:
		return "peer_local_fault";
	default:
		return "peer_unknown";
	}
}

static void add_age(struct evrec *r, const char *key, uint64_t ns)
{
	if (ns == VERDICT_NEVER)
		evrec_str(r, key, NULL);
	else
		evrec_uint(r, key, ns / NS_PER_MS);
}

static void add_us(struct evrec *r, const char *key, uint64_t ns)
{
	if (!ns)
		evrec_str(r, key, NULL);
	else
		evrec_double(r, key, ns / 1000.0, 1);
}

void probe_evrec(struct evrec *r, const char *node, const struct probe_peer_info *peer)
{
	const struct verdict_evidence *ev = &peer->ev;

	evrec_begin(r, NULL, node, probe_event_kind(ev->state));
	evrec_str(r, "peer", peer->id);
	evrec_str(r, "addr", peer->addr);
	evrec_str(r, "state", verdict_state_name(ev->state));
	evrec_str(r, "prev", verdict_state_name(ev->prev));
	evrec_str(r, "liveness", verdict_liveness(ev->state));
	add_age(r, "reply_age_ms", ev->reply_age_ns);
	add_age(r, "packet_age_ms", ev->packet_age_ns);
	evrec_uint(r, "window_ms", ev->window_ns / NS_PER_MS);
	evrec_uint(r, "probes_in_window", ev->probes_in_window);
	evrec_uint(r, "left_in_window", ev->left_in_window);
	evrec_uint(r, "replied_in_window", ev->replied_in_window);
	evrec_bool(r, "local_fault", ev->local_fault);
	evrec_double(r, "loss_ratio", ev->loss_ratio, 3);
	evrec_double(r, "gap_ratio", ev->gap_ratio, 3);
	evrec_uint(r, "silence_needed_ms", ev->need_ns / NS_PER_MS);
	add_us(r, "rtt_us", ev->rtt_ns);
	add_us(r, "srtt_us", ev->srtt_ns);
	evrec_bool(r, "stalled", ev->stalled);
}
