// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include "common/metrics.h"

const double metrics_latency_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
					 0.05,	 0.1,	  0.25,	  0.5,	 1,	 2.5,	5,    10};
const int metrics_latency_nbounds = sizeof(metrics_latency_bounds) / sizeof(double);

void metrics_head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values: backslash, double quote and newline escaped, as the format says. */
static void add_labels(struct evbuffer *b, va_list ap)
{
	const char *k, *v;
	int n = 0;

	while ((k = va_arg(ap, const char *))) {
		v = va_arg(ap, const char *);
		evbuffer_add_printf(b, "%s%s=\"", n++ ? "," : "{", k);
		for (; v && *v; v++) {
			if (*v == '\\' || *v == '"')
				evbuffer_add_printf(b, "\\%c", *v);
			else if (*v == '\n')
				evbuffer_add(b, "\\n", 2);
			else
				evbuffer_add(b, v, 1);
		}
		evbuffer_add(b, "\"", 1);
	}
	if (n)
		evbuffer_add(b, "}", 1);
}

static void add_double(struct evbuffer *b, double v)
{
	if (isinf(v))
		evbuffer_add_printf(b, " %s\n", v > 0 ? "+Inf" : "-Inf");
	else if (isnan(v))
		evbuffer_add_printf(b, " NaN\n");
	else
		evbuffer_add_printf(b, " %.9g\n", v);
}

void metrics_sample(struct evbuffer *b, const char *name, double v, ...)
{
	va_list ap;

	evbuffer_add_printf(b, "%s", name);
	va_start(ap, v);
	add_labels(b, ap);
	va_end(ap);
	add_double(b, v);
}

void metrics_sample_u64(struct evbuffer *b, const char *name, uint64_t v, ...)
{
	va_list ap;

	evbuffer_add_printf(b, "%s", name);
	va_start(ap, v);
	add_labels(b, ap);
	va_end(ap);
	evbuffer_add_printf(b, " %" PRIu64 "\n", v);
}

void metrics_hist_init(struct metrics_hist *h, const double *bounds, int nbounds)
{
	memset(h, 0, sizeof(*h));
	h->bounds = bounds;
	h->nbounds = nbounds < METRICS_MAX_BUCKETS ? nbounds : METRICS_MAX_BUCKETS;
}

void metrics_hist_observe(struct metrics_hist *h, double v)
{
	int i;

	for (i = 0; i < h->nbounds && v > h->bounds[i]; i++)
		;
	h->counts[i]++;
	h->sum += v;
	h->count++;
}

void metrics_hist_write(struct evbuffer *b, const char *name, const struct metrics_hist *h,
			const char *label, const char *value)
{
	char n[128], le[32];
	uint64_t cum = 0;

	snprintf(n, sizeof(n), "%s_bucket", name);
	for (int i = 0; i <= h->nbounds; i++) {
		cum += h->counts[i];
		if (i < h->nbounds)
			snprintf(le, sizeof(le), "%.9g", h->bounds[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		if (label)
			metrics_sample_u64(b, n, cum, label, value, "le", le, METRICS_END);
		else
			metrics_sample_u64(b, n, cum, "le", le, METRICS_END);
	}
	snprintf(n, sizeof(n), "%s_sum", name);
	if (label)
		metrics_sample(b, n, h->sum, label, value, METRICS_END);
	else
		metrics_sample(b, n, h->sum, METRICS_END);
	snprintf(n, sizeof(n), "%s_count", name);
	if (label)
		metrics_sample_u64(b, n, h->count, label, value, METRICS_END);
	else
		metrics_sample_u64(b, n, h->count, METRICS_END);
}
