// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The agent's write lease glue (agent/lease.h decides, bpf/lease.bpf.c enforces
 * through kern/lease_watch): renewals from controller answers and peer round
 * trips, taking and dropping it in the kernel, the server's sockets marked (its
 * process, a new one as it comes), and the connections allowed without it, by socket
 * cookie: ours, then CLIENT LIST's replicas and the controller's proven connection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <sys/socket.h>
#include "common/auth.h"
#include "common/clock.h"
#include "common/log.h"
#include "agent/lease.h"
#include "kern/lease_watch.h"
#include "agent/agent_layers.h"

/* The write lease's glue state; a->lease is NULL while the lease is off. */
struct agent_lease {
	struct lease_watch *lw; /* the kernel side: maps, cgroup programs, pins */
	struct lease_sm sm;	/* the pure decision (agent/lease.h) */
	bool held;		/* as written to the kernel and logged */
	bool grant_pending;	/* taken back after drops: waits for a fresh CLIENT LIST */
	bool parked;		/* shadow mode heard: disarmed in the kernel (port 0), off */
	uint64_t opened_ns;	/* opened parked at this time: armed by a later report's answer */
	bool revoke_written;	/* the last give-up is in the kernel: REPORTs may say revoked */
	uint64_t lost_ns;	/* when it was last lost (0: never held by this agent) */
	unsigned int polls;	/* CLIENT LIST polls asked while held (every tenth goes) */
	/* Sockets of the server that flow without the lease, by cookie: ours, then
	 * CLIENT LIST's. */
	__u64 allow[FL_LEASE_MAX_ALLOW];
	__u32 allow_kind[FL_LEASE_MAX_ALLOW];
	int nallow;
	__u64 own; /* the server's end of the monitor connection */
	bool have_own;
	/* CLIENT LIST's answer, parsed (here rather than on the stack: 12 KiB). */
	__u64 listed[FL_LEASE_MAX_ALLOW];
	__u32 listed_kind[FL_LEASE_MAX_ALLOW];
	pid_t scanned;		   /* the server process whose sockets were marked (0: none yet) */
	uint16_t scanned_bus;	   /* the cluster bus port that scan left unmarked (0: none) */
	pid_t inherited;	   /* the one a previous agent of this node marked (0: none) */
	pid_t failed;		   /* the last one that could not be (said once) */
	uint8_t key[AUTH_KEY_LEN]; /* the node's key: proves the controller's connection */
	bool have_key;
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

/* Whether a peer is another node of this node's shard, by id and address as the
 * cluster file names it, and admitted by the controller's grant in force (agent/admit.h:
 * every one before a grant). Only those renew the lease: the controller bounds the old
 * primary's lease by what each of them reports (lease_wait.c), and a `--peer` extra
 * reports nothing to it (its answers would renew out of the controller's sight). */
static bool shard_peer(const struct agent *a, const struct probe_peer_info *peer)
{
	const struct cfg_shard *s;
	struct fl_peer_key k, want;

	if (!a->cfg || !a->me || a->me->shard < 0 || !admit_has(&a->admit, peer->id) ||
	    icmp_watch_key_parse(peer->addr, &k))
		return false;
	s = &a->cfg->shards[a->me->shard];
	for (int i = 0; i < s->nnodes; i++) {
		const struct cfg_node *n = &a->cfg->nodes[s->nodes[i]];

		if (n != a->me && !strcmp(n->id, peer->id) &&
		    !icmp_watch_key_parse(n->address, &want) && !icmp_watch_key_cmp(&k, &want))
			return true;
	}
	return false;
}

/* The freshest round trip to a shard peer: when its reply reached us (0: none). */
static uint64_t peer_rt_ns(const struct agent *a)
{
	uint64_t t = 0;

	for (int i = 0; a->probe && i < probe_npeers(a->probe); i++) {
		const struct probe_peer_info *pi = probe_peer(a->probe, i);

		if (pi->rt_recv_ns > t && shard_peer(a, pi))
			t = pi->rt_recv_ns;
	}
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
	return a->lease && !a->lease->parked;
}

/* The server's sockets are marked (mark_server, for the process the monitor knows):
 * only then does the lease running out silence its replies. A lease is not taken
 * before: taken and the agent stopped or killed before the marks, the server would
 * answer past it, unbounded. Without a server monitor (--watch-pid only) there is
 * nothing to mark. */
static bool guarded(const struct agent *a)
{
	const struct agent_lease *l = a->lease;

	return !a->srv || (l->scanned > 0 && l->scanned == srvmon_state(a->srv)->pid);
}

bool agent_lease_held(const struct agent *a, uint64_t now)
{
	const struct agent_lease *l = a->lease;

	return agent_lease_on(a) && !l->grant_pending && (l->held || guarded(a)) &&
	       lease_held(&l->sm, now);
}

long long agent_lease_ms_left(const struct agent *a, uint64_t now)
{
	const struct agent_lease *l = a->lease;

	if (!l)
		return -1;
	return agent_lease_held(a, now) ? (long long)((l->sm.k.deadline_ns - now) / 1000000) : 0;
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

static bool mark_server(struct agent *a);

/* Takes the lease in the kernel. If the kernel dropped replies since it was last
 * taken, those replies (writes executed, never acknowledged) still wait in their
 * sockets for a retransmission: the server's client connections are destroyed first
 * (SOCK_DESTROY), all but the allowed ones, so that none reaches anyone once a
 * failover may have happened; clients reconnect. */
static void take_in_kernel(struct agent *a)
{
	struct agent_lease *l = a->lease;
	uint64_t dropped;
	int killed = 0, err;

	/* Not before the server's sockets are marked: scanned now if they are not yet
	 * (else taken once a later scan succeeds: agent_lease_rescan). */
	if (!l->held && !guarded(a) && !mark_server(a))
		return;
	dropped = lease_watch_count(l->lw, FL_LC_DROPPED);
	if (dropped != l->sm.k.dropped_mark) {
		killed = lease_kill_conns(l->lw, l->allow, l->nallow);
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

	if (ch == LEASE_SAME || !agent_lease_on(a))
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
	if (agent_lease_on(a))
		apply_change(a, lease_give_up(&a->lease->sm), why);
}

/* The server's process, once known and whenever it changes: its sockets marked, the
 * bind hooks told its pid and ports. A server listening on a UNIX socket cannot be
 * guarded (no packet of it passes a socket filter): the agent stops (a->fatal).
 * True when the server's sockets are marked (guarded) after it. */
static bool mark_server(struct agent *a)
{
	struct agent_lease *l = a->lease;
	struct lease_scan sc;
	uint16_t ports[LEASE_SCAN_MAX_PORTS + 1], bus, known_bus;
	int err, n = 0;
	bool known;
	pid_t pid;

	if (!l || !a->srv) /* no lease, or no server (--watch-pid only) */
		return l != NULL;
	pid = srvmon_state(a->srv)->pid;
	if (pid <= 0)
		return false;
	/* A cluster node's bus is left unmarked once its port is known; until then every
	 * socket is marked (no client waits unguarded for the answer), and the process
	 * scanned again when it comes (agent_bus.c calls agent_lease_rescan). */
	known = agent_bus_port(a, pid, &known_bus);
	if (!lease_scan_due(pid, known, known_bus, l->scanned, l->scanned_bus, &bus))
		return pid == l->scanned;
	err = lease_scan_pid(l->lw, pid, bus, &sc);
	if (err && !sc.marked) {
		/* Tried again every heartbeat, said once per process. */
		if (l->failed != pid)
			pr_warn(
			    "failed to mark the server's sockets (pid %d): %s; the lease does not "
			    "guard them yet\n",
			    (int)pid, strerror(-err));
		l->failed = pid;
		return false;
	}
	if (sc.unix_path[0]) {
		pr_warn("the server (pid %d) listens on the UNIX socket %s, which the write lease "
			"cannot guard: set unixsocket to \"\" in its configuration, or [agent] "
			"lease_ms = 0; the agent stops\n",
			(int)pid, sc.unix_path);
		/* Disarmed before it stops: its TCP sockets are marked already, and an
		 * armed lease nobody renews would silence them for good. */
		lease_give_up(&l->sm);
		l->sm.k.port = 0;
		if (lease_watch_write(l->lw, &l->sm.k))
			pr_warn("failed to disarm the write lease: remove %s\n",
				lease_watch_pin_dir(l->lw));
		a->fatal = -EPROTONOSUPPORT;
		event_base_loopbreak(a->base);
		return false;
	}
	ports[n++] = (uint16_t)a->me->redis.port;
	for (int i = 0; i < sc.nports; i++)
		if (sc.ports[i] != ports[0])
			ports[n++] = sc.ports[i];
	err = lease_watch_set_server(l->lw, (uint32_t)pid, ports, n, bus);
	if (err)
		pr_warn("failed to write the server's pid and ports to the lease: %s\n",
			strerror(-err));
	l->scanned = pid;
	l->scanned_bus = bus;
	pr_info("write lease guards the server's sockets (pid %d: %d marked, %d port(s); "
		"cluster bus %u: %d socket(s) left unmarked)\n",
		(int)pid, sc.marked, n, bus, sc.bus_socks);
	return true;
}

/* mark_server, and a lease granted before the marks (take_in_kernel waited) taken. */
static void mark_and_take(struct agent *a)
{
	struct agent_lease *l = a->lease;

	if (mark_server(a) && agent_lease_on(a) && !l->held && !l->grant_pending &&
	    lease_held(&l->sm, now_ns()))
		take_in_kernel(a);
}

/* Once per heartbeat: a lease that ran out unrenewed is lost; a new server process is
 * marked. */
void agent_lease_tick(struct agent *a)
{
	uint64_t now = now_ns();

	if (a->lease)
		mark_and_take(a); /* parked too: armed later, the sockets are marked already */
	if (agent_lease_on(a) && a->lease->held && !lease_held(&a->lease->sm, now))
		mark_lost(a, "expired", now);
}

static void sync_allow(struct agent_lease *l, const __u64 *c, const __u32 *kind, int n)
{
	int err;

	l->nallow = 0;
	if (l->have_own) {
		l->allow[0] = l->own;
		l->allow_kind[0] = FL_LEASE_ALLOW_AGENT;
		l->nallow = 1;
	}
	for (int i = 0; i < n && l->nallow < FL_LEASE_MAX_ALLOW; i++) {
		if (l->have_own && c[i] == l->own)
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
	struct sockaddr_storage me = {0}, srv = {0};
	socklen_t ml = sizeof(me), sl = sizeof(srv);
	struct fl_lease_conn mine, theirs;
	int ours, err = -ENOTCONN;

	if (!l)
		return;
	/* The server's end of our connection, by its cookie: no other socket has it. */
	if (fd >= 0 && !getsockname(fd, (struct sockaddr *)&me, &ml) &&
	    !getpeername(fd, (struct sockaddr *)&srv, &sl) &&
	    (me.ss_family == AF_INET || me.ss_family == AF_INET6)) {
		lease_conn_make(&mine, (struct sockaddr *)&me);
		lease_conn_make(&theirs, (struct sockaddr *)&srv);
		err = lease_conn_cookie(&theirs, &mine, &l->own);
	}
	l->have_own = !err;
	if (err && fd >= 0)
		pr_warn("failed to find the server's end of the agent's connection: %s; the lease "
			"does not exempt it\n",
			strerror(-err));
	/* Keep the others known so far (their kinds are kept with them). */
	ours = l->nallow && l->allow_kind[0] == FL_LEASE_ALLOW_AGENT;
	sync_allow(l, l->allow + ours, l->allow_kind + ours, l->nallow - ours);
}

/* "addr=1.2.3.4:5678" (or "[::1]:5678") of a CLIENT LIST line into k; key " addr="
 * or " laddr=". */
static bool client_addr(const char *line, const char *key, struct fl_lease_conn *k)
{
	const char *p = strstr(line, key), *colon, *end;
	char host[64], *pend;
	long port;
	size_t n;

	if (!p)
		return false;
	p += strlen(key);
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

/* An fl_lease_conn as a sockaddr (for auth_conn_name). */
static void conn_sockaddr(const struct fl_lease_conn *k, struct sockaddr_in6 *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin6_family = AF_INET6;
	memcpy(&sa->sin6_addr, k->addr, 16);
	sa->sin6_port = k->port;
}

/* Is this line the controller's own connection? Its name proves it (auth_conn_name over
 * the ends the server sees): a client that copies the name has another address. */
static bool controller_conn(const struct agent *a, const char *line,
			    const struct fl_lease_conn *client, const struct fl_lease_conn *server)
{
	const struct agent_lease *l = a->lease;
	struct sockaddr_in6 c6, s6;
	char want[AUTH_CONN_NAME_MAX];

	if (!l->have_key || !strstr(line, " name=" AUTH_CONN_NAME_PREFIX))
		return false;
	/* As IPv6 (IPv4 mapped): auth_conn_name writes IPv4 ends the same way. */
	conn_sockaddr(client, &c6);
	conn_sockaddr(server, &s6);
	if (auth_conn_name(l->key, a->node, (struct sockaddr *)&c6, (struct sockaddr *)&s6, want,
			   sizeof(want)))
		return false;
	return client_field(line, " name=", want, true);
}

/* The server's end of a CLIENT LIST line (laddr=, Redis 6.2; else [node] redis). */
static bool server_end(const struct agent *a, const char *line, struct fl_lease_conn *k)
{
	if (client_addr(line, " laddr=", k))
		return true;
	return !lease_conn_parse(k, a->me->redis.host, (uint16_t)a->me->redis.port);
}

static void on_client_list(void *ctx, redisReply *r, void *priv)
{
	struct agent *a = priv; /* ctx is the monitor's (srvmon_send) */
	struct agent_lease *l = a->lease;
	__u64 *c = l ? l->listed : NULL;
	__u32 *kind = l ? l->listed_kind : NULL;
	struct fl_lease_conn client, server;
	char line[1024];
	int n = 0;

	(void)ctx;
	if (!r || r->type != REDIS_REPLY_STRING || !agent_lease_on(a))
		return;
	for (const char *p = r->str; *p && n < FL_LEASE_MAX_ALLOW;) {
		size_t len = strcspn(p, "\n");
		__u32 k = 0;

		/* A leading space: every key is then found as " key=". */
		snprintf(line, sizeof(line), " %.*s", (int)len, p);
		p += len + (p[len] == '\n');
		if (!client_addr(line, " addr=", &client) || !server_end(a, line, &server))
			continue;
		/* A replica's link (flags S): what the server sends it acknowledges no
		 * client's write, whoever asked to be a replica. */
		if (client_field(line, " flags=", "S", false))
			k = FL_LEASE_ALLOW_REPLICA;
		else if (controller_conn(a, line, &client, &server))
			k = FL_LEASE_ALLOW_CONTROLLER;
		if (k && !lease_conn_cookie(&server, &client, &c[n]))
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

	if (agent_lease_on(a) &&
	    (now || !agent_lease_held(a, now_ns()) || a->lease->polls++ % 10 == 0))
		srvmon_send(a->srv, 2, argv, on_client_list, a);
}

void agent_lease_on_round_trip(void *ctx, const struct probe_peer_info *peer, uint64_t sent_ns)
{
	struct agent *a = ctx;

	if (agent_lease_on(a) && shard_peer(a, peer))
		apply_change(a, lease_on_peer(&a->lease->sm, now_ns(), sent_ns), "peer");
}

/* armed: for the server's port at once (a start); else parked (port 0: everything
 * flows) until agent_lease_set_shadow() arms it with its first grant. */
static int lease_open(struct agent *a, bool armed)
{
	struct fl_lease_state st;
	struct agent_lease *l;
	int err;

	if (!a->me->redis.port || a->me->redis.unix_path[0]) {
		pr_warn("failed to start the write lease: [node \"%s\"] redis = %s is a UNIX "
			"socket, which the lease cannot guard; give a TCP address, or set [agent] "
			"lease_ms = 0\n",
			a->node, a->me->redis_str);
		return -EPROTONOSUPPORT;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	/* The server's port written unless a previous agent wrote its server, armed or
	 * not (lease_watch_open). */
	err = lease_watch_open(&l->lw, a->node, armed ? a->me->redis.port : 0,
			       (uint16_t)a->me->redis.port);
	if (!err)
		err = lease_watch_read(l->lw, &st);
	if (err) {
		lease_watch_close(l->lw);
		free(l);
		return err;
	}
	lease_init(&l->sm, &st, (uint64_t)a->cfg->agent.lease_ms * 1000000);
	/* The process a previous agent marked (0: none, or only the port written). */
	uint32_t tgid;

	lease_watch_server_known(l->lw, &tgid);
	l->inherited = (pid_t)tgid;
	/* A lease a previous agent left armed stays armed (and lapses, or is renewed, as
	 * when active): shadow mode's answer parks it, killing what it held back. */
	if (!armed && st.port)
		armed = true;
	l->parked = !armed;
	l->opened_ns = armed ? 0 : now_ns();
	l->have_key = !auth_key_for(a->me->key, a->cfg->secret, a->node, l->key);
	/* A lease left by a previous agent still runs: kept, renewed as before. */
	l->held = armed && lease_held(&l->sm, now_ns());
	a->lease = l;
	pr_info("write lease for the server of %s: %s, pins in %s\n", a->me->redis_str,
		!armed	  ? "opened, taken with the controller's next answer"
		: l->held ? "held (left by the previous agent)"
			  : "not held",
		lease_watch_pin_dir(l->lw));
	return 0;
}

int agent_lease_start(struct agent *a)
{
	if (!a->cfg->agent.lease_ms) {
		/* Off: a lease a previous agent left armed would silence the server once it
		 * ran out, with nobody to renew it. */
		if (lease_watch_pinned(a->node)) {
			int err = lease_watch_unpin(a->node);

			if (err)
				pr_warn(
				    "the write lease is off ([agent] lease_ms = 0) but a previous "
				    "agent's is pinned in %s/%s/lease and could not be removed: "
				    "%s\n",
				    FL_PIN_ROOT, a->node, strerror(-err));
			else
				pr_info("the write lease is off: removed the one a previous agent "
					"left\n");
		}
		return 0;
	}
	if (a->shadow) {
		/* Shadow mode ([controller] mode = shadow): no write lease (and so no
		 * self-demotion, which needs it): another system decides who writes. The
		 * controller's word "active" opens it (agent_lease_set_shadow). A lease a
		 * previous agent left pinned is opened now, so that it is not left armed
		 * with nobody to renew it: the controller's answer parks or takes it. */
		if (lease_watch_pinned(a->node))
			return lease_open(a, false);
		pr_info("shadow mode: no write lease\n");
		return 0;
	}
	return lease_open(a, true);
}

/* Shadow mode: the lease given up and disarmed in one write (port 0: the program
 * lets every reply through), so nothing is dropped and no connection is closed. */
static void park(struct agent *a)
{
	struct agent_lease *l = a->lease;
	int err;

	/* Replies the kernel held back since the lease last ran out (writes a failover
	 * may have made stale) wait in their sockets: those connections go first. */
	if (lease_watch_count(l->lw, FL_LC_DROPPED) != l->sm.k.dropped_mark) {
		int killed = lease_kill_conns(l->lw, l->allow, l->nallow);

		if (killed < 0) {
			pr_warn("failed to close the server's client connections: %s; the lease "
				"stays armed\n",
				strerror(-killed));
			return;
		}
		l->sm.k.dropped_mark = lease_watch_count(l->lw, FL_LC_DROPPED);
	}
	lease_give_up(&l->sm);
	l->sm.k.port = 0;
	l->grant_pending = false;
	err = lease_watch_write(l->lw, &l->sm.k);
	if (err)
		pr_warn("failed to write the lease map: %s\n", strerror(-err));
	mark_lost(a, "shadow mode", now_ns());
	l->parked = true;
	pr_info("shadow mode: write lease given up and disarmed\n");
}

/* Active: armed with the grant of a controller answer, in one write, so that no
 * reply is dropped in between (and no connection closed for it). An answer naming
 * another node primary arms it not held, as when active; one naming this node that
 * grants nothing (it came too late, the server is not up) leaves it parked for the
 * next answer. */
static void unpark(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns)
{
	const struct srv_state *st = srvmon_state(a->srv);
	bool replica = st->have_info && st->info.role == INFO_ROLE_SLAVE;
	bool up = st->proc == SRV_UP || st->proc == SRV_BUSY;
	struct agent_lease *l = a->lease;
	uint64_t now = now_ns();
	int err;

	if (sent_ns < l->opened_ns)
		return; /* answers a report sent before the lease was loaded: too old */
	/* Off until now (not given up: nothing to recover from), this answer may grant. */
	lease_start_over(&l->sm, sent_ns);
	if (up || !primary || strcmp(primary, a->node))
		lease_on_controller(&l->sm, now, sent_ns, epoch, primary, a->node, replica);
	if (!lease_held(&l->sm, now) && primary && !strcmp(primary, a->node))
		return;
	/* Held from this write on: not before the server's sockets are marked (parked
	 * until an answer finds them marked). */
	if (lease_held(&l->sm, now) && !guarded(a) && !mark_server(a))
		return;
	l->sm.k.port = a->me->redis.port;
	l->sm.k.dropped_mark = lease_watch_count(l->lw, FL_LC_DROPPED);
	err = lease_watch_write(l->lw, &l->sm.k);
	if (err) {
		pr_warn("failed to write the lease map: %s\n", strerror(-err));
		return;
	}
	l->parked = false;
	if (lease_held(&l->sm, now))
		mark_regained(a, 0);
	pr_info("active: write lease armed (%s)\n",
		lease_held(&l->sm, now) ? "held" : "not held: another node is the primary");
	agent_lease_poll_clients(a, true);
}

int agent_lease_set_shadow(struct agent *a, bool shadow, long long epoch, const char *primary,
			   uint64_t sent_ns)
{
	int err;

	if (!a->cfg->agent.lease_ms)
		return 0;
	if (shadow) {
		if (agent_lease_on(a))
			park(a);
		return 0;
	}
	if (!a->lease) {
		/* Opened parked; the answer to a report sent from now on arms it
		 * (agent_lease_answer): this one is older by the time the program took to
		 * load and attach, and would leave little of the lease. */
		err = lease_open(a, false);
		if (!err && a->lease)
			agent_lease_on_srv_connected(a, srvmon_fd(a->srv));
		return err;
	}
	if (a->lease->parked)
		unpark(a, epoch, primary, sent_ns);
	return 0;
}

void agent_lease_answer(struct agent *a, long long epoch, const char *primary, uint64_t sent_ns)
{
	const struct srv_state *st = srvmon_state(a->srv);
	bool replica = st->have_info && st->info.role == INFO_ROLE_SLAVE;
	struct agent_lease *l = a->lease;
	uint64_t now = now_ns();

	if (l && l->parked && !a->shadow) {
		unpark(a, epoch, primary, sent_ns); /* active, not armed yet */
		return;
	}
	if (!agent_lease_on(a))
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

	if (!agent_lease_on(a))
		return;
	if (lease_revoked(&l->sm) && (st->proc == SRV_UP || st->proc == SRV_BUSY))
		lease_allow_retake(&l->sm, now);
	held = agent_lease_held(a, now);
	word = held ? "held" : "lapsed";
	if (lease_revoked(&l->sm) && l->revoke_written)
		word = "revoked";
	/* Lapsed or revoked means silenced only once the server's sockets are marked. Not
	 * yet (the agent just started and the server has not answered INFO), a server
	 * that listens could answer clients past any promotion: said so, and the
	 * controller waits. Nothing listening (down): whatever binds its port later is
	 * marked as it binds (fl_lease_ports, written at the start). A process a previous
	 * agent marked, still there while the pid is not known: its marks stay. */
	if (!held && !guarded(a) && st->proc != SRV_DOWN &&
	    !(st->pid <= 0 && l->inherited > 0 && (!kill(l->inherited, 0) || errno == EPERM)))
		word = "unguarded";
	rep_add_key(m, RK_LEASE, NULL, "%s", word);
	rep_add_key(m, RK_LEASE_MS_LEFT, NULL, "%llu",
		    held ? (unsigned long long)((l->sm.k.deadline_ns - now) / 1000000) : 0ull);
	rep_add_key(m, RK_LEASE_SOURCE, NULL, "%s", lease_source_name(l->sm.k.source));
}

void agent_lease_rescan(struct agent *a)
{
	mark_and_take(a);
}

void agent_lease_close(struct agent *a)
{
	if (!a->lease)
		return;
	lease_watch_close(a->lease->lw); /* the pins stay: the lease outlives the agent */
	free(a->lease);
	a->lease = NULL;
}
