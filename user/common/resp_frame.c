// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The RESP readers' shared part (resp_frame.h): the input buffer, the header
 * scanner, and hiredis's reader behind them. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/resp_frame.h"

int resp_frame_init(struct resp_frame *f, bool with_parser)
{
	memset(f, 0, sizeof(*f));
	if (!with_parser)
		return 0;
	f->hr = redisReaderCreate();
	return f->hr ? 0 : -ENOMEM;
}

void resp_frame_fini(struct resp_frame *f)
{
	if (f->hr)
		redisReaderFree(f->hr);
	free(f->mem);
	memset(f, 0, sizeof(*f));
}

/* What is left moves to the start of the allocation: once per feed, so a byte is
 * moved again only if a whole frame before it was consumed since. */
static void compact(struct resp_frame *f)
{
	if (f->buf == f->mem)
		return;
	memmove(f->mem, f->buf, f->len);
	f->moved += f->len;
	f->buf = f->mem;
}

int resp_frame_feed(struct resp_frame *f, const char *buf, size_t len)
{
	if (!len)
		return 0;
	compact(f);
	if (f->len + len > f->cap) {
		size_t cap = f->cap ? f->cap : 4096;
		char *nb;

		while (cap < f->len + len)
			cap *= 2;
		nb = realloc(f->mem, cap);
		if (!nb)
			return -ENOMEM;
		f->buf = f->mem = nb;
		f->cap = cap;
	}
	memcpy(f->buf + f->len, buf, len);
	f->len += len;
	return 0;
}

void resp_frame_consume(struct resp_frame *f, size_t n)
{
	f->buf += n;
	f->len -= n;
	if (!f->len)
		f->buf = f->mem; /* empty: the next feed starts at the beginning */
}

void resp_frame_trim(struct resp_frame *f)
{
	char *nb;

	if (f->cap <= 65536 || f->len > 4096)
		return;
	compact(f);
	nb = realloc(f->mem, 4096);
	if (nb) {
		f->buf = f->mem = nb;
		f->cap = 4096;
	}
}

int resp_frame_fail(struct resp_frame *f, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
	return rc;
}

int resp_frame_header(const struct resp_frame *f, size_t at, long long *v, size_t *end)
{
	size_t i = at + 1,
	       lim = f->len < at + RESP_FRAME_HDR_MAX ? f->len : at + RESP_FRAME_HDR_MAX;
	long long n = 0;
	int neg = 0, digits = 0;

	if (i < lim && f->buf[i] == '-')
		neg = 1, i++;
	for (; i < lim && f->buf[i] >= '0' && f->buf[i] <= '9'; i++, digits++) {
		if (digits >= 12)
			return -EPROTO;
		n = n * 10 + (f->buf[i] - '0');
	}
	if (i + 1 >= lim)
		return lim == at + RESP_FRAME_HDR_MAX ? -EPROTO : 0;
	if (!digits || f->buf[i] != '\r' || f->buf[i + 1] != '\n')
		return -EPROTO;
	*v = neg ? -n : n;
	*end = i + 2;
	return 1;
}

int resp_frame_bulk(const struct resp_frame *f, size_t at, long long v)
{
	if (at + v + 2 > f->len)
		return 0;
	if (f->buf[at + v] != '\r' || f->buf[at + v + 1] != '\n')
		return -EPROTO;
	return 1;
}

int resp_frame_parse(struct resp_frame *f, size_t end, redisReply **out)
{
	redisReply *rep = NULL;

	*out = NULL;
	if (redisReaderFeed(f->hr, f->buf, end) != REDIS_OK ||
	    redisReaderGetReply(f->hr, (void **)&rep) != REDIS_OK || !rep) {
		if (rep)
			freeReplyObject(rep);
		return -EPROTO;
	}
	*out = rep;
	return 0;
}

const char *resp_frame_parse_error(const struct resp_frame *f, const char *dflt)
{
	return f->hr->errstr[0] ? f->hr->errstr : dflt;
}
