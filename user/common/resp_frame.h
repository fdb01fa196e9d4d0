/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the two RESP readers share: the command reader (resp.c, the controller's
 * server side) and the reply reader (reply_reader.c, replies from servers and the
 * controller). Bytes collect in a growing buffer; each reader walks the frame at
 * buf[0] with resp_frame_header() and resp_frame_bulk(), checking every header
 * against its own limits as soon as it is complete. The reply reader then hands a
 * frame known to be whole and within them to hiredis's reader (resp_frame_parse());
 * the command reader copies it out itself (resp.c, parse_frame).
 * Nothing here blocks or knows about sockets. */
#ifndef FL_RESP_FRAME_H
#define FL_RESP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>

#define RESP_FRAME_HDR_MAX 24 /* "$4194304\r\n", "*65536\r\n" and then some */

/* The bytes not yet returned are buf[0..len); a frame returned only moves buf
 * forward (resp_frame_consume), and what is left moves back to the start of the
 * allocation once per feed: each byte is copied a bounded number of times,
 * however many frames (or empty lines) one read holds (consuming a
 * line by moving the rest of the buffer made a read of 16 KiB of "\n" cost
 * ~134 MB of copying). */
struct resp_frame {
	char *buf;
	size_t len;
	char *mem;	 /* the allocation; buf points into it */
	size_t cap;	 /* its size */
	size_t moved;	 /* bytes moved back to mem so far (a cost measure, for tests) */
	redisReader *hr; /* NULL unless with_parser */
	char err[160];	 /* why the reader failed, as the reader words it */
};

/* 0, or -ENOMEM. with_parser: the reader hands whole frames to hiredis
 * (resp_frame_parse); without it, hr stays NULL and nothing is allocated for it. */
int resp_frame_init(struct resp_frame *f, bool with_parser);
void resp_frame_fini(struct resp_frame *f);
/* Appends bytes read from the connection (what is left of the last ones first
 * moves to the start of the buffer). -ENOMEM. */
int resp_frame_feed(struct resp_frame *f, const char *buf, size_t len);
/* Drops the first n bytes (a frame returned): O(1), nothing is moved. */
void resp_frame_consume(struct resp_frame *f, size_t n);
/* A buffer grown past 64 KiB for a large frame is given back once no more than
 * 4 KiB are left in it. */
void resp_frame_trim(struct resp_frame *f);
/* Writes the message to f->err and returns rc. */
int resp_frame_fail(struct resp_frame *f, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A header line "<c><digits>\r\n" at buf[at] (c is not checked): 1 with *v and
 * *end (the byte after it) set, 0 incomplete, -EPROTO malformed (no digits, more
 * than 12, longer than RESP_FRAME_HDR_MAX, not ended by CRLF). */
int resp_frame_header(const struct resp_frame *f, size_t at, long long *v, size_t *end);
/* A bulk string's v bytes at buf[at] and their CRLF: 1 whole, 0 incomplete,
 * -EPROTO not ended by CRLF. */
int resp_frame_bulk(const struct resp_frame *f, size_t at, long long v);
/* hiredis parses buf[0..end), a whole frame: 0 with *out set (freeReplyObject()
 * it), -EPROTO with *out NULL; then resp_frame_parse_error() says why. */
int resp_frame_parse(struct resp_frame *f, size_t end, redisReply **out);
/* hiredis's reason, else dflt. */
const char *resp_frame_parse_error(const struct resp_frame *f, const char *dflt);

#endif
