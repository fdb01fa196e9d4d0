// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The controller's decisions: failure rules, replica ranking, the failover state
 * machine (one function per state, each owning its timeout and abort, as Redis's
 * sentinel.c does), TILT, and the state file. No sockets here: I/O goes through
 * struct fo_ops and time through the injected clocks. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "controller/failover.h"

#define FO_PING_EVERY_MS 1000  /* the controller's own PING of a node whose agent is lost */
#define FO_FIX_COOLDOWN_MS 1000 /* a repaired node is not repaired again sooner */
#define FO_STATE_MAGIC "flatline-state 1"

static long long now_ms(const struct fo_cluster *c)
{
	return c->now_ms(c->ctx);
}

static struct fo_shard *shard_of(struct fo_cluster *c, const struct fo_node *n)
{
	return n->shard >= 0 ? &c->shards[n->shard] : NULL;
}

/* ------------------------------------------------------------------------- */
/* Setup and look-ups */

int fo_cluster_init(struct fo_cluster *c, const struct cfg *cfg, const struct fo_ops *ops,
		    void *ctx)
{
	if (cfg->nnodes > FO_MAX_NODES)
		return -E2BIG;
	memset(c, 0, sizeof(*c));
	c->cfg = cfg;
	c->ops = ops;
	c->ctx = ctx;
	c->node_down_after_ms = cfg->controller.node_down_after_ms;
	c->failover_block_ms = cfg->controller.failover_block_ms;
	c->tilt_ms = cfg->controller.tilt_ms;
	c->info_timeout_ms = 250;
	c->promote_timeout_ms = 1000;
	c->repoint_timeout_ms = 1000;
	c->offset_wait_ms = 5000;
	c->offset_poll_ms = 5;
	c->nnodes = cfg->nnodes;
	for (int i = 0; i < cfg->nnodes; i++) {
		struct fo_node *n = &c->nodes[i];
		const struct cfg_node *cn = &cfg->nodes[i];

		n->id = cn->id;
		n->idx = i;
		n->shard = cn->shard;
		n->priority = cn->priority;
		snprintf(n->host, sizeof(n->host), "%s", cn->redis.host);
		n->port = cn->redis.port;
	}
	c->shards = calloc(cfg->nshards ? cfg->nshards : 1, sizeof(*c->shards));
	if (!c->shards)
		return -ENOMEM;
	c->nshards = cfg->nshards;
	for (int i = 0; i < cfg->nshards; i++) {
		struct fo_shard *s = &c->shards[i];

		s->name = cfg->shards[i].name;
		s->idx = i;
		s->nodes = cfg->shards[i].nodes;
		s->nnodes = cfg->shards[i].nnodes;
		s->primary = -1;
		s->fo.to = s->fo.from = s->fo.target = -1;
	}
	return 0;
}

void fo_cluster_free(struct fo_cluster *c)
{
	free(c->shards);
	c->shards = NULL;
	c->nshards = 0;
}

struct fo_node *fo_find_node(struct fo_cluster *c, const char *id)
{
	for (int i = 0; i < c->nnodes; i++)
		if (!strcmp(c->nodes[i].id, id))
			return &c->nodes[i];
	return NULL;
}

struct fo_shard *fo_find_shard(struct fo_cluster *c, const char *name)
{
	for (int i = 0; i < c->nshards; i++)
		if (!strcmp(c->shards[i].name, name))
			return &c->shards[i];
	return NULL;
}

static bool host_eq(const char *a, const char *b)
{
	/* "localhost" and 127.0.0.1 are the same server to a replica. */
	if (!strcasecmp(a, b))
		return true;
	return (!strcmp(a, "localhost") && !strcmp(b, "127.0.0.1")) ||
	       (!strcmp(b, "localhost") && !strcmp(a, "127.0.0.1"));
}

struct fo_node *fo_node_by_addr(struct fo_cluster *c, const char *host, int port)
{
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i].port == port && host_eq(c->nodes[i].host, host))
			return &c->nodes[i];
	return NULL;
}

static bool follows(const struct info_repl *r, const struct fo_node *m)
{
	return r->role == INFO_ROLE_SLAVE && m && r->master_port == m->port &&
	       host_eq(r->master_host, m->host);
}

static const char *const proc_names[] = { "unknown", "up", "down", "hung", "busy", "loading" };

enum fo_proc fo_proc_parse(const char *s)
{
	for (size_t i = 0; i < sizeof(proc_names) / sizeof(proc_names[0]); i++)
		if (!strcmp(s, proc_names[i]))
			return (enum fo_proc)i;
	return FO_PROC_UNKNOWN;
}

const char *fo_proc_name(enum fo_proc p)
{
	return (unsigned)p < sizeof(proc_names) / sizeof(proc_names[0]) ? proc_names[p] : "unknown";
}

const char *fo_verdict_name(enum fo_verdict v)
{
	static const char *const names[] = { "unknown", "ok", "proc_down", "proc_hung",
					     "host_down", "agent_lost" };

	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}

