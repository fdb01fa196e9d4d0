// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The peer prober: see prober.h. One timer, one raw socket; each round sends every
 * peer its probe (one sendmmsg), then reads the kernel's view of each peer and
 * judges it. Nothing blocks: the socket is non-blocking and the only waits are the
 * caller's event loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/icmp.h>
#include <netinet/ip.h>
#include "common/clock.h"
#include "common/log.h"
#include "agent/prober.h"

#define NS_PER_MS 1000000ull
#define PROBE_ROUTE_RETRY_NS (1000 * NS_PER_MS)
#define PROBE_PAYLOAD 16 /* "flatline" + the send time, as ping carries its own */

struct probe_peer {
	char id[65];
	char addr_str[INET_ADDRSTRLEN];
	struct in_addr addr;
	int ifindex;               /* route's interface; 0 = no route (yet) */
	uint64_t next_route_ns;    /* when to look for a route again */
	uint16_t seq;              /* of the last probe sent */
	uint64_t probes;           /* probes sent (tried) */
	uint64_t last_send_ns;     /* CLOCK_MONOTONIC before the last sendmmsg */
	int last_errno;            /* of the last failed send, 0 after a good one */
	bool round_read;           /* its stats were in this round's table read */
	struct verdict_peer pv;
	struct probe_peer_info info;
};

struct prober {
	struct probe_opts o;
	struct verdict_config cfg;
	struct icmp_watch *iw;
	int fd;           /* raw ICMP socket */
	uint16_t echo_id; /* the ICMP id of all our probes */
	struct event *ev_round, *ev_read;
	struct probe_peer **peers;
	int npeers, cap;
	/* Per round: scratch for sendmmsg and the carrier of each interface. */
	struct mmsghdr *msgs;
	struct iovec *iov;
	struct sockaddr_in *dst;
	uint8_t (*pkt)[sizeof(struct icmphdr) + PROBE_PAYLOAD];
	struct { int ifindex, carrier; } carrier[ICMP_WATCH_MAX_IFACES];
	int ncarrier;
	/* The kernel's table, read at once each round, and the peers sorted by
	 * address to find their rows. */
	struct fl_peer_key *keys;
	struct fl_peer_stats *vals;
	struct probe_peer **byaddr;
};

static uint16_t csum16(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (b[i] << 8) | b[i + 1];
	if (n & 1)
		s += b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons(~s & 0xffff);
}

/* ---- peers and routes ---- */

