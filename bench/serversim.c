// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* serversim: many Redis servers' replication state on many ports of one process, for
 * bench/scale.sh at shard counts beyond what real redis-servers allow on a small
 * machine. It answers what the controller and the agent (or loadgen) send,
 * with Redis 7's replies:
 *   PING, ECHO, INFO [server|replication|all|…], ROLE, REPLICAOF/SLAVEOF host port|NO ONE,
 *   MULTI/EXEC/DISCARD, CLIENT KILL TYPE normal|pubsub (other connections closed, as
 *   Redis does), CLIENT PAUSE/UNPAUSE/SETNAME/GETNAME/ID, CONFIG REWRITE, AUTH, QUIT.
 * Replication is kept consistent: a primary's offset grows (10 bytes a ms, a write
 * load); a replica whose primary is a live simulated master has its link up, that
 * primary's replication id and offset; when its primary dies its link goes down and
 * its offset stops. REPLICAOF NO ONE starts a new replication id (the old one becomes
 * master_replid2) and keeps the offset, as Redis does; REPLICAOF host port follows at
 * once (a partial resync: no transfer is simulated).
 *
 * A server "dies" with SIMKILL port [port …] sent to any port: its listening socket
 * and every connection to it are closed in one go, so connects are refused from then
 * on — what a killed redis-server looks like from outside (there is no process to
 * watch in the kernel: the agent's process path here is its connection's).
 *
 * usage: serversim --layout FILE
 *   FILE: one line per server, "PORT master" or "PORT replica-of MASTER_PORT"; all on
 *   127.0.0.1.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#define MAX_ARGS     4096 /* SIMKILL of a third of 3,000 ports in one command */
#define BYTES_PER_MS 10

struct client;

struct server {
	int port;
	bool alive;
	bool master;
	int master_port;   /* replica: whom it follows */
	int layout_master; /* as the layout file says */
	char replid[41], replid2[41];
	long long second_off;		  /* master_replid2's end, -1 none */
	long long off_base, off_since_ms; /* master: offset = base + (now - since) * rate */
	long long frozen_off;		  /* replica whose link is down: where it stopped */
	char run_id[41];
	struct evconnlistener *lis;
	struct client *clients;
	struct server *followers, *fnext; /* replicas whose master_port is this port */
};

struct client {
	struct server *s;
	struct bufferevent *bev;
	struct client *next, *prev;
	bool multi, multi_err;
	int nqueued;
	struct evbuffer *queued; /* replies of the queued commands, in order */
	struct {
		int argc;
		char **argv;
	} q[16]; /* commands queued in MULTI */
	bool pubsub;
};

static struct event_base *base;
static struct server *srvs;
static int nsrvs;
static int port_min, port_max;
static struct server **by_port; /* port - port_min */
static long long t0_ms;

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static struct server *find(int port)
{
	return port >= port_min && port <= port_max ? by_port[port - port_min] : NULL;
}

static void new_id(char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 40; i++)
		out[i] = hex[rand() % 16];
	out[40] = '\0';
}

/* The upstream primary of s if it is a live simulated master, else NULL. */
static struct server *upstream(const struct server *s)
{
	struct server *m = s->master ? NULL : find(s->master_port);

	return m && m->alive && m->master ? m : NULL;
}

static long long offset_of(const struct server *s)
{
	const struct server *m;

	if (s->master)
		return s->off_base + (mono_ms() - s->off_since_ms) * BYTES_PER_MS;
	m = upstream(s);
	return m ? offset_of(m) : s->frozen_off;
}

static const char *replid_of(const struct server *s)
{
	const struct server *m = upstream(s);

	return m ? m->replid : s->replid;
}

/* ------------------------------------------------------------------------- */
/* Replies */

static void r_status(struct evbuffer *o, const char *s)
{
	evbuffer_add_printf(o, "+%s\r\n", s);
}

