// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* flatline controller: start-up (the modules' states, bottom up), the struct
 * fo_ops table, the TILT tick, signals, reload and the `flatline controller`
 * command line. Decisions are the failover core's (fo_*.c); the I/O behind
 * struct fo_ops is in the ctl_*.c modules (ctl.h, top down). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/event.h>
#include <event2/listener.h>
#include "cmds.h"
#include "common/clock.h"
#include "common/daemon.h"
#include "common/log.h"
#include "controller/controller.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"
#include "controller/lease_admit.h"

/* The module's state (c->top): the TILT tick and the signals. */
struct ctl_top {
	struct event *tick, *sigint, *sigterm, *sighup;
};

static long long clk_mono(void *ctx)
{
	(void)ctx;
	return fl_mono_ms();
}

static long long clk_wall(void *ctx)
{
	(void)ctx;
	return fl_wall_ms();
}

static void op_timer(void *ctx, int shard, int ms)
{
	ctl_shard_timer_set(ctx, shard, ms);
}

static void op_promoted(void *ctx, int shard)
{
	struct ctl *c = ctx;
	struct fo_shard *s = &c->fo.shards[shard];

	ctl_metrics_promoted(c, s);
	/* Off the promotion's path: the state goes to a worker thread (HA: etcd holds it
	 * already, op_record; a primary found at a start is written here), DNS and the
	 * repoints go out at once. */
	if (c->ha)
		ctl_ha_save(c, shard);
	else
		ctl_state_save(c);
	if (s->primary >= 0)
		ctl_dns_promoted(c, shard, c->fo.nodes[s->primary].host);
}

/* Commands that change a server go out only while this controller may act (HA: the
 * leader with a live lease), and never in shadow mode. One withheld is not answered:
 * the failover state that sent it times out and aborts, as for a server that did not
 * answer. In shadow mode the core sends none (a failover ends before its promotion,
 * repairs are off: fo_shadow.c); this is the one gate all the same. */
static bool may_send(struct ctl *c, const char *what, int node)
{
	if (ctl_may_change(c))
		return true;
	pr_warn("not sending %s to %s: %s\n", what, c->fo.nodes[node].id,
		c->fo.shadow ? "shadow mode" : "not the leader with a live lease");
	return false;
}

static void op_pause(void *ctx, int node, int pause_ms, int timeout_ms)
{
	if (may_send(ctx, "CLIENT PAUSE", node))
		ctl_op_pause(ctx, node, pause_ms, timeout_ms);
}

static void op_unpause(void *ctx, int node)
{
	if (may_send(ctx, "CLIENT UNPAUSE", node))
		ctl_op_unpause(ctx, node);
}

static void op_promote(void *ctx, int node, int timeout_ms)
{
	if (may_send(ctx, "the promotion", node))
		ctl_op_promote(ctx, node, timeout_ms);
}

/* HA mode: the decision goes to etcd, fenced by the leader key, before the promotion
 * (ops->record); one controller writes its state file after it (op_promoted). */
static int op_record(void *ctx, int shard, int node, unsigned long long epoch)
{
	struct ctl *c = ctx;

	if (!c->ha)
		return 1;
	if (!may_send(c, "the promotion's record", node))
		return -EPERM;
	return ctl_ha_record(c, shard, node, epoch) ? -EIO : 0;
}

static void op_cluster_failover(void *ctx, int node, const char *option, int timeout_ms)
{
	if (may_send(ctx, "CLUSTER FAILOVER", node))
		ctl_op_cluster_failover(ctx, node, option, timeout_ms);
}

static void op_replicaof(void *ctx, int node, int master, int timeout_ms)
{
	if (may_send(ctx, "REPLICAOF", node))
		ctl_op_replicaof(ctx, node, master, timeout_ms);
}

/* Shadow mode: Sentinel's messages of a failover in progress are not published (no
 * failover is made here: subscribers hear +sdown, +odown and, when the servers name
 * another primary, +switch-master). */
static void op_publish(void *ctx, const char *channel, const char *msg)
{
	static const char *const acting[] = {"+new-epoch",	"+try-failover",
					     "+elected-leader", "+failover-state-",
					     "+selected-slave", "-failover-abort"};
	struct ctl *c = ctx;

	for (size_t i = 0; c->fo.shadow && i < sizeof(acting) / sizeof(acting[0]); i++)
		if (!strncmp(channel, acting[i], strlen(acting[i])))
			return;
	ctl_event_sentinel(ctx, channel, msg);
}

