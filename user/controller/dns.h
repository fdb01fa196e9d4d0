/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* DNS: points a shard's name at its primary with one RFC 2136 UPDATE signed with
 * TSIG (ldns), and reads the name back for the drift check. The network work runs
 * on one worker thread; every result comes back on the caller's libevent loop. */
#ifndef FL_DNS_H
#define FL_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

#define DNS_NAME_MAX	    256 /* presentation form with the final dot, NUL included */
#define DNS_ADDR_MAX	    46	/* INET6_ADDRSTRLEN */
#define DNS_ERR_MAX	    1024
#define DNS_QUERY_MAX_ADDRS 8	/* addresses a query result keeps */
#define DNS_TSIG_FUDGE_S    300 /* RFC 8945's recommended fudge */

struct dns_cfg {
	char server[DNS_ADDR_MAX]; /* IP address of the primary server (no host names) */
	int port;		   /* default 53 */
	char zone[DNS_NAME_MAX];   /* absolute: "ha.example." */
	char tsig_name[DNS_NAME_MAX];
	char tsig_algorithm[32]; /* hmac-sha256 (default), hmac-sha512, hmac-sha1 */
	char tsig_secret[256];	 /* base64, as tsig-keygen prints it */
	uint32_t ttl_s;		 /* of the address record; default 1 */
	uint32_t check_ms;	 /* drift check period, for the controller; 0 = start-up only */
	uint32_t timeout_ms;	 /* one attempt (connect + answer); default 1000 */
	uint32_t retry_min_ms;	 /* first backoff after a transient failure; default 100 */
	uint32_t retry_max_ms;	 /* backoff cap; default 5000 */
	uint32_t max_attempts;	 /* per update; 0 (default) = until it succeeds or is superseded */
	bool udp;		 /* send over UDP; default TCP (a stopped server is seen at once) */
};

/* Defaults; server, zone and tsig_secret stay empty. */
void dns_cfg_init(struct dns_cfg *cfg);
/* Fills server and port from "IP", "IP:port", "[IPv6]:port" or "IPv6". 0 or -EINVAL. */
int dns_cfg_set_server(struct dns_cfg *cfg, const char *hostport);
/* 0, or -EINVAL with one sentence naming the key in err, e.g.
 * "tsig_algorithm: ldns 1.8.3 cannot sign hmac-sha384; use hmac-sha256 or hmac-sha512". */
int dns_cfg_validate(const struct dns_cfg *cfg, char *err, size_t errlen);
/* A shard's dns_name: absolute and inside cfg->zone (the apex counts). 0 or -EINVAL. */
int dns_name_validate(const struct dns_cfg *cfg, const char *name, char *err, size_t errlen);

/* The unsigned UPDATE for NAME -> ADDR with message id ID, in wire form (malloc'd,
 * caller frees): zone section "ZONE IN SOA", no prerequisites, update section
 * "NAME 0 ANY A" (delete the RRset; AAAA for an IPv6 ADDR) then "NAME TTL IN A ADDR".
 * The worker sends exactly this, plus the TSIG record. 0 or -EINVAL / -ENOMEM. */
int dns_update_wire(const struct dns_cfg *cfg, const char *name, const char *addr, uint16_t id,
		    uint8_t **wire, size_t *len);

enum dns_op {
	DNS_OP_UPDATE,
	DNS_OP_QUERY,
};

enum dns_status {
	DNS_OK,		  /* update applied (NOERROR, answer's TSIG verified); query answered */
	DNS_CONFIG_ERROR, /* refused for a reason only the operator can fix; never retried */
	DNS_TRANSIENT,	  /* no answer or SERVFAIL; updates were retried up to max_attempts */
	DNS_FAILED,	  /* any other answer (FORMERR, ...) or a local failure; not retried */
	DNS_SUPERSEDED,	  /* a newer dns_update() for the same name replaced this one */
};

