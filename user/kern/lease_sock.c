// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The write lease's sockets (see lease_watch.h): the server's marked from its file
 * descriptors, an allowed connection's cookie, the server's connections destroyed. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include "common/log.h"
#include "kern/lease_watch.h"

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

/* ---- the server's sockets, from its file descriptors ---- */

static int sock_opt(int fd, int opt)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, opt, &v, &len))
		return -1;
	return v;
}

/* A socket's local port, host order (0 if it has none). */
static uint16_t local_port(int fd)
{
	struct sockaddr_storage ss = {0};
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

static void add_port(struct lease_scan *sc, int fd)
{
	uint16_t port = local_port(fd);

	for (int i = 0; i < sc->nports; i++)
		if (sc->ports[i] == port)
			return;
	if (port && sc->nports < LEASE_SCAN_MAX_PORTS)
		sc->ports[sc->nports++] = port;
}

static void one_fd(struct lease_watch *lw, struct lease_scan *sc, int fd)
{
	int domain = sock_opt(fd, SO_DOMAIN), listening = sock_opt(fd, SO_ACCEPTCONN) == 1;

	if (domain == AF_UNIX && listening) {
		struct sockaddr_un un = {0};
		socklen_t len = sizeof(un);

		if (sc->unix_path[0]) {
			close(fd);
			return;
		}
		if (!getsockname(fd, (struct sockaddr *)&un, &len) && len > sizeof(sa_family_t))
			snprintf(sc->unix_path, sizeof(sc->unix_path), "%s",
				 un.sun_path[0] ? un.sun_path : "@(abstract)");
		else
			snprintf(sc->unix_path, sizeof(sc->unix_path), "(unnamed)");
		close(fd);
		return;
	}
	if ((domain == AF_INET || domain == AF_INET6) && sock_opt(fd, SO_PROTOCOL) == IPPROTO_TCP) {
		/* The cluster bus: its listener, and what it accepted (an older scan's
		 * marks, or a listener marked before the bus port was known, passed on). */
		if (sc->bus_port && local_port(fd) == sc->bus_port) {
			if (!lease_watch_unmark(lw, fd))
				sc->bus_socks++;
			close(fd);
			return;
		}
		if (!listening && sc->nconn < LEASE_SCAN_MAX_CONNS) {
			sc->conn[sc->nconn++] = fd; /* judged once the listeners are known */
			return;
		}
		if (listening) {
			if (!lease_watch_mark(lw, fd))
				sc->marked++;
			add_port(sc, fd);
		}
	}
	close(fd);
}

/* A connection whose local port is one the server listens on was accepted there: the
 * server's. Another (a replica's link to its primary) acknowledges no client's write. */
static void mark_accepted(struct lease_watch *lw, struct lease_scan *sc)
{
	for (int i = 0; i < sc->nconn; i++) {
		uint16_t port = local_port(sc->conn[i]);

		for (int j = 0; j < sc->nports; j++)
			if (port && port == sc->ports[j] && !lease_watch_mark(lw, sc->conn[i])) {
				sc->marked++;
				break;
			}
		close(sc->conn[i]);
	}
	sc->nconn = 0;
}

int lease_scan_pid(struct lease_watch *lw, pid_t pid, uint16_t bus_port, struct lease_scan *sc)
{
	char dir[64], path[PATH_MAX], link[64];
	struct dirent *e;
	int pidfd, err = 0;
	DIR *d;

	memset(sc, 0, sizeof(*sc));
	sc->bus_port = bus_port;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -errno;
	d = opendir(dir);
	if (!d) {
		err = -errno;
		close(pidfd);
		return err;
	}
	while ((e = readdir(d))) {
		char *end;
		long num = strtol(e->d_name, &end, 10);
		ssize_t n;
		int fd;

		if (*end || end == e->d_name)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strncmp(link, "socket:", 7))
			continue;
		/* A copy of the server's descriptor (Linux 5.6): the same socket. */
		fd = (int)syscall(__NR_pidfd_getfd, pidfd, (int)num, 0);
		if (fd < 0) {
			if (errno != EBADF)
				err = -errno; /* EBADF: closed meanwhile */
			continue;
		}
		one_fd(lw, sc, fd); /* it closes fd, or keeps it in sc->conn */
		if (sc->nconn == LEASE_SCAN_MAX_CONNS)
			mark_accepted(lw, sc);
	}
	mark_accepted(lw, sc);
	closedir(d);
	close(pidfd);
	return err;
}

/* ---- sock_diag: one connection's cookie, every connection of the server ---- */

static __u64 diag_cookie(const struct inet_diag_sockid *id)
{
	return (__u64)id->idiag_cookie[0] | (__u64)id->idiag_cookie[1] << 32;
}

static int family_of(const struct fl_lease_conn *c)
{
	static const __u8 v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(c->addr, v4, 12) ? AF_INET6 : AF_INET;
}

static void put_addr(__be32 *dst, const struct fl_lease_conn *c)
{
	if (family_of(c) == AF_INET)
		memcpy(dst, &c->addr[12], 4);
	else
		memcpy(dst, c->addr, 16);
}

