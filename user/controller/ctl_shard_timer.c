// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failover core's per-shard timers (fo_ops.timer): one event a shard, made for
 * the cluster file's shards at start and for a shard added at runtime. */
#include <errno.h>
#include <stdlib.h>
#include <event2/event.h>
#include "common/clock.h"
#include "controller/ctl.h"

/* The module's state (c->shard_timers). */
struct ctl_shard_timers {
	struct event **ev; /* per shard slot (ctl_shard_room), NULL: none made */
};

struct shard_timer_arg {
	struct ctl *c;
	int shard;
};

static void on_shard_timer(evutil_socket_t fd, short what, void *arg)
{
	struct shard_timer_arg *a = arg;

	(void)fd;
	(void)what;
	fo_on_timer(&a->c->fo, &a->c->fo.shards[a->shard]);
}

int ctl_shard_timers_init(struct ctl *c)
{
	c->shard_timers = calloc(1, sizeof(*c->shard_timers));
	if (!c->shard_timers)
		return -ENOMEM;
	c->shard_timers->ev = calloc(ctl_shard_room(c) + 1, sizeof(struct event *));
	return c->shard_timers->ev ? 0 : -ENOMEM;
}

int ctl_shard_timer_add(struct ctl *c, int shard)
{
	struct event **ev = c->shard_timers->ev;
	struct shard_timer_arg *a;

	if (ev[shard]) {
		evtimer_del(ev[shard]);
		return 0;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->c = c;
	a->shard = shard;
	ev[shard] = evtimer_new(c->base, on_shard_timer, a);
	if (!ev[shard]) {
		free(a);
		return -ENOMEM;
	}
	return 0;
}

void ctl_shard_timer_set(struct ctl *c, int shard, int ms)
{
	struct event *ev = c->shard_timers->ev[shard];
	struct timeval tv = fl_ms_tv(ms < 0 ? 0 : ms);

	if (!ev)
		return;
	if (ms < 0)
		evtimer_del(ev);
	else
		evtimer_add(ev, &tv);
}

void ctl_shard_timers_free(struct ctl *c)
{
	struct ctl_shard_timers *t = c->shard_timers;

	if (!t)
		return;
	for (int i = 0; t->ev && i < ctl_shard_room(c); i++) {
		if (t->ev[i]) {
			free(event_get_callback_arg(t->ev[i]));
			event_free(t->ev[i]);
		}
	}
	free(t->ev);
	free(t);
	c->shard_timers = NULL;
}
