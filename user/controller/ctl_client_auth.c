// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Client logins on the controller's socket, as Sentinel 6.2+ (docs/security.md): AUTH, HELLO ...
 * AUTH, and what each user may run (common/acl.h).
 *
 * With `[controller] requirepass` or any `[user "name"]`, every command but AUTH,
 * HELLO and QUIT (and the agents' handshake, which has its own keys) needs a
 * login: -NOAUTH before it, -NOPERM for a command outside the user's
 * categories. Without either, the socket is as before: anyone may
 * read, and AUTH with the cluster secret allows FAILOVER, the SENTINEL
 * commands that change state and CLIENT LIST/KILL; once client
 * authentication is on, the cluster secret is no client password any more (it
 * stays the nodes' key material).
 *
 * Guessing is slowed per source address (an IPv6 one's /64; attempt()): once an address has
 * failed, each of its logins, right or wrong, is answered at its turn, 50 ms
 * doubling with the failures up to 2 s after the previous turn, whatever
 * connection it comes on; logged once per second per address at most. Another
 * address that shares its slot is slowed as much, but queues apart: never
 * locked out by the guesser's queue. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"

#define CTL_AUTH_QUEUE_MS 30000 /* answers queued per source address at most this far */

static const char wrongpass[] = "WRONGPASS invalid username-password pair or user is disabled.";

/* Addresses a slot keeps apart (each its own queue of answers): a client whose
 * address shares a guesser's slot waits a turn, not behind the guesser's queue. */
#define CTL_AUTH_LANES 4

struct ctl_client_auth {
	struct ctl_auth_slot {
		struct ctl_auth_lane {
			unsigned hash;	   /* the address's full hash */
			unsigned fails;	   /* failed logins from there in a row */
			long long last_ms; /* its last failure (forgotten after a minute) */
			long long next_ms; /* its next login is answered then at the earliest */
		} lane[CTL_AUTH_LANES];
	} auth_src[CTL_LOG_SLOTS]; /* failed AUTHs per source address */
};

int ctl_client_auth_init(struct ctl *c)
{
	c->client_auth = calloc(1, sizeof(*c->client_auth));
	return c->client_auth ? 0 : -ENOMEM;
}

void ctl_client_auth_fini(struct ctl *c)
{
	free(c->client_auth);
	c->client_auth = NULL;
}

/* The user's permissions if pass is its password; -1 if not (or no such user). */
static int check_login(const struct ctl *c, const char *user, const char *pass, size_t pass_len)
{
	const struct cfg *cfg = c->cfg;
	const struct cfg_user *u;

	if (!ctl_client_auth_on(c)) {
		/* As before: the cluster secret, as the default user. */
		if (strcmp(user, "default") || !acl_secret_eq(cfg->secret, pass, pass_len))
			return -1;
		return ACL_ALL;
	}
	if (!strcmp(user, "default"))
		return acl_secret_eq(cfg->controller.requirepass, pass, pass_len) ? (int)ACL_ALL
										  : -1;
	u = cfg_find_user(cfg, user);
	if (!u || !acl_secret_eq(u->password, pass, pass_len))
		return -1;
	return (int)u->perms;
}

static void login(struct ctl_conn *k, const char *user, unsigned perms)
{
	k->flags &= ~CTL_C_AUTH;
	k->flags |= CTL_C_LOGIN;
	/* CTL_C_AUTH: may change state; which commands exactly, ctl_client_may says. */
	if (perms & (ACL_FAILOVER | ACL_ADMIN))
		k->flags |= CTL_C_AUTH;
	k->perms = perms;
	snprintf(k->user, sizeof(k->user), "%s", user);
	resp_reader_set_max_frame(k->rd, 0);
}

/* One login attempt from k (AUTH, HELLO ... AUTH). An address with no failed
 * login in the last minute gets its answer at once. One with failures gets
 * every answer, right password or wrong, at its turn: 50 ms doubling with its
 * failures up to 2 s after the previous one's turn; so neither the answer nor
 * its timing tells a guesser more than one guess per turn, however many
 * connections it opens. When the turn would be more than CTL_AUTH_QUEUE_MS
 * away, the attempt is not even checked: the connection closes unanswered.
 * True when the caller answers now (the output is held until the turn); then
 * *ok says whether k is logged in (as user). */
static bool attempt(struct ctl_conn *k, const char *user, const char *pass, size_t pass_len,
		    bool *ok)
{
	struct ctl *c = k->ctl;
	char src[INET6_ADDRSTRLEN + 4];
	unsigned h = 2166136261u, supp = 0, before;
	long long now = fl_mono_ms(), at_ms;
	struct ctl_auth_slot *sl;
	struct ctl_auth_lane *a;
	char esc[LOG_ESC_MAX];
	struct timeval tv;
	bool mine;
	int perms;

	acl_peer_source(k->peer, src, sizeof(src));
	for (const char *s = src; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	sl = &c->client_auth->auth_src[h % CTL_LOG_SLOTS];
	/* Its record: its own lane, and the failures in the last minute from every
	 * address of this slot. The wait doubles with the slot's failures (a guesser
	 * alternating colliding addresses is slowed as one), but each address queues
	 * in its own lane: a guesser's queue delays only its own answers, and a client
	 * sharing its slot is answered at its own turn (at most 2 s away). */
	a = NULL;
	before = 0;
	for (int i = 0; i < CTL_AUTH_LANES; i++) {
		struct ctl_auth_lane *l = &sl->lane[i];

		if (!l->last_ms || now - l->last_ms > 60000)
			continue;
		before += l->fails;
		if (l->hash == h)
			a = l;
	}
	mine = a != NULL;
	at_ms = (mine && a->next_ms > now ? a->next_ms : now) + (50LL << (before < 5 ? before : 5));
	if (mine && at_ms - now > CTL_AUTH_QUEUE_MS) {
		a->last_ms = now;
		if (ctl_log_allowed(c, k->peer, &supp))
			pr_warn("closing client %s: more logins queued from that address than %d s "
				"of answers (%u failed in a row)%s\n",
				k->peer, CTL_AUTH_QUEUE_MS / 1000, a->fails,
				supp ? " (and other rejections from there, not logged)" : "");
		tv = fl_ms_tv(CTL_CLOSE_FLUSH_MS); /* earlier answers, if any, then closed */
		k->flags |= CTL_C_CLOSING;
		ctl_conn_reading(k, false);
		bufferevent_set_timeouts(k->bev, NULL, &tv);
		return false;
	}
	perms = check_login(c, user, pass, pass_len);
	*ok = perms >= 0;
	if (*ok)
		login(k, user, (unsigned)perms);
	if (!*ok) {
		if (!mine) { /* a lane free for a minute, else the one idle longest */
			a = &sl->lane[0];
			for (int i = 1; i < CTL_AUTH_LANES; i++)
				if (sl->lane[i].last_ms < a->last_ms)
					a = &sl->lane[i];
			memset(a, 0, sizeof(*a));
			a->hash = h;
		}
		a->fails++;
		a->last_ms = now;
		if (!before) /* the first failure: its own answer waits as the next would */
			at_ms = now + 50;
		if (ctl_log_allowed(c, k->peer, &supp))
			pr_warn("failed AUTH from %s (user %s): %u from that address in a row; "
				"answering "
				"it after %lld ms%s\n",
				k->peer, log_esc(user, esc, sizeof(esc)), a->fails, at_ms - now,
				supp ? " (and other rejections from there, not logged)" : "");
	} else if (!before) {
		return true; /* no failure from there: at once */
	}
	if (a)
		a->next_ms = at_ms;
	if (!k->resume)
		k->resume = evtimer_new(c->base, ctl_conn_on_resume, k);
	if (!k->resume)
		return true;
	/* The answer waits too (output held), so a fresh connection per guess
	 * gains nothing. */
	k->flags |= CTL_C_PENALTY | CTL_C_WAITING;
	ctl_conn_reading(k, false);
	bufferevent_disable(k->bev, EV_WRITE);
	tv = fl_ms_tv(at_ms - now);
	evtimer_add(k->resume, &tv);
	return true;
}

/* AUTH <password> | AUTH <username> <password> */
void ctl_on_auth(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	const char *user = cmd->argc == 3 ? cmd->argv[1] : "default";
	int pi = cmd->argc == 3 ? 2 : 1;
	bool ok;

	if (cmd->argc != 2 && cmd->argc != 3) {
		resp_error_reply(out, "ERR wrong number of arguments for 'auth' command");
		return;
	}
	if (!attempt(k, user, cmd->argv[pi], cmd->lens[pi], &ok))
		return;
	if (ok)
		resp_status(out, "OK");
	else
		resp_error_reply(out, wrongpass);
}

void ctl_client_hello(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	struct acl_hello h;
	char why[160];
	bool ok;

	if (acl_hello_parse(cmd->argc, (const char *const *)cmd->argv, cmd->lens, &h, why,
			    sizeof(why))) {
		resp_error_reply(out, why);
		return;
	}
	if (h.user) {
		if (!attempt(k, h.user, h.pass, h.pass_len, &ok))
			return;
		if (!ok) {
			resp_error_reply(out, wrongpass);
			return;
		}
	} else if (ctl_client_auth_on(k->ctl) && !(k->flags & (CTL_C_LOGIN | CTL_C_AGENT))) {
		resp_error_reply(out,
				 "NOAUTH HELLO must be called with the client already "
				 "authenticated, otherwise the HELLO <proto> AUTH <user> <pass> "
				 "option can be used to authenticate the client and select the "
				 "RESP protocol version at the same time");
		return;
	}
	if (h.setname) {
		if (strpbrk(h.setname, " \n") || strlen(h.setname) >= sizeof(k->name)) {
			resp_error_reply(out, "ERR Client names cannot contain spaces, newlines or "
					      "special characters.");
			return;
		}
		snprintf(k->name, sizeof(k->name), "%s", h.setname);
	}
	if (h.proto == 3)
		k->flags |= CTL_C_RESP3;
	else if (h.proto == 2)
		k->flags &= ~CTL_C_RESP3;
	/* As a Sentinel answers it (no "role" in sentinel mode). */
	ctl_reply_map(k, out, 6);
	resp_str(out, "server");
	resp_str(out, "redis");
	resp_str(out, "version");
	resp_str(out, CTL_REDIS_VERSION);
	resp_str(out, "proto");
	resp_int(out, (k->flags & CTL_C_RESP3) ? 3 : 2);
	resp_str(out, "id");
	resp_int(out, (long long)k->id);
	resp_str(out, "mode");
	resp_str(out, "sentinel");
	resp_str(out, "modules");
	resp_array(out, 0);
}

bool ctl_client_may(struct ctl_conn *k, struct resp_cmd *cmd)
{
	struct evbuffer *out = bufferevent_get_output(k->bev);
	char name[96], e[200];
	unsigned need;

	if (!ctl_client_auth_on(k->ctl))
		return true;
	need = acl_command_needs(cmd->argc, (const char *const *)cmd->argv, name, sizeof(name));
	if (!need)
		return true;
	if ((k->flags & (CTL_C_AGENT | CTL_C_LOGIN)) == CTL_C_AGENT && !(need & ~ACL_READ))
		return true; /* an agent reads as any reader; anything more needs a login */
	if (!(k->flags & CTL_C_LOGIN)) {
		resp_error_reply(out, "NOAUTH Authentication required.");
		return false;
	}
	if (need & ~k->perms) {
		snprintf(e, sizeof(e),
			 "NOPERM this user has no permissions to run the '%s' command", name);
		resp_error_reply(out, e);
		return false;
	}
	return true;
}
