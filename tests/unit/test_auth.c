// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Node keys and the handshake's proofs (common/auth.h): both sides prove, a
 * proof is bound to its role, node and both nonces, and HELLO is parsed
 * strictly. Vectors cross-checked with `openssl dgst -sha256 -hmac`. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "common/auth.h"

#define NODE_KEY_N1    "0be4544273e00aa7baae2753709a10ac22393c8eb02eaf48f209554f31c6bc61"
#define PROOF_AGENT_N1 "f46b5835c0c1a80bed9f2d46c0860dfc5967204e5290f51c636e96e7c0fac0ff"

static const char secret[] = "0123456789abcdef0123";

static void test_node_key_vector(void **s)
{
	uint8_t key[AUTH_KEY_LEN];
	char hex[AUTH_HEX_LEN + 1];

	(void)s;
	assert_int_equal(auth_node_key(secret, strlen(secret), "n1", key), 0);
	auth_hex(key, sizeof(key), hex);
	/* printf 'flatline-node-key:n1' | openssl dgst -sha256 -hmac 0123456789abcdef0123 */
	assert_string_equal(hex, NODE_KEY_N1);
	/* Another node, another key: one agent's key does not speak for another. */
	assert_int_equal(auth_node_key(secret, strlen(secret), "n2", key), 0);
	auth_hex(key, sizeof(key), hex);
	assert_string_not_equal(hex, NODE_KEY_N1);
}

static void test_hex_round_trip_and_strictness(void **s)
{
	uint8_t b[4] = {0x00, 0x7f, 0x80, 0xff}, back[4];
	char hex[9];

	(void)s;
	auth_hex(b, 4, hex);
	assert_string_equal(hex, "007f80ff");
	assert_int_equal(auth_unhex(hex, 8, back, 4), 0);
	assert_memory_equal(b, back, 4);
	assert_int_equal(auth_unhex("007F80FF", 8, back, 4), 0);
	assert_int_equal(auth_unhex("007f80f", 7, back, 4), -EINVAL);
	assert_int_equal(auth_unhex("007f80ff00", 10, back, 4), -EINVAL);
	assert_int_equal(auth_unhex("007f80fg", 8, back, 4), -EINVAL);
	assert_int_equal(auth_unhex("007f\00080ff", 8, back, 4), -EINVAL);
}

static void test_proofs_bound_to_role_node_nonces(void **s)
{
	uint8_t key[AUTH_KEY_LEN], other[AUTH_KEY_LEN], na[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN];
	uint8_t p[AUTH_MAC_LEN];
	char hex[AUTH_HEX_LEN + 1];

	(void)s;
	assert_int_equal(auth_node_key(secret, strlen(secret), "n1", key), 0);
	assert_int_equal(auth_node_key(secret, strlen(secret), "n2", other), 0);
	assert_int_equal(auth_nonce(na), 0);
	assert_int_equal(auth_nonce(nc), 0);
	assert_memory_not_equal(na, nc, AUTH_NONCE_LEN); /* fresh */
	assert_int_equal(auth_proof(key, AUTH_CONTROLLER, "n1", na, nc, p), 0);
	auth_hex(p, sizeof(p), hex);
	assert_true(auth_check(key, AUTH_CONTROLLER, "n1", na, nc, hex, AUTH_HEX_LEN));
	/* Not the agent's proof (no reflection), not for another node or key. */
	assert_false(auth_check(key, AUTH_AGENT, "n1", na, nc, hex, AUTH_HEX_LEN));
	assert_false(auth_check(key, AUTH_CONTROLLER, "n2", na, nc, hex, AUTH_HEX_LEN));
	assert_false(auth_check(other, AUTH_CONTROLLER, "n1", na, nc, hex, AUTH_HEX_LEN));
	/* Not with another nonce from either side: nothing replays. */
	na[0] ^= 1;
	assert_false(auth_check(key, AUTH_CONTROLLER, "n1", na, nc, hex, AUTH_HEX_LEN));
	na[0] ^= 1;
	nc[31] ^= 0x80;
	assert_false(auth_check(key, AUTH_CONTROLLER, "n1", na, nc, hex, AUTH_HEX_LEN));
	nc[31] ^= 0x80;
	/* Truncated or altered proofs. */
	assert_false(auth_check(key, AUTH_CONTROLLER, "n1", na, nc, hex, AUTH_HEX_LEN - 2));
	hex[10] = hex[10] == '0' ? '1' : '0';
	assert_false(auth_check(key, AUTH_CONTROLLER, "n1", na, nc, hex, AUTH_HEX_LEN));
}

static void test_proof_vector(void **s)
{
	uint8_t key[AUTH_KEY_LEN], na[AUTH_NONCE_LEN], nc[AUTH_NONCE_LEN], p[AUTH_MAC_LEN];
	char hex[AUTH_HEX_LEN + 1];

	(void)s;
	memset(na, 0x11, sizeof(na));
	memset(nc, 0x22, sizeof(nc));
	assert_int_equal(auth_node_key(secret, strlen(secret), "n1", key), 0);
	assert_int_equal(auth_proof(key, AUTH_AGENT, "n1", na, nc, p), 0);
	auth_hex(p, sizeof(p), hex);
	assert_string_equal(hex, PROOF_AGENT_N1);
}

static int hello(const char *a1, const char *a2, const char *a3, const char *a4, int argc,
		 const char **node, char *why)
{
	const char *argv[5] = {"HELLO", a1, a2, a3, a4};
	size_t lens[5];
	uint8_t na[AUTH_NONCE_LEN];

	for (int i = 0; i < 5; i++)
		lens[i] = argv[i] ? strlen(argv[i]) : 0;
	return auth_hello_parse(argc, argv, lens, node, na, why, 160);
}

static void test_hello_parse(void **s)
{
	char nonce[AUTH_HEX_LEN + 1], why[160];
	const char *node = NULL;

	(void)s;
	memset(nonce, 'a', AUTH_HEX_LEN);
	nonce[AUTH_HEX_LEN] = '\0';
	assert_int_equal(hello("flatline", "2", "n1", nonce, 5, &node, why), 0);
	assert_string_equal(node, "n1");
	/* Version 1 carried the secret in clear: refused, saying which version. */
	assert_int_equal(hello("flatline", "1", "n1", "secret", 5, &node, why), -EPROTONOSUPPORT);
	assert_non_null(strstr(why, "VERSION"));
	assert_int_equal(hello("flatline", "2", "n1", nonce, 4, &node, why), -EINVAL);
	assert_int_equal(hello("flatline", "2", "n1", "abcd", 5, &node, why), -EINVAL);
	assert_non_null(strstr(why, "ERR malformed nonce"));
	assert_int_equal(hello("flatline", "2", "n\r\n1", nonce, 5, &node, why), -EINVAL);
	assert_int_equal(hello("flatline", "2", "", nonce, 5, &node, why), -EINVAL);
	assert_int_equal(hello("other", "2", "n1", nonce, 5, &node, why), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_node_key_vector),
	    cmocka_unit_test(test_hex_round_trip_and_strictness),
	    cmocka_unit_test(test_proofs_bound_to_role_node_nonces),
	    cmocka_unit_test(test_proof_vector),
	    cmocka_unit_test(test_hello_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
