// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The prober's routes (prober_layers.h): where each peer's probes go out. A peer's
 * route is looked up and the icmp programs attached to its interface; route and link
 * notifications (rtnetlink) move them: a route that moves or goes is reported
 * (on_route; probe_route_evrec is its peer_route record), and an interface no peer is
 * routed through any more is left. Calls nothing else of the prober's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <net/if.h>
#include "common/clock.h"
#include "common/log.h"
#include "agent/prober_layers.h"

#define PROBE_ROUTE_RETRY_NS (1000 * NS_PER_MS)

void probe_find_route(struct prober *p, struct probe_peer *pp, uint64_t now)
{
	int ifindex, err;

	pp->next_route_ns = now + PROBE_ROUTE_RETRY_NS;
	err = icmp_watch_route_ifindex(&pp->key, &ifindex);
	if (err) {
		if (pp->ifindex || !pp->info.ifindex)
			pr_debug("no route to peer %s (%s): %s\n", pp->id, pp->addr_str,
				 strerror(-err));
		return;
	}
	if (icmp_watch_attach(p->iw, ifindex))
		return;
	pp->ifindex = ifindex;
	pp->info.ifindex = ifindex;
}

static const char *ifname_of(int ifindex, char *buf)
{
	if (!ifindex)
		return NULL;
	if (!if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "if%d", ifindex);
	return buf;
}

/* Our programs leave an interface no peer is routed through any more. */
static void detach_unused(struct prober *p, int ifindex)
{
	if (!ifindex)
		return;
	for (int i = 0; i < p->npeers; i++)
		if (p->peers[i]->ifindex == ifindex)
			return;
	icmp_watch_detach(p->iw, ifindex, false);
}

static void route_changed(struct prober *p, struct probe_peer *pp, int prev)
{
	char a[IF_NAMESIZE], b[IF_NAMESIZE];
	const char *now_if = ifname_of(pp->ifindex, a), *prev_if = ifname_of(prev, b);

	if (pp->ifindex)
		pr_info("peer %s (%s) is now routed through %s (was %s)\n", pp->id, pp->addr_str,
			now_if, prev_if ? prev_if : "no route");
	else
		pr_info("peer %s (%s): no route any more (was through %s)\n", pp->id, pp->addr_str,
			prev_if ? prev_if : "?");
	if (p->o.on_route)
		p->o.on_route(p->o.ctx, &pp->info, prev);
	detach_unused(p, prev);
}

/* The route to pp now: attach where it goes, note where it went (prev: the
 * interface it went through before, to report). */
static void reroute_from(struct prober *p, struct probe_peer *pp, uint64_t now, int prev)
{
	int ifindex = 0, err;

	pp->next_route_ns = now + PROBE_ROUTE_RETRY_NS;
	err = icmp_watch_route_ifindex(&pp->key, &ifindex);
	if (err)
		ifindex = 0;
	if (ifindex == pp->ifindex && ifindex == prev)
		return;
	if (ifindex && icmp_watch_attach(p->iw, ifindex))
		ifindex = 0; /* retried with the next notification or round */
	pp->ifindex = ifindex;
	pp->info.ifindex = ifindex;
	if (ifindex != prev)
		route_changed(p, pp, prev);
}

void probe_reroute(struct prober *p, struct probe_peer *pp, uint64_t now)
{
	reroute_from(p, pp, now, pp->ifindex);
}

static void on_netlink(evutil_socket_t fd, short what, void *arg)
{
	struct prober *p = arg;
	struct icmp_watch_nl_news nw;
	uint64_t now = (uint64_t)fl_mono_ns();
	int err;

	(void)what;
	err = icmp_watch_nl_read(fd, &nw);
	if (err)
		pr_warn("failed to read route notifications: %s\n", strerror(-err));
	if (!nw.routes && !nw.links)
		return;
	/* A deleted interface took our links with it; its peers have no route now
	 * (unless another one is found just below). */
	for (int g = 0; g < nw.ngone; g++) {
		icmp_watch_detach(p->iw, nw.gone[g], true);
		for (int i = 0; i < p->npeers; i++) {
			struct probe_peer *pp = p->peers[i];

			if (pp->ifindex == nw.gone[g]) {
				pp->ifindex = pp->info.ifindex = 0;
				reroute_from(p, pp, now, nw.gone[g]);
			}
		}
	}
	for (int i = 0; i < p->npeers; i++)
		probe_reroute(p, p->peers[i], now);
}

int probe_follow_routes(struct prober *p)
{
	p->nl_fd = icmp_watch_nl_open();
	if (p->nl_fd < 0) {
		pr_warn("failed to follow route changes: %s (a peer without a route is looked "
			"up again every second; a route that moves is not followed)\n",
			strerror(-p->nl_fd));
	} else {
		p->ev_nl = event_new(p->o.base, p->nl_fd, EV_READ | EV_PERSIST, on_netlink, p);
		if (!p->ev_nl || event_add(p->ev_nl, NULL))
			return -ENOMEM;
	}
	return 0;
}

void probe_route_evrec(struct evrec *r, const char *node, const struct probe_peer_info *peer,
		       int prev_ifindex)
{
	char a[IF_NAMESIZE], b[IF_NAMESIZE];

	evrec_begin(r, NULL, node, "peer_route");
	evrec_str(r, "peer", peer->id);
	evrec_str(r, "addr", peer->addr);
	evrec_str(r, "ifname", ifname_of(peer->ifindex, a));
	evrec_str(r, "prev_ifname", ifname_of(prev_ifindex, b));
}
