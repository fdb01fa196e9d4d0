// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>
#include "common/event_log.h"

/* 2026-11-30T10:00:00.123456Z */
static const struct timespec ts0 = {1796032800, 123456789};
#define TS0_US 1796032800123456LL
#define HEAD   "{\"ts\":\"2026-11-30T10:00:00.123456Z\",\"node\":\"n1\",\"kind\":\"k\""

/* Parses a copy of exactly len bytes, so ASan sees any read past the end. */
static int parse_exact(struct evline *ev, const char *line, size_t len)
{
	char *copy = malloc(len ? len : 1);
	int err;

	assert_non_null(copy);
	memcpy(copy, line, len);
	err = evline_parse(ev, copy, len);
	free(copy);
	return err;
}

static void test_escaping(void **state)
{
	static const struct {
		const char *in, *json;
	} cases[] = {
	    {"plain", "\"plain\""},
	    {"a\"b\\c/d", "\"a\\\"b\\\\c/d\""},
	    {"\x01\b\t\n\f\r\x1f\x7f", "\"\\u0001\\b\\t\\n\\f\\r\\u001f\x7f\""},
	    {"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e", "\"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\""},
	    {"a\xff"
	     "b",
	     "\"a\\ufffdb\""},					      /* never valid */
	    {"\xc3(", "\"\\ufffd(\""},				      /* truncated sequence */
	    {"\xc0\xaf", "\"\\ufffd\\ufffd\""},			      /* overlong '/' */
	    {"\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\""},	      /* overlong, 3 bytes */
	    {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},	      /* UTF-16 surrogate */
	    {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* > U+10FFFF */
	    {"x\xe2\x82", "\"x\\ufffd\\ufffd\""},		      /* cut at the end */
	};
	struct evrec r;
	char want[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		evrec_begin(&r, &ts0, "n1", "k");
		evrec_str(&r, "v", cases[i].in);
		snprintf(want, sizeof(want), HEAD ",\"v\":%s}\n", cases[i].json);
		assert_string_equal(evrec_end(&r), want);
		assert_int_equal(r.len, strlen(want));
		assert_int_equal(r.overflow, 0);
	}
}

/* The kind rides in the record as given, for counters that do not read the JSON. */
static void test_kind_carried(void **state)
{
	char longer[EVREC_KIND_MAX + 8];
	struct evrec r;

	(void)state;
	evrec_begin(&r, &ts0, "n1", "proc_exit");
	evrec_str(&r, "kind", "not_this_one");
	assert_string_equal(r.kind, "proc_exit");
	evrec_begin(&r, &ts0, "n1", NULL);
	assert_string_equal(r.kind, "");
	assert_non_null(strstr(evrec_end(&r), "\"kind\":null"));
	memset(longer, 'k', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	evrec_begin(&r, &ts0, "n1", longer);
	assert_int_equal(strlen(r.kind), EVREC_KIND_MAX - 1);
	assert_memory_equal(r.kind, longer, EVREC_KIND_MAX - 1);
}

static void test_value_types(void **state)
{
	static const char want[] =
	    HEAD ",\"i\":-9223372036854775808,\"u\":18446744073709551615,\"t\":true,"
		 "\"f\":false,\"d\":1.500,\"nan\":null,\"null\":null,\"k\\\"ey\":\"\"}\n";
	struct evrec r;

	(void)state;
	evrec_begin(&r, &ts0, "n1", "k");
	evrec_int(&r, "i", -9223372036854775807LL - 1);
	evrec_uint(&r, "u", 18446744073709551615ULL);
	evrec_bool(&r, "t", true);
	evrec_bool(&r, "f", false);
	evrec_double(&r, "d", 1.5, 3);
	evrec_double(&r, "nan", NAN, 2);
	evrec_str(&r, "null", NULL);
	evrec_str(&r, "k\"ey", "");
	assert_string_equal(evrec_end(&r), want);
	/* evrec_end is idempotent and fields after it are ignored */
	evrec_int(&r, "late", 1);
	assert_string_equal(evrec_end(&r), want);
	assert_int_equal(r.overflow, 0);
}

static void assert_valid_line(const struct evrec *r, int fields)
{
	struct evline ev;

	assert_true(r->len < EVREC_MAX);
	assert_int_equal(r->buf[r->len - 2], '}');
	assert_int_equal(r->buf[r->len - 1], '\n');
	assert_int_equal(r->buf[r->len], '\0');
	assert_int_equal(parse_exact(&ev, r->buf, r->len), 0);
	assert_int_equal(ev.n, fields);
}

static void test_overflow(void **state)
{
	char big[600], key[8], huge[EVREC_MAX];
	struct evline ev;
	struct evrec r;
	int i;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	evrec_begin(&r, &ts0, "n1", "k");
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "f%d", i);
		evrec_str(&r, key, big);
	}
	evrec_end(&r);
	assert_int_equal(r.overflow, 1);
	/* 6 fields of ~607 bytes fit after the header, the 7th does not */
	assert_valid_line(&r, 3 + 6);
	assert_int_equal(parse_exact(&ev, r.buf, r.len), 0);
	assert_string_equal(evline_get(&ev, "f5"), big);
	assert_null(evline_get(&ev, "f6"));

	/* a field bigger than a record: cut, and nothing after it is kept either */
	memset(huge, '\n', sizeof(huge) - 1); /* 6 bytes each once escaped */
	huge[sizeof(huge) - 1] = '\0';
	evrec_begin(&r, &ts0, "n1", "k");
	evrec_int(&r, "a", 1);
	evrec_str(&r, "huge", huge);
	evrec_int(&r, "b", 2);
	evrec_end(&r);
	assert_int_equal(r.overflow, 1);
	assert_string_equal(r.buf, HEAD ",\"a\":1}\n");

	/* escapes that would straddle the limit are not split */
	for (size_t n = EVREC_MAX - 120; n < EVREC_MAX - 40; n++) {
		memset(huge, 'y', n);
		huge[n] = '\0';
		huge[n - 1] = '\x01';
		evrec_begin(&r, &ts0, "n1", "k");
		evrec_str(&r, "v", huge);
		evrec_end(&r);
		assert_valid_line(&r, r.overflow ? 3 : 4);
	}
}

