// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* RESP command reader (a length guard, then one pass over the checked frame) and
 * reply writers. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include "common/resp.h"
#include "common/resp_frame.h"

#define RESP_SEEN_ARGS 64

struct resp_reader {
	struct resp_frame f; /* the bytes and the error (frames are read by parse_frame) */
	/* The guard's progress through the frame at f.buf[0]. */
	int in_frame;
	size_t pos;	/* next header to check */
	size_t scan;	/* an inline line: where to look for its '\n' next */
	long remaining; /* bulk strings still to see */
	long nargs;
	size_t max_frame; /* RESP_MAX_FRAME, or less (resp_reader_set_max_frame) */
	/* Where the guard found each bulk string's bytes (offset in the frame, length),
	 * for the first RESP_SEEN_ARGS of them: a frame of no more (a REPORT's 34) is
	 * copied out without reading its headers again. */
	size_t seen_at[RESP_SEEN_ARGS];
	size_t seen_len[RESP_SEEN_ARGS];
};

struct resp_reader *resp_reader_new(void)
{
	struct resp_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (resp_frame_init(&r->f, false)) {
		free(r);
		return NULL;
	}
	r->max_frame = RESP_MAX_FRAME;
	return r;
}

void resp_reader_set_max_frame(struct resp_reader *r, size_t bytes)
{
	r->max_frame = bytes && bytes < RESP_MAX_FRAME ? bytes : RESP_MAX_FRAME;
}

void resp_reader_free(struct resp_reader *r)
{
	if (!r)
		return;
	resp_frame_fini(&r->f);
	free(r);
}

int resp_feed(struct resp_reader *r, const char *buf, size_t len)
{
	return resp_frame_feed(&r->f, buf, len);
}

const char *resp_error(const struct resp_reader *r)
{
	return r->f.err;
}

size_t resp_pending(const struct resp_reader *r)
{
	return r->f.len;
}

size_t resp_moved(const struct resp_reader *r)
{
	return r->f.moved;
}

void resp_cmd_free(struct resp_cmd *cmd)
{
	if (cmd->block) { /* one allocation (parse_frame) */
		free(cmd->argv);
		memset(cmd, 0, sizeof(*cmd));
		return;
	}
	for (int i = 0; i < cmd->argc; i++)
		free(cmd->argv[i]);
	free(cmd->argv);
	free(cmd->lens);
	memset(cmd, 0, sizeof(*cmd));
}

static void consume(struct resp_reader *r, size_t n)
{
	resp_frame_consume(&r->f, n);
	r->in_frame = 0;
	r->pos = 0;
	r->scan = 0;
}

/* Empty lines ("\n", "\r\n") at the start: dropped in one go, as Redis ignores
 * them. Each costs a comparison, not a command. */
static void skip_empty_lines(struct resp_reader *r)
{
	static const char lf8[8] = "\n\n\n\n\n\n\n\n", crlf8[8] = "\r\n\r\n\r\n\r\n";
	const char *b = r->f.buf;
	size_t i = 0, n = r->f.len;
	uint64_t lf, crlf, w;

	memcpy(&lf, lf8, 8);
	memcpy(&crlf, crlf8, 8);
	for (;;) {
		/* Eight bytes at a time while they are all one kind. */
		while (i + 8 <= n && (memcpy(&w, b + i, 8), w == lf || w == crlf))
			i += 8;
		if (i < n && b[i] == '\n')
			i++;
		else if (i + 1 < n && b[i] == '\r' && b[i + 1] == '\n')
			i += 2;
		else
			break;
	}
	if (i)
		consume(r, i);
}

/* The message goes to r->f.err; the value is rc. */
#define fail(r, rc, ...) resp_frame_fail(&(r)->f, (rc), __VA_ARGS__)

