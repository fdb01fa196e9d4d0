// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `flatline import --sentinel HOST:PORT`: what a running Sentinel says about its
 * masters (import.h). Blocking hiredis with a connect and a read timeout: a Sentinel
 * that does not answer costs timeout_ms per step, one that answers something else than
 * a Sentinel's replies is an error that says which command and what came back. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <hiredis/hiredis.h>
#include "cli/import.h"
#include "common/config.h"

struct live {
	redisContext *rc;
	const char *at;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int lfail(struct live *l, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(l->err, l->errlen, "failed to import from %s: %s", l->at, msg);
	return -EPROTO;
}

/* A reply in a message: its type and the start of its text. */
static const char *what_came(const redisReply *r, char *buf, size_t len)
{
	if (!r)
		return "no reply";
	if (r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS ||
	    r->type == REDIS_REPLY_STRING)
		snprintf(buf, len, "%s '%.100s'", r->type == REDIS_REPLY_ERROR ? "error" : "string",
			 r->str);
	else if (r->type == REDIS_REPLY_ARRAY)
		snprintf(buf, len, "an array of %zu", r->elements);
	else
		snprintf(buf, len, "a reply of type %d", r->type);
	return buf;
}

/* A Sentinel's description of an instance: a flat array of field, value strings. */
static bool is_fields(const redisReply *r)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements % 2)
		return false;
	for (size_t i = 0; i < r->elements; i++)
		if (r->element[i]->type != REDIS_REPLY_STRING &&
		    r->element[i]->type != REDIS_REPLY_STATUS)
			return false;
	return true;
}

static const char *field(const redisReply *r, const char *name)
{
	for (size_t i = 0; i + 1 < r->elements; i += 2)
		if (!strcmp(r->element[i]->str, name))
			return r->element[i + 1]->str;
	return NULL;
}

static bool to_num(const char *s, long long min, long long max, long long *out)
{
	char *end;

	if (!s || !*s)
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return !errno && !*end && *out >= min && *out <= max;
}

/* ip and port of an instance description into a. */
static int addr_of(struct live *l, const char *cmd, const redisReply *r, struct sc_addr *a)
{
	const char *ip = field(r, "ip");
	long long port;

	if (!ip || !ip[0] || strlen(ip) >= sizeof(a->host) ||
	    !to_num(field(r, "port"), 1, 65535, &port))
		return lfail(l, "%s: an instance without a valid ip and port", cmd);
	snprintf(a->host, sizeof(a->host), "%s", ip);
	a->port = (int)port;
	a->priority = -1;
	return 0;
}

static redisReply *ask(struct live *l, const char *cmd, const char *arg)
{
	redisReply *r = arg ? redisCommand(l->rc, "SENTINEL %s %s", cmd, arg)
			    : redisCommand(l->rc, "SENTINEL %s", cmd);

	if (!r)
		lfail(l, "SENTINEL %s: %s", cmd,
		      l->rc->err == REDIS_ERR_IO &&
			      (errno == EAGAIN || errno == EWOULDBLOCK ||
			       strstr(l->rc->errstr, "temporarily unavailable") ||
			       strstr(l->rc->errstr, "timed out"))
			  ? "no answer in time"
			  : l->rc->errstr);
	return r;
}

/* One of a master's lists: REPLICAS (SLAVES before Redis 5) or SENTINELS. */
static int members(struct live *l, struct sc_master *m, bool sentinels)
{
	const char *cmd = sentinels ? "SENTINELS" : "REPLICAS";
	redisReply *r = ask(l, cmd, m->name);
	char buf[160];
	int rc = 0;

	if (r && !sentinels && r->type == REDIS_REPLY_ERROR) {
		freeReplyObject(r);
		cmd = "SLAVES";
		r = ask(l, cmd, m->name);
	}
	if (!r)
		return -EPROTO;
	if (r->type != REDIS_REPLY_ARRAY) {
		rc = lfail(l, "SENTINEL %s %.60s: not a Sentinel's reply (%s)", cmd, m->name,
			   what_came(r, buf, sizeof(buf)));
		goto out;
	}
	for (size_t i = 0; i < r->elements && !rc; i++) {
		const redisReply *e = r->element[i];
		struct sc_addr a = {0};
		long long prio;
		const char *s;

		if (!is_fields(e)) {
			rc = lfail(l, "SENTINEL %s %.60s: not a Sentinel's reply (element %zu: %s)",
				   cmd, m->name, i, what_came(e, buf, sizeof(buf)));
			break;
		}
		rc = addr_of(l, cmd, e, &a);
		if (rc)
			break;
		if (sentinels) {
			s = field(e, "runid");
			snprintf(a.runid, sizeof(a.runid), "%s", s ? s : "");
			if (m->nsentinels < SC_MAX_SENTINELS)
				m->sentinels[m->nsentinels++] = a;
			continue;
		}
		s = field(e, "slave-priority");
		if (!s)
			s = field(e, "replica-priority");
		if (s && to_num(s, 0, 1000000, &prio))
			a.priority = (int)prio;
		if (m->nreplicas == SC_MAX_REPLICAS) {
			rc = lfail(l, "master %.60s: more than %d replicas", m->name,
				   SC_MAX_REPLICAS);
			break;
		}
		m->replicas[m->nreplicas++] = a;
	}
out:
	freeReplyObject(r);
	return rc;
}

