// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The event log's reader, for `flatline events` and the tests: the segments of
 * a log, oldest first (evlog_segments), one line parsed into its fields
 * (evline_parse: JSON objects of strings, numbers, booleans and null, as the
 * writer in event_log.c makes them), and the timestamps (evlog_parse_ts). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include "common/json.h"
#include "common/event_log.h"
#include "common/event_log_internal.h"

/* ---- reader ---- */

int evlog_segments(const char *path, char ***list, int *n)
{
	struct seg *v = NULL;
	char *dir, **out = NULL;
	const char *base;
	struct stat st;
	int cnt = 0, i, k = 0, err;

	*list = NULL;
	*n = 0;
	err = split_path(path, &dir, &base);
	err = err ?: scan_segments(dir, base, &v, &cnt);
	if (err)
		goto cleanup;
	out = calloc(cnt + 1, sizeof(*out));
	if (!out) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < cnt; i++) {
		if (!(v[i].forms & (SEG_PLAIN | SEG_GZ)))
			continue;
		if (asprintf(&out[k], "%s.%lu%s", path, v[i].seq,
			     v[i].forms & SEG_GZ ? seg_suffix[SEG_GZ] : "") < 0) {
			err = -ENOMEM;
			goto cleanup;
		}
		k++;
	}
	if (!stat(path, &st)) {
		if (!(out[k] = strdup(path))) {
			err = -ENOMEM;
			goto cleanup;
		}
		k++;
	}
	if (k) { /* none: *list stays NULL */
		*list = out;
		*n = k;
		out = NULL;
	}
cleanup:
	evlog_free_list(out, k);
	free(v);
	free(dir);
	return err;
}

void evlog_free_list(char **list, int n)
{
	if (!list)
		return;
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

struct jparse {
	const char *p, *end; /* input left */
	char *out, *oend;    /* room left in evline.buf */
};

static void skip_ws(struct jparse *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool accept(struct jparse *s, char c)
{
	if (s->p == s->end || *s->p != c)
		return false;
	s->p++;
	return true;
}

static int emit(struct jparse *s, const char *b, size_t n)
{
	if (n > (size_t)(s->oend - s->out))
		return -EINVAL;
	memcpy(s->out, b, n);
	s->out += n;
	return 0;
}

static int hex4(struct jparse *s, unsigned int *v)
{
	*v = 0;
	if (s->end - s->p < 4)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		char c = *s->p++, l = c | 0x20;

		if (c >= '0' && c <= '9')
			*v = *v << 4 | (c - '0');
		else if (l >= 'a' && l <= 'f')
			*v = *v << 4 | (l - 'a' + 10);
		else
			return -EINVAL;
	}
	return 0;
}

/* \uXXXX after the "\u", with the low half of a surrogate pair, as UTF-8. */
static int parse_uescape(struct jparse *s)
{
	unsigned int cp, lo;
	char u[4];
	size_t n;

	if (hex4(s, &cp) || !cp || (cp >= 0xdc00 && cp <= 0xdfff))
		return -EINVAL;
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (!accept(s, '\\') || !accept(s, 'u') || hex4(s, &lo) || lo < 0xdc00 ||
		    lo > 0xdfff)
			return -EINVAL;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp < 0x80) {
		u[0] = cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = 0xc0 | cp >> 6;
		u[1] = 0x80 | (cp & 0x3f);
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = 0xe0 | cp >> 12;
		u[1] = 0x80 | (cp >> 6 & 0x3f);
		u[2] = 0x80 | (cp & 0x3f);
		n = 3;
	} else {
		u[0] = 0xf0 | cp >> 18;
		u[1] = 0x80 | (cp >> 12 & 0x3f);
		u[2] = 0x80 | (cp >> 6 & 0x3f);
		u[3] = 0x80 | (cp & 0x3f);
		n = 4;
	}
	return emit(s, u, n);
}

static int parse_string(struct jparse *s, const char **val)
{
	size_t n;
	char c;
	int err;

	*val = s->out;
	if (!accept(s, '"'))
		return -EINVAL;
	while (!accept(s, '"')) {
		if (s->p == s->end || (unsigned char)*s->p < 0x20)
			return -EINVAL;
		if (accept(s, '\\')) {
			if (s->p == s->end)
				return -EINVAL;
			c = *s->p++;
			if (c == 'u')
				err = parse_uescape(s);
			else if ((c = json_esc(c, true)))
				err = emit(s, &c, 1);
			else
				err = -EINVAL;
		} else {
			n = json_utf8_len((const unsigned char *)s->p, s->end - s->p);
			err = n ? emit(s, s->p, n) : -EINVAL;
			s->p += n;
		}
		if (err)
			return err;
	}
	return emit(s, "", 1);
}

