// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* loadgen: the report load of thousands of `flatline agent`s on one controller,
 * from one thread (libevent), for bench/scale.sh.
 *
 * For each node of a nodes file ("ID PORT" lines: the node id of the cluster file and
 * the port of its server on 127.0.0.1) it holds what an agent holds: one connection
 * to the controller (HELLO flatline 2 with challenge-response, then REPORT every heartbeat and at
 * once on a change; docs/protocol.md) and one to the server, read with INFO every
 * heartbeat (INFO in full on each new connection, then INFO replication) as the
 * agent's srvmon does. The REPORT is built from the agent's key table
 * (common/report_keys.c) and the server's INFO parsed by the agent's parser
 * (common/info.c), key for key as agent_report.c builds it, without the peer keys (no ICMP
 * probing here) and without BPF: the process path is the agent's rule for its
 * server connection, nothing more:
 *   - a refused connection (nothing listens): proc down;
 *   - a connection lost otherwise: proc unknown, unless already down or hung;
 *   - an INFO not answered within a heartbeat: nothing changes (a probe that times
 *     out says nothing about the process, as in the agent).
 * The server connection is re-dialled after 50 ms doubling to 500 ms, the agent's
 * backoff for its local server; the controller connection after 100 ms doubling to
 * 5 s, and is dropped when a request stays unanswered for 2 heartbeats and at least
 * 1.5 s, as the agent's. As the agent, a healthy replica with its link up reports
 * every --replica-heartbeat-ms (500), everything else every heartbeat, a change at
 * once, and a heartbeat waits while the last REPORT is unanswered (counted as
 * "deferred": the controller's lateness, not the generator's). loadgen holds no lease,
 * so never keeps more than one heartbeat in flight.
 *
 * Its own health, so a trial in which it fell behind can be thrown out: every
 * report slot (one per node per heartbeat) is counted as sent on time (within half a
 * heartbeat of its due time), late, or missed (no controller session then); replies
 * answered, slow (answered after a heartbeat), reconnects to the controller, the
 * worst lateness of its own timers, and its CPU time. SIGUSR1 prints the counters as
 * one JSON line on stdout (the harness takes one before and one after a trial and
 * judges the difference); SIGTERM prints them and exits.
 *
 * Sessions open spread over --ramp-ms (default: 2,000 a second, at least one heartbeat).
 * --part I/N: this process takes every Nth node of the file from the Ith (0-based), so
 * N processes on N CPUs share the load; the harness sums their counters.
 *
 * usage: loadgen --controller HOST:PORT --secret S --nodes-file F [--heartbeat-ms 100]
 *                [--replica-heartbeat-ms 500] [--ramp-ms MS] [--part I/N]
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <event2/event.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/adapters/libevent.h>
#include "common/auth.h"
#include "common/info.h"
#include "common/report_keys.h"

enum proc { P_UNKNOWN = 0, P_UP, P_DOWN, P_HUNG }; /* indices of report_proc_words */

struct node {
	char id[128];
	int port;
	int idx;
	/* The server. */
	redisAsyncContext *srv;
	bool srv_up;	/* connected */
	bool info_out;	/* an INFO is unanswered */
	bool need_full; /* INFO in full next (a new connection) */
	long long info_sent_ms;
	int srv_backoff_ms;
	struct event *srv_retry;
	enum proc proc;
	long long proc_change_ms; /* wall */
	long pid;
	bool have_info;
	struct info_repl info;
	/* The controller. */
	redisAsyncContext *ctl;
	int ctl_state;		    /* 0 none or connecting, 1 HELLO or PROVE sent, 2 reporting */
	uint8_t key[AUTH_KEY_LEN];  /* the node's key (docs/protocol.md, version 2) */
	uint8_t na[AUTH_NONCE_LEN]; /* this connection's nonce */
	long long ctl_since_ms; /* connect or HELLO sent: dropped if no answer in 2 heartbeats */
	int ctl_backoff_ms;
	struct event *ctl_retry;
	unsigned long long seq;
	int out;		 /* reports unanswered */
	long long last_sent_ms;	 /* monotonic: the last REPORT */
	long long oldest_out_ms; /* when the oldest unanswered one was sent */
	long long sent_ms[8];	 /* ring of send times of unanswered reports */
	int ring_head;
	/* The schedule. */
	struct event *tick;
	long long due_ms;
};

