// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The server's cluster bus port (Redis/Valkey Cluster), which the write lease leaves
 * unmarked: the nodes' gossip, failure reports and failover votes acknowledge no
 * client's write, and a primary whose lease ran out must still answer them (a replica
 * whose bus replies were cut would look failed to the cluster, and could not be
 * elected). INFO says cluster_enabled; the port, in order:
 *
 *   CONFIG GET cluster-port   the port the server binds (0: its port + 10000, the
 *                             servers' rule); RESP2's array or RESP3's map
 *   CLUSTER NODES             refused (a renamed command, an ACL): the "@cport" of the
 *                             line flagged myself (the port it announces)
 *   neither                   no port is guessed: every socket stays marked, the bus's
 *                             too, said once (a client listener taken for the bus would
 *                             answer clients past the lease; the bus marked is cut only
 *                             once the lease runs out)
 *
 * The lease does not wait for it: the server's sockets are marked at once, the bus's
 * too, and scanned again, the bus left out, when the answer comes (agent_lease.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include "common/log.h"
#include "agent/agent_layers.h"

static long tcp_port(const struct agent *a)
{
	const struct srv_state *st = srvmon_state(a->srv);

	return st->info.tcp_port > 0 ? st->info.tcp_port : a->me->redis.port;
}

int agent_bus_config_port(const redisReply *r, long port, uint16_t *bus)
{
	const redisReply *v;
	char *end;
	long p;

	*bus = 0;
	if (!r || r->elements != 2 ||
	    (r->type != REDIS_REPLY_ARRAY
#ifdef REDIS_REPLY_MAP /* hiredis 1.0: RESP3 */
	     && r->type != REDIS_REPLY_MAP
#endif
	     ))
		return -EINVAL;
	v = r->element[1];
	if (v->type != REDIS_REPLY_STRING || !v->len)
		return -EINVAL;
	errno = 0;
	p = strtol(v->str, &end, 10);
	if (errno || *end || p < 0 || p > 65535)
		return -EINVAL;
	if (!p)
		p = port > 0 && port + 10000 <= 65535 ? port + 10000 : 0;
	if (!p || p == port)
		return -EINVAL;
	*bus = (uint16_t)p;
	return 0;
}

/* Whether the comma-separated list s[0..n) has the word w. */
static bool has_word(const char *s, size_t n, const char *w)
{
	size_t wl = strlen(w);

	for (const char *p = s, *end = s + n; p < end;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t l = c ? (size_t)(c - p) : (size_t)(end - p);

		if (l == wl && !memcmp(p, w, wl))
			return true;
		p += l + 1;
	}
	return false;
}

int agent_bus_nodes_port(const char *text, size_t len, long port, uint16_t *bus)
{
	const char *end = text + len;

	*bus = 0;
	for (const char *p = text; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
		const char *f[3], *q = p, *at, *d;
		size_t fl[3];
		int nf = 0;
		long v = 0;

		p = nl ? nl + 1 : end;
		/* <id> <ip:port@cport[,hostname]> <flags> ... */
		while (nf < 3 && q < le) {
			f[nf] = q;
			while (q < le && *q != ' ')
				q++;
			fl[nf] = (size_t)(q - f[nf]);
			nf++;
			while (q < le && *q == ' ')
				q++;
		}
		if (nf < 3 || !has_word(f[2], fl[2], "myself"))
			continue;
		at = memchr(f[1], '@', fl[1]);
		if (!at)
			return -ENOENT;
		for (d = at + 1; d < f[1] + fl[1] && *d >= '0' && *d <= '9' && v <= 65535; d++)
			v = v * 10 + (*d - '0');
		if (d == at + 1 || (d < f[1] + fl[1] && *d != ',') || v <= 0 || v > 65535 ||
		    v == port)
			return -EINVAL;
		*bus = (uint16_t)v;
		return 0;
	}
	return -ENOENT;
}

/* The bus port of pid is known: port, or 0 (every socket marked). */
static void learnt(struct agent *a, pid_t pid, uint16_t port, const char *how)
{
	a->bus.asked = 0;
	a->bus.pid = pid;
	a->bus.port = port;
	if (port)
		pr_info("the server (pid %d) is a cluster node: its bus port %u (%s) stays outside "
			"the write lease\n",
			(int)pid, port, how);
	agent_lease_rescan(a);
}

/* The answer's error text, for a warning. */
static const char *why(const redisReply *r)
{
	if (!r)
		return "no answer";
	if (r->type == REDIS_REPLY_ERROR)
		return r->str;
	return "unreadable answer";
}

static void on_cluster_nodes(void *ctx, redisReply *r, void *priv)
{
	struct agent *a = priv; /* ctx is the monitor's (srvmon_send) */
	pid_t pid = a->bus.asked;
	uint16_t port = 0;

	(void)ctx;
	if (!r || pid != srvmon_state(a->srv)->pid) {
		a->bus.asked = 0; /* the link dropped, or another process now: asked again */
		return;
	}
	if ((r->type == REDIS_REPLY_STRING
#ifdef REDIS_REPLY_VERB /* hiredis 1.0: RESP3's verbatim string */
	     || r->type == REDIS_REPLY_VERB
#endif
	     ) &&
	    !agent_bus_nodes_port(r->str, r->len, tcp_port(a), &port)) {
		learnt(a, pid, port, "CLUSTER NODES");
		return;
	}
	if (!a->bus.warned)
		pr_warn("failed to learn the server's cluster bus port (CONFIG GET cluster-port: "
			"%s; CLUSTER NODES: %.100s): every socket of the server stays marked, its "
			"bus's too, whose replies are then cut with the clients' once the write "
			"lease runs out (the cluster may take this node for failed); let the "
			"agent's user run CONFIG GET or CLUSTER NODES\n",
			a->bus.err, why(r));
	a->bus.warned = true;
	learnt(a, pid, 0, NULL);
}

static void on_cluster_port(void *ctx, redisReply *r, void *priv)
{
	struct agent *a = priv; /* ctx is the monitor's (srvmon_send) */
	pid_t pid = a->bus.asked;
	const char *argv[] = {"CLUSTER", "NODES"};
	uint16_t port;

	(void)ctx;
	if (!r || pid != srvmon_state(a->srv)->pid) {
		a->bus.asked = 0; /* the link dropped, or another process now: asked again */
		return;
	}
	if (!agent_bus_config_port(r, tcp_port(a), &port)) {
		learnt(a, pid, port, "cluster-port");
		return;
	}
	/* Refused (renamed, an ACL) or unreadable: the cluster's own table says it. */
	snprintf(a->bus.err, sizeof(a->bus.err), "%s", why(r));
	if (srvmon_send(a->srv, 2, argv, on_cluster_nodes, a))
		a->bus.asked = 0;
}

int agent_bus_port(struct agent *a, pid_t pid, uint16_t *port)
{
	const struct srv_state *st = srvmon_state(a->srv);
	const char *argv[] = {"CONFIG", "GET", "cluster-port"};

	*port = 0;
	/* A server that answers no INFO (stopped or hung since the agent started, whose
	 * pid came from its pidfile; or its credentials refused) is taken as no cluster
	 * node for now: every socket marked at once, the bus too (its replies cut with the
	 * clients' once the lease runs out, as before the bus was known), and scanned
	 * again, the bus left out, once INFO says it is a cluster node. */
	if (!st->have_info)
		return 1;
	/* (pid is the process the monitor took from this INFO: for a server in its own
	 * pid namespace it is not INFO's process_id, which is that namespace's number.) */
	if (!st->info.cluster_enabled)
		return 1;
	if (a->bus.pid == pid) {
		*port = a->bus.port;
		return 1;
	}
	if (a->bus.asked != pid && !srvmon_send(a->srv, 3, argv, on_cluster_port, a))
		a->bus.asked = pid;
	return 0;
}
