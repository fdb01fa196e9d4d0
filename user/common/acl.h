/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Client authentication on the controller's socket, as Sentinel 6.2+ does it
 * (docs/security.md): `[controller] requirepass` (the default user's
 * password) and `[user "name"]` sections with a password and the commands they
 * may run. Pure functions: what a command needs, the `commands` line, HELLO's
 * arguments, a peer's address against a node's. The controller applies them
 * (controller/ctl_client_auth.c).
 *
 * Permissions are categories, a set of bits:
 *   read      queries and subscriptions: PING, INFO, ROLE, COMMAND, (P)(UN)SUBSCRIBE,
 *             SENTINEL get-master-addr-by-name/masters/master/replicas/slaves/
 *             sentinels/myid/ckquorum/info-cache/pending-scripts/config get/...,
 *             CLIENT ID/GETNAME/SETNAME/SETINFO/INFO, FLATLINE STATUS
 *   failover  SENTINEL FAILOVER, FLATLINE FAILOVER
 *   admin     everything else: SENTINEL SET/CONFIG SET/RESET/FLUSHCONFIG/MONITOR/
 *             REMOVE/SIMULATE-FAILURE/DEBUG <changes>, CLIENT LIST/KILL, ...
 *   all       the three
 * AUTH, HELLO and QUIT need none (they are how one logs in), nor the agent
 * handshake's PROVE and REPORT (checked by their own keys, common/auth.h). */
#ifndef FL_ACL_H
#define FL_ACL_H

#include <stdbool.h>
#include <stddef.h>

#define ACL_READ     (1u << 0)
#define ACL_FAILOVER (1u << 1)
#define ACL_ADMIN    (1u << 2)
#define ACL_ALL	     (ACL_READ | ACL_FAILOVER | ACL_ADMIN)

#define ACL_USER_MAX 64 /* bytes in a user name */

/* A `commands = ...` value: words read, failover, admin, all (or Redis's
 * "+@all", "+@read") separated by spaces, ',' or '|'. 0 with *perms set, or
 * -EINVAL and why. */
int acl_perms_parse(const char *s, unsigned *perms, char *why, size_t whylen);
/* The words of perms, as acl_perms_parse reads them ("read failover"). */
const char *acl_perms_str(unsigned perms, char *buf, size_t len);

/* The permission the command argv[0..argc) needs (0: none), and its name as
 * NOPERM says it ("sentinel|failover", lowercase) in name. */
unsigned acl_command_needs(int argc, const char *const *argv, char *name, size_t namelen);

/* HELLO [protover [AUTH username password] [SETNAME clientname]] (argv[0] is
 * HELLO), Redis's grammar. */
struct acl_hello {
	int proto;	  /* 2 or 3; 0 when none was given */
	const char *user; /* AUTH's, or NULL */
	const char *pass;
	size_t pass_len;
	const char *setname; /* or NULL */
};
/* 0 with h set; else -EINVAL with Redis's error words in why ("NOPROTO ...",
 * "ERR Syntax error in HELLO option '...'"). */
int acl_hello_parse(int argc, const char *const *argv, const size_t *lens, struct acl_hello *h,
		    char *why, size_t whylen);

/* Is the given password (not NUL-terminated) the configured one? In constant
 * time over the configured one's length. */
bool acl_secret_eq(const char *conf, const char *given, size_t given_len);

/* Does peer ("ip:port", "[v6]:port", "unix") come from address (a node's IPv4 or
 * IPv6 address)? An IPv4-mapped IPv6 peer (::ffff:a.b.c.d, a dual-stack socket)
 * matches the IPv4 address; a unix socket matches nothing. */
bool acl_peer_is(const char *peer, const char *address);

/* The source a peer's failed logins are counted under: its IPv4 address (also
 * when mapped), the /64 of an IPv6 one (what one host is usually given, so a
 * host cannot make up fresh addresses to start afresh), "unix". */
const char *acl_peer_source(const char *peer, char *buf, size_t len);

#endif
