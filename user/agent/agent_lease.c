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
#include "agent/lease.h"
#include "kern/lease_watch.h"
#include "agent/agent_layers.h"

/* The write lease's glue state; a->lease is NULL while the lease is off. */
struct agent_lease {
	struct lease_watch *lw; /* the kernel side: map, tcx programs, pins */
	struct lease_sm sm;	/* the pure decision (agent/lease.h) */
	bool held;		/* as written to the kernel and logged */
	bool grant_pending;	/* taken back after drops: waits for a fresh CLIENT LIST */
	bool revoke_written;	/* the last give-up is in the kernel: REPORTs may say revoked */
	uint64_t lost_ns;	/* when it was last lost (0: never held by this agent) */
	unsigned int polls;	/* CLIENT LIST polls asked while held (every tenth goes) */
	/* Connections that flow without the lease: ours, then CLIENT LIST's. */
	struct fl_lease_conn allow[FL_LEASE_MAX_ALLOW];
	__u32 allow_kind[FL_LEASE_MAX_ALLOW];
	int nallow;
	struct fl_lease_conn own; /* the monitor connection's far end as the server sees it */
	bool have_own;
	/* CLIENT LIST's answer, parsed (here rather than on the stack: 2 KiB). */
	struct fl_lease_conn listed[FL_LEASE_MAX_ALLOW];
	__u32 listed_kind[FL_LEASE_MAX_ALLOW];
};

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
static void add_evidence(struct agent *a, struct evrec *r, uint64_t now)
{
	const struct agent_lease *l = a->lease;

	evrec_str(r, "source", lease_source_name(l->sm.k.source));
	add_ago(r, "renewed_ago_ms", now, l->sm.k.renewed_ns);
	add_ago(r, "controller_answer_ago_ms", now, a->ctl.ns);
	add_ago(r, "peer_round_trip_ago_ms", now, peer_rt_ns(a));
	evrec_int(r, "epoch", l->sm.k.epoch);
	evrec_str(r, "controller_primary", a->ctl.primary);
	evrec_int(r, "lease_ms", a->cfg->agent.lease_ms);
}

static void mark_lost(struct agent *a, const char *reason, uint64_t now)
{
	struct agent_lease *l = a->lease;
	struct evrec r;

	if (!l->held)
		return;
	l->held = false;
	l->lost_ns = now;
	evrec_begin(&r, NULL, a->node, "lease_lost");
	evrec_str(&r, "reason", reason);
	add_evidence(a, &r, now);
	evrec_uint(&r, "dropped_total", lease_watch_count(l->lw, FL_LC_DROPPED));
	agent_out_log(a, &r);
	pr_warn("write lease lost (%s): the server's replies no longer reach clients\n", reason);
}

bool agent_lease_on(const struct agent *a)
{
	return a->lease != NULL;
}

bool agent_lease_held(const struct agent *a, uint64_t now)
{
	const struct agent_lease *l = a->lease;

	return l && !l->grant_pending && lease_held(&l->sm, now);
}

static void mark_regained(struct agent *a, int killed)
{
	struct agent_lease *l = a->lease;
	uint64_t now = now_ns();
	struct evrec r;

	l->held = true;
	evrec_begin(&r, NULL, a->node, "lease_regained");
	add_evidence(a, &r, now);
	add_ago(&r, "without_ms", now, l->lost_ns);
	evrec_int(&r, "connections_closed", killed);
	agent_out_log(a, &r);
	pr_info("write lease held (from the %s)\n", lease_source_name(l->sm.k.source));
}

/* Takes the lease in the kernel. If the kernel dropped replies since it was last
 * taken, those replies (writes executed, never acknowledged) still wait in their
 * sockets for a retransmission: the server's client connections are destroyed first
 * (SOCK_DESTROY), all but the allowed ones, so that none reaches anyone once a
 * failover may have happened; clients reconnect. */
