/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one packet parser of flatline's BPF programs (bpf/icmp.bpf.c at tc, bpf/lease.bpf.c
 * at cgroup egress), in xdp-tools' parsing_helpers.h manner: a cursor over the linear data of the
 * packet and one inline helper per layer. Each helper checks its header against data_end before it
 * reads a byte of it and moves the cursor past the header only when it is whole.
 *
 *   parse_eth    Ethernet, then up to FL_MAX_VLAN 802.1Q / 802.1AD tags in the data
 *                (a tag the driver keeps out of band, skb->vlan_tci, is not in the data)
 *   parse_ipv4   IHL >= 5, total length >= IHL, options skipped, fragments flagged
 *   parse_ipv6   and its extension headers (hop-by-hop, routing, destination options,
 *                fragment, AH, mobility), at most FL_IPV6_MAX_EXT (a bounded loop)
 *   parse_ip     either, by the EtherType parse_eth returned
 *   parse_l3     a packet that starts at its IP header (cgroup_skb), by skb->protocol
 *   parse_tcp    doff >= 5, options within data_end
 *   parse_icmp   ICMP's 8-byte header (type, code, checksum, echo id and sequence)
 *   parse_icmp6  ICMPv6's, the same layout
 *
 * At tc, Ethernet devices only: data starts at the MAC header there (loopback has one
 * too). At cgroup_skb (ingress and egress) data starts at the IP header on every device,
 * and skb->protocol is its EtherType: parse_l3, no parse_eth. On an L3 device (tun, WireGuard,
 * ipip) the data starts at the IP header, and parse_eth reads an address as the EtherType: such
 * frames come out PARSE_NONE or PARSE_MALFORMED, never as a wrong TCP header. Include after
 * vmlinux.h, <bpf/bpf_endian.h> and bpf_consts.h. */
#ifndef FL_PARSE_H
#define FL_PARSE_H

#define FL_MAX_VLAN 2 /* VLAN tags walked (QinQ: an 802.1AD tag, then an 802.1Q one) */
/* IPv6 extension headers walked before the upper-layer header; a longer chain is
 * PARSE_EXT_LIMIT. Hosts send one or two. */
#define FL_IPV6_MAX_EXT 8
/* fl_ip.l4_len when the IP header gives no length: an IPv4 total length of 0 or an IPv6
 * payload length of 0 (BIG TCP GSO packets of more than 64 KiB, jumbograms). */
#define FL_LEN_UNKNOWN 0xffffffffu

struct cursor {
	void *pos; /* the next header */
	void *end; /* skb->data_end */
};

/* What a helper found. On anything but PARSE_OK the cursor stays where it was. */
enum parse_res {
	PARSE_OK = 0,	     /* the header is whole; the cursor is past it */
	PARSE_NONE = 1,	     /* not a protocol of this layer (ARP, a third VLAN tag, ...) */
	PARSE_MALFORMED = 2, /* impossible fields: IHL < 5, total length < IHL, version not
			      * the EtherType's; TCP: doff < 5 */
	PARSE_TRUNCATED = 3, /* the header runs past data_end (fl_ip.family 0: the IP
			      * header itself; set: a later header, the addresses valid) */
	PARSE_FRAGMENT = 4,  /* a non-first fragment: the addresses are valid, the
			      * upper-layer header is in the first fragment, not here */
	PARSE_EXT_LIMIT = 5, /* IPv6: more than FL_IPV6_MAX_EXT extension headers (the
			      * addresses are valid) */
};

/* One parsed IP header (and IPv6 extension headers). family is 0 until the addresses are
 * valid (they point into the packet). */
struct fl_ip {
	void *saddr; /* 4 or 16 bytes */
	void *daddr;
	__u32 l4_len; /* bytes from the upper-layer header to the end of the IP packet, by the
		       * IP header's length field (a lying one underflows: large), or
		       * FL_LEN_UNKNOWN */
	__u16 family; /* FL_AF_INET or FL_AF_INET6 (the socket API's values), 0 if none */
	__u8 proto;   /* the upper-layer protocol, after IPv6 extension headers */
	__u8 frag;    /* 1: the first fragment of a fragmented packet (its upper-layer
		       * header is here); non-first fragments are PARSE_FRAGMENT */
};

