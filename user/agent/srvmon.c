// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The local server's health: PING every ping_interval_ms (one at a time),
 * INFO every info_interval_ms, the hung state machine, and the BPF verdict on
 * its process. Every state change goes to the agent at once.
 * What it decides without I/O (srv_judge, the hung state machine) is srv_judge.c. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/report_keys.h"
#include "kern/loader.h"
#include "kern/proc_listen.h"
#include "common/redis_link.h"
#include "agent/cpu_stat.h"
#include "agent/srvmon.h"

#define SRV_SAMPLES 32 /* the judging window is at most this many PING intervals */

/* One look at the command thread, taken every PING tick while a PING is out. */
struct srv_sample {
	struct sched_sample s;
	int64_t throttled_us; /* its cgroup's cpu.stat throttled_usec, -1: none */
};

struct srvmon {
	struct srvmon_opts o;
	char user[128], password[256], pidfile[256];
	char where[300]; /* host:port or the unix socket, for messages */
	struct srvmon_ops ops;
	void *ctx;
	struct redis_link *link;
	struct event *ping_ev, *info_ev;
	struct hung_sm hung;
	int64_t ping_sent_ns;  /* CLOCK_MONOTONIC, of the PING in flight */
	bool info_out;	       /* an INFO is in flight */
	bool need_server_info; /* ask INFO server too (pid, version) */
	char last_down_why[160];
	char pid_why[256]; /* why the pid watched is not INFO's process_id, as last noted */
	struct srv_state st;
	/* The silence, as the kernel saw it: samples since the PING went out. */
	struct srv_sample samples[SRV_SAMPLES];
	unsigned nsamples;     /* taken since the PING went out (ring index = n % SRV_SAMPLES) */
	char cpu_stat[300];    /* the server's cgroup v2 cpu.stat, "" if none */
	pid_t cpu_stat_pid;    /* cpu_stat is for this pid */
	struct event *stop_ev; /* stop_grace_ms after the judged thread stopped */
	int64_t busy_since_ms; /* monotonic: silent and busy (or -BUSY) since, 0: not busy */
	int64_t kill_sent_ms;  /* SCRIPT KILL sent at, 0: not sent in this busy spell */
	bool busy_over;	       /* hung with cause busy: -BUSY answers do not make it busy again */
};

/* Applies a new state; tells the agent what changed, if anything did. */
static void commit(struct srvmon *m, const struct srv_state *next)
{
	struct srv_state prev = m->st;
	const struct info_repl *a = &prev.info, *b = &next->info;
	unsigned what = 0;

	if (prev.proc != next->proc || prev.pid != next->pid)
		what |= SRV_CH_PROC;
	if (a->role != b->role || strcmp(a->master_host, b->master_host) ||
	    a->master_port != b->master_port)
		what |= SRV_CH_ROLE;
	if (a->link_up != b->link_up || strcmp(a->master_replid, b->master_replid) ||
	    a->slave_priority != b->slave_priority || a->sync_in_progress != b->sync_in_progress ||
	    prev.have_info != next->have_info)
		what |= SRV_CH_REPL;
	if (strcmp(prev.auth_error, next->auth_error))
		what |= SRV_CH_AUTH;
	if (a->offset != b->offset || a->last_io_s != b->last_io_s ||
	    a->connected_slaves != b->connected_slaves)
		what |= SRV_CH_INFO;
	m->st = *next;
	if (prev.proc != next->proc)
		m->st.proc_change_ms = fl_wall_ms();
	if (what && m->ops.changed)
		m->ops.changed(m->ctx, &prev, &m->st, what);
}

static void set_proc(struct srvmon *m, enum srv_proc p)
{
	struct srv_state n = m->st;

	if (n.proc == p)
		return;
	n.proc = p;
	if (p != SRV_HUNG && p != SRV_BUSY) {
		n.cause = SRV_CAUSE_NONE;
		n.busy_reply = false;
		n.busy_detail[0] = '\0';
	}
	if (p != SRV_DOWN) {
		n.exit_cause[0] = '\0';
		n.core_dumped = n.oom = false;
	}
	commit(m, &n);
}

