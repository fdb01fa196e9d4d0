// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* HA mode (an [etcd] section): this controller's part in the election (ha.c) and
 * what follows from it. The leader acts (failovers, repairs, DNS) and writes every
 * change of shard state to etcd in a transaction fenced by its leader key; followers
 * observe (fo.starting: the rules run, nothing is started), take the shard state from
 * etcd (fo_adopt) and serve clients from it. A new leader first asks every server for
 * INFO (the same round as a start), so a promotion its predecessor made but did not
 * write is adopted at the next epoch rather than made twice. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/ha.h"
#include "controller/lease_admit.h"

#define CTL_HA_MEMBERS_MS 5000 /* etcd's member list, for status */
#define CTL_HA_STOP_MS	  1000 /* a clean stop waits this long for the lease revoke */

/* The module's state (c->ha_state); c->ha is ha.c's election, which every module
 * asks (ctl_may_act). */
struct ctl_ha_shard {
	char val[160]; /* the value this leader last wrote, "" none */
	bool unsure;   /* a write's outcome is unknown: read the record before the next */
	bool reading;  /* that read is in flight */
};

struct ctl_ha_state {
	struct ctl_ha_shard *shards;
	int nshards;
	bool was_leader;
	long long role_since_ms;
	char etcd_members[256]; /* etcd's member names, or why unknown */
	struct event *members_timer, *stop_timer;
	char addr[300];	    /* the address published in etcd (ha.c keeps the pointer) */
	char etcd_why[256]; /* why etcd is unavailable, "" when it answers */
};

static void ha_event(struct ctl *c, const char *kind, const char *why)
{
	struct evrec r;

	evrec_begin(&r, NULL, "controller", kind);
	evrec_str(&r, "controller_id", c->id);
	if (c->ha && ha_leader(c->ha)[0])
		evrec_str(&r, "leader", ha_leader(c->ha));
	evrec_str(&r, "reason", why);
	ctl_event(c, kind, &r);
}

static void on_role(void *ctx, enum ha_role role, const char *why)
{
	struct ctl *c = ctx;

	c->ha_state->role_since_ms = fl_mono_ms();
	for (int i = 0; i < c->ha_state->nshards; i++)
		c->ha_state->shards[i].val[0] = '\0'; /* a new term: write again */
	if (role == HA_LEADER) {
		/* The leader before us answered as leader only while its etcd lease surely
		 * lived, so before we could win: a lease it renewed ends by now + lease_ms. */
		c->fo.others_answered_until_ms = c->fo.now_ms(c->fo.ctx);
		/* Admission grants under this lead's term, above every leader's before:
		 * until an agent confirms one, every peer still counts (lease_admit.h). */
		fo_admit_set_term(&c->fo, FO_ADMIT_HA_TERM + ha_leader_revision(c->ha));
		pr_info("leading (%s): learning the servers' state before acting\n", why);
		ha_event(c, "leader_elected", why);
		c->ha_state->was_leader = true;
		/* Observe until the INFO round is in, as at a start. */
		c->fo.starting = true;
		ctl_discover_start(c);
		return;
	}
	c->fo.starting = true;	      /* a follower observes */
	fo_admit_set_term(&c->fo, 0); /* and grants nothing */
	if (c->ha_state->was_leader) {
		pr_warn("no longer leading: %s\n", why);
		ha_event(c, "leader_lost", why);
	} else {
		pr_info("following (%s)\n", why);
	}
	c->ha_state->was_leader = false;
}

/* "epoch <n> primary <id>" */
static int parse_shard_state(const char *v, unsigned long long *epoch, char *id, size_t idlen)
{
	char *end;
	size_t n;

	if (strncmp(v, "epoch ", 6) || !isdigit((unsigned char)v[6]))
		return -EINVAL;
	errno = 0;
	*epoch = strtoull(v + 6, &end, 10);
	if (errno || strncmp(end, " primary ", 9))
		return -EINVAL;
	end += 9;
	n = strcspn(end, " ");
	if (!n || n >= idlen || end[n])
		return -EINVAL;
	memcpy(id, end, n);
	id[n] = '\0';
	return 0;
}