static size_t skip_digits(struct jparse *s)
{
	const char *p = s->p;

	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return s->p - p;
}

/* true, false, null or a JSON number, kept as written. */
static int parse_literal(struct jparse *s, const char **val)
{
	static const char *const words[] = {"true", "false", "null"};
	const char *start = s->p;
	size_t i, n;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		n = strlen(words[i]);
		if ((size_t)(s->end - s->p) >= n && !memcmp(s->p, words[i], n)) {
			s->p += n;
			break;
		}
	}
	if (s->p == start) {
		accept(s, '-');
		if (!accept(s, '0') && !skip_digits(s))
			return -EINVAL;
		if (accept(s, '.') && !skip_digits(s))
			return -EINVAL;
		if (accept(s, 'e') || accept(s, 'E')) {
			if (!accept(s, '+'))
				accept(s, '-');
			if (!skip_digits(s))
				return -EINVAL;
		}
	}
	*val = s->out;
	return emit(s, start, s->p - start) ?: emit(s, "", 1);
}

static int parse_object(struct jparse *s, struct evline *ev)
{
	struct evfield *f;

	skip_ws(s);
	if (!accept(s, '{'))
		return -EINVAL;
	skip_ws(s);
	if (!accept(s, '}')) {
		do {
			if (ev->n == EVLINE_MAX_FIELDS)
				return -EINVAL;
			f = &ev->f[ev->n];
			skip_ws(s);
			if (parse_string(s, &f->key))
				return -EINVAL;
			skip_ws(s);
			if (!accept(s, ':'))
				return -EINVAL;
			skip_ws(s);
			f->is_str = s->p < s->end && *s->p == '"';
			if (f->is_str ? parse_string(s, &f->val) : parse_literal(s, &f->val))
				return -EINVAL;
			ev->n++;
			skip_ws(s);
		} while (accept(s, ','));
		if (!accept(s, '}'))
			return -EINVAL;
	}
	skip_ws(s);
	return s->p == s->end ? 0 : -EINVAL;
}

int evline_parse(struct evline *ev, const char *line, size_t len)
{
	struct jparse s = {line, line + len, ev->buf, ev->buf + sizeof(ev->buf)};
	int err;

	ev->n = 0;
	err = len > EVREC_MAX ? -EINVAL : parse_object(&s, ev);
	if (err)
		ev->n = 0;
	return err;
}

const char *evline_get(const struct evline *ev, const char *key)
{
	for (int i = 0; i < ev->n; i++)
		if (!strcmp(ev->f[i].key, key))
			return ev->f[i].val;
	return NULL;
}

/* Exactly n digits at *s. */
static int num(const char **s, int n, int *v)
{
	for (*v = 0; n--; (*s)++) {
		if (**s < '0' || **s > '9')
			return -EINVAL;
		*v = *v * 10 + (**s - '0');
	}
	return 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int y, int m, int d)
{
	y -= m <= 2;
	int era = (y >= 0 ? y : y - 399) / 400;
	int yoe = y - era * 400;
	int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return (int64_t)era * 146097 + doe - 719468;
}

int evlog_parse_ts(const char *s, int64_t *us)
{
	static const unsigned char mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h, mi, sec, frac = 0, digits = 0, leap;

	if (num(&s, 4, &y) || *s++ != '-' || num(&s, 2, &mo) || *s++ != '-' || num(&s, 2, &d) ||
	    *s++ != 'T' || num(&s, 2, &h) || *s++ != ':' || num(&s, 2, &mi) || *s++ != ':' ||
	    num(&s, 2, &sec))
		return -EINVAL;
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			if (digits < 6)
				frac = frac * 10 + (*s - '0');
		if (!digits || digits > 9)
			return -EINVAL;
		for (; digits < 6; digits++)
			frac *= 10;
	}
	leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (strcmp(s, "Z") || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap) ||
	    h > 23 || mi > 59 || sec > 60 /* a leap second */)
		return -EINVAL;
	*us = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec;
	*us = *us * 1000000 + frac;
	return 0;
}