static void test_round_trip(void **state)
{
	static const char *const vals[] = {
	    "",
	    "a b",
	    "quote\" back\\slash",
	    "\x01\x1f\n\t",
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	    "/slash/",
	};
	struct evline ev;
	struct evrec r;
	char key[8];
	size_t i;

	(void)state;
	evrec_begin(&r, &ts0, "n1", "proc_exit");
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		snprintf(key, sizeof(key), "s%zu", i);
		evrec_str(&r, key, vals[i]);
	}
	evrec_int(&r, "pid", -123);
	evrec_bool(&r, "core_dumped", false);
	evrec_double(&r, "ratio", 0.25, 2);
	evrec_str(&r, "bad", "x\xff");
	evrec_str(&r, "none", NULL);
	evrec_end(&r);
	assert_int_equal(parse_exact(&ev, r.buf, r.len), 0);
	assert_int_equal(ev.n, 3 + 6 + 5);
	assert_string_equal(evline_get(&ev, "ts"), "2026-11-30T10:00:00.123456Z");
	assert_string_equal(evline_get(&ev, "node"), "n1");
	assert_string_equal(evline_get(&ev, "kind"), "proc_exit");
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		snprintf(key, sizeof(key), "s%zu", i);
		assert_string_equal(evline_get(&ev, key), vals[i]);
		assert_true(ev.f[3 + i].is_str);
	}
	assert_string_equal(evline_get(&ev, "pid"), "-123");
	assert_false(ev.f[9].is_str);
	assert_string_equal(evline_get(&ev, "core_dumped"), "false");
	assert_string_equal(evline_get(&ev, "ratio"), "0.25");
	assert_string_equal(evline_get(&ev, "bad"), "x\xef\xbf\xbd");
	assert_string_equal(evline_get(&ev, "none"), "null");
	assert_false(ev.f[13].is_str);
	assert_null(evline_get(&ev, "missing"));
	/* without the newline too */
	assert_int_equal(parse_exact(&ev, r.buf, r.len - 1), 0);
}

static void test_parse_valid(void **state)
{
	static const struct {
		const char *line;
		int n;
		const char *key, *val;
	} cases[] = {
	    {"{}", 0, NULL, NULL},
	    {" \t{ \"a\" : 1 , \"b\":\"x\" }\r\n", 2, "b", "x"},
	    {"{\"a\":\"\\u00e9\\u20AC\\ud83d\\ude00\"}", 1, "a",
	     "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"},
	    {"{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}", 1, "a", "\"\\/\b\f\n\r\t"},
	    {"{\"\\u0041\":true}", 1, "A", "true"},
	    {"{\"a\":-0.5e+10}", 1, "a", "-0.5e+10"},
	    {"{\"a\":0}", 1, "a", "0"},
	    {"{\"a\":12E-3}", 1, "a", "12E-3"},
	    {"{\"a\":null,\"a\":false}", 2, "a", "null"},
	    {"{\"a\":\"\x7f\"}", 1, "a", "\x7f"},
	};
	struct evline ev;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse_exact(&ev, cases[i].line, strlen(cases[i].line)), 0);
		assert_int_equal(ev.n, cases[i].n);
		if (cases[i].key)
			assert_string_equal(evline_get(&ev, cases[i].key), cases[i].val);
	}
}

