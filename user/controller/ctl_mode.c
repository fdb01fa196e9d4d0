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

/* The first reason not to go active, and how many there are. */
struct first_reason {
	char text[200];
	int n;
};

static void keep_first(void *ctx, const char *why)
{
	struct first_reason *f = ctx;

	if (!f->n++)
		snprintf(f->text, sizeof(f->text), "%s", why);
}

int ctl_set_mode(struct ctl *c, bool shadow, bool force, const char *by, char *why, size_t whylen)
{
	bool was = c->fo.shadow;
	struct first_reason f = {.n = 0};
	struct evrec r;
	int rc;

	if (was == shadow)
		return 0;
	/* Active would act at once on what the check finds (a primary down: a failover;
	 * a server in another role: a repair): not without FORCE. */
	if (!shadow && !force &&
	    fo_cutover_check(&c->fo, c->fo.now_ms(c->fo.ctx), keep_first, &f) > 0) {
		snprintf(why, whylen,
			 "not safe: %s%s (flatline cutover lists every reason; FLATLINE MODE "
			 "active FORCE switches anyway)",
			 f.text, f.n > 1 ? ", and more" : "");
		return -EAGAIN;
	}
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

/* FLATLINE MODE [active [FORCE]|shadow]: the mode (no argument), or set it (auth). */
void ctl_on_flatline_mode(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	char why[400], e[440], by[128];
	bool shadow, force = cmd->argc == 4 && !strcasecmp(cmd->argv[3], "FORCE");
	int rc;

	if (cmd->argc == 4 && !force) {
		resp_error_reply(out, "ERR usage: FLATLINE MODE [active [FORCE]|shadow]");
		return;
	}
	if (cmd->argc == 2) {
		resp_status(out, c->fo.shadow ? "shadow" : "active");
		return;
	}
	if (!strcasecmp(cmd->argv[2], "shadow")) {
		shadow = true;
	} else if (!strcasecmp(cmd->argv[2], "active")) {
		shadow = false;
	} else {
		resp_error_reply(out, "ERR usage: FLATLINE MODE [active [FORCE]|shadow]");
		return;
	}
	if (!(k->flags & CTL_C_AUTH)) {
		resp_error_reply(out, "NOAUTH Authentication required (AUTH <cluster secret>).");
		return;
	}
	snprintf(by, sizeof(by), "FLATLINE MODE%s from %s", force ? " FORCE" : "", k->peer);
	rc = ctl_set_mode(c, shadow, force, by, why, sizeof(why));
	if (rc) {
		snprintf(e, sizeof(e), "%s %s", rc == -EAGAIN ? "NOTSAFE" : "BUSY", why);
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
