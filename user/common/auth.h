/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Node credentials and the agent <-> controller handshake (docs/protocol.md,
 * version 2): HMAC-SHA256 (OpenSSL libcrypto) over a fresh nonce from each
 * side, so both ends prove they hold the node's key and nothing on the wire
 * can be replayed or used to log in.
 *
 *   node key  K_n = HMAC-SHA256(cluster secret, "flatline-node-key:" node)
 *   agent      -> HELLO flatline 2 <node> <nonce_a>
 *   controller -> *3 "CHALLENGE" <nonce_c> <proof_c>
 *   agent      -> PROVE <proof_a>            (after checking proof_c)
 *   controller -> +OK                        (after checking proof_a)
 *   proof_X   = HMAC-SHA256(K_n, "flatline-v2 " X "\n" node "\n" hex(nonce_a) "\n" hex(nonce_c))
 *
 * with X "controller" or "agent" (a proof is never valid for the other side).
 * Nonces, proofs and keys travel as lowercase hex. */
#ifndef FL_AUTH_H
#define FL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define AUTH_PROTO_VERSION "2"
#define AUTH_KEY_LEN	   32
#define AUTH_NONCE_LEN	   32
#define AUTH_MAC_LEN	   32
#define AUTH_HEX_LEN	   64 /* of each of the above */

enum auth_role { AUTH_AGENT, AUTH_CONTROLLER };

/* K_n from the cluster secret. 0, or -EIO when libcrypto fails. */
int auth_node_key(const char *secret, size_t secret_len, const char *node,
		  uint8_t key[AUTH_KEY_LEN]);
/* K_cli = HMAC-SHA256(cluster secret, "flatline-cli-key"): the key the controller
 * proves itself with to a CLI that holds the cluster secret (FLATLINE PROVE * ...).
 * No node's key derives to it, so an agent (or root on its host) holding only its
 * node key cannot make that proof. 0, or -EIO when libcrypto fails. */
#define AUTH_CLI_NODE "*" /* the node word of a proof under K_cli */
int auth_cli_key(const char *secret, size_t secret_len, uint8_t key[AUTH_KEY_LEN]);
/* A fresh nonce from the kernel's CSPRNG (getrandom). 0 or -errno. */
int auth_nonce(uint8_t nonce[AUTH_NONCE_LEN]);
void auth_hex(const uint8_t *b, size_t n, char *out); /* out: 2n + 1 bytes */
/* Exactly 2n lowercase or uppercase hex digits into n bytes: 0 or -EINVAL. */
int auth_unhex(const char *s, size_t slen, uint8_t *out, size_t n);
/* The proof `role` sends. 0 or -EIO. */
int auth_proof(const uint8_t key[AUTH_KEY_LEN], enum auth_role role, const char *node,
	       const uint8_t na[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN],
	       uint8_t out[AUTH_MAC_LEN]);
/* Does the hex proof (as received, not NUL-terminated) come from `role`? In
 * constant time once its length is right. */
bool auth_check(const uint8_t key[AUTH_KEY_LEN], enum auth_role role, const char *node,
		const uint8_t na[AUTH_NONCE_LEN], const uint8_t nc[AUTH_NONCE_LEN], const char *hex,
		size_t hexlen);

/* A node's key: key_hex ([node] key) if set, else derived from the cluster secret;
 * -ENOKEY with neither, -EINVAL for a malformed key_hex. */
int auth_key_for(const char *key_hex, const char *secret, const char *node,
		 uint8_t key[AUTH_KEY_LEN]);

/* The name (CLIENT SETNAME) the controller gives its connection to a node's server,
 * proving which connection is its own to the node's agent, which reads it in CLIENT
 * LIST: AUTH_CONN_NAME_PREFIX and the hex of the first AUTH_CONN_MAC_LEN bytes of
 *   HMAC-SHA256(K_n, "flatline-v2 server-conn\n" node "\n" hex(client) "\n" hex(server))
 * where client and server are the connection's ends (16-byte address, IPv4 as
 * ::ffff:a.b.c.d, then the port, network order). A client that copies the name has
 * another client end, so the name does not prove its connection. 0 or -errno. */
#define AUTH_CONN_NAME_PREFIX "flatline-controller-"
#define AUTH_CONN_MAC_LEN     16
#define AUTH_CONN_NAME_MAX    (sizeof(AUTH_CONN_NAME_PREFIX) + 2 * (size_t)AUTH_CONN_MAC_LEN)
int auth_conn_name(const uint8_t key[AUTH_KEY_LEN], const char *node, const struct sockaddr *client,
		   const struct sockaddr *server, char *out, size_t outlen);

/* The controller's proof to the CLI, before the CLI sends a password or the
 * cluster secret (FLATLINE PROVE <node> <nonce>, answered with the hex of; for
 * FLATLINE PROVE * <nonce>, key is K_cli and node is "*"):
 *   HMAC-SHA256(K_n, "flatline-v2 controller-to-cli\n" node "\n" hex(nonce) "\n"
 *               hex(client) "\n" hex(server))
 * with the connection's ends as in auth_conn_name ("unix" for both over a UNIX
 * socket, where the CLI checks instead who serves the socket, SO_PEERCRED): a
 * listener on the controller's address that relays the nonce to the real
 * controller gets a proof for its own connection's ends, which the CLI's ends do
 * not match. 0 or -errno. */
int auth_cli_proof(const uint8_t key[AUTH_KEY_LEN], const char *node,
		   const uint8_t nonce[AUTH_NONCE_LEN], const struct sockaddr *client,
		   const struct sockaddr *server, uint8_t out[AUTH_MAC_LEN]);

/* The controller's parse of "HELLO flatline <version> <node> <nonce_a>" (argv[0]
 * is HELLO). 0 with node and na set; else a negative errno and why, the words
 * of the -ERR/-VERSION answer:
 *   -EPROTONOSUPPORT  the version is not 2 (why: "VERSION ...")
 *   -EINVAL           wrong arguments or a malformed nonce (why: "ERR ...") */
int auth_hello_parse(int argc, const char *const *argv, const size_t *lens, const char **node,
		     uint8_t na[AUTH_NONCE_LEN], char *why, size_t whylen);

#endif
