// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* -1 unknown, 0 no, 1 yes: stderr is the journal stream systemd gave us. */
static int journal = -1;

/* systemd sets JOURNAL_STREAM=DEV:INODE for the stream it connects stderr to; a
 * stderr redirected elsewhere by the service keeps the variable but not the inode. */
static int under_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char *end;

	if (!js || fstat(2, &st))
		return 0;
	errno = 0;
	dev = strtoull(js, &end, 10);
	if (end == js || *end != ':' || errno)
		return 0;
	js = end + 1;
	ino = strtoull(js, &end, 10);
	if (end == js || *end || errno)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if ((int)lvl > log_verbosity)
		return;
	if (journal < 0)
		journal = under_journal();
	if (journal) {
		/* sd-daemon(3)'s prefixes: <3> error, <4> warning, <6> info, <7> debug. A
		 * warning that says "failed to ..." is an error. */
		int pri = lvl == LOG_LVL_DEBUG ? 7 : lvl == LOG_LVL_INFO ? 6 : 4;

		if (pri == 4 && !strncmp(fmt, "failed to ", 10))
			pri = 3;
		fprintf(stderr, "<%d>", pri);
	}
	va_start(ap, fmt);
	fputs("flatline: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
