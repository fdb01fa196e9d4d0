/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader for bpf/icmp.bpf.c: the peer table in the kernel, and the tc programs on
 * the interfaces the peers are reached through. */
#ifndef FL_ICMP_WATCH_H
#define FL_ICMP_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <linux/types.h>
#include "icmp_event.h"

#define ICMP_WATCH_MAX_IFACES 16
/* The clsact filters' priority, and their handle: ICMP_WATCH_TC_HANDLE_BASE | a hash of the
 * node id, so that agents of different nodes sharing an interface (test setups)
 * keep apart, and a later agent of the same node recognises its own stale filters
 * (with the program names fl_icmp_ingress / fl_icmp_egress). */
#define ICMP_WATCH_TC_HANDLE_BASE 0xf1000000u
#define ICMP_WATCH_TC_PRIO	  1
/* FLATLINE_TC=clsact (or tcx) in the environment overrides ICMP_WATCH_TC_AUTO. */
#define ICMP_WATCH_TC_ENV "FLATLINE_TC"

enum icmp_watch_tc_mode {
	ICMP_WATCH_TC_AUTO = 0,	  /* tcx links where the kernel has them (6.6+), else clsact */
	ICMP_WATCH_TC_TCX = 1,	  /* tcx links only */
	ICMP_WATCH_TC_CLSACT = 2, /* clsact qdisc + direct-action filters */
};

struct icmp_watch_opts {
	const char *node; /* pins go under FL_PIN_ROOT/<node>/ */
	__u16 echo_id;	  /* ICMP echo id of this agent's probes, not 0 */
	enum icmp_watch_tc_mode mode;
};

struct icmp_watch;

/* Checks the kernel, mounts bpffs if needed, loads and pins fl_peers and
 * fl_icmp_cnt (stale pins of a dead agent for the node are replaced: hold the
 * node's lock). Attaches nothing yet. -errno, with a message. */
int icmp_watch_open(struct icmp_watch **out, const struct icmp_watch_opts *opts);
/* Attaches both programs to the interface (once per ifindex). A stale clsact
 * filter of a killed agent on it is replaced. -errno, with a message. */
int icmp_watch_attach(struct icmp_watch *iw, int ifindex);
/* Detaches both programs from the interface (nothing if they are not there). gone:
 * the interface was deleted, and our links or filters with it. */
void icmp_watch_detach(struct icmp_watch *iw, int ifindex, bool gone);
/* How the programs are attached: ICMP_WATCH_TC_TCX or ICMP_WATCH_TC_CLSACT (AUTO before any). */
enum icmp_watch_tc_mode icmp_watch_mode(const struct icmp_watch *iw);
/* Peers by their key (icmp_watch_key_parse): IPv4 or IPv6. */
int icmp_watch_add_peer(struct icmp_watch *iw, const struct fl_peer_key *k);
int icmp_watch_del_peer(struct icmp_watch *iw, const struct fl_peer_key *k);
int icmp_watch_peer_stats(const struct icmp_watch *iw, const struct fl_peer_key *k,
			  struct fl_peer_stats *st);
/* Every peer's entry at once (one BPF_MAP_LOOKUP_BATCH where the kernel has it):
 * up to max of them into keys[] and vals[], their number in *n. -errno. */
int icmp_watch_read_all(const struct icmp_watch *iw, struct fl_peer_key *keys,
			struct fl_peer_stats *vals, uint32_t max, uint32_t *n);
/* Ignored packets by enum fl_icmp_counter, summed over CPUs. */
uint64_t icmp_watch_counter(const struct icmp_watch *iw, enum fl_icmp_counter c);
const char *icmp_watch_pin_dir(const struct icmp_watch *iw);
/* Detaches (removing a clsact qdisc only if this agent created it and no other
 * filter is on it), removes the pins. NULL is fine. */
void icmp_watch_close(struct icmp_watch *iw);

/* An IPv4 dotted quad or an IPv6 address as a fl_peers key; -EINVAL if neither. */
int icmp_watch_key_parse(const char *s, struct fl_peer_key *k);
/* Orders keys: family, then address bytes (IPv4 before IPv6); 0 when equal. */
int icmp_watch_key_cmp(const struct fl_peer_key *a, const struct fl_peer_key *b);
/* The key's address as text (INET6_ADDRSTRLEN is enough). */
const char *icmp_watch_key_str(const struct fl_peer_key *k, char *buf, size_t len);
/* The interface the kernel routes dst through (RTM_GETROUTE, either family);
 * -errno (-ENETUNREACH when there is no route, or an unreachable/blackhole one). */
int icmp_watch_route_ifindex(const struct fl_peer_key *dst, int *ifindex);
/* 1 when the interface is up with carrier (IFF_UP and IFF_RUNNING), 0 if not,
 * -errno if it cannot be told. */
int icmp_watch_if_carrier(int ifindex);
const char *icmp_watch_mode_name(enum icmp_watch_tc_mode m);

/* Route and link notifications (rtnetlink groups: links, IPv4 and IPv6 routes) on
 * a non-blocking socket for the caller's event loop; -errno. */
int icmp_watch_nl_open(void);
#define ICMP_WATCH_NL_MAX_GONE 16
struct icmp_watch_nl_news {
	bool routes; /* a route was added, changed or removed (or messages were lost) */
	bool links;  /* a link was added, changed or removed */
	int gone[ICMP_WATCH_NL_MAX_GONE]; /* interfaces deleted (RTM_DELLINK) */
	int ngone;
};
/* Reads every pending notification into *news (zeroed first). 0, or -errno. */
int icmp_watch_nl_read(int fd, struct icmp_watch_nl_news *news);
__u32 icmp_watch_tc_handle(const char *node);

#endif
