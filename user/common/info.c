// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/info.h"

static int parse_ll(const char *v, size_t n, long long *out)
{
	char buf[32], *end;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, v, n);
	buf[n] = '\0';
	errno = 0;
	*out = strtoll(buf, &end, 10);
	return (*end || errno) ? -EINVAL : 0;
}

static void copy(char *dst, size_t size, const char *v, size_t n)
{
	if (n >= size)
		n = size - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* The base name of a path as the kernel's comm shows it (15 bytes). */
static void comm_of(char comm[16], const char *v, size_t n)
{
	const char *base = v, *end = v + n;

	for (const char *p = v; p < end; p++)
		if (*p == '/')
			base = p + 1;
	copy(comm, 16, base, (size_t)(end - base));
}

#define IS(k) (klen == strlen(k) && !memcmp(key, (k), klen))

static int field(struct info_repl *r, const char *key, size_t klen, const char *v, size_t n)
{
	long long x;

	if (IS("role")) {
		if (n == 6 && !memcmp(v, "master", 6))
			r->role = INFO_ROLE_MASTER;
		else if ((n == 5 && !memcmp(v, "slave", 5)) || (n == 7 && !memcmp(v, "replica", 7)))
			r->role = INFO_ROLE_SLAVE;
		else
			r->role = INFO_ROLE_UNKNOWN;
		return 0;
	}
	if (IS("redis_version")) {
		/* Valkey and Dragonfly print it too (7.2.4, 7.2.0): their own name and
		 * version win, whichever line comes first. */
		if (r->server == INFO_SRV_UNKNOWN) {
			copy(r->version, sizeof(r->version), v, n);
			r->server = INFO_SRV_REDIS;
		}
		return 0;
	}
	if (IS("valkey_version")) {
		copy(r->version, sizeof(r->version), v, n);
		r->server = INFO_SRV_VALKEY;
		return 0;
	}
	if (IS("server_name") || IS("dragonfly_version")) {
		/* Valkey 8 says server_name:valkey; Dragonfly has dragonfly_version. */
		if (IS("dragonfly_version") || (n == 9 && !memcmp(v, "dragonfly", 9))) {
			r->server = INFO_SRV_DRAGONFLY;
			if (IS("dragonfly_version"))
				copy(r->version, sizeof(r->version), v, n);
		} else if (n == 6 && !memcmp(v, "valkey", 6)) {
			r->server = INFO_SRV_VALKEY;
		}
		return 0;
	}
	if (IS("run_id")) {
		copy(r->run_id, sizeof(r->run_id), v, n);
		return 0;
	}
	if (IS("executable")) {
		comm_of(r->exe_comm, v, n);
		return 0;
	}
	if (IS("uptime_in_seconds")) {
		/* Only a hint (which process is the server): never makes INFO malformed. */
		if (parse_ll(v, n, &x) || x < 0)
			x = -1;
		r->uptime_s = x;
		return 0;
	}
	if (IS("master_host")) {
		copy(r->master_host, sizeof(r->master_host), v, n);
		return 0;
	}
	if (IS("master_link_status")) {
		r->link_up = n == 2 && !memcmp(v, "up", 2);
		return 0;
	}
	if (IS("master_replid")) {
		copy(r->master_replid, sizeof(r->master_replid), v, n);
		return 0;
	}
	if (IS("process_id") || IS("tcp_port") || IS("master_port") ||
	    IS("master_last_io_seconds_ago") || IS("master_sync_in_progress") ||
	    IS("master_repl_offset") || IS("slave_repl_offset") || IS("slave_priority") ||
	    IS("replica_priority") || IS("connected_slaves") || IS("loading") ||
	    IS("cluster_enabled")) {
		if (parse_ll(v, n, &x))
			return -EINVAL;
		if (IS("process_id"))
			r->pid = x;
		else if (IS("tcp_port"))
			r->tcp_port = x;
		else if (IS("master_port"))
			r->master_port = x;
		else if (IS("master_last_io_seconds_ago"))
			r->last_io_s = x;
		else if (IS("master_sync_in_progress"))
			r->sync_in_progress = x != 0;
		else if (IS("slave_priority") || IS("replica_priority"))
			r->slave_priority = x;
		else if (IS("connected_slaves"))
			r->connected_slaves = x;
		else if (IS("loading"))
			r->loading = x != 0;
		else if (IS("cluster_enabled"))
			r->cluster_enabled = x != 0;
		/* A replica's own position is slave_repl_offset; master_repl_offset
		 * on a replica is what it has received, which Redis keeps equal. */
		else if (IS("slave_repl_offset") || r->offset < 0)
			r->offset = x;
	}
	return 0;
}

int info_parse(const char *text, size_t len, struct info_repl *r)
{
	const char *p = text, *end = text + len;

	memset(r, 0, sizeof(*r));
	r->link_up = -1;
	r->last_io_s = -1;
	r->offset = -1;
	r->uptime_s = -1;
	r->slave_priority = 100;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *colon;
		size_t n = (nl ? nl : end) - p;

		if (n && p[n - 1] == '\r')
			n--;
		if (n && p[0] != '#') {
			colon = memchr(p, ':', n);
			if (!colon)
				return -EINVAL;
			if (field(r, p, colon - p, colon + 1, n - (colon - p) - 1))
				return -EINVAL;
		}
		p = nl ? nl + 1 : end;
	}
	/* Dragonfly reports no offset on a primary until a replica connects. */
	return 0;
}

