// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Loader for bpf/icmp.bpf.c. tcx links where the kernel has them: they live as long
 * as this process's file descriptors, so a SIGKILLed agent leaves nothing attached.
 * Elsewhere clsact direct-action filters at a fixed handle and priority, which the
 * next agent recognises (by program name) and replaces; a clsact qdisc is removed
 * only by the agent that created it, and only when no other filter is on it. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kern/icmp_watch.h"
#include "common/log.h"
#include "kern/loader.h"
#include "icmp.skel.h"

/* Linux 6.6 UAPI ("bpf: Add fd-based tcx multi-prog infra with link support"): the
 * build host's <linux/bpf.h> may predate it. Values are fixed ABI. */
#define ICMP_WATCH_BPF_TCX_INGRESS 46
#define ICMP_WATCH_BPF_TCX_EGRESS  47
#define ICMP_WATCH_BPF_F_BEFORE	   (1U << 3)

struct icmp_watch_iface {
	int ifindex;
	enum icmp_watch_tc_mode mode;
	int link_in, link_out;	    /* tcx link fds, -1 if none */
	bool filter_in, filter_out; /* clsact filters of ours in place */
	bool made_qdisc;	    /* this agent created the clsact qdisc */
	__u32 handle;		    /* of our clsact filters */
};

struct icmp_watch {
	struct fl_icmp *skel;
	enum icmp_watch_tc_mode want; /* as asked (or FLATLINE_TC) */
	enum icmp_watch_tc_mode mode; /* as attached: tcx or clsact */
	struct icmp_watch_iface ifaces[ICMP_WATCH_MAX_IFACES];
	int nifaces;
	char pin_dir[128]; /* FL_PIN_ROOT/<node> */
	__u32 tc_handle;   /* icmp_watch_tc_handle(node) */
};

#define ICMP_WATCH_NPINS 2
static void pinned_maps(struct fl_icmp *skel, struct bpf_map **maps)
{
	maps[0] = skel->maps.fl_peers;
	maps[1] = skel->maps.fl_icmp_cnt;
}

/* FNV-1a of the node id, folded into the low 24 bits. */
__u32 icmp_watch_tc_handle(const char *node)
{
	__u32 h = 2166136261u;

	for (const unsigned char *c = (const unsigned char *)node; *c; c++)
		h = (h ^ *c) * 16777619u;
	return ICMP_WATCH_TC_HANDLE_BASE | ((h ^ (h >> 24)) & 0xffffff);
}

const char *icmp_watch_mode_name(enum icmp_watch_tc_mode m)
{
	return m == ICMP_WATCH_TC_TCX ? "tcx" : m == ICMP_WATCH_TC_CLSACT ? "clsact" : "auto";
}

/* ---- netlink: route lookup, filter count ---- */

typedef int (*nl_msg_fn)(const struct nlmsghdr *nh, void *arg);

/* Sends one request, hands every reply message to cb until the end of a dump or
 * the single answer. The kernel's error (negative errno) is returned. */
static int nl_talk(struct nlmsghdr *req, nl_msg_fn cb, void *arg)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	bool dump = req->nlmsg_flags & NLM_F_DUMP;
	char buf[16384];
	int fd, err = 0, done = 0;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendto(fd, req, req->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		goto cleanup;
	}
	while (!done && !err) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (nh->nlmsg_type == NLMSG_ERROR) {
				err = ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
				done = 1;
				break;
			}
			err = cb(nh, arg);
			if (err)
				break;
		}
		if (!dump)
			done = 1;
	}
cleanup:
	close(fd);
	return err;
}

struct route_answer {
	int oif;
	unsigned char type; /* RTN_UNICAST, RTN_UNREACHABLE, ... */
};

static int route_msg(const struct nlmsghdr *nh, void *arg)
{
	const struct rtmsg *rt = NLMSG_DATA(nh);
	struct route_answer *ans = arg;
	int len = RTM_PAYLOAD(nh);
	const struct rtattr *a;

	if (nh->nlmsg_type != RTM_NEWROUTE)
		return 0;
	ans->type = rt->rtm_type;
	for (a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= sizeof(int))
			memcpy(&ans->oif, RTA_DATA(a), sizeof(int));
	return 0;
}

int icmp_watch_key_parse(const char *s, struct fl_peer_key *k)
{
	memset(k, 0, sizeof(*k));
	if (inet_pton(AF_INET, s, k->addr) == 1) {
		k->family = FL_AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, k->addr6) == 1) {
		k->family = FL_AF_INET6;
		return 0;
	}
	return -EINVAL;
}