static void r_err(struct evbuffer *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void r_err(struct evbuffer *o, const char *fmt, ...)
{
	va_list ap;

	evbuffer_add(o, "-", 1);
	va_start(ap, fmt);
	evbuffer_add_vprintf(o, fmt, ap);
	va_end(ap);
	evbuffer_add(o, "\r\n", 2);
}

static void r_int(struct evbuffer *o, long long v)
{
	evbuffer_add_printf(o, ":%lld\r\n", v);
}

static void r_bulk(struct evbuffer *o, const char *s, size_t len)
{
	evbuffer_add_printf(o, "$%zu\r\n", len);
	evbuffer_add(o, s, len);
	evbuffer_add(o, "\r\n", 2);
}

/* r follows port (master_port), in that port's list of followers. */
static void follow(struct server *r, int port)
{
	struct server *old = r->master_port ? find(r->master_port) : NULL, *m = find(port);

	if (old) {
		struct server **pp = &old->followers;

		while (*pp && *pp != r)
			pp = &(*pp)->fnext;
		if (*pp)
			*pp = r->fnext;
	}
	r->fnext = NULL;
	r->master_port = port;
	if (m) {
		r->fnext = m->followers;
		m->followers = r;
	}
}

static int connected_slaves(const struct server *m, char *lines, size_t len)
{
	int n = 0;
	size_t off = 0;

	if (lines)
		lines[0] = '\0';
	for (const struct server *r = m->followers; r; r = r->fnext) {
		if (!r->alive || r->master)
			continue;
		if (lines && off < len)
			off += snprintf(
			    lines + off, len - off,
			    "slave%d:ip=127.0.0.1,port=%d,state=online,offset=%lld,lag=0\r\n", n,
			    r->port, offset_of(m));
		n++;
	}
	return n;
}

static void info(struct client *c, struct evbuffer *o, const char *section)
{
	struct server *s = c->s;
	bool all = !section || !strcasecmp(section, "all") || !strcasecmp(section, "everything") ||
		   !strcasecmp(section, "default");
	char text[8192], slaves[4096];
	size_t off = 0;

	if (all || !strcasecmp(section, "server"))
		off += snprintf(
		    text + off, sizeof(text) - off,
		    "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n"
		    "process_id:%d\r\nrun_id:%s\r\ntcp_port:%d\r\nuptime_in_seconds:%lld\r\n"
		    "hz:1\r\n%s",
		    (int)getpid(), s->run_id, s->port, (mono_ms() - t0_ms) / 1000,
		    all ? "\r\n" : "");
	if (all || !strcasecmp(section, "replication")) {
		long long o_now = offset_of(s);
		struct server *m = upstream(s);

		off += snprintf(text + off, sizeof(text) - off, "# Replication\r\nrole:%s\r\n",
				s->master ? "master" : "slave");
		if (!s->master)
			off +=
			    snprintf(text + off, sizeof(text) - off,
				     "master_host:127.0.0.1\r\nmaster_port:%d\r\n"
				     "master_link_status:%s\r\nmaster_last_io_seconds_ago:%d\r\n"
				     "master_sync_in_progress:0\r\nslave_read_repl_offset:%lld\r\n"
				     "slave_repl_offset:%lld\r\nslave_priority:100\r\n"
				     "slave_read_only:1\r\nreplica_announced:1\r\n",
				     s->master_port, m ? "up" : "down", m ? 0 : -1, o_now, o_now);
		off += snprintf(text + off, sizeof(text) - off, "connected_slaves:%d\r\n",
				s->master ? connected_slaves(s, slaves, sizeof(slaves)) : 0);
		if (s->master)
			off += snprintf(text + off, sizeof(text) - off, "%s", slaves);
		off += snprintf(text + off, sizeof(text) - off,
				"master_failover_state:no-failover\r\nmaster_replid:%s\r\n"
				"master_replid2:%s\r\nmaster_repl_offset:%lld\r\n"
				"second_repl_offset:%lld\r\nrepl_backlog_active:1\r\n"
				"repl_backlog_size:1048576\r\n",
				replid_of(s), s->replid2, o_now, s->second_off);
	}
	if (off >= sizeof(text))
		off = sizeof(text) - 1;
	r_bulk(o, text, off);
}

static void role(struct client *c, struct evbuffer *o)
{
	struct server *s = c->s;

	if (s->master) {
		int n = connected_slaves(s, NULL, 0);

		evbuffer_add_printf(o, "*3\r\n");
		r_bulk(o, "master", 6);
		r_int(o, offset_of(s));
		evbuffer_add_printf(o, "*%d\r\n", n);
		for (const struct server *r = s->followers; r; r = r->fnext) {
			char p[16], of[24];

			if (!r->alive || r->master)
				continue;
			snprintf(p, sizeof(p), "%d", r->port);
			snprintf(of, sizeof(of), "%lld", offset_of(s));
			evbuffer_add_printf(o, "*3\r\n");
			r_bulk(o, "127.0.0.1", 9);
			r_bulk(o, p, strlen(p));
			r_bulk(o, of, strlen(of));
		}
	} else {
		struct server *m = upstream(s);
		const char *st = m ? "connected" : "connect";

		evbuffer_add_printf(o, "*5\r\n");
		r_bulk(o, "slave", 5);
		r_bulk(o, "127.0.0.1", 9);
		r_int(o, s->master_port);
		r_bulk(o, st, strlen(st));
		r_int(o, m ? offset_of(s) : -1);
	}
}

/* REPLICAOF NO ONE / host port, as Redis 7 does it. */
static void replicaof(struct client *c, struct evbuffer *o, int argc, char **argv)
{
	struct server *s = c->s;

	if (argc != 3) {
		r_err(o, "ERR wrong number of arguments for '%s' command", argv[0]);
		return;
	}
	if (!strcasecmp(argv[1], "no") && !strcasecmp(argv[2], "one")) {
		if (!s->master) {
			long long off = offset_of(s);

			snprintf(s->replid2, sizeof(s->replid2), "%s", replid_of(s));
			s->second_off = off + 1;
			new_id(s->replid);
			s->master = true;
			s->off_base = off;
			s->off_since_ms = mono_ms();
		}
		r_status(o, "OK");
		return;
	}
	{
		char *end;
		long p = strtol(argv[2], &end, 10);

		if (*end || p <= 0 || p > 65535) {
			r_err(o, "ERR Invalid master port");
			return;
		}
		if (!s->master && s->master_port == p) {
			r_status(o, "OK Already connected to specified master");
			return;
		}
		if (s->master) {
			s->frozen_off = offset_of(s);
			s->master = false;
		} else {
			s->frozen_off = offset_of(s);
		}
		follow(s, (int)p);
		if (upstream(s))
			snprintf(s->replid, sizeof(s->replid), "%s", upstream(s)->replid);
		r_status(o, "OK");
	}
}

static void client_free(struct client *c);

/* CLIENT KILL TYPE t: every other connection of that type closed; how many. */
static int kill_type(struct client *self, bool pubsub)
{
	struct client *c = self->s->clients, *next;
	int n = 0;

	for (; c; c = next) {
		next = c->next;
		if (c == self || c->pubsub != pubsub)
			continue;
		client_free(c);
		n++;
	}
	return n;
}

static void simkill(struct evbuffer *o, int argc, char **argv);

static void run(struct client *c, struct evbuffer *o, int argc, char **argv)
{
	const char *cmd = argv[0];

	if (!strcasecmp(cmd, "PING")) {
		if (argc > 1)
			r_bulk(o, argv[1], strlen(argv[1]));
		else
			r_status(o, "PONG");
	} else if (!strcasecmp(cmd, "ECHO") && argc == 2) {
		r_bulk(o, argv[1], strlen(argv[1]));
	} else if (!strcasecmp(cmd, "INFO")) {
		info(c, o, argc > 1 ? argv[1] : NULL);
	} else if (!strcasecmp(cmd, "ROLE")) {
		role(c, o);
	} else if (!strcasecmp(cmd, "REPLICAOF") || !strcasecmp(cmd, "SLAVEOF")) {
		replicaof(c, o, argc, argv);
	} else if (!strcasecmp(cmd, "AUTH") || !strcasecmp(cmd, "SELECT")) {
		r_status(o, "OK");
	} else if (!strcasecmp(cmd, "CONFIG") && argc >= 2 && !strcasecmp(argv[1], "REWRITE")) {
		r_status(o, "OK");
	} else if (!strcasecmp(cmd, "CLIENT") && argc >= 2) {
		const char *sub = argv[1];

		if (!strcasecmp(sub, "KILL") && argc == 4 && !strcasecmp(argv[2], "TYPE")) {
			if (!strcasecmp(argv[3], "normal") || !strcasecmp(argv[3], "pubsub"))
				r_int(o, kill_type(c, !strcasecmp(argv[3], "pubsub")));
			else
				r_err(o, "ERR Unknown client type '%s'", argv[3]);
		} else if (!strcasecmp(sub, "PAUSE") && argc >= 3) {
			r_status(o, "OK");
		} else if (!strcasecmp(sub, "UNPAUSE") || !strcasecmp(sub, "SETNAME")) {
			r_status(o, "OK");
		} else if (!strcasecmp(sub, "GETNAME")) {
			evbuffer_add_printf(o, "$-1\r\n");
		} else if (!strcasecmp(sub, "ID")) {
			r_int(o, (long long)(uintptr_t)c & 0xffffff);
		} else {
			r_err(o, "ERR unknown subcommand '%s'. Try CLIENT HELP.", sub);
		}
	} else if (!strcasecmp(cmd, "SIMKILL")) {
		simkill(o, argc, argv);
	} else {
		r_err(o, "ERR unknown command '%s', with args beginning with: ", cmd);
	}
}

/* ------------------------------------------------------------------------- */
/* Connections */

static void free_args(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

static void client_free(struct client *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		c->s->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	for (int i = 0; i < c->nqueued; i++)
		free_args(c->q[i].argc, c->q[i].argv);
	bufferevent_free(c->bev);
	free(c);
}

/* One command from in, if whole: argc (*pargv allocated), or 0 (need more), -1
 * (protocol error). */
static int parse(struct evbuffer *in, char ***pargv)
{
	char **argv = NULL;
	size_t len = evbuffer_get_length(in), pos;
	const char *p, *e;
	long n;
	int argc;

	*pargv = NULL;
	if (!len)
		return 0;
	p = (const char *)evbuffer_pullup(in, -1);
	e = p + len;
	if (*p != '*') {
		/* Inline command (redis-cli, telnet): one line, space-separated. */
		const char *nl = memchr(p, '\n', len);
		char *line, *save, *tok;

		if (!nl) {
			argc = 0;
			if (len > 65536)
				goto bad;
			goto more;
		}
		line = strndup(p, nl - p);
		argv = calloc(64, sizeof(*argv));
		if (!line || !argv) {
			free(line);
			argc = 0;
			goto bad;
		}
		if (nl > p && line[nl - p - 1] == '\r')
			line[nl - p - 1] = '\0';
		argc = 0;
		for (tok = strtok_r(line, " ", &save); tok && argc < 64;
		     tok = strtok_r(NULL, " ", &save)) {
			argv[argc++] = strdup(tok);
		}
		free(line);
		evbuffer_drain(in, nl - p + 1);
		if (!argc)
			goto more;
		*pargv = argv;
		return argc;
	}
	{
		const char *nl = memchr(p, '\n', len);
		char *end;

		argc = 0;
		if (!nl)
			goto more;
		n = strtol(p + 1, &end, 10);
		if (n < 1 || n > MAX_ARGS)
			goto bad;
		argv = calloc(n, sizeof(*argv));
		if (!argv)
			goto bad;
		pos = nl - p + 1;
	}
	for (argc = 0; argc < n; argc++) {
		const char *q = p + pos, *nl;
		char *end;
		long bl;

		if (q >= e)
			goto more;
		nl = memchr(q, '\n', e - q);
		if (!nl)
			goto more;
		if (*q != '$')
			goto bad;
		bl = strtol(q + 1, &end, 10);
		if (bl < 0 || bl > 1 << 20)
			goto bad;
		pos = nl - p + 1;
		if (pos + bl + 2 > len)
			goto more;
		argv[argc] = strndup(p + pos, bl);
		pos += bl + 2;
	}
	evbuffer_drain(in, pos);
	*pargv = argv;
	return argc;
more:
	free_args(argc, argv);
	*pargv = NULL;
	return 0;
bad:
	free_args(argc, argv);
	*pargv = NULL;
	return -1;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev), *o = bufferevent_get_output(bev);
	char **argv;
	int argc;

	while ((argc = parse(in, &argv)) > 0) {
		bool keep = true;
		struct server *s = c->s;

		if (!strcasecmp(argv[0], "QUIT")) {
			r_status(o, "OK");
			keep = false;
		} else if (!strcasecmp(argv[0], "MULTI")) {
			if (c->multi)
				r_err(o, "ERR MULTI calls can not be nested");
			else
				r_status(o, "OK");
			c->multi = true;
		} else if (!strcasecmp(argv[0], "DISCARD")) {
			for (int i = 0; i < c->nqueued; i++)
				free_args(c->q[i].argc, c->q[i].argv);
			c->nqueued = 0;
			c->multi = false;
			r_status(o, "OK");
		} else if (!strcasecmp(argv[0], "EXEC")) {
			if (!c->multi) {
				r_err(o, "ERR EXEC without MULTI");
			} else {
				int nq = c->nqueued;

				c->multi = false;
				c->nqueued = 0;
				evbuffer_add_printf(o, "*%d\r\n", nq);
				for (int i = 0; i < nq; i++) {
					run(c, o, c->q[i].argc, c->q[i].argv);
					free_args(c->q[i].argc, c->q[i].argv);
				}
			}
		} else if (c->multi) {
			if (c->nqueued == 16) {
				r_err(o, "ERR simulator: too many queued commands");
			} else {
				c->q[c->nqueued].argc = argc;
				c->q[c->nqueued].argv = argv;
				c->nqueued++;
				argc = 0; /* kept */
				argv = NULL;
				r_status(o, "QUEUED");
			}
		} else {
			run(c, o, argc, argv);
		}
		if (argv)
			free_args(argc, argv);
		if (!s->alive)
			return; /* SIMKILL of its own port: c is gone */
		if (!keep) {
			bufferevent_disable(bev, EV_READ);
			bufferevent_flush(bev, EV_WRITE, BEV_FLUSH);
			client_free(c);
			return;
		}
	}
	if (argc < 0) {
		r_err(o, "ERR Protocol error");
		client_free(c);
	}
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		client_free(arg);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int slen,
		      void *arg)
{
	struct server *s = arg;
	struct client *c = calloc(1, sizeof(*c));

	(void)l;
	(void)sa;
	(void)slen;
	if (!c) {
		close(fd);
		return;
	}
	c->s = s;
	c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev) {
		close(fd);
		free(c);
		return;
	}
	c->next = s->clients;
	if (s->clients)
		s->clients->prev = c;
	s->clients = c;
	bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
	bufferevent_enable(c->bev, EV_READ);
}

