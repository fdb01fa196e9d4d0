// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The agent's write lease glue (agent/lease.h decides, bpf/lease.bpf.c enforces
 * through kern/lease_watch): renewals from controller answers and peer round
 * trips, taking and dropping it in the kernel, and the connections allowed
 * without it (ours, then CLIENT LIST's). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include "common/clock.h"
#include "common/log.h"
#include "agent/agent_internal.h"

/* --- the write lease ------------------------------------------------------ */

static uint64_t now_ns(void)
{
	return fl_clock_ns(CLOCK_MONOTONIC);
}

static void add_ago(struct evrec *r, const char *key, uint64_t now, uint64_t t)
{
	if (!t)
		evrec_str(r, key, NULL);
	else
		evrec_uint(r, key, now > t ? (now - t) / 1000000 : 0);
}

/* The freshest round trip to any peer: when its reply reached us (0: none). */
static uint64_t peer_rt_ns(const struct agent *a)
{
	uint64_t t = 0;

	for (int i = 0; a->probe && i < probe_npeers(a->probe); i++)
		if (probe_peer(a->probe, i)->rt_recv_ns > t)
			t = probe_peer(a->probe, i)->rt_recv_ns;
	return t;
}

/* What the lease rests on: the last renewal and the last round trips. */
static void lease_evidence(struct agent *a, struct evrec *r, uint64_t now)
{
	evrec_str(r, "source", lease_source_name(a->lease.k.source));
	add_ago(r, "renewed_ago_ms", now, a->lease.k.renewed_ns);
	add_ago(r, "controller_answer_ago_ms", now, a->ctl_answer_ns);
	add_ago(r, "peer_round_trip_ago_ms", now, peer_rt_ns(a));
	evrec_int(r, "epoch", a->lease.k.epoch);
	evrec_str(r, "controller_primary", a->ctl_primary);
	evrec_int(r, "lease_ms", a->cfg->agent.lease_ms);
}

static void lease_lost(struct agent *a, const char *reason, uint64_t now)
{
	struct evrec r;

	if (!a->lease_held)
		return;
	a->lease_held = false;
	a->lease_lost_ns = now;
	evrec_begin(&r, NULL, a->node, "lease_lost");
	evrec_str(&r, "reason", reason);
	lease_evidence(a, &r, now);
	evrec_uint(&r, "dropped_total", lease_watch_count(a->lw, FL_LC_DROPPED));
	agent_log(a, &r);
	pr_warn("write lease lost (%s): the server's replies no longer reach clients\n", reason);
}

/* The lease as the kernel has it: taken (not waiting for a CLIENT LIST), unexpired. */
bool kernel_held(const struct agent *a, uint64_t now)
{
	return a->lw && !a->grant_pending && lease_held(&a->lease, now);
}

static void lease_regained(struct agent *a, int killed)
{
	uint64_t now = now_ns();
	struct evrec r;

	a->lease_held = true;
	evrec_begin(&r, NULL, a->node, "lease_regained");
	lease_evidence(a, &r, now);
	add_ago(&r, "without_ms", now, a->lease_lost_ns);
	evrec_int(&r, "connections_closed", killed);
	agent_log(a, &r);
	pr_info("write lease held (from the %s)\n", lease_source_name(a->lease.k.source));
}

/* Takes the lease in the kernel. If the kernel dropped replies since it was last
 * taken, those replies (writes executed, never acknowledged) still wait in their
 * sockets for a retransmission: the server's client connections are destroyed first
 * (SOCK_DESTROY), all but the allowed ones, so that none reaches anyone once a
 * failover may have happened; clients reconnect. */
static void lease_take(struct agent *a)
{
	uint64_t dropped = lease_watch_count(a->lw, FL_LC_DROPPED);
	int killed = 0, err;

	if (dropped != a->lease.k.dropped_mark) {
		killed = lease_kill_conns(a->me->redis.port, a->allow, a->nallow);
		if (killed < 0) {
			pr_warn("failed to close the server's client connections: %s; lease not "
				"taken\n",
				strerror(-killed));
			return;
		}
	}
	a->lease.k.dropped_mark = dropped;
	err = lease_watch_write(a->lw, &a->lease.k);
	if (err) {
		pr_warn("failed to write the lease map: %s\n", strerror(-err));
		return;
	}
	if (!a->lease_held)
		lease_regained(a, killed);
}

/* Writes a change to the kernel. A lease coming back after drops waits for a fresh
 * CLIENT LIST first, so that a controller or replica connection made while it was
 * out is not taken for a client (lease_take). */
static void lease_apply(struct agent *a, enum lease_change ch, const char *why)
{
	int err;

	if (ch == LEASE_SAME || !a->lw)
		return;
	if (ch == LEASE_REVOKED) {
		a->grant_pending = false;
		err = lease_watch_write(a->lw, &a->lease.k);
		if (err)
			pr_warn("failed to write the lease map: %s\n", strerror(-err));
		lease_lost(a, why, now_ns());
		return;
	}
	if (a->grant_pending)
		return; /* the CLIENT LIST answer takes it, with the latest deadline */
	if (ch == LEASE_GRANTED &&
	    lease_watch_count(a->lw, FL_LC_DROPPED) != a->lease.k.dropped_mark) {
		a->grant_pending = true;
		lease_poll_clients(a, true);
		return;
	}
	lease_take(a);
}

void lease_drop(struct agent *a, const char *why)
{
	if (a->lw)
		lease_apply(a, lease_give_up(&a->lease), why);
}

/* Once per heartbeat: a lease that ran out unrenewed is lost. */
void lease_tick(struct agent *a)
{
	uint64_t now = now_ns();

	if (a->lw && a->lease_held && !lease_held(&a->lease, now))
		lease_lost(a, "expired", now);
}

static void sync_allow(struct agent *a, const struct fl_lease_conn *c, const __u32 *kind, int n)
{
	int err;

	a->nallow = 0;
	if (a->have_own) {
		a->allow[0] = a->own;
		a->allow_kind[0] = FL_LEASE_ALLOW_AGENT;
		a->nallow = 1;
	}
	for (int i = 0; i < n && a->nallow < FL_LEASE_MAX_ALLOW; i++) {
		if (a->have_own && !memcmp(&c[i], &a->own, sizeof(a->own)))
			continue;
		a->allow[a->nallow] = c[i];
		a->allow_kind[a->nallow++] = kind[i];
	}
	err = lease_watch_set_allow(a->lw, a->allow, a->allow_kind, a->nallow);
	if (err)
		pr_warn("failed to update the lease's allowed connections: %s\n", strerror(-err));
}

/* The monitor connection is up: allow it before its first command goes out. */
void on_srv_connected(void *ctx, int fd)
{
	struct agent *a = ctx;
	struct sockaddr_storage ss = {0};
	socklen_t len = sizeof(ss);

	if (!a->lw)
		return;
	a->have_own = fd >= 0 && !getsockname(fd, (struct sockaddr *)&ss, &len) &&
		      (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
	if (a->have_own)
		lease_conn_make(&a->own, (struct sockaddr *)&ss);
	/* Keep the others known so far (their kinds are kept with them). */
	sync_allow(a, a->allow + (a->nallow && a->allow_kind[0] == FL_LEASE_ALLOW_AGENT),
		   a->allow_kind + (a->nallow && a->allow_kind[0] == FL_LEASE_ALLOW_AGENT),
		   a->nallow - (a->nallow && a->allow_kind[0] == FL_LEASE_ALLOW_AGENT));
}

/* "addr=1.2.3.4:5678" (or "[::1]:5678") of a CLIENT LIST line into k. */
static bool client_addr(const char *line, struct fl_lease_conn *k)
{
	const char *p = strstr(line, " addr="), *colon, *end;
	char host[64], *pend;
	long port;
	size_t n;

	if (!p)
		return false;
	p += 6;
	end = p + strcspn(p, " \n");
	for (colon = end; colon > p && *colon != ':'; colon--)
		;
	if (colon == p)
		return false;
	n = colon - p;
	if (n && p[0] == '[' && p[n - 1] == ']') {
		p++;
		n -= 2;
	}
	if (n >= sizeof(host))
		return false;
	memcpy(host, p, n);
	host[n] = '\0';
	errno = 0;
	port = strtol(colon + 1, &pend, 10);
	if (errno || pend == colon + 1 || port <= 0 || port > 65535)
		return false;
	return !lease_conn_parse(k, host, (uint16_t)port);
}

static bool client_field(const char *line, const char *key, const char *want, bool word)
{
	const char *p = strstr(line, key);
	size_t n;

	if (!p)
		return false;
	p += strlen(key);
	n = strcspn(p, " \n");
	if (word)
		return n == strlen(want) && !strncmp(p, want, n);
	return memchr(p, want[0], n) != NULL;
}

static void on_client_list(void *ctx, redisReply *r, void *priv)
{
	static struct fl_lease_conn c[FL_LEASE_MAX_ALLOW];
	static __u32 kind[FL_LEASE_MAX_ALLOW];
	struct agent *a = priv; /* ctx is the monitor's (srvmon_send) */
	char line[1024];
	int n = 0;

	(void)ctx;
	if (!r || r->type != REDIS_REPLY_STRING || !a->lw)
		return;
	for (const char *p = r->str; *p && n < FL_LEASE_MAX_ALLOW;) {
		size_t len = strcspn(p, "\n");
		__u32 k = 0;

		/* A leading space: every key is then found as " key=". */
		snprintf(line, sizeof(line), " %.*s", (int)len, p);
		p += len + (p[len] == '\n');
		if (client_field(line, " flags=", "S", false))
			k = FL_LEASE_ALLOW_REPLICA;
		else if (client_field(line, " name=", "flatline-controller", true))
			k = FL_LEASE_ALLOW_CONTROLLER;
		if (k && client_addr(line, &c[n]))
			kind[n++] = k;
	}
	sync_allow(a, c, kind, n);
	if (a->grant_pending) {
		a->grant_pending = false;
		if (lease_held(&a->lease, now_ns()))
			lease_take(a);
	}
}

/* Every heartbeat while the lease is not held (the list then decides who is
 * served), every tenth while it is (so that it is current when the lease runs out);
 * now: at once (a lease waiting to be taken). */
void lease_poll_clients(struct agent *a, bool now)
{
	static unsigned int n;
	const char *argv[] = {"CLIENT", "LIST"};

	if (a->lw && (now || !kernel_held(a, now_ns()) || n++ % 10 == 0))
		srvmon_send(a->srv, 2, argv, on_client_list, a);
}

void on_round_trip(void *ctx, const struct probe_peer_info *peer, uint64_t sent_ns)
{
	struct agent *a = ctx;

	(void)peer;
	if (a->lw)
		lease_apply(a, lease_on_peer(&a->lease, now_ns(), sent_ns), "peer");
}

int start_lease(struct agent *a)
{
	struct fl_lease_state st;
	int err;

	demote_init(&a->demote);
	if (!a->cfg->agent.lease_ms)
		return 0;
	if (a->cfg->controller.shadow) {
		/* [controller] mode = shadow: no write lease (and so no self-demotion,
		 * which needs it): another system decides who writes. */
		pr_info("shadow mode: no write lease\n");
		return 0;
	}
	if (!a->me->redis.port || a->me->redis.unix_path[0]) {
		pr_warn("the write lease guards TCP only: %s is a unix socket, lease off\n",
			a->me->redis_str);
		return 0;
	}
	err = lease_watch_open(&a->lw, a->node, a->me->redis.port);
	if (err)
		return err;
	err = lease_watch_read(a->lw, &st);
	if (err)
		return err;
	lease_init(&a->lease, &st, (uint64_t)a->cfg->agent.lease_ms * 1000000);
	/* A lease left by a previous agent still runs: kept, renewed as before. */
	a->lease_held = lease_held(&a->lease, now_ns());
	pr_info("write lease for port %d: %s, pins in %s\n", a->me->redis.port,
		a->lease_held ? "held (left by the previous agent)" : "not held",
		lease_watch_pin_dir(a->lw));
	return 0;
}

void lease_answer(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns)
{
	const struct srv_state *st = srvmon_state(a->srv);
	bool replica = st->have_info && st->info.role == INFO_ROLE_SLAVE;
	uint64_t now = now_ns();

	if (!a->lw)
		return;
	/* A server that is not answering takes no lease: the controller may be failing
	 * over because of it, and this answer may be an old one. */
	if (st->proc != SRV_UP && st->proc != SRV_BUSY && !lease_held(&a->lease, now) && primary &&
	    !strcmp(primary, a->node))
		return;
	lease_apply(a,
		    lease_on_controller(&a->lease, now, sent_ns, epoch, primary, a->node, replica),
		    "revoked: the controller names another primary");
}
