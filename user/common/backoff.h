/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Capped exponential backoff with jitter, for reconnects. */
#ifndef FL_BACKOFF_H
#define FL_BACKOFF_H

struct backoff {
	int base_ms;    /* first delay */
	int max_ms;     /* cap */
	int cur_ms;     /* the next delay before jitter; 0 = base */
	unsigned seed;  /* rand_r state */
};

/* The delay to wait now, in [cur/2, cur] (so peers do not reconnect in step);
 * doubles the next one up to max_ms. */
int backoff_next(struct backoff *b);
/* After a success: the next failure waits base_ms again. */
void backoff_reset(struct backoff *b);

#endif