static const struct fo_ops ctl_ops = {
    .ping = ctl_op_ping,
    .info = ctl_op_info,
    .pause = op_pause,
    .unpause = op_unpause,
    .promote = op_promote,
    .record = op_record,
    .replicaof = op_replicaof,
    .cluster_failover = op_cluster_failover,
    .timer = op_timer,
    .event = ctl_event,
    .publish = op_publish,
    .promoted = op_promoted,
    .done = ctl_failover_done,
};

/* The event loop, with CTL_NPRIOS priorities: what every module adds runs at the
 * default one (CTL_PRIO_DEFAULT); a connection that used up its turn
 * (ctl_listen.c) drops to CTL_PRIO_LOW until a turn empties its input. At most
 * CTL_LOW_MAX_CALLBACKS callbacks of CTL_PRIO_LOW run before the loop polls
 * again, so agents, timers and every other client wait behind a few of them at
 * most, however many there are. */
static struct event_base *ctl_base_new(void)
{
	struct event_config *ec = event_config_new();
	struct event_base *b;

	if (!ec)
		return NULL;
	event_config_set_max_dispatch_interval(ec, NULL, CTL_LOW_MAX_CALLBACKS, CTL_PRIO_LOW);
	b = event_base_new_with_config(ec);
	event_config_free(ec);
	if (b && event_base_priority_init(b, CTL_NPRIOS)) {
		event_base_free(b);
		return NULL;
	}
	return b;
}

/* ---- TILT tick, signals ---- */

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;

	(void)fd;
	(void)what;
	fo_tilt_tick(&c->fo);
	ctl_cluster_tick(c);
	if (c->log)
		evlog_sync(c->log);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct ctl *c = arg;

	(void)what;
	pr_info("received %s, stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	/* HA: revoke the lease, another controller leads at once (a second signal
	 * while that runs: stop now). */
	if (!ctl_ha_stop(c))
		event_base_loopbreak(c->base);
}

/* What the controller applies while running (the rows of common/config_table.c with
 * live & CFG_P_CONTROLLER): the timing of its rules and of the DNS check, node keys
 * and the cluster secret (read at each HELLO and AUTH), agent_address_check, and
 * the agents' lease_ms and heartbeat_ms as it counts them: a lease wait counts the
 * longer of the old and new lease until each agent reports the length it runs with
 * (lease_wait.h), and an agent's silence the longer heartbeat. Everything else it
 * reads needs a restart, and is named so. */
static void reload_done(void *ctx)
{
	struct ctl *c = ctx;
	const struct cfg *k = c->cfg;

	c->fo.failover_block_ms = k->controller.failover_block_ms;
	c->fo.tilt_ms = k->controller.tilt_ms;
	c->fo.node_down_after_ms = k->controller.node_down_after_ms;
	if (c->fo.lease_ms_max < k->agent.lease_ms)
		c->fo.lease_ms_max = k->agent.lease_ms;
	if (c->fo.lease_ms_max < c->fo.lease_ms)
		c->fo.lease_ms_max = c->fo.lease_ms;
	c->fo.lease_ms = k->agent.lease_ms;
}

/* Before [agent] heartbeat_ms changes: the silence limit keeps the longer one. Before
 * [controller] mode changes: the switch itself. */
static bool reload_check(void *ctx, const struct cfg_key *k, const struct cfg *old,
			 const struct cfg *new, char *why, size_t whylen)
{
	struct ctl *c = ctx;

	/* [controller] mode: switched here, where it can still be refused (a failover
	 * in progress; going active, what `flatline cutover` would call not safe); the
	 * agents hear it in their next answer (ctl_mode.c). */
	if (k->sect == CFG_S_CONTROLLER && !strcmp(k->name, "mode"))
		return ctl_set_mode(c, new->controller.shadow, false, "reload", why, whylen) != 0;
	if (k->sect == CFG_S_AGENT && !strcmp(k->name, "heartbeat_ms") &&
	    c->silent_heartbeat_ms < old->agent.heartbeat_ms)
		c->silent_heartbeat_ms = old->agent.heartbeat_ms;
	if (k->sect == CFG_S_AGENT && !strcmp(k->name, "replica_heartbeat_ms") &&
	    c->silent_heartbeat_ms < old->agent.replica_heartbeat_ms)
		c->silent_heartbeat_ms = old->agent.replica_heartbeat_ms;
	return false;
}

