// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * DNS UPDATE (RFC 2136) with TSIG (RFC 8945) through ldns 1.8.3.
 *
 * One worker thread does every exchange; the event loop only queues work and takes results.
 * Each attempt builds a fresh ldns_resolver: ldns marks a server that failed once with an
 * infinite RTT and never sends to it again from that resolver. The worker signs the message
 * itself and calls ldns_send(), which returns the answer even when the answer's TSIG fails
 * ldns_pkt_tsig_verify() (status LDNS_STATUS_CRYPTO_TSIG_BOGUS); ldns_resolver_send_pkt()
 * would drop that answer and with it the RCODE and TSIG error that say what is wrong.
 *
 * Scheduling. Jobs wait in one FIFO list, each with a not-before time; the worker runs the
 * first job that is due, so an update backing off does not hold up queries or updates of
 * other names. A new update of a name removes the queued one (which completes as
 * superseded); if it carries the same address it inherits the attempt count and backoff, so
 * a controller repeating itself does not reset the backoff. An update of a name that is
 * being sent at that moment finishes that attempt first, so updates of a name never
 * overtake each other.
 *
 * Results go back through an eventfd that the loop watches: no libevent locking needed.
 *
 * This file: the updater (queue, worker thread, exchanges, results). The [dns]
 * configuration checks, the messages and what answers mean are dns_msg.c.
 */

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <event2/event.h>
#include <ldns/ldns.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/dns.h"
#include "controller/dns_internal.h"

static double ns_to_ms(uint64_t ns)
{
	uint64_t us = ns / 1000; /* µs resolution */

	return (double)us / 1000.0;
}

/* ---- the updater ---- */

struct dns_job {
	struct dns_job *next;
	enum dns_op op;
	char name[DNS_NAME_MAX];
	char addr[DNS_ADDR_MAX];
	uint32_t attempts;	/* made so far */
	uint64_t queued_ns;	/* when dns_update()/dns_query() was called */
	uint64_t not_before_ns; /* backoff: not sent before this (monotonic) */
	uint32_t backoff_ms;	/* the last delay, for the log */
};

struct dns_done {
	struct dns_done *next;
	struct dns_result r;
};

struct dns_updater {
	struct dns_cfg cfg;
	const char *alg; /* canonical algorithm name */
	struct event_base *base;
	struct event *ev_done; /* efd readable: results to deliver */
	int efd;
	dns_done_fn cb;
	void *ctx;
	pthread_t thread;
	bool started;

	pthread_mutex_t mu; /* everything below */
	pthread_cond_t cv;  /* new work or stop; CLOCK_MONOTONIC */
	struct dns_job *queue, *queue_tail;
	struct dns_job *running; /* being sent by the worker; not in queue */
	bool running_superseded; /* a newer update of running's name was queued */
	struct dns_done *done, *done_tail;
	bool stop;
};

static void queue_push(struct dns_updater *u, struct dns_job *j)
{
	j->next = NULL;
	if (u->queue_tail)
		u->queue_tail->next = j;
	else
		u->queue = j;
	u->queue_tail = j;
}

static void queue_remove(struct dns_updater *u, struct dns_job *j)
{
	struct dns_job **pp, *prev = NULL;

	for (pp = &u->queue; *pp; prev = *pp, pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			if (u->queue_tail == j)
				u->queue_tail = prev;
			return;
		}
}

