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
#include <arpa/inet.h>
#include <netinet/in.h>
#include "common/auth.h"

#define NODE_KEY_N1    "0be4544273e00aa7baae2753709a10ac22393c8eb02eaf48f209554f31c6bc61"
#define CLI_KEY	       "d22151619d612209be90ebde78fd6f50fcc60ab41d2cde8bb306d51a5466bd11"
#define CLI_PROOF_STAR "82efae5752da5304bd52b8046ceae793801455c4532df1a9bb18c7fde390bf33"
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

static void v4(struct sockaddr_in *a, const char *ip, int port)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &a->sin_addr), 1);
}

static void v6(struct sockaddr_in6 *a, const char *ip, int port)
{
	memset(a, 0, sizeof(*a));
	a->sin6_family = AF_INET6;
	a->sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, ip, &a->sin6_addr), 1);
}

/* The controller's connection name: bound to the key, the node and both ends; an IPv4
 * end and its IPv4-mapped IPv6 form give the same name (the agent reads both ways). */
static void test_conn_name(void **s)
{
	uint8_t k[AUTH_KEY_LEN], k2[AUTH_KEY_LEN];
	char a[AUTH_CONN_NAME_MAX], b[AUTH_CONN_NAME_MAX];
	struct sockaddr_in c4, s4, o4;
	struct sockaddr_in6 c6, s6;

	(void)s;
	assert_int_equal(auth_node_key("0123456789abcdef", 16, "n1", k), 0);
	assert_int_equal(auth_node_key("0123456789abcdef", 16, "n2", k2), 0);
	v4(&c4, "10.77.0.254", 40000);
	v4(&s4, "10.77.0.1", 6379);
	v6(&c6, "::ffff:10.77.0.254", 40000);
	v6(&s6, "::ffff:10.77.0.1", 6379);
	assert_int_equal(auth_conn_name(k, "n1", (void *)&c4, (void *)&s4, a, sizeof(a)), 0);
	assert_int_equal(strlen(a), strlen(AUTH_CONN_NAME_PREFIX) + 2 * AUTH_CONN_MAC_LEN);
	assert_int_equal(strncmp(a, AUTH_CONN_NAME_PREFIX, strlen(AUTH_CONN_NAME_PREFIX)), 0);
	assert_int_equal(auth_conn_name(k, "n1", (void *)&c6, (void *)&s6, b, sizeof(b)), 0);
	assert_string_equal(a, b);
	/* Another client port (a copier's connection), node or key: another name. */
	v4(&o4, "10.77.0.254", 40001);
	assert_int_equal(auth_conn_name(k, "n1", (void *)&o4, (void *)&s4, b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(auth_conn_name(k, "n2", (void *)&c4, (void *)&s4, b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(auth_conn_name(k2, "n1", (void *)&c4, (void *)&s4, b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	/* Ends swapped: another name. */
	assert_int_equal(auth_conn_name(k, "n1", (void *)&s4, (void *)&c4, b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	/* Too small a buffer, not an IP end. */
	assert_int_equal(auth_conn_name(k, "n1", (void *)&c4, (void *)&s4, b, 10), -ENOSPC);
	c4.sin_family = AF_UNIX;
	assert_int_equal(auth_conn_name(k, "n1", (void *)&c4, (void *)&s4, b, sizeof(b)),
			 -EAFNOSUPPORT);
}

/* A node's key: [node] key wins, else the secret's; neither: -ENOKEY. */
static void test_key_for(void **s)
{
	uint8_t k[AUTH_KEY_LEN], want[AUTH_KEY_LEN];
	char hex[AUTH_HEX_LEN + 1];

	(void)s;
	assert_int_equal(auth_node_key("0123456789abcdef", 16, "n1", want), 0);
	assert_int_equal(auth_key_for("", "0123456789abcdef", "n1", k), 0);
	assert_memory_equal(k, want, AUTH_KEY_LEN);
	memset(want, 0x5a, sizeof(want));
	auth_hex(want, sizeof(want), hex);
	assert_int_equal(auth_key_for(hex, "0123456789abcdef", "n1", k), 0);
	assert_memory_equal(k, want, AUTH_KEY_LEN);
	assert_int_equal(auth_key_for("", "", "n1", k), -ENOKEY);
	assert_int_equal(auth_key_for("zz", "", "n1", k), -EINVAL);
}

/* K_cli: one key from the secret, no node's key, and its proof (FLATLINE PROVE *)
 * is one no node's key makes, bound to the nonce and both ends. */
static void test_cli_key_and_proof(void **s)
{
	uint8_t k[AUTH_KEY_LEN], kn[AUTH_KEY_LEN], nonce[AUTH_NONCE_LEN], p[AUTH_MAC_LEN],
	    q[AUTH_MAC_LEN];
	char hex[AUTH_HEX_LEN + 1];
	struct sockaddr_in c4, s4, o4;

	(void)s;
	assert_int_equal(auth_cli_key(secret, strlen(secret), k), 0);
	auth_hex(k, sizeof(k), hex);
	/* printf 'flatline-cli-key' | openssl dgst -sha256 -hmac 0123456789abcdef0123 */
	assert_string_equal(hex, CLI_KEY);
	/* Not any node's key, not even a node named like the key's label. */
	assert_int_equal(auth_node_key(secret, strlen(secret), "n1", kn), 0);
	assert_memory_not_equal(k, kn, AUTH_KEY_LEN);
	assert_int_equal(auth_node_key(secret, strlen(secret), "*", kn), 0);
	assert_memory_not_equal(k, kn, AUTH_KEY_LEN);
	assert_int_equal(auth_cli_key("another-secret-0123", 19, kn), 0);
	assert_memory_not_equal(k, kn, AUTH_KEY_LEN);

	for (int i = 0; i < AUTH_NONCE_LEN; i++)
		nonce[i] = (uint8_t)i;
	v4(&c4, "10.77.0.254", 40000);
	v4(&s4, "10.77.0.1", 7000);
	assert_int_equal(auth_cli_proof(k, AUTH_CLI_NODE, nonce, (void *)&c4, (void *)&s4, p), 0);
	auth_hex(p, sizeof(p), hex);
	/* HMAC(K_cli, "flatline-v2 controller-to-cli\n*\n" hex(nonce) "\n" hex(client)
	 * "\n" hex(server)), computed with Python's hmac. */
	assert_string_equal(hex, CLI_PROOF_STAR);
	/* Node n1's key (the first node, what a compromised n1 holds) cannot make it,
	 * for "*" or for n1. */
	assert_int_equal(auth_node_key(secret, strlen(secret), "n1", kn), 0);
	assert_int_equal(auth_cli_proof(kn, AUTH_CLI_NODE, nonce, (void *)&c4, (void *)&s4, q), 0);
	assert_memory_not_equal(p, q, AUTH_MAC_LEN);
	assert_int_equal(auth_cli_proof(kn, "n1", nonce, (void *)&c4, (void *)&s4, q), 0);
	assert_memory_not_equal(p, q, AUTH_MAC_LEN);
	/* Another client end (a relay's connection) or nonce: another proof. */
	v4(&o4, "10.77.0.254", 40001);
	assert_int_equal(auth_cli_proof(k, AUTH_CLI_NODE, nonce, (void *)&o4, (void *)&s4, q), 0);
	assert_memory_not_equal(p, q, AUTH_MAC_LEN);
	nonce[0] ^= 1;
	assert_int_equal(auth_cli_proof(k, AUTH_CLI_NODE, nonce, (void *)&c4, (void *)&s4, q), 0);
	assert_memory_not_equal(p, q, AUTH_MAC_LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_node_key_vector),
	    cmocka_unit_test(test_hex_round_trip_and_strictness),
	    cmocka_unit_test(test_proofs_bound_to_role_node_nonces),
	    cmocka_unit_test(test_proof_vector),
	    cmocka_unit_test(test_hello_parse),
	    cmocka_unit_test(test_conn_name),
	    cmocka_unit_test(test_key_for),
	    cmocka_unit_test(test_cli_key_and_proof),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