/* A setting of SENTINEL MASTERS, if it is there and a number. */
static void setting(const redisReply *r, const char *name, struct sc_num *n)
{
	long long v;

	if (to_num(field(r, name), 0, LLONG_MAX, &v)) {
		n->v = v;
		n->line = -1;
	}
}

static int masters(struct live *l, struct sc_conf *c)
{
	redisReply *r = ask(l, "MASTERS", NULL);
	char buf[160];
	int rc = 0;

	if (!r)
		return -EPROTO;
	if (r->type == REDIS_REPLY_ERROR) {
		rc = lfail(l, "SENTINEL MASTERS: %s (is it a Sentinel?)",
			   what_came(r, buf, sizeof(buf)));
		goto out;
	}
	if (r->type != REDIS_REPLY_ARRAY) {
		rc = lfail(l, "SENTINEL MASTERS: not a Sentinel's reply (%s)",
			   what_came(r, buf, sizeof(buf)));
		goto out;
	}
	for (size_t i = 0; i < r->elements && !rc; i++) {
		const redisReply *e = r->element[i];
		struct sc_master *m;
		const char *name;
		long long q;

		if (!is_fields(e) || !(name = field(e, "name")) || !name[0] ||
		    strlen(name) >= sizeof(m->name)) {
			rc = lfail(l, "SENTINEL MASTERS: not a Sentinel's reply (element %zu: %s)",
				   i, what_came(e, buf, sizeof(buf)));
			break;
		}
		if (sc_find_master(c, name)) {
			rc = lfail(l, "SENTINEL MASTERS: master '%.60s' twice", name);
			break;
		}
		if (c->nmasters == SC_MAX_MASTERS) {
			rc = lfail(l, "SENTINEL MASTERS: more than %d masters", SC_MAX_MASTERS);
			break;
		}
		m = &c->masters[c->nmasters];
		memset(m, 0, sizeof(*m));
		snprintf(m->name, sizeof(m->name), "%s", name);
		rc = addr_of(l, "SENTINEL MASTERS", e, &m->addr);
		if (rc)
			break;
		m->quorum = to_num(field(e, "quorum"), 1, 1000000, &q) ? (int)q : 0;
		setting(e, "down-after-milliseconds", &m->down_after_ms);
		setting(e, "failover-timeout", &m->failover_timeout_ms);
		setting(e, "parallel-syncs", &m->parallel_syncs);
		setting(e, "config-epoch", &m->config_epoch);
		setting(e, "master-reboot-down-after-period", &m->reboot_down_after_ms);
		c->nmasters++;
	}
out:
	freeReplyObject(r);
	if (!rc && !c->nmasters)
		rc = lfail(l, "SENTINEL MASTERS: the Sentinel monitors no master");
	for (int i = 0; !rc && i < c->nmasters; i++) {
		rc = members(l, &c->masters[i], false);
		if (!rc)
			rc = members(l, &c->masters[i], true);
	}
	return rc;
}

int import_live(struct sc_conf *c, const char *hostport, int timeout_ms, const char *user,
		const char *pass, char *err, size_t errlen)
{
	struct timeval tv = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000};
	struct live l = {.at = hostport, .err = err, .errlen = errlen};
	struct cfg_endpoint ep;
	char buf[160];
	int rc;

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", hostport);
	c->live = true;
	c->resolve_hostnames = c->announce_hostnames = c->deny_scripts_reconfig = -1;
	if (cfg_parse_endpoint(hostport, &ep, 26379) || ep.unix_path[0]) {
		snprintf(err, errlen, "failed to import from %s: not host:port", hostport);
		return -EINVAL;
	}
	l.rc = redisConnectWithTimeout(ep.host, ep.port, tv);
	if (!l.rc || l.rc->err) {
		snprintf(err, errlen, "failed to import from %s: failed to connect: %s", hostport,
			 !l.rc						     ? "out of memory"
			 : l.rc->err == REDIS_ERR_IO && errno == EINPROGRESS ? "no answer in time"
									     : l.rc->errstr);
		rc = -ECONNREFUSED;
		goto cleanup;
	}
	redisSetTimeout(l.rc, tv);
	if (pass && pass[0]) {
		redisReply *r = user && user[0] ? redisCommand(l.rc, "AUTH %s %s", user, pass)
						: redisCommand(l.rc, "AUTH %s", pass);

		if (!r || r->type == REDIS_REPLY_ERROR) {
			rc = lfail(&l, "AUTH: %s",
				   r ? what_came(r, buf, sizeof(buf)) : l.rc->errstr);
			freeReplyObject(r);
			goto cleanup;
		}
		freeReplyObject(r);
	}
	rc = masters(&l, c);
	/* The Sentinel asked is one clients know: its address as they dial it. */
	snprintf(c->announce_ip.v, sizeof(c->announce_ip.v), "%s", ep.host);
	c->announce_ip.line = -1;
	c->announce_port.v = ep.port;
	c->announce_port.line = -1;
cleanup:
	if (l.rc)
		redisFree(l.rc);
	return rc;
}