static struct {
	const char *ctl_host;
	int ctl_port;
	const char *secret;
	int hb_ms;
	int replica_hb_ms; /* a quiet replica's heartbeat (the agent's replica_heartbeat_ms) */
	int ramp_ms;	   /* sessions open spread over this long */
	int part, parts;   /* this process takes the nodes whose line number % parts == part */
	int total;	   /* nodes in the file (phases spread over all of them) */
	struct event_base *base;
	struct node *nodes;
	int nnodes;
	long long t0_ms;
	/* Health counters. */
	unsigned long long slots, on_time, late, missed, deferred, sent, change_sent, answered,
	    slow, refused_reports, ctl_reconnects, ctl_lost, drop_unanswered, drop_ring,
	    srv_reconnects, probe_timeouts, proc_down_said;
	long long max_lag_ms, max_answer_ms;
} g;

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static long long wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void arm(struct event *ev, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	event_add(ev, &tv);
}

/* ------------------------------------------------------------------------- */
/* Reports */

struct msg {
	int argc;
	const char *argv[64];
	size_t lens[64];
	char buf[4096];
	size_t used;
};

static void add(struct msg *m, enum report_key k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(struct msg *m, enum report_key k, const char *fmt, ...)
{
	char key[64];
	va_list ap;
	int n;

	if (m->argc + 2 > 64)
		return;
	report_key_str(k, NULL, key, sizeof(key));
	n = snprintf(m->buf + m->used, sizeof(m->buf) - m->used, "%s", key);
	if (n < 0 || (size_t)n + 1 >= sizeof(m->buf) - m->used)
		return;
	m->argv[m->argc] = m->buf + m->used;
	m->lens[m->argc++] = n;
	m->used += n + 1;
	va_start(ap, fmt);
	n = vsnprintf(m->buf + m->used, sizeof(m->buf) - m->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n + 1 >= sizeof(m->buf) - m->used) {
		m->argc--;
		return;
	}
	m->argv[m->argc] = m->buf + m->used;
	m->lens[m->argc++] = n;
	m->used += n + 1;
}

/* The agent's agent_report_interval_ms without peers and lease: a healthy replica
 * with its link up reports every replica_heartbeat_ms, everything else every heartbeat. */
static int interval_ms(const struct node *n)
{
	if (g.replica_hb_ms > g.hb_ms && n->proc == P_UP && n->have_info &&
	    n->info.role == INFO_ROLE_SLAVE && n->info.link_up > 0)
		return g.replica_hb_ms;
	return g.hb_ms;
}

/* As agent_report.c's agent_report_build, without peers, exit cause (no BPF) and fencing. */
static void build(struct node *n, struct msg *m)
{
	const struct info_repl *i = &n->info;

	add(m, RK_PROC, "%s", report_proc_word(n->proc));
	add(m, RK_PID, "%d", (int)n->pid);
	add(m, RK_PROC_CHANGE_MS, "%lld", n->proc_change_ms);
	add(m, RK_HEARTBEAT, "%d", interval_ms(n));
	if (!n->have_info)
		return;
	if (i->server != INFO_SRV_UNKNOWN)
		add(m, RK_SERVER, "%s", info_server_name(i->server));
	if (i->version[0])
		add(m, RK_VERSION, "%s", i->version);
	add(m, RK_ROLE, "%s", info_role_name(i->role));
	if (i->role == INFO_ROLE_SLAVE) {
		add(m, RK_MASTER_HOST, "%s", i->master_host);
		add(m, RK_MASTER_PORT, "%d", i->master_port);
		add(m, RK_MASTER_LINK_STATUS, "%s", i->link_up > 0 ? "up" : "down");
		add(m, RK_MASTER_LAST_IO_S, "%lld", i->last_io_s);
		add(m, RK_MASTER_SYNC_IN_PROGRESS, "%d", i->sync_in_progress);
	}
	if (i->master_replid[0])
		add(m, RK_MASTER_REPLID, "%s", i->master_replid);
	if (i->offset >= 0)
		add(m, RK_REPL_OFFSET, "%lld", i->offset);
	add(m, RK_SLAVE_PRIORITY, "%d", i->slave_priority);
	add(m, RK_CONNECTED_SLAVES, "%d", i->connected_slaves);
	if (i->run_id[0])
		add(m, RK_RUN_ID, "%s", i->run_id);
}

static void ctl_drop(struct node *n);

static void on_report_reply(redisAsyncContext *ac, void *r, void *priv)
{
	struct node *n = priv;
	redisReply *rep = r;
	long long now = mono_ms(), sent;

	(void)ac;
	if (!rep || n->out <= 0)
		return;
	sent = n->sent_ms[(n->ring_head - n->out + 8) % 8];
	n->out--;
	if (n->out)
		n->oldest_out_ms = n->sent_ms[(n->ring_head - n->out + 8) % 8];
	if (rep->type == REDIS_REPLY_ERROR) {
		g.refused_reports++;
		fprintf(stderr, "loadgen: %s: report refused: %s\n", n->id, rep->str);
		ctl_drop(n);
		return;
	}
	g.answered++;
	if (now - sent > g.hb_ms)
		g.slow++;
	if (now - sent > g.max_answer_ms)
		g.max_answer_ms = now - sent;
}

static void send_report(struct node *n)
{
	struct msg m;
	char seq[24];

	m.argc = 0;
	m.used = 0;
	snprintf(seq, sizeof(seq), "%llu", ++n->seq);
	m.argv[m.argc] = "REPORT";
	m.lens[m.argc++] = 6;
	m.argv[m.argc] = seq;
	m.lens[m.argc++] = strlen(seq);
	build(n, &m);
	if (redisAsyncCommandArgv(n->ctl, on_report_reply, n, m.argc, m.argv, m.lens) != REDIS_OK)
		return;
	if (n->out == 8) {
		/* Eight unanswered (changes alone: heartbeats wait for the answer): the
		 * connection is as good as lost. */
		g.drop_ring++;
		ctl_drop(n);
		return;
	}
	n->sent_ms[n->ring_head] = n->last_sent_ms = mono_ms();
	n->ring_head = (n->ring_head + 1) % 8;
	if (!n->out++)
		n->oldest_out_ms = mono_ms();
	g.sent++;
}

/* ------------------------------------------------------------------------- */
/* The controller connection */

static void ctl_connect(struct node *n);

static void ctl_schedule(struct node *n)
{
	int ms = n->ctl_backoff_ms;

	n->ctl_backoff_ms = ms * 2 > 5000 ? 5000 : ms * 2;
	arm(n->ctl_retry, ms / 2 + rand() % (ms / 2 + 1)); /* jitter, as the agent */
}

static void ctl_gone(struct node *n)
{
	n->ctl = NULL;
	n->ctl_state = 0;
	n->out = 0;
	g.ctl_reconnects++;
	ctl_schedule(n);
}

static void ctl_drop(struct node *n)
{
	redisAsyncContext *ac = n->ctl;

	if (!ac)
		return;
	ac->data = NULL;
	ctl_gone(n);
	redisAsyncFree(ac);
}

static void on_ctl_disconnect(const redisAsyncContext *ac, int status)
{
	struct node *n = ac->data;

	(void)status;
	if (n && n->ctl == ac) {
		g.ctl_lost++; /* closed by the controller, or the connection failed */
		ctl_gone(n);
	}
}

static void on_prove(redisAsyncContext *ac, void *r, void *priv)
{
	struct node *n = priv;
	redisReply *rep = r;

	(void)ac;
	if (!rep)
		return;
	if (rep->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "loadgen: %s: PROVE refused: %s\n", n->id, rep->str);
		ctl_drop(n);
		return;
	}
	n->ctl_state = 2;
	n->ctl_backoff_ms = 100;
	n->seq = 0;
	send_report(n); /* at once, as the agent */
}