static void ctl_reload(struct ctl *c)
{
	struct cfg_reload rr = {.proc = CFG_P_CONTROLLER,
				.who = "controller",
				.check = reload_check,
				.done = reload_done,
				.ctx = c};
	struct cfg *n = NULL;
	struct evrec r;
	char err[512];

	if (cfg_load(c->cfg->path, &n, err, sizeof(err))) {
		pr_warn(
		    "failed to reload the cluster file: %s; keeping the running configuration\n",
		    err);
		evrec_begin(&r, NULL, "controller", "config_rejected");
		evrec_str(&r, "error", err);
		ctl_log(c, &r);
		return;
	}
	cfg_reload_run(&rr, c->cfg, n, c->cfg->path);
	evrec_begin(&r, NULL, "controller", "config_reloaded");
	evrec_int(&r, "changed", rr.changed);
	evrec_str(&r, "needs_restart", rr.restart);
	evrec_str(&r, "applied", rr.applied);
	evrec_str(&r, "refused", rr.refused);
	ctl_log(c, &r);
	cfg_free(n);
}

static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	ctl_reload(arg);
}

static void make_myid(struct ctl *c)
{
	unsigned char b[20];
	FILE *f = fopen("/dev/urandom", "re");

	if (!f || fread(b, 1, sizeof(b), f) != sizeof(b)) {
		unsigned long long x =
		    (unsigned long long)fl_wall_ms() * 6364136223846793005ull ^ getpid();

		for (size_t i = 0; i < sizeof(b); i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[i] = (unsigned char)x;
		}
	}
	if (f)
		fclose(f);
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(c->myid + 2 * i, 3, "%02x", b[i]);
}

/* The modules' states, bottom up; each module's own struct behind its pointer in
 * struct ctl. Needs c->cfg and c->fo (the unit tests build a controller from these
 * alone, with c->base for the events). */
int ctl_modules_init(struct ctl *c)
{
	int rc = ctl_limits_init(c);

	if (!rc)
		rc = ctl_conn_init(c);
	if (!rc)
		rc = ctl_hooks_init(c, ctl_log);
	if (!rc)
		rc = ctl_pubsub_init(c);
	if (!rc)
		rc = ctl_event_init(c);
	if (!rc)
		rc = ctl_runtime_init(c);
	if (!rc)
		rc = ctl_clients_init(c);
	if (!rc)
		rc = ctl_client_auth_init(c);
	if (!rc)
		rc = ctl_sentinel_init(c);
	if (!rc)
		rc = ctl_cluster_init(c);
	if (rc)
		return rc;
	ctl_agents_init(c);
	return 0;
}

/* Top down; the connections are gone by now. */
void ctl_modules_fini(struct ctl *c)
{
	ctl_cluster_fini(c);
	ctl_sentinel_fini(c);
	ctl_client_auth_fini(c);
	ctl_clients_fini(c);
	ctl_runtime_fini(c);
	ctl_event_fini(c);
	ctl_pubsub_fini(c);
	ctl_hooks_stop(c);
	ctl_conn_fini(c);
	ctl_limits_fini(c);
}

