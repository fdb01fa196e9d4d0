// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Client authentication on the controller's socket (ctl_client_auth.c) and the
 * limits every connection has (ctl_conn.c, ctl_limits.c), on fake connections:
 * NOAUTH and NOPERM, AUTH and HELLO ... AUTH, failed logins answered at their
 * turn per source address, the cluster secret without client authentication;
 * the output buffer limits per class, the rejection log rate, and the RESP2/RESP3
 * reply types. */
#include "ctl_harness.h"

static const char auth_cluster[] =
    "[cluster]\nname = t\nsecret = s3cret-s3cret-s3cret\n"
    "[controller]\nrequirepass = the-default-password\n"
    "[user \"reader\"]\npassword = reader-password-16\ncommands = read\n"
    "[user \"ops\"]\npassword = ops-password-16byte\ncommands = read failover\n"
    "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
    "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6380\n"
    "[shard \"s\"]\nnodes = n1 n2\n";

static int setup_auth(void **state)
{
	(void)state;
	C = th_new(auth_cluster);
	return 0;
}

static bool may_ok;

static void check(struct ctl_conn *k, struct resp_cmd *cmd)
{
	may_ok = ctl_client_may(k, cmd);
}

/* Would the dispatcher run line on k? (If not, k has been answered.) */
static bool may(struct ctl_conn *k, const char *line)
{
	may_ok = false;
	th_run(k, check, line);
	return may_ok;
}

static void test_noauth_then_login(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");

	(void)state;
	assert_true(ctl_client_auth_on(C));
	assert_false(may(k, "PING"));
	assert_string_equal(th_out(k), "-NOAUTH Authentication required.\r\n");
	assert_false(may(k, "SENTINEL get-master-addr-by-name s"));
	th_out(k);
	assert_true(may(k, "AUTH x")); /* AUTH, HELLO and QUIT need none */
	assert_true(may(k, "HELLO 3 AUTH a b"));
	th_run(k, ctl_client_hello, "HELLO 3");
	assert_memory_equal(th_out(k), "-NOAUTH HELLO must be called with the client already", 52);
	th_run(k, ctl_on_auth, "AUTH the-default-password");
	assert_string_equal(th_out(k), "+OK\r\n");
	assert_true(k->flags & CTL_C_LOGIN);
	assert_true(k->flags & CTL_C_AUTH); /* the default user may change state */
	assert_string_equal(k->user, "default");
	assert_true(may(k, "SENTINEL SET s quorum 1"));
	assert_string_equal(th_out(k), "");
}

static void test_user_permissions(void **state)
{
	struct ctl_conn *r = th_conn(C, "10.1.0.1:5000"), *o = th_conn(C, "10.1.0.2:5000");

	(void)state;
	th_run(r, ctl_on_auth, "AUTH reader reader-password-16");
	assert_string_equal(th_out(r), "+OK\r\n");
	assert_false(r->flags & CTL_C_AUTH);
	assert_true(may(r, "SENTINEL masters"));
	assert_false(may(r, "SENTINEL failover s"));
	assert_string_equal(th_out(r), "-NOPERM this user has no permissions to run the "
				       "'sentinel|failover' command\r\n");
	/* HELLO 3 AUTH: logged in, and RESP3 from the answer on. */
	o->flags &= ~CTL_C_RESP3;
	th_run(o, ctl_client_hello, "HELLO 3 AUTH ops ops-password-16byte SETNAME tool");
	assert_memory_equal(th_out(o), "%6\r\n$6\r\nserver\r\n$5\r\nredis\r\n", 27);
	assert_true(o->flags & CTL_C_RESP3);
	assert_true(o->flags & CTL_C_LOGIN);
	assert_string_equal(o->name, "tool");
	assert_true(may(o, "SENTINEL failover s"));
	assert_false(may(o, "SENTINEL SET s quorum 1"));
	assert_memory_equal(th_out(o), "-NOPERM", 7);
}

/* An address that failed gets every answer at its turn, right password or wrong,
 * whatever connection it comes on; another address is answered at once. */
