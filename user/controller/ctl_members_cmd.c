// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The commands over runtime membership (ctl_members.c): FLATLINE NODE ADD|REMOVE,
 * FLATLINE SHARD ADD|REMOVE, and Sentinel's MONITOR, REMOVE and RESET. Each change
 * needs AUTH <cluster secret> (the admin class); its answer waits until it is kept. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "controller/ctl.h"
#include "controller/ctl_conn.h"
#include "controller/ctl_members.h"

/* A change's answer, once it is kept (or failed). */
struct answer {
	unsigned long long conn;
	int steps; /* MONITOR: the shard, then its primary */
	struct mb_entry next;
	char by[80];
	char monitor[300]; /* MONITOR: "+monitor" message once done */
};

static struct ctl_conn *conn_by_id(struct ctl *c, unsigned long long id)
{
	for (struct ctl_conn *k = c->conns; k; k = k->next)
		if (k->id == id)
			return k;
	return NULL;
}

static void reply_err(struct evbuffer *out, const char *prefix, const char *why)
{
	char e[300];

	snprintf(e, sizeof(e), "%s%s", prefix, why);
	resp_error_reply(out, e);
}

static void on_done(struct ctl *c, void *ctx, int err, const char *why)
{
	struct answer *a = ctx;
	struct ctl_conn *k = conn_by_id(c, a->conn);
	struct evbuffer *out = k ? bufferevent_get_output(k->bev) : NULL;
	char w[240];

	if (!err && a->steps > 1) {
		a->steps--;
		if (!ctl_members_change(c, &a->next, a->by, on_done, a, w, sizeof(w)))
			return;
		err = -EINVAL;
		why = w;
	}
	if (!err && a->monitor[0]) {
		struct fo_shard *s = fo_find_shard(&c->fo, a->next.shard);

		ctl_event_sentinel(c, "+monitor", a->monitor);
		if (s)
			ctl_members_scan_shard(c, s->idx);
	}
	if (k) {
		if (err)
			reply_err(out, "ERR ", why);
		else
			resp_status(out, "OK");
		if (k->flags & CTL_C_WAITING)
			ctl_conn_resume(k);
	}
	free(a);
}

/* Starts the change (then, for MONITOR, the next); answered by on_done. */
static void change(struct ctl_conn *k, const struct mb_entry *e, const struct mb_entry *next,
		   const char *monitor)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct answer *a = calloc(1, sizeof(*a));
	char why[240];

	if (!a) {
		resp_error_reply(out, "ERR out of memory");
		return;
	}
	a->conn = k->id;
	a->steps = next ? 2 : 1;
	if (next)
		a->next = *next;
	snprintf(a->by, sizeof(a->by), "%s", k->peer);
	snprintf(a->monitor, sizeof(a->monitor), "%s", monitor ? monitor : "");
	k->flags |= CTL_C_WAITING; /* resumed by on_done (at once with one controller) */
	if (ctl_members_change(c, e, k->peer, on_done, a, why, sizeof(why))) {
		k->flags &= ~CTL_C_WAITING;
		reply_err(out, monitor && strstr(why, "exists") ? "" : "ERR ",
			  monitor && strstr(why, "exists") ? "ERR Duplicated master name" : why);
		free(a);
	}
}

static bool may_change(struct ctl_conn *k)
{
	if (k->flags & CTL_C_AUTH)
		return true;
	resp_error_reply(bufferevent_get_output(k->bev),
			 "NOAUTH Authentication required (AUTH <cluster secret>).");
	return false;
}

void ctl_on_members(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	const char *const *argv = (const char *const *)cmd->argv;
	struct mb_entry e;
	char why[240];
	bool node = ARG_IS(1, "NODE");

	if (cmd->argc < 4 || (!ARG_IS(2, "ADD") && !ARG_IS(2, "REMOVE"))) {
		resp_error_reply(out,
				 node ? "ERR usage: FLATLINE NODE ADD <shard> <node> ADDRESS "
					"<ip> REDIS <host:port> [PRIORITY <n>] [SPARE] | "
					"FLATLINE NODE REMOVE <shard> <node>"
				      : "ERR usage: FLATLINE SHARD ADD <name> [DNS-NAME <name>] | "
					"FLATLINE SHARD REMOVE <name>");
		return;
	}
	if (!may_change(k))
		return;
	memset(&e, 0, sizeof(e));
	if (ARG_IS(2, "ADD")) {
		int rc = node ? mb_node_args(cmd->argc - 3, argv + 3, &e, why, sizeof(why))
			      : mb_shard_args(cmd->argc - 3, argv + 3, &e, why, sizeof(why));

		if (rc) {
			reply_err(out, "ERR ", why);
			return;
		}
	} else if (node) {
		struct fo_node *n = cmd->argc == 5 ? fo_find_node(&k->ctl->fo, argv[4]) : NULL;
		struct fo_shard *s = cmd->argc == 5 ? fo_find_shard(&k->ctl->fo, argv[3]) : NULL;

		if (cmd->argc != 5) {
			resp_error_reply(out, "ERR usage: FLATLINE NODE REMOVE <shard> <node>");
			return;
		}
		if (!s || !n ||
		    (n->shard != s->idx && strcmp(k->ctl->cfg->nodes[n->idx].spare_for, s->name))) {
			snprintf(why, sizeof(why), "no node %.64s in shard %.64s", argv[4],
				 argv[3]);
			reply_err(out, "ERR ", why);
			return;
		}
		e.kind = MB_DROP_NODE;
		snprintf(e.id, sizeof(e.id), "%s", argv[4]);
	} else {
		if (cmd->argc != 4) {
			resp_error_reply(out, "ERR usage: FLATLINE SHARD REMOVE <name>");
			return;
		}
		e.kind = MB_DROP_SHARD;
		snprintf(e.id, sizeof(e.id), "%.64s", argv[3]);
	}
	change(k, &e, NULL, NULL);
}