#ifndef FL_AF_INET
#define FL_AF_INET  2
#define FL_AF_INET6 10
#endif

/* Ethernet and up to FL_MAX_VLAN VLAN tags: *proto is the EtherType after them (network
 * order). PARSE_TRUNCATED if the frame is shorter than its header or a tag, PARSE_NONE
 * for a tag beyond FL_MAX_VLAN. */
static __always_inline enum parse_res parse_eth(struct cursor *c, __be16 *proto)
{
	struct ethhdr *eth = c->pos;
	struct vlan_hdr *vlan;
	void *pos;
	__be16 p;

	if ((void *)(eth + 1) > c->end)
		return PARSE_TRUNCATED;
	pos = eth + 1;
	p = eth->h_proto;
	for (int i = 0; i < FL_MAX_VLAN; i++) {
		if (p != bpf_htons(ETH_P_8021Q) && p != bpf_htons(ETH_P_8021AD))
			break;
		vlan = pos;
		if ((void *)(vlan + 1) > c->end)
			return PARSE_TRUNCATED;
		p = vlan->h_vlan_encapsulated_proto;
		pos = vlan + 1;
	}
	if (p == bpf_htons(ETH_P_8021Q) || p == bpf_htons(ETH_P_8021AD))
		return PARSE_NONE;
	c->pos = pos;
	*proto = p;
	return PARSE_OK;
}

/* IPv4, options skipped through IHL; the cursor ends at the upper-layer header. A first
 * fragment (MF, offset 0) is PARSE_OK with ip->frag set; a later one PARSE_FRAGMENT. */
static __always_inline enum parse_res parse_ipv4(struct cursor *c, struct fl_ip *p)
{
	struct iphdr *ip = c->pos;
	__u32 hlen, tot;

	if ((void *)(ip + 1) > c->end)
		return PARSE_TRUNCATED;
	if (ip->version != 4)
		return PARSE_MALFORMED;
	hlen = ip->ihl * 4;
	tot = bpf_ntohs(ip->tot_len);
	/* Total length 0: a BIG TCP packet (the kernel clears it above 64 KiB). */
	if (hlen < sizeof(*ip) || (tot && tot < hlen))
		return PARSE_MALFORMED;
	if (c->pos + hlen > c->end)
		return PARSE_TRUNCATED;
	p->family = FL_AF_INET;
	p->saddr = &ip->saddr;
	p->daddr = &ip->daddr;
	p->proto = ip->protocol;
	p->l4_len = tot ? tot - hlen : FL_LEN_UNKNOWN;
	if (ip->frag_off & bpf_htons(IP_OFFSET))
		return PARSE_FRAGMENT;
	p->frag = !!(ip->frag_off & bpf_htons(IP_MF));
	c->pos += hlen;
	return PARSE_OK;
}

/* IPv6 and its extension headers, at most FL_IPV6_MAX_EXT of them (a bounded loop). The
 * cursor ends at the upper-layer header; p->proto names it. A fragment header with offset
 * 0 (the first fragment) sets p->frag and the walk goes on; any other is PARSE_FRAGMENT. */