static void on_ping(void *ctx, redisReply *r, void *priv)
{
	struct srvmon *m = ctx;
	struct srv_state n;

	(void)priv;
	if (!r)
		return; /* connection gone: on_down() decides */
	/* A reason for a loss is printed again only after the server answered:
	 * a peer that accepts and then breaks every connection logs once. */
	m->last_down_why[0] = '\0';
	if (m->ops.ping && m->ping_sent_ns)
		m->ops.ping(m->ctx, fl_clock_ns(CLOCK_MONOTONIC) - m->ping_sent_ns);
	m->ping_sent_ns = 0;
	if (hung_reply(&m->hung))
		pr_info("server %s answers again\n", m->where);
	m->nsamples = 0;
	n = m->st;
	if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "BUSY", 4)) {
		/* Busy since its silence began, or since the kernel saw it busy. */
		if (!m->busy_since_ms)
			m->busy_since_ms = m->hung.sent_ms;
		if (m->busy_over)
			return; /* hung: a script that cannot be killed */
		n.proc = SRV_BUSY;
		n.cause = SRV_CAUSE_BUSY;
		n.busy_reply = true;
	} else {
		m->busy_since_ms = m->kill_sent_ms = 0;
		m->busy_over = false;
		n.cause = SRV_CAUSE_NONE;
		n.busy_reply = false;
		n.busy_detail[0] = '\0';
		if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "LOADING", 7))
			n.proc = SRV_LOADING;
		else
			n.proc = SRV_UP; /* PONG, or any answer: alive (NOAUTH included) */
	}
	if (r->type == REDIS_REPLY_ERROR &&
	    (!strncmp(r->str, "NOAUTH", 6) || !strncmp(r->str, "WRONGPASS", 9) ||
	     !strncmp(r->str, "NOPERM", 6)))
		snprintf(n.auth_error, sizeof(n.auth_error), "%s", r->str);
	n.exit_cause[0] = '\0';
	n.core_dumped = n.oom = false;
	commit(m, &n);
}

static void send_cmd(struct srvmon *m, redis_link_reply_fn fn, void *priv, int argc,
		     const char **argv)
{
	int err = redis_link_command(m->link, fn, priv, argc, argv, NULL);

	if (err && err != -ENOTCONN)
		pr_debug("failed to send %s to the server: %s\n", argv[0], strerror(-err));
}

/* Samples the command thread into the ring; NULL without kernel state. With
 * cgroup, its cgroup's throttling too: the cgroup is looked up again at the
 * first such sample of a silence (a server may be moved between cgroups). */
static struct srv_sample *take_sample(struct srvmon *m, bool cgroup)
{
	struct srv_sample *x = &m->samples[m->nsamples % SRV_SAMPLES];

	if (!m->o.sched || m->st.pid <= 0 || sched_watch_sample(m->o.sched, m->st.pid, &x->s))
		return NULL;
	x->throttled_us = -1;
	if (cgroup) {
		if (m->cpu_stat_pid != m->st.pid || m->nsamples <= 1) {
			m->cpu_stat_pid = m->st.pid;
			cpu_stat_find(m->st.pid, m->cpu_stat, sizeof(m->cpu_stat));
		}
		x->throttled_us = cpu_stat_throttled_us(m->cpu_stat);
	}
	m->nsamples++;
	return x;
}

/* The verdict on the thread now, over the last hung_after intervals at most. */
static enum srv_cause judge_now(struct srvmon *m, struct srv_evidence *ev)
{
	unsigned k = m->o.hung_after < SRV_SAMPLES - 1 ? m->o.hung_after : SRV_SAMPLES - 1;
	const struct srv_sample *cur = take_sample(m, true), *base;
	enum srv_cause c;

