// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* TLS contexts from the cluster file, and handshake failures in words (tls.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include "common/tls.h"

/* The oldest queued OpenSSL error in words, the queue emptied. */
static const char *ossl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_get_error(), next;
	const char *r;

	while ((next = ERR_get_error()))
		(void)next; /* the first is the cause; the rest say where it surfaced */
	r = e ? ERR_reason_error_string(e) : NULL;
	if (r)
		snprintf(buf, len, "%s", r);
	else if (e)
		snprintf(buf, len, "OpenSSL error %lx", e);
	else
		snprintf(buf, len, "unknown error");
	return buf;
}

/* "FILE:LINE: [sect] key: " */
static void where(char *err, size_t errlen, const struct cfg *c, int line, const char *sect,
		  const char *key)
{
	snprintf(err, errlen, "%s:%d: [%s] %s: ", c->path, line, sect, key);
}

static void fail(char *err, size_t errlen, const struct cfg *c, int line, const char *sect,
		 const char *key, const char *what, const char *path, const char *why)
{
	size_t n;

	where(err, errlen, c, line, sect, key);
	n = strlen(err);
	snprintf(err + n, errlen - n, "failed to %s %s: %s", what, path, why);
}

/* Readable at all? errno's words are clearer than OpenSSL's "system lib". */
static bool readable(const char *path, char *why, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f) {
		snprintf(why, len, "%s", strerror(errno));
		return false;
	}
	fclose(f);
	return true;
}

