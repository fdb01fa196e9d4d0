/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Clocks and libevent intervals, in the units their names carry. */
#ifndef FL_CLOCK_H
#define FL_CLOCK_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#define NS_PER_MS 1000000ull /* nanoseconds in a millisecond */

static inline int64_t fl_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CLOCK_MONOTONIC: for intervals and timeouts. */
static inline int64_t fl_mono_ns(void)
{
	return fl_clock_ns(CLOCK_MONOTONIC);
}

static inline int64_t fl_mono_ms(void)
{
	return fl_clock_ns(CLOCK_MONOTONIC) / 1000000;
}

/* CLOCK_REALTIME: for what is shown to people and sent to other hosts. */
static inline struct timespec fl_wall_ts(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

static inline int64_t fl_wall_us(void)
{
	return fl_clock_ns(CLOCK_REALTIME) / 1000;
}

static inline int64_t fl_wall_ms(void)
{
	return fl_clock_ns(CLOCK_REALTIME) / 1000000;
}

static inline struct timeval fl_ms_tv(long ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000};

	return tv;
}

#endif
