// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The event outbox, as Redis Sentinel's sentinelEvent(): every event of the
 * controller goes out here, and nothing else fans one out. An event is written to
 * the event log, published on flatline.<kind> to the subscribers, looked at by
 * SENTINEL SIMULATE-FAILURE, and then something has changed (ctl_changed): the
 * held SENTINEL questions look again. A Sentinel message (+switch-master …) is
 * published on its own channel and goes to the notification scripts.
 *
 *   ctl_event()          fo_ops.event, HA and DNS events: log, publish, simulate,
 *                        changed
 *   ctl_log()      a record of the controller's own (agent_connected,
 *                        config_set …): log, changed
 *   ctl_event_sentinel() fo_ops.publish: publish, scripts
 *
 * Calls down only: ctl_pubsub.c, ctl_hooks.c, ctl_hold.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/log.h"
#include "controller/ctl.h"

struct ctl_events {
	unsigned simulate; /* SENTINEL SIMULATE-FAILURE: CTL_SIM_* */
};

int ctl_event_init(struct ctl *c)
{
	c->events = calloc(1, sizeof(*c->events));
	return c->events ? 0 : -ENOMEM;
}

void ctl_event_fini(struct ctl *c)
{
	free(c->events);
	c->events = NULL;
}

void ctl_event_simulate(struct ctl *c, unsigned flags)
{
	c->events->simulate = flags;
}

unsigned ctl_event_simulated(const struct ctl *c)
{
	return c->events->simulate;
}

/* Something changed (an event was logged, or a change made without one): the
 * questions held for a change look again, on the next loop turn. The one place that
 * wakes them. */
void ctl_changed(struct ctl *c)
{
	ctl_hold_wake(c);
}

void ctl_log(struct ctl *c, struct evrec *r)
{
	int err;

	ctl_changed(c);
	if (!c->log)
		return;
	err = evlog_write(c->log, r);
	if (err)
		pr_warn("failed to write event log %s: %s\n", c->event_log, strerror(-err));
}

/* SENTINEL SIMULATE-FAILURE: the controller exits right after the event. */
static void simulate(struct ctl *c, const char *kind)
{
	unsigned f = c->events->simulate;

	if (((f & CTL_SIM_CRASH_AFTER_ELECTION) && !strcmp(kind, "failover_start")) ||
	    ((f & CTL_SIM_CRASH_AFTER_PROMOTION) && !strcmp(kind, "promoted"))) {
		pr_warn("SIMULATE-FAILURE: exiting after %s\n", kind);
		_exit(99);
	}
}

void ctl_event(void *ctx, const char *kind, struct evrec *r)
{
	struct ctl *c = ctx;
	char chan[64], line[EVREC_MAX];
	size_t n;

	evrec_end(r);
	snprintf(line, sizeof(line), "%s", r->buf);
	n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	if (log_verbosity >= LOG_LVL_DEBUG)
		pr_debug("event %s\n", line);
	ctl_log(c, r);
	snprintf(chan, sizeof(chan), "flatline.%.50s", kind);
	ctl_pubsub_publish(c, chan, line);
	simulate(c, kind);
}

void ctl_event_sentinel(void *ctx, const char *channel, const char *msg)
{
	struct ctl *c = ctx;

	if (strncmp(channel, "flatline.", 9))
		ctl_hooks_event(c, channel, msg);
	ctl_pubsub_publish(c, channel, msg);
}
