// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Agent sessions: HELLO flatline (version, node, secret), REPORT, AUTH, and the
 * heartbeat deadline of each node (docs/protocol.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/lease_wait.h"

static void reject_log(struct ctl *c, int node, const char *node_id, const char *peer,
		       const char *why)
{
	char key[160];
	int slot = node >= 0 ? node : c->nnodes;
	struct evrec r;

	snprintf(key, sizeof(key), "%s|%s", node_id, why);
	if (!strcmp(c->reject_last[slot], key))
		return; /* once per change */
	snprintf(c->reject_last[slot], sizeof(c->reject_last[slot]), "%s", key);
	pr_warn("rejected agent %s from %s: %s\n", node_id, peer, why);
	evrec_begin(&r, NULL, "controller", "agent_rejected");
	evrec_str(&r, "instance", node_id);
	evrec_str(&r, "peer", peer);
	evrec_str(&r, "reason", why);
	ctl_log(c, &r);
}

static bool secret_eq(const char *a, const char *b, size_t blen)
{
	size_t alen = strlen(a);
	unsigned char d = alen != blen;

	/* Constant time over the configured secret's length. */
	for (size_t i = 0; i < alen; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)(i < blen ? b[i] : 0);
	return !d;
}

void ctl_on_hello(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct fo_node *n;
	struct evrec r;
	char why[200];

	if (cmd->argc < 2 || strcasecmp(cmd->argv[1], "flatline")) {
		/* Redis's own HELLO [protover]: RESP2, or RESP3 from now on. */
		if (cmd->argc >= 2 && strcmp(cmd->argv[1], "2") && strcmp(cmd->argv[1], "3")) {
			resp_error_reply(out, "NOPROTO unsupported protocol version");
			return;
		}
		if (cmd->argc >= 2 && !strcmp(cmd->argv[1], "3"))
			k->flags |= CTL_C_RESP3;
		else if (cmd->argc >= 2)
			k->flags &= ~CTL_C_RESP3;
		/* As a Sentinel answers it (no "role" in sentinel mode). */
		ctl_reply_map(k, out, 6);
		resp_str(out, "server");
		resp_str(out, "redis");
		resp_str(out, "version");
		resp_str(out, CTL_REDIS_VERSION);
		resp_str(out, "proto");
		resp_int(out, (k->flags & CTL_C_RESP3) ? 3 : 2);
		resp_str(out, "id");
		resp_int(out, (long long)k->id);
		resp_str(out, "mode");
		resp_str(out, "sentinel");
		resp_str(out, "modules");
		resp_array(out, 0);
		return;
	}
	if (k->flags & CTL_C_AGENT) {
		ctl_conn_fatal(k, "ERR HELLO already received on this connection");
		return;
	}
	if (cmd->argc != 5) {
		ctl_conn_fatal(k, "ERR wrong number of arguments for HELLO flatline <version> <node> <secret>");
		return;
	}
	if (strcmp(cmd->argv[2], CTL_PROTO_VERSION)) {
		snprintf(why, sizeof(why), "VERSION protocol version %.20s not supported (want %s)",
			 cmd->argv[2], CTL_PROTO_VERSION);
		reject_log(c, -1, cmd->argv[3], k->peer, why + 8);
		resp_error_reply(out, why);
		return;
	}
	n = fo_find_node(&c->fo, cmd->argv[3]);
	if (!n) {
		snprintf(why, sizeof(why), "NODE no [node \"%.64s\"] in the cluster file",
			 cmd->argv[3]);
		reject_log(c, -1, cmd->argv[3], k->peer, "unknown node");
		resp_error_reply(out, why);
		return;
	}
	if (!secret_eq(c->cfg->secret, cmd->argv[4], cmd->lens[4])) {
		reject_log(c, n->idx, n->id, k->peer, "wrong secret");
		resp_error_reply(out, "AUTH wrong secret");
		return;
	}
	c->reject_last[n->idx][0] = '\0';
	k->flags |= CTL_C_AGENT | CTL_C_AUTH;
	k->node = n->idx;
	k->seq = 0;
	/* Silent for 10 heartbeats: closed (protocol.md, Limits). */
	{
		struct timeval tv = fl_ms_tv(10L * c->cfg->agent.heartbeat_ms);

		bufferevent_set_timeouts(k->bev, &tv, NULL);
	}
	evrec_begin(&r, NULL, "controller", "agent_connected");
	evrec_str(&r, "instance", n->id);
	evrec_str(&r, "peer", k->peer);
	ctl_log(c, &r);
	resp_status(out, "OK flatline " CTL_VERSION);
	fo_on_agent(&c->fo, n, true);
}

/* A node's heartbeat deadline passed without a report: its shard is judged again. */
void ctl_on_node_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_deadline *d = arg;

	(void)fd;
	(void)what;
	fo_evaluate_node(&d->c->fo, &d->c->fo.nodes[d->node]);
}

