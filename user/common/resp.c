// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* RESP command reader (hiredis's reader behind a length guard) and reply writers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include "common/resp.h"
#include "common/resp_frame.h"

struct resp_reader {
	struct resp_frame f; /* the bytes, hiredis's reader, the error */
	/* The guard's progress through the frame at f.buf[0]. */
	int in_frame;
	size_t pos;       /* next header to check */
	long remaining;   /* bulk strings still to see */
	long nargs;
	size_t max_frame; /* RESP_MAX_FRAME, or less (resp_reader_set_max_frame) */
};

struct resp_reader *resp_reader_new(void)
{
	struct resp_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (resp_frame_init(&r->f)) {
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

void resp_cmd_free(struct resp_cmd *cmd)
{
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
}

/* The message goes to r->f.err; the value is rc. */
#define fail(r, rc, ...) resp_frame_fail(&(r)->f, (rc), __VA_ARGS__)

static int inline_cmd(struct resp_reader *r, struct resp_cmd *cmd)
{
	char *nl = memchr(r->f.buf, '\n', r->f.len), *p, *e;
	size_t linelen;
	int n = 0;

	if (!nl) {
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

/* The frame at buf[0..end) is complete and within limits: hiredis reads it. */
static int parse_frame(struct resp_reader *r, size_t end, struct resp_cmd *cmd)
{
	redisReply *rep = NULL;
	int rc = 1;

	memset(cmd, 0, sizeof(*cmd));
	if (resp_frame_parse(&r->f, end, &rep)) {
		rc = fail(r, -EPROTO, "Protocol error: %s",
			  resp_frame_parse_error(&r->f, "incomplete frame"));
		goto cleanup;
	}
	if (rep->type != REDIS_REPLY_ARRAY) {
		rc = fail(r, -EPROTO, "Protocol error: expected an array");
		goto cleanup;
	}
	cmd->argv = calloc(rep->elements ? rep->elements : 1, sizeof(*cmd->argv));
	cmd->lens = calloc(rep->elements ? rep->elements : 1, sizeof(*cmd->lens));
	if (!cmd->argv || !cmd->lens) {
		rc = fail(r, -ENOMEM, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < rep->elements; i++) {
		redisReply *e = rep->element[i];

		if (e->type != REDIS_REPLY_STRING) {
			rc = fail(r, -EPROTO, "Protocol error: expected '$'");
			goto cleanup;
		}
		cmd->argv[i] = malloc(e->len + 1);
		if (!cmd->argv[i]) {
			rc = fail(r, -ENOMEM, "out of memory");
			goto cleanup;
		}
		memcpy(cmd->argv[i], e->str, e->len);
		cmd->argv[i][e->len] = '\0';
		cmd->lens[i] = e->len;
		cmd->argc = i + 1;
	}
cleanup:
	if (rep)
		freeReplyObject(rep);
	if (rc < 0)
		resp_cmd_free(cmd);
	else
		consume(r, end);
	return rc;
}

int resp_next(struct resp_reader *r, struct resp_cmd *cmd)
{
	long long v;
	size_t end;
	int rc;

	for (;;) {
		if (!r->in_frame) {
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
						 "Protocol error: invalid multibulk length") :
					    0;
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
					    r->f.buf[r->pos] >= ' ' && r->f.buf[r->pos] < 127 ?
						    r->f.buf[r->pos] :
						    '?');
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
				return fail(r, -EPROTO, "Protocol error: bulk string not followed "
							"by CRLF");
			if (rc == 0)
				return 0;
			r->pos = end + v + 2;
			r->remaining--;
		}
		return parse_frame(r, r->pos, cmd);
	}
}

/* ---- replies ---- */

void resp_status(struct evbuffer *b, const char *s)
{
	evbuffer_add_printf(b, "+%s\r\n", s);
}

void resp_error_reply(struct evbuffer *b, const char *s)
{
	/* One line: an error must not carry CR or LF. */
	evbuffer_add(b, "-", 1);
	for (const char *p = s; *p; p++)
		evbuffer_add(b, (*p == '\r' || *p == '\n') ? " " : p, 1);
	evbuffer_add(b, "\r\n", 2);
}

void resp_int(struct evbuffer *b, long long v)
{
	evbuffer_add_printf(b, ":%lld\r\n", v);
}

void resp_bulk(struct evbuffer *b, const char *s, size_t len)
{
	evbuffer_add_printf(b, "$%zu\r\n", len);
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
	evbuffer_add_printf(b, "*%ld\r\n", n);
}

void resp_null_array(struct evbuffer *b)
{
	evbuffer_add(b, "*-1\r\n", 5);
}