	int64_t silent_ms = m->hung.waiting ? fl_mono_ms() - m->hung.sent_ms : 0;

	memset(ev, 0, sizeof(*ev));
	ev->throttled_ms = -1;
	ev->silent_ms = silent_ms;
	if (!cur)
		return SRV_CAUSE_UNKNOWN;
	if (k > m->nsamples - 1)
		k = m->nsamples - 1;
	base = &m->samples[(m->nsamples - 1 - k) % SRV_SAMPLES];
	c = srv_judge(&base->s, &cur->s, ev);
	ev->silent_ms = silent_ms;
	/* The oldest sample of the window with a throttling figure. */
	for (unsigned i = m->nsamples - 1 - k; i < m->nsamples; i++) {
		base = &m->samples[i % SRV_SAMPLES];
		if (base->throttled_us < 0)
			continue;
		if (cur->throttled_us >= base->throttled_us)
			ev->throttled_ms = (cur->throttled_us - base->throttled_us) / 1000;
		break;
	}
	return c;
}

static void go_hung(struct srvmon *m, enum srv_cause cause, const struct srv_evidence *ev)
{
	struct srv_state n = m->st;

	/* A process that is gone is DOWN from BPF, never only "hung". */
	if (n.proc == SRV_DOWN)
		return;
	if (n.proc == SRV_HUNG) {
		m->st.ev = *ev; /* the first cause stays; the figures follow */
		return;
	}
	n.proc = SRV_HUNG;
	n.cause = cause;
	n.ev = *ev;
	n.busy_reply = false;
	commit(m, &n);
}

static void go_busy(struct srvmon *m, const struct srv_evidence *ev)
{
	struct srv_state n = m->st;

	if (!m->busy_since_ms)
		m->busy_since_ms = m->hung.sent_ms;
	if (n.proc == SRV_BUSY || n.proc == SRV_DOWN || m->busy_over) {
		m->st.ev = *ev;
		return;
	}
	n.proc = SRV_BUSY;
	n.cause = SRV_CAUSE_BUSY;
	n.ev = *ev;
	n.busy_reply = false;
	commit(m, &n);
}

/* A PING is out and unanswered: what the kernel says decides. A stopped
 * server is hung after stop_grace_ms; any other silence is judged when it
 * reaches hung_after intervals, and a busy one is alive then. */
static void judge_silence(struct srvmon *m)
{
	struct srv_evidence ev;
	enum srv_cause c = judge_now(m, &ev);

	switch (c) {
	case SRV_CAUSE_STOPPED:
		if (ev.state_ms >= m->o.stop_grace_ms || m->hung.hung)
			go_hung(m, c, &ev);
		break;
	case SRV_CAUSE_BUSY:
		if (m->hung.hung)
			go_busy(m, &ev);
		break;
	default:
		if (m->hung.hung)
			go_hung(m, c, &ev);
		break;
	}
}

static void on_kill(void *ctx, redisReply *r, void *priv)
{
	struct srvmon *m = ctx;
	char detail[80];

	(void)priv;
	if (!r)
		return;
	snprintf(detail, sizeof(detail), "%s",
		 r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS ? r->str : "?");
	snprintf(m->st.busy_detail, sizeof(m->st.busy_detail), "script_kill: %s", detail);
	if (m->ops.note)
		m->ops.note(m->ctx, "script_kill", detail);
	/* The script has written: only a failover ends it (as Sentinel does). */
	if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "UNKILLABLE", 10) &&
	    m->st.proc == SRV_BUSY) {
		struct srv_evidence ev = m->st.ev;

		m->busy_over = true;
		go_hung(m, SRV_CAUSE_BUSY, &ev);
	}
}

/* Busy for busy_max_ms: handled as Sentinel handles a -BUSY primary. SCRIPT
 * KILL once; hung (cause busy) if the script cannot be killed, or if the
 * server is still silent or busy a hung window after the kill. */
