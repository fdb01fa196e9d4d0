// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* FLATLINE STATUS (`flatline status`): the cluster as text and as JSON. Printing
 * only: what it prints is decided in the fo_*.c core and the other modules. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <event2/buffer.h>
#include "common/clock.h"
#include "common/json.h"
#include "controller/ctl.h"
#include "controller/ctl_members.h"
#include "controller/lease_wait.h"
#include "controller/lease_admit.h"

static int put_evbuffer(void *b, const char *s, size_t n)
{
	return evbuffer_add(b, s, n) ? -ENOMEM : 0;
}

static void json_str(struct evbuffer *b, const char *s)
{
	json_put_str(put_evbuffer, b, s);
}

/* The shard's redundancy (ctl_spares.c): replicas and desired, the deficit, the
 * spare being attached. */
static void status_redundancy_json(const struct ctl *c, int shard, struct evbuffer *b)
{
	struct ctl_spares_view v;

	ctl_spares_view(c, shard, &v);
	evbuffer_add_printf(b,
			    ",\"replicas\":%d,\"replicas_desired\":%d,\"deficit_ms\":%lld,"
			    "\"spare_state\":\"%s\",\"spare_node\":",
			    v.replicas, v.desired, v.deficit_ms, v.state);
	if (v.node)
		json_str(b, v.node);
	else
		evbuffer_add_printf(b, "null");
	evbuffer_add_printf(b, ",\"spare_state_ms\":%lld", v.state_ms);
}

static void status_redundancy_text(const struct ctl *c, int shard, struct evbuffer *b)
{
	struct ctl_spares_view v;

	ctl_spares_view(c, shard, &v);
	if (v.deficit_ms)
		evbuffer_add_printf(b, "  REPLICA DEFICIT: %d of %d replicas for %lld ms\n",
				    v.replicas, v.desired, v.deficit_ms);
	if (v.node)
		evbuffer_add_printf(b, "  SPARE %s: %s for %lld ms\n", v.node, v.state, v.state_ms);
}

static const char *node_health(const struct fo_node *n)
{
	if (n->flags & FO_N_PROC_DOWN)
		return "proc_down";
	if (n->flags & FO_N_PROC_HUNG)
		return "proc_hung";
	if (n->flags & FO_N_HOST_DOWN)
		return "host_down";
	if (n->flags & FO_N_AGENT_LOST)
		return (n->flags & FO_N_UNREACH) ? "agent_lost,unreachable" : "agent_lost";
	if (!(n->flags & FO_N_REPORTED))
		return n->info_ok ? "no_agent" : "unknown";
	if (n->rep.proc == FO_PROC_BUSY || n->rep.proc == FO_PROC_LOADING)
		return fo_proc_name(n->rep.proc);
	return "ok";
}

/* The agent's cause for a hung or busy server, "" if none. */
static const char *node_cause(const struct fo_node *n)
{
	if ((n->flags & FO_N_REPORTED) &&
	    (n->rep.proc == FO_PROC_HUNG || n->rep.proc == FO_PROC_BUSY))
		return n->rep.cause;
	return "";
}

/* Lease admission (lease_admit.h): withdrawn from the other agents' grants, and the
 * withdrawn peers whose withdrawal this node's agent confirmed (they no longer hold
 * up its failover). */
static void add_admission(struct evbuffer *b, const struct ctl *c, const struct fo_shard *s,
			  const struct fo_node *n)
{
	int k = 0;

	evbuffer_add_printf(b, ",\"admission\":\"%s\",\"withdrawals_confirmed\":[",
			    n->admit_out ? "withdrawn" : "admitted");
	for (int j = 0; j < s->nnodes; j++) {
		const struct fo_node *q = &c->fo.nodes[s->nodes[j]];

		if (q == n || !fo_admit_confirmed(&c->fo, n, q))
			continue;
		evbuffer_add_printf(b, "%s", k++ ? "," : "");
		json_str(b, q->id);
	}
	evbuffer_add_printf(b, "]");
}

