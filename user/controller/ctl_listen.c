// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The listen socket: accepts agents and clients, reads RESP, dispatches each
 * command to its ctl_on_<command> handler. What a connection is and how it ends
 * is ctl_conn.c's; the handlers are the modules' below. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/tls.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"

/* The module's state (c->listener). */
struct ctl_listener {
	struct evconnlistener *lis;	/* plain: [controller] listen; NULL when TLS only */
	struct evconnlistener *tls_lis; /* [controller] tls_listen, NULL without */
	struct ssl_ctx_st *tls_ctx;	/* its certificate and the clients' CA */
	char tls_listen_str[300];
	char ha_addr[300];	     /* HA mode: the address published in etcd (plain, else TLS) */
	struct event *accept_resume; /* the listener paused on EMFILE */
	long long accept_err_ms;     /* last accept error logged */
	unsigned accept_errs;	     /* since */
};

static void unknown_command(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *t = evbuffer_new();

	if (!t)
		return;
	/* As Redis 7 words it. */
	evbuffer_add_printf(
	    t, "ERR unknown command '%.128s', with args beginning with: ", cmd->argv[0]);
	for (int i = 1; i < cmd->argc && evbuffer_get_length(t) < 400; i++)
		evbuffer_add_printf(t, "'%.128s' ", cmd->argv[i]);
	evbuffer_add(t, "", 1);
	resp_error_reply(bufferevent_get_output(k->bev), (const char *)evbuffer_pullup(t, -1));
	evbuffer_free(t);
}

static void ctl_on_ping(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);

	if (k->flags & CTL_C_PUBSUB) { /* as Redis in subscribed mode */
		resp_array(out, 2);
		resp_str(out, "pong");
		resp_str(out, cmd->argc > 1 ? cmd->argv[1] : "");
	} else if (cmd->argc > 1) {
		resp_bulk(out, cmd->argv[1], cmd->lens[1]);
	} else {
		resp_status(out, "PONG");
	}
}

static void ctl_on_quit(struct ctl_conn *k, struct resp_cmd *cmd)
{
	(void)cmd;
	resp_status(bufferevent_get_output(k->bev), "OK");
	k->flags |= CTL_C_CLOSING;
}

/* Every command the controller answers; pubsub: allowed while subscribed (as Redis). */
static const struct {
	const char *name;
	void (*fn)(struct ctl_conn *k, struct resp_cmd *cmd);
	bool pubsub;
} ctl_commands[] = {
    {"REPORT", ctl_on_report, false},
    {"HELLO", ctl_on_hello, false},
    {"PROVE", ctl_on_prove, false},
    {"PING", ctl_on_ping, true},
    {"AUTH", ctl_on_auth, false},
    {"SENTINEL", ctl_on_sentinel, false},
    {"INFO", ctl_on_info, false},
    {"SUBSCRIBE", ctl_on_subscribe, true},
    {"PSUBSCRIBE", ctl_on_psubscribe, true},
    {"UNSUBSCRIBE", ctl_on_unsubscribe, true},
    {"PUNSUBSCRIBE", ctl_on_punsubscribe, true},
    {"FLATLINE", ctl_on_flatline, false},
    {"ROLE", ctl_on_role, false},
    {"CLIENT", ctl_on_client, false},
    {"COMMAND", ctl_on_command, false},
    {"QUIT", ctl_on_quit, true},
};

static void dispatch(struct ctl_conn *k, struct resp_cmd *cmd)
{
	const char *name = cmd->argv[0];

	for (size_t i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]); i++) {
		if (strcasecmp(name, ctl_commands[i].name))
			continue;
		/* A REPORT's answer may be held with those before it (ctl_conn_answer);
		 * any other command's goes to the evbuffer, behind them. */
		if (ctl_commands[i].fn != ctl_on_report)
			ctl_conn_direct_flush(k);
		if ((k->flags & CTL_C_PUBSUB) && !ctl_commands[i].pubsub)
			break;
		if (!ctl_client_may(k, cmd))
			return; /* answered: NOAUTH or NOPERM */
		ctl_client_command(k, ctl_commands[i].name);
		ctl_commands[i].fn(k, cmd);
		return;
	}
	ctl_conn_direct_flush(k);
	if (k->flags & CTL_C_PUBSUB) {
		char e[200];

		snprintf(e, sizeof(e),
			 "ERR Can't execute '%.40s': only (P|S)SUBSCRIBE / "
			 "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed "
			 "in this context",
			 name);
		resp_error_reply(bufferevent_get_output(k->bev), e);
		return;
	}
	unknown_command(k, cmd);
}