void ctl_on_report(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct fo_report rep;
	struct fo_node *n;
	struct fo_shard *s;
	long long seq;
	char *end, why[160], e[200];
	struct timeval tv;

	if (!(k->flags & CTL_C_AGENT)) {
		ctl_conn_fatal(k, "ERR REPORT before HELLO");
		return;
	}
	if (cmd->argc < 2) {
		ctl_conn_fatal(k, "ERR wrong number of arguments for 'report' command");
		return;
	}
	errno = 0;
	seq = strtoll(cmd->argv[1], &end, 10);
	if (errno || *end || !cmd->argv[1][0] || seq < 1) {
		ctl_conn_fatal(k, "ERR REPORT: seq is not a positive integer");
		return;
	}
	if (fo_report_parse(&c->fo, &rep, cmd->argc - 2, (const char **)cmd->argv + 2,
			    cmd->lens + 2, why, sizeof(why))) {
		snprintf(e, sizeof(e), "ERR REPORT: %s", why);
		ctl_conn_fatal(k, e);
		return;
	}
	k->seq = seq;
	n = &c->fo.nodes[k->node];
	fo_on_report(&c->fo, n, &rep);
	/* The heartbeat deadline: judged again when it passes without a report. */
	tv = fl_ms_tv(c->fo.node_down_after_ms + 1);
	evtimer_add(c->node_timer[n->idx], &tv);
	s = n->shard >= 0 ? &c->fo.shards[n->shard] : NULL;
	resp_array(out, c->ha ? 4 : 3);
	resp_status(out, "OK");
	resp_int(out, s ? (long long)s->epoch : 0);
	resp_str(out, fo_answer_primary(&c->fo, s, n, c->fo.now_ms(c->fo.ctx)));
	/* HA mode: only the leader's word may renew a lease or lift a fence. */
	if (c->ha)
		resp_str(out, ctl_may_act(c) ? "leader" : "follower");
}

void ctl_on_auth(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	int pi = cmd->argc == 3 ? 2 : 1;

	if (cmd->argc != 2 && cmd->argc != 3) {
		resp_error_reply(out, "ERR wrong number of arguments for 'auth' command");
		return;
	}
	if (cmd->argc == 3 && strcmp(cmd->argv[1], "default")) {
		resp_error_reply(out, "WRONGPASS invalid username-password pair or user is disabled.");
		return;
	}
	if (!secret_eq(k->ctl->cfg->secret, cmd->argv[pi], cmd->lens[pi])) {
		resp_error_reply(out, "WRONGPASS invalid username-password pair or user is disabled.");
		return;
	}
	k->flags |= CTL_C_AUTH;
	resp_status(out, "OK");
}

/* An agent's connection closes: the node has lost its agent unless another
 * connection of the same node is still up. */
void ctl_agent_closed(struct ctl_conn *k)
{
	struct ctl *c = k->ctl;
	struct fo_node *n = &c->fo.nodes[k->node];
	struct evrec r;

	for (struct ctl_conn *o = c->conns; o; o = o->next)
		if (o != k && (o->flags & CTL_C_AGENT) && o->node == k->node)
			return;
	evrec_begin(&r, NULL, "controller", "agent_disconnected");
	evrec_str(&r, "instance", n->id);
	evrec_str(&r, "peer", k->peer);
	ctl_log(c, &r);
	fo_on_agent(&c->fo, n, false);
}

/* Silent for 10 heartbeats: the connection is closed after this. */
void ctl_agent_timed_out(struct ctl_conn *k)
{
	struct evrec r;

	evrec_begin(&r, NULL, "controller", "agent_timeout");
	evrec_str(&r, "instance", k->ctl->fo.nodes[k->node].id);
	evrec_str(&r, "peer", k->peer);
	evrec_int(&r, "silent_ms", 10L * k->ctl->cfg->agent.heartbeat_ms);
	ctl_log(k->ctl, &r);
}
