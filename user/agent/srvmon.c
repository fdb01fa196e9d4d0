// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The local server's health: PING every ping_interval_ms (one at a time),
 * INFO every info_interval_ms, the hung state machine, and the BPF verdict on
 * its process. Every state change goes to the agent at once. */
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
#include "kern/proc_watch.h"
#include "common/redis_link.h"
#include "agent/srvmon.h"

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
	bool info_out;         /* an INFO is in flight */
	bool need_server_info; /* ask INFO server too (pid, version) */
	char last_down_why[160];
	struct srv_state st;
};

const char *srv_proc_name(enum srv_proc p)
{
	return report_proc_word(p);
}

enum hung_act hung_tick(struct hung_sm *sm, int64_t now)
{
	bool late = sm->last_tick_ms && now - sm->last_tick_ms > 2 * (int64_t)sm->interval_ms;

	sm->last_tick_ms = now;
	if (!sm->waiting)
		return HUNG_SEND;
	if (late) {
		/* We were stopped or starved ourselves: judge nothing from that gap. */
		sm->sent_ms = now;
		return HUNG_WAIT;
	}
	if (!sm->hung && now - sm->sent_ms >= (int64_t)sm->hung_after * sm->interval_ms) {
		sm->hung = true;
		return HUNG_NOW_HUNG;
	}
	return HUNG_WAIT;
}

void hung_sent(struct hung_sm *sm, int64_t now)
{
	sm->waiting = true;
	sm->sent_ms = now;
}

bool hung_reply(struct hung_sm *sm)
{
	bool was = sm->hung;

	sm->waiting = false;
	sm->hung = false;
	return was;
}

void hung_reset(struct hung_sm *sm)
{
	sm->waiting = false;
	sm->hung = false;
	sm->last_tick_ms = 0;
}

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
	if (m->ops.ping && m->ping_sent_ns)
		m->ops.ping(m->ctx, fl_clock_ns(CLOCK_MONOTONIC) - m->ping_sent_ns);
	m->ping_sent_ns = 0;
	if (hung_reply(&m->hung))
		pr_info("server %s answers again\n", m->where);
	n = m->st;
	if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "BUSY", 4))
		n.proc = SRV_BUSY;
	else if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "LOADING", 7))
		n.proc = SRV_LOADING;
	else
		n.proc = SRV_UP; /* PONG, or any answer: it is alive (NOAUTH included) */
	if (r->type == REDIS_REPLY_ERROR &&
	    (!strncmp(r->str, "NOAUTH", 6) || !strncmp(r->str, "WRONGPASS", 9) ||
	     !strncmp(r->str, "NOPERM", 6)))
		snprintf(n.auth_error, sizeof(n.auth_error), "%s", r->str);
	n.exit_cause[0] = '\0';
	n.core_dumped = n.oom = false;
	commit(m, &n);
}

static void send_cmd(struct srvmon *m, redis_link_reply_fn fn, void *priv, int argc, const char **argv)
{
	int err = redis_link_command(m->link, fn, priv, argc, argv, NULL);

	if (err && err != -ENOTCONN)
		pr_debug("failed to send %s to the server: %s\n", argv[0], strerror(-err));
}

static void on_ping_tick(evutil_socket_t fd, short what, void *arg)
{
	struct srvmon *m = arg;
	static const char *ping[] = { "PING" };
	int64_t now = fl_mono_ms();

	(void)fd;
	(void)what;
	if (!redis_link_connected(m->link))
		return;
	switch (hung_tick(&m->hung, now)) {
	case HUNG_SEND:
		if (!redis_link_command(m->link, on_ping, NULL, 1, ping, NULL)) {
			hung_sent(&m->hung, now);
			m->ping_sent_ns = fl_clock_ns(CLOCK_MONOTONIC);
		}
		break;
	case HUNG_NOW_HUNG:
		/* A process that is gone is DOWN from BPF, never only "hung". */
		if (m->st.proc != SRV_DOWN)
			set_proc(m, SRV_HUNG);
		break;
	case HUNG_WAIT:
		break;
	}
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
		memcpy(parsed.version, n.info.version, sizeof(parsed.version));
		memcpy(parsed.run_id, n.info.run_id, sizeof(parsed.run_id));
	} else {
		m->need_server_info = false;
		if (parsed.pid > 0) {
			if (fl_pid_alive(parsed.pid))
				n.pid = parsed.pid;
			else if (n.pid != parsed.pid)
				pr_warn("server reports process_id %ld, which is not a process on this "
					"host: not watching it in the kernel\n",
					parsed.pid);
		}
	}
	n.info = parsed;
	n.have_info = true;
	n.auth_error[0] = '\0';
	commit(m, &n);
}

static void request_info(struct srvmon *m)
{
	static const char *repl[] = { "INFO", "replication" };
	/* Redis 7 and Valkey take several sections; older servers and Dragonfly
	 * answer a bare INFO with everything. */
	static const char *all[] = { "INFO" };

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

	(void)priv;
	if (!r)
		return;
	if (r->type == REDIS_REPLY_ERROR) {
		if (strcmp(n.auth_error, r->str))
			pr_warn("failed to authenticate to the server as '%s': %s\n",
				m->user[0] ? m->user : "default", r->str);
		snprintf(n.auth_error, sizeof(n.auth_error), "%s", r->str);
	} else {
		n.auth_error[0] = '\0';
	}
	commit(m, &n);
}

static void on_up(void *ctx)
{
	struct srvmon *m = ctx;
	const char *argv[3] = { "AUTH" };
	int argc = 1;

	m->last_down_why[0] = '\0';
	if (m->ops.connected)
		m->ops.connected(m->ctx, redis_link_fd(m->link));
	hung_reset(&m->hung);
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

	hung_reset(&m->hung);
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
	commit(m, &n);
	/* Its connection is dead too; look for the restarted server. */
	redis_link_drop(m->link, "server process exited");
}

static pid_t read_pidfile(const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[32], *end;
	long pid;

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	errno = 0;
	pid = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || pid <= 0 || pid > INT32_MAX)
		return 0;
	return fl_pid_alive(pid) ? (pid_t)pid : 0;
}

struct srvmon *srvmon_new(struct event_base *base, const struct srvmon_opts *o,
			  const struct srvmon_ops *ops, void *ctx)
{
	static const struct redis_link_ops lops = { .on_up = on_up, .on_down = on_down };
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
	m->hung = (struct hung_sm){ .interval_ms = o->ping_interval_ms, .hung_after = o->hung_after };
	/* Connect timeout: a PING interval, like the PING timeout. */
	m->link = redis_link_new(base, &o->ep, "server", o->ping_interval_ms, &lops, m);
	/* The server is local and cheap to dial: look for a restarted one at least
	 * every 5 PING intervals (500 ms at the defaults), not every 5 s. */
	if (m->link)
		redis_link_set_backoff(m->link, o->ping_interval_ms / 2 > 0 ? o->ping_interval_ms / 2 : 1,
			       5 * o->ping_interval_ms);
	m->ping_ev = event_new(base, -1, EV_PERSIST, on_ping_tick, m);
	m->info_ev = event_new(base, -1, EV_PERSIST, on_info_tick, m);
	if (!m->link || !m->ping_ev || !m->info_ev) {
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

	if (m->pidfile[0] && (n.pid = read_pidfile(m->pidfile)))
		commit(m, &n);
	event_add(m->ping_ev, &ping);
	event_add(m->info_ev, &info);
	redis_link_start(m->link);
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
	free(m);
}
