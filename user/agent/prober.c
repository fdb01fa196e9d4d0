// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The peer prober: see prober.h. One timer, one raw socket; each round sends every
 * peer its probe (one sendmmsg), then reads the kernel's view of each peer and
 * judges it. Nothing blocks: the socket is non-blocking and the only waits are the
 * caller's event loop. Routes and links (where each peer's probes go out, followed
 * as they change) are prober_route.c; what both share, prober_layers.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <linux/icmp.h>
#include <netinet/icmp6.h>
#include <netinet/ip.h>
#include "common/clock.h"
#include "common/log.h"
#include "agent/prober_layers.h"

uint16_t probe_csum16(const void *p, size_t n)
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

/* ---- peers ---- */

static int cmp_addr(const void *a, const void *b)
{
	return icmp_watch_key_cmp(&(*(struct probe_peer *const *)a)->key,
				  &(*(struct probe_peer *const *)b)->key);
}

static struct probe_peer *peer_by_key(struct prober *p, const struct fl_peer_key *k)
{
	struct probe_peer key, *kp = &key, **found;

	key.key = *k;
	// NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers
	found = bsearch(&kp, p->byaddr, p->npeers, sizeof(*p->byaddr), cmp_addr);
	return found ? *found : NULL;
}

static int open_socket6(struct prober *p);

/* Room for twice the peers, in the list and in the per-round scratch. */
static int grow(struct prober *p)
{
	int cap = p->cap ? 2 * p->cap : 16;
	void *v;

#define GROW(field)                                                                                \
	do {                                                                                       \
		v = realloc(p->field, cap * sizeof(*p->field));                                    \
		if (!v)                                                                            \
			return -ENOMEM;                                                            \
		p->field = v;                                                                      \
	} while (0)
	GROW(peers); // NOLINT(bugprone-sizeof-expression): array of pointers
	GROW(msgs);
	GROW(iov);
	GROW(dst);
	GROW(sendq); // NOLINT(bugprone-sizeof-expression): array of pointers
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
	struct fl_peer_key a;
	int err;

	if (icmp_watch_key_parse(addr, &a)) {
		pr_warn("failed to add peer %s: '%s' is not an IPv4 address or an IPv6 address\n",
			id, addr);
		return -EINVAL;
	}
	if (strlen(id) >= sizeof(pp->id)) {
		pr_warn("failed to add peer %s: id longer than 64 bytes\n", id);
		return -EINVAL;
	}
	for (int i = 0; i < p->npeers; i++) {
		if (!icmp_watch_key_cmp(&p->peers[i]->key, &a) || !strcmp(p->peers[i]->id, id)) {
			pr_warn("failed to add peer %s (%s): already probed as %s (%s)\n", id, addr,
				p->peers[i]->id, p->peers[i]->addr_str);
			return -EEXIST;
		}
	}
	if (p->npeers == PROBE_MAX_PEERS) {
		pr_warn("failed to add peer %s: at most %d peers\n", id, PROBE_MAX_PEERS);
		return -E2BIG;
	}
	if (a.family == FL_AF_INET6 && p->fd6 < 0) {
		err = open_socket6(p);
		if (err)
			return err;
	}
	if (p->npeers == p->cap && grow(p))
		return -ENOMEM;
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	snprintf(pp->id, sizeof(pp->id), "%s", id);
	icmp_watch_key_str(&a, pp->addr_str, sizeof(pp->addr_str));
	pp->key = a;
	pp->info.id = pp->id;
	pp->info.addr = pp->addr_str;
	err = verdict_init(&pp->pv, &p->cfg);
	if (!err)
		err = icmp_watch_add_peer(p->iw, &a);
	if (err) {
		pr_warn("failed to add peer %s (%s): %s\n", id, addr, strerror(-err));
		verdict_free(&pp->pv);
		free(pp);
		return err;
	}
	pp->info.ev = pp->pv.ev;
	probe_find_route(p, pp, (uint64_t)fl_mono_ns());
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

/* The echo request to pp in slot i of the round's scratch: ICMP or ICMPv6 (whose
 * checksum the kernel fills in on raw ICMPv6 sockets). */
static void build_probe(struct prober *p, struct probe_peer *pp, int i, uint64_t now)
{
	struct icmphdr *h = (struct icmphdr *)p->pkt[i];
	uint8_t *payload = p->pkt[i] + sizeof(*h);
	bool v6 = pp->key.family == FL_AF_INET6;

	typeof(pp->sent[0]) *sent;

	pp->seq++;
	pp->probes++;
	pp->last_send_ns = now;
	sent = &pp->sent[pp->seq % PROBE_SENT_RING];
	sent->seq = pp->seq;
	sent->ns = now;
	/* 16 bytes never fail to come once the pool is ready (getrandom(2)); if they did,
	 * this probe is sent but no reply to it counts. */
	if (getrandom(sent->payload, PROBE_PAYLOAD, GRND_NONBLOCK) != PROBE_PAYLOAD) {
		if (!p->rand_warned)
			pr_warn("failed to draw a probe's random bytes: %s (its reply will not "
				"count)\n",
				strerror(errno));
		p->rand_warned = true;
		sent->ns = 0;
	}
	memset(h, 0, sizeof(*h));
	h->type = v6 ? ICMP6_ECHO_REQUEST : ICMP_ECHO;
	h->un.echo.id = htons(p->echo_id);
	h->un.echo.sequence = htons(pp->seq);
	memcpy(payload, sent->payload, PROBE_PAYLOAD);
	if (!v6)
		h->checksum = probe_csum16(p->pkt[i], sizeof(p->pkt[i]));
	memset(&p->dst[i], 0, sizeof(p->dst[i]));
	if (v6) {
		p->dst[i].sin6_family = AF_INET6;
		memcpy(&p->dst[i].sin6_addr, pp->key.addr6, 16);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)&p->dst[i];

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, pp->key.addr, 4);
	}
	p->iov[i] = (struct iovec){p->pkt[i], sizeof(p->pkt[i])};
	p->msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &p->dst[i],
						  .msg_namelen = v6 ? sizeof(struct sockaddr_in6)
								    : sizeof(struct sockaddr_in),
						  .msg_iov = &p->iov[i],
						  .msg_iovlen = 1}};
	p->sendq[i] = pp;
}

