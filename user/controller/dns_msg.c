// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* DNS, the parts without I/O: the [dns] configuration and its checks, the
 * RFC 2136 UPDATE and the read-back query as ldns packets (dns_update_wire), and
 * what an answer's RCODE and TSIG error mean (dns_classify, dns_rcode_name), with
 * the retry backoff. dns.c sends them from its worker thread. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ldns/ldns.h>
#include "common/backoff.h"
#include "controller/dns.h"
#include "controller/dns_internal.h"

/* ---- configuration ---- */

void dns_cfg_init(struct dns_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->port = 53;
	snprintf(cfg->tsig_name, sizeof(cfg->tsig_name), "flatline");
	snprintf(cfg->tsig_algorithm, sizeof(cfg->tsig_algorithm), "hmac-sha256");
	cfg->ttl_s = 1;
	cfg->check_ms = 10000;
	cfg->timeout_ms = 1000;
	cfg->retry_min_ms = 100;
	cfg->retry_max_ms = 5000;
}

int dns_cfg_set_server(struct dns_cfg *cfg, const char *hostport)
{
	char host[DNS_ADDR_MAX];
	const char *port = NULL, *colon;
	unsigned char buf[16];
	size_t n;

	if (hostport[0] == '[') {
		const char *end = strchr(hostport, ']');

		if (!end || (end[1] && end[1] != ':'))
			return -EINVAL;
		n = (size_t)(end - hostport - 1);
		port = end[1] ? end + 2 : NULL;
		if (n >= sizeof(host))
			return -EINVAL;
		memcpy(host, hostport + 1, n);
		host[n] = '\0';
	} else if ((colon = strchr(hostport, ':')) && !strchr(colon + 1, ':')) {
		n = (size_t)(colon - hostport); /* IPv4:port */
		if (n >= sizeof(host))
			return -EINVAL;
		memcpy(host, hostport, n);
		host[n] = '\0';
		port = colon + 1;
	} else {
		if (strlen(hostport) >= sizeof(host))
			return -EINVAL;
		snprintf(host, sizeof(host), "%s", hostport); /* IPv4 or bare IPv6 */
	}
	if (inet_pton(AF_INET, host, buf) != 1 && inet_pton(AF_INET6, host, buf) != 1)
		return -EINVAL;
	if (port) {
		char *end;
		long p;

		errno = 0;
		p = strtol(port, &end, 10);
		if (errno || end == port || *end || p < 1 || p > 65535)
			return -EINVAL;
		cfg->port = (int)p;
	}
	snprintf(cfg->server, sizeof(cfg->server), "%s", host);
	return 0;
}

/* "hmac-sha256." for any accepted spelling (case, final dot), else NULL. */
const char *alg_canonical(const char *alg)
{
	static const char *const ok[] = {"hmac-sha256.", "hmac-sha512.", "hmac-sha1."};
	size_t n = strlen(alg);

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t m = strlen(ok[i]);

		if ((n == m || n == m - 1) && !strncasecmp(alg, ok[i], n))
			return ok[i];
	}
	return NULL;
}

/* Strict base64: the alphabet, '=' only as the last one or two characters, whole
 * quartets, at least one byte. Returns the decoded length or -1. */
static int b64_len(const char *s)
{
	size_t n = strlen(s), pad = 0;

	if (n == 0 || n % 4)
		return -1;
	if (s[n - 1] == '=')
		pad = s[n - 2] == '=' ? 2 : 1;
	for (size_t i = 0; i < n - pad; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '+' && s[i] != '/')
			return -1;
	if (n / 4 * 3 - pad == 0)
		return -1;
	return (int)(n / 4 * 3 - pad);
}

/* Absolute, syntactically valid domain name. Writes a reason to err. */
static int check_dname(const char *key, const char *v, char *err, size_t errlen)
{
	size_t n = strlen(v);
	ldns_rdf *d;

	if (!n) {
		snprintf(err, errlen, "%s: not set", key);
		return -EINVAL;
	}
	if (v[n - 1] != '.') {
		snprintf(err, errlen, "%s: '%s' is not absolute: end it with a dot ('%s.')", key, v,
			 v);
		return -EINVAL;
	}
	d = n > 1 ? ldns_dname_new_frm_str(v) : NULL;
	if (!d || strstr(v, "..")) {
		ldns_rdf_deep_free(d);
		snprintf(err, errlen, "%s: '%s' is not a valid domain name", key, v);
		return -EINVAL;
	}
	ldns_rdf_deep_free(d);
	return 0;
}

