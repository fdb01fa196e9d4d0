// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Node keys, nonces and proofs for the agent <-> controller handshake. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "common/auth.h"
#include "common/config.h"

int auth_node_key(const char *secret, size_t secret_len, const char *node,
		  uint8_t key[AUTH_KEY_LEN])
{
	char msg[32 + CFG_ID_MAX + 1];
	unsigned int len = 0;
	int n = snprintf(msg, sizeof(msg), "flatline-node-key:%s", node);

	if (n < 0 || (size_t)n >= sizeof(msg))
		return -EINVAL;
	if (!HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)msg, n, key,
		  &len) ||
	    len != AUTH_KEY_LEN)
		return -EIO;
	return 0;
}

int auth_cli_key(const char *secret, size_t secret_len, uint8_t key[AUTH_KEY_LEN])
{
	static const char msg[] = "flatline-cli-key";
	unsigned int len = 0;

	if (!HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)msg,
		  sizeof(msg) - 1, key, &len) ||
	    len != AUTH_KEY_LEN)
		return -EIO;
	return 0;
}

int auth_nonce(uint8_t nonce[AUTH_NONCE_LEN])
{
	size_t got = 0;

	while (got < AUTH_NONCE_LEN) {
		ssize_t n = getrandom(nonce + got, AUTH_NONCE_LEN - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += n;
	}
	return 0;
}

void auth_hex(const uint8_t *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int auth_unhex(const char *s, size_t slen, uint8_t *out, size_t n)
{
	if (slen != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* The HMAC-SHA256 under key of msg, n bytes as snprintf() returned into a buffer of
 * size: -EINVAL if it did not fit. */
static int mac_of(const uint8_t key[AUTH_KEY_LEN], const char *msg, int n, size_t size,
		  uint8_t out[AUTH_MAC_LEN])
{
	unsigned int len = 0;

	if (n < 0 || (size_t)n >= size)
		return -EINVAL;
	if (!HMAC(EVP_sha256(), key, AUTH_KEY_LEN, (const unsigned char *)msg, n, out, &len) ||
	    len != AUTH_MAC_LEN)
		return -EIO;
	return 0;
}

int auth_proof(const uint8_t key[AUTH_KEY_LEN], enum auth_role role, const char *node,
	       const uint8_t na[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN],
	       uint8_t out[AUTH_MAC_LEN])
{
	char msg[64 + CFG_ID_MAX + 2 * AUTH_HEX_LEN], ha[AUTH_HEX_LEN + 1], hc[AUTH_HEX_LEN + 1];
	int n;

	auth_hex(na, AUTH_NONCE_LEN, ha);
	auth_hex(nc, AUTH_NONCE_LEN, hc);
	n = snprintf(msg, sizeof(msg), "flatline-v2 %s\n%s\n%s\n%s",
		     role == AUTH_CONTROLLER ? "controller" : "agent", node, ha, hc);
	return mac_of(key, msg, n, sizeof(msg), out);
}

bool auth_check(const uint8_t key[AUTH_KEY_LEN], enum auth_role role, const char *node,
		const uint8_t na[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN], const char *hex,
		size_t hexlen)
{
	uint8_t want[AUTH_MAC_LEN], got[AUTH_MAC_LEN];

	if (auth_unhex(hex, hexlen, got, sizeof(got)) || auth_proof(key, role, node, na, nc, want))
		return false;
	return CRYPTO_memcmp(want, got, AUTH_MAC_LEN) == 0;
}

static bool valid_node_id(const char *s, size_t n)
{
	if (n == 0 || n > CFG_ID_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return false;
	}
	return true;
}

int auth_hello_parse(int argc, const char *const *argv, const size_t *lens, const char **node,
		     uint8_t na[AUTH_NONCE_LEN], char *why, size_t whylen)
{
	if (argc < 3 || strcasecmp(argv[1], "flatline")) {
		snprintf(why, whylen, "ERR usage: HELLO flatline <version> <node> <nonce>");
		return -EINVAL;
	}
	if (lens[2] != strlen(AUTH_PROTO_VERSION) || strcmp(argv[2], AUTH_PROTO_VERSION)) {
		snprintf(why, whylen,
			 "VERSION this controller speaks flatline protocol version %s only",
			 AUTH_PROTO_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (argc != 5) {
		snprintf(why, whylen, "ERR usage: HELLO flatline %s <node> <nonce>",
			 AUTH_PROTO_VERSION);
		return -EINVAL;
	}
	if (!valid_node_id(argv[3], lens[3]) || strlen(argv[3]) != lens[3]) {
		snprintf(why, whylen, "ERR malformed node id");
		return -EINVAL;
	}
	if (auth_unhex(argv[4], lens[4], na, AUTH_NONCE_LEN)) {
		snprintf(why, whylen, "ERR malformed nonce: %d hex digits expected", AUTH_HEX_LEN);
		return -EINVAL;
	}
	*node = argv[3];
	return 0;
}

int auth_key_for(const char *key_hex, const char *secret, const char *node,
		 uint8_t key[AUTH_KEY_LEN])
{
	if (key_hex && key_hex[0])
		return auth_unhex(key_hex, strlen(key_hex), key, AUTH_KEY_LEN);
	if (!secret || !secret[0])
		return -ENOKEY;
	return auth_node_key(secret, strlen(secret), node, key);
}

/* An address as 16 bytes (IPv4 as ::ffff:a.b.c.d) and a port, network order, in hex. */
static int conn_end_hex(const struct sockaddr *sa, char out[2 * 18 + 1])
{
	uint8_t b[18] = {0};

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		b[10] = b[11] = 0xff;
		memcpy(&b[12], &in->sin_addr, 4);
		memcpy(&b[16], &in->sin_port, 2);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(b, &in6->sin6_addr, 16);
		memcpy(&b[16], &in6->sin6_port, 2);
	} else {
		return -EAFNOSUPPORT;
	}
	auth_hex(b, sizeof(b), out);
	return 0;
}

int auth_conn_name(const uint8_t key[AUTH_KEY_LEN], const char *node, const struct sockaddr *client,
		   const struct sockaddr *server, char *out, size_t outlen)
{
	char msg[64 + CFG_ID_MAX + 2 * 37], hc[37], hs[37], hex[AUTH_HEX_LEN + 1];
	uint8_t mac[AUTH_MAC_LEN];
	unsigned int len = 0;
	int n;

	if (conn_end_hex(client, hc) || conn_end_hex(server, hs))
		return -EAFNOSUPPORT;
	n = snprintf(msg, sizeof(msg), "flatline-v2 server-conn\n%s\n%s\n%s", node, hc, hs);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -EINVAL;
	if (!HMAC(EVP_sha256(), key, AUTH_KEY_LEN, (const unsigned char *)msg, n, mac, &len) ||
	    len != AUTH_MAC_LEN)
		return -EIO;
	auth_hex(mac, AUTH_CONN_MAC_LEN, hex);
	n = snprintf(out, outlen, "%s%s", AUTH_CONN_NAME_PREFIX, hex);
	return n < 0 || (size_t)n >= outlen ? -ENOSPC : 0;
}

int auth_cli_proof(const uint8_t key[AUTH_KEY_LEN], const char *node,
		   const uint8_t nonce[AUTH_NONCE_LEN], const struct sockaddr *client,
		   const struct sockaddr *server, uint8_t out[AUTH_MAC_LEN])
{
	char msg[64 + CFG_ID_MAX + AUTH_HEX_LEN + 2 * 37], hn[AUTH_HEX_LEN + 1];
	char hc[37] = "unix", hs[37] = "unix";
	int n;

	if (client->sa_family != AF_UNIX && (conn_end_hex(client, hc) || conn_end_hex(server, hs)))
		return -EAFNOSUPPORT;
	auth_hex(nonce, AUTH_NONCE_LEN, hn);
	n = snprintf(msg, sizeof(msg), "flatline-v2 controller-to-cli\n%s\n%s\n%s\n%s", node, hn,
		     hc, hs);
	return mac_of(key, msg, n, sizeof(msg), out);
}
