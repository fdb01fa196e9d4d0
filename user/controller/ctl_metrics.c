// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The controller's Prometheus metrics (flatline.conf(5), METRICS) on
 * [controller] metrics_listen: failovers by shard and cause, the failover's steps
 * and DNS updates as histograms, node health, primaries, epochs, connections. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include "common/clock.h"
#include "common/version.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"

/* "proc_exit SIGKILL" -> "proc_exit"; a planned switchover is "planned". */
static void cause_of(const struct fo_failover *f, char *out, size_t len)
{
	size_t n = strcspn(f->reason, " :(");

	if (f->planned || !n)
		snprintf(out, len, "%s", f->planned ? "planned" : "unknown");
	else
		snprintf(out, len, "%.*s", (int)(n < len - 1 ? n : len - 1), f->reason);
}

/* Seconds since a monotonic ms time, to the nanosecond now: a failover that ends
 * within the millisecond it began (a kill -9 on a fast host) is not timed 0. */
static double since_s(long long start_ms)
{
	return ((double)fl_mono_ns() / 1e6 - (double)start_ms) / 1e3;
}

void ctl_metrics_promoted(struct ctl *c, const struct fo_shard *s)
{
	/* fo_ops.promoted also says a primary found at start (no failover running):
	 * not a promotion to time. One observation per failover. */
	if (s->fo.state == FO_ST_NONE || !c->m.promoted_start_ms ||
	    c->m.promoted_start_ms[s->idx] == s->fo.start_ms)
		return;
	c->m.promoted_start_ms[s->idx] = s->fo.start_ms;
	metrics_hist_observe(&c->m.to_promotion, since_s(s->fo.start_ms));
}

void ctl_metrics_failover_done(struct ctl *c, const struct fo_shard *s, const char *result)
{
	const struct fo_failover *f = &s->last;
	char cause[32];
	const char *res = !strcmp(result, "ok")	      ? "ok"
			  : !strcmp(result, "shadow") ? "shadow" /* would have: fo_shadow.c */
						      : "aborted";
	int i;

	if (!strcmp(res, "ok"))
		metrics_hist_observe(&c->m.to_writable, since_s(f->start_ms));
	cause_of(f, cause, sizeof(cause));
	for (i = 0; i < c->m.nfailovers; i++)
		if (c->m.failovers[i].shard == s->idx && !strcmp(c->m.failovers[i].cause, cause) &&
		    !strcmp(c->m.failovers[i].result, res))
			break;
	if (i == c->m.nfailovers) {
		if (i == CTL_METRICS_MAX_CAUSES)
			return;
		c->m.failovers[i].shard = s->idx;
		snprintf(c->m.failovers[i].cause, sizeof(c->m.failovers[i].cause), "%s", cause);
		snprintf(c->m.failovers[i].result, sizeof(c->m.failovers[i].result), "%s", res);
		c->m.nfailovers++;
	}
	c->m.failovers[i].n++;
}

