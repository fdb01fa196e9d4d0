// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* RESP2 reply reader: a scanner that checks every header as it arrives, in front
 * of hiredis's reader, which only ever sees a whole frame within the limits. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/reply_reader.h"

#define HDR_MAX 24 /* "$4194304\r\n", "*65536\r\n" and then some */

struct reply_reader {
	char *buf;
	size_t len, cap;
	/* The scanner's progress through the reply at buf[0]. */
	size_t pos;       /* next item's type byte */
	size_t line_from; /* a line item: where to look for its '\n' next */
	int depth;        /* open arrays */
	long long left[REPLY_MAX_DEPTH + 1]; /* their elements still to see */
	long long elements;                  /* array elements announced so far */
	redisReader *hr;
	int failed; /* a sticky error: the link is to be closed */
	char err[160];
};

struct reply_reader *reply_reader_new(void)
{
	struct reply_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->hr = redisReaderCreate();
	if (!r->hr) {
		free(r);
		return NULL;
	}
	return r;
}

void reply_reader_free(struct reply_reader *r)
{
	if (!r)
		return;
	redisReaderFree(r->hr);
	free(r->buf);
	free(r);
}

int reply_reader_feed(struct reply_reader *r, const char *buf, size_t len)
{
	if (r->len + len > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		char *nb;

		while (cap < r->len + len)
			cap *= 2;
		nb = realloc(r->buf, cap);
		if (!nb)
			return -ENOMEM;
		r->buf = nb;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, buf, len);
	r->len += len;
	return 0;
}

const char *reply_reader_error(const struct reply_reader *r)
{
	return r->err;
}

size_t reply_reader_pending(const struct reply_reader *r)
{
	return r->len;
}

static int fail(struct reply_reader *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct reply_reader *r, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	r->failed = rc;
	return rc;
}

/* A header "<c><digits>\r\n" at buf[at]: 1 with *v and *end set, 0 incomplete,
 * -EPROTO malformed. */
static int header(const struct reply_reader *r, size_t at, long long *v, size_t *end)
{
	size_t i = at + 1, lim = r->len < at + HDR_MAX ? r->len : at + HDR_MAX;
	long long n = 0;
	int neg = 0, digits = 0;

	if (i < lim && r->buf[i] == '-')
		neg = 1, i++;
	for (; i < lim && r->buf[i] >= '0' && r->buf[i] <= '9'; i++, digits++) {
		if (digits >= 12)
			return -EPROTO;
		n = n * 10 + (r->buf[i] - '0');
	}
	if (i + 1 >= lim)
		return lim == at + HDR_MAX ? -EPROTO : 0;
	if (!digits || r->buf[i] != '\r' || r->buf[i + 1] != '\n')
		return -EPROTO;
	*v = neg ? -n : n;
	*end = i + 2;
	return 1;
}

/* A +status, -error or :integer line at buf[pos]: 1 with *end set, 0 incomplete. */
static int line(struct reply_reader *r, size_t *end)
{
	size_t from = r->line_from > r->pos + 1 ? r->line_from : r->pos + 1;
	char *nl = from < r->len ? memchr(r->buf + from, '\n', r->len - from) : NULL;
	size_t at;

	if (!nl) {
		r->line_from = r->len;
		if (r->len - r->pos > REPLY_MAX_LINE)
			return fail(r, -EMSGSIZE, "a '%c' line longer than %u bytes", r->buf[r->pos],
				    REPLY_MAX_LINE);
		return 0;
	}
	at = nl - r->buf;
	if (at - r->pos > REPLY_MAX_LINE)
		return fail(r, -EMSGSIZE, "a '%c' line longer than %u bytes", r->buf[r->pos],
			    REPLY_MAX_LINE);
	if (r->buf[at - 1] != '\r' || at - 1 < r->pos + 1)
		return fail(r, -EPROTO, "a line not ended by CRLF");
	if (r->buf[r->pos] == ':') {
		size_t i = r->pos + 1, digits = 0;

		if (i < at - 1 && r->buf[i] == '-')
			i++;
		for (; i < at - 1 && r->buf[i] >= '0' && r->buf[i] <= '9'; i++)
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

		if (r->pos >= r->len)
			return 0;
		switch (r->buf[r->pos]) {
		case '+':
		case '-':
		case ':':
			rc = line(r, &next);
			if (rc <= 0)
				return rc;
			break;
		case '$':
			rc = header(r, r->pos, &v, &next);
			if (rc < 0 || (rc > 0 && v < -1))
				return fail(r, -EPROTO, "an invalid bulk length");
			if (!rc)
				return 0;
			if (v >= 0) {
				if ((long long)next + v + 2 > (long long)REPLY_MAX_BYTES)
					return fail(r, -EMSGSIZE,
						    "a bulk string of %lld bytes (limit: replies of %u bytes)",
						    v, REPLY_MAX_BYTES);
				if (next + v + 2 > r->len)
					return 0;
				if (r->buf[next + v] != '\r' || r->buf[next + v + 1] != '\n')
					return fail(r, -EPROTO, "a bulk string not ended by CRLF");
				next += v + 2;
			}
			break;
		case '*':
			rc = header(r, r->pos, &v, &next);
			if (rc < 0 || (rc > 0 && v < -1))
				return fail(r, -EPROTO, "an invalid multibulk length");
			if (!rc)
				return 0;
			if (v > 0) {
				if (v > REPLY_MAX_ELEMENTS || r->elements + v > REPLY_MAX_ELEMENTS)
					return fail(r, -EMSGSIZE, "more than %d array elements in a reply",
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
				    (unsigned char)r->buf[r->pos]);
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
	if (redisReaderFeed(r->hr, r->buf, end) != REDIS_OK ||
	    redisReaderGetReply(r->hr, (void **)&rep) != REDIS_OK || !rep) {
		if (rep)
			freeReplyObject(rep);
		return fail(r, -EPROTO, "%s", r->hr->errstr[0] ? r->hr->errstr : "an incomplete reply");
	}
	memmove(r->buf, r->buf + end, r->len - end);
	r->len -= end;
	r->pos = 0;
	r->line_from = 0;
	r->elements = 0;
	/* A buffer grown for a large reply is not kept for the small ones. */
	if (r->cap > 65536 && r->len <= 4096) {
		char *nb = realloc(r->buf, 4096);

		if (nb) {
			r->buf = nb;
			r->cap = 4096;
		}
	}
	*out = rep;
	return 1;
}
