// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: the reply reader (reply_reader_feed/reply_reader_next) that
 * every reply from a server or from the controller goes through. The first input
 * byte picks the chunk size the rest is fed in. Contract: no reply deeper than
 * REPLY_MAX_DEPTH or with more than REPLY_MAX_ELEMENTS elements, nothing buffered
 * past REPLY_MAX_BYTES plus one chunk, an error is final and says why. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "common/reply_reader.h"

static size_t count(const redisReply *r, int depth, size_t *n) // NOLINT(misc-no-recursion)
{
	if (depth > REPLY_MAX_DEPTH)
		abort();
	if (r->type == REDIS_REPLY_ARRAY) {
		*n += r->elements;
		for (size_t i = 0; i < r->elements; i++)
			count(r->element[i], depth + 1, n);
	}
	return *n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reply_reader *r;
	size_t chunk, off = 1;
	int rc = 0;

	if (size < 1)
		return 0;
	chunk = 1 + data[0] % 64;
	r = reply_reader_new();
	if (!r)
		return 0;
	while (off < size && rc >= 0) {
		size_t n = size - off < chunk ? size - off : chunk;
		redisReply *rep;

		if (reply_reader_feed(r, (const char *)data + off, n))
			break;
		off += n;
		while ((rc = reply_reader_next(r, &rep)) == 1) {
			size_t el = 0;

			if (count(rep, 0, &el) > REPLY_MAX_ELEMENTS)
				abort();
			freeReplyObject(rep);
		}
		if (rc < 0 && ((rc != -EPROTO && rc != -EMSGSIZE) || !reply_reader_error(r)[0]))
			abort();
		if (rc == 0 && reply_reader_pending(r) > REPLY_MAX_BYTES + 64)
			abort();
	}
	reply_reader_free(r);
	return 0;
}
