// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* DNS UPDATE building checked on the wire bytes with a parser of our own (not ldns's),
 * configuration validation, answer classification, backoff. No network. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <event2/event.h>
#include "controller/dns.h"

#define SECRET "KQqAW9MrA7fHDMEIGVkEGZVnAvLfqjCpEfqJwNOmZNE="

static void good_cfg(struct dns_cfg *c)
{
	dns_cfg_init(c);
	assert_int_equal(dns_cfg_set_server(c, "127.0.0.1:5353"), 0);
	snprintf(c->zone, sizeof(c->zone), "ha.example.");
	snprintf(c->tsig_secret, sizeof(c->tsig_secret), SECRET);
	c->ttl_s = 30;
}

/* ---- a minimal DNS message reader ---- */

struct rd {
	const uint8_t *b;
	size_t len, pos;
};

static unsigned u16(struct rd *r)
{
	assert_true(r->pos + 2 <= r->len);
	r->pos += 2;
	return (unsigned)r->b[r->pos - 2] << 8 | r->b[r->pos - 1];
}

static uint32_t u32(struct rd *r)
{
	uint32_t hi = u16(r);

	return hi << 16 | u16(r);
}

/* Reads a (possibly compressed) name at r->pos into out as "a.b.c.". */
static void name(struct rd *r, char *out, size_t outlen)
{
	size_t p = r->pos, o = 0;
	int jumped = 0, hops = 0;

	for (;;) {
		assert_true(p < r->len);
		uint8_t l = r->b[p];

		if ((l & 0xc0) == 0xc0) {
			assert_true(p + 1 < r->len);
			if (!jumped)
				r->pos = p + 2;
			jumped = 1;
			p = (size_t)(l & 0x3f) << 8 | r->b[p + 1];
			assert_true(++hops < 16);
			continue;
		}
		assert_int_equal(l & 0xc0, 0);
		p++;
		if (!l)
			break;
		assert_true(p + l <= r->len && o + l + 2 < outlen);
		memcpy(out + o, r->b + p, l);
		o += l;
		out[o++] = '.';
		p += l;
	}
	if (!o)
		out[o++] = '.';
	out[o] = '\0';
	if (!jumped)
		r->pos = p;
}

struct rr {
	char name[256];
	unsigned type, class;
	uint32_t ttl;
	unsigned rdlen;
	const uint8_t *rdata;
};

static void read_rr(struct rd *r, struct rr *rr)
{
	name(r, rr->name, sizeof(rr->name));
	rr->type = u16(r);
	rr->class = u16(r);
	rr->ttl = u32(r);
	rr->rdlen = u16(r);
	assert_true(r->pos + rr->rdlen <= r->len);
	rr->rdata = r->b + r->pos;
	r->pos += rr->rdlen;
}

/* Checks the whole message for NAME -> ADDR; returns the update RRs. */
static void check_update(const uint8_t *wire, size_t len, unsigned type, struct rr *del,
			 struct rr *add)
{
	struct rd r = {.b = wire, .len = len};
	char zname[256];

	assert_int_equal(u16(&r), 0x1234); /* id */
	assert_int_equal(u16(&r), 0x2800); /* QR 0, opcode 5 (UPDATE), every other bit 0 */
	assert_int_equal(u16(&r), 1);	   /* ZOCOUNT */
	assert_int_equal(u16(&r), 0);	   /* PRCOUNT */
	assert_int_equal(u16(&r), 2);	   /* UPCOUNT */
	assert_int_equal(u16(&r), 0);	   /* ADCOUNT */
	/* zone section: ZNAME, ZTYPE SOA, ZCLASS IN */
	name(&r, zname, sizeof(zname));
	assert_string_equal(zname, "ha.example.");
	assert_int_equal(u16(&r), 6);
	assert_int_equal(u16(&r), 1);
	/* update section: delete the RRset, then add */
	read_rr(&r, del);
	read_rr(&r, add);
	assert_int_equal(r.pos, len); /* nothing after */

	assert_string_equal(del->name, "cache.ha.example.");
	assert_int_equal(del->type, type);
	assert_int_equal(del->class, 255); /* ANY */
	assert_int_equal(del->ttl, 0);
	assert_int_equal(del->rdlen, 0);

	assert_string_equal(add->name, "cache.ha.example.");
	assert_int_equal(add->type, type);
	assert_int_equal(add->class, 1); /* IN */
}