int icmp_watch_key_cmp(const struct fl_peer_key *a, const struct fl_peer_key *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->addr6, b->addr6, sizeof(a->addr6));
}

const char *icmp_watch_key_str(const struct fl_peer_key *k, char *buf, size_t len)
{
	if (!inet_ntop(k->family == FL_AF_INET6 ? AF_INET6 : AF_INET, k->addr6, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

int icmp_watch_route_ifindex(const struct fl_peer_key *dst, int *ifindex)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		struct rtattr dst_attr;
		__u8 dst[16];
	} req = {
	    .nh = {.nlmsg_type = RTM_GETROUTE, .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1},
	    .dst_attr = {.rta_type = RTA_DST},
	};
	struct route_answer ans = {};
	size_t alen = dst->family == FL_AF_INET6 ? 16 : 4;
	int err;

	_Static_assert(sizeof(req) == NLMSG_LENGTH(sizeof(struct rtmsg)) + RTA_LENGTH(16),
		       "no padding in the route request");
	req.rt.rtm_family = dst->family == FL_AF_INET6 ? AF_INET6 : AF_INET;
	req.rt.rtm_dst_len = alen * 8;
	req.dst_attr.rta_len = RTA_LENGTH(alen);
	memcpy(req.dst, dst->addr6, alen);
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)) + RTA_LENGTH(alen);
	err = nl_talk(&req.nh, route_msg, &ans);
	if (err)
		return err;
	/* An unreachable, prohibit or blackhole route names no device (IPv6: loopback). */
	if (!ans.oif || ans.type == RTN_UNREACHABLE || ans.type == RTN_BLACKHOLE ||
	    ans.type == RTN_PROHIBIT || ans.type == RTN_THROW)
		return -ENETUNREACH;
	*ifindex = ans.oif;
	return 0;
}

static int count_msg(const struct nlmsghdr *nh, void *arg)
{
	if (nh->nlmsg_type == RTM_NEWTFILTER)
		(*(int *)arg)++;
	return 0;
}

/* Filters (of anyone) under a clsact parent, or -errno. */
static int count_filters(int ifindex, __u32 parent)
{
	struct {
		struct nlmsghdr nh;
		struct tcmsg tc;
	} req = {
	    .nh = {.nlmsg_len = sizeof(req),
		   .nlmsg_type = RTM_GETTFILTER,
		   .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		   .nlmsg_seq = 1},
	    .tc = {.tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex, .tcm_parent = parent},
	};
	int n = 0, err;

	err = nl_talk(&req.nh, count_msg, &n);
	return err ? err : n;
}

int icmp_watch_if_carrier(int ifindex)
{
	struct ifreq ifr = {};
	int fd, err;

	if (!if_indextoname(ifindex, ifr.ifr_name))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = ioctl(fd, SIOCGIFFLAGS, &ifr) ? -errno : 0;
	close(fd);
	if (err)
		return err;
	/* IFF_RUNNING: up, with carrier, operationally up (dev_get_flags()). */
	return (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
}

/* ---- notifications ---- */

int icmp_watch_nl_open(void)
{
	struct sockaddr_nl sa = {
	    .nl_family = AF_NETLINK,
	    .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE,
	};
	int fd, err;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int icmp_watch_nl_read(int fd, struct icmp_watch_nl_news *news)
{
	char buf[16384];

	memset(news, 0, sizeof(*news));
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == ENOBUFS) {
				/* The kernel dropped some: anything may have changed. */
				news->routes = news->links = true;
				continue;
			}
			return -errno;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
			switch (nh->nlmsg_type) {
			case RTM_NEWROUTE:
			case RTM_DELROUTE:
				news->routes = true;
				break;
			case RTM_DELLINK:
				if (news->ngone < ICMP_WATCH_NL_MAX_GONE &&
				    nh->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg)))
					news->gone[news->ngone++] =
					    ((struct ifinfomsg *)NLMSG_DATA(nh))->ifi_index;
				news->links = true;
				break;
			case RTM_NEWLINK:
				news->links = true;
				break;
			}
		}
	}
}

/* ---- attaching ---- */

static const char *ifname(int ifindex, char *buf)
{
	if (!if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "if%d", ifindex);
	return buf;
}