static void on_value(void *ctx, const char *rel, const char *val, size_t len, bool deleted)
{
	struct ctl *c = ctx;
	struct fo_shard *s;
	struct fo_node *n;
	unsigned long long epoch;
	char id[CFG_ID_MAX + 1];

	(void)len;
	if (!strcmp(rel, "members")) {
		ctl_members_from_etcd(c, deleted ? NULL : val);
		return;
	}
	if (!deleted && !strncmp(rel, "runtime/", 8)) {
		ctl_runtime_from_etcd(c, rel + 8, val);
		return;
	}
	if (deleted || strncmp(rel, "shard/", 6))
		return;
	s = fo_find_shard(&c->fo, rel + 6);
	if (!s)
		return; /* a shard this cluster file does not have */
	if (parse_shard_state(val, &epoch, id, sizeof(id))) {
		pr_warn("etcd: %s: unreadable shard state '%.80s'\n", rel, val);
		return;
	}
	n = fo_find_node(&c->fo, id);
	if (!n) {
		pr_warn("etcd: %s: primary %s is not in this cluster file\n", rel, id);
		return;
	}
	if (ha_role(c->ha) == HA_LEADER && !c->fo.starting)
		return; /* our own write coming back */
	fo_adopt(&c->fo, s, n->idx, epoch);
}

static void on_health(void *ctx, bool ok, const char *why)
{
	struct ctl *c = ctx;

	snprintf(c->ha_state->etcd_why, sizeof(c->ha_state->etcd_why), "%s", ok ? "" : why);
	ha_event(c, ok ? "etcd_available" : "etcd_unavailable", ok ? "etcd answers again" : why);
}

static const struct ha_ops ha_ops = {
    .on_role = on_role, .on_value = on_value, .on_health = on_health};

/* ---- etcd's members, for status ---- */

static void on_members(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct ctl *c = ctx;
	struct json_object *ms, *m, *v;

	if (err) {
		snprintf(c->ha_state->etcd_members, sizeof(c->ha_state->etcd_members),
			 "unknown (%s)", msg);
		return;
	}
	c->ha_state->etcd_members[0] = '\0';
	if (!json_object_object_get_ex(resp, "members", &ms))
		return;
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		size_t used = strlen(c->ha_state->etcd_members);

		m = json_object_array_get_idx(ms, i);
		snprintf(c->ha_state->etcd_members + used, sizeof(c->ha_state->etcd_members) - used,
			 "%s%s", used ? " " : "",
			 json_object_object_get_ex(m, "name", &v) ? json_object_get_string(v)
								  : "?");
	}
}

static void on_members_timer(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;

	(void)fd;
	(void)what;
	etcd_call(ha_etcd(c->ha), "/v3/cluster/member/list", json_object_new_object(), 0,
		  on_members, c);
}

/* ---- the state ---- */

/* One write or read in flight for a shard. */
struct ha_write {
	struct ctl *c;
	int shard, node;
	unsigned long long epoch;
	bool record; /* ctl_ha_record's (answers the machine) */
	int64_t sent_ns;
	char val[160];
};

static struct ctl_ha_shard *ha_shard(struct ctl *c, int shard)
{
	return shard >= 0 && shard < c->ha_state->nshards ? &c->ha_state->shards[shard] : NULL;
}

static void on_reread(void *ctx, int err, const char *msg, const char *val)
{
	struct ha_write *w = ctx;
	struct ctl *c = w->c;
	struct ctl_ha_shard *hs = c->ha_state ? ha_shard(c, w->shard) : NULL;
	struct fo_shard *s = &c->fo.shards[w->shard];
	unsigned long long epoch = 0;
	char id[CFG_ID_MAX + 1];

	free(w);
	if (!hs)
		return;
	hs->reading = false;
	if (err) {
		pr_warn("etcd: reading shard/%s again failed: %s (read again before the next "
			"promotion)\n",
			s->name, msg);
		return;
	}
	if (val && !parse_shard_state(val, &epoch, id, sizeof(id)) && epoch > s->epoch_floor)
		s->epoch_floor = epoch;
	hs->unsure = false;
	pr_info("etcd: shard/%s holds '%s': the next promotion takes an epoch above %llu\n",
		s->name, val ? val : "(nothing)",
		s->epoch > s->epoch_floor ? s->epoch : s->epoch_floor);
}

