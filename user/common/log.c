// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include "common/log.h"

int log_verbosity = LOG_LVL_INFO;

const char *log_esc(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	if (!len)
		return "";
	for (size_t i = 0; s[i] && o + 5 < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i == 160) {
			snprintf(buf + o, len - o, "...");
			return buf;
		}
		if (ch >= ' ' && ch < 127 && ch != '\\')
			buf[o++] = (char)ch;
		else
			o += snprintf(buf + o, len - o, "\\x%02x", ch);
	}
	buf[o] = '\0';
	return buf;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if ((int)lvl > log_verbosity)
		return;
	va_start(ap, fmt);
	fputs("flatline: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
