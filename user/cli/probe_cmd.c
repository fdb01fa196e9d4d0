// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* flatline probe: the agent's peer prober alone, for operators and tests. Probes
 * the given peers with ICMP echo timed in the kernel and writes peer_up /
 * peer_passive / peer_down to the event log, as the agent does. Takes the node's
 * agent lock: it cannot run beside the agent of the same node. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/event.h>
#include <bpf/libbpf.h>
#include "cmds.h"
#include "common/daemon.h"
#include "common/event_log.h"
#include "common/log.h"
#include "kern/loader.h"
#include "agent/prober.h"

#define PROBE_SYNC_MS 1000

struct probe_cmd {
	const char *node;
	const char *event_log;
	const char *rtt_log;
	char *peers[PROBE_MAX_PEERS]; /* "ID=IP" as given */
	int npeers;
	int interval_ms, down_after_ms, duration_ms;
	enum icmp_watch_tc_mode tc_mode;

	struct event_base *base;
	struct prober *pr;
	struct evlog *log;
	FILE *rtt;
	int lock_fd;
	bool timed_out; /* --duration-ms elapsed */
};

static const char probe_usage[] =
    "usage: flatline probe --node ID --peer ID=IP... [--event-log PATH]\n"
    "                      [--probe-interval-ms N] [--peer-down-after-ms N]\n"
    "                      [--tc auto|tcx|clsact] [--rtt-log PATH] [--duration-ms N] [-v]\n"
    "\n"
    "Probe peers with ICMP echo timed in the kernel, as the agent does, and log\n"
    "peer_up / peer_passive / peer_down. Root. `flatline peers --node ID` shows the\n"
    "per-peer table meanwhile.\n"
    "\n"
    "  --node ID                 this node's id; pins go under " FL_PIN_ROOT "/ID/\n"
    "  --peer ID=IP              a peer to probe (repeatable)\n"
    "  --event-log PATH          event log (default " EVLOG_DEFAULT_PATH ")\n"
    "  --probe-interval-ms N     one echo per peer every N ms (default 25)\n"
    "  --peer-down-after-ms N    silence that makes a peer down (default 10 x interval)\n"
    "  --tc MODE                 tcx links, clsact filters, or auto (default; or "
    "$" ICMP_WATCH_TC_ENV ")\n"
    "  --rtt-log PATH            read replies in userspace too and write, per reply,\n"
    "                            'peer seq user_rtt_ns kernel_rtt_ns' (measurements)\n"
    "  --duration-ms N           stop after N ms (default: until SIGTERM/SIGINT)\n"
    "  -v, --verbose             more messages; twice for libbpf's own\n";

static void log_event(struct probe_cmd *c, struct evrec *r)
{
	daemon_log_event(c->log, c->event_log, r);
}

static void on_change(void *ctx, const struct probe_peer_info *peer)
{
	struct probe_cmd *c = ctx;
	struct evrec r;

	probe_evrec(&r, c->node, peer);
	log_event(c, &r);
}

static void on_route(void *ctx, const struct probe_peer_info *peer, int prev_ifindex)
{
	struct probe_cmd *c = ctx;
	struct evrec r;

	probe_route_evrec(&r, c->node, peer, prev_ifindex);
	log_event(c, &r);
}

static void on_reply(void *ctx, const struct probe_peer_info *peer, uint16_t seq,
		     uint64_t user_rtt_ns, uint64_t kernel_rtt_ns)
{
	struct probe_cmd *c = ctx;

	fprintf(c->rtt, "%s %u %llu %llu\n", peer->id, seq, (unsigned long long)user_rtt_ns,
		(unsigned long long)kernel_rtt_ns);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct probe_cmd *c = arg;

	(void)fd;
	(void)what;
	evlog_sync(c->log);
	if (c->rtt)
		fflush(c->rtt);
}

static void on_duration(evutil_socket_t fd, short what, void *arg)
{
	struct probe_cmd *c = arg;

	(void)fd;
	(void)what;
	c->timed_out = true;
	event_base_loopbreak(c->base);
}

static int parse_args(struct probe_cmd *c, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"node", required_argument, NULL, 'n'},
	    {"peer", required_argument, NULL, 'p'},
	    {"event-log", required_argument, NULL, 'l'},
	    {"probe-interval-ms", required_argument, NULL, 'i'},
	    {"peer-down-after-ms", required_argument, NULL, 'd'},
	    {"tc", required_argument, NULL, 't'},
	    {"rtt-log", required_argument, NULL, 'r'},
	    {"duration-ms", required_argument, NULL, 'D'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	int ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			c->node = optarg;
			break;
		case 'p':
			if (c->npeers == PROBE_MAX_PEERS) {
				pr_warn("too many --peer (at most %d)\n", PROBE_MAX_PEERS);
				return 2;
			}
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				pr_warn("--peer %s: expected ID=IP\n", optarg);
				return 2;
			}
			c->peers[c->npeers++] = optarg;
			break;
		case 'l':
			c->event_log = optarg;
			break;
		case 'i':
			if (daemon_parse_ms("--probe-interval-ms", optarg, 3600000,
					    &c->interval_ms))
				return 2;
			break;
		case 'd':
			if (daemon_parse_ms("--peer-down-after-ms", optarg, 3600000,
					    &c->down_after_ms))
				return 2;
			break;
		case 'D':
			if (daemon_parse_ms("--duration-ms", optarg, 3600000, &c->duration_ms))
				return 2;
			break;
		case 't':
			if (!strcmp(optarg, "auto")) {
				c->tc_mode = ICMP_WATCH_TC_AUTO;
			} else if (!strcmp(optarg, "tcx")) {
				c->tc_mode = ICMP_WATCH_TC_TCX;
			} else if (!strcmp(optarg, "clsact")) {
				c->tc_mode = ICMP_WATCH_TC_CLSACT;
			} else {
				pr_warn("--tc %s: expected auto, tcx or clsact\n", optarg);
				return 2;
			}
			break;
		case 'r':
			c->rtt_log = optarg;
			break;
		case 'v':
			log_verbosity++;
			break;
		case 'h':
			fputs(probe_usage, stdout);
			return -1;
		default:
			fputs(probe_usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		pr_warn("unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!c->node || fl_valid_node_id(c->node)) {
		pr_warn("--node: a node id of 1-64 letters, digits, '-' or '_' is needed\n");
		return 2;
	}
	if (!c->npeers) {
		pr_warn("no --peer given: nothing to probe\n");
		return 2;
	}
	return 0;
}