/* Appends a result for the loop and wakes it. Locked. */
static void post_result(struct dns_updater *u, struct dns_done *d)
{
	uint64_t one = 1;

	d->next = NULL;
	if (u->done_tail)
		u->done_tail->next = d;
	else
		u->done = d;
	u->done_tail = d;
	if (write(u->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_warn("dns: failed to wake the event loop: %s\n", strerror(errno));
}

/* A result for job j with the common fields filled. */
static struct dns_done *result_new(const struct dns_job *j, enum dns_status st)
{
	struct dns_done *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->r.op = j->op;
	d->r.status = st;
	d->r.config_error = st == DNS_CONFIG_ERROR;
	snprintf(d->r.name, sizeof(d->r.name), "%s", j->name);
	snprintf(d->r.addr, sizeof(d->r.addr), "%s", j->addr);
	d->r.rcode = -1;
	snprintf(d->r.rcode_name, sizeof(d->r.rcode_name), "none");
	d->r.attempts = j->attempts;
	d->r.elapsed_ms = ns_to_ms((uint64_t)fl_mono_ns() - j->queued_ns);
	return d;
}

/* Completes a job that never got (another) answer because a newer one replaced it. Locked. */
static void supersede(struct dns_updater *u, struct dns_job *old, const char *by_addr,
		      struct dns_done *last)
{
	struct dns_done *d = last ? last : result_new(old, DNS_SUPERSEDED);

	if (d) {
		char last_err[DNS_ERR_MAX];

		snprintf(last_err, sizeof(last_err), "%s", d->r.error);
		d->r.status = DNS_SUPERSEDED;
		d->r.config_error = false;
		snprintf(d->r.error, sizeof(d->r.error),
			 "superseded by a newer update to %s%s%.400s%s", by_addr,
			 last_err[0] ? " (last attempt: " : "", last_err, last_err[0] ? ")" : "");
		post_result(u, d);
	}
	free(old);
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct dns_updater *u = arg;
	dns_done_fn cb = u->cb;
	void *ctx = u->ctx;
	struct dns_done *d, *next;
	uint64_t v;

	(void)what;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pr_warn("dns: failed to read the result eventfd: %s\n", strerror(errno));
	pthread_mutex_lock(&u->mu);
	d = u->done;
	u->done = u->done_tail = NULL;
	pthread_mutex_unlock(&u->mu);
	for (; d; d = next) {
		next = d->next;
		cb(&d->r, ctx);
		free(d);
	}
}

/* Server and hint wording shared by the error messages. */
static void describe_answer(const struct dns_cfg *c, const struct dns_job *j, struct dns_result *r,
			    bool verified)
{
	const char *type = addr_family(j->addr) == AF_INET6 ? "AAAA" : "A";
	const char *what = j->op == DNS_OP_UPDATE ? "update" : "query";
	char head[DNS_NAME_MAX + 128];
	const char *hint;

	snprintf(head, sizeof(head), "failed to %s %s %s at %s port %d: %s", what, j->name, type,
		 c->server, c->port, r->rcode_name);
	switch (r->tsig_error) {
	case TSIG_BADKEY:
		hint = "the server has no key by this name and algorithm: check tsig_name and "
		       "tsig_algorithm against the key clause on the server";
		break;
	case TSIG_BADSIG:
		hint = "the server's key of this name has another secret: check tsig_secret";
		break;
	case TSIG_BADTIME:
		hint = "the clocks differ by more than the 300 s TSIG fudge: check time sync";
		break;
	default:
		hint = NULL;
	}
	if (!hint) {
		switch (r->rcode) {
		case LDNS_RCODE_REFUSED:
			hint = j->op == DNS_OP_UPDATE
				   ? "the server refused the change: check that its update-policy "
				     "grants the key this name and type, and that it is the "
				     "primary for the zone"
				   : "the server refused the query: check allow-query and that it "
				     "serves the zone";
			break;
		case LDNS_RCODE_NOTAUTH:
			hint =
			    "the server is not authoritative for the zone: check zone and server "
			    "(send updates to the zone's primary)";
			break;
		case LDNS_RCODE_NOTZONE:
			hint =
			    "the name is outside the zone the server sees: check zone and dns_name";
			break;
		case LDNS_RCODE_NOTIMPL:
			hint = "the server does not implement dynamic updates for this zone";
			break;
		case LDNS_RCODE_SERVFAIL:
			hint = "the server failed to process it (see its log); retrying";
			break;
		default:
			hint = NULL;
		}
	}
	if (!hint && !verified)
		hint = "the answer's TSIG did not verify: the server signed with another secret or "
		       "algorithm, or the answer was forged";
	if (!hint)
		hint = "unexpected answer";
	snprintf(r->error, sizeof(r->error), "%.384s: %.200s (key %.128s, %s, zone %.200s)", head,
		 hint, c->tsig_name, c->tsig_algorithm, c->zone);
}

/* What an answer says to the job that asked: rcode, TSIG error, status, and for a
 * query the addresses. verified: ldns_send() checked the answer's TSIG. This reads
 * what the server sent: fuzzed (tests/fuzz/fuzz_dns.c, through dns_parse_answer). */
static void read_answer(const struct dns_cfg *c, const struct dns_job *j, const ldns_pkt *a,
			uint16_t id, bool verified, struct dns_result *r)
{
	int fam = addr_family(j->addr);

	if (ldns_pkt_id(a) != id) {
		r->status = DNS_TRANSIENT;
		snprintf(r->error, sizeof(r->error),
			 "answer from %s port %d has id %u, not %u: ignored", c->server, c->port,
			 ldns_pkt_id(a), id);
		return;
	}
	r->rcode = ldns_pkt_get_rcode(a);
	if (ldns_pkt_tsig(a) && ldns_rr_rd_count(ldns_pkt_tsig(a)) > 5)
		r->tsig_error = ldns_rdf2native_int16(ldns_rr_rdf(ldns_pkt_tsig(a), 5));
	snprintf(r->rcode_name, sizeof(r->rcode_name), "%s",
		 dns_rcode_name(r->rcode, r->tsig_error));
	r->status = dns_classify(r->rcode, r->tsig_error, verified);
	if (j->op == DNS_OP_QUERY && r->rcode == LDNS_RCODE_NXDOMAIN && verified)
		r->status = DNS_OK; /* the name has no records at all */
	if (r->status != DNS_OK) {
		describe_answer(c, j, r, verified);
		return;
	}
	if (j->op == DNS_OP_QUERY) {
		ldns_rr_list *ans = ldns_pkt_answer(a);
		ldns_rr_type want = fam == AF_INET6 ? LDNS_RR_TYPE_AAAA : LDNS_RR_TYPE_A;
		unsigned char wbuf[16], gbuf[16];
		int same = 0;

		inet_pton(fam, j->addr, wbuf);
		for (size_t i = 0; i < ldns_rr_list_rr_count(ans); i++) {
			ldns_rr *rr = ldns_rr_list_rr(ans, i);
			ldns_rdf *rd = ldns_rr_rdf(rr, 0);
			char *s;

			if (ldns_rr_get_type(rr) != want || !rd)
				continue;
			if (ldns_rdf_size(rd) == (fam == AF_INET6 ? 16u : 4u)) {
				memcpy(gbuf, ldns_rdf_data(rd), ldns_rdf_size(rd));
				same += !memcmp(gbuf, wbuf, ldns_rdf_size(rd));
			}
			if (r->naddrs < DNS_QUERY_MAX_ADDRS) {
				s = ldns_rdf2str(rd);
				snprintf(r->addrs[r->naddrs], DNS_ADDR_MAX, "%s", s ? s : "?");
				free(s);
			}
			r->naddrs++;
		}
		r->match = r->naddrs == 1 && same == 1;
	}
}

int dns_parse_answer(const struct dns_cfg *c, enum dns_op op, const char *name, const char *addr,
		     const uint8_t *wire, size_t len, bool verified, struct dns_result *r)
{
	struct dns_job j = {.op = op};
	ldns_pkt *a = NULL;

	if (ldns_wire2pkt(&a, wire, len) != LDNS_STATUS_OK)
		return -EINVAL;
	snprintf(j.name, sizeof(j.name), "%s", name);
	snprintf(j.addr, sizeof(j.addr), "%s", addr);
	memset(r, 0, sizeof(*r));
	r->rcode = -1;
	read_answer(c, &j, a, ldns_pkt_id(a), verified, r);
	ldns_pkt_free(a);
	return 0;
}

/* One exchange with a fresh resolver. Fills r: status, rcode, error, answer addresses. */
static void attempt(struct dns_updater *u, const struct dns_job *j, struct dns_result *r)
{
	const struct dns_cfg *c = &u->cfg;
	int fam = addr_family(j->addr);
	ldns_resolver *res = ldns_resolver_new();
	ldns_rdf *ns = ldns_rdf_new_frm_str(
	    strchr(c->server, ':') ? LDNS_RDF_TYPE_AAAA : LDNS_RDF_TYPE_A, c->server);
	ldns_pkt *q = NULL, *a = NULL;
	struct timeval tv = {.tv_sec = c->timeout_ms / 1000,
			     .tv_usec = (suseconds_t)(c->timeout_ms % 1000) * 1000};
	uint16_t id = ldns_get_random();
	ldns_status st;
	uint64_t t0;
	int saved_errno;

	r->rcode = -1;
	r->tsig_error = 0;
	r->error[0] = '\0';
	r->naddrs = 0;
	r->match = false;
	if (!res || !ns || ldns_resolver_push_nameserver(res, ns) != LDNS_STATUS_OK) {
		r->status = DNS_FAILED;
		snprintf(r->error, sizeof(r->error),
			 "failed to set up the resolver: out of memory");
		goto cleanup;
	}
	ldns_resolver_set_port(res, (uint16_t)c->port);
	ldns_resolver_set_timeout(res, tv);
	ldns_resolver_set_retry(res, 1); /* our backoff does the retrying */
	ldns_resolver_set_retrans(res, 0);
	ldns_resolver_set_fail(res, false); /* keep the send status (refused, timeout) */
	ldns_resolver_set_random(res, false);
	ldns_resolver_set_usevc(res, !c->udp);
	/* ldns_send() verifies the answer with these (ldns_pkt_tsig_verify). */
	ldns_resolver_set_tsig_keyname(res, c->tsig_name);
	ldns_resolver_set_tsig_keydata(res, c->tsig_secret);
	ldns_resolver_set_tsig_algorithm(res, u->alg);

	q = j->op == DNS_OP_UPDATE ? update_pkt(c, j->name, j->addr, id)
				   : query_pkt(j->name, fam, id);
	if (!q) {
		r->status = DNS_FAILED;
		snprintf(r->error, sizeof(r->error), "failed to build the message: out of memory");
		goto cleanup;
	}
	st = ldns_pkt_tsig_sign(q, c->tsig_name, c->tsig_secret, DNS_TSIG_FUDGE_S, u->alg, NULL);
	if (st != LDNS_STATUS_OK) {
		r->status = DNS_CONFIG_ERROR;
		snprintf(r->error, sizeof(r->error), "failed to sign with key %s (%s): %s",
			 c->tsig_name, u->alg, ldns_get_errorstr_by_id(st));
		goto cleanup;
	}

	t0 = (uint64_t)fl_mono_ns();
	errno = 0;
	st = ldns_send(&a, res, q);
	saved_errno = errno;
	r->last_rtt_ms = ns_to_ms((uint64_t)fl_mono_ns() - t0);

	if (!a) {
		const char *why;
		char buf[96];

		if (saved_errno == ECONNREFUSED)
			why = "connection refused";
		else if (r->last_rtt_ms >= c->timeout_ms)
			why = "timed out";
		else {
			snprintf(buf, sizeof(buf), "%s%s%s", ldns_get_errorstr_by_id(st),
				 saved_errno ? ": " : "", saved_errno ? strerror(saved_errno) : "");
			why = buf;
		}
		r->status = DNS_TRANSIENT;
		snprintf(r->error, sizeof(r->error),
			 "no answer from %s port %d over %s: %s (%.0f ms)", c->server, c->port,
			 c->udp ? "UDP" : "TCP", why, r->last_rtt_ms);
		goto cleanup;
	}
	read_answer(c, j, a, id, st == LDNS_STATUS_OK, r);
cleanup:
	ldns_pkt_free(a);
	ldns_pkt_free(q);
	ldns_rdf_deep_free(ns);
	ldns_resolver_deep_free(res);
}

/* The first job that is due, or NULL with *wait_until set to the earliest not-before
 * (0 if the queue is empty). Locked. */
static struct dns_job *next_due(struct dns_updater *u, uint64_t now, uint64_t *wait_until)
{
	*wait_until = 0;
	for (struct dns_job *j = u->queue; j; j = j->next) {
		if (j->not_before_ns <= now)
			return j;
		if (!*wait_until || j->not_before_ns < *wait_until)
			*wait_until = j->not_before_ns;
	}
	return NULL;
}

/* A newer update of j's name is queued. Locked. */
static struct dns_job *find_update(struct dns_updater *u, const char *name)
{
	for (struct dns_job *q = u->queue; q; q = q->next)
		if (q->op == DNS_OP_UPDATE && !strcmp(q->name, name))
			return q;
	return NULL;
}

static void *worker(void *arg)
{
	struct dns_updater *u = arg;

	pthread_mutex_lock(&u->mu);
	while (!u->stop) {
		uint64_t now = (uint64_t)fl_mono_ns(), until;
		struct dns_job *j = next_due(u, now, &until);
		struct dns_done *d;
		struct dns_job *newer;

		if (!j) {
			if (until) {
				struct timespec ts = {.tv_sec = (time_t)(until / 1000000000ull),
						      .tv_nsec = (long)(until % 1000000000ull)};

				pthread_cond_timedwait(&u->cv, &u->mu, &ts);
			} else {
				pthread_cond_wait(&u->cv, &u->mu);
			}
			continue;
		}
		queue_remove(u, j);
		u->running = j;
		u->running_superseded = false;
		j->attempts++;
		pthread_mutex_unlock(&u->mu);

		d = result_new(j, DNS_FAILED);
		if (d)
			attempt(u, j, &d->r);

		pthread_mutex_lock(&u->mu);
		u->running = NULL;
		if (!d) {
			pr_warn("dns: failed to report on %s: out of memory\n", j->name);
			free(j);
			continue;
		}
		d->r.config_error = d->r.status == DNS_CONFIG_ERROR;
		d->r.elapsed_ms = ns_to_ms((uint64_t)fl_mono_ns() - j->queued_ns);
		if (d->r.status == DNS_TRANSIENT && j->op == DNS_OP_UPDATE && !u->stop &&
		    (!u->cfg.max_attempts || j->attempts < u->cfg.max_attempts)) {
			j->backoff_ms = dns_backoff_ms(&u->cfg, j->attempts);
			j->not_before_ns =
			    (uint64_t)fl_mono_ns() + (uint64_t)j->backoff_ms * 1000000ull;
			newer = u->running_superseded ? find_update(u, j->name) : NULL;
			if (newer) {
				if (!strcmp(newer->addr, j->addr) &&
				    newer->attempts < j->attempts) {
					newer->attempts =
					    j->attempts; /* a repeat: keep the backoff */
					newer->not_before_ns = j->not_before_ns;
				}
				supersede(u, j, newer->addr, d);
				continue;
			}
			if (j->attempts == 1)
				pr_warn("dns: %s; retrying with backoff (next in %u ms)\n",
					d->r.error, j->backoff_ms);
			else
				pr_debug("dns: attempt %u: %s; next in %u ms\n", j->attempts,
					 d->r.error, j->backoff_ms);
			free(d);
			queue_push(u, j);
			continue;
		}
		if (d->r.status == DNS_TRANSIENT && j->op == DNS_OP_UPDATE) {
			size_t n = strlen(d->r.error);

			snprintf(d->r.error + n, sizeof(d->r.error) - n,
				 "; gave up after %u attempts", j->attempts);
		}
		if (d->r.status == DNS_OK && j->attempts > 1)
			pr_info("dns: %s %s after %u attempts (%.3f ms)\n", j->name, j->addr,
				j->attempts, d->r.elapsed_ms);
		post_result(u, d);
		free(j);
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

int dns_updater_new(struct dns_updater **out, struct event_base *base, const struct dns_cfg *cfg,
		    dns_done_fn cb, void *ctx)
{
	struct dns_updater *u;
	pthread_condattr_t ca;
	sigset_t all, old;
	char err[DNS_ERR_MAX];
	int rc;

	*out = NULL;
	if (!cb)
		return -EINVAL;
	if (dns_cfg_validate(cfg, err, sizeof(err))) {
		pr_warn("dns: invalid configuration: %s\n", err);
		return -EINVAL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->cfg = *cfg;
	u->alg = alg_canonical(cfg->tsig_algorithm);
	u->base = base;
	u->cb = cb;
	u->ctx = ctx;
	u->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (u->efd < 0) {
		rc = -errno;
		free(u);
		return rc;
	}
	pthread_mutex_init(&u->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&u->cv, &ca);
	pthread_condattr_destroy(&ca);
	u->ev_done = event_new(base, u->efd, EV_READ | EV_PERSIST, on_done, u);
	if (!u->ev_done || event_add(u->ev_done, NULL)) {
		rc = -ENOMEM;
		goto cleanup;
	}
	/* The worker takes no signals: they belong to the loop (and a TCP write to a
	 * closed connection must not raise SIGPIPE for the process). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&u->thread, NULL, worker, u);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto cleanup;
	u->started = true;
	*out = u;
	return 0;
cleanup:
	dns_updater_free(u);
	return rc;
}

/* Lower case copy of name into out. */
static void lower(char *out, size_t len, const char *name)
{
	size_t i;

	for (i = 0; name[i] && i + 1 < len; i++)
		out[i] = (char)tolower((unsigned char)name[i]);
	out[i] = '\0';
}

static int enqueue(struct dns_updater *u, enum dns_op op, const char *name, const char *addr)
{
	char err[DNS_ERR_MAX];
	struct dns_job *j, *old;

	if (dns_name_validate(&u->cfg, name, err, sizeof(err)) || strlen(name) >= DNS_NAME_MAX ||
	    !addr_family(addr))
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->op = op;
	lower(j->name, sizeof(j->name), name);
	snprintf(j->addr, sizeof(j->addr), "%s", addr);
	j->queued_ns = (uint64_t)fl_mono_ns();

	pthread_mutex_lock(&u->mu);
	if (u->stop) {
		pthread_mutex_unlock(&u->mu);
		free(j);
		return -ESHUTDOWN;
	}
	if (op == DNS_OP_UPDATE) {
		old = find_update(u, j->name);
		if (old) {
			queue_remove(u, old);
			if (!strcmp(old->addr, j->addr)) { /* a repeat: keep the backoff */
				j->attempts = old->attempts;
				j->not_before_ns = old->not_before_ns;
			}
			supersede(u, old, j->addr, NULL);
		}
		if (u->running && u->running->op == DNS_OP_UPDATE &&
		    !strcmp(u->running->name, j->name))
			u->running_superseded = true;
	}
	queue_push(u, j);
	pthread_cond_signal(&u->cv);
	pthread_mutex_unlock(&u->mu);
	return 0;
}

int dns_update(struct dns_updater *u, const char *name, const char *addr)
{
	return enqueue(u, DNS_OP_UPDATE, name, addr);
}

int dns_query(struct dns_updater *u, const char *name, const char *want_addr)
{
	return enqueue(u, DNS_OP_QUERY, name, want_addr);
}

bool dns_update_pending(struct dns_updater *u, const char *name)
{
	char n[DNS_NAME_MAX];
	bool pending;

	lower(n, sizeof(n), name);
	pthread_mutex_lock(&u->mu);
	pending = find_update(u, n) ||
		  (u->running && u->running->op == DNS_OP_UPDATE && !strcmp(u->running->name, n));
	pthread_mutex_unlock(&u->mu);
	return pending;
}

void dns_updater_free(struct dns_updater *u)
{
	struct dns_job *j, *jn;
	struct dns_done *d, *dn;

	if (!u)
		return;
	if (u->started) {
		pthread_mutex_lock(&u->mu);
		u->stop = true;
		pthread_cond_signal(&u->cv);
		pthread_mutex_unlock(&u->mu);
		pthread_join(u->thread, NULL);
	}
	if (u->ev_done)
		event_free(u->ev_done);
	for (j = u->queue; j; j = jn) {
		jn = j->next;
		free(j);
	}
	for (d = u->done; d; d = dn) {
		dn = d->next;
		free(d);
	}
	close(u->efd);
	pthread_cond_destroy(&u->cv);
	pthread_mutex_destroy(&u->mu);
	free(u);
}