static void find_route(struct prober *p, struct probe_peer *pp, uint64_t now)
{
	int ifindex, err;

	pp->next_route_ns = now + PROBE_ROUTE_RETRY_NS;
	err = icmp_watch_route_ifindex(pp->addr, &ifindex);
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

static int cmp_addr(const void *a, const void *b)
{
	uint32_t x = ntohl((*(struct probe_peer *const *)a)->addr.s_addr);
	uint32_t y = ntohl((*(struct probe_peer *const *)b)->addr.s_addr);

	return (x > y) - (x < y);
}

static struct probe_peer *peer_by_key(struct prober *p, const struct fl_peer_key *k)
{
	struct probe_peer key, *kp = &key, **found;

	memcpy(&key.addr, k->addr, sizeof(k->addr));
	// NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
	found = bsearch(&kp, p->byaddr, p->npeers, sizeof(*p->byaddr), cmp_addr);
	return found ? *found : NULL;
}

/* Room for twice the peers, in the list and in the per-round scratch. */
static int grow(struct prober *p)
{
	int cap = p->cap ? 2 * p->cap : 16;
	void *v;

#define GROW(field)                                               \
	do {                                                      \
		v = realloc(p->field, cap * sizeof(*p->field));   \
		if (!v)                                           \
			return -ENOMEM;                           \
		p->field = v;                                     \
	} while (0)
	GROW(peers); // NOLINT(bugprone-sizeof-expression): array of pointers
	GROW(msgs);
	GROW(iov);
	GROW(dst);
	GROW(pkt);
	GROW(keys);
	GROW(vals);
	GROW(byaddr); // NOLINT(bugprone-sizeof-expression): array of pointers
#undef GROW
	p->cap = cap;
	return 0;
}

int probe_add_peer(struct prober *p, const char *id, const char *addr)
{
	struct probe_peer *pp;
	struct in_addr a;
	int err;

	if (inet_pton(AF_INET, addr, &a) != 1) {
		pr_warn("failed to add peer %s: '%s' is not an IPv4 address\n", id, addr);
		return -EINVAL;
	}
	if (strlen(id) >= sizeof(pp->id)) {
		pr_warn("failed to add peer %s: id longer than 64 bytes\n", id);
		return -EINVAL;
	}
	for (int i = 0; i < p->npeers; i++) {
		if (p->peers[i]->addr.s_addr == a.s_addr || !strcmp(p->peers[i]->id, id)) {
			pr_warn("failed to add peer %s (%s): already probed as %s (%s)\n", id, addr,
				p->peers[i]->id, p->peers[i]->addr_str);
			return -EEXIST;
		}
	}
	if (p->npeers == PROBE_MAX_PEERS) {
		pr_warn("failed to add peer %s: at most %d peers\n", id, PROBE_MAX_PEERS);
		return -E2BIG;
	}
	if (p->npeers == p->cap && grow(p))
		return -ENOMEM;
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	snprintf(pp->id, sizeof(pp->id), "%s", id);
	inet_ntop(AF_INET, &a, pp->addr_str, sizeof(pp->addr_str));
	pp->addr = a;
	pp->info.id = pp->id;
	pp->info.addr = pp->addr_str;
	err = verdict_init(&pp->pv, &p->cfg);
	if (!err)
		err = icmp_watch_add_peer(p->iw, a);
	if (err) {
		pr_warn("failed to add peer %s (%s): %s\n", id, addr, strerror(-err));
		verdict_free(&pp->pv);
		free(pp);
		return err;
	}
	pp->info.ev = pp->pv.ev;
	find_route(p, pp, (uint64_t)fl_mono_ns());
	if (!pp->ifindex)
		pr_warn("no route to peer %s (%s) yet: probing it once there is one\n", id,
			pp->addr_str);
	p->peers[p->npeers++] = pp;
	// NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
	memcpy(p->byaddr, p->peers, p->npeers * sizeof(*p->byaddr));
	// NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
	qsort(p->byaddr, p->npeers, sizeof(*p->byaddr), cmp_addr);
	return 0;
}

/* ---- one round ---- */

static void send_all(struct prober *p, uint64_t now)
{
	int n = p->npeers, off = 0;

	for (int i = 0; i < n; i++) {
		struct probe_peer *pp = p->peers[i];
		struct icmphdr *h = (struct icmphdr *)p->pkt[i];
		uint8_t *payload = p->pkt[i] + sizeof(*h);

		pp->seq++;
		pp->probes++;
		pp->last_send_ns = now;
		memset(h, 0, sizeof(*h));
		h->type = ICMP_ECHO;
		h->un.echo.id = htons(p->echo_id);
		h->un.echo.sequence = htons(pp->seq);
		memcpy(payload, "flatline", 8); // NOLINT(bugprone-not-null-terminated-result): magic bytes
		memcpy(payload + 8, &now, 8);
		h->checksum = csum16(p->pkt[i], sizeof(p->pkt[i]));
		p->dst[i] = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr = pp->addr };
		p->iov[i] = (struct iovec){ p->pkt[i], sizeof(p->pkt[i]) };
		p->msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &p->dst[i],
							    .msg_namelen = sizeof(p->dst[i]),
							    .msg_iov = &p->iov[i],
							    .msg_iovlen = 1 } };
	}
	while (off < n) {
		int sent = sendmmsg(p->fd, p->msgs + off, n - off, 0);
		struct probe_peer *pp;

		if (sent > 0) {
			for (int i = off; i < off + sent; i++)
				p->peers[i]->last_errno = 0;
			off += sent;
			continue;
		}
		if (errno == EINTR)
			continue;
		/* The error belongs to the first message not sent: note it, go on. */
		pp = p->peers[off++];
		pp->info.send_errors++;
		if (pp->last_errno != errno)
			pr_debug("failed to send a probe to %s (%s): %s\n", pp->id, pp->addr_str,
				 strerror(errno));
		pp->last_errno = errno;
	}
}