static void check_busy_max(struct srvmon *m, int64_t now)
{
	static const char *kill[] = {"SCRIPT", "KILL"};
	int64_t window = (int64_t)m->o.hung_after * m->o.ping_interval_ms;

	if (m->st.proc != SRV_BUSY || !m->busy_since_ms ||
	    now - m->busy_since_ms < m->o.busy_max_ms)
		return;
	if (!m->kill_sent_ms && m->o.no_script_kill) {
		m->kill_sent_ms = now;
		pr_info("server %s busy for %lld ms: shadow mode, not sending SCRIPT KILL\n",
			m->where, (long long)(now - m->busy_since_ms));
		return;
	}
	if (!m->kill_sent_ms) {
		m->kill_sent_ms = now;
		pr_info("server %s busy for %lld ms: sending SCRIPT KILL\n", m->where,
			(long long)(now - m->busy_since_ms));
		send_cmd(m, on_kill, NULL, 2, kill);
		return;
	}
	if (now - m->kill_sent_ms >= window) {
		struct srv_evidence ev = m->st.ev;

		m->busy_over = true;
		if (!m->st.busy_detail[0])
			snprintf(m->st.busy_detail, sizeof(m->st.busy_detail),
				 "script_kill: no answer");
		go_hung(m, SRV_CAUSE_BUSY, &ev);
	}
}

static void on_stop_timer(evutil_socket_t fd, short what, void *arg)
{
	struct srvmon *m = arg;
	struct srv_evidence ev;

	(void)fd;
	(void)what;
	if (judge_now(m, &ev) != SRV_CAUSE_STOPPED)
		return;
	/* The timer ran from the stop signal; the thread's stopped state begins at its
	 * switch, a moment later: wait out the rest of the grace from that. */
	if (ev.state_ms < m->o.stop_grace_ms) {
		struct timeval tv = fl_ms_tv(m->o.stop_grace_ms - ev.state_ms);

		event_add(m->stop_ev, &tv);
		return;
	}
	go_hung(m, SRV_CAUSE_STOPPED, &ev);
}

void srvmon_sched_event(struct srvmon *m, const struct fl_sched_event *e)
{
	int64_t late_ms = (fl_clock_ns(CLOCK_MONOTONIC) - (int64_t)e->ts_ns) / 1000000;
	struct timeval tv;

	if (!m->st.pid || e->tid != (__u32)m->st.pid)
		return;
	if (e->kind == FL_EV_SCHED_CONT) {
		event_del(m->stop_ev);
		return;
	}
	if (e->kind != FL_EV_SCHED_STOP)
		return;
	tv = fl_ms_tv(late_ms < m->o.stop_grace_ms ? m->o.stop_grace_ms - late_ms : 0);
	event_add(m->stop_ev, &tv);
}

static void on_ping_tick(evutil_socket_t fd, short what, void *arg)
{
	struct srvmon *m = arg;
	static const char *ping[] = {"PING"};
	int64_t now = fl_mono_ms();

	(void)fd;
	(void)what;
	if (!redis_link_connected(m->link))
		return;
	switch (hung_tick(&m->hung, now)) {
	case HUNG_SEND:
		if (!redis_link_command(m->link, on_ping, NULL, 1, ping, NULL)) {
			hung_sent(&m->hung, now);
			m->nsamples = 0;
			take_sample(m, false);
			m->ping_sent_ns = fl_clock_ns(CLOCK_MONOTONIC);
		}
		break;
	case HUNG_NOW_HUNG:
	case HUNG_WAIT:
		judge_silence(m);
		break;
	}
	check_busy_max(m, now);
}

/* Which process here is the server that INFO server describes (its process_id is its
 * own pid namespace's): into n->pid if one is. A new reason it is not process_id is
 * marked '!' in pid_why, to be logged once the state is committed. */
