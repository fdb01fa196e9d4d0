/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Macro constants that BTF does not carry, for BPF code only (which must not
 * include <linux/...>). */
#ifndef FL_BPF_CONSTS_H
#define FL_BPF_CONSTS_H

#define TC_ACT_OK   0
#define TC_ACT_SHOT 2
/* "Not my business, go on": the next tcx program or clsact filter runs and the
 * packet's fate is theirs (TCX_NEXT has the same value). */
#define TC_ACT_UNSPEC	    (-1)
#define ETH_P_IP	    0x0800
#define ETH_P_IPV6	    0x86DD
#define ETH_P_8021Q	    0x8100 /* VLAN tag (IEEE 802.1Q) */
#define ETH_P_8021AD	    0x88A8 /* service VLAN tag, the outer one of QinQ (802.1ad) */
#define ETH_HLEN	    14
#define IPPROTO_ICMP	    1
#define IPPROTO_TCP	    6
#define ICMP_ECHOREPLY	    0
#define ICMP_ECHO	    8
#define IPPROTO_ICMPV6	    58
#define ICMPV6_ECHO_REQUEST 128
#define ICMPV6_ECHO_REPLY   129
/* IPv6 extension headers (RFC 8200 4.1, RFC 4302) */
#define IPPROTO_HOPOPTS	 0
#define IPPROTO_ROUTING	 43
#define IPPROTO_FRAGMENT 44
#define IPPROTO_AH	 51
#define IPPROTO_DSTOPTS	 60
#define IPPROTO_MH	 135
#define IP_MF		 0x2000
#define IP_OFFSET	 0x1fff
#define IP6_OFFSET	 0xfff8 /* the fragment header's offset bits (RFC 8200 4.5) */

#endif
