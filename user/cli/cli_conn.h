/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The CLI's blocking connection to a controller, plain (hiredis) or TLS (OpenSSL
 * on a blocking socket, replies parsed by hiredis's reader): `flatline status` and
 * `flatline failover` against a controller with tls_listen. */
#ifndef FL_CLI_CONN_H
#define FL_CLI_CONN_H

#include <stdbool.h>
#include <hiredis/hiredis.h>
#include "common/config.h"

/* TLS from the command line; unset fields come from the cluster file ([agent]
 * tls_cert/tls_key/tls_ca, else [controller] tls_ca). */
struct cli_tls {
	bool on;	    /* --tls, or the file has [controller] tls_listen */
	const char *cacert; /* --cacert */
	const char *cert;   /* --cert */
	const char *key;    /* --key */
};

struct cli_conn;

/* NULL and a message on stderr on failure. */
struct cli_conn *cli_connect(const struct cfg *cfg, const struct cfg_endpoint *ep,
			     const struct cli_tls *tls, int timeout_ms);
redisReply *cli_command(struct cli_conn *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void cli_set_timeout(struct cli_conn *k, int timeout_ms);
/* Before a password or the cluster secret goes out: the controller proves, for
 * this connection (FLATLINE PROVE, common/auth.h), that it holds the cluster
 * secret (K_cli, when the file has the secret), else the key of a node the file
 * knows ([node] key); over a UNIX socket, also that root, this user or the
 * file's owner serves it.
 * 0 proven; -ENOKEY the file holds no key to check with; -EACCES not proven
 * (said why). */
int cli_prove_controller(struct cli_conn *k, const struct cfg *cfg);
/* Why the last command got no reply. */
const char *cli_errstr(const struct cli_conn *k);
void cli_free(struct cli_conn *k);

#endif
