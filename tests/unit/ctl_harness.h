/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A controller for the unit tests of its shell (ctl_*.c): the cluster file, the
 * failover core and the modules' states (ctl_modules_init), no sockets listening
 * and no servers. A fake connection is one end of a socketpair whose bufferevent
 * neither reads nor writes: what a handler answers stays in its output buffer,
 * where th_out() takes it. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/config.h"
#include "common/resp.h"
#include "controller/ctl.h"
#include "controller/ctl_conn.h"

static const char th_cluster[] = "[cluster]\nname = t\nsecret = s3cret-s3cret-s3cret\n"
				 "[controller]\nnode_down_after_ms = 1000\n"
				 "failover_block_ms = 10000\ntilt_ms = 30000\n"
				 "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
				 "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6380\n"
				 "[node \"n3\"]\naddress = 10.0.0.3\nredis = 10.0.0.3:6381\n"
				 "[shard \"s\"]\nnodes = n1 n2 n3\n";

static long long th_mono(void *ctx)
{
	(void)ctx;
	return fl_mono_ms();
}

static long long th_wall(void *ctx)
{
	(void)ctx;
	return fl_wall_ms();
}

/* A controller on the cluster file text (th_cluster and more); its state_file in a
 * fresh directory. */
static __attribute__((unused)) struct ctl *th_new(const char *text)
{
	struct ctl *c = calloc(1, sizeof(*c));
	struct cfg *cfg = NULL;
	char err[512] = "", dir[64];

	assert_non_null(c);
	if (cfg_load_string("t.conf", text, &cfg, err, sizeof(err)))
		fail_msg("%s", err);
	c->cfg = cfg;
	assert_int_equal(fo_cluster_init(&c->fo, cfg, NULL, c), 0);
	c->fo.now_ms = th_mono;
	c->fo.wall_ms = th_wall;
	c->start_ms = fl_mono_ms();
	snprintf(dir, sizeof(dir), "/tmp/fl-ctl-test.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(c->state_file, sizeof(c->state_file), "%s/state", dir);
	snprintf(c->myid, sizeof(c->myid), "%040d", 7);
	c->base = event_base_new();
	assert_non_null(c->base);
	assert_int_equal(ctl_modules_init(c), 0);
	return c;
}

static __attribute__((unused)) void th_free(struct ctl *c)
{
	char path[300];

	while (c->conns)
		ctl_conn_free(c->conns);
	ctl_modules_fini(c);
	fo_cluster_free(&c->fo);
	event_base_free(c->base);
	cfg_free(c->cfg);
	snprintf(path, sizeof(path), "%s.runtime", c->state_file);
	unlink(path);
	*strrchr(c->state_file, '/') = '\0'; /* its directory */
	rmdir(c->state_file);
	free(c);
}

/* The test's controller: th_setup makes it on th_cluster, th_teardown frees it
 * (cmocka fixtures; a test file with another cluster file sets C itself). */
static struct ctl *C;

static __attribute__((unused)) int th_setup(void **state)
{
	(void)state;
	C = th_new(th_cluster);
	return 0;
}

static __attribute__((unused)) int th_teardown(void **state)
{
	(void)state;
	th_free(C);
	return 0;
}

/* A client connection from peer ("10.1.2.3:4000"). */
static __attribute__((unused)) struct ctl_conn *th_conn(struct ctl *c, const char *peer)
{
	struct ctl_conn *k = calloc(1, sizeof(*k));
	int sv[2];

	assert_non_null(k);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]); /* nothing is written: the output stays in its buffer */
	k->ctl = c;
	k->node = -1;
	k->bev = bufferevent_socket_new(c->base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	k->rd = resp_reader_new();
	assert_non_null(k->bev);
	assert_non_null(k->rd);
	bufferevent_disable(k->bev, EV_READ | EV_WRITE);
	snprintf(k->peer, sizeof(k->peer), "%s", peer);
	ctl_client_opened(k);
	ctl_conn_add(k);
	return k;
}

/* Runs fn on the command line (arguments split at spaces). */
static __attribute__((unused)) void
th_run(struct ctl_conn *k, void (*fn)(struct ctl_conn *k, struct resp_cmd *cmd), const char *line)
{
	struct resp_reader *rd = resp_reader_new();
	struct evbuffer *b = evbuffer_new();
	char copy[512], *save = NULL, *argv[32];
	struct resp_cmd cmd;
	int argc = 0;

	snprintf(copy, sizeof(copy), "%s", line);
	for (char *t = strtok_r(copy, " ", &save); t && argc < 32; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	resp_array(b, argc);
	for (int i = 0; i < argc; i++)
		resp_str(b, argv[i]);
	assert_int_equal(
	    resp_feed(rd, (const char *)evbuffer_pullup(b, -1), evbuffer_get_length(b)), 0);
	assert_int_equal(resp_next(rd, &cmd), 1);
	fn(k, &cmd);
	resp_cmd_free(&cmd);
	resp_reader_free(rd);
	evbuffer_free(b);
}

/* What k has been answered since the last call (a static buffer). */
static __attribute__((unused)) const char *th_out(struct ctl_conn *k)
{
	static char buf[1 << 16];
	struct evbuffer *o = bufferevent_get_output(k->bev);
	size_t n = evbuffer_get_length(o);

	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	/* A socket bufferevent keeps its output's start frozen (ctl_listen.c). */
	evbuffer_unfreeze(o, 1);
	evbuffer_remove(o, buf, n);
	buf[n] = '\0';
	evbuffer_drain(o, evbuffer_get_length(o));
	evbuffer_freeze(o, 1);
	return buf;
}

/* The loop once, without waiting: what was made active runs. */
static __attribute__((unused)) void th_loop(struct ctl *c)
{
	event_base_loop(c->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

/* The shard's primary is node id (as discovery or a promotion sets it). */
static __attribute__((unused)) void th_primary(struct ctl *c, const char *id)
{
	struct fo_shard *s = &c->fo.shards[0];

	assert_int_equal(fo_set_primary(&c->fo, s, fo_find_node(&c->fo, id)->idx, s->epoch + 1), 0);
}