const char *fo_state_name(enum fo_state s)
{
	static const char *const names[] = { "none", "select_replica", "pause_writes",
					     "wait_offset", "promote", "repoint" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* ------------------------------------------------------------------------- */
/* REPORT parsing */

static int parse_ll(const char *s, long long *v)
{
	char *end;

	if (!*s)
		return -EINVAL;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

int fo_report_parse(struct fo_cluster *c, struct fo_report *rep, int argc, const char **argv,
		    const size_t *lens, char *why, size_t whylen)
{
	struct info_repl *r = &rep->repl;

	memset(rep, 0, sizeof(*rep));
	r->link_up = -1;
	r->last_io_s = -1;
	r->offset = -1;
	r->slave_priority = 100;
	if (argc % 2) {
		snprintf(why, whylen, "odd number of key/value arguments");
		return -EINVAL;
	}
	for (int i = 0; i < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		long long n = 0;
		bool num = false;

		if (strlen(k) != lens[i] || strlen(v) != lens[i + 1]) {
			snprintf(why, whylen, "NUL byte in argument %d", i + 1);
			return -EINVAL;
		}
#define IS(name) (!strcmp(k, name))
#define NUM()                                                                           \
	do {                                                                            \
		if (parse_ll(v, &n)) {                                                  \
			snprintf(why, whylen, "%s: not a number: '%.32s'", k, v);       \
			return -EINVAL;                                                 \
		}                                                                       \
		num = true;                                                             \
	} while (0)
		if (IS("proc")) {
			rep->proc = fo_proc_parse(v);
		} else if (IS("pid")) {
			NUM();
			rep->pid = n;
		} else if (IS("proc_change_ms")) {
			NUM();
			rep->proc_change_ms = n;
		} else if (IS("exit")) {
			snprintf(rep->exit, sizeof(rep->exit), "%s", v);
		} else if (IS("core_dumped")) {
			NUM();
			rep->core_dumped = !!n;
		} else if (IS("fenced")) {
			NUM();
			rep->fenced = !!n;
		} else if (IS("auth_error")) {
			snprintf(rep->auth_error, sizeof(rep->auth_error), "%s", v);
		} else if (IS("server")) {
			r->server = !strcmp(v, "redis")	      ? INFO_SRV_REDIS :
				    !strcmp(v, "valkey")      ? INFO_SRV_VALKEY :
				    !strcmp(v, "dragonfly")   ? INFO_SRV_DRAGONFLY :
							      INFO_SRV_UNKNOWN;
		} else if (IS("version")) {
			snprintf(r->version, sizeof(r->version), "%s", v);
		} else if (IS("role")) {
			r->role = !strcmp(v, "master")				    ? INFO_ROLE_MASTER :
				  (!strcmp(v, "slave") || !strcmp(v, "replica")) ? INFO_ROLE_SLAVE :
										     INFO_ROLE_UNKNOWN;
		} else if (IS("master_host")) {
			snprintf(r->master_host, sizeof(r->master_host), "%s", v);
		} else if (IS("master_port")) {
			NUM();
			r->master_port = (n >= 0 && n <= 65535) ? (int)n : 0;
		} else if (IS("master_link_status")) {
			r->link_up = !strcmp(v, "up") ? 1 : !strcmp(v, "down") ? 0 : -1;
		} else if (IS("master_last_io_seconds_ago")) {
			NUM();
			r->last_io_s = n;
		} else if (IS("master_sync_in_progress")) {
			NUM();
			r->sync_in_progress = !!n;
		} else if (IS("master_replid")) {
			snprintf(r->master_replid, sizeof(r->master_replid), "%s", v);
		} else if (IS("repl_offset")) {
			NUM();
			r->offset = n;
		} else if (IS("slave_priority")) {
			NUM();
			r->slave_priority = n < 0 ? 0 : n > 1000000 ? 1000000 : (int)n;
		} else if (IS("connected_slaves")) {
			NUM();
			r->connected_slaves = n < 0 ? 0 : n > 100000 ? 100000 : (int)n;
		} else if (IS("run_id")) {
			snprintf(r->run_id, sizeof(r->run_id), "%s", v);
		} else if (!strncmp(k, "peer.", 5) && !strchr(k + 5, '.')) {
			struct fo_node *p = fo_find_node(c, k + 5);

			if (p)
				rep->peer[p->idx] = !strcmp(v, "up")	 ? FO_PEER_UP :
						    !strcmp(v, "down") ? FO_PEER_DOWN :
									   FO_PEER_UNKNOWN;
		}
		(void)num; /* other keys (peer.X.rtt_us …) are informational or unknown */
#undef IS
#undef NUM
	}
	if (rep->proc == FO_PROC_LOADING)
		r->loading = 1;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Events */

static void ev_begin(struct evrec *r, const char *kind, const struct fo_shard *s)
{
	evrec_begin(r, NULL, "controller", kind);
	if (s) {
		evrec_str(r, "shard", s->name);
		evrec_uint(r, "epoch", s->epoch);
	}
}

static void emit(struct fo_cluster *c, const char *kind, struct evrec *r)
{
	if (c->ops && c->ops->event)
		c->ops->event(c->ctx, kind, r);
}

static void publish(struct fo_cluster *c, const char *channel, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void publish(struct fo_cluster *c, const char *channel, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!c->ops || !c->ops->publish)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->ops->publish(c->ctx, channel, msg);
}

void fo_instance_str(const struct fo_cluster *c, const struct fo_node *n, char *buf, size_t len)
{
	const struct fo_shard *s = n->shard >= 0 ? &c->shards[n->shard] : NULL;
	const struct fo_node *m = s && s->primary >= 0 ? &c->nodes[s->primary] : NULL;

	if (!s)
		snprintf(buf, len, "node %s %s %d", n->id, n->host, n->port);
	else if (m == n || !m)
		snprintf(buf, len, "master %s %s %d", s->name, n->host, n->port);
	else
		snprintf(buf, len, "slave %s:%d %s %d @ %s %s %d", n->host, n->port, n->host,
			 n->port, s->name, m->host, m->port);
}

static void master_str(const struct fo_cluster *c, const struct fo_shard *s, int node, char *buf,
		       size_t len)
{
	const struct fo_node *m = node >= 0 ? &c->nodes[node] : NULL;

	snprintf(buf, len, "master %s %s %d", s->name, m ? m->host : "?", m ? m->port : 0);
}

static void step(struct fo_cluster *c, struct fo_shard *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void step(struct fo_cluster *c, struct fo_shard *s, const char *fmt, ...)
{
	struct fo_failover *f = &s->fo;
	struct fo_step *st;
	va_list ap;

	if (f->nsteps >= FO_TIMELINE_MAX)
		return;
	st = &f->steps[f->nsteps++];
	st->at_ms = now_ms(c) - f->start_ms;
	va_start(ap, fmt);
	vsnprintf(st->text, sizeof(st->text), fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------------- */
/* Failure rules */

static bool fresh(const struct fo_cluster *c, const struct fo_node *n, long long now)
{
	return (n->flags & FO_N_REPORTED) && now - n->last_report_ms <= c->node_down_after_ms;
}

enum fo_verdict fo_judge(const struct fo_cluster *c, const struct fo_node *n, long long now)
{
	int ups = 0, downs = 0;

	if (!(n->flags & FO_N_REPORTED))
		return FO_V_UNKNOWN;
	/* The process path: the kernel saw it die. Stands even if the agent went
	 * silent afterwards (the host may have followed its server). */
	if (n->rep.proc == FO_PROC_DOWN)
		return FO_V_PROC_DOWN;
	if (fresh(c, n, now))
		return n->rep.proc == FO_PROC_HUNG ? FO_V_PROC_HUNG : FO_V_OK;
	/* The host path: only peers whose own heartbeat is fresh have a say. */
	for (int i = 0; i < c->nnodes; i++) {
		const struct fo_node *p = &c->nodes[i];

		if (p == n || !fresh(c, p, now))
			continue;
		if (p->rep.peer[n->idx] == FO_PEER_DOWN)
			downs++;
		else if (p->rep.peer[n->idx] == FO_PEER_UP)
			ups++;
	}
	return downs > 0 && ups == 0 ? FO_V_HOST_DOWN : FO_V_AGENT_LOST;
}

static const char *down_reason(const struct fo_node *n, enum fo_verdict v, char *buf, size_t len)
{
	switch (v) {
	case FO_V_PROC_DOWN:
		if (!strcmp(n->rep.exit, "oom"))
			snprintf(buf, len, "oom_kill");
		else
			snprintf(buf, len, "proc_exit%s%s", n->rep.exit[0] ? " " : "", n->rep.exit);
		break;
	case FO_V_PROC_HUNG:
		snprintf(buf, len, "proc_hung");
		break;
	case FO_V_HOST_DOWN:
		snprintf(buf, len, "host_down");
		break;
	default:
		snprintf(buf, len, "%s", fo_verdict_name(v));
	}
	return buf;
}

static void peers_saying(const struct fo_cluster *c, const struct fo_node *n, enum fo_peer what,
			 char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < c->nnodes && off < len; i++) {
		const struct fo_node *p = &c->nodes[i];

		if (p != n && (p->flags & FO_N_REPORTED) && p->rep.peer[n->idx] == what)
			off += snprintf(buf + off, len - off, "%s%s", off ? " " : "", p->id);
	}
}

/* Applies the verdict to n's flags; logs and publishes only the changes. */
static void update_node(struct fo_cluster *c, struct fo_node *n, long long now)
{
	enum fo_verdict v = fo_judge(c, n, now);
	unsigned old = n->flags, nf = old & ~(FO_N_PROC_DOWN | FO_N_PROC_HUNG | FO_N_HOST_DOWN |
					     FO_N_AGENT_LOST | FO_N_SDOWN);
	struct fo_shard *s = shard_of(c, n);
	char inst[400], why[64], peers[256];
	struct evrec r;

	switch (v) {
	case FO_V_PROC_DOWN:
		nf |= FO_N_PROC_DOWN | FO_N_SDOWN;
		break;
	case FO_V_PROC_HUNG:
		nf |= FO_N_PROC_HUNG | FO_N_SDOWN;
		break;
	case FO_V_HOST_DOWN:
		nf |= FO_N_HOST_DOWN | FO_N_SDOWN;
		break;
	case FO_V_AGENT_LOST:
		nf |= FO_N_AGENT_LOST;
		break;
	default:
		break;
	}
	if (nf == old)
		goto ping;
	n->flags = nf;
	if ((nf & FO_N_PROC_DOWN) && !(old & FO_N_PROC_DOWN))
		n->down_since_ms = now;
	if ((nf & FO_N_PROC_HUNG) && !(old & FO_N_PROC_HUNG))
		n->hung_since_ms = now;
	if ((nf & FO_N_HOST_DOWN) && !(old & FO_N_HOST_DOWN))
		n->host_down_since_ms = now;
	fo_instance_str(c, n, inst, sizeof(inst));
	if ((nf & FO_N_AGENT_LOST) && !(old & FO_N_AGENT_LOST)) {
		n->agent_lost_since_ms = now;
		n->ping_ms = 0;
		peers_saying(c, n, FO_PEER_UP, peers, sizeof(peers));
		ev_begin(&r, "agent_lost", s);
		evrec_str(&r, "instance", n->id);
		evrec_int(&r, "heartbeat_age_ms", now - n->last_report_ms);
		evrec_str(&r, "peers_up", peers);
		evrec_str(&r, "reason", peers[0] ? "stale heartbeat, peers still reach the host" :
						    "stale heartbeat, no peer confirms");
		emit(c, "agent_lost", &r);
		publish(c, "flatline.agent_lost", "%s", inst);
	} else if (!(nf & FO_N_AGENT_LOST) && (old & FO_N_AGENT_LOST)) {
		ev_begin(&r, "agent_back", s);
		evrec_str(&r, "instance", n->id);
		evrec_int(&r, "lost_ms", now - n->agent_lost_since_ms);
		emit(c, "agent_back", &r);
	}
	if ((nf & FO_N_SDOWN) && !(old & FO_N_SDOWN)) {
		n->sdown_since_ms = now;
		down_reason(n, v, why, sizeof(why));
		ev_begin(&r, "node_down", s);
		evrec_str(&r, "instance", n->id);
		evrec_str(&r, "role", s && s->primary == n->idx ? "primary" : "replica");
		evrec_str(&r, "reason", why);
		if (v == FO_V_PROC_DOWN && n->rep.exit[0])
			evrec_str(&r, "exit", n->rep.exit);
		if (v == FO_V_HOST_DOWN) {
			peers_saying(c, n, FO_PEER_DOWN, peers, sizeof(peers));
			evrec_str(&r, "peers_down", peers);
			evrec_int(&r, "heartbeat_age_ms", now - n->last_report_ms);
		}
		emit(c, "node_down", &r);
		publish(c, "+sdown", "%s", inst);
	} else if (!(nf & FO_N_SDOWN) && (old & FO_N_SDOWN)) {
		ev_begin(&r, "node_up", s);
		evrec_str(&r, "instance", n->id);
		evrec_int(&r, "down_ms", now - n->sdown_since_ms);
		emit(c, "node_up", &r);
		publish(c, "-sdown", "%s", inst);
	}
ping:
	/* The agent is lost but peers reach the host: see for ourselves. */
	if ((n->flags & FO_N_AGENT_LOST) && c->ops && c->ops->ping &&
	    (!n->ping_ms || now - n->ping_ms >= FO_PING_EVERY_MS)) {
		n->ping_ms = now;
		c->ops->ping(c->ctx, n->idx, c->info_timeout_ms);
	}
}

void fo_on_reach(struct fo_cluster *c, struct fo_node *n, bool ok)
{
	long long now = now_ms(c);
	struct evrec r;

	if (ok == !(n->flags & FO_N_UNREACH))
		return;
	if (!ok) {
		n->flags |= FO_N_UNREACH;
		n->unreach_since_ms = now;
	} else {
		n->flags &= ~FO_N_UNREACH;
	}
	ev_begin(&r, ok ? "node_reachable" : "node_unreachable", shard_of(c, n));
	evrec_str(&r, "instance", n->id);
	evrec_str(&r, "by", "controller");
	if (ok)
		evrec_int(&r, "unreachable_ms", now - n->unreach_since_ms);
	emit(c, ok ? "node_reachable" : "node_unreachable", &r);
}

/* The freshest replication view of n: the agent's report or our own INFO. */
static const struct info_repl *latest(const struct fo_node *n)
{
	bool rep = n->flags & FO_N_REPORTED;

	if (n->info_ok && (!rep || n->info_ms >= n->last_report_ms))
		return &n->info;
	return rep ? &n->rep.repl : NULL;
}

/* ------------------------------------------------------------------------- */
/* Ranking */

struct rank_key {
	int node;
	int tier; /* 0 connected and comparable, 1 the rest, 2 in a full sync */
	int replid_ok;
	long long offset;
	int priority;
	const char *id;
};

static int rank_cmp(const struct rank_key *a, const struct rank_key *b)
{
	if (a->tier != b->tier)
		return a->tier - b->tier;
	if (a->tier == 0) {
		if (a->offset != b->offset)
			return a->offset > b->offset ? -1 : 1;
		if (a->priority != b->priority)
			return a->priority - b->priority;
	} else {
		/* Sentinel's order when nobody was connected: priority, offset, id. */
		if (a->priority != b->priority)
			return a->priority - b->priority;
		if (a->replid_ok != b->replid_ok)
			return b->replid_ok - a->replid_ok;
		if (a->replid_ok && a->offset != b->offset)
			return a->offset > b->offset ? -1 : 1;
	}
	return strcmp(a->id, b->id);
}

int fo_rank(const struct fo_cluster *c, const struct fo_shard *s, int from, const char *ref_replid,
	    long long since_ms, int *out, int max)
{
	struct rank_key keys[FO_MAX_NODES];
	const struct fo_node *old = from >= 0 ? &c->nodes[from] : NULL;
	int n = 0;

	for (int i = 0; i < s->nnodes; i++) {
		const struct fo_node *nd = &c->nodes[s->nodes[i]];
		const struct info_repl *r;
		struct rank_key *k;
		bool connected;

		if (nd->idx == from || nd->priority <= 0 || (nd->flags & FO_N_SDOWN))
			continue;
		r = nd->info_ok ? &nd->info : (nd->flags & FO_N_REPORTED) ? &nd->rep.repl : NULL;
		if (!r || r->role != INFO_ROLE_SLAVE || r->slave_priority == 0 || r->loading)
			continue;
		k = &keys[n++];
		k->node = nd->idx;
		k->id = nd->id;
		k->priority = nd->priority; /* the cluster file is the operator's word */
		k->offset = r->offset;
		k->replid_ok = !ref_replid || !ref_replid[0] || !r->master_replid[0] ||
			       !strcmp(ref_replid, r->master_replid);
		connected = (r->link_up == 1 && (!old || follows(r, old))) ||
			    (nd->link_up_ms && nd->link_up_ms >= since_ms);
		if (r->sync_in_progress)
			k->tier = 2;
		else if (connected && k->replid_ok && r->offset >= 0)
			k->tier = 0;
		else
			k->tier = 1;
	}
	/* Insertion sort: a handful of nodes. */
	for (int i = 1; i < n; i++) {
		struct rank_key k = keys[i];
		int j = i - 1;

		while (j >= 0 && rank_cmp(&keys[j], &k) > 0) {
			keys[j + 1] = keys[j];
			j--;
		}
		keys[j + 1] = k;
	}
	for (int i = 0; i < n && i < max; i++)
		out[i] = keys[i].node;
	return n < max ? n : max;
}

/* ------------------------------------------------------------------------- */
/* TILT and the block window */

bool fo_tilt_tick(struct fo_cluster *c)
{
	long long mono = c->now_ms(c->ctx), wall = c->wall_ms(c->ctx);
	long long dm = mono - c->last_tick_mono_ms, dw = wall - c->last_tick_wall_ms;
	bool first = !c->last_tick_mono_ms && !c->last_tick_wall_ms;
	struct evrec r;

	c->last_tick_mono_ms = mono;
	c->last_tick_wall_ms = wall;
	if (!first && c->tilt_ms > 0 &&
	    (dm > FO_TILT_TRIGGER_MS || dw - dm > FO_TILT_TRIGGER_MS ||
	     dm - dw > FO_TILT_TRIGGER_MS)) {
		ev_begin(&r, "tilt_start", NULL);
		evrec_str(&r, "reason", dm > FO_TILT_TRIGGER_MS ? "event loop stalled" :
								   "wall clock jumped");
		evrec_int(&r, "stall_ms", dm);
		evrec_int(&r, "clock_jump_ms", dw - dm);
		evrec_int(&r, "tilt_ms", c->tilt_ms);
		emit(c, "tilt_start", &r);
		if (!c->tilt) {
			c->tilt_since_ms = mono;
			publish(c, "+tilt", "#tilt mode entered");
		}
		c->tilt = true;
		c->tilt_until_ms = mono + c->tilt_ms;
		return true;
	}
	if (c->tilt && mono >= c->tilt_until_ms) {
		c->tilt = false;
		ev_begin(&r, "tilt_end", NULL);
		evrec_int(&r, "tilt_ms", mono - c->tilt_since_ms);
		emit(c, "tilt_end", &r);
		publish(c, "-tilt", "#tilt mode exited");
		fo_evaluate(c);
	}
	return c->tilt;
}

bool fo_may_failover(const struct fo_cluster *c, const struct fo_shard *s, enum fo_verdict v,
		     bool planned, char *why, size_t whylen)
{
	long long now = c->now_ms(c->ctx), since;

	if (c->tilt) {
		snprintf(why, whylen, "TILT: observing only for %lld ms more",
			 c->tilt_until_ms - now);
		return false;
	}
	if (s->fo.state != FO_ST_NONE) {
		snprintf(why, whylen, "a failover of %s is in progress (%s)", s->name,
			 fo_state_name(s->fo.state));
		return false;
	}
	since = now - s->last_failover_end_ms;
	if (s->last_failover_end_ms && since < c->failover_block_ms) {
		/* Unless the new primary also dies: the process or the host is gone. */
		if (!planned && (v == FO_V_PROC_DOWN || v == FO_V_HOST_DOWN))
			return true;
		snprintf(why, whylen, "failover_block_ms: the last failover of %s ended %lld ms ago",
			 s->name, since);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------------- */
/* The failover state machine */

static void enter(struct fo_cluster *c, struct fo_shard *s, enum fo_state st, int timeout_ms)
{
	s->fo.state = st;
	s->fo.state_since_ms = now_ms(c);
	s->fo.pending = 0;
	if (c->ops->timer)
		c->ops->timer(c->ctx, s->idx, timeout_ms);
}

static void finish(struct fo_cluster *c, struct fo_shard *s, const char *result)
{
	struct fo_failover *f = &s->fo;

	snprintf(f->result, sizeof(f->result), "%s", result);
	f->end_wall_ms = c->wall_ms(c->ctx);
	f->state = FO_ST_NONE;
	s->last = *f;
	s->have_last = true;
	if (c->ops->timer)
		c->ops->timer(c->ctx, s->idx, -1);
	if (c->ops->done)
		c->ops->done(c->ctx, s->idx, result);
}

static void abort_failover(struct fo_cluster *c, struct fo_shard *s, const char *reason)
{
	struct fo_failover *f = &s->fo;
	char m[400];
	struct evrec r;

	if (f->paused) {
		c->ops->unpause(c->ctx, f->from);
		f->paused = false;
	}
	ev_begin(&r, "failover_abort", s);
	evrec_str(&r, "from", f->from >= 0 ? c->nodes[f->from].id : "");
	evrec_str(&r, "state", fo_state_name(f->state));
	evrec_str(&r, "reason", reason);
	evrec_bool(&r, "planned", f->planned);
	emit(c, "failover_abort", &r);
	step(c, s, "failover_abort in %s: %s", fo_state_name(f->state), reason);
	master_str(c, s, f->from, m, sizeof(m));
	if (!strcmp(reason, "no_good_replica")) {
		s->flags |= FO_S_NO_GOOD_REPLICA;
		publish(c, "-failover-abort-no-good-slave", "%s", m);
		publish(c, "flatline.failover_abort", "%s no_good_replica", s->name);
	} else {
		publish(c, "-failover-abort", "%s %s", m, reason);
	}
	finish(c, s, reason);
}

static void st_select(struct fo_cluster *c, struct fo_shard *s);
static void st_promote(struct fo_cluster *c, struct fo_shard *s);
static void st_repoint(struct fo_cluster *c, struct fo_shard *s);
static void st_repoint_done(struct fo_cluster *c, struct fo_shard *s);

int fo_start(struct fo_cluster *c, struct fo_shard *s, bool planned, int target,
	     const char *reason, char *why, size_t whylen)
{
	struct fo_failover *f = &s->fo;
	struct fo_node *p;
	enum fo_verdict v;
	char m[400];
	struct evrec r;

	if (s->primary < 0) {
		snprintf(why, whylen, "no primary known for %s", s->name);
		return -ENOENT;
	}
	p = &c->nodes[s->primary];
	v = fo_judge(c, p, now_ms(c));
	if (s->flags & FO_S_EMPTY_RESTART)
		v = FO_V_PROC_DOWN; /* its data died with it: as if it were still down */
	if (planned && (p->flags & FO_N_SDOWN))
		planned = false; /* nothing to pause: a failover, not a switchover */
	if (!fo_may_failover(c, s, v, planned, why, whylen))
		return s->fo.state != FO_ST_NONE ? -EBUSY : -EAGAIN;
	if (target >= 0) {
		struct fo_node *t = &c->nodes[target];

		if (t->shard != s->idx || target == s->primary) {
			snprintf(why, whylen, "%s is not a replica in shard %s", t->id, s->name);
			return -EINVAL;
		}
		if (t->priority <= 0) {
			snprintf(why, whylen, "%s has priority 0 (never promoted)", t->id);
			return -EINVAL;
		}
	}
	memset(f, 0, sizeof(*f));
	f->planned = planned;
	f->start_ms = now_ms(c);
	f->start_wall_ms = c->wall_ms(c->ctx);
	f->from = s->primary;
	f->to = -1;
	f->target = target;
	f->pause_offset = -1;
	snprintf(f->reason, sizeof(f->reason), "%s", reason);
	s->flags &= ~FO_S_NO_GOOD_REPLICA;

	ev_begin(&r, "failover_start", s);
	evrec_str(&r, "from", p->id);
	evrec_str(&r, "reason", reason);
	evrec_bool(&r, "planned", planned);
	if (target >= 0)
		evrec_str(&r, "target", c->nodes[target].id);
	emit(c, "failover_start", &r);
	step(c, s, "failover_start %s: %s%s", p->id, reason, planned ? " (planned)" : "");
	master_str(c, s, f->from, m, sizeof(m));
	publish(c, "+try-failover", "%s", m);
	publish(c, "+failover-state-select-slave", "%s", m);
	st_select(c, s);
	return 0;
}

/* SELECT: fresh INFO replication from every candidate, in parallel. */
static void st_select(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	int ask[FO_MAX_NODES], nask = 0;

	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];

		if (n->idx == f->from || n->priority <= 0 || (n->flags & FO_N_SDOWN))
			continue;
		if (f->target >= 0 && n->idx != f->target)
			continue;
		n->info_ok = 0;
		f->asked[n->idx] = 1;
		ask[nask++] = n->idx;
	}
	enter(c, s, FO_ST_SELECT, c->info_timeout_ms + 50);
	f->pending = nask;
	if (!nask) {
		abort_failover(c, s, "no_good_replica");
		return;
	}
	for (int i = 0; i < nask; i++)
		c->ops->info(c->ctx, ask[i], c->info_timeout_ms);
}

static void select_done(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	int ranked[FO_MAX_NODES], n;
	long long since = f->start_ms - c->node_down_after_ms;
	const char *ref = s->primary_replid;
	char list[256], inst[400];
	size_t off = 0;
	struct fo_node *best;
	struct evrec r;

	n = fo_rank(c, s, f->from, ref, since, ranked, FO_MAX_NODES);
	f->ncand = 0;
	list[0] = '\0';
	for (int i = 0; i < n; i++) {
		struct fo_node *nd = &c->nodes[ranked[i]];

		if (!f->asked[nd->idx] || !nd->info_ok || nd->info_ms < f->start_ms)
			continue; /* not asked, or did not answer INFO in time: not reachable */
		f->cand[f->ncand++] = nd->idx;
		if (off < sizeof(list))
			off += snprintf(list + off, sizeof(list) - off, "%s%s", off ? " " : "",
					nd->id);
	}
	if (!f->ncand) {
		abort_failover(c, s, "no_good_replica");
		return;
	}
	best = &c->nodes[f->cand[0]];
	ev_begin(&r, "replica_selected", s);
	evrec_str(&r, "from", c->nodes[f->from].id);
	evrec_str(&r, "instance", best->id);
	evrec_int(&r, "offset", best->info.offset);
	evrec_bool(&r, "link_was_up", best->info.link_up == 1 ||
					      (best->link_up_ms && best->link_up_ms >= since));
	evrec_str(&r, "candidates", list);
	evrec_str(&r, "reason", f->target >= 0 ? "operator's choice" :
			       "ranked: connected, offset, priority, id");
	emit(c, "replica_selected", &r);
	step(c, s, "replica_selected %s (offset %lld; candidates %s)", best->id, best->info.offset,
	     list);
	fo_instance_str(c, best, inst, sizeof(inst));
	publish(c, "+selected-slave", "%s", inst);
	if (f->planned) {
		enter(c, s, FO_ST_PAUSE, c->promote_timeout_ms + 50);
		f->pending = 1;
		/* Long enough for the whole switchover; expires if we die meanwhile. */
		c->ops->pause(c->ctx, f->from,
			      c->offset_wait_ms + c->promote_timeout_ms + c->repoint_timeout_ms + 2000,
			      c->promote_timeout_ms);
		return;
	}
	st_promote(c, s);
}

/* WAIT_OFFSET: the primary's offset once paused, then the target's until it is reached. */
static void wait_offset_poll(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;

	f->pending = 1;
	c->ops->info(c->ctx, f->pause_offset < 0 ? f->from : f->cand[0], c->info_timeout_ms);
}

static void st_wait_offset(struct fo_cluster *c, struct fo_shard *s)
{
	enter(c, s, FO_ST_WAIT_OFFSET, -1);
	wait_offset_poll(c, s);
}

static void wait_offset_reply(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok)
{
	struct fo_failover *f = &s->fo;
	long long waited = now_ms(c) - f->state_since_ms;

	f->pending = 0;
	if (ok && n->idx == f->from && f->pause_offset < 0) {
		f->pause_offset = n->info.offset;
		step(c, s, "writes paused on %s at offset %lld", n->id, f->pause_offset);
		if (f->pause_offset < 0) {
			/* The server does not tell its offset (Dragonfly): trust the link. */
			st_promote(c, s);
			return;
		}
		wait_offset_poll(c, s);
		return;
	}
	if (ok && n->idx == f->cand[0] && f->pause_offset >= 0 &&
	    n->info.offset >= f->pause_offset) {
		step(c, s, "%s reached offset %lld after %lld ms", n->id, n->info.offset, waited);
		st_promote(c, s);
		return;
	}
	if (waited >= c->offset_wait_ms) {
		char why[128];

		snprintf(why, sizeof(why), "%s did not reach offset %lld within %d ms (at %lld)",
			 c->nodes[f->cand[0]].id, f->pause_offset, c->offset_wait_ms,
			 c->nodes[f->cand[0]].info.offset);
		abort_failover(c, s, why);
		return;
	}
	c->ops->timer(c->ctx, s->idx, c->offset_poll_ms);
}

/* PROMOTE: the next candidate in rank order. */
static void st_promote(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	struct fo_node *n;

	if (f->cand_next >= f->ncand) {
		abort_failover(c, s, "every candidate refused or timed out on promotion");
		return;
	}
	n = &c->nodes[f->cand[f->cand_next++]];
	enter(c, s, FO_ST_PROMOTE, c->promote_timeout_ms + 50);
	f->pending = 1;
	f->to = n->idx;
	c->ops->promote(c->ctx, n->idx, c->promote_timeout_ms);
}

static void promote_reply(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok,
			  const char *err)
{
	struct fo_failover *f = &s->fo;
	int from = f->from;
	char inst[400], m[400];
	struct evrec r;

	f->pending = 0;
	if (!ok) {
		ev_begin(&r, "promote_failed", s);
		evrec_str(&r, "instance", n->id);
		evrec_str(&r, "reason", err ? err : "?");
		emit(c, "promote_failed", &r);
		step(c, s, "promote_failed %s: %s", n->id, err ? err : "?");
		f->to = -1;
		st_promote(c, s);
		return;
	}
	s->primary = n->idx;
	s->epoch++;
	f->epoch = s->epoch;
	s->primary_replid[0] = '\0';
	s->flags &= ~(FO_S_ODOWN | FO_S_NO_GOOD_REPLICA | FO_S_PRIMARY_DIED | FO_S_EMPTY_RESTART);
	ev_begin(&r, "promoted", s);
	evrec_str(&r, "instance", n->id);
	evrec_str(&r, "from", c->nodes[from].id);
	evrec_str(&r, "reason", f->reason);
	evrec_int(&r, "elapsed_ms", now_ms(c) - f->start_ms);
	emit(c, "promoted", &r);
	step(c, s, "promoted %s (epoch %llu)", n->id, s->epoch);
	if (c->ops->promoted)
		c->ops->promoted(c->ctx, s->idx);
	fo_instance_str(c, n, inst, sizeof(inst));
	publish(c, "+promoted-slave", "%s", inst);
	master_str(c, s, from, m, sizeof(m));
	publish(c, "+failover-state-reconf-slaves", "%s", m);
	publish(c, "+switch-master", "%s %s %d %s %d", s->name, c->nodes[from].host,
		c->nodes[from].port, n->host, n->port);
	ev_begin(&r, "switch_master", s);
	evrec_str(&r, "from", c->nodes[from].id);
	evrec_str(&r, "to", n->id);
	evrec_str(&r, "old_addr", c->nodes[from].host);
	evrec_int(&r, "old_port", c->nodes[from].port);
	evrec_str(&r, "new_addr", n->host);
	evrec_int(&r, "new_port", n->port);
	emit(c, "switch_master", &r);
	step(c, s, "switch_master %s:%d -> %s:%d", c->nodes[from].host, c->nodes[from].port,
	     n->host, n->port);
	st_repoint(c, s);
}

/* REPOINT: REPLICAOF <new> on every other node, the old primary included when it
 * may still answer (planned, hung); a dead one is demoted when it returns. */
static void st_repoint(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	int send[FO_MAX_NODES], nsend = 0;

	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];

		if (n->idx == f->to)
			continue;
		if (n->idx == f->from && (n->flags & (FO_N_PROC_DOWN | FO_N_HOST_DOWN)))
			continue;
		n->flags |= FO_N_FIXING;
		send[nsend++] = n->idx;
	}
	enter(c, s, FO_ST_REPOINT, c->repoint_timeout_ms + 50);
	f->pending = nsend;
	for (int i = 0; i < nsend; i++)
		c->ops->replicaof(c->ctx, send[i], f->to, c->repoint_timeout_ms);
	if (!nsend)
		st_repoint_done(c, s);
}

static void st_repoint_done(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	struct fo_node *to = &c->nodes[f->to];
	char ok[256] = "", bad[256] = "", m[400];
	size_t oo = 0, ob = 0;
	struct evrec r;

	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];

		if (n->idx == f->to)
			continue;
		if (n->flags & FO_N_FIXING) { /* no answer in time */
			n->flags &= ~FO_N_FIXING;
			if (ob < sizeof(bad))
				ob += snprintf(bad + ob, sizeof(bad) - ob, "%s%s", ob ? " " : "",
					       n->id);
		} else if (n->fix_ok) {
			if (oo < sizeof(ok))
				oo += snprintf(ok + oo, sizeof(ok) - oo, "%s%s", oo ? " " : "",
					       n->id);
		}
		n->fix_ok = 0;
	}
	if (f->paused) {
		c->ops->unpause(c->ctx, f->from);
		f->paused = false;
		step(c, s, "writes unpaused on %s", c->nodes[f->from].id);
	}
	ev_begin(&r, "replicas_repointed", s);
	evrec_str(&r, "primary", to->id);
	evrec_str(&r, "nodes", ok);
	if (bad[0] || f->repoint_failed)
		evrec_str(&r, "failed", bad);
	emit(c, "replicas_repointed", &r);
	step(c, s, "replicas_repointed to %s: %s%s%s", to->id, ok[0] ? ok : "(none)",
	     bad[0] ? "; failed: " : "", bad);
	master_str(c, s, f->to, m, sizeof(m));
	publish(c, "+failover-end", "%s", m);
	ev_begin(&r, "failover_end", s);
	evrec_str(&r, "from", c->nodes[f->from].id);
	evrec_str(&r, "to", to->id);
	evrec_bool(&r, "planned", f->planned);
	evrec_int(&r, "elapsed_ms", now_ms(c) - f->start_ms);
	emit(c, "failover_end", &r);
	step(c, s, "failover_end");
	s->last_failover_end_ms = now_ms(c);
	finish(c, s, "ok");
}

static void repoint_reply(struct fo_cluster *c, struct fo_shard *s, struct fo_node *n, bool ok,
			  const char *err)
{
	struct fo_failover *f = &s->fo;
	char inst[400];
	struct evrec r;

	if (!(n->flags & FO_N_FIXING))
		return; /* a late answer */
	n->flags &= ~FO_N_FIXING;
	n->fix_ms = now_ms(c);
	if (ok) {
		n->fix_ok = 1;
		f->repointed++;
		fo_instance_str(c, n, inst, sizeof(inst));
		publish(c, "+slave-reconf-sent", "%s", inst);
		if (n->idx == f->from) {
			ev_begin(&r, "old_primary_demoted", s);
			evrec_str(&r, "instance", n->id);
			evrec_str(&r, "primary", c->nodes[f->to].id);
			evrec_str(&r, "reason", f->planned ? "planned switchover" :
							    "still answering after failover");
			emit(c, "old_primary_demoted", &r);
			step(c, s, "old_primary_demoted %s", n->id);
		}
	} else {
		f->repoint_failed++;
		ev_begin(&r, "repoint_failed", s);
		evrec_str(&r, "instance", n->id);
		evrec_str(&r, "reason", err ? err : "?");
		emit(c, "repoint_failed", &r);
		step(c, s, "repoint_failed %s: %s", n->id, err ? err : "?");
	}
	if (--f->pending <= 0)
		st_repoint_done(c, s);
}

/* ------------------------------------------------------------------------- */
/* Repairs outside a failover: the old primary back as a master, stray replicas. */

static void repair_shard(struct fo_cluster *c, struct fo_shard *s, long long now)
{
	struct fo_node *p = &c->nodes[s->primary];

	if (p->flags & FO_N_SDOWN)
		return;
	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];
		const struct info_repl *r = latest(n);
		bool report = r == &n->rep.repl;
		int kind;

		if (n == p || !r || (n->flags & (FO_N_FIXING | FO_N_SDOWN)))
			continue;
		if (report && (!fresh(c, n, now) || n->rep.proc != FO_PROC_UP))
			continue;
		if (r->role == INFO_ROLE_MASTER)
			kind = 1; /* demote before anything else: it may have restarted empty */
		else if (r->role == INFO_ROLE_SLAVE && !follows(r, p))
			kind = 2;
		else
			continue;
		if (n->fix_ms && now - n->fix_ms < FO_FIX_COOLDOWN_MS)
			continue;
		n->flags |= FO_N_FIXING;
		n->fix_kind = kind;
		n->fix_ms = now;
		c->ops->replicaof(c->ctx, n->idx, p->idx, c->repoint_timeout_ms);
	}
}