static void test_parse_reject(void **state)
{
	static const char *const cases[] = {
	    "",
	    " ",
	    "\n",
	    "{",
	    "}",
	    "[]",
	    "\"a\"",
	    "1",
	    "{\"a\"",
	    "{\"a\":",
	    "{\"a\":1",
	    "{\"a\":1,",
	    "{\"a\":\"x",
	    "{\"a\":\"x\\",
	    "{\"a\":\"x\\u12", /* truncated */
	    "{\"a\":{}}",
	    "{\"a\":[]}",
	    "{\"a\":[1,2]}",
	    "{\"a\":{\"b\":1}}", /* nested */
	    "{\"a\":1}x",
	    "{\"a\":1}{}",
	    "{\"a\":1}}",
	    "{\"a\":1} ,", /* trailing garbage */
	    "{\"a\":\"\\x\"}",
	    "{\"a\":\"\\U0041\"}",
	    "{\"a\":\"\\u12g4\"}",
	    "{\"a\":\"\\'\"}",
	    "{\"a\":\"\\u0000\"}", /* bad escapes */
	    "{\"a\":\"\\ud800\"}",
	    "{\"a\":\"\\udc00\"}",
	    "{\"a\":\"\\ud800\\u0041\"}",
	    "{\"a\":\"\\ud800x\"}",
	    "{\"a\":\"\\ude00\\ud83d\"}", /* lone surrogates */
	    "{\"a\":\"\x01\"}",
	    "{\"a\":\"x\ny\"}",
	    "{\"a\":\"\xff\"}",
	    "{\"a\":\"\xc3\"}",
	    "{\"a\":\"\xed\xa0\x80\"}",
	    "{\"a\":\"\xc0\xaf\"}", /* raw control, bad UTF-8 */
	    "{a:1}",
	    "{'a':1}",
	    "{\"a\" 1}",
	    "{\"a\":1,}",
	    "{,}",
	    "{\"a\":1 \"b\":2}",
	    "{\"a\":}",
	    "{1:2}", /* structure */
	    "{\"a\":01}",
	    "{\"a\":1.}",
	    "{\"a\":.5}",
	    "{\"a\":-}",
	    "{\"a\":+1}",
	    "{\"a\":1e}",
	    "{\"a\":1e+}",
	    "{\"a\":0x1}",
	    "{\"a\":NaN}",
	    "{\"a\":Infinity}", /* numbers */
	    "{\"a\":tru}",
	    "{\"a\":True}",
	    "{\"a\":nul}",
	    "{\"a\":truex}", /* literals */
	};
	char line[EVREC_MAX + 16];
	struct evline ev;
	size_t n;
	int i;

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		if (parse_exact(&ev, cases[k], strlen(cases[k])) != -EINVAL)
			fail_msg("accepted: %s", cases[k]);
		assert_int_equal(ev.n, 0);
	}
	/* len is authoritative: a valid line cut short is rejected */
	assert_int_equal(parse_exact(&ev, "{\"a\":1}", 6), -EINVAL);
	assert_int_equal(parse_exact(&ev, "{\"a\":\"\\u00e9\"}", 10), -EINVAL);

	/* too many fields */
	n = snprintf(line, sizeof(line), "{");
	for (i = 0; i < EVLINE_MAX_FIELDS; i++)
		n += snprintf(line + n, sizeof(line) - n, "\"f%d\":%d,", i, i);
	line[n - 1] = '}';
	assert_int_equal(parse_exact(&ev, line, n), 0);
	assert_int_equal(ev.n, EVLINE_MAX_FIELDS);
	snprintf(line + n - 1, sizeof(line) - n + 1, ",\"x\":1}");
	assert_int_equal(parse_exact(&ev, line, n + 6), -EINVAL);

	/* longer than EVREC_MAX, even if valid */
	n = snprintf(line, sizeof(line), "{\"a\":\"");
	memset(line + n, 'x', EVREC_MAX - n - 2);
	memcpy(line + EVREC_MAX - 2, "\"}", 2);
	assert_int_equal(parse_exact(&ev, line, EVREC_MAX), 0);
	line[EVREC_MAX] = '\n';
	assert_int_equal(parse_exact(&ev, line, EVREC_MAX + 1), -EINVAL);
}