const char *info_server_name(enum info_server s)
{
	static const char *const names[] = {"unknown", "redis", "valkey", "dragonfly"};

	return (unsigned)s < 4 ? names[s] : "unknown";
}

const char *info_role_name(enum info_role r)
{
	static const char *const names[] = {"unknown", "master", "slave"};

	return (unsigned)r < 3 ? names[r] : "unknown";
}

/* The digits at p (before end), as a number; -1 when none. A number past LLONG_MAX
 * (a hostile or broken server's) is LLONG_MAX, every digit read: never cut short into
 * a smaller one. */
static long long num_at(const char *p, const char *end)
{
	long long v = 0;
	const char *q = p;

	for (; q < end && *q >= '0' && *q <= '9'; q++) {
		int d = *q - '0';

		v = v > (LLONG_MAX - d) / 10 ? LLONG_MAX : v * 10 + d;
	}
	return q == p ? -1 : v;
}

/* The line after p (before end), or NULL. */
static const char *next_line(const char *p, const char *end)
{
	p = memchr(p, '\n', (size_t)(end - p));
	return p ? p + 1 : NULL;
}

long long info_ll(const char *text, size_t len, const char *key)
{
	const char *end = text + len;
	size_t kl = strlen(key);

	for (const char *p = text; p && p < end; p = next_line(p, end))
		if ((size_t)(end - p) > kl && !memcmp(p, key, kl) && p[kl] == ':')
			return num_at(p + kl + 1, end);
	return -1;
}

long long info_keyspace_keys(const char *text, size_t len)
{
	const char *end = text + len;
	long long keys = -1, n;

	for (const char *p = text; p && p < end; p = next_line(p, end)) {
		const char *k;

		if (end - p >= 10 && !memcmp(p, "# Keyspace", 10)) {
			keys = keys < 0 ? 0 : keys;
			continue;
		}
		if (end - p < 3 || memcmp(p, "db", 2) || p[2] < '0' || p[2] > '9')
			continue;
		k = memchr(p, ':', (size_t)(end - p));
		if (!k || end - k <= 6 || memcmp(k + 1, "keys=", 5))
			continue;
		n = num_at(k + 6, end);
		keys = keys < 0 ? 0 : keys;
		/* Summed saturating: LLONG_MAX is "more than any maxmemory holds". */
		if (n > 0)
			keys = keys > LLONG_MAX - n ? LLONG_MAX : keys + n;
	}
	return keys;
}