static void repair_reply(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err)
{
	struct fo_shard *s = shard_of(c, n);
	struct fo_node *p = s && s->primary >= 0 ? &c->nodes[s->primary] : NULL;
	struct evrec r;

	if (!(n->flags & FO_N_FIXING))
		return;
	n->flags &= ~FO_N_FIXING;
	n->fix_ms = now_ms(c);
	if (!ok) {
		ev_begin(&r, "repair_failed", s);
		evrec_str(&r, "instance", n->id);
		evrec_str(&r, "reason", err ? err : "?");
		emit(c, "repair_failed", &r);
		return;
	}
	ev_begin(&r, n->fix_kind == 1 ? "old_primary_demoted" : "replica_repointed", s);
	evrec_str(&r, "instance", n->id);
	evrec_str(&r, "primary", p ? p->id : "");
	evrec_str(&r, "reason", n->fix_kind == 1 ? "reported as a master, not the shard's primary" :
						     "replicating from another server");
	emit(c, n->fix_kind == 1 ? "old_primary_demoted" : "replica_repointed", &r);
	if (n->fix_kind == 1 && p) {
		char inst[400];

		fo_instance_str(c, n, inst, sizeof(inst));
		publish(c, "+convert-to-slave", "%s", inst);
	}
	/* Until its next report says otherwise, it follows p. */
	if (p) {
		struct info_repl *ri = &n->info;

		if (n->info_ok || (n->flags & FO_N_REPORTED)) {
			if (!n->info_ok)
				*ri = n->rep.repl;
			ri->role = INFO_ROLE_SLAVE;
			snprintf(ri->master_host, sizeof(ri->master_host), "%s", p->host);
			ri->master_port = p->port;
			n->info_ok = 1;
			n->info_ms = now_ms(c);
		}
	}
}

