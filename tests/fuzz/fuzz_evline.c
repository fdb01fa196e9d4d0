// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: one event-log line as `flatline events` reads it back
 * (evline_parse, then the lookups and the timestamp parse show_line does).
 * The input is libFuzzer's own buffer of exactly `size` bytes, not NUL-terminated, so
 * ASan catches any read past the line. Besides memory errors it checks the parser's
 * contract: on success every key and value is a NUL-terminated string inside ev->buf,
 * on failure ev->n is 0. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/event_log.h"

static void check_in_buf(const struct evline *ev, const char *s)
{
	const char *end = ev->buf + sizeof(ev->buf);

	if (s < ev->buf || s >= end || !memchr(s, '\0', end - s))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct evline ev; /* 4 KiB buffer plus fields: not on the fuzzer's stack */
	const char *ts;
	int64_t us;

	if (evline_parse(&ev, (const char *)data, size)) {
		if (ev.n != 0)
			abort();
		return 0;
	}
	if (ev.n < 0 || ev.n > EVLINE_MAX_FIELDS)
		abort();
	for (int i = 0; i < ev.n; i++) {
		check_in_buf(&ev, ev.f[i].key);
		check_in_buf(&ev, ev.f[i].val);
	}
	ts = evline_get(&ev, "ts");
	if (ts)
		evlog_parse_ts(ts, &us);
	evline_get(&ev, "node");
	evline_get(&ev, "kind");
	return 0;
}
