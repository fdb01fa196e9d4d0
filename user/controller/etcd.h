/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* An etcd v3 client for the controller: etcd's JSON gateway (`/v3/...`, etcd 3.4)
 * through libcurl's multi interface on the controller's libevent loop, bodies built
 * and parsed with json-c. Nothing here blocks the loop.
 *
 * Calls are unary (range, txn, lease grant/keepalive/revoke, cluster members, status)
 * or a watch stream. Every call has a deadline; a call that fails to reach an endpoint
 * moves the client to the next endpoint for the calls after it (it is not retried:
 * the caller decides, because a leader must not act on a stale answer). Keys and
 * values are bytes; the gateway's base64 is done here. */
#ifndef FL_ETCD_H
#define FL_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

struct event_base;
struct etcd;
struct etcd_watch;

#define ETCD_MAX_ENDPOINTS 16
#define ETCD_MAX_BODY	   (4u << 20) /* larger answers are an error */

struct etcd_opts {
	const char *endpoints[ETCD_MAX_ENDPOINTS]; /* "http://IP:2379" or "https://..." */
	int n_endpoints;
	const char *user; /* etcd auth: NULL/"" = none */
	const char *password;
	const char *cacert; /* TLS: CA bundle to verify the server, NULL = system's */
	const char *cert;   /* TLS client certificate and key, NULL = none */
	const char *key;
	int timeout_ms; /* default deadline of a unary call */
};

/* The outcome of a unary call. err is 0 or negative errno (-ETIMEDOUT, -ECONNREFUSED,
 * -EIO for an error answer, -EPROTO for an unreadable one); msg says why in words.
 * resp is the answer's JSON object (borrowed: valid during the callback) or NULL. */
typedef void (*etcd_cb)(void *ctx, int err, const char *msg, struct json_object *resp);

struct etcd *etcd_new(struct event_base *base, const struct etcd_opts *o);
void etcd_free(struct etcd *e);
/* The endpoint calls go to now. */
const char *etcd_endpoint(const struct etcd *e);

/* POST body (taken, freed here) to path ("/v3/kv/range"...). timeout_ms 0 = default.
 * Returns 0 or -errno (the callback then never runs). */
int etcd_call(struct etcd *e, const char *path, struct json_object *body, int timeout_ms,
	      etcd_cb cb, void *ctx);

/* A watch on [key, range_end) from start_rev (0 = now). on_events gets each
 * WatchResponse's "result" object (events, header, canceled...); on_end once when the
 * stream ends or fails (then the watch is finished: free it). */
typedef void (*etcd_watch_fn)(void *ctx, struct json_object *result);
typedef void (*etcd_watch_end_fn)(void *ctx, const char *why);
struct etcd_watch *etcd_watch_start(struct etcd *e, const char *key, size_t key_len,
				    const char *range_end, size_t range_end_len, int64_t start_rev,
				    etcd_watch_fn on_events, etcd_watch_end_fn on_end, void *ctx);
void etcd_watch_free(struct etcd_watch *w);

/* JSON helpers for the gateway's encoding. */
/* Adds base64(bytes) as a string field. */
void etcd_json_add_bytes(struct json_object *o, const char *field, const void *b, size_t len);
/* Decodes a base64 string field into buf (NUL-terminated); returns the length, or
 * -1 if absent, malformed or too long. */
int etcd_json_get_bytes(struct json_object *o, const char *field, char *buf, size_t size);
/* An int64 field (the gateway sends them as strings); def if absent or malformed. */
int64_t etcd_json_get_i64(struct json_object *o, const char *field, int64_t def);
/* The end of the range "every key starting with prefix" (prefix with its last byte
 * incremented); writes at most size bytes, returns the length. */
size_t etcd_prefix_end(const char *prefix, size_t len, char *out, size_t size);

#endif