static void test_failed_logins_wait_their_turn(void **state)
{
	struct ctl_conn *a = th_conn(C, "10.2.0.1:5000"), *b = th_conn(C, "10.2.0.1:5001");
	struct ctl_conn *other = th_conn(C, "10.3.0.1:5000");

	(void)state;
	th_run(a, ctl_on_auth, "AUTH reader wrong-password-here");
	assert_string_equal(th_out(a),
			    "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	assert_true(a->flags & CTL_C_PENALTY); /* written, held until its turn */
	assert_true(a->flags & CTL_C_WAITING);
	assert_false(a->flags & CTL_C_LOGIN);
	assert_non_null(a->resume);
	assert_true(evtimer_pending(a->resume, NULL));
	th_run(b, ctl_on_auth, "AUTH reader reader-password-16");
	assert_string_equal(th_out(b), "+OK\r\n");
	assert_true(b->flags & CTL_C_LOGIN);
	assert_true(b->flags & CTL_C_PENALTY); /* right, but at its turn */
	th_run(other, ctl_on_auth, "AUTH reader reader-password-16");
	assert_string_equal(th_out(other), "+OK\r\n");
	assert_false(other->flags & CTL_C_PENALTY);
	/* The turn comes: reading and writing on again. */
	ctl_conn_on_resume(-1, EV_TIMEOUT, a);
	assert_false(a->flags & (CTL_C_PENALTY | CTL_C_WAITING));
}

/* Without requirepass or a [user]: every command as before, and AUTH with the
 * cluster secret allows changes. */
static void test_cluster_secret(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");

	(void)state;
	assert_false(ctl_client_auth_on(C));
	assert_true(may(k, "SENTINEL SET s quorum 1"));
	th_run(k, ctl_on_auth, "AUTH not-the-secret");
	assert_memory_equal(th_out(k), "-WRONGPASS", 10);
	assert_false(k->flags & CTL_C_AUTH);
	k = th_conn(C, "10.1.0.9:5000");
	th_run(k, ctl_on_auth, "AUTH s3cret-s3cret-s3cret");
	assert_string_equal(th_out(k), "+OK\r\n");
	assert_true(k->flags & CTL_C_AUTH);
	th_run(k, ctl_on_auth, "AUTH a b c");
	assert_string_equal(th_out(k), "-ERR wrong number of arguments for 'auth' command\r\n");
}

static void fill(struct ctl_conn *k, size_t n)
{
	static char chunk[1 << 16];
	struct evbuffer *o = bufferevent_get_output(k->bev);

	for (size_t i = 0; i < n; i += sizeof(chunk))
		evbuffer_add(o, chunk, n - i < sizeof(chunk) ? n - i : sizeof(chunk));
}

static void test_output_limits(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.4.0.1:5000"), *p = th_conn(C, "10.4.0.2:5000");

	(void)state;
	/* normal: soft 4 MB for 10 s, hard 16 MB */
	fill(k, (4u << 20) + 1);
	assert_false(ctl_conn_over_limit(k));
	assert_true(k->soft_since_ms > 0);
	k->soft_since_ms = fl_mono_ms() - 9000;
	assert_false(ctl_conn_over_limit(k));
	k->soft_since_ms = fl_mono_ms() - 11000;
	assert_true(ctl_conn_over_limit(k));
	th_out(k);
	assert_false(ctl_conn_over_limit(k));
	assert_int_equal(k->soft_since_ms, 0);
	fill(k, (16u << 20) + 1);
	assert_true(ctl_conn_over_limit(k));
	/* pubsub: soft 2 MB for 60 s, hard 8 MB */
	p->flags |= CTL_C_PUBSUB;
	fill(p, (2u << 20) + 1);
	assert_false(ctl_conn_over_limit(p));
	p->soft_since_ms = fl_mono_ms() - 11000;
	assert_false(ctl_conn_over_limit(p));
	p->soft_since_ms = fl_mono_ms() - 61000;
	assert_true(ctl_conn_over_limit(p));
	th_out(p);
	fill(p, CTL_PUBSUB_MAX_OUT + 1);
	assert_true(ctl_conn_over_limit(p));
}

/* Client authentication on: one not logged in is closed past 64 KB unread. */
static void test_output_limit_before_login(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.4.0.1:5000");

	(void)state;
	fill(k, (64u << 10) + 1);
	assert_true(ctl_conn_over_limit(k));
	k->flags |= CTL_C_LOGIN;
	assert_false(ctl_conn_over_limit(k));
}

static void test_log_rate_per_address(void **state)
{
	unsigned supp = 99;

	(void)state;
	assert_true(ctl_log_allowed(C, "10.5.0.1:1000", &supp));
	assert_int_equal(supp, 0);
	assert_false(ctl_log_allowed(C, "10.5.0.1:1001", &supp)); /* the same address */
	assert_false(ctl_log_allowed(C, "10.5.0.1:1002", &supp));
	assert_true(ctl_log_allowed(C, "[fd00::77]:1000", &supp));
	usleep(1050 * 1000);
	assert_true(ctl_log_allowed(C, "10.5.0.1:1003", &supp));
	assert_int_equal(supp, 2);
	ctl_fit_clients(C);
	assert_true(ctl_max_clients(C) >= 16 && ctl_max_clients(C) <= CTL_MAX_CLIENTS);
}

static void test_reply_types(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");
	struct evbuffer *o = bufferevent_get_output(k->bev);

	(void)state;
	ctl_reply_map(k, o, 2);
	ctl_reply_null(k, o, true);
	ctl_reply_null(k, o, false);
	ctl_reply_push(k, o, 3);
	assert_string_equal(th_out(k), "*4\r\n*-1\r\n$-1\r\n*3\r\n");
	k->flags |= CTL_C_RESP3;
	ctl_reply_map(k, o, 2);
	ctl_reply_null(k, o, true);
	ctl_reply_null(k, o, false);
	ctl_reply_push(k, o, 3);
	assert_string_equal(th_out(k), "%2\r\n_\r\n_\r\n>3\r\n");
}

/* A fatal error: answered, closing, reading off, counted as a rejection. */
static void test_fatal(void **state)
{
	struct ctl_conn *k = th_conn(C, "10.1.0.1:5000");

	(void)state;
	ctl_conn_fatal(k, "ERR no");
	assert_string_equal(th_out(k), "-ERR no\r\n");
	assert_true(k->flags & CTL_C_CLOSING);
	assert_int_equal(C->m.rejected, 1);
	ctl_conn_free(k);
	assert_null(C->conns);
	assert_int_equal(ctl_conn_count(C), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_noauth_then_login, setup_auth, th_teardown),
	    cmocka_unit_test_setup_teardown(test_user_permissions, setup_auth, th_teardown),
	    cmocka_unit_test_setup_teardown(test_failed_logins_wait_their_turn, setup_auth,
					    th_teardown),
	    cmocka_unit_test_setup_teardown(test_cluster_secret, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_output_limits, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_output_limit_before_login, setup_auth,
					    th_teardown),
	    cmocka_unit_test_setup_teardown(test_log_rate_per_address, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_reply_types, th_setup, th_teardown),
	    cmocka_unit_test_setup_teardown(test_fatal, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
