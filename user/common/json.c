// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <string.h>
#include "common/json.h"

size_t json_utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	len = s[0] < 0xc2 ? 0 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : s[0] < 0xf5 ? 4 : 0;
	if (!len || len > n)
		return 0;
	for (i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* overlong 3- and 4-byte forms, UTF-16 surrogates, above U+10FFFF */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return len;
}

char json_esc(char c, bool unescape)
{
	static const char pairs[] = "\"\"\\\\//b\bf\fn\nr\rt\t";

	for (const char *p = pairs; *p; p += 2)
		if (p[!unescape] == c)
			return p[unescape];
	return 0;
}

int json_put_str(json_put_fn put, void *ctx, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i, k;
	char esc[8];
	int err = put(ctx, "\"", 1);

	for (i = 0; !err && i < n; i += k) {
		k = 1;
		if (p[i] == '"' || p[i] == '\\' || p[i] < 0x20) {
			esc[0] = '\\';
			esc[1] = json_esc(s[i], false);
			if (esc[1])
				err = put(ctx, esc, 2);
			else
				err = put(ctx, esc, snprintf(esc, sizeof(esc), "\\u%04x", p[i]));
		} else if ((k = json_utf8_len(p + i, n - i))) {
			err = put(ctx, s + i, k);
		} else {
			k = 1;
			err = put(ctx, "\\ufffd", 6);
		}
	}
	return err ?: put(ctx, "\"", 1);
}
