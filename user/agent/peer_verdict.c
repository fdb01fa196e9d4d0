// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The verdict on one peer: see peer_verdict.h. No I/O, no clock of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/clock.h"
#include "agent/peer_verdict.h"

/* Late by a whole interval, and by at least 50 ms so that scheduling jitter at
 * short intervals is not taken for a stall. */
uint64_t verdict_default_stall(uint64_t interval_ns)
{
	uint64_t slack = interval_ns > 50 * NS_PER_MS ? interval_ns : 50 * NS_PER_MS;

	return interval_ns + slack;
}

static uint64_t down_after_max(const struct verdict_config *c)
{
	uint64_t max =
	    c->down_after_max_ns ? c->down_after_max_ns : VERDICT_WIDEN_MAX * c->down_after_ns;

	return max > c->down_after_ns ? max : c->down_after_ns;
}

uint64_t verdict_need_ns(const struct verdict_config *c, double gap_ratio)
{
	uint64_t max = down_after_max(c), k = 0, kmax = max / c->interval_ns;
	double chance = 1.0;

	if (gap_ratio <= 0)
		return c->down_after_ns;
	/* The fewest silent rounds that loss alone leaves with a chance below the target. */
	while (chance >= VERDICT_FALSE_TARGET && k < kmax) {
		chance *= gap_ratio;
		k++;
	}
	if (chance >= VERDICT_FALSE_TARGET)
		return max;
	return k * c->interval_ns > c->down_after_ns ? k * c->interval_ns : c->down_after_ns;
}

int verdict_check_config(const struct verdict_config *c)
{
	if (!c->interval_ns || c->down_after_ns < VERDICT_MIN_PROBES * c->interval_ns)
		return -EINVAL;
	return 0;
}

int verdict_init(struct verdict_peer *p, const struct verdict_config *c)
{
	int err = verdict_check_config(c);

	if (err)
		return err;
	memset(p, 0, sizeof(*p));
	/* Room for the widest window of rounds on schedule, twice over for early rounds. */
	p->cap = 2 * (down_after_max(c) / c->interval_ns) + 8;
	p->hist = calloc(p->cap, sizeof(*p->hist));
	if (!p->hist)
		return -ENOMEM;
	p->ev.reply_age_ns = VERDICT_NEVER;
	p->ev.packet_age_ns = VERDICT_NEVER;
	return 0;
}

void verdict_free(struct verdict_peer *p)
{
	free(p->hist);
	p->hist = NULL;
	p->cap = p->n = 0;
}

static const struct verdict_sample *sample(const struct verdict_peer *p, unsigned int back)
{
	return &p->hist[(p->head + p->cap - 1 - back) % p->cap];
}

static void push(struct verdict_peer *p, const struct verdict_obs *o)
{
	p->hist[p->head] = (struct verdict_sample){o->now_ns, o->probes, o->left, o->replied};
	p->head = (p->head + 1) % p->cap;
	if (p->n < p->cap)
		p->n++;
}

/* The round the window starts at: the newest before now - down_after, or the
 * oldest there is (then *full is false). */
static const struct verdict_sample *window_base(const struct verdict_peer *p, uint64_t now,
						uint64_t down_after, bool *full)
{
	for (unsigned int back = 1; back < p->n; back++) {
		const struct verdict_sample *s = sample(p, back);

		if (now - s->t_ns >= down_after) {
			*full = true;
			return s;
		}
	}
	*full = false;
	return sample(p, p->n - 1);
}

static uint64_t age(uint64_t now, uint64_t t)
{
	if (!t)
		return VERDICT_NEVER;
	return now > t ? now - t : 0;
}

/* The share of silent rounds: a run of silence counts once a packet ends it (a dead
 * peer's silence never does), and only if it was shorter than the silence needed then
 * (a longer one was an outage, not loss); a round after our own stall counts for
 * nothing. */
static void count_gaps(struct verdict_peer *p, const struct verdict_config *c,
		       const struct verdict_obs *o)
{
	const double a = 1.0 / VERDICT_GAP_ALPHA_INV;
	uint64_t need = p->ev.need_ns ? p->ev.need_ns : c->down_after_ns;

	if (p->ev.stalled) {
		p->gap_run = 0;
	} else if (o->last_rx_ns && o->last_rx_ns != p->prev_rx_ns) {
		if ((uint64_t)p->gap_run * c->interval_ns >= need)
			p->gap_run = 0;
		for (unsigned int i = 0; i < p->gap_run; i++)
			p->gap_ratio += a * (1.0 - p->gap_ratio);
		p->gap_ratio -= a * p->gap_ratio;
		p->gap_run = 0;
	} else if (p->prev_rx_ns) {
		p->gap_run++;
	}
	p->prev_rx_ns = o->last_rx_ns;
}