static int attach_tcx(struct icmp_watch *iw, struct icmp_watch_iface *ifc)
{
	/* First in the chain: it only looks, and sees packets before anyone drops them. */
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = ICMP_WATCH_BPF_F_BEFORE);
	int in, out, err;

	in = bpf_link_create(bpf_program__fd(iw->skel->progs.fl_icmp_ingress), ifc->ifindex,
			     (enum bpf_attach_type)ICMP_WATCH_BPF_TCX_INGRESS, &lo);
	if (in < 0)
		return in;
	out = bpf_link_create(bpf_program__fd(iw->skel->progs.fl_icmp_egress), ifc->ifindex,
			      (enum bpf_attach_type)ICMP_WATCH_BPF_TCX_EGRESS, &lo);
	if (out < 0) {
		err = out;
		close(in);
		return err;
	}
	ifc->link_in = in;
	ifc->link_out = out;
	ifc->mode = ICMP_WATCH_TC_TCX;
	return 0;
}

/* Is program id one of ours, by name? */
static bool prog_named(__u32 id, const char *name)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	bool same = false;
	int fd;

	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return false;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		same = !strncmp(info.name, name, sizeof(info.name));
	close(fd);
	return same;
}

static int attach_filter(struct icmp_watch_iface *ifc, enum bpf_tc_attach_point dir,
			 struct bpf_program *prog)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex, .attach_point = dir);
	LIBBPF_OPTS(bpf_tc_opts, q, .handle = ifc->handle, .priority = ICMP_WATCH_TC_PRIO);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = ifc->handle, .priority = ICMP_WATCH_TC_PRIO,
		    .prog_fd = bpf_program__fd(prog));
	const char *dname = dir == BPF_TC_INGRESS ? "ingress" : "egress";
	char name[IF_NAMESIZE];
	int err;

	err = bpf_tc_query(&hook, &q);
	if (!err) {
		if (!prog_named(q.prog_id, bpf_program__name(prog))) {
			pr_warn("failed to attach %s to %s %s: clsact handle %#x priority %d holds "
				"another program (id %u)\n",
				bpf_program__name(prog), ifname(ifc->ifindex, name), dname,
				ifc->handle, ICMP_WATCH_TC_PRIO, q.prog_id);
			return -EBUSY;
		}
		pr_info("replacing the stale %s filter on %s %s (program id %u) of a previous "
			"agent\n",
			bpf_program__name(prog), ifname(ifc->ifindex, name), dname, q.prog_id);
		o.flags = BPF_TC_F_REPLACE;
	}
	err = bpf_tc_attach(&hook, &o);
	if (err) {
		pr_warn("failed to attach %s to %s %s: %s\n", bpf_program__name(prog),
			ifname(ifc->ifindex, name), dname, strerror(-err));
		return err;
	}
	return 0;
}

static void detach_filter(const struct icmp_watch_iface *ifc, enum bpf_tc_attach_point dir)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex, .attach_point = dir);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = ifc->handle, .priority = ICMP_WATCH_TC_PRIO);
	char name[IF_NAMESIZE];
	int err = bpf_tc_detach(&hook, &o);

	/* ENODEV/ENOENT: the interface or qdisc is gone, and our filter with it. */
	if (err && err != -ENOENT && err != -ENODEV && err != -EINVAL)
		pr_warn("failed to detach the clsact filter from %s: %s\n",
			ifname(ifc->ifindex, name), strerror(-err));
}

static void detach_clsact(struct icmp_watch_iface *ifc)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex,
		    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	char name[IF_NAMESIZE];
	int in, out;

	if (ifc->filter_in)
		detach_filter(ifc, BPF_TC_INGRESS);
	if (ifc->filter_out)
		detach_filter(ifc, BPF_TC_EGRESS);
	ifc->filter_in = ifc->filter_out = false;
	if (!ifc->made_qdisc)
		return;
	/* Ours, but someone may have put filters on it since: then it stays. */
	in = count_filters(ifc->ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS));
	out = count_filters(ifc->ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS));
	if (in == 0 && out == 0)
		bpf_tc_hook_destroy(&hook);
	else if (in > 0 || out > 0)
		pr_info("leaving the clsact qdisc on %s: it carries other filters now\n",
			ifname(ifc->ifindex, name));
	ifc->made_qdisc = false;
}

