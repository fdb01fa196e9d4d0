// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Runtime membership: nodes and shards added and removed while the controller runs
 * (FLATLINE NODE/SHARD, SENTINEL MONITOR/REMOVE/RESET: ctl_members_cmd.c). The
 * cluster file bootstraps; a change is made first in the cfg (the controller's own,
 * with room for node_cap nodes and shard_cap shards, so nothing moves), kept, then
 * applied to the failover model and the modules that keep a slot per node or shard:
 *   one controller: the state file's "member" lines, written (fsync) before the
 *                   change is made (a write that fails takes it back);
 *   HA mode:        one etcd key, <prefix>members, every line of it, written in a
 *                   transaction that holds only if no other controller changed it
 *                   since this one last saw it; every controller applies what the
 *                   watch brings (ctl_members_from_etcd), this one included.
 * A node removed, or a shard, is a tombstone: its index stays, nothing looks it up,
 * and the same id added again takes the slot back. The scan of the primaries' INFO
 * is ctl_members_scan.c's, the layer above: nothing here calls it but the after_info
 * it registered. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include "common/log.h"
#include "controller/ctl.h"
#include "controller/ctl_members.h"
#include "controller/etcd.h"

/* ---- the cfg: every change starts here ---- */

int ctl_members_reserve(struct cfg *cfg)
{
	int ncap = cfg->nnodes + CTL_MEMBERS_ROOM, scap = cfg->nshards + CTL_MEMBERS_ROOM / 4;
	struct cfg_node *nodes;
	struct cfg_shard *shards;

	if (cfg->node_cap >= ncap && cfg->shard_cap >= scap)
		return 0;
	nodes = realloc(cfg->nodes, ncap * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	cfg->nodes = nodes;
	memset(nodes + cfg->nnodes, 0, (ncap - cfg->nnodes) * sizeof(*nodes));
	cfg->node_cap = ncap;
	shards = realloc(cfg->shards, scap * sizeof(*shards));
	if (!shards)
		return -ENOMEM;
	cfg->shards = shards;
	memset(shards + cfg->nshards, 0, (scap - cfg->nshards) * sizeof(*shards));
	cfg->shard_cap = scap;
	return 0;
}

int ctl_members_cfg_node(const struct cfg *cfg, const char *id)
{
	for (int i = 0; i < cfg->nnodes; i++)
		if (!strcmp(cfg->nodes[i].id, id))
			return i;
	return -1;
}

int ctl_members_cfg_shard(const struct cfg *cfg, const char *name)
{
	for (int i = 0; i < cfg->nshards; i++)
		if (!strcmp(cfg->shards[i].name, name))
			return i;
	return -1;
}

static int list_add(struct cfg_shard *s, int node)
{
	int *n = realloc(s->nodes, (s->nnodes + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	s->nodes = n;
	s->nodes[s->nnodes++] = node;
	return 0;
}

static void list_del(struct cfg_shard *s, int node)
{
	for (int k = 0; k < s->nnodes; k++)
		if (s->nodes[k] == node) {
			memmove(&s->nodes[k], &s->nodes[k + 1], (s->nnodes - k - 1) * sizeof(int));
			s->nnodes--;
			return;
		}
}

/* An entry into cfg: the index of the node or shard it names, or -errno and why. */
int ctl_members_cfg_apply(struct cfg *cfg, const struct mb_entry *e, char *why, size_t whylen)
{
	int i, s;

	switch (e->kind) {
	case MB_SHARD:
		i = ctl_members_cfg_shard(cfg, e->id);
		if (i >= 0 && !cfg->shards[i].removed) {
			snprintf(why, whylen, "shard %s exists", e->id);
			return -EEXIST;
		}
		if (i < 0) {
			if (cfg->nshards >= cfg->shard_cap) {
				snprintf(why, whylen,
					 "no room for another shard (%d): restart the "
					 "controller to make more",
					 cfg->shard_cap);
				return -ENOSPC;
			}
			i = cfg->nshards++;
			memset(&cfg->shards[i], 0, sizeof(cfg->shards[i]));
			snprintf(cfg->shards[i].name, sizeof(cfg->shards[i].name), "%s", e->id);
			cfg->shards[i].runtime = true;
			mb_shard_defaults(&cfg->shards[i]);
		}
		cfg->shards[i].removed = false;
		cfg->shards[i].discover = e->discover;
		snprintf(cfg->shards[i].dns_name, sizeof(cfg->shards[i].dns_name), "%s",
			 e->dns_name);
		return i;
	case MB_NODE: {
		struct cfg_node *n;
		struct cfg_endpoint ep;

		s = ctl_members_cfg_shard(cfg, e->shard);
		if (s < 0 || cfg->shards[s].removed) {
			snprintf(why, whylen, "no shard %s", e->shard);
			return -ENOENT;
		}
		if (!e->spare && cfg->shards[s].nnodes >= FO_MAX_SHARD_NODES) {
			snprintf(why, whylen, "shard %s has %d nodes, the most a shard may have",
				 e->shard, FO_MAX_SHARD_NODES);
			return -E2BIG;
		}
		if (cfg_parse_endpoint(e->redis, &ep, 6379)) {
			snprintf(why, whylen, "redis '%.60s': not HOST:PORT", e->redis);
			return -EINVAL;
		}
		i = ctl_members_cfg_node(cfg, e->id);
		if (i >= 0 && !cfg->nodes[i].removed) {
			snprintf(why, whylen, "node %s exists", e->id);
			return -EEXIST;
		}
		if (i < 0) {
			if (cfg->nnodes >= cfg->node_cap) {
				snprintf(why, whylen,
					 "no room for another node (%d): restart the controller "
					 "to make more",
					 cfg->node_cap);
				return -ENOSPC;
			}
			i = cfg->nnodes++;
			memset(&cfg->nodes[i], 0, sizeof(cfg->nodes[i]));
		}
		n = &cfg->nodes[i];
		if (!n->line) { /* a node of the file keeps what the file says of it */
			snprintf(n->id, sizeof(n->id), "%s", e->id);
			n->runtime = true;
		}
		/* What the entry says wins (a file's node revived takes its values). */
		snprintf(n->address, sizeof(n->address), "%s", e->address);
		snprintf(n->redis_str, sizeof(n->redis_str), "%s", e->redis);
		n->redis = ep;
		n->priority = e->priority;
		n->spare = e->spare;
		snprintf(n->spare_for, sizeof(n->spare_for), "%s", e->spare ? e->shard : "");
		n->shard = e->spare ? -1 : s;
		n->removed = false;
		if (!e->spare && list_add(&cfg->shards[s], i)) {
			n->removed = true;
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		return i;
	}
	case MB_ATTACH:
		return mb_cfg_attach(cfg, e, why, whylen);
	case MB_DROP_NODE:
		i = ctl_members_cfg_node(cfg, e->id);
		if (i < 0 || cfg->nodes[i].removed) {
			snprintf(why, whylen, "no node %s", e->id);
			return -ENOENT;
		}
		if (cfg->nodes[i].shard >= 0)
			list_del(&cfg->shards[cfg->nodes[i].shard], i);
		cfg->nodes[i].removed = true;
		return i;
	case MB_DROP_SHARD:
		i = ctl_members_cfg_shard(cfg, e->id);
		if (i < 0 || cfg->shards[i].removed) {
			snprintf(why, whylen, "no shard %s", e->id);
			return -ENOENT;
		}
		/* Its nodes go with it (each is also said by its own line). */
		for (int k = 0; k < cfg->nnodes; k++)
			if (!cfg->nodes[k].removed &&
			    (cfg->nodes[k].shard == i ||
			     (cfg->nodes[k].spare && !strcmp(cfg->nodes[k].spare_for, e->id))))
				cfg->nodes[k].removed = true;
		cfg->shards[i].nnodes = 0;
		cfg->shards[i].removed = true;
		return i;
	}
	snprintf(why, whylen, "unknown entry");
	return -EINVAL;
}

/* ---- start-up: the state file's lines into the cfg ---- */

struct prep {
	struct cfg *cfg;
	const char *path;
	int n;
};

static int prep_line(void *ctx, const char *line)
{
	struct prep *p = ctx;
	struct mb_entry e;
	char why[200];

	if (mb_parse(line, &e, why, sizeof(why))) {
		pr_warn("state file %s: member %s: %s\n", p->path, line, why);
		return -EINVAL;
	}
	/* A drop of what the file has no more, or an add the file has now: said, and
	 * the file wins. */
	if (ctl_members_cfg_apply(p->cfg, &e, why, sizeof(why)) < 0)
		pr_warn("state file %s: member %s: %s (skipped)\n", p->path, line, why);
	else
		p->n++;
	return 0;
}

int ctl_members_prepare(struct cfg *cfg, const char *state_file, char *err, size_t errlen)
{
	struct prep p = {cfg, state_file, 0};
	int rc = ctl_members_reserve(cfg);

	err[0] = '\0';
	if (rc || !state_file || !state_file[0])
		return rc;
	rc = fo_state_members(state_file, prep_line, &p, err, errlen);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	if (p.n)
		pr_info("state file %s: %d membership change(s) made at runtime, over the "
			"cluster file\n",
			state_file, p.n);
	return 0;
}

/* ---- the module ---- */

struct snap {
	struct cfg_node *nodes;
	struct cfg_shard *shards;
	int nnodes, nshards;
};

static int snap_take(const struct cfg *cfg, struct snap *s)
{
	s->nnodes = cfg->nnodes;
	s->nshards = cfg->nshards;
	s->nodes = malloc((cfg->nnodes + 1) * sizeof(*s->nodes));
	s->shards = calloc(cfg->nshards + 1, sizeof(*s->shards));
	if (!s->nodes || !s->shards)
		goto fail;
	memcpy(s->nodes, cfg->nodes, cfg->nnodes * sizeof(*s->nodes));
	memcpy(s->shards, cfg->shards, cfg->nshards * sizeof(*s->shards));
	for (int i = 0; i < cfg->nshards; i++) {
		s->shards[i].nodes = malloc((cfg->shards[i].nnodes + 1) * sizeof(int));
		if (!s->shards[i].nodes)
			goto fail;
		memcpy(s->shards[i].nodes, cfg->shards[i].nodes,
		       cfg->shards[i].nnodes * sizeof(int));
	}
	return 0;
fail:
	for (int i = 0; s->shards && i < s->nshards; i++)
		free(s->shards[i].nodes);
	free(s->nodes);
	free(s->shards);
	return -ENOMEM;
}

/* cfg as it was (the snapshot is used up); the model's shards take their node
 * lists again (those were reallocated). */
static void snap_restore(struct ctl *c, struct snap *s)
{
	struct cfg *cfg = c->cfg;

	for (int i = 0; i < cfg->nshards; i++)
		free(cfg->shards[i].nodes);
	memcpy(cfg->nodes, s->nodes, s->nnodes * sizeof(*s->nodes));
	memcpy(cfg->shards, s->shards, s->nshards * sizeof(*s->shards));
	for (int i = s->nshards; i < cfg->nshards; i++)
		memset(&cfg->shards[i], 0, sizeof(cfg->shards[i]));
	cfg->nnodes = s->nnodes;
	cfg->nshards = s->nshards;
	free(s->nodes);
	free(s->shards);
	for (int i = 0; i < c->fo.nshards && i < cfg->nshards; i++)
		if (!c->fo.shards[i].removed)
			fo_shard_sync(&c->fo, i);
}

static void snap_free(struct snap *s)
{
	for (int i = 0; i < s->nshards; i++)
		free(s->shards[i].nodes);
	free(s->nodes);
	free(s->shards);
}

static void say(struct ctl *c, const char *kind, const char *by, const struct cfg_node *n,
		const struct cfg_shard *s)
{
	struct evrec r;

	evrec_begin(&r, NULL, "controller", kind);
	if (n) {
		evrec_str(&r, "instance", n->id);
		evrec_str(&r, "shard", n->spare ? n->spare_for : s ? s->name : "");
		evrec_str(&r, "address", n->address);
		evrec_str(&r, "redis", n->redis_str);
		evrec_int(&r, "priority", n->priority);
		evrec_bool(&r, "spare", n->spare);
		evrec_str(&r, "source", n->runtime ? "runtime" : "file");
	} else if (s) {
		evrec_str(&r, "shard", s->name);
		if (s->dns_name[0])
			evrec_str(&r, "dns_name", s->dns_name);
		evrec_str(&r, "source", s->runtime ? "runtime" : "file");
	}
	if (by && by[0])
		evrec_str(&r, "by", by);
	ctl_event(c, kind, &r);
}

/* The model and the modules made to match cfg: nodes and shards removed there are
 * dropped, those added are set up. by: who asked ("" from etcd or the start). */
static bool sync_live(struct ctl *c, const char *by)
{
	struct cfg *cfg = c->cfg;
	struct fo_cluster *fo = &c->fo;
	bool postponed = false;

	for (int i = 0; i < fo->nnodes; i++) {
		struct fo_node *n = &fo->nodes[i];
		int was = n->shard;

		if (!cfg->nodes[i].removed || (n->flags & FO_N_REMOVED))
			continue;
		if (was >= 0 && fo->shards[was].primary == i && !cfg->shards[was].removed &&
		    !list_add(&cfg->shards[was], i)) {
			/* HA mode: asked of a controller that did not know it was promoted
			 * meanwhile. A primary is never removed: kept until it is not. */
			cfg->nodes[i].removed = false;
			if (!c->members->postponed)
				pr_warn("not removing node %s yet: it is the primary of shard %s "
					"(removed once it is not)\n",
					n->id, fo->shards[was].name);
			postponed = true;
			continue;
		}
		ctl_agents_node_drop(c, i);
		ctl_server_drop(c, i);
		fo_node_drop(fo, i);
		say(c, "node_removed", by, &cfg->nodes[i], was >= 0 ? &cfg->shards[was] : NULL);
	}
	for (int i = 0; i < fo->nshards; i++) {
		if (!cfg->shards[i].removed || fo->shards[i].removed)
			continue;
		ctl_shard_timer_set(c, i, -1);
		fo_shard_drop(fo, i);
		say(c, "shard_removed", by, NULL, &cfg->shards[i]);
	}
	for (int i = 0; i < cfg->nshards; i++) {
		if (cfg->shards[i].removed || (i < fo->nshards && !fo->shards[i].removed))
			continue;
		if (fo_shard_setup(fo, i) || ctl_shard_timer_add(c, i)) {
			pr_warn("failed to set up shard %s: out of memory\n", cfg->shards[i].name);
			continue;
		}
		say(c, "shard_added", by, NULL, &cfg->shards[i]);
	}
	for (int i = 0; i < cfg->nnodes; i++) {
		if (cfg->nodes[i].removed ||
		    (i < fo->nnodes && !(fo->nodes[i].flags & FO_N_REMOVED)))
			continue;
		if (fo_node_setup(fo, i)) {
			pr_warn("failed to set up node %s: no room\n", cfg->nodes[i].id);
			continue;
		}
		c->nnodes = fo->nnodes;
		if (ctl_server_add(c, i))
			pr_warn("failed to connect to node %s's server: out of memory\n",
				cfg->nodes[i].id);
		say(c, "node_added", by, &cfg->nodes[i],
		    cfg->nodes[i].shard >= 0 ? &cfg->shards[cfg->nodes[i].shard] : NULL);
		/* What it is: the evaluator repairs it (REPLICAOF the primary) if need be. */
		ctl_server_discover(c, i, 1000, c->members->after_info);
	}
	for (int i = 0; i < fo->nshards; i++)
		if (!fo->shards[i].removed)
			fo_shard_sync(fo, i);
	c->nnodes = fo->nnodes;
	ctl_changed(c);
	c->members->postponed = postponed;
	return postponed;
}

/* ---- checks ---- */

int ctl_members_check(struct ctl *c, const struct mb_entry *e, char *why, size_t whylen)
{
	struct fo_node *n;
	struct fo_shard *s;
	struct cfg_endpoint ep;

	switch (e->kind) {
	case MB_SHARD:
		if (fo_find_shard(&c->fo, e->id)) {
			snprintf(why, whylen, "shard %s exists", e->id);
			return -EEXIST;
		}
		return 0;
	case MB_NODE:
		if (fo_find_node(&c->fo, e->id)) {
			snprintf(why, whylen, "node %s exists", e->id);
			return -EEXIST;
		}
		if (!fo_find_shard(&c->fo, e->shard)) {
			snprintf(why, whylen, "no shard %s", e->shard);
			return -ENOENT;
		}
		if (!cfg_parse_endpoint(e->redis, &ep, 6379) && !ep.unix_path[0] &&
		    (n = fo_node_by_addr(&c->fo, ep.host, ep.port))) {
			snprintf(why, whylen, "%s is node %s's server already", e->redis, n->id);
			return -EEXIST;
		}
		return 0;
	case MB_ATTACH: /* ctl_spares.c's: a spare made a member */
		s = fo_find_shard(&c->fo, e->shard);
		if (s && s->fo.state != FO_ST_NONE) {
			snprintf(why, whylen, "a failover of shard %s is running", s->name);
			return -EBUSY;
		}
		return mb_cfg_attach_check(c->cfg, e, why, whylen);
	case MB_DROP_NODE:
		n = fo_find_node(&c->fo, e->id);
		if (!n) {
			snprintf(why, whylen, "no node %s", e->id);
			return -ENOENT;
		}
		s = n->shard >= 0 ? &c->fo.shards[n->shard] : NULL;
		if (s && s->primary == n->idx) {
			snprintf(why, whylen,
				 "node %s is the primary of shard %s: fail over first (flatline "
				 "failover %s), then remove it",
				 n->id, s->name, s->name);
			return -EBUSY;
		}
		if (s && s->fo.state != FO_ST_NONE) {
			snprintf(why, whylen,
				 "a failover of shard %s is running: try again once it "
				 "ended",
				 s->name);
			return -EBUSY;
		}
		return 0;
	case MB_DROP_SHARD:
		s = fo_find_shard(&c->fo, e->id);
		if (!s) {
			snprintf(why, whylen, "no shard %s", e->id);
			return -ENOENT;
		}
		if (s->fo.state != FO_ST_NONE) {
			snprintf(why, whylen,
				 "a failover of shard %s is running: try again once it "
				 "ended",
				 s->name);
			return -EBUSY;
		}
		return 0;
	}
	snprintf(why, whylen, "unknown change");
	return -EINVAL;
}

/* ---- keeping it: the state file, or etcd ---- */

static int write_state_now(struct ctl *c, char *why, size_t whylen)
{
	size_t len;
	char *buf;
	int rc;

	if (!c->state_file[0]) {
		snprintf(why, whylen, "no state_file: a runtime change would not be kept");
		return -ENOENT;
	}
	buf = fo_state_format(&c->fo, &len);
	if (!buf) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	rc = ctl_state_write_now(c, buf, len, why, whylen);
	free(buf);
	return rc;
}

/* HA mode: the whole membership made again over the cluster file's topology. */
static void rebuild(struct ctl *c, const char *text)
{
	struct ctl_members *m = c->members;
	struct cfg *cfg = c->cfg;
	char why[200], line[MB_LINE_MAX];
	const char *p = text;

	for (int i = 0; i < cfg->nnodes; i++) {
		cfg->nodes[i].removed = i >= m->file_nodes; /* a runtime slot: until said */
		if (i >= m->file_nodes)
			cfg->nodes[i].spare = false;
		else if (cfg->nodes[i].attached) /* the file's spare again, until said */
			mb_cfg_detach(&cfg->nodes[i]);
	}
	for (int i = 0; i < cfg->nshards; i++) {
		struct cfg_shard *s = &cfg->shards[i];

		s->removed = i >= m->file_shards;
		s->nnodes = 0;
		if (i < m->file_shards) {
			int *l = realloc(s->nodes, (m->file_nlists[i] + 1) * sizeof(int));

			if (!l)
				continue;
			s->nodes = l;
			memcpy(l, m->file_lists[i], m->file_nlists[i] * sizeof(int));
			s->nnodes = m->file_nlists[i];
		}
	}
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		struct mb_entry e;

		if (n < sizeof(line) && n > strlen(MB_PREFIX) &&
		    !strncmp(p, MB_PREFIX, strlen(MB_PREFIX))) {
			memcpy(line, p + strlen(MB_PREFIX), n - strlen(MB_PREFIX));
			line[n - strlen(MB_PREFIX)] = '\0';
			if (mb_parse(line, &e, why, sizeof(why)) ||
			    ctl_members_cfg_apply(cfg, &e, why, sizeof(why)) < 0)
				pr_warn("etcd: members: '%s': %s (skipped)\n", line, why);
		}
		p = nl ? nl + 1 : NULL;
	}
}

/* HA mode: the membership etcd holds, made here. Not while a failover runs (a node
 * list changing under it): the text waits, and every tick tries again; so does one
 * whose removal of a primary was postponed. */
static void apply_text(struct ctl *c, const char *text, const char *by)
{
	struct ctl_members *m = c->members;
	char *keep;

	for (int i = 0; i < c->fo.nshards; i++)
		if (c->fo.shards[i].fo.state != FO_ST_NONE)
			goto wait;
	rebuild(c, text);
	if (!sync_live(c, by)) {
		free(m->pending);
		m->pending = NULL;
		return;
	}
wait:
	if (m->pending == text)
		return;
	keep = strdup(text);
	if (!keep)
		return;
	free(m->pending);
	m->pending = keep;
}

void ctl_members_retry(struct ctl *c)
{
	if (c->members && c->members->pending)
		apply_text(c, c->members->pending, "");
}

void ctl_members_from_etcd(struct ctl *c, const char *val)
{
	if (!c->members)
		return;
	apply_text(c, val ? val : "", "");
}

struct ha_change {
	struct ctl *c;
	ctl_members_done_fn done;
	void *ctx;
	char by[80];
	char *text;
};

static void on_txn(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct ha_change *h = ctx;
	struct json_object *o;
	char why[240];

	if (!err &&
	    !(json_object_object_get_ex(resp, "succeeded", &o) && json_object_get_boolean(o))) {
		err = -EAGAIN;
		msg = "another controller changed the membership meanwhile: try again";
	}
	if (!err && json_object_object_get_ex(resp, "header", &o)) {
		/* Our own write: seen, even before the watch brings it back. */
		int64_t rev = etcd_json_get_i64(o, "revision", 0);

		if (h->c->members && rev > h->c->members->rev_seen)
			h->c->members->rev_seen = rev;
	}
	if (err) {
		snprintf(why, sizeof(why), "failed to write the membership to etcd: %s",
			 msg ? msg : strerror(-err));
		if (h->done)
			h->done(h->c, h->ctx, err, why);
	} else {
		apply_text(h->c, h->text, h->by);
		if (h->done)
			h->done(h->c, h->ctx, 0, "");
	}
	free(h->text);
	free(h);
}

/* <prefix>members = text, if no one changed it after the revision this controller
 * has seen. */
static int put_fenced(struct ctl *c, const char *text, struct ha_change *h)
{
	struct json_object *b = json_object_new_object(), *cmp = json_object_new_object();
	struct json_object *put = json_object_new_object(), *op = json_object_new_object();
	struct json_object *cmps = json_object_new_array(), *succ = json_object_new_array();
	char key[512];

	snprintf(key, sizeof(key), "%smembers", c->cfg->etcd.prefix);
	etcd_json_add_bytes(cmp, "key", key, strlen(key));
	json_object_object_add(cmp, "target", json_object_new_string("MOD"));
	json_object_object_add(cmp, "result", json_object_new_string("LESS"));
	json_object_object_add(cmp, "mod_revision",
			       json_object_new_int64((ha_revision(c->ha) > c->members->rev_seen
							  ? ha_revision(c->ha)
							  : c->members->rev_seen) +
						     1));
	json_object_array_add(cmps, cmp);
	etcd_json_add_bytes(put, "key", key, strlen(key));
	etcd_json_add_bytes(put, "value", text, strlen(text));
	json_object_object_add(op, "request_put", put);
	json_object_array_add(succ, op);
	json_object_object_add(b, "compare", cmps);
	json_object_object_add(b, "success", succ);
	return etcd_call(ha_etcd(c->ha), "/v3/kv/txn", b, 0, on_txn, h) < 0 ? -EIO : 0;
}

int ctl_members_change(struct ctl *c, const struct mb_entry *e, const char *by,
		       ctl_members_done_fn done, void *ctx, char *why, size_t whylen)
{
	struct snap s;
	int rc = ctl_members_check(c, e, why, whylen);

	if (rc)
		return rc;
	if (snap_take(c->cfg, &s)) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	rc = ctl_members_cfg_apply(c->cfg, e, why, whylen);
	if (rc < 0) {
		snap_restore(c, &s);
		return rc;
	}
	if (c->ha) {
		struct ha_change *h = calloc(1, sizeof(*h));
		size_t cap = 1024 + (size_t)c->cfg->nnodes * 420 + (size_t)c->cfg->nshards * 320;
		size_t len = 0;

		if (h)
			h->text = malloc(cap);
		if (!h || !h->text || mb_format_cfg(c->cfg, h->text, cap, &len)) {
			snap_restore(c, &s);
			if (h)
				free(h->text);
			free(h);
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		h->text[len] = '\0';
		snap_restore(c, &s); /* applied when etcd has it */
		h->c = c;
		h->done = done;
		h->ctx = ctx;
		snprintf(h->by, sizeof(h->by), "%s", by ? by : "");
		rc = put_fenced(c, h->text, h);
		if (rc) {
			snprintf(why, whylen, "etcd not reachable");
			free(h->text);
			free(h);
		}
		return rc;
	}
	/* One controller: on disk before it is made. */
	rc = write_state_now(c, why, whylen);
	if (rc) {
		snap_restore(c, &s);
		return rc;
	}
	snap_free(&s);
	sync_live(c, by);
	if (done)
		done(c, ctx, 0, "");
	return 0;
}

int ctl_members_start(struct ctl *c)
{
	struct ctl_members *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	c->members = m;
	/* The file's topology: what HA mode makes every change again over. Taken
	 * before etcd says anything (in HA mode the state file has no lines). */
	m->file_nodes = m->file_shards = 0;
	for (int i = 0; i < c->cfg->nnodes; i++)
		if (!c->cfg->nodes[i].runtime)
			m->file_nodes = i + 1;
	for (int i = 0; i < c->cfg->nshards; i++)
		if (!c->cfg->shards[i].runtime)
			m->file_shards = i + 1;
	m->file_lists = calloc(m->file_shards + 1, sizeof(*m->file_lists));
	m->file_nlists = calloc(m->file_shards + 1, sizeof(*m->file_nlists));
	if (!m->file_lists || !m->file_nlists)
		return -ENOMEM;
	for (int i = 0; i < m->file_shards; i++) {
		m->file_lists[i] = malloc((c->cfg->shards[i].nnodes + 1) * sizeof(int));
		if (!m->file_lists[i])
			return -ENOMEM;
		memcpy(m->file_lists[i], c->cfg->shards[i].nodes,
		       c->cfg->shards[i].nnodes * sizeof(int));
		m->file_nlists[i] = c->cfg->shards[i].nnodes;
	}
	return 0;
}

void ctl_members_fini(struct ctl *c)
{
	struct ctl_members *m = c->members;

	if (!m)
		return;
	if (m->scan)
		event_free(m->scan);
	for (int i = 0; m->file_lists && i < m->file_shards; i++)
		free(m->file_lists[i]);
	free(m->file_lists);
	free(m->file_nlists);
	free(m->unknown);
	free(m->pending);
	free(m);
	c->members = NULL;
}