static int inline_cmd(struct resp_reader *r, struct resp_cmd *cmd)
{
	/* Only the bytes not looked at yet: a line that comes a byte at a time is
	 * scanned once, not once per byte. */
	char *nl = r->scan < r->f.len ? memchr(r->f.buf + r->scan, '\n', r->f.len - r->scan) : NULL;
	char *p, *e;
	size_t linelen;
	int n = 0;

	if (!nl) {
		r->scan = r->f.len;
		if (r->f.len > RESP_MAX_INLINE)
			return fail(r, -EMSGSIZE, "Protocol error: too big inline request");
		return 0;
	}
	linelen = nl - r->f.buf + 1;
	if (linelen > RESP_MAX_INLINE)
		return fail(r, -EMSGSIZE, "Protocol error: too big inline request");
	e = nl > r->f.buf && nl[-1] == '\r' ? nl - 1 : nl;
	memset(cmd, 0, sizeof(*cmd));
	for (p = r->f.buf; p < e;) {
		char *w;

		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		if (p == e)
			break;
		for (w = p; p < e && *p != ' ' && *p != '\t'; p++)
			;
		if (n >= RESP_MAX_ARGS) {
			resp_cmd_free(cmd);
			return fail(r, -EMSGSIZE, "Protocol error: too many arguments (max %d)",
				    RESP_MAX_ARGS);
		}
		if (n % 16 == 0) {
			char **av = realloc(cmd->argv, (n + 16) * sizeof(*av));
			size_t *lv = realloc(cmd->lens, (n + 16) * sizeof(*lv));

			if (av)
				cmd->argv = av;
			if (lv)
				cmd->lens = lv;
			if (!av || !lv) {
				resp_cmd_free(cmd);
				return fail(r, -ENOMEM, "out of memory");
			}
		}
		cmd->argv[n] = malloc(p - w + 1);
		if (!cmd->argv[n]) {
			resp_cmd_free(cmd);
			return fail(r, -ENOMEM, "out of memory");
		}
		memcpy(cmd->argv[n], w, p - w);
		cmd->argv[n][p - w] = '\0';
		cmd->lens[n] = p - w;
		cmd->argc = ++n;
	}
	consume(r, linelen);
	return 1;
}

/* The frame at buf[0..end) is complete and within limits: the guard has checked
 * every header and the CR LF after every bulk string, so it is read here in one
 * pass into one allocation (argv, lens and the strings, each NUL-terminated):
 * no allocation per argument (this is every REPORT's path). */
static int parse_frame(struct resp_reader *r, size_t end, struct resp_cmd *cmd)
{
	size_t n = (size_t)r->nargs, data = 0, pos = 0, at, hend, head;
	const bool seen = n <= RESP_SEEN_ARGS; /* the guard saw where each one is */
	long long v;
	char *blk, *p;

	memset(cmd, 0, sizeof(*cmd));
	if (seen) {
		for (size_t i = 0; i < n; i++)
			data += r->seen_len[i] + 1;
	} else {
		/* The header of the array, then n bulk strings: their total length. */
		if (resp_frame_header(&r->f, 0, &v, &pos) != 1)
			return fail(r, -EPROTO, "Protocol error: invalid multibulk length");
		for (size_t i = 0, q = pos; i < n; i++) {
			if (resp_frame_header(&r->f, q, &v, &hend) != 1 || v < 0)
				return fail(r, -EPROTO, "Protocol error: invalid bulk length");
			data += (size_t)v + 1;
			q = hend + (size_t)v + 2;
		}
	}
	head = n * (sizeof(*cmd->argv) + sizeof(*cmd->lens));
	blk = malloc(head + data + 1);
	if (!blk)
		return fail(r, -ENOMEM, "out of memory");
	cmd->argv = (char **)(void *)blk;
	cmd->lens = (size_t *)(void *)(blk + n * sizeof(*cmd->argv));
	p = blk + head;
	for (at = pos; cmd->argc < (int)n; cmd->argc++) {
		size_t from, len;

		if (seen) {
			from = r->seen_at[cmd->argc];
			len = r->seen_len[cmd->argc];
		} else {
			resp_frame_header(&r->f, at, &v, &hend);
			from = hend;
			len = (size_t)v;
			at = hend + len + 2;
		}
		memcpy(p, r->f.buf + from, len);
		p[len] = '\0';
		cmd->argv[cmd->argc] = p;
		cmd->lens[cmd->argc] = len;
		p += len + 1;
	}
	cmd->block = 1;
	consume(r, end);
	return 1;
}

int resp_next(struct resp_reader *r, struct resp_cmd *cmd)
{
	long long v;
	size_t end;
	int rc;

	for (;;) {
		if (!r->in_frame) {
			skip_empty_lines(r);
			if (!r->f.len)
				return 0;
			if (r->f.buf[0] != '*') {
				rc = inline_cmd(r, cmd);
				if (rc == 1 && cmd->argc == 0) {
					resp_cmd_free(cmd);
					continue; /* an empty line */
				}
				return rc;
			}
			rc = resp_frame_header(&r->f, 0, &v, &end);
			if (rc <= 0)
				return rc ? fail(r, -EPROTO,
						 "Protocol error: invalid multibulk length")
					  : 0;
			if (v > RESP_MAX_ARGS)
				return fail(r, -EMSGSIZE,
					    "Protocol error: too many arguments (%lld, max %d)", v,
					    RESP_MAX_ARGS);
			if (v <= 0) { /* *0 and *-1: nothing to run, as Redis does */
				consume(r, end);
				continue;
			}
			r->in_frame = 1;
			r->nargs = r->remaining = v;
			r->pos = end;
		}
		while (r->remaining > 0) {
			if (r->pos >= r->f.len)
				return 0;
			if (r->f.buf[r->pos] != '$')
				return fail(r, -EPROTO, "Protocol error: expected '$', got '%c'",
					    r->f.buf[r->pos] >= ' ' && r->f.buf[r->pos] < 127
						? r->f.buf[r->pos]
						: '?');
			rc = resp_frame_header(&r->f, r->pos, &v, &end);
			if (rc < 0 || (rc > 0 && v < 0))
				return fail(r, -EPROTO, "Protocol error: invalid bulk length");
			if (rc == 0)
				return 0;
			if ((unsigned long long)v > r->max_frame ||
			    end + (size_t)v + 2 > r->max_frame)
				return fail(r, -EMSGSIZE,
					    "Protocol error: frame larger than %zu bytes",
					    r->max_frame);
			rc = resp_frame_bulk(&r->f, end, v);
			if (rc < 0)
				return fail(r, -EPROTO,
					    "Protocol error: bulk string not followed "
					    "by CRLF");
			if (rc == 0)
				return 0;
			if (r->nargs - r->remaining < RESP_SEEN_ARGS) {
				r->seen_at[r->nargs - r->remaining] = end;
				r->seen_len[r->nargs - r->remaining] = (size_t)v;
			}
			r->pos = end + v + 2;
			r->remaining--;
		}
		return parse_frame(r, r->pos, cmd);
	}
}

