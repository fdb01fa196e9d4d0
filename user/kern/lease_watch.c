// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Loader for bpf/lease.bpf.c: see lease_watch.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common/log.h"
#include "kern/lease_watch.h"
#include "kern/loader.h"
#include "lease.skel.h"

#define LEASE_SO_NETNS_COOKIE 71 /* Linux 5.14; older libc headers lack it */

/* The links, pinned as link_<name> in the pin directory. */
static const char *const link_names[] = {"egress", "bind4", "bind6"};
#define LEASE_NLINKS 3

struct lease_watch {
	struct fl_lease *skel;
	char pin_dir[160]; /* FL_PIN_ROOT/<node>/lease */
	int links[LEASE_NLINKS];
	int cg_fd; /* the root of the cgroup v2 hierarchy */
};

static struct bpf_map *lease_maps(struct fl_lease *skel, int i)
{
	struct bpf_map *m[] = {skel->maps.fl_lease,	skel->maps.fl_lease_cfg,
			       skel->maps.fl_lease_ok,	skel->maps.fl_lease_ports,
			       skel->maps.fl_lease_srv, skel->maps.fl_lease_cnt};

	return i < 6 ? m[i] : NULL;
}

static struct bpf_program *lease_prog(struct fl_lease *skel, int i)
{
	struct bpf_program *p[] = {skel->progs.fl_lease_egress, skel->progs.fl_lease_bind4,
				   skel->progs.fl_lease_bind6};

	return p[i];
}

static int mkdirs(const char *node, char *dir, size_t len)
{
	snprintf(dir, len, "%s/%s/lease", FL_PIN_ROOT, node);
	return fl_make_pin_dir(dir);
}

/* The cgroup v2 mount point: /sys/fs/cgroup, or the first cgroup2 in mountinfo. */
static int open_cgroup_root(void)
{
	char line[1024], path[PATH_MAX] = "/sys/fs/cgroup";
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int fd;

	while (f && fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX];
		const char *sep = strstr(line, " - cgroup2 ");

		if (sep && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1) {
			snprintf(path, sizeof(path), "%s", mnt);
			break;
		}
	}
	if (f)
		fclose(f);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		pr_warn("failed to open the cgroup v2 hierarchy at %s: %s (the write lease needs "
			"cgroup2 mounted)\n",
			path, strerror(errno));
	}
	return fd;
}

/* One link: our predecessor's (pinned) with our program swapped in, else a new one at
 * the root of the cgroup hierarchy (multi: other programs there keep running). */
static int attach_one(struct lease_watch *lw, int i)
{
	struct bpf_program *p = lease_prog(lw->skel, i);
	int prog = bpf_program__fd(p), fd, err;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/link_%s", lw->pin_dir, link_names[i]);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		err = bpf_link_update(fd, prog, NULL) ? -errno : 0;
		if (!err) {
			lw->links[i] = fd;
			return 0;
		}
		/* Not a link of this program's type (an older agent's): replaced. */
		close(fd);
		unlink(path);
	}
	fd = bpf_link_create(prog, lw->cg_fd, bpf_program__expected_attach_type(p), NULL);
	if (fd < 0) {
		pr_warn("failed to attach the lease program %s to the cgroup hierarchy: %s\n",
			bpf_program__name(p), strerror(-fd));
		return fd;
	}
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		pr_warn("failed to pin link %s: %s\n", path, strerror(errno));
		close(fd);
		return err;
	}
	lw->links[i] = fd;
	return 0;
}

/* What an older agent left that this one replaces: its per-interface tcx links
 * (link_<ifindex>) and its allowed-address map. Removed once our links are in place,
 * so that the lease never stops. */