/* After a write of unknown outcome: read the record again before the next one. */
static void reread(struct ctl *c, int shard)
{
	struct ctl_ha_shard *hs = ha_shard(c, shard);
	struct ha_write *w;
	char key[128];

	if (!hs || hs->reading)
		return;
	w = calloc(1, sizeof(*w));
	if (!w)
		return;
	w->c = c;
	w->shard = shard;
	snprintf(key, sizeof(key), "shard/%s", c->fo.shards[shard].name);
	if (ha_get(c->ha, key, on_reread, w)) {
		free(w);
		return;
	}
	hs->reading = true;
}

static void on_put(void *ctx, int err, const char *msg)
{
	struct ha_write *w = ctx;
	struct ctl *c = w->c;
	struct ctl_ha_shard *hs = c->ha_state ? ha_shard(c, w->shard) : NULL;
	struct fo_shard *s = &c->fo.shards[w->shard];

	if (!err) {
		if (w->epoch > s->epoch_floor)
			s->epoch_floor = w->epoch;
		if (hs)
			snprintf(hs->val, sizeof(hs->val), "%s", w->val);
	} else {
		pr_warn("failed to write shard state to etcd: %s\n", msg);
		if (hs && err != -ESTALE) {
			/* It may have been applied all the same. */
			hs->unsure = true;
			hs->val[0] = '\0';
			reread(c, w->shard);
		}
	}
	if (w->record) {
		int64_t took_us = (fl_mono_ns() - w->sent_ns) / 1000;

		fo_on_record(&c->fo, s, w->node, w->epoch, !err,
			     err == -ESTALE ? "not the leader any more" : msg);
		if (!err) /* after the promotion went out */
			pr_info("etcd: recorded shard/%s = '%s' in %lld.%03lld ms\n", s->name,
				w->val, (long long)took_us / 1000, (long long)took_us % 1000);
	}
	free(w);
}

static int write_state(struct ctl *c, int shard, int node, unsigned long long epoch, bool record)
{
	const struct fo_shard *s = &c->fo.shards[shard];
	struct ctl_ha_shard *hs = ha_shard(c, shard);
	struct ha_write *w;
	char key[128];
	int err;

	if (hs && hs->unsure) {
		reread(c, shard);
		pr_warn("not writing shard/%s to etcd: the outcome of the last write is unknown "
			"(reading it again)\n",
			s->name);
		return -EAGAIN;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->c = c;
	w->shard = shard;
	w->node = node;
	w->epoch = epoch;
	w->record = record;
	snprintf(key, sizeof(key), "shard/%s", s->name);
	snprintf(w->val, sizeof(w->val), "epoch %llu primary %s", epoch, c->fo.nodes[node].id);
	if (!record && hs && !strcmp(hs->val, w->val)) {
		free(w); /* recorded before the promotion already */
		return 0;
	}
	w->sent_ns = fl_mono_ns();
	err = ha_put(c->ha, key, w->val, strlen(w->val), on_put, w);
	if (err) {
		pr_warn("failed to write shard state to etcd: %s\n",
			err == -ESTALE ? "not the leader" : strerror(-err));
		free(w);
	}
	return err;
}

int ctl_ha_save(struct ctl *c, int shard)
{
	const struct fo_shard *s = &c->fo.shards[shard];

	if (s->primary < 0)
		return 0;
	return write_state(c, shard, s->primary, s->epoch, false);
}

int ctl_ha_record(struct ctl *c, int shard, int node, unsigned long long epoch)
{
	return write_state(c, shard, node, epoch, true);
}

/* ---- start and stop ---- */

int ctl_ha_start(struct ctl *c, const char *addr)
{
	const struct cfg *cfg = c->cfg;
	struct ha_opts o = {0};
	struct timeval tv = fl_ms_tv(CTL_HA_MEMBERS_MS);

	o.etcd.n_endpoints = cfg->etcd.nendpoints;
	for (int i = 0; i < cfg->etcd.nendpoints; i++)
		o.etcd.endpoints[i] = cfg->etcd.endpoints[i];
	o.etcd.user = cfg->etcd.user;
	o.etcd.password = cfg->etcd.password;
	o.etcd.cacert = cfg->etcd.cacert[0] ? cfg->etcd.cacert : NULL;
	o.etcd.cert = cfg->etcd.cert[0] ? cfg->etcd.cert : NULL;
	o.etcd.key = cfg->etcd.key[0] ? cfg->etcd.key : NULL;
	o.etcd.timeout_ms = cfg->etcd.timeout_ms;
	o.prefix = cfg->etcd.prefix;
	o.id = c->id;
	o.lease_ms = cfg->etcd.lease_ms;
	c->ha_state = calloc(1, sizeof(*c->ha_state));
	if (!c->ha_state)
		return -ENOMEM;
	snprintf(c->ha_state->addr, sizeof(c->ha_state->addr), "%s", addr);
	o.listen = c->ha_state->addr;
	c->ha_state->shards = calloc(ctl_shard_room(c) + 1, sizeof(struct ctl_ha_shard));
	if (!c->ha_state->shards)
		return -ENOMEM;
	c->ha_state->nshards = ctl_shard_room(c); /* shards added at runtime have theirs */
	c->fo.record_first = true;		  /* ctl_ha_record */
	c->ha = ha_new(c->base, &o, &ha_ops, c);
	c->ha_state->members_timer = event_new(c->base, -1, EV_PERSIST, on_members_timer, c);
	if (!c->ha || !c->ha_state->members_timer) {
		pr_warn("failed to set up the etcd client\n");
		return -ENOMEM;
	}
	snprintf(c->ha_state->etcd_members, sizeof(c->ha_state->etcd_members),
		 "unknown (not asked yet)");
	event_add(c->ha_state->members_timer, &tv);
	event_active(c->ha_state->members_timer, EV_TIMEOUT, 0);
	return ha_start(c->ha);
}

static void on_stopped(void *ctx)
{
	struct ctl *c = ctx;

	event_base_loopbreak(c->base);
}

static void on_stop_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	on_stopped(arg);
}