static int attach_clsact(struct icmp_watch *iw, struct icmp_watch_iface *ifc)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex,
		    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	char name[IF_NAMESIZE];
	int err;

	ifc->mode = ICMP_WATCH_TC_CLSACT;
	err = bpf_tc_hook_create(&hook);
	if (!err) {
		ifc->made_qdisc = true;
	} else if (err != -EEXIST) {
		pr_warn("failed to create a clsact qdisc on %s: %s\n", ifname(ifc->ifindex, name),
			strerror(-err));
		return err;
	}
	err = attach_filter(ifc, BPF_TC_INGRESS, iw->skel->progs.fl_icmp_ingress);
	if (err)
		goto cleanup;
	ifc->filter_in = true;
	err = attach_filter(ifc, BPF_TC_EGRESS, iw->skel->progs.fl_icmp_egress);
	if (err)
		goto cleanup;
	ifc->filter_out = true;
	return 0;
cleanup:
	detach_clsact(ifc);
	return err;
}

int icmp_watch_attach(struct icmp_watch *iw, int ifindex)
{
	struct icmp_watch_iface *ifc;
	char name[IF_NAMESIZE];
	int err;

	for (int i = 0; i < iw->nifaces; i++)
		if (iw->ifaces[i].ifindex == ifindex)
			return 0;
	if (iw->nifaces == ICMP_WATCH_MAX_IFACES) {
		pr_warn("failed to attach to %s: more than %d interfaces\n", ifname(ifindex, name),
			ICMP_WATCH_MAX_IFACES);
		return -E2BIG;
	}
	ifc = &iw->ifaces[iw->nifaces];
	*ifc = (struct icmp_watch_iface){
	    .ifindex = ifindex, .link_in = -1, .link_out = -1, .handle = iw->tc_handle};
	if (iw->want != ICMP_WATCH_TC_CLSACT) {
		err = attach_tcx(iw, ifc);
		if (err && iw->want == ICMP_WATCH_TC_TCX) {
			pr_warn("failed to attach tcx links to %s: %s (tcx needs Linux 6.6)\n",
				ifname(ifindex, name), strerror(-err));
			return err;
		}
		if (err)
			pr_debug("no tcx on %s (%s): using clsact\n", ifname(ifindex, name),
				 strerror(-err));
	}
	if (ifc->mode != ICMP_WATCH_TC_TCX) {
		err = attach_clsact(iw, ifc);
		if (err)
			return err;
	}
	iw->mode = ifc->mode;
	iw->nifaces++;
	pr_debug("icmp programs attached to %s (%s)\n", ifname(ifindex, name),
		 icmp_watch_mode_name(ifc->mode));
	return 0;
}

void icmp_watch_detach(struct icmp_watch *iw, int ifindex, bool gone)
{
	char name[IF_NAMESIZE];

	for (int i = 0; i < iw->nifaces; i++) {
		struct icmp_watch_iface *ifc = &iw->ifaces[i];

		if (ifc->ifindex != ifindex)
			continue;
		if (ifc->mode == ICMP_WATCH_TC_TCX) {
			close(ifc->link_in);
			close(ifc->link_out);
		} else if (!gone) {
			detach_clsact(ifc);
		}
		pr_debug("icmp programs detached from %s%s\n", ifname(ifindex, name),
			 gone ? " (deleted)" : "");
		iw->ifaces[i] = iw->ifaces[--iw->nifaces];
		return;
	}
}

enum icmp_watch_tc_mode icmp_watch_mode(const struct icmp_watch *iw)
{
	return iw->mode;
}

/* ---- pins, open, close ---- */

/* Pinned beside the process maps (kern/loader.c, fl_pin_maps): same directory, same rules. */
static int pin_all(struct icmp_watch *iw)
{
	struct bpf_map *maps[ICMP_WATCH_NPINS];

	pinned_maps(iw->skel, maps);
	return fl_pin_maps(iw->pin_dir, maps, ICMP_WATCH_NPINS);
}

static void unpin_all(struct icmp_watch *iw)
{
	struct bpf_map *maps[ICMP_WATCH_NPINS];

	pinned_maps(iw->skel, maps);
	fl_unpin_maps(iw->pin_dir, maps, ICMP_WATCH_NPINS);
}

static enum icmp_watch_tc_mode mode_from_env(enum icmp_watch_tc_mode asked)
{
	const char *e = getenv(ICMP_WATCH_TC_ENV);

