// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The controller's mode while it runs (docs/sentinel.md, "Cutover"): shadow to
 * active and back without a restart, by a reload of [controller] mode or by
 * FLATLINE MODE; and FLATLINE CUTOVER, whether active may begin now without
 * acting at once (fo_cutover_check). The agents hear the mode in every answer to
 * their REPORT (ctl_agents.c) and take or give up their write lease. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"

int ctl_set_mode(struct ctl *c, bool shadow, const char *by, char *why, size_t whylen)
{
	bool was = c->fo.shadow;
	struct evrec r;
	int rc;

	if (was == shadow)
		return 0;
	rc = fo_shadow_set(&c->fo, shadow);
	if (rc) {
		snprintf(why, whylen, "a failover is in progress: try again when it has ended");
		return rc;
	}
	pr_info("mode %s (was %s, by %s)%s\n", shadow ? "shadow" : "active",
		was ? "shadow" : "active", by,
		shadow ? ": judging and logging what would be done, changing nothing"
		       : ": acting; the agents take their write lease at their next report");
	evrec_begin(&r, NULL, "controller", "mode_changed");
	evrec_str(&r, "mode", shadow ? "shadow" : "active");
	evrec_str(&r, "was", was ? "shadow" : "active");
	evrec_str(&r, "by", by);
	ctl_log(c, &r);
	return 0;
}

/* FLATLINE MODE [active|shadow]: the mode (no argument), or set it (auth). */
void ctl_on_flatline_mode(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	char why[160], e[200], by[128];
	bool shadow;

	if (cmd->argc == 2) {
		resp_status(out, c->fo.shadow ? "shadow" : "active");
		return;
	}
	if (!strcasecmp(cmd->argv[2], "shadow")) {
		shadow = true;
	} else if (!strcasecmp(cmd->argv[2], "active")) {
		shadow = false;
	} else {
		resp_error_reply(out, "ERR usage: FLATLINE MODE [active|shadow]");
		return;
	}
	if (!(k->flags & CTL_C_AUTH)) {
		resp_error_reply(out, "NOAUTH Authentication required (AUTH <cluster secret>).");
		return;
	}
	snprintf(by, sizeof(by), "FLATLINE MODE from %s", k->peer);
	if (ctl_set_mode(c, shadow, by, why, sizeof(why))) {
		snprintf(e, sizeof(e), "BUSY %s", why);
		resp_error_reply(out, e);
		return;
	}
	resp_status(out, "OK");
}

static void add_reason(void *ctx, const char *why)
{
	struct evbuffer *b = ctx;

	resp_str(b, why);
}

/* FLATLINE CUTOVER: an array, the mode then every reason not to switch to active
 * now (none: safe). */
void ctl_on_flatline_cutover(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	long long now = c->fo.now_ms(c->fo.ctx);
	int n;

	(void)cmd;
	n = fo_cutover_check(&c->fo, now, NULL, NULL);
	if (c->ha && !ctl_may_act(c))
		n++;
	resp_array(out, 1 + n);
	resp_str(out, c->fo.shadow ? "shadow" : "active");
	if (c->ha && !ctl_may_act(c))
		resp_str(out, "this controller is not the leader: ask the leader");
	fo_cutover_check(&c->fo, now, add_reason, out);
}