static void on_conn_write(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *k = arg;

	if ((k->flags & CTL_C_CLOSING) && !evbuffer_get_length(bufferevent_get_output(bev)))
		ctl_conn_free(k);
}

/* An agent's answers, written at once. The bufferevent would add its
 * write event (an epoll change), wake on it, write, and remove it (another): two
 * syscalls per REPORT. A plain agent connection with nothing pending instead reads
 * with EV_WRITE off, and what its commands answered is written to the socket here;
 * EV_WRITE goes back on (the bufferevent's path) when anything is left, or the
 * connection is closing, deferred, or subscribed. Nothing else writes to an agent
 * connection outside its read callback (CLIENT KILL triggers the write callback
 * directly). */
static bool direct_begin(struct ctl_conn *k)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);

	if ((k->flags & (CTL_C_PLAIN | CTL_C_AGENT)) != (CTL_C_PLAIN | CTL_C_AGENT) ||
	    (k->flags & (CTL_C_PUBSUB | CTL_C_CLOSING | CTL_C_WAITING)) || evbuffer_get_length(out))
		return false;
	if (!(k->flags & CTL_C_WDIRECT)) {
		bufferevent_disable(k->bev, EV_WRITE);
		k->flags |= CTL_C_WDIRECT;
	}
	ctl_conn_direct_open(k); /* its REPORT answers held for one send() */
	return true;
}

/* An answer of up to DIRECT_SEND_MAX bytes (a REPORT's is under 100) goes out with
 * one send() of the buffer made contiguous: evbuffer_write() is a writev(), whose
 * VFS layer (the file's position lock, the iovec copied in) costs a few tenths of
 * a microsecond more per answer, thousands of times a second. Longer output, as
 * before. Whatever is not sent stays in out, as with evbuffer_write(). */
#define DIRECT_SEND_MAX 4096

static void direct_send(struct evbuffer *out, evutil_socket_t fd, size_t len)
{
	unsigned char *p;
	ssize_t n;

	if (len > DIRECT_SEND_MAX || !(p = evbuffer_pullup(out, (ev_ssize_t)len))) {
		evbuffer_write(out, fd);
		return;
	}
	n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n > 0)
		evbuffer_drain(out, (size_t)n);
}

static void direct_end(struct ctl_conn *k)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	evutil_socket_t fd = k->rev ? event_get_fd(k->rev) : bufferevent_getfd(k->bev);
	const char *held;
	size_t len, hlen;
	ssize_t n;

	if (!(k->flags & CTL_C_WDIRECT)) {
		ctl_conn_direct_close(k, 0);
		return;
	}
	if (k->flags & CTL_C_PENALTY) {
		/* A failed AUTH: its answer is held until its turn; the resume
		 * (ctl_conn_on_resume) turns writing back on. */
		ctl_conn_direct_close(k, 0);
		k->flags &= ~CTL_C_WDIRECT;
		return;
	}
	/* The answers held (ctl_conn_answer), with one send() from where they are:
	 * what is not sent goes to the evbuffer, as below. */
	held = ctl_conn_direct_held(k, &hlen);
	n = 0;
	if (hlen && !evbuffer_get_length(out) && !(k->flags & CTL_C_CLOSING))
		n = send(fd, held, hlen, MSG_DONTWAIT | MSG_NOSIGNAL);
	ctl_conn_direct_close(k, n > 0 ? (size_t)n : 0);
	len = evbuffer_get_length(out);
	if (len && !(k->flags & CTL_C_CLOSING)) {
		/* A socket bufferevent keeps its output's start frozen; its own write
		 * callback unfreezes it around the write, as here. An error leaves the
		 * bytes for the bufferevent, which reports it. */
		evbuffer_unfreeze(out, 1);
		direct_send(out, fd, len);
		evbuffer_freeze(out, 1);
		len = evbuffer_get_length(out);
	}
	if (len || (k->flags & (CTL_C_PUBSUB | CTL_C_CLOSING | CTL_C_WAITING))) {
		k->flags &= ~CTL_C_WDIRECT;
		bufferevent_enable(k->bev, EV_WRITE);
	}
}

static void agent_own_reads(struct ctl_conn *k);

