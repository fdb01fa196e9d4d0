// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Pub/sub on the controller's socket, as a Sentinel's: SUBSCRIBE, PSUBSCRIBE,
 * UNSUBSCRIBE, PUNSUBSCRIBE, and the messages the event outbox (ctl_event.c)
 * publishes to the subscribers (flatline.<kind>, +switch-master ...). A
 * subscriber is a connection role (ctl_conn.h): its subscriptions go with it. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "controller/ctl.h"
#include "controller/ctl_conn.h"

struct ctl_pubsub {
	int npubsub; /* connections with CTL_C_PUBSUB */
};

static void conn_send_message(struct ctl_conn *k, const char *pattern, const char *channel,
			      const char *msg)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);

	if (pattern) {
		ctl_reply_push(k, out, 4);
		resp_str(out, "pmessage");
		resp_str(out, pattern);
	} else {
		ctl_reply_push(k, out, 3);
		resp_str(out, "message");
	}
	resp_str(out, channel);
	resp_str(out, msg);
}

/* To every subscriber of channel (by name or pattern). */
void ctl_pubsub_publish(struct ctl *c, const char *channel, const char *msg)
{
	/* No subscriber: no walk over thousands of agent connections. */
	for (struct ctl_conn *k = c->pubsub->npubsub ? c->conns : NULL, *next; k; k = next) {
		next = k->next;
		if (!(k->flags & CTL_C_PUBSUB) || (k->flags & CTL_C_CLOSING))
			continue;
		/* A subscriber that does not read: dropped, as Redis's pubsub output limit. */
		if (ctl_conn_over_limit(k)) {
			ctl_conn_free(k);
			continue;
		}
		for (int i = 0; i < k->nsubs; i++)
			if (!strcmp(k->subs[i], channel))
				conn_send_message(k, NULL, channel, msg);
		for (int i = 0; i < k->npsubs; i++)
			if (!fnmatch(k->psubs[i], channel, 0))
				conn_send_message(k, k->psubs[i], channel, msg);
	}
}

static void subscribe(struct ctl_conn *k, struct resp_cmd *cmd, bool pattern, bool sub)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	char **list = pattern ? k->psubs : k->subs;
	int *n = pattern ? &k->npsubs : &k->nsubs;
	const char *verb = sub ? (pattern ? "psubscribe" : "subscribe")
			       : (pattern ? "punsubscribe" : "unsubscribe");

	if (sub && cmd->argc < 2) {
		char e[96];

		snprintf(e, sizeof(e), "ERR wrong number of arguments for '%s' command", verb);
		resp_error_reply(out, e);
		return;
	}
	if (sub) {
		/* Bounded per client: CTL_MAX_SUBS names of CTL_MAX_CHANNEL bytes. */
		int adding = 0;

		for (int a = 1; a < cmd->argc; a++) {
			if (cmd->lens[a] > CTL_MAX_CHANNEL) {
				char e[96];

				snprintf(e, sizeof(e), "ERR channel name longer than %d bytes",
					 CTL_MAX_CHANNEL);
				resp_error_reply(out, e);
				return;
			}
			adding++;
		}
		if (*n + adding > CTL_MAX_SUBS) {
			bool all_known = true;

			for (int a = 1; a < cmd->argc && all_known; a++) {
				bool known = false;

				for (int i = 0; i < *n; i++)
					known |= !strcmp(list[i], cmd->argv[a]);
				all_known = known;
			}
			if (!all_known) {
				char e[96];

				snprintf(e, sizeof(e), "ERR more than %d %s per client",
					 CTL_MAX_SUBS, pattern ? "patterns" : "channels");
				resp_error_reply(out, e);
				return;
			}
		}
	}
	if (!sub && cmd->argc == 1) { /* all of them */
		if (!*n) {
			ctl_reply_push(k, out, 3);
			resp_str(out, verb);
			ctl_reply_null(k, out, false);
			resp_int(out, k->nsubs + k->npsubs);
		}
		while (*n) {
			char *ch = list[--*n];

			ctl_reply_push(k, out, 3);
			resp_str(out, verb);
			resp_str(out, ch);
			resp_int(out, k->nsubs + k->npsubs);
			free(ch);
		}
	}
	for (int a = 1; a < cmd->argc; a++) {
		int found = -1;

		for (int i = 0; i < *n; i++)
			if (!strcmp(list[i], cmd->argv[a]))
				found = i;
		if (sub && found < 0 && *n < CTL_MAX_SUBS) {
			list[*n] = strdup(cmd->argv[a]);
			if (list[*n])
				++*n;
		} else if (!sub && found >= 0) {
			free(list[found]);
			list[found] = list[--*n];
		}
		ctl_reply_push(k, out, 3);
		resp_str(out, verb);
		resp_str(out, cmd->argv[a]);
		resp_int(out, k->nsubs + k->npsubs);
	}
	if (!(k->flags & CTL_C_PUBSUB) != !(k->nsubs + k->npsubs))
		k->ctl->pubsub->npubsub += k->nsubs + k->npsubs ? 1 : -1;
	if (k->nsubs + k->npsubs)
		k->flags |= CTL_C_PUBSUB;
	else
		k->flags &= ~CTL_C_PUBSUB;
	ctl_conn_role(k, CTL_ROLE_SUBSCRIBER, k->flags & CTL_C_PUBSUB);
}

void ctl_on_subscribe(struct ctl_conn *k, struct resp_cmd *cmd)
{
	subscribe(k, cmd, false, true);
}

void ctl_on_psubscribe(struct ctl_conn *k, struct resp_cmd *cmd)
{
	subscribe(k, cmd, true, true);
}

void ctl_on_unsubscribe(struct ctl_conn *k, struct resp_cmd *cmd)
{
	subscribe(k, cmd, false, false);
}

void ctl_on_punsubscribe(struct ctl_conn *k, struct resp_cmd *cmd)
{
	subscribe(k, cmd, true, false);
}

/* The role's end (ctl_conn_free): its subscriptions. */
static void subscriber_release(struct ctl_conn *k)
{
	if (k->flags & CTL_C_PUBSUB)
		k->ctl->pubsub->npubsub--;
	for (int i = 0; i < k->nsubs; i++)
		free(k->subs[i]);
	for (int i = 0; i < k->npsubs; i++)
		free(k->psubs[i]);
	k->nsubs = k->npsubs = 0;
}

int ctl_pubsub_init(struct ctl *c)
{
	c->pubsub = calloc(1, sizeof(*c->pubsub));
	if (!c->pubsub)
		return -ENOMEM;
	ctl_conn_role_register(c, CTL_ROLE_SUBSCRIBER, subscriber_release);
	return 0;
}

void ctl_pubsub_fini(struct ctl *c)
{
	free(c->pubsub);
	c->pubsub = NULL;
}