/* The challenge (docs/protocol.md, version 2): check the controller's proof, send ours. */
static void on_hello(redisAsyncContext *ac, void *r, void *priv)
{
	struct node *n = priv;
	redisReply *rep = r;
	uint8_t nc[AUTH_NONCE_LEN], proof[AUTH_MAC_LEN];
	char hex[AUTH_HEX_LEN + 1];
	const char *argv[] = {"PROVE", hex};

	(void)ac;
	if (!rep)
		return;
	if (rep->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "loadgen: %s: HELLO refused: %s\n", n->id, rep->str);
		ctl_drop(n);
		return;
	}
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
	    rep->element[1]->type != REDIS_REPLY_STRING ||
	    rep->element[2]->type != REDIS_REPLY_STRING ||
	    auth_unhex(rep->element[1]->str, rep->element[1]->len, nc, sizeof(nc)) ||
	    !auth_check(n->key, AUTH_CONTROLLER, n->id, n->na, nc, rep->element[2]->str,
			rep->element[2]->len) ||
	    auth_proof(n->key, AUTH_AGENT, n->id, n->na, nc, proof)) {
		fprintf(stderr, "loadgen: %s: the controller did not prove itself\n", n->id);
		ctl_drop(n);
		return;
	}
	auth_hex(proof, sizeof(proof), hex);
	n->ctl_since_ms = mono_ms();
	redisAsyncCommandArgv(n->ctl, on_prove, n, 2, argv, NULL);
}

