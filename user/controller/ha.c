// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One leader among the controllers, by etcd lease and transaction (ha.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ha.h"

#define HA_MAX_CTLS	32
#define HA_RETRY_MS	200 /* after a failed step, start over this much later (doubling to 2 s) */
#define HA_REVOKE_TRIES 3   /* a clean stop's revoke, one endpoint after another */

struct ha_ctl {
	char id[64];
	char addr[128];
};

/* One etcd call in flight: ignored when it answers for an older generation. */
struct ha_call {
	struct ha *h;
	unsigned gen;
	long long sent_ms;
	ha_put_fn put_fn;
	ha_get_fn get_fn;
	void *put_ctx;
	struct ha_call *next, **pprev;
};

struct ha {
	struct event_base *base;
	struct etcd *etcd;
	struct ha_opts o;
	const struct ha_ops *ops;
	void *ctx;
	char prefix[128];
	size_t plen;
	char leader_key[160];
	char self_key[192];
	char self_val[192];
	enum ha_role role;
	unsigned gen; /* bumped on every start over */
	int64_t lease_id;
	long long deadline_ms; /* monotonic: act only before this */
	long long ttl_ms;      /* the TTL etcd granted */
	bool suspended;	       /* leader past its deadline, waiting for a keep-alive answer */
	int64_t leader_rev;    /* create revision of our leader key */
	char leader[64];       /* the leader's id, "" unknown */
	int64_t rev;	       /* last revision seen */
	bool healthy;
	bool health_said;
	bool stopping;
	int retry_ms;
	struct event *ka_timer, *deadline_timer, *retry_timer;
	struct event *campaign_ev; /* a campaign started from the watch (not inside curl) */
	struct event *resync_ev;   /* the watch ended: read the prefix again, watch anew */
	struct etcd_watch *watch;
	unsigned watch_gen; /* the generation the watch belongs to */
	struct ha_ctl ctls[HA_MAX_CTLS];
	int nctls;
	struct ha_call *calls;
	void (*stop_done)(void *ctx);
	void *stop_ctx;
	int64_t stop_lease; /* the lease ha_stop revokes */
	int revoke_tries;
};

static void start_over(struct ha *h, const char *why);
static void campaign(struct ha *h);

const char *ha_role_name(enum ha_role r)
{
	switch (r) {
	case HA_LEADER:
		return "leader";
	case HA_FOLLOWER:
		return "follower";
	default:
		return "starting";
	}
}

static long long now_ms(void)
{
	return fl_mono_ms();
}

static void set_health(struct ha *h, bool ok, const char *why)
{
	if (h->health_said && h->healthy == ok)
		return;
	h->healthy = ok;
	h->health_said = true;
	if (h->ops->on_health)
		h->ops->on_health(h->ctx, ok, why);
}

static void set_role(struct ha *h, enum ha_role r, const char *why)
{
	if (h->role == r)
		return;
	h->role = r;
	if (r != HA_LEADER) {
		h->deadline_ms = 0;
		h->leader_rev = 0;
	}
	if (h->ops->on_role)
		h->ops->on_role(h->ctx, r, why);
}

/* ---- calls ---- */

static struct ha_call *call_new(struct ha *h)
{
	struct ha_call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->h = h;
	c->gen = h->gen;
	c->sent_ms = now_ms();
	c->next = h->calls;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &h->calls;
	h->calls = c;
	return c;
}

static void call_free(struct ha_call *c)
{
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	free(c);
}

/* Takes c: on a failure to even start, frees it and starts over. */
static void call(struct ha *h, struct ha_call *c, const char *path, struct json_object *body,
		 etcd_cb cb)
{
	if (!c) {
		json_object_put(body);
		start_over(h, "out of memory");
		return;
	}
	if (etcd_call(h->etcd, path, body, 0, cb, c) < 0) {
		call_free(c);
		start_over(h, "failed to start an etcd request");
	}
}

/* The common start of every answer: false when it is stale or failed (then the
 * machine starts over). */