/* 1 with carrier, 0 without (or unknown: it cannot be used then); once per round. */
static int carrier(struct prober *p, int ifindex)
{
	int c;

	if (!ifindex)
		return 0;
	for (int i = 0; i < p->ncarrier; i++)
		if (p->carrier[i].ifindex == ifindex)
			return p->carrier[i].carrier;
	c = icmp_watch_if_carrier(ifindex) > 0;
	if (p->ncarrier < ICMP_WATCH_MAX_IFACES)
		p->carrier[p->ncarrier++] = (typeof(p->carrier[0])){ ifindex, c };
	return c;
}

static void log_change(const struct probe_peer_info *pi)
{
	const struct verdict_evidence *ev = &pi->ev;

	if (ev->state == VERDICT_DOWN)
		pr_info("peer %s (%s) is down: nothing from it for %llu ms, %llu of %llu probes "
			"left this host%s\n",
			pi->id, pi->addr,
			(unsigned long long)(ev->packet_age_ns == VERDICT_NEVER ? ev->window_ns
									  : ev->packet_age_ns) /
				NS_PER_MS,
			(unsigned long long)ev->left_in_window,
			(unsigned long long)ev->probes_in_window,
			ev->local_fault ? " (local fault?)" : "");
	else
		pr_info("peer %s (%s) is %s (was %s)\n", pi->id, pi->addr,
			verdict_state_name(ev->state), verdict_state_name(ev->prev));
}

/* Judges a peer on the kernel's figures, already in pp->info.st. */
static void judge(struct prober *p, struct probe_peer *pp, uint64_t now)
{
	struct verdict_obs o = { .now_ns = now, .probes = pp->probes };
	struct fl_peer_stats *st = &pp->info.st;

	o.last_reply_ns = st->last_reply_ns;
	o.last_rx_ns = st->last_rx_ns;
	o.left = st->sent;
	o.replied = st->replied;
	o.rtt_ns = st->rtt_last_ns;
	o.srtt_ns = st->rtt_srtt_ns;
	/* Only worth an ioctl when the peer has gone quiet. */
	if (!st->last_rx_ns || now - st->last_rx_ns >= p->cfg.down_after_ns / 2)
		o.no_carrier = !carrier(p, pp->ifindex);
	if (verdict_round(&pp->pv, &p->cfg, &o)) {
		pp->info.ev = pp->pv.ev;
		log_change(&pp->info);
		p->o.on_change(p->o.ctx, &pp->info);
		return;
	}
	pp->info.ev = pp->pv.ev;
}

/* The whole table in one syscall; a peer missing from it (cannot happen while we
 * own the map) is read alone. */
static void read_stats(struct prober *p)
{
	uint32_t n = 0;
	int err;

	for (int i = 0; i < p->npeers; i++)
		p->peers[i]->round_read = false;
	err = icmp_watch_read_all(p->iw, p->keys, p->vals, p->cap, &n);
	if (err)
		pr_warn("failed to read the peer table: %s\n", strerror(-err));
	for (uint32_t i = 0; i < n; i++) {
		struct probe_peer *pp = peer_by_key(p, &p->keys[i]);

		if (pp) {
			pp->info.st = p->vals[i];
			pp->round_read = true;
		}
	}
	for (int i = 0; i < p->npeers; i++) {
		struct probe_peer *pp = p->peers[i];

		if (pp->round_read)
			continue;
		err = icmp_watch_peer_stats(p->iw, pp->addr, &pp->info.st);
		if (err)
			pr_warn("failed to read the statistics of peer %s: %s\n", pp->id,
				strerror(-err));
	}
}

static void on_round(evutil_socket_t fd, short what, void *arg)
{
	struct prober *p = arg;
	uint64_t now = (uint64_t)fl_mono_ns();

	(void)fd;
	(void)what;
	p->ncarrier = 0;
	for (int i = 0; i < p->npeers; i++)
		if (!p->peers[i]->ifindex && now >= p->peers[i]->next_route_ns)
			find_route(p, p->peers[i], now);
	send_all(p, now);
	read_stats(p);
	for (int i = 0; i < p->npeers; i++)
		judge(p, p->peers[i], now);
}

