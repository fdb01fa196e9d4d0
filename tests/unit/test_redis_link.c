// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* redis_link against a scripted peer in the same event loop (a listening socket
 * on 127.0.0.1 whose answers each test sets): commands, requests held while
 * connecting, sends, and a hostile peer (a reply to no request, an oversized
 * reply, a slow drip) closing only the link. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include "common/redis_link.h"

struct peer {
	const char *answer; /* written for every command line received */
	int cmds, conns;
	struct bufferevent *bev;
};

struct world {
	struct event_base *base;
	struct evconnlistener *lis;
	struct peer peer;
	struct redis_link *l;
	int ups, downs, replies, results;
	char why[256], err[256];
	long long last_int;
};

static void peer_read(struct bufferevent *bev, void *arg)
{
	struct peer *p = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	char *line;

	/* Count commands by their "*N" headers: redisFormatCommandArgv's output. */
	while ((line = evbuffer_readln(in, NULL, EVBUFFER_EOL_CRLF))) {
		if (line[0] == '*') {
			p->cmds++;
			if (p->answer)
				bufferevent_write(bev, p->answer, strlen(p->answer));
		}
		free(line);
	}
}

static void peer_event(struct bufferevent *bev, short what, void *arg)
{
	struct peer *p = arg;

	(void)what;
	if (p->bev == bev)
		p->bev = NULL;
	bufferevent_free(bev);
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int len,
		      void *arg)
{
	struct world *w = arg;
	struct bufferevent *bev = bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);

	(void)lis;
	(void)sa;
	(void)len;
	if (w->peer.bev)
		bufferevent_free(w->peer.bev);
	w->peer.bev = bev;
	w->peer.conns++;
	bufferevent_setcb(bev, peer_read, NULL, peer_event, &w->peer);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void on_up(void *ctx)
{
	((struct world *)ctx)->ups++;
}

static void on_down(void *ctx, const char *why, int err)
{
	struct world *w = ctx;

	(void)err;
	w->downs++;
	snprintf(w->why, sizeof(w->why), "%s", why);
}

static void on_reply(void *ctx, redisReply *r, void *priv)
{
	struct world *w = ctx;

	(void)priv;
	if (r) {
		w->replies++;
		w->last_int = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
	}
}

static void on_result(void *ctx, redisReply *r, const char *err, void *priv)
{
	struct world *w = ctx;

	(void)priv;
	w->results++;
	snprintf(w->err, sizeof(w->err), "%s", r ? "" : err);
}

/* Runs the loop until cond or 3 s. */
#define RUN_UNTIL(w, cond)                                                                         \
	do {                                                                                       \
		for (int i_ = 0; i_ < 300 && !(cond); i_++) {                                      \
			struct timeval tv_ = {0, 10000};                                           \
			event_base_loopexit((w)->base, &tv_);                                      \
			event_base_dispatch((w)->base);                                            \
		}                                                                                  \
		assert_true(cond);                                                                 \
	} while (0)

static int setup(void **state)
{
	static const struct redis_link_ops ops = {.on_up = on_up, .on_down = on_down};
	struct world *w = calloc(1, sizeof(*w));
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	struct cfg_endpoint ep = {.host = "127.0.0.1"};

	w->base = event_base_new();
	w->lis = evconnlistener_new_bind(w->base, on_accept, w,
					 LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE, 16,
					 (struct sockaddr *)&sin, sizeof(sin));
	assert_non_null(w->lis);
	getsockname(evconnlistener_get_fd(w->lis), (struct sockaddr *)&sin, &len);
	ep.port = ntohs(sin.sin_port);
	w->l = redis_link_new(w->base, &ep, "peer", 1000, &ops, w);
	assert_non_null(w->l);
	redis_link_set_backoff(w->l, 10, 20);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	redis_link_free(w->l);
	if (w->peer.bev)
		bufferevent_free(w->peer.bev);
	evconnlistener_free(w->lis);
	event_base_free(w->base);
	free(w);
	return 0;
}

static const char *ping[] = {"PING"};

