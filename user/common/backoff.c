// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include "common/backoff.h"

unsigned backoff_cap_ms(unsigned base_ms, unsigned max_ms, unsigned n)
{
	unsigned long long d = base_ms;

	for (unsigned i = 1; i < n && d < max_ms; i++)
		d *= 2;
	return d > max_ms ? max_ms : (unsigned)d;
}

int backoff_next(struct backoff *b)
{
	int cur = (int)backoff_cap_ms((unsigned)b->base_ms, (unsigned)b->max_ms, ++b->failures);
	int half = cur / 2;

	return half + (half ? (int)(rand_r(&b->seed) % (unsigned)(cur - half + 1)) : cur);
}

void backoff_reset(struct backoff *b)
{
	b->failures = 0;
}