static void test_parse_ts(void **state)
{
	static const struct {
		const char *s;
		int64_t us;
	} good[] = {
	    {"2026-11-30T10:00:00.123456Z", TS0_US},
	    {"1970-01-01T00:00:00.000000Z", 0},
	    {"1970-01-01T00:00:00Z", 0},
	    {"1970-01-01T00:00:01.5Z", 1500000},
	    {"1970-01-01T00:00:00.123456789Z", 123456},
	    {"1969-12-31T23:59:59.999999Z", -1},
	    {"2024-02-29T12:00:00.000000Z", 1709208000000000LL},
	    {"2000-02-29T00:00:00.000000Z", 951782400000000LL},
	    {"2016-12-31T23:59:60.000000Z", 1483228800000000LL}, /* leap second */
	};
	static const char *const bad[] = {
	    "",
	    "2026-11-30",
	    "2026-11-30T10:00:00",
	    "2026-11-30T10:00:00.123456",
	    "2026-11-30 10:00:00.123456Z",
	    "2026-11-30T10:00:00.Z",
	    "2026-11-30T10:00:00.1234567890Z",
	    "2026-11-30T10:00:00.123456Zx",
	    "2026-11-30T10:00:00.123456z",
	    "2026-11-30T10:00:00+00:00",
	    "2026-13-01T00:00:00Z",
	    "2026-00-01T00:00:00Z",
	    "2026-04-31T00:00:00Z",
	    "2025-02-29T00:00:00Z",
	    "1900-02-29T00:00:00Z",
	    "2026-11-00T00:00:00Z",
	    "2026-11-30T24:00:00Z",
	    "2026-11-30T10:60:00Z",
	    "2026-11-30T10:00:61Z",
	    "226-11-30T10:00:00Z",
	    "2026-1-30T10:00:00Z",
	    "2026-11-30T1:00:00Z",
	    "+026-11-30T10:00:00Z",
	    "2026-11-30T10:00:0aZ",
	    "2026-11-30T10:00:00.12a456Z",
	};
	int64_t us;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		us = 42;
		if (evlog_parse_ts(good[i].s, &us))
			fail_msg("rejected: %s", good[i].s);
		assert_int_equal(us, good[i].us);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (evlog_parse_ts(bad[i], &us) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

struct tmpdir {
	char dir[64];
	char path[128]; /* dir/log/events.jsonl: the log directory does not exist yet */
};

static int setup_dir(void **state)
{
	struct tmpdir *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	umask(022);
	snprintf(t->dir, sizeof(t->dir), "/tmp/test_event_log.XXXXXX");
	if (!mkdtemp(t->dir)) {
		free(t);
		return -1;
	}
	snprintf(t->path, sizeof(t->path), "%s/log/events.jsonl", t->dir);
	*state = t;
	return 0;
}

static int teardown_dir(void **state)
{
	struct tmpdir *t = *state;

	nftw(t->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(t);
	return 0;
}

static void write_records(struct evlog *l, int from, int to)
{
	struct evrec r;

	for (int i = from; i < to; i++) {
		evrec_begin(&r, &ts0, "n1", "k");
		evrec_int(&r, "i", i);
		evrec_str(&r, "pad", "0123456789012345678901234567890123456789");
		assert_int_equal(evlog_write(l, &r), 0);
	}
}

/* Reads every segment back through zlib: record numbers in order into ids. Each rotated
 * segment must be gzip, no bigger than max_bytes once inflated, and nothing else may lie
 * in the directory. Returns the number of records; *rotated the number of .gz segments. */
static int read_back(const char *path, uint64_t max_bytes, int *ids, int max, int *rotated)
{
	char **segs, line[EVREC_MAX + 1], *dir;
	struct evline ev;
	struct dirent *de;
	int n, i, cnt = 0, files = 0;
	size_t bytes;
	DIR *d;

	assert_int_equal(evlog_segments(path, &segs, &n), 0);
	assert_true(n >= 1);
	assert_string_equal(segs[n - 1], path);
	*rotated = n - 1;
	for (i = 0; i < n; i++) {
		gzFile z = gzopen(segs[i], "r");
		unsigned char magic[2] = {0};
		FILE *f = fopen(segs[i], "r");

		assert_non_null(z);
		assert_non_null(f);
		assert_int_equal(fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b,
				 i < n - 1);
		fclose(f);
		if (i < n - 1)
			assert_string_equal(segs[i] + strlen(segs[i]) - 3, ".gz");
		bytes = 0;
		while (gzgets(z, line, sizeof(line))) {
			bytes += strlen(line);
			assert_int_equal(evline_parse(&ev, line, strlen(line)), 0);
			assert_true(cnt < max);
			ids[cnt++] = atoi(evline_get(&ev, "i"));
		}
		assert_true(bytes <= max_bytes);
		gzclose(z);
	}
	evlog_free_list(segs, n);

	dir = strdup(path);
	*strrchr(dir, '/') = '\0';
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)))
		files += de->d_name[0] != '.';
	closedir(d);
	free(dir);
	assert_int_equal(files, n);
	return cnt;
}