/* ------------------------------------------------------------------------- */
/* Evaluation */

/* The primary returned without a failover in between. If its replication history is
 * not the one its replicas carry, and shorter (a restart without persistence, or from
 * an old file), following it would wipe them: returns the replica that has more. */
static struct fo_node *restarted_empty(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_node *p = &c->nodes[s->primary], *best = NULL;
	const struct info_repl *pr = latest(p);
	long long best_off = -1;

	if (!pr || pr->role != INFO_ROLE_MASTER || pr->offset < 0 || !pr->master_replid[0])
		return NULL;
	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];
		const struct info_repl *r = latest(n);

		if (n == p || !r || (n->flags & FO_N_SDOWN) || r->role != INFO_ROLE_SLAVE ||
		    !r->master_replid[0] || !strcmp(r->master_replid, pr->master_replid) ||
		    r->offset <= pr->offset)
			continue;
		if (r->offset > best_off) {
			best = n;
			best_off = r->offset;
		}
	}
	return best;
}

static void check_shard(struct fo_cluster *c, struct fo_shard *s, long long now)
{
	struct fo_node *p;
	enum fo_verdict v;
	char why[160], reason[64], m[400];

	if (s->primary < 0 || s->fo.state != FO_ST_NONE)
		return;
	p = &c->nodes[s->primary];
	v = fo_judge(c, p, now);
	if (!(p->flags & FO_N_SDOWN)) {
		if (s->flags & FO_S_ODOWN) {
			s->flags &= ~FO_S_ODOWN;
			master_str(c, s, s->primary, m, sizeof(m));
			publish(c, "-odown", "%s", m);
		}
		if (s->flags & FO_S_PRIMARY_DIED) {
			const struct info_repl *pr = latest(p);
			struct fo_node *b = restarted_empty(c, s);

			if (c->tilt || c->starting)
				return; /* observe only; and no repair before this is settled */
			if (b && !(s->flags & FO_S_NO_GOOD_REPLICA)) {
				struct evrec r;

				ev_begin(&r, "primary_restarted_empty", s);
				evrec_str(&r, "instance", p->id);
				evrec_int(&r, "offset", pr->offset);
				evrec_str(&r, "replid", pr->master_replid);
				evrec_str(&r, "replica", b->id);
				evrec_int(&r, "replica_offset", latest(b)->offset);
				evrec_str(&r, "reason", "another, shorter history than its replicas: "
							"following it would wipe them");
				emit(c, "primary_restarted_empty", &r);
				s->flags |= FO_S_EMPTY_RESTART;
				fo_start(c, s, false, -1, "primary_restarted_empty", why, sizeof(why));
				return;
			}
			if (pr && pr->role == INFO_ROLE_MASTER && pr->offset >= 0 &&
			    pr->master_replid[0])
				s->flags &= ~(FO_S_PRIMARY_DIED | FO_S_EMPTY_RESTART); /* its history holds */
		}
		if (!c->tilt && !c->starting)
			repair_shard(c, s, now);
		return;
	}
	s->flags |= FO_S_PRIMARY_DIED;
	if (!(s->flags & FO_S_ODOWN)) {
		s->flags |= FO_S_ODOWN;
		master_str(c, s, s->primary, m, sizeof(m));
		publish(c, "+odown", "%s #quorum 1/1", m);
	}
	if (s->flags & FO_S_NO_GOOD_REPLICA || c->starting)
		return; /* retried when a report changes; nothing before the topology is known */
	if (!fo_may_failover(c, s, v, false, why, sizeof(why))) {
		if (strcmp(why, s->blocked_why)) {
			struct evrec r;

			snprintf(s->blocked_why, sizeof(s->blocked_why), "%s", why);
			ev_begin(&r, "failover_blocked", s);
			evrec_str(&r, "from", p->id);
			evrec_str(&r, "reason", why);
			emit(c, "failover_blocked", &r);
		}
		return;
	}
	s->blocked_why[0] = '\0';
	fo_start(c, s, false, -1, down_reason(p, v, reason, sizeof(reason)), why, sizeof(why));
}

