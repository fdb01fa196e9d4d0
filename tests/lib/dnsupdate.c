// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* dnsupdate: drives user/controller/dns.c from a script, on a libevent loop as the controller does.
 *
 *   dnsupdate OPTIONS update NAME ADDR [NAME ADDR ...]  queue all at once, wait for each
 *   dnsupdate OPTIONS query NAME ADDR                    read NAME back; match = exactly ADDR
 *   dnsupdate OPTIONS bench NAME ADDR1 ADDR2 [-n N]      N updates in a row, alternating
 *
 * OPTIONS: -s IP[:PORT] -z ZONE -k KEYNAME -a ALGORITHM -S SECRET [-t TTL] [--udp]
 *          [--timeout-ms MS] [--retry-min-ms MS] [--retry-max-ms MS] [--max-attempts N] [-v]
 *
 * Prints one JSON object per result on stdout (bench: one summary object, latencies as
 * seen by the loop's callback). Exit status 0 if every result is ok, 1 if not, 2 on usage. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/dns.h"

static const char *status_str[] = {"ok", "config_error", "transient", "failed", "superseded"};

static struct {
	struct event_base *base;
	struct dns_updater *u;
	int pending; /* results still expected */
	int failed;
	/* bench */
	int bench_n, bench_i;
	const char *bench_name, *bench_addr[2];
	double *lat_ms;	    /* call -> callback */
	double *elapsed_ms; /* as the result reports it */
} g;

static double now_ms(void)
{
	return (double)fl_mono_ns() / 1e6;
}

static int put_stdout(void *ctx, const char *s, size_t n)
{
	(void)ctx;
	return fwrite(s, 1, n, stdout) == n ? 0 : -EIO;
}

static void json_str(const char *key, const char *v, int comma)
{
	printf("%s\"%s\":", comma ? "," : "", key);
	json_put_str(put_stdout, NULL, v);
}

static void print_result(const struct dns_result *r)
{
	printf("{");
	json_str("op", r->op == DNS_OP_UPDATE ? "update" : "query", 0);
	json_str("name", r->name, 1);
	json_str("addr", r->addr, 1);
	json_str("status", status_str[r->status], 1);
	printf(",\"config_error\":%s", r->config_error ? "true" : "false");
	json_str("rcode", r->rcode_name, 1);
	printf(",\"attempts\":%u,\"elapsed_ms\":%.3f,\"last_rtt_ms\":%.3f", r->attempts,
	       r->elapsed_ms, r->last_rtt_ms);
	json_str("error", r->error, 1);
	if (r->op == DNS_OP_QUERY) {
		printf(",\"addrs\":[");
		for (int i = 0; i < r->naddrs && i < DNS_QUERY_MAX_ADDRS; i++) {
			printf("%s\"%s\"", i ? "," : "", r->addrs[i]);
		}
		printf("],\"match\":%s", r->match ? "true" : "false");
	}
	printf("}\n");
	fflush(stdout);
}

static void on_result(const struct dns_result *r, void *ctx)
{
	(void)ctx;
	if (r->status != DNS_OK)
		g.failed++;
	print_result(r);
	if (--g.pending == 0)
		event_base_loopbreak(g.base);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *sorted, int n, double p)
{
	int i = (int)(p / 100.0 * n + 0.999999) - 1; /* nearest rank */

	return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static void bench_next(void)
{
	g.lat_ms[g.bench_i] = now_ms();
	if (dns_update(g.u, g.bench_name, g.bench_addr[g.bench_i % 2])) {
		fprintf(stderr, "dnsupdate: dns_update refused the arguments\n");
		exit(2);
	}
}

static void on_bench(const struct dns_result *r, void *ctx)
{
	(void)ctx;
	g.lat_ms[g.bench_i] = now_ms() - g.lat_ms[g.bench_i];
	g.elapsed_ms[g.bench_i] = r->elapsed_ms;
	if (r->status != DNS_OK) {
		print_result(r);
		g.failed++;
		event_base_loopbreak(g.base);
		return;
	}
	if (++g.bench_i == g.bench_n) {
		event_base_loopbreak(g.base);
		return;
	}
	bench_next();
}

static void bench_report(const struct dns_cfg *cfg)
{
	int n = g.bench_i;
	double sum = 0;

	if (!n)
		return;
	qsort(g.lat_ms, n, sizeof(double), cmp_double);
	qsort(g.elapsed_ms, n, sizeof(double), cmp_double);
	for (int i = 0; i < n; i++)
		sum += g.lat_ms[i];
	printf("{\"n\":%d,\"transport\":\"%s\",\"p50_ms\":%.3f,\"p90_ms\":%.3f,\"p99_ms\":%.3f,"
	       "\"max_ms\":%.3f,\"mean_ms\":%.3f,\"worker_p50_ms\":%.3f,\"worker_p99_ms\":%.3f}\n",
	       n, cfg->udp ? "udp" : "tcp", pct(g.lat_ms, n, 50), pct(g.lat_ms, n, 90),
	       pct(g.lat_ms, n, 99), g.lat_ms[n - 1], sum / n, pct(g.elapsed_ms, n, 50),
	       pct(g.elapsed_ms, n, 99));
}

static void usage(void)
{
	fprintf(stderr, "usage: dnsupdate -s IP[:PORT] -z ZONE -k KEY -a ALG -S SECRET [-t TTL] "
			"[--udp] [--timeout-ms MS]\n"
			"                 [--retry-min-ms MS] [--retry-max-ms MS] "
			"[--max-attempts N] [-n N] [-v]\n"
			"                 update NAME ADDR [NAME ADDR ...] | query NAME ADDR | "
			"bench NAME ADDR1 ADDR2\n");
	exit(2);
}

static uint32_t num(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > 0xffffffffUL)
		usage();
	return (uint32_t)v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"udp", no_argument, NULL, 'U'},
	    {"timeout-ms", required_argument, NULL, 'T'},
	    {"retry-min-ms", required_argument, NULL, 'm'},
	    {"retry-max-ms", required_argument, NULL, 'M'},
	    {"max-attempts", required_argument, NULL, 'A'},
	    {NULL, 0, NULL, 0},
	};
	struct dns_cfg cfg;
	char err[DNS_ERR_MAX];
	const char *cmd;
	int c, rc, n = 200;

	dns_cfg_init(&cfg);
	while ((c = getopt_long(argc, argv, "s:z:k:a:S:t:n:v", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (dns_cfg_set_server(&cfg, optarg)) {
				fprintf(stderr, "dnsupdate: bad server '%s'\n", optarg);
				return 2;
			}
			break;
		case 'z':
			snprintf(cfg.zone, sizeof(cfg.zone), "%s", optarg);
			break;
		case 'k':
			snprintf(cfg.tsig_name, sizeof(cfg.tsig_name), "%s", optarg);
			break;
		case 'a':
			snprintf(cfg.tsig_algorithm, sizeof(cfg.tsig_algorithm), "%s", optarg);
			break;
		case 'S':
			snprintf(cfg.tsig_secret, sizeof(cfg.tsig_secret), "%s", optarg);
			break;
		case 't':
			cfg.ttl_s = num(optarg);
			break;
		case 'n':
			n = (int)num(optarg);
			break;
		case 'v':
			log_verbosity = LOG_LVL_DEBUG;
			break;
		case 'U':
			cfg.udp = true;
			break;
		case 'T':
			cfg.timeout_ms = num(optarg);
			break;
		case 'm':
			cfg.retry_min_ms = num(optarg);
			break;
		case 'M':
			cfg.retry_max_ms = num(optarg);
			break;
		case 'A':
			cfg.max_attempts = num(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	cmd = argv[optind++];
	if (dns_cfg_validate(&cfg, err, sizeof(err))) {
		fprintf(stderr, "dnsupdate: %s\n", err);
		return 1;
	}
	g.base = event_base_new();
	if (!g.base)
		return 1;

	if (!strcmp(cmd, "bench")) {
		if (argc - optind != 3 || n < 1)
			usage();
		g.bench_n = n;
		g.bench_name = argv[optind];
		g.bench_addr[0] = argv[optind + 1];
		g.bench_addr[1] = argv[optind + 2];
		g.lat_ms = calloc(n, sizeof(double));
		g.elapsed_ms = calloc(n, sizeof(double));
		if (!g.lat_ms || !g.elapsed_ms)
			return 1;
		rc = dns_updater_new(&g.u, g.base, &cfg, on_bench, NULL);
		if (rc) {
			fprintf(stderr, "dnsupdate: failed to start the updater: %s\n",
				strerror(-rc));
			return 1;
		}
		bench_next();
		event_base_dispatch(g.base);
		bench_report(&cfg);
	} else if (!strcmp(cmd, "update") || !strcmp(cmd, "query")) {
		bool update = !strcmp(cmd, "update");

		if (argc - optind < 2 || (argc - optind) % 2 || (!update && argc - optind != 2))
			usage();
		rc = dns_updater_new(&g.u, g.base, &cfg, on_result, NULL);
		if (rc) {
			fprintf(stderr, "dnsupdate: failed to start the updater: %s\n",
				strerror(-rc));
			return 1;
		}
		for (int i = optind; i + 1 < argc; i += 2) {
			rc = update ? dns_update(g.u, argv[i], argv[i + 1])
				    : dns_query(g.u, argv[i], argv[i + 1]);
			if (rc) {
				if (!dns_name_validate(&cfg, argv[i], err, sizeof(err)))
					snprintf(err, sizeof(err), "'%s' is not an IP address",
						 argv[i + 1]);
				fprintf(stderr, "dnsupdate: %s %s %s: %s\n", cmd, argv[i],
					argv[i + 1], rc == -EINVAL ? err : strerror(-rc));
				return 1;
			}
			g.pending++;
		}
		event_base_dispatch(g.base);
	} else {
		usage();
	}
	dns_updater_free(g.u);
	event_base_free(g.base);
	free(g.lat_ms);
	free(g.elapsed_ms);
	return g.failed ? 1 : 0;
}