int dns_cfg_validate(const struct dns_cfg *cfg, char *err, size_t errlen)
{
	unsigned char buf[16];
	ldns_rdf *key;
	int rc;

	if (!cfg->server[0]) {
		snprintf(err, errlen, "server: not set");
		return -EINVAL;
	}
	if (inet_pton(AF_INET, cfg->server, buf) != 1 &&
	    inet_pton(AF_INET6, cfg->server, buf) != 1) {
		snprintf(
		    err, errlen,
		    "server: '%s' is not an IP address (ldns sends to addresses, not host names)",
		    cfg->server);
		return -EINVAL;
	}
	if (cfg->port < 1 || cfg->port > 65535) {
		snprintf(err, errlen, "server: port %d is not in 1-65535", cfg->port);
		return -EINVAL;
	}
	rc = check_dname("zone", cfg->zone, err, errlen);
	if (rc)
		return rc;
	if (!cfg->tsig_name[0]) {
		snprintf(err, errlen, "tsig_name: not set");
		return -EINVAL;
	}
	key = ldns_dname_new_frm_str(cfg->tsig_name);
	if (!key || strstr(cfg->tsig_name, "..")) {
		ldns_rdf_deep_free(key);
		snprintf(err, errlen, "tsig_name: '%s' is not a valid key name", cfg->tsig_name);
		return -EINVAL;
	}
	ldns_rdf_deep_free(key);
	if (!strncasecmp(cfg->tsig_algorithm, "hmac-sha384", 11) &&
	    (!cfg->tsig_algorithm[11] || !strcmp(cfg->tsig_algorithm + 11, "."))) {
		/* ldns 1.8.3's digest table spells it "hmac-shac384.": signing fails. */
		snprintf(err, errlen,
			 "tsig_algorithm: ldns 1.8.3 cannot sign hmac-sha384; use hmac-sha256 or "
			 "hmac-sha512");
		return -EINVAL;
	}
	if (!alg_canonical(cfg->tsig_algorithm)) {
		snprintf(err, errlen,
			 "tsig_algorithm: '%s' is not supported; use hmac-sha256, hmac-sha512 or "
			 "hmac-sha1",
			 cfg->tsig_algorithm);
		return -EINVAL;
	}
	if (!cfg->tsig_secret[0]) {
		snprintf(err, errlen, "tsig_secret: not set (the key's base64 secret)");
		return -EINVAL;
	}
	if (b64_len(cfg->tsig_secret) < 0) {
		snprintf(err, errlen,
			 "tsig_secret: not valid base64 (copy it as tsig-keygen prints it)");
		return -EINVAL;
	}
	if (cfg->ttl_s > 2147483647u) {
		snprintf(err, errlen, "ttl: %u is above 2147483647", cfg->ttl_s);
		return -EINVAL;
	}
	if (!cfg->timeout_ms) {
		snprintf(err, errlen, "timeout_ms: must be at least 1");
		return -EINVAL;
	}
	if (!cfg->retry_min_ms || cfg->retry_min_ms > cfg->retry_max_ms) {
		snprintf(err, errlen, "retry_min_ms: must be between 1 and retry_max_ms (%u)",
			 cfg->retry_max_ms);
		return -EINVAL;
	}
	return 0;
}

int dns_name_validate(const struct dns_cfg *cfg, const char *name, char *err, size_t errlen)
{
	ldns_rdf *n, *z;
	bool inside;
	int rc;

	rc = check_dname("dns_name", name, err, errlen);
	if (rc)
		return rc;
	n = ldns_dname_new_frm_str(name);
	z = ldns_dname_new_frm_str(cfg->zone);
	inside = n && z && (!ldns_dname_compare(n, z) || ldns_dname_is_subdomain(n, z));
	ldns_rdf_deep_free(n);
	ldns_rdf_deep_free(z);
	if (!inside) {
		snprintf(err, errlen, "dns_name: '%s' is not inside zone '%s'", name, cfg->zone);
		return -EINVAL;
	}
	return 0;
}

/* ---- messages ---- */

/* Address family of addr (AF_INET / AF_INET6), 0 if it is neither. */
int addr_family(const char *addr)
{
	unsigned char buf[16];

	if (inet_pton(AF_INET, addr, buf) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, addr, buf) == 1)
		return AF_INET6;
	return 0;
}

