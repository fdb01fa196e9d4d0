// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Loader for bpf/lease.bpf.c: see lease_watch.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common/log.h"
#include "kern/lease_watch.h"
#include "kern/loader.h"
#include "lease.skel.h"

/* Linux 6.6 UAPI (tcx); the build host's <linux/bpf.h> may predate it. */
#define LEASE_BPF_TCX_EGRESS 47
#define LEASE_BPF_F_BEFORE   (1U << 3)

struct lease_watch {
	struct fl_lease *skel;
	char pin_dir[160];		   /* FL_PIN_ROOT/<node>/lease */
	int links[LEASE_WATCH_MAX_IFACES]; /* link fds, by slot */
	int ifindex[LEASE_WATCH_MAX_IFACES];
	int nifaces;
};

static struct bpf_map *lease_maps(struct fl_lease *skel, int i)
{
	struct bpf_map *m[] = {skel->maps.fl_lease, skel->maps.fl_lease_allow,
			       skel->maps.fl_lease_cnt};

	return i < 3 ? m[i] : NULL;
}

static int mkdirs(const char *node, char *dir, size_t len)
{
	snprintf(dir, len, "%s/%s/lease", FL_PIN_ROOT, node);
	return fl_make_pin_dir(dir);
}

static int attach_one(struct lease_watch *lw, int ifindex, const char *ifname)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = LEASE_BPF_F_BEFORE);
	int prog = bpf_program__fd(lw->skel->progs.fl_lease_egress);
	char path[PATH_MAX];
	int fd, err;

	if (lw->nifaces == LEASE_WATCH_MAX_IFACES) {
		pr_warn("failed to attach the lease to %s: more than %d interfaces\n", ifname,
			LEASE_WATCH_MAX_IFACES);
		return -E2BIG;
	}
	snprintf(path, sizeof(path), "%s/link_%d", lw->pin_dir, ifindex);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		/* Our predecessor's link: the lease never stopped; swap the program in.
		 * A link whose device is gone says ENOLINK: pinned anew below. */
		err = bpf_link_update(fd, prog, NULL) ? -errno : 0;
		if (err) {
			close(fd);
			if (err != -ENOLINK) {
				pr_warn("failed to update the lease link on %s: %s\n", ifname,
					strerror(-err));
				return err;
			}
			unlink(path);
			fd = -1;
		}
	}
	if (fd < 0) {
		fd =
		    bpf_link_create(prog, ifindex, (enum bpf_attach_type)LEASE_BPF_TCX_EGRESS, &lo);
		if (fd < 0) {
			err = fd;
			pr_warn(
			    "failed to attach the lease to %s egress: %s (tcx needs Linux 6.6)\n",
			    ifname, strerror(-err));
			return err;
		}
		if (bpf_obj_pin(fd, path)) {
			err = -errno;
			pr_warn("failed to pin link %s: %s\n", path, strerror(errno));
			close(fd);
			return err;
		}
	}
	lw->links[lw->nifaces] = fd;
	lw->ifindex[lw->nifaces++] = ifindex;
	pr_debug("lease program attached to %s egress\n", ifname);
	return 1;
}

int lease_watch_rescan(struct lease_watch *lw)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	int n = 0, err = 0;

	if (!ifs)
		return -errno;
	for (i = ifs; i->if_index && !err; i++) {
		bool have = false;

		for (int j = 0; j < lw->nifaces; j++)
			have |= lw->ifindex[j] == (int)i->if_index;
		if (have)
			continue;
		err = attach_one(lw, i->if_index, i->if_name);
		if (err > 0) {
			n++;
			err = 0;
		}
	}
	if_freenameindex(ifs);
	return err ? err : n;
}

int lease_watch_read(struct lease_watch *lw, struct fl_lease_state *l)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(lw->skel->maps.fl_lease), &zero, l))
		return -errno;
	return 0;
}

int lease_watch_write(struct lease_watch *lw, const struct fl_lease_state *l)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(bpf_map__fd(lw->skel->maps.fl_lease), &zero, l, BPF_ANY))
		return -errno;
	return 0;
}

int lease_watch_set_allow(struct lease_watch *lw, const struct fl_lease_conn *c, const __u32 *kind,
			  int n)
{
	int fd = bpf_map__fd(lw->skel->maps.fl_lease_allow);
	struct fl_lease_conn k, next;
	bool first = true;
	int err = 0;

	/* Add first, then remove what is gone: an allowed connection never blinks. */
	for (int i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, &c[i], &kind[i], BPF_ANY))
			err = -errno;
	while (!bpf_map_get_next_key(fd, first ? NULL : &k, &next)) {
		bool keep = false;

		for (int i = 0; i < n && !keep; i++)
			keep = !memcmp(&c[i], &next, sizeof(next));
		if (!keep && !bpf_map_delete_elem(fd, &next))
			continue; /* deleted: ask again from the same place */
		k = next;
		first = false;
	}
	return err;
}

uint64_t lease_watch_count(const struct lease_watch *lw, enum fl_lease_counter c)
{
	return fl_percpu_sum(bpf_map__fd(lw->skel->maps.fl_lease_cnt), c);
}

const char *lease_watch_pin_dir(const struct lease_watch *lw)
{
	return lw->pin_dir;
}

int lease_watch_prog_fd(const struct lease_watch *lw)
{
	return bpf_program__fd(lw->skel->progs.fl_lease_egress);
}

