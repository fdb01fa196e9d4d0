/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the event log's writer (event_log.c) and reader (event_log_read.c) share:
 * the names of rotated segments. Not an interface: only user/common/event_log*.c
 * include it. */
#ifndef FL_EVENT_LOG_INTERNAL_H
#define FL_EVENT_LOG_INTERNAL_H

#include "common/event_log.h"

/* ---- segment names ---- */

enum seg_form {
	SEG_PLAIN = 1, /* PATH.<seq>: rotated, not yet compressed */
	SEG_GZ = 2,    /* PATH.<seq>.gz */
	SEG_TMP = 4,   /* PATH.<seq>.gz.tmp: compression in progress or interrupted */
};

struct seg {
	unsigned long seq;
	unsigned int forms; /* enum seg_form bits present on disk */
};

/* The file name's ending for each form: "", ".gz", ".gz.tmp". */
extern const char *const seg_suffix[SEG_TMP + 1];

/* Room left in a PATH_MAX buffer for ".<seq>.gz.tmp". */
#define SEG_NAME_EXTRA 32

/* event_log.c */
int split_path(const char *path, char **dir, const char **base);
int scan_segments(const char *dir, const char *base, struct seg **out, int *n);

#endif
