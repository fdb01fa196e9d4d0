// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: evlog_parse_ts, the RFC 3339 timestamp of an event line.
 * The input becomes a NUL-terminated string in a buffer of exactly its length + 1
 * (ASan catches a read past the NUL). An accepted timestamp is checked against
 * timegm(3): both must give the same second since the epoch. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/event_log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct tm tm = {0};
	int64_t us;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (!evlog_parse_ts(s, &us)) {
		/* It accepted "YYYY-MM-DDTHH:MM:SS[.frac]Z" with every field in range. */
		if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			   &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
			abort();
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		if ((int64_t)timegm(&tm) != us / 1000000 - (us % 1000000 < 0))
			abort();
	}
	free(s);
	return 0;
}
