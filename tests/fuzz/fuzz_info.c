// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: INFO text from a server (info_parse), the reply the agent and
 * the controller trust to pick a new primary. The input is libFuzzer's buffer of
 * exactly `size` bytes, not NUL-terminated, as info_parse allows. On success every
 * string field must be NUL-terminated within its array. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/info.h"

#define TERMINATED(a) (memchr((a), '\0', sizeof(a)) != NULL)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct info_repl r;

	memset(&r, 'x', sizeof(r));
	if (info_parse((const char *)data, size, &r))
		return 0;
	if (!TERMINATED(r.version) || !TERMINATED(r.run_id) || !TERMINATED(r.master_host) ||
	    !TERMINATED(r.master_replid))
		abort();
	if (!info_server_name(r.server) || !info_role_name(r.role))
		abort();
	return 0;
}
