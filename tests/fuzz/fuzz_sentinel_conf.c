// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: a sentinel.conf (sc_parse, common/sentinel_conf.c), as
 * `flatline import` reads one: not NUL-terminated, any bytes. Checks the contract:
 * 0 or -EINVAL; on failure one terminated message that starts with the file's name and
 * a line number; on success every master named, with a port, within the limits. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/sentinel_conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sc_conf c; /* large: not on the stack; sc_parse clears it */
	char err[320];
	int rc;

	memset(err, 'x', sizeof(err));
	rc = sc_parse(&c, "fuzz.conf", (const char *)data, size, err, sizeof(err));
	if (!memchr(err, '\0', sizeof(err)))
		abort();
	if (rc != 0 && rc != -EINVAL)
		abort();
	if (rc) {
		if (strncmp(err, "fuzz.conf:", 10) || err[10] < '0' || err[10] > '9')
			abort();
		return 0;
	}
	if (c.nmasters < 0 || c.nmasters > SC_MAX_MASTERS || c.nnotes > SC_MAX_NOTES)
		abort();
	for (int i = 0; i < c.nmasters; i++) {
		const struct sc_master *m = &c.masters[i];

		if (!m->name[0] || m->addr.port < 1 || m->addr.port > 65535 || m->quorum < 1 ||
		    m->nreplicas > SC_MAX_REPLICAS || m->nsentinels > SC_MAX_SENTINELS)
			abort();
		if (sc_find_master(&c, m->name) != m)
			abort();
	}
	return 0;
}
