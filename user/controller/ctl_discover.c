// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Discovery: the INFO round of every node (at start, and when this controller
 * becomes the HA leader), then fo_discover on every shard and controller_ready.
 * Until the round is in (or CTL_DISCOVER_MS passed), the failover core observes
 * (fo.starting). Calls down only: ctl_servers.c (the INFO requests), ctl_event.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/daemon.h"
#include "common/log.h"
#include "controller/ctl.h"

struct ctl_discovery {
	int pending;	    /* nodes whose INFO has not answered yet */
	bool pending_round; /* an INFO round is out (start, or a new leader) */
	struct event *timer;
};

static void discover_finish(struct ctl *c)
{
	struct evrec r;

	if (!c->fo.starting || !c->discover->pending_round)
		return;
	c->discover->pending_round = false;
	evtimer_del(c->discover->timer);
	if (c->ha && !ctl_may_act(c))
		return; /* a follower (or a leader no more): observe */
	for (int i = 0; i < c->fo.nshards; i++)
		fo_discover(&c->fo, &c->fo.shards[i]);
	c->fo.starting = false;
	c->fo.acting_since_ms = c->fo.now_ms(c->fo.ctx);
	evrec_begin(&r, NULL, "controller", "controller_ready");
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		char k[80];

		snprintf(k, sizeof(k), "primary.%s", s->name);
		evrec_str(&r, k, s->primary >= 0 ? c->fo.nodes[s->primary].id : "");
	}
	ctl_log(c, &r);
	if (c->log && evlog_pin(c->log, &r))
		pr_warn("failed to keep the controller_start record for new log segments\n");
	pr_info("ready: %d shard(s), listening on %s\n", c->fo.nshards, c->listen_str);
	{
		char status[400];

		snprintf(status, sizeof(status), "ready: %d shard(s), listening on %s",
			 c->fo.nshards, c->listen_str);
		daemon_notify_ready(c->base, status);
	}
	fo_evaluate(&c->fo);
}

static void discover_one_done(struct ctl *c)
{
	if (c->discover->pending > 0 && --c->discover->pending == 0)
		discover_finish(c);
}

static void on_discover_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	discover_finish(arg);
}

void ctl_discover_start(struct ctl *c)
{
	struct timeval disc = fl_ms_tv(CTL_DISCOVER_MS);

	c->discover->pending_round = true;
	c->discover->pending = c->fo.nnodes;
	evtimer_add(c->discover->timer, &disc);
	for (int i = 0; i < c->fo.nnodes; i++)
		ctl_server_discover(c, i, CTL_DISCOVER_MS - 100, discover_one_done);
	if (!c->fo.nnodes)
		discover_finish(c);
}

int ctl_discover_init(struct ctl *c)
{
	c->discover = calloc(1, sizeof(*c->discover));
	if (!c->discover)
		return -ENOMEM;
	c->discover->timer = evtimer_new(c->base, on_discover_timer, c);
	return c->discover->timer ? 0 : -ENOMEM;
}

void ctl_discover_fini(struct ctl *c)
{
	if (!c->discover)
		return;
	if (c->discover->timer)
		event_free(c->discover->timer);
	free(c->discover);
	c->discover = NULL;
}
