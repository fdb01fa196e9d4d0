// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The event log: one JSON object per line in PATH, rotated by size to PATH.<seq>, compressed
 * to PATH.<seq>.gz on a worker thread.
 *
 * Durability. Every event is handed to the kernel the moment it is logged, as one write(2) of
 * the whole line on an O_APPEND descriptor: a daemon that crashes or is killed loses nothing
 * it logged, and no line is ever split across writes (a short write is truncated away). The
 * daemon calls evlog_sync() (fdatasync) on a 1 s timer and on exit, so a power cut or kernel
 * crash loses at most the last second of events. A rotated segment is compressed into
 * PATH.<seq>.gz.tmp, fsync'd, renamed to PATH.<seq>.gz, the directory is fsync'd, and only
 * then is the plain PATH.<seq> removed: at every instant each segment exists whole in at least
 * one form. A segment left plain by a crash is compressed after the next evlog_open().
 *
 * Encoding. Strings are written as UTF-8 JSON: '"' and '\' are escaped, control characters
 * become \b \f \n \r \t or \u00XX, and each byte that is not part of a valid UTF-8 sequence
 * (overlong forms, surrogates and code points above U+10FFFF included) is replaced by \ufffd,
 * so every line is valid JSON whatever bytes a process name or path held. A NULL string is
 * written as null. The parser accepts any JSON escape except \u0000, which a C string cannot
 * carry.
 *
 * This file: the line builder (evrec_*) and the writer (evlog_open, evlog_write, rotation,
 * compression). The reader is event_log_read.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "common/event_log.h"
#include "common/event_log_internal.h"

/* ---- JSON line builder ---- */

/* Room for fields: the closing "}\n" and a NUL always fit after them. */
#define EVREC_ROOM (EVREC_MAX - 3)

static int put(struct evrec *r, const char *s, size_t n)
{
	if (n > EVREC_ROOM - r->len)
		return -ENOSPC;
	memcpy(r->buf + r->len, s, n);
	r->len += n;
	return 0;
}

static int put_cb(void *r, const char *s, size_t n)
{
	return put(r, s, n);
}

static int put_str(struct evrec *r, const char *s)
{
	return json_put_str(put_cb, r, s);
}

static bool rec_ended(const struct evrec *r)
{
	return r->len && r->buf[r->len - 1] == '\n';
}

/* Appends ,"key":val (val quoted and escaped if quote); drops it and all later fields if it
 * does not fit. */
static void add_field(struct evrec *r, const char *key, const char *val, bool quote)
{
	size_t mark = r->len;
	int err = 0;

	if (r->overflow || rec_ended(r))
		return;
	if (r->len > 1)
		err = put(r, ",", 1);
	err = err ?: put_str(r, key);
	err = err ?: put(r, ":", 1);
	if (!val)
		err = err ?: put(r, "null", 4);
	else
		err = err ?: (quote ? put_str(r, val) : put(r, val, strlen(val)));
	if (err) {
		r->len = mark;
		r->overflow = 1;
	}
}

void evrec_begin(struct evrec *r, const struct timespec *ts, const char *node, const char *kind)
{
	struct timespec now;
	struct tm tm;
	char t[64];
	size_t n;

	if (!ts) {
		now = fl_wall_ts();
		ts = &now;
	}
	if (!gmtime_r(&ts->tv_sec, &tm))
		memset(&tm, 0, sizeof(tm));
	n = strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(t + n, sizeof(t) - n, ".%06ldZ", (long)(ts->tv_nsec / 1000));
	r->len = 0;
	r->overflow = 0;
	snprintf(r->kind, sizeof(r->kind), "%s", kind ? kind : "");
	put(r, "{", 1);
	add_field(r, "ts", t, true);
	add_field(r, "node", node, true);
	add_field(r, "kind", kind, true);
}

void evrec_str(struct evrec *r, const char *key, const char *val)
{
	add_field(r, key, val, true);
}

void evrec_int(struct evrec *r, const char *key, long long val)
{
	char v[32];

	snprintf(v, sizeof(v), "%lld", val);
	add_field(r, key, v, false);
}

void evrec_uint(struct evrec *r, const char *key, unsigned long long val)
{
	char v[32];

	snprintf(v, sizeof(v), "%llu", val);
	add_field(r, key, v, false);
}

void evrec_bool(struct evrec *r, const char *key, bool val)
{
	add_field(r, key, val ? "true" : "false", false);
}