static int add_peers(struct probe_cmd *c)
{
	for (int i = 0; i < c->npeers; i++) {
		char *eq = strchr(c->peers[i], '=');
		int err;

		*eq = '\0';
		err = probe_add_peer(c->pr, c->peers[i], eq + 1);
		*eq = '=';
		if (err)
			return err;
	}
	return 0;
}

static void log_start(struct probe_cmd *c)
{
	struct evrec r;

	evrec_begin(&r, NULL, c->node, "probe_start");
	evrec_int(&r, "agent_pid", getpid());
	evrec_uint(&r, "echo_id", probe_echo_id(c->pr));
	evrec_str(&r, "tc", icmp_watch_mode_name(probe_tc_mode(c->pr)));
	evrec_int(&r, "peers", probe_npeers(c->pr));
	evrec_uint(&r, "probe_interval_ms", c->interval_ms ?: PROBE_DEFAULT_INTERVAL_MS);
	evrec_uint(&r, "peer_down_after_ms",
		   c->down_after_ms
		       ?: PROBE_DOWN_AFTER_ROUNDS * (c->interval_ms ?: PROBE_DEFAULT_INTERVAL_MS));
	evrec_str(&r, "pins", probe_pin_dir(c->pr));
	log_event(c, &r);
	evlog_sync(c->log);
}

static int run(struct probe_cmd *c)
{
	struct timeval tick = {PROBE_SYNC_MS / 1000, (PROBE_SYNC_MS % 1000) * 1000L};
	struct timeval dur = {c->duration_ms / 1000, (c->duration_ms % 1000) * 1000L};
	struct event *ev_tick = NULL, *ev_dur = NULL;
	struct daemon_stop stop = {};
	int err = -ENOMEM;

	if (daemon_stop_on_signals(&stop, c->base))
		goto cleanup;
	ev_tick = event_new(c->base, -1, EV_PERSIST, on_tick, c);
	ev_dur = event_new(c->base, -1, 0, on_duration, c);
	if (!ev_tick || !ev_dur || event_add(ev_tick, &tick) ||
	    (c->duration_ms && event_add(ev_dur, &dur))) {
		pr_warn("failed to set up the event loop\n");
		goto cleanup;
	}
	log_start(c);
	err = probe_start(c->pr);
	if (err) {
		pr_warn("failed to start probing: %s\n", strerror(-err));
		goto cleanup;
	}
	pr_info("probing %d peer(s) every %d ms (%s), pins in %s\n", probe_npeers(c->pr),
		c->interval_ms ?: PROBE_DEFAULT_INTERVAL_MS,
		icmp_watch_mode_name(probe_tc_mode(c->pr)), probe_pin_dir(c->pr));
	err = event_base_dispatch(c->base) < 0 ? -EIO : 0;
cleanup:
	daemon_stop_free(&stop);
	if (ev_tick)
		event_free(ev_tick);
	if (ev_dur)
		event_free(ev_dur);
	return err;
}

int cmd_probe(int argc, char **argv)
{
	struct probe_cmd c = {.event_log = EVLOG_DEFAULT_PATH, .lock_fd = -1};
	struct probe_opts po = {.on_change = on_change, .on_route = on_route, .ctx = &c};
	struct evrec r;
	int err;

	err = parse_args(&c, argc, argv);
	if (err)
		return err < 0 ? 0 : err;
	daemon_libbpf_messages();
	if (geteuid() != 0) {
		pr_warn("probe must run as root: it loads BPF programs and opens a raw socket\n");
		return 1;
	}
	if (daemon_open_event_log(&c.log, c.event_log))
		return 1;
	if (c.rtt_log) {
		c.rtt = fopen(c.rtt_log, "we");
		if (!c.rtt) {
			pr_warn("failed to open %s: %s\n", c.rtt_log, strerror(errno));
			err = -errno;
			goto cleanup;
		}
		po.on_reply = on_reply;
	}
	c.lock_fd = daemon_lock_node(c.node);
	err = c.lock_fd < 0 ? c.lock_fd : 0;
	if (err)
		goto cleanup;
	c.base = event_base_new();
	if (!c.base) {
		err = -ENOMEM;
		goto cleanup;
	}
	po.base = c.base;
	po.node = c.node;
	po.interval_ms = c.interval_ms;
	po.down_after_ms = c.down_after_ms;
	po.tc_mode = c.tc_mode;
	err = probe_open(&c.pr, &po);
	if (err)
		goto cleanup;
	err = add_peers(&c);
	if (err)
		goto cleanup;
	err = run(&c);
	evrec_begin(&r, NULL, c.node, "probe_stop");
	evrec_str(&r, "reason", err ? "error" : c.timed_out ? "duration" : "signal");
	log_event(&c, &r);
cleanup:
	probe_close(c.pr);
	if (c.base)
		event_base_free(c.base);
	if (c.rtt)
		fclose(c.rtt);
	evlog_close(c.log);
	daemon_unlock_node(c.node, c.lock_fd);
	return err ? 1 : 0;
}