static __always_inline enum parse_res parse_ipv6(struct cursor *c, struct fl_ip *p)
{
	struct ipv6hdr *ip6 = c->pos;
	struct ipv6_opt_hdr *ext;
	struct frag_hdr *fh;
	__u32 plen;
	void *pos;
	__u8 next;

	if ((void *)(ip6 + 1) > c->end)
		return PARSE_TRUNCATED;
	if (ip6->version != 6)
		return PARSE_MALFORMED;
	p->family = FL_AF_INET6;
	p->saddr = &ip6->saddr;
	p->daddr = &ip6->daddr;
	plen = bpf_ntohs(ip6->payload_len);
	pos = ip6 + 1;
	next = ip6->nexthdr;
	for (int i = 0; i < FL_IPV6_MAX_EXT; i++) {
		switch (next) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
		case IPPROTO_MH:
			ext = pos;
			if ((void *)(ext + 1) > c->end)
				return PARSE_TRUNCATED;
			next = ext->nexthdr;
			pos += ((__u32)ext->hdrlen + 1) * 8;
			continue;
		case IPPROTO_AH:
			ext = pos;
			if ((void *)(ext + 1) > c->end)
				return PARSE_TRUNCATED;
			next = ext->nexthdr;
			pos += ((__u32)ext->hdrlen + 2) * 4;
			continue;
		case IPPROTO_FRAGMENT:
			fh = pos;
			if ((void *)(fh + 1) > c->end)
				return PARSE_TRUNCATED;
			next = fh->nexthdr;
			if (fh->frag_off & bpf_htons(IP6_OFFSET)) {
				p->proto = next;
				return PARSE_FRAGMENT;
			}
			p->frag = 1;
			pos = fh + 1;
			continue;
		}
		break;
	}
	switch (next) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_MH:
	case IPPROTO_AH:
	case IPPROTO_FRAGMENT:
		return PARSE_EXT_LIMIT;
	}
	p->proto = next;
	/* The extension headers' length as the distance walked: a sum kept in the loop
	 * would make each path through it a state of its own for the verifier. */
	p->l4_len = plen ? plen - (__u32)(pos - (void *)(ip6 + 1)) : FL_LEN_UNKNOWN;
	c->pos = pos;
	return PARSE_OK;
}

/* The IP header after an EtherType of parse_eth; PARSE_NONE if neither IPv4 nor IPv6. */
static __always_inline enum parse_res parse_ip(struct cursor *c, __be16 proto, struct fl_ip *p)
{
	if (proto == bpf_htons(ETH_P_IP))
		return parse_ipv4(c, p);
	if (proto == bpf_htons(ETH_P_IPV6))
		return parse_ipv6(c, p);
	return PARSE_NONE;
}

/* A packet whose data starts at the IP header (cgroup_skb programs): the cursor from
 * skb->data to skb->data_end (the linear part: a header beyond it is PARSE_TRUNCATED),
 * the IP version by skb->protocol. */
static __always_inline enum parse_res parse_l3(struct __sk_buff *skb, struct cursor *c,
					       struct fl_ip *p)
{
	c->pos = (void *)(long)skb->data;
	c->end = (void *)(long)skb->data_end;
	return parse_ip(c, (__be16)skb->protocol, p);
}

/* TCP: *tcp is set whenever the fixed 20 bytes are within data_end (ports and flags can
 * be read), even if the result is not PARSE_OK: PARSE_MALFORMED for doff < 5,
 * PARSE_TRUNCATED for options past data_end. The cursor ends at the payload. */
static __always_inline enum parse_res parse_tcp(struct cursor *c, struct tcphdr **tcp)
{
	struct tcphdr *th = c->pos;
	__u32 hlen;

	if ((void *)(th + 1) > c->end)
		return PARSE_TRUNCATED;
	*tcp = th;
	hlen = th->doff * 4;
	if (hlen < sizeof(*th))
		return PARSE_MALFORMED;
	if (c->pos + hlen > c->end)
		return PARSE_TRUNCATED;
	c->pos += hlen;
	return PARSE_OK;
}

/* ICMP (RFC 792): type, code, checksum and, for an echo, id and sequence. */
static __always_inline enum parse_res parse_icmp(struct cursor *c, struct icmphdr **icmp)
{
	struct icmphdr *h = c->pos;

	if ((void *)(h + 1) > c->end)
		return PARSE_TRUNCATED;
	*icmp = h;
	c->pos = h + 1;
	return PARSE_OK;
}

/* ICMPv6 (RFC 4443): the same 8-byte layout as ICMP (echo: 4.1 and 4.2). */
static __always_inline enum parse_res parse_icmp6(struct cursor *c, struct icmp6hdr **icmp6)
{
	struct icmp6hdr *h = c->pos;

	if ((void *)(h + 1) > c->end)
		return PARSE_TRUNCATED;
	*icmp6 = h;
	c->pos = h + 1;
	return PARSE_OK;
}

#endif
