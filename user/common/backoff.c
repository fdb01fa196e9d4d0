// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include "common/backoff.h"

int backoff_next(struct backoff *b)
{
	int cur = b->cur_ms ? b->cur_ms : b->base_ms;
	int half = cur / 2;
	int delay = half + (half ? (int)(rand_r(&b->seed) % (unsigned)(cur - half + 1)) : cur);

	b->cur_ms = cur >= b->max_ms / 2 ? b->max_ms : cur * 2;
	return delay > b->max_ms ? b->max_ms : delay;
}

void backoff_reset(struct backoff *b)
{
	b->cur_ms = 0;
}
