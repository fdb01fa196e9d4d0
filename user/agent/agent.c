// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* flatline agent: loads the process BPF programs, watches the local server by
 * PID and cgroup, and writes what the kernel reports to the event log. One
 * libevent loop: the ring buffer's epoll fd, signals and timers.
 *
 * This file: options, start-up (watches, prober, cluster links, capabilities), and
 * the loop; it registers every callback. The cluster file, read at start and on
 * SIGHUP, is agent_config.c; what the agent hears goes through agent_events.c, the
 * REPORT is agent_report.c, the write lease agent_lease.c, self-fencing
 * agent_fence.c, self-demotion agent_demote.c, Prometheus agent_metrics.c, and every
 * output (log lines, report kicks) agent_out.c; their layers: agent_layers.h. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <event2/event.h>
#include "common/tls.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/daemon.h"
#include "cmds.h"
#include "agent/agent_layers.h"

static const char agent_usage[] =
    "usage: flatline agent [-c FILE] [--node ID] [--watch-pid PID]... [--watch-cgroup PATH]...\n"
    "                      [--event-log PATH] [-v]\n"
    "\n"
    "  -c, --config FILE    the cluster file: watch, ping and report this node's server\n"
    "                       to the controller (without it: only the kernel watch)\n"
    "  --node ID            this node's id (default: the host name); pins go under\n"
    "                       " FL_PIN_ROOT "/ID/\n"
    "  --watch-pid PID      watch this process (repeatable)\n"
    "  --watch-cgroup PATH  watch every process in this cgroup v2 directory and below,\n"
    "                       including ones started later (repeatable)\n"
    "  --event-log PATH     event log (default " EVLOG_DEFAULT_PATH ")\n"
    "  --address IP, --redis HOST:PORT\n"
    "                       a node added at runtime (flatline node add), not in the\n"
    "                       cluster file: its host's address and its server\n"
    "  --key-file PATH      with --address: the node's key (hex, as `flatline node add`\n"
    "                       prints it), for a file without the cluster secret\n"
    "  --peer ID=IP         probe this peer with ICMP (repeatable; with -c, the other\n"
    "                       nodes of this node's shard are peers already): its\n"
    "                       reachability only, it never renews the write lease\n"
    "  --probe-interval-ms MS, --peer-down-after-ms MS\n"
    "                       override the cluster file's [agent] values\n"
    "  --metrics-listen HOST:PORT\n"
    "                       serve Prometheus metrics there (default [agent] metrics_listen)\n"
    "  -v, --verbose        more messages; twice for libbpf's own\n";

/* Peers: --peer flags, and with a cluster file the other nodes of our shard. */
static int start_probe(struct agent *a)
{
	struct probe_opts po = {.base = a->base,
				.node = a->node,
				.on_change = agent_on_peer_change,
				.on_route = agent_on_peer_route,
				.on_round_trip = agent_lease_on_round_trip,
				.ctx = a};
	char why[256];
	struct evrec r;
	int err;

	if (a->cfg) {
		po.src_addr = a->me->address;
		po.interval_ms = a->cfg->agent.probe_interval_ms;
		po.down_after_ms = a->cfg->agent.peer_down_after_ms;
	}
	if (a->probe_interval_ms)
		po.interval_ms = a->probe_interval_ms;
	if (a->peer_down_after_ms)
		po.down_after_ms = a->peer_down_after_ms;
	err = probe_open(&a->probe, &po);
	if (err)
		return err;
	for (int i = 0; i < a->npeers; i++) {
		err = probe_add_peer(a->probe, a->peer_ids[i], a->peer_addrs[i]);
		if (err) {
			pr_warn("failed to add peer %s=%s: %s\n", a->peer_ids[i], a->peer_addrs[i],
				strerror(-err));
			return err;
		}
	}
	if (a->cfg && a->me->shard >= 0) {
		const struct cfg_shard *s = &a->cfg->shards[a->me->shard];

		for (int i = 0; i < s->nnodes; i++) {
			const struct cfg_node *n = &a->cfg->nodes[s->nodes[i]];

			if (cfg_probe_warning(a->cfg, n, why, sizeof(why))) {
				pr_warn("%s:%d: [node \"%s\"] address: %s\n", a->cfg->path,
					n->address_line, n->id, why);
				evrec_begin(&r, NULL, a->node, "probe_warning");
				evrec_str(&r, "peer", n->id);
				evrec_str(&r, "addr", n->address);
				evrec_str(&r, "reason", why);
				agent_out_log(a, &r);
			}
			if (n == a->me)
				continue;
			err = probe_add_peer(a->probe, n->id, n->address);
			if (err && err != -EEXIST) {
				pr_warn("failed to add peer %s=%s: %s\n", n->id, n->address,
					strerror(-err));
				return err;
			}
		}
	}
	return probe_start(a->probe);
}

