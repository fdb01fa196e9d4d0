// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The agent's reporter (agent/reporter.c) against a scripted controller in the same
 * event loop (127.0.0.1): the real handshake (common/auth.h), its REPORTs read with the
 * controller's command parser (common/resp.h), answers written with its reply writers.
 * An answer's lease admission grant reaches the agent whole (a term past 32 bits), a
 * follower's reaches nothing; and a REPORT never comes later than the heartbeat_ms
 * the last one said, also when the interval grew in between (a replica gone quiet):
 * past three of those the controller judges the agent lost, and withdraws its node
 * from its peers' lease admission. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include "common/auth.h"
#include "common/clock.h"
#include "common/resp.h"
#include "agent/reporter.h"

#define SECRET	    "s3cret-s3cret-s3cret"
#define NODE	    "s1234n1"
#define TERM	    1764626672090LL /* a controller's start, wall-clock ms */
#define MAX_REPORTS 16

struct world {
	struct event_base *base;
	struct evconnlistener *lis;
	struct bufferevent *bev;
	struct resp_reader *rd;
	uint8_t key[AUTH_KEY_LEN], na[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN];
	const char *role; /* "leader" or "follower" in the answers */
	bool grant;	  /* answers carry elements 6-8 */
	/* REPORTs received: when (monotonic ms) and their heartbeat_ms. */
	int nreports;
	long long at_ms[MAX_REPORTS];
	int said_ms[MAX_REPORTS];
	/* What the agent's side heard. */
	int interval; /* ops->interval_ms and the heartbeat_ms key */
	int grow_at;  /* once this many REPORTs came: interval 500 (a replica gone quiet) */
	int answers, admits, no_grants;
	long long term, grant_no, epoch;
	char list[128], primary[64];
	struct reporter *r;
};

static void answer_report(struct world *w, struct evbuffer *out)
{
	resp_array(out, w->grant ? 8 : 5);
	resp_status(out, "OK");
	resp_int(out, 3);
	resp_str(out, NODE);
	resp_str(out, w->role);
	resp_str(out, "active");
	if (w->grant) {
		resp_int(out, TERM);
		resp_int(out, 7);
		resp_str(out, "s1234n2 s1234n3");
	}
}

static void on_command(struct world *w, struct resp_cmd *c)
{
	struct evbuffer *out = bufferevent_get_output(w->bev);
	uint8_t proof[AUTH_MAC_LEN];
	char hex[AUTH_HEX_LEN + 1];

	if (!strcmp(c->argv[0], "HELLO")) {
		assert_int_equal(c->argc, 5);
		assert_string_equal(c->argv[3], NODE);
		assert_int_equal(auth_unhex(c->argv[4], c->lens[4], w->na, sizeof(w->na)), 0);
		assert_int_equal(auth_nonce(w->nc), 0);
		assert_int_equal(auth_proof(w->key, AUTH_CONTROLLER, NODE, w->na, w->nc, proof), 0);
		resp_array(out, 3);
		resp_str(out, "CHALLENGE");
		auth_hex(w->nc, sizeof(w->nc), hex);
		resp_str(out, hex);
		auth_hex(proof, sizeof(proof), hex);
		resp_str(out, hex);
	} else if (!strcmp(c->argv[0], "PROVE")) {
		assert_true(
		    auth_check(w->key, AUTH_AGENT, NODE, w->na, w->nc, c->argv[1], c->lens[1]));
		resp_status(out, "OK");
	} else if (!strcmp(c->argv[0], "REPORT")) {
		int said = 0;

		for (int i = 2; i + 1 < c->argc; i += 2)
			if (!strcmp(c->argv[i], "heartbeat_ms"))
				said = atoi(c->argv[i + 1]);
		if (w->nreports < MAX_REPORTS) {
			w->at_ms[w->nreports] = fl_mono_ms();
			w->said_ms[w->nreports] = said;
		}
		w->nreports++;
		if (w->nreports == w->grow_at)
			w->interval = 500;
		answer_report(w, out);
	} else {
		fail_msg("unexpected command %s", c->argv[0]);
	}
}

static void ctl_read(struct bufferevent *bev, void *arg)
{
	struct world *w = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct resp_cmd c;
	size_t n;

	while ((n = evbuffer_get_length(in))) {
		assert_int_equal(resp_feed(w->rd, (const char *)evbuffer_pullup(in, -1), n), 0);
		evbuffer_drain(in, n);
	}
	while (resp_next(w->rd, &c) == 1) {
		on_command(w, &c);
		resp_cmd_free(&c);
	}
}

static void ctl_event(struct bufferevent *bev, short what, void *arg)
{
	struct world *w = arg;

	(void)what;
	if (w->bev == bev)
		w->bev = NULL;
	bufferevent_free(bev);
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int len,
		      void *arg)
{
	struct world *w = arg;

	(void)lis;
	(void)sa;
	(void)len;
	assert_null(w->bev);
	w->bev = bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(w->bev, ctl_read, NULL, ctl_event, w);
	bufferevent_enable(w->bev, EV_READ | EV_WRITE);
}