static void test_rotation(void **state)
{
	struct tmpdir *t = *state;
	struct evlog_opts o = {.path = t->path, .max_bytes = 1000, .max_segments = 100};
	enum { N = 300 };
	int ids[N + 10], n, rotated, i;
	struct evlog *l;
	struct stat st;

	assert_int_equal(evlog_open(&l, &o), 0);
	write_records(l, 0, N);
	assert_int_equal(evlog_sync(l), 0);
	evlog_close(l);

	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	*strrchr(t->path, '/') = '\0';
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	t->path[strlen(t->path)] = '/';

	n = read_back(t->path, o.max_bytes, ids, N, &rotated);
	assert_int_equal(n, N);
	for (i = 0; i < N; i++)
		assert_int_equal(ids[i], i);
	assert_true(rotated > 20);

	/* reopening appends to the same live segment and continues the numbering */
	assert_int_equal(evlog_open(&l, &o), 0);
	write_records(l, N, N + 10);
	evlog_close(l);
	assert_int_equal(read_back(t->path, o.max_bytes, ids, N + 10, &rotated), N + 10);
	for (i = 0; i < N + 10; i++)
		assert_int_equal(ids[i], i);
}

static void test_max_segments(void **state)
{
	struct tmpdir *t = *state;
	struct evlog_opts o = {.path = t->path, .max_bytes = 1000, .max_segments = 3};
	enum { N = 300 };
	int ids[N], n, rotated, i;
	struct evlog *l;

	assert_int_equal(evlog_open(&l, &o), 0);
	write_records(l, 0, N);
	evlog_close(l);
	n = read_back(t->path, o.max_bytes, ids, N, &rotated);
	assert_int_equal(rotated, 3);
	assert_true(n > 3 * 7 && n < N);
	for (i = 0; i < n; i++) /* the newest records, in order */
		assert_int_equal(ids[i], N - n + i);
}

/* The pinned start record heads every segment rotation opens, so no flood of later
 * events rotates it away, even with only three segments kept. */
static void test_pinned_start(void **state)
{
	struct tmpdir *t = *state;
	struct evlog_opts o = {.path = t->path, .max_bytes = 1000, .max_segments = 3};
	char **segs, line[EVREC_MAX + 1];
	struct evline ev;
	struct evlog *l;
	struct evrec r;
	int n;

	assert_int_equal(evlog_open(&l, &o), 0);
	evrec_begin(&r, &ts0, "ctl", "controller_start");
	evrec_int(&r, "pid", 4242);
	assert_int_equal(evlog_write(l, &r), 0);
	assert_int_equal(evlog_pin(l, &r), 0);
	write_records(l, 0, 300);
	evlog_close(l);
	assert_int_equal(evlog_segments(t->path, &segs, &n), 0);
	assert_int_equal(n, 4);
	for (int i = 0; i < n; i++) {
		gzFile z = gzopen(segs[i], "r");
		int lines = 0, starts = 0;

		assert_non_null(z);
		while (gzgets(z, line, sizeof(line))) {
			assert_int_equal(evline_parse(&ev, line, strlen(line)), 0);
			if (!lines++) {
				assert_string_equal(evline_get(&ev, "kind"), "controller_start");
				assert_string_equal(evline_get(&ev, "pid"), "4242");
				assert_string_equal(evline_get(&ev, "repeated"), "true");
			}
			starts += !strcmp(evline_get(&ev, "kind"), "controller_start");
		}
		assert_int_equal(starts, 1);
		assert_true(lines > 2);
		gzclose(z);
	}
	evlog_free_list(segs, n);
	evrec_begin(&r, &ts0, "ctl", "x");
	r.len = 0;
	assert_int_equal(evlog_pin(NULL, &r), -EINVAL);
}