/* The UPDATE as an ldns packet, unsigned. NULL on a bad name/address or no memory. */
ldns_pkt *update_pkt(const struct dns_cfg *cfg, const char *name, const char *addr, uint16_t id)
{
	int fam = addr_family(addr);
	ldns_rr_type type = fam == AF_INET6 ? LDNS_RR_TYPE_AAAA : LDNS_RR_TYPE_A;
	ldns_rdf *zone = NULL, *owner = NULL, *rdata = NULL;
	ldns_rr *del = NULL, *add = NULL;
	ldns_rr_list *up = NULL;
	ldns_pkt *p = NULL;

	if (!fam)
		return NULL;
	zone = ldns_dname_new_frm_str(cfg->zone);
	owner = ldns_dname_new_frm_str(name);
	rdata = ldns_rdf_new_frm_str(fam == AF_INET6 ? LDNS_RDF_TYPE_AAAA : LDNS_RDF_TYPE_A, addr);
	del = ldns_rr_new();
	add = ldns_rr_new();
	up = ldns_rr_list_new();
	if (!zone || !owner || !rdata || !del || !add || !up)
		goto cleanup;

	/* RFC 2136 2.5.2: delete an RRset = NAME, TTL 0, class ANY, the type, no rdata. */
	ldns_rr_set_owner(del, ldns_rdf_clone(owner));
	ldns_rr_set_ttl(del, 0);
	ldns_rr_set_class(del, LDNS_RR_CLASS_ANY);
	ldns_rr_set_type(del, type);
	/* 2.5.1: add to an RRset. */
	ldns_rr_set_owner(add, owner);
	owner = NULL;
	ldns_rr_set_ttl(add, cfg->ttl_s);
	ldns_rr_set_class(add, LDNS_RR_CLASS_IN);
	ldns_rr_set_type(add, type);
	ldns_rr_push_rdf(add, rdata);
	rdata = NULL;
	if (!ldns_rr_list_push_rr(up, del))
		goto cleanup;
	del = NULL;
	if (!ldns_rr_list_push_rr(up, add))
		goto cleanup;
	add = NULL;

	p = ldns_update_pkt_new(zone, LDNS_RR_CLASS_IN, NULL, up, NULL); /* takes zone */
	zone = NULL;
	if (p) {
		ldns_pkt_set_id(p, id);
		ldns_pkt_set_rd(p, false); /* 2.2: every flag but QR is zero in an UPDATE */
	}
cleanup:
	ldns_rr_list_deep_free(up); /* ldns_update_pkt_new cloned it */
	ldns_rr_free(del);
	ldns_rr_free(add);
	ldns_rdf_deep_free(zone);
	ldns_rdf_deep_free(owner);
	ldns_rdf_deep_free(rdata);
	return p;
}

ldns_pkt *query_pkt(const char *name, int fam, uint16_t id)
{
	ldns_rdf *owner = ldns_dname_new_frm_str(name);
	ldns_pkt *p;

	if (!owner)
		return NULL;
	p = ldns_pkt_query_new(owner, fam == AF_INET6 ? LDNS_RR_TYPE_AAAA : LDNS_RR_TYPE_A,
			       LDNS_RR_CLASS_IN, 0);
	if (!p) {
		ldns_rdf_deep_free(owner);
		return NULL;
	}
	ldns_pkt_set_id(p, id);
	return p;
}

int dns_update_wire(const struct dns_cfg *cfg, const char *name, const char *addr, uint16_t id,
		    uint8_t **wire, size_t *len)
{
	char err[DNS_ERR_MAX];
	ldns_pkt *p;
	ldns_status st;

	if (dns_name_validate(cfg, name, err, sizeof(err)) || !addr_family(addr))
		return -EINVAL;
	p = update_pkt(cfg, name, addr, id);
	if (!p)
		return -ENOMEM;
	st = ldns_pkt2wire(wire, p, len);
	ldns_pkt_free(p);
	return st == LDNS_STATUS_OK ? 0 : -ENOMEM;
}

/* ---- answers ---- */

enum dns_status dns_classify(int rcode, int tsig_error, bool tsig_verified)
{
	if (rcode < 0)
		return DNS_TRANSIENT;
	if (tsig_error)
		return DNS_CONFIG_ERROR;
	switch (rcode) {
	case LDNS_RCODE_REFUSED:
	case LDNS_RCODE_NOTAUTH:
	case LDNS_RCODE_NOTZONE:
	case LDNS_RCODE_NOTIMPL:
		return DNS_CONFIG_ERROR;
	default:
		break;
	}
	if (!tsig_verified)
		return DNS_CONFIG_ERROR;
	switch (rcode) {
	case LDNS_RCODE_NOERROR:
		return DNS_OK;
	case LDNS_RCODE_SERVFAIL:
		return DNS_TRANSIENT;
	default:
		return DNS_FAILED;
	}
}

const char *dns_rcode_name(int rcode, int tsig_error)
{
	static const char *const names[] = {"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN",
					    "NOTIMP",  "REFUSED", "YXDOMAIN", "YXRRSET",
					    "NXRRSET", "NOTAUTH", "NOTZONE"};

	switch (tsig_error) {
	case 0:
		break;
	case TSIG_BADSIG:
		return "BADSIG";
	case TSIG_BADKEY:
		return "BADKEY";
	case TSIG_BADTIME:
		return "BADTIME";
	default:
		return "TSIGERR";
	}
	if (rcode < 0)
		return "none";
	if ((size_t)rcode < sizeof(names) / sizeof(names[0]))
		return names[rcode];
	return "RCODE?";
}

uint32_t dns_backoff_ms(const struct dns_cfg *cfg, uint32_t failed_attempts)
{
	return backoff_cap_ms(cfg->retry_min_ms, cfg->retry_max_ms, failed_attempts);
}