static void take_in_kernel(struct agent *a)
{
	struct agent_lease *l = a->lease;
	uint64_t dropped = lease_watch_count(l->lw, FL_LC_DROPPED);
	int killed = 0, err;

	if (dropped != l->sm.k.dropped_mark) {
		killed = lease_kill_conns(a->me->redis.port, l->allow, l->nallow);
		if (killed < 0) {
			pr_warn("failed to close the server's client connections: %s; lease not "
				"taken\n",
				strerror(-killed));
			return;
		}
	}
	l->sm.k.dropped_mark = dropped;
	err = lease_watch_write(l->lw, &l->sm.k);
	if (err) {
		pr_warn("failed to write the lease map: %s\n", strerror(-err));
		return;
	}
	if (!l->held)
		mark_regained(a, killed);
}

/* Writes a change to the kernel. A lease coming back after drops waits for a fresh
 * CLIENT LIST first, so that a controller or replica connection made while it was
 * out is not taken for a client (take_in_kernel). */
static void apply_change(struct agent *a, enum lease_change ch, const char *why)
{
	struct agent_lease *l = a->lease;
	int err;

	if (ch == LEASE_SAME || !l)
		return;
	if (ch == LEASE_REVOKED) {
		/* In the kernel first: only then may a REPORT (or the event log) say so. */
		l->grant_pending = false;
		err = lease_watch_write(l->lw, &l->sm.k);
		l->revoke_written = !err;
		if (err)
			pr_warn("failed to write the lease map: %s\n", strerror(-err));
		mark_lost(a, why, now_ns());
		return;
	}
	if (l->grant_pending)
		return; /* the CLIENT LIST answer takes it, with the latest deadline */
	if (ch == LEASE_GRANTED &&
	    lease_watch_count(l->lw, FL_LC_DROPPED) != l->sm.k.dropped_mark) {
		l->grant_pending = true;
		agent_lease_poll_clients(a, true);
		return;
	}
	take_in_kernel(a);
}

void agent_lease_drop(struct agent *a, const char *why)
{
	if (a->lease)
		apply_change(a, lease_give_up(&a->lease->sm), why);
}

/* Once per heartbeat: a lease that ran out unrenewed is lost. */
void agent_lease_tick(struct agent *a)
{
	uint64_t now = now_ns();

	if (a->lease && a->lease->held && !lease_held(&a->lease->sm, now))
		mark_lost(a, "expired", now);
}

static void sync_allow(struct agent_lease *l, const struct fl_lease_conn *c, const __u32 *kind,
		       int n)
{
	int err;

	l->nallow = 0;
	if (l->have_own) {
		l->allow[0] = l->own;
		l->allow_kind[0] = FL_LEASE_ALLOW_AGENT;
		l->nallow = 1;
	}
	for (int i = 0; i < n && l->nallow < FL_LEASE_MAX_ALLOW; i++) {
		if (l->have_own && !memcmp(&c[i], &l->own, sizeof(l->own)))
			continue;
		l->allow[l->nallow] = c[i];
		l->allow_kind[l->nallow++] = kind[i];
	}
	err = lease_watch_set_allow(l->lw, l->allow, l->allow_kind, l->nallow);
	if (err)
		pr_warn("failed to update the lease's allowed connections: %s\n", strerror(-err));
}

