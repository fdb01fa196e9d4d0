// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `flatline shadow-report`: Sentinel's logs beside flatline's controller event log
 * (a controller in shadow mode, docs/sentinel.md): per fault, when Sentinel acted,
 * when flatline would have, which replica each chose, and the faults one saw and the
 * other did not. The parsing and grouping are common/shadow_log.c. */
#include <getopt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include "cmds.h"
#include "common/config.h"
#include "common/log.h"
#include "common/shadow_log.h"

#define SR_MAX_FAULTS 4096

static const char shadow_report_usage[] =
    "usage: flatline shadow-report -c FILE [-s SENTINEL_LOG]... [-e EVENT_LOG]...\n"
    "                              [--window-ms N]\n"
    "\n"
    "  -c, --config FILE         the cluster file (node ids to addresses)\n"
    "  -s, --sentinel-log FILE   a Sentinel's log file (+sdown, +odown, +switch-master,\n"
    "                            +promoted-slave); one per Sentinel, any number\n"
    "  -e, --events FILE         flatline's controller event log (default: [controller]\n"
    "                            event_log); .gz segments too\n"
    "  --window-ms N             events of one primary within N ms are one fault\n"
    "                            (default 30000)\n";

struct sr {
	struct sl_event *ev;
	int n, cap;
	const struct cfg *cfg;
};

static int sr_add(struct sr *r, const struct sl_event *e)
{
	if (r->n == r->cap) {
		int cap = r->cap ? 2 * r->cap : 1024;
		struct sl_event *ev = realloc(r->ev, (size_t)cap * sizeof(*ev));

		if (!ev)
			return -1;
		r->ev = ev;
		r->cap = cap;
	}
	r->ev[r->n++] = *e;
	return 0;
}

/* flatline's node id → its server's ip:port, as Sentinel names it. */
static void resolve(const struct cfg *cfg, char *field, size_t len)
{
	const struct cfg_node *nd = field[0] ? cfg_find_node(cfg, field) : NULL;

	char a[300];

	if (!nd || !nd->redis.port || nd->redis.unix_path[0])
		return;
	snprintf(a, sizeof(a), "%s:%d", nd->redis.host, nd->redis.port);
	if (strlen(a) < len)
		memcpy(field, a, strlen(a) + 1);
}

/* The node id of ip:port, or "". */
static const char *node_of(const struct cfg *cfg, const char *addr)
{
	for (int i = 0; i < cfg->nnodes; i++) {
		char a[300];

		snprintf(a, sizeof(a), "%s:%d", cfg->nodes[i].redis.host, cfg->nodes[i].redis.port);
		if (!strcmp(a, addr))
			return cfg->nodes[i].id;
	}
	return "";
}

static int read_file(struct sr *r, const char *path, bool sentinel)
{
	gzFile f = gzopen(path, "rb");
	char line[8192];
	int got = 0;

	if (!f) {
		pr_warn("failed to open %s: %m\n", path);
		return -1;
	}
	while (gzgets(f, line, sizeof(line))) {
		struct sl_event e;
		int ok = sentinel ? sl_parse_sentinel(line, &e)
				  : sl_parse_flatline(line, strlen(line), &e);

		if (!ok)
			continue;
		if (!sentinel) {
			resolve(r->cfg, e.addr, sizeof(e.addr));
			resolve(r->cfg, e.chosen, sizeof(e.chosen));
		}
		if (sr_add(r, &e)) {
			gzclose(f);
			return -1;
		}
		got++;
	}
	gzclose(f);
	return got;
}

static void print_ts(long long ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char b[32];

	gmtime_r(&t, &tm);
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
	printf("%s.%03lldZ", b, ms % 1000);
}

static void at(const char *what, long long ms, long long t0, bool *sep)
{
	if (!ms)
		return;
	printf("%s%s +%lld ms", *sep ? ", " : " ", what, ms - t0);
	*sep = true;
}

