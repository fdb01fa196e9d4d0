// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Client authentication's pure parts (common/acl.h) and its cluster-file keys:
 * the categories a command needs, `commands = ...`, HELLO's arguments as Redis
 * parses them, the peer-address check, [user] and requirepass in the file. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "common/acl.h"
#include "common/config.h"

static unsigned needs(const char *line, char *name)
{
	static char buf[256];
	const char *argv[8];
	int argc = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *t = strtok(buf, " "); t && argc < 8; t = strtok(NULL, " "))
		argv[argc++] = t;
	return acl_command_needs(argc, argv, name, 96);
}

static void test_command_needs(void **s)
{
	char name[96];

	(void)s;
	assert_int_equal(needs("AUTH x", name), 0);
	assert_int_equal(needs("hello 3 auth u p", name), 0);
	assert_int_equal(needs("QUIT", name), 0);
	assert_int_equal(needs("PROVE x", name), 0);
	assert_int_equal(needs("PING", name), ACL_READ);
	assert_int_equal(needs("SENTINEL get-master-addr-by-name s", name), ACL_READ);
	assert_int_equal(needs("SENTINEL MASTERS", name), ACL_READ);
	assert_int_equal(needs("sentinel config get quorum", name), ACL_READ);
	assert_int_equal(needs("SENTINEL FAILOVER s", name), ACL_FAILOVER);
	assert_string_equal(name, "sentinel|failover");
	assert_int_equal(needs("FLATLINE FAILOVER s", name), ACL_FAILOVER);
	assert_string_equal(name, "flatline|failover");
	assert_int_equal(needs("FLATLINE STATUS", name), ACL_READ);
	assert_int_equal(needs("SENTINEL SET s quorum 2", name), ACL_ADMIN);
	assert_int_equal(needs("SENTINEL CONFIG SET x y", name), ACL_ADMIN);
	assert_int_equal(needs("SENTINEL DEBUG x 1", name), ACL_ADMIN);
	assert_int_equal(needs("SENTINEL RESET *", name), ACL_ADMIN);
	assert_int_equal(needs("SENTINEL made-up", name), ACL_ADMIN);
	assert_int_equal(needs("CLIENT SETNAME x", name), ACL_READ);
	assert_int_equal(needs("CLIENT KILL 1.2.3.4:5", name), ACL_ADMIN);
	assert_string_equal(name, "client|kill");
	assert_int_equal(needs("CLIENT LIST", name), ACL_ADMIN);
	assert_int_equal(needs("SUBSCRIBE +switch-master", name), ACL_READ);
}

static void test_perms_parse(void **s)
{
	unsigned p = 0;
	char why[160], buf[64];

	(void)s;
	assert_int_equal(acl_perms_parse("read", &p, why, sizeof(why)), 0);
	assert_int_equal(p, ACL_READ);
	assert_int_equal(acl_perms_parse(" read|failover ", &p, why, sizeof(why)), 0);
	assert_int_equal(p, ACL_READ | ACL_FAILOVER);
	assert_string_equal(acl_perms_str(p, buf, sizeof(buf)), "read failover");
	assert_int_equal(acl_perms_parse("ALL", &p, why, sizeof(why)), 0);
	assert_int_equal(p, ACL_ALL);
	assert_string_equal(acl_perms_str(p, buf, sizeof(buf)), "all");
	assert_int_equal(acl_perms_parse("+@all", &p, why, sizeof(why)), 0);
	assert_int_equal(p, ACL_ALL);
	assert_int_equal(acl_perms_parse("read,writes", &p, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "'writes'"));
	assert_int_equal(acl_perms_parse(" , ", &p, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "empty"));
}

static int hello(const char *line, struct acl_hello *h, char *why)
{
	static char buf[256];
	const char *argv[10];
	size_t lens[10];
	int argc = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *t = strtok(buf, " "); t && argc < 10; t = strtok(NULL, " ")) {
		lens[argc] = strlen(t);
		argv[argc++] = t;
	}
	return acl_hello_parse(argc, argv, lens, h, why, 160);
}

static void test_hello_parse(void **s)
{
	struct acl_hello h;
	char why[160];

	(void)s;
	assert_int_equal(hello("HELLO", &h, why), 0);
	assert_int_equal(h.proto, 0);
	assert_null(h.user);
	assert_int_equal(hello("HELLO 3 AUTH u pass-word SETNAME app", &h, why), 0);
	assert_int_equal(h.proto, 3);
	assert_string_equal(h.user, "u");
	assert_string_equal(h.pass, "pass-word");
	assert_int_equal(h.pass_len, 9);
	assert_string_equal(h.setname, "app");
	assert_int_equal(hello("HELLO 2 setname a auth u p", &h, why), 0);
	assert_int_equal(h.proto, 2);
	assert_int_equal(hello("HELLO 4", &h, why), -EINVAL);
	assert_string_equal(why, "NOPROTO unsupported protocol version");
	assert_int_equal(hello("HELLO x", &h, why), -EINVAL);
	assert_non_null(strstr(why, "not an integer"));
	assert_int_equal(hello("HELLO 3 AUTH u", &h, why), -EINVAL);
	assert_string_equal(why, "ERR Syntax error in HELLO option 'AUTH'");
	assert_int_equal(hello("HELLO 3 SETNAME", &h, why), -EINVAL);
	assert_int_equal(hello("HELLO 3 FOO", &h, why), -EINVAL);
}