static void test_update_wire_a(void **state)
{
	static const uint8_t addr[4] = {10, 0, 0, 2};
	struct dns_cfg c;
	struct rr del, add;
	uint8_t *wire = NULL;
	size_t len = 0;

	(void)state;
	good_cfg(&c);
	assert_int_equal(dns_update_wire(&c, "cache.ha.example.", "10.0.0.2", 0x1234, &wire, &len),
			 0);
	check_update(wire, len, 1, &del, &add);
	assert_int_equal(add.ttl, 30);
	assert_int_equal(add.rdlen, 4);
	assert_memory_equal(add.rdata, addr, 4);
	free(wire);

	/* TTL from the configuration, 0 included */
	c.ttl_s = 0;
	assert_int_equal(dns_update_wire(&c, "cache.ha.example.", "10.0.0.2", 0x1234, &wire, &len),
			 0);
	check_update(wire, len, 1, &del, &add);
	assert_int_equal(add.ttl, 0);
	free(wire);
}

static void test_update_wire_aaaa(void **state)
{
	static const uint8_t addr[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	struct dns_cfg c;
	struct rr del, add;
	uint8_t *wire = NULL;
	size_t len = 0;

	(void)state;
	good_cfg(&c);
	c.ttl_s = 1;
	assert_int_equal(dns_update_wire(&c, "cache.ha.example.", "fd00::1", 0x1234, &wire, &len),
			 0);
	check_update(wire, len, 28, &del, &add); /* AAAA in both records */
	assert_int_equal(add.ttl, 1);
	assert_int_equal(add.rdlen, 16);
	assert_memory_equal(add.rdata, addr, 16);
	free(wire);
}

/* The zone apex itself may be the name. */
static void test_update_wire_apex(void **state)
{
	struct dns_cfg c;
	uint8_t *wire = NULL;
	size_t len = 0;
	struct rd r;
	struct rr del, add;
	char z[256];

	(void)state;
	good_cfg(&c);
	assert_int_equal(dns_update_wire(&c, "ha.example.", "192.0.2.1", 7, &wire, &len), 0);
	r = (struct rd){.b = wire, .len = len, .pos = 12};
	name(&r, z, sizeof(z));
	r.pos += 4;
	read_rr(&r, &del);
	read_rr(&r, &add);
	assert_string_equal(del.name, "ha.example.");
	assert_string_equal(add.name, "ha.example.");
	assert_int_equal(r.pos, len);
	free(wire);
}

static void test_update_wire_rejects(void **state)
{
	struct dns_cfg c;
	uint8_t *wire = NULL;
	size_t len = 0;

	(void)state;
	good_cfg(&c);
	assert_int_equal(dns_update_wire(&c, "cache.other.", "10.0.0.2", 1, &wire, &len), -EINVAL);
	assert_int_equal(dns_update_wire(&c, "cache.ha.example", "10.0.0.2", 1, &wire, &len),
			 -EINVAL);
	assert_int_equal(dns_update_wire(&c, "xha.example.", "10.0.0.2", 1, &wire, &len), -EINVAL);
	assert_int_equal(dns_update_wire(&c, "cache.ha.example.", "10.0.0", 1, &wire, &len),
			 -EINVAL);
	assert_int_equal(dns_update_wire(&c, "cache.ha.example.", "cache", 1, &wire, &len),
			 -EINVAL);
	assert_null(wire);
}

static void test_cfg_validate_table(void **state)
{
	static const struct {
		const char *key, *val, *msg;
	} cases[] = {
	    {"server", "", "server: not set"},
	    {"server", "dns.example",
	     "server: 'dns.example' is not an IP address (ldns sends to addresses, not host "
	     "names)"},
	    {"zone", "", "zone: not set"},
	    {"zone", "ha.example",
	     "zone: 'ha.example' is not absolute: end it with a dot ('ha.example.')"},
	    {"zone", "ha..example.", "zone: 'ha..example.' is not a valid domain name"},
	    {"tsig_name", "", "tsig_name: not set"},
	    {"tsig_algorithm", "hmac-sha384",
	     "tsig_algorithm: ldns 1.8.3 cannot sign hmac-sha384; use hmac-sha256 or "
	     "hmac-sha512"},
	    {"tsig_algorithm", "HMAC-SHA384.",
	     "tsig_algorithm: ldns 1.8.3 cannot sign hmac-sha384; use hmac-sha256 or "
	     "hmac-sha512"},
	    {"tsig_algorithm", "hmac-md5",
	     "tsig_algorithm: 'hmac-md5' is not supported; use hmac-sha256, hmac-sha512 or "
	     "hmac-sha1"},
	    {"tsig_algorithm", "hmac-sha256x",
	     "tsig_algorithm: 'hmac-sha256x' is not supported; use hmac-sha256, hmac-sha512 "
	     "or hmac-sha1"},
	    {"tsig_secret", "", "tsig_secret: not set (the key's base64 secret)"},
	    {"tsig_secret", "not base64!",
	     "tsig_secret: not valid base64 (copy it as tsig-keygen prints it)"},
	    {"tsig_secret", "KQqAW9MrA7fHDMEIGVkEGZVnAvLfqjCpEfqJwNOmZNE",
	     "tsig_secret: not valid base64 (copy it as tsig-keygen prints it)"},
	    {"tsig_secret", "KQq=AW9M",
	     "tsig_secret: not valid base64 (copy it as tsig-keygen prints it)"},
	    {"tsig_secret",
	     "====", "tsig_secret: not valid base64 (copy it as tsig-keygen prints it)"},
	};
	char err[DNS_ERR_MAX];
	struct dns_cfg c;

	(void)state;
	good_cfg(&c);
	assert_int_equal(dns_cfg_validate(&c, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		good_cfg(&c);
		if (!strcmp(cases[i].key, "server"))
			snprintf(c.server, sizeof(c.server), "%s", cases[i].val);
		else if (!strcmp(cases[i].key, "zone"))
			snprintf(c.zone, sizeof(c.zone), "%s", cases[i].val);
		else if (!strcmp(cases[i].key, "tsig_name"))
			snprintf(c.tsig_name, sizeof(c.tsig_name), "%s", cases[i].val);
		else if (!strcmp(cases[i].key, "tsig_algorithm"))
			snprintf(c.tsig_algorithm, sizeof(c.tsig_algorithm), "%s", cases[i].val);
		else
			snprintf(c.tsig_secret, sizeof(c.tsig_secret), "%s", cases[i].val);
		err[0] = '\0';
		assert_int_equal(dns_cfg_validate(&c, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, cases[i].msg);
	}

	/* numbers */
	good_cfg(&c);
	c.port = 0;
	assert_int_equal(dns_cfg_validate(&c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "server: port 0 is not in 1-65535");
	good_cfg(&c);
	c.ttl_s = 0x80000000u;
	assert_int_equal(dns_cfg_validate(&c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "ttl: 2147483648 is above 2147483647");
	good_cfg(&c);
	c.timeout_ms = 0;
	assert_int_equal(dns_cfg_validate(&c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "timeout_ms: must be at least 1");
	good_cfg(&c);
	c.retry_min_ms = 6000;
	assert_int_equal(dns_cfg_validate(&c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "retry_min_ms: must be between 1 and retry_max_ms (5000)");

	/* every accepted algorithm, in any case, with or without the final dot */
	static const char *const ok[] = {"hmac-sha256", "hmac-sha512", "hmac-sha1", "HMAC-SHA256",
					 "hmac-sha512."};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		good_cfg(&c);
		snprintf(c.tsig_algorithm, sizeof(c.tsig_algorithm), "%s", ok[i]);
		assert_int_equal(dns_cfg_validate(&c, err, sizeof(err)), 0);
	}
	/* IPv6 server, relative key name (ldns makes it absolute) */
	good_cfg(&c);
	assert_int_equal(dns_cfg_set_server(&c, "[::1]:53"), 0);
	snprintf(c.tsig_name, sizeof(c.tsig_name), "flatline-key.ha");
	assert_int_equal(dns_cfg_validate(&c, err, sizeof(err)), 0);
}

static void test_name_validate(void **state)
{
	char err[DNS_ERR_MAX];
	struct dns_cfg c;

	(void)state;
	good_cfg(&c);
	assert_int_equal(dns_name_validate(&c, "cache.ha.example.", err, sizeof(err)), 0);
	assert_int_equal(dns_name_validate(&c, "a.b.ha.example.", err, sizeof(err)), 0);
	assert_int_equal(dns_name_validate(&c, "ha.example.", err, sizeof(err)), 0);
	assert_int_equal(dns_name_validate(&c, "CACHE.HA.EXAMPLE.", err, sizeof(err)), 0);
	assert_int_equal(dns_name_validate(&c, "cache.other.", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "dns_name: 'cache.other.' is not inside zone 'ha.example.'");
	assert_int_equal(dns_name_validate(&c, "xha.example.", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "dns_name: 'xha.example.' is not inside zone 'ha.example.'");
	assert_int_equal(dns_name_validate(&c, "example.", err, sizeof(err)), -EINVAL);
	assert_int_equal(dns_name_validate(&c, "cache.ha.example", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "dns_name: 'cache.ha.example' is not absolute: end it with a dot "
				 "('cache.ha.example.')");
	assert_int_equal(dns_name_validate(&c, "", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "dns_name: not set");
}

static void test_set_server(void **state)
{
	struct dns_cfg c;

	(void)state;
	dns_cfg_init(&c);
	assert_int_equal(dns_cfg_set_server(&c, "127.0.0.1"), 0);
	assert_string_equal(c.server, "127.0.0.1");
	assert_int_equal(c.port, 53);
	assert_int_equal(dns_cfg_set_server(&c, "10.1.2.3:5353"), 0);
	assert_string_equal(c.server, "10.1.2.3");
	assert_int_equal(c.port, 5353);
	assert_int_equal(dns_cfg_set_server(&c, "[2001:db8::1]:1053"), 0);
	assert_string_equal(c.server, "2001:db8::1");
	assert_int_equal(c.port, 1053);
	dns_cfg_init(&c);
	assert_int_equal(dns_cfg_set_server(&c, "::1"), 0);
	assert_string_equal(c.server, "::1");
	assert_int_equal(c.port, 53);
	assert_int_equal(dns_cfg_set_server(&c, "[::1]"), 0);
	assert_int_equal(c.port, 53);
	assert_int_equal(dns_cfg_set_server(&c, "ns1.example:53"), -EINVAL);
	assert_int_equal(dns_cfg_set_server(&c, "127.0.0.1:0"), -EINVAL);
	assert_int_equal(dns_cfg_set_server(&c, "127.0.0.1:65536"), -EINVAL);
	assert_int_equal(dns_cfg_set_server(&c, "127.0.0.1:"), -EINVAL);
	assert_int_equal(dns_cfg_set_server(&c, "[::1]x"), -EINVAL);
	assert_int_equal(dns_cfg_set_server(&c, ""), -EINVAL);
}

static void test_classify(void **state)
{
	static const struct {
		int rcode, tsig_error;
		bool verified;
		enum dns_status st;
		const char *name;
	} cases[] = {
	    {0, 0, true, DNS_OK, "NOERROR"},
	    {0, 0, false, DNS_CONFIG_ERROR, "NOERROR"}, /* answer's TSIG did not verify */
	    {5, 0, true, DNS_CONFIG_ERROR, "REFUSED"},
	    {5, 0, false, DNS_CONFIG_ERROR, "REFUSED"},
	    {9, 0, true, DNS_CONFIG_ERROR, "NOTAUTH"},
	    {9, 17, false, DNS_CONFIG_ERROR, "BADKEY"},
	    {9, 16, false, DNS_CONFIG_ERROR, "BADSIG"},
	    {9, 18, false, DNS_CONFIG_ERROR, "BADTIME"},
	    {10, 0, true, DNS_CONFIG_ERROR, "NOTZONE"},
	    {4, 0, true, DNS_CONFIG_ERROR, "NOTIMP"},
	    {2, 0, true, DNS_TRANSIENT, "SERVFAIL"},
	    {1, 0, true, DNS_FAILED, "FORMERR"},
	    {3, 0, true, DNS_FAILED, "NXDOMAIN"},
	    {8, 0, true, DNS_FAILED, "NXRRSET"},
	    {-1, 0, false, DNS_TRANSIENT, "none"}, /* no answer */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(
		    dns_classify(cases[i].rcode, cases[i].tsig_error, cases[i].verified),
		    cases[i].st);
		assert_string_equal(dns_rcode_name(cases[i].rcode, cases[i].tsig_error),
				    cases[i].name);
	}
}

static void test_backoff(void **state)
{
	static const uint32_t want[] = {100, 100, 200, 400, 800, 1600, 3200, 5000, 5000};
	struct dns_cfg c;

	(void)state;
	dns_cfg_init(&c);
	for (uint32_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(dns_backoff_ms(&c, i), want[i]);
	assert_int_equal(dns_backoff_ms(&c, 1000000), 5000);
	c.retry_min_ms = 7;
	c.retry_max_ms = 7;
	assert_int_equal(dns_backoff_ms(&c, 5), 7);
}

static void no_cb(const struct dns_result *r, void *ctx)
{
	(void)r;
	(void)ctx;
	fail();
}

/* Start, refuse bad arguments synchronously, stop: no message is sent. */
static void test_updater_lifecycle(void **state)
{
	struct event_base *base = event_base_new();
	struct dns_updater *u = NULL;
	struct dns_cfg c;

	(void)state;
	assert_non_null(base);
	good_cfg(&c);
	snprintf(c.tsig_algorithm, sizeof(c.tsig_algorithm), "hmac-sha384");
	assert_int_equal(dns_updater_new(&u, base, &c, no_cb, NULL), -EINVAL);
	assert_null(u);
	good_cfg(&c);
	assert_int_equal(dns_updater_new(&u, base, &c, no_cb, NULL), 0);
	assert_int_equal(dns_update(u, "cache.other.", "10.0.0.1"), -EINVAL);
	assert_int_equal(dns_update(u, "cache.ha.example.", "10.0.0.300"), -EINVAL);
	assert_int_equal(dns_query(u, "cache.ha.example", "10.0.0.1"), -EINVAL);
	assert_false(dns_update_pending(u, "cache.ha.example."));
	assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 0);
	dns_updater_free(u);
	dns_updater_free(NULL);
	event_base_free(base);
}

/* Answers read back from wire bytes, as the worker reads the server's (the fuzz
 * harness's seeds, tests/fuzz/corpus/dns/, minus their first flag byte). */
static void read_seed(const char *name, uint8_t *buf, size_t *len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "tests/fuzz/corpus/dns/%s", name);
	f = fopen(path, "rb");
	assert_non_null(f);
	*len = fread(buf, 1, 512, f);
	fclose(f);
	assert_true(*len > 1);
}

static void test_parse_answer(void **state)
{
	struct dns_cfg c;
	struct dns_result r;
	uint8_t buf[512];
	size_t len;

	(void)state;
	good_cfg(&c);
	read_seed("query-match", buf, &len);
	assert_int_equal(dns_parse_answer(&c, DNS_OP_QUERY, "cache.ha.example.", "10.77.0.2",
					  buf + 1, len - 1, true, &r),
			 0);
	assert_int_equal(r.status, DNS_OK);
	assert_int_equal(r.naddrs, 1);
	assert_string_equal(r.addrs[0], "10.77.0.2");
	assert_true(r.match);
	/* The same answer for another wanted address: no match. */
	assert_int_equal(dns_parse_answer(&c, DNS_OP_QUERY, "cache.ha.example.", "10.77.0.3",
					  buf + 1, len - 1, true, &r),
			 0);
	assert_false(r.match);
	read_seed("query-two", buf, &len);
	dns_parse_answer(&c, DNS_OP_QUERY, "cache.ha.example.", "10.77.0.2", buf + 1, len - 1, true,
			 &r);
	assert_int_equal(r.naddrs, 2);
	assert_false(r.match); /* the RRset must be exactly the primary */
	read_seed("query-nxdomain", buf, &len);
	dns_parse_answer(&c, DNS_OP_QUERY, "cache.ha.example.", "10.77.0.2", buf + 1, len - 1, true,
			 &r);
	assert_int_equal(r.status, DNS_OK);
	assert_int_equal(r.naddrs, 0);
	read_seed("update-refused", buf, &len);
	dns_parse_answer(&c, DNS_OP_UPDATE, "cache.ha.example.", "10.77.0.2", buf + 1, len - 1,
			 true, &r);
	assert_int_equal(r.status, DNS_CONFIG_ERROR);
	assert_string_equal(r.rcode_name, "REFUSED");
	assert_non_null(strstr(r.error, "update-policy"));
	read_seed("update-badsig", buf, &len);
	dns_parse_answer(&c, DNS_OP_UPDATE, "cache.ha.example.", "10.77.0.2", buf + 1, len - 1,
			 false, &r);
	assert_int_equal(r.status, DNS_CONFIG_ERROR);
	assert_string_equal(r.rcode_name, "BADSIG");
	read_seed("truncated", buf, &len);
	assert_int_equal(dns_parse_answer(&c, DNS_OP_QUERY, "cache.ha.example.", "10.77.0.2",
					  buf + 1, len - 1, true, &r),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_update_wire_a),
	    cmocka_unit_test(test_update_wire_aaaa),
	    cmocka_unit_test(test_update_wire_apex),
	    cmocka_unit_test(test_update_wire_rejects),
	    cmocka_unit_test(test_cfg_validate_table),
	    cmocka_unit_test(test_name_validate),
	    cmocka_unit_test(test_set_server),
	    cmocka_unit_test(test_classify),
	    cmocka_unit_test(test_backoff),
	    cmocka_unit_test(test_updater_lifecycle),
	    cmocka_unit_test(test_parse_answer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
