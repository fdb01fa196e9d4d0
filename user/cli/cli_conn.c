// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The CLI's connection to a controller, plain or TLS (cli_conn.h). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include "cli/cli_conn.h"
#include "common/auth.h"
#include "common/log.h"
#include "common/tls.h"

struct cli_conn {
	redisContext *rc; /* plain */
	/* TLS: */
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
	redisReader *rd;
	char errstr[256];
};

static void where(char *buf, size_t len, const struct cfg_endpoint *ep)
{
	if (ep->unix_path[0])
		snprintf(buf, len, "unix:%s", ep->unix_path);
	else
		cfg_hostport(buf, len, ep->host, ep->port);
}

static void set_timeouts(int fd, int timeout_ms)
{
	struct timeval tv = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* TCP connect within timeout_ms; a blocking socket, or -errno. */
static int tcp_connect(const struct cfg_endpoint *ep, int timeout_ms)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	struct pollfd p;
	char port[16];
	int fd, rc, soerr = 0;
	socklen_t sl = sizeof(soerr);

	snprintf(port, sizeof(port), "%d", ep->port);
	rc = getaddrinfo(ep->host, port, &hints, &ai);
	if (rc)
		return -EHOSTUNREACH;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto cleanup;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
		rc = -errno;
		goto fail;
	}
	p = (struct pollfd){.fd = fd, .events = POLLOUT};
	rc = poll(&p, 1, timeout_ms);
	if (rc == 0) {
		rc = -ETIMEDOUT;
		goto fail;
	}
	if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
		rc = soerr ? -soerr : -errno;
		goto fail;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	set_timeouts(fd, timeout_ms);
	rc = fd;
	goto cleanup;
fail:
	close(fd);
cleanup:
	freeaddrinfo(ai);
	return rc;
}

static struct cli_conn *connect_tls(const struct cfg *cfg, const struct cfg_endpoint *ep,
				    const struct cli_tls *o, int timeout_ms)
{
	struct cfg_tls t = cfg->agent.tls;
	struct cli_conn *k = calloc(1, sizeof(*k));
	char err[600], at[300];
	int rc;

	where(at, sizeof(at), ep);
	if (!k)
		return NULL;
	k->fd = -1;
	if (ep->unix_path[0]) {
		pr_warn("failed to connect to the controller at %s: TLS needs a TCP address\n", at);
		goto fail;
	}
	if (o->cacert)
		snprintf(t.ca, sizeof(t.ca), "%s", o->cacert);
	if (o->cert)
		snprintf(t.cert, sizeof(t.cert), "%s", o->cert);
	if (o->key)
		snprintf(t.key, sizeof(t.key), "%s", o->key);
	if (!t.cert[0] != !t.key[0]) {
		pr_warn("failed to set up TLS: a client certificate needs its key (--cert and "
			"--key)\n");
		goto fail;
	}
	k->ctx = tls_client_ctx(cfg, "agent", &t, &cfg->controller.tls_files, err, sizeof(err));
	if (!k->ctx) {
		pr_warn("failed to set up TLS: %s\n", err);
		goto fail;
	}
	rc = tcp_connect(ep, timeout_ms);
	if (rc < 0) {
		pr_warn("failed to connect to the controller at %s: %s\n", at, strerror(-rc));
		goto fail;
	}
	k->fd = rc;
	k->ssl = tls_client_ssl(k->ctx, ep->host);
	k->rd = redisReaderCreate();
	if (!k->ssl || !k->rd || SSL_set_fd(k->ssl, k->fd) != 1) {
		pr_warn("failed to set up TLS: out of memory\n");
		goto fail;
	}
	rc = SSL_connect(k->ssl);
	if (rc != 1) {
		pr_warn("failed to connect to the controller at %s: TLS handshake failed: %s\n", at,
			tls_ssl_error(k->ssl, rc, err, sizeof(err)));
		goto fail;
	}
	return k;
fail:
	cli_free(k);
	return NULL;
}

struct cli_conn *cli_connect(const struct cfg *cfg, const struct cfg_endpoint *ep,
			     const struct cli_tls *tls, int timeout_ms)
{
	struct timeval tv = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000};
	struct cli_conn *k;
	char at[300];

	if (tls && tls->on)
		return connect_tls(cfg, ep, tls, timeout_ms);
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->fd = -1;
	if (ep->unix_path[0])
		k->rc = redisConnectUnixWithTimeout(ep->unix_path, tv);
	else
		k->rc = redisConnectWithTimeout(ep->host, ep->port, tv);
	if (!k->rc || k->rc->err) {
		where(at, sizeof(at), ep);
		pr_warn("failed to connect to the controller at %s: %s\n", at,
			k->rc ? k->rc->errstr : "out of memory");
		cli_free(k);
		return NULL;
	}
	return k;
}

static redisReply *tls_command(struct cli_conn *k, const char *fmt, va_list ap)
{
	char *cmd = NULL, buf[16384], why[200];
	void *rep = NULL;
	int len = redisvFormatCommand(&cmd, fmt, ap), off = 0, n;

	if (len < 0) {
		snprintf(k->errstr, sizeof(k->errstr), "out of memory");
		return NULL;
	}
	while (off < len) {
		n = SSL_write(k->ssl, cmd + off, len - off);
		if (n <= 0) {
			snprintf(k->errstr, sizeof(k->errstr), "%s",
				 tls_ssl_error(k->ssl, n, why, sizeof(why)));
			free(cmd);
			return NULL;
		}
		off += n;
	}
	free(cmd);
	for (;;) {
		if (redisReaderGetReply(k->rd, &rep) != REDIS_OK) {
			snprintf(k->errstr, sizeof(k->errstr), "protocol error: %s", k->rd->errstr);
			return NULL;
		}
		if (rep)
			return rep;
		n = SSL_read(k->ssl, buf, sizeof(buf));
		if (n <= 0) {
			if (SSL_get_error(k->ssl, n) == SSL_ERROR_ZERO_RETURN)
				snprintf(k->errstr, sizeof(k->errstr), "connection closed");
			else
				snprintf(k->errstr, sizeof(k->errstr), "%s",
					 tls_ssl_error(k->ssl, n, why, sizeof(why)));
			return NULL;
		}
		if (redisReaderFeed(k->rd, buf, n) != REDIS_OK) {
			snprintf(k->errstr, sizeof(k->errstr), "out of memory");
			return NULL;
		}
	}
}