static bool answer_ok(struct ha_call *c, int err, const char *msg, const char *what)
{
	struct ha *h = c->h;
	char why[512];

	if (c->gen != h->gen || h->stopping)
		return false;
	if (err) {
		snprintf(why, sizeof(why), "failed to %s: %s", what, msg);
		if (err != -EIO)
			set_health(h, false, why);
		start_over(h, why);
		return false;
	}
	set_health(h, true, "");
	return true;
}

static struct json_object *kv_body(struct ha *h, const char *key)
{
	struct json_object *b = json_object_new_object();

	(void)h;
	etcd_json_add_bytes(b, "key", key, strlen(key));
	return b;
}

/* ---- mirror of the prefix ---- */

static void ctl_set(struct ha *h, const char *id, const char *addr, bool deleted)
{
	int i;

	for (i = 0; i < h->nctls; i++)
		if (!strcmp(h->ctls[i].id, id))
			break;
	if (deleted) {
		if (i < h->nctls)
			h->ctls[i] = h->ctls[--h->nctls];
		return;
	}
	if (i == h->nctls) {
		if (h->nctls == HA_MAX_CTLS)
			return;
		h->nctls++;
	}
	snprintf(h->ctls[i].id, sizeof(h->ctls[i].id), "%s", id);
	snprintf(h->ctls[i].addr, sizeof(h->ctls[i].addr), "%s", addr);
}

static void leader_from(struct ha *h, const char *val)
{
	size_t n = strcspn(val, " ");

	if (n >= sizeof(h->leader))
		n = sizeof(h->leader) - 1;
	memcpy(h->leader, val, n);
	h->leader[n] = '\0';
}

/* One key/value (kv object of a range or watch answer). */
static void on_kv(struct ha *h, struct json_object *kv, bool deleted)
{
	char key[512], val[8192];
	const char *rel;
	int klen, vlen;

	klen = etcd_json_get_bytes(kv, "key", key, sizeof(key));
	if (klen < (int)h->plen || memcmp(key, h->prefix, h->plen))
		return;
	vlen = deleted ? 0 : etcd_json_get_bytes(kv, "value", val, sizeof(val));
	if (vlen < 0)
		vlen = 0, val[0] = '\0';
	rel = key + h->plen;
	if (!strcmp(rel, "leader")) {
		if (deleted) {
			h->leader[0] = '\0';
			if (h->role == HA_LEADER)
				start_over(h, "the leader key was deleted");
			else if (h->role == HA_FOLLOWER)
				event_active(h->campaign_ev, 0, 0);
		} else {
			leader_from(h, val);
			if (h->role == HA_LEADER && strcmp(h->leader, h->o.id)) {
				start_over(h, "another controller holds the leader key");
				return;
			}
		}
	} else if (!strncmp(rel, "controllers/", 12)) {
		ctl_set(h, rel + 12, val, deleted);
	}
	if (h->ops->on_value)
		h->ops->on_value(h->ctx, rel, deleted ? NULL : val, (size_t)vlen, deleted);
}

static void on_watch_events(void *ctx, struct json_object *res)
{
	struct ha *h = ctx;
	struct json_object *evs, *ev, *kv, *type;
	unsigned gen = h->gen;

	if (h->watch_gen != h->gen || h->stopping)
		return;
	if (etcd_json_get_i64(res, "compact_revision", 0) > 0) {
		start_over(h, "the watch fell behind etcd's compaction");
		return;
	}
	if (json_object_object_get_ex(res, "header", &ev))
		h->rev = etcd_json_get_i64(ev, "revision", h->rev);
	if (!json_object_object_get_ex(res, "events", &evs))
		return;
	for (size_t i = 0; i < json_object_array_length(evs) && gen == h->gen; i++) {
		ev = json_object_array_get_idx(evs, i);
		if (!json_object_object_get_ex(ev, "kv", &kv))
			continue;
		on_kv(h, kv,
		      json_object_object_get_ex(ev, "type", &type) &&
			  !strcmp(json_object_get_string(type), "DELETE"));
	}
}

