// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Limits like Redis's for whatever reaches the controller's socket (issue 14):
 * output buffers per client class, maxclients fitted under the open-files limit,
 * and rejections logged at most once per second per source address. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"

/* client-output-buffer-limit: closed past hard, or past soft for soft_s. */
struct ctl_out_limit {
	const char *class;
	size_t hard, soft;
	int soft_s;
};
static const struct ctl_out_limit ctl_out_normal = {"normal", 16u << 20, 4u << 20, 10};
static const struct ctl_out_limit ctl_out_pubsub = {"pubsub", CTL_PUBSUB_MAX_OUT, 2u << 20, 60};
/* Client authentication on, not logged in (nor an agent): its answers are NOAUTH
 * errors and handshake replies; one that does not read them is closed early. */
static const struct ctl_out_limit ctl_out_prelogin = {"unauthenticated", 64u << 10, 64u << 10, 0};

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
	typeof(c->log_src[0]) *s;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)peer[i]) * 16777619u;
	s = &c->log_src[h % CTL_LOG_SLOTS];
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

/* Past its output buffer limit (its class's hard limit, or the soft one for
 * soft_s): true, and the caller frees it at once (a client that does not read
 * would never take an error reply). */
bool ctl_conn_over_limit(struct ctl_conn *k)
{
	const struct ctl_out_limit *lim =
	    (k->flags & CTL_C_PUBSUB) ? &ctl_out_pubsub : &ctl_out_normal;
	size_t len = evbuffer_get_length(bufferevent_get_output(k->bev));
	long long now;

	if (len > ctl_out_prelogin.hard && !(k->flags & (CTL_C_LOGIN | CTL_C_AGENT)) &&
	    ctl_client_auth_on(k->ctl))
		lim = &ctl_out_prelogin;
	unsigned supp = 0;

	if (len <= lim->soft) {
		k->soft_since_ms = 0;
		return false;
	}
	now = fl_mono_ms(); /* not read per REPORT (issue 19) */
	if (len <= lim->hard) {
		if (!k->soft_since_ms)
			k->soft_since_ms = now;
		if (now - k->soft_since_ms <= lim->soft_s * 1000LL)
			return false;
	}
	if (ctl_log_allowed(k->ctl, k->peer, &supp))
		pr_warn("closing client %s: output buffer limit of class %s reached (%zu bytes "
			"unread; hard %zu, soft %zu for %d s)%s\n",
			k->peer, lim->class, len, lim->hard, lim->soft, lim->soft_s,
			supp ? " (and others from there, not logged)" : "");
	return true;
}

/* RLIMIT_NOFILE raised to its hard limit, maxclients fitted under it (Redis does
 * the same at start). */
void ctl_fit_clients(struct ctl *c)
{
	struct rlimit rl;

	c->maxclients = CTL_MAX_CLIENTS;
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

		c->maxclients = n < 16 ? 16 : (int)n;
		pr_info("maxclients %d: the open-files limit is %llu\n", c->maxclients,
			(unsigned long long)rl.rlim_cur);
	}
}