/* Answers that mean "fix the configuration": REFUSED, NOTAUTH, NOTZONE, NOTIMP, the TSIG
 * errors BADSIG, BADKEY, BADTIME, and an answer whose TSIG does not verify. SERVFAIL is
 * transient. rcode is the header RCODE, tsig_error the TSIG record's error field. */
enum dns_status dns_classify(int rcode, int tsig_error, bool tsig_verified);
/* "NOERROR", "REFUSED", "BADKEY" (the TSIG error wins), "none" for rcode < 0. */
const char *dns_rcode_name(int rcode, int tsig_error);
/* Delay before attempt n + 1 after n failed attempts: retry_min_ms doubled per
 * attempt, capped at retry_max_ms. */
uint32_t dns_backoff_ms(const struct dns_cfg *cfg, uint32_t failed_attempts);

struct dns_result {
	enum dns_op op;
	enum dns_status status;
	bool config_error;	 /* status == DNS_CONFIG_ERROR */
	char name[DNS_NAME_MAX]; /* lower case, absolute */
	char addr[DNS_ADDR_MAX]; /* update: the new address; query: the expected one */
	int rcode;		 /* header RCODE of the last answer; -1 = no answer */
	int tsig_error;		 /* its TSIG error (16 BADSIG, 17 BADKEY, 18 BADTIME), or 0 */
	char rcode_name[12];	 /* dns_rcode_name(rcode, tsig_error) */
	uint32_t attempts;	 /* ldns exchanges made, each with a fresh resolver */
	double elapsed_ms;	 /* dns_update()/dns_query() call to result, µs resolution */
	double last_rtt_ms;	 /* the last attempt alone */
	char error[DNS_ERR_MAX]; /* "" on success; else what failed and what to check */
	/* queries */
	int naddrs; /* addresses in the answer (A or AAAA, by addr's family) */
	char addrs[DNS_QUERY_MAX_ADDRS][DNS_ADDR_MAX];
	bool match; /* the RRset is exactly { addr } */
};

/* Called on the event loop's thread, once per dns_update()/dns_query() call (except
 * for work still pending at dns_updater_free()). res is valid during the call only. */
typedef void (*dns_done_fn)(const struct dns_result *res, void *ctx);

struct dns_updater;

/* Validates cfg (copied), adds an event to base and starts the worker thread.
 * 0, -EINVAL (invalid cfg: see dns_cfg_validate) or -errno. */
int dns_updater_new(struct dns_updater **out, struct event_base *base, const struct dns_cfg *cfg,
		    dns_done_fn cb, void *ctx);
/* Queues NAME -> ADDR (IPv4: A, IPv6: AAAA) and returns at once. A queued, not yet
 * finished update of the same name is superseded (its callback says so); updates of
 * one name run in call order, so the latest call wins. 0, or -EINVAL for a name
 * outside the zone or a malformed address, -ENOMEM, -ESHUTDOWN. */
int dns_update(struct dns_updater *u, const char *name, const char *addr);
/* Queues a query for NAME's A (or AAAA when want_addr is IPv6) records at the
 * server, one attempt, TSIG-signed; the result lists them and says whether they are
 * exactly want_addr. Same errors as dns_update. */
int dns_query(struct dns_updater *u, const char *name, const char *want_addr);
/* An update of NAME is queued, backing off, or being sent. */
bool dns_update_pending(struct dns_updater *u, const char *name);
/* Reads an answer in wire format as an exchange would (tests, fuzzing): -EINVAL if
 * ldns cannot parse it, else 0 with r filled. */
int dns_parse_answer(const struct dns_cfg *c, enum dns_op op, const char *name, const char *addr,
		     const uint8_t *wire, size_t len, bool verified, struct dns_result *r);
/* Stops the worker (waiting for an exchange in flight: at most cfg.timeout_ms twice
 * over TCP), drops queued work and undelivered results without callbacks. Not from
 * inside the callback. NULL is fine. */
void dns_updater_free(struct dns_updater *u);

#endif
