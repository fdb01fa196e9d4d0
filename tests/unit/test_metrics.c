// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Prometheus text helpers (common/metrics.c), cfg_diff (SIGHUP's list of
 * changed keys) and the endpoint's body cache (common/metrics_http.c, real sockets). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include "common/config.h"
#include "common/metrics.h"

static char *text(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *s = malloc(n + 1);

	evbuffer_remove(b, s, n);
	s[n] = '\0';
	return s;
}

static void test_samples_and_escaping(void **state)
{
	struct evbuffer *b = evbuffer_new();
	char *s;

	(void)state;
	metrics_head(b, "fl_x_total", "counter", "Things.");
	metrics_sample_u64(b, "fl_x_total", 18446744073709551615ULL, "kind", "a\"b\\c\nd",
			   METRICS_END);
	metrics_sample(b, "fl_y", 0.25, "a", "1", "b", "2", METRICS_END);
	metrics_sample(b, "fl_z", 3, METRICS_END);
	s = text(b);
	assert_string_equal(s, "# HELP fl_x_total Things.\n"
			       "# TYPE fl_x_total counter\n"
			       "fl_x_total{kind=\"a\\\"b\\\\c\\nd\"} 18446744073709551615\n"
			       "fl_y{a=\"1\",b=\"2\"} 0.25\n"
			       "fl_z 3\n");
	free(s);
	evbuffer_free(b);
}

static void test_histogram(void **state)
{
	static const double bounds[] = {0.001, 0.01, 0.1};
	struct evbuffer *b = evbuffer_new();
	struct metrics_hist h;
	char *s;

	(void)state;
	metrics_hist_init(&h, bounds, 3);
	metrics_hist_observe(&h, 0.0005);
	metrics_hist_observe(&h, 0.001); /* le is inclusive */
	metrics_hist_observe(&h, 0.05);
	metrics_hist_observe(&h, 7);
	metrics_hist_write(b, "fl_h_seconds", &h, "shard", "s");
	s = text(b);
	assert_string_equal(s, "fl_h_seconds_bucket{shard=\"s\",le=\"0.001\"} 2\n"
			       "fl_h_seconds_bucket{shard=\"s\",le=\"0.01\"} 2\n"
			       "fl_h_seconds_bucket{shard=\"s\",le=\"0.1\"} 3\n"
			       "fl_h_seconds_bucket{shard=\"s\",le=\"+Inf\"} 4\n"
			       "fl_h_seconds_sum{shard=\"s\"} 7.0515\n"
			       "fl_h_seconds_count{shard=\"s\"} 4\n");
	free(s);
	evbuffer_free(b);
}

static void on_key(void *ctx, enum cfg_sect sect, const char *section, const char *key,
		   const struct cfg_key *row)
{
	char *out = ctx;

	(void)sect;
	(void)row;
	snprintf(out + strlen(out), 512 - strlen(out), "%s %s;", section, key);
}

static void test_cfg_diff(void **state)
{
	static const char a_txt[] = "[cluster]\nsecret = 0123456789abcdef\n"
				    "[agent]\nping_interval_ms = 100\n[controller]\ntilt_ms = 5\n"
				    "[node \"n1\"]\naddress = 10.0.0.1\nredis = h:1\n"
				    "[node \"n2\"]\naddress = 10.0.0.2\nredis = h:2\n"
				    "[shard \"s\"]\nnodes = n1 n2\n";
	static const char b_txt[] = "[cluster]\nsecret = 0123456789abcdef\n"
				    "[agent]\nping_interval_ms = 50\n[controller]\ntilt_ms = 5\n"
				    "[node \"n1\"]\naddress = 10.0.0.1\nredis = h:1\npriority = 7\n"
				    "[node \"n3\"]\naddress = 10.0.0.3\nredis = h:3\n"
				    "[shard \"s\"]\nnodes = n1 n3\n";
	struct cfg *a = NULL, *b = NULL;
	char err[256], out[512] = "";

	(void)state;
	assert_int_equal(cfg_load_string("a", a_txt, &a, err, sizeof(err)), 0);
	assert_int_equal(cfg_load_string("b", b_txt, &b, err, sizeof(err)), 0);
	assert_int_equal(cfg_diff(a, a, on_key, out), 0);
	assert_string_equal(out, "");
	assert_int_equal(cfg_diff(a, b, on_key, out), 5);
	assert_string_equal(out, "[agent] ping_interval_ms;[node \"n1\"] priority;[node \"n2\"] *;"
				 "[node \"n3\"] *;[shard \"s\"] nodes;");
	cfg_free(a);
	cfg_free(b);
}

static unsigned long fill_count;

static void count_fill(void *ctx, struct evbuffer *out)
{
	(void)ctx;
	evbuffer_add_printf(out, "fl_fill %lu\n", ++fill_count);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A free port on 127.0.0.1. */
static int free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* One GET /metrics, the loop turned until the answer is closed; its body's value. */
static unsigned long get(struct event_base *base, int port)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char buf[4096];
	size_t n = 0;
	int64_t end = now_ms() + 5000;
	unsigned long v = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char *body;

	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	for (;;) {
		ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);

		if (r == 0)
			break;
		if (r > 0)
			n += (size_t)r;
		assert_true(now_ms() < end);
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	close(fd);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	body = strstr(buf, "fl_fill ");
	assert_non_null(body);
	v = strtoul(body + 8, NULL, 10);
	return v;
}

/* A loop of GETs: one fill per 100 ms, not one per request; an answer after that
 * period is filled anew. */
static void test_body_cached(void **state)
{
	struct event_base *base = event_base_new();
	struct cfg_endpoint ep = {.host = "127.0.0.1"};
	struct metrics *m = NULL;
	int64_t t0;
	unsigned long first, last;
	struct timespec pause = {.tv_nsec = 150 * 1000000};

	(void)state;
	ep.port = free_port();
	assert_int_equal(metrics_open(&m, base, &ep, count_fill, NULL), 0);
	t0 = now_ms();
	first = get(base, ep.port);
	for (int i = 0; i < 49; i++)
		assert_int_equal(get(base, ep.port) >= first, 1);
	/* Bounded by the time the loop took, for a loaded machine. */
	assert_true(metrics_fills(m) <= (uint64_t)((now_ms() - t0) / 100 + 1));
	assert_int_equal(metrics_scrapes(m), 50);
	nanosleep(&pause, NULL);
	last = get(base, ep.port);
	assert_int_equal(last, fill_count);
	assert_int_equal(metrics_fills(m), fill_count);
	assert_true(fill_count < 50);
	metrics_close(m);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_samples_and_escaping),
	    cmocka_unit_test(test_histogram),
	    cmocka_unit_test(test_cfg_diff),
	    cmocka_unit_test(test_body_cached),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