static void on_ctl_connect(const redisAsyncContext *ac, int status)
{
	struct node *n = ac->data;
	char nonce[AUTH_HEX_LEN + 1];
	const char *argv[] = {"HELLO", "flatline", AUTH_PROTO_VERSION, n ? n->id : "", nonce};

	if (!n || n->ctl != ac)
		return;
	if (status != REDIS_OK) {
		ctl_gone(n); /* hiredis frees it after this callback */
		return;
	}
	if (auth_nonce(n->na)) {
		ctl_drop(n);
		return;
	}
	auth_hex(n->na, sizeof(n->na), nonce);
	n->ctl_state = 1;
	n->ctl_since_ms = mono_ms();
	redisAsyncCommandArgv(n->ctl, on_hello, n, 5, argv, NULL);
}

static void ctl_connect(struct node *n)
{
	redisAsyncContext *ac = redisAsyncConnect(g.ctl_host, g.ctl_port);

	if (!ac || ac->err) {
		if (ac)
			redisAsyncFree(ac);
		g.ctl_reconnects++;
		ctl_schedule(n);
		return;
	}
	ac->data = n;
	n->ctl = ac;
	n->ctl_since_ms = mono_ms();
	redisLibeventAttach(ac, g.base);
	redisAsyncSetConnectCallback(ac, on_ctl_connect);
	redisAsyncSetDisconnectCallback(ac, on_ctl_disconnect);
}

static void on_ctl_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	ctl_connect(arg);
}

/* ------------------------------------------------------------------------- */
/* The server connection: the agent's rules for its process verdict */

static void set_proc(struct node *n, enum proc p)
{
	if (n->proc == p)
		return;
	n->proc = p;
	n->proc_change_ms = wall_ms();
	if (p == P_DOWN) {
		n->have_info = false;
		n->pid = 0;
		g.proc_down_said++;
	}
	if (n->ctl_state == 2) {
		g.change_sent++;
		send_report(n); /* at once on a change, as the agent */
	}
}

static void srv_connect(struct node *n);

static void srv_schedule(struct node *n)
{
	int ms = n->srv_backoff_ms;

	n->srv_backoff_ms = ms * 2 > 500 ? 500 : ms * 2;
	arm(n->srv_retry, ms);
}

static void srv_gone(struct node *n, int err)
{
	n->srv = NULL;
	n->srv_up = false;
	n->info_out = false;
	g.srv_reconnects++;
	/* Nobody listening: the server is not running. Anything else says nothing
	 * certain about the process. */
	if (err == ECONNREFUSED)
		set_proc(n, P_DOWN);
	else if (n->proc != P_DOWN && n->proc != P_HUNG)
		set_proc(n, P_UNKNOWN);
	srv_schedule(n);
}

static void on_srv_disconnect(const redisAsyncContext *ac, int status)
{
	struct node *n = ac->data;

	(void)status;
	if (n && n->srv == ac)
		srv_gone(n, 0);
}

static void on_srv_connect(const redisAsyncContext *ac, int status)
{
	struct node *n = ac->data;
	int err = errno;

	if (!n || n->srv != ac)
		return;
	if (status != REDIS_OK) {
		/* hiredis 0.14 keeps errno's text: a refused connect says so. */
		srv_gone(n, strstr(ac->errstr, "refused") ? ECONNREFUSED : err);
		return;
	}
	n->srv_up = true;
	n->srv_backoff_ms = 50;
	n->need_full = true;
}