static bool wants_probe(const struct agent *a)
{
	return a->npeers > 0 ||
	       (a->cfg && a->me->shard >= 0 && a->cfg->shards[a->me->shard].nnodes > 1);
}

/* Every heartbeat: the lease's expiry and CLIENT LIST, and self-fencing. */
static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	agent_lease_tick(arg);
	agent_lease_poll_clients(arg, false);
	agent_fence_eval(arg);
}

/* TLS contexts from the cluster file (common/tls.h): to the controller when it has
 * tls_listen, to the server with [redis] tls = yes; NULL when plain. */
static int agent_tls(const struct cfg *c, SSL_CTX **ctl, SSL_CTX **srv)
{
	char err[600];

	*ctl = *srv = NULL;
	if (c->controller.tls) {
		*ctl = tls_client_ctx(c, "agent", &c->agent.tls, &c->controller.tls_files, err,
				      sizeof(err));
		if (!*ctl) {
			pr_warn("failed to set up TLS to the controller: %s\n", err);
			return -EINVAL;
		}
	}
	if (c->redis.tls) {
		*srv = tls_client_ctx(c, "redis", &c->redis.tls_files, NULL, err, sizeof(err));
		if (!*srv) {
			pr_warn("failed to set up TLS to the server: %s\n", err);
			SSL_CTX_free(*ctl);
			*ctl = NULL;
			return -EINVAL;
		}
	}
	return 0;
}

/* With a cluster file: the server monitor and the controller link. */
static int start_cluster(struct agent *a)
{
	static const struct srvmon_ops sops = {.changed = agent_on_srv_changed,
					       .connected = agent_lease_on_srv_connected,
					       .note = agent_on_srv_note,
					       .ping = agent_metrics_on_ping};
	static const struct reporter_ops rops = {.build = agent_report_build,
						 .event = agent_on_rep_event,
						 .answer = agent_on_rep_answer,
						 .admit = agent_on_rep_admit,
						 .interval_ms = agent_report_interval_ms,
						 .in_flight_max = agent_report_in_flight_max};
	const struct cfg *c = a->cfg;
	struct srvmon_opts so = {
	    .ep = a->me->redis,
	    .pidfile = a->me->pidfile,
	    .ping_interval_ms = c->agent.ping_interval_ms,
	    .hung_after = c->agent.hung_after,
	    .info_interval_ms = c->agent.heartbeat_ms,
	    .stop_grace_ms = c->agent.stop_grace_ms,
	    .busy_max_ms = c->agent.busy_max_ms,
	    .no_script_kill = a->shadow,
	    .sched = a->sw,
	};
	struct reporter_opts ro = {
	    .ep = *tls_controller_ep(c),
	    .node = a->node,
	    .secret = c->secret,
	    .key_hex = a->me->key,
	    .heartbeat_ms = c->agent.heartbeat_ms,
	};
	/* HA mode: every controller gets the reports (followers stay warm). */
	int nctl = c->etcd.enabled ? c->nctls : 1;

	struct timeval tick = fl_ms_tv(c->agent.heartbeat_ms);
	int err;

	err = agent_tls(c, &ro.tls, &so.tls);
	if (err)
		return err;
	so.tls_host = c->redis.tls_server_name;
	/* Its shard's credentials, else [redis]'s. */
	cfg_server_auth(c, a->me->shard, &so.user, &so.password);
	a->srv = srvmon_new(a->base, &so, &sops, a);
	for (a->nrep = 0; a->nrep < nctl; a->nrep++) {
		ro.ep = *tls_ctl_ep(c, a->nrep);
		a->rep[a->nrep] = reporter_new(a->base, &ro, &rops, a);
		if (!a->rep[a->nrep])
			break;
	}
	SSL_CTX_free(ro.tls); /* the links hold their references */
	SSL_CTX_free(so.tls);
	if (a->nrep < nctl)
		return -ENOMEM;
	a->heartbeat_ev = event_new(a->base, -1, EV_PERSIST, on_heartbeat, a);
	if (!a->srv || !a->heartbeat_ev)
		return -ENOMEM;
	a->ctl.ms = fl_mono_ms(); /* isolation is counted from start at the earliest */
	err = agent_fence_start(a);
	if (!err)
		err = agent_demote_start(a);
	if (!err)
		err = agent_lease_start(a);
	if (err)
		return err;
	srvmon_start(a->srv);
	for (int i = 0; i < a->nrep; i++)
		reporter_start(a->rep[i]);
	return event_add(a->heartbeat_ev, &tick);
}