/* ---- replies in userspace (measurements only) ---- */

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct prober *p = arg;
	uint8_t buf[1500];
	struct sockaddr_in from;
	socklen_t flen;
	ssize_t n;

	(void)what;
	for (;;) {
		const struct iphdr *ip = (const struct iphdr *)buf;
		const struct icmphdr *h;
		struct probe_peer *pp = NULL;
		uint64_t now, user, kern = 0;
		size_t hlen;

		flen = sizeof(from);
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
		if (n < 0)
			return; /* EAGAIN: drained */
		now = (uint64_t)fl_mono_ns();
		hlen = (size_t)(buf[0] & 0xf) * 4;
		if ((size_t)n < sizeof(*ip) || hlen < sizeof(*ip) || (size_t)n < hlen + sizeof(*h))
			continue;
		h = (const struct icmphdr *)(buf + hlen);
		if (h->type != ICMP_ECHOREPLY || ntohs(h->un.echo.id) != p->echo_id)
			continue;
		for (int i = 0; i < p->npeers && !pp; i++)
			if (p->peers[i]->addr.s_addr == ip->saddr)
				pp = p->peers[i];
		if (!pp || ntohs(h->un.echo.sequence) != pp->seq)
			continue; /* late: its send time is gone */
		user = now - pp->last_send_ns;
		if (!icmp_watch_peer_stats(p->iw, pp->addr, &pp->info.st) && pp->info.st.last_seq == pp->seq)
			kern = pp->info.st.rtt_last_ns;
		p->o.on_reply(p->o.ctx, &pp->info, pp->seq, user, kern);
	}
}

/* ---- open, start, close ---- */

static int open_socket(struct prober *p)
{
	/* Bit n set = ICMP type n not delivered. Without on_reply nothing is read, so
	 * nothing is let in; the kernel has the replies already. */
	struct icmp_filter filt = { .data = ~0u };
	int err;

	if (p->o.on_reply)
		filt.data &= ~(1u << ICMP_ECHOREPLY);
	p->fd = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (p->fd < 0) {
		err = -errno;
		pr_warn("failed to open a raw ICMP socket: %s\n", strerror(errno));
		return err;
	}
	if (setsockopt(p->fd, SOL_RAW, ICMP_FILTER, &filt, sizeof(filt))) {
		err = -errno;
		pr_warn("failed to set ICMP_FILTER: %s\n", strerror(errno));
		return err;
	}
	return 0;
}

int probe_open(struct prober **out, const struct probe_opts *opts)
{
	struct icmp_watch_opts io = { .node = opts->node, .mode = opts->tc_mode };
	struct prober *p;
	int err;

	if (!opts->base || !opts->on_change || !opts->node)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fd = -1;
	p->o = *opts;
	if (!p->o.interval_ms)
		p->o.interval_ms = PROBE_DEFAULT_INTERVAL_MS;
	if (!p->o.down_after_ms)
		p->o.down_after_ms = PROBE_DEFAULT_DOWN_AFTER_MS;
	p->cfg.interval_ns = p->o.interval_ms * NS_PER_MS;
	p->cfg.down_after_ns = p->o.down_after_ms * NS_PER_MS;
	if (verdict_check_config(&p->cfg)) {
		pr_warn("peer_down_after_ms %u must be at least %d probe intervals (%u ms)\n",
			p->o.down_after_ms, VERDICT_MIN_PROBES, VERDICT_MIN_PROBES * p->o.interval_ms);
		err = -EINVAL;
		goto cleanup;
	}
	/* One id per agent: its pid, as ping(8) does; never 0 (0 = off in the BPF). */
	p->echo_id = (uint16_t)getpid() ?: 1;
	io.echo_id = p->echo_id;
	err = open_socket(p);
	if (err)
		goto cleanup;
	err = icmp_watch_open(&p->iw, &io);
	if (err)
		goto cleanup;
	*out = p;
	return 0;
cleanup:
	probe_close(p);
	return err;
}