static void on_watch_end(void *ctx, const char *why)
{
	struct ha *h = ctx;
	char msg[512];

	if (h->watch_gen != h->gen || h->stopping)
		return;
	/* Not a reason to give up leadership (the lease decides that): one etcd member
	 * gone ends the watch on it; read the prefix again from the next endpoint and
	 * watch from there (from a timer: the watch cannot be freed from here). */
	snprintf(msg, sizeof(msg), "the etcd watch ended: %s", why);
	pr_info("ha: %s; watching again\n", msg);
	{
		struct timeval tv = fl_ms_tv(100);

		evtimer_add(h->resync_ev, &tv);
	}
}

/* ---- the steps: grant, register, range + watch, campaign ---- */

/* Leads from now on, at create revision rev of the leader key (on our lease). */
static void won(struct ha *h, int64_t rev, const char *how)
{
	char why[160];

	h->leader_rev = rev;
	snprintf(h->leader, sizeof(h->leader), "%s", h->o.id);
	snprintf(why, sizeof(why), "%s at revision %lld", how, (long long)rev);
	/* The deadline is the lease's: set by the grant or the last keep-alive. */
	if (now_ms() < h->deadline_ms)
		set_role(h, HA_LEADER, why);
	else
		start_over(h, "won the election with a lease already past its deadline");
}

/* The leader key as the campaign's failure branch read it: on our lease, it is ours
 * (an earlier campaign of this lease whose answer was lost). */
static bool leader_key_ours(struct ha *h, struct json_object *resp, int64_t *rev)
{
	struct json_object *rs, *r, *kvs, *kv;

	if (!json_object_object_get_ex(resp, "responses", &rs) ||
	    json_object_array_length(rs) < 1 ||
	    !json_object_object_get_ex(json_object_array_get_idx(rs, 0), "response_range", &r) ||
	    !json_object_object_get_ex(r, "kvs", &kvs) || json_object_array_length(kvs) < 1)
		return false;
	kv = json_object_array_get_idx(kvs, 0);
	if (!h->lease_id || etcd_json_get_i64(kv, "lease", 0) != h->lease_id)
		return false;
	*rev = etcd_json_get_i64(kv, "create_revision", 0);
	return *rev > 0;
}

static void on_campaign(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct ha_call *c = ctx;
	struct ha *h = c->h;
	struct json_object *hdr, *o;
	int64_t rev;

	if (c->gen != h->gen || h->stopping || h->role == HA_LEADER) {
		call_free(c);
		return;
	}
	call_free(c);
	if (err) {
		/* Not a reason to start over: the lease is the deadline's business. The next
		 * keep-alive tick campaigns again (on the next endpoint after a timeout), and
		 * if this one was applied all the same, its failure branch says so. */
		if (err != -EIO)
			set_health(h, false, msg);
		pr_info("ha: failed to campaign for the leader key: %s; trying again\n", msg);
		set_role(h, HA_FOLLOWER, "the campaign failed: trying again");
		return;
	}
	set_health(h, true, "");
	h->retry_ms = HA_RETRY_MS; /* etcd answered every step: a later start over is quick */
	if (json_object_object_get_ex(resp, "succeeded", &o) && json_object_get_boolean(o)) {
		json_object_object_get_ex(resp, "header", &hdr);
		won(h, etcd_json_get_i64(hdr, "revision", 0), "won the election");
	} else if (leader_key_ours(h, resp, &rev)) {
		won(h, rev, "won the election (an earlier campaign, its answer lost)");
	} else {
		set_role(h, HA_FOLLOWER,
			 h->leader[0] ? "another controller leads" : "lost the election");
	}
}

/* The body of "put key = val (on lease, if non-zero) if the leader key's create
 * revision is rev" (0: the leader key does not exist): the campaign and every write
 * of the leader are this one transaction. */
