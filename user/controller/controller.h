/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The controller daemon (`flatline controller`): one libevent loop serving agents
 * (HELLO/REPORT, docs/protocol.md) and Sentinel-compatible clients on one listen
 * address, talking to the servers through redis_link.c, deciding with the fo_*.c core. */
#ifndef FL_CONTROLLER_H
#define FL_CONTROLLER_H

#include <stdbool.h>

struct ctl;
struct cfg;

struct ctl_opts {
	const char *event_log;	/* NULL: [controller] event_log */
	const char *state_file; /* NULL: [controller] state_file */
	const char *id;		/* HA mode: this controller's [controller "id"] */
};

/* Loads the state file, binds the listen address, starts the first INFO round.
 * -errno with a message on stderr ("failed to <verb> <object>: <reason>"). */
int ctl_new(struct ctl **out, struct cfg *cfg, const struct ctl_opts *opts);
/* Runs the loop until SIGINT/SIGTERM. */
int ctl_run(struct ctl *c);
void ctl_free(struct ctl *c);

#endif