static void touch(const char *path, const char *suffix, const char *content)
{
	char name[PATH_MAX];
	FILE *f;

	snprintf(name, sizeof(name), "%s%s", path, suffix);
	f = fopen(name, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void test_segments(void **state)
{
	struct tmpdir *t = *state;
	static const char *const order[] = {".1.gz", ".2.gz", ".3.gz", ".9", ".10.gz", ""};
	static const char *const after[] = {".1.gz", ".2.gz", ".3.gz", ".9.gz", ".10.gz", ""};
	struct evlog_opts o = {.path = t->path};
	char **segs, want[PATH_MAX], line[EVREC_MAX];
	struct evlog *l;
	int n, i;
	gzFile z;

	/* a missing directory has no segments */
	assert_int_equal(evlog_segments(t->path, &segs, &n), 0);
	assert_int_equal(n, 0);

	*strrchr(t->path, '/') = '\0';
	assert_int_equal(mkdir(t->path, 0750), 0);
	t->path[strlen(t->path)] = '/';
	touch(t->path, ".2.gz", "");
	touch(t->path, ".10.gz", "");
	touch(t->path, ".9", "{\"i\":9}\n");	/* left plain by a crash */
	touch(t->path, ".9.gz.tmp", "partial"); /* its interrupted compression */
	touch(t->path, ".3", "");		/* crash after its .gz was made */
	touch(t->path, ".3.gz", "");
	touch(t->path, ".1.gz", "");
	touch(t->path, ".7.gz.tmp", ""); /* orphan */
	touch(t->path, ".x", "");
	touch(t->path, ".05.gz", "");
	touch(t->path, ".4.gz.bak", "");
	touch(t->path, "", "");
	assert_int_equal(evlog_segments(t->path, &segs, &n), 0);
	assert_int_equal(n, 6);
	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "%s%s", t->path, order[i]);
		assert_string_equal(segs[i], want);
	}
	evlog_free_list(segs, n);

	/* opening tidies up: .9 compressed, the stale .3 and .7.gz.tmp removed */
	assert_int_equal(evlog_open(&l, &o), 0);
	evlog_close(l);
	assert_int_equal(evlog_segments(t->path, &segs, &n), 0);
	assert_int_equal(n, 6);
	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "%s%s", t->path, after[i]);
		assert_string_equal(segs[i], want);
	}
	z = gzopen(segs[3], "r");
	assert_non_null(z);
	assert_non_null(gzgets(z, line, sizeof(line)));
	assert_string_equal(line, "{\"i\":9}\n");
	gzclose(z);
	evlog_free_list(segs, n);
	for (i = 0; i < 3; i++) {
		static const char *const gone[] = {".3", ".9", ".7.gz.tmp"};

		snprintf(want, sizeof(want), "%s%s", t->path, gone[i]);
		assert_int_equal(access(want, F_OK), -1);
	}
}

static void test_write_ends_record(void **state)
{
	struct tmpdir *t = *state;
	struct evlog_opts o = {.path = t->path};
	char line[EVREC_MAX];
	struct evlog *l;
	struct evrec r;
	FILE *f;

	assert_int_equal(evlog_open(&l, &o), 0);
	evrec_begin(&r, &ts0, "n1", "k");
	evrec_int(&r, "pid", 7);
	assert_int_equal(evlog_write(l, &r), 0); /* not ended by the caller */
	evrec_begin(&r, &ts0, "n1", "k");
	evrec_end(&r);
	assert_int_equal(evlog_write(l, &r), 0);
	evlog_close(l);
	evlog_close(NULL);
	f = fopen(t->path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, HEAD ",\"pid\":7}\n");
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, HEAD "}\n");
	assert_null(fgets(line, sizeof(line), f));
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escaping),
	    cmocka_unit_test(test_kind_carried),
	    cmocka_unit_test(test_value_types),
	    cmocka_unit_test(test_overflow),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_parse_valid),
	    cmocka_unit_test(test_parse_reject),
	    cmocka_unit_test(test_parse_ts),
	    cmocka_unit_test_setup_teardown(test_rotation, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_max_segments, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_pinned_start, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_segments, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_write_ends_record, setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