int lease_watch_open(struct lease_watch **out, const char *node, uint16_t port)
{
	struct lease_watch *lw;
	struct fl_lease_state l;
	char path[PATH_MAX];
	int err;

	err = fl_mount_bpffs();
	if (err)
		return err;
	lw = calloc(1, sizeof(*lw));
	if (!lw)
		return -ENOMEM;
	err = mkdirs(node, lw->pin_dir, sizeof(lw->pin_dir));
	if (err)
		goto cleanup;
	lw->skel = fl_lease__open();
	if (!lw->skel) {
		err = -errno;
		pr_warn("failed to open the lease BPF object: %s\n", strerror(errno));
		goto cleanup;
	}
	/* A pinned map of a previous agent is reused as it is: the lease it holds stays. */
	for (int i = 0; lease_maps(lw->skel, i); i++) {
		struct bpf_map *m = lease_maps(lw->skel, i);

		snprintf(path, sizeof(path), "%s/%s", lw->pin_dir, bpf_map__name(m));
		err = bpf_map__set_pin_path(m, path);
		if (err)
			goto cleanup;
	}
	err = fl_lease__load(lw->skel);
	if (err) {
		pr_warn("failed to load the lease BPF program: %s\n", strerror(-err));
		goto cleanup;
	}
	err = lease_watch_read(lw, &l);
	if (err)
		goto cleanup;
	if (l.port != port) {
		l.port = port;
		err = lease_watch_write(lw, &l);
		if (err)
			goto cleanup;
	}
	err = lease_watch_rescan(lw);
	if (err < 0)
		goto cleanup;
	*out = lw;
	return 0;
cleanup:
	lease_watch_close(lw);
	return err;
}

void lease_watch_close(struct lease_watch *lw)
{
	if (!lw)
		return;
	for (int i = 0; i < lw->nifaces; i++)
		close(lw->links[i]);
	fl_lease__destroy(lw->skel);
	free(lw);
}

/* ---- connections ---- */

void lease_conn_make(struct fl_lease_conn *k, const struct sockaddr *sa)
{
	memset(k, 0, sizeof(*k));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		k->addr[10] = k->addr[11] = 0xff;
		memcpy(&k->addr[12], &in->sin_addr, 4);
		k->port = in->sin_port;
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(k->addr, &in6->sin6_addr, 16);
		k->port = in6->sin6_port;
	}
}

int lease_conn_parse(struct fl_lease_conn *k, const char *addr, uint16_t port)
{
	struct in6_addr a6;
	struct in_addr a4;

	memset(k, 0, sizeof(*k));
	k->port = htons(port);
	if (inet_pton(AF_INET, addr, &a4) == 1) {
		k->addr[10] = k->addr[11] = 0xff;
		memcpy(&k->addr[12], &a4, 4);
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &a6) == 1) {
		memcpy(k->addr, &a6, 16);
		return 0;
	}
	return -EINVAL;
}

struct diag_req {
	struct nlmsghdr nh;
	struct inet_diag_req_v2 r;
};

static bool kept(const struct inet_diag_msg *m, const struct fl_lease_conn *keep, int n)
{
	struct fl_lease_conn k = {.port = m->id.idiag_dport};

	if (m->idiag_family == AF_INET) {
		k.addr[10] = k.addr[11] = 0xff;
		memcpy(&k.addr[12], m->id.idiag_dst, 4);
	} else {
		memcpy(k.addr, m->id.idiag_dst, 16);
	}
	for (int i = 0; i < n; i++)
		if (!memcmp(&keep[i], &k, sizeof(k)))
			return true;
	return false;
}

static int destroy(int fd, int family, const struct inet_diag_sockid *id)
{
	struct diag_req req = {
	    .nh = {.nlmsg_len = sizeof(req),
		   .nlmsg_type = SOCK_DESTROY,
		   .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK},
	    .r = {.sdiag_family = family,
		  .sdiag_protocol = IPPROTO_TCP,
		  .idiag_states = ~0u,
		  .id = *id},
	};
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	char buf[256];
	ssize_t n;

	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0)
		return -errno;
	if (((struct nlmsghdr *)buf)->nlmsg_type == NLMSG_ERROR)
		return ((struct nlmsgerr *)NLMSG_DATA((struct nlmsghdr *)buf))->error;
	return 0;
}

static int kill_family(int family, uint16_t port, const struct fl_lease_conn *keep, int n)
{
	struct diag_req req = {
	    .nh = {.nlmsg_len = sizeof(req),
		   .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		   .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
	    .r = {.sdiag_family = family,
		  .sdiag_protocol = IPPROTO_TCP,
		  .idiag_states = ~(1u << 10) /* all but TCP_LISTEN */},
	};
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	struct inet_diag_sockid ids[256];
	int fd, nid = 0, killed = 0, err = 0, done = 0;
	char buf[16384];

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		goto cleanup;
	}
	while (!done) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (len < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
			const struct inet_diag_msg *m = NLMSG_DATA(nh);

			if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
				done = 1;
				break;
			}
			if (m->id.idiag_sport != htons(port) || kept(m, keep, n))
				continue;
			if (nid < (int)(sizeof(ids) / sizeof(ids[0])))
				ids[nid++] = m->id;
		}
	}
	for (int i = 0; i < nid; i++) {
		int e = destroy(fd, family, &ids[i]);

		if (!e)
			killed++;
		else if (e != -ENOENT)
			err = e;
	}
cleanup:
	close(fd);
	return err ? err : killed;
}

int lease_kill_conns(uint16_t port, const struct fl_lease_conn *keep, int n)
{
	int a = kill_family(AF_INET, port, keep, n), b;

	if (a < 0)
		return a;
	b = kill_family(AF_INET6, port, keep, n);
	return b < 0 ? b : a + b;
}