static void remove_legacy(struct lease_watch *lw)
{
	DIR *d = opendir(lw->pin_dir);
	struct dirent *e;
	char path[PATH_MAX];

	while (d && (e = readdir(d))) {
		const char *n = e->d_name + 5;

		/* link_<ifindex>: digits only (ours are link_egress, link_bind4, ...). */
		if (strncmp(e->d_name, "link_", 5) || !*n || n[strspn(n, "0123456789")])
			continue;
		snprintf(path, sizeof(path), "%s/%s", lw->pin_dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	snprintf(path, sizeof(path), "%s/fl_lease_allow", lw->pin_dir);
	unlink(path);
}

int lease_watch_read(struct lease_watch *lw, struct fl_lease_state *l)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(lw->skel->maps.fl_lease), &zero, l))
		return -errno;
	return 0;
}

bool lease_watch_server_known(struct lease_watch *lw, uint32_t *tgid)
{
	struct fl_lease_cfg cfg = {0};
	__u32 zero = 0;

	*tgid = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(lw->skel->maps.fl_lease_cfg), &zero, &cfg) ||
	    !cfg.netns_cookie)
		return false;
	*tgid = cfg.tgid;
	return true;
}

int lease_watch_write(struct lease_watch *lw, const struct fl_lease_state *l)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(bpf_map__fd(lw->skel->maps.fl_lease), &zero, l, BPF_ANY))
		return -errno;
	return 0;
}

int lease_watch_set_allow(struct lease_watch *lw, const __u64 *cookie, const __u32 *kind, int n)
{
	int fd = bpf_map__fd(lw->skel->maps.fl_lease_ok);
	__u64 k, next;
	bool first = true;
	int err = 0;

	/* Add first, then remove what is gone: an allowed connection never blinks. */
	for (int i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, &cookie[i], &kind[i], BPF_ANY))
			err = -errno;
	while (!bpf_map_get_next_key(fd, first ? NULL : &k, &next)) {
		bool keep = false;

		for (int i = 0; i < n && !keep; i++)
			keep = cookie[i] == next;
		if (!keep && !bpf_map_delete_elem(fd, &next))
			continue; /* deleted: ask again from the same place */
		k = next;
		first = false;
	}
	return err;
}

int lease_watch_set_server(struct lease_watch *lw, uint32_t tgid, const uint16_t *ports, int n,
			   uint16_t bus_port)
{
	struct fl_lease_cfg cfg = {.tgid = tgid};
	int fd = bpf_map__fd(lw->skel->maps.fl_lease_ports), err = 0;
	__u32 zero = 0, srv = FL_LEASE_PORT_SERVER, bus = FL_LEASE_PORT_BUS, k, next;
	bool first = true;
	socklen_t len = sizeof(cfg.netns_cookie);
	int s;

	/* This namespace's cookie, from a socket of ours (SO_NETNS_COOKIE, Linux 5.14). */
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (getsockopt(s, SOL_SOCKET, LEASE_SO_NETNS_COOKIE, &cfg.netns_cookie, &len))
		err = -errno;
	close(s);
	if (err) {
		pr_warn("failed to read the network namespace's cookie: %s (Linux 5.14)\n",
			strerror(-err));
		return err;
	}
	{
		FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
		unsigned long lo = 32768, hi = 60999; /* the kernel's default */
		char line[64], *end = NULL;

		if (f && fgets(line, sizeof(line), f)) {
			unsigned long a = strtoul(line, &end, 10), b = strtoul(end, NULL, 10);

			if (a && b >= a && b <= 65535)
				lo = a, hi = b;
		}
		if (f)
			fclose(f);
		cfg.eph_lo = (__u16)lo;
		cfg.eph_hi = (__u16)hi;
	}
	for (int i = 0; i < n; i++) {
		k = ports[i];
		if (k && k != bus_port && bpf_map_update_elem(fd, &k, &srv, BPF_ANY))
			err = -errno;
	}
	/* The cluster bus: a bus listener bound from now on (by this server restarted, its
	 * port known from this one) is never marked, whatever process binds it. */
	k = bus_port;
	if (k && bpf_map_update_elem(fd, &k, &bus, BPF_ANY))
		err = -errno;
	while (!bpf_map_get_next_key(fd, first ? NULL : &k, &next)) {
		bool keep = bus_port && next == bus_port;

		for (int i = 0; i < n && !keep; i++)
			keep = ports[i] == next;
		if (!keep && !bpf_map_delete_elem(fd, &next))
			continue;
		k = next;
		first = false;
	}
	if (bpf_map_update_elem(bpf_map__fd(lw->skel->maps.fl_lease_cfg), &zero, &cfg, BPF_ANY))
		err = -errno;
	return err;
}

