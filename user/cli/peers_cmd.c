// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* flatline peers: this host's per-peer ICMP table, read from the map the running
 * agent (or `flatline probe`) pins at FL_PIN_ROOT/<node>/fl_peers. The same data as
 * `bpftool map dump pinned …/fl_peers`, with ages and loss worked out. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "cmds.h"
#include "icmp_event.h"
#include "common/clock.h"
#include "common/log.h"
#include "kern/icmp_watch.h"
#include "kern/loader.h"

/* A probe younger than this without a reply is in flight, not lost. */
#define PEERS_IN_FLIGHT_NS (1000 * NS_PER_MS)

struct peer_row {
	struct fl_peer_key key;
	struct fl_peer_stats st;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: flatline peers [--node ID] [--json]\n"
		"\n"
		"Print this host's per-peer ICMP/ICMPv6 table from the pinned map of the running\n"
		"agent: probes sent (that left the host), replies, loss, RTT measured in the\n"
		"kernel, and how long ago a reply / any packet came from each peer.\n"
		"\n"
		"  --node ID   the agent's node id (default: the host name, or the only node\n"
		"              pinned under " FL_PIN_ROOT ")\n"
		"  --json      one JSON object per peer, one per line\n");
}

/* The only node directory under FL_PIN_ROOT holding fl_peers, if there is one. */
static int only_node(char *buf, size_t len)
{
	char path[PATH_MAX];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	dir = opendir(FL_PIN_ROOT);
	if (!dir)
		return -ENOENT;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/fl_peers", FL_PIN_ROOT, d->d_name);
		if (access(path, F_OK))
			continue;
		if (strlen(d->d_name) >= len)
			continue;
		if (!n++)
			memcpy(buf, d->d_name, strlen(d->d_name) + 1);
	}
	closedir(dir);
	return n == 1 ? 0 : -ENOENT;
}

static uint64_t lost(const struct fl_peer_stats *st, uint64_t now)
{
	uint64_t in_flight = st->last_tx_ns > st->last_reply_ns && now > st->last_tx_ns &&
			     now - st->last_tx_ns < PEERS_IN_FLIGHT_NS;

	return st->sent > st->replied + in_flight ? st->sent - st->replied - in_flight : 0;
}

/* "12.3" µs, or "-" for never. */
static const char *us(uint64_t ns, char *buf, size_t len)
{
	if (!ns)
		return "-";
	snprintf(buf, len, "%.1f", ns / 1000.0);
	return buf;
}

static const char *age_ms(uint64_t t, uint64_t now, char *buf, size_t len)
{
	if (!t)
		return "never";
	snprintf(buf, len, "%llu", (unsigned long long)(now > t ? (now - t) / NS_PER_MS : 0));
	return buf;
}

static void print_json(const struct peer_row *r, uint64_t now)
{
	const struct fl_peer_stats *st = &r->st;
	char addr[INET6_ADDRSTRLEN];

	icmp_watch_key_str(&r->key, addr, sizeof(addr));
	printf("{\"addr\":\"%s\",\"sent\":%llu,\"replied\":%llu,\"lost\":%llu,"
	       "\"unmatched\":%llu,\"rx_packets\":%llu",
	       addr, (unsigned long long)st->sent, (unsigned long long)st->replied,
	       (unsigned long long)lost(st, now), (unsigned long long)st->unmatched,
	       (unsigned long long)st->rx_packets);
	if (st->last_reply_ns)
		printf(",\"reply_age_ms\":%llu",
		       (unsigned long long)(now > st->last_reply_ns
						? (now - st->last_reply_ns) / NS_PER_MS
						: 0));
	else
		printf(",\"reply_age_ms\":null");
	if (st->last_rx_ns)
		printf(",\"packet_age_ms\":%llu",
		       (unsigned long long)(now > st->last_rx_ns
						? (now - st->last_rx_ns) / NS_PER_MS
						: 0));
	else
		printf(",\"packet_age_ms\":null");
	if (st->replied)
		printf(",\"rtt_us\":%.1f,\"rtt_min_us\":%.1f,\"rtt_max_us\":%.1f,\"srtt_us\":%.1f",
		       st->rtt_last_ns / 1000.0, st->rtt_min_ns / 1000.0, st->rtt_max_ns / 1000.0,
		       st->rtt_srtt_ns / 1000.0);
	else
		printf(",\"rtt_us\":null,\"rtt_min_us\":null,\"rtt_max_us\":null,\"srtt_us\":null");
	printf("}\n");
}