/* Sends slots [0, n) on fd, one sendmmsg as long as it goes. */
static void send_batch(struct prober *p, int fd, int n)
{
	int off = 0;

	while (off < n) {
		int sent = sendmmsg(fd, p->msgs + off, n - off, 0);
		struct probe_peer *pp;

		if (sent > 0) {
			for (int i = off; i < off + sent; i++)
				p->sendq[i]->last_errno = 0;
			off += sent;
			continue;
		}
		if (errno == EINTR)
			continue;
		/* The error belongs to the first message not sent: note it, go on. */
		pp = p->sendq[off++];
		pp->info.send_errors++;
		if (pp->last_errno != errno)
			pr_debug("failed to send a probe to %s (%s): %s\n", pp->id, pp->addr_str,
				 strerror(errno));
		pp->last_errno = errno;
	}
}

/* Every peer its probe: the IPv4 ones in one batch, the IPv6 ones in another. */
static void send_all(struct prober *p, uint64_t now)
{
	for (int fam = 0; fam < 2; fam++) {
		__u32 want = fam ? FL_AF_INET6 : FL_AF_INET;
		int n = 0;

		for (int i = 0; i < p->npeers; i++)
			if (p->peers[i]->key.family == want)
				build_probe(p, p->peers[i], n++, now);
		if (n)
			send_batch(p, fam ? p->fd6 : p->fd, n);
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
		p->carrier[p->ncarrier++] = (typeof(p->carrier[0])){ifindex, c};
	return c;
}

static void log_change(const struct probe_peer_info *pi)
{
	const struct verdict_evidence *ev = &pi->ev;

	if (ev->state == VERDICT_DOWN || ev->state == VERDICT_LOCAL_FAULT)
		pr_info(
		    "peer %s (%s) is %s: nothing from it for %llu ms, %llu of %llu probes "
		    "left this host%s\n",
		    pi->id, pi->addr, ev->state == VERDICT_DOWN ? "down" : "unreachable from here",
		    (unsigned long long)(ev->packet_age_ns == VERDICT_NEVER ? ev->window_ns
									    : ev->packet_age_ns) /
			NS_PER_MS,
		    (unsigned long long)ev->left_in_window,
		    (unsigned long long)ev->probes_in_window,
		    ev->state == VERDICT_LOCAL_FAULT ? " (no route or no carrier here)"
		    : ev->local_fault		     ? " (local fault?)"
						     : "");
	else
		pr_info("peer %s (%s) is %s (was %s)\n", pi->id, pi->addr,
			verdict_state_name(ev->state), verdict_state_name(ev->prev));
}

/* Judges a peer on the kernel's figures, already in pp->info.st. */
static void judge(struct prober *p, struct probe_peer *pp, uint64_t now)
{
	struct verdict_obs o = {.now_ns = now, .probes = pp->probes};
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
	o.no_route = !pp->ifindex;
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
		err = icmp_watch_peer_stats(p->iw, &pp->key, &pp->info.st);
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
			probe_reroute(p, p->peers[i], now);
	send_all(p, now);
	read_stats(p);
	for (int i = 0; i < p->npeers; i++)
		judge(p, p->peers[i], now);
}

/* ---- replies in userspace (measurements only) ---- */

/* The peer of an address with the echo's sequence, timed. data: the echo's data (len
 * bytes), which must begin with the probe's random bytes: anything else is no answer to
 * it (forged without the request, or corrupted) and is dropped here. */
static void got_reply(struct prober *p, const struct fl_peer_key *from, uint16_t id, uint16_t seq,
		      const uint8_t *data, size_t len, uint64_t now)
{
	struct probe_peer *pp;
	uint64_t kern = 0, sent_ns;
	typeof(pp->sent[0]) *sent;

	if (id != p->echo_id)
		return;
	pp = peer_by_key(p, from);
	if (!pp)
		return;
	sent = &pp->sent[seq % PROBE_SENT_RING];
	if (sent->seq != seq)
		return; /* older than the ring: nothing to check it against */
	if (len < PROBE_PAYLOAD || memcmp(data, sent->payload, PROBE_PAYLOAD) != 0) {
		if (!pp->info.forged++)
			pr_info("peer %s (%s): an echo reply with our id and seq %u but not the "
				"probe's data: not counted (forged or corrupted; said once)\n",
				pp->id, pp->addr_str, seq);
		return;
	}
	if (sent->ns) {
		/* A round trip: the request left, the reply got all the way in. */
		sent_ns = sent->ns;
		sent->ns = 0; /* a duplicate reply is no second round trip */
		if (sent_ns > pp->info.rt_sent_ns)
			pp->info.rt_sent_ns = sent_ns;
		pp->info.rt_recv_ns = now;
		pp->info.round_trips++;
		if (p->o.on_round_trip)
			p->o.on_round_trip(p->o.ctx, &pp->info, sent_ns);
	}
	if (!p->o.on_reply || seq != pp->seq)
		return; /* late: its send time is gone */
	if (!icmp_watch_peer_stats(p->iw, &pp->key, &pp->info.st) &&
	    pp->info.st.last_seq == pp->seq)
		kern = pp->info.st.rtt_last_ns;
	p->o.on_reply(p->o.ctx, &pp->info, pp->seq, now - pp->last_send_ns, kern);
}

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
		struct fl_peer_key k = {.family = FL_AF_INET};
		const struct icmphdr *h;
		uint64_t now;
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
		if (h->type != ICMP_ECHOREPLY)
			continue;
		memcpy(k.addr, &ip->saddr, 4);
		got_reply(p, &k, ntohs(h->un.echo.id), ntohs(h->un.echo.sequence),
			  buf + hlen + sizeof(*h), (size_t)n - hlen - sizeof(*h), now);
	}
}