static struct json_object *txn_put_if_leader_rev(const struct ha *h, int64_t rev, const char *key,
						 const void *val, size_t len, int64_t lease)
{
	struct json_object *b = json_object_new_object(), *cmp = json_object_new_object();
	struct json_object *put = json_object_new_object(), *op = json_object_new_object();
	struct json_object *cmps = json_object_new_array(), *succ = json_object_new_array();

	etcd_json_add_bytes(cmp, "key", h->leader_key, strlen(h->leader_key));
	json_object_object_add(cmp, "target", json_object_new_string("CREATE"));
	json_object_object_add(cmp, "result", json_object_new_string("EQUAL"));
	json_object_object_add(cmp, "create_revision", json_object_new_int64(rev));
	json_object_array_add(cmps, cmp);
	etcd_json_add_bytes(put, "key", key, strlen(key));
	etcd_json_add_bytes(put, "value", val, len);
	if (lease)
		json_object_object_add(put, "lease", json_object_new_int64(lease));
	json_object_object_add(op, "request_put", put);
	json_object_array_add(succ, op);
	json_object_object_add(b, "compare", cmps);
	json_object_object_add(b, "success", succ);
	return b;
}

/* "Create the leader key on my lease if absent; else read it". Only on a lease that
 * surely lives: a campaign without one (between a start over and the next grant)
 * would create a key on no lease, which nothing ever deletes. */
static void campaign(struct ha *h)
{
	struct json_object *b, *fail, *op;

	if (!h->lease_id || now_ms() >= h->deadline_ms)
		return;
	b = txn_put_if_leader_rev(h, 0, h->leader_key, h->self_val, strlen(h->self_val),
				  h->lease_id);
	fail = json_object_new_array();
	op = json_object_new_object();
	json_object_object_add(op, "request_range", kv_body(h, h->leader_key));
	json_object_array_add(fail, op);
	json_object_object_add(b, "failure", fail);
	call(h, call_new(h), "/v3/kv/txn", b, on_campaign);
}

static void on_range(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct ha_call *c = ctx;
	struct ha *h = c->h;
	struct json_object *kvs, *hdr;
	char end[160];
	size_t elen;
	unsigned gen_now;

	if (err && c->gen == h->gen && !h->stopping && h->role == HA_LEADER) {
		/* A leader reading again after its watch or a keep-alive failed (etcd
		 * electing a new raft leader answers "leader changed"): not a reason to
		 * give up the lead (the lease decides); read again a little later. */
		struct timeval tv = fl_ms_tv(100);

		if (err != -EIO)
			set_health(h, false, msg);
		call_free(c);
		evtimer_add(h->resync_ev, &tv);
		return;
	}
	if (!answer_ok(c, err, msg, "read the cluster state from etcd")) {
		call_free(c);
		return;
	}
	call_free(c);
	gen_now = h->gen;
	h->nctls = 0;
	h->leader[0] = '\0';
	if (json_object_object_get_ex(resp, "header", &hdr))
		h->rev = etcd_json_get_i64(hdr, "revision", 0);
	if (json_object_object_get_ex(resp, "kvs", &kvs))
		for (size_t i = 0; i < json_object_array_length(kvs) && gen_now == h->gen; i++)
			on_kv(h, json_object_array_get_idx(kvs, i), false);
	if (gen_now != h->gen)
		return; /* started over (another controller's leader key) */
	if (h->role == HA_LEADER && !h->leader[0]) {
		start_over(h, "the leader key is gone");
		return;
	}
	elen = etcd_prefix_end(h->prefix, h->plen, end, sizeof(end));
	etcd_watch_free(h->watch);
	h->watch = etcd_watch_start(h->etcd, h->prefix, h->plen, end, elen, h->rev + 1,
				    on_watch_events, on_watch_end, h);
	h->watch_gen = h->gen;
	if (!h->watch) {
		start_over(h, "failed to start the etcd watch");
		return;
	}
	/* A read again after the watch ended: a leader stays one, a follower that knows
	 * the leader waits for its key to go. */
	if (h->role == HA_LEADER || (h->role == HA_FOLLOWER && h->leader[0]))
		return;
	campaign(h);
}

