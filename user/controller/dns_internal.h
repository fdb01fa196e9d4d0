/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What dns.c (the updater) and dns_msg.c (configuration, messages, answers)
 * share. Not an interface: only user/controller/dns*.c include it. */
#ifndef FL_DNS_INTERNAL_H
#define FL_DNS_INTERNAL_H

#include <stdint.h>
#include <ldns/ldns.h>
#include "controller/dns.h"

#define TSIG_BADSIG  16
#define TSIG_BADKEY  17
#define TSIG_BADTIME 18

/* dns_msg.c */
const char *alg_canonical(const char *alg);
int addr_family(const char *addr);
ldns_pkt *update_pkt(const struct dns_cfg *cfg, const char *name, const char *addr, uint16_t id);
ldns_pkt *query_pkt(const char *name, int fam, uint16_t id);

#endif
