// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The agent's Prometheus metrics (metrics_listen): the PING histogram kept here,
 * the rest asked at scrape time of the outputs (events by kind), the fencing glue,
 * the monitor, the prober and the pinned maps. */
#include <errno.h>
#include <stdlib.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/version.h"
#include "agent/agent_layers.h"

struct agent_metrics {
	struct metrics *m;
	struct metrics_hist ping_hist; /* PING round trips, seconds */
};

void agent_metrics_on_ping(void *ctx, int64_t rtt_ns)
{
	struct agent *a = ctx;

	if (a->metrics)
		metrics_hist_observe(&a->metrics->ping_hist, rtt_ns / 1e9);
}

static void fill_metrics(void *ctx, struct evbuffer *b)
{
	static const enum srv_proc states[] = {SRV_UNKNOWN, SRV_UP,   SRV_DOWN,
					       SRV_HUNG,    SRV_BUSY, SRV_LOADING};
	struct agent *a = ctx;
	const char *kind;
	uint64_t n;

	metrics_head(b, "flatline_build_info", "gauge", "flatline's version, and which process.");
	metrics_sample(b, "flatline_build_info", 1, "version", fl_version, "process", "agent",
		       "node", a->node, METRICS_END);
	metrics_head(b, "flatline_agent_events_total", "counter",
		     "Events written to the event log, by kind.");
	for (int i = 0; (kind = agent_out_count(a, i, &n)); i++)
		metrics_sample_u64(b, "flatline_agent_events_total", n, "kind", kind, METRICS_END);
	metrics_head(b, "flatline_agent_ringbuf_drops_total", "counter",
		     "Kernel events lost because the ring buffer was full.");
	metrics_sample_u64(b, "flatline_agent_ringbuf_drops_total", proc_watch_drops(a->pw),
			   METRICS_END);
	metrics_head(b, "flatline_agent_capabilities", "gauge",
		     "The agent's effective capability set once running, as a bit mask.");
	metrics_sample_u64(b, "flatline_agent_capabilities", a->caps, METRICS_END);
	if (a->srv) {
		const struct srv_state *st = srvmon_state(a->srv);

		metrics_head(b, "flatline_agent_ping_duration_seconds", "histogram",
			     "PING round trips to the local server.");
		metrics_hist_write(b, "flatline_agent_ping_duration_seconds",
				   &a->metrics->ping_hist, NULL, NULL);
		metrics_head(b, "flatline_agent_server_state", "gauge",
			     "1 for the local server's current state.");
		for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
			metrics_sample(b, "flatline_agent_server_state", st->proc == states[i],
				       "state", srv_proc_name(states[i]), METRICS_END);
		metrics_head(b, "flatline_agent_server_primary", "gauge",
			     "1 when the local server says it is a primary.");
		metrics_sample(b, "flatline_agent_server_primary",
			       st->have_info && st->info.role == INFO_ROLE_MASTER, METRICS_END);
		metrics_head(b, "flatline_agent_fenced", "gauge",
			     "1 while self-fencing pauses this primary's writes.");
		metrics_sample(b, "flatline_agent_fenced", agent_fence_fenced(a), METRICS_END);
		metrics_head(b, "flatline_agent_controller_last_answer_seconds", "gauge",
			     "Time since the controller last answered (the lease's age).");
		metrics_sample(b, "flatline_agent_controller_last_answer_seconds",
			       (fl_mono_ms() - a->ctl.ms) / 1e3, METRICS_END);
		metrics_head(b, "flatline_agent_controller_epoch", "gauge",
			     "The epoch in the controller's last answer.");
		metrics_sample(b, "flatline_agent_controller_epoch", (double)a->ctl.epoch,
			       METRICS_END);
	}
	if (!a->probe)
		return;
	metrics_head(b, "flatline_agent_peer_up", "gauge",
		     "1 when the peer is up or passive, 0 when down or unknown.");
	for (int i = 0; i < probe_npeers(a->probe); i++) {
		const struct probe_peer_info *pi = probe_peer(a->probe, i);

		metrics_sample(b, "flatline_agent_peer_up",
			       pi->ev.state == VERDICT_UP || pi->ev.state == VERDICT_PASSIVE,
			       "peer", pi->id, METRICS_END);
	}
	metrics_head(
	    b, "flatline_agent_peer_rtt_seconds", "gauge",
	    "The last echo round trip to the peer, timed in the kernel (tc egress to ingress).");
	for (int i = 0; i < probe_npeers(a->probe); i++) {
		const struct probe_peer_info *pi = probe_peer(a->probe, i);

		if (pi->st.replied)
			metrics_sample(b, "flatline_agent_peer_rtt_seconds",
				       pi->st.rtt_last_ns / 1e9, "peer", pi->id, METRICS_END);
	}
	metrics_head(b, "flatline_agent_peer_probes_sent_total", "counter",
		     "Echo requests that left this host toward the peer (seen at tc egress).");
	for (int i = 0; i < probe_npeers(a->probe); i++)
		metrics_sample_u64(b, "flatline_agent_peer_probes_sent_total",
				   probe_peer(a->probe, i)->st.sent, "peer",
				   probe_peer(a->probe, i)->id, METRICS_END);
	metrics_head(b, "flatline_agent_peer_probes_replied_total", "counter",
		     "Echo replies from the peer matched to a request.");
	for (int i = 0; i < probe_npeers(a->probe); i++)
		metrics_sample_u64(b, "flatline_agent_peer_probes_replied_total",
				   probe_peer(a->probe, i)->st.replied, "peer",
				   probe_peer(a->probe, i)->id, METRICS_END);
}

int agent_metrics_start(struct agent *a)
{
	struct cfg_endpoint ep = {0};
	int err;

	if (a->metrics_flag) {
		if (cfg_parse_endpoint(a->metrics_flag, &ep, 0) || ep.unix_path[0] || !ep.port) {
			pr_warn("--metrics-listen %s: not host:port\n", a->metrics_flag);
			return -EINVAL;
		}
	} else if (a->cfg) {
		ep = a->cfg->agent.metrics_listen;
	}
	if (!ep.host[0])
		return 0;
	a->metrics = calloc(1, sizeof(*a->metrics));
	if (!a->metrics)
		return -ENOMEM;
	metrics_hist_init(&a->metrics->ping_hist, metrics_latency_bounds, metrics_latency_nbounds);
	err = metrics_open(&a->metrics->m, a->base, &ep, fill_metrics, a);
	if (err)
		agent_metrics_close(a);
	return err;
}

void agent_metrics_close(struct agent *a)
{
	if (!a->metrics)
		return;
	metrics_close(a->metrics->m);
	free(a->metrics);
	a->metrics = NULL;
}
