// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The agent's outputs, the bottom of its own files: every event line goes through
 * agent_out_log (the event log, and flatline_agent_events_total by kind), every
 * "report now" through agent_out_kick. Calls nothing of the agent above it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/daemon.h"
#include "agent/agent_layers.h"

#define OUT_MAX_KINDS 64

struct agent_out {
	struct {
		char kind[32];
		uint64_t n;
	} counts[OUT_MAX_KINDS]; /* in the order first seen */
	int nkinds;
};

int agent_out_open(struct agent *a)
{
	a->out = calloc(1, sizeof(*a->out));
	return a->out ? 0 : -ENOMEM;
}

/* flatline_agent_events_total{kind}: the kind as evrec_begin() was given it. */
static void count_event(struct agent_out *o, const struct evrec *r)
{
	size_t n = strlen(r->kind);
	int i;

	if (!n || n >= sizeof(o->counts[0].kind))
		return;
	for (i = 0; i < o->nkinds; i++)
		if (!strcmp(o->counts[i].kind, r->kind))
			break;
	if (i == o->nkinds) {
		if (i == OUT_MAX_KINDS)
			return;
		memcpy(o->counts[i].kind, r->kind, n + 1);
		o->nkinds++;
	}
	o->counts[i].n++;
}

void agent_out_log(struct agent *a, struct evrec *r)
{
	daemon_log_event(a->log, a->event_log, r);
	if (a->out)
		count_event(a->out, r);
}

void agent_out_kick(struct agent *a)
{
	for (int i = 0; i < a->nrep; i++)
		reporter_kick(a->rep[i]);
}

const char *agent_out_count(const struct agent *a, int i, uint64_t *n)
{
	if (!a->out || i < 0 || i >= a->out->nkinds)
		return NULL;
	*n = a->out->counts[i].n;
	return a->out->counts[i].kind;
}

void agent_out_close(struct agent *a)
{
	free(a->out);
	a->out = NULL;
}
