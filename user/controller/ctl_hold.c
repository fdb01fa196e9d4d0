// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A question held while something changes: a connection whose SENTINEL question
 * would be answered with a primary in the middle of a change waits, reading
 * nothing behind it, until the event outbox says that something changed
 * (ctl_hold_wake, from ctl_event.c) and the question no longer wants to wait, or
 * CTL_HOLD_MAX_MS at most; then it is answered. Which questions wait and how they
 * are answered is ctl_sentinel.c's (registered once, ctl_hold_init). Nothing
 * polls: each held question has one timer, and a wake looks again on the next
 * loop turn, when the change is whole. A held question is a connection role. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include "common/clock.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"

#define CTL_HOLD_MAX_MS 1000

struct ctl_holds {
	int nheld; /* connections with a question held */
	bool (*wanted)(struct ctl *c, const struct resp_cmd *cmd);
	void (*answer)(struct ctl_conn *k, struct resp_cmd *cmd);
};

static void on_hold(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_conn *k = arg;
	struct resp_cmd cmd;

	(void)fd;
	(void)what;
	long long now = fl_mono_ms();

	if (now < k->hold_until_ms && k->ctl->holds->wanted(k->ctl, &k->held)) {
		struct timeval tv = fl_ms_tv(k->hold_until_ms - now);

		evtimer_add(k->hold_ev, &tv);
		return;
	}
	cmd = k->held;
	memset(&k->held, 0, sizeof(k->held));
	k->ctl->holds->nheld--;
	k->ctl->holds->answer(k, &cmd);
	resp_cmd_free(&cmd);
	ctl_conn_resume(k);
}

/* Takes cmd (left empty for the caller to free) and answers it later; false when
 * it cannot wait (no memory): answered now. */
bool ctl_hold(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct timeval tv = fl_ms_tv(CTL_HOLD_MAX_MS);

	if (!k->hold_ev)
		k->hold_ev = evtimer_new(k->ctl->base, on_hold, k);
	if (k->hold_ev)
		ctl_conn_role(k, CTL_ROLE_HELD, true); /* its event goes with the connection */
	if (!k->hold_ev || evtimer_add(k->hold_ev, &tv))
		return false;
	k->held = *cmd;
	memset(cmd, 0, sizeof(*cmd));
	k->ctl->holds->nheld++;
	k->hold_until_ms = fl_mono_ms() + CTL_HOLD_MAX_MS;
	k->flags |= CTL_C_WAITING;
	return true;
}

void ctl_hold_wake(struct ctl *c)
{
	if (!c->holds || !c->holds->nheld)
		return;
	for (struct ctl_conn *k = c->conns; k; k = k->next)
		if (k->held.argc && k->hold_ev)
			event_active(k->hold_ev, EV_TIMEOUT, 0);
}

/* The role's end (ctl_conn_free). */
static void ctl_hold_free(struct ctl_conn *k)
{
	if (k->hold_ev)
		event_free(k->hold_ev);
	k->hold_ev = NULL;
	if (k->held.argc)
		k->ctl->holds->nheld--;
	resp_cmd_free(&k->held);
}

int ctl_hold_init(struct ctl *c, bool (*wanted)(struct ctl *c, const struct resp_cmd *cmd),
		  void (*answer)(struct ctl_conn *k, struct resp_cmd *cmd))
{
	c->holds = calloc(1, sizeof(*c->holds));
	if (!c->holds)
		return -ENOMEM;
	c->holds->wanted = wanted;
	c->holds->answer = answer;
	ctl_conn_role_register(c, CTL_ROLE_HELD, ctl_hold_free);
	return 0;
}

void ctl_hold_fini(struct ctl *c)
{
	free(c->holds);
	c->holds = NULL;
}
