// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: whatever the agent writes, `flatline events` must read back.
 * String fields of events carry text from outside (a process's comm from the kernel,
 * cgroup paths, node ids), so the input is split at NUL bytes into strings, written as
 * the values of one record with evrec_str, and the line must then parse with
 * evline_parse, each value read back equal to what was written (valid UTF-8) and the
 * record well formed even when the fields overflow it. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/event_log.h"

#define MAX_VALS 8

/* Well-formed UTF-8 without overlongs or surrogates: what the writer keeps as is. */
static int valid_utf8(const unsigned char *p, size_t n)
{
	size_t i = 0, k;
	unsigned int cp;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((p[i] & 0xe0) == 0xc0)
			k = 2, cp = p[i] & 0x1f;
		else if ((p[i] & 0xf0) == 0xe0)
			k = 3, cp = p[i] & 0x0f;
		else if ((p[i] & 0xf8) == 0xf0)
			k = 4, cp = p[i] & 0x07;
		else
			return 0;
		if (i + k > n)
			return 0;
		for (size_t j = 1; j < k; j++) {
			if ((p[i + j] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += k;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct evrec r;
	static struct evline ev;
	struct timespec ts = {1796032800, 123456000};
	char *buf = malloc(size + 1), *vals[MAX_VALS], key[8];
	size_t len;
	int n = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (char *p = buf; n < MAX_VALS && p <= buf + size; p += strlen(p) + 1)
		vals[n++] = p;

	evrec_begin(&r, &ts, "fuzz", "fuzz_kind");
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "v%d", i);
		evrec_str(&r, key, vals[i]);
	}
	evrec_end(&r);
	len = strlen(r.buf);
	if (len != r.len || len == 0 || len > EVREC_MAX || r.buf[len - 1] != '\n')
		abort();
	if (evline_parse(&ev, r.buf, r.len))
		abort(); /* the writer produced a line the reader rejects */
	if (!evline_get(&ev, "ts") || strcmp(evline_get(&ev, "node"), "fuzz") ||
	    strcmp(evline_get(&ev, "kind"), "fuzz_kind"))
		abort();
	for (int i = 0; i < n; i++) {
		const char *got;

		snprintf(key, sizeof(key), "v%d", i);
		got = evline_get(&ev, key);
		if (!got) {
			if (!r.overflow)
				abort(); /* a field may only be missing when the record overflowed
					  */
			break;
		}
		if (valid_utf8((const unsigned char *)vals[i], strlen(vals[i])) &&
		    strcmp(got, vals[i]))
			abort();
	}
	free(buf);
	return 0;
}
