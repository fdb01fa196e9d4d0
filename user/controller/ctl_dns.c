// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The controller's DNS wiring (dns.c does the protocol): the update after a
 * promotion, and the drift check that repairs a record that no longer names the
 * primary. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"

static int dns_shard(const struct ctl *c, const char *name)
{
	for (int i = 0; i < c->cfg->nshards; i++)
		if (!strcasecmp(c->cfg->shards[i].dns_name, name))
			return i;
	return -1;
}

/* The module's state (c->dns_state). */
struct ctl_dns_state {
	struct dns_updater *dns;
	struct ctl_dns *dnss;	 /* per shard: what DNS says and why we last wrote it */
	struct event *dns_check; /* the drift check, every [dns] check_ms */
};

const struct ctl_dns *ctl_dns_shard(const struct ctl *c, int shard)
{
	return c->dns_state && c->dns_state->dnss ? &c->dns_state->dnss[shard] : NULL;
}

/* A configuration error (REFUSED, NOTAUTH, BADKEY …) is printed once per change
 * and holds back repairs for a while: no retry storm against a server that will
 * keep saying no. */
#define CTL_DNS_CFG_HOLD_MS 60000

static bool dns_held(const struct ctl *c, const struct ctl_dns *d)
{
	long long hold =
	    c->cfg->dns.check_ms > CTL_DNS_CFG_HOLD_MS ? c->cfg->dns.check_ms : CTL_DNS_CFG_HOLD_MS;

	return d->cfg_err_ms && fl_mono_ms() - d->cfg_err_ms < hold;
}

static void on_dns_done(const struct dns_result *res, void *ctx)
{
	struct ctl *c = ctx;
	int i = dns_shard(c, res->name);
	struct ctl_dns *d;
	struct fo_shard *s;
	const char *want, *kind;
	struct evrec r;

	if (i < 0 || res->status == DNS_SUPERSEDED)
		return;
	d = &c->dns_state->dnss[i];
	s = &c->fo.shards[i];
	want = s->primary >= 0 ? c->fo.nodes[s->primary].host : NULL;
	if (res->config_error) {
		if (strcmp(d->cfg_err, res->error))
			pr_warn("DNS %s of %s: %s\n", res->op == DNS_OP_UPDATE ? "update" : "query",
				res->name, res->error);
		snprintf(d->cfg_err, sizeof(d->cfg_err), "%s", res->error);
		d->cfg_err_ms = fl_mono_ms();
	} else if (res->status == DNS_OK && res->op == DNS_OP_UPDATE) {
		/* Only a successful update shows the server takes our updates again. */
		d->cfg_err[0] = '\0';
		d->cfg_err_ms = 0;
	}
	if (res->op == DNS_OP_QUERY) {
		d->agrees = res->status != DNS_OK ? -1 : res->match;
		snprintf(d->seen, sizeof(d->seen), "%s", res->naddrs ? res->addrs[0] : "");
		/* Drifted (or missing): point it at the primary, unless the server
		 * refuses us anyway or an update is on its way. */
		if (res->status == DNS_OK && !res->match && want && !strcmp(res->addr, want) &&
		    !dns_held(c, d) && !dns_update_pending(c->dns_state->dns, res->name) &&
		    ctl_may_change(c)) {
			d->repair = true;
			if (dns_update(c->dns_state->dns, res->name, want))
				d->repair = false;
		}
		return;
	}
	metrics_hist_observe(&c->m.dns_update, res->elapsed_ms / 1e3);
	if (res->status != DNS_OK)
		c->m.dns_failures++;
	d->agrees = res->status == DNS_OK ? (want && !strcmp(res->addr, want)) : -1;
	if (d->agrees == 1)
		snprintf(d->seen, sizeof(d->seen), "%s", res->addr);
	kind = res->status != DNS_OK ? "dns_failed" : d->repair ? "dns_repaired" : "dns_updated";
	evrec_begin(&r, NULL, "controller", kind);
	evrec_str(&r, "shard", s->name);
	evrec_uint(&r, "epoch", s->epoch);
	evrec_str(&r, "name", res->name);
	evrec_str(&r, "addr", res->addr);
	evrec_str(&r, "rcode", res->rcode_name);
	evrec_uint(&r, "attempts", res->attempts);
	evrec_double(&r, "elapsed_ms", res->elapsed_ms, 3);
	if (res->status != DNS_OK) {
		evrec_str(&r, "reason", res->error);
		evrec_bool(&r, "config_error", res->config_error);
	}
	ctl_event(c, kind, &r);
	d->repair = false;
}