int lease_watch_mark(struct lease_watch *lw, int sock_fd)
{
	__u32 mark = FL_LEASE_MARK;

	if (bpf_map_update_elem(bpf_map__fd(lw->skel->maps.fl_lease_srv), &sock_fd, &mark, BPF_ANY))
		return -errno;
	return 0;
}

int lease_watch_unmark(struct lease_watch *lw, int sock_fd)
{
	if (bpf_map_delete_elem(bpf_map__fd(lw->skel->maps.fl_lease_srv), &sock_fd) &&
	    errno != ENOENT)
		return -errno;
	return 0;
}

int lease_watch_marks_fd(const struct lease_watch *lw)
{
	return bpf_map__fd(lw->skel->maps.fl_lease_srv);
}

uint64_t lease_watch_count(const struct lease_watch *lw, enum fl_lease_counter c)
{
	return fl_percpu_sum(bpf_map__fd(lw->skel->maps.fl_lease_cnt), c);
}

bool lease_watch_pinned(const char *node)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/lease/fl_lease", FL_PIN_ROOT, node);
	return !access(path, F_OK);
}

int lease_watch_unpin(const char *node)
{
	char dir[PATH_MAX], path[PATH_MAX + 256];
	struct dirent *e;
	DIR *d;
	int err = 0;

	snprintf(dir, sizeof(dir), "%s/%s/lease", FL_PIN_ROOT, node);
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) && !err)
			err = -errno;
	}
	closedir(d);
	if (rmdir(dir) && !err)
		err = -errno;
	return err;
}

const char *lease_watch_pin_dir(const struct lease_watch *lw)
{
	return lw->pin_dir;
}

int lease_watch_open(struct lease_watch **out, const char *node, uint16_t port,
		     uint16_t server_port)
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
	lw->cg_fd = -1;
	for (int i = 0; i < LEASE_NLINKS; i++)
		lw->links[i] = -1;
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
	/* Opened to stay disarmed (port 0: shadow mode) never disarms a lease a previous
	 * agent left armed: its replies may be ones a failover made stale. */
	if (port && l.port != port) {
		l.port = port;
		err = lease_watch_write(lw, &l);
		if (err)
			goto cleanup;
	}
	/* The first agent of this node (new maps): the bind hooks know the server by its
	 * port until its process is known, so that a server that starts (binds it) before
	 * the agent has its pid is marked as it binds; armed or not (shadow mode). A pinned
	 * configuration of a previous agent is kept as it is. */
	{
		uint32_t tgid;

		if (server_port && !lease_watch_server_known(lw, &tgid)) {
			err = lease_watch_set_server(lw, 0, &server_port, 1, 0);
			if (err) {
				pr_warn("failed to write the server's port to the lease: %s\n",
					strerror(-err));
				/* Armed, it fails the open; disarmed (opened to park or
				 * take over a pinned lease) it goes on. */
				if (port)
					goto cleanup;
				err = 0;
			}
		}
	}
	lw->cg_fd = open_cgroup_root();
	if (lw->cg_fd < 0) {
		err = lw->cg_fd;
		goto cleanup;
	}
	for (int i = 0; i < LEASE_NLINKS && !err; i++)
		err = attach_one(lw, i);
	if (err)
		goto cleanup;
	remove_legacy(lw);
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
	for (int i = 0; i < LEASE_NLINKS; i++)
		if (lw->links[i] >= 0)
			close(lw->links[i]);
	if (lw->cg_fd >= 0)
		close(lw->cg_fd);
	fl_lease__destroy(lw->skel);
	free(lw);
}