void fo_evaluate(struct fo_cluster *c)
{
	long long now = now_ms(c);

	for (int i = 0; i < c->nnodes; i++)
		update_node(c, &c->nodes[i], now);
	for (int i = 0; i < c->nshards; i++)
		check_shard(c, &c->shards[i], now);
}

/* Fields whose change may turn "no good replica" into a good one. */
static bool report_changed(const struct fo_report *a, const struct fo_report *b)
{
	return a->proc != b->proc || a->repl.role != b->repl.role ||
	       a->repl.link_up != b->repl.link_up || a->repl.master_port != b->repl.master_port ||
	       strcmp(a->repl.master_host, b->repl.master_host) ||
	       a->repl.slave_priority != b->repl.slave_priority ||
	       a->repl.sync_in_progress != b->repl.sync_in_progress ||
	       a->repl.loading != b->repl.loading || memcmp(a->peer, b->peer, sizeof(a->peer));
}

void fo_on_report(struct fo_cluster *c, struct fo_node *n, const struct fo_report *rep)
{
	struct fo_shard *s = shard_of(c, n);
	long long now = now_ms(c);
	bool changed = !(n->flags & FO_N_REPORTED) || report_changed(&n->rep, rep);

	n->rep = *rep;
	n->last_report_ms = now;
	n->flags |= FO_N_REPORTED;
	if (s && s->primary >= 0) {
		struct fo_node *p = &c->nodes[s->primary];

		if (rep->repl.link_up == 1 && follows(&rep->repl, p))
			n->link_up_ms = now;
		if (n == p && rep->repl.role == INFO_ROLE_MASTER && rep->repl.master_replid[0] &&
		    !(s->flags & FO_S_PRIMARY_DIED)) /* keep the history it had before dying */
			snprintf(s->primary_replid, sizeof(s->primary_replid), "%s",
				 rep->repl.master_replid);
	}
	if (changed && c->shards) {
		for (int i = 0; i < c->nshards; i++)
			c->shards[i].flags &= ~FO_S_NO_GOOD_REPLICA;
	}
	fo_evaluate(c);
}