void evrec_double(struct evrec *r, const char *key, double val, int decimals)
{
	char v[400]; /* 309 integer digits, sign, point, 17 decimals */

	if (!isfinite(val)) {
		add_field(r, key, NULL, false);
		return;
	}
	decimals = decimals < 0 ? 0 : decimals > 17 ? 17 : decimals;
	snprintf(v, sizeof(v), "%.*f", decimals, val);
	add_field(r, key, v, false);
}

const char *evrec_end(struct evrec *r)
{
	if (!rec_ended(r)) {
		r->buf[r->len++] = '}';
		r->buf[r->len++] = '\n';
	}
	r->buf[r->len] = '\0';
	return r->buf;
}

const char *const seg_suffix[SEG_TMP + 1] = {
    [SEG_PLAIN] = "",
    [SEG_GZ] = ".gz",
    [SEG_TMP] = ".gz.tmp",
};

static void seg_path(char *buf, const char *path, unsigned long seq, enum seg_form form)
{
	snprintf(buf, PATH_MAX, "%s.%lu%s", path, seq, seg_suffix[form]);
}

/* Splits path into a new string for its directory and a pointer to its file name. */
int split_path(const char *path, char **dir, const char **base)
{
	const char *slash = strrchr(path, '/');

	*dir = NULL;
	*base = slash ? slash + 1 : path;
	if (!**base || strlen(path) + SEG_NAME_EXTRA > PATH_MAX)
		return -EINVAL;
	*dir = slash ? strndup(path, slash == path ? 1 : slash - path) : strdup(".");
	return *dir ? 0 : -ENOMEM;
}

/* "<base>.<seq><suffix>" with seq decimal without leading zeros -> 0, else -1. */
static int parse_seg_name(const char *name, const char *base, size_t blen, struct seg *s)
{
	char *end;

	if (strncmp(name, base, blen) || name[blen] != '.' || name[blen + 1] < '1' ||
	    name[blen + 1] > '9')
		return -1;
	errno = 0;
	s->seq = strtoul(name + blen + 1, &end, 10);
	if (errno)
		return -1;
	for (s->forms = SEG_PLAIN; s->forms <= SEG_TMP; s->forms <<= 1)
		if (!strcmp(end, seg_suffix[s->forms]))
			return 0;
	return -1;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;

	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The rotated segments of dir/base by rising seq; a missing directory has none. */
int scan_segments(const char *dir, const char *base, struct seg **out, int *n)
{
	size_t blen = strlen(base);
	struct seg *v = NULL, *t, s;
	struct dirent *de;
	int cnt = 0, cap = 0, i;
	DIR *d;

	*out = NULL;
	*n = 0;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (parse_seg_name(de->d_name, base, blen, &s))
			continue;
		for (i = 0; i < cnt && v[i].seq != s.seq; i++)
			;
		if (i == cnt && cnt == cap) {
			cap = cap ? cap * 2 : 16;
			t = realloc(v, cap * sizeof(*v));
			if (!t) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = t;
		}
		if (i == cnt)
			v[cnt++] = (struct seg){s.seq, 0};
		v[i].forms |= s.forms;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), seg_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

/* ---- writer ---- */

struct evlog {
	char *path;	  /* the live segment */
	char *dir;	  /* its directory */
	const char *base; /* its file name, inside path */
	uint64_t max_bytes;
	int max_segments;
	int fd;		    /* the live segment, O_APPEND */
	uint64_t size;	    /* bytes in the live segment */
	unsigned long seq;  /* highest rotated seq made so far */
	bool rotate_failed; /* the last rotation failed (warned once) */
	bool unsynced;	    /* written since the last evlog_sync() */
	char *pin;	    /* evlog_pin's line, "repeated": true added; NULL if none */
	size_t pin_len;

	/* The compression worker; flags under lock. */
	pthread_mutex_t lock;
	pthread_cond_t idle;
	bool busy;  /* a worker runs */
	bool again; /* a rotation came while it ran: it tidies once more */
};

static int mkdir_p(const char *dir)
{
	char p[PATH_MAX], *s, c;

	snprintf(p, sizeof(p), "%s", dir);
	for (s = p + 1;; s++) {
		if (*s && *s != '/')
			continue;
		c = *s;
		*s = '\0';
		if (mkdir(p, 0750) && errno != EEXIST)
			return -errno;
		if (!c)
			return 0;
		*s = c;
	}
}

static int open_live(const char *path, uint64_t *size)
{
	struct stat st;
	/* Not through a link: the agent is root and the directory may be shared
	 * (a link planted at the path made root append to its target). */
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	*size = st.st_size;
	return fd;
}

static int fsync_path(const char *path, int flags)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | flags), err = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		err = -errno;
	close(fd);
	return err;
}