static void test_command_and_reply(void **state)
{
	struct world *w = *state;

	w->peer.answer = ":42\r\n";
	assert_int_equal(redis_link_command(w->l, on_reply, NULL, 1, ping, NULL), -ENOTCONN);
	redis_link_start(w->l);
	RUN_UNTIL(w, w->ups == 1);
	assert_int_equal(redis_link_command(w->l, on_reply, NULL, 1, ping, NULL), 0);
	RUN_UNTIL(w, w->replies == 1);
	assert_int_equal(w->last_int, 42);
	assert_int_equal(redis_link_in_flight(w->l), 0);
}

/* A request on a link that is down connects it at once and goes out after on_up;
 * a send's reply is read and dropped, in order. */
static void test_request_held_then_sent(void **state)
{
	struct world *w = *state;

	w->peer.answer = "+OK\r\n";
	redis_link_send(w->l, 1, ping);
	redis_link_request(w->l, 1000, on_result, NULL, 1, ping);
	assert_int_equal(w->results, 0); /* never from inside the call */
	RUN_UNTIL(w, w->results == 1);
	assert_string_equal(w->err, "");
	assert_int_equal(w->ups, 1);
	assert_int_equal(w->peer.cmds, 2);
	assert_int_equal(w->downs, 0);
}

static void test_request_timeout_drops_link(void **state)
{
	struct world *w = *state;

	w->peer.answer = NULL; /* never answers */
	redis_link_request(w->l, 100, on_result, NULL, 1, ping);
	RUN_UNTIL(w, w->results == 1);
	assert_string_equal(w->err, "timed out");
	RUN_UNTIL(w, w->downs == 1);
	assert_string_equal(w->why, "request timed out");
}

static void test_reply_to_no_request(void **state)
{
	struct world *w = *state;

	w->peer.answer = "+OK\r\n+OK\r\n"; /* one too many */
	redis_link_start(w->l);
	RUN_UNTIL(w, w->ups == 1);
	assert_int_equal(redis_link_command(w->l, on_reply, NULL, 1, ping, NULL), 0);
	RUN_UNTIL(w, w->downs == 1);
	assert_string_equal(w->why, "protocol error: a reply to no request");
	/* Only the link: it dials again. */
	RUN_UNTIL(w, w->ups == 2 && w->peer.conns == 2);
}

static void test_oversized_reply(void **state)
{
	struct world *w = *state;

	w->peer.answer = "$4294967296\r\n";
	redis_link_request(w->l, 1000, on_result, NULL, 1, ping);
	RUN_UNTIL(w, w->results == 1);
	assert_string_equal(w->err, "connection lost");
	assert_non_null(strstr(w->why, "protocol error: a bulk string of 4294967296 bytes"));
}

static void test_slow_reply(void **state)
{
	struct world *w = *state;

	w->peer.answer = "$100\r\nabc"; /* begun, never finished */
	redis_link_set_reply_timeout(w->l, 100);
	redis_link_start(w->l);
	RUN_UNTIL(w, w->ups == 1);
	assert_int_equal(redis_link_command(w->l, on_reply, NULL, 1, ping, NULL), 0);
	RUN_UNTIL(w, w->downs == 1);
	assert_string_equal(w->why, "protocol error: a reply begun and not finished within 100 ms");
}

static void free_from_callback(void *ctx, redisReply *r, void *priv)
{
	struct world *w = ctx;

	(void)r;
	(void)priv;
	w->replies++;
	redis_link_free(w->l);
	w->l = NULL;
}

static void test_free_from_callback(void **state)
{
	struct world *w = *state;

	w->peer.answer = "+OK\r\n+OK\r\n";
	redis_link_start(w->l);
	RUN_UNTIL(w, w->ups == 1);
	assert_int_equal(redis_link_command(w->l, free_from_callback, NULL, 1, ping, NULL), 0);
	assert_int_equal(redis_link_command(w->l, on_reply, NULL, 1, ping, NULL), 0);
	RUN_UNTIL(w, w->l == NULL);
	/* The deferred free runs from the loop; ASan would see a use after free. */
	event_base_loop(w->base, EVLOOP_NONBLOCK);
	assert_int_equal(w->replies, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_command_and_reply, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_request_held_then_sent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_request_timeout_drops_link, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reply_to_no_request, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_oversized_reply, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_slow_reply, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_free_from_callback, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