static void on_ringbuf(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	int n;

	(void)fd;
	(void)what;
	n = proc_watch_consume(a->pw);
	if (n < 0)
		pr_warn("failed to read ring buffer: %s\n", strerror(-n));
}

static void on_sched_ringbuf(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	int n;

	(void)fd;
	(void)what;
	n = sched_watch_consume(a->sw);
	if (n < 0)
		pr_warn("failed to read ring buffer: %s\n", strerror(-n));
}

static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	agent_config_reload(arg);
}

/* Once a second: flush the log to disk and report new ring buffer drops. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	uint64_t drops = proc_watch_drops(a->pw);
	struct evrec r;

	(void)fd;
	(void)what;
	if (a->sw && sched_watch_drops(a->sw) != a->sched_drops_seen) {
		a->sched_drops_seen = sched_watch_drops(a->sw);
		pr_warn("sched ring buffer full: %llu stop events lost in all\n",
			(unsigned long long)a->sched_drops_seen);
	}
	if (drops != a->drops_seen) {
		evrec_begin(&r, NULL, a->node, "events_dropped");
		evrec_uint(&r, "dropped", drops - a->drops_seen);
		evrec_uint(&r, "total", drops);
		agent_out_log(a, &r);
		pr_warn("ring buffer full: %llu events lost\n",
			(unsigned long long)(drops - a->drops_seen));
		a->drops_seen = drops;
	}
	agent_lease_rescan(a);
	evlog_sync(a->log);
}

static int parse_pid(const char *s, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*pid = v;
	return 0;
}

static int parse_args(struct agent *a, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"node", required_argument, NULL, 'n'},
	    {"watch-pid", required_argument, NULL, 'p'},
	    {"watch-cgroup", required_argument, NULL, 'g'},
	    {"event-log", required_argument, NULL, 'l'},
	    {"peer", required_argument, NULL, 'P'},
	    {"probe-interval-ms", required_argument, NULL, 'I'},
	    {"peer-down-after-ms", required_argument, NULL, 'D'},
	    {"metrics-listen", required_argument, NULL, 'M'},
	    {"address", required_argument, NULL, 'a'},
	    {"redis", required_argument, NULL, 'r'},
	    {"key-file", required_argument, NULL, 'k'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	static char host[HOST_NAME_MAX + 1];
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 'n':
			a->node = optarg;
			break;
		case 'p':
			if (a->npids == AGENT_MAX_WATCH) {
				pr_warn("too many --watch-pid (at most %d)\n", AGENT_MAX_WATCH);
				return 2;
			}
			if (parse_pid(optarg, &a->pids[a->npids])) {
				pr_warn("--watch-pid %s: not a process id\n", optarg);
				return 2;
			}
			a->npids++;
			break;
		case 'g':
			if (a->ncgroups == AGENT_MAX_WATCH) {
				pr_warn("too many --watch-cgroup (at most %d)\n", AGENT_MAX_WATCH);
				return 2;
			}
			a->cgroups[a->ncgroups++] = optarg;
			break;
		case 'l':
			a->event_log = optarg;
			a->event_log_flag = true;
			break;
		case 'P': {
			char *eq = strchr(optarg, '=');

			if (a->npeers == AGENT_MAX_WATCH || !eq || eq == optarg || !eq[1]) {
				pr_warn("--peer %s: want ID=IPV4 (at most %d)\n", optarg,
					AGENT_MAX_WATCH);
				return 2;
			}
			*eq = '\0';
			a->peer_ids[a->npeers] = optarg;
			a->peer_addrs[a->npeers++] = eq + 1;
			break;
		}
		case 'I':
			if (daemon_parse_ms("--probe-interval-ms", optarg, 3600000,
					    &a->probe_interval_ms))
				return 2;
			break;
		case 'D':
			if (daemon_parse_ms("--peer-down-after-ms", optarg, 3600000,
					    &a->peer_down_after_ms))
				return 2;
			break;
		case 'M':
			a->metrics_flag = optarg;
			break;
		case 'a':
			a->rt_address = optarg;
			break;
		case 'r':
			a->rt_redis = optarg;
			break;
		case 'k':
			a->rt_key_file = optarg;
			break;
		case 'v':
			log_verbosity++;
			break;
		case 'h':
			fputs(agent_usage, stdout);
			return -1;
		default:
			fputs(agent_usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		pr_warn("unexpected argument '%s'\n", argv[optind]);
		fputs(agent_usage, stderr);
		return 2;
	}
	if (!a->node) {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "localhost");
		host[strcspn(host, ".")] = '\0';
		a->node = host;
	}
	if (fl_valid_node_id(a->node)) {
		pr_warn("--node %s: a node id is 1-64 letters, digits, '-' or '_'\n", a->node);
		return 2;
	}
	return 0;
}

/* What the agent watches, checked before anything is loaded. */
static int check_targets(struct agent *a)
{
	for (int i = 0; i < a->npids; i++) {
		if (!fl_pid_alive(a->pids[i])) {
			pr_warn("failed to watch pid %d: no such process\n", (int)a->pids[i]);
			return -ESRCH;
		}
	}
	for (int i = 0; i < a->ncgroups; i++) {
		int err = fl_cgroup_id(a->cgroups[i], &a->cgroup_ids[i]);

		if (err)
			return err;
	}
	return 0;
}