static void print_fault(const struct cfg *cfg, int i, const struct sl_fault *f)
{
	long long t0 = 0, ts[] = {f->s_sdown_ms, f->s_odown_ms,	  f->s_switch_ms,  f->f_down_ms,
				  f->f_would_ms, f->f_promote_ms, f->f_followed_ms};
	bool s_seen = f->s_sdown_ms || f->s_odown_ms || f->s_switch_ms || f->s_chosen[0];
	bool f_seen = f->f_would_ms || f->f_promote_ms;
	bool s_acted = f->s_switch_ms || f->s_chosen[0];
	bool sep;

	for (size_t k = 0; k < sizeof(ts) / sizeof(ts[0]); k++)
		if (ts[k] && (!t0 || ts[k] < t0))
			t0 = ts[k];
	printf("fault %d: primary %s", i, f->addr);
	if (node_of(cfg, f->addr)[0])
		printf(" (%s)", node_of(cfg, f->addr));
	printf(", %s, from ", f->master);
	print_ts(t0);
	printf("\n  sentinel:");
	sep = false;
	at("sdown", f->s_sdown_ms, t0, &sep);
	at("odown", f->s_odown_ms, t0, &sep);
	at("switch-master", f->s_switch_ms, t0, &sep);
	if (f->s_chosen[0])
		printf("%schose %s (%s)", sep ? ", " : " ", f->s_chosen, node_of(cfg, f->s_chosen));
	if (!s_seen)
		printf(" did not see it");
	else if (!s_acted)
		printf(", no failover");
	printf("\n  flatline:");
	sep = false;
	at("node_down", f->f_down_ms, t0, &sep);
	at("would_failover", f->f_would_ms, t0, &sep);
	if (f->f_reason[0])
		printf(" (%s)", f->f_reason);
	at("would_promote", f->f_promote_ms, t0, &sep);
	if (f->f_chosen[0])
		printf(", would choose %s (%s)", f->f_chosen, node_of(cfg, f->f_chosen));
	if (!f_seen)
		printf("%sno failover", sep ? ", " : " ");
	if (f->f_followed_ms)
		printf("; followed %s (%s) +%lld ms", f->f_followed, node_of(cfg, f->f_followed),
		       f->f_followed_ms - t0);
	printf("\n  verdict: ");
	if (s_acted && f_seen) {
		long long fw = f->f_promote_ms ? f->f_promote_ms : f->f_would_ms;

		if (f->s_switch_ms)
			printf("both; flatline would have promoted %lld ms %s Sentinel's "
			       "switch-master",
			       llabs(f->s_switch_ms - fw),
			       fw <= f->s_switch_ms ? "before" : "after");
		else
			printf("both");
		if (f->s_chosen[0] && f->f_chosen[0])
			printf("; %s replica\n",
			       strcmp(f->s_chosen, f->f_chosen) ? "a different" : "the same");
		else
			printf("\n");
	} else if (s_acted) {
		printf("Sentinel only: flatline would not have failed over\n");
	} else if (f_seen) {
		printf("flatline only: Sentinel did not fail over\n");
	} else {
		printf("neither failed over\n");
	}
}

int cmd_shadow_report(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"sentinel-log", required_argument, NULL, 's'},
	    {"events", required_argument, NULL, 'e'},
	    {"window-ms", required_argument, NULL, 'w'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char *path = NULL, *slogs[64], *elogs[64];
	int ns = 0, ne = 0, opt, nf, rc = 0, nboth = 0, nsonly = 0, nfonly = 0;
	long long window_ms = 30000;
	struct sl_fault *faults = NULL;
	struct sr r = {0};
	struct cfg *cfg = NULL;
	char err[512];

	while ((opt = getopt_long(argc, argv, "c:s:e:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 's':
			if (ns < 64)
				slogs[ns++] = optarg;
			break;
		case 'e':
			if (ne < 64)
				elogs[ne++] = optarg;
			break;
		case 'w': {
			char *end;

			errno = 0;
			window_ms = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || window_ms <= 0) {
				fprintf(stderr,
					"flatline shadow-report: --window-ms wants a positive "
					"number of milliseconds, not '%s'\n",
					optarg);
				fputs(shadow_report_usage, stderr);
				return 2;
			}
			break;
		}
		case 'h':
			fputs(shadow_report_usage, stdout);
			return 0;
		default:
			fputs(shadow_report_usage, stderr);
			return 2;
		}
	}
	if (!path || optind != argc) {
		fputs(shadow_report_usage, stderr);
		return 2;
	}
	if (cfg_load(path, &cfg, err, sizeof(err))) {
		pr_warn("%s\n", err);
		return 1;
	}
	r.cfg = cfg;
	if (!ne)
		elogs[ne++] = cfg->controller.event_log;
	for (int i = 0; i < ns && !rc; i++)
		rc = read_file(&r, slogs[i], true) < 0;
	for (int i = 0; i < ne && !rc; i++)
		rc = read_file(&r, elogs[i], false) < 0;
	faults = calloc(SR_MAX_FAULTS, sizeof(*faults));
	if (rc || !faults) {
		free(faults);
		free(r.ev);
		cfg_free(cfg);
		return 1;
	}
	nf = sl_faults(r.ev, r.n, window_ms, faults, SR_MAX_FAULTS);
	for (int i = 0; i < nf; i++) {
		const struct sl_fault *f = &faults[i];
		bool s_acted = f->s_switch_ms || f->s_chosen[0];
		bool f_seen = f->f_would_ms || f->f_promote_ms;

		print_fault(cfg, i + 1, f);
		nboth += s_acted && f_seen;
		nsonly += s_acted && !f_seen;
		nfonly += !s_acted && f_seen;
	}
	printf("%d fault(s): %d both, %d Sentinel only, %d flatline only, %d neither "
	       "(%d Sentinel log(s), %d event log(s), %d events)\n",
	       nf, nboth, nsonly, nfonly, nf - nboth - nsonly - nfonly, ns, ne, r.n);
	free(faults);
	free(r.ev);
	cfg_free(cfg);
	return 0;
}
