// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include "common/log.h"

int log_verbosity = LOG_LVL_INFO;

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