void fo_on_agent(struct fo_cluster *c, struct fo_node *n, bool connected)
{
	if (connected)
		n->flags |= FO_N_AGENT;
	else
		n->flags &= ~FO_N_AGENT;
	fo_evaluate(c);
}

/* ------------------------------------------------------------------------- */
/* Replies from the I/O layer */

void fo_on_info(struct fo_cluster *c, struct fo_node *n, bool ok, const struct info_repl *info,
		const char *err)
{
	struct fo_shard *s = shard_of(c, n);

	(void)err;
	if (ok) {
		n->info = *info;
		n->info_ok = 1;
		n->info_ms = now_ms(c);
		if (s && s->primary == n->idx && info->role == INFO_ROLE_MASTER &&
		    info->master_replid[0] && !(s->flags & FO_S_PRIMARY_DIED))
			snprintf(s->primary_replid, sizeof(s->primary_replid), "%s",
				 info->master_replid);
		if (s && s->primary >= 0 && info->link_up == 1 &&
		    follows(info, &c->nodes[s->primary]))
			n->link_up_ms = n->info_ms;
	}
	fo_on_reach(c, n, ok);
	if (!s)
		return;
	switch (s->fo.state) {
	case FO_ST_SELECT:
		if (n->idx == s->fo.from || s->fo.pending <= 0)
			return;
		if (--s->fo.pending == 0)
			select_done(c, s);
		return;
	case FO_ST_WAIT_OFFSET:
		if (s->fo.pending && (n->idx == s->fo.from || n->idx == s->fo.cand[0]))
			wait_offset_reply(c, s, n, ok);
		return;
	default:
		return;
	}
}

