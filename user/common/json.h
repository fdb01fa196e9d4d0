/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one JSON string escaper, for the event log and `flatline status --json`. */
#ifndef FL_JSON_H
#define FL_JSON_H

#include <stdbool.h>
#include <stddef.h>

/* Appends n bytes of s to ctx: 0, or a negative errno (the escaper stops there). */
typedef int (*json_put_fn)(void *ctx, const char *s, size_t n);

/* Writes s as a quoted JSON string: '"', '\' and control characters escaped, bytes
 * that are not valid UTF-8 as U+FFFD. 0 or the first error of put. */
int json_put_str(json_put_fn put, void *ctx, const char *s);

/* Length of the valid UTF-8 sequence at s (n bytes available), 0 if there is none. */
size_t json_utf8_len(const unsigned char *s, size_t n);

/* JSON's two-character escapes: the letter after '\' for c, or (unescape) the
 * character for letter c; 0 when there is none. */
char json_esc(char c, bool unescape);

#endif
