/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Capped exponential backoff: the one retry policy (server and controller links,
 * DNS updates). */
#ifndef FL_BACKOFF_H
#define FL_BACKOFF_H

struct backoff {
	int base_ms;	   /* first delay */
	int max_ms;	   /* cap */
	unsigned failures; /* delays handed out since the last reset */
	unsigned seed;	   /* rand_r state */
};

/* The cap after n failures: base_ms for n <= 1, doubled per further failure,
 * at most max_ms. */
unsigned backoff_cap_ms(unsigned base_ms, unsigned max_ms, unsigned n);
/* The delay to wait now, in [cap/2, cap] (so peers do not reconnect in step);
 * the next one's cap doubles up to max_ms. */
int backoff_next(struct backoff *b);
/* After a success: the next failure waits base_ms again. */
void backoff_reset(struct backoff *b);

#endif