static void fill(void *ctx, struct evbuffer *b)
{
	struct ctl *c = ctx;
	const struct fo_cluster *fo = &c->fo;
	long long now = fl_mono_ms();
	unsigned long long epoch = 0;
	int agents = 0, clients = 0;

	metrics_head(b, "flatline_build_info", "gauge", "flatline's version, and which process.");
	metrics_sample(b, "flatline_build_info", 1, "version", fl_version, "process", "controller",
		       METRICS_END);
	metrics_head(b, "flatline_controller_failovers_total", "counter",
		     "Failovers that ended, by shard, cause (what set them off) and result.");
	for (int i = 0; i < c->m.nfailovers; i++)
		metrics_sample_u64(b, "flatline_controller_failovers_total", c->m.failovers[i].n,
				   "shard", fo->shards[c->m.failovers[i].shard].name, "cause",
				   c->m.failovers[i].cause, "result", c->m.failovers[i].result,
				   METRICS_END);
	metrics_head(b, "flatline_controller_last_failover_timestamp_seconds", "gauge",
		     "When the shard's last failover ended (Unix time).");
	for (int i = 0; i < fo->nshards; i++)
		if (fo->shards[i].have_last && fo->shards[i].last.end_wall_ms)
			metrics_sample(b, "flatline_controller_last_failover_timestamp_seconds",
				       fo->shards[i].last.end_wall_ms / 1e3, "shard",
				       fo->shards[i].name, METRICS_END);
	metrics_head(b, "flatline_controller_detection_to_promotion_seconds", "histogram",
		     "From the failure's detection by the controller to the promotion accepted.");
	metrics_hist_write(b, "flatline_controller_detection_to_promotion_seconds",
			   &c->m.to_promotion, NULL, NULL);
	metrics_head(b, "flatline_controller_detection_to_writable_seconds", "histogram",
		     "From the failure's detection to the failover's end (new primary writable, "
		     "replicas repointed).");
	metrics_hist_write(b, "flatline_controller_detection_to_writable_seconds",
			   &c->m.to_writable, NULL, NULL);
	metrics_head(b, "flatline_controller_dns_update_duration_seconds", "histogram",
		     "DNS UPDATEs, sent to answered.");
	metrics_hist_write(b, "flatline_controller_dns_update_duration_seconds", &c->m.dns_update,
			   NULL, NULL);
	metrics_head(b, "flatline_controller_dns_update_failures_total", "counter",
		     "DNS UPDATEs that failed (refused, timed out, bad key).");
	metrics_sample_u64(b, "flatline_controller_dns_update_failures_total", c->m.dns_failures,
			   METRICS_END);
	if (ctl_dns_shard(c, 0)) {
		metrics_head(b, "flatline_controller_dns_drift", "gauge",
			     "1 when the shard's DNS name does not point at its primary.");
		for (int i = 0; i < fo->nshards; i++)
			if (c->cfg->shards[i].dns_name[0])
				metrics_sample(b, "flatline_controller_dns_drift",
					       ctl_dns_shard(c, i)->agrees == 0, "shard",
					       fo->shards[i].name, METRICS_END);
	}
	metrics_head(b, "flatline_controller_node_healthy", "gauge",
		     "1 when the node's agent reports fresh and its server is up.");
	for (int i = 0; i < fo->nnodes; i++) {
		const struct fo_node *n = &fo->nodes[i];

		if (n->flags & FO_N_REMOVED)
			continue;
		metrics_sample(b, "flatline_controller_node_healthy",
			       fo_judge(fo, n, now) == FO_V_OK, "node", n->id, "shard",
			       n->shard >= 0 ? fo->shards[n->shard].name : "", METRICS_END);
	}
	metrics_head(b, "flatline_shard_replicas", "gauge",
		     "The shard's healthy replicas: linked to its primary, synced.");
	for (int i = 0; i < fo->nshards; i++) {
		struct ctl_spares_view v;

		ctl_spares_view(c, i, &v);
		if (!fo->shards[i].removed && v.replicas >= 0)
			metrics_sample(b, "flatline_shard_replicas", v.replicas, "shard",
				       fo->shards[i].name, METRICS_END);
	}
	metrics_head(b, "flatline_shard_replicas_desired", "gauge",
		     "The replicas the shard should have ([shard] replicas).");
	for (int i = 0; i < fo->nshards; i++) {
		struct ctl_spares_view v;

		ctl_spares_view(c, i, &v);
		if (!fo->shards[i].removed)
			metrics_sample(b, "flatline_shard_replicas_desired", v.desired, "shard",
				       fo->shards[i].name, METRICS_END);
	}
	metrics_head(b, "flatline_controller_primary", "gauge", "1 for each shard's primary.");
	for (int i = 0; i < fo->nshards; i++) {
		const struct fo_shard *s = &fo->shards[i];

		if (s->primary >= 0)
			metrics_sample(b, "flatline_controller_primary", 1, "shard", s->name,
				       "node", fo->nodes[s->primary].id, METRICS_END);
		if (s->epoch > epoch)
			epoch = s->epoch;
	}
	metrics_head(b, "flatline_controller_shard_epoch", "gauge", "Each shard's epoch.");
	for (int i = 0; i < fo->nshards; i++)
		if (!fo->shards[i].removed)
			metrics_sample_u64(b, "flatline_controller_shard_epoch",
					   fo->shards[i].epoch, "shard", fo->shards[i].name,
					   METRICS_END);
	metrics_head(b, "flatline_controller_epoch", "gauge", "The highest epoch of any shard.");
	metrics_sample_u64(b, "flatline_controller_epoch", epoch, METRICS_END);
	for (const struct ctl_conn *k = c->conns; k; k = k->next) {
		if (k->flags & CTL_C_AGENT)
			agents++;
		else
			clients++;
	}
	metrics_head(b, "flatline_controller_agents_connected", "gauge",
		     "Agents connected and authenticated.");
	metrics_sample(b, "flatline_controller_agents_connected", agents, METRICS_END);
	metrics_head(b, "flatline_controller_clients_connected", "gauge",
		     "Other connections: Sentinel clients, flatline status, agents before HELLO.");
	metrics_sample(b, "flatline_controller_clients_connected", clients, METRICS_END);
	metrics_head(b, "flatline_controller_connections_rejected_total", "counter",
		     "Connections closed with an error: failed authentication, protocol errors, "
		     "limits.");
	metrics_sample_u64(b, "flatline_controller_connections_rejected_total", c->m.rejected,
			   METRICS_END);
}

int ctl_metrics_start(struct ctl *c)
{
	metrics_hist_init(&c->m.to_promotion, metrics_latency_bounds, metrics_latency_nbounds);
	metrics_hist_init(&c->m.to_writable, metrics_latency_bounds, metrics_latency_nbounds);
	metrics_hist_init(&c->m.dns_update, metrics_latency_bounds, metrics_latency_nbounds);
	c->m.promoted_start_ms = calloc(ctl_shard_room(c) + 1, sizeof(long long));
	if (!c->m.promoted_start_ms)
		return -ENOMEM;
	if (!c->cfg->controller.metrics_listen.host[0])
		return 0;
	return metrics_open(&c->m.http, c->base, &c->cfg->controller.metrics_listen, fill, c);
}

void ctl_metrics_free(struct ctl *c)
{
	metrics_close(c->m.http);
	c->m.http = NULL;
	free(c->m.promoted_start_ms);
	c->m.promoted_start_ms = NULL;
}