redisReply *cli_command(struct cli_conn *k, const char *fmt, ...)
{
	redisReply *rep;
	va_list ap;

	va_start(ap, fmt);
	if (k->rc)
		rep = redisvCommand(k->rc, fmt, ap);
	else
		rep = tls_command(k, fmt, ap);
	va_end(ap);
	return rep;
}

void cli_set_timeout(struct cli_conn *k, int timeout_ms)
{
	struct timeval tv = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000};

	if (k->rc)
		redisSetTimeout(k->rc, tv);
	else
		set_timeouts(k->fd, timeout_ms);
}

const char *cli_errstr(const struct cli_conn *k)
{
	return k->rc ? k->rc->errstr : k->errstr;
}

void cli_free(struct cli_conn *k)
{
	if (!k)
		return;
	if (k->rc)
		redisFree(k->rc);
	if (k->ssl) {
		SSL_shutdown(k->ssl);
		SSL_free(k->ssl);
	}
	if (k->ctx)
		SSL_CTX_free(k->ctx);
	if (k->rd)
		redisReaderFree(k->rd);
	if (k->fd >= 0)
		close(k->fd);
	free(k);
}

/* Over a UNIX socket both ends of the proof are "unix", so a listener that relays
 * the nonce to the real controller's socket would get a proof the CLI accepts:
 * the CLI talks only to a socket served by root, by its own user or by the owner
 * of the file it read (each can read that file's secrets anyway). 0, or -EACCES
 * (said why). */
static int unix_peer_trusted(int fd, const char *path)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	struct stat st;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len)) {
		pr_warn("failed to learn who serves the controller's UNIX socket: %s: not sending "
			"it a password\n",
			strerror(errno));
		return -EACCES;
	}
	if (uc.uid == 0 || uc.uid == geteuid() || (!stat(path, &st) && st.st_uid == uc.uid))
		return 0;
	pr_warn("the controller's UNIX socket is served by uid %u (pid %d), neither root, this "
		"user nor the owner of %s: not sending it a password\n",
		(unsigned)uc.uid, (int)uc.pid, path);
	return -EACCES;
}

int cli_prove_controller(struct cli_conn *k, const struct cfg *cfg)
{
	struct sockaddr_storage cl = {0}, sv = {0};
	socklen_t cl_len = sizeof(cl), sv_len = sizeof(sv);
	uint8_t key[AUTH_KEY_LEN], nonce[AUTH_NONCE_LEN], want[AUTH_MAC_LEN], got[AUTH_MAC_LEN];
	char hex[AUTH_HEX_LEN + 1], what[CFG_ID_MAX + 32];
	const char *node = NULL;
	int fd = k->rc ? k->rc->fd : k->fd, ret = -EACCES;
	redisReply *r;

	/* With the cluster secret, only K_cli: a node's key is also on that node's
	 * host, and the secret must never go to whoever holds just one node's key. */
	if (cfg->secret[0]) {
		if (auth_cli_key(cfg->secret, strlen(cfg->secret), key))
			return -EIO;
		node = AUTH_CLI_NODE;
	}
	for (int i = 0; i < cfg->nnodes && !node; i++)
		if (!auth_key_for(cfg->nodes[i].key, NULL, cfg->nodes[i].id, key))
			node = cfg->nodes[i].id;
	if (!node)
		return -ENOKEY;
	if (node[0] == AUTH_CLI_NODE[0])
		snprintf(what, sizeof(what), "the cluster secret");
	else
		snprintf(what, sizeof(what), "node %s's key", node);
	if (auth_nonce(nonce) || getpeername(fd, (struct sockaddr *)&sv, &sv_len) ||
	    getsockname(fd, (struct sockaddr *)&cl, &cl_len) ||
	    auth_cli_proof(key, node, nonce, (struct sockaddr *)&cl, (struct sockaddr *)&sv,
			   want)) {
		pr_warn("failed to ask the controller for its proof: %s\n", strerror(errno));
		return -EIO;
	}
	if (sv.ss_family == AF_UNIX && unix_peer_trusted(fd, cfg->path))
		return -EACCES;
	auth_hex(nonce, sizeof(nonce), hex);
	r = cli_command(k, "FLATLINE PROVE %s %s", node, hex);
	if (r && r->type == REDIS_REPLY_STRING && !auth_unhex(r->str, r->len, got, sizeof(got)) &&
	    !CRYPTO_memcmp(want, got, sizeof(got)))
		ret = 0;
	else
		pr_warn("the controller did not prove it holds %s (%s): not sending it a "
			"password\n",
			what,
			!r				? cli_errstr(k)
			: r->type == REDIS_REPLY_ERROR	? r->str
			: r->type == REDIS_REPLY_STRING ? "a wrong proof"
							: "an answer that is not a proof");
	if (r)
		freeReplyObject(r);
	return ret;
}
