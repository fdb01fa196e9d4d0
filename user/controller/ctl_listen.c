// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The listen socket: accepts agents and clients, reads RESP, dispatches each
 * command to its ctl_on_<command> handler, writes and closes. */
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
#include <event2/event.h>
#include <event2/listener.h>
#include "common/log.h"
#include "controller/ctl.h"


void ctl_conn_free(struct ctl_conn *k)
{
	struct ctl *c = k->ctl;

	if (k->flags & CTL_C_AGENT)
		ctl_agent_closed(k);
	for (int i = 0; i < c->cfg->nshards; i++)
		if (c->waiter[i] == k)
			c->waiter[i] = NULL;
	if (k->prev)
		k->prev->next = k->next;
	else
		c->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	if (k->resume)
		event_free(k->resume);
	for (int i = 0; i < k->nsubs; i++)
		free(k->subs[i]);
	for (int i = 0; i < k->npsubs; i++)
		free(k->psubs[i]);
	bufferevent_free(k->bev);
	resp_reader_free(k->rd);
	free(k);
}

/* Answers err and closes once it is sent. */
void ctl_conn_fatal(struct ctl_conn *k, const char *err)
{
	k->ctl->m.rejected++;
	resp_error_reply(bufferevent_get_output(k->bev), err);
	k->flags |= CTL_C_CLOSING;
	bufferevent_disable(k->bev, EV_READ);
}

static void unknown_command(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *t = evbuffer_new();

	if (!t)
		return;
	/* As Redis 7 words it. */
	evbuffer_add_printf(t, "ERR unknown command '%.128s', with args beginning with: ",
			    cmd->argv[0]);
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
	{ "REPORT", ctl_on_report, false },
	{ "HELLO", ctl_on_hello, false },
	{ "PING", ctl_on_ping, true },
	{ "AUTH", ctl_on_auth, false },
	{ "SENTINEL", ctl_on_sentinel, false },
	{ "INFO", ctl_on_info, false },
	{ "SUBSCRIBE", ctl_on_subscribe, true },
	{ "PSUBSCRIBE", ctl_on_psubscribe, true },
	{ "UNSUBSCRIBE", ctl_on_unsubscribe, true },
	{ "PUNSUBSCRIBE", ctl_on_punsubscribe, true },
	{ "FLATLINE", ctl_on_flatline, false },
	{ "ROLE", ctl_on_role, false },
	{ "CLIENT", ctl_on_client, false },
	{ "COMMAND", ctl_on_command, false },
	{ "QUIT", ctl_on_quit, true },
};

static void dispatch(struct ctl_conn *k, struct resp_cmd *cmd)
{
	const char *name = cmd->argv[0];

	for (size_t i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]); i++) {
		if (strcasecmp(name, ctl_commands[i].name))
			continue;
		if ((k->flags & CTL_C_PUBSUB) && !ctl_commands[i].pubsub)
			break;
		ctl_client_command(k, ctl_commands[i].name);
		ctl_commands[i].fn(k, cmd);
		return;
	}
	if (k->flags & CTL_C_PUBSUB) {
		char e[200];

		snprintf(e, sizeof(e), "ERR Can't execute '%.40s': only (P|S)SUBSCRIBE / "
				       "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed "
				       "in this context", name);
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

static void on_conn_read(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *k = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct resp_cmd cmd;
	char e[200];
	int rc;

	for (;;) {
		struct evbuffer_iovec v;

		/* Every whole command buffered, in order; a deferred answer holds the rest. */
		while (!(k->flags & (CTL_C_CLOSING | CTL_C_WAITING))) {
			rc = resp_next(k->rd, &cmd);
			if (rc == 0)
				break;
			if (rc < 0) {
				snprintf(e, sizeof(e), "ERR %s", resp_error(k->rd));
				pr_debug("closing %s: %s\n", k->peer, resp_error(k->rd));
				ctl_conn_fatal(k, e);
				break;
			}
			dispatch(k, &cmd);
			resp_cmd_free(&cmd);
		}
		if (k->flags & CTL_C_WAITING) {
			bufferevent_disable(bev, EV_READ); /* ctl_failover_done() reads on */
			return;
		}
		if (!evbuffer_get_length(in) || (k->flags & CTL_C_CLOSING))
			break;
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		if (resp_feed(k->rd, v.iov_base, v.iov_len)) {
			ctl_conn_fatal(k, "ERR out of memory");
			break;
		}
		evbuffer_drain(in, v.iov_len);
	}
	if ((k->flags & CTL_C_CLOSING) && !evbuffer_get_length(bufferevent_get_output(bev)))
		ctl_conn_free(k);
}

static void on_conn_resume(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_conn *k = arg;

	(void)fd;
	(void)what;
	on_conn_read(k->bev, k);
}

/* A deferred answer has been written: reads on, and the commands that came behind
 * it run from the loop, not from inside the caller. */
void ctl_conn_resume(struct ctl_conn *k)
{
	k->flags &= ~CTL_C_WAITING;
	bufferevent_enable(k->bev, EV_READ);
	if (resp_pending(k->rd)) {
		if (!k->resume)
			k->resume = evtimer_new(k->ctl->base, on_conn_resume, k);
		if (k->resume)
			event_active(k->resume, EV_TIMEOUT, 0);
	}
}

static void on_conn_event(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_conn *k = arg;

	(void)bev;
	if (what & BEV_EVENT_TIMEOUT && (k->flags & CTL_C_AGENT))
		ctl_agent_timed_out(k);
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		ctl_conn_free(k);
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	struct ctl *c = arg;
	struct ctl_conn *k = calloc(1, sizeof(*k));
	int one = 1;

	(void)lis;
	(void)salen;
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
	k->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!k->rd || !k->bev) {
		resp_reader_free(k->rd);
		if (k->bev)
			bufferevent_free(k->bev);
		else
			close(fd);
		free(k);
		return;
	}
	bufferevent_setcb(k->bev, on_conn_read, on_conn_write, on_conn_event, k);
	bufferevent_enable(k->bev, EV_READ | EV_WRITE);
	k->next = c->conns;
	if (c->conns)
		c->conns->prev = k;
	c->conns = k;
}

int ctl_listen(struct ctl *c)
{
	const struct cfg_endpoint *ep = c->listen_ep;
	unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;
	struct sockaddr_storage ss;
	int len;

	memset(&ss, 0, sizeof(ss));
	if (ep->unix_path[0]) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;

		un->sun_family = AF_UNIX;
		snprintf(un->sun_path, sizeof(un->sun_path), "%s", ep->unix_path);
		unlink(ep->unix_path);
		len = sizeof(*un);
		snprintf(c->listen_str, sizeof(c->listen_str), "unix:%s", ep->unix_path);
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
			return -EINVAL;
		}
		cfg_hostport(c->listen_str, sizeof(c->listen_str), ep->host, ep->port);
	}
	c->lis = evconnlistener_new_bind(c->base, on_accept, c, flags, 128, (struct sockaddr *)&ss,
					 len);
	if (!c->lis) {
		int err = errno;

		pr_warn("failed to listen on %s: %s\n", c->listen_str, strerror(err));
		return -err;
	}
	return 0;
}