bool ctl_ha_stop(struct ctl *c)
{
	struct timeval tv = fl_ms_tv(CTL_HA_STOP_MS);

	if (!c->ha || c->ha_state->stop_timer)
		return false; /* not HA, or stopping already */
	c->ha_state->stop_timer = evtimer_new(c->base, on_stop_timeout, c);
	if (c->ha_state->stop_timer)
		evtimer_add(c->ha_state->stop_timer, &tv);
	ha_stop(c->ha, on_stopped, c);
	return true;
}

void ctl_ha_free(struct ctl *c)
{
	if (c->ha_state && c->ha_state->members_timer)
		event_free(c->ha_state->members_timer);
	if (c->ha_state && c->ha_state->stop_timer)
		event_free(c->ha_state->stop_timer);
	ha_free(c->ha);
	c->ha = NULL;
	if (c->ha_state)
		free(c->ha_state->shards);
	free(c->ha_state);
	c->ha_state = NULL;
}

/* ---- what clients and status see ---- */

int ctl_ha_controllers(const struct ctl *c, const char **ids, const char **addrs, int max)
{
	return c->ha ? ha_controllers(c->ha, ids, addrs, max) : 0;
}

const char *ctl_ha_etcd_why(const struct ctl *c)
{
	return c->ha_state ? c->ha_state->etcd_why : "";
}

void ctl_ha_status(const struct ctl *c, struct ctl_ha_view *v)
{
	memset(v, 0, sizeof(*v));
	if (!c->ha)
		return;
	v->enabled = true;
	v->role = ha_role_name(ha_role(c->ha));
	v->leader = ha_leader(c->ha);
	v->may_act = ha_may_act(c->ha, fl_mono_ms());
	v->deadline_in_ms = v->may_act ? ha_deadline_ms(c->ha) - fl_mono_ms() : 0;
	v->revision = ha_revision(c->ha);
	v->etcd_ok = !c->ha_state->etcd_why[0];
	v->etcd_why = c->ha_state->etcd_why;
	v->etcd_members = c->ha_state->etcd_members;
	v->endpoint = etcd_endpoint(ha_etcd(c->ha));
	v->nctls = ha_controllers(c->ha, v->ctl_ids, v->ctl_addrs, CFG_MAX_CTLS * 2);
}