/* A connection that used up its turn (low) runs behind every other event, a few
 * callbacks at a time (ctl_base_new); one whose turn emptied its input is back
 * with the others. A flood on hundreds of connections then delays a PING from
 * another one by a few turns, not by one turn of each. */
static void conn_priority(struct ctl_conn *k, bool low)
{
	int pri = low ? CTL_PRIO_LOW : CTL_PRIO_DEFAULT;

	if (!!(k->flags & CTL_C_LOW) == low)
		return;
	/* An event active right now keeps its priority (libevent refuses): tried
	 * again at the end of the next turn. */
	if (bufferevent_priority_set(k->bev, pri))
		return;
	k->flags ^= CTL_C_LOW; /* its resume timer follows in conn_yield */
}

/* Its turn used up: reading off until its resume timer, which fires after the
 * connections that are ready now have had their turn (a timer due at once runs
 * after the loop's next poll; ctl_conn_on_resume reads on again). */
static void conn_yield(struct ctl_conn *k)
{
	static const struct timeval now = {0, 0};

	if (!k->resume)
		k->resume = evtimer_new(k->ctl->base, ctl_conn_on_resume, k);
	if (!k->resume)
		return; /* it runs on when it next reads */
	k->flags |= CTL_C_YIELD;
	ctl_conn_reading(k, false);
	if (!evtimer_pending(k->resume, NULL))
		event_priority_set(k->resume,
				   (k->flags & CTL_C_LOW) ? CTL_PRIO_LOW : CTL_PRIO_DEFAULT);
	evtimer_add(k->resume, &now);
}

/* Runs the commands read: buf (len bytes, read by on_agent_read) and what the
 * bufferevent's input holds; a connection that is not a proven agent, at most
 * CTL_TURN_BYTES bytes of its input per turn. */
static void conn_read(struct ctl_conn *k, const char *buf, size_t len)
{
	struct bufferevent *bev = k->bev;
	/* With its own read event, nothing is read into the bufferevent. */
	struct evbuffer *in = k->rev ? NULL : bufferevent_get_input(bev);
	struct resp_cmd cmd;
	bool ran = false; /* a command finished: a partial frame now is a new one */
	bool direct = direct_begin(k);
	bool turn = !(k->flags & CTL_C_AGENT), yield = false;
	size_t fed = 0, ncmds = 0;
	char e[200];
	int rc;

	if (len && resp_feed(k->rd, buf, len))
		ctl_conn_fatal(k, "ERR out of memory");
	for (;;) {
		struct evbuffer_iovec v;

		/* Every whole command buffered, in order; a deferred answer holds the rest. */
		while (!(k->flags & (CTL_C_CLOSING | CTL_C_WAITING))) {
			if (turn && ncmds >= CTL_TURN_CMDS) {
				yield = true;
				break;
			}
			rc = resp_next(k->rd, &cmd);
			if (rc == 0)
				break;
			if (rc < 0) {
				snprintf(e, sizeof(e), "ERR %s", resp_error(k->rd));
				unsigned supp = 0;

				/* Said once per second per address at most. */
				if (ctl_log_allowed(k->ctl, k->peer, &supp))
					pr_warn("closing client %s: %s%s\n", k->peer,
						resp_error(k->rd),
						supp ? " (and others from there, not logged)" : "");
				ctl_conn_fatal(k, e);
				break;
			}
			dispatch(k, &cmd);
			resp_cmd_free(&cmd);
			ran = true;
			ncmds++;
			/* Per command: a pipeline of big answers stops at the limit. */
			if (!(k->flags & CTL_C_CLOSING) && ctl_conn_over_limit(k)) {
				ctl_conn_free(k);
				return;
			}
		}
		if (k->flags & CTL_C_WAITING) {
			if (direct)
				direct_end(k);
			ctl_conn_reading(k, false); /* ctl_failover_done() reads on */
			return;
		}
		if (yield || !in || !evbuffer_get_length(in) || (k->flags & CTL_C_CLOSING))
			break;
		if (turn && fed >= CTL_TURN_BYTES) {
			yield = true;
			break;
		}
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		if (turn && v.iov_len > CTL_TURN_BYTES - fed)
			v.iov_len = CTL_TURN_BYTES - fed;
		if (resp_feed(k->rd, v.iov_base, v.iov_len)) {
			ctl_conn_fatal(k, "ERR out of memory");
			break;
		}
		evbuffer_drain(in, v.iov_len);
		fed += v.iov_len;
	}
	/* Its turn used up: by commands, or by bytes (a full read, however many of
	 * them were empty lines). */
	if (turn)
		conn_priority(k, (yield || fed >= CTL_TURN_BYTES) && !(k->flags & CTL_C_CLOSING));
	if (yield && !(k->flags & CTL_C_CLOSING))
		conn_yield(k);
	if (direct)
		direct_end(k);
	if (!(k->flags & CTL_C_CLOSING) && ctl_conn_over_limit(k)) {
		ctl_conn_free(k);
		return;
	}
	/* A frame begun, or an agent handshake begun, must finish in time: timed
	 * from the frame's start (a client pipelining for minutes always has some
	 * frame half read, never the same one). */
	bool handshake = (k->flags & CTL_C_CHALLENGED) && !(k->flags & CTL_C_AGENT);

	if (!(k->flags & CTL_C_CLOSING) && (resp_pending(k->rd) || handshake)) {
		if ((ran && !handshake) || !evtimer_pending(k->deadline, NULL)) {
			struct timeval tv = fl_ms_tv(CTL_PREAUTH_MS);

			evtimer_add(k->deadline, &tv);
		}
	} else {
		event_del(k->deadline);
	}
	if ((k->flags & CTL_C_CLOSING) && !evbuffer_get_length(bufferevent_get_output(bev))) {
		ctl_conn_free(k);
		return;
	}
	if (!k->rev && (k->flags & (CTL_C_PLAIN | CTL_C_AGENT)) == (CTL_C_PLAIN | CTL_C_AGENT) &&
	    !(k->flags &
	      (CTL_C_CLOSING | CTL_C_WAITING | CTL_C_PUBSUB | CTL_C_PENALTY | CTL_C_YIELD)))
		agent_own_reads(k);
}