/* ICMPv6 raw sockets deliver the ICMPv6 message alone, without the IPv6 header. */
static void on_readable6(evutil_socket_t fd, short what, void *arg)
{
	struct prober *p = arg;
	uint8_t buf[1500];
	struct sockaddr_in6 from;
	socklen_t flen;
	ssize_t n;

	(void)what;
	for (;;) {
		struct fl_peer_key k = {.family = FL_AF_INET6};
		const struct icmp6_hdr *h = (const struct icmp6_hdr *)buf;

		flen = sizeof(from);
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
		if (n < 0)
			return; /* EAGAIN: drained */
		if ((size_t)n < sizeof(*h) || h->icmp6_type != ICMP6_ECHO_REPLY)
			continue;
		memcpy(k.addr6, &from.sin6_addr, 16);
		got_reply(p, &k, ntohs(h->icmp6_id), ntohs(h->icmp6_seq), buf + sizeof(*h),
			  (size_t)n - sizeof(*h), (uint64_t)fl_mono_ns());
	}
}

/* ---- open, start, close ---- */

/* Binds a raw socket to the node's address of its family, so that the echoes leave
 * from it on a host with several (the peers watch that address). One that cannot be
 * bound (not local) is said once and left to the routing table's pick. */
static void bind_source(const struct prober *p, int fd, int family)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	const char *a = p->o.src_addr;

	if (!a || !a[0])
		return;
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		if (inet_pton(AF_INET, a, &in->sin_addr) != 1)
			return;
		in->sin_family = AF_INET;
		len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		if (inet_pton(AF_INET6, a, &in6->sin6_addr) != 1)
			return;
		in6->sin6_family = AF_INET6;
		len = sizeof(*in6);
	}
	if (bind(fd, (struct sockaddr *)&ss, len))
		pr_warn("failed to bind the echoes' source to the node's address %s: %s; they "
			"leave from the address the route picks\n",
			a, strerror(errno));
}