/* The agent's side. */
static void build(void *ctx, struct rep_msg *m)
{
	struct world *w = ctx;

	rep_add_key(m, RK_PROC, NULL, "up");
	rep_add_key(m, RK_HEARTBEAT, NULL, "%d", w->interval);
}

static int interval(void *ctx)
{
	return ((struct world *)ctx)->interval;
}

static void on_answer(void *ctx, long long epoch, const char *primary, uint64_t sent_ns, int shadow)
{
	struct world *w = ctx;

	(void)sent_ns;
	(void)shadow;
	w->answers++;
	w->epoch = epoch;
	snprintf(w->primary, sizeof(w->primary), "%s", primary);
}

static void on_admit(void *ctx, long long term, long long grant, const char *list)
{
	struct world *w = ctx;

	if (!list) {
		w->no_grants++;
		return;
	}
	w->admits++;
	w->term = term;
	w->grant_no = grant;
	snprintf(w->list, sizeof(w->list), "%s", list);
}

/* Runs the loop until cond or 5 s. */
#define RUN_UNTIL(w, cond)                                                                         \
	do {                                                                                       \
		for (int i_ = 0; i_ < 500 && !(cond); i_++) {                                      \
			struct timeval tv_ = {0, 10000};                                           \
			event_base_loopexit((w)->base, &tv_);                                      \
			event_base_dispatch((w)->base);                                            \
		}                                                                                  \
		assert_true(cond);                                                                 \
	} while (0)

static int setup(void **state)
{
	static const struct reporter_ops ops = {
	    .build = build, .answer = on_answer, .admit = on_admit, .interval_ms = interval};
	struct world *w = calloc(1, sizeof(*w));
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	struct reporter_opts o = {.node = NODE, .secret = SECRET, .heartbeat_ms = 100};

	assert_non_null(w);
	w->base = event_base_new();
	w->rd = resp_reader_new();
	assert_non_null(w->rd);
	w->lis = evconnlistener_new_bind(w->base, on_accept, w,
					 LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE, 16,
					 (struct sockaddr *)&sin, sizeof(sin));
	assert_non_null(w->lis);
	getsockname(evconnlistener_get_fd(w->lis), (struct sockaddr *)&sin, &len);
	snprintf(o.ep.host, sizeof(o.ep.host), "127.0.0.1");
	o.ep.port = ntohs(sin.sin_port);
	assert_int_equal(auth_node_key(SECRET, strlen(SECRET), NODE, w->key), 0);
	w->role = "leader";
	w->grant = true;
	w->interval = 100;
	w->r = reporter_new(w->base, &o, &ops, w);
	assert_non_null(w->r);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	reporter_free(w->r);
	if (w->bev)
		bufferevent_free(w->bev);
	evconnlistener_free(w->lis);
	resp_reader_free(w->rd);
	event_base_free(w->base);
	free(w);
	return 0;
}

/* A leader's answer: the grant (a term past 32 bits, its number, the admitted ids) goes
 * to ops->admit before the answer itself; one without a grant says so (NULL); a
 * follower's answer reaches neither. */
static void test_reporter_grant_reaches_agent(void **state)
{
	struct world *w = *state;
	int n;

	reporter_start(w->r);
	RUN_UNTIL(w, w->answers >= 1);
	assert_int_equal(w->admits, w->answers);
	assert_true(w->term == TERM);
	assert_int_equal(w->grant_no, 7);
	assert_string_equal(w->list, "s1234n2 s1234n3");
	assert_int_equal(w->epoch, 3);
	assert_string_equal(w->primary, NODE);
	assert_int_equal(w->no_grants, 0);

	w->grant = false;
	n = w->answers;
	RUN_UNTIL(w, w->answers > n);
	assert_true(w->no_grants >= 1);

	w->role = "follower";
	w->grant = true;
	RUN_UNTIL(w, w->nreports >= 5); /* answered as a follower from the 4th on, or so */
	n = w->answers;
	w->admits = 0;
	w->no_grants = 0;
	RUN_UNTIL(w, w->nreports >= 8);
	assert_int_equal(w->answers, n);
	assert_int_equal(w->admits, 0);
	assert_int_equal(w->no_grants, 0);
}

/* The interval grows from 100 to 500 ms right after a REPORT that said 100: the next
 * one still goes within 100 ms (and a tick) and says 500; only the one after waits the
 * 500. Before, it waited 500 ms: the controller judged the agent lost at 300. */
static void test_reporter_within_announced_heartbeat(void **state)
{
	struct world *w = *state;
	long long gap;

	w->grow_at = 2;
	reporter_start(w->r);
	RUN_UNTIL(w, w->nreports >= 4);
	assert_int_equal(w->said_ms[1], 100);
	assert_int_equal(w->said_ms[2], 500);
	assert_int_equal(w->said_ms[3], 500);
	gap = w->at_ms[2] - w->at_ms[1];
	if (gap >= 3 * 100)
		fail_msg("the REPORT after one that said heartbeat_ms 100 came %lld ms later", gap);
	gap = w->at_ms[3] - w->at_ms[2];
	if (gap < 400)
		fail_msg("a REPORT that said heartbeat_ms 500 was followed %lld ms later", gap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_reporter_grant_reaches_agent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reporter_within_announced_heartbeat, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