/* What a resumed connection runs (ctl_conn_resume, ctl_conn_on_resume). */
static void conn_read_buffered(struct ctl_conn *k)
{
	conn_read(k, NULL, 0);
}

static void on_conn_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_read(arg, NULL, 0);
}

/* An agent's socket readable (or silent for 10 heartbeats). One recv() into a
 * buffer on the stack, fed to the RESP reader: the bufferevent's read asks the
 * kernel how much is readable first (ioctl FIONREAD), one system call more per
 * REPORT. The reader's limits are the same: every byte goes through
 * resp_feed(). A full buffer leaves the rest readable: the event fires again. */
static void on_agent_read(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_conn *k = arg;
	char buf[16384];
	ssize_t n;

	if (what & EV_TIMEOUT) {
		ctl_agent_timed_out(k);
		ctl_conn_free(k);
		return;
	}
	if (k->flags & (CTL_C_CLOSING | CTL_C_WAITING | CTL_C_PENALTY)) {
		event_del(k->rev); /* not reading now: ctl_conn_reading() turns it on */
		return;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) { /* as the bufferevent's EOF or error */
		ctl_conn_free(k);
		return;
	}
	conn_read(k, buf, (size_t)n);
}

/* A plain agent connection, its handshake done and its input all fed to the
 * reader: from now on it reads with its own event (its bufferevent keeps writing
 * what cannot be written at once, and TLS connections never get here). The
 * silent timeout moves with it. If the event cannot be made, it stays as it was. */
static void agent_own_reads(struct ctl_conn *k)
{
	k->rev = event_new(k->ctl->base, bufferevent_getfd(k->bev), EV_READ | EV_PERSIST,
			   on_agent_read, k);
	if (!k->rev)
		return;
	bufferevent_disable(k->bev, EV_READ);
	ctl_conn_reading(k, true);
}

static void on_conn_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_conn *k = arg;
	unsigned supp = 0;

	(void)fd;
	(void)what;
	if (k->tls_handshake) {
		if (ctl_log_allowed(k->ctl, k->peer, &supp))
			pr_warn(
			    "closing client %s: the TLS handshake not finished within %d ms%s\n",
			    k->peer, CTL_PREAUTH_MS,
			    supp ? " (and others from there, not logged)" : "");
		ctl_conn_free(k);
		return;
	}
	if (k->flags & (CTL_C_WAITING | CTL_C_CLOSING))
		return; /* not reading on purpose, or on its way out */
	if (!resp_pending(k->rd) && (!(k->flags & CTL_C_CHALLENGED) || (k->flags & CTL_C_AGENT)))
		return;
	if (ctl_log_allowed(k->ctl, k->peer, &supp))
		pr_warn("closing client %s: %s not finished within %d ms%s\n", k->peer,
			resp_pending(k->rd) ? "a command" : "the agent handshake", CTL_PREAUTH_MS,
			supp ? " (and others from there, not logged)" : "");
	ctl_conn_free(k);
}