/* At start and every [dns] check_ms: does each name point at its primary? */
static void on_dns_check(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;
	struct timeval tv = fl_ms_tv(c->cfg->dns.check_ms);

	(void)fd;
	(void)what;
	for (int i = 0; i < c->fo.nshards; i++) {
		struct fo_shard *s = &c->fo.shards[i];
		const char *name = c->cfg->shards[i].dns_name;

		if (!name[0] || s->primary < 0 || c->fo.starting || !ctl_may_act(c) ||
		    dns_update_pending(c->dns_state->dns, name))
			continue;
		if (dns_query(c->dns_state->dns, name, c->fo.nodes[s->primary].host))
			c->dns_state->dnss[i].agrees = -1;
	}
	if (c->cfg->dns.check_ms > 0)
		event_add(c->dns_state->dns_check, &tv);
}

int ctl_dns_start(struct ctl *c)
{
	const struct cfg *cf = c->cfg;
	struct dns_cfg d;
	char err[DNS_ERR_MAX], hp[300];
	int rc;

	c->dns_state = calloc(1, sizeof(*c->dns_state));
	if (!c->dns_state)
		return -ENOMEM;
	if (!cf->dns.enabled)
		return 0;
	dns_cfg_init(&d);
	cfg_hostport(hp, sizeof(hp), cf->dns.server.host, cf->dns.server.port);
	if (dns_cfg_set_server(&d, hp)) {
		pr_warn("failed to configure DNS: server %s is not an IP address\n", hp);
		return -EINVAL;
	}
	snprintf(d.zone, sizeof(d.zone), "%s", cf->dns.zone);
	snprintf(d.tsig_name, sizeof(d.tsig_name), "%s", cf->dns.tsig_name);
	snprintf(d.tsig_algorithm, sizeof(d.tsig_algorithm), "%s", cf->dns.tsig_algorithm);
	snprintf(d.tsig_secret, sizeof(d.tsig_secret), "%s", cf->dns.tsig_secret);
	d.ttl_s = cf->dns.ttl;
	if (dns_cfg_validate(&d, err, sizeof(err))) {
		pr_warn("failed to configure DNS: %s\n", err);
		return -EINVAL;
	}
	for (int i = 0; i < cf->nshards; i++) {
		if (cf->shards[i].dns_name[0] &&
		    dns_name_validate(&d, cf->shards[i].dns_name, err, sizeof(err))) {
			pr_warn("failed to configure DNS for shard %s: %s\n", cf->shards[i].name,
				err);
			return -EINVAL;
		}
	}
	c->dns_state->dnss = calloc(ctl_shard_room(c) + 1, sizeof(*c->dns_state->dnss));
	c->dns_state->dns_check = evtimer_new(c->base, on_dns_check, c);
	if (!c->dns_state->dnss || !c->dns_state->dns_check)
		return -ENOMEM;
	for (int i = 0; i < ctl_shard_room(c); i++)
		c->dns_state->dnss[i].agrees = -1;
	rc = dns_updater_new(&c->dns_state->dns, c->base, &d, on_dns_done, c);
	if (rc) {
		pr_warn("failed to start the DNS updater: %s\n", strerror(-rc));
		return rc;
	}
	/* The first check once the start-up INFO round has named the primaries. */
	{
		struct timeval first = fl_ms_tv(CTL_DNS_FIRST_CHECK_MS);

		event_add(c->dns_state->dns_check, &first);
	}
	return 0;
}

void ctl_dns_promoted(struct ctl *c, int shard, const char *host)
{
	const struct cfg_shard *cs = &c->cfg->shards[shard];
	int rc;

	if (!c->dns_state->dns || !cs->dns_name[0])
		return;
	if (!ctl_may_change(c)) {
		pr_warn("not updating DNS %s: %s\n", cs->dns_name,
			c->fo.shadow ? "shadow mode" : "not the leader with a live lease");
		return;
	}
	c->dns_state->dnss[shard].repair = false;
	c->dns_state->dnss[shard].agrees = -1;
	/* A failover is a reason to try again even after a configuration error. */
	rc = dns_update(c->dns_state->dns, cs->dns_name, host);
	if (rc)
		pr_warn("failed to queue the DNS update of %s: %s\n", cs->dns_name, strerror(-rc));
}

void ctl_dns_free(struct ctl *c)
{
	if (!c->dns_state)
		return;
	dns_updater_free(c->dns_state->dns);
	if (c->dns_state->dns_check)
		event_free(c->dns_state->dns_check);
	free(c->dns_state->dnss);
	free(c->dns_state);
	c->dns_state = NULL;
}