static int arm_watches(struct agent *a)
{
	struct evrec r;
	int err;

	for (int i = 0; i < a->ncgroups; i++) {
		err = proc_watch_watch_cgroup(a->pw, a->cgroups[i], &a->cgroup_ids[i]);
		if (err) {
			pr_warn("failed to watch cgroup %s: %s\n", a->cgroups[i], strerror(-err));
			return err;
		}
	}
	for (int i = 0; i < a->npids; i++) {
		err = proc_watch_watch_pid(a->pw, a->pids[i], FL_WATCH_PID);
		if (err) {
			pr_warn("failed to watch pid %d: %s\n", (int)a->pids[i], strerror(-err));
			return err;
		}
		/* It may have died between the check and the map update, unseen. */
		if (!fl_pid_alive(a->pids[i])) {
			proc_watch_unwatch_pid(a->pw, a->pids[i]);
			evrec_begin(&r, NULL, a->node, "proc_exit");
			evrec_int(&r, "pid", a->pids[i]);
			evrec_str(&r, "cause", "unknown: exited while the watch was being set up");
			agent_out_log(a, &r);
		}
	}
	return 0;
}

static void log_agent_start(struct agent *a)
{
	char caps[256];
	struct utsname u;
	struct evrec r;

	uname(&u);
	evrec_begin(&r, NULL, a->node, "agent_start");
	evrec_int(&r, "agent_pid", getpid());
	evrec_str(&r, "kernel", u.release);
	evrec_int(&r, "watch_pids", a->npids);
	evrec_int(&r, "watch_cgroups", a->ncgroups);
	evrec_str(&r, "pins", proc_watch_pin_dir(a->pw));
	if (a->cfg)
		evrec_bool(&r, "sched_state", a->sw != NULL);
	evrec_str(&r, "caps", caps_names(a->caps, caps, sizeof(caps)));
	agent_out_log(a, &r);
	if (a->log && evlog_pin(a->log, &r))
		pr_warn("failed to keep the agent_start record for new log segments\n");
	evlog_sync(a->log);
}