/* ---- replies ---- */

/* c, the decimal v, CR LF at b; its length. No printf: a REPORT's answer is on
 * every report's path. */
size_t resp_fmt_line(char *b, char c, long long v)
{
	char d[24];
	size_t n = 0, i = 0;
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	b[n++] = c;
	if (v < 0)
		b[n++] = '-';
	do
		d[i++] = (char)('0' + u % 10);
	while (u /= 10);
	while (i)
		b[n++] = d[--i];
	b[n++] = '\r';
	b[n++] = '\n';
	return n;
}

size_t resp_fmt_status(char *b, const char *s, size_t len)
{
	b[0] = '+';
	memcpy(b + 1, s, len);
	b[len + 1] = '\r';
	b[len + 2] = '\n';
	return len + 3;
}

size_t resp_fmt_bulk(char *b, const char *s, size_t len)
{
	size_t n = resp_fmt_line(b, '$', (long long)len);

	memcpy(b + n, s, len);
	b[n + len] = '\r';
	b[n + len + 1] = '\n';
	return n + len + 2;
}

void resp_status(struct evbuffer *b, const char *s)
{
	size_t n = strlen(s);
	char t[64];

	if (n + 3 > sizeof(t)) {
		evbuffer_add_printf(b, "+%s\r\n", s);
		return;
	}
	t[0] = '+';
	memcpy(t + 1, s, n + 1);
	t[n + 1] = '\r';
	t[n + 2] = '\n';
	evbuffer_add(b, t, n + 3);
}

void resp_error_reply(struct evbuffer *b, const char *s)
{
	char t[512];
	size_t n = 0;

	/* One line: an error must not carry CR or LF. Copied through t, one
	 * evbuffer_add per 512 bytes, not per byte (an unknown command's answer is
	 * on a flood's path). */
	t[n++] = '-';
	for (const char *p = s; *p; p++) {
		if (n == sizeof(t)) {
			evbuffer_add(b, t, n);
			n = 0;
		}
		t[n++] = (*p == '\r' || *p == '\n') ? ' ' : *p;
	}
	if (n + 2 > sizeof(t)) {
		evbuffer_add(b, t, n);
		n = 0;
	}
	t[n++] = '\r';
	t[n++] = '\n';
	evbuffer_add(b, t, n);
}

void resp_int(struct evbuffer *b, long long v)
{
	char t[32];

	evbuffer_add(b, t, resp_fmt_line(t, ':', v));
}

void resp_bulk(struct evbuffer *b, const char *s, size_t len)
{
	char t[256];
	size_t n = resp_fmt_line(t, '$', (long long)len);

	if (len + n + 2 <= sizeof(t)) { /* short: one copy into the buffer */
		memcpy(t + n, s, len);
		t[n + len] = '\r';
		t[n + len + 1] = '\n';
		evbuffer_add(b, t, n + len + 2);
		return;
	}
	evbuffer_add(b, t, n);
	evbuffer_add(b, s, len);
	evbuffer_add(b, "\r\n", 2);
}

void resp_str(struct evbuffer *b, const char *s)
{
	resp_bulk(b, s, strlen(s));
}

void resp_nil(struct evbuffer *b)
{
	evbuffer_add(b, "$-1\r\n", 5);
}

void resp_array(struct evbuffer *b, long n)
{
	char t[32];

	evbuffer_add(b, t, resp_fmt_line(t, '*', n));
}

void resp_null_array(struct evbuffer *b)
{
	evbuffer_add(b, "*-1\r\n", 5);
}