int ctl_new(struct ctl **out, struct cfg *cfg, const struct ctl_opts *opts)
{
	/* Where this controller listens ([controller], or [controller "id"]'s in HA
	 * mode); tls_listen_ep NULL: no TLS */
	const struct cfg_endpoint *listen_ep = NULL, *tls_listen_ep = NULL;
	struct ctl *c = calloc(1, sizeof(*c));
	struct evlog_opts lo = {0};
	char err[1024];
	int rc;

	if (!c)
		return -ENOMEM;
	c->cfg = cfg;
	c->start_ms = fl_mono_ms();
	/* Membership changed at runtime: in the state file with one controller (read
	 * here, before anything has a slot per node), in etcd with several. */
	rc = ctl_members_prepare(cfg,
				 cfg->etcd.enabled	    ? NULL
				 : opts && opts->state_file ? opts->state_file
							    : cfg->controller.state_file,
				 err, sizeof(err));
	if (rc) {
		pr_warn("%s\n", err[0] ? err : strerror(-rc));
		pr_warn("refusing to start: move the damaged state file aside to start from the "
			"servers' view\n");
		goto fail;
	}
	rc = ctl_modules_init(c);
	if (rc)
		goto fail;
	ctl_fit_clients(c);
	snprintf(c->event_log, sizeof(c->event_log), "%s",
		 opts && opts->event_log ? opts->event_log : cfg->controller.event_log);
	snprintf(c->state_file, sizeof(c->state_file), "%s",
		 opts && opts->state_file ? opts->state_file : cfg->controller.state_file);
	if (cfg->etcd.enabled) {
		const struct cfg_ctl *k = opts && opts->id ? cfg_find_ctl(cfg, opts->id) : NULL;

		if (!k) {
			pr_warn(
			    "failed to start: %s has an [etcd] section: name this controller with "
			    "--id (one of its [controller \"ID\"] sections)%s%s\n",
			    cfg->path, opts && opts->id ? "; no such section: " : "",
			    opts && opts->id ? opts->id : "");
			rc = -EINVAL;
			goto fail;
		}
		snprintf(c->id, sizeof(c->id), "%s", k->id);
		listen_ep = k->listen_str[0] ? &k->listen : NULL; /* tls_listen only */
		tls_listen_ep = k->tls ? &k->tls_listen : NULL;
		c->state_file[0] = '\0'; /* the state lives in etcd */
	} else if (opts && opts->id) {
		pr_warn("failed to start: --id names a controller of an HA cluster, and %s has no "
			"[etcd] section\n",
			cfg->path);
		rc = -EINVAL;
		goto fail;
	} else {
		listen_ep = &cfg->controller.listen;
		tls_listen_ep = cfg->controller.tls ? &cfg->controller.tls_listen : NULL;
	}
	make_myid(c);
	ctl_myid_persist(c);
	rc = fo_cluster_init(&c->fo, cfg, &ctl_ops, c);
	if (rc == -E2BIG) {
		pr_warn("failed to set up the cluster: a shard of %s has more than %d nodes\n",
			cfg->path, FO_MAX_SHARD_NODES);
		goto fail;
	} else if (rc) {
		pr_warn("failed to set up the cluster: %s\n", strerror(-rc));
		goto fail;
	}
	c->fo.now_ms = clk_mono;
	c->fo.wall_ms = clk_wall;
	c->fo.starting = true;
	/* A previous process may have renewed a lease until it stopped: before now. */
	c->fo.others_answered_until_ms = c->fo.now_ms(c->fo.ctx);
	/* Lease admission grants under a term above its previous process's (HA mode: the
	 * leader's, from when it leads: ctl_ha.c). */
	fo_admit_set_term(&c->fo, cfg->etcd.enabled ? 0 : c->fo.wall_ms(c->fo.ctx));
	c->fo.shadow = cfg->controller.shadow || (opts && opts->shadow);
	if (c->fo.shadow)
		pr_info("shadow mode: judging and logging what would be done, changing nothing\n");
	if (c->fo.shadow && !cfg->controller.shadow)
		pr_info("--shadow: the agents hear it in the answers to their reports and give "
			"up their write lease; FLATLINE MODE active (or mode = active in %s and "
			"a reload) ends it\n",
			cfg->path);
	rc = ctl_runtime_load(c);
	if (rc < 0)
		pr_warn("failed to read %s.runtime: %s\n", c->state_file, strerror(-rc));
	rc = c->ha || cfg->etcd.enabled ? -ENOENT
					: fo_state_load(&c->fo, c->state_file, err, sizeof(err));
	if (rc == -ENOENT && cfg->etcd.enabled) {
		pr_info("HA mode: controller %s, the state in etcd under %s\n", c->id,
			cfg->etcd.prefix);
	} else if (rc == -ENOENT) {
		pr_info("no state file %s: a first start, topology from the servers\n",
			c->state_file);
	} else if (rc) {
		pr_warn("%s\n", err);
		pr_warn("refusing to start: move the damaged state file aside to start from the "
			"servers' view\n");
		goto fail;
	} else if (err[0]) {
		pr_warn("%s\n", err);
	}
	c->base = ctl_base_new();
	if (!c->base) {
		rc = -ENOMEM;
		goto fail;
	}
	if (!cfg->etcd.enabled) {
		rc = ctl_state_start(c);
		if (rc)
			goto fail;
	}
	lo.path = c->event_log;
	lo.max_bytes = EVLOG_DEFAULT_MAX_BYTES;
	lo.max_segments = EVLOG_DEFAULT_SEGMENTS;
	rc = evlog_open(&c->log, &lo);
	if (rc) {
		pr_warn("failed to open event log %s: %s\n", c->event_log, strerror(-rc));
		goto fail;
	}
	rc = ctl_shard_timers_init(c);
	if (rc)
		goto fail;
	for (int i = 0; i < cfg->nshards; i++) {
		rc = ctl_shard_timer_add(c, i);
		if (rc)
			goto fail;
	}
	c->nnodes = cfg->nnodes;
	rc = ctl_agents_start(c);
	if (rc)
		goto fail;
	rc = ctl_servers_start(c);
	if (rc)
		goto fail;
	rc = ctl_members_start(c);
	if (rc)
		goto fail;
	rc = ctl_members_scan_start(c);
	if (rc)
		goto fail;
	rc = ctl_spares_start(c);
	if (rc)
		goto fail;
	rc = ctl_discover_init(c);
	if (rc)
		goto fail;
	rc = ctl_hooks_start(c);
	if (rc)
		goto fail;
	rc = ctl_listen(c, listen_ep, tls_listen_ep);
	if (rc)
		goto fail;
	rc = ctl_dns_start(c);
	if (rc)
		goto fail;
	if (cfg->etcd.enabled) {
		rc = ctl_ha_start(c, ctl_listen_ha_addr(c));
		if (rc)
			goto fail;
	}
	rc = ctl_metrics_start(c);
	if (rc)
		goto fail;
	c->top = calloc(1, sizeof(*c->top));
	if (!c->top) {
		rc = -ENOMEM;
		goto fail;
	}
	c->top->tick = event_new(c->base, -1, EV_PERSIST, on_tick, c);
	c->top->sigint = evsignal_new(c->base, SIGINT, on_signal, c);
	c->top->sigterm = evsignal_new(c->base, SIGTERM, on_signal, c);
	c->top->sighup = evsignal_new(c->base, SIGHUP, on_sighup, c);
	if (!c->top->tick || !c->top->sigint || !c->top->sigterm || !c->top->sighup) {
		rc = -ENOMEM;
		goto fail;
	}
	{
		struct timeval tick = fl_ms_tv(CTL_TICK_MS);

		event_add(c->top->tick, &tick);
		event_add(c->top->sigint, NULL);
		event_add(c->top->sigterm, NULL);
		event_add(c->top->sighup, NULL);
	}
	*out = c;
	return 0;
fail:
	ctl_free(c);
	return rc;
}