	if (asked != ICMP_WATCH_TC_AUTO || !e || !*e)
		return asked;
	if (!strcmp(e, "clsact"))
		return ICMP_WATCH_TC_CLSACT;
	if (!strcmp(e, "tcx"))
		return ICMP_WATCH_TC_TCX;
	if (strcmp(e, "auto"))
		pr_warn("ignoring %s=%s: not tcx, clsact or auto\n", ICMP_WATCH_TC_ENV, e);
	return ICMP_WATCH_TC_AUTO;
}

int icmp_watch_open(struct icmp_watch **out, const struct icmp_watch_opts *opts)
{
	struct icmp_watch *iw;
	int err;

	if (!opts->echo_id)
		return -EINVAL;
	err = fl_loader_prepare(false);
	if (err)
		return err;
	iw = calloc(1, sizeof(*iw));
	if (!iw)
		return -ENOMEM;
	iw->want = mode_from_env(opts->mode);
	fl_node_pin_dir(iw->pin_dir, sizeof(iw->pin_dir), opts->node);
	iw->tc_handle = icmp_watch_tc_handle(opts->node);

	iw->skel = fl_icmp__open();
	if (!iw->skel) {
		err = -errno;
		pr_warn("failed to open BPF object fl_icmp: %s\n", strerror(errno));
		goto cleanup;
	}
	iw->skel->rodata->targ_echo_id = opts->echo_id;
	err = fl_icmp__load(iw->skel);
	if (err) {
		pr_warn("failed to load the icmp BPF programs: %s (run with -v for the verifier's "
			"log)\n",
			strerror(-err));
		goto cleanup;
	}
	err = pin_all(iw);
	if (err)
		goto cleanup;
	*out = iw;
	return 0;
cleanup:
	icmp_watch_close(iw);
	return err;
}

int icmp_watch_add_peer(struct icmp_watch *iw, const struct fl_peer_key *k)
{
	struct fl_peer_stats zero = {};

	if (bpf_map_update_elem(bpf_map__fd(iw->skel->maps.fl_peers), k, &zero, BPF_NOEXIST) &&
	    errno != EEXIST)
		return -errno;
	return 0;
}

int icmp_watch_del_peer(struct icmp_watch *iw, const struct fl_peer_key *k)
{
	if (bpf_map_delete_elem(bpf_map__fd(iw->skel->maps.fl_peers), k) && errno != ENOENT)
		return -errno;
	return 0;
}

int icmp_watch_peer_stats(const struct icmp_watch *iw, const struct fl_peer_key *k,
			  struct fl_peer_stats *st)
{
	if (bpf_map_lookup_elem(bpf_map__fd(iw->skel->maps.fl_peers), k, st))
		return -errno;
	return 0;
}

int icmp_watch_read_all(const struct icmp_watch *iw, struct fl_peer_key *keys,
			struct fl_peer_stats *vals, uint32_t max, uint32_t *n)
{
	int fd = bpf_map__fd(iw->skel->maps.fl_peers);
	struct fl_peer_key *prev = NULL;
	__u32 batch, count = max, got = 0;
	int err;

	/* A hash map's batch token is a bucket index; ENOENT marks the end. */
	err = bpf_map_lookup_batch(fd, NULL, &batch, keys, vals, &count, NULL);
	if (!err || err == -ENOENT) {
		*n = count;
		return 0;
	}
	if (err != -EINVAL && err != -EOPNOTSUPP)
		return err;
	/* Before Linux 5.6 ("bpf: Add batch ops to all htab bpf map"): one by one. */
	while (got < max && !bpf_map_get_next_key(fd, prev, &keys[got])) {
		prev = &keys[got];
		if (!bpf_map_lookup_elem(fd, &keys[got], &vals[got]))
			got++;
	}
	*n = got;
	return 0;
}

uint64_t icmp_watch_counter(const struct icmp_watch *iw, enum fl_icmp_counter c)
{
	return fl_percpu_sum(bpf_map__fd(iw->skel->maps.fl_icmp_cnt), c);
}

const char *icmp_watch_pin_dir(const struct icmp_watch *iw)
{
	return iw->pin_dir;
}

void icmp_watch_close(struct icmp_watch *iw)
{
	if (!iw)
		return;
	for (int i = 0; i < iw->nifaces; i++) {
		struct icmp_watch_iface *ifc = &iw->ifaces[i];

		if (ifc->mode == ICMP_WATCH_TC_TCX) {
			close(ifc->link_in);
			close(ifc->link_out);
		} else {
			detach_clsact(ifc);
		}
	}
	if (iw->skel)
		unpin_all(iw);
	fl_icmp__destroy(iw->skel);
	free(iw);
}