static void srv_connect(struct node *n)
{
	redisAsyncContext *ac = redisAsyncConnect("127.0.0.1", n->port);

	if (!ac || ac->err) {
		int err = ac && strstr(ac->errstr, "refused") ? ECONNREFUSED : 0;

		if (ac)
			redisAsyncFree(ac);
		srv_gone(n, err);
		return;
	}
	ac->data = n;
	n->srv = ac;
	redisLibeventAttach(ac, g.base);
	redisAsyncSetConnectCallback(ac, on_srv_connect);
	redisAsyncSetDisconnectCallback(ac, on_srv_disconnect);
}

static void on_srv_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	srv_connect(arg);
}

static bool repl_changed(const struct info_repl *a, const struct info_repl *b)
{
	return a->role != b->role || a->master_port != b->master_port ||
	       strcmp(a->master_host, b->master_host) || a->link_up != b->link_up ||
	       strcmp(a->master_replid, b->master_replid) ||
	       a->slave_priority != b->slave_priority || a->sync_in_progress != b->sync_in_progress;
}

static void on_info(redisAsyncContext *ac, void *r, void *priv)
{
	struct node *n = ac->data;
	redisReply *rep = r;
	struct info_repl parsed;
	bool full = priv != NULL, changed;

	if (!n || !rep)
		return;
	n->info_out = false;
	if (rep->type != REDIS_REPLY_STRING || info_parse(rep->str, rep->len, &parsed))
		return; /* an error answer: it is alive; nothing else learnt */
	if (!full) {
		parsed.server = n->info.server;
		parsed.pid = n->info.pid;
		memcpy(parsed.version, n->info.version, sizeof(parsed.version));
		memcpy(parsed.run_id, n->info.run_id, sizeof(parsed.run_id));
	} else {
		n->pid = parsed.pid;
	}
	changed = !n->have_info || repl_changed(&n->info, &parsed);
	n->info = parsed;
	n->have_info = true;
	if (n->proc != P_UP)
		set_proc(n, P_UP); /* any answer: it is alive; reports at once */
	else if (changed && n->ctl_state == 2) {
		g.change_sent++;
		send_report(n);
	}
}

static void probe(struct node *n, long long now)
{
	static const char *repl[] = {"INFO", "replication"};
	static const char *all[] = {"INFO"};

	if (!n->srv_up)
		return;
	if (n->info_out) {
		if (now - n->info_sent_ms >= g.hb_ms)
			g.probe_timeouts++; /* nothing changes: no verdict from a timeout */
		return;
	}
	if (n->need_full) {
		n->need_full = false;
		redisAsyncCommandArgv(n->srv, on_info, n, 1, all, NULL);
	} else {
		redisAsyncCommandArgv(n->srv, on_info, NULL, 2, repl, NULL);
	}
	n->info_out = true;
	n->info_sent_ms = now;
}

/* ------------------------------------------------------------------------- */
/* The schedule: one slot per node per heartbeat, phases spread over the heartbeat */

/* What the tick queued on ac is written now, from the timer (never from inside a
 * hiredis callback, where a write error would free ac under its caller): hiredis
 * added its write event, and removes it when its buffer is empty, both in this loop
 * turn, so the changelist makes no epoll_ctl of them; one write, no wake-up. */
static void flush(redisAsyncContext *ac)
{
	if (ac && (ac->c.flags & REDIS_CONNECTED)) /* a connect in progress: hiredis's */
		redisAsyncHandleWrite(ac);
}

/* The agent's (reporter.c): a request unanswered for two heartbeats, and at least
 * 1,500 ms, means the controller is gone. */