static int open_socket(struct prober *p)
{
	/* Bit n set = ICMP type n not delivered: echo replies only. They are read
	 * here because only a reply that reached a socket proves a round trip. */
	struct icmp_filter filt = {.data = ~(1u << ICMP_ECHOREPLY)};
	int err;

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
	bind_source(p, p->fd, AF_INET);
	return 0;
}

/* The raw ICMPv6 socket, with the first IPv6 peer; read like the ICMP one. */
static int open_socket6(struct prober *p)
{
	struct icmp6_filter filt;
	int err;

	ICMP6_FILTER_SETBLOCKALL(&filt);
	ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &filt); /* round trips: always read */
	p->fd6 = socket(AF_INET6, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMPV6);
	if (p->fd6 < 0) {
		err = -errno;
		pr_warn("failed to open a raw ICMPv6 socket: %s\n", strerror(errno));
		return err;
	}
	if (setsockopt(p->fd6, IPPROTO_ICMPV6, ICMP6_FILTER, &filt, sizeof(filt))) {
		err = -errno;
		pr_warn("failed to set ICMP6_FILTER: %s\n", strerror(errno));
		close(p->fd6);
		p->fd6 = -1;
		return err;
	}
	bind_source(p, p->fd6, AF_INET6);
	if (p->o.on_reply && p->ev_round) {
		p->ev_read6 = event_new(p->o.base, p->fd6, EV_READ | EV_PERSIST, on_readable6, p);
		if (!p->ev_read6 || event_add(p->ev_read6, NULL))
			return -ENOMEM;
	}
	return 0;
}

int probe_open(struct prober **out, const struct probe_opts *opts)
{
	struct icmp_watch_opts io = {.node = opts->node, .mode = opts->tc_mode};
	struct prober *p;
	int err;

	if (!opts->base || !opts->on_change || !opts->node)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fd = -1;
	p->fd6 = -1;
	p->nl_fd = -1;
	p->o = *opts;
	if (!p->o.interval_ms)
		p->o.interval_ms = PROBE_DEFAULT_INTERVAL_MS;
	if (!p->o.down_after_ms)
		p->o.down_after_ms = PROBE_DOWN_AFTER_ROUNDS * p->o.interval_ms;
	p->cfg.interval_ns = p->o.interval_ms * NS_PER_MS;
	p->cfg.down_after_ns = p->o.down_after_ms * NS_PER_MS;
	if (verdict_check_config(&p->cfg)) {
		pr_warn("peer_down_after_ms %u must be at least %d probe intervals (%u ms)\n",
			p->o.down_after_ms, VERDICT_MIN_PROBES,
			VERDICT_MIN_PROBES * p->o.interval_ms);
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
	struct timeval tv = {p->o.interval_ms / 1000, (p->o.interval_ms % 1000) * 1000L};

	p->ev_round = event_new(p->o.base, -1, EV_PERSIST, on_round, p);
	if (!p->ev_round || event_add(p->ev_round, &tv))
		return -ENOMEM;
	/* Always read: only a reply that reached this socket proves a round trip. */
	p->ev_read = event_new(p->o.base, p->fd, EV_READ | EV_PERSIST, on_readable, p);
	if (!p->ev_read || event_add(p->ev_read, NULL))
		return -ENOMEM;
	if (p->fd6 >= 0) {
		p->ev_read6 = event_new(p->o.base, p->fd6, EV_READ | EV_PERSIST, on_readable6, p);
		if (!p->ev_read6 || event_add(p->ev_read6, NULL))
			return -ENOMEM;
	}
	if (probe_follow_routes(p))
		return -ENOMEM;
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
	if (p->ev_read6)
		event_free(p->ev_read6);
	for (int i = 0; i < p->npeers; i++) {
		verdict_free(&p->peers[i]->pv);
		free(p->peers[i]);
	}
	free(p->peers);
	free(p->msgs);
	free(p->iov);
	free(p->dst);
	free(p->sendq);
	free(p->pkt);
	free(p->keys);
	free(p->vals);
	free(p->byaddr);
	icmp_watch_close(p->iw);
	if (p->fd >= 0)
		close(p->fd);
	if (p->fd6 >= 0)
		close(p->fd6);
	if (p->ev_nl)
		event_free(p->ev_nl);
	if (p->nl_fd >= 0)
		close(p->nl_fd);
	free(p);
}