int ctl_run(struct ctl *c)
{
	struct evrec r;

	signal(SIGPIPE, SIG_IGN);
	evrec_begin(&r, NULL, "controller", "controller_start");
	evrec_str(&r, "listen", c->listen_str);
	evrec_int(&r, "pid", getpid());
	evrec_str(&r, "myid", c->myid);
	evrec_str(&r, "mode", c->fo.shadow ? "shadow" : "active");
	if (c->ha) {
		evrec_str(&r, "controller_id", c->id);
		evrec_str(&r, "etcd_prefix", c->cfg->etcd.prefix);
	} else {
		evrec_str(&r, "state_file", c->state_file);
	}
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		char k[80];

		snprintf(k, sizeof(k), "state.%s", s->name);
		evrec_str(&r, k, s->primary >= 0 ? c->fo.nodes[s->primary].id : "");
	}
	ctl_log(c, &r);
	/* Topology from INFO replication of every node, in parallel. In HA mode the
	 * round runs when this controller becomes the leader. */
	if (!c->ha)
		ctl_discover_start(c);
	if (c->ha) {
		char status[400];

		/* A follower may never lead: it is ready once it listens. */
		snprintf(status, sizeof(status), "HA controller %s listening on %s", c->id,
			 c->listen_str);
		daemon_notify_ready(c->base, status);
	}
	event_base_dispatch(c->base);
	daemon_notify_stopping();
	evrec_begin(&r, NULL, "controller", "controller_stop");
	ctl_log(c, &r);
	return 0;
}

