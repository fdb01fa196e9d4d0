/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* RESP for the controller's server side: commands in (arrays of bulk strings,
 * or inline lines as telnet sends them) with frame limits, replies out.
 * A length guard checks every multibulk and bulk header and the CR LF after
 * every bulk string first, so a frame past the limits is refused before
 * anything is allocated for it; a checked frame is then copied in one pass into
 * one allocation. */
#ifndef FL_RESP_H
#define FL_RESP_H

#include <stddef.h>

#define RESP_MAX_FRAME	(1u << 20)  /* protocol.md: a larger frame is a protocol error */
#define RESP_MAX_ARGS	1024	    /* ... and so is an array of more elements */
#define RESP_MAX_INLINE (64u << 10) /* an inline command line, as Redis limits it */

/* One command: argv[i] is NUL-terminated (it may also hold NUL bytes: lens[i]). */
struct resp_cmd {
	int argc;
	char **argv;
	size_t *lens;
	int block; /* argv, lens and the strings are one allocation (at argv) */
};

struct resp_reader;
struct evbuffer;

struct resp_reader *resp_reader_new(void);
void resp_reader_free(struct resp_reader *r);
/* A lower frame limit (0: back to RESP_MAX_FRAME), for peers not yet
 * authenticated; it applies from the next frame header checked. */
void resp_reader_set_max_frame(struct resp_reader *r, size_t bytes);
/* Appends bytes read from the connection. -ENOMEM. */
int resp_feed(struct resp_reader *r, const char *buf, size_t len);
/* 1: *cmd holds the next command (free with resp_cmd_free); 0: need more bytes;
 * -EPROTO (malformed) or -EMSGSIZE (past a limit): resp_error() says why, in the
 * words Redis uses ("Protocol error: ..."), and the connection must be closed. */
int resp_next(struct resp_reader *r, struct resp_cmd *cmd);
const char *resp_error(const struct resp_reader *r);
/* Bytes buffered and not yet returned as commands. */
size_t resp_pending(const struct resp_reader *r);
/* Bytes the reader has moved inside its buffer so far: what is left of each feed
 * moves once, so this stays below what was fed, however it was framed (a
 * cost measure for tests/unit/test_resp.c). */
size_t resp_moved(const struct resp_reader *r);
void resp_cmd_free(struct resp_cmd *cmd);

/* Replies. */
void resp_status(struct evbuffer *b, const char *s);
void resp_error_reply(struct evbuffer *b, const char *s);
void resp_int(struct evbuffer *b, long long v);
void resp_bulk(struct evbuffer *b, const char *s, size_t len);
void resp_str(struct evbuffer *b, const char *s); /* bulk of a C string */
void resp_nil(struct evbuffer *b);
void resp_array(struct evbuffer *b, long n);
void resp_null_array(struct evbuffer *b);

/* The same into a caller's buffer (an answer sent without an evbuffer): each writes
 * at b and returns how many bytes. A line ('*' array, ':' integer, '$' bulk header)
 * takes at most RESP_LINE_MAX bytes; a status s of len bytes, len + 3; a bulk string
 * of len bytes, len + RESP_LINE_MAX + 2. */
#define RESP_LINE_MAX 24
size_t resp_fmt_line(char *b, char type, long long v);
size_t resp_fmt_status(char *b, const char *s, size_t len);
size_t resp_fmt_bulk(char *b, const char *s, size_t len);

#endif
