/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Diagnostics on stderr: "flatline: <message>", with a "<N>" syslog level first when
 * stderr is systemd's journal stream (JOURNAL_STREAM). */
#ifndef FL_LOG_H
#define FL_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum log_level { LOG_LVL_WARN = 0, LOG_LVL_INFO = 1, LOG_LVL_DEBUG = 2 };

extern int log_verbosity; /* messages at or below this level are printed */

void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A string a peer sent (an error reply, a node id), fit for one log line:
 * printable ASCII as is, anything else (CR, LF, escapes) as \xNN, cut at 160
 * bytes. Returns buf. */
const char *log_esc(const char *s, char *buf, size_t len);
#define LOG_ESC_MAX 660 /* a buffer that holds any log_esc() output */

#define pr_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define pr_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define pr_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