void ctl_free(struct ctl *c)
{
	if (!c)
		return;
	for (struct ctl_conn *k = c->conns, *next; k; k = next) {
		next = k->next;
		ctl_conn_free(k);
	}
	ctl_ha_free(c);
	ctl_state_stop(c);
	ctl_discover_fini(c);
	ctl_members_fini(c);
	ctl_servers_free(c);
	ctl_spares_fini(c);
	ctl_hooks_stop(c);
	ctl_agents_free(c);
	ctl_shard_timers_free(c);
	ctl_dns_free(c);
	ctl_metrics_free(c);
	ctl_listen_close(c);
	if (c->top) {
		struct event *ev[] = {c->top->tick, c->top->sigint, c->top->sigterm,
				      c->top->sighup};

		for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
			if (ev[i])
				event_free(ev[i]);
		free(c->top);
		c->top = NULL;
	}
	evlog_close(c->log);
	if (c->base)
		event_base_free(c->base);
	fo_cluster_free(&c->fo);
	ctl_modules_fini(c);
	free(c);
}

/* ---- `flatline controller` ---- */

static const char controller_usage[] =
    "usage: flatline controller -c FILE [--id ID] [--event-log PATH] [--state-file PATH]\n"
    "                           [--shadow] [--allow-root] [-v]\n"
    "\n"
    "  -c, --config FILE    the cluster file\n"
    "  --id ID              HA mode (an [etcd] section): this controller's [controller \"ID\"]\n"
    "  --event-log PATH     event log (default: [controller] event_log)\n"
    "  --state-file PATH    state file (default: [controller] state_file)\n"
    "  --shadow             judge and log what would be done, change nothing\n"
    "                       (as [controller] mode = shadow)\n"
    "  --allow-root         run even as root (it needs no privilege: run it as a user)\n"
    "  -v, --verbose        more messages (twice: every event on stderr)\n";

int cmd_controller(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"event-log", required_argument, NULL, 'e'},
	    {"state-file", required_argument, NULL, 's'},
	    {"id", required_argument, NULL, 'i'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"allow-root", no_argument, NULL, 'R'},
	    {"shadow", no_argument, NULL, 'S'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct ctl_opts o = {0};
	bool allow_root = false;
	const char *path = NULL;
	struct cfg *cfg = NULL;
	struct ctl *c = NULL;
	char err[512];
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "c:vh", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'e':
			o.event_log = optarg;
			break;
		case 's':
			o.state_file = optarg;
			break;
		case 'i':
			o.id = optarg;
			break;
		case 'v':
			log_verbosity++;
			break;
		case 'R':
			allow_root = true;
			break;
		case 'S':
			o.shadow = true;
			break;
		case 'h':
			fputs(controller_usage, stdout);
			return 0;
		default:
			fputs(controller_usage, stderr);
			return 2;
		}
	}
	if (!path || optind != argc) {
		fputs(controller_usage, stderr);
		return 2;
	}
	if (geteuid() == 0 && !allow_root) {
		pr_warn("failed to start the controller: refusing to run as root; it needs no "
			"privilege (run it as a user, as flatline-controller.service does, or pass "
			"--allow-root)\n");
		return 1;
	}
	rc = cfg_load(path, &cfg, err, sizeof(err));
	if (rc) {
		pr_warn("%s\n", err);
		return 1;
	}
	/* Clients authenticate with the cluster secret: the controller needs it. */
	if (!cfg->secret[0]) {
		pr_warn("%s: [cluster] secret: missing: the controller needs it (node keys are "
			"derived from it, clients AUTH with it)\n",
			path);
		cfg_free(cfg);
		return 1;
	}
	rc = ctl_new(&c, cfg, &o);
	if (rc) {
		cfg_free(cfg);
		return 1;
	}
	ctl_run(c);
	ctl_free(c);
	cfg_free(cfg);
	return 0;
}