static void sync_prefix(struct ha *h)
{
	struct json_object *b = kv_body(h, h->prefix);
	char end[160];
	size_t elen = etcd_prefix_end(h->prefix, h->plen, end, sizeof(end));

	etcd_json_add_bytes(b, "range_end", end, elen);
	call(h, call_new(h), "/v3/kv/range", b, on_range);
}

static void on_register(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct ha_call *c = ctx;

	(void)resp;
	if (answer_ok(c, err, msg, "register this controller in etcd"))
		sync_prefix(c->h);
	call_free(c);
}

/* A grant or keep-alive answer: the local deadline from when it was SENT. */
static bool lease_renewed(struct ha *h, struct json_object *o, long long sent_ms)
{
	int64_t ttl = etcd_json_get_i64(o, "TTL", 0);
	long long deadline;
	struct timeval tv;

	if (ttl <= 0)
		return false;
	deadline = sent_ms + ttl * 1000 - h->o.margin_ms;
	h->ttl_ms = ttl * 1000;
	if (deadline > h->deadline_ms)
		h->deadline_ms = deadline;
	if (h->suspended && now_ms() < h->deadline_ms) {
		/* etcd renews only a lease that has not expired: ours held, so did the
		 * leader key on it, and nobody else led meanwhile. */
		h->suspended = false;
		pr_info("ha: a keep-alive answered: the lease held; acting again\n");
	}
	tv = fl_ms_tv((long)(h->deadline_ms - now_ms()));
	evtimer_add(h->deadline_timer, &tv);
	return true;
}

static void on_grant(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct ha_call *c = ctx;
	struct ha *h = c->h;
	struct json_object *b;
	struct timeval tv;

	if (!answer_ok(c, err, msg, "grant an etcd lease")) {
		call_free(c);
		return;
	}
	h->lease_id = etcd_json_get_i64(resp, "ID", 0);
	if (!h->lease_id || !lease_renewed(h, resp, c->sent_ms)) {
		call_free(c);
		start_over(h, "etcd granted no usable lease");
		return;
	}
	call_free(c);
	tv = fl_ms_tv(h->o.lease_ms / 3);
	evtimer_add(h->ka_timer, &tv);
	b = kv_body(h, h->self_key);
	etcd_json_add_bytes(b, "value", h->o.listen, strlen(h->o.listen));
	json_object_object_add(b, "lease", json_object_new_int64(h->lease_id));
	call(h, call_new(h), "/v3/kv/put", b, on_register);
}

static void grant(struct ha *h)
{
	struct json_object *b = json_object_new_object();

	json_object_object_add(b, "TTL", json_object_new_int64((h->o.lease_ms + 999) / 1000));
	call(h, call_new(h), "/v3/lease/grant", b, on_grant);
}

/* ---- keep-alive and deadline ---- */

static void on_keepalive(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct ha_call *c = ctx;
	struct ha *h = c->h;
	struct json_object *res;

	if (c->gen != h->gen || h->stopping) {
		call_free(c);
		return;
	}
	if (err) {
		/* Not fatal by itself: the deadline decides. The next keep-alive tries the
		 * next endpoint, and the watch follows it there: a watch on a member that
		 * is cut off stays silent rather than ending. */
		set_health(h, false, msg);
		call_free(c);
		if (!evtimer_pending(h->resync_ev, NULL)) {
			struct timeval tv = fl_ms_tv(100);

			evtimer_add(h->resync_ev, &tv);
		}
		return;
	}
	set_health(h, true, "");
	if (!json_object_object_get_ex(resp, "result", &res) ||
	    !lease_renewed(h, res, c->sent_ms)) {
		call_free(c);
		start_over(h, "etcd says the lease has expired");
		return;
	}
	call_free(c);
}

