/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Prometheus metrics over HTTP (libevent's evhttp, on the daemon's own loop):
 * GET /metrics answers the text format 0.0.4, written by the daemon's fill
 * callback with the helpers below at scrape time. Names and labels follow
 * Prometheus's conventions: base units (seconds), _total for counters. */
#ifndef FL_METRICS_H
#define FL_METRICS_H

#include <stdint.h>
#include "common/config.h"

struct event_base;
struct evbuffer;
struct metrics;

typedef void (*metrics_fill_fn)(void *ctx, struct evbuffer *out);

/* Listens on ep (host:port). -errno with a message naming the address. */
int metrics_open(struct metrics **out, struct event_base *base, const struct cfg_endpoint *ep,
		 metrics_fill_fn fill, void *ctx);
void metrics_close(struct metrics *m);
/* Requests answered so far (tests, and the daemons' own metric). */
uint64_t metrics_scrapes(const struct metrics *m);
/* How many times the body was filled (at most once per 100 ms, however many GETs). */
uint64_t metrics_fills(const struct metrics *m);

/* # HELP and # TYPE lines; type is "counter", "gauge" or "histogram". */
void metrics_head(struct evbuffer *b, const char *name, const char *type, const char *help);
/* One sample. Labels: pairs name, value, ..., then METRICS_END (values escaped). */
#define METRICS_END ((const char *)NULL)
void metrics_sample(struct evbuffer *b, const char *name, double v, ...) __attribute__((sentinel));
void metrics_sample_u64(struct evbuffer *b, const char *name, uint64_t v, ...)
    __attribute__((sentinel));

/* A histogram with fixed upper bounds (seconds), as Prometheus's client libraries
 * keep them: per-bucket counts, the sum and the count. */
#define METRICS_MAX_BUCKETS 16
struct metrics_hist {
	const double *bounds; /* ascending, nbounds of them; +Inf is implied */
	int nbounds;
	uint64_t counts[METRICS_MAX_BUCKETS + 1];
	double sum;
	uint64_t count;
};
/* Bounds for latencies from 100 us to 10 s. */
extern const double metrics_latency_bounds[];
extern const int metrics_latency_nbounds;
void metrics_hist_init(struct metrics_hist *h, const double *bounds, int nbounds);
void metrics_hist_observe(struct metrics_hist *h, double v);
/* The _bucket, _sum and _count lines; label: NULL or one "name", "value" pair. */
void metrics_hist_write(struct evbuffer *b, const char *name, const struct metrics_hist *h,
			const char *label, const char *value);

#endif
