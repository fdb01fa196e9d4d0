/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* TLS with OpenSSL, shared by the agent, the controller and the CLI: contexts built
 * from the cluster file's tls_* keys (docs/security.md, TLS), the per-
 * connection SSL of a client (SNI, the peer's host name or IP verified), and the
 * reason a handshake failed, in words. Files are read here, when a daemon starts,
 * and a file that cannot be used is named with its cluster-file line:
 *   "cluster.conf:12: [controller] tls_key: failed to load /etc/x.key: ..." */
#ifndef FL_TLS_H
#define FL_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <openssl/ssl.h>
#include "common/config.h"

struct bufferevent;

/* The controller's server context: [controller] tls_cert/tls_key, and tls_ca to
 * verify client certificates as tls_auth_clients says. NULL and err on failure. */
SSL_CTX *tls_server_ctx(const struct cfg *c, char *err, size_t errlen);
/* A client context: t's certificate and key if given (presented to the peer),
 * verifying the peer with t's CA, else with ca_fallback's (may be NULL). sect names
 * t's section in messages ("agent", "redis"). NULL and err on failure. */
SSL_CTX *tls_client_ctx(const struct cfg *c, const char *sect, const struct cfg_tls *t,
			const struct cfg_tls *ca_fallback, char *err, size_t errlen);
/* An SSL for one connection to host (a name or an IP address): SNI for a name, and
 * the certificate must carry that name or IP. NULL on failure. */
SSL *tls_client_ssl(SSL_CTX *ctx, const char *host);
/* Why the TLS connection of bev (a bufferevent_openssl) failed, e.g. "certificate
 * verify failed: unable to get local issuer certificate". sock_err: the socket's
 * errno when the event came (0 if none). */
const char *tls_bev_error(struct bufferevent *bev, int sock_err, char *buf, size_t len);
/* The same for a blocking SSL (the CLI). */
const char *tls_ssl_error(SSL *ssl, int ret, char *buf, size_t len);
/* The endpoint agents and clients connect to: tls_address with TLS, else address. */
const struct cfg_endpoint *tls_controller_ep(const struct cfg *c);
/* In HA mode ([etcd]) controller i ([controller "ID"] sections, in file order): its
 * tls_address with TLS, else its listen; without [etcd], tls_controller_ep (i = 0). */
const struct cfg_endpoint *tls_ctl_ep(const struct cfg *c, int i);

#endif