static long long unanswered_limit_ms(void)
{
	return 2LL * g.hb_ms > 1500 ? 2LL * g.hb_ms : 1500;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct node *n = arg;
	long long now = mono_ms(), lag;
	int next;

	(void)fd;
	(void)what;
	/* Every slot since the last tick is counted: a generator that fell behind by
	 * more than a heartbeat has missed slots, not merely late ones. */
	while (n->due_ms + g.hb_ms <= now) {
		g.slots++;
		g.late++;
		n->due_ms += g.hb_ms;
	}
	/* A slot is a report due: every heartbeat, every replica_heartbeat_ms for a
	 * quiet replica. The tick itself (the INFO probe) runs every heartbeat. */
	lag = now - n->due_ms;
	if (lag > g.max_lag_ms)
		g.max_lag_ms = lag;
	probe(n, now);
	flush(n->srv);
	if (n->ctl_state == 2) {
		if (n->out && now - n->oldest_out_ms > unanswered_limit_ms()) {
			g.drop_unanswered++;
			ctl_drop(n); /* the agent's rule (reporter.c) */
			g.slots++;
			g.missed++;
		} else if (now - n->last_sent_ms >= interval_ms(n) - g.hb_ms / 2) {
			g.slots++;
			if (n->out) {
				/* The last one unanswered: the agent's heartbeat waits for the
				 * answer (the controller is behind; not the generator's fault). */
				g.deferred++;
			} else {
				send_report(n);
				flush(n->ctl);
				if (lag * 2 <= g.hb_ms)
					g.on_time++;
				else
					g.late++;
			}
		}
	} else {
		g.slots++;
		g.missed++;
		/* A connect or HELLO unanswered (a full accept queue drops it silently):
		 * dropped and dialled again, as the agent's request deadline. */
		if (n->ctl && now - n->ctl_since_ms > unanswered_limit_ms())
			ctl_drop(n);
	}
	n->due_ms += g.hb_ms;
	next = (int)(n->due_ms - mono_ms());
	arm(n->tick, next > 0 ? next : 0);
}

/* ------------------------------------------------------------------------- */