static int listen_on(struct server *s)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(s->port)};

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->lis =
	    evconnlistener_new_bind(base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
				    511, (struct sockaddr *)&sin, sizeof(sin));
	if (!s->lis) {
		fprintf(stderr, "serversim: failed to listen on 127.0.0.1:%d: %s\n", s->port,
			strerror(errno));
		return -errno;
	}
	return 0;
}

/* The servers die: nothing listens, every connection closed. The replicas that
 * followed them see their link down and stop at the offset they had. */
static void simkill(struct evbuffer *o, int argc, char **argv)
{
	int n = 0;

	for (int i = 1; i < argc; i++) {
		struct server *s = find(atoi(argv[i]));

		if (!s || !s->alive)
			continue;
		for (struct server *r = s->followers; r; r = r->fnext) {
			if (r != s && !r->master && upstream(r)) {
				r->frozen_off = offset_of(r);
				snprintf(r->replid, sizeof(r->replid), "%s", replid_of(r));
			}
		}
		s->alive = false;
		evconnlistener_free(s->lis);
		s->lis = NULL;
		while (s->clients)
			client_free(s->clients);
		n++;
	}
	r_int(o, n); /* lost if the caller's own port died */
}

static int load_layout(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int cap = 0, lineno = 0;

	if (!f) {
		fprintf(stderr, "serversim: failed to open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char kind[32];
		int port, mport = 0, n;
		struct server *s;

		lineno++;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		n = sscanf(line, "%d %31s %d", &port, kind, &mport);
		if (n < 2 || port <= 0 || port > 65535 ||
		    !(!strcmp(kind, "master") || (!strcmp(kind, "replica-of") && n == 3))) {
			fprintf(stderr,
				"serversim: %s:%d: expected \"PORT master\" or "
				"\"PORT replica-of PORT\"\n",
				path, lineno);
			fclose(f);
			return -1;
		}
		if (nsrvs == cap) {
			cap = cap ? cap * 2 : 256;
			srvs = realloc(srvs, cap * sizeof(*srvs));
			if (!srvs) {
				fclose(f);
				return -1;
			}
		}
		s = &srvs[nsrvs++];
		memset(s, 0, sizeof(*s));
		s->port = port;
		s->alive = true;
		s->master = !strcmp(kind, "master");
		s->master_port = 0; /* follow() below, once every port is known */
		s->layout_master = mport;
		s->second_off = -1;
		new_id(s->replid);
		new_id(s->run_id);
		strcpy(s->replid2, "0000000000000000000000000000000000000000");
		s->off_since_ms = mono_ms();
		s->off_base = 1000;
		if (!port_min || port < port_min)
			port_min = port;
		if (port > port_max)
			port_max = port;
	}
	fclose(f);
	if (!nsrvs)
		return -1;
	by_port = calloc(port_max - port_min + 1, sizeof(*by_port));
	if (!by_port)
		return -1;
	for (int i = 0; i < nsrvs; i++) {
		if (by_port[srvs[i].port - port_min]) {
			fprintf(stderr, "serversim: port %d twice\n", srvs[i].port);
			return -1;
		}
		by_port[srvs[i].port - port_min] = &srvs[i];
	}
	for (int i = 0; i < nsrvs; i++)
		if (!srvs[i].master)
			follow(&srvs[i], srvs[i].layout_master);
	/* Replicas start in sync with their primary. */
	for (int i = 0; i < nsrvs; i++)
		if (upstream(&srvs[i]))
			snprintf(srvs[i].replid, sizeof(srvs[i].replid), "%s",
				 upstream(&srvs[i])->replid);
	return 0;
}

static void on_term(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	event_base_loopbreak(base);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"layout", required_argument, NULL, 'l'}, {0}};
	const char *layout = NULL;
	struct rlimit rl;
	struct event *term;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o != 'l')
			goto usage;
		layout = optarg;
	}
	if (!layout)
		goto usage;
	srand(getpid() ^ time(NULL));
	t0_ms = mono_ms();
	if (load_layout(layout))
		return 1;
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	if (!base)
		return 1;
	for (int i = 0; i < nsrvs; i++)
		if (listen_on(&srvs[i]))
			return 1;
	term = evsignal_new(base, SIGTERM, on_term, NULL);
	event_add(term, NULL);
	printf("serversim: %d servers on 127.0.0.1:%d-%d\n", nsrvs, port_min, port_max);
	fflush(stdout);
	event_base_dispatch(base);
	return 0;
usage:
	fprintf(stderr, "usage: serversim --layout FILE\n");
	return 2;
}