static void on_ka_timer(evutil_socket_t fd, short what, void *arg)
{
	struct ha *h = arg;
	struct json_object *b = json_object_new_object();
	struct timeval tv = fl_ms_tv(h->o.lease_ms / 3);

	(void)fd;
	(void)what;
	json_object_object_add(b, "ID", json_object_new_int64(h->lease_id));
	call(h, call_new(h), "/v3/lease/keepalive", b, on_keepalive);
	/* A follower tries again every tick ("create the leader key if it is gone"): a
	 * takeover does not depend on the watch delivering the key's deletion. */
	if (h->role == HA_FOLLOWER && h->lease_id)
		campaign(h);
	evtimer_add(h->ka_timer, &tv);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct ha *h = arg;

	(void)fd;
	(void)what;
	if (now_ms() < h->deadline_ms) { /* renewed meanwhile: wait for the new deadline */
		struct timeval tv = fl_ms_tv((long)(h->deadline_ms - now_ms()));

		evtimer_add(h->deadline_timer, &tv);
		return;
	}
	/* Past the deadline the leader stops acting (ha_may_act), but it keeps its lease
	 * for one TTL more: etcd without a raft leader for a moment (the member that led
	 * it died) answers no keep-alive until it has elected another, and then renews
	 * every lease that has not expired, ours included. Only a lease etcd has surely
	 * expired by now ends the lead; a keep-alive answered before resumes it. */
	if (h->role == HA_LEADER && h->deadline_ms && now_ms() < h->deadline_ms + h->ttl_ms) {
		struct timeval tv = fl_ms_tv((long)(h->deadline_ms + h->ttl_ms - now_ms()));

		if (!h->suspended)
			pr_warn("ha: the lease's deadline passed without a keep-alive answer: not "
				"acting until one answers (%lld ms at most)\n",
				h->deadline_ms + h->ttl_ms - now_ms());
		h->suspended = true;
		evtimer_add(h->deadline_timer, &tv);
		return;
	}
	start_over(h, "the lease's deadline passed without a keep-alive answer");
}

static void on_resync(evutil_socket_t fd, short what, void *arg)
{
	struct ha *h = arg;

	(void)fd;
	(void)what;
	if (h->stopping)
		return;
	etcd_watch_free(h->watch);
	h->watch = NULL;
	sync_prefix(h);
}

static void on_campaign_ev(evutil_socket_t fd, short what, void *arg)
{
	struct ha *h = arg;

	(void)fd;
	(void)what;
	if (h->role == HA_FOLLOWER && !h->stopping)
		campaign(h);
}

/* ---- start over ---- */

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct ha *h = arg;

	(void)fd;
	(void)what;
	etcd_watch_free(h->watch);
	h->watch = NULL;
	grant(h);
}

static void on_revoke_old(void *ctx, int err, const char *msg, struct json_object *resp)
{
	(void)ctx;
	(void)resp;
	if (err)
		pr_info("ha: failed to revoke the lease given up: %s (it expires)\n", msg);
}

static void start_over(struct ha *h, const char *why)
{
	int64_t lease = h->lease_id;
	struct timeval tv;

	h->gen++; /* the watch is left to on_retry: this may run inside its callback */
	evtimer_del(h->resync_ev);
	evtimer_del(h->ka_timer);
	evtimer_del(h->deadline_timer);
	h->lease_id = 0;
	h->deadline_ms = 0;
	h->suspended = false;
	if (h->role == HA_LEADER)
		set_role(h, HA_FOLLOWER, why);
	else
		pr_info("ha: %s; starting over\n", why);
	if (h->stopping)
		return; /* ha_stop revokes the lease */
	/* Not acting any more (above): the lease given up goes at once, with whatever
	 * is on it (the leader key, when a campaign won past its deadline or its answer
	 * was lost), as at a clean stop; another controller need not wait out its TTL. */
	if (lease) {
		struct json_object *b = json_object_new_object();

		json_object_object_add(b, "ID", json_object_new_int64(lease));
		etcd_call(h->etcd, "/v3/lease/revoke", b, 0, on_revoke_old, h);
	}
	tv = fl_ms_tv(h->retry_ms);
	h->retry_ms = h->retry_ms * 2 > 2000 ? 2000 : h->retry_ms * 2;
	evtimer_add(h->retry_timer, &tv);
}