/* The monitor connection is up: allow it before its first command goes out. */
void agent_lease_on_srv_connected(void *ctx, int fd)
{
	struct agent *a = ctx;
	struct agent_lease *l = a->lease;
	struct sockaddr_storage ss = {0};
	socklen_t len = sizeof(ss);
	int ours;

	if (!l)
		return;
	l->have_own = fd >= 0 && !getsockname(fd, (struct sockaddr *)&ss, &len) &&
		      (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
	if (l->have_own)
		lease_conn_make(&l->own, (struct sockaddr *)&ss);
	/* Keep the others known so far (their kinds are kept with them). */
	ours = l->nallow && l->allow_kind[0] == FL_LEASE_ALLOW_AGENT;
	sync_allow(l, l->allow + ours, l->allow_kind + ours, l->nallow - ours);
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
	struct agent *a = priv; /* ctx is the monitor's (srvmon_send) */
	struct agent_lease *l = a->lease;
	struct fl_lease_conn *c = l ? l->listed : NULL;
	__u32 *kind = l ? l->listed_kind : NULL;
	char line[1024];
	int n = 0;

	(void)ctx;
	if (!r || r->type != REDIS_REPLY_STRING || !l)
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
	sync_allow(l, c, kind, n);
	if (l->grant_pending) {
		l->grant_pending = false;
		if (lease_held(&l->sm, now_ns()))
			take_in_kernel(a);
	}
}

/* Every heartbeat while the lease is not held (the list then decides who is
 * served), every tenth while it is (so that it is current when the lease runs out);
 * now: at once (a lease waiting to be taken). */
void agent_lease_poll_clients(struct agent *a, bool now)
{
	const char *argv[] = {"CLIENT", "LIST"};

	if (a->lease && (now || !agent_lease_held(a, now_ns()) || a->lease->polls++ % 10 == 0))
		srvmon_send(a->srv, 2, argv, on_client_list, a);
}

void agent_lease_on_round_trip(void *ctx, const struct probe_peer_info *peer, uint64_t sent_ns)
{
	struct agent *a = ctx;

	(void)peer;
	if (a->lease)
		apply_change(a, lease_on_peer(&a->lease->sm, now_ns(), sent_ns), "peer");
}

int agent_lease_start(struct agent *a)
{
	struct fl_lease_state st;
	struct agent_lease *l;
	int err;

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
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	err = lease_watch_open(&l->lw, a->node, a->me->redis.port);
	if (!err)
		err = lease_watch_read(l->lw, &st);
	if (err) {
		lease_watch_close(l->lw);
		free(l);
		return err;
	}
	lease_init(&l->sm, &st, (uint64_t)a->cfg->agent.lease_ms * 1000000);
	/* A lease left by a previous agent still runs: kept, renewed as before. */
	l->held = lease_held(&l->sm, now_ns());
	a->lease = l;
	pr_info("write lease for port %d: %s, pins in %s\n", a->me->redis.port,
		l->held ? "held (left by the previous agent)" : "not held",
		lease_watch_pin_dir(l->lw));
	return 0;
}

void agent_lease_answer(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns)
{
	const struct srv_state *st = srvmon_state(a->srv);
	bool replica = st->have_info && st->info.role == INFO_ROLE_SLAVE;
	struct agent_lease *l = a->lease;
	uint64_t now = now_ns();

	if (!l)
		return;
	/* A server that is not answering takes no lease: the controller may be failing
	 * over because of it, and this answer may be an old one. */
	if (st->proc != SRV_UP && st->proc != SRV_BUSY && !lease_held(&l->sm, now) && primary &&
	    !strcmp(primary, a->node))
		return;
	apply_change(a, lease_on_controller(&l->sm, now, sent_ns, epoch, primary, a->node, replica),
		     "revoked: the controller names another primary");
}

/* The lease keys of a REPORT about to be sent. A lease given up stays revoked (every
 * REPORT says so, and no answer to one of them can bring it back: agent/lease.h) until
 * the server answers again; the first REPORT built after that no longer says revoked,
 * and only answers to it and later ones may grant the lease again. */
void agent_lease_report(struct agent *a, struct rep_msg *m)
{
	const struct srv_state *st = srvmon_state(a->srv);
	struct agent_lease *l = a->lease;
	uint64_t now = now_ns();
	const char *word;
	bool held;

	if (!l)
		return;
	if (lease_revoked(&l->sm) && (st->proc == SRV_UP || st->proc == SRV_BUSY))
		lease_allow_retake(&l->sm, now);
	held = agent_lease_held(a, now);
	word = held ? "held" : "lapsed";
	if (lease_revoked(&l->sm) && l->revoke_written)
		word = "revoked";
	rep_add_key(m, RK_LEASE, NULL, "%s", word);
	rep_add_key(m, RK_LEASE_MS_LEFT, NULL, "%llu",
		    held ? (unsigned long long)((l->sm.k.deadline_ns - now) / 1000000) : 0ull);
	rep_add_key(m, RK_LEASE_SOURCE, NULL, "%s", lease_source_name(l->sm.k.source));
}

void agent_lease_rescan(struct agent *a)
{
	if (a->lease && lease_watch_rescan(a->lease->lw) > 0)
		pr_info("write lease attached to new interfaces\n");
}

void agent_lease_close(struct agent *a)
{
	if (!a->lease)
		return;
	lease_watch_close(a->lease->lw); /* the pins stay: the lease outlives the agent */
	free(a->lease);
	a->lease = NULL;
}