static void server_pid(struct srvmon *m, const struct info_repl *i, struct srv_state *n)
{
	struct proc_server ps = {
	    .pid = i->pid, .tcp_port = i->tcp_port, .uptime_s = i->uptime_s, .comm = i->exe_comm};
	char why[sizeof(m->pid_why) - 1];
	pid_t here = proc_server_find(&ps, why, sizeof(why));

	if (here)
		n->pid = here;
	if (!why[0])
		m->pid_why[0] = '\0';
	else if (strcmp(why, m->pid_why))
		snprintf(m->pid_why, sizeof(m->pid_why), "!%s", why);
}

static void on_info(void *ctx, redisReply *r, void *priv)
{
	struct srvmon *m = ctx;
	bool with_server = priv != NULL;
	struct srv_state n = m->st;
	struct info_repl parsed;

	m->info_out = false;
	if (!r)
		return;
	if (r->type == REDIS_REPLY_ERROR) {
		if (!strncmp(r->str, "NOAUTH", 6) || !strncmp(r->str, "NOPERM", 6))
			snprintf(n.auth_error, sizeof(n.auth_error), "%s", r->str);
		commit(m, &n);
		return;
	}
	if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
		redis_link_drop(m->link, "INFO reply is not a string");
		return;
	}
	if (info_parse(r->str, r->len, &parsed)) {
		pr_warn("failed to parse INFO from the server: malformed; reconnecting\n");
		redis_link_drop(m->link, "malformed INFO");
		return;
	}
	if (!with_server) {
		/* INFO replication alone: keep what INFO server told us. */
		parsed.server = n.info.server;
		parsed.pid = n.info.pid;
		parsed.tcp_port = n.info.tcp_port;
		parsed.cluster_enabled = n.info.cluster_enabled;
		parsed.uptime_s = n.info.uptime_s;
		memcpy(parsed.exe_comm, n.info.exe_comm, sizeof(parsed.exe_comm));
		memcpy(parsed.version, n.info.version, sizeof(parsed.version));
		memcpy(parsed.run_id, n.info.run_id, sizeof(parsed.run_id));
	} else {
		m->need_server_info = false;
		if (parsed.pid > 0)
			server_pid(m, &parsed, &n);
	}
	n.info = parsed;
	n.have_info = true;
	n.auth_error[0] = '\0';
	commit(m, &n);
	if (with_server && m->pid_why[0] == '!') {
		memmove(m->pid_why, m->pid_why + 1, strlen(m->pid_why));
		pr_warn("server at %s: %s\n", m->where, m->pid_why);
		if (m->ops.note)
			m->ops.note(m->ctx, "server_pid", m->pid_why);
	}
}

static void request_info(struct srvmon *m)
{
	static const char *repl[] = {"INFO", "replication"};
	/* Redis 7 and Valkey take several sections; older servers and Dragonfly
	 * answer a bare INFO with everything. */
	static const char *all[] = {"INFO"};

	if (m->info_out || !redis_link_connected(m->link))
		return;
	if (m->need_server_info) {
		if (!redis_link_command(m->link, on_info, m, 1, all, NULL))
			m->info_out = true;
	} else if (!redis_link_command(m->link, on_info, NULL, 2, repl, NULL)) {
		m->info_out = true;
	}
}

static void on_info_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	request_info(arg);
}

static void on_auth(void *ctx, redisReply *r, void *priv)
{
	struct srvmon *m = ctx;
	struct srv_state n = m->st;
	char esc[LOG_ESC_MAX];

	(void)priv;
	if (!r)
		return;
	if (r->type == REDIS_REPLY_ERROR) {
		if (strcmp(n.auth_error, r->str))
			pr_warn("failed to authenticate to the server as '%s': %s\n",
				m->user[0] ? m->user : "default",
				log_esc(r->str, esc, sizeof(esc)));
		snprintf(n.auth_error, sizeof(n.auth_error), "%s", r->str);
	} else {
		n.auth_error[0] = '\0';
	}
	commit(m, &n);
}

