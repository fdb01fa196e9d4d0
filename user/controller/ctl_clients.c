// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The connections as clients see them (CLIENT ID, GETNAME, SETNAME, LIST, INFO,
 * KILL, SETINFO) and the commands about commands (COMMAND, COUNT, LIST, INFO,
 * DOCS), in Redis 7's reply shapes, so that client libraries' client_id(),
 * client_list(), command_count() ... work against the controller. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include "common/clock.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"

struct ctl_clients {
	unsigned long long next_id; /* CLIENT ID: the last one given */
};

int ctl_clients_init(struct ctl *c)
{
	c->clients = calloc(1, sizeof(*c->clients));
	return c->clients ? 0 : -ENOMEM;
}

void ctl_clients_fini(struct ctl *c)
{
	free(c->clients);
	c->clients = NULL;
}

void ctl_client_opened(struct ctl_conn *k)
{
	k->id = ++k->ctl->clients->next_id;
	k->created_ms = k->last_cmd_ms = fl_mono_ms();
	snprintf(k->last_cmd, sizeof(k->last_cmd), "NULL");
}

void ctl_client_command(struct ctl_conn *k, const char *name)
{
	size_t i;

	k->last_cmd_ms = fl_mono_ms();
	for (i = 0; name[i] && i + 1 < sizeof(k->last_cmd); i++)
		k->last_cmd[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
	k->last_cmd[i] = '\0';
}

int ctl_clients_count(const struct ctl *c)
{
	int n = 0;

	for (const struct ctl_conn *k = c->conns; k; k = k->next)
		n += !(k->flags & CTL_C_CLOSING);
	return n;
}

/* One line of CLIENT LIST, as Redis 7.0 prints it (the fields it has no
 * meaning for here are there with Redis's idle values). */
static void client_line(struct evbuffer *b, const struct ctl_conn *k)
{
	long long now = fl_mono_ms();
	size_t obl = evbuffer_get_length(bufferevent_get_output(k->bev));
	size_t qbuf = evbuffer_get_length(bufferevent_get_input(k->bev));
	char laddr[300] = "";

	snprintf(laddr, sizeof(laddr), "%s:%d", k->ctl->cfg->controller.listen.host,
		 k->ctl->cfg->controller.listen.port);
	evbuffer_add_printf(b,
			    "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s "
			    "db=0 sub=%d psub=%d ssub=0 multi=-1 qbuf=%zu qbuf-free=0 argv-mem=0 "
			    "multi-mem=0 rbs=16384 rbp=0 obl=%zu oll=0 omem=%zu tot-mem=%zu "
			    "events=r%s cmd=%s user=%s redir=-1 resp=%d\n",
			    k->id, k->peer, laddr, (int)bufferevent_getfd(k->bev), k->name,
			    (now - k->created_ms) / 1000, (now - k->last_cmd_ms) / 1000,
			    (k->flags & CTL_C_PUBSUB) ? "P" : "N", k->nsubs, k->npsubs, qbuf, obl,
			    obl, obl + qbuf, obl ? "w" : "", k->last_cmd,
			    k->user[0] ? k->user : "default", (k->flags & CTL_C_RESP3) ? 3 : 2);
}

static void reply_text(struct evbuffer *out, struct evbuffer *t)
{
	resp_bulk(out, (const char *)evbuffer_pullup(t, -1), evbuffer_get_length(t));
}

/* CLIENT KILL addr | CLIENT KILL <filter> <value> ... (ID, ADDR, LADDR, TYPE,
 * SKIPME): the number killed, or for the old form +OK / no such client. */
static void client_kill(struct ctl_conn *k, struct resp_cmd *cmd, struct evbuffer *out)
{
	const char *addr = NULL, *type = NULL;
	unsigned long long id = 0;
	bool skipme = true, old = cmd->argc == 3;
	int killed = 0;

	if (old) {
		addr = cmd->argv[2];
	} else if (cmd->argc < 4 || cmd->argc % 2) {
		resp_error_reply(out, "ERR syntax error");
		return;
	}
	for (int a = 2; !old && a + 1 < cmd->argc; a += 2) {
		const char *f = cmd->argv[a], *v = cmd->argv[a + 1];

		if (!strcasecmp(f, "id")) {
			char *end;

			id = strtoull(v, &end, 10);
			if (*end || !id) {
				resp_error_reply(out, "ERR client-id should be greater than 0");
				return;
			}
		} else if (!strcasecmp(f, "addr")) {
			addr = v;
		} else if (!strcasecmp(f, "type")) {
			if (strcasecmp(v, "normal") && strcasecmp(v, "pubsub") &&
			    strcasecmp(v, "master") && strcasecmp(v, "replica") &&
			    strcasecmp(v, "slave")) {
				char e[160];

				snprintf(e, sizeof(e), "ERR Unknown client type '%.64s'", v);
				resp_error_reply(out, e);
				return;
			}
			type = v;
		} else if (!strcasecmp(f, "skipme")) {
			if (strcasecmp(v, "yes") && strcasecmp(v, "no")) {
				resp_error_reply(out, "ERR syntax error");
				return;
			}
			skipme = !strcasecmp(v, "yes");
		} else if (!strcasecmp(f, "laddr") || !strcasecmp(f, "user")) {
			continue; /* one listen address; one user */
		} else {
			resp_error_reply(out, "ERR syntax error");
			return;
		}
	}
	for (struct ctl_conn *o = k->ctl->conns; o; o = o->next) {
		if (o->flags & CTL_C_CLOSING)
			continue;
		if ((old || skipme) && o == k)
			continue;
		/* An agent's link (or its handshake) only by its ID: no filter that
		 * matches "everyone" cuts the failover's own inputs. */
		if ((o->flags & (CTL_C_AGENT | CTL_C_CHALLENGED)) && !id)
			continue;
		if (id && o->id != id)
			continue;
		if (addr && strcmp(o->peer, addr))
			continue;
		if (type && !strcasecmp(type, "pubsub") != !!(o->flags & CTL_C_PUBSUB))
			continue;
		if (type && strcasecmp(type, "pubsub") && strcasecmp(type, "normal"))
			continue; /* no masters or replicas connect to the controller */
		o->flags |= CTL_C_CLOSING;
		ctl_conn_reading(o, false);
		/* Closed from the loop once its output is flushed (a write callback). */
		bufferevent_trigger(o->bev, EV_WRITE,
				    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
		killed++;
	}
	if (!old)
		resp_int(out, killed);
	else if (killed)
		resp_status(out, "OK");
	else
		resp_error_reply(out, "ERR No such client");
}

/* May k run CLIENT's subcommand argv[1], one that reveals or changes other
 * connections (LIST, KILL and anything else not about k itself: acl.c)? With
 * client authentication on, ctl_client_may has already asked for the admin
 * category; with it off, the cluster secret's AUTH is asked for, as SENTINEL
 * FAILOVER asks for it (an anonymous CLIENT KILL loop held back every
 * failover). Else answered here. */
static bool client_may(struct ctl_conn *k, struct resp_cmd *cmd)
{
	char name[96];

	if (!(acl_command_needs(cmd->argc, (const char *const *)cmd->argv, name, sizeof(name)) &
	      ACL_ADMIN))
		return true;
	if ((k->flags & CTL_C_LOGIN) && (k->perms & ACL_ADMIN))
		return true;
	resp_error_reply(bufferevent_get_output(k->bev),
			 ctl_client_auth_on(k->ctl)
			     ? "NOPERM this user has no permissions to run the 'client' command"
			     : "NOAUTH Authentication required (AUTH <cluster secret>).");
	return false;
}

void ctl_on_client(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev), *t;
	const char *sub = cmd->argc > 1 ? cmd->argv[1] : "";
	char e[200];

	if (!client_may(k, cmd))
		return;
	if (!strcasecmp(sub, "id") && cmd->argc == 2) {
		resp_int(out, (long long)k->id);
	} else if (!strcasecmp(sub, "getname") && cmd->argc == 2) {
		if (k->name[0])
			resp_str(out, k->name);
		else
			ctl_reply_null(k, out, false);
	} else if (!strcasecmp(sub, "setname") && cmd->argc == 3) {
		if (strpbrk(cmd->argv[2], " \n") || strlen(cmd->argv[2]) >= sizeof(k->name)) {
			resp_error_reply(out, "ERR Client names cannot contain spaces, newlines or "
					      "special characters.");
			return;
		}
		snprintf(k->name, sizeof(k->name), "%s", cmd->argv[2]);
		resp_status(out, "OK");
	} else if (!strcasecmp(sub, "setinfo") && cmd->argc == 4) {
		resp_status(out, "OK"); /* lib-name, lib-ver: accepted, not shown */
	} else if (!strcasecmp(sub, "info") && cmd->argc == 2) {
		if (!(t = evbuffer_new()))
			return;
		client_line(t, k);
		reply_text(out, t);
		evbuffer_free(t);
	} else if (!strcasecmp(sub, "list")) {
		bool pubsub = false;

		if (cmd->argc == 4 && !strcasecmp(cmd->argv[2], "type")) {
			pubsub = !strcasecmp(cmd->argv[3], "pubsub");
			if (!pubsub && strcasecmp(cmd->argv[3], "normal")) {
				resp_bulk(out, "", 0); /* no masters or replicas here */
				return;
			}
		} else if (cmd->argc != 2) {
			resp_error_reply(out, "ERR syntax error");
			return;
		}
		if (!(t = evbuffer_new()))
			return;
		for (struct ctl_conn *o = k->ctl->conns; o; o = o->next)
			if (!(o->flags & CTL_C_CLOSING) &&
			    (cmd->argc == 2 || pubsub == !!(o->flags & CTL_C_PUBSUB)))
				client_line(t, o);
		reply_text(out, t);
		evbuffer_free(t);
	} else if (!strcasecmp(sub, "kill") && cmd->argc >= 3) {
		client_kill(k, cmd, out);
	} else {
		snprintf(e, sizeof(e),
			 "ERR unknown subcommand or wrong number of arguments for "
			 "'%.40s'. Try CLIENT HELP.",
			 sub);
		resp_error_reply(out, e);
	}
}

/* ---- COMMAND ---- */

/* What the controller serves, with Redis 7's arity and flags for each. */
static const struct {
	const char *name;
	int arity;
	const char *flags; /* space-separated */
	const char *summary;
} commands[] = {
    {"auth", -2, "noscript loading stale fast no_auth allow_busy",
     "Authenticates the connection (the cluster secret)."},
    {"client", -2, "", "A container for client connection commands."},
    {"command", -1, "loading stale", "Returns detailed information about all commands."},
    {"flatline", -2, "admin", "flatline's own: STATUS [JSON|TEXT], FAILOVER <shard> [<node>]."},
    {"hello", -1, "noscript loading stale fast no_auth allow_busy",
     "Handshakes with the server (RESP2)."},
    {"info", -1, "loading stale", "Returns information and statistics about the server."},
    {"ping", -1, "fast", "Returns the server's liveliness response."},
    {"psubscribe", -2, "pubsub noscript loading stale",
     "Listens for messages published to channels that match one or more patterns."},
    {"punsubscribe", -1, "pubsub noscript loading stale",
     "Stops listening to messages published to channels that match one or more patterns."},
    {"quit", -1, "noscript loading stale fast no_auth allow_busy", "Closes the connection."},
    {"report", -2, "", "flatline's agents: a node's state (docs/protocol.md)."},
    {"role", 1, "noscript loading stale fast", "Returns the replication role."},
    {"sentinel", -2, "admin", "A container for Redis Sentinel commands."},
    {"subscribe", -2, "pubsub noscript loading stale",
     "Listens for messages published to channels."},
    {"unsubscribe", -1, "pubsub noscript loading stale",
     "Stops listening to messages posted to channels."},
};
#define NCOMMANDS (int)(sizeof(commands) / sizeof(commands[0]))

static int find_command(const char *name)
{
	for (int i = 0; i < NCOMMANDS; i++)
		if (!strcasecmp(commands[i].name, name))
			return i;
	return -1;
}

/* COMMAND INFO's ten fields (Redis 7): name, arity, flags, first key, last key,
 * step, ACL categories, tips, key specs, subcommands. */
static void command_info(struct evbuffer *out, int i)
{
	char flags[128], *save = NULL, *f;
	int n = 0;

	resp_array(out, 10);
	resp_str(out, commands[i].name);
	resp_int(out, commands[i].arity);
	snprintf(flags, sizeof(flags), "%s", commands[i].flags);
	for (const char *p = flags; *p; p++)
		n += *p == ' ';
	resp_array(out, flags[0] ? n + 1 : 0);
	for (f = strtok_r(flags, " ", &save); f; f = strtok_r(NULL, " ", &save))
		resp_status(out, f);
	resp_int(out, 0);
	resp_int(out, 0);
	resp_int(out, 0);
	resp_array(out, 0);
	resp_array(out, 0);
	resp_array(out, 0);
	resp_array(out, 0);
}

static void command_docs(struct evbuffer *out, int i)
{
	resp_str(out, commands[i].name);
	resp_array(out, 6);
	resp_str(out, "summary");
	resp_str(out, commands[i].summary);
	resp_str(out, "since");
	resp_str(out, "1.0.0");
	resp_str(out, "group");
	resp_str(out, !strcmp(commands[i].name, "sentinel") ? "sentinel" : "server");
}

void ctl_on_command(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	const char *sub = cmd->argc > 1 ? cmd->argv[1] : "";
	char e[200];

	if (cmd->argc == 1) {
		resp_array(out, NCOMMANDS);
		for (int i = 0; i < NCOMMANDS; i++)
			command_info(out, i);
	} else if (!strcasecmp(sub, "count") && cmd->argc == 2) {
		resp_int(out, NCOMMANDS);
	} else if (!strcasecmp(sub, "list") && cmd->argc == 2) {
		resp_array(out, NCOMMANDS);
		for (int i = 0; i < NCOMMANDS; i++)
			resp_str(out, commands[i].name);
	} else if (!strcasecmp(sub, "info")) {
		int n = cmd->argc == 2 ? NCOMMANDS : cmd->argc - 2;

		resp_array(out, n);
		for (int a = 0; a < n; a++) {
			int i = cmd->argc == 2 ? a : find_command(cmd->argv[a + 2]);

			if (i < 0)
				ctl_reply_null(k, out, true);
			else
				command_info(out, i);
		}
	} else if (!strcasecmp(sub, "docs")) {
		int n = 0;

		for (int a = 2; a < cmd->argc; a++)
			n += find_command(cmd->argv[a]) >= 0;
		if (cmd->argc == 2)
			n = NCOMMANDS;
		ctl_reply_map(k, out, n);
		for (int a = 0; a < (cmd->argc == 2 ? NCOMMANDS : cmd->argc - 2); a++) {
			int i = cmd->argc == 2 ? a : find_command(cmd->argv[a + 2]);

			if (i >= 0)
				command_docs(out, i);
		}
	} else {
		snprintf(e, sizeof(e),
			 "ERR unknown subcommand or wrong number of arguments for "
			 "'%.40s'. Try COMMAND HELP.",
			 sub);
		resp_error_reply(out, e);
	}
}
