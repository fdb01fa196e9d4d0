// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: the controller's RESP command reader (resp_feed/resp_next),
 * which every byte from an agent or client goes through. The first input byte picks
 * the chunk size the rest is fed in (a TCP stream splits anywhere). Contract: every
 * command has 1..RESP_MAX_ARGS arguments, each NUL-terminated at its length, no frame
 * past RESP_MAX_FRAME; an error is final and says "Protocol error" or is -ENOMEM. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resp_reader *r;
	size_t chunk, off = 1;
	int rc = 0;

	if (size < 1)
		return 0;
	chunk = 1 + data[0] % 64;
	r = resp_reader_new();
	if (!r)
		return 0;
	while (off < size && rc >= 0) {
		size_t n = size - off < chunk ? size - off : chunk;

		if (resp_feed(r, (const char *)data + off, n))
			break;
		off += n;
		for (;;) {
			struct resp_cmd c;

			rc = resp_next(r, &c);
			if (rc <= 0)
				break;
			if (c.argc < 1 || c.argc > RESP_MAX_ARGS)
				abort();
			for (int i = 0; i < c.argc; i++)
				if (c.lens[i] > RESP_MAX_FRAME || c.argv[i][c.lens[i]] != '\0')
					abort();
			resp_cmd_free(&c);
		}
		if (rc < 0 && rc != -ENOMEM && !strstr(resp_error(r), "Protocol error"))
			abort();
		if (rc == 0 && resp_pending(r) > RESP_MAX_FRAME + RESP_MAX_INLINE + 64)
			abort(); /* buffering past the limits without refusing */
	}
	resp_reader_free(r);
	return 0;
}