void fo_on_pause(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err)
{
	struct fo_shard *s = shard_of(c, n);
	char why[160];

	if (!s || s->fo.state != FO_ST_PAUSE || n->idx != s->fo.from)
		return;
	if (!ok) {
		snprintf(why, sizeof(why), "failed to pause writes on %s: %s", n->id,
			 err ? err : "?");
		abort_failover(c, s, why);
		return;
	}
	s->fo.paused = true;
	st_wait_offset(c, s);
}

void fo_on_promote(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err)
{
	struct fo_shard *s = shard_of(c, n);

	if (!s || s->fo.state != FO_ST_PROMOTE || n->idx != s->fo.to || !s->fo.pending)
		return;
	promote_reply(c, s, n, ok, err);
}

void fo_on_replicaof(struct fo_cluster *c, struct fo_node *n, bool ok, const char *err)
{
	struct fo_shard *s = shard_of(c, n);

	if (s && s->fo.state == FO_ST_REPOINT)
		repoint_reply(c, s, n, ok, err);
	else
		repair_reply(c, n, ok, err);
}

/* Each state owns its timeout. */
void fo_on_timer(struct fo_cluster *c, struct fo_shard *s)
{
	struct fo_failover *f = &s->fo;
	char why[160];

	switch (f->state) {
	case FO_ST_SELECT:
		f->pending = 0;
		select_done(c, s); /* with whoever answered */
		break;
	case FO_ST_PAUSE:
		snprintf(why, sizeof(why), "failed to pause writes on %s: timed out",
			 c->nodes[f->from].id);
		abort_failover(c, s, why);
		break;
	case FO_ST_WAIT_OFFSET:
		if (!f->pending)
			wait_offset_poll(c, s);
		break;
	case FO_ST_PROMOTE:
		promote_reply(c, s, &c->nodes[f->to], false, "timed out");
		break;
	case FO_ST_REPOINT:
		st_repoint_done(c, s);
		break;
	case FO_ST_NONE:
		break;
	}
}

/* ------------------------------------------------------------------------- */
/* Discovery at start */

void fo_discover(struct fo_cluster *c, struct fo_shard *s)
{
	int masters[FO_MAX_NODES], nm = 0, pick = -1;
	const int spi = s->primary; /* the state file's word, -1 if none */
	char why[128] = "";
	struct evrec r;

	for (int i = 0; i < s->nnodes; i++) {
		struct fo_node *n = &c->nodes[s->nodes[i]];

		if (n->info_ok && n->info.role == INFO_ROLE_MASTER)
			masters[nm++] = n->idx;
	}
	if (spi >= 0 && c->nodes[spi].info_ok && c->nodes[spi].info.role == INFO_ROLE_MASTER) {
		pick = spi; /* the state file and the server agree */
	} else if (nm == 1) {
		pick = masters[0];
		snprintf(why, sizeof(why), "the only master among the reachable nodes");
	} else if (nm > 1) {
		/* Most replicas connected, then the highest offset; a tie is left to the operator. */
		int best = -1, tie = 0;

		for (int i = 0; i < nm; i++) {
			struct fo_node *n = &c->nodes[masters[i]];
			struct fo_node *b = best >= 0 ? &c->nodes[best] : NULL;

			if (!b || n->info.connected_slaves > b->info.connected_slaves ||
			    (n->info.connected_slaves == b->info.connected_slaves &&
			     n->info.offset > b->info.offset)) {
				best = n->idx;
				tie = 0;
			} else if (n->info.connected_slaves == b->info.connected_slaves &&
				   n->info.offset == b->info.offset) {
				tie = 1;
			}
		}
		if (!tie) {
			pick = best;
			snprintf(why, sizeof(why), "most replicas and highest offset of %d masters",
				 nm);
		}
	} else if (spi < 0) {
		/* No master answers: the one the replicas follow. */
		for (int i = 0; i < s->nnodes && pick < 0; i++) {
			struct fo_node *n = &c->nodes[s->nodes[i]], *m;

			if (!n->info_ok || n->info.role != INFO_ROLE_SLAVE)
				continue;
			m = fo_node_by_addr(c, n->info.master_host, n->info.master_port);
			if (m && m->shard == s->idx)
				pick = m->idx;
		}
		if (pick >= 0)
			snprintf(why, sizeof(why), "followed by the replicas (not reachable)");
	}
	if (pick < 0) {
		if (spi < 0) {
			ev_begin(&r, "primary_unknown", s);
			evrec_int(&r, "masters", nm);
			evrec_str(&r, "reason", nm > 1 ? "several masters, none preferable" :
							 "no node answered");
			emit(c, "primary_unknown", &r);
		}
		return;
	}
	if (pick == s->primary)
		return;
	/* A primary we did not record (first start, or promoted just before a crash). */
	if (spi >= 0)
		s->epoch++;
	s->primary = pick;
	ev_begin(&r, "primary_discovered", s);
	evrec_str(&r, "instance", c->nodes[pick].id);
	evrec_str(&r, "state_file_primary", spi >= 0 ? c->nodes[spi].id : "");
	evrec_str(&r, "reason", why);
	emit(c, "primary_discovered", &r);
	if (c->ops->promoted)
		c->ops->promoted(c->ctx, s->idx);
}

