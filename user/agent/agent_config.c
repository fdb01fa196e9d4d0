// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The agent's cluster file (agent_layers.h): read at start (agent_config_load) and
 * again on SIGHUP (agent_config_reload), where common/config_reload.c sorts each change
 * into applied, refused or needs a restart, and reload_done() hands what is applied to
 * the server monitor, the reporters, the heartbeat and the mode. A node added at
 * runtime (--address, --redis) has its [node] section added after the file's lines. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "common/clock.h"
#include "common/log.h"
#include "agent/agent_layers.h"

/* The cluster file; for a node added at runtime (--address, --redis), its [node]
 * section after the file's lines, with its key from --key-file if given (a file
 * without the cluster secret). */
static int load_file(struct agent *a, struct cfg **out, char *err, size_t errlen)
{
	char extra[1024], key[128] = "";
	FILE *f;
	size_t len;
	int rc;

	if (!a->rt_address && !a->rt_redis)
		return cfg_load(a->config, out, err, errlen);
	if (!a->rt_address || !a->rt_redis) {
		snprintf(err, errlen,
			 "--address and --redis go together (a node added at runtime)");
		return -EINVAL;
	}
	if (a->rt_key_file) {
		f = fopen(a->rt_key_file, "re");
		if (!f || !fgets(key, sizeof(key), f)) {
			snprintf(err, errlen, "--key-file %s: %s", a->rt_key_file,
				 f ? "empty" : strerror(errno));
			if (f)
				fclose(f);
			return -EINVAL;
		}
		fclose(f);
		len = strcspn(key, " \t\r\n");
		key[len] = '\0';
	}
	if (strpbrk(a->rt_address, "\r\n[]\"") || strpbrk(a->rt_redis, "\r\n\"") ||
	    strpbrk(key, "\r\n[]\"")) {
		snprintf(err, errlen, "--address, --redis, --key-file: not a value");
		return -EINVAL;
	}
	snprintf(extra, sizeof(extra), "\n[node \"%s\"]\naddress = %s\nredis = %s\n%s%s%s", a->node,
		 a->rt_address, a->rt_redis, key[0] ? "key = " : "", key, key[0] ? "\n" : "");
	rc = cfg_load_extra(a->config, extra, out, err, errlen);
	if (!rc && cfg_find_node(*out, a->node))
		cfg_find_node(*out, a->node)->runtime = true;
	return rc;
}

int agent_config_load(struct agent *a)
{
	char err[512];

	if (load_file(a, &a->cfg, err, sizeof(err))) {
		pr_warn("%s%s\n", err,
			a->rt_address ? " (with --address/--redis: is the node in the file "
					"already?)"
				      : "");
		return -EINVAL;
	}
	a->shadow = a->cfg->controller.shadow; /* until the controller says */
	a->me = cfg_find_node(a->cfg, a->node);
	if (!a->me) {
		pr_warn("node %s is not in %s: give the id of a [node \"...\"] with --node, or "
			"for a node added at runtime (flatline node add) --address and --redis\n",
			a->node, a->config);
		return -ENOENT;
	}
	if (!a->me->key[0] && !a->cfg->secret[0]) {
		pr_warn("%s: node %s has no key: set [node \"%s\"] key (flatline node-key prints "
			"it) or [cluster] secret\n",
			a->config, a->node, a->node);
		return -ENOKEY;
	}
	if (!a->event_log_flag)
		a->event_log = a->cfg->agent.event_log;
	return 0;
}

/* What the agent applies while running (the rows of common/config_table.c with
 * live & CFG_P_AGENT): hung_after, stop_grace_ms, busy_max_ms and heartbeat_ms go to
 * the server monitor, the reporters and the fence tick; a node key or the cluster
 * secret to the reporters, for their next connection; self_fence and
 * self_fence_after_ms are read at each evaluation. Everything else it reads needs
 * a restart, and is named so. */
static void reload_done(void *ctx)
{
	struct agent *a = ctx;
	const typeof(a->cfg->agent) *k = &a->cfg->agent;
	struct timeval tick = fl_ms_tv(k->heartbeat_ms);

	if (a->srv)
		srvmon_set_timing(a->srv, k->hung_after, k->stop_grace_ms, k->busy_max_ms,
				  k->heartbeat_ms);
	for (int i = 0; i < a->nrep; i++) {
		reporter_set_heartbeat(a->rep[i], k->heartbeat_ms);
		if (reporter_set_key(a->rep[i], a->cfg->secret, a->me->key))
			pr_warn("failed to derive node %s's key: keeping the one in use\n",
				a->node);
	}
	if (a->heartbeat_ev)
		event_add(a->heartbeat_ev, &tick);
	if (a->srv)
		agent_mode_apply(a, -1, NULL, 0); /* [controller] mode, until the controller says */
}

void agent_config_reload(struct agent *a)
{
	struct cfg_reload rr = {.proc = CFG_P_AGENT, .who = "agent", .done = reload_done, .ctx = a};
	struct cfg *n = NULL;
	struct evrec r;
	char err[512];

	if (!a->cfg) {
		pr_info("received SIGHUP: no cluster file to reload (started without -c)\n");
		return;
	}
	if (load_file(a, &n, err, sizeof(err))) {
		pr_warn(
		    "failed to reload the cluster file: %s; keeping the running configuration\n",
		    err);
		evrec_begin(&r, NULL, a->node, "config_rejected");
		evrec_str(&r, "error", err);
		agent_out_log(a, &r);
		return;
	}
	if (!cfg_find_node(n, a->node)) {
		pr_warn(
		    "failed to reload the cluster file: node %s is no longer in %s; keeping the "
		    "running configuration\n",
		    a->node, a->config);
		cfg_free(n);
		return;
	}
	cfg_reload_run(&rr, a->cfg, n, a->config);
	evrec_begin(&r, NULL, a->node, "config_reloaded");
	evrec_int(&r, "changed", rr.changed);
	evrec_str(&r, "needs_restart", rr.restart);
	evrec_str(&r, "applied", rr.applied);
	evrec_str(&r, "refused", rr.refused);
	agent_out_log(a, &r);
	cfg_free(n);
}