int probe_start(struct prober *p)
{
	struct timeval tv = { p->o.interval_ms / 1000, (p->o.interval_ms % 1000) * 1000L };

	p->ev_round = event_new(p->o.base, -1, EV_PERSIST, on_round, p);
	if (!p->ev_round || event_add(p->ev_round, &tv))
		return -ENOMEM;
	if (p->o.on_reply) {
		p->ev_read = event_new(p->o.base, p->fd, EV_READ | EV_PERSIST, on_readable, p);
		if (!p->ev_read || event_add(p->ev_read, NULL))
			return -ENOMEM;
	}
	on_round(-1, 0, p);
	return 0;
}

int probe_npeers(const struct prober *p)
{
	return p->npeers;
}

const struct probe_peer_info *probe_peer(const struct prober *p, int i)
{
	return i >= 0 && i < p->npeers ? &p->peers[i]->info : NULL;
}

uint16_t probe_echo_id(const struct prober *p)
{
	return p->echo_id;
}

const char *probe_pin_dir(const struct prober *p)
{
	return icmp_watch_pin_dir(p->iw);
}

enum icmp_watch_tc_mode probe_tc_mode(const struct prober *p)
{
	return icmp_watch_mode(p->iw);
}

void probe_close(struct prober *p)
{
	if (!p)
		return;
	if (p->ev_round)
		event_free(p->ev_round);
	if (p->ev_read)
		event_free(p->ev_read);
	for (int i = 0; i < p->npeers; i++) {
		verdict_free(&p->peers[i]->pv);
		free(p->peers[i]);
	}
	free(p->peers);
	free(p->msgs);
	free(p->iov);
	free(p->dst);
	free(p->pkt);
	free(p->keys);
	free(p->vals);
	free(p->byaddr);
	icmp_watch_close(p->iw);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

/* ---- events ---- */

const char *probe_report_state(enum verdict_state s)
{
	return s == VERDICT_UP || s == VERDICT_PASSIVE ? "up" : s == VERDICT_DOWN ? "down" : "unknown";
}

const char *probe_event_kind(enum verdict_state s)
{
	switch (s) {
	case VERDICT_UP:
		return "peer_up";
	case VERDICT_PASSIVE:
		return "peer_passive";
	case VERDICT_DOWN:
		return "peer_down";
	default:
		return "peer_unknown";
	}
}

static void add_age(struct evrec *r, const char *key, uint64_t ns)
{
	if (ns == VERDICT_NEVER)
		evrec_str(r, key, NULL);
	else
		evrec_uint(r, key, ns / NS_PER_MS);
}

static void add_us(struct evrec *r, const char *key, uint64_t ns)
{
	if (!ns)
		evrec_str(r, key, NULL);
	else
		evrec_double(r, key, ns / 1000.0, 1);
}

void probe_evrec(struct evrec *r, const char *node, const struct probe_peer_info *peer)
{
	const struct verdict_evidence *ev = &peer->ev;

	evrec_begin(r, NULL, node, probe_event_kind(ev->state));
	evrec_str(r, "peer", peer->id);
	evrec_str(r, "addr", peer->addr);
	evrec_str(r, "state", verdict_state_name(ev->state));
	evrec_str(r, "prev", verdict_state_name(ev->prev));
	evrec_str(r, "liveness", verdict_liveness(ev->state));
	add_age(r, "reply_age_ms", ev->reply_age_ns);
	add_age(r, "packet_age_ms", ev->packet_age_ns);
	evrec_uint(r, "window_ms", ev->window_ns / NS_PER_MS);
	evrec_uint(r, "probes_in_window", ev->probes_in_window);
	evrec_uint(r, "left_in_window", ev->left_in_window);
	evrec_uint(r, "replied_in_window", ev->replied_in_window);
	evrec_bool(r, "local_fault", ev->local_fault);
	evrec_double(r, "loss_ratio", ev->loss_ratio, 3);
	add_us(r, "rtt_us", ev->rtt_ns);
	add_us(r, "srtt_us", ev->srtt_ns);
	evrec_bool(r, "stalled", ev->stalled);
}