/* SENTINEL MONITOR <name> <ip> <port> <quorum>: a shard whose primary is that server;
 * its replicas are found in the primary's INFO and added (+slave). */
static void monitor(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct mb_entry s = {.kind = MB_SHARD, .discover = true}, n = {.kind = MB_NODE};
	const char *ip = cmd->argv[3];
	unsigned char a[16];
	char *end, msg[300], why[240];
	long port, quorum;

	port = strtol(cmd->argv[4], &end, 10);
	if (!cmd->argv[4][0] || *end) {
		resp_error_reply(out, "ERR Invalid port");
		return;
	}
	quorum = strtol(cmd->argv[5], &end, 10);
	if (!cmd->argv[5][0] || *end) {
		resp_error_reply(out, "ERR Invalid quorum");
		return;
	}
	if (quorum <= 0) {
		resp_error_reply(out, "ERR Quorum must be 1 or greater.");
		return;
	}
	if (inet_pton(AF_INET, ip, a) != 1 && inet_pton(AF_INET6, ip, a) != 1) {
		resp_error_reply(out, "ERR Invalid IP address or hostname specified");
		return;
	}
	if (port <= 0 || port > 65535) {
		resp_error_reply(out, "ERR Invalid port number");
		return;
	}
	if (fo_find_shard(&k->ctl->fo, cmd->argv[2])) {
		resp_error_reply(out, "ERR Duplicated master name");
		return;
	}
	if (!may_change(k))
		return;
	snprintf(s.id, sizeof(s.id), "%.64s", cmd->argv[2]);
	if (mb_check(&s, why, sizeof(why)) || mb_node_id(s.id, ip, (int)port, n.id, sizeof(n.id))) {
		reply_err(out, "ERR ", why[0] ? why : "master name too long");
		return;
	}
	snprintf(n.shard, sizeof(n.shard), "%s", s.id);
	snprintf(n.address, sizeof(n.address), "%s", ip);
	snprintf(n.redis, sizeof(n.redis), strchr(ip, ':') ? "[%s]:%ld" : "%s:%ld", ip, port);
	n.priority = 100;
	if (mb_check(&n, why, sizeof(why))) {
		reply_err(out, "ERR ", why);
		return;
	}
	snprintf(msg, sizeof(msg), "master %s %s %ld quorum %ld", s.id, ip, port, quorum);
	change(k, &s, &n, msg);
}

bool ctl_members_sentinel(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct ctl *c = k->ctl;
	struct evbuffer *out = bufferevent_get_output(k->bev);
	const char *sub = cmd->argv[1];

	if (!strcasecmp(sub, "monitor")) {
		if (cmd->argc != 6) {
			resp_error_reply(
			    out, "ERR wrong number of arguments for 'sentinel|monitor' command");
			return true;
		}
		monitor(k, cmd); /* checks what Sentinel checks, then AUTH */
		return true;
	}
	if (!strcasecmp(sub, "remove")) {
		struct fo_shard *s = cmd->argc == 3 ? fo_find_shard(&c->fo, cmd->argv[2]) : NULL;
		struct mb_entry e = {.kind = MB_DROP_SHARD};
		char msg[300];

		if (cmd->argc != 3) {
			resp_error_reply(
			    out, "ERR wrong number of arguments for 'sentinel|remove' command");
			return true;
		}
		if (!s) {
			resp_error_reply(out, "ERR No such master with that name");
			return true;
		}
		if (!may_change(k))
			return true;
		snprintf(msg, sizeof(msg), "master %s %s %d", s->name,
			 s->primary >= 0 ? c->fo.nodes[s->primary].host : "?",
			 s->primary >= 0 ? c->fo.nodes[s->primary].port : 0);
		snprintf(e.id, sizeof(e.id), "%s", s->name);
		{
			char why[240];
			struct answer *a = calloc(1, sizeof(*a));

			if (!a) {
				resp_error_reply(out, "ERR out of memory");
				return true;
			}
			a->conn = k->id;
			a->steps = 1;
			k->flags |= CTL_C_WAITING;
			if (ctl_members_change(c, &e, k->peer, on_done, a, why, sizeof(why))) {
				k->flags &= ~CTL_C_WAITING;
				reply_err(out, "ERR ", why);
				free(a);
				return true;
			}
			ctl_event_sentinel(c, "-monitor", msg);
		}
		return true;
	}
	if (!strcasecmp(sub, "reset") && cmd->argc == 3) {
		int n = 0;

		if (!may_change(k))
			return true;
		/* Sentinel's reset: forget what was learnt, find the replicas again. */
		for (int i = 0; i < c->fo.nshards; i++) {
			struct fo_shard *s = &c->fo.shards[i];

			if (s->removed || fnmatch(cmd->argv[2], s->name, 0))
				continue;
			s->flags &= ~FO_S_NO_GOOD_REPLICA;
			s->blocked_why[0] = '\0';
			ctl_members_scan_shard(c, i);
			n++;
		}
		resp_int(out, n);
		return true;
	}
	return false;
}