static int gz_errno(gzFile z)
{
	int e;

	gzerror(z, &e);
	return e == Z_ERRNO && errno ? -errno : e == Z_MEM_ERROR ? -ENOMEM : -EIO;
}

/* plain -> tmp (gzip, fsync'd) -> renamed to gz. */
static int compress_file(const char *plain, const char *tmp, const char *gz)
{
	int in, out = -1, zfd, err = 0;
	gzFile z = NULL;
	char buf[65536];
	ssize_t n;
	int rc;

	in = open(plain, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return -errno;
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (out < 0) {
		err = -errno;
		goto cleanup;
	}
	zfd = dup(out);
	if (zfd < 0 || !(z = gzdopen(zfd, "wb"))) {
		err = zfd < 0 ? -errno : -ENOMEM;
		if (zfd >= 0)
			close(zfd);
		goto cleanup;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (gzwrite(z, buf, n) != n) {
			err = gz_errno(z);
			goto cleanup;
		}
	}
	if (n < 0) {
		err = -errno;
		goto cleanup;
	}
	rc = gzclose(z);
	z = NULL;
	if (rc != Z_OK)
		err = rc == Z_ERRNO ? -errno : -EIO;
	else if (fsync(out) || rename(tmp, gz))
		err = -errno;
cleanup:
	if (z)
		gzclose(z);
	if (out >= 0) {
		close(out);
		if (err)
			unlink(tmp);
	}
	close(in);
	return err;
}

/* Removes the oldest rotated segments beyond max_segments, then compresses the plain ones. */
static void tidy_segments(struct evlog *l)
{
	char name[PATH_MAX], tmp[PATH_MAX], gz[PATH_MAX];
	int n, i, kept = 0, err;
	struct seg *v;

	err = scan_segments(l->dir, l->base, &v, &n);
	if (err) {
		pr_warn("failed to list event log segments in %s: %s\n", l->dir, strerror(-err));
		return;
	}
	for (i = n - 1; i >= 0; i--) {
		/* a lone .gz.tmp is a compression a crash interrupted after its plain went */
		if (v[i].forms != SEG_TMP && ++kept <= l->max_segments)
			continue;
		for (unsigned int f = SEG_PLAIN; f <= SEG_TMP; f <<= 1) {
			seg_path(name, l->path, v[i].seq, f);
			if (v[i].forms & f)
				unlink(name);
		}
		v[i].forms = 0;
	}
	for (i = 0; i < n; i++) {
		if (!(v[i].forms & SEG_PLAIN))
			continue;
		seg_path(name, l->path, v[i].seq, SEG_PLAIN);
		seg_path(tmp, l->path, v[i].seq, SEG_TMP);
		seg_path(gz, l->path, v[i].seq, SEG_GZ);
		err = v[i].forms & SEG_GZ ? 0 : compress_file(name, tmp, gz);
		err = err ?: fsync_path(l->dir, O_DIRECTORY);
		if (err)
			pr_warn("failed to compress event log segment %s: %s\n", name,
				strerror(-err));
		else
			unlink(name);
	}
	free(v);
}

static void *tidy_worker(void *arg)
{
	struct evlog *l = arg;

	pthread_mutex_lock(&l->lock);
	do {
		l->again = false;
		pthread_mutex_unlock(&l->lock);
		tidy_segments(l);
		pthread_mutex_lock(&l->lock);
	} while (l->again);
	l->busy = false;
	pthread_cond_broadcast(&l->idle);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

/* Tidies the segments on a detached thread, or has the running one tidy again. */
static void tidy_start(struct evlog *l)
{
	sigset_t all, old;
	pthread_attr_t a;
	pthread_t t;
	bool running;
	int err;

	pthread_mutex_lock(&l->lock);
	running = l->busy;
	if (running)
		l->again = true;
	l->busy = true;
	pthread_mutex_unlock(&l->lock);
	if (running)
		return;
	/* the worker inherits a mask that keeps the daemon's signals off it */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &a, tidy_worker, l);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pr_warn("failed to start event log compression thread: %s; compressing inline\n",
			strerror(err));
		tidy_worker(l);
	}
}