/* Refuses to start without what loading needs, naming what is missing. */
static int check_caps(const struct agent *a)
{
	uint64_t need = AGENT_LOAD_CAPS | (wants_probe(a) ? AGENT_PROBE_CAPS : 0) |
			(a->cfg && a->cfg->agent.lease_ms
			     ? CAPS_BIT(CAP_NET_ADMIN) | CAPS_BIT(CAP_SYS_PTRACE)
			     : 0),
		 eff;
	char names[256];
	int err = caps_get(&eff, NULL);

	if (err) {
		pr_warn("failed to read capabilities: %s\n", strerror(-err));
		return err;
	}
	if (eff & CAPS_BIT(CAP_SYS_ADMIN))
		eff |= AGENT_LOAD_CAPS; /* before Linux 5.8, CAP_SYS_ADMIN covered both */
	if ((eff & need) != need) {
		pr_warn("failed to start the agent: missing capabilities %s (run it as root or "
			"with them, as flatline-agent@.service does)\n",
			caps_names(need & ~eff, names, sizeof(names)));
		return -EPERM;
	}
	return 0;
}

/* Everything is loaded and attached: keep only what the agent still uses. */
static int drop_caps(struct agent *a)
{
	/* The write lease's maps and sockets (lease_watch) likewise, and the server's
	 * descriptors; opened parked (shadow mode heard) it keeps them to be armed. */
	uint64_t keep = a->lease ? AGENT_RUN_LEASE_CAPS : a->probe ? AGENT_RUN_PROBE_CAPS : 0, eff;

	/* Shadow mode with a lease to take when the controller says active: what opening
	 * it needs (loading and attaching the program, marking the server's sockets). */
	if (a->srv && a->shadow && a->cfg->agent.lease_ms)
		keep |= CAPS_BIT(CAP_PERFMON) | AGENT_RUN_LEASE_CAPS;
	char names[256];
	int err;

	err = caps_keep(keep);
	if (err) {
		pr_warn("failed to drop capabilities: %s\n", strerror(-err));
		return err;
	}
	err = caps_get(&eff, NULL);
	if (err)
		return err;
	a->caps = eff;
	pr_info("capabilities now: %s\n", caps_names(eff, names, sizeof(names)));
	return 0;
}