/* A new connection: a new silence. The stop timer stays: it is about the
 * process, and a stopped server still accepts connections (the kernel does). */
static void reset_silence(struct srvmon *m)
{
	hung_reset(&m->hung);
	m->nsamples = 0;
	m->busy_since_ms = m->kill_sent_ms = 0;
	m->busy_over = false;
}

/* TLS: the connection is let through the write lease before the handshake. */
static void on_tcp_up(void *ctx, int fd)
{
	struct srvmon *m = ctx;

	if (m->ops.connected)
		m->ops.connected(m->ctx, fd);
}

static void on_up(void *ctx)
{
	struct srvmon *m = ctx;
	const char *argv[3] = {"AUTH"};
	int argc = 1;

	m->last_down_why[0] = '\0';
	if (m->ops.connected)
		m->ops.connected(m->ctx, redis_link_fd(m->link));
	reset_silence(m);
	m->info_out = false;
	m->need_server_info = true;
	if (m->password[0]) {
		if (m->user[0])
			argv[argc++] = m->user;
		argv[argc++] = m->password;
		send_cmd(m, on_auth, NULL, argc, argv);
	}
	/* INFO first: its answer (the pid) comes before the PONG that marks the
	 * server up, so proc_up names the right process. */
	request_info(m);
	on_ping_tick(-1, 0, m);
}

static void on_down(void *ctx, const char *why, int err)
{
	struct srvmon *m = ctx;

	reset_silence(m);
	m->info_out = false;
	if (strcmp(m->last_down_why, why)) {
		pr_info("server %s: %s\n", m->where, why);
		snprintf(m->last_down_why, sizeof(m->last_down_why), "%s", why);
	}
	/* Nobody listening: the server is not running. Other failures say
	 * nothing certain about the process. */
	if (err == ECONNREFUSED || err == ENOENT)
		set_proc(m, SRV_DOWN);
	else if (m->st.proc != SRV_DOWN && m->st.proc != SRV_HUNG)
		set_proc(m, SRV_UNKNOWN);
}

void srvmon_exited(struct srvmon *m, pid_t pid, const char *cause, bool core_dumped, bool oom)
{
	struct srv_state n = m->st;

	if (pid != m->st.pid)
		return;
	n.proc = SRV_DOWN;
	snprintf(n.exit_cause, sizeof(n.exit_cause), "%s", cause);
	n.core_dumped = core_dumped;
	n.oom = oom;
	n.pid = 0;
	n.have_info = false;
	n.cause = SRV_CAUSE_NONE;
	n.busy_reply = false;
	n.busy_detail[0] = '\0';
	event_del(m->stop_ev);
	commit(m, &n);
	/* Its connection is dead too; look for the restarted server. */
	redis_link_drop(m->link, "server process exited");
}

/* The pidfile's pid, if that process here is the server on the node's port (a
 * container's server writes its own pid namespace's number). */
static pid_t read_pidfile(const struct srvmon *m)
{
	struct proc_server ps = {
	    .tcp_port = m->o.ep.unix_path[0] ? 0 : m->o.ep.port, .uptime_s = -1, .comm = ""};
	FILE *f = fopen(m->pidfile, "r");
	char buf[32], why[256], *end;
	pid_t here;

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	errno = 0;
	ps.pid = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || ps.pid <= 0 || ps.pid > INT32_MAX)
		return 0;
	here = proc_server_find(&ps, why, sizeof(why));
	if (why[0])
		pr_warn("pidfile %s: %s\n", m->pidfile, why);
	return here;
}