static void measure(struct verdict_peer *p, const struct verdict_config *c,
		    const struct verdict_obs *o)
{
	struct verdict_evidence *ev = &p->ev;
	const struct verdict_sample *base;
	uint64_t need;
	bool full;

	count_gaps(p, c, o);
	need = verdict_need_ns(c, p->gap_ratio);
	ev->gap_ratio = p->gap_ratio;
	ev->need_ns = need;
	base = window_base(p, o->now_ns, need, &full);
	ev->window_ns = o->now_ns - base->t_ns;
	ev->probes_in_window = o->probes - base->probes;
	ev->left_in_window = o->left - base->left;
	ev->replied_in_window = o->replied - base->replied;
	ev->loss_ratio = 0;
	if (ev->left_in_window) {
		ev->loss_ratio = 1.0 - (double)ev->replied_in_window / ev->left_in_window;
		if (ev->loss_ratio < 0)
			ev->loss_ratio = 0;
	}
	ev->reply_age_ns = age(o->now_ns, o->last_reply_ns);
	ev->packet_age_ns = age(o->now_ns, o->last_rx_ns);
	ev->rtt_ns = o->rtt_ns;
	ev->srtt_ns = o->srtt_ns;
	/* A verdict needs a whole window probed on schedule since the last stall. */
	ev->judged =
	    full && base->t_ns >= p->resumed_ns && ev->probes_in_window >= VERDICT_MIN_PROBES;
	ev->local_fault = ev->packet_age_ns >= need && ev->probes_in_window &&
			  (!ev->left_in_window || o->no_carrier || o->no_route);
	/* Only what this host can see is its own: no route, no carrier. */
	p->local_cause = o->no_route || o->no_carrier;
}

static enum verdict_state next_state(const struct verdict_peer *p)
{
	const struct verdict_evidence *ev = &p->ev;

	/* A reply: up, whatever came before. */
	if (ev->reply_age_ns < ev->need_ns)
		return VERDICT_UP;
	/* No reply, but other traffic: alive. From DOWN this is a packet that came after
	 * the verdict (at that point nothing had come for the silence needed). */
	if (ev->packet_age_ns < ev->need_ns) {
		if (p->state == VERDICT_DOWN || p->state == VERDICT_LOCAL_FAULT || ev->judged)
			return VERDICT_PASSIVE;
		return p->state;
	}
	/* Silent: the peer's fault, or ours when the probes could not leave. */
	if (!ev->judged)
		return p->state;
	return ev->local_fault && p->local_cause ? VERDICT_LOCAL_FAULT : VERDICT_DOWN;
}

bool verdict_round(struct verdict_peer *p, const struct verdict_config *c,
		   const struct verdict_obs *o)
{
	uint64_t stall =
	    c->stall_after_ns ? c->stall_after_ns : verdict_default_stall(c->interval_ns);
	enum verdict_state next;

	p->ev.stalled = p->last_round_ns && o->now_ns - p->last_round_ns > stall;
	if (!p->last_round_ns || p->ev.stalled)
		p->resumed_ns = o->now_ns;
	p->last_round_ns = o->now_ns;
	push(p, o);
	measure(p, c, o);

	next = next_state(p);
	p->ev.state = next;
	if (next == p->state) {
		p->ev.since_ns = p->since_ns;
		return false;
	}
	p->ev.prev = p->state;
	p->state = next;
	p->since_ns = o->now_ns;
	p->ev.since_ns = o->now_ns;
	return true;
}

const char *verdict_state_name(enum verdict_state s)
{
	switch (s) {
	case VERDICT_UP:
		return "up";
	case VERDICT_PASSIVE:
		return "passive";
	case VERDICT_DOWN:
		return "down";
	case VERDICT_LOCAL_FAULT:
		return "local_fault";
	default:
		return "unknown";
	}
}

const char *verdict_liveness(enum verdict_state s)
{
	switch (s) {
	case VERDICT_UP:
		return "reply";
	case VERDICT_PASSIVE:
		return "passive";
	default:
		return "none";
	}
}
