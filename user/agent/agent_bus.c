// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The server's cluster bus port (Redis/Valkey Cluster), which the write lease leaves
 * unmarked: the nodes' gossip, failure reports and failover votes acknowledge no
 * client's write, and a primary whose lease ran out must still answer them (a replica
 * whose bus replies were cut would look failed to the cluster, and could not be
 * elected). INFO says cluster_enabled; CONFIG GET cluster-port gives the port (0: the
 * server's port + 10000, the servers' default; a refused CONFIG GET falls back to it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include "common/log.h"
#include "agent/agent_layers.h"

static uint16_t default_port(const struct agent *a)
{
	const struct srv_state *st = srvmon_state(a->srv);
	long port = st->info.tcp_port > 0 ? st->info.tcp_port : a->me->redis.port;

	return port > 0 && port + 10000 <= 65535 ? (uint16_t)(port + 10000) : 0;
}

static void on_cluster_port(void *ctx, redisReply *r, void *priv)
{
	struct agent *a = priv; /* ctx is the monitor's (srvmon_send) */
	pid_t pid = a->bus.asked;
	long port = 0;

	(void)ctx;
	a->bus.asked = 0;
	if (!r || pid != srvmon_state(a->srv)->pid)
		return; /* the link dropped, or another process now: asked again */
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[1]->type == REDIS_REPLY_STRING) {
		char *end;

		port = strtol(r->element[1]->str, &end, 10);
		if (*end || port < 0 || port > 65535)
			port = 0;
	} else if (!a->bus.warned) {
		pr_warn("failed to read the server's cluster-port (CONFIG GET cluster-port: %s); "
			"taking its port + 10000 as its cluster bus\n",
			r->type == REDIS_REPLY_ERROR ? r->str : "no answer");
		a->bus.warned = true;
	}
	a->bus.port = port ? (uint16_t)port : default_port(a);
	a->bus.pid = pid;
	pr_info("the server (pid %d) is a cluster node: its bus port %u stays outside the write "
		"lease\n",
		(int)pid, a->bus.port);
	agent_lease_rescan(a);
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
