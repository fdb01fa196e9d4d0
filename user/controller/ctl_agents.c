// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Agent sessions: HELLO flatline and PROVE (protocol version 2, challenge-response
 * with the node's key: common/auth.h), REPORT, and the heartbeat deadline
 * of each node (docs/protocol.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"
#include "controller/lease_wait.h"
#include "controller/lease_admit.h"

/* A node's heartbeat deadline: which node, for on_node_deadline. */
struct ctl_deadline {
	struct ctl *c;
	int node;
	int agents; /* the node's authenticated agent connections */
};

/* The module's state (c->agents), per node (nnodes of each, + one for unknown ids). */
struct ctl_agents {
	int nnodes;
	struct event **node_timer;     /* heartbeat deadline */
	struct ctl_deadline *deadline; /* its argument */
	char (*reject_last)[160];      /* last rejection logged per node */
	/* libevent common timeouts (a queue, not the heap: nodes' deadlines have one of
	 * two lengths, a quiet replica's and everyone else's): the heartbeat deadline. */
	int deadline_ms[2];
	const struct timeval *deadline_tv[2];
};

static void reject_log(struct ctl *c, int node, const char *node_id, const char *peer,
		       const char *why)
{
	char key[160];
	int slot = node >= 0 ? node : c->nnodes;
	struct evrec r;

	char esc[LOG_ESC_MAX];
	unsigned supp = 0;

	snprintf(key, sizeof(key), "%s|%s", node_id, why);
	if (!strcmp(c->agents->reject_last[slot], key))
		return; /* once per change */
	/* Per source address, whatever node ids it makes up: the log (and the
	 * event log's segments) cannot be flooded by rejections. */
	if (!ctl_log_allowed(c, peer, &supp))
		return;
	snprintf(c->agents->reject_last[slot], sizeof(c->agents->reject_last[slot]), "%s", key);
	pr_warn("rejected agent %s from %s: %s%s\n", log_esc(node_id, esc, sizeof(esc)), peer, why,
		supp ? " (and others from there, not logged)" : "");
	evrec_begin(&r, NULL, "controller", "agent_rejected");
	evrec_str(&r, "instance", node_id);
	evrec_str(&r, "peer", peer);
	evrec_str(&r, "reason", why);
	ctl_log(c, &r);
}

void ctl_on_hello(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	uint8_t proof[AUTH_MAC_LEN];
	char why[200], hex[AUTH_HEX_LEN + 1];
	const struct cfg_node *cn;
	struct fo_node *n;
	const char *id;
	int rc;

	if (cmd->argc < 2 || strcasecmp(cmd->argv[1], "flatline")) {
		ctl_client_hello(k, cmd); /* Redis's own HELLO [protover ...] */
		return;
	}
	if (k->flags & (CTL_C_AGENT | CTL_C_CHALLENGED)) {
		ctl_conn_fatal(k, "ERR HELLO already received on this connection");
		return;
	}
	rc = auth_hello_parse(cmd->argc, (const char *const *)cmd->argv, cmd->lens, &id, k->na, why,
			      sizeof(why));
	if (rc == -EPROTONOSUPPORT) {
		reject_log(c, -1, cmd->argc > 3 ? cmd->argv[3] : "?", k->peer, why + 8);
		resp_error_reply(out, why);
		return;
	}
	if (rc) {
		ctl_conn_fatal(k, why);
		return;
	}
	n = fo_find_node(&c->fo, id);
	/* The model's nodes are the cluster file's, in its order: no search of
	 * thousands of ids per handshake (the search stays for a file reloaded since). */
	cn = !n ? NULL
	     : n->idx < c->cfg->nnodes && !strcmp(c->cfg->nodes[n->idx].id, n->id)
		 ? &c->cfg->nodes[n->idx]
		 : cfg_find_node(c->cfg, n->id);
	if (!n || !cn) {
		snprintf(why, sizeof(why),
			 "NODE no [node \"%.64s\"] in the cluster file or added at runtime", id);
		reject_log(c, -1, id, k->peer, "unknown node");
		resp_error_reply(out, why);
		return;
	}
	/* [controller] agent_address_check: only from the node's own address. */
	if (c->cfg->controller.agent_address_check && !acl_peer_is(k->peer, cn->address)) {
		reject_log(c, n->idx, n->id, k->peer, "not from the node's address");
		ctl_conn_fatal(k, "AUTH not connected from this node's address");
		return;
	}
	/* Its key: as written for it, else derived from the cluster secret. */
	if (cn->key[0] ? auth_unhex(cn->key, strlen(cn->key), k->key, sizeof(k->key))
		       : !c->cfg->secret[0] ||
			     auth_node_key(c->cfg->secret, strlen(c->cfg->secret), n->id, k->key)) {
		reject_log(c, n->idx, n->id, k->peer, "no key for this node");
		resp_error_reply(out, "AUTH no key for this node on the controller");
		return;
	}
	if (auth_nonce(k->nc) || auth_proof(k->key, AUTH_CONTROLLER, n->id, k->na, k->nc, proof)) {
		ctl_conn_fatal(k, "ERR failed to make a challenge");
		return;
	}
	k->flags |= CTL_C_CHALLENGED;
	k->node = n->idx;
	auth_hex(k->nc, sizeof(k->nc), hex);
	resp_array(out, 3);
	resp_status(out, "CHALLENGE");
	resp_str(out, hex);
	auth_hex(proof, sizeof(proof), hex);
	resp_str(out, hex);
}

/* PROVE <proof>: the agent's answer to our CHALLENGE. One try per connection. */
void ctl_on_prove(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct fo_node *n;
	struct evrec r;

	if (!(k->flags & CTL_C_CHALLENGED) || (k->flags & CTL_C_AGENT)) {
		ctl_conn_fatal(k, "ERR PROVE without a CHALLENGE");
		return;
	}
	if (cmd->argc != 2) {
		ctl_conn_fatal(k, "ERR wrong number of arguments for 'prove' command");
		return;
	}
	n = &c->fo.nodes[k->node];
	if (!auth_check(k->key, AUTH_AGENT, n->id, k->na, k->nc, cmd->argv[1], cmd->lens[1])) {
		reject_log(c, n->idx, n->id, k->peer, "wrong key");
		ctl_conn_fatal(k, "AUTH wrong key for this node");
		return;
	}
	c->agents->reject_last[n->idx][0] = '\0';
	/* A node's key proves the node, for its own reports: it changes no state of
	 * the controller's (FAILOVER, SENTINEL SET … need a client login, or the
	 * cluster secret's AUTH without client authentication). */
	k->flags |= CTL_C_AGENT;
	ctl_conn_role(k, CTL_ROLE_AGENT, true);
	resp_reader_set_max_frame(k->rd, 0);
	k->seq = 0;
	/* Silent for 10 heartbeats: closed (protocol.md, Limits). */
	bufferevent_set_timeouts(k->bev, ctl_agent_silent_tv(c), NULL);
	c->agents->deadline[n->idx].agents++;
	evrec_begin(&r, NULL, "controller", "agent_connected");
	evrec_str(&r, "instance", n->id);
	evrec_str(&r, "peer", k->peer);
	ctl_log(c, &r);
	resp_status(out, "OK flatline " CTL_VERSION);
	fo_on_agent(&c->fo, n, true);
}

/* A node's heartbeat deadline passed without a report: its shard is judged again. */
static void on_node_deadline(evutil_socket_t fd, short what, void *arg)
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
	char *end, why[160], e[200], admitted[FO_ADMIT_LIST_MAX];
	/* The answer: an array and an integer line, "+OK", 3 bulk strings (the primary's
	 * id, "follower", "active"), and with a grant two integers and the admitted peers.
	 * One that does not fit goes through the evbuffer. */
	char a[1024], *p;
	const char *primary;
	size_t plen, alen = 0;
	int fresh_ms, slot;
	bool admit;

	if (!(k->flags & CTL_C_AGENT)) {
		ctl_conn_fatal(k, "ERR REPORT before HELLO");
		return;
	}
	if (c->fo.nodes[k->node].flags & FO_N_REMOVED) {
		ctl_conn_fatal(k, "ERR this node was removed from the cluster");
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
	/* The heartbeat deadline: judged again when it passes without a report. Two
	 * lengths in use at once (a quiet replica's is longer), each its own queue. */
	fresh_ms = fo_fresh_ms(&c->fo, n);
	slot = fresh_ms > fo_down_after_ms(&c->fo, n->shard);
	evtimer_add(c->agents->node_timer[n->idx],
		    ctl_common_timeout(c, &c->agents->deadline_ms[slot],
				       &c->agents->deadline_tv[slot], fresh_ms + 1));
	s = n->shard >= 0 ? &c->fo.shards[n->shard] : NULL;
	/* The lease admission grant (lease_admit.h): none from a follower (term 0). */
	admit = c->fo.admit_term && ctl_may_act(c) &&
		!fo_admit_answer(&c->fo, n, admitted, sizeof(admitted));
	primary = fo_answer_primary(&c->fo, s, n, c->fo.now_ms(c->fo.ctx));
	plen = strlen(primary);
	if (admit)
		alen = strlen(admitted);
	if (plen + alen + 10 * (size_t)(RESP_LINE_MAX + 2) + 16 > sizeof(a)) {
		ctl_conn_direct_flush(k);
		resp_array(out, admit ? 8 : 5);
		resp_status(out, "OK");
		resp_int(out, s ? (long long)s->epoch : 0);
		resp_bulk(out, primary, plen);
		resp_str(out, ctl_may_act(c) ? "leader" : "follower");
		resp_str(out, c->fo.shadow ? "shadow" : "active");
		if (admit) {
			resp_int(out, c->fo.admit_term);
			resp_int(out, c->fo.admit_grant);
			resp_bulk(out, admitted, alen);
		}
		return;
	}
	/* In one piece, held for one send() with the connection's other answers. */
	p = a;
	p += resp_fmt_line(p, '*', admit ? 8 : 5);
	p += resp_fmt_status(p, "OK", 2);
	p += resp_fmt_line(p, ':', s ? (long long)s->epoch : 0);
	p += resp_fmt_bulk(p, primary, plen);
	/* HA mode: only the leader's word may renew a lease or lift a fence. */
	p += ctl_may_act(c) ? resp_fmt_bulk(p, "leader", 6) : resp_fmt_bulk(p, "follower", 8);
	/* The mode: in shadow mode the agents hold no write lease and do not fence. */
	p += c->fo.shadow ? resp_fmt_bulk(p, "shadow", 6) : resp_fmt_bulk(p, "active", 6);
	if (admit) {
		p += resp_fmt_line(p, ':', c->fo.admit_term);
		p += resp_fmt_line(p, ':', c->fo.admit_grant);
		p += resp_fmt_bulk(p, admitted, alen);
	}
	ctl_conn_answer(k, a, (size_t)(p - a));
}

/* An agent's connection closes (the role's end, ctl_conn_free): the node has lost
 * its agent unless another connection of the same node is still up. */
static void ctl_agent_closed(struct ctl_conn *k)
{
	struct ctl *c = k->ctl;
	struct fo_node *n = &c->fo.nodes[k->node];
	struct evrec r;

	/* Counted per node, not searched for among every connection: a reconnect storm
	 * of thousands of agents stays linear. */
	if (--c->agents->deadline[k->node].agents > 0)
		return;
	c->agents->deadline[k->node].agents = 0;
	if (n->flags & FO_N_REMOVED)
		return; /* removed at runtime: nothing to judge */
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
	evrec_int(&r, "silent_ms", 10L * ctl_agent_heartbeat_ms(k->ctl));
	ctl_log(k->ctl, &r);
}

void ctl_agents_init(struct ctl *c)
{
	ctl_conn_role_register(c, CTL_ROLE_AGENT, ctl_agent_closed);
}

int ctl_agents_start(struct ctl *c)
{
	int n = ctl_node_room(c);
	struct ctl_agents *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	c->agents = a;
	a->node_timer = calloc(n + 1, sizeof(struct event *));
	a->deadline = calloc(n + 1, sizeof(*a->deadline));
	a->reject_last = calloc(n + 1, sizeof(*a->reject_last));
	if (!a->node_timer || !a->deadline || !a->reject_last)
		return -ENOMEM;
	a->nnodes = n; /* every slot, those for nodes added at runtime too */
	for (int i = 0; i < n; i++) {
		a->deadline[i] = (struct ctl_deadline){c, i};
		a->node_timer[i] = evtimer_new(c->base, on_node_deadline, &a->deadline[i]);
	}
	return 0;
}

void ctl_agents_node_drop(struct ctl *c, int node)
{
	struct ctl_agents *a = c->agents;

	if (!a || node < 0 || node >= a->nnodes)
		return;
	evtimer_del(a->node_timer[node]);
	a->reject_last[node][0] = '\0';
	for (struct ctl_conn *k = c->conns, *next; k; k = next) {
		next = k->next;
		if ((k->flags & (CTL_C_AGENT | CTL_C_CHALLENGED)) && k->node == node)
			ctl_conn_fatal(k, "ERR this node was removed from the cluster");
	}
	a->deadline[node].agents = 0;
}

void ctl_agents_free(struct ctl *c)
{
	struct ctl_agents *a = c->agents;

	if (!a)
		return;
	for (int i = 0; a->node_timer && i < a->nnodes; i++)
		if (a->node_timer[i])
			event_free(a->node_timer[i]);
	free(a->node_timer);
	free(a->deadline);
	free(a->reject_last);
	free(a);
	c->agents = NULL;
}

/* FLATLINE PROVE <node> <nonce>: before it sends a password or the cluster secret,
 * the CLI asks the controller to prove it holds a node's key, for this
 * connection's two ends (auth_cli_proof). FLATLINE PROVE * <nonce>: the same under
 * K_cli (auth_cli_key), which only a holder of the cluster secret can derive; a
 * CLI whose file has the secret asks this one. Open to anyone: the answer proves
 * only this connection, and its role string makes it of no use in an agent
 * handshake. */
void ctl_on_flatline_prove(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct sockaddr_storage cl, sv;
	socklen_t cl_len = sizeof(cl), sv_len = sizeof(sv);
	uint8_t key[AUTH_KEY_LEN], nonce[AUTH_NONCE_LEN], proof[AUTH_MAC_LEN];
	char hex[AUTH_HEX_LEN + 1];
	const struct cfg_node *cn;
	const char *secret = k->ctl->cfg->secret, *node;
	int fd = k->rev ? event_get_fd(k->rev) : bufferevent_getfd(k->bev);

	if (cmd->argc != 4 || auth_unhex(cmd->argv[3], cmd->lens[3], nonce, sizeof(nonce))) {
		resp_error_reply(out, "ERR usage: FLATLINE PROVE <node>|* <nonce: 64 hex digits>");
		return;
	}
	if (cmd->lens[2] == 1 && cmd->argv[2][0] == AUTH_CLI_NODE[0]) {
		/* K_cli: only a holder of the cluster secret can make this proof. */
		if (!secret[0]) {
			resp_error_reply(out, "ERR this controller's file has no cluster secret: "
					      "it can prove only a node's key");
			return;
		}
		if (auth_cli_key(secret, strlen(secret), key)) {
			resp_error_reply(out, "ERR failed to make the proof");
			return;
		}
		node = AUTH_CLI_NODE;
	} else {
		cn = cfg_find_node(k->ctl->cfg, cmd->argv[2]);
		if (!cn || auth_key_for(cn->key, secret, cn->id, key)) {
			resp_error_reply(out, "ERR no key for this node on the controller");
			return;
		}
		node = cn->id;
	}
	if (getpeername(fd, (struct sockaddr *)&cl, &cl_len) ||
	    getsockname(fd, (struct sockaddr *)&sv, &sv_len) ||
	    auth_cli_proof(key, node, nonce, (struct sockaddr *)&cl, (struct sockaddr *)&sv,
			   proof)) {
		resp_error_reply(out, "ERR failed to make the proof");
		return;
	}
	auth_hex(proof, sizeof(proof), hex);
	resp_str(out, hex);
}