/* ---- API ---- */

struct ha *ha_new(struct event_base *base, const struct ha_opts *o, const struct ha_ops *ops,
		  void *ctx)
{
	struct ha *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->base = base;
	h->o = *o;
	h->ops = ops;
	h->ctx = ctx;
	if (h->o.margin_ms <= 0)
		h->o.margin_ms = h->o.lease_ms / 10 > 100 ? h->o.lease_ms / 10 : 100;
	snprintf(h->prefix, sizeof(h->prefix), "%s", o->prefix);
	h->plen = strlen(h->prefix);
	snprintf(h->leader_key, sizeof(h->leader_key), "%sleader", h->prefix);
	snprintf(h->self_key, sizeof(h->self_key), "%scontrollers/%s", h->prefix, o->id);
	snprintf(h->self_val, sizeof(h->self_val), "%s %s", o->id, o->listen);
	h->retry_ms = HA_RETRY_MS;
	h->etcd = etcd_new(base, &o->etcd);
	h->ka_timer = evtimer_new(base, on_ka_timer, h);
	h->deadline_timer = evtimer_new(base, on_deadline, h);
	h->retry_timer = evtimer_new(base, on_retry, h);
	h->campaign_ev = event_new(base, -1, 0, on_campaign_ev, h);
	h->resync_ev = evtimer_new(base, on_resync, h);
	if (!h->etcd || !h->ka_timer || !h->deadline_timer || !h->retry_timer || !h->campaign_ev ||
	    !h->resync_ev) {
		ha_free(h);
		return NULL;
	}
	return h;
}

int ha_start(struct ha *h)
{
	grant(h);
	return 0;
}

static void on_revoke(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct ha_call *c = ctx;
	struct ha *h = c->h;

	(void)resp;
	call_free(c);
	if (err && ++h->revoke_tries < HA_REVOKE_TRIES) {
		/* The next endpoint (a timeout moved to it): the caller's own timer bounds
		 * how long a stop waits for this. */
		struct json_object *b = json_object_new_object();

		pr_info("ha: failed to revoke the etcd lease: %s; trying again\n", msg);
		c = call_new(h);
		json_object_object_add(b, "ID", json_object_new_int64(h->stop_lease));
		if (c && etcd_call(h->etcd, "/v3/lease/revoke", b, 0, on_revoke, c) == 0)
			return;
		if (c)
			call_free(c);
	}
	if (err)
		pr_warn("failed to revoke the etcd lease: %s (another controller leads when it "
			"expires)\n",
			msg);
	if (h->stop_done)
		h->stop_done(h->stop_ctx);
}

void ha_stop(struct ha *h, void (*done)(void *ctx), void *ctx)
{
	struct json_object *b;
	struct ha_call *c;
	int64_t lease = h->lease_id;

	h->stop_done = done;
	h->stop_ctx = ctx;
	h->stop_lease = lease;
	if (h->role == HA_LEADER)
		set_role(h, HA_FOLLOWER, "stopping");
	h->stopping = true;
	start_over(h, "stopping");
	c = call_new(h);
	if (!lease || !c) {
		if (c)
			call_free(c);
		if (done)
			done(ctx);
		return;
	}
	b = json_object_new_object();
	json_object_object_add(b, "ID", json_object_new_int64(lease));
	if (etcd_call(h->etcd, "/v3/lease/revoke", b, 0, on_revoke, c) < 0) {
		call_free(c);
		if (done)
			done(ctx);
	}
}

