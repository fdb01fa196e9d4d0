// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* RESP2 reply reader: a scanner that checks every header as it arrives, in front
 * of hiredis's reader, which only ever sees a whole frame within the limits. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/reply_reader.h"
#include "common/resp_frame.h"

struct reply_reader {
	struct resp_frame f; /* the bytes, hiredis's reader, the error */
	/* The scanner's progress through the reply at f.buf[0]. */
	size_t pos;			     /* next item's type byte */
	size_t line_from;		     /* a line item: where to look for its '\n' next */
	int depth;			     /* open arrays */
	long long left[REPLY_MAX_DEPTH + 1]; /* their elements still to see */
	long long elements;		     /* array elements announced so far */
	int failed;			     /* a sticky error: the link is to be closed */
};

struct reply_reader *reply_reader_new(void)
{
	struct reply_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (resp_frame_init(&r->f, true)) {
		free(r);
		return NULL;
	}
	return r;
}

void reply_reader_free(struct reply_reader *r)
{
	if (!r)
		return;
	resp_frame_fini(&r->f);
	free(r);
}

int reply_reader_feed(struct reply_reader *r, const char *buf, size_t len)
{
	return resp_frame_feed(&r->f, buf, len);
}

const char *reply_reader_error(const struct reply_reader *r)
{
	return r->f.err;
}

size_t reply_reader_pending(const struct reply_reader *r)
{
	return r->f.len;
}

/* The message goes to r->f.err; the error sticks. The value is rc. */
#define fail(r, rc, ...) ((r)->failed = resp_frame_fail(&(r)->f, (rc), __VA_ARGS__))

/* A +status, -error or :integer line at buf[pos]: 1 with *end set, 0 incomplete. */
static int line(struct reply_reader *r, size_t *end)
{
	size_t from = r->line_from > r->pos + 1 ? r->line_from : r->pos + 1;
	char *nl = from < r->f.len ? memchr(r->f.buf + from, '\n', r->f.len - from) : NULL;
	size_t at;

	if (!nl) {
		r->line_from = r->f.len;
		if (r->f.len - r->pos > REPLY_MAX_LINE)
			return fail(r, -EMSGSIZE, "a '%c' line longer than %u bytes",
				    r->f.buf[r->pos], REPLY_MAX_LINE);
		return 0;
	}
	at = nl - r->f.buf;
	if (at - r->pos > REPLY_MAX_LINE)
		return fail(r, -EMSGSIZE, "a '%c' line longer than %u bytes", r->f.buf[r->pos],
			    REPLY_MAX_LINE);
	if (r->f.buf[at - 1] != '\r' || at - 1 < r->pos + 1)
		return fail(r, -EPROTO, "a line not ended by CRLF");
	if (r->f.buf[r->pos] == ':') {
		size_t i = r->pos + 1, digits = 0;

		if (i < at - 1 && r->f.buf[i] == '-')
			i++;
		for (; i < at - 1 && r->f.buf[i] >= '0' && r->f.buf[i] <= '9'; i++)
			digits++;
		if (i != at - 1 || !digits || digits > 19)
			return fail(r, -EPROTO, "a malformed integer");
	}
	r->line_from = 0;
	*end = at + 1;
	return 1;
}

/* Walks the headers of the reply at buf[0] from where it stopped: 1 with *end set
 * when the reply is whole, 0 when more bytes are needed, <0 on an error. */
static int scan(struct reply_reader *r, size_t *end)
{
	for (;;) {
		long long v;
		size_t next = 0;
		bool scalar = true;
		int rc;

		if (r->pos >= r->f.len)
			return 0;
		switch (r->f.buf[r->pos]) {
		case '+':
		case '-':
		case ':':
			rc = line(r, &next);
			if (rc <= 0)
				return rc;
			break;
		case '$':
			rc = resp_frame_header(&r->f, r->pos, &v, &next);
			if (rc < 0 || (rc > 0 && v < -1))
				return fail(r, -EPROTO, "an invalid bulk length");
			if (!rc)
				return 0;
			if (v >= 0) {
				if ((long long)next + v + 2 > (long long)REPLY_MAX_BYTES)
					return fail(r, -EMSGSIZE,
						    "a bulk string of %lld bytes (limit: replies "
						    "of %u bytes)",
						    v, REPLY_MAX_BYTES);
				rc = resp_frame_bulk(&r->f, next, v);
				if (rc < 0)
					return fail(r, -EPROTO, "a bulk string not ended by CRLF");
				if (rc == 0)
					return 0;
				next += v + 2;
			}
			break;
		case '*':
			rc = resp_frame_header(&r->f, r->pos, &v, &next);
			if (rc < 0 || (rc > 0 && v < -1))
				return fail(r, -EPROTO, "an invalid multibulk length");
			if (!rc)
				return 0;
			if (v > 0) {
				if (v > REPLY_MAX_ELEMENTS || r->elements + v > REPLY_MAX_ELEMENTS)
					return fail(r, -EMSGSIZE,
						    "more than %d array elements in a reply",
						    REPLY_MAX_ELEMENTS);
				if (r->depth >= REPLY_MAX_DEPTH)
					return fail(r, -EMSGSIZE, "arrays nested deeper than %d",
						    REPLY_MAX_DEPTH);
				r->elements += v;
				r->left[++r->depth] = v;
				scalar = false;
			}
			break;
		default:
			return fail(r, -EPROTO, "an unexpected byte 0x%02x where a reply starts",
				    (unsigned char)r->f.buf[r->pos]);
		}
		if (next > REPLY_MAX_BYTES)
			return fail(r, -EMSGSIZE, "a reply larger than %u bytes", REPLY_MAX_BYTES);
		r->pos = next;
		if (!scalar)
			continue;
		/* An element is complete: close the arrays it completes. */
		while (r->depth > 0 && --r->left[r->depth] == 0)
			r->depth--;
		if (r->depth == 0) {
			*end = r->pos;
			return 1;
		}
	}
}

int reply_reader_next(struct reply_reader *r, redisReply **out)
{
	redisReply *rep = NULL;
	size_t end = 0;
	int rc;

	*out = NULL;
	if (r->failed)
		return r->failed;
	rc = scan(r, &end);
	if (rc <= 0)
		return rc;
	if (resp_frame_parse(&r->f, end, &rep))
		return fail(r, -EPROTO, "%s", resp_frame_parse_error(&r->f, "an incomplete reply"));
	resp_frame_consume(&r->f, end);
	r->pos = 0;
	r->line_from = 0;
	r->elements = 0;
	/* A buffer grown for a large reply is not kept for the small ones. */
	resp_frame_trim(&r->f);
	*out = rep;
	return 1;
}
