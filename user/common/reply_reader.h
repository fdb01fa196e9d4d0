/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* RESP2 replies from a peer we do not trust (a server, the controller), with
 * limits enforced while the bytes arrive: every header is checked as soon as it
 * is complete, so a reply that announces more than the limits is refused before
 * anything is allocated for it, and a reply that is not finished holds at most
 * the limit. hiredis's reader parses only a frame already known to be whole and
 * within the limits. Nothing here blocks or knows about sockets. */
#ifndef FL_REPLY_READER_H
#define FL_REPLY_READER_H

#include <stddef.h>
#include <hiredis/hiredis.h>

#define REPLY_MAX_BYTES	   (4u << 20) /* one reply, headers included */
#define REPLY_MAX_ELEMENTS 65536      /* array elements in one reply, all levels */
#define REPLY_MAX_DEPTH	   7	      /* arrays nested in arrays (hiredis 0.14's own limit) */
#define REPLY_MAX_LINE	   65536      /* a +status, -error or :integer line */

struct reply_reader;

struct reply_reader *reply_reader_new(void);
void reply_reader_free(struct reply_reader *r);
/* Appends bytes read from the connection. -ENOMEM. */
int reply_reader_feed(struct reply_reader *r, const char *buf, size_t len);
/* 1: *out holds the next reply (freeReplyObject() it); 0: need more bytes;
 * -EPROTO (malformed) or -EMSGSIZE (past a limit): reply_reader_error() says
 * why and the connection must be closed. */
int reply_reader_next(struct reply_reader *r, redisReply **out);
const char *reply_reader_error(const struct reply_reader *r);
/* Bytes buffered and not yet returned as replies. */
size_t reply_reader_pending(const struct reply_reader *r);

#endif