struct srvmon *srvmon_new(struct event_base *base, const struct srvmon_opts *o,
			  const struct srvmon_ops *ops, void *ctx)
{
	static const struct redis_link_ops lops = {
	    .on_up = on_up, .on_down = on_down, .on_tcp_up = on_tcp_up};
	struct srvmon *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->o = *o;
	snprintf(m->user, sizeof(m->user), "%s", o->user ? o->user : "");
	snprintf(m->password, sizeof(m->password), "%s", o->password ? o->password : "");
	snprintf(m->pidfile, sizeof(m->pidfile), "%s", o->pidfile ? o->pidfile : "");
	if (o->ep.unix_path[0])
		snprintf(m->where, sizeof(m->where), "unix:%s", o->ep.unix_path);
	else
		cfg_hostport(m->where, sizeof(m->where), o->ep.host, o->ep.port);
	m->ops = *ops;
	m->ctx = ctx;
	m->hung = (struct hung_sm){.interval_ms = o->ping_interval_ms, .hung_after = o->hung_after};
	/* Connect timeout: a PING interval, like the PING timeout. */
	m->link = redis_link_new(base, &o->ep, "server", o->ping_interval_ms, &lops, m);
	/* The server is local and cheap to dial: look for a restarted one at least
	 * every 5 PING intervals (500 ms at the defaults), not every 5 s. */
	if (m->link && o->tls && redis_link_set_tls(m->link, o->tls, o->tls_host)) {
		redis_link_free(m->link);
		m->link = NULL;
	}
	if (m->link)
		redis_link_set_backoff(m->link,
				       o->ping_interval_ms / 2 > 0 ? o->ping_interval_ms / 2 : 1,
				       5 * o->ping_interval_ms);
	m->ping_ev = event_new(base, -1, EV_PERSIST, on_ping_tick, m);
	m->info_ev = event_new(base, -1, EV_PERSIST, on_info_tick, m);
	m->stop_ev = evtimer_new(base, on_stop_timer, m);
	if (!m->link || !m->ping_ev || !m->info_ev || !m->stop_ev) {
		srvmon_free(m);
		return NULL;
	}
	return m;
}

void srvmon_start(struct srvmon *m)
{
	struct timeval ping = fl_ms_tv(m->o.ping_interval_ms);
	struct timeval info = fl_ms_tv(m->o.info_interval_ms);
	struct srv_state n = m->st;

	if (m->pidfile[0] && (n.pid = read_pidfile(m)))
		commit(m, &n);
	event_add(m->ping_ev, &ping);
	event_add(m->info_ev, &info);
	redis_link_start(m->link);
}

void srvmon_set_no_script_kill(struct srvmon *m, bool no)
{
	if (m)
		m->o.no_script_kill = no;
}

void srvmon_set_timing(struct srvmon *m, int hung_after, int stop_grace_ms, int busy_max_ms,
		       int info_interval_ms)
{
	struct timeval info = fl_ms_tv(info_interval_ms);

	m->o.hung_after = m->hung.hung_after = hung_after;
	m->o.stop_grace_ms = stop_grace_ms;
	m->o.busy_max_ms = busy_max_ms;
	if (m->o.info_interval_ms != info_interval_ms) {
		m->o.info_interval_ms = info_interval_ms;
		if (event_pending(m->info_ev, EV_TIMEOUT, NULL))
			event_add(m->info_ev, &info);
	}
}

int srvmon_send(struct srvmon *m, int argc, const char **argv, redis_link_reply_fn fn, void *priv)
{
	return redis_link_command(m->link, fn, priv, argc, argv, NULL);
}

int srvmon_fd(const struct srvmon *m)
{
	return redis_link_fd(m->link);
}

const struct srv_state *srvmon_state(const struct srvmon *m)
{
	return &m->st;
}

void srvmon_free(struct srvmon *m)
{
	if (!m)
		return;
	redis_link_free(m->link);
	if (m->ping_ev)
		event_free(m->ping_ev);
	if (m->info_ev)
		event_free(m->info_ev);
	if (m->stop_ev)
		event_free(m->stop_ev);
	free(m);
}