static int agent_run(struct agent *a)
{
	struct event *ev_rb = NULL, *ev_tick = NULL, *ev_hup = NULL, *ev_sched = NULL;
	struct daemon_stop stop = {};
	struct timeval tick = fl_ms_tv(AGENT_SYNC_MS);
	int err = -ENOMEM;

	a->base = event_base_new();
	if (!a->base)
		return -ENOMEM;
	ev_rb = event_new(a->base, proc_watch_epoll_fd(a->pw), EV_READ | EV_PERSIST, on_ringbuf, a);
	if (daemon_stop_on_signals(&stop, a->base))
		goto cleanup;
	ev_tick = event_new(a->base, -1, EV_PERSIST, on_tick, a);
	ev_hup = evsignal_new(a->base, SIGHUP, on_sighup, a);
	if (!ev_rb || !ev_tick || !ev_hup || event_add(ev_hup, NULL) || event_add(ev_rb, NULL) ||
	    event_add(ev_tick, &tick)) {
		pr_warn("failed to set up the event loop\n");
		goto cleanup;
	}
	if (a->sw) {
		ev_sched = event_new(a->base, sched_watch_epoll_fd(a->sw), EV_READ | EV_PERSIST,
				     on_sched_ringbuf, a);
		if (!ev_sched || event_add(ev_sched, NULL)) {
			pr_warn("failed to set up the event loop\n");
			goto cleanup;
		}
	}
	if (wants_probe(a)) {
		err = start_probe(a);
		if (err)
			goto cleanup;
	}
	if (a->cfg && start_cluster(a)) {
		pr_warn("failed to start the server monitor\n");
		err = -ENOMEM;
		goto cleanup;
	}
	err = agent_metrics_start(a);
	if (err)
		goto cleanup;
	err = drop_caps(a);
	if (err)
		goto cleanup;
	log_agent_start(a);
	pr_info("agent for node %s ready: %d pid(s), %d cgroup(s), pins in %s\n", a->node, a->npids,
		a->ncgroups, proc_watch_pin_dir(a->pw));
	{
		char status[256];

		snprintf(status, sizeof(status), "node %s: programs attached, %d peer(s)%s",
			 a->node, a->probe ? probe_npeers(a->probe) : 0,
			 a->cfg ? ", reporting to the controller" : "");
		err = daemon_notify_ready(a->base, status);
		if (err)
			goto cleanup;
	}
	/* Events that arrived before the loop started. */
	proc_watch_consume(a->pw);
	err = event_base_dispatch(a->base) < 0 ? -EIO : a->fatal;
	daemon_notify_stopping();
cleanup:
	if (ev_rb)
		event_free(ev_rb);
	daemon_stop_free(&stop);
	if (ev_tick)
		event_free(ev_tick);
	if (ev_sched)
		event_free(ev_sched);
	if (ev_hup)
		event_free(ev_hup);
	if (a->heartbeat_ev)
		event_free(a->heartbeat_ev);
	agent_metrics_close(a);
	/* The links first: a command pending on the monitor's is answered (NULL) into the
	 * glue as it goes, so the glue's state goes after them. */
	srvmon_free(a->srv);
	for (int i = 0; i < a->nrep; i++)
		reporter_free(a->rep[i]);
	agent_lease_close(a);
	agent_demote_free(a);
	agent_fence_free(a);
	probe_close(a->probe);
	event_base_free(a->base);
	return err;
}

int cmd_agent(int argc, char **argv)
{
	struct agent a = {.event_log = EVLOG_DEFAULT_PATH, .lock_fd = -1, .ctl_shadow = -1};
	struct proc_watch_opts po = {.cb = agent_on_proc_event, .ctx = &a};
	struct evrec r;
	int err;

	err = parse_args(&a, argc, argv);
	if (err)
		return err < 0 ? 0 : err;
	if (agent_out_open(&a))
		return 1;
	daemon_libbpf_messages();
	/* From here on every failure goes through cleanup: a.cfg may be loaded. */
	err = a.config ? agent_config_load(&a) : 0;
	if (err)
		goto cleanup;
	err = check_caps(&a);
	if (err)
		goto cleanup;
	err = check_targets(&a);
	if (err)
		goto cleanup;
	err = daemon_open_event_log(&a.log, a.event_log);
	if (err)
		goto cleanup;
	a.lock_fd = daemon_lock_node(a.node);
	if (a.lock_fd < 0) {
		err = a.lock_fd;
		goto cleanup;
	}
	po.node = a.node;
	po.cgroups = a.ncgroups > 0;
	err = proc_watch_open(&a.pw, &po);
	if (err)
		goto cleanup;
	if (a.cfg) {
		struct sched_watch_opts so = {
		    .node = a.node, .cb = agent_on_sched_event, .ctx = &a};

		/* Without it a silent server is judged by PING alone (cause unknown). */
		err = sched_watch_open(&a.sw, &so);
		if (err)
			pr_warn("failed to load the scheduler-state programs: %s; a silent server "
				"will be judged by PING alone\n",
				strerror(-err));
	}
	err = arm_watches(&a);
	if (err)
		goto cleanup;
	err = agent_run(&a);
	evrec_begin(&r, NULL, a.node, "agent_stop");
	evrec_str(&r, "reason", err ? "error" : "signal");
	agent_out_log(&a, &r);
cleanup:
	sched_watch_close(a.sw);
	proc_watch_close(a.pw);
	evlog_close(a.log);
	daemon_unlock_node(a.node, a.lock_fd);
	cfg_free(a.cfg);
	agent_out_close(&a);
	return err ? 1 : 0;
}