/* One row; w: the width of the address column. */
static void print_row(const struct peer_row *r, uint64_t now, int w)
{
	const struct fl_peer_stats *st = &r->st;
	char addr[INET6_ADDRSTRLEN], b[6][32];
	uint64_t l = lost(st, now);

	icmp_watch_key_str(&r->key, addr, sizeof(addr));
	printf("%-*s %8llu %8llu %6llu %6.1f %9s %9s %9s %9s %9s %9s\n", w, addr,
	       (unsigned long long)st->sent, (unsigned long long)st->replied, (unsigned long long)l,
	       st->sent ? 100.0 * l / st->sent : 0.0, us(st->rtt_last_ns, b[0], 32),
	       us(st->rtt_min_ns, b[1], 32), us(st->rtt_max_ns, b[2], 32),
	       us(st->rtt_srtt_ns, b[3], 32), age_ms(st->last_reply_ns, now, b[4], 32),
	       age_ms(st->last_rx_ns, now, b[5], 32));
}

/* IPv4 peers first, then IPv6, each by address. */
static int cmp_rows(const void *a, const void *b)
{
	return icmp_watch_key_cmp(&((const struct peer_row *)a)->key,
				  &((const struct peer_row *)b)->key);
}

/* Every entry of the map, sorted by address; *n of them in a new *out. */
static int read_rows(int fd, struct peer_row **out, int *n)
{
	struct fl_peer_key key, next, *prev = NULL;
	struct peer_row *rows;
	int cnt = 0;

	rows = calloc(FL_MAX_PEERS, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while (cnt < FL_MAX_PEERS && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		/* Removed between the two calls: skip it. */
		if (bpf_map_lookup_elem(fd, &key, &rows[cnt].st))
			continue;
		rows[cnt++].key = key;
	}
	qsort(rows, cnt, sizeof(*rows), cmp_rows);
	*out = rows;
	*n = cnt;
	return 0;
}

int cmd_peers(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"node", required_argument, NULL, 'n'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	char node[HOST_NAME_MAX + 1] = "", path[PATH_MAX];
	struct peer_row *rows = NULL;
	bool json = false;
	int c, fd, n, err, w = 15;
	uint64_t now;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			snprintf(node, sizeof(node), "%s", optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		pr_warn("unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!node[0]) {
		if (gethostname(node, sizeof(node)))
			snprintf(node, sizeof(node), "localhost");
		node[strcspn(node, ".")] = '\0';
		snprintf(path, sizeof(path), "%s/%s/fl_peers", FL_PIN_ROOT, node);
		if (access(path, F_OK))
			only_node(node, sizeof(node));
	}
	if (fl_valid_node_id(node)) {
		pr_warn("--node %s: a node id is 1-64 letters, digits, '-', '_' or '.'\n", node);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/%s/fl_peers", FL_PIN_ROOT, node);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		err = errno;
		if (err == ENOENT)
			pr_warn("failed to open %s: no such pin; is the agent for node %s running "
				"(and probing peers)?\n",
				path, node);
		else
			pr_warn("failed to open %s: %s%s\n", path, strerror(err),
				err == EACCES || err == EPERM ? " (run as root)" : "");
		return 1;
	}
	err = read_rows(fd, &rows, &n);
	close(fd);
	if (err) {
		pr_warn("failed to read %s: %s\n", path, strerror(-err));
		return 1;
	}
	now = (uint64_t)fl_mono_ns();
	for (int i = 0; i < n; i++) {
		char a[INET6_ADDRSTRLEN];
		int l = strlen(icmp_watch_key_str(&rows[i].key, a, sizeof(a)));

		if (l > w)
			w = l;
	}
	if (!json)
		printf("%-*s %8s %8s %6s %6s %9s %9s %9s %9s %9s %9s\n", w, "PEER", "SENT",
		       "REPLIED", "LOST", "LOSS%", "RTT_US", "MIN_US", "MAX_US", "SRTT_US",
		       "REPLY_MS", "PACKET_MS");
	for (int i = 0; i < n; i++) {
		if (json)
			print_json(&rows[i], now);
		else
			print_row(&rows[i], now, w);
	}
	free(rows);
	return 0;
}