static int load_pair(SSL_CTX *ctx, const struct cfg *c, const char *sect, const struct cfg_tls *t,
		     char *err, size_t errlen)
{
	char why[400] = "";

	if (!readable(t->cert, why, sizeof(why)) ||
	    SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
		if (!why[0] || ERR_peek_error())
			ossl_reason(why, sizeof(why));
		fail(err, errlen, c, t->cert_line, sect, "tls_cert", "load certificate", t->cert,
		     why);
		return -EINVAL;
	}
	why[0] = '\0';
	if (!readable(t->key, why, sizeof(why)) ||
	    SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1) {
		if (!why[0] && ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
			goto mismatch;
		if (!why[0] || ERR_peek_error())
			ossl_reason(why, sizeof(why));
		fail(err, errlen, c, t->key_line, sect, "tls_key", "load private key", t->key, why);
		return -EINVAL;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
	mismatch:
		ERR_clear_error();
		snprintf(why, sizeof(why), "it does not match the certificate %s (tls_cert)",
			 t->cert);
		fail(err, errlen, c, t->key_line, sect, "tls_key", "use private key", t->key, why);
		return -EINVAL;
	}
	return 0;
}

static int load_ca(SSL_CTX *ctx, const struct cfg *c, const char *sect, const struct cfg_tls *t,
		   char *err, size_t errlen)
{
	char why[200] = "";

	if (!readable(t->ca, why, sizeof(why)) ||
	    SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1) {
		if (!why[0] || ERR_peek_error())
			ossl_reason(why, sizeof(why));
		fail(err, errlen, c, t->ca_line, sect, "tls_ca", "load CA certificates", t->ca,
		     why);
		return -EINVAL;
	}
	return 0;
}

static SSL_CTX *new_ctx(const SSL_METHOD *m, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(m);
	char why[200];

	if (!ctx) {
		snprintf(err, errlen, "failed to create a TLS context: %s",
			 ossl_reason(why, sizeof(why)));
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* Redis closes without close_notify; libevent handles partial writes itself. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	return ctx;
}

SSL_CTX *tls_server_ctx(const struct cfg *c, char *err, size_t errlen)
{
	const struct cfg_tls *t = &c->controller.tls_files;
	SSL_CTX *ctx;
	int mode = SSL_VERIFY_NONE;

	err[0] = '\0';
	ctx = new_ctx(TLS_server_method(), err, errlen);
	if (!ctx)
		return NULL;
	if (load_pair(ctx, c, "controller", t, err, errlen))
		goto fail;
	if (t->ca[0]) {
		STACK_OF(X509_NAME) * names;

		if (load_ca(ctx, c, "controller", t, err, errlen))
			goto fail;
		names = SSL_load_client_CA_file(t->ca);
		if (names)
			SSL_CTX_set_client_CA_list(ctx, names);
		ERR_clear_error();
	}
	if (c->controller.tls_auth_clients == CFG_TLS_AUTH_YES)
		mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	else if (c->controller.tls_auth_clients == CFG_TLS_AUTH_OPTIONAL)
		mode = SSL_VERIFY_PEER;
	SSL_CTX_set_verify(ctx, mode, NULL);
	/* No session resumption across restarts to think about: one session per
	 * connection, as agents keep theirs open. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	/* An idle connection (a subscriber, a half-done handshake) holds no record
	 * buffers: 500 hostile connections stay within tens of MiB. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL_CTX *tls_client_ctx(const struct cfg *c, const char *sect, const struct cfg_tls *t,
			const struct cfg_tls *ca_fallback, char *err, size_t errlen)
{
	const struct cfg_tls *ca = t->ca[0] ? t : ca_fallback;
	SSL_CTX *ctx;

	err[0] = '\0';
	ctx = new_ctx(TLS_client_method(), err, errlen);
	if (!ctx)
		return NULL;
	if (t->cert[0] && load_pair(ctx, c, sect, t, err, errlen))
		goto fail;
	if (!ca || !ca->ca[0]) {
		snprintf(err, errlen,
			 "%s: [%s] tls_ca: missing (the CA that signed the peer's "
			 "certificate: tls_ca = /path)",
			 c->path, sect);
		goto fail;
	}
	if (load_ca(ctx, c, ca == t ? sect : "controller", ca, err, errlen))
		goto fail;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL *tls_client_ssl(SSL_CTX *ctx, const char *host)
{
	unsigned char a[16];
	SSL *ssl = SSL_new(ctx);
	bool ip = inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;

	if (!ssl)
		return NULL;
	if (ip) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1)
			goto fail;
	} else {
		if (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1)
			goto fail;
	}
	return ssl;
fail:
	SSL_free(ssl);
	return NULL;
}

/* What a failed verification or an OpenSSL error says; hints for the usual
 * mistakes (plain text on a TLS port). */
static const char *describe(SSL *ssl, unsigned long e, int sock_err, char *buf, size_t len)
{
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	const char *r = e ? ERR_reason_error_string(e) : NULL;
	int reason = e ? ERR_GET_REASON(e) : 0;

	if (ssl && v != X509_V_OK && reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
		snprintf(buf, len, "certificate verify failed: %s",
			 X509_verify_cert_error_string(v));
	} else if (r) {
		const char *hint = "";

		if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_HTTP_REQUEST ||
		    reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
		    reason == SSL_R_RECORD_LENGTH_MISMATCH)
			hint =
			    " (not TLS: a plain-text peer on a TLS port, or the other way round?)";
		else if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)
			hint = " (a client certificate is required: tls_auth_clients = yes)";
		snprintf(buf, len, "%s%s", r, hint);
	} else if (e) {
		snprintf(buf, len, "OpenSSL error %lx", e);
	} else if (sock_err) {
		snprintf(buf, len, "%s", strerror(sock_err));
	} else {
		snprintf(buf, len, "connection closed during the TLS handshake");
	}
	return buf;
}

const char *tls_bev_error(struct bufferevent *bev, int sock_err, char *buf, size_t len)
{
	unsigned long e, first = 0;

	while ((e = bufferevent_get_openssl_error(bev)))
		if (!first)
			first = e;
	ERR_clear_error();
	return describe(bufferevent_openssl_get_ssl(bev), first, sock_err, buf, len);
}

const char *tls_ssl_error(SSL *ssl, int ret, char *buf, size_t len)
{
	int kind = SSL_get_error(ssl, ret);
	unsigned long e = ERR_get_error();

	ERR_clear_error();
	if (!e && kind == SSL_ERROR_SYSCALL && errno == EAGAIN)
		return snprintf(buf, len, "timed out"), buf;
	return describe(ssl, e, kind == SSL_ERROR_SYSCALL ? errno : 0, buf, len);
}

const struct cfg_endpoint *tls_controller_ep(const struct cfg *c)
{
	return c->controller.tls ? &c->controller.tls_address : &c->controller.address;
}

const struct cfg_endpoint *tls_ctl_ep(const struct cfg *c, int i)
{
	if (!c->etcd.enabled)
		return tls_controller_ep(c);
	return c->ctls[i].tls ? &c->ctls[i].tls_address : &c->ctls[i].listen;
}
