// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The failover core's per-shard timers (fo_ops.timer): one event a shard, made for
 * the cluster file's shards at start and for a shard added at runtime. */
#include <errno.h>
#include <stdlib.h>
#include <event2/event.h>
#include "controller/ctl.h"

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

int ctl_shard_timer_add(struct ctl *c, int shard)
{
	struct shard_timer_arg *a;

	if (c->shard_timer[shard]) {
		evtimer_del(c->shard_timer[shard]);
		return 0;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->c = c;
	a->shard = shard;
	c->shard_timer[shard] = evtimer_new(c->base, on_shard_timer, a);
	if (!c->shard_timer[shard]) {
		free(a);
		return -ENOMEM;
	}
	return 0;
}

void ctl_shard_timers_free(struct ctl *c)
{
	for (int i = 0; c->shard_timer && i < ctl_shard_room(c); i++) {
		if (c->shard_timer[i]) {
			free(event_get_callback_arg(c->shard_timer[i]));
			event_free(c->shard_timer[i]);
		}
	}
	free(c->shard_timer);
	c->shard_timer = NULL;
}