/* With client authentication on, a connection that neither logged in nor proved
 * an agent within CTL_LOGIN_MS of its accept is closed: idle connections cannot
 * hold the maxclients slots that agents and clients need. One waiting for its
 * queued AUTH answer (bounded by the queue) is looked at again later. */
static void on_login_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_conn *k = arg;
	unsigned supp = 0;

	(void)fd;
	(void)what;
	if (k->flags & (CTL_C_LOGIN | CTL_C_AGENT | CTL_C_CLOSING))
		return;
	if (k->flags & CTL_C_PENALTY) {
		struct timeval tv = fl_ms_tv(CTL_LOGIN_MS);

		evtimer_add(k->login_deadline, &tv);
		return;
	}
	if (ctl_log_allowed(k->ctl, k->peer, &supp))
		pr_warn("closing client %s: not logged in within %d ms%s\n", k->peer, CTL_LOGIN_MS,
			supp ? " (and others from there, not logged)" : "");
	ctl_conn_free(k);
}

/* An event while the TLS handshake runs: done (true, reading on), or failed (said,
 * rate-limited per address, and freed: true). */
static bool ctl_tls_event(struct ctl_conn *k, struct bufferevent *bev, short what)
{
	int err = EVUTIL_SOCKET_ERROR();
	unsigned supp = 0;
	char why[200];

	if (what & BEV_EVENT_CONNECTED) {
		k->tls_handshake = false;
		event_del(k->deadline);
		return true;
	}
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return false;
	tls_bev_error(bev, (what & BEV_EVENT_ERROR) ? err : 0, why, sizeof(why));
	k->ctl->m.rejected++;
	if (ctl_log_allowed(k->ctl, k->peer, &supp))
		pr_warn("closing client %s: TLS handshake failed: %s%s\n", k->peer, why,
			supp ? " (and others from there, not logged)" : "");
	ctl_conn_free(k);
	return true;
}

static void on_conn_event(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_conn *k = arg;

	if (k->tls_handshake && ctl_tls_event(k, bev, what))
		return;
	if (what & BEV_EVENT_TIMEOUT && (k->flags & CTL_C_AGENT))
		ctl_agent_timed_out(k);
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		ctl_conn_free(k);
}

