// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* SIGHUP for both daemons (config.h, cfg_reload_run): the changed keys, walked by
 * their rows of the table, each applied, refused or named as needing a restart,
 * each logged; never "all applied" for a key that was not. */
#include <stdio.h>
#include <string.h>
#include "common/config.h"
#include "common/log.h"

struct walk {
	struct cfg_reload *r;
	struct cfg *old;
	const struct cfg *new;
	bool any_applied;
};

static void add(char *buf, size_t len, const char *sep, const char *fmt, const char *a,
		const char *b, const char *c)
{
	size_t used = strlen(buf);

	if (used + 1 >= len)
		return;
	snprintf(buf + used, len - used, "%s", used ? sep : "");
	used = strlen(buf);
	snprintf(buf + used, len - used, fmt, a, b, c);
}

/* The element of a named section with this id in c (NULL if none), and its twin. */
static void *named(const struct cfg *c, enum cfg_sect s, const char *section)
{
	const char *q = strchr(section, '"');
	char id[CFG_ID_MAX + 1];
	size_t n;

	if (!q)
		return NULL;
	n = strcspn(q + 1, "\"");
	if (n > CFG_ID_MAX)
		return NULL;
	memcpy(id, q + 1, n);
	id[n] = '\0';
	switch (s) {
	case CFG_S_NODE:
		return cfg_find_node(c, id);
	case CFG_S_SHARD:
		return cfg_find_shard(c, id);
	case CFG_S_CTL:
		return cfg_find_ctl(c, id);
	case CFG_S_USER:
		return cfg_find_user(c, id);
	default:
		return NULL;
	}
}

/* Guards both daemons keep: a key whose live change could break an invariant. True
 * (refused) with the reason in why. */
static bool guard(const struct cfg_key *k, const struct cfg *new, char *why, size_t whylen)
{
	if ((k->sect == CFG_S_AGENT && !strcmp(k->name, "heartbeat_ms")) ||
	    (k->sect == CFG_S_CONTROLLER && !strcmp(k->name, "node_down_after_ms"))) {
		if (new->agent.heartbeat_ms < new->controller.node_down_after_ms)
			return false;
		snprintf(why, whylen,
			 "[agent] heartbeat_ms %d is not below [controller] node_down_after_ms "
			 "%d: every agent would look stale between two of its reports",
			 new->agent.heartbeat_ms, new->controller.node_down_after_ms);
		return true;
	}
	return false;
}

static void on_key(void *ctx, enum cfg_sect s, const char *section, const char *key,
		   const struct cfg_key *k)
{
	struct walk *w = ctx;
	struct cfg_reload *r = w->r;
	unsigned reads = 0;
	char why[400];
	void *to, *from;

	r->changed++;
	if (!k) { /* a whole named section added or removed */
		for (int i = 0; i < cfg_nkeys; i++)
			if (cfg_keys[i].sect == s)
				reads |= cfg_keys[i].reads;
		if (!(reads & r->proc))
			return;
		pr_warn("reload: %s %s: needs a restart of the %s\n", section, key, r->who);
		add(r->restart, sizeof(r->restart), ", ", "%s %s%s", section, key, "");
		r->nrestart++;
		return;
	}
	if (!(k->reads & r->proc))
		return; /* another process's key */
	if (!(k->live & r->proc)) {
		pr_warn("reload: %s %s: needs a restart of the %s\n", section, key, r->who);
		add(r->restart, sizeof(r->restart), ", ", "%s %s%s", section, key, "");
		r->nrestart++;
		return;
	}
	why[0] = '\0';
	if (guard(k, w->new, why, sizeof(why)) ||
	    (r->check && r->check(r->ctx, k, w->old, w->new, why, sizeof(why)))) {
		pr_warn("reload: %s %s: refused, the running value stays: %s\n", section, key, why);
		add(r->refused, sizeof(r->refused), "; ", "%s %s: %s", section, key, why);
		r->nrefused++;
		return;
	}
	if (s == CFG_S_NODE || s == CFG_S_SHARD || s == CFG_S_CTL || s == CFG_S_USER) {
		to = named(w->old, s, section);
		from = named(w->new, s, section);
	} else {
		to = w->old;
		from = (void *)w->new;
	}
	if (!to || !from)
		return;
	memcpy((char *)to + k->off, (const char *)from + k->off, k->size);
	pr_info("reload: %s %s: applied\n", section, key);
	add(r->applied, sizeof(r->applied), ", ", "%s %s%s", section, key, "");
	r->napplied++;
	w->any_applied = true;
}

void cfg_reload_run(struct cfg_reload *r, struct cfg *old, const struct cfg *new, const char *path)
{
	struct walk w = {.r = r, .old = old, .new = new};

	r->changed = r->napplied = r->nrestart = r->nrefused = 0;
	r->applied[0] = r->restart[0] = r->refused[0] = '\0';
	cfg_diff(old, new, on_key, &w);
	if (w.any_applied && r->done)
		r->done(r->ctx);
	if (r->nrestart || r->nrefused)
		pr_warn("reloaded %s: %d key(s) changed: %d applied, %d refused, %d need a restart "
			"of the %s%s%s\n",
			path, r->changed, r->napplied, r->nrefused, r->nrestart, r->who,
			r->nrestart ? ": " : "", r->restart);
	else
		pr_info("reloaded %s: %d key(s) changed: %d applied%s%s\n", path, r->changed,
			r->napplied, r->napplied ? ": " : "", r->applied);
}