/* ------------------------------------------------------------------------- */
/* The state file */

/* Splits s at spaces into at most max words; the count, or max + 1 if more. */
static int split_words(char *s, char **w, int max)
{
	char *save = NULL;
	int n = 0;

	for (char *p = strtok_r(s, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
		if (n == max)
			return max + 1;
		w[n++] = p;
	}
	return n;
}

static int parse_ull(const char *s, int base, unsigned long long *v)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, base);
	return errno || *end ? -EINVAL : 0;
}

int fo_state_parse(struct fo_cluster *c, const char *text, size_t len, const char *name, char *err,
		   size_t errlen)
{
	const char *p = text, *end = text + len, *body_end = NULL;
	int line = 0, nshard = 0, have_end = 0;
	unsigned long crc = 0;
	unsigned long long want = 0;
	size_t warn = 0;

	err[0] = '\0';
	if (memchr(text, '\0', len)) {
		snprintf(err, errlen, "failed to load state file %s: NUL byte (damaged file)", name);
		return -EINVAL;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		char buf[512], sname[CFG_ID_MAX + 2], pname[CFG_ID_MAX + 2];
		unsigned long long epoch, u;
		char *w[8], wbuf[512];
		int nw = -1, cnt;

		line++;
		if (!nl) {
			snprintf(err, errlen, "failed to load state file %s: line %d: no newline "
					      "(truncated file)", name, line);
			return -EINVAL;
		}
		if (have_end) {
			snprintf(err, errlen, "failed to load state file %s: line %d: data after "
					      "the end line", name, line);
			return -EINVAL;
		}
		if ((size_t)(nl - p) >= sizeof(buf)) {
			snprintf(err, errlen, "failed to load state file %s: line %d: too long",
				 name, line);
			return -EINVAL;
		}
		memcpy(buf, p, nl - p);
		buf[nl - p] = '\0';
		if (line == 1) {
			if (strcmp(buf, FO_STATE_MAGIC)) {
				snprintf(err, errlen, "failed to load state file %s: line 1: not a "
						      "flatline state file (want '%s')", name,
					 FO_STATE_MAGIC);
				return -EINVAL;
			}
		} else if (buf[0] == '#' || !buf[0]) {
			/* comment */
		} else if ((nw = split_words(memcpy(wbuf, buf, sizeof(wbuf)), w, 8)) == 3 && !strcmp(w[0], "end") &&
			   !parse_ull(w[1], 10, &u) && !parse_ull(w[2], 16, &want)) {
			cnt = (int)u;
			body_end = p;
			have_end = 1;
			if (cnt != nshard) {
				snprintf(err, errlen, "failed to load state file %s: line %d: %d "
						      "shard lines, the end line says %d", name,
					 line, nshard, cnt);
				return -EINVAL;
			}
		} else if (nw == 6 && !strcmp(w[0], "shard") && !strcmp(w[2], "epoch") &&
			   !parse_ull(w[3], 10, &epoch) && !strcmp(w[4], "primary") &&
			   strlen(w[1]) <= CFG_ID_MAX && strlen(w[5]) <= CFG_ID_MAX) {
			snprintf(sname, sizeof(sname), "%s", w[1]);
			snprintf(pname, sizeof(pname), "%s", w[5]);
			struct fo_shard *s = fo_find_shard(c, sname);
			struct fo_node *pn = strcmp(pname, "-") ? fo_find_node(c, pname) : NULL;

			nshard++;
			if (!s) {
				warn += snprintf(err + warn, warn < errlen ? errlen - warn : 0,
						 "%sstate file %s: shard %s is no longer in the "
						 "cluster file, ignored", warn ? "; " : "", name, sname);
			} else if (strcmp(pname, "-") && (!pn || pn->shard != s->idx)) {
				warn += snprintf(err + warn, warn < errlen ? errlen - warn : 0,
						 "%sstate file %s: node %s is not in shard %s any "
						 "more, primary unknown", warn ? "; " : "", name,
						 pname, sname);
				s->epoch = epoch;
			} else {
				s->epoch = epoch;
				s->primary = pn ? pn->idx : -1;
			}
		} else {
			snprintf(err, errlen, "failed to load state file %s: line %d: cannot parse "
					      "'%.80s'", name, line, buf);
			return -EINVAL;
		}
		p = nl + 1;
	}
	if (!have_end) {
		snprintf(err, errlen, "failed to load state file %s: no end line (truncated file)",
			 name);
		return -EINVAL;
	}
	crc = crc32(0, (const unsigned char *)text, body_end - text);
	if (crc != want) {
		snprintf(err, errlen, "failed to load state file %s: checksum mismatch (%08lx, "
				      "want %08llx): the file is damaged", name, crc, want);
		return -EINVAL;
	}
	return 0;
}

int fo_state_load(struct fo_cluster *c, const char *path, char *err, size_t errlen)
{
	char buf[65536];
	ssize_t n;
	size_t len = 0;
	int fd, rc;

	err[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		if (rc != -ENOENT)
			snprintf(err, errlen, "failed to open state file %s: %s", path,
				 strerror(errno));
		return rc;
	}
	while ((n = read(fd, buf + len, sizeof(buf) - len)) > 0) {
		len += n;
		if (len == sizeof(buf)) {
			close(fd);
			snprintf(err, errlen, "failed to load state file %s: larger than %zu bytes",
				 path, sizeof(buf) - 1);
			return -EFBIG;
		}
	}
	rc = n < 0 ? -errno : 0;
	close(fd);
	if (rc) {
		snprintf(err, errlen, "failed to read state file %s: %s", path, strerror(-rc));
		return rc;
	}
	return fo_state_parse(c, buf, len, path, err, errlen);
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int fo_state_save(const struct fo_cluster *c, const char *path, char *err, size_t errlen)
{
	char *buf, tmp[300], dir[300];
	size_t cap = 256 + (size_t)c->nshards * 200, len = 0;
	int fd = -1, dfd = -1, rc = 0;

	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	len += snprintf(buf + len, cap - len,
			FO_STATE_MAGIC "\n# written by the flatline controller; do not edit "
				       "while it runs\n");
	for (int i = 0; i < c->nshards; i++) {
		const struct fo_shard *s = &c->shards[i];

		len += snprintf(buf + len, cap - len, "shard %s epoch %llu primary %s\n", s->name,
				s->epoch, s->primary >= 0 ? c->nodes[s->primary].id : "-");
	}
	len += snprintf(buf + len, cap - len, "end %d %08lx\n", c->nshards,
			crc32(0, (const unsigned char *)buf, len));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "failed to create %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	rc = write_all(fd, buf, len);
	if (!rc && fsync(fd))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "failed to write %s: %s", tmp, strerror(-rc));
		goto cleanup;
	}
	if (close(fd)) {
		fd = -1;
		rc = -errno;
		snprintf(err, errlen, "failed to write %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	fd = -1;
	if (rename(tmp, path)) {
		rc = -errno;
		snprintf(err, errlen, "failed to rename %s to %s: %s", tmp, path, strerror(errno));
		goto cleanup;
	}
	/* The rename itself is durable only once the directory is synced. */
	snprintf(dir, sizeof(dir), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync(dfd);
cleanup:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	if (dfd >= 0)
		close(dfd);
	free(buf);
	return rc;
}