int lease_conn_cookie(const struct fl_lease_conn *local, const struct fl_lease_conn *remote,
		      __u64 *cookie)
{
	struct diag_req req = {
	    .nh = {.nlmsg_len = sizeof(req),
		   .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		   .nlmsg_flags = NLM_F_REQUEST},
	    .r = {.sdiag_family = (__u8)family_of(local),
		  .sdiag_protocol = IPPROTO_TCP,
		  .idiag_states = ~0u,
		  .id = {.idiag_sport = local->port,
			 .idiag_dport = remote->port,
			 .idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}}},
	};
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	char buf[1024];
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	ssize_t n;
	int fd, err = 0;

	put_addr(req.r.id.idiag_src, local);
	put_addr(req.r.id.idiag_dst, remote);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		goto cleanup;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0) {
		err = -errno;
	} else if (!NLMSG_OK(nh, (size_t)n)) {
		err = -EPROTO;
	} else if (nh->nlmsg_type == NLMSG_ERROR) {
		err = ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
		if (!err)
			err = -ENOENT;
	} else {
		*cookie = diag_cookie(&((const struct inet_diag_msg *)NLMSG_DATA(nh))->id);
	}
cleanup:
	close(fd);
	return err;
}

/* A dump request asking for our socket storage (the marks) with each socket. */
struct dump_req {
	struct nlmsghdr nh;
	struct inet_diag_req_v2 r;
	struct nlattr storages;
	struct nlattr map_fd;
	__u32 fd;
};

/* Does the message carry INET_DIAG_SK_BPF_STORAGES (our map was the only one asked)? */
static bool marked(const struct nlmsghdr *nh)
{
	const struct inet_diag_msg *m = NLMSG_DATA(nh);
	int len = (int)nh->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*m));
	const struct nlattr *a = (const struct nlattr *)(m + 1);

	while (len >= (int)sizeof(*a) && a->nla_len >= sizeof(*a) && a->nla_len <= len) {
		if ((a->nla_type & NLA_TYPE_MASK) == INET_DIAG_SK_BPF_STORAGES)
			return true;
		len -= NLA_ALIGN(a->nla_len);
		a = (const struct nlattr *)((const char *)a + NLA_ALIGN(a->nla_len));
	}
	return false;
}

struct conn_list {
	struct inet_diag_sockid *id;
	int n, cap;
};

static int list_add(struct conn_list *l, const struct inet_diag_sockid *id)
{
	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 256;
		struct inet_diag_sockid *p = realloc(l->id, (size_t)cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		l->id = p;
		l->cap = cap;
	}
	l->id[l->n++] = *id;
	return 0;
}

static bool kept(__u64 cookie, const __u64 *keep, int n)
{
	for (int i = 0; i < n; i++)
		if (keep[i] == cookie)
			return true;
	return false;
}

/* Every marked connection of this family, not in keep, into l: the whole dump is read
 * before any is destroyed. */
static int list_family(int fd, int family, int map_fd, const __u64 *keep, int n,
		       struct conn_list *l)
{
	struct dump_req req = {
	    .nh = {.nlmsg_len = sizeof(req),
		   .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		   .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
	    .r = {.sdiag_family = (__u8)family,
		  .sdiag_protocol = IPPROTO_TCP,
		  .idiag_states = ~(1u << 10) /* all but TCP_LISTEN */},
	    .storages = {.nla_len = sizeof(struct nlattr) * 2 + sizeof(__u32),
			 .nla_type = NLA_F_NESTED | INET_DIAG_REQ_SK_BPF_STORAGES},
	    .map_fd = {.nla_len = sizeof(struct nlattr) + sizeof(__u32),
		       .nla_type = SK_DIAG_BPF_STORAGE_REQ_MAP_FD},
	    .fd = (__u32)map_fd,
	};
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	static char buf[32768];
	int err = 0;

	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	for (;;) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (len < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)len);
		     nh = NLMSG_NEXT(nh, len)) {
			const struct inet_diag_msg *m = NLMSG_DATA(nh);

			if (nh->nlmsg_type == NLMSG_DONE)
				return err;
			if (nh->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
			if (!err && marked(nh) && !kept(diag_cookie(&m->id), keep, n))
				err = list_add(l, &m->id);
		}
	}
}

static int destroy(int fd, int family, const struct inet_diag_sockid *id)
{
	struct diag_req req = {
	    .nh = {.nlmsg_len = sizeof(req),
		   .nlmsg_type = SOCK_DESTROY,
		   .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK},
	    .r = {.sdiag_family = (__u8)family,
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

int lease_kill_conns(const struct lease_watch *lw, const __u64 *keep, int n)
{
	static const int families[] = {AF_INET, AF_INET6};
	int fd, killed = 0, err = 0;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	for (int f = 0; f < 2 && !err; f++) {
		struct conn_list l = {0};

		err = list_family(fd, families[f], lease_watch_marks_fd(lw), keep, n, &l);
		for (int i = 0; !err && i < l.n; i++) {
			int e = destroy(fd, families[f], &l.id[i]);

			if (!e)
				killed++;
			else if (e != -ENOENT)
				err = e;
		}
		free(l.id);
	}
	close(fd);
	return err ? err : killed;
}
