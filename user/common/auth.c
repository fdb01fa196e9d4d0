// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Node keys, nonces and proofs for the agent <-> controller handshake. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
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

int auth_proof(const uint8_t key[AUTH_KEY_LEN], enum auth_role role, const char *node,
	       const uint8_t na[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN],
	       uint8_t out[AUTH_MAC_LEN])
{
	char msg[64 + CFG_ID_MAX + 2 * AUTH_HEX_LEN], ha[AUTH_HEX_LEN + 1], hc[AUTH_HEX_LEN + 1];
	unsigned int len = 0;
	int n;

	auth_hex(na, AUTH_NONCE_LEN, ha);
	auth_hex(nc, AUTH_NONCE_LEN, hc);
	n = snprintf(msg, sizeof(msg), "flatline-v2 %s\n%s\n%s\n%s",
		     role == AUTH_CONTROLLER ? "controller" : "agent", node, ha, hc);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -EINVAL;
	if (!HMAC(EVP_sha256(), key, AUTH_KEY_LEN, (const unsigned char *)msg, n, out, &len) ||
	    len != AUTH_MAC_LEN)
		return -EIO;
	return 0;
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