static const struct info_repl *node_repl(const struct fo_node *n)
{
	if (n->info_ok && (!(n->flags & FO_N_REPORTED) || n->info_ms >= n->last_report_ms))
		return &n->info;
	return (n->flags & FO_N_REPORTED) ? &n->rep.repl : NULL;
}

static void fmt_wall(long long ms, char *buf, size_t len)
{
	time_t t = ms / 1000;
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", (tm.tm_year + 1900) % 10000,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

void ctl_print_timeline(struct evbuffer *b, const struct fo_shard *s, const struct fo_failover *f,
			const struct fo_cluster *fo)
{
	char ts[40];

	fmt_wall(f->start_wall_ms, ts, sizeof(ts));
	evbuffer_add_printf(b, "failover of %s at %s: %s -> %s (%s)%s, %s in %lld ms, epoch %llu\n",
			    s->name, ts, f->from >= 0 ? fo->nodes[f->from].id : "?",
			    f->to >= 0 ? fo->nodes[f->to].id : "-", f->reason,
			    f->planned ? " planned" : "", f->result,
			    f->end_wall_ms - f->start_wall_ms, f->epoch ? f->epoch : s->epoch);
	for (int i = 0; i < f->nsteps; i++)
		evbuffer_add_printf(b, "  %+6lld ms  %s\n", f->steps[i].at_ms, f->steps[i].text);
}

/* HA mode: this controller's role, the leader, etcd. */
static void ha_json(struct ctl *c, struct evbuffer *b)
{
	struct ctl_ha_view v;

	ctl_ha_status(c, &v);
	if (!v.enabled)
		return;
	evbuffer_add_printf(b, ",\"ha\":{\"id\":");
	json_str(b, c->id);
	evbuffer_add_printf(b,
			    ",\"role\":\"%s\",\"may_act\":%s,\"lease_left_ms\":%lld,"
			    "\"revision\":%lld,\"leader\":",
			    v.role, v.may_act ? "true" : "false", v.deadline_in_ms, v.revision);
	json_str(b, v.leader);
	evbuffer_add_printf(b, ",\"etcd\":{\"ok\":%s,\"why\":", v.etcd_ok ? "true" : "false");
	json_str(b, v.etcd_why);
	evbuffer_add_printf(b, ",\"endpoint\":");
	json_str(b, v.endpoint);
	evbuffer_add_printf(b, ",\"members\":");
	json_str(b, v.etcd_members);
	evbuffer_add_printf(b, "},\"controllers\":[");
	for (int i = 0; i < v.nctls; i++) {
		evbuffer_add_printf(b, "%s{\"id\":", i ? "," : "");
		json_str(b, v.ctl_ids[i]);
		evbuffer_add_printf(b, ",\"listen\":");
		json_str(b, v.ctl_addrs[i]);
		evbuffer_add_printf(b, ",\"role\":\"%s\"}",
				    !strcmp(v.ctl_ids[i], v.leader) ? "leader" : "follower");
	}
	evbuffer_add_printf(b, "]}");
}

static void ha_text(struct ctl *c, struct evbuffer *b)
{
	struct ctl_ha_view v;

	ctl_ha_status(c, &v);
	if (!v.enabled)
		return;
	evbuffer_add_printf(b, "HA: controller %s is %s%s; leader %s; etcd %s (%s), members %s\n",
			    c->id, v.role, v.may_act ? " (lease live)" : "",
			    v.leader[0] ? v.leader : "none", v.etcd_ok ? "ok" : "UNAVAILABLE",
			    v.etcd_ok ? v.endpoint : v.etcd_why, v.etcd_members);
	for (int i = 0; i < v.nctls; i++)
		evbuffer_add_printf(b, "  controller %-12s %-24s %s\n", v.ctl_ids[i],
				    v.ctl_addrs[i],
				    !strcmp(v.ctl_ids[i], v.leader) ? "leader" : "follower");
}

void ctl_status_json(struct ctl *c, struct evbuffer *b)
{
	long long now = fl_mono_ms();

	evbuffer_add_printf(b, "{\"cluster\":");
	json_str(b, c->cfg->name);
	evbuffer_add_printf(b, ",\"controller\":{\"listen\":");
	json_str(b, c->listen_str);
	evbuffer_add_printf(b,
			    ",\"myid\":\"%s\",\"pid\":%d,\"uptime_ms\":%lld,\"tilt\":%s,"
			    "\"starting\":%s,\"mode\":\"%s\"",
			    c->myid, getpid(), now - c->start_ms, c->fo.tilt ? "true" : "false",
			    c->fo.starting ? "true" : "false", c->fo.shadow ? "shadow" : "active");
	ha_json(c, b);
	{
		char err[512];

		if (ctl_state_error(c, err, sizeof(err))) {
			evbuffer_add_printf(b, ",\"state_file_error\":");
			json_str(b, err);
		}
	}
	evbuffer_add_printf(b, "},\"shards\":[");
	for (int i = 0, first = 1; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		char unknown[512];

		if (s->removed)
			continue;
		evbuffer_add_printf(b, "%s{\"name\":", first ? "" : ",");
		first = 0;
		json_str(b, s->name);
		evbuffer_add_printf(b, ",\"source\":\"%s\",\"unknown_replicas\":[",
				    c->cfg->shards[i].runtime ? "runtime" : "file");
		ctl_members_unknown(c, i, unknown, sizeof(unknown));
		for (char *u = unknown[0] ? unknown : NULL, *sp; u; u = sp ? sp + 1 : NULL) {
			sp = strchr(u, ' ');
			if (sp)
				*sp = '\0';
			evbuffer_add_printf(b, "%s", u == unknown ? "" : ",");
			json_str(b, u);
		}
		evbuffer_add_printf(b, "],\"spares\":[");
		for (int j = 0, f = 1; j < c->fo.nnodes; j++) {
			const struct cfg_node *cn = &c->cfg->nodes[j];

			if (cn->removed || !cn->spare || strcmp(cn->spare_for, s->name))
				continue;
			evbuffer_add_printf(b, "%s", f ? "" : ",");
			f = 0;
			json_str(b, cn->id);
		}
		evbuffer_add_printf(b, "]");
		status_redundancy_json(c, i, b);
		evbuffer_add_printf(b, ",\"primary\":");
		if (s->primary >= 0)
			json_str(b, c->fo.nodes[s->primary].id);
		else
			evbuffer_add_printf(b, "null");
		evbuffer_add_printf(b,
				    ",\"epoch\":%llu,\"failover\":\"%s\",\"dns_name\":", s->epoch,
				    fo_state_name(s->fo.state));
		json_str(b, c->cfg->shards[i].dns_name);
		evbuffer_add_printf(b, ",\"mode\":\"%s\"", s->cluster ? "cluster" : "replication");
		if (s->cluster) {
			/* The last judgement of the primary's CLUSTER NODES (fo_cluster.c). */
			evbuffer_add_printf(b, ",\"cluster_nodes\":\"%s\",\"cluster_mismatch\":",
					    !s->cluster_checked ? "not checked"
					    : s->cluster_why[0] ? "mismatch"
								: "consistent");
			json_str(b, s->cluster_why);
		}
		if (ctl_dns_shard(c, i) && c->cfg->shards[i].dns_name[0]) {
			const struct ctl_dns *d = ctl_dns_shard(c, i);

			evbuffer_add_printf(b, ",\"dns_want\":");
			json_str(b, s->primary >= 0 ? c->fo.nodes[s->primary].host : "");
			evbuffer_add_printf(b, ",\"dns_seen\":");
			json_str(b, d->seen);
			evbuffer_add_printf(b, ",\"dns_agrees\":%s",
					    d->agrees < 0 ? "null"
					    : d->agrees	  ? "true"
							  : "false");
			if (d->cfg_err[0]) {
				evbuffer_add_printf(b, ",\"dns_error\":");
				json_str(b, d->cfg_err);
			}
		}
		evbuffer_add_printf(b, ",\"nodes\":[");
		for (int j = 0; j < s->nnodes; j++) {
			struct fo_node *n = &c->fo.nodes[s->nodes[j]];
			const struct info_repl *r = node_repl(n);

			evbuffer_add_printf(b, "%s{\"id\":", j ? "," : "");
			json_str(b, n->id);
			evbuffer_add_printf(b, ",\"role\":\"%s\",\"addr\":",
					    n->idx == s->primary ? "primary" : "replica");
			json_str(b, c->cfg->nodes[n->idx].redis_str);
			evbuffer_add_printf(
			    b,
			    ",\"health\":\"%s\",\"agent\":%s,\"proc\":\"%s\","
			    "\"heartbeat_age_ms\":%lld,\"priority\":%d",
			    node_health(n), (n->flags & FO_N_AGENT) ? "true" : "false",
			    fo_proc_name(n->rep.proc),
			    (n->flags & FO_N_REPORTED) ? now - n->last_report_ms : -1, n->priority);
			evbuffer_add_printf(b, ",\"lease\":\"%s\",\"source\":\"%s\"",
					    fo_lease_word(n),
					    c->cfg->nodes[n->idx].runtime ? "runtime" : "file");
			add_admission(b, c, s, n);
			if (node_cause(n)[0]) {
				evbuffer_add_printf(b, ",\"cause\":");
				json_str(b, node_cause(n));
			}
			if (r)
				evbuffer_add_printf(b,
						    ",\"server_role\":\"%s\",\"offset\":%lld,"
						    "\"link\":\"%s\"",
						    info_role_name(r->role), r->offset,
						    r->link_up == 1   ? "up"
						    : r->link_up == 0 ? "down"
								      : "-");
			evbuffer_add_printf(b, "}");
		}
		evbuffer_add_printf(b, "]");
		if (s->have_last) {
			const struct fo_failover *f = &s->last;
			char ts[40];

			fmt_wall(f->start_wall_ms, ts, sizeof(ts));
			evbuffer_add_printf(b,
					    ",\"last_failover\":{\"start\":\"%s\",\"from\":", ts);
			json_str(b, f->from >= 0 ? c->fo.nodes[f->from].id : "");
			evbuffer_add_printf(b, ",\"to\":");
			json_str(b, f->to >= 0 ? c->fo.nodes[f->to].id : "");
			evbuffer_add_printf(b, ",\"reason\":");
			json_str(b, f->reason);
			evbuffer_add_printf(
			    b, ",\"planned\":%s,\"result\":", f->planned ? "true" : "false");
			json_str(b, f->result);
			evbuffer_add_printf(b, ",\"duration_ms\":%lld,\"steps\":[",
					    f->end_wall_ms - f->start_wall_ms);
			for (int j = 0; j < f->nsteps; j++) {
				evbuffer_add_printf(b, "%s{\"at_ms\":%lld,\"what\":", j ? "," : "",
						    f->steps[j].at_ms);
				json_str(b, f->steps[j].text);
				evbuffer_add_printf(b, "}");
			}
			evbuffer_add_printf(b, "]}");
		}
		evbuffer_add_printf(b, "}");
	}
	evbuffer_add_printf(b, "]}\n");
}

void ctl_status_text(struct ctl *c, struct evbuffer *b)
{
	long long now = fl_mono_ms();

	evbuffer_add_printf(b, "cluster %s  controller %s  pid %d  up %llds%s%s%s\n", c->cfg->name,
			    c->listen_str, getpid(), (now - c->start_ms) / 1000,
			    c->fo.shadow ? "  SHADOW (changes nothing)" : "",
			    c->fo.tilt ? "  TILT" : "",
			    c->ha && !ctl_may_act(c) ? ""
			    : c->fo.starting	     ? "  (starting)"
						     : "");
	ha_text(c, b);
	{
		char err[512];

		if (ctl_state_error(c, err, sizeof(err)))
			evbuffer_add_printf(
			    b, "STATE FILE NOT WRITTEN (retrying every second): %s\n", err);
	}
	if (!c->fo.nodes)
		return; /* not set up (and the analyzer knows the nodes below are real) */
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		struct fo_node *p = s->primary >= 0 ? &c->fo.nodes[s->primary] : NULL;
		char unknown[512];

		if (s->removed)
			continue;
		evbuffer_add_printf(b, "\nshard %s  primary %s (%s)  epoch %llu%s%s\n", s->name,
				    p ? p->id : "unknown",
				    p ? c->cfg->nodes[p->idx].redis_str : "-", s->epoch,
				    s->fo.state != FO_ST_NONE ? "  failover: " : "",
				    s->fo.state != FO_ST_NONE ? fo_state_name(s->fo.state) : "");
		if (s->cluster)
			evbuffer_add_printf(b, "  cluster shard: CLUSTER NODES %s%s\n",
					    !s->cluster_checked ? "not checked yet"
					    : s->cluster_why[0] ? "DIFFERS: "
								: "agrees",
					    s->cluster_why);
		if (ctl_dns_shard(c, i) && c->cfg->shards[i].dns_name[0]) {
			const struct ctl_dns *d = ctl_dns_shard(c, i);

			evbuffer_add_printf(b, "  dns %s -> %s: %s%s%s\n",
					    c->cfg->shards[i].dns_name, p ? p->host : "?",
					    d->agrees < 0 ? "not checked yet"
					    : d->agrees	  ? "agrees"
							  : "DIFFERS",
					    d->agrees == 0 ? (d->seen[0] ? ", has " : ", no record")
							   : "",
					    d->agrees == 0 ? d->seen : "");
			if (d->cfg_err[0])
				evbuffer_add_printf(b, "  dns error: %s\n", d->cfg_err);
		}
		evbuffer_add_printf(b,
				    "  %-12s %-8s %-22s %-22s %-6s %-10s %-8s %-12s %-5s %-5s %s\n",
				    "node", "role", "server", "health", "agent", "heartbeat",
				    "srv_role", "offset", "link", "lease", "from");
		for (int j = 0; j < s->nnodes; j++) {
			struct fo_node *n = &c->fo.nodes[s->nodes[j]];
			const struct info_repl *r = node_repl(n);
			char hb[32] = "-", off[32] = "-", health[48];

			/* "proc_hung:stopped", "busy:busy": the health and the agent's cause. */
			snprintf(health, sizeof(health), "%s%s%.16s", node_health(n),
				 node_cause(n)[0] ? ":" : "", node_cause(n));
			if (n->flags & FO_N_REPORTED)
				snprintf(hb, sizeof(hb), "%lld ms", now - n->last_report_ms);
			if (r && r->offset >= 0)
				snprintf(off, sizeof(off), "%lld", r->offset);
			evbuffer_add_printf(
			    b, "  %-12s %-8s %-22s %-22s %-6s %-10s %-8s %-12s %-5s %-5s %s\n",
			    n->id, n->idx == s->primary ? "primary" : "replica",
			    c->cfg->nodes[n->idx].redis_str, health,
			    (n->flags & FO_N_AGENT) ? "yes" : "no", hb,
			    r ? info_role_name(r->role) : "-", off,
			    !r || r->link_up < 0 ? "-"
			    : r->link_up	 ? "up"
						 : "down",
			    fo_lease_word(n), c->cfg->nodes[n->idx].runtime ? "runtime" : "file");
		}
		for (int j = 0; j < c->fo.nnodes; j++) {
			const struct cfg_node *cn = &c->cfg->nodes[j];

			if (!cn->removed && cn->spare && !strcmp(cn->spare_for, s->name))
				evbuffer_add_printf(
				    b, "  %-12s %-8s %-22s (a standby: in no quorum)  %s\n", cn->id,
				    "spare", cn->redis_str, cn->runtime ? "runtime" : "file");
		}
		status_redundancy_text(c, i, b);
		ctl_members_unknown(c, i, unknown, sizeof(unknown));
		if (unknown[0])
			evbuffer_add_printf(
			    b,
			    "  REPLICAS IN NO SHARD (replica_unknown): %s: flatline node "
			    "add them, or stop them replicating\n",
			    unknown);
		if (s->have_last) {
			evbuffer_add_printf(b, "  last ");
			ctl_print_timeline(b, s, &s->last, &c->fo);
		}
	}
	ctl_runtime_status(c, b);
}
