// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Limits like Redis's for whatever reaches the controller's socket:
 * maxclients fitted under the open-files limit, and rejections logged at most
 * once per second per source address (the output buffers per client class are
 * ctl_conn.c's). Calls nothing of the controller's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"

struct ctl_limits {
	struct {
		unsigned hash;
		long long last_ms;
		unsigned suppressed;
	} log_src[CTL_LOG_SLOTS]; /* rejections logged per source address */
	int maxclients;		  /* ctl_fit_clients's; 0 before */
};

int ctl_limits_init(struct ctl *c)
{
	c->limits = calloc(1, sizeof(*c->limits));
	return c->limits ? 0 : -ENOMEM;
}

void ctl_limits_fini(struct ctl *c)
{
	free(c->limits);
	c->limits = NULL;
}

/* May a rejection from peer ("ip:port", "[v6]:port", "unix") be logged now? One
 * per source address per CTL_LOG_SRC_MS; *suppressed gets how many were not. A
 * flood from new addresses shares the slots: it cannot log faster than
 * CTL_LOG_SLOTS lines per CTL_LOG_SRC_MS either. */
bool ctl_log_allowed(struct ctl *c, const char *peer, unsigned *suppressed)
{
	const char *end = strrchr(peer, ':');
	size_t n = end ? (size_t)(end - peer) : strlen(peer);
	unsigned h = 2166136261u;
	long long now = fl_mono_ms();
	typeof(c->limits->log_src[0]) *s;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)peer[i]) * 16777619u;
	s = &c->limits->log_src[h % CTL_LOG_SLOTS];
	if (s->last_ms && now - s->last_ms < CTL_LOG_SRC_MS) {
		s->suppressed++; /* this address, or another in its slot: wait */
		return false;
	}
	*suppressed = s->suppressed;
	s->hash = h;
	s->last_ms = now;
	s->suppressed = 0;
	return true;
}

int ctl_max_clients(const struct ctl *c)
{
	return c->limits ? c->limits->maxclients : 0;
}

/* RLIMIT_NOFILE raised to its hard limit, maxclients fitted under it (Redis does
 * the same at start). */
void ctl_fit_clients(struct ctl *c)
{
	struct rlimit rl;

	c->limits->maxclients = CTL_MAX_CLIENTS;
	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)CTL_MAX_CLIENTS + CTL_FD_RESERVE + c->cfg->nnodes) {
		long n = (long)rl.rlim_cur - CTL_FD_RESERVE - c->cfg->nnodes;

		c->limits->maxclients = n < 16 ? 16 : (int)n;
		pr_info("maxclients %d: the open-files limit is %llu\n", c->limits->maxclients,
			(unsigned long long)rl.rlim_cur);
	}
}