static void print_stats(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf(
	    "{\"nodes\":%d,\"heartbeat_ms\":%d,\"seconds\":%.3f,\"slots\":%llu,\"on_time\":%llu,"
	    "\"late\":%llu,\"missed\":%llu,\"deferred\":%llu,\"sent\":%llu,\"sent_on_change\":%llu,"
	    "\"answered\":%llu,\"slow_answers\":%llu,\"refused\":%llu,"
	    "\"ctl_reconnects\":%llu,\"ctl_lost\":%llu,\"drop_unanswered\":%llu,\"drop_ring\":%"
	    "llu,\"srv_reconnects\":%llu,\"probe_timeouts\":%llu,"
	    "\"proc_down_said\":%llu,\"max_lag_ms\":%lld,\"max_answer_ms\":%lld,"
	    "\"cpu_s\":%.3f}\n",
	    g.nnodes, g.hb_ms, (mono_ms() - g.t0_ms) / 1000.0, g.slots, g.on_time, g.late, g.missed,
	    g.deferred, g.sent, g.change_sent, g.answered, g.slow, g.refused_reports,
	    g.ctl_reconnects, g.ctl_lost, g.drop_unanswered, g.drop_ring, g.srv_reconnects,
	    g.probe_timeouts, g.proc_down_said, g.max_lag_ms, g.max_answer_ms,
	    ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	fflush(stdout);
	/* The maxima are per window: the harness judges each trial on its own. */
	g.max_lag_ms = g.max_answer_ms = 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	(void)arg;
	print_stats();
	if (sig != SIGUSR1)
		event_base_loopbreak(g.base);
}

static int load_nodes(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int cap = 0, lineno = 0;

	if (!f) {
		fprintf(stderr, "loadgen: failed to open %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char id[128];
		int port;

		lineno++;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (sscanf(line, "%127s %d", id, &port) != 2 || port <= 0 || port > 65535) {
			fprintf(stderr, "loadgen: %s:%d: expected \"ID PORT\"\n", path, lineno);
			fclose(f);
			return -EINVAL;
		}
		if (g.total++ % g.parts != g.part)
			continue; /* another loadgen process's node */
		if (g.nnodes == cap) {
			struct node *nn;

			cap = cap ? cap * 2 : 256;
			nn = realloc(g.nodes, cap * sizeof(*nn));
			if (!nn) {
				fclose(f);
				return -ENOMEM;
			}
			g.nodes = nn;
		}
		memset(&g.nodes[g.nnodes], 0, sizeof(g.nodes[0]));
		g.nodes[g.nnodes].idx = g.total - 1;
		snprintf(g.nodes[g.nnodes].id, sizeof(g.nodes[0].id), "%s", id);
		g.nodes[g.nnodes].port = port;
		g.nnodes++;
	}
	fclose(f);
	return g.nnodes ? 0 : -ENOENT;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"controller", required_argument, NULL, 'c'},
	    {"secret", required_argument, NULL, 's'},
	    {"nodes-file", required_argument, NULL, 'f'},
	    {"heartbeat-ms", required_argument, NULL, 'h'},
	    {"replica-heartbeat-ms", required_argument, NULL, 'R'},
	    {"ramp-ms", required_argument, NULL, 'r'},
	    {"part", required_argument, NULL, 'p'},
	    {0},
	};
	const char *nodes_file = NULL;
	char *ctl = NULL, *colon;
	struct rlimit rl;
	struct event *sigs[3];
	int o;

	g.hb_ms = 100;
	g.replica_hb_ms = 500;
	g.parts = 1;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'c':
			ctl = optarg;
			break;
		case 's':
			g.secret = optarg;
			break;
		case 'f':
			nodes_file = optarg;
			break;
		case 'h':
			g.hb_ms = atoi(optarg);
			break;
		case 'R':
			g.replica_hb_ms = atoi(optarg);
			break;
		case 'r':
			g.ramp_ms = atoi(optarg);
			break;
		case 'p':
			if (sscanf(optarg, "%d/%d", &g.part, &g.parts) != 2 || g.parts < 1 ||
			    g.part < 0 || g.part >= g.parts)
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (!ctl || !g.secret || !nodes_file || g.hb_ms < 10 || !(colon = strrchr(ctl, ':')))
		goto usage;
	*colon = '\0';
	g.ctl_host = ctl;
	g.ctl_port = atoi(colon + 1);
	if (load_nodes(nodes_file))
		return 1;
	/* Sessions open at 2,000 a second at most by default: a burst of thousands of
	 * handshakes in one heartbeat measures a restart storm, not the steady load. */
	if (g.ramp_ms <= 0)
		g.ramp_ms = g.total / 2 > g.hb_ms ? g.total / 2 : g.hb_ms;
	/* Two sockets a node. */
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < (rlim_t)g.nnodes * 2 + 64) {
			fprintf(stderr,
				"loadgen: %d nodes need %d descriptors, the limit is %llu\n",
				g.nnodes, g.nnodes * 2 + 64, (unsigned long long)rl.rlim_cur);
			return 1;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	/* The changelist: an event added and removed in the same loop turn costs no
	 * epoll_ctl (see flush()). */
	{
		struct event_config *ec = event_config_new();

		if (!ec)
			return 1;
		event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
		g.base = event_base_new_with_config(ec);
		event_config_free(ec);
	}
	if (!g.base)
		return 1;
	sigs[0] = evsignal_new(g.base, SIGUSR1, on_signal, NULL);
	sigs[1] = evsignal_new(g.base, SIGTERM, on_signal, NULL);
	sigs[2] = evsignal_new(g.base, SIGINT, on_signal, NULL);
	for (int i = 0; i < 3; i++)
		event_add(sigs[i], NULL);
	g.t0_ms = mono_ms();
	for (int i = 0; i < g.nnodes; i++) {
		struct node *n = &g.nodes[i];
		/* By the node's line in the file: parts interleave over the heartbeat. */
		int phase = (int)((long long)n->idx * g.hb_ms / g.total);
		int open = (int)((long long)n->idx * g.ramp_ms / g.total);

		if (auth_node_key(g.secret, strlen(g.secret), n->id, n->key)) {
			fprintf(stderr, "loadgen: failed to derive the key of %s\n", n->id);
			return 1;
		}
		n->proc_change_ms = wall_ms();
		n->srv_backoff_ms = 50;
		n->ctl_backoff_ms = 100;
		n->tick = evtimer_new(g.base, on_tick, n);
		n->srv_retry = evtimer_new(g.base, on_srv_retry, n);
		n->ctl_retry = evtimer_new(g.base, on_ctl_retry, n);
		if (!n->tick || !n->srv_retry || !n->ctl_retry)
			return 1;
		/* Sessions open over the first heartbeat, each node at its phase. */
		n->due_ms = g.t0_ms + g.hb_ms + phase;
		arm(n->tick, g.hb_ms + phase);
		arm(n->srv_retry, open);
		arm(n->ctl_retry, open);
	}
	event_base_dispatch(g.base);
	return 0;
usage:
	fprintf(stderr,
		"usage: loadgen --controller HOST:PORT --secret S --nodes-file F "
		"[--heartbeat-ms 100] [--replica-heartbeat-ms 500] [--ramp-ms MS] [--part I/N]\n");
	return 2;
}