static void test_secret_eq_and_peer(void **s)
{
	(void)s;
	assert_true(acl_secret_eq("0123456789abcdef", "0123456789abcdef", 16));
	assert_false(acl_secret_eq("0123456789abcdef", "0123456789abcdef0", 17));
	assert_false(acl_secret_eq("0123456789abcdef", "0123456789abcde", 15));
	assert_false(acl_secret_eq("", "", 0)); /* nothing configured: nothing matches */
	assert_true(acl_peer_is("127.0.0.1:5000", "127.0.0.1"));
	assert_false(acl_peer_is("127.0.0.2:5000", "127.0.0.1"));
	assert_true(acl_peer_is("[::ffff:10.0.0.1]:5000", "10.0.0.1"));
	assert_true(acl_peer_is("10.0.0.1:5000", "::ffff:10.0.0.1"));
	assert_true(acl_peer_is("[fd00::1]:5000", "fd00:0::1"));
	assert_false(acl_peer_is("[fd00::2]:5000", "fd00::1"));
	assert_false(acl_peer_is("[::1]:5000", "127.0.0.1"));
	assert_false(acl_peer_is("unix", "127.0.0.1"));
	assert_false(acl_peer_is("[]:1", "127.0.0.1"));
	assert_false(acl_peer_is("]:1", "127.0.0.1"));
}

static void test_peer_source(void **s)
{
	char b[64];

	(void)s;
	assert_string_equal(acl_peer_source("10.1.2.3:4000", b, sizeof(b)), "10.1.2.3");
	assert_string_equal(acl_peer_source("[::ffff:10.1.2.3]:4000", b, sizeof(b)), "10.1.2.3");
	/* A host's /64: made-up addresses in it count as one. */
	assert_string_equal(acl_peer_source("[2001:db8:1:2:aaaa::1]:4000", b, sizeof(b)),
			    "2001:db8:1:2::/64");
	assert_string_equal(acl_peer_source("[2001:db8:1:2:bbbb:cccc:dddd:eeee]:1", b, sizeof(b)),
			    "2001:db8:1:2::/64");
	assert_string_equal(acl_peer_source("unix", b, sizeof(b)), "unix");
	assert_string_equal(acl_peer_source("[junk]:1", b, sizeof(b)), "unix");
}

static const char base[] = "[cluster]\nname = t\nsecret = 0123456789abcdef\n"
			   "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
			   "[shard \"s\"]\nnodes = n1\n";

static int load(const char *extra, struct cfg **c, char *err)
{
	char text[2048];

	snprintf(text, sizeof(text), "%s%s", base, extra);
	return cfg_load_string("t.conf", text, c, err, 256);
}

static void test_config_users(void **s)
{
	struct cfg *c = NULL;
	char err[256];

	(void)s;
	assert_int_equal(
	    load("[controller]\nrequirepass = 0123456789abcdefXY\n"
		 "agent_address_check = yes\n"
		 "[user \"app\"]\npassword = app-password-123456\ncommands = read\n"
		 "[user \"ops\"]\npassword = ops-password-123456\ncommands = read failover\n",
		 &c, err),
	    0);
	assert_string_equal(c->controller.requirepass, "0123456789abcdefXY");
	assert_true(c->controller.agent_address_check);
	assert_int_equal(c->nusers, 2);
	assert_int_equal(cfg_find_user(c, "ops")->perms, ACL_READ | ACL_FAILOVER);
	assert_null(cfg_find_user(c, "nobody"));
	cfg_free(c);

	static const struct {
		const char *extra, *want;
	} bad[] = {
	    {"[controller]\nrequirepass = short\n",
	     "t.conf:10: [controller] requirepass: too short"},
	    {"[controller]\nrequirepass =\n", "requirepass: empty"},
	    {"[controller]\nrequirepass = 0123456789abcdef ;x\n", "would cut the secret"},
	    {"[user \"a\"]\ncommands = read\n", "[user \"a\"] password: missing"},
	    {"[user \"a\"]\npassword = app-password-123456\n", "[user \"a\"] commands: missing"},
	    {"[user \"a\"]\npassword = app-password-123456\ncommands = write\n",
	     "unknown command category 'write'"},
	    {"[user \"a\"]\npassword = x\ncommands = read\n", "password: too short"},
	    {"[user \"default\"]\npassword = app-password-123456\n", "requirepass"},
	    {"[user \"a\"]\npassword = app-password-123456\ncommands = read\n[user \"a\"]\n",
	     "user defined twice"},
	    {"[user \"a\"]\nkey = x\n", "[user \"a\"] key: unknown key"},
	    {"[controller]\nagent_address_check = maybe\n", "not a boolean"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = NULL;
		assert_int_not_equal(load(bad[i].extra, &c, err), 0);
		if (!strstr(err, bad[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, bad[i].want);
		assert_null(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_command_needs), cmocka_unit_test(test_perms_parse),
	    cmocka_unit_test(test_hello_parse),	  cmocka_unit_test(test_secret_eq_and_peer),
	    cmocka_unit_test(test_peer_source),	  cmocka_unit_test(test_config_users),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