int evlog_open(struct evlog **out, const struct evlog_opts *opts)
{
	struct evlog *l;
	int err;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->fd = -1;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->idle, NULL);
	l->max_bytes = opts->max_bytes ?: EVLOG_DEFAULT_MAX_BYTES;
	l->max_segments = opts->max_segments > 0 ? opts->max_segments : EVLOG_DEFAULT_SEGMENTS;
	l->path = strdup(opts->path ?: EVLOG_DEFAULT_PATH);
	err = l->path ? split_path(l->path, &l->dir, &l->base) : -ENOMEM;
	err = err ?: mkdir_p(l->dir);
	if (!err) {
		l->fd = open_live(l->path, &l->size);
		err = l->fd < 0 ? l->fd : 0;
	}
	if (err) {
		evlog_close(l);
		return err;
	}
	tidy_start(l); /* segments a crash left plain, or a lowered max_segments */
	*out = l;
	return 0;
}

/* PATH -> PATH.<seq>, a new PATH, and the worker compresses PATH.<seq>. */
static int rotate(struct evlog *l)
{
	char old[PATH_MAX];
	uint64_t size = 0;
	struct seg *v;
	int n, fd, err;

	err = scan_segments(l->dir, l->base, &v, &n);
	if (err)
		return err;
	if (n && v[n - 1].seq > l->seq)
		l->seq = v[n - 1].seq;
	free(v);
	seg_path(old, l->path, l->seq + 1, SEG_PLAIN);
	if (rename(l->path, old))
		return -errno;
	fd = open_live(l->path, &size);
	if (fd < 0) {
		if (rename(old, l->path))
			pr_warn("failed to rename %s back to %s: %s\n", old, l->path,
				strerror(errno));
		return fd;
	}
	l->seq++;
	close(l->fd);
	l->fd = fd;
	l->size = size;
	if (l->pin) {
		ssize_t w;

		do
			w = write(l->fd, l->pin, l->pin_len);
		while (w < 0 && errno == EINTR);
		if (w == (ssize_t)l->pin_len)
			l->size += w;
		else if (w > 0 && ftruncate(l->fd, l->size))
			pr_warn("failed to truncate event log %s: %s\n", l->path, strerror(errno));
	}
	tidy_start(l);
	return 0;
}

int evlog_pin(struct evlog *l, const struct evrec *r)
{
	static const char tail[] = ",\"repeated\":true}\n";
	char *p;

	if (!r->len || r->len < 2 || r->buf[r->len - 1] != '\n' || r->buf[r->len - 2] != '}')
		return -EINVAL;
	p = malloc(r->len - 2 + sizeof(tail));
	if (!p)
		return -ENOMEM;
	memcpy(p, r->buf, r->len - 2);
	memcpy(p + r->len - 2, tail, sizeof(tail));
	free(l->pin);
	l->pin = p;
	l->pin_len = r->len - 2 + sizeof(tail) - 1;
	return 0;
}

int evlog_write(struct evlog *l, struct evrec *r)
{
	ssize_t n;
	int err;

	if (!r->len)
		return -EINVAL;
	evrec_end(r);
	if (l->size && l->size + r->len > l->max_bytes) {
		/* an event matters more than the size limit: on failure write it anyway */
		err = rotate(l);
		if (err && !l->rotate_failed)
			pr_warn("failed to rotate event log %s: %s\n", l->path, strerror(-err));
		l->rotate_failed = err != 0;
	}
	do
		n = write(l->fd, r->buf, r->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n < r->len) {
		/* never leave half a line for the next one to be glued to */
		if (ftruncate(l->fd, l->size))
			pr_warn("failed to truncate event log %s: %s\n", l->path, strerror(errno));
		return -ENOSPC;
	}
	l->size += n;
	l->unsynced = true;
	return 0;
}

/* Nothing written since the last one: nothing to sync (the controller's tick asks
 * ten times a second, and an fdatasync may wait for the disk even then). A rotation
 * happens inside evlog_write, which marks the new segment. */
int evlog_sync(struct evlog *l)
{
	if (!l->unsynced)
		return 0;
	if (fdatasync(l->fd))
		return -errno;
	l->unsynced = false;
	return 0;
}

void evlog_close(struct evlog *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	while (l->busy)
		pthread_cond_wait(&l->idle, &l->lock);
	pthread_mutex_unlock(&l->lock);
	if (l->fd >= 0) {
		fdatasync(l->fd);
		close(l->fd);
	}
	pthread_cond_destroy(&l->idle);
	pthread_mutex_destroy(&l->lock);
	free(l->pin);
	free(l->dir);
	free(l->path);
	free(l);
}
