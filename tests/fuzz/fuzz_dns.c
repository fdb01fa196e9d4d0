// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The DNS server's answers as the controller's DNS worker reads them: ldns parses
 * the wire format, dns_parse_answer() classifies the rcode and TSIG error and, for a
 * query, collects the addresses. First byte: bit 0 query (else update), bit 1 the
 * TSIG verified, bit 2 an IPv6 address wanted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "controller/dns.h"

static struct dns_cfg cfg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dns_result r;
	enum dns_op op;
	const char *addr;

	if (size < 1)
		return 0;
	if (!cfg.port) {
		dns_cfg_init(&cfg);
		if (dns_cfg_set_server(&cfg, "127.0.0.1:53"))
			abort();
		strcpy(cfg.zone, "ha.example.");
		strcpy(cfg.tsig_name, "flatline");
		strcpy(cfg.tsig_algorithm, "hmac-sha256");
		strcpy(cfg.tsig_secret, "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=");
	}
	op = data[0] & 1 ? DNS_OP_QUERY : DNS_OP_UPDATE;
	addr = data[0] & 4 ? "fd00::2" : "10.77.0.2";
	if (dns_parse_answer(&cfg, op, "cache.ha.example.", addr, data + 1, size - 1, data[0] & 2,
			     &r))
		return 0;
	/* The contract: terminated strings, a status, a match only for one equal address. */
	if (strnlen(r.error, sizeof(r.error)) == sizeof(r.error) ||
	    strnlen(r.rcode_name, sizeof(r.rcode_name)) == sizeof(r.rcode_name) || r.naddrs < 0)
		abort();
	for (int i = 0; i < r.naddrs && i < DNS_QUERY_MAX_ADDRS; i++)
		if (strnlen(r.addrs[i], DNS_ADDR_MAX) == DNS_ADDR_MAX)
			abort();
	if (r.match && (op != DNS_OP_QUERY || r.naddrs != 1 || r.status != DNS_OK))
		abort();
	if (r.status == DNS_OK && r.error[0])
		abort();
	return 0;
}