static void accept_conn(struct ctl *c, evutil_socket_t fd, struct sockaddr *sa, bool tls)
{
	static const char full[] = "-ERR max number of clients reached\r\n";
	struct ctl_conn *k;
	int one = 1;

	if (ctl_conn_count(c) >= ctl_max_clients(c)) {
		/* As Redis: the error, then closed; logged once per interval (on the
		 * TLS socket only closed: the error would not be TLS). */
		if (!tls && send(fd, full, sizeof(full) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			pr_debug("failed to refuse a client: %s\n", strerror(errno));
		close(fd);
		if (fl_mono_ms() - c->listener->accept_err_ms >= 10000) {
			pr_warn(
			    "refusing clients: maxclients (%d) reached (%u refused since the last "
			    "message)\n",
			    ctl_max_clients(c), c->listener->accept_errs + 1);
			c->listener->accept_err_ms = fl_mono_ms();
			c->listener->accept_errs = 0;
		} else {
			c->listener->accept_errs++;
		}
		return;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		close(fd);
		return;
	}
	k->ctl = c;
	k->node = -1;
	ctl_client_opened(k);
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(k->peer, sizeof(k->peer), "%s:%d", a, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *in = (struct sockaddr_in6 *)sa;
		char a[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, &in->sin6_addr, a, sizeof(a));
		snprintf(k->peer, sizeof(k->peer), "[%s]:%d", a, ntohs(in->sin6_port));
	} else {
		snprintf(k->peer, sizeof(k->peer), "unix");
	}
	if (sa->sa_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	k->rd = resp_reader_new();
	if (tls) {
		SSL *ssl = SSL_new(c->listener->tls_ctx);

		k->bev = ssl ? bufferevent_openssl_socket_new(c->base, fd, ssl,
							      BUFFEREVENT_SSL_ACCEPTING,
							      BEV_OPT_CLOSE_ON_FREE)
			     : NULL;
		/* On failure libevent 2.1 has freed ssl itself (BEV_OPT_CLOSE_ON_FREE);
		 * the descriptor is closed below. */
		if (k->bev)
			bufferevent_openssl_set_allow_dirty_shutdown(k->bev, 1);
		k->tls_handshake = true;
		k->flags |= CTL_C_TLS;
	} else {
		k->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
		k->flags |= CTL_C_PLAIN; /* a TLS bufferevent must not have it */
	}
	k->deadline = evtimer_new(c->base, on_conn_deadline, k);
	if (!k->rd || !k->bev || !k->deadline) {
		resp_reader_free(k->rd);
		if (k->bev)
			bufferevent_free(k->bev);
		else
			close(fd);
		if (k->deadline)
			event_free(k->deadline);
		free(k);
		return;
	}
	/* Small frames until AUTH or the agent handshake, as Redis limits
	 * unauthenticated clients. */
	resp_reader_set_max_frame(k->rd, CTL_PREAUTH_FRAME);
	/* A turn's worth per read (conn_read): a flood of 300 connections is read
	 * 4 KiB at a time each, not 16 (a proven agent reads on its own, 16 KiB). */
	bufferevent_set_max_single_read(k->bev, CTL_TURN_BYTES);
	bufferevent_setcb(k->bev, on_conn_read, on_conn_write, on_conn_event, k);
	ctl_conn_count_output(k);
	bufferevent_enable(k->bev, EV_READ | EV_WRITE);
	ctl_conn_add(k);
	if (tls) { /* the handshake, like a frame begun, has CTL_PREAUTH_MS */
		struct timeval tv = fl_ms_tv(CTL_PREAUTH_MS);

		evtimer_add(k->deadline, &tv);
	}
	if (ctl_client_auth_on(c)) {
		struct timeval tv = fl_ms_tv(CTL_LOGIN_MS);

		k->login_deadline = evtimer_new(c->base, on_login_deadline, k);
		if (!k->login_deadline) {
			ctl_conn_free(k);
			return;
		}
		evtimer_add(k->login_deadline, &tv);
	}
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	(void)lis;
	(void)salen;
	accept_conn(arg, fd, sa, false);
}

static void on_accept_tls(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
			  int salen, void *arg)
{
	(void)lis;
	(void)salen;
	accept_conn(arg, fd, sa, true);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;

	(void)fd;
	(void)what;
	if (c->listener->lis)
		evconnlistener_enable(c->listener->lis);
	if (c->listener->tls_lis)
		evconnlistener_enable(c->listener->tls_lis);
}

/* accept() failed. Out of descriptors (or memory): the pending connection stays
 * in the backlog and the listener would fire again at once, so it pauses for
 * CTL_ACCEPT_PAUSE_MS; one message per 10 s, with a count. */
static void on_accept_error(struct evconnlistener *lis, void *arg)
{
	struct ctl *c = arg;
	int err = EVUTIL_SOCKET_ERROR();
	struct timeval tv = fl_ms_tv(CTL_ACCEPT_PAUSE_MS);

	/* Both sockets: the descriptors they would take are the same. */
	if (c->listener->lis)
		evconnlistener_disable(c->listener->lis);
	if (c->listener->tls_lis)
		evconnlistener_disable(c->listener->tls_lis);
	(void)lis;
	evtimer_add(c->listener->accept_resume, &tv);
	if (fl_mono_ms() - c->listener->accept_err_ms >= 10000) {
		pr_warn("failed to accept a connection: %s (%d clients); pausing accept for %d ms "
			"(%u failures since the last message)\n",
			strerror(err), ctl_conn_count(c), CTL_ACCEPT_PAUSE_MS,
			c->listener->accept_errs + 1);
		c->listener->accept_err_ms = fl_mono_ms();
		c->listener->accept_errs = 0;
	} else {
		c->listener->accept_errs++;
	}
}

/* Binds ep (str gets it as written in messages). */
static struct evconnlistener *bind_ep(struct ctl *c, const struct cfg_endpoint *ep,
				      evconnlistener_cb cb, char *str, size_t strlen_)
{
	unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;
	struct evconnlistener *lis;
	struct sockaddr_storage ss;
	int len;

	memset(&ss, 0, sizeof(ss));
	if (ep->unix_path[0]) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;

		un->sun_family = AF_UNIX;
		snprintf(un->sun_path, sizeof(un->sun_path), "%s", ep->unix_path);
		unlink(ep->unix_path);
		len = sizeof(*un);
		snprintf(str, strlen_, "unix:%s", ep->unix_path);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		if (inet_pton(AF_INET, ep->host, &in->sin_addr) == 1) {
			in->sin_family = AF_INET;
			in->sin_port = htons(ep->port);
			len = sizeof(*in);
		} else if (inet_pton(AF_INET6, ep->host, &in6->sin6_addr) == 1) {
			in6->sin6_family = AF_INET6;
			in6->sin6_port = htons(ep->port);
			len = sizeof(*in6);
		} else {
			pr_warn("failed to listen on %s: not an IP address\n", ep->host);
			errno = EINVAL;
			return NULL;
		}
		cfg_hostport(str, strlen_, ep->host, ep->port);
	}
	lis = evconnlistener_new_bind(c->base, cb, c, flags, 128, (struct sockaddr *)&ss, len);
	if (!lis) {
		int err = errno;

		pr_warn("failed to listen on %s: %s\n", str, strerror(err));
		errno = err;
		return NULL;
	}
	evconnlistener_set_error_cb(lis, on_accept_error);
	return lis;
}

/* [controller] tls_listen: the TLS socket, its context built from the cluster
 * file (a file that cannot be used is named with its line). */
static int listen_tls(struct ctl *c, const struct cfg_endpoint *ep)
{
	char err[600];

	c->listener->tls_ctx = tls_server_ctx(c->cfg, err, sizeof(err));
	if (!c->listener->tls_ctx) {
		pr_warn("failed to set up TLS: %s\n", err);
		return -EINVAL;
	}
	c->listener->tls_lis = bind_ep(c, ep, on_accept_tls, c->listener->tls_listen_str,
				       sizeof(c->listener->tls_listen_str));
	return c->listener->tls_lis ? 0 : -errno;
}

int ctl_listen(struct ctl *c, const struct cfg_endpoint *listen_ep,
	       const struct cfg_endpoint *tls_listen_ep)
{
	const struct cfg *cfg = c->cfg;
	/* With tls_listen, the plain socket only when listen is also given (in HA mode,
	 * in this controller's [controller "id"] section). */
	bool plain = cfg->etcd.enabled ? listen_ep != NULL
				       : !cfg->controller.tls || cfg->controller.have_listen;
	char plain_str[300] = "";

	ctl_conn_set_reader(c, conn_read_buffered);
	c->listener = calloc(1, sizeof(*c->listener));
	if (!c->listener)
		return -ENOMEM;
	c->listener->accept_resume = evtimer_new(c->base, on_accept_resume, c);
	if (!c->listener->accept_resume)
		return -ENOMEM;
	if (plain) {
		c->listener->lis = bind_ep(c, listen_ep, on_accept, plain_str, sizeof(plain_str));
		if (!c->listener->lis)
			return -errno;
	}
	if (tls_listen_ep) {
		int rc = listen_tls(c, tls_listen_ep);

		if (rc)
			return rc;
		snprintf(c->listen_str, sizeof(c->listen_str), "%.140s%stls %.140s", plain_str,
			 plain ? ", " : "", c->listener->tls_listen_str);
	} else {
		snprintf(c->listen_str, sizeof(c->listen_str), "%s", plain_str);
	}
	if (plain) {
		snprintf(c->listener->ha_addr, sizeof(c->listener->ha_addr), "%s", plain_str);
	} else if (cfg->etcd.enabled) {
		const struct cfg_ctl *k = cfg_find_ctl(cfg, c->id);

		cfg_hostport(c->listener->ha_addr, sizeof(c->listener->ha_addr),
			     k->tls_address.host, k->tls_address.port);
	}
	return 0;
}

const char *ctl_listen_ha_addr(const struct ctl *c)
{
	return c->listener ? c->listener->ha_addr : "";
}

void ctl_listen_close(struct ctl *c)
{
	struct ctl_listener *l = c->listener;

	if (!l)
		return;
	if (l->lis)
		evconnlistener_free(l->lis);
	if (l->tls_lis)
		evconnlistener_free(l->tls_lis);
	if (l->tls_ctx)
		SSL_CTX_free(l->tls_ctx);
	if (l->accept_resume)
		event_free(l->accept_resume);
	free(l);
	c->listener = NULL;
}