void ha_free(struct ha *h)
{
	if (!h)
		return;
	etcd_watch_free(h->watch);
	etcd_free(h->etcd); /* drops its requests without calling back */
	for (struct ha_call *c = h->calls, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	h->calls = NULL;
	if (h->ka_timer)
		event_free(h->ka_timer);
	if (h->deadline_timer)
		event_free(h->deadline_timer);
	if (h->retry_timer)
		event_free(h->retry_timer);
	if (h->campaign_ev)
		event_free(h->campaign_ev);
	if (h->resync_ev)
		event_free(h->resync_ev);
	free(h);
}

enum ha_role ha_role(const struct ha *h)
{
	return h->role;
}

bool ha_may_act(const struct ha *h, long long now)
{
	return h->role == HA_LEADER && now < h->deadline_ms;
}

long long ha_deadline_ms(const struct ha *h)
{
	return h->deadline_ms;
}

const char *ha_leader(const struct ha *h)
{
	return h->leader;
}

int64_t ha_revision(const struct ha *h)
{
	return h->rev;
}

int64_t ha_leader_revision(const struct ha *h)
{
	return h->leader_rev;
}

int ha_controllers(const struct ha *h, const char **ids, const char **addrs, int max)
{
	int n = 0;

	for (int i = 0; i < h->nctls && n < max; i++, n++) {
		ids[n] = h->ctls[i].id;
		addrs[n] = h->ctls[i].addr;
	}
	return n;
}

static void on_put(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct ha_call *c = ctx;
	struct ha *h = c->h;
	struct json_object *o;
	ha_put_fn fn = c->put_fn;
	void *fctx = c->put_ctx;
	bool stale = c->gen != h->gen;

	call_free(c);
	if (err) {
		fn(fctx, err, msg);
		return;
	}
	if (stale || !json_object_object_get_ex(resp, "succeeded", &o) ||
	    !json_object_get_boolean(o)) {
		fn(fctx, -ESTALE, "not the leader any more: etcd refused the write");
		if (!stale && h->role == HA_LEADER)
			start_over(h, "deposed: a write conditioned on the leader key failed");
		return;
	}
	fn(fctx, 0, "");
}

int ha_put(struct ha *h, const char *rel, const char *val, size_t len, ha_put_fn fn, void *ctx)
{
	struct ha_call *c;
	char key[512];

	if (h->role != HA_LEADER)
		return -ESTALE;
	c = call_new(h);
	if (!c)
		return -ENOMEM;
	c->put_fn = fn;
	c->put_ctx = ctx;
	snprintf(key, sizeof(key), "%s%s", h->prefix, rel);
	if (etcd_call(h->etcd, "/v3/kv/txn",
		      txn_put_if_leader_rev(h, h->leader_rev, key, val, len, 0), 0, on_put,
		      c) < 0) {
		call_free(c);
		return -ENOMEM;
	}
	return 0;
}

static void on_get(void *ctx, int err, const char *msg, struct json_object *resp)
{
	struct ha_call *c = ctx;
	ha_get_fn fn = c->get_fn;
	void *fctx = c->put_ctx;
	struct json_object *kvs;
	char val[512];
	int len = -1;

	call_free(c);
	if (err) {
		fn(fctx, err, msg, NULL);
		return;
	}
	if (json_object_object_get_ex(resp, "kvs", &kvs) && json_object_array_length(kvs) > 0) {
		len = etcd_json_get_bytes(json_object_array_get_idx(kvs, 0), "value", val,
					  sizeof(val));
		if (len < 0) {
			fn(fctx, -EPROTO, "unreadable value", NULL);
			return;
		}
	}
	fn(fctx, 0, "", len < 0 ? NULL : val);
}

int ha_get(struct ha *h, const char *rel, ha_get_fn fn, void *ctx)
{
	struct ha_call *c = call_new(h);
	char key[512];

	if (!c)
		return -ENOMEM;
	c->get_fn = fn;
	c->put_ctx = ctx;
	snprintf(key, sizeof(key), "%s%s", h->prefix, rel);
	if (etcd_call(h->etcd, "/v3/kv/range", kv_body(h, key), 0, on_get, c) < 0) {
		call_free(c);
		return -ENOMEM;
	}
	return 0;
}

struct etcd *ha_etcd(const struct ha *h)
{
	return h->etcd;
}
